"""Shared test set-up: every test run builds into its own cache, never the user's."""

from __future__ import annotations

import os
import tempfile

import pytest


@pytest.fixture(scope="session", autouse=True)
def _session_cache():
    """One cache per test session (so repeated builds within the run are cache hits)."""
    if "IRC_TEST_KEEP_CACHE" in os.environ:
        yield
        return
    with tempfile.TemporaryDirectory(prefix="irc-test-cache-") as d:
        old = os.environ.get("IRC_CACHE_DIR")
        os.environ["IRC_CACHE_DIR"] = d
        yield
        if old is None:
            os.environ.pop("IRC_CACHE_DIR", None)
        else:
            os.environ["IRC_CACHE_DIR"] = old

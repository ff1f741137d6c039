"""Shared test set-up: every test run builds into its own cache, never the user's."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

RUN_CACHE = "IRC_TEST_RUN_CACHE"
"""The run's build cache directory, made by the controlling pytest process before it starts its
xdist workers (they inherit the environment), so that a library one worker built is a cache hit
for the other (the same models are built by several test files)."""


def pytest_configure(config):
    if "IRC_TEST_KEEP_CACHE" in os.environ or hasattr(config, "workerinput") or RUN_CACHE in os.environ:
        return
    config._irc_run_cache = tempfile.mkdtemp(prefix="irc-test-cache-")
    os.environ[RUN_CACHE] = config._irc_run_cache


def pytest_unconfigure(config):
    d = getattr(config, "_irc_run_cache", None)
    if d is not None:
        os.environ.pop(RUN_CACHE, None)
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def _session_cache():
    """One cache per test run, shared by its workers (repeated builds within the run are hits)."""
    if "IRC_TEST_KEEP_CACHE" in os.environ:
        yield
        return
    old = os.environ.get("IRC_CACHE_DIR")
    if RUN_CACHE in os.environ:
        os.environ["IRC_CACHE_DIR"] = os.environ[RUN_CACHE]
        yield
    else:  # a worker started without the controller's directory: its own
        with tempfile.TemporaryDirectory(prefix="irc-test-cache-") as d:
            os.environ["IRC_CACHE_DIR"] = d
            yield
    if old is None:
        os.environ.pop("IRC_CACHE_DIR", None)
    else:
        os.environ["IRC_CACHE_DIR"] = old

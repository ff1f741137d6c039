"""Runs the lit + FileCheck goldens under tests/filecheck; each file is one pytest case.

lit runs once for the whole suite (in parallel); each case then reports its own file's result
and, on failure, lit's output for it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

SUITE = Path(__file__).parent / "filecheck"
HELPERS = {"expect_exit.py"}  # run by the RUN lines, not tests (lit.cfg excludes them too)
GOLDENS = sorted(
    p.relative_to(SUITE).as_posix()
    for p in SUITE.rglob("*")
    if p.suffix in (".mlir", ".py") and "Output" not in p.parts and p.name not in HELPERS
)


@pytest.fixture(scope="session")
def lit_results(tmp_path_factory) -> dict[str, tuple[bool, str]]:
    report = tmp_path_factory.mktemp("lit") / "lit.xml"
    bindir = os.path.dirname(sys.executable)
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
    run = subprocess.run(
        [sys.executable, "-c", "from lit.main import main; main()", "-q", f"--xunit-xml-output={report}", str(SUITE)],
        env=env,
        capture_output=True,
        text=True,
    )
    if not report.exists():
        pytest.fail(f"lit did not run:\n{run.stdout}\n{run.stderr}")
    results: dict[str, tuple[bool, str]] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = case.get("name", "")
        classname = case.get("classname", "")
        # lit names a case "irc.<dir>/<file>" / "<file>", relative to the suite
        rel = f"{classname.split('.', 1)[1].replace('.', '/')}/{name}" if "." in classname else name
        failure = case.find("failure")
        results[rel] = (failure is None, failure.text if failure is not None else "")
    return results


@pytest.mark.xdist_group("lit")  # one worker runs lit once for all goldens
@pytest.mark.parametrize("golden", GOLDENS)
def test_golden(golden: str, lit_results: dict[str, tuple[bool, str]]) -> None:
    assert golden in lit_results, f"lit did not run {golden}; it ran {sorted(lit_results)}"
    passed, output = lit_results[golden]
    assert passed, f"{golden} failed:\n{output}"


def test_irc_opt_starts_without_torch() -> None:
    """The goldens run irc-opt about 140 times: importing torch would add ~2 s of CPU to each."""
    code = "import sys, irc.tools.irc_opt; print(sorted(m for m in ('torch', 'numpy') if m in sys.modules))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]", run.stdout

"""Runs the lit + FileCheck goldens under tests/filecheck; each file is one pytest case.

lit runs once for the whole suite (in parallel); each case then reports its own file's result
and, on failure, lit's output for it. Under pytest-xdist, the first worker to need the results
runs lit and the others read them (a file lock in the run's shared temporary directory), so
lit never runs twice even when the goldens are spread over workers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from filelock import FileLock

SUITE = Path(__file__).parent / "filecheck"
HELPERS = {"expect_exit.py"}  # run by the RUN lines, not tests (lit.cfg excludes them too)
GOLDENS = sorted(
    p.relative_to(SUITE).as_posix()
    for p in SUITE.rglob("*")
    if p.suffix in (".mlir", ".py") and "Output" not in p.parts and p.name not in HELPERS
)


@pytest.fixture(scope="session")
def lit_results(tmp_path_factory, worker_id: str) -> dict[str, tuple[bool, str]]:
    if worker_id == "master":  # no xdist: this process is the only one
        return _run_lit(tmp_path_factory.mktemp("lit"))
    shared = tmp_path_factory.getbasetemp().parent  # this run's, common to its workers
    with FileLock(str(shared / "lit.lock")):
        cached = shared / "lit.json"
        if not cached.exists():
            cached.write_text(json.dumps(_run_lit(tmp_path_factory.mktemp("lit"))))
        return {k: tuple(v) for k, v in json.loads(cached.read_text()).items()}


def _run_lit(directory: Path) -> dict[str, tuple[bool, str]]:
    """Run lit over the suite once; each golden file's (passed, lit's output on failure)."""
    report = directory / "lit.xml"
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


# Groups the goldens on one worker where pytest-xdist honours the mark (pytest 9.2 with xdist 3.8
# does not: the nodeids get no "@lit" suffix and the goldens spread over the workers); either way
# the lock in `lit_results` runs lit once.
@pytest.mark.xdist_group("lit")
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

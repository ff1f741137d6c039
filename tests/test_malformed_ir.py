"""A corpus of malformed IR (tests/malformed/*.mlir) through irc-opt: every file must give a
diagnostic that says where the problem is, exit code 1, and no Python traceback.

Each file carries MLIR's `// expected-error {{...}}` annotation on the line the error must be
reported at (`@unknown` for errors of a pass or target, which have no source line), checked by
`irc-opt --verify-diagnostics`; without that flag the same file must fail with a one-line
`irc-opt: error: FILE:LINE:COL: MESSAGE` header. Files run with a pipeline name it on their first
line (`// RUN-ARGS: ...`). The files run in-process: a subprocess per file would cost ~2 s each.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from irc.tools.irc_opt import main as irc_opt

CORPUS = sorted((Path(__file__).parent / "malformed").glob("*.mlir"))
# Rejected while the command line is read, before any input: nothing to annotate.
COMMAND_LINE_ERRORS = {"bad_pass_option"}


def _run(path: Path, *flags: str, capsys) -> tuple[int, str]:
    run_args = re.match(r"// RUN-ARGS: (.*)", path.read_text())
    extra = shlex.split(run_args.group(1)) if run_args else []
    try:
        irc_opt([str(path), *extra, *flags])
        code = 0
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr().err


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 30


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_malformed_ir_gives_located_diagnostic(path: Path, capsys):
    code, err = _run(path, capsys=capsys)
    assert code == 1, f"expected a user error (exit 1), got {code}:\n{err}"
    assert err.startswith("irc-opt: error: ") and "Traceback" not in err, err
    if "RUN-ARGS" in path.read_text():
        assert re.search(r"irc-fuse|irc-to-loops|cpp emitter|arguments", err), err
    else:
        header = err.splitlines()[0]
        assert re.match(rf"irc-opt: error: \S*{re.escape(path.name)}:\d+:\d+: \S", header), header


@pytest.mark.parametrize("path", [p for p in CORPUS if p.stem not in COMMAND_LINE_ERRORS], ids=lambda p: p.stem)
def test_malformed_ir_error_is_where_its_annotation_says(path: Path, capsys):
    assert "expected-error" in path.read_text(), f"{path.name} has no // expected-error annotation"
    code, err = _run(path, "--verify-diagnostics", capsys=capsys)
    assert code == 0 and err == "", err

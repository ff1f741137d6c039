"""The malformed-IR corpus (tests/filecheck/malformed/*.mlir) is run by lit with the other goldens
(tests/test_filecheck.py). Each file checks, through its RUN lines, that irc-opt reports the error
where its `// expected-error` annotation says (`--verify-diagnostics`), and that without that flag
it fails with a one-line `irc-opt: error: FILE:LINE:COL: MESSAGE` header, exit code 1 (`%exit1`)
and no Python traceback. What lit cannot say is checked here: that the corpus stays large and
that no file drops one of those checks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

CORPUS = sorted((Path(__file__).parent / "filecheck" / "malformed").glob("*.mlir"))
# Rejected while the command line is read, before any input: nothing to annotate.
COMMAND_LINE_ERRORS = {"bad_pass_option"}


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 30


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_malformed_ir_file_checks_its_diagnostic(path: Path):
    text = path.read_text()
    runs = [line for line in text.splitlines() if line.startswith("// RUN: ")]
    assert any(r.startswith("// RUN: %exit1 irc-opt %s") and r.endswith("2>&1 | filecheck %s") for r in runs), runs
    assert "// CHECK: irc-opt: error: " in text and "// CHECK-NOT: Traceback" in text
    if path.stem in COMMAND_LINE_ERRORS:
        return
    assert "expected-error" in text, f"{path.name} has no // expected-error annotation"
    assert any(r.endswith("--verify-diagnostics") for r in runs), runs
    if "@unknown" not in text:  # an error in the input: its header says where
        assert f"{{{{.*}}}}{path.name}:" in text, f"{path.name} does not check the error's location"

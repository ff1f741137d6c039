"""A corpus of malformed IR (tests/malformed/*.mlir) through irc-opt: every file must give a
diagnostic that says where the problem is, exit code 1, and no Python traceback.

"Where" is `file:line:col` for parse errors, the module annotated at the failing op (`^^^`)
for verifier errors, and the pass, option or target for files run with a pipeline
(`// RUN-ARGS: ...` on their first line).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from irc.tools.irc_opt import main as irc_opt

CORPUS = sorted((Path(__file__).parent / "malformed").glob("*.mlir"))


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 30


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_malformed_ir_gives_located_diagnostic(path: Path, capsys):
    text = path.read_text()
    run_args = re.match(r"// RUN-ARGS: (.*)", text)
    extra = shlex.split(run_args.group(1)) if run_args else []
    with pytest.raises(SystemExit) as exit_info:
        irc_opt([str(path), *extra])
    err = capsys.readouterr().err
    assert exit_info.value.code == 1, f"expected a user error (exit 1), got {exit_info.value.code}:\n{err}"
    assert err.startswith("irc-opt: error: ") and "Traceback" not in err, err
    if extra:
        assert re.search(r"irc-fuse|irc-to-loops|cpp emitter|arguments", err), err
    else:
        located = re.search(rf"{re.escape(path.name)}:\d+:\d+", err) or "^^^" in err
        assert located, f"no location in:\n{err}"

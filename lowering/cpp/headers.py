"""The generated code's C++ runtime: real header files in `include/`, pasted into the source.

    irc_prelude.h   includes, `irc_set_num_threads`, and (via irc_math.h) the vectorizable math
    irc_math.h      exp, log, tanh, erf, max/min for float and `irc_vec` (IRC_VL floats; see math.py)
    irc_gemm.h      the GEMM engine `irl.gemm`/`irl.attention` call into (see gemm.py)
    irc_profile.h   per-kernel timers of a profiling build

`header(name)` is a header's text with every `#include "x.h"` of another header in `include/`
replaced by that header's text (once each), so a translation unit stays one self-contained
file: the build cache keys on the source text, which then covers the runtime too. The
headers are package data (pyproject.toml), also readable and compilable on their own
(`g++ -I lowering/cpp/include`).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

INCLUDE_DIR = Path(__file__).parent / "include"
_LOCAL_INCLUDE = re.compile(r'^#include "([^"]+)".*\n', re.M)


@cache
def header(name: str) -> str:
    """The text of include/`name`, its local includes pasted in."""
    return _paste(name, set())


def _paste(name: str, seen: set[str]) -> str:
    seen.add(name)
    text = (INCLUDE_DIR / name).read_text()

    def inline(match: re.Match) -> str:
        inner = match.group(1)
        if not (INCLUDE_DIR / inner).is_file():
            raise FileNotFoundError(f"{INCLUDE_DIR / name} includes {inner!r}, which is not in {INCLUDE_DIR}")
        return "" if inner in seen else _paste(inner, seen)

    return _LOCAL_INCLUDE.sub(inline, text)

"""The generated code's C++ runtime lives in real header files (lowering/cpp/include), pasted into
every translation unit by the emitter."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from irc import pipeline
from irc.lowering.cpp.headers import INCLUDE_DIR, header


def test_local_includes_are_pasted_once():
    prelude = header("irc_prelude.h")
    assert '#include "' not in prelude
    assert prelude.count("template <class F> static inline F irc_exp(F x) {") == 1  # irc_math.h, pasted
    assert (INCLUDE_DIR / "irc_math.h").read_text() in prelude


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_headers_compile_as_headers(tmp_path: Path):
    """Included (not pasted) from their directory, the headers form a valid translation unit."""
    src = tmp_path / "t.cpp"
    src.write_text(
        '#include "irc_prelude.h"\n#define IRC_NR 16\n#include "irc_gemm.h"\n'
        '#define IRC_PROFILE_KERNELS 1\n#define IRC_PROFILE_LABELS "k"\n#include "irc_profile.h"\n'
    )
    subprocess.run(["g++", "-std=c++17", "-fopenmp", "-fsyntax-only", "-Wall", "-Werror", f"-I{INCLUDE_DIR}", str(src)],
                   check=True)


def test_pipeline_cache_key_covers_the_headers(monkeypatch):
    """The pipeline cache stores the C++ source: editing a header must invalidate it."""
    monkeypatch.setattr(pipeline, "_code_digest", None)
    before = pipeline._code_version()
    read_bytes = Path.read_bytes

    def edited(self: Path) -> bytes:
        return read_bytes(self) + (b"// edited\n" if self.name == "irc_math.h" else b"")

    monkeypatch.setattr(Path, "read_bytes", edited)
    monkeypatch.setattr(pipeline, "_code_digest", None)
    assert pipeline._code_version() != before

"""Trusting the build cache: corrupt entries are rebuilt, unsafe directories refused, and
`irc cache info|clear`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from irc.errors import IrcError
from irc.runtime import build_library, compiler_invocations
from irc.runtime.build import cpu_features
from irc.tools.cli import main as irc_main

FLAGS = ["-O1", "-std=c++17", "-shared", "-fPIC"]
SOURCE = 'extern "C" int answer() { return 42; }\n'


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("IRC_CACHE_DIR", str(root))
    return root


@pytest.mark.parametrize("damage", ["truncate", "corrupt", "no-checksum"])
def test_damaged_library_is_detected_and_rebuilt(damage):
    path = build_library(SOURCE, flags=FLAGS)
    good = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(good[: len(good) // 2])
    elif damage == "corrupt":
        path.write_bytes(good[:100] + bytes(b ^ 0xFF for b in good[100:200]) + good[200:])
    else:
        path.with_suffix(".sha256").unlink()
    before = compiler_invocations()
    assert build_library(SOURCE, flags=FLAGS) == path
    assert compiler_invocations() == before + 1
    assert path.read_bytes() == good  # g++ builds the same source the same way
    before = compiler_invocations()
    build_library(SOURCE, flags=FLAGS)
    assert compiler_invocations() == before, "an intact entry must be a cache hit"


def test_key_includes_cpu_features_and_irc_version(monkeypatch):
    first = build_library(SOURCE, flags=FLAGS)
    import irc
    import irc.runtime.build as build

    monkeypatch.setattr(build, "_cpu_flags", cpu_features() + " imaginary_avx1024")
    assert build_library(SOURCE, flags=FLAGS) != first
    monkeypatch.setattr(build, "_cpu_flags", None)
    monkeypatch.setattr(irc, "__version__", irc.__version__ + ".post1")
    assert build_library(SOURCE, flags=FLAGS) != first


def test_group_or_world_writable_cache_is_refused(cache):
    build_library(SOURCE, flags=FLAGS)
    os.chmod(cache, 0o777)
    with pytest.raises(IrcError, match=r"group or others can write to it \(mode 777\).*chmod go-w"):
        build_library(SOURCE, flags=FLAGS)
    os.chmod(cache, 0o700)
    build_library(SOURCE, flags=FLAGS)


def test_cache_info_and_clear(cache, capsys):
    build_library(SOURCE, flags=FLAGS)
    build_library(SOURCE.replace("42", "43"), flags=FLAGS)
    (cache / "unrelated.txt").write_text("not ours")
    assert irc_main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert str(cache) in out and "2 libraries" in out
    assert irc_main(["cache", "clear"]) == 0
    assert "removed 2 libraries" in capsys.readouterr().out
    assert sorted(p.name for p in cache.rglob("*")) == ["unrelated.txt"]
    before = compiler_invocations()
    build_library(SOURCE, flags=FLAGS)
    assert compiler_invocations() == before + 1


def test_interrupted_build_leaves_no_entry_and_no_temp_files(cache, monkeypatch):
    import irc.runtime.build as build

    def interrupted(command):
        Path(command[command.index("-o") + 1]).write_bytes(b"half a library")  # the compiler was writing
        raise KeyboardInterrupt

    monkeypatch.setattr(build, "_run_compiler", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build_library(SOURCE, flags=FLAGS)
    assert not list(cache.rglob("*.so")) and not list(cache.rglob(".*")), list(cache.rglob("*"))
    monkeypatch.undo()
    monkeypatch.setenv("IRC_CACHE_DIR", str(cache))
    path = build_library(SOURCE, flags=FLAGS)
    assert path.exists() and path.with_suffix(".sha256").exists()

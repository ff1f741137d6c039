"""`irc cache info|clear`: where the build cache is, what it holds, and emptying it.

`info` prints the directory, the number of libraries and their size; `clear` removes the
libraries irc built (with their sources and checksums) and leaves any other file alone.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from irc.errors import IrcError
from irc.runtime import cache_dir
from irc.runtime.build import cache_problem

ENTRY_SUFFIXES = (".so", ".cpp", ".sha256", ".pipeline")  # .pipeline: irc/pipeline.py


def _entries(root: Path) -> list[Path]:
    """The files of irc's entries: `<key[:2]>/<key>.{so,cpp,sha256}` with a 64-hex-digit key."""
    if not root.is_dir():
        return []
    return [
        p
        for p in root.glob("??/*")
        if p.suffix in ENTRY_SUFFIXES and len(p.stem) == 64 and p.parent.name == p.stem[:2]
    ]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["info", "clear"], help="show the cache, or empty it")


def run(args: argparse.Namespace) -> int:
    root = cache_dir()
    try:
        return _run(args.action, root)
    except OSError as e:  # a file, unreadable, read-only: say so, not a traceback
        verb = "read" if args.action == "info" else "clear"
        raise IrcError(f"cannot {verb} the irc build cache {root}: {cache_problem(root, e)}; check IRC_CACHE_DIR") from None


def _run(action: str, root: Path) -> int:
    if root.exists() and not root.is_dir():
        raise NotADirectoryError(20, "Not a directory", str(root))
    entries = _entries(root)
    libraries = [p for p in entries if p.suffix == ".so"]
    if action == "info":
        size = sum(p.stat().st_size for p in entries)
        print(f"irc build cache: {root}")
        print(f"  {len(libraries)} libraries, {size / 1e6:.1f} MB (set IRC_CACHE_DIR to move it)")
        return 0
    for p in entries:
        p.unlink(missing_ok=True)
    for shard in {p.parent for p in entries}:
        if not any(shard.iterdir()):
            shard.rmdir()
    print(f"removed {len(libraries)} libraries from {root}")
    return 0

"""Seeing what the compiler did, and reproducing what went wrong.

Dumps: with `IRC_DUMP_DIR=dir` (or `irc.compile(..., dump_dir=dir)`) every compile writes
numbered files into its own subdirectory: the FX graph, the IR after every pass, the C++ and
the build log, in pipeline order (`01-import.mlir`, `02-irc-fuse.mlir`, ...).

Reproducers: when a pass fails, the IR it received is written to a file and the error says the
exact `irc-opt -p '<pass>' <file>` command that fails the same way.

Logging: `IRC_LOG=info|debug` sends the `irc` logger to stderr; irc is quiet by default.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from irc.errors import IrcError

log = logging.getLogger("irc")
T = TypeVar("T")

_compiles = itertools.count()


def configure_logging() -> None:
    """Honour IRC_LOG (info or debug) once; otherwise leave the `irc` logger silent."""
    level = os.environ.get("IRC_LOG", "").upper()
    if level in ("INFO", "DEBUG", "WARNING") and not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[irc %(levelname)s] %(message)s"))
        log.addHandler(handler)
        log.setLevel(level)


class PassFailure(IrcError):
    """A compiler pass failed; `.reproducer` is the IR it received, `.command` reproduces it."""

    def __init__(self, stage: str, error: BaseException, reproducer: Path | None, command: str | None):
        self.stage, self.reproducer, self.command = stage, reproducer, command
        msg = f"irc: {stage} failed: {type(error).__name__}: {error}"
        if command:
            msg += f"\n  the IR it received is in {reproducer}\n  reproduce with: {command}"
        msg += "\n  This is a bug in irc; please report it with that file."
        super().__init__(msg)


class CompileLog:
    """The numbered artifacts of one compile (a no-op without a dump directory)."""

    def __init__(self, dump_dir: str | os.PathLike[str] | None):
        root = dump_dir if dump_dir is not None else os.environ.get("IRC_DUMP_DIR")
        self.dir: Path | None = None
        if root:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            self.dir = Path(root) / f"{stamp}-{os.getpid()}-{next(_compiles)}"
            self.dir.mkdir(parents=True, exist_ok=True)
            log.info("irc: dumping this compile to %s", self.dir)
        self._n = 0

    def write(self, name: str, text: str) -> Path | None:
        """Write the next numbered file (`NN-name`) if dumping; returns its path."""
        if self.dir is None:
            return None
        self._n += 1
        path = self.dir / f"{self._n:02d}-{name}"
        path.write_text(text)
        return path

    def stage(self, name: str, pipeline: str | None, ir_before: str, run: Callable[[], T]) -> T:
        """Run one pipeline stage; on failure write `ir_before` and raise PassFailure with the
        irc-opt command (`pipeline` is its -p/-t argument; None: not an irc-opt pass)."""
        try:
            return run()
        except IrcError:
            raise
        except Exception as e:
            reproducer, command = None, None
            if pipeline is not None:
                reproducer = self._reproducer(name, ir_before)
                command = f"irc-opt {pipeline} {reproducer}"
            raise PassFailure(name, e, reproducer, command) from e

    def _reproducer(self, name: str, ir: str) -> Path:
        digest = hashlib.sha256(ir.encode()).hexdigest()[:12]
        directory = self.dir or Path(tempfile.gettempdir()) / "irc-reproducers"
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{name}-input-{digest}.mlir"
        path.write_text(ir)
        return path

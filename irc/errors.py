"""The exceptions irc raises at users. Each carries what a person needs to act on it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class IrcError(Exception):
    """Base class of every error irc raises on purpose."""


@dataclass(frozen=True)
class UnsupportedNode:
    """One FX node irc cannot import: its name, its target and why."""

    node: str
    target: str
    reason: str

    def __str__(self) -> str:
        return f"{self.node} ({self.target}): {self.reason}"


class UnsupportedOpError(IrcError):
    """Import found FX nodes irc cannot compile; `.nodes` lists every one of them."""

    def __init__(self, nodes: list[UnsupportedNode]):
        self.nodes = list(nodes)
        targets = sorted({n.target for n in self.nodes})
        lines = [
            f"irc cannot compile {len(self.nodes)} node(s) of this graph "
            f"(unsupported: {', '.join(targets)}):"
        ]
        lines += [f"  - {n}" for n in self.nodes]
        super().__init__("\n".join(lines))


class CompileError(IrcError):
    """The C++ compiler failed. Carries the command, its output and the kept source file."""

    def __init__(self, command: list[str], output: str, source_path: Path, hint: str = ""):
        self.command = list(command)
        self.output = output
        self.source_path = Path(source_path)
        msg = (
            f"C++ compilation failed.\n  command: {' '.join(command)}\n"
            f"  source kept at: {source_path}\n  compiler output:\n{output.rstrip()}"
        )
        if hint:
            msg += f"\n  hint: {hint}"
        super().__init__(msg)


class InputError(IrcError, ValueError):
    """A compiled module was called with inputs that do not match what it was compiled for."""

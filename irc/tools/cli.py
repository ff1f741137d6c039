"""The `irc` command line: `irc verify`, `irc visualize`, `irc explain`, `irc cache`.

Each subcommand lives in its own module exposing `add_arguments(parser)` and
`run(args) -> exit code`; adding one (`bench`, `explain`, `cache`, ...) means adding a
line to `SUBCOMMANDS`. Arguments are checked while they are parsed, with the argument types
below: a bad one is a one-line argparse error and exit code 2, before any work. Errors irc
raises on purpose (`IrcError`) are printed as a message and give exit code 1; anything else
is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from irc.errors import IrcError

#: name -> (module implementing it, one-line help).
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "verify": ("irc.tools.verify", "check irc against eager PyTorch on the built-in models and time it"),
    "visualize": ("irc.tools.visualize", "draw a model's captured graph and write its fused IR"),
    "explain": ("irc.tools.explain", "what irc fused, each kernel's FLOPs and bytes; --profile: timings and roofline"),
    "cache": ("irc.tools.cache_cli", "show or clear the build cache"),
    "bench": ("irc.tools.bench", "time irc against eager, Inductor and ONNX Runtime: ratios, GFLOP/s, compile times"),
}


def package_version(name: str = "irc") -> str:
    """The installed version of package `name` (importlib.metadata), or "not installed"."""
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def versions() -> str:
    """`irc --version`: irc's version and those of the libraries it is built on."""
    return f"irc {package_version()} (xdsl {package_version('xdsl')}, torch {package_version('torch')})"


# --- argument types shared by the subcommands --------------------------------------------


def positive_int(text: str) -> int:
    """An integer >= 1 (a count of runs, repeats, threads)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0 (a time budget in seconds)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def output_dir(text: str) -> Path:
    """A directory irc can write its outputs to: existing, or creatable under a writable one.

    Checked before any work, so a long run does not end in a failed write."""
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a file, not a directory")
    existing = path
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise argparse.ArgumentTypeError(f"cannot create {text!r}: {str(existing)!r} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"cannot write to {text!r}: {str(existing)!r} is not writable by you")
    return path


def model_names(text: str) -> list[str]:
    """A comma-separated list of built-in model names, each one known, at least one."""
    from irc.models import BUILTIN_MODELS

    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in BUILTIN_MODELS]
    if not names or unknown:
        what = f"unknown model(s) {', '.join(map(repr, unknown))}" if unknown else f"no model named in {text!r}"
        raise argparse.ArgumentTypeError(f"{what}; the built-in models are: {', '.join(BUILTIN_MODELS)}")
    return list(dict.fromkeys(names))


def input_shapes(text: str) -> str:
    """An `--input-shape` like 1x784 or 1x784,1x10 (kept as text; `parse_shapes` reads it)."""
    from irc.models import UsageError
    from irc.tools.visualize import parse_shapes

    try:
        parse_shapes(text)
    except UsageError:
        raise argparse.ArgumentTypeError(f"expected shapes like 1x784 or 1x784,1x10, got {text!r}") from None
    return text


@contextlib.contextmanager
def writing_to(directory: Path):
    """Create `directory` and turn a failure to write there (read-only, full, removed meanwhile)
    into an `IrcError` naming the path, instead of a traceback."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        yield directory
    except OSError as e:
        where = e.filename or directory
        raise IrcError(f"cannot write to {str(where)!r}: {e.strerror or e}; choose another --out") from None


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with one subparser per entry of `SUBCOMMANDS`."""
    parser = argparse.ArgumentParser(
        prog="irc", description="irc: compile PyTorch models to C++/OpenMP through xDSL.")
    parser.add_argument("--version", action="version", version=versions(),
                        help="print the versions of irc, xDSL and torch, and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        cmd = sub.add_parser(name, help=help_text, description=(module.__doc__ or help_text).strip())
        cmd.formatter_class = argparse.RawDescriptionHelpFormatter
        module.add_arguments(cmd)
        cmd.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run `irc ARGS...`; returns the process exit code."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except IrcError as exc:
        print(f"irc {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

"""The `irc` command line: `irc verify`, `irc visualize`, `irc explain`, `irc cache`.

Each subcommand lives in its own module exposing `add_arguments(parser)` and
`run(args) -> exit code`; adding one (`bench`, `explain`, `cache`, ...) means adding a
line to `SUBCOMMANDS`. Errors irc raises on purpose (`IrcError`) are printed as a message
and give exit code 1; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from irc.errors import IrcError

#: name -> (module implementing it, one-line help).
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "verify": ("irc.verify", "check irc against eager PyTorch on the built-in models and time it"),
    "visualize": ("irc.visualize", "draw a model's captured graph and write its fused IR"),
    "explain": ("irc.explain", "what irc fused, each kernel's FLOPs and bytes; --profile: timings and roofline"),
    "cache": ("irc.cache_cli", "show or clear the build cache"),
    "bench": ("irc.bench", "time irc against eager, Inductor and ONNX Runtime: ratios, GFLOP/s, compile times"),
}


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with one subparser per entry of `SUBCOMMANDS`."""
    parser = argparse.ArgumentParser(
        prog="irc", description="irc: compile PyTorch models to C++/OpenMP through xDSL.")
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

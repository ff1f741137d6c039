"""`irc-opt`: xDSL's `xdsl-opt` driver plus irc's dialect, passes and the `cpp` target.

    irc-opt model.mlir -p irc-fuse,irc-to-loops -t cpp -o model.cpp

Every stock xDSL dialect, pass, target and flag stays available (--split-input-file,
--verify-diagnostics, --print-between-passes, --print-op-generic, -o, stdin, ...). Errors in the
input are reported as located diagnostics with a non-zero exit, never as a Python traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException, ParseError, PassFailedException, VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain


def _fuse():
    from irc.lowering.irc_fuse import IrcFusePass

    return IrcFusePass


def _pack_weights():
    from irc.lowering.pack_weights import PackWeightsPass

    return PackWeightsPass


def _to_loops():
    from irc.lowering.irc_to_loops import IrcToLoopsPass

    return IrcToLoopsPass


def _plan_memory():
    from irc.lowering.plan_memory import PlanMemoryPass

    return PlanMemoryPass


def _parallelize():
    from irc.lowering.parallelize import ParallelizePass

    return ParallelizePass


def _vectorize():
    from irc.lowering.vectorize import VectorizePass

    return VectorizePass


def _cpp():
    from irc.lowering.emit_cpp import CppTarget

    return CppTarget


def _irt():
    from irc.dialects.dialect import IRT

    return IRT


def _irl():
    from irc.dialects.irl import IRL

    return IRL


def _locate(module: ModuleOp, error: VerifyException) -> None:
    """Re-raise a verifier error that names no op (a structural check of a region, say) with
    the module annotated at the innermost op that fails to verify."""
    failing = None
    for op in module.walk():
        try:
            op.verify()
        except VerifyException:
            failing = op  # pre-order walk: the last failure is the innermost
    if failing is None:
        raise error
    failing.emit_error(str(error), error)


IRC_PASSES = {
    "irc-fuse": _fuse,
    "irc-pack-weights": _pack_weights,
    "irc-to-loops": _to_loops,
    "irc-plan-memory": _plan_memory,
    "irc-parallelize": _parallelize,
    "irc-vectorize": _vectorize,
}


class IrcOptMain(xDSLOptMain):
    version_format = "irc-opt (xDSL {xdsl_version})"

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        self.ctx.register_dialect("irt", _irt)
        self.ctx.register_dialect("irl", _irl)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in IRC_PASSES.items():
            self.register_pass(name, factory)

    def apply_passes(self, prog: ModuleOp) -> None:
        try:
            super().apply_passes(prog)
        except VerifyException as e:
            if getattr(e, "__notes__", None):
                raise
            _locate(prog, e)

    def register_all_targets(self) -> None:
        super().register_all_targets()
        self.available_targets["cpp"] = _cpp


def main(argv: Sequence[str] | None = None) -> None:
    try:
        IrcOptMain(description="irc modular optimizer driver", args=argv).run()
    except (ParseError, DiagnosticException, PassFailedException) as e:
        # A verifier failure carries the module, annotated at the failing op, as a note.
        notes = "".join(f"\n{n}" for n in getattr(e, "__notes__", ()))
        print(f"irc-opt: error: {e}{notes}", file=sys.stderr)
        sys.exit(1)
    except (ValueError, NotImplementedError) as e:  # bad pass options, IR a pass or target cannot handle
        print(f"irc-opt: error: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
    except Exception as e:  # a bug in irc: say so plainly; the traceback is one variable away
        if os.environ.get("IRC_DEBUG"):
            raise
        print(
            f"irc-opt: internal error: {type(e).__name__}: {e}\n"
            "This is a bug in irc. Rerun with IRC_DEBUG=1 for the Python traceback and report it "
            "with the input file.",
            file=sys.stderr,
        )
        sys.exit(2)


if __name__ == "__main__":
    main()

"""`irc-opt`: xDSL's `xdsl-opt` driver plus irc's dialect, passes and the `cpp` target.

    irc-opt model.mlir -p irc-fuse,irc-to-loops -t cpp -o model.cpp

Every stock xDSL dialect, pass, target and flag stays available (--split-input-file,
--verify-diagnostics, --print-between-passes, --print-op-generic, -o, stdin, ...), with MLIR's
meaning where xDSL's differs:

- an error in the input is `irc-opt: error: FILE:LINE:COL: MESSAGE` (parse and verifier errors
  alike: parsed ops carry their location) and exit code 1, never a Python traceback;
- --split-input-file runs every chunk: a failing chunk is reported, the others still printed;
- --verify-diagnostics checks `// expected-error {{...}}` annotations (irc/tools/diagnostics.py)
  and exits 1 on any difference, instead of printing the error and exiting 0;
- a bad command line (missing input, unwritable -o) is one line and exit code 2.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Sequence
from io import BytesIO

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.arg_spec import parse_spec
from xdsl.utils.exceptions import DiagnosticException, ParseError, PassFailedException, VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from irc.tools.cli import package_version
from irc.tools.diagnostics import Diagnostic, check, parse_expectations
from irc.tools.locations import LocatedParser, SourceLoc, failing_op, op_location


def _fuse():
    from irc.lowering.tensor.irc_fuse import IrcFusePass

    return IrcFusePass


def _pack_weights():
    from irc.lowering.tensor.pack_weights import PackWeightsPass

    return PackWeightsPass


def _fold_params():
    from irc.lowering.tensor.fold_params import FoldParamsPass

    return FoldParamsPass


def _pipeline():
    from irc.pipeline import IrcPipelinePass

    return IrcPipelinePass


def _to_loops():
    from irc.lowering.to_loops.irc_to_loops import IrcToLoopsPass

    return IrcToLoopsPass


def _plan_memory():
    from irc.lowering.loops.plan_memory import PlanMemoryPass

    return PlanMemoryPass


def _parallelize():
    from irc.lowering.loops.parallelize import ParallelizePass

    return ParallelizePass


def _vectorize():
    from irc.lowering.loops.vectorize import VectorizePass

    return VectorizePass


def _cpp():
    from irc.lowering.cpp.emit_cpp import CppTarget

    return CppTarget


def _irt():
    from irc.dialects.irt import IRT

    return IRT


def _irl():
    from irc.dialects.irl import IRL

    return IRL


def _located(e: Exception, module: ModuleOp | None) -> Diagnostic:
    """The diagnostic for an error in one chunk: where it is and what it says."""
    if isinstance(e, ParseError):
        loc = e.span.get_location()
        where = SourceLoc(loc.file, loc.line, loc.col)
        return Diagnostic(where, e.msg, "\n".join(str(e).splitlines()[1:]))
    notes = "\n".join(getattr(e, "__notes__", ()))
    if isinstance(e, VerifyException) and module is not None:
        op = failing_op(module, e)
        if op is not None and not notes:  # a structural check names no op: annotate it
            try:
                op.emit_error(str(e), e)
            except VerifyException:
                notes = "\n".join(e.__notes__)
        return Diagnostic(op_location(op), str(e), notes)
    if isinstance(e, (ValueError, NotImplementedError)):
        return Diagnostic(None, f"{type(e).__name__}: {e}", notes)
    return Diagnostic(None, str(e), notes)


SPLIT_MARKER = b"// -----"

IRC_PASSES = {
    "irc-fuse": _fuse,
    "irc-pack-weights": _pack_weights,
    "irc-fold-params": _fold_params,
    "irc-to-loops": _to_loops,
    "irc-plan-memory": _plan_memory,
    "irc-parallelize": _parallelize,
    "irc-vectorize": _vectorize,
    "irc-pipeline": _pipeline,
}
"""irc's passes by name, imported on first use; `irc-pipeline` is irc.compile's whole pipeline
(irc/pipeline.py `declared`), each of the others one stage of it."""


class UsageError(Exception):
    """A bad command line (a missing input, an unwritable output): one line, exit code 2."""


class IrcOptMain(xDSLOptMain):
    version_format = f"irc-opt {package_version()} (xDSL {{xdsl_version}})"

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        self.ctx.register_dialect("irt", _irt)
        self.ctx.register_dialect("irl", _irl)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in IRC_PASSES.items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        super().register_all_targets()
        self.available_targets["cpp"] = _cpp

    def register_all_arguments(self, arg_parser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.prog = "irc-opt"
        for action in arg_parser._actions:  # say what irc-opt does with them (see run)
            if action.dest == "verify_diagnostics":
                action.help = ("check the errors against the file's `// expected-error {{...}}` "
                               "annotations (MLIR's syntax); exit 1 on any difference")
            elif action.dest == "split_input_file":
                action.help = ("process each `// -----` chunk on its own; a failing chunk is "
                               "reported, the others are still printed, and the exit code is 1")

    def get_input_stream(self):
        try:
            return super().get_input_stream()
        except OSError as e:
            raise UsageError(f"cannot read the input file {self.args.input_file!r}: {e.strerror}") from None

    def prepare_input(self):
        """Like xDSL's, but a chunk ends only at a line that is just `// -----` (as in MLIR), not
        at that text inside a comment such as `// CHECK: // -----`."""
        f, file_extension = self.get_input_stream()
        frontend = parse_spec(self.args.frontend).name if self.args.frontend else file_extension
        if frontend not in self.available_frontends:
            f.close()
            raise UsageError(
                f"cannot tell the format of {self.get_input_name()!r} from its extension "
                f"{file_extension!r}: name it *.mlir or pass -f mlir")
        if not self.args.split_input_file:
            return [(f, 0)], file_extension
        with f:
            lines = f.read().splitlines(keepends=True)
        chunks, start = [], 0
        for i, line in enumerate([*lines, SPLIT_MARKER]):
            if line.strip() == SPLIT_MARKER:
                chunks.append((BytesIO(b"".join(lines[start:i])), start))
                start = i + 1
        return chunks, file_extension

    def prepare_output(self):
        try:
            return super().prepare_output()
        except OSError as e:
            raise UsageError(f"cannot write the output file {self.args.output_file!r}: {e.strerror}") from None

    def parse_chunk(self, chunk, file_extension: str, start_offset: int = 0) -> ModuleOp | None:
        """MLIR text is parsed by `LocatedParser`: every op located, undefined values at their use."""
        if (parse_spec(self.args.frontend).name if self.args.frontend else file_extension) != "mlir":
            return super().parse_chunk(chunk, file_extension, start_offset)
        parser = LocatedParser(self.ctx, chunk.read(), self.get_input_name(), start_offset)
        return parser.parse_module(not self.args.no_implicit_module)

    def run(self) -> int:
        """Process every chunk; returns the exit code: 1 if any chunk failed (or, with
        --verify-diagnostics, if its errors differ from its annotations), else 0."""
        if self.args.shrink:
            return super().run() or 0
        chunks, file_extension = self.prepare_input()
        output = self.prepare_output()
        failed = False
        try:
            for i, (chunk, offset) in enumerate(chunks):
                if i > 0:
                    output.write("// -----\n")
                text = chunk.read()
                chunk.close()
                failed |= self._run_chunk(text, offset, file_extension, output)
                output.flush()
        finally:
            if output is not sys.stdout:
                output.close()
        return 1 if failed else 0

    def _run_chunk(self, text: bytes, offset: int, file_extension: str, output) -> bool:
        """Parse, transform and print one chunk; True if it failed."""
        module = None
        diagnostics = []
        try:
            module = self.parse_chunk(BytesIO(text), file_extension, offset)
            if module is not None:
                self.apply_passes(module)
                output.write(self.output_resulting_program(module))
        except ParseError as e:
            e.span = dataclasses.replace(e.span, line_offset=offset)  # lines of the whole file
            if self.args.parsing_diagnostics:  # xDSL's flag: print the error, exit code 0
                print(e)
                return False
            diagnostics.append(_located(e, None))
        except (DiagnosticException, ValueError, NotImplementedError) as e:
            diagnostics.append(_located(e, module))
        if self.args.verify_diagnostics:
            expected = parse_expectations(text.decode("utf-8", "replace"), offset + 1)
            problems = check(diagnostics, expected, self.get_input_name())
            for problem in problems:
                print(f"irc-opt: error: {problem}", file=sys.stderr)
            return bool(problems)
        for d in diagnostics:
            context = f"\n{d.context.rstrip()}" if d.context.strip() else ""
            print(f"irc-opt: error: {d.header()}{context}", file=sys.stderr)
        return bool(diagnostics)


def main(argv: Sequence[str] | None = None) -> None:
    """The `irc-opt` console script; exits with 1 for errors in the input, 2 for a bad
    command line, and returns on success."""
    try:
        code = IrcOptMain(description="irc modular optimizer driver", args=argv).run()
    except UsageError as e:
        print(f"irc-opt: error: {e}", file=sys.stderr)
        sys.exit(2)
    except (ParseError, DiagnosticException, PassFailedException) as e:
        notes = "".join(f"\n{n}" for n in getattr(e, "__notes__", ()))
        print(f"irc-opt: error: {e}{notes}", file=sys.stderr)
        sys.exit(1)
    except (ValueError, NotImplementedError) as e:  # bad pass options, an unknown file extension
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
    if code:
        sys.exit(code)


if __name__ == "__main__":
    main()

"""`irc-to-loops`: bufferize `irt` functions and lower every op to loop nests.

After this pass a function takes one `memref` per input and parameter, then one per result
(caller-provided output buffers), and returns nothing. Tensor values become buffers:

* a value the function returns is computed straight into its output buffer;
* other results get a `memref.alloc`, freed before the return;
* `irt.reshape` is a view (`memref.reinterpret_cast`), never a copy;
* an op whose results have no elements (an empty batch) gets its buffers and no kernel.

Every computing op becomes one loop nest whose independent output dimensions form one
`scf.parallel`; contractions add an inner `scf.for` reduction carrying the accumulator. The
scalar work per element comes from the op's own `build_scalar`/`build_epilogue`, so fused and
unfused ops lower through the same code. Each nest carries an `irc.kernel` attribute naming the
op it came from, which the C++ emitter prints as a comment.

What is legal after it: func, arith, math, scf, memref; no irt op and no tensor value.

How each op lowers is `table.LOWERINGS`, one explicit dict; the bufferization and the
builders every lowering uses are `function.FunctionLowering`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from irc.dialects.irt import core as irt  # noqa: F401  (`irc_to_loops.irt` for tests that patch the table)
from irc.lowering.tensor.fold_params import COMPILE_TIME_ATTR
from irc.lowering.to_loops.function import (  # noqa: F401  (the loop-level attributes later passes read)
    KERNEL_ATTR,
    OP_INDEX_ATTR,
    REDUCTION_ATTR,
    FunctionLowering,
)
from irc.lowering.to_loops.table import LOWERINGS
from irc.target import Target


@dataclass(frozen=True)
class IrcToLoopsPass(ModulePass):
    """Options (the Target's, see irc/target.py; the defaults are `Target()`'s):
    tag_ops: mark every loop nest with `irc.op`, the index of the op it came from in its
      function (used by profiling builds to attribute time to ops).
    gemm_width: the GEMM engine's register tile width (16 or 32); a packed rhs of another
      width stays on the scalar nest.
    gemm_rows: the register tile's rows (`irc.target.GEMM_ROWS_CHOICES`); a conv weight packed
      with another panel height is packed again at run time.
    matmul_rows: the register tile's rows of matrix products (linear layers, matmuls, attention),
      whose lhs is never packed: the blocking's row multiple.
    strict: no GEMM engine (IRC_STRICT builds: sequential-order sums).
    threads: the thread count the GEMM blocking (`tiles`) is chosen for.
    l1d, l2, l3: the data cache sizes in bytes the GEMM blocking is chosen for (0: unknown, the
      fixed blocking of `to_loops/gemm.py`).

    Functions marked `irc.compile_time` (irc-fold-params' fold functions) are left as they are:
    they are evaluated when the module is created, never lowered."""

    name = "irc-to-loops"
    tag_ops: bool = False
    gemm_width: int = Target.gemm_width
    gemm_rows: int = Target.gemm_rows
    matmul_rows: int = Target.matmul_rows
    strict: bool = False
    threads: int = Target.threads
    l1d: int = Target.l1d
    l2: int = Target.l2
    l3: int = Target.l3

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        options = dict(tag_ops=self.tag_ops, gemm_width=self.gemm_width, gemm_rows=self.gemm_rows,
                       matmul_rows=self.matmul_rows, strict=self.strict,
                       threads=self.threads, caches=(self.l1d, self.l2, self.l3))
        for fn in list(op.ops):
            if isinstance(fn, func.FuncOp) and not fn.is_declaration and COMPILE_TIME_ATTR not in fn.attributes:
                new = FunctionLowering(fn, LOWERINGS, **options).run()
                op.body.block.insert_op_before(new, fn)
                fn.detach()
                fn.erase()

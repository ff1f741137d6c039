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
from irc.lowering.to_loops.function import (  # noqa: F401  (the loop-level attributes later passes read)
    KERNEL_ATTR,
    OP_INDEX_ATTR,
    REDUCTION_ATTR,
    FunctionLowering,
)
from irc.lowering.to_loops.table import LOWERINGS


@dataclass(frozen=True)
class IrcToLoopsPass(ModulePass):
    """Options:
    tag-ops: mark every loop nest with `irc.op`, the index of the op it came from in its
    function (used by profiling builds to attribute time to ops)."""

    name = "irc-to-loops"
    tag_ops: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in list(op.ops):
            if isinstance(fn, func.FuncOp) and not fn.is_declaration:
                new = FunctionLowering(fn, LOWERINGS, tag_ops=self.tag_ops).run()
                op.body.block.insert_op_before(new, fn)
                fn.detach()
                fn.erase()

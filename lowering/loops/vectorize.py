"""`irc-vectorize`: mark the loops whose innermost dimension GCC can run in SIMD lanes.

    irc-opt model.mlir -p irc-to-loops,irc-vectorize -t cpp

A loop is marked `irc.vectorize` (a unit attribute, visible in the IR) when, for its innermost
induction variable `i` (the last one of an `scf.parallel`, the one of an `scf.for`):

* its body is straight-line: arith, math and memref.load/store only (no nested loop, no call,
  no allocation), so every lane runs the same instructions;
* every memory access is contiguous or invariant in `i`: `i` is the last index (stride 1, the
  buffers are dense row-major memrefs) or does not appear at all. A load may also read at
  `i*s + c` in the last index (s a constant up to `MAX_LOAD_STRIDE`, c invariant: a strided
  pooling window), which GCC does with a few contiguous loads and a permute. `i` in any other
  index position (a transpose, a walk down a column) or in other arithmetic disqualifies the loop;
* every store is indexed by `i` (one element per lane: no two lanes write the same place);
* an `scf.for` carries no value, or exactly one marked `irc.reduction` ("add" or "max"): the
  emitter then makes it an OpenMP SIMD reduction.

The C++ emitter turns the mark into `#pragma omp simd` on the innermost loop (`parallel for
simd` for a one-dimensional parallel nest): the outer dimensions stay the OpenMP-parallel ones.
The scalar math the body calls (`irc_exp`, `irc_erf`, ... from `cpp_math.py`) is branch-free
inline code, so a marked loop becomes AVX2/FMA code.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from irc.lowering.to_loops.irc_to_loops import REDUCTION_ATTR

VECTORIZE_ATTR = "irc.vectorize"
REDUCTION_KINDS = ("add", "max")


def is_vectorized(op: Operation) -> bool:
    """Whether `irc-vectorize` marked this loop."""
    return VECTORIZE_ATTR in op.attributes


MAX_LOAD_STRIDE = 4
"""The largest stride in `i` a vectorized load may have (beyond it GCC gathers element by element)."""


def _last_index(op: memref.LoadOp | memref.StoreOp) -> SSAValue | None:
    return op.indices[-1] if op.indices else None


def _const_index(v: SSAValue) -> int | None:
    if isinstance(v.owner, arith.ConstantOp) and isinstance(v.owner.value, IntegerAttr):
        return v.owner.value.value.data
    return None


def _strided_in(ops: list[Operation], iv: SSAValue) -> dict[SSAValue, int]:
    """Index values of the form iv*s + c (c invariant), each with its stride s; iv itself is 1."""
    strided: dict[SSAValue, int] = {iv: 1}
    for op in ops:
        if isinstance(op, arith.MuliOp) and op.lhs in strided and _const_index(op.rhs) is not None:
            strided[op.result] = strided[op.lhs] * _const_index(op.rhs)  # type: ignore[operator]
        elif isinstance(op, (arith.AddiOp, arith.SubiOp)) and op.lhs in strided and op.rhs not in strided:
            strided[op.result] = strided[op.lhs]
        elif isinstance(op, arith.AddiOp) and op.rhs in strided and op.lhs not in strided:
            strided[op.result] = strided[op.rhs]
    return strided


def _straight_line_ok(op: Operation, iv: SSAValue, strided: dict[SSAValue, int]) -> bool:
    """One body op: allowed, and touching `iv` only as the last index of an access (stores: `iv`
    itself; loads: `iv` or a short stride in it)."""
    if isinstance(op, (memref.LoadOp, memref.StoreOp)):
        if any(i in strided for i in op.indices[:-1]):
            return False
        last = _last_index(op)
        if isinstance(op, memref.StoreOp):
            return last is iv
        return last not in strided or 0 < strided[last] <= MAX_LOAD_STRIDE  # type: ignore[index]
    if isinstance(op, (scf.YieldOp, scf.ReduceOp)):
        return True
    if op.dialect_name() not in ("arith", "math") or op.regions:
        return False
    if op.results and op.results[0] in strided:  # the index arithmetic of a strided load
        return all(isinstance(use.operation, memref.LoadOp) or any(r in strided for r in use.operation.results)
                   for use in op.results[0].uses)
    return all(operand not in strided for operand in op.operands)


def body_vectorizable(ops: list[Operation], iv: SSAValue) -> bool:
    """Every op allowed, and no buffer both stored and read at an index other than `iv` (a
    later lane would read what an earlier one wrote)."""
    strided = _strided_in(ops, iv)
    if not all(_straight_line_ok(op, iv, strided) for op in ops):
        return False
    stored = {op.memref for op in ops if isinstance(op, memref.StoreOp)}
    return not any(isinstance(op, memref.LoadOp) and op.memref in stored and _last_index(op) is not iv for op in ops)


def vectorizable(loop: Operation) -> bool:
    """The conditions in the module doc, for an scf.parallel or scf.for."""
    if isinstance(loop, scf.ParallelOp):
        block = loop.body.block
        return bool(block.args) and body_vectorizable(list(block.ops), block.args[-1])
    if isinstance(loop, scf.ForOp):
        block = loop.body.block
        if loop.iter_args:
            kind = loop.attributes.get(REDUCTION_ATTR)
            if len(loop.iter_args) != 1 or not isinstance(kind, StringAttr) or kind.data not in REDUCTION_KINDS:
                return False
        return body_vectorizable(list(block.ops), block.args[0])
    return False


@dataclass(frozen=True)
class VectorizePass(ModulePass):
    name = "irc-vectorize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for loop in op.walk():
            if isinstance(loop, (scf.ParallelOp, scf.ForOp)) and vectorizable(loop):
                loop.attributes[VECTORIZE_ATTR] = UnitAttr()

"""`irc-vectorize`: mark the loops whose innermost dimension GCC can run in SIMD lanes, and how.

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
* every store is indexed by `i`, or `i + c` for a constant c, in the last place (one element per
  lane); stores to one buffer at different constants are at least the (constant) trip count
  apart (a pooling row's column phases), so no two lanes write the same place;
* an `scf.for` carries no value, or exactly one marked `irc.reduction` ("add" or "max"): the
  emitter then makes it an OpenMP SIMD reduction.

It also decides how the lanes are scheduled, and writes that on the loop so IR dumps show it
(the C++ emitter only prints it):

* `irc.simd` on a marked `scf.parallel`: "split" when it has outer dimensions of at least
  `SIMD_MIN_OUTER` iterations in all (OpenMP threads over the outer dimensions, `omp simd` on
  the innermost), else "inner" (`parallel for simd` on the innermost: one parallel region per
  outer iteration, the threads splitting the lanes); a nest irc-parallelize marks serial runs
  `omp simd` on the innermost either way;
* `irc.chunk = 64` on an `scf.for` carrying one "add"/"max" reduction over at least
  `CHUNKED_REDUCTION_TRIPS` constant iterations (marked or not): the emitter keeps that many
  partial results (see `REDUCTION_CHUNK`). Strict builds (no reassociation) ignore it;
* `irc.lanes = L` on a marked `scf.for` whose trip count is known only at run time but bounded
  by fewer than twice the Target's vector width W (the option `vector_width`): a pooling
  window's clamped column range, say at most 16 columns. Its `simdlen` is then L = half the
  bound (a power of two, at least 4) rather than W: with W lanes such a loop rarely fills one
  vector and runs its remainder scalar (a 3x3 stride-2 max pool to 16 columns: 132 us at 16
  lanes, 64 us at 8). Other SIMD loops run at W (the emitter's `vector_width`).

The scalar math the body calls (`irc_exp`, `irc_erf`, ... from `include/irc_math.h`) is
branch-free inline code, so a marked loop becomes AVX2/FMA code.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from irc.lowering.loops.constants import constant_int
from irc.lowering.to_loops.irc_to_loops import REDUCTION_ATTR

VECTORIZE_ATTR = "irc.vectorize"
SIMD_ATTR = "irc.simd"
SIMD_SPLIT, SIMD_INNER = "split", "inner"
CHUNK_ATTR = "irc.chunk"
LANES_ATTR = "irc.lanes"
REDUCTION_KINDS = ("add", "max")

SIMD_MIN_OUTER = 16
"""A marked nest threads over its outer dimensions when they have at least this many iterations
in all, else over its innermost one too (`parallel for simd`, one region per outer iteration)."""
REDUCTION_CHUNK = 64
"""Partial results of a chunked reduction: 4 zmm or 8 ymm registers under `omp simd`, filled a
chunk of iterations at a time and combined at the end. One vector accumulator would wait on the
add's latency every step; independent ones keep the adder busy (a 4096-float row sum: 325 ->
145 ns)."""
CHUNKED_REDUCTION_TRIPS = 256
"""Reductions of at least this many (constant) iterations are chunked; shorter ones would spend
more on the partial results' set-up and combination than they save."""


def is_vectorized(op: Operation) -> bool:
    """Whether `irc-vectorize` marked this loop."""
    return VECTORIZE_ATTR in op.attributes


MAX_LOAD_STRIDE = 4
"""The largest stride in `i` a vectorized load may have (beyond it GCC gathers element by element)."""


def _last_index(op: memref.LoadOp | memref.StoreOp) -> SSAValue | None:
    return op.indices[-1] if op.indices else None


def constant_bounds(loop: scf.ForOp) -> tuple[int, int] | None:
    """(lower bound, trip count) of a unit-step loop with constant bounds, else None."""
    lb, ub, step = (constant_int(v) for v in (loop.lb, loop.ub, loop.step))
    if lb is None or ub is None or step != 1:
        return None
    return lb, ub - lb


def simd_schedule(nest: scf.ParallelOp) -> str:
    """`irc.simd` of a marked nest (see the module doc); unknown bounds count as many iterations."""
    outer = 1
    for lb, ub in list(zip(nest.lowerBound, nest.upperBound))[:-1]:
        lo, hi = constant_int(lb), constant_int(ub)
        outer *= hi - lo if lo is not None and hi is not None else SIMD_MIN_OUTER
    return SIMD_SPLIT if len(nest.lowerBound) > 1 and outer >= SIMD_MIN_OUTER else SIMD_INNER


def chunked(loop: scf.ForOp) -> bool:
    """Whether the reduction `loop` carries keeps `REDUCTION_CHUNK` partial results."""
    kind, bounds = loop.attributes.get(REDUCTION_ATTR), constant_bounds(loop)
    return (len(loop.iter_args) == 1 and isinstance(kind, StringAttr) and kind.data in REDUCTION_KINDS
            and bounds is not None and bounds[1] >= CHUNKED_REDUCTION_TRIPS)


def _strided_in(ops: list[Operation], iv: SSAValue) -> dict[SSAValue, int]:
    """Index values of the form iv*s + c (c invariant), each with its stride s; iv itself is 1."""
    strided: dict[SSAValue, int] = {iv: 1}
    for op in ops:
        if isinstance(op, arith.MuliOp) and op.lhs in strided and constant_int(op.rhs) is not None:
            strided[op.result] = strided[op.lhs] * constant_int(op.rhs)  # type: ignore[operator]
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
            return last is iv or _store_offset(last, iv) is not None
        return last not in strided or 0 < strided[last] <= MAX_LOAD_STRIDE  # type: ignore[index]
    if isinstance(op, (scf.YieldOp, scf.ReduceOp)):
        return True
    if op.dialect_name() not in ("arith", "math") or op.regions:
        return False
    if op.results and op.results[0] in strided:  # the index arithmetic of a strided load or an offset store
        return all(isinstance(use.operation, (memref.LoadOp, memref.StoreOp)) or any(r in strided for r in use.operation.results)
                   for use in op.results[0].uses)
    return all(operand not in strided for operand in op.operands)


def _store_offset(index: SSAValue | None, iv: SSAValue) -> int | None:
    """c for a store's last index `iv + c` (c a constant), 0 for `iv` itself, else None."""
    if index is iv:
        return 0
    op = index.owner if index is not None else None
    if isinstance(op, arith.AddiOp) and iv in (op.lhs, op.rhs):
        return constant_int(op.rhs if op.lhs is iv else op.lhs)
    return None


def body_vectorizable(ops: list[Operation], iv: SSAValue, trips: int | None = None) -> bool:
    """Every op allowed; no buffer both stored and read at an index other than `iv` (a
    later lane would read what an earlier one wrote); and stores to one buffer at `iv` plus
    different constants (a pooling row's column phases) only `trips` or more apart (a constant
    trip count), so no two lanes write the same place."""
    strided = _strided_in(ops, iv)
    if not all(_straight_line_ok(op, iv, strided) for op in ops):
        return False
    stores = [op for op in ops if isinstance(op, memref.StoreOp)]
    stored = {op.memref for op in stores}
    if any(isinstance(op, memref.LoadOp) and op.memref in stored
           and (_last_index(op) is not iv or any(_last_index(st) is not iv for st in stores if st.memref is op.memref))
           for op in ops):
        return False
    for buffer in stored:
        offsets = sorted({_store_offset(_last_index(st), iv) for st in stores if st.memref is buffer})  # type: ignore[type-var]
        if len(offsets) > 1 and (trips is None or any(b - a < trips for a, b in zip(offsets, offsets[1:]))):
            return False
    return True


def vectorizable(loop: Operation) -> bool:
    """The conditions in the module doc, for an scf.parallel or scf.for."""
    if isinstance(loop, scf.ParallelOp):
        block = loop.body.block
        lo, hi = (constant_int(v) for v in (loop.lowerBound[-1], loop.upperBound[-1])) if block.args else (None, None)
        trips = hi - lo if lo is not None and hi is not None and constant_int(loop.step[-1]) == 1 else None
        return bool(block.args) and body_vectorizable(list(block.ops), block.args[-1], trips)
    if isinstance(loop, scf.ForOp):
        block = loop.body.block
        if loop.iter_args:
            kind = loop.attributes.get(REDUCTION_ATTR)
            if len(loop.iter_args) != 1 or not isinstance(kind, StringAttr) or kind.data not in REDUCTION_KINDS:
                return False
        bounds = constant_bounds(loop)
        return body_vectorizable(list(block.ops), block.args[0], bounds[1] if bounds else None)
    return False


def _bound(v: SSAValue) -> int | None:
    """A constant upper bound of an index value: a constant, or a min with one (`arith.minsi`, or
    the `select(a < c, a, c)` form)."""
    c = constant_int(v)
    if c is not None:
        return c
    op = v.owner
    if isinstance(op, arith.MinSIOp):
        bounds = [b for b in (_bound(op.lhs), _bound(op.rhs)) if b is not None]
        return min(bounds) if bounds else None
    if isinstance(op, arith.SelectOp) and isinstance(op.cond.owner, arith.CmpiOp):
        cmp = op.cond.owner
        if {cmp.lhs, cmp.rhs} == {op.lhs, op.rhs}:  # a min or a max of the two
            is_min = (cmp.predicate.value.data in (2, 3, 6, 7)) == (cmp.lhs is op.lhs)
            if is_min:
                bounds = [b for b in (_bound(op.lhs), _bound(op.rhs)) if b is not None]
                return min(bounds) if bounds else None
    return None


def _non_negative(v: SSAValue) -> bool:
    """Whether an index value is known >= 0: a constant, or a max with a constant >= 0."""
    c = constant_int(v)
    if c is not None:
        return c >= 0
    op = v.owner
    if isinstance(op, arith.MaxSIOp):
        return any(constant_int(x) is not None and constant_int(x) >= 0 for x in (op.lhs, op.rhs))  # type: ignore[operator]
    if isinstance(op, arith.SelectOp) and isinstance(op.cond.owner, arith.CmpiOp):
        cmp = op.cond.owner
        if {cmp.lhs, cmp.rhs} == {op.lhs, op.rhs}:
            is_max = (cmp.predicate.value.data in (4, 5, 8, 9)) == (cmp.lhs is op.lhs)
            return is_max and any(constant_int(x) is not None and constant_int(x) >= 0 for x in (op.lhs, op.rhs))  # type: ignore[operator]
    return False


def short_loop_lanes(loop: scf.ForOp, vector_width: int) -> int | None:
    """`irc.lanes` of a marked loop (see the module doc), or None to run it at the full width."""
    if constant_bounds(loop) is not None or constant_int(loop.step) != 1 or not _non_negative(loop.lb):
        return None
    bound = _bound(loop.ub)
    if bound is None or bound >= 2 * vector_width:
        return None
    lanes = 4
    while lanes * 4 <= bound:
        lanes *= 2
    return lanes if lanes < vector_width else None


@dataclass(frozen=True)
class VectorizePass(ModulePass):
    """Options: vector_width, the Target's float32 lanes (16, 8 or 4), which `irc.lanes` narrows
    for short loops (see the module doc)."""

    name = "irc-vectorize"
    vector_width: int = 8

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.vector_width not in (4, 8, 16):
            raise ValueError(f"irc-vectorize: vector_width must be 4, 8 or 16, got {self.vector_width}")
        for loop in op.walk():
            if isinstance(loop, (scf.ParallelOp, scf.ForOp)) and vectorizable(loop):
                loop.attributes[VECTORIZE_ATTR] = UnitAttr()
                if isinstance(loop, scf.ParallelOp):
                    loop.attributes[SIMD_ATTR] = StringAttr(simd_schedule(loop))
                elif (lanes := short_loop_lanes(loop, self.vector_width)) is not None:
                    loop.attributes[LANES_ATTR] = IntegerAttr(lanes, 64)
            if isinstance(loop, scf.ForOp) and chunked(loop):
                loop.attributes[CHUNK_ATTR] = IntegerAttr(REDUCTION_CHUNK, 64)

"""`irc-parallelize`: decide which top-level `scf.parallel` nests run with OpenMP.

    irc-opt model.mlir -p irc-to-loops,irc-parallelize -t cpp

Starting an OpenMP parallel region costs a few microseconds even with a warm thread pool, more
than a small kernel takes. This pass estimates each top-level `scf.parallel`'s work: its
iteration count times the ops of its body, where a nested `scf.for`/`scf.parallel` counts its
trip count times its own body (constants, yields and reduce terminators are free; an op may
say what it costs with an `irc_work() -> int` method). A trip count is `(ub - lb) / step` when
that is a constant (also for `ub = lb + constant`), else `DYNAMIC_TRIPS` (16). It records
`irc.work = N` and `irc.parallel = "omp"` when the work reaches the threshold (and there are at
least two iterations), else `irc.parallel = "serial"`.

The C++ emitter prints `#pragma omp parallel for` only for nests not marked "serial" (unmarked
nests, from hand-written IR, keep the pragma).

With symbolic sizes a trip count bounded by the function's size arguments is an expression
(`constants.size_expr`), and so is the work: such a nest is marked `irc.parallel = "omp"` with
`irc.work = "<expression>"` and `irc.threshold = N`, and the emitter prints OpenMP's
`if(work >= N)` clause, so the choice is made at every call from the actual sizes.

A nest that runs with OpenMP and has no SIMD schedule (`irc.simd`, irc-vectorize's) gets
`irc.collapse = rank - 1` when its outer dimensions have at least `COLLAPSE_MIN_OUTER` iterations
in all: the threads share the outer dimensions and the innermost stays a plain loop. Collapsing
the innermost too makes GCC rebuild every index from the flattened one each iteration: a
28x28x64 transpose took 95 us instead of 8 (one thread). Without the mark, all dimensions are
collapsed (few outer iterations: the threads need the innermost to share).

The default threshold was measured on the project machine (2-core Zen 3, GCC 12 libgomp,
see `examples/omp_threshold.py`): OpenMP pays off from about 30k-130k body ops (a wash near
65k, which is the default; under load from other processes, the higher end).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from irc.dialects.symbolic import Dim, cpp_dim, dim, format_dim, parse_dim, product
from irc.lowering.loops.constants import constant_int, size_expr
from irc.lowering.loops.vectorize import SIMD_ATTR
from irc.target import DEFAULT_OMP_THRESHOLD

PARALLEL_ATTR = "irc.parallel"
COLLAPSE_ATTR = "irc.collapse"
COLLAPSE_MIN_OUTER = 16
"""Outer iterations (all dimensions but the innermost) from which an OpenMP nest without a SIMD
schedule leaves its innermost dimension out of `collapse`."""
WORK_ATTR = "irc.work"
THRESHOLD_ATTR = "irc.threshold"
OMP, SERIAL = "omp", "serial"
DEFAULT_THRESHOLD = DEFAULT_OMP_THRESHOLD
UNBOUNDED = 1 << 62
DYNAMIC_TRIPS = 16
"""The trip count assumed for a loop whose extent is not a constant (in irc: clamped windows)."""


def _extent(lb: SSAValue, ub: SSAValue) -> int | None:
    """ub - lb when both are constants or ub is `lb + constant` (a window at a moving start)."""
    lo, hi = constant_int(lb), constant_int(ub)
    if lo is not None and hi is not None:
        return hi - lo
    add = ub.owner
    if isinstance(add, arith.AddiOp):
        if add.lhs is lb:
            return constant_int(add.rhs)
        if add.rhs is lb:
            return constant_int(add.lhs)
    return None


def _trips(lb: SSAValue, ub: SSAValue, step: SSAValue) -> Dim:
    extent, st = _extent(lb, ub), constant_int(step)
    if extent is None and st == 1:  # bounds the caller's sizes give: (ub - lb) at run time
        lo, hi = size_expr(lb), size_expr(ub)
        if lo is not None and hi is not None:
            return dim(hi - lo)
    if extent is None or not st:
        return DYNAMIC_TRIPS
    return max(0, -(-extent // st))


def _cap(n: Dim) -> Dim:
    return min(UNBOUNDED, n) if isinstance(n, int) else n


def iterations(loop: scf.ParallelOp) -> Dim:
    return product(_trips(lb, ub, st) for lb, ub, st in zip(loop.lowerBound, loop.upperBound, loop.step))


def block_work(block: Block) -> Dim:
    return _cap(dim(sum(op_work(op) for op in block.ops)))


def op_work(op: Operation) -> Dim:
    """Estimated scalar ops executed by `op`, nested loops included."""
    estimate = getattr(op, "irc_work", None)
    if callable(estimate):
        return int(estimate())
    if isinstance(op, (arith.ConstantOp, scf.YieldOp, scf.ReduceOp)):
        return 0
    if isinstance(op, scf.ForOp):
        return _cap(dim(_trips(op.lb, op.ub, op.step) * (1 + block_work(op.body.block))))
    if isinstance(op, scf.ParallelOp):
        return _cap(dim(iterations(op) * block_work(op.body.block)))
    return dim(1 + sum(block_work(b) for r in op.regions for b in r.blocks))


def mark(loop: scf.ParallelOp, threshold: int) -> None:
    work = op_work(loop)
    if not isinstance(work, int):  # decided at every call: OpenMP's if() clause (see the module doc)
        loop.attributes[WORK_ATTR] = StringAttr(format_dim(work))
        loop.attributes[THRESHOLD_ATTR] = IntegerAttr(threshold, 64)
        loop.attributes[PARALLEL_ATTR] = StringAttr(OMP)
        mark_collapse(loop)
        return
    loop.attributes[WORK_ATTR] = IntegerAttr(work, 64)
    trips = iterations(loop)
    parallel = work >= threshold and (not isinstance(trips, int) or trips >= 2)
    loop.attributes[PARALLEL_ATTR] = StringAttr(OMP if parallel else SERIAL)
    if parallel:
        mark_collapse(loop)


def mark_collapse(loop: scf.ParallelOp) -> None:
    """`irc.collapse = rank - 1` on an OpenMP nest without a SIMD schedule whose outer dimensions
    have enough iterations (see the module doc); unknown extents count as many."""
    rank = len(loop.lowerBound)
    if rank < 2 or SIMD_ATTR in loop.attributes:
        return
    outer = 1
    for lb, ub, step in list(zip(loop.lowerBound, loop.upperBound, loop.step))[:-1]:
        trips = _trips(lb, ub, step)
        outer *= trips if isinstance(trips, int) else COLLAPSE_MIN_OUTER
    if outer >= COLLAPSE_MIN_OUTER:
        loop.attributes[COLLAPSE_ATTR] = IntegerAttr(rank - 1, 64)


def run_time_condition(loop: Operation) -> str | None:
    """The C++ condition under which a nest with symbolic work runs with OpenMP, else None."""
    work, threshold = loop.attributes.get(WORK_ATTR), loop.attributes.get(THRESHOLD_ATTR)
    if isinstance(work, StringAttr) and isinstance(threshold, IntegerAttr):
        return f"{cpp_dim(parse_dim(work.data))} >= {threshold.value.data}"
    return None


def runs_serial(loop: Operation) -> bool:
    """What the emitter asks: was this nest marked to run without OpenMP?"""
    return loop.attributes.get(PARALLEL_ATTR) == StringAttr(SERIAL)


@dataclass(frozen=True)
class ParallelizePass(ModulePass):
    """Options:
    threshold: the work (body ops x iterations) from which a nest runs with OpenMP (the
    Target's `omp_threshold`: $IRC_OMP_THRESHOLD, else 65536, measured on the project machine)."""

    name = "irc-parallelize"
    threshold: int = DEFAULT_THRESHOLD

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        threshold = self.threshold
        if threshold < 0:
            raise ValueError(f"irc-parallelize: threshold must be >= 0, got {threshold}")
        for fn in op.ops:
            if isinstance(fn, func.FuncOp) and not fn.is_declaration:
                for top in fn.body.block.ops:
                    if isinstance(top, scf.ParallelOp):
                        mark(top, threshold)

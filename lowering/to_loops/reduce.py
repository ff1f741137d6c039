"""`irc-to-loops` for the ops of `dialects/irt/reduce.py` (listed in `table.LOWERINGS`); what
they compute on torch tensors is `dialects/irt/semantics.py`.

Every op is one kernel: an `scf.parallel` over the independent positions (output elements, rows,
(batch, head, query) triples), with `scf.for` loops carrying f32 accumulators inside.

* `irt.reduce`: one accumulator per output element; sums carry `irc.reduction = "add"`.
* `irt.softmax` / `irt.log_softmax`: three vectorizable passes over a row (in cache): the max
  `m` (a SIMD max reduction), the sum `l` of exp(x - m) (softmax stores each exp(x - m) in its
  output row as it goes), then the write: the output row times 1/l in place (softmax) or
  (x - m) - log l (log_softmax). Starting `m` at -FLT_MAX instead of -inf keeps -inf entries
  (masked positions) from producing NaN. (An online max/sum reads the row once less but
  rescales with an exp per element in a loop-carried chain that does not vectorize.)
* `irt.layer_norm`: the mean (summing x - x[0], so a large common offset costs no precision),
  then the biased variance of (x - mean) (the exact two-pass form, in f32), then the normalized,
  affine write: three reads of a row that is in cache; up to four rows per iteration, each pass
  over all of them in turn (`layer_norm_rows`).
* `irt.batch_matmul`: the contraction nest of `irt.matmul` with broadcast batch indices.
* `irt.attention`: online softmax per (batch..., query): for each key, the score q.k * scale
  (+ mask) updates the running max/sum and rescales the output row, which doubles as the
  accumulator; no scores are stored. Causal attention stops the key loop at the diagonal.

Sizes may be symbolic: loop bounds are then the function's size values, a mean's or a layer
norm's 1/count is computed once at call time (`reciprocal`), and attention with no keys at call
time keeps the zeros it stored (static Lk = 0 is decided here).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith, math as xmath, scf
from xdsl.dialects.builtin import FloatAttr, IndexType, StringAttr, f32, f64, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from irc.dialects.irt import core as irt
from irc.dialects.irt.core import fconst
from irc.dialects.irt.reduce import (
    AttentionOp,
    BatchMatmulOp,
    CumsumOp,
    LayerNormOp,
    ReduceKind,
    ReduceOp,
    SoftmaxBase,
)
from irc.dialects.symbolic import Dim, ceil_div, dim, product
from irc.lowering.to_loops.function import KERNEL_ATTR, REDUCTION_ATTR, FunctionLowering, describe, load_at, store_at

NEG_FLT_MAX = -3.4028234663852886e38  # the running max starts here, not at -inf (see module doc)

Accs = list[SSAValue]


def _bin(b: Builder, cls: type[Operation], x: SSAValue, y: SSAValue) -> SSAValue:
    return b.insert(cls(x, y)).results[0]


def _un(b: Builder, cls: type[Operation], x: SSAValue) -> SSAValue:
    return b.insert(cls(x)).results[0]


def for_loop(
    fl: FunctionLowering,
    b: Builder,
    ub: Dim | SSAValue,
    inits: Accs,
    body: Callable[[Builder, SSAValue, Accs], Accs],
    name: str = "j",
    reduction: bool = False,
    lb: Dim | SSAValue = 0,
) -> Accs:
    """scf.for iv in [lb, ub) carrying `inits` (of their own types); `body(builder, iv, accs)`
    returns the next accs. A bound is a value, or a size (static, or symbolic: computed once at
    the function's entry)."""
    block = Block(arg_types=[IndexType()] + [v.type for v in inits])
    block.args[0].name_hint = name
    inner = Builder(InsertPoint.at_end(block))
    inner.insert(scf.YieldOp(*body(inner, block.args[0], list(block.args[1:]))))
    lower, upper = (v if isinstance(v, SSAValue) else fl.index(v) for v in (lb, ub))
    loop = b.insert(scf.ForOp(lower, upper, fl.index(1), inits, Region(block)))
    if reduction and len(inits) == 1:
        loop.attributes[REDUCTION_ATTR] = StringAttr("add")
    return list(loop.results)


def nested_loops(
    fl: FunctionLowering,
    b: Builder,
    extents: Sequence[Dim],
    inits: Accs,
    body: Callable[[Builder, list[SSAValue], Accs], Accs],
    reduction: bool = False,
    name: str = "r",
) -> Accs:
    """Nested scf.for loops over `extents` carrying `inits` (the innermost may be a simd reduction)."""

    def level(d: int, bb: Builder, ivs: list[SSAValue], accs: Accs) -> Accs:
        if d == len(extents):
            return body(bb, ivs, accs)
        return for_loop(
            fl, bb, extents[d], accs,
            lambda ib, iv, a: level(d + 1, ib, [*ivs, iv], a),
            name=f"{name}{d}" if len(extents) > 1 else name,
            reduction=reduction and d == len(extents) - 1,
        )

    return level(0, b, [], inits)


def kernel(fl: FunctionLowering, shape: Sequence[Dim], label: str, body: Callable[[Builder, list[SSAValue]], None]) -> None:
    """`fl.nest`, also for a rank-0 parallel shape: then the loops run once at the top level and
    the first of them carries the `irc.kernel` label."""
    if shape:
        fl.nest(shape, label, body)
        return
    last = fl.block.last_op
    body(fl.b, [])
    op = last.next_op if last is not None else fl.block.first_op
    while op is not None and not isinstance(op, scf.ForOp):
        op = op.next_op
    if op is not None:
        op.attributes[KERNEL_ATTR] = StringAttr(label)


def batch_indices(
    fl: FunctionLowering, shape: Sequence[Dim], batch: Sequence[SSAValue], batch_shape: Sequence[Dim]
) -> list[SSAValue]:
    """Indices into the leading (batch) dims of an operand of `shape` whose batch dims broadcast
    to `batch_shape`: right-aligned, index 0 where the operand has size 1."""
    return fl.broadcast_indices(shape[:-2], batch, batch_shape)


def reciprocal(fl: FunctionLowering, count: Dim) -> float | SSAValue:
    """1 / count (a mean's or a variance's scale): a float for a static count (NaN for 0,
    eager's mean of nothing; `scalar` makes it a constant where it is used), else an f32 value
    computed once, at the current point of the function, from the count's call-time value
    (1 / 0 is inf there, and 0 * inf the same NaN)."""
    if isinstance(count, int):
        return 1.0 / count if count else math.nan
    as_int = fl.b.insert(arith.IndexCastOp(fl.index(count), i64)).result
    as_float = fl.b.insert(arith.SIToFPOp(as_int, f32)).result
    return _bin(fl.b, arith.DivfOp, fconst(fl.b, 1.0), as_float)


def scalar(b: Builder, value: float | SSAValue) -> SSAValue:
    """An f32 value: `value`, or a constant of it built at `b`."""
    return value if isinstance(value, SSAValue) else fconst(b, value)


# ---------------------------------------------------------------------------------------------
# irt.reduce
# ---------------------------------------------------------------------------------------------


def lower_reduce(fl: FunctionLowering, op: ReduceOp) -> None:
    out = fl.result_buffer(op.result)
    src = fl.buffers[op.input]
    in_shape, dims, kind = irt.shape_of(op.input), op.reduce_dims, op.reduce_kind
    kept = [d for d in range(len(in_shape)) if d not in dims]
    scale = reciprocal(fl, product(in_shape[d] for d in dims)) if kind == ReduceKind.MEAN else None

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        outer = [iv for d, iv in enumerate(ivs) if not (op.keeps_dims and d in dims)]

        def step(kb: Builder, rivs: list[SSAValue], accs: Accs) -> Accs:
            idx: list[SSAValue] = [None] * len(in_shape)  # type: ignore[list-item]
            for d, iv in zip(kept, outer):
                idx[d] = iv
            for d, iv in zip(dims, rivs):
                idx[d] = iv
            x = load_at(kb, src, idx)
            cls = arith.MaximumfOp if kind == ReduceKind.MAX else arith.AddfOp
            return [_bin(kb, cls, accs[0], x)]

        init = fconst(b, float("-inf") if kind == ReduceKind.MAX else 0.0)
        (acc,) = nested_loops(fl, b, [in_shape[d] for d in dims], [init], step, reduction=kind != ReduceKind.MAX)
        if scale is not None:
            acc = _bin(b, arith.MulfOp, acc, scalar(b, scale))  # 0/0: eager's NaN
        store_at(b, acc, out, ivs)

    kernel(fl, irt.shape_of(op.result), describe(op), body)


# ---------------------------------------------------------------------------------------------
# irt.cumsum
# ---------------------------------------------------------------------------------------------


def lower_cumsum(fl: FunctionLowering, op: CumsumOp) -> None:
    """Parallel over every dim but the summed one; along it a sequential loop carrying the sum
    (f64 for f32 elements, as torch's CPU kernel accumulates), storing each prefix."""
    out, src = fl.result_buffer(op.result), fl.buffers[op.input]
    shape, axis = irt.shape_of(op.input), op.axis
    floats = irt.is_float(irt.element_type(op.input))

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        def step(kb: Builder, j: SSAValue, accs: Accs) -> Accs:
            at = [*ivs[:axis], j, *ivs[axis:]]
            x = load_at(kb, src, at)
            if floats:
                total = _bin(kb, arith.AddfOp, accs[0], kb.insert(arith.ExtFOp(x, f64)).result)
                store_at(kb, kb.insert(arith.TruncFOp(total, f32)).result, out, at)
            else:
                total = _bin(kb, arith.AddiOp, accs[0], x)
                store_at(kb, total, out, at)
            return [total]

        zero = b.insert(arith.ConstantOp(FloatAttr(0.0, f64))).result if floats else irt.scalar_constant(b, 0, i64)
        for_loop(fl, b, shape[axis], [zero], step)

    kernel(fl, [s for d, s in enumerate(shape) if d != axis], describe(op), body)


# ---------------------------------------------------------------------------------------------
# irt.softmax, irt.log_softmax
# ---------------------------------------------------------------------------------------------


def _max_loop(fl: FunctionLowering, b: Builder, n: int, element: Callable[[Builder, SSAValue], SSAValue]) -> SSAValue:
    """max over `n` elements, from -FLT_MAX, as a loop marked `irc.reduction = "max"` (a SIMD
    max reduction: lanes may combine without NaN propagation, which the exp-sum that follows
    restores, since exp(NaN - m) is NaN)."""

    def step(kb: Builder, j: SSAValue, accs: Accs) -> Accs:
        return [_bin(kb, arith.MaximumfOp, accs[0], element(kb, j))]

    (m,) = for_loop(fl, b, n, [fconst(b, NEG_FLT_MAX)], step)
    m.owner.attributes[REDUCTION_ATTR] = StringAttr("max")
    return m


def lower_softmax(fl: FunctionLowering, op: SoftmaxBase) -> None:
    """Per row: a max pass, an exp-sum pass (softmax keeps exp(x - m) in the output row), and
    a write pass (softmax scales its output row in place by 1/sum; log_softmax writes
    (x - m) - log(sum)). Every pass is a straight-line loop irc-vectorize can mark."""
    out = fl.result_buffer(op.result)
    src = fl.buffers[op.input]
    shape, axis = irt.shape_of(op.input), op.axis
    outer_shape = [s for d, s in enumerate(shape) if d != axis]

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        def at(j: SSAValue) -> list[SSAValue]:
            return [*ivs[:axis], j, *ivs[axis:]]

        m = _max_loop(fl, b, shape[axis], lambda kb, j: load_at(kb, src, at(j)))

        def exp_sum(kb: Builder, j: SSAValue, accs: Accs) -> Accs:
            e = _un(kb, xmath.ExpOp, _bin(kb, arith.SubfOp, load_at(kb, src, at(j)), m))
            if not op.LOG:
                store_at(kb, e, out, at(j))
            return [_bin(kb, arith.AddfOp, accs[0], e)]

        (total,) = for_loop(fl, b, shape[axis], [fconst(b, 0.0)], exp_sum, reduction=True)
        if op.LOG:  # (x - m) - log(sum), as eager: x - (m + log(sum)) rounds m + log(sum) to x's
            log_total = _un(b, xmath.LogOp, total)  # magnitude (a row of 1e30s gave 0, not -log 33)
        else:
            inv = _bin(b, arith.DivfOp, fconst(b, 1.0), total)

        def write(kb: Builder, j: SSAValue, accs: Accs) -> Accs:
            if op.LOG:
                y = _bin(kb, arith.SubfOp, _bin(kb, arith.SubfOp, load_at(kb, src, at(j)), m), log_total)
            else:
                y = _bin(kb, arith.MulfOp, load_at(kb, out, at(j)), inv)
            store_at(kb, y, out, at(j))
            return []

        for_loop(fl, b, shape[axis], [], write)

    kernel(fl, outer_shape, describe(op), body)



# ---------------------------------------------------------------------------------------------
# irt.layer_norm
# ---------------------------------------------------------------------------------------------


LAYER_NORM_ROWS = 4
"""Rows a layer_norm kernel iteration normalizes (`layer_norm_rows`), each pass over every one
of them before the next pass: one row's passes are a chain of latencies (a vector sum, its
horizontal add, the mean, the next sum...) that a row of 64 or 256 floats cannot hide."""

LAYER_NORM_BLOCK_BYTES = 16 * 1024
"""The most bytes of rows one iteration takes together: half an L1 cache, so every row is still
there for the next pass."""


def layer_norm_rows(outer: Sequence[Dim], inner: Sequence[Dim]) -> int:
    """Rows of the last outer dim that one layer_norm iteration takes: up to `LAYER_NORM_ROWS`,
    at most `LAYER_NORM_BLOCK_BYTES` of them (static rows only), at most the dim's size."""
    count = product(inner)
    if not outer or not isinstance(count, int) or count <= 0:
        return 1
    rows = max(1, min(LAYER_NORM_ROWS, LAYER_NORM_BLOCK_BYTES // (4 * count)))
    return max(1, min(rows, outer[-1])) if isinstance(outer[-1], int) else rows


def lower_layer_norm(fl: FunctionLowering, op: LayerNormOp) -> None:
    """Each row: the mean (summing x - x[0]), the variance of x - mean, then the affine write (the
    module doc). `layer_norm_rows` rows per iteration of the kernel, each pass over every one of
    them in turn, so that their chains overlap (ConvNeXt's over 1x28x28x64, one thread, Zen 4:
    the kernel alone 20.9 -> 14.4 us). Every row is computed as alone; where the rows do not fill
    the last block, its last rows are the dim's last row again (the same values, stored twice:
    layer_norm never writes in place of its input)."""
    out = fl.result_buffer(op.result)
    src = fl.buffers[op.input]
    shape, n = irt.shape_of(op.input), op.normalized_rank
    outer_shape, inner = list(shape[: len(shape) - n]), list(shape[len(shape) - n :])
    inv_count = reciprocal(fl, product(inner))
    weight = fl.buffers[op.weight] if op.weight is not None else None
    bias = fl.buffers[op.bias] if op.bias is not None else None
    rows = layer_norm_rows(outer_shape, inner)
    nest_shape = [*outer_shape[:-1], ceil_div(outer_shape[-1], rows)] if rows > 1 else outer_shape

    def row_indices(b: Builder, ivs: list[SSAValue]) -> list[list[SSAValue]]:
        """The outer indices of each row of this iteration."""
        if rows == 1:
            return [ivs]
        last = outer_shape[-1]
        first = _bin(b, arith.MuliOp, ivs[-1], fl.index(rows))
        top = None if isinstance(last, int) and last % rows == 0 else fl.index(dim(last - 1))
        picked = []
        for k in range(rows):
            at = _bin(b, arith.AddiOp, first, fl.index(k)) if k else first
            picked.append([*ivs[:-1], at if top is None or k == 0 else _bin(b, arith.MinSIOp, at, top)])
        return picked

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        each = row_indices(b, ivs)

        def x_at(kb: Builder, row: list[SSAValue], rivs: list[SSAValue]) -> SSAValue:
            return load_at(kb, src, [*row, *rivs])

        # mean = x0 + sum(x - x0) / n: summing values near 0 keeps a large common offset exact
        firsts = [x_at(b, row, [fl.index(0)] * len(inner)) for row in each]
        totals = []
        for row, x0 in zip(each, firsts):
            def shifted(kb: Builder, r: list[SSAValue], a: Accs, row=row, x0=x0) -> Accs:
                return [_bin(kb, arith.AddfOp, a[0], _bin(kb, arith.SubfOp, x_at(kb, row, r), x0))]

            totals += nested_loops(fl, b, inner, [fconst(b, 0.0)], shifted, reduction=True)
        means = [_bin(b, arith.AddfOp, x0, _bin(b, arith.MulfOp, total, scalar(b, inv_count)))
                 for x0, total in zip(firsts, totals)]

        squares = []
        for row, mean in zip(each, means):
            def square(kb: Builder, r: list[SSAValue], a: Accs, row=row, mean=mean) -> Accs:
                d = _bin(kb, arith.SubfOp, x_at(kb, row, r), mean)
                return [_bin(kb, arith.AddfOp, a[0], _bin(kb, arith.MulfOp, d, d))]

            squares += nested_loops(fl, b, inner, [fconst(b, 0.0)], square, reduction=True)
        rstds = []
        for sq in squares:
            var = _bin(b, arith.MulfOp, sq, scalar(b, inv_count))
            rstds.append(_bin(b, arith.DivfOp, fconst(b, 1.0),
                              _un(b, xmath.SqrtOp, _bin(b, arith.AddfOp, var, fconst(b, op.epsilon)))))

        for row, mean, rstd in zip(each, means, rstds):
            def write(kb: Builder, r: list[SSAValue], a: Accs, row=row, mean=mean, rstd=rstd) -> Accs:
                y = _bin(kb, arith.MulfOp, _bin(kb, arith.SubfOp, x_at(kb, row, r), mean), rstd)
                if weight is not None:
                    y = _bin(kb, arith.MulfOp, y, load_at(kb, weight, r))
                if bias is not None:
                    y = _bin(kb, arith.AddfOp, y, load_at(kb, bias, r))
                store_at(kb, y, out, [*row, *r])
                return []

            nested_loops(fl, b, inner, [], write)

    kernel(fl, nest_shape, describe(op), body)



# ---------------------------------------------------------------------------------------------
# irt.batch_matmul
# ---------------------------------------------------------------------------------------------


def lower_batch_matmul(fl: FunctionLowering, op: BatchMatmulOp) -> None:
    out = fl.result_buffer(op.result)
    shape = irt.shape_of(op.result)
    batch_shape = shape[:-2]
    lhs, rhs = fl.buffers[op.lhs], fl.buffers[op.rhs]
    k_size = irt.shape_of(op.lhs)[-1]
    linear = op.contraction_kind == irt.ContractionKind.LINEAR

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        batch, i, j = ivs[:-2], ivs[-2], ivs[-1]
        lb = batch_indices(fl, irt.shape_of(op.lhs), batch, batch_shape)
        rb = batch_indices(fl, irt.shape_of(op.rhs), batch, batch_shape)

        def step(kb: Builder, k: SSAValue, accs: Accs) -> Accs:
            x = load_at(kb, lhs, [*lb, i, k])
            w = load_at(kb, rhs, [*rb, j, k] if linear else [*rb, k, j])
            return [_bin(kb, arith.AddfOp, accs[0], _bin(kb, arith.MulfOp, x, w))]

        (acc,) = for_loop(fl, b, k_size, [fconst(b, 0.0)], step, name="k", reduction=True)
        store_at(b, acc, out, ivs)

    fl.nest(shape, describe(op), body)



# ---------------------------------------------------------------------------------------------
# irt.attention
# ---------------------------------------------------------------------------------------------


def lower_attention(fl: FunctionLowering, op: AttentionOp) -> None:
    out = fl.result_buffer(op.result)
    shape = irt.shape_of(op.result)  # [*batch, Lq, Ev]
    batch_shape = shape[:-2]
    q, k, v = fl.buffers[op.q], fl.buffers[op.k], fl.buffers[op.v]
    mask = fl.buffers[op.mask] if op.mask is not None else None
    lq, e_size = irt.shape_of(op.q)[-2:]
    lk, ev = irt.shape_of(op.v)[-2:]
    scores_shape = (*batch_shape, lq, lk)

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        batch, i = ivs[:-1], ivs[-1]
        qb = batch_indices(fl, irt.shape_of(op.q), batch, batch_shape)
        kb_ = batch_indices(fl, irt.shape_of(op.k), batch, batch_shape)
        vb = batch_indices(fl, irt.shape_of(op.v), batch, batch_shape)
        row = [*ivs]  # out[*batch, i, e] = row + [e]

        def zero(lb: Builder, e: SSAValue, accs: Accs) -> Accs:
            store_at(lb, fconst(lb, 0.0), out, [*row, e])
            return []

        for_loop(fl, b, ev, [], zero, name="e")

        def key(lb: Builder, j: SSAValue, accs: Accs) -> Accs:
            m, denom = accs

            def dot(db: Builder, e: SSAValue, a: Accs) -> Accs:
                prod = _bin(db, arith.MulfOp, load_at(db, q, [*qb, i, e]), load_at(db, k, [*kb_, j, e]))
                return [_bin(db, arith.AddfOp, a[0], prod)]

            (s,) = for_loop(fl, lb, e_size, [fconst(lb, 0.0)], dot, name="e", reduction=True)
            s = _bin(lb, arith.MulfOp, s, fconst(lb, op.scale_value))
            if mask is not None:
                midx = fl.broadcast_indices(irt.shape_of(op.mask), [*batch, i, j], scores_shape)
                s = _bin(lb, arith.AddfOp, s, load_at(lb, mask, midx))
            m_new = _bin(lb, arith.MaximumfOp, m, s)
            corr = _un(lb, xmath.ExpOp, _bin(lb, arith.SubfOp, m, m_new))
            p = _un(lb, xmath.ExpOp, _bin(lb, arith.SubfOp, s, m_new))

            def accumulate(ab: Builder, e: SSAValue, a: Accs) -> Accs:
                o = _bin(ab, arith.MulfOp, load_at(ab, out, [*row, e]), corr)
                o = _bin(ab, arith.AddfOp, o, _bin(ab, arith.MulfOp, p, load_at(ab, v, [*vb, j, e])))
                store_at(ab, o, out, [*row, e])
                return []

            for_loop(fl, lb, ev, [], accumulate, name="e")
            return [m_new, _bin(lb, arith.AddfOp, _bin(lb, arith.MulfOp, denom, corr), p)]

        upper: Dim | SSAValue = lk
        if op.causal:  # keys j <= i: the loop ends at min(i + 1, Lk)
            upper = _bin(b, arith.AddiOp, i, fl.index(1))
            if not (isinstance(lq, int) and isinstance(lk, int) and lq <= lk):
                upper = _bin(b, arith.MinSIOp, upper, fl.index(lk))
        _, denom = for_loop(fl, b, upper, [fconst(b, NEG_FLT_MAX), fconst(b, 0.0)], key)
        if lk == 0:  # no keys: eager's softmax(empty) @ v sums nothing, the zeros stored above
            return
        inv = _bin(b, arith.DivfOp, fconst(b, 1.0), denom)
        if op.safe:  # a row masked whole sums no exp (denom 0): 0, not 0 * inf; NaN stays NaN
            some = b.insert(arith.CmpfOp(denom, fconst(b, 0.0), "ogt")).result
            inv = b.insert(arith.SelectOp(some, inv, fconst(b, 0.0))).result
        if not isinstance(lk, int):  # no keys at call time: keep those zeros (not 0 * 1/0)
            keys = b.insert(arith.CmpiOp(fl.index(lk), fl.index(0), "sgt")).result
            inv = b.insert(arith.SelectOp(keys, inv, fconst(b, 0.0))).result

        def normalize(nb: Builder, e: SSAValue, accs: Accs) -> Accs:
            store_at(nb, _bin(nb, arith.MulfOp, load_at(nb, out, [*row, e]), inv), out, [*row, e])
            return []

        for_loop(fl, b, ev, [], normalize, name="e")

    fl.nest(shape[:-1], describe(op), body)

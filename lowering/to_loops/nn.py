"""`irc-to-loops` for the ops of `dialects/irt/nn.py` (listed in `table.LOWERINGS`); what they
compute on torch tensors is `dialects/irt/semantics.py`.

Every op is one `scf.parallel` nest over its result [N, C/O, OH, OW] with `scf.for` loops over
the window inside, carrying the accumulator. Padding costs no branch: for each output position
the valid range of kernel taps is computed once with index arithmetic (clamped with max/min),
so the inner loops read only in-bounds elements and padded taps are simply not visited. The
clamps are emitted only where the geometry needs them (no padding, no ceil_mode overhang: none).

    conv2d:   acc = bias[o]; for kh in [lo_h, hi_h) for kw in [lo_w, hi_w) for c < C/groups:
                acc += x[n, g*C/groups + c, oh*sh - ph + kh*dh, ow*sw - pw + kw*dw] * w[o, c, kh, kw]
              out = epilogue(acc, ...)
    max pool: the same window walk with max and -inf; avg pool / adaptive: sum / window count.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, StringAttr, f32, i64
from xdsl.ir import Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from irc.dialects.irt import nn as irt_nn
from irc.dialects.irt.core import fconst, shape_of
from irc.lowering.to_loops.function import REDUCTION_ATTR, FunctionLowering, describe, load_at, store_at
from irc.lowering.to_loops.reduce import for_loop

# ---------------------------------------------------------------------------------------------
# Index arithmetic helpers
# ---------------------------------------------------------------------------------------------


def _i(b: Builder, cls, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
    return b.insert(cls(lhs, rhs)).result


def _mul(fl: FunctionLowering, b: Builder, v: SSAValue, k: int) -> SSAValue:
    return v if k == 1 else _i(b, arith.MuliOp, v, fl.index(k))


def _ceil_div_clamped(fl: FunctionLowering, b: Builder, v: SSAValue, d: int) -> SSAValue:
    """ceil(v / d) for d > 0, exact when the result is positive; <= 0 otherwise (callers clamp to >= 0)."""
    return v if d == 1 else _i(b, arith.DivSIOp, _i(b, arith.AddiOp, v, fl.index(d - 1)), fl.index(d))


@dataclass(frozen=True)
class Axis:
    """One spatial axis of a windowed op: input size, kernel, stride, padding, dilation, output size."""

    size: int
    kernel: int
    stride: int
    pad: int
    dilation: int
    out: int

    @property
    def may_start_before(self) -> bool:
        return self.pad > 0

    @property
    def may_end_after(self) -> bool:
        """Whether the last window reaches past the input (padding or a ceil_mode window)."""
        return (self.out - 1) * self.stride - self.pad + (self.kernel - 1) * self.dilation >= self.size


def window_taps(fl: FunctionLowering, b: Builder, o: SSAValue, ax: Axis) -> tuple[SSAValue, SSAValue, SSAValue]:
    """For output position `o`: (start, lo, hi), where input index = start + t*dilation is in
    bounds exactly for taps t in [lo, hi). start = o*stride - pad may be negative."""
    os_ = _mul(fl, b, o, ax.stride)
    start = _i(b, arith.SubiOp, os_, fl.index(ax.pad)) if ax.pad else os_
    lo, hi = fl.index(0), fl.index(ax.kernel)
    if ax.may_start_before:  # first tap t with start + t*d >= 0: ceil((pad - o*stride) / d)
        before = _i(b, arith.SubiOp, fl.index(ax.pad), os_)
        lo = _i(b, arith.MaxSIOp, _ceil_div_clamped(fl, b, before, ax.dilation), fl.index(0))
    if ax.may_end_after:  # taps t with start + t*d < size: t < ceil((size + pad - o*stride) / d)
        room = _i(b, arith.SubiOp, fl.index(ax.size + ax.pad), os_)
        hi = _i(b, arith.MinSIOp, _ceil_div_clamped(fl, b, room, ax.dilation), fl.index(ax.kernel))
    return start, lo, hi


def tap_index(fl: FunctionLowering, b: Builder, start: SSAValue, t: SSAValue, dilation: int) -> SSAValue:
    return _i(b, arith.AddiOp, start, _mul(fl, b, t, dilation))


def to_f32(b: Builder, v: SSAValue) -> SSAValue:
    as_int = b.insert(arith.IndexCastOp(v, i64)).result
    return b.insert(arith.SIToFPOp(as_int, f32)).result


Step = Callable[[Builder, list[SSAValue], SSAValue], SSAValue]


def reduction_loops(
    fl: FunctionLowering,
    b: Builder,
    bounds: Sequence[tuple[SSAValue, SSAValue]],
    names: Sequence[str],
    init: SSAValue,
    step: Step,
    additive: bool,
) -> SSAValue:
    """Nested `scf.for` loops over `bounds` carrying one f32 accumulator; `step(b, ivs, acc)`
    returns the next accumulator. The innermost loop of an additive reduction is marked for SIMD."""

    def build(b: Builder, depth: int, acc: SSAValue, ivs: list[SSAValue]) -> SSAValue:
        block = Block(arg_types=[IndexType(), f32])
        iv, carried = block.args
        iv.name_hint, carried.name_hint = names[depth], "acc"
        inner = Builder(InsertPoint.at_end(block))
        innermost = depth == len(bounds) - 1
        new = step(inner, [*ivs, iv], carried) if innermost else build(inner, depth + 1, carried, [*ivs, iv])
        inner.insert(scf.YieldOp(new))
        lo, hi = bounds[depth]
        loop = b.insert(scf.ForOp(lo, hi, fl.index(1), [acc], Region(block)))
        if innermost and additive:
            loop.attributes[REDUCTION_ATTR] = StringAttr("add")
        return loop.results[0]

    return build(b, 0, init, [])


def _axes(op, in_shape: Sequence[int], out_shape: Sequence[int], kernel: Sequence[int]) -> tuple[Axis, Axis]:
    return tuple(  # type: ignore[return-value]
        Axis(in_shape[2 + d], kernel[d], op.strides[d], op.paddings[d], op.dilations[d], out_shape[2 + d])
        for d in range(2)
    )


# ---------------------------------------------------------------------------------------------
# Lowerings
# ---------------------------------------------------------------------------------------------


def lower_conv2d(fl: FunctionLowering, op: irt_nn.Conv2dOp) -> None:
    out = fl.result_buffer(op.result)
    shape = shape_of(op.result)
    x, w = fl.buffers[op.input], fl.buffers[op.weight]
    bias = fl.buffers[op.bias] if op.bias is not None else None
    o_count, c_per_group, kh, kw = shape_of(op.weight)
    o_per_group = o_count // op.group_count
    ah, aw = _axes(op, shape_of(op.input), shape, (kh, kw))

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        n, o, oh, ow = ivs
        hs, h_lo, h_hi = window_taps(fl, b, oh, ah)
        ws, w_lo, w_hi = window_taps(fl, b, ow, aw)
        c_base = None
        if op.group_count > 1:
            c_base = _mul(fl, b, _i(b, arith.DivSIOp, o, fl.index(o_per_group)), c_per_group)
        init = load_at(b, bias, [o]) if bias is not None else fconst(b, 0.0)

        def step(kb: Builder, taps: list[SSAValue], acc: SSAValue) -> SSAValue:
            th, tw, c = taps
            ci = _i(kb, arith.AddiOp, c_base, c) if c_base is not None else c
            xv = load_at(kb, x, [n, ci, tap_index(fl, kb, hs, th, ah.dilation), tap_index(fl, kb, ws, tw, aw.dilation)])
            wv = load_at(kb, w, [o, c, th, tw])
            return kb.insert(arith.AddfOp(acc, kb.insert(arith.MulfOp(xv, wv)).result)).result

        bounds = [(h_lo, h_hi), (w_lo, w_hi), (fl.index(0), fl.index(c_per_group))]
        acc = reduction_loops(fl, b, bounds, ["kh", "kw", "c"], init, step, additive=True)
        args = [fl.load(b, e, ivs, shape) for e in op.epilogue_inputs]
        store_at(b, op.build_epilogue(b, acc, args), out, ivs)

    fl.nest(shape, describe(op), body)


def lower_max_pool2d(fl: FunctionLowering, op: irt_nn.MaxPool2dOp) -> None:
    """One output row per parallel iteration, its columns innermost: the row starts at -inf and
    every window tap (kh, kw) folds its valid column range [lo, hi) into it,
    out[ow] = max(out[ow], x[ih, ow*sw - pw + kw*dw]). The column loop has no carried value, so
    `irc-vectorize` runs it in SIMD lanes (the per-output form chained nine dependent maxes).
    Each output still takes its taps in (kh, kw) order, as before."""
    out = fl.result_buffer(op.result)
    shape = shape_of(op.result)
    x = fl.buffers[op.input]
    ah, aw = _axes(op, shape_of(op.input), shape, op.kernels)

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        n, c, oh = ivs
        hs, h_lo, h_hi = window_taps(fl, b, oh, ah)

        def fill(lb: Builder, ow: SSAValue, _: list) -> list:
            store_at(lb, fconst(lb, float("-inf")), out, [n, c, oh, ow])
            return []

        for_loop(fl, b, aw.out, [], fill, "ow")

        def row(hb: Builder, kh: SSAValue, _: list) -> list:
            ih = tap_index(fl, hb, hs, kh, ah.dilation)

            def tap(kb: Builder, kw: SSAValue, _: list) -> list:
                offset = _i(kb, arith.SubiOp, _mul(fl, kb, kw, aw.dilation), fl.index(aw.pad))  # kw*dw - pw
                # columns with 0 <= ow*sw + offset < W
                lo = _i(kb, arith.MaxSIOp, _ceil_div_clamped(fl, kb, _i(kb, arith.SubiOp, fl.index(0), offset), aw.stride),
                        fl.index(0))
                room = _i(kb, arith.SubiOp, fl.index(aw.size), offset)
                hi = _i(kb, arith.MinSIOp, _ceil_div_clamped(fl, kb, room, aw.stride), fl.index(aw.out))

                def fold(ib: Builder, ow: SSAValue, _: list) -> list:
                    iw = _i(ib, arith.AddiOp, _mul(fl, ib, ow, aw.stride), offset)
                    m = ib.insert(arith.MaximumfOp(load_at(ib, out, [n, c, oh, ow]), load_at(ib, x, [n, c, ih, iw]))).result
                    store_at(ib, m, out, [n, c, oh, ow])
                    return []

                for_loop(fl, kb, hi, [], fold, "ow", lb=lo)
                return []

            for_loop(fl, hb, aw.kernel, [], tap, "kw")
            return []

        for_loop(fl, b, h_hi, [], row, "kh", lb=h_lo)

    fl.nest(shape[:3], describe(op), body)


def _sum_window(fl, b, x, n, c, h_range, w_range) -> SSAValue:
    def step(kb: Builder, ij: list[SSAValue], acc: SSAValue) -> SSAValue:
        return kb.insert(arith.AddfOp(acc, load_at(kb, x, [n, c, *ij]))).result

    return reduction_loops(fl, b, [h_range, w_range], ["ih", "iw"], fconst(b, 0.0), step, additive=True)


def _avg_range(fl: FunctionLowering, b: Builder, o: SSAValue, ax: Axis) -> tuple[SSAValue, SSAValue, SSAValue]:
    """(first, end, padded extent) of the window of output `o`, PyTorch's avg_pool2d: the window
    is clipped to the padded input for the count_include_pad divisor, then to the input."""
    start = _mul(fl, b, o, ax.stride)
    if ax.pad:
        start = _i(b, arith.SubiOp, start, fl.index(ax.pad))
    end = _i(b, arith.AddiOp, start, fl.index(ax.kernel))
    padded = fl.index(ax.kernel)
    if (ax.out - 1) * ax.stride - ax.pad + ax.kernel > ax.size + ax.pad:  # ceil_mode overhang past the padding
        end = _i(b, arith.MinSIOp, end, fl.index(ax.size + ax.pad))
        padded = _i(b, arith.SubiOp, end, start)
    if ax.may_start_before:
        start = _i(b, arith.MaxSIOp, start, fl.index(0))
    if ax.may_end_after:
        end = _i(b, arith.MinSIOp, end, fl.index(ax.size))
    return start, end, padded


def lower_avg_pool2d(fl: FunctionLowering, op: irt_nn.AvgPool2dOp) -> None:
    out = fl.result_buffer(op.result)
    shape = shape_of(op.result)
    x = fl.buffers[op.input]
    ah, aw = _axes(op, shape_of(op.input), shape, op.kernels)
    include_pad = op.count_include_pad is not None

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        n, c, oh, ow = ivs
        h0, h1, hp = _avg_range(fl, b, oh, ah)
        w0, w1, wp = _avg_range(fl, b, ow, aw)
        total = _sum_window(fl, b, x, n, c, (h0, h1), (w0, w1))
        if include_pad:
            count = _i(b, arith.MuliOp, hp, wp)
        else:
            count = _i(b, arith.MuliOp, _i(b, arith.SubiOp, h1, h0), _i(b, arith.SubiOp, w1, w0))
        store_at(b, b.insert(arith.DivfOp(total, to_f32(b, count))).result, out, ivs)

    fl.nest(shape, describe(op), body)


def _adaptive_range(fl: FunctionLowering, b: Builder, o: SSAValue, size: int, out: int) -> tuple[SSAValue, SSAValue]:
    """[floor(o*size/out), ceil((o+1)*size/out)): PyTorch's adaptive pooling window."""
    if size % out == 0:
        start = _mul(fl, b, o, size // out)
        return start, _i(b, arith.AddiOp, start, fl.index(size // out))
    scaled = _mul(fl, b, o, size)
    start = _i(b, arith.DivSIOp, scaled, fl.index(out))
    end = _i(b, arith.DivSIOp, _i(b, arith.AddiOp, scaled, fl.index(size + out - 1)), fl.index(out))
    return start, end


def lower_adaptive_avg_pool2d(fl: FunctionLowering, op: irt_nn.AdaptiveAvgPool2dOp) -> None:
    out = fl.result_buffer(op.result)
    shape = shape_of(op.result)
    x = fl.buffers[op.input]
    _, _, h, w = shape_of(op.input)

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        n, c, oh, ow = ivs
        h0, h1 = _adaptive_range(fl, b, oh, h, shape[2])
        w0, w1 = _adaptive_range(fl, b, ow, w, shape[3])
        total = _sum_window(fl, b, x, n, c, (h0, h1), (w0, w1))
        if h % shape[2] == 0 and w % shape[3] == 0:
            count = fconst(b, float((h // shape[2]) * (w // shape[3])))
        else:
            count = to_f32(b, _i(b, arith.MuliOp, _i(b, arith.SubiOp, h1, h0), _i(b, arith.SubiOp, w1, w0)))
        store_at(b, b.insert(arith.DivfOp(total, count)).result, out, ivs)

    fl.nest(shape, describe(op), body)

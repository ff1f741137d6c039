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
    adaptive avg pool: the same window walk, sum / window count (a global one, output 1x1: each
              plane's H*W contiguous elements as one row, `_global_avg_pool`).

Three ops work a row at a time instead, the row's columns innermost so `irc-vectorize` runs them
in SIMD lanes: max and avg pooling (`separable_pool`: the window's rows into padded rows, a
block of output rows at a time, then their columns; strict builds keep a max pool folding each
tap's column range into the output row and an avg pool summing each window alone), and
depthwise convolutions (one input channel per group, `lower_depthwise_conv2d`: every tap
unrolled, the interior free of bounds, fused epilogue; planes of rows narrower than 8 as one
flat row, `_depthwise_flat`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, IntegerAttr, StringAttr, f32, i64
from xdsl.ir import Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from irc.dialects.irt import nn as irt_nn
from irc.dialects.irt.core import fconst, shape_of, splat_element, stretched_dims
from irc.dialects.symbolic import memref_of
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
    """The direct convolution; one input channel per group (depthwise) takes `lower_depthwise_conv2d`."""
    if shape_of(op.weight)[1] == 1:
        (_depthwise_flat if flat_plane(fl, op) else lower_depthwise_conv2d)(fl, op)
        return
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


def tap_span(ax: Axis, t: int) -> tuple[int, int]:
    """The output positions [lo, hi) whose input position o*stride - pad + t*dilation is in bounds."""
    offset = t * ax.dilation - ax.pad
    lo = max(0, -(offset // ax.stride))  # ceil(-offset / stride)
    hi = min(ax.out, -((offset - ax.size) // ax.stride))  # ceil((size - offset) / stride)
    return lo, max(lo, hi)


def interior(ax: Axis) -> tuple[int, int]:
    """The output positions [lo, hi) where every tap is in bounds (lo == hi: none)."""
    spans = [tap_span(ax, t) for t in range(ax.kernel)]
    lo = min(max(s[0] for s in spans), ax.out)
    return lo, max(lo, min(s[1] for s in spans))


def valid_taps(ax: Axis, o: int) -> list[int]:
    """The taps in bounds at output position `o`, in order."""
    return [t for t in range(ax.kernel) if tap_span(ax, t)[0] <= o < tap_span(ax, t)[1]]


def borders(ax: Axis) -> list[int]:
    """The output positions outside the interior, in order."""
    lo, hi = interior(ax)
    return [*range(lo), *range(hi, ax.out)]


PADDED_SLOTS_PER_THREAD = 4
"""Padded planes a depthwise conv keeps per thread it was compiled for (`_padded_buffer`): the
chunks of channels per thread of its nest (`_depthwise_nest`), of `_depthwise_flat`'s and of
`separable_pool`'s."""


ROW_ALIGN = 16
"""The alignment, in floats, of the input columns in a `PaddedRow` (64 bytes: a 16-float vector
and two 8-float ones): the copy into the row stores whole aligned vectors."""


@dataclass(frozen=True)
class PaddedRow:
    """Where the columns of an input row, padded by `pad` columns on the left, are in a row buffer
    `width` floats wide: padded column j in phase j % phases, at starts[j % phases] + j // phases
    (a column stride s > 1 stores its s phases side by side, so that each tap reads consecutive
    columns). Each phase holds `columns` columns, and its first input column is at a multiple of
    `ROW_ALIGN`, as is `width`: the copy of the input row into the buffer stores aligned vectors
    (one of the two overlapping column loops of a 28-column phase, [0, 16) + [12, 28)). Measured
    as the kernel alone, one thread, Zen 4: MobileNet-v2's 3x3/s2 on 1x96x56x56 42.5 -> 38.3 us
    (its phases had been at 0 and 29 of rows 58 wide; now 15 and 48 of 80), on 1x144x28x28 16.4
    -> 14.0; ResNet-18's 3x3/s2 max pool 64.2 -> 60.6, DenseNet's 6.1 -> 5.2. The stride-1
    depthwise convs measured level (3x3 on 1x32x56x56 25.3 / 25.2 us, on 1x144x28x28 29.1 / 29.3)."""

    pad: int
    phases: int
    columns: int
    starts: tuple[int, ...]
    width: int

    @staticmethod
    def of(padded: int, pad: int, phases: int) -> PaddedRow:
        """The layout of a row `padded` columns wide (padding included; whole phases: rounded up),
        its phases one after another."""
        columns = -(-padded // phases)
        starts, cursor = [], 0
        for p in range(phases):
            first = max(0, -(-(pad - p) // phases))  # q of the phase's first input column (padded q*phases + p >= pad)
            start = cursor + (-(cursor + first)) % ROW_ALIGN
            starts.append(start)
            cursor = start + columns
        return PaddedRow(pad, phases, columns, tuple(starts), -(-cursor // ROW_ALIGN) * ROW_ALIGN)

    def at(self, j: int) -> int:
        """Where padded column j is."""
        return self.starts[j % self.phases] + j // self.phases


def _padded_buffer(fl: FunctionLowering, op: irt_nn.Conv2dOp, ah: Axis, width: int, slots: int) -> SSAValue:
    """A buffer for planes of the input with their zero padding written out, [N, slots, H + 2*ph,
    width] (width: a `PaddedRow`'s, `_padded_row`): one plane per
    chunk of channels, rewritten for each channel of the chunk, so it stays in L1 (a plane per
    channel, MobileNet-v2's 96 x 58 x 58 of them, is 1.3 MB: every store of the copy missed)."""
    n = shape_of(op.input)[0]
    t = memref_of(f32, [n, slots, ah.size + 2 * ah.pad, width])
    alloc = fl.b.insert(memref.AllocOp([], [], t, IntegerAttr(64, 64)))
    alloc.memref.name_hint = "padded"
    fl.allocs.append(alloc.memref)
    return alloc.memref


def _padded_row(aw: Axis) -> PaddedRow:
    """The `PaddedRow` of a depthwise conv's padded input rows: a column stride s > 1 stores them
    in s column phases, so that every tap reads consecutive columns (the strided loads of each of
    the kernel's taps cost more than the one deinterleaving copy: MobileNet-v2's 3x3/s2 on
    1x96x56x56, one thread, Zen 4: 93 -> 82 us)."""
    return PaddedRow.of(aw.size + 2 * aw.pad, aw.pad, aw.stride)


def _pad_plane(fl: FunctionLowering, b: Builder, x: SSAValue, padded: SSAValue, nc: tuple[SSAValue, SSAValue],
               axes: tuple[Axis, Axis], slot: SSAValue, zeros_too: bool = True, input_too: bool = True) -> None:
    """Fill plane (n, slot) of `padded` from plane nc = (n, c) of `x` (axes: the conv's unpadded
    row and column axes): zero rows above and below, each input row with zero columns on both
    sides, laid out as `_padded_row` says; every loop runs over a row's columns of one phase
    (stored at the loop's index plus a constant). Only the zeros, or only the input: a plane that
    takes the inputs of several channels keeps its zeros."""
    n, c = nc
    ah, aw = axes
    width = padded.type.get_shape()[-1]
    (ph, h), (pw, w) = (ah.pad, ah.size), (aw.pad, aw.size)
    layout = _padded_row(aw)
    phases, wq = layout.phases, layout.columns

    def zeros(rb: Builder, r: SSAValue, lo: int, hi: int) -> None:
        if lo < hi and zeros_too:
            for_loop(fl, rb, hi, [], lambda zb, j, _: store_at(zb, fconst(zb, 0.0), padded, [n, slot, r, j]) or [], "j", lb=lo)

    # per phase p: the columns [q_lo, q_hi) of its part of the row that hold input columns
    # q*phases + p - pw; the rest of its wq columns are zeros
    spans = []
    for p in range(phases):
        q_lo = min(max(0, -(-(pw - p) // phases)), wq)
        spans.append((q_lo, min(max(q_lo, -(-(pw + w - p) // phases)), wq)))

    def row(rb: Builder, r: SSAValue, _: list) -> list:
        src_row = _i(rb, arith.SubiOp, r, fl.index(ph)) if ph else r
        for start, (q_lo, q_hi) in zip(layout.starts, spans):  # padded column q*phases + p, input column q*phases + p - pw
            zeros(rb, r, start, start + q_lo)
            zeros(rb, r, start + q_hi, start + wq)
        if input_too:  # (a loop per phase reading every other column ran scalar, GCC peeling for
            # the gap: MobileNet-v2's 3x3/s2 on 1x96x56x56, 56.5 -> 48.4 us a call as groups)
            _column_groups(fl, rb, w, layout, lambda gb, src, dst:
                           store_at(gb, load_at(gb, x, [n, c, src_row, src]), padded, [n, slot, r, dst]))
        return []

    for lo, hi in ((0, ph), (ph + h, ph + h + ah.pad)) if zeros_too else ():
        if lo < hi:
            for_loop(fl, b, hi, [], lambda rb, r, _: zeros(rb, r, 0, width) or [], "r", lb=lo)
    if input_too or (zeros_too and any(q_lo > 0 or q_hi < wq for q_lo, q_hi in spans)):
        for_loop(fl, b, ph + h, [], row, "r", lb=ph)


def _column_groups(fl: FunctionLowering, b: Builder, count: int, layout: PaddedRow,
                   column: Callable[[Builder, SSAValue, SSAValue], None], chunks: bool = True) -> None:
    """column(b, src, dst) for every input column src < count of a row, `dst` where its padded column
    src + pad is in the row (`layout`). A loop over
    groups of `phases` input columns (q*phases .. q*phases + phases - 1): consecutive loads with
    no gap, each phase's stores at q plus a constant, so `irc-vectorize` marks it; in whole
    vectors from 4 groups on (`column_chunks`, the last overlapping: a column may be done twice;
    14 columns in one loop left GCC a scalar remainder, 15% of a 14x14 depthwise conv's time);
    the columns after the last whole group straight-line."""

    phases = layout.phases

    def group(gb: Builder, q: SSAValue | int, size: int = phases) -> None:
        for p in range(size):
            src = _plus(fl, gb, _mul(fl, gb, q, phases) if isinstance(q, SSAValue) else q * phases, p)
            column(gb, src, _plus(fl, gb, q, layout.at(p + layout.pad)))

    full = count // phases
    for lo, hi in column_chunks(full) if chunks and full >= 4 else [(0, full)] if full else []:
        for_loop(fl, b, hi, [], lambda gb, q, _: group(gb, q) or [], "q", lb=lo)
    if count % phases:
        group(b, full, count % phases)


def _plane_rows(fl: FunctionLowering, b: Builder, x: SSAValue, n: SSAValue, c: SSAValue) -> SSAValue:
    """The index of plane (n, c)'s first row among all rows of an NCHW buffer: (n*C + c)*H."""
    _, channels, height, _ = x.type.get_shape()
    return _mul(fl, b, _i(b, arith.AddiOp, _mul(fl, b, n, channels), c), height)


def _row_view(fl: FunctionLowering, b: Builder, x: SSAValue, plane: SSAValue, h: SSAValue,
              size: int | None = None) -> SSAValue:
    """Row h of the plane whose first row is `plane` (`_plane_rows`) in an NCHW buffer, as a 1-D
    view (no copy); `size` elements from there (several rows) if given. A column loop reading
    several rows reads each through its own row pointer at the column plus a constant, which GCC
    addresses with one register and displacements; through the 4-D buffer each tap was an
    address computation of its own."""
    width = x.type.get_shape()[-1]
    size = width if size is None else size
    at = _mul(fl, b, _i(b, arith.AddiOp, plane, h), width)
    view = b.insert(memref.ReinterpretCastOp(x, [at], [], [], [DYNAMIC_INDEX], [size], [1], memref_of(f32, [size])))
    view.result.name_hint = "row"
    return view.result


PARTIAL_SUMS = 4
"""Independent partial sums a depthwise output's taps are spread over (round robin), outside
strict builds: one sum chains every FMA on the last one's latency, and a narrow row (14 or 7
columns: one vector) has no other work to overlap with it."""


def _tree_sum(b: Builder, values: list[SSAValue]) -> SSAValue:
    """((v0 + v1) + (v2 + v3)): pairwise."""
    while len(values) > 1:
        values = [b.insert(arith.AddfOp(values[k], values[k + 1])).result if k + 1 < len(values) else values[k]
                  for k in range(0, len(values), 2)]
    return values[0]


MAX_TAPS_PER_LOOP = 25
"""The most taps one column loop of a depthwise conv sums (5x5). GCC gives every tap's load its
own address register and keeps every weight in a vector register, so 49 taps (7x7) spill both
and the loop reloads them per tap; a 7x7 kernel sums one kernel row per pass instead, keeping
the partial sums in the output row (in L1), in the same order."""


ROW_BLOCK = 7
"""Output rows a depthwise conv computes together outside strict builds (`_depthwise_blocked`):
each input row a column loop loads feeds up to this many outputs' sums, one register each."""

MAX_CHUNK = 16
"""The widest column loop `column_chunks` makes: a multiple of every vector width (16, 8, 4), so
a row of that many columns runs in whole vectors at any width."""


def column_chunks(width: int) -> list[tuple[int, int]]:
    """Column ranges [lo, hi) covering [0, width), each a run of whole vectors: the longest
    prefix that is a multiple of C (the largest power of two <= min(width, MAX_CHUNK)), then the
    remainder r widened to the power of two above it (at least 4 when C is) and ending at
    `width`, so it overlaps the prefix (28 -> [0, 16) + [12, 28); 14 -> [0, 8) + [6, 14);
    9 -> [0, 8) + [5, 9); 56 -> [0, 48) + [48, 56)). GCC runs
    a loop of that many trips without a scalar remainder: 28 columns as 16 + 8 + 4 left 4 scalar
    columns, each as slow as a vector."""
    chunk = 1 << (min(width, MAX_CHUNK).bit_length() - 1)
    main = width // chunk * chunk
    ranges = [(0, main)]
    if main < width:
        tail = max(1 << (width - main - 1).bit_length(), min(4, chunk))
        ranges.append((width - tail, width))
    return ranges


def _shifted(fl: FunctionLowering, b: Builder, v: SSAValue | int, ax: Axis, t: int,
             layout: PaddedRow | None = None) -> SSAValue:
    """v*stride - pad + t*dilation (in bounds where it is used); a constant for a constant v. In
    a padded row (`layout`, whose phases divide the stride): where that column is, v*(stride /
    phases) plus the tap's place in the row."""
    offset = t * ax.dilation - ax.pad
    if layout is not None:
        if isinstance(v, int):
            return fl.index(layout.at(v * ax.stride + offset))
        return _plus(fl, b, _mul(fl, b, v, ax.stride // layout.phases), layout.at(offset))
    if isinstance(v, int):
        return fl.index(v * ax.stride + offset)
    at = _mul(fl, b, v, ax.stride)
    return _i(b, arith.AddiOp if offset > 0 else arith.SubiOp, at, fl.index(abs(offset))) if offset else at


def _interior_columns(lo: int, hi: int, may_overlap: bool) -> list[tuple[int, int]]:
    """The column loops of a depthwise row's interior [lo, hi): one, or, for a row of more than 8
    columns GCC leaves a scalar remainder of (not a multiple of 8) that `may_overlap` (one pass,
    nothing re-read from the output), runs of whole vectors (`column_chunks`, the last overlapping).
    MobileNet-v2's 3x3/s2 on 1x96x56x56 (28 columns): 82 -> 68 us; on 56 columns chunks measured
    slower (46 -> 50 us) than GCC's own vector remainder."""
    if lo >= hi:
        return []
    if not may_overlap or hi - lo < 8 or (hi - lo) % 8 == 0:
        return [(lo, hi)]
    return [(lo + c_lo, lo + c_hi) for c_lo, c_hi in column_chunks(hi - lo)]


def lower_depthwise_conv2d(fl: FunctionLowering, op: irt_nn.Conv2dOp) -> None:
    """A convolution with one input channel per group (depthwise, any channel multiplier): one
    parallel iteration per output plane (n, o), each output row's columns innermost, every tap
    unrolled with its weight loaded once per plane:

        for oh in the interior rows (every kernel row in bounds):
          for ow in the interior columns (every tap in bounds):
            out[oh, ow] = epilogue(bias[o] + x[ih_0, iw_0(ow)] * w[0, 0] + ... + x[ih_kH-1, iw_kW-1(ow)] * w[kH-1, kW-1], e...)
          each border column: the same sum over its in-bounds taps (straight-line code)
        each border row (a compile-time oh): the same over its in-bounds kernel rows

    The row and column ranges and each border's taps are compile-time constants, so nothing tests
    bounds at run time and padded taps cost nothing. The column loops carry no value and index
    every buffer by the column in the last place (stride 1 or 2 in the input), so `irc-vectorize`
    marks them: the interior runs in full SIMD lanes, the accumulator in a register, one store.
    Each output adds its taps in (kh, kw) order after the bias, as the scalar nest does.

    Outside strict builds a padded convolution with a channel multiplier of 1 first writes its
    plane's input, zero padding included, into a padded plane in the same iteration (so the
    convolution reads it back from cache; one plane per chunk of channels, reused by each channel
    of the chunk: `_depthwise_nest`); then every row and column is interior and the
    borders' scalar code disappears (with a 7x7 kernel on 56 columns that code took most of the
    time). A padded tap then adds x*0 (which differs only for an infinite weight or a -0 sum),
    so strict builds keep the borders and sum exactly the scalar nest's terms in its order. Other
    builds also spread the taps over `PARTIAL_SUMS` sums (as the GEMM engine reassociates). With a
    column stride the buffer's rows hold the column phases side by side (`_padded_row`), so
    every tap reads consecutive columns.

    Outside strict builds a stride-1 conv on rows narrower than 8 whose padding keeps the row
    width takes `_depthwise_flat` (each plane one flat row of outputs, masks for the taps off a
    row); other convs whose taps are then all in bounds, at a column stride of 1 or
    with column phases, take `_depthwise_blocked` instead: `ROW_BLOCK` output rows per column
    loop, each loaded input feeding every output that reads it, columns in whole vectors
    (ConvNeXt's 7x7 on 1x64x28x28: 194 -> 84 us, on 1x128x14x14: 152 -> 53 us)."""
    out = fl.result_buffer(op.result)
    shape = shape_of(op.result)
    x, w = fl.buffers[op.input], fl.buffers[op.weight]
    bias = fl.buffers[op.bias] if op.bias is not None else None
    o_count, _, kh, kw = shape_of(op.weight)
    multiplier = o_count // op.group_count
    ah, aw = _axes(op, shape_of(op.input), shape, (kh, kw))
    padded, raw_axes, layout, slots = None, (ah, aw), None, min(o_count, PADDED_SLOTS_PER_THREAD * fl.threads)
    if (ah.pad or aw.pad) and multiplier == 1 and not fl.strict:
        layout = _padded_row(aw)
        padded = _padded_buffer(fl, op, ah, layout.width, slots)
        ah, aw = (Axis(a.size + 2 * a.pad, a.kernel, a.stride, 0, a.dilation, a.out) for a in (ah, aw))

    def shifted(b: Builder, v: SSAValue | int, ax: Axis, t: int) -> SSAValue:
        return _shifted(fl, b, v, ax, t, layout if ax is aw else None)

    # the row blocks at a column stride of 1, or with column phases (every tap reads consecutive
    # columns; with strided loads the 2R+1 rows of a block were slower than the row at a time
    # nest). Measured, one thread: 3x3 on 1x32x56x56 35.7 -> 28.5 us (8 lanes: 40.9 -> 33.2),
    # 5x5 83.9 -> 62.0; 3x3/s2 on 1x96x56x56 48.4 -> 44.4, on 1x192x14x14 13.8 -> 10.8; 7x7/s2
    # on 1x96x56x56 246 -> 110 (the row at a time nest's pass per kernel row stores partial sums)
    blocked = (not fl.strict and (aw.stride == 1 or layout is not None) and ah.out > 0 and aw.out > 0
               and interior(ah) == (0, ah.out) and interior(aw) == (0, aw.out))

    def body(b: Builder, n: SSAValue, o: SSAValue, slot: SSAValue | None) -> None:
        """Output plane (n, o), its padded input written to plane (n, slot) of `padded` first."""
        c = o if multiplier == 1 else _i(b, arith.DivSIOp, o, fl.index(multiplier))
        if padded is not None and slot is not None:
            _pad_plane(fl, b, x, padded, (n, o), raw_axes, slot, zeros_too=slots == o_count)
        src = x if padded is None else padded
        weights = [[load_at(b, w, [o, fl.index(0), fl.index(i), fl.index(j)]) for j in range(kw)] for i in range(kh)]
        init = load_at(b, bias, [o]) if bias is not None else None
        plane = _plane_rows(fl, b, src, n, c if slot is None else slot)
        if blocked:
            _depthwise_blocked(fl, b, op, src, plane, out, [n, o], weights, init, ah, aw, layout)
            return

        def output(b: Builder, oh: SSAValue, rows: list, ow: SSAValue | int, cols: Sequence[int],
                   first: bool = True, last: bool = True) -> None:
            """Output (oh, ow): the bias (or, unless `first`, the partial sum stored there) plus the
            taps of kernel rows `rows` in order; the epilogue if `last`; one store."""
            at = [n, o, oh, ow if isinstance(ow, SSAValue) else fl.index(ow)]
            start = (init if init is not None else fconst(b, 0.0)) if first else load_at(b, out, at)
            partial: list[SSAValue | None] = [start] + [None] * (0 if fl.strict else PARTIAL_SUMS - 1)
            for t, (i, ih, j) in enumerate((i, ih, j) for i, ih in rows for j in cols):
                term = b.insert(arith.MulfOp(load_at(b, ih, [shifted(b, ow, aw, j)]), weights[i][j])).result
                k = t % len(partial)
                partial[k] = term if partial[k] is None else b.insert(arith.AddfOp(partial[k], term)).result
            acc = _tree_sum(b, [v for v in partial if v is not None])
            if last:
                acc = op.build_epilogue(b, acc, [fl.load(b, e, at, shape) for e in op.epilogue_inputs])
            store_at(b, acc, out, at)

        def row(rb: Builder, oh: SSAValue | int, taps: list[int]) -> None:
            rows = [(i, _row_view(fl, rb, src, plane, shifted(rb, oh, ah, i))) for i in taps]
            oh = oh if isinstance(oh, SSAValue) else fl.index(oh)
            lo, hi = interior(aw)
            # at most MAX_TAPS_PER_LOOP taps per column loop: a larger kernel takes a pass per kernel row
            passes = [rows] if len(rows) * kw <= MAX_TAPS_PER_LOOP else [[r] for r in rows]
            for p, part in enumerate(passes):
                first, last = p == 0, p == len(passes) - 1
                for c_lo, c_hi in _interior_columns(lo, hi, len(passes) == 1 and not fl.strict):
                    for_loop(fl, rb, c_hi, [], lambda cb, ow, _, part=part, first=first, last=last:
                             output(cb, oh, part, ow, range(kw), first, last) or [], "ow", lb=c_lo)
            for ow in borders(aw):
                output(rb, oh, rows, ow, valid_taps(aw, ow))

        lo, hi = interior(ah)
        if lo < hi:
            for_loop(fl, b, hi, [], lambda rb, oh, _: row(rb, oh, list(range(kh))) or [], "oh", lb=lo)
        for oh in borders(ah):
            row(b, oh, valid_taps(ah, oh))

    _depthwise_nest(fl, op, body, None if padded is None else slots,
                    lambda b, n, q: _pad_plane(fl, b, x, padded, (n, q), raw_axes, q, input_too=False))


def _depthwise_nest(fl: FunctionLowering, op: irt_nn.Conv2dOp, body: Callable, slots: int | None,
                    zeros: Callable[[Builder, SSAValue, SSAValue], None] | None, *more: Callable) -> None:
    """The parallel nest of a depthwise conv calling body(b, n, o, slot) for every output plane
    (n, o), slot: the plane of the padded buffer its input is written to (None: no padded
    buffer). A plane per channel, or one per chunk of channels [q*C/slots, (q+1)*C/slots) taken
    one after another, zeros(b, n, q) (if given) writing the plane's zeros once, before them.
    Each of `more` is a further pass called the same way after `body`, over every plane of the
    chunk again (`_depthwise_flat`: every plane copied, then every one computed)."""
    shape = shape_of(op.result)
    channels = shape[1]
    passes = (body, *more)
    if slots is None or slots == channels:
        def plane(b: Builder, ivs: list[SSAValue]) -> None:
            for run in passes:
                run(b, *ivs, None if slots is None else ivs[1])

        fl.nest(shape[:2], describe(op), plane)
        return

    def chunk(b: Builder, ivs: list[SSAValue]) -> None:
        n, q = ivs
        if zeros is not None:
            zeros(b, n, q)
        lo, hi = (_i(b, arith.DivSIOp, _mul(fl, b, v, channels), fl.index(slots)) for v in (q, _plus(fl, b, q, 1)))
        for run in passes:
            for_loop(fl, b, hi, [], lambda ob, o, _, run=run: run(ob, n, o, q) or [], "o", lb=lo)

    fl.nest([shape[0], slots], describe(op), chunk)


def _plus(fl: FunctionLowering, b: Builder, v: SSAValue | int, k: int) -> SSAValue:
    """v + k, a constant for a constant v."""
    if isinstance(v, int):
        return fl.index(v + k)
    return _i(b, arith.AddiOp, v, fl.index(k)) if k else v


def _block_reads(rows: int, kernel: int, ah: Axis) -> dict[int, list[tuple[int, int]]]:
    """For a block of `rows` output rows: each input row offset t it reads (from the block's
    first input row), in order, with the (output row r, kernel row i) pairs that read it."""
    reads: dict[int, list[tuple[int, int]]] = {}
    for r in range(rows):
        for i in range(kernel):
            reads.setdefault(r * ah.stride + i * ah.dilation, []).append((r, i))
    return dict(sorted(reads.items()))


def _depthwise_blocked(fl: FunctionLowering, b: Builder, op: irt_nn.Conv2dOp, src: SSAValue, plane: SSAValue,
                       out: SSAValue, nc: list[SSAValue], weights: list[list[SSAValue]], init: SSAValue | None,
                       ah: Axis, aw: Axis, layout: PaddedRow | None) -> None:
    """One output plane of a depthwise conv whose every tap is in bounds (padding written out in
    rows laid out as `layout` says, or none), `ROW_BLOCK` output rows at a time, outside strict
    builds:

        for each block of R output rows oh0 .. oh0+R-1 (then one block of the remaining rows):
          for each column range of `column_chunks(OW)` (whole vectors; the last may overlap):
            for ow in the range:
              acc_r = bias                       (r < R)
              for each input row t the block reads, each kernel column j:
                v = x[t, ow*sw + j*dw]           (one load; in column phases: x[t, ow + the tap's place])
                acc_r += v * w[i, j]             for every output r whose kernel row i reads row t
              out[oh0 + r, ow] = epilogue(acc_r, ...)

    Each load feeds up to kH outputs held in registers (the row at a time nest loaded every tap
    for every output, and a 7x7 kernel also stored and reloaded the partial row per kernel row),
    and no column runs in a scalar remainder. Every output still adds bias then its taps in
    (kh, kw) order, one sum (the R sums are the independent chains); a column computed twice by
    overlapping ranges gets the same value twice."""
    n, o = nc
    shape = shape_of(op.result)
    kh, kw = len(weights), len(weights[0])

    def block(bb: Builder, oh0: SSAValue | int, rows: int) -> None:
        """Output rows oh0 .. oh0 + rows - 1 (in bounds)."""
        first = fl.index(oh0 * ah.stride) if isinstance(oh0, int) else _mul(fl, bb, oh0, ah.stride)
        reads = _block_reads(rows, kh, ah)
        width = src.type.get_shape()[-1]
        view = _row_view(fl, bb, src, plane, first, (max(reads) + 1) * width)
        out_rows = [_plus(fl, bb, oh0, r) for r in range(rows)]

        def columns(cb: Builder, ow: SSAValue, _: list) -> list:
            acc: list[SSAValue | None] = [init] * rows
            for t in sorted(reads):
                for j in range(kw):
                    col = _plus(fl, cb, _shifted(fl, cb, ow, aw, j, layout), t * width)
                    v = load_at(cb, view, [col])
                    for r, i in reads[t]:
                        term = cb.insert(arith.MulfOp(v, weights[i][j])).result
                        acc[r] = term if acc[r] is None else cb.insert(arith.AddfOp(acc[r], term)).result
                for r, i in reads[t]:
                    if i == kh - 1:  # output r is complete: its epilogue and store now, while few values are live
                        at = [n, o, out_rows[r], ow]
                        value = op.build_epilogue(cb, acc[r], [fl.load(cb, e, at, shape) for e in op.epilogue_inputs])
                        store_at(cb, value, out, at)
            return []

        for lo, hi in column_chunks(aw.out):
            for_loop(fl, bb, hi, [], columns, "ow", lb=lo)

    rows = min(ROW_BLOCK, ah.out)
    full = ah.out // rows
    if full == 1:
        block(b, 0, rows)
    else:
        for_loop(fl, b, full, [], lambda qb, q, _: block(qb, _mul(fl, qb, q, rows), rows) or [], "oh")
    if ah.out % rows:
        block(b, full * rows, ah.out % rows)


FLAT_MAX_WIDTH = 8
"""Rows narrower than this make a stride-1 depthwise conv with row-preserving padding take
`_depthwise_flat` (outside strict builds): the row blocks run such a row as two overlapping
vectors of 4 (measured in `_depthwise_flat`'s doc)."""


def _flat_epilogue_input(e: SSAValue, shape: Sequence) -> str | None:
    """How `_depthwise_flat` reads epilogue input `e` broadcast to the conv's result `shape`:
    "plane" (once per plane: a constant, or broadcast along both rows and columns), "flat" (the
    element at the flat output position: rows and columns its own), else None (broadcast along
    one of them only)."""
    if splat_element(e) is not None:
        return "plane"
    es = shape_of(e)
    if not all(isinstance(d, int) for d in es):
        return None
    stretched = stretched_dims(es, shape)
    rows = len(es) < 2 or stretched[-2]
    cols = len(es) < 1 or stretched[-1]
    return "plane" if rows and cols else "flat" if not rows and not cols else None


def flat_plane(fl: FunctionLowering, op: irt_nn.Conv2dOp) -> bool:
    """Whether a depthwise conv takes `_depthwise_flat`: outside strict builds, a channel multiplier
    of 1, stride 1, padding that keeps the row width (OW == W, so output (oh, ow) and its taps are
    the same flat offsets apart in every row), rows narrower than `FLAT_MAX_WIDTH`, static sizes
    and epilogue inputs it can read flat."""
    shape = shape_of(op.result)
    o_count, _, kh, kw = shape_of(op.weight)
    if not all(isinstance(d, int) for d in (*shape, *shape_of(op.input))):
        return False
    ah, aw = _axes(op, shape_of(op.input), shape, (kh, kw))
    return (not fl.strict and o_count == op.group_count and shape_of(op.weight)[1] == 1
            and ah.stride == aw.stride == 1 and (ah.pad > 0 or aw.pad > 0) and aw.out == aw.size
            and 0 < aw.out < FLAT_MAX_WIDTH and ah.out > 0
            and all(_flat_epilogue_input(e, shape) is not None for e in op.epilogue_inputs))


def _flat_view(fl: FunctionLowering, b: Builder, buf: SSAValue, lead: Sequence[SSAValue | int], size: int) -> SSAValue:
    """`size` elements of a dense buffer from index [*lead, 0, ..., 0], as a 1-D view (no copy)."""
    dims = buf.type.get_shape()
    at: SSAValue | None = None
    for d, v in enumerate(lead):
        stride = 1
        for later in dims[d + 1:]:
            stride *= later
        term = fl.index(v * stride) if isinstance(v, int) else _mul(fl, b, v, stride)
        at = term if at is None else _i(b, arith.AddiOp, at, term)
    at = at if at is not None else fl.index(0)
    view = b.insert(memref.ReinterpretCastOp(buf, [at], [], [], [DYNAMIC_INDEX], [size], [1], memref_of(f32, [size])))
    view.result.name_hint = "flat"
    return view.result


def _column_masks(fl: FunctionLowering, ah: Axis, aw: Axis, kw: int) -> tuple[list[int], SSAValue | None]:
    """The kernel columns j off the output's own column (offset j*dw - pw != 0), and a buffer of
    their valid output columns, written here (before the conv's nest, once a call): mask[m, oh,
    ow] = 1.0 where column ow + offset of the m-th of them is in [0, W), else 0.0."""
    width = aw.size
    offsets = {j: j * aw.dilation - aw.pad for j in range(kw)}
    masked = [j for j in range(kw) if offsets[j] != 0]
    if not masked:
        return masked, None
    alloc = fl.b.insert(memref.AllocOp([], [], memref_of(f32, [len(masked), ah.out, width]), IntegerAttr(64, 64)))
    alloc.memref.name_hint = "valid"
    fl.allocs.append(alloc.memref)
    masks = alloc.memref

    def mask_row(rb: Builder, oh: SSAValue, _: list) -> list:
        for m, j in enumerate(masked):
            lo, hi = max(0, -offsets[j]), min(width, width - offsets[j])
            for c_lo, c_hi, value in ((0, lo, 0.0), (lo, hi, 1.0), (hi, width, 0.0)):
                if c_lo < c_hi:
                    for_loop(fl, rb, c_hi, [], lambda cb, ow, _, m=m, value=value: store_at(
                        cb, fconst(cb, value), masks, [fl.index(m), oh, ow]) or [], "ow", lb=c_lo)
        return []

    for_loop(fl, fl.b, ah.out, [], mask_row, "oh")
    return masked, masks


def _depthwise_flat(fl: FunctionLowering, op: irt_nn.Conv2dOp) -> None:
    """A depthwise conv on narrow rows (`flat_plane`), each plane as one flat row of OH*W outputs
    in whole vectors: a 7x7 plane is 49 lanes (4 vectors of 16) where a row at a time fills 7 of
    each vector's 16, seven times.

    Output (oh, ow) is flat position f = oh*W + ow, and its tap (i, j) is input (oh + i*dh - ph,
    ow + j*dw - pw): flat f + (i*dh - ph)*W + (j*dw - pw), the same offset for every output. The
    plane is copied (one contiguous copy) into a buffer with zero rows above and below it, so the
    rows' taps need no bounds (its first element at a multiple of `ROW_ALIGN`, so that the copy
    stores aligned vectors: MobileNet-v2's 3x3 on 1x384x7x7, the kernel alone, 9.5 -> 9.3 us); a
    column tap j off the row (ow + j*dw - pw outside [0, W)) reads the next or previous row's
    element instead, so each kernel column's sum is selected away there by a mask of the row's
    valid columns (0 or 1 per flat position, written once a call):

        for f in [0, OH*W) (whole vectors; the last may overlap):
          s_j = x[f + j*dw + 0*dh*W] * w[0, j] + ... + x[f + j*dw + (kH-1)*dh*W] * w[kH-1, j]
          out[f] = epilogue(bias + s_c + sum over j != c of (mask_j[f] ? s_j : 0), ...)

    (c: the kernel column at offset 0, if any). A select, not a product with the mask, so an
    infinite input in the next row gives no NaN. The zero rows add x*0 as the padded planes of
    `lower_depthwise_conv2d` do. Measured against the row blocks, one thread, whole calls: 3x3
    on 1x384x7x7 16.9 -> 14.1 us (8 lanes: 17.0 -> 14.7), 5x5 34.1 -> 26.3, 7x7 60.1 -> 49.7;
    3x3 on 1x512x4x4 15.2 -> 11.8. Not wider (`FLAT_MAX_WIDTH`): at 8 columns the two were
    level (10.4 and 10.6 us on 1x256x8x8), at 10 and 14 the row blocks were faster (1x256x10x10
    15.3 against 19.4; 1x192x14x14 14.6 against 17.7): nine unaligned loads per output vector,
    where a row block's loaded row feeds up to three outputs.

    Each plane has its buffer (a few hundred bytes), and each parallel iteration takes a chunk of
    channels: it copies every plane of the chunk, then computes every one. Copied just before it
    was read, a plane's shifted loads found its stores still in flight and stalled: MobileNet-v2's
    3x3 on 1x384x7x7, one thread, Zen 4, 12.3 -> 10.2 us."""
    out = fl.result_buffer(op.result)
    shape = shape_of(op.result)
    x, w = fl.buffers[op.input], fl.buffers[op.weight]
    bias = fl.buffers[op.bias] if op.bias is not None else None
    o_count, _, kh, kw = shape_of(op.weight)
    ah, aw = _axes(op, shape_of(op.input), shape, (kh, kw))
    n_count, width, size = shape[0], aw.size, ah.out * aw.size
    plane_in = ah.size * width
    lead = -(aw.pad + ah.pad * width) % ROW_ALIGN  # floats before the first zero, so that the copy stores aligned
    start = lead + aw.pad + ah.pad * width  # where the input plane sits in its buffer
    length = -(-(start + plane_in + ah.pad * width + aw.pad) // ROW_ALIGN) * ROW_ALIGN  # every tap in bounds
    t = memref_of(f32, [n_count, o_count, length])
    alloc = fl.b.insert(memref.AllocOp([], [], t, IntegerAttr(64, 64)))
    alloc.memref.name_hint = "padded"
    fl.allocs.append(alloc.memref)
    padded = alloc.memref

    masked, masks = _column_masks(fl, ah, aw, kw)

    def zeros(b: Builder, view: SSAValue) -> None:
        """The zeros of a plane's buffer (`view`): the rows above and below the input's."""
        for lo, hi in ((lead, start), (start + plane_in, length)):
            if lo < hi:
                for_loop(fl, b, hi, [], lambda zb, j, _: store_at(zb, fconst(zb, 0.0), view, [j]) or [], "j", lb=lo)

    kinds = [_flat_epilogue_input(e, shape) for e in op.epilogue_inputs]

    def copy(b: Builder, n: SSAValue, o: SSAValue, _: SSAValue) -> None:
        """Plane (n, o) into its buffer, zero rows included."""
        src = _flat_view(fl, b, padded, [n, o], length)
        zeros(b, src)
        xin = _flat_view(fl, b, x, [n, o], plane_in)
        for lo, hi in column_chunks(plane_in):  # the plane, whole vectors
            for_loop(fl, b, hi, [], lambda cb, j, _: store_at(cb, load_at(cb, xin, [j]), src, [_plus(fl, cb, j, start)])
                     or [], "j", lb=lo)

    def body(b: Builder, n: SSAValue, o: SSAValue, _: SSAValue) -> None:
        src = _flat_view(fl, b, padded, [n, o], length)
        weights = [[load_at(b, w, [o, fl.index(0), fl.index(i), fl.index(j)]) for j in range(kw)] for i in range(kh)]
        init = load_at(b, bias, [o]) if bias is not None else None
        dst = _flat_view(fl, b, out, [n, o], size)
        mask_views = [_flat_view(fl, b, masks, [m], size) for m in range(len(masked))] if masks is not None else []
        plane_at = [n, o, fl.index(0), fl.index(0)]
        inputs = [fl.load(b, e, plane_at, shape) if kind == "plane" else
                  _flat_view(fl, b, fl.buffers[e], fl.broadcast_indices(shape_of(e), plane_at, shape)[:-2], size)
                  for e, kind in zip(op.epilogue_inputs, kinds)]
        half = fconst(b, 0.5)

        def columns(cb: Builder, f: SSAValue, _: list) -> list:
            terms = [] if init is None else [init]
            for j in range(kw):
                s = None
                for i in range(kh):
                    v = load_at(cb, src, [_plus(fl, cb, f, lead + i * ah.dilation * width + j * aw.dilation)])
                    term = cb.insert(arith.MulfOp(v, weights[i][j])).result
                    s = term if s is None else cb.insert(arith.AddfOp(s, term)).result
                if j in masked:
                    valid = cb.insert(arith.CmpfOp(load_at(cb, mask_views[masked.index(j)], [f]), half, "ogt")).result
                    s = cb.insert(arith.SelectOp(valid, s, fconst(cb, 0.0))).result
                terms.append(s)
            acc = _tree_sum(cb, terms)
            args = [v if kind == "plane" else load_at(cb, v, [f]) for v, kind in zip(inputs, kinds)]
            store_at(cb, op.build_epilogue(cb, acc, args), dst, [f])
            return []

        for lo, hi in column_chunks(size):
            for_loop(fl, b, hi, [], columns, "f", lb=lo)

    # chunks of channels: every plane of a chunk copied, then every one computed (see the doc)
    _depthwise_nest(fl, op, copy, min(o_count, PADDED_SLOTS_PER_THREAD * fl.threads), None, body)


def lower_max_pool2d(fl: FunctionLowering, op: irt_nn.MaxPool2dOp) -> None:
    """`separable_pool` (max over the window's rows, then over its columns); strict builds take
    `_max_pool_rows`, which keeps every output's taps in (kh, kw) order."""
    if fl.strict:
        _max_pool_rows(fl, op)
    else:
        separable_pool(fl, op)


def _max_pool_rows(fl: FunctionLowering, op: irt_nn.MaxPool2dOp) -> None:
    """One output row per parallel iteration, its columns innermost: the row starts at -inf and
    every window tap (kh, kw) folds its valid column range [lo, hi) into it,
    out[ow] = maximumf(x[ih, ow*sw - pw + kw*dw], out[ow]). The column loop has no carried
    value, so `irc-vectorize` runs it in SIMD lanes (the per-output form chained nine dependent
    maxes). Each output takes its taps in (kh, kw) order and, as eager, keeps the first of equal
    values (-0 or +0) and the last NaN: maximumf(a, b) is (a is NaN or a > b) ? a : b."""
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
                    old = load_at(ib, out, [n, c, oh, ow])
                    m = ib.insert(arith.MaximumfOp(load_at(ib, x, [n, c, ih, iw]), old)).result  # a tie keeps `old`
                    store_at(ib, m, out, [n, c, oh, ow])
                    return []

                for_loop(fl, kb, hi, [], fold, "ow", lb=lo)
                return []

            for_loop(fl, hb, aw.kernel, [], tap, "kw")
            return []

        for_loop(fl, b, h_hi, [], row, "kh", lb=h_lo)

    fl.nest(shape[:3], describe(op), body)


def _window_count(ax: Axis, o: int, include_pad: bool) -> int:
    """Output `o`'s avg_pool2d divisor along one axis, as `_avg_range` computes it at run time:
    the window clipped to the padded input (`include_pad`), else to the input."""
    start = o * ax.stride - ax.pad
    end = min(start + ax.kernel, ax.size + ax.pad)
    return end - start if include_pad else min(end, ax.size) - max(start, 0)


def _runs(keys: Sequence[int]) -> list[tuple[int, int]]:
    """The [lo, hi) ranges of consecutive equal keys, in order."""
    runs: list[tuple[int, int]] = []
    for o, key in enumerate(keys):
        if runs and keys[runs[-1][0]] == key:
            runs[-1] = (runs[-1][0], o + 1)
        else:
            runs.append((o, o + 1))
    return runs


def _input_index(fl: FunctionLowering, b: Builder, o: SSAValue | int, ax: Axis, t: int) -> SSAValue:
    """o*stride - pad + t*dilation: the input position of tap `t` of output `o` (a constant for
    a constant `o`)."""
    offset = t * ax.dilation - ax.pad
    if isinstance(o, int):
        return fl.index(o * ax.stride + offset)
    at = _mul(fl, b, o, ax.stride)
    return _i(b, arith.AddiOp if offset > 0 else arith.SubiOp, at, fl.index(abs(offset))) if offset else at


MAX_PHASES = 4
"""The largest column stride `separable_pool` splits its rows into phases for: its vertical pass
then reads the input at that stride, which `irc-vectorize` runs in SIMD lanes up to its
`MAX_LOAD_STRIDE` (4); a larger stride keeps plain rows (the vertical pass in lanes)."""


def _pool_phases(aw: Axis) -> int:
    """The column phases of `separable_pool`'s rows: the stride (up to `MAX_PHASES`) where the
    horizontal pass's taps leave a gap in a group of `stride` columns, else 1 (plain rows: a
    2x2/s2 window reads whole pairs; on 1x64x56x56 it took 20.5 us so, 29.7 in phases)."""
    gap = not (aw.kernel == aw.stride and aw.dilation == 1)
    return aw.stride if 1 < aw.stride <= MAX_PHASES and gap else 1


POOL_ROW_BLOCK = 8
"""Output rows `separable_pool` runs each pass over before the other (their vertical passes, then
their horizontal passes) where a window reads columns another one reads too, or padding
(`_pool_row_block`)."""


def _pool_row_block(aw: Axis, out_height: int) -> int:
    """Output rows per block of `separable_pool`: `POOL_ROW_BLOCK` (at most the output's height),
    or 1 where the horizontal pass reads each stored vector back whole (windows that tile the row:
    kernel = stride, no dilation or padding: a 2x2/s2 pool, whose store forwards to its loads)."""
    tiles = aw.kernel == aw.stride and aw.dilation == 1 and aw.pad == 0
    return 1 if tiles else max(1, min(POOL_ROW_BLOCK, out_height))


def _pool_row(aw: Axis) -> PaddedRow:
    """The `PaddedRow` of `separable_pool`'s rows: as wide as the padded input or the last
    window's reach (a ceil_mode window may overhang the padding), in `_pool_phases` phases."""
    width = max(aw.size + 2 * aw.pad, (aw.out - 1) * aw.stride + (aw.kernel - 1) * aw.dilation + 1)
    return PaddedRow.of(width, aw.pad, _pool_phases(aw))


def _window_rows(fl: FunctionLowering, shape: Sequence[int], aw: Axis, layout: PaddedRow, slots: int) -> SSAValue:
    """`separable_pool`'s buffer: for each of `slots` planes (`_depthwise_nest`), a row per output
    row of a block of `POOL_ROW_BLOCK`, [N, slots, rows, width] (`layout`'s width)."""
    alloc = fl.b.insert(memref.AllocOp([], [], memref_of(f32, [shape[0], slots, _pool_row_block(aw, shape[2]),
                                                                layout.width]), IntegerAttr(64, 64)))
    alloc.memref.name_hint = "window_rows"
    fl.allocs.append(alloc.memref)
    return alloc.memref


def _fold_window(b: Builder, values: list[SSAValue], is_max: bool) -> SSAValue:
    """values[0] + values[1] + ... left to right, or their max as maximumf(next, acc): a tie keeps
    the earlier value (as eager), and GCC vectorizes the chain (irc_maxf tests its first operand
    for NaN, here a load; testing the maximumf before, a select, GCC threads into mask logic it
    cannot vectorize: 4.8 ms instead of 0.29 for ResNet-18's max pool)."""
    if not values:  # a window with no row in bounds: the padding's value
        return fconst(b, float("-inf") if is_max else 0.0)
    acc = values[0]
    for v in values[1:]:
        acc = b.insert(arith.MaximumfOp(v, acc) if is_max else arith.AddfOp(acc, v)).result
    return acc


def _pool_vertical(fl: FunctionLowering, b: Builder, views: list[SSAValue], row: SSAValue, aw: Axis,
                   layout: PaddedRow, combine: Callable[[Builder, list[SSAValue]], SSAValue]) -> None:
    """`separable_pool`'s vertical pass: every input column of the window's rows in bounds
    (`views`) folded into its place in `row` (a 1-D view of a padded row laid out as `layout`)."""
    # a row of fewer groups than the widest vector in overlapping chunks of whole vectors (one
    # loop of 14 ran scalar: a 5x5/s1 max pool on 1x32x14x14 18.0 -> 14.3 us, a 3x3/s2 on
    # 1x96x28x28 38.2 -> 23.2); longer ones in one loop (chunks measured no faster in phases, and
    # 33.5 against 31.3 us for a 3x3/s1 pool on 1x64x28x28 in plain rows, whose one loop runs
    # over the padded columns, storing at its index)
    if layout.phases > 1 or aw.size < MAX_CHUNK:
        _column_groups(fl, b, aw.size, layout, lambda vb, src, dst:
                       store_at(vb, combine(vb, [load_at(vb, view, [src]) for view in views]), row, [dst]),
                       aw.size // layout.phases < MAX_CHUNK)
        return

    def column(vb: Builder, iw: SSAValue, _: list) -> list:
        store_at(vb, combine(vb, [load_at(vb, view, [iw]) for view in views]), row, [_plus(fl, vb, iw, layout.at(aw.pad))])
        return []

    for_loop(fl, b, aw.size, [], column, "iw")


def separable_pool(fl: FunctionLowering, op: irt_nn.MaxPool2dOp | irt_nn.AvgPool2dOp) -> None:
    """Max or average pooling as two passes per output row, each a column loop `irc-vectorize`
    runs in SIMD lanes with constant bounds. One parallel iteration per plane (n, c), or per
    chunk of planes (`_depthwise_nest`), each with its buffer of B rows:

        rows[r][0, pw) = rows[r][pw + W, RW) = pad   (-inf for max, 0 for avg; once per chunk)
        for each block of B output rows oh0 .. oh0 + B - 1:
          for r < B:  rows[r][pw + iw] = x[ih_0, iw] (op) ... (op) x[ih_last, iw]   for iw < W:
                      the window's rows in bounds for output row oh0 + r, in order
          for r < B:  out[oh0 + r, ow] = rows[r][ow*sw] (op) rows[r][ow*sw + dw] (op) ... [/ count]

    Each of the `rows` is a padded input row, RW wide: W plus the padding, or more when a ceil_mode
    window overhangs it. B is `POOL_ROW_BLOCK` (or the output's height) where a window reads
    columns another one reads too, or padding: a horizontal pass right after its vertical one read
    its row back, at other offsets, while the row's stores were still in flight, which stalled
    every load (DenseNet's 3x3/s2 pool on 1x64x32x32, one thread, Zen 4: 13.3 -> 6.1 us;
    ResNet-18's on 1x64x112x112 with the whole plane's rows first, 139 -> 159 us, out of L1; in
    blocks of 8, 137). Windows that tile the row (2x2/s2) read back whole the vectors just
    stored, which forward: B = 1, a row per plane (`_pool_row_block`). With a column stride s (up
    to `MAX_PHASES`) whose window leaves a gap in a group of s columns (`_pool_phases`) each row
    holds its s column phases side by side (`PaddedRow`, each phase's input columns aligned), so the
    horizontal pass reads consecutive columns; the vertical pass reads each group of s input
    columns (q*s .. q*s + s - 1, q < W // s; the rest straight-line) and stores each phase at q
    plus a constant (`_pool_vertical`). Read at a stride instead, the horizontal pass's taps left
    GCC a gap to peel for: 16 columns ran scalar (DenseNet's 3x3/s2 pool on 1x64x32x32, one
    thread: 24.3 -> 15.9 us a call). The rows in bounds are compile-time lists: loops over the
    interior rows (every kernel row in bounds), straight-line code for each border row
    (`_pool_row_blocks`). So no tap tests bounds and the horizontal pass reads the padding
    columns as values (-inf never wins a max; NaN still propagates, and 0 adds nothing
    to a sum). An average divides by PyTorch's divisor, a compile-time constant per output
    (`_window_count`): one column loop per run of columns with the same divisor. The old nests
    visited each tap's clamped column range in its own loop (nine short loops per output row with
    scalar remainders: 1.04 ms for ResNet-18's 3x3 stride-2 pool at one thread, now 0.29) or summed
    each output's window alone (2.4x eager's time); this one reorders a max's taps (ties of -0 and
    +0 can differ) and a sum's terms, so strict builds keep the old nests."""
    is_max = isinstance(op, irt_nn.MaxPool2dOp)
    out, x, shape = fl.result_buffer(op.result), fl.buffers[op.input], shape_of(op.result)
    ah, aw = _axes(op, shape_of(op.input), shape, op.kernels)
    pad_value = float("-inf") if is_max else 0.0
    include_pad = is_max or op.count_include_pad is not None
    layout = _pool_row(aw)
    # a plane of rows per channel when each is one row (as small as the result), else per chunk of
    # channels (`_depthwise_nest`), so that a thread's block stays in L1
    slots = shape[1] if _pool_row_block(aw, shape[2]) == 1 else min(shape[1], PADDED_SLOTS_PER_THREAD * fl.threads)
    rows = _window_rows(fl, shape, aw, layout, slots)
    block, width = rows.type.get_shape()[2:]
    col_counts = [1 if is_max else _window_count(aw, o, include_pad) for o in range(aw.out)]

    def combine(b: Builder, values: list[SSAValue]) -> SSAValue:
        return _fold_window(b, values, is_max)

    def padding(b: Builder, n: SSAValue, slot: SSAValue) -> None:
        """The padding columns of every row of plane (n, slot) of `rows`."""
        def one(rb: Builder, r: SSAValue, _: list) -> list:
            for j in [*range(aw.pad), *range(aw.pad + aw.size, layout.phases * layout.columns)]:
                store_at(rb, fconst(rb, pad_value), rows, [n, slot, r, fl.index(layout.at(j))])
            return []

        if not (aw.pad or aw.pad + aw.size < layout.phases * layout.columns):
            return
        if block == 1:
            one(b, fl.index(0), [])
        else:
            for_loop(fl, b, block, [], one, "r")

    def body(b: Builder, n: SSAValue, c: SSAValue, slot: SSAValue) -> None:
        if slots == shape[1]:  # a plane of `rows` per channel: its padding is written here
            padding(b, n, slot)
        plane = _plane_rows(fl, b, x, n, c)

        def vertical(rb: Builder, oh: SSAValue | int, r: SSAValue | int, taps: list[int]) -> None:
            views = [_row_view(fl, rb, x, plane, _input_index(fl, rb, oh, ah, i)) for i in taps]
            _pool_vertical(fl, rb, views, _flat_view(fl, rb, rows, [n, slot, r], width), aw, layout, combine)

        def horizontal(rb: Builder, oh: SSAValue | int, r: SSAValue | int, taps: list[int]) -> None:
            # an interior row's divisor is the kernel's rows, a border row's PyTorch's (`_window_count`)
            count = 1 if is_max else len(taps) if isinstance(oh, SSAValue) else _window_count(ah, oh, include_pad)
            _pool_horizontal(fl, rb, _flat_view(fl, rb, rows, [n, slot, r], width), out, [n, c, oh], aw, layout,
                             [count * k for k in col_counts], is_max)

        _pool_row_blocks(fl, b, ah, block, vertical, horizontal)

    _depthwise_nest(fl, op, body, slots, padding)


def _pool_horizontal(fl: FunctionLowering, b: Builder, row: SSAValue, out: SSAValue, at: list[SSAValue | int],
                     aw: Axis, layout: PaddedRow, divisors: list[int], is_max: bool) -> None:
    """`separable_pool`'s horizontal pass of one output row (`at`: its (n, c, oh) in `out`) from
    its padded `row` (a 1-D view laid out as `layout`): each output column's window, divided by
    its divisor unless `is_max`; one column loop per run of equal divisors."""
    phases = layout.phases
    oh = at[2] if isinstance(at[2], SSAValue) else fl.index(at[2])
    for c_lo, c_hi in _runs(divisors):
        def output(hb: Builder, ow: SSAValue | int, _: list, divisor: int = divisors[c_lo]) -> list:
            first = ow * (aw.stride // phases) if isinstance(ow, int) else _mul(fl, hb, ow, aw.stride // phases)
            taps = [_plus(fl, hb, first, layout.at(j * aw.dilation)) for j in range(aw.kernel)]
            v = _fold_window(hb, [load_at(hb, row, [t]) for t in taps], is_max)
            if not is_max:
                v = hb.insert(arith.DivfOp(v, fconst(hb, float(divisor)))).result
            store_at(hb, v, out, [at[0], at[1], oh, fl.index(ow) if isinstance(ow, int) else ow])
            return []

        if c_hi - c_lo == 1:
            output(b, c_lo, [])
        else:
            for_loop(fl, b, c_hi, [], output, "ow", lb=c_lo)


PoolPass = Callable[[Builder, SSAValue | int, SSAValue | int, list[int]], None]
"""A pass of `separable_pool` over output row oh, in row r of its block's buffer, from kernel rows
`taps`: (b, oh, r, taps)."""


def _pool_row_blocks(fl: FunctionLowering, b: Builder, ah: Axis, block: int, vertical: PoolPass,
                     horizontal: PoolPass) -> None:
    """Every output row of a `separable_pool` plane, `block` rows at a time: the vertical pass of
    each row of a block, then the horizontal pass of each. The interior rows (every kernel row in
    bounds) are loops over blocks (rows first + r), the border rows straight-line code."""
    lo, hi = interior(ah)
    every = list(range(ah.kernel))

    def interior_block(qb: Builder, first: SSAValue, size: int) -> None:
        if size == 1:  # rows one at a time (`_pool_row_block`)
            vertical(qb, first, 0, every)
            horizontal(qb, first, 0, every)
            return
        for run in (vertical, horizontal):
            for_loop(fl, qb, size, [], lambda ib, r, _, run=run: run(ib, _i(ib, arith.AddiOp, first, r), r, every) or [],
                     "r")

    if lo < hi:
        full, rest = divmod(hi - lo, block)
        if full:
            for_loop(fl, b, full, [], lambda qb, q, _: interior_block(qb, _plus(fl, qb, _mul(fl, qb, q, block), lo), block)
                     or [], "oh" if block == 1 else "q")
        if rest:
            interior_block(b, fl.index(lo + full * block), rest)
    edge = borders(ah)
    for k in range(0, len(edge), block):
        part = edge[k:k + block]
        for run in (vertical, horizontal):
            for r, oh in enumerate(part):
                run(b, oh, r, valid_taps(ah, oh))


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
    """`separable_pool` (sum over the window's rows, then over its columns, divided); strict
    builds take `_avg_pool_windows`, which sums every window in (ih, iw) order."""
    if fl.strict:
        _avg_pool_windows(fl, op)
    else:
        separable_pool(fl, op)


def _avg_pool_windows(fl: FunctionLowering, op: irt_nn.AvgPool2dOp) -> None:
    """One output per iteration: its clipped window summed row by row, divided by its count."""
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


def _global_avg_pool(fl: FunctionLowering, op: irt_nn.AdaptiveAvgPool2dOp, out: SSAValue, flat: SSAValue,
                     size: int) -> None:
    """A global average pool (output 1x1): each (n, c)'s window is its whole plane, `flat`'s one row
    of `size` contiguous elements, summed in one SIMD reduction (in strict builds in (ih, iw) order,
    as row by row). Row by row, each row's few elements (8 or 7) were summed across a vector's
    lanes: the cnn's pool of 64 planes of 8x8 took 1.7 us, now 0.4 (Zen 4, one thread)."""

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        n, c, _, _ = ivs
        total = _sum_window(fl, b, flat, n, c, (fl.index(0), fl.index(1)), (fl.index(0), fl.index(size)))
        store_at(b, b.insert(arith.DivfOp(total, fconst(b, float(size)))).result, out, ivs)

    fl.nest(shape_of(op.result), describe(op), body)


def lower_adaptive_avg_pool2d(fl: FunctionLowering, op: irt_nn.AdaptiveAvgPool2dOp) -> None:
    out = fl.result_buffer(op.result)
    shape = shape_of(op.result)
    x = fl.buffers[op.input]
    n_, c_, h, w = shape_of(op.input)
    if tuple(shape[2:]) == (1, 1) and all(isinstance(d, int) for d in (n_, c_, h, w)) and h * w > 1:
        _global_avg_pool(fl, op, out, fl.view(x, [n_, c_, 1, h * w]), h * w)
        return

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

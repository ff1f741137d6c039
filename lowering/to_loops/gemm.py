"""`irc-to-loops` for matrix products, convolutions and attention: the GEMM engine's `irl` ops.

Contractions (`irt.linear`, `irt.matmul`, `irt.contract`, packed or not) and convolutions
(their weights packed at compile time or not) become an `irl.gemm` whose epilogue region is
the op's own (`build_epilogue`), so a fused bias + activation + residual runs on the register
tile before its one store. This module
decides, per shape and written on the op:

* the cache blocking `tiles` (`choose_tiles`, its cache budgets from the Target's cache sizes by
  `blocking`): KC long enough to amortise the register tile's setup and store, MC so the packed
  lhs block stays in L2, NC so the rhs block stays in a thread's share of L3, and tasks that split
  evenly between the Target's threads;
* for a convolution, how the engine reads it: im2col, the image in place (`conv_direct`), or
  the image in place with output pixels as the register tile's rows (`conv_on_pixels`: small
  planes with a long K, where the direct layout's virtual columns would waste its tiles);
* whether the product runs on OpenMP threads (`PARALLEL_FLOPS`);
* how each epilogue input is read per row and column (`strides`; 0 broadcasts).

What stays on the loop nests of `to_loops/core.py`/`to_loops/nn.py`: strict builds (the
engine reassociates sums and uses FMA), depthwise convolutions (one input channel per group:
nn.py's vectorized row-wise nest, `conv_on_engine`), a packed rhs whose panel width is not this machine's, and an
epilogue input whose broadcast is not affine in the flattened row. Attention (`irl.attention`)
is, per block of queries, the scores on the engine, a row softmax, and P v (read in place for a
value width of 1-4 vectors, else on the engine); it stays on the scalar online-softmax nest when
q, k and v broadcast their batch dimensions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IntegerAttr, StringAttr
from xdsl.ir import Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from irc.dialects import irl
from irc.dialects.irt import core as irt, nn as irt_nn, reduce as irt_reduce
from irc.dialects.irt.core import ContractionKind, f32, shape_of
from irc.dialects.symbolic import Dim, dim, memref_of, product, row_major_strides, sympy
from irc.lowering.to_loops.core import lower_contraction
from irc.lowering.to_loops.function import KERNEL_ATTR, OP_INDEX_ATTR, FunctionLowering, describe
from irc.lowering.to_loops.index_arith import STATIC, Cond, Index, IndexArith
from irc.lowering.to_loops.nn import lower_conv2d
from irc.lowering.to_loops.reduce import lower_attention, lower_batch_matmul
from irc.target import GEMM_ROWS, PIXEL_PAIR_ROWS, PIXEL_ROWS

MR = GEMM_ROWS  # the default register tile rows (the Target's gemm_rows; 2 x MR vector accumulators)
# The blocking when the cache sizes are unknown (a Target with l2 = 0, irc-opt's default):
KC_MAX = 320  # a 16 x KC rhs panel (20 KiB) stays in a 32 KiB L1 (Zen 3; 40 KiB at width 32 in 48 KiB)
A_BLOCK_BYTES = 160 * 1024  # the packed MC x KC lhs block, well inside a 512 KiB L2
NC_MAX = 1024
KC_MIN = 256
C_PASS_WEIGHT = 4
"""`choose_tiles` shortens K steps (down to KC_MIN) so that one lhs block holds every row of A
where the passes over the rhs that saves outweigh the passes over C it adds: cost = K steps x
C_PASS_WEIGHT x M + lhs blocks x K (per column; a pass over C weighs as four over as many rhs
elements: C is read and written on the register tile's critical path, the rhs streams in).
Measured on an Intel Xeon (AVX-512, 2 FMA ports, 2 MiB L2, 215 GFLOP/s peak), one thread,
GFLOP/s with long K steps -> one lhs block (costs at weight 2, with the lhs blocks of that time,
in half of L2): 256 x 4096 x 4096 123 -> 144 (9216 ->
6144, taken), 256 x 2048 x 2048 126 -> 141 (4608 -> 3072, taken), 512 x 1024 x 1024 154 -> 142
(3072 -> 4096, kept), 1024 x 4096 x 1024 135 -> 109 (a tie, kept). The rule costs elsewhere:
on a Zen 4 (1 MiB L2, one 512-bit FMA per cycle) 240 x 1024 x 4096 ran at 107 GFLOP/s with KC
1024 in two lhs blocks and 105 with KC 512 in one, which the rule (weight 2) took (10112 -> 7936).
Weight 4 since the in-place lhs blocks of `blocking`: on the Zen 4, M x K -> N = 1024 x 4096 ->
1024 ran 6% slower (one and two threads) in one block of 1026 rows and 9 steps of 456, which
weight 2 takes (22528 against 24576), than in 5 blocks and 2 steps of 2048, which weight 4
takes (40960 against 28672: 0.98-0.99 of the time of the earlier blocking's 8 blocks and 4 steps)."""
PARALLEL_FLOPS = 400_000
"""Products smaller than this run on the calling thread: OpenMP's fork/join (a few µs) would
cost more than it saves."""

GROUP_TASKS = 3
"""A grouped convolution with at least this many images x groups per thread (and more than one thread)
shares those out among the threads (`parallel 2`), each group's product on one thread, rather
than splitting every group's product among them: one fork/join instead of one (or two, with its
image copy) per group. Zen 4, grouped 3x3 convs + BN + ReLU as RegNet-Y-400MF has them, two
threads, the native call alone: 440 channels in 55 groups on 7x7 181 -> 101 us, the same with
stride 2 from 14x14 328 -> 211, 208 in 26 groups on 14x14 141 -> 120, 104 in 13 on 28x28 474 ->
146, 48 in 6 on 56x56 448 -> 210 (one thread: 142, 241, 140, 184, 281 us). Compiled for one
thread, nothing changes: there the loop over groups in a parallel region of one thread measured
slower (142 -> 177 us)."""


def conv_parallel(flops: int, groups: int, batch: int, threads: int) -> int:
    """`parallel` of a convolution's irl.gemm: 0 on the calling thread (too small), 2 over the
    images x groups of a grouped one (`GROUP_TASKS`), else 1."""
    if flops < PARALLEL_FLOPS:
        return 0
    return 2 if threads > 1 and groups > 1 and groups * batch >= GROUP_TASKS * threads else 1


LAYOUT = {ContractionKind.PACKED: irl.GemmLayout.PANELS, ContractionKind.LINEAR: irl.GemmLayout.NK,
          ContractionKind.MATMUL: irl.GemmLayout.KN}


def blocking(width: int, threads: int, caches: tuple[int, int, int] = (0, 0, 0), *,
             lhs_in_place: bool = False) -> tuple[int, int, int]:
    """(KC_MAX, A_BLOCK_BYTES, NC_MAX) for `width`-column panels from the (L1d, L2, L3) sizes in
    bytes; the fixed constants above when L2 is unknown (0).

    * KC: L2 / 1 KiB (a 32-wide rhs sliver in 1/8 of L2). Not L1: the register tile reads its
      rhs sliver from L2 fast enough (the hardware prefetcher streams it), and a long K step
      amortises the tile's setup, its C load and store. Measured on a Zen 4 (32 KiB L1d, 1 MiB
      L2, peak 117 GFLOP/s), one thread, 240 x 1024 x 4096, 6-row tile, median GFLOP/s:
      32 wide, KC 316 -> 102.9, 512 -> 104.8, 1024 -> 107.3; 16 wide, KC 316 -> 101.3,
      1024 -> 105.3, 2048 -> 102.9.
    * MC: the packed lhs block (MC x KC floats) in half of L2 (the rhs sliver and C take the rest).
    * NC: NC_MAX, less when the rhs block (KC x NC floats) would not fit in half of a thread's
      share of L3 (it is read again for every lhs block: from L3, not memory). Not more: on the
      Zen 4, 256 x 4096 x 4096 at KC 1024, NC 4096 measured no faster than 1024 (101 and 102).
      L1d is not used.

    `lhs_in_place` (matrix products: the register tile reads the lhs rows where they are, never
    packed): K steps twice as long, L2 / 512 (a 32-wide rhs sliver in a quarter of L2), and an
    lhs block of up to 2 x L2, most of it read from L3. A K step fewer saves a pass over C (read
    and written by every tile) and its stores; the lhs rows stream from L3 behind the hardware
    prefetcher at 2 bytes a cycle (6 rows, 4 bytes per 12 FMA cycles). Measured on the Zen 4 (1
    MiB L2, 32 MiB L3), `nn.Linear`, median time against the L2-sized blocking (KC, MC): 256 x
    4096 -> 4096 at (2048, 258) 0.965 at two threads, 0.963 at one, at (1366, 258), which the
    rule takes, 0.95-0.96 / 0.96 (was (456, 258)); 2048^3 at (2048, 258) 0.970 / (2048, 510)
    0.968, one thread 0.956 for 510 (was (1024, 126)). Not further: 4096 x 1024 -> 1024 (one K
    step either way) in lhs blocks of 4-8 MiB ran 1-3% slower than of 0.5 MiB, 2048^3 in one of
    16 MiB 2-4% slower than the earlier blocking; at the rule's 2 MiB (MC 510) that product is
    level (1.00 at two threads and one). With 16-wide panels (the AVX2 tile, forced on the Zen 4)
    the rule's steps of 2048 ran mlp-large at 0.96 of the earlier blocking's time at both counts,
    though a 16-wide KC of 2048 had measured slower than 1024 above (240 x 1024 x 4096); on an
    AVX2-only CPU (a 512 KiB L2: steps of 1024) it is not measured. A longer K step is a longer
    FMA chain per output: a larger rounding error (README, Numerics: 3-4.5x eager's on N(0, 1)
    data with K of 4096-16384, 1.1-2.4x that of the earlier blocking)."""
    _, l2, l3 = caches
    if l2 <= 0:
        return KC_MAX, A_BLOCK_BYTES, NC_MAX
    kc_max = max(KC_MAX // 2, (l2 // 512 if lhs_in_place else l2 // 1024) // 8 * 8)
    nc_max = NC_MAX if l3 <= 0 else max(width, min(NC_MAX, l3 // 2 // threads // (4 * kc_max) // width * width))
    return kc_max, 2 * l2 if lhs_in_place else l2 // 2, nc_max


def choose_tiles(m: Index, n: Index, k: Index, width: int, threads: int,
                 ix: IndexArith = STATIC, *, rows: int = MR,
                 caches: tuple[int, int, int] = (0, 0, 0), lhs_in_place: bool = True) -> tuple[Index, Index, Index, Index]:
    """[MC, NC, KC, MS] for an M x N x K product with a `rows` x `width` register tile, the cache
    budgets from `blocking(caches, lhs_in_place)`: K in equal steps of at most KC_MAX (shorter,
    for matrix products, whose lhs is read in place (`lhs_in_place`), where that pays, see
    C_PASS_WEIGHT; convolutions, whose lhs is their packed weights, keep the longer steps); MC
    rows of A per block; OpenMP tasks of MS rows x NC columns (`width`-column panels), in a
    multiple of `threads` tasks so that the threads get the same work. Every task packs the A rows and B columns it
    uses, so splitting by columns packs A once per task and splitting by rows packs B once per
    task: split the larger of M and N (a 512-channel conv on a 7x7 image by rows, a wide layer
    by columns).

    The rule is written once against `ix` (`index_arith.py`): on static sizes it gives ints;
    with `IndexArith(fl)` and sizes known only at call time it builds the arith ops computing
    the same tiles at call time (only those that depend on such a size). Those sizes may be 0:
    every entry is clamped to >= 1, which changes nothing for sizes >= 1."""
    if all(isinstance(v, int) for v in (m, n, k)) and min(m, n, k) < 1:  # type: ignore[type-var]
        raise ValueError(f"the GEMM engine needs M, N, K >= 1, got {m} x {n} x {k} (see `engine_runs`)")
    kc_max, a_block_bytes, nc_max = blocking(width, threads, caches, lhs_in_place=lhs_in_place)
    m_rows = ix.max(ix.round_up(m, rows), rows)

    def plan(kc_limit: Index) -> tuple[Index, Index, Index]:
        """K steps, KC and MC when K steps are at most kc_limit long."""
        steps = ix.max(ix.ceil_div(k, kc_limit), 1)
        kc = ix.max(ix.ceil_div(k, steps), 1)
        a_rows = ix.max(rows, ix.mul(ix.div(ix.div(a_block_bytes, ix.mul(4, kc)), rows), rows))
        return steps, kc, ix.min(m_rows, a_rows)

    steps, kc, mc = plan(kc_max)
    if lhs_in_place and not (isinstance(k, int) and k <= min(KC_MIN, kc_max)):  # (else one K step either way)
        # Shorter K steps so that one lhs block holds all M rows, where the passes over the rhs
        # (K x N, a layer's weights: streamed from memory once per lhs block) that this saves
        # outweigh the passes over C (M x N, one per K step) it adds.
        kc_one_block = ix.max(ix.min(kc_max, ix.div(a_block_bytes, ix.mul(4, m_rows))), min(KC_MIN, kc_max))
        steps_1, kc_1, mc_1 = plan(kc_one_block)

        def cost(k_steps: Index, block_rows: Index) -> Index:
            """K steps x C_PASS_WEIGHT x M + lhs blocks x K (see C_PASS_WEIGHT)."""
            return ix.add(ix.mul(ix.mul(k_steps, C_PASS_WEIGHT), m), ix.mul(ix.ceil_div(m, block_rows), k))

        shorter = ix.lt(cost(steps_1, mc_1), cost(steps, mc))
        kc, mc = ix.select(shorter, kc_1, kc), ix.select(shorter, mc_1, mc)
    panels = ix.ceil_div(n, width)
    split_rows = ix.ge(m, threads * rows)
    by_rows = ix.and_(ix.gt(m, n), split_rows)
    by_cols = ix.or_(ix.le(m, n), ix.lt(m, threads * rows))  # not by_rows
    nb = ix.max(ix.ceil_div(n, nc_max), ix.select(ix.and_(ix.ge(panels, threads), by_cols), threads, 1))
    nb = ix.max(ix.min(panels, ix.select(by_rows, nb, ix.round_up(nb, threads))), 1)
    nc = ix.max(ix.mul(ix.ceil_div(panels, nb), width), width)
    rows_per_thread = ix.or_(by_rows, ix.and_(ix.lt(ix.ceil_div(n, nc), threads), split_rows))
    ms = ix.max(ix.select(rows_per_thread, ix.round_up(ix.ceil_div(m, threads), rows), m), 1)
    return mc, nc, kc, ms


def engine_runs(*sizes: Dim) -> bool:
    """The engine's loops take at least one row, column and step of K (and one head, query,
    key, ...): a product with an empty dimension runs on the scalar nest, whose zero-trip
    reduction gives the epilogue of 0 (K = 0) as eager does. Empty results never get here
    (`FunctionLowering.lower` emits no kernel for them). A size known only at call time may
    be 0 then: the engine itself writes nothing (M, N) or the epilogue of 0 (K) for it."""
    return all(not isinstance(s, int) or s >= 1 for s in sizes)


def parallel_if(ix: IndexArith, flops: Dim) -> Cond:
    """Whether a product of `flops` runs on OpenMP threads (`PARALLEL_FLOPS`): decided now for
    static sizes, at call time (an i1 value) for symbolic ones."""
    return ix.ge(ix.dim(flops), PARALLEL_FLOPS)


def _exact_div(a: Dim, b: Dim) -> Dim | None:
    """a / b when it is an integer (polynomial), else None."""
    if isinstance(a, int) and isinstance(b, int):
        return a // b if b and a % b == 0 else None
    q = sympy.cancel(sympy.sympify(a) / b)
    num, den = sympy.fraction(q)
    if den != 1 or not all(c.is_Integer for c in sympy.expand(num).as_coefficients_dict().values()):
        return None
    return dim(num)


def _flat_stride(per_dim: Sequence[Dim], out_shape: Sequence[Dim], dims: Sequence[int]) -> Dim | None:
    """The one element stride of an index flattening `dims` of `out_shape`, for an operand read
    with stride `per_dim[d]` along each dim d; None if no single stride does (not affine)."""
    stride: Dim | None = None
    for pos, d in enumerate(dims):
        if out_shape[d] == 1:
            continue
        inner = product(out_shape[e] for e in dims[pos + 1 :])
        if stride is None:
            stride = _exact_div(per_dim[d], inner)
            if stride is None:
                return None
        if dim(per_dim[d]) != dim(stride * inner):
            return None
    return 0 if stride is None else stride


def _broadcast_strides(value: SSAValue, out_shape: Sequence[Dim], rank: int | None = None) -> list[Dim]:
    """Per dim of `out_shape`, the element stride of `value` (its leading `rank` dims, all by
    default) broadcast to it: 0 where it is stretched or absent."""
    shape = shape_of(value)
    dense = row_major_strides(shape)
    shape, dense = (shape, dense) if rank is None else (shape[:rank], dense[:rank])
    lead = len(out_shape) - len(shape)
    return [0] * lead + [0 if s else dense[d] for d, s in enumerate(irt.stretched_dims(shape, out_shape))]


def epilogue_strides(value: SSAValue, out_shape: Sequence[Dim], row_dims: Sequence[int], col_dims: Sequence[int],
                     batch_dims: Sequence[int] = ()) -> tuple[Dim, Dim, Dim] | None:
    """Element strides (per batch, row, column) reading `value` broadcast to `out_shape`, where
    the row index flattens `row_dims` and the column index `col_dims`; None if not affine.
    Symbolic sizes give strides that are expressions of them."""
    per_dim = _broadcast_strides(value, out_shape)
    strides = tuple(_flat_stride(per_dim, out_shape, dims) for dims in (batch_dims, row_dims, col_dims))
    return None if any(s is None for s in strides) else strides  # type: ignore[return-value]


def batch_stride(value: SSAValue, batch_shape: Sequence[Dim]) -> Dim | None:
    """Elements between consecutive entries of the flattened `batch_shape` in `value` (a
    [*batch, rows, cols] operand whose batch dims broadcast to it): 0 when it is shared, None
    when no single stride does."""
    per_dim = _broadcast_strides(value, batch_shape, len(shape_of(value)) - 2)
    return _flat_stride(per_dim, batch_shape, range(len(batch_shape)))


def epilogue_region(build, inputs: Sequence[SSAValue], bias: bool = False) -> tuple[Region, list[SSAValue]]:
    """The irl.gemm epilogue: `build(b, acc, args)` over (acc, *inputs) ending in irl.yield.
    Splat constants become literals in the body instead of inputs; with `bias`, the first input
    is added to the accumulator first. Returns the region and the inputs it reads."""
    kept = [v for v in inputs if irt.splat_value(v) is None]
    block = Block(arg_types=[f32] * (1 + len(kept)))
    block.args[0].name_hint = "acc"
    b = Builder(InsertPoint.at_end(block))
    args, it = [], iter(block.args[1:])
    for v in inputs:
        value = irt.splat_value(v)
        if value is not None:
            args.append(irt.fconst(b, value))
        else:
            args.append(next(it))
    acc = block.args[0]
    if bias:
        acc = b.insert(arith.AddfOp(acc, args.pop(0))).result
    b.insert(irl.YieldOp(build(b, acc, args)))
    return Region(block), kept


def _emit(fl: FunctionLowering, op, gemm: irl.GemmOp) -> None:
    gemm.attributes[KERNEL_ATTR] = StringAttr(describe(op))
    if fl.tag_ops:
        gemm.attributes[OP_INDEX_ATTR] = IntegerAttr(fl.op_index, 64)
    fl.b.insert(gemm)


def lower_contraction_gemm(fl: FunctionLowering, op: irt.ContractionBase) -> None:
    out_shape = shape_of(op.results[0])
    lhs_shape = shape_of(op.lhs)  # type: ignore[attr-defined]
    m, n, k = product(out_shape[:-1]), out_shape[-1], lhs_shape[-1]
    rows = list(range(len(out_shape) - 1))
    cols = [len(out_shape) - 1]
    strides = [epilogue_strides(e, out_shape, rows, cols) for e in op.epilogue_inputs if irt.splat_value(e) is None]
    mismatched = op.contraction_kind == ContractionKind.PACKED and shape_of(op.rhs)[-1] != fl.gemm_width  # type: ignore[attr-defined]
    if fl.strict or mismatched or not engine_runs(m, n, k) or any(s is None for s in strides):
        lower_contraction(fl, op)
        return
    out = fl.result_buffer(op.results[0])
    a = fl.buffers[op.lhs]  # type: ignore[attr-defined]
    c = fl.view(out, [m, n]) if len(out_shape) != 2 else out
    if len(lhs_shape) != 2:
        a = fl.view(a, [m, k])
    body, inputs = epilogue_region(op.build_epilogue, list(op.epilogue_inputs))
    ix = IndexArith(fl)
    sizes = [ix.dim(d) for d in (m, n, k)]
    gemm = irl.GemmOp(
        LAYOUT[op.contraction_kind], a, fl.buffers[op.rhs], c, [fl.buffers[v] for v in inputs],  # type: ignore[attr-defined]
        sizes=sizes, tiles=choose_tiles(*sizes, fl.gemm_width, fl.threads, ix, rows=fl.matmul_rows, caches=fl.caches),
        strides=[ix.dim(x) for s in strides for x in s],  # type: ignore[union-attr]
        body=body, parallel=parallel_if(ix, dim(2 * m * n * k)),
    )
    ix.erase_unused()
    _emit(fl, op, gemm)


def lower_batch_matmul_gemm(fl: FunctionLowering, op: irt_reduce.BatchMatmulOp) -> None:
    """A batched matmul as one `irl.gemm` with a `batch`: each operand's per-batch stride from
    its broadcast batch dims (0 for a shared rhs), the tasks of every product shared among the
    threads. Batch dims whose broadcast is not one stride stay on the scalar nest."""
    out_shape = shape_of(op.result)
    batch_shape, (m, n), k = out_shape[:-2], out_shape[-2:], shape_of(op.lhs)[-1]
    sa, sb = batch_stride(op.lhs, batch_shape), batch_stride(op.rhs, batch_shape)
    count = product(batch_shape)
    if fl.strict or sa is None or sb is None or not engine_runs(count, m, n, k):
        lower_batch_matmul(fl, op)
        return
    ix = IndexArith(fl)
    sizes = [ix.dim(d) for d in (m, n, k)]
    body, _ = epilogue_region(lambda b, acc, args: acc, [])
    gemm = irl.GemmOp(
        LAYOUT[op.contraction_kind], fl.buffers[op.lhs], fl.buffers[op.rhs], fl.result_buffer(op.result), [],
        sizes=sizes, tiles=choose_tiles(*sizes, fl.gemm_width, fl.threads, ix, rows=fl.matmul_rows, caches=fl.caches), strides=[],
        batch=[] if count == 1 else [ix.dim(d) for d in (count, sa, sb, dim(m * n))],
        body=body, parallel=parallel_if(ix, dim(2 * count * m * n * k)),
    )
    ix.erase_unused()
    _emit(fl, op, gemm)


def conv_on_engine(op: irt_nn.Conv2dOp) -> bool:
    """Whether a conv's shape suits the engine: more than one input channel per group, whatever
    its output channels per group (a tile as tall as they are). A depthwise conv (one input channel
    per group, any multiplier) takes nn.py's vectorized row-wise nest. Measured on a Zen 4, one
    thread, with BN + ReLU: on the engine rather than the scalar nest, ResNeXt-50's 128-channel 3x3
    in 32 groups of 4 on 56x56 8.4 ms -> 0.48 ms (eager 1.2), a 64 -> 3 channel 3x3 on 56x56
    2.2 ms -> 0.14, 64 -> 1 0.74 -> 0.11, 64 channels in 32 groups of 2 0.49 -> 0.09, 64 in 16
    groups of 4 (5x5) 0.68 -> 0.07; depthwise with a multiplier of 2, 6 or 12 on the nest rather
    than the engine 172 -> 63, 147 -> 94, 97 -> 59 us. (It was 6+ output channels per group,
    whatever the input channels: grouped convs of 2-5 and small heads ran on the scalar nest, 4-10x
    slower than eager.)"""
    return shape_of(op.weight)[1] > 1


PIXELS_TILE_COST = 16
"""The pixels tile's fixed cost per output element (its store through a transpose), in steps of K.
Was 32 (fit on a Zen 4); on an Intel Xeon (AVX-512), one thread, weights evicted between calls,
with padded images copied in bands (`pixel_band_rows`), the 41 distinct ungrouped convs of the
built-in models measured in both layouts chose 350 us worse than the best in all at 32 and 42 at
16 (a refit from 0-64 x 0-32 x gain 0.95-1.1 found none below 41). What changed: the 7x7 stride-2
stems now take pixels (ResNet-18's 2078 -> 1807 us, DenseNet's 238 -> 189), and, worse by 18 us,
ResNet-18's 128 -> 256 1x1 stride-2 shortcut. Whole models, 32 -> 16: ResNet-18 29.9 -> 28.8 ms
(two threads 16.4 -> 15.8), DenseNet 1.64 -> 1.50 ms (1.03 -> 0.97), MobileNet-v2 unchanged;
at the AVX2 tile shape (16-wide panels, 8-float vectors, emulated on the same CPU) ResNet-18
44.3 -> 43.3 ms and DenseNet 2.16 -> 2.12."""
DIRECT_TILE_COST = 8
"""The direct tile's fixed cost per output element (its store), in steps of K."""
PIXELS_GAIN = {32: 1.0, 16: 0.92}
"""Per panel width, the pixels layout is taken when its estimated work is below this share of
the direct/im2col one. Its tile is 12 pixels tall at width 32 (`PIXEL_ROWS`), which ran faster
than the direct 6-row tile at equal work (Zen 4, one thread, GFLOP/s direct -> pixels: 64 -> 64
channels 3x3 on 56x56, 99 -> 104; two threads 179 -> 202); 6 pixels at width 16 did not (93 -> 80)."""


def conv_direct(op: irt_nn.Conv2dOp) -> bool:
    """Whether the engine reads the image in place (`irc_conv_direct`): stride 1, or windows that
    overlap. Where they do not (1x1 or 2x2 with stride 2, a 4x4 patchify with stride 4), im2col is
    no larger than the image and packing it panel by panel measured faster than the copy."""
    (sh, sw), (dh, dw) = op.strides, op.dilations
    kh, kw = shape_of(op.weight)[2:]
    return (sh, sw) == (1, 1) or (sh * sw <= irl.DIRECT_MAX_PHASES and ((kh - 1) * dh >= sh or (kw - 1) * dw >= sw))


def conv_on_pixels(op: irt_nn.Conv2dOp, rows: int, width: int) -> bool:
    """Whether the conv runs in the `pixels` layouts: a tile of output pixels x `width` output
    channels, reading the weights as `width`-column panels (`irc-pack-weights` packs them so).

    Chosen by the work each tile walk does, counted in register-tile slots times K plus a per-
    element store cost (`PIXELS_TILE_COST`, `DIRECT_TILE_COST`), when pixels is below
    `PIXELS_GAIN` of the other. The direct layout computes virtual columns (a 7x7 plane padded by
    1: 64 columns for 49 pixels) and output channels in `rows`-row tiles; pixels computes the
    pixels in balanced tiles (no waste) and the channels in `width`-wide panels, but stores each
    element through a transpose, which only a long K hides. Measured on a Zen 4, one thread,
    GFLOP/s direct -> pixels: ResNet-18's 512-channel 3x3 on 7x7 84 -> 110, its 256-channel 3x3
    on 14x14 97 -> 112, 32 -> 64 channels 3x3 on 8x8 62 -> 92; not taken, a 1x1 conv 64 -> 192
    channels on 14x14 (85 -> 82) or 16 -> 96 on 56x56 (64 -> 49). The costs were refit since
    (`PIXELS_TILE_COST`): 7x7 stems with three input channels now take pixels."""
    w = shape_of(op.input)[3]
    o, cg, kh, kw = shape_of(op.weight)
    oh, ow = shape_of(op.result)[2:]
    sw, pw = op.strides[1], op.paddings[1]
    if not all(isinstance(d, int) for d in (w, o, cg, kh, kw, oh, ow)):
        return False  # a size known only at call time
    mg = o // op.group_count
    if width not in PIXEL_ROWS or (op.group_count > 1 and mg % width):
        return False  # a group's channels in whole panels (ResNeXt-50's last stage: 32 a group on 7x7)
    k, p = cg * kh * kw, oh * ow
    columns = (oh - 1) * -(-(w + 2 * pw) // sw) + ow if conv_direct(op) else p

    def up(x: int, m: int) -> int:
        return -(-x // m) * m

    pixels = up(mg, width) * p * (k + PIXELS_TILE_COST)
    other = up(mg, rows) * up(columns, width) * (k + DIRECT_TILE_COST)
    return pixels < PIXELS_GAIN[width] * other


WINOGRAD_MIN_CHANNELS = 64
"""The fewest input and output channels for which a 3x3 stride-1 conv runs as Winograd F(2x2,
3x3) (`conv_winograd`): its 16 products are over the input channels, and its GEMM tiles are 14
(6) output channels high. Zen 4, one thread, the conv alone against the pixels layout: 64 -> 64
channels on 16x16 163-172 -> 141-143 us; 32 -> 32 on 32x32 188 -> 170-223; 128 -> 32 on 16x16
(DenseNet's; three tiles of 14 rows for 32 channels) 167-200 -> 196-199."""
WINOGRAD_MIN_TILES = 32
"""... and the fewest 2x2 output tiles: the products' vectors run over tiles, two per register
tile, and a plane of 8x8 or 7x7 outputs (16 tiles) would fill half of it."""


def conv_winograd(op: irt_nn.Conv2dOp) -> bool:
    """Whether the engine runs the conv as Winograd F(2x2, 3x3) (`irc_conv_winograd`, weights
    packed by `irt.pack "winograd"`): a 3x3 conv of stride 1, dilation 1 and one group with at
    least `WINOGRAD_MIN_CHANNELS` input and output channels and `WINOGRAD_MIN_TILES` tiles. Per
    2x2 outputs it sums 16 products over the channels where the direct conv sums 36, for
    transforms of the input and output that add and subtract. Zen 4, the conv (+ BN + ReLU) alone,
    against the pixels layout, one thread: ResNet-18's 64 channels on 56x56 2136-2250 ->
    1450-1471 us, 128 on 28x28 2037-2068 -> 1435-1440, 256 on 14x14 1899-1965 -> 1481-1507; two
    threads 1065-1147 -> 832-880, 1070-1133 -> 881-1067, 1006-1035 -> 879-943 (its 512-channel
    3x3s on 7x7 have 16 tiles: not taken). ResNet-18, one thread 34.3-36.9 -> 28.3-28.6 ms."""
    if op.group_count != 1 or op.strides != (1, 1) or op.dilations != (1, 1):
        return False
    o, c, kh, kw = shape_of(op.weight)
    oh, ow = shape_of(op.result)[2:]
    if not all(isinstance(d, int) for d in (o, c, oh, ow)) or (kh, kw) != (3, 3):
        return False
    tiles = -(-oh // 2) * -(-ow // 2)
    return min(o, c) >= WINOGRAD_MIN_CHANNELS and tiles >= WINOGRAD_MIN_TILES


WINOGRAD_SPLIT_WEIGHTS = 0.5
"""A Winograd conv whose transformed weights take more than this share of L2 shares out its
output channels among the threads rather than its tile rows (`winograd_tiles`)."""


def winograd_tiles(op: irt_nn.Conv2dOp, rows: int, threads: int, caches: tuple[int, int, int]) -> tuple[int, int]:
    """(R, OS) for `irc_conv_winograd`: tile rows and output channel panels (of `rows`) per task.
    One thread: one task (the whole image's tiles; blocks of tile rows sized to L2 measured no
    faster), or tasks of tile rows whose V and M take at most a quarter of L3 (a 64-channel 3x3
    on 224x224 would take 100 MB at once). More threads share out the tile rows, each task
    reading every transformed weight, unless those take more than `WINOGRAD_SPLIT_WEIGHTS` of L2
    (or there are fewer tile rows than threads): then the panels of output channels, each task
    transforming the whole input. Zen 4 (1 MiB L2), two threads: ResNet-18's
    256-channel 3x3 on 14x14 (4.4 MB of transformed weights) in tasks of 3 tile rows 1461-1514
    us, of half the channels 879-943; its 128-channel on 28x28 (1.1 MB) 1187 -> 881-1067."""
    o, c = shape_of(op.weight)[:2]
    oh, ow = shape_of(op.result)[2:]
    th, tw, panels = -(-oh // 2), -(-ow // 2), -(-o // rows)
    l2 = caches[1] if caches[1] > 0 else 1 << 20
    l3 = caches[2] if caches[2] > 0 else 8 << 20
    # a task's V and M, 16 x (C + panels*rows) floats per tile, at most a quarter of L3
    most = max(1, l3 // 4 // (64 * (c + panels * rows)) // tw)
    if threads <= 1:
        return min(th, most), panels
    if 16 * panels * rows * c * 4 > WINOGRAD_SPLIT_WEIGHTS * l2 or th < threads:
        return min(th, most), -(-panels // threads)
    return min(-(-th // threads), most), panels


PIXEL_SPLIT_TILES = 16
"""The pixels layout splits its pixels among the threads (rather than its channel panels) when
each thread gets at least this many tiles of pixels."""


def pixel_tiles(m: int, p: int, width: int, threads: int) -> tuple[int, int]:
    """(MS, NP) for the pixels layouts: the tasks' output channels (whole `width`-wide panels)
    and pixels. A large plane's pixels are split among the threads, so each reads its share of
    the image for every panel; a small plane's panels are, each read from L2 by all pixel tiles
    (and so are the pixels when there are fewer panels than threads). Zen 4, two threads, panels
    -> pixels split: 64 -> 64 channels 3x3 on 56x56 1385 -> 1234 us (the padded image, 861 KB,
    no longer read whole by both threads), 28x28 x 128 1099 -> 1068; 7x7 x 512 1062 -> 1101."""
    panels = -(-m // width)
    if panels >= threads and p < threads * PIXEL_SPLIT_TILES * PIXEL_ROWS[width]:
        return -(-panels // threads) * width, p
    return panels * width, max(1, -(-p // threads))


BAND_IMAGE_SHARE = 8
"""A padded pixels-layout conv copies its image in bands (`pixel_band_rows`) when the whole
padded copy would take more than this share of L2 ..."""
BAND_WEIGHTS_SHARE = 2
"""... and its weights at most this share (every band reads them all again) ..."""
BAND_BUFFER_SHARE = 16
"""... in bands whose padded rows take at most this share of L2."""


def pixel_band_rows(op: irt_nn.Conv2dOp, ms: int, caches: tuple[int, int, int]) -> int:
    """Output rows per band of a pixels-layout conv's padded image (`irc_conv_pixels`'s BH): the
    output height (one padded copy of the whole image) unless the conv is padded, its tasks take
    every channel (`pixel_tiles` split its pixels) and the copy would not stay in L2 while the
    weights do. Banded, each task copies its rows' padded inputs a band at a time, which every
    channel panel reads before the next band's copy overwrites it. Intel Xeon (2 MiB L2),
    ResNet-18 (bands of 6 output rows for its 64-channel 3x3s on 56x56, 861 KB padded, and its
    128-channel ones on 28x28, 460 KB; 3 for the stride-2 conv between them), A/B in one process
    over five runs: 1-3% faster at one thread and at two (30.2 -> 29.2 ms, 15.6 -> 15.2). Bands
    of L2/16 measured best among L2/6, /10, /16, /24 and /32; also banding its 256-channel 3x3s
    on 14x14 (262 KB image, 2.4 MB of weights, read again by every band) was slower."""
    _, _, h, w = shape_of(op.input)
    o, cg, kh, kw = shape_of(op.weight)
    oh = shape_of(op.result)[2]
    (sh, _), (ph, pw), (dh, _) = op.strides, op.paddings, op.dilations
    _, l2, _ = caches
    wp = w + 2 * pw
    image, weights = 4 * cg * (h + 2 * ph) * wp, 4 * o * cg * kh * kw
    if not (ph or pw) or ms < o or l2 <= 0 or image <= l2 // BAND_IMAGE_SHARE or weights > l2 // BAND_WEIGHTS_SHARE:
        return oh
    rows = l2 // BAND_BUFFER_SHARE // (4 * cg * wp)  # padded input rows in a band
    return max(1, min(oh, (rows - (kh - 1) * dh - 1) // sh + 1))


def lower_conv2d_gemm(fl: FunctionLowering, op: irt_nn.Conv2dOp) -> None:
    batch, c_in, h, w = shape_of(op.input)
    o, cg, kh, kw = shape_of(op.weight)
    out_shape = shape_of(op.result)
    oh, ow = out_shape[2:]
    groups = op.group_count
    mg, kg, p = o // groups, cg * kh * kw, oh * ow
    inputs = ([op.bias] if op.bias is not None else []) + list(op.epilogue_inputs)
    strides = [(0, 1, 0) if op.bias is not None and v is op.bias else epilogue_strides(v, out_shape, [1], [2, 3], [0])
               for v in inputs if irt.splat_value(v) is None]
    if fl.strict or not conv_on_engine(op) or not engine_runs(batch, p, kg) or any(s is None for s in strides):
        lower_conv2d(fl, op)
        return
    (sh, sw), (ph, pw), (dh, dw) = op.strides, op.paddings, op.dilations
    # B read in place (irc_conv_direct; a padded or strided image copied once into phase planes)
    # where im2col would repeat input elements (conv_direct), or pixels x channels (conv_on_pixels)
    direct = conv_direct(op)
    columns = (oh - 1) * -(-(w + 2 * pw) // sw) + ow if direct else p  # direct: virtual columns oh*Wq + ow (irl.py)
    out = fl.result_buffer(op.result)
    body, kept = epilogue_region(op.build_epilogue, inputs, bias=op.bias is not None)
    # weights packed at compile time (irc-pack-weights) when their panels suit this engine: rows
    # panels for im2col/direct, columns panels for pixels (a conv whose weights were packed the
    # other way takes the layout that reads them)
    rows, width = fl.gemm_rows, fl.gemm_width
    # irt.pack "winograd" for this target's Winograd tile (packed for another, the weights are
    # read unpacked by the layouts below)
    transformed = op.packed is not None and len(shape_of(op.packed)) == 4
    panel = shape_of(op.packed)[-1] if op.packed is not None and not transformed else None
    winograd = transformed and shape_of(op.packed)[-1] == PIXEL_PAIR_ROWS[width]
    packed = winograd or panel == rows  # a group's rows in panels of their own (the verifier's shape)
    if winograd:
        r, os = winograd_tiles(op, PIXEL_PAIR_ROWS[width], fl.threads, fl.caches)
        layout, tiles = irl.GemmLayout.WINOGRAD, [r, 1, 1, os]
    elif conv_on_pixels(op, rows, width) and (op.packed is None or panel == width):
        layout = irl.GemmLayout.PIXELS_PANELS if panel == width else irl.GemmLayout.PIXELS
        ms, nc = pixel_tiles(mg, p, width, fl.threads)
        bands = pixel_band_rows(op, ms, fl.caches) if panel == width else oh
        tiles = [bands, nc, kg, ms]
        packed = panel == width
    else:
        layout = {(False, False): irl.GemmLayout.IM2COL, (False, True): irl.GemmLayout.IM2COL_PANELS,
                  (True, False): irl.GemmLayout.DIRECT, (True, True): irl.GemmLayout.DIRECT_PANELS}[direct, packed]
        tiles = choose_tiles(mg, columns, kg, width, fl.threads, rows=rows, caches=fl.caches, lhs_in_place=False)
    gemm = irl.GemmOp(
        layout,
        fl.buffers[op.packed if packed else op.weight],  # type: ignore[index]
        fl.buffers[op.input], out, [fl.buffers[v] for v in kept],
        sizes=(mg, p, kg), tiles=tiles,
        strides=[x for s in strides for x in s],  # type: ignore[union-attr]
        conv=irl.ConvGeometry(batch=batch, channels=c_in, height=h, width=w, out_channels=o, out_height=oh,
                              out_width=ow, kernel_h=kh, kernel_w=kw, stride_h=sh, stride_w=sw, pad_h=ph, pad_w=pw,
                              dilation_h=dh, dilation_w=dw, groups=groups),
        body=body, parallel=conv_parallel(2 * mg * p * kg * groups, groups, batch, fl.threads),
    )
    _emit(fl, op, gemm)


def lower_pack(fl: FunctionLowering, op: irt.PackOp) -> None:
    """Packing at run time (compile-time folding packs parameters; this serves hand-written IR):
    out[q, k, r] = in[q*W + r, k] ("rows") or in[k, q*W + r] ("cols"), 0 past the edge. The
    Winograd transform ("winograd", `_lower_winograd_pack`) likewise."""
    if op.axis.data == "winograd":
        _lower_winograd_pack(fl, op)
        return
    out = fl.result_buffer(op.result)
    src = fl.buffers[op.input]
    width = op.panel_width
    rows = op.axis.data == "rows"
    in_shape = shape_of(op.input)
    edge = in_shape[0 if rows else 1]
    if len(in_shape) > 2:  # "rows" of a conv weight: [O, C*kH*kW]
        src = fl.view(src, [in_shape[0], math.prod(in_shape[1:])])

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        q, kk, r = ivs
        d = b.insert(arith.AddiOp(b.insert(arith.MuliOp(q, fl.index(width))).result, r)).result
        inside = b.insert(arith.CmpiOp(d, fl.index(edge), "slt")).result
        clamped = b.insert(arith.MinSIOp(d, fl.index(edge - 1))).result
        value = b.insert(memref.LoadOp.get(src, [clamped, kk] if rows else [kk, clamped])).res
        zero = irt.fconst(b, 0.0)
        b.insert(memref.StoreOp.get(b.insert(arith.SelectOp(inside, value, zero)).result, out, ivs))

    fl.nest(shape_of(op.result), describe(op), body)


def _lower_winograd_pack(fl: FunctionLowering, op: irt.PackOp) -> None:
    """out[4a + b, q, c, r] = sum over (k, l) of G[a][k] G[b][l] w[q*R + r, c, k, l], 0 past the
    last output channel: per (q, c, r) the 9 weights loaded once and the 16 sums written out
    (G's entries are constants: `WINOGRAD_G`)."""
    from irc.dialects.irt.semantics import WINOGRAD_G

    out, src = fl.result_buffer(op.result), fl.buffers[op.input]
    _, panels, channels, width = shape_of(op.result)
    edge = shape_of(op.input)[0]

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        q, c, r = ivs
        o = b.insert(arith.AddiOp(b.insert(arith.MuliOp(q, fl.index(width))).result, r)).result
        inside = b.insert(arith.CmpiOp(o, fl.index(edge), "slt")).result
        clamped = b.insert(arith.MinSIOp(o, fl.index(edge - 1))).result
        zero = irt.fconst(b, 0.0)
        def weight(kh: int, kw: int) -> SSAValue:
            value = b.insert(memref.LoadOp.get(src, [clamped, c, fl.index(kh), fl.index(kw)])).res
            return b.insert(arith.SelectOp(inside, value, zero)).result

        w = [[weight(kh, kw) for kw in range(3)] for kh in range(3)]
        for a in range(4):
            for bb in range(4):
                acc = None
                for kh in range(3):
                    for kw in range(3):
                        coef = WINOGRAD_G[a][kh] * WINOGRAD_G[bb][kw]
                        if coef == 0.0:
                            continue
                        term = b.insert(arith.MulfOp(w[kh][kw], irt.fconst(b, coef))).result
                        acc = term if acc is None else b.insert(arith.AddfOp(acc, term)).result
                b.insert(memref.StoreOp.get(acc if acc is not None else zero, out, [fl.index(4 * a + bb), q, c, r]))

    fl.nest([panels, channels, width], describe(op), body)


ATTENTION_ROWS = 64
"""Queries per block: a 64 x Lk block of scores per thread (32 KiB at Lk = 128)."""


def _dense_mask(fl: FunctionLowering, op: irt_reduce.AttentionOp, scores: Sequence[int]) -> SSAValue:
    """The mask broadcast to the whole scores shape, in a buffer of its own: the engine reads a
    mask at strides affine in the flattened batch, which a mask shared by the heads of one batch
    ([B, 1, Lq, Lk], a language model's padding mask) is not. One pass over B x H x Lq x Lk floats
    is a few per cent of the attention, where the scalar nest it would fall back to is 20x slower."""
    sizes = [fl.index(d) for d in scores if not isinstance(d, int)]
    alloc = fl.b.insert(memref.AllocOp(sizes, [], memref_of(f32, list(scores)), IntegerAttr(64, 64)))
    alloc.memref.name_hint = "mask"
    fl.allocs.append(alloc.memref)

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        b.insert(memref.StoreOp.get(fl.load(b, op.mask, ivs, scores), alloc.memref, ivs))

    fl.nest(list(scores), f"{describe(op)} (its mask, broadcast)", body)
    return alloc.memref


def lower_attention_gemm(fl: FunctionLowering, op: irt_reduce.AttentionOp) -> None:
    out_shape = shape_of(op.result)
    batch_shape = out_shape[:-2]
    lq, e = shape_of(op.q)[-2:]
    lk, ev = shape_of(op.v)[-2:]
    same_batch = all(shape_of(x)[:-2] == batch_shape for x in (op.q, op.k, op.v))
    nd = len(out_shape)
    mask_strides = (
        epilogue_strides(op.mask, (*batch_shape, lq, lk), [nd - 2], [nd - 1], list(range(nd - 2)))
        if op.mask is not None else ()
    )
    if fl.strict or not same_batch or not engine_runs(*out_shape, lk, e):
        lower_attention(fl, op)
        return
    mask = fl.buffers[op.mask] if op.mask is not None else None
    if mask is not None and mask_strides is None:  # e.g. [B, 1, Lq, Lk] over B x H heads: made dense
        mask, mask_strides = _dense_mask(fl, op, (*batch_shape, lq, lk)), (dim(lq * lk), lk, 1)
    batch = product(batch_shape)
    rows = min(lq, ATTENTION_ROWS) if isinstance(lq, int) else ATTENTION_ROWS  # a block of at most Lq queries
    ix = IndexArith(fl)
    attention = irl.AttentionOp(
        fl.buffers[op.q], fl.buffers[op.k], fl.buffers[op.v], fl.result_buffer(op.result),
        mask,
        sizes=[ix.dim(d) for d in (batch, lq, lk, e, ev)], rows=rows, scale=op.scale_value, causal=op.causal,
        mask_strides=[ix.dim(s) for s in mask_strides], parallel=parallel_if(ix, dim(2 * batch * lq * lk * (e + ev))),
        safe=op.safe,
    )
    ix.erase_unused()
    _emit(fl, op, attention)

"""`irc-to-loops` for the core `irt` ops (`dialects/irt/core.py`): elementwise ops (fused or
not) and contractions as scalar loop nests, transpose, reshape (a view), constants.

Every computing op becomes one loop nest whose independent output dimensions form one
`scf.parallel`; contractions add an inner `scf.for` reduction carrying the accumulator (the
GEMM engine, `gemm.py`, takes over the contractions it can run). The scalar work per element
comes from the op's own `build_scalar`/`build_epilogue`, so fused and unfused ops lower through
the same code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IndexType, StringAttr, UnitAttr, f32
from xdsl.ir import Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from irc.dialects.irt import core as irt
from irc.dialects.static_shape import row_major_strides
from irc.dialects.symbolic import Dim
from irc.lowering.to_loops.function import REDUCTION_ATTR, FunctionLowering, describe
from irc.lowering.to_loops.reduce import for_loop


def lower_elementwise(fl: FunctionLowering, op: irt.ElementwiseOp) -> None:
    out = fl.result_buffer(op.results[0])
    shape = irt.shape_of(op.results[0])

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        args = [fl.load(b, x, ivs, shape) for x in op.elementwise_inputs()]
        b.insert(memref.StoreOp.get(op.build_scalar(b, args), out, ivs))

    fl.nest(shape, describe(op), body)


def lower_contraction(fl: FunctionLowering, op: irt.ContractionBase) -> None:
    out = fl.result_buffer(op.results[0])
    shape = irt.shape_of(op.results[0])
    k_size = irt.shape_of(op.lhs)[-1]
    linear = op.contraction_kind == irt.ContractionKind.LINEAR
    packed = op.contraction_kind == irt.ContractionKind.PACKED
    width = irt.shape_of(op.rhs)[-1]
    lhs, rhs = fl.buffers[op.lhs], fl.buffers[op.rhs]

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        lead, j = ivs[:-1], ivs[-1]
        k_block = Block(arg_types=[IndexType(), f32])
        k, acc = k_block.args
        k.name_hint, acc.name_hint = "k", "acc"
        kb = Builder(InsertPoint.at_end(k_block))
        x = kb.insert(memref.LoadOp.get(lhs, [*lead, k])).res
        if packed:  # panels of `width` columns: rhs[j / width, k, j % width]
            q = kb.insert(arith.DivSIOp(j, fl.index(width))).result
            r = kb.insert(arith.RemSIOp(j, fl.index(width))).result
            w = kb.insert(memref.LoadOp.get(rhs, [q, k, r])).res
        else:
            w = kb.insert(memref.LoadOp.get(rhs, [j, k] if linear else [k, j])).res
        prod = kb.insert(arith.MulfOp(x, w)).result
        kb.insert(scf.YieldOp(kb.insert(arith.AddfOp(acc, prod)).result))
        zero = irt.fconst(b, 0.0)
        loop = b.insert(scf.ForOp(fl.index(0), fl.index(k_size), fl.index(1), [zero], Region(k_block)))
        loop.attributes[REDUCTION_ATTR] = StringAttr("add")
        args = [fl.load(b, e, ivs, shape) for e in op.epilogue_inputs]
        value = op.build_epilogue(b, loop.results[0], args)
        b.insert(memref.StoreOp.get(value, out, ivs))

    fl.nest(shape, describe(op), body)


def merged_permutation(shape: Sequence[Dim], perm: Sequence[int]) -> tuple[list[Dim], list[int]]:
    """The same transpose over fewer dimensions: input dimensions that stay adjacent and in order
    in the output merge into one (static sizes only). NHWC -> NCHW, [1, 28, 28, 64] by
    (0, 3, 1, 2), is [1, 784, 64] by (0, 2, 1)."""
    groups: list[list[int]] = []  # runs of input dims, in output order
    for p in perm:
        if groups and groups[-1][-1] + 1 == p and all(isinstance(shape[d], int) for d in (p, groups[-1][-1])):
            groups[-1].append(p)
        else:
            groups.append([p])
    by_input = sorted(range(len(groups)), key=lambda g: groups[g][0])
    merged_shape = [math.prod(shape[d] for d in groups[g]) if len(groups[g]) > 1 else shape[groups[g][0]]
                    for g in by_input]
    return merged_shape, [by_input.index(g) for g in range(len(groups))]


def lower_transpose(fl: FunctionLowering, op: irt.TransposeOp) -> None:
    """out[i_0, ..., i_n] = x[the same indices, permuted], one element per iteration of a nest
    over the result. Dimensions that stay adjacent merge first (`merged_permutation`, through
    views): NHWC -> NCHW on 28x28x64 walks [64, 784] instead of [64, 28, 28], so the innermost
    loop has 784 trips rather than 28, and such a wide output row tiles (`_tiled_transpose`)."""
    out = fl.result_buffer(op.result)
    src = fl.buffers[op.input]
    perm = op.permutation
    in_shape, out_shape = irt.shape_of(op.input), irt.shape_of(op.result)
    merged, merged_perm = merged_permutation(in_shape, perm)
    if len(merged) < len(perm):
        src = fl.view(src, merged)
        out = fl.view(out, [merged[p] for p in merged_perm])
        perm = merged_perm
        out_shape = [merged[p] for p in merged_perm]
    k = len(perm) - 2
    if (k >= 0 and list(perm) == [*range(k), k + 1, k] and all(isinstance(d, int) for d in out_shape[k:])
            and out_shape[-2] > 0 and out_shape[-1] > TRANSPOSE_UNTILED_COLUMNS):
        _tiled_transpose(fl, op, src, out, out_shape)
        return

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        in_ivs: list[SSAValue] = [ivs[0]] * len(perm)
        for i, p in enumerate(perm):
            in_ivs[p] = ivs[i]
        value = b.insert(memref.LoadOp.get(src, in_ivs)).res
        b.insert(memref.StoreOp.get(value, out, ivs))

    fl.nest(out_shape, describe(op), body)


TRANSPOSE_TILE = (16, 64)
"""The largest tile a transpose of the last two dimensions walks per parallel iteration: 16 rows
of the output by 64 columns, reading 64 input rows x 16 columns (64 cache lines, L1-resident).
NHWC -> NCHW on 1x28x28x64, one thread: 33 us untiled, 16 us in 16 x 56 tiles (64 x 16: 27,
32 x 64: 16; the other direction, untiled, 8.7)."""

TRANSPOSE_UNTILED_COLUMNS = 16
"""The widest output row a transpose writes untiled. Tiles are transposed in registers
(`TRANSPOSE_ATTR`), so any row of more than one 16-float vector tiles. Untiled, each output
element reads another input row (cache line). NHWC -> NCHW on 1x28x28x64 (784 columns), one
thread: 33 us untiled, 16 us in scalar tiles; NCHW -> NHWC (64 columns): 8.7 us untiled.
Measured as that transpose plus a multiply, one thread, Zen 4: 41 -> 15 us and 18 -> 13.5 us."""


def _tile(size: int, most: int) -> int:
    """The largest tile <= `most` dividing `size` (so every tile is whole), or `most` if only
    tiles below a quarter of it would (then the last tile is clamped)."""
    best = next(t for t in range(min(most, size), 0, -1) if size % t == 0)
    return best if 4 * best >= min(most, size) else min(most, size)


TRANSPOSE_ATTR = "irc.transpose"
"""Marks the `b` loop of a transpose tile (`_tiled_transpose`): the C++ emitter prints the tile as
one `irc_transpose` call (IRC_VL x IRC_VL blocks transposed in registers, include/irc_math.h)
rather than the element loops. NHWC -> NCHW on 1x28x28x64, one thread, the tiles alone: 10.8 -> 6.7 us."""


def _tiled_transpose(fl: FunctionLowering, op: irt.TransposeOp, src: SSAValue, out: SSAValue,
                     out_shape: Sequence[Dim]) -> None:
    """out[..., b, a] = x[..., a, b] in tiles: one parallel iteration per (leading indices, tile
    of `TRANSPOSE_TILE` output rows b x columns a), inside it b then a (contiguous stores, reads
    of stride B from lines that stay in L1). Untiled, each output row read one element from each
    of A input rows, and A lines do not stay in L1 until the next output row reads them again.
    The `b` loop of a float32 transpose carries `TRANSPOSE_ATTR`."""
    rows, cols = out_shape[-2], out_shape[-1]
    tb, ta = (_tile(n, t) for t, n in zip(TRANSPOSE_TILE, (rows, cols)))
    tiles = [-(-rows // tb), -(-cols // ta)]

    def span(b: Builder, t: SSAValue, size: int, n: int) -> tuple[SSAValue, SSAValue]:
        lo = b.insert(arith.MuliOp(t, fl.index(size))).result
        hi = b.insert(arith.AddiOp(lo, fl.index(size))).result
        if n % size:
            hi = b.insert(arith.MinSIOp(hi, fl.index(n))).result
        return lo, hi

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        lead, (tr, tc) = ivs[:-2], ivs[-2:]
        r_lo, r_hi = span(b, tr, tb, rows)
        c_lo, c_hi = span(b, tc, ta, cols)

        def row(rb: Builder, r: SSAValue, _: list) -> list:
            def column(cb: Builder, c: SSAValue, _: list) -> list:
                value = cb.insert(memref.LoadOp.get(src, [*lead, c, r])).res
                cb.insert(memref.StoreOp.get(value, out, [*lead, r, c]))
                return []

            for_loop(fl, rb, c_hi, [], column, "a", lb=c_lo)
            return []

        for_loop(fl, b, r_hi, [], row, "b", lb=r_lo)
        tile = b.insertion_point.block.last_op
        assert isinstance(tile, scf.ForOp)
        if irt.element_type(op.result) == f32:  # irc_transpose moves floats (int64, bool: the loops)
            tile.attributes[TRANSPOSE_ATTR] = UnitAttr()

    fl.nest([*out_shape[:-2], *tiles], describe(op), body)


def lower_reshape(fl: FunctionLowering, op: irt.ReshapeOp) -> None:
    if op.result not in fl.buffers:
        fl.buffers[op.result] = fl.view(fl.buffers[op.input], irt.shape_of(op.result), op.result.name_hint)


def lower_constant(fl: FunctionLowering, op: irt.ConstantOp) -> None:
    read_per_element = all(
        isinstance(use.operation, irt.ElementwiseOp)
        or (isinstance(use.operation, irt.ContractionBase) and use.index >= 2)
        for use in op.result.uses
    )
    if op.value.is_splat() and read_per_element and op.result not in fl.buffers:
        return  # every reader takes the value as a scalar constant (see `load`)
    out = fl.result_buffer(op.result)
    shape = irt.shape_of(op.result)
    strides = row_major_strides(shape)
    for flat, value in enumerate(op.value.iter_values()):
        idx = [fl.index(flat // stride % size) for stride, size in zip(strides, shape)]
        c = irt.scalar_constant(fl.b, value, irt.element_type(op.result))
        fl.b.insert(memref.StoreOp.get(c, out, idx))

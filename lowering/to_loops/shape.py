"""`irc-to-loops` for the ops of `dialects/irt/shape.py` (listed in `table.LOWERINGS`); what
they compute on torch tensors is `dialects/irt/semantics.py`.

Each is one copy kernel over its result (concat: one per input, writing at the input's offset):

* `irt.slice`: result[i] = input[offset + i * stride] per dimension (index arithmetic in the load);
* `irt.concat`: out[..., offset_k + i, ...] = input_k[..., i, ...] (offset_k, the sizes of the
  inputs before k, may be an expression of the symbols: a KV cache's `s0` past positions);
* `irt.expand`: a broadcasting load (index 0 in the input's size-1 dimensions);
* `irt.embedding`: out[i..., d] = weight[idx[i...], d], parallel over index positions and d; the
  index is clamped for the load and the element replaced by NaN when clamping changed it.
"""

from __future__ import annotations

from xdsl.builder import Builder
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IndexType, f32, i64
from xdsl.ir import SSAValue

from irc.dialects.irt import core as irt
from irc.dialects.irt.shape import ConcatOp, EmbeddingOp, ExpandOp, SizeOp, SliceOp
from irc.dialects.symbolic import Dim, dim, format_dim
from irc.lowering.to_loops.function import FunctionLowering, describe


def _offset_index(fl: FunctionLowering, b: Builder, iv: SSAValue, offset: Dim, stride: int, size: Dim) -> SSAValue:
    """offset + iv * stride, folded where it is a constant or the identity."""
    if size == 1:
        return fl.index(offset)
    if stride != 1:
        iv = b.insert(arith.MuliOp(iv, fl.index(stride))).result
    if offset != 0:
        iv = b.insert(arith.AddiOp(iv, fl.index(offset))).result
    return iv


def lower_slice(fl: FunctionLowering, op: SliceOp) -> None:
    out, src = fl.result_buffer(op.result), fl.buffers[op.input]
    shape = irt.shape_of(op.result)

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        idx = [
            _offset_index(fl, b, iv, off, st, n)
            for iv, off, st, n in zip(ivs, op.static_offsets, op.static_strides, shape)
        ]
        value = b.insert(memref.LoadOp.get(src, idx)).res
        b.insert(memref.StoreOp.get(value, out, ivs))

    fl.nest(shape, describe(op), body)


def lower_concat(fl: FunctionLowering, op: ConcatOp) -> None:
    out = fl.result_buffer(op.result)
    d, offset = op.axis, 0  # a size: an expression of the symbols after a symbolic input
    for k, x in enumerate(op.inputs):
        shape = irt.shape_of(x)

        def body(b: Builder, ivs: list[SSAValue], x=x, offset=offset, shape=shape) -> None:
            value = fl.load(b, x, ivs, shape)
            dst = list(ivs)
            dst[d] = _offset_index(fl, b, ivs[d], offset, 1, shape[d])
            b.insert(memref.StoreOp.get(value, out, dst))

        fl.nest(shape, f"{describe(op)} (input {k} at {format_dim(offset)})", body)
        offset = dim(offset + shape[d])


def lower_expand(fl: FunctionLowering, op: ExpandOp) -> None:
    out = fl.result_buffer(op.result)
    shape = irt.shape_of(op.result)

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        b.insert(memref.StoreOp.get(fl.load(b, op.input, ivs, shape), out, ivs))

    fl.nest(shape, describe(op), body)


def lower_embedding(fl: FunctionLowering, op: EmbeddingOp) -> None:
    """Never reads outside the table: an index outside [0, V) gives a NaN row (see EmbeddingOp)."""
    out, idx, table = fl.result_buffer(op.result), fl.buffers[op.indices], fl.buffers[op.weight]
    shape = irt.shape_of(op.result)
    rows = irt.shape_of(op.weight)[0]

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        raw = b.insert(memref.LoadOp.get(idx, ivs[:-1])).res
        row = b.insert(arith.IndexCastOp(raw, IndexType())).result
        safe = b.insert(arith.MaxSIOp(row, fl.index(0))).result
        safe = b.insert(arith.MinSIOp(safe, fl.index(rows - 1))).result
        valid = b.insert(arith.CmpiOp(safe, row, "eq")).result
        value = b.insert(memref.LoadOp.get(table, [safe, ivs[-1]])).res
        nan = irt.fconst(b, float("nan"))
        value = b.insert(arith.SelectOp(valid, value, nan)).result
        b.insert(memref.StoreOp.get(value, out, ivs))

    fl.nest(shape, describe(op), body)


def lower_size(fl: FunctionLowering, op: SizeOp) -> None:
    """The 0-d result holds the size, computed from the function's size arguments."""
    out = fl.result_buffer(op.result)
    n = fl.b.insert(arith.IndexCastOp(fl.index(op.value), i64)).result
    value = fl.b.insert(arith.SIToFPOp(n, f32)).result
    fl.b.insert(memref.StoreOp.get(value, out, []))

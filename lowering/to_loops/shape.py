"""`irc-to-loops` for the ops of `dialects/irt/shape.py` (listed in `table.LOWERINGS`); what
they compute on torch tensors is `dialects/irt/semantics.py`.

Each is one copy kernel over its result (concat: one per input, writing at the input's offset):

* `irt.slice`: result[i] = input[offset + i * stride] per dimension (index arithmetic in the load);
* `irt.concat`: out[..., offset_k + i, ...] = input_k[..., i, ...] (offset_k, the sizes of the
  inputs before k, may be an expression of the symbols: a KV cache's `s0` past positions);
* `irt.expand`: a broadcasting load (index 0 in the input's size-1 dimensions);
* `irt.embedding`: out[i..., d] = weight[idx[i...], d], parallel over index positions and d; the
  index is clamped for the load and the element replaced by NaN when clamping changed it;
* `irt.gather` / `irt.index_select`: the same clamped load along their dim (NaN, or 0 / false
  for integer and bool elements, where the index is outside the input);
* `irt.arange`: out[i] = start + i * step, from the index;
* `irt.triu` / `irt.tril`: out = x where j - i is on the kept side of the diagonal, else 0, from
  the last two indices.
Sizes may be symbolic in the ops that say so (`SYMBOLIC_DIMS`): bounds and clamps are index
values `fl.index` computes from the function's size arguments.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IndexType, f32, i64
from xdsl.ir import SSAValue

from irc.dialects.irt import core as irt
from irc.dialects.irt.shape import (
    ArangeOp,
    ConcatOp,
    EmbeddingOp,
    ExpandOp,
    GatherOp,
    IndexSelectOp,
    SizeOp,
    SliceOp,
    TriangleOp,
)
from irc.dialects.symbolic import Dim, dim, format_dim
from irc.lowering.to_loops.function import FunctionLowering, concat_copies, describe


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
            for iv, off, st, n in zip(ivs, op.offset_values, op.static_strides, shape)
        ]
        value = b.insert(memref.LoadOp.get(src, idx)).res
        b.insert(memref.StoreOp.get(value, out, ivs))

    fl.nest(shape, describe(op), body)


def lower_concat(fl: FunctionLowering, op: ConcatOp) -> None:
    """One copy per input, but none of an input computed in place in the result (`concat_homes`)."""
    out = fl.result_buffer(op.result)
    d, offset = op.axis, 0  # a size: an expression of the symbols after a symbolic input
    for k, (x, copy) in enumerate(zip(op.inputs, concat_copies(op, fl.homes))):
        shape = irt.shape_of(x)
        if not copy:  # already there
            offset = dim(offset + shape[d])
            continue

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


def _ins(b: Builder, op) -> SSAValue:
    return b.insert(op).results[0]


def lower_arange(fl: FunctionLowering, op: ArangeOp) -> None:
    out, t = fl.result_buffer(op.result), irt.element_type(op.result)
    start, step = op.start_value, op.step_value

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        i = _ins(b, arith.IndexCastOp(ivs[0], i64))
        if irt.is_float(t):  # i * step + start, in f32
            v = _ins(b, arith.SIToFPOp(i, f32))
            v = v if step == 1 else _ins(b, arith.MulfOp(v, irt.fconst(b, step)))
            v = v if start == 0 else _ins(b, arith.AddfOp(v, irt.fconst(b, start)))
        else:
            v = i if step == 1 else _ins(b, arith.MuliOp(i, irt.scalar_constant(b, int(step), i64)))
            v = v if start == 0 else _ins(b, arith.AddiOp(v, irt.scalar_constant(b, int(start), i64)))
        b.insert(memref.StoreOp.get(v, out, ivs))

    fl.nest(irt.shape_of(op.result), describe(op), body)


def _clamped_load(
    fl: FunctionLowering, b: Builder, src: SSAValue, raw: SSAValue, size: Dim, at: Sequence[SSAValue], d: int
) -> SSAValue:
    """src[at with index d = raw], or NaN / 0 / false where raw is outside [0, size): the load
    reads a clamped index (never out of bounds), then the element is replaced."""
    t = irt.element_type(src)
    missing = irt.scalar_constant(b, float("nan") if irt.is_float(t) else 0, t)
    if isinstance(size, int) and size == 0:  # nothing to read
        return missing
    row = _ins(b, arith.IndexCastOp(raw, IndexType()))
    safe = _ins(b, arith.MaxSIOp(row, fl.index(0)))
    safe = _ins(b, arith.MinSIOp(safe, fl.index(size - 1)))
    valid = _ins(b, arith.CmpiOp(safe, row, "eq"))
    idx = list(at)
    idx[d] = safe
    value = b.insert(memref.LoadOp.get(src, idx)).res
    return _ins(b, arith.SelectOp(valid, value, missing))


def lower_gather(fl: FunctionLowering, op: GatherOp) -> None:
    out, src, idx = fl.result_buffer(op.result), fl.buffers[op.input], fl.buffers[op.indices]
    d, size = op.axis, irt.shape_of(op.input)[op.axis]

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        raw = b.insert(memref.LoadOp.get(idx, ivs)).res
        b.insert(memref.StoreOp.get(_clamped_load(fl, b, src, raw, size, ivs, d), out, ivs))

    fl.nest(irt.shape_of(op.result), describe(op), body)


def lower_index_select(fl: FunctionLowering, op: IndexSelectOp) -> None:
    out, src, idx = fl.result_buffer(op.result), fl.buffers[op.input], fl.buffers[op.indices]
    d, size = op.axis, irt.shape_of(op.input)[op.axis]

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        raw = b.insert(memref.LoadOp.get(idx, [ivs[d]])).res
        b.insert(memref.StoreOp.get(_clamped_load(fl, b, src, raw, size, ivs, d), out, ivs))

    fl.nest(irt.shape_of(op.result), describe(op), body)


def lower_triangle(fl: FunctionLowering, op: TriangleOp) -> None:
    """x where (j - i >= diagonal) for triu, (j - i <= diagonal) for tril, else zero."""
    out, src, t = fl.result_buffer(op.result), fl.buffers[op.input], irt.element_type(op.result)

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        diff = _ins(b, arith.SubiOp(ivs[-1], ivs[-2]))
        keep = _ins(b, arith.CmpiOp(diff, fl.index(op.offset), "sge" if op.UPPER else "sle"))
        value = b.insert(memref.LoadOp.get(src, ivs)).res
        b.insert(memref.StoreOp.get(_ins(b, arith.SelectOp(keep, value, irt.scalar_constant(b, 0, t))), out, ivs))

    fl.nest(irt.shape_of(op.result), describe(op), body)


def lower_size(fl: FunctionLowering, op: SizeOp) -> None:
    """The 0-d result holds the size, computed from the function's size arguments."""
    out = fl.result_buffer(op.result)
    n = fl.b.insert(arith.IndexCastOp(fl.index(op.value), i64)).result
    value = fl.b.insert(arith.SIToFPOp(n, f32)).result
    fl.b.insert(memref.StoreOp.get(value, out, []))

"""`irc-to-loops` for the ops of `dialects/irt_shape.py` (registered with `@lowers`), and their
reference evaluation on torch tensors (`@reference`).

Each is one copy kernel over its result (concat: one per input, writing at the input's offset):

* `irt.slice`: result[i] = input[offset + i * stride] per dimension (index arithmetic in the load);
* `irt.concat`: out[..., offset_k + i, ...] = input_k[..., i, ...];
* `irt.expand`: a broadcasting load (index 0 in the input's size-1 dimensions).
"""

from __future__ import annotations

from xdsl.builder import Builder
from xdsl.dialects import arith, memref
from xdsl.ir import SSAValue

from irc.dialects import irt
from irc.dialects.irt_shape import ConcatOp, ExpandOp, SliceOp
from irc.lowering.irc_to_loops import FunctionLowering, describe, lowers
from irc.reference import reference


def _offset_index(fl: FunctionLowering, b: Builder, iv: SSAValue, offset: int, stride: int, size: int) -> SSAValue:
    """offset + iv * stride, folded where it is a constant or the identity."""
    if size == 1:
        return fl.index(offset)
    if stride != 1:
        iv = b.insert(arith.MuliOp(iv, fl.index(stride))).result
    if offset != 0:
        iv = b.insert(arith.AddiOp(iv, fl.index(offset))).result
    return iv


@lowers(SliceOp)
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


@lowers(ConcatOp)
def lower_concat(fl: FunctionLowering, op: ConcatOp) -> None:
    out = fl.result_buffer(op.result)
    d, offset = op.axis, 0
    for k, x in enumerate(op.inputs):
        shape = irt.shape_of(x)

        def body(b: Builder, ivs: list[SSAValue], x=x, offset=offset, shape=shape) -> None:
            value = fl.load(b, x, ivs, shape)
            dst = list(ivs)
            dst[d] = _offset_index(fl, b, ivs[d], offset, 1, shape[d])
            b.insert(memref.StoreOp.get(value, out, dst))

        fl.nest(shape, f"{describe(op)} (input {k} at {offset})", body)
        offset += shape[d]


@lowers(ExpandOp)
def lower_expand(fl: FunctionLowering, op: ExpandOp) -> None:
    out = fl.result_buffer(op.result)
    shape = irt.shape_of(op.result)

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        b.insert(memref.StoreOp.get(fl.load(b, op.input, ivs, shape), out, ivs))

    fl.nest(shape, describe(op), body)


@reference(SliceOp)
def _slice(op: SliceOp, inputs):
    boxes = tuple(
        slice(off, off + (n - 1) * st + 1, st)
        for off, st, n in zip(op.static_offsets, op.static_strides, irt.shape_of(op.result))
    )
    return inputs[0][boxes]


@reference(ConcatOp)
def _concat(op: ConcatOp, inputs):
    import torch

    return torch.cat(inputs, op.axis)


@reference(ExpandOp)
def _expand(op: ExpandOp, inputs):
    return inputs[0].expand(irt.shape_of(op.result))

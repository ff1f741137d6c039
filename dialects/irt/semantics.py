"""What each `irt` op computes, on torch tensors: the meaning the loop lowering must reproduce.

`irc.reference.evaluate` runs these at compile time (folding what depends on parameters only:
a batch norm into a convolution's weights, a weight transposed or packed once) and tests use
them as an oracle independent of the C++ path.

Two tables, each op family's entries side by side:

* `ACCUMULATE`: ops with an epilogue (`EpilogueOp`: contractions, convolutions): the
  accumulated value before the epilogue, which the evaluator then interprets from the op's own
  `build_epilogue`;
* `REFERENCE`: every other non-elementwise op: its result.

Elementwise ops need no entry: their `build_scalar` body is the definition. A key covers its
subclasses (`ContractionBase`: linear, matmul, contract); the most derived entry wins.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from xdsl.ir import Operation

from irc.dialects.irt import core as irt, nn as irt_nn, reduce as irt_reduce, shape as irt_shape
from irc.dialects.symbolic import evaluate

Tensor = torch.Tensor
Semantics = Callable[[Operation, list[Tensor]], Tensor]

# ---------------------------------------------------------------------------------------------
# core
# ---------------------------------------------------------------------------------------------


def unpack(packed: Tensor, n: int) -> Tensor:
    """The [K, N] matrix held by `irt.pack ... "cols"` panels (or an nn.Linear weight transposed)."""
    panels, k, width = packed.shape
    return packed.permute(1, 0, 2).reshape(k, panels * width)[:, :n]


def _contraction(op: irt.ContractionBase, inputs: list[Tensor]) -> Tensor:
    lhs, rhs = inputs[0], inputs[1]
    kind = op.contraction_kind
    if kind == irt.ContractionKind.PACKED:
        return lhs @ unpack(rhs, irt.shape_of(op.results[0])[-1])
    return lhs @ (rhs.t() if kind == irt.ContractionKind.LINEAR else rhs)


def _reshape(op: irt.ReshapeOp, inputs: list[Tensor]) -> Tensor:
    return inputs[0].reshape(irt.shape_of(op.result))


def _transpose(op: irt.TransposeOp, inputs: list[Tensor]) -> Tensor:
    return inputs[0].permute(*op.permutation)


def _constant(op: irt.ConstantOp, inputs: list[Tensor]) -> Tensor:
    values = [float(v) for v in op.value.iter_values()]
    return torch.tensor(values, dtype=torch.float32).reshape(irt.shape_of(op.result))


WINOGRAD_G = ((1.0, 0.0, 0.0), (0.5, 0.5, 0.5), (0.5, -0.5, 0.5), (0.0, 0.0, 1.0))
"""F(2x2, 3x3)'s weight transform G (`irt.pack "winograd"`: U = G g G^T)."""


def _pack(op: irt.PackOp, inputs: list[Tensor]) -> Tensor:
    x = inputs[0]  # [D0, D1*D2*...], spelled out: reshape's -1 is ambiguous for an empty weight
    if op.axis.data == "winograd":
        _, panels, channels, width = irt.shape_of(op.result)
        g = torch.tensor(WINOGRAD_G, dtype=torch.float64)
        u = torch.einsum("ak,ockl,bl->aboc", g, x.double(), g).reshape(16, x.shape[0], channels).float()
        padded = u.new_zeros(16, panels * width, channels)
        padded[:, : x.shape[0]] = u
        return padded.reshape(16, panels, width, channels).transpose(2, 3).contiguous()
    w = x.reshape(x.shape[0], math.prod(x.shape[1:])) if op.axis.data == "rows" else x.t()
    panels, other, width = irt.shape_of(op.result)
    padded = w.new_zeros(panels * width, other)
    padded[: w.shape[0]] = w
    return padded.reshape(panels, width, other).transpose(1, 2).contiguous()


# ---------------------------------------------------------------------------------------------
# nn
# ---------------------------------------------------------------------------------------------


def _conv2d(op: irt_nn.Conv2dOp, inputs: list[Tensor]) -> Tensor:
    x, w = inputs[0], inputs[1]
    b = inputs[2 + (op.packed is not None)] if op.bias is not None else None
    return F.conv2d(x, w, b, op.strides, op.paddings, op.dilations, op.group_count)


def _max_pool2d(op: irt_nn.MaxPool2dOp, inputs: list[Tensor]) -> Tensor:
    return F.max_pool2d(inputs[0], op.kernels, op.strides, op.paddings, op.dilations, op.ceil_mode is not None)


def _avg_pool2d(op: irt_nn.AvgPool2dOp, inputs: list[Tensor]) -> Tensor:
    return F.avg_pool2d(
        inputs[0], op.kernels, op.strides, op.paddings, op.ceil_mode is not None, op.count_include_pad is not None
    )


def _adaptive_avg_pool2d(op: irt_nn.AdaptiveAvgPool2dOp, inputs: list[Tensor]) -> Tensor:
    return F.adaptive_avg_pool2d(inputs[0], irt.shape_of(op.result)[2:])


# ---------------------------------------------------------------------------------------------
# reduce
# ---------------------------------------------------------------------------------------------


def _reduce(op: irt_reduce.ReduceOp, inputs: list[Tensor]) -> Tensor:
    x, dims = inputs[0], list(op.reduce_dims)
    if op.reduce_kind == irt_reduce.ReduceKind.MAX:
        return torch.amax(x, dim=dims, keepdim=op.keeps_dims)
    fn = torch.sum if op.reduce_kind == irt_reduce.ReduceKind.SUM else torch.mean
    return fn(x, dim=dims, keepdim=op.keeps_dims)


def _softmax(op: irt_reduce.SoftmaxBase, inputs: list[Tensor]) -> Tensor:
    fn = torch.log_softmax if op.LOG else torch.softmax
    return fn(inputs[0], dim=op.axis)


def _layer_norm(op: irt_reduce.LayerNormOp, inputs: list[Tensor]) -> Tensor:
    x, rest = inputs[0], iter(inputs[1:])
    w = next(rest) if op.weight is not None else None
    bias = next(rest) if op.bias is not None else None
    n = op.normalized_rank
    return F.layer_norm(x, tuple(x.shape[x.dim() - n :]), w, bias, op.epsilon)


def _batch_matmul(op: irt_reduce.BatchMatmulOp, inputs: list[Tensor]) -> Tensor:
    lhs, rhs = inputs
    if op.contraction_kind == irt.ContractionKind.LINEAR:
        rhs = rhs.transpose(-2, -1)
    return torch.matmul(lhs, rhs)


def _cumsum(op: irt_reduce.CumsumOp, inputs: list[Tensor]) -> Tensor:
    return torch.cumsum(inputs[0], op.axis)


def _attention(op: irt_reduce.AttentionOp, inputs: list[Tensor]) -> Tensor:
    q, k, v = inputs[:3]
    scores = torch.matmul(q, k.transpose(-2, -1)) * op.scale_value
    if op.mask is not None:
        scores = scores + inputs[3]
    if op.causal:
        lq, lk = scores.shape[-2:]
        allowed = torch.ones(lq, lk, dtype=torch.bool).tril()
        scores = scores.masked_fill(~allowed, float("-inf"))
    p = torch.softmax(scores, dim=-1)
    if op.safe:  # a row masked whole: 0, not NaN
        p = p.masked_fill((scores == float("-inf")).all(dim=-1, keepdim=True), 0.0)
    return torch.matmul(p, v)


# ---------------------------------------------------------------------------------------------
# shape
# ---------------------------------------------------------------------------------------------


def _slice(op: irt_shape.SliceOp, inputs: list[Tensor]) -> Tensor:
    boxes = tuple(
        slice(off, off + (n - 1) * st + 1, st)
        for off, st, n in zip(op.offset_values, op.static_strides, irt.shape_of(op.result))
    )
    return inputs[0][boxes]


def _concat(op: irt_shape.ConcatOp, inputs: list[Tensor]) -> Tensor:
    return torch.cat(inputs, op.axis)


def _expand(op: irt_shape.ExpandOp, inputs: list[Tensor]) -> Tensor:
    return inputs[0].expand(irt.shape_of(op.result))


def _arange(op: irt_shape.ArangeOp, inputs: list[Tensor]) -> Tensor:
    (n,) = irt.shape_of(op.result)
    if irt.is_float(irt.element_type(op.result)):  # i * step + start in f32, as the loops compute it
        return torch.arange(n, dtype=torch.float32) * op.step_value + op.start_value
    return torch.arange(n, dtype=torch.int64) * int(op.step_value) + int(op.start_value)


def _missing(x: Tensor) -> Tensor:
    """What an index outside the input reads: NaN, or 0 / false."""
    return torch.tensor(float("nan") if x.is_floating_point() else 0, dtype=x.dtype)


def _gather(op: irt_shape.GatherOp, inputs: list[Tensor]) -> Tensor:
    x, idx, d = inputs[0], inputs[1], op.axis
    valid = (idx >= 0) & (idx < x.shape[d])
    taken = torch.gather(x, d, idx.clamp(0, max(x.shape[d] - 1, 0)))
    return torch.where(valid, taken, _missing(x))


def _index_select(op: irt_shape.IndexSelectOp, inputs: list[Tensor]) -> Tensor:
    x, idx, d = inputs[0], inputs[1], op.axis
    valid = ((idx >= 0) & (idx < x.shape[d])).reshape([-1 if k == d else 1 for k in range(x.dim())])
    taken = torch.index_select(x, d, idx.clamp(0, max(x.shape[d] - 1, 0)))
    return torch.where(valid, taken, _missing(x))


def _triangle(op: irt_shape.TriangleOp, inputs: list[Tensor]) -> Tensor:
    return (torch.triu if op.UPPER else torch.tril)(inputs[0], op.offset)
def _size(op: irt_shape.SizeOp, inputs: list[Tensor]) -> Tensor:
    """The expression with each symbol bound from the operand's actual shape."""
    dims = irt.shape_of(op.source)
    values = {d: n for d, n in zip(dims, inputs[0].shape) if not isinstance(d, int) and d.is_Symbol}
    return torch.tensor(float(evaluate(op.value, values)))


def _embedding(op: irt_shape.EmbeddingOp, inputs: list[Tensor]) -> Tensor:
    """Eager embedding, with the lowering's NaN rows for indices outside [0, V)."""
    idx, weight = inputs[0].to(torch.int64), inputs[1]
    valid = (idx >= 0) & (idx < weight.shape[0])
    rows = weight[idx.clamp(0, weight.shape[0] - 1)]
    return torch.where(valid.unsqueeze(-1), rows, torch.full_like(rows, float("nan")))


# ---------------------------------------------------------------------------------------------
# The tables
# ---------------------------------------------------------------------------------------------

ACCUMULATE: dict[type[Operation], Semantics] = {
    irt.ContractionBase: _contraction,
    irt_nn.Conv2dOp: _conv2d,
}
"""EpilogueOp -> its accumulated value, before the epilogue."""

REFERENCE: dict[type[Operation], Semantics] = {
    # core
    irt.ReshapeOp: _reshape,
    irt.TransposeOp: _transpose,
    irt.ConstantOp: _constant,
    irt.PackOp: _pack,
    # nn
    irt_nn.MaxPool2dOp: _max_pool2d,
    irt_nn.AvgPool2dOp: _avg_pool2d,
    irt_nn.AdaptiveAvgPool2dOp: _adaptive_avg_pool2d,
    # reduce
    irt_reduce.ReduceOp: _reduce,
    irt_reduce.SoftmaxBase: _softmax,
    irt_reduce.LayerNormOp: _layer_norm,
    irt_reduce.BatchMatmulOp: _batch_matmul,
    irt_reduce.AttentionOp: _attention,
    irt_reduce.CumsumOp: _cumsum,
    # shape
    irt_shape.SliceOp: _slice,
    irt_shape.ConcatOp: _concat,
    irt_shape.ExpandOp: _expand,
    irt_shape.EmbeddingOp: _embedding,
    irt_shape.ArangeOp: _arange,
    irt_shape.GatherOp: _gather,
    irt_shape.IndexSelectOp: _index_select,
    irt_shape.TriangleOp: _triangle,
    irt_shape.SizeOp: _size,
}
"""Every other non-elementwise op -> its result."""


def lookup(table: dict[type[Operation], Semantics], op: Operation) -> Semantics | None:
    """The entry for `op`'s class or its nearest base class in `table`."""
    for cls in type(op).__mro__:
        if cls in table:
            return table[cls]
    return None

"""What each `irt` op costs: FLOPs per forward and bytes per tensor, beside the dialect.

FLOPs count floating-point operations: a multiply-add is 2, an elementwise op counts the scalar
ops of its own body (so `gelu` costs what its formula costs), and an op with an epilogue adds
its epilogue body per output element to what `FLOPS` says its accumulation costs. The
accumulating and reducing ops' counts are dense upper bounds (a padded conv window or a causal
mask skips some of them). Views, literals and pure data movement cost 0; an op with no entry
(`irt.pack`) has no known cost.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from irc.dialects.irt import core as irt, nn as irt_nn, reduce as irt_reduce, shape as irt_shape

FlopsFn = Callable[[Operation], int]


def numel(value: SSAValue) -> int:
    return math.prod(irt.shape_of(value))


def nbytes(value: SSAValue) -> int:
    """Bytes of a tensor: 4 per float32, 8 per int64, 1 per bool."""
    return numel(value) * max(1, value.type.element_type.bitwidth // 8)  # type: ignore[attr-defined]


def _scalar_ops(build: Callable[[Builder, list[SSAValue]], SSAValue], types: int | Sequence[Attribute]) -> int:
    """Scalar ops in a body taking arguments of `types` (a count: f32 ones); constants are free."""
    block = Block(arg_types=[irt.f32] * types if isinstance(types, int) else list(types))
    build(Builder(InsertPoint.at_end(block)), list(block.args))
    return sum(1 for op in block.ops if not isinstance(op, arith.ConstantOp))


def _contraction_flops(op: irt.ContractionBase) -> int:
    return 2 * numel(op.results[0]) * irt.shape_of(op.lhs)[-1]


def _conv_flops(op: irt_nn.Conv2dOp) -> int:
    _, cin_per_group, kh, kw = irt.shape_of(op.weight)
    return 2 * numel(op.results[0]) * cin_per_group * kh * kw + (numel(op.results[0]) if op.bias else 0)


def _pool_flops(op: irt_nn.WindowPoolOp) -> int:
    kh, kw = op.kernels
    return numel(op.results[0]) * kh * kw


def _reduce_flops(op: Operation) -> int:
    return numel(op.operands[0])


def _softmax_flops(op: irt_reduce.SoftmaxBase) -> int:
    return 5 * numel(op.operands[0])  # max, exp, sum, sub, divide (or log)


def _layer_norm_flops(op: irt_reduce.LayerNormOp) -> int:
    return 8 * numel(op.operands[0])  # mean, centre, square, sum, scale, shift


def _batch_matmul_flops(op: irt_reduce.BatchMatmulOp) -> int:
    return 2 * numel(op.results[0]) * irt.shape_of(op.lhs)[-1]


def _attention_flops(op: irt_reduce.AttentionOp) -> int:
    *batch, lq, e = irt.shape_of(op.q)
    lk, ev = irt.shape_of(op.k)[-2], irt.shape_of(op.v)[-1]
    return math.prod(batch) * lq * lk * (2 * e + 2 * ev + 5)


def _no_flops(op: Operation) -> int:
    return 0


FLOPS: dict[type[Operation], FlopsFn] = {
    # core
    irt.ContractionBase: _contraction_flops,
    irt.ReshapeOp: _no_flops,
    irt.TransposeOp: _no_flops,
    irt.ConstantOp: _no_flops,
    # nn
    irt_nn.Conv2dOp: _conv_flops,
    irt_nn.WindowPoolOp: _pool_flops,
    irt_nn.AdaptiveAvgPool2dOp: _reduce_flops,
    # reduce
    irt_reduce.ReduceOp: _reduce_flops,
    irt_reduce.SoftmaxBase: _softmax_flops,
    irt_reduce.LayerNormOp: _layer_norm_flops,
    irt_reduce.BatchMatmulOp: _batch_matmul_flops,
    irt_reduce.AttentionOp: _attention_flops,
    irt_reduce.CumsumOp: _reduce_flops,
    # shape
    irt_shape.SliceOp: _no_flops,
    irt_shape.ConcatOp: _no_flops,
    irt_shape.ExpandOp: _no_flops,
    irt_shape.EmbeddingOp: _no_flops,
    irt_shape.ArangeOp: _no_flops,
    irt_shape.GatherOp: _no_flops,
    irt_shape.IndexSelectOp: _no_flops,
    irt_shape.TriangleOp: _no_flops,
    irt_shape.SizeOp: _no_flops,
}
"""Op (or op family base class) -> FLOPs of its accumulation, per forward (elementwise ops need
no entry: their body is counted)."""


def op_flops(op: Operation) -> int | None:
    """FLOPs of one irt op per forward, or None when irc does not know its cost."""
    if isinstance(op, irt.ElementwiseOp):
        types = [irt.element_type(v) for v in op.elementwise_inputs()]
        return numel(op.results[0]) * _scalar_ops(op.build_scalar, types)
    accumulate = next((FLOPS[c] for c in type(op).__mro__ if c in FLOPS), None)
    if accumulate is None:
        return None
    total = accumulate(op)
    if isinstance(op, irt.EpilogueOp):
        n = len(op.epilogue_inputs)
        total += numel(op.results[0]) * _scalar_ops(lambda b, a: op.build_epilogue(b, a[0], a[1:]), n + 1)
    return total

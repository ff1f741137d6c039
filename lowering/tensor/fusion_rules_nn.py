"""Fusion rules for the ops of `dialects/irt/nn.py`, in the form of `fusion_rules.py`.

| rule | consumer <- producer | constraints | result |
|---|---|---|---|
| `conv-batchnorm-fold` | batch_norm <- conv2d | x operand, single user, no epilogue, BN stats are params | conv2d, w', b' |

In inference a batch norm is a per-channel affine map, so after a convolution it folds into the
convolution's weights: with scale = gamma / sqrt(var + eps),

    w'[o] = w[o] * scale[o]        b' = (b - mean) * scale + beta     (b = 0 without a bias)

The rule writes w' and b' as ordinary irt ops on the parameters (`irt.elementwise`,
`irt.reshape`, `irt.mul`); `lowering/tensor/fold_params.py` evaluates them once at compile time, so the
batch norm costs nothing at run time. The rule fires only when BN's statistics and affine
parameters are function arguments or constants (or reshapes of them) (else w' would be recomputed per call), and only
into a conv without an epilogue (an activation between conv and BN does not commute with it).
When it does not fire, the generic `contraction-epilogue` rule still fuses the BN into the
conv's epilogue, per element.

Conv + bias + activation and conv + residual add + ReLU need no rule of their own: conv2d is an
`irt.EpilogueOp`, so the generic `contraction-epilogue` rule absorbs them.
"""

from __future__ import annotations

import math

from xdsl.builder import Builder
from xdsl.dialects import arith, math as xmath
from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from irc.dialects.irt import core as irt, nn as irt_nn
from irc.lowering.tensor.fusion_rules import FusionRule, single_user

# ---------------------------------------------------------------------------------------------
# Constraints
# ---------------------------------------------------------------------------------------------


def is_input(producer: Operation, consumer: Operation, index: int) -> bool:
    """The producer feeds the normalized operand x (not a statistic)."""
    return index == 0


def has_no_epilogue(producer: Operation, consumer: Operation, index: int) -> bool:
    """The conv stores its accumulator as is: nothing sits between its sum and the BN."""
    return isinstance(producer, irt_nn.Conv2dOp) and not producer.body.blocks


def _is_parameter(v: SSAValue) -> bool:
    """A function argument or a constant, possibly reshaped (the importer views [C] as [C, 1, 1])."""
    while isinstance(v.owner, irt.ReshapeOp):
        v = v.owner.input
    return isinstance(v, BlockArgument) or isinstance(v.owner, irt.ConstantOp)


def bn_params_are_parameters(producer: Operation, consumer: Operation, index: int) -> bool:
    """mean, var, gamma and beta are function arguments or constants (or views of them), each per channel (O
    elements) or a scalar, so w' and b' are computed once, at compile time."""
    assert isinstance(consumer, irt_nn.BatchNormOp)
    channels = irt.shape_of(producer.results[0])[1]
    stats = (consumer.mean, consumer.var, consumer.weight, consumer.bias)
    return all(
        _is_parameter(v) and math.prod(irt.shape_of(v)) in (channels, 1) for v in stats
    ) and all(math.prod(irt.shape_of(v)) == channels for v in (consumer.mean, consumer.var))


# ---------------------------------------------------------------------------------------------
# Combiner
# ---------------------------------------------------------------------------------------------


def _tensor(shape) -> TensorType:
    return TensorType(f32, list(shape))


def _flat(b: Builder, v: SSAValue, channels: int) -> SSAValue:
    """A per-channel value as [O] (a scalar stays rank-0 and broadcasts)."""
    while isinstance(v.owner, irt.ReshapeOp):  # see through the importer's [C] -> [C, 1, 1] view
        v = v.owner.input
    shape = irt.shape_of(v)
    if shape == (channels,) or math.prod(shape) == 1 and len(shape) == 0:
        return v
    if math.prod(shape) == 1:
        return b.insert(irt.ReshapeOp(v, _tensor(()))).result
    return b.insert(irt.ReshapeOp(v, _tensor((channels,)))).result


def _elementwise(b: Builder, inputs: list[SSAValue], shape, names: list[str], body) -> SSAValue:
    return b.insert(irt.ElementwiseFusedOp(inputs, _tensor(shape), irt.scalar_region(names, body))).result


def fold_batch_norm(producer: irt_nn.Conv2dOp, consumer: irt_nn.BatchNormOp, index: int) -> Operation:
    """conv2d(x, w, b) -> batch_norm  =>  conv2d(x, w * scale, (b - mean) * scale + beta)."""
    b = Builder(InsertPoint.before(consumer))
    o = irt.shape_of(producer.weight)[0]
    eps = consumer.epsilon
    mean, var, gamma, beta = (_flat(b, v, o) for v in (consumer.mean, consumer.var, consumer.weight, consumer.bias))

    def scale_body(sb: Builder, args):
        v, g = args
        root = sb.insert(xmath.SqrtOp(sb.insert(arith.AddfOp(v, irt.fconst(sb, eps))).result)).result
        return sb.insert(arith.DivfOp(g, root)).result

    scale = _elementwise(b, [var, gamma], (o,), ["var", "gamma"], scale_body)
    w_shape = irt.shape_of(producer.weight)
    scale4 = b.insert(irt.ReshapeOp(scale, _tensor((o, 1, 1, 1)))).result
    weight = b.insert(irt.MulOp(producer.weight, scale4, _tensor(w_shape))).result

    def bias_body(sb: Builder, args):
        m, s, beta_, *conv_bias = args
        centered = sb.insert(arith.SubfOp(conv_bias[0], m)).result if conv_bias else sb.insert(arith.NegfOp(m)).result
        return sb.insert(arith.AddfOp(sb.insert(arith.MulfOp(centered, s)).result, beta_)).result

    bias_inputs = [mean, scale, beta] + ([producer.bias] if producer.bias is not None else [])
    bias = _elementwise(b, bias_inputs, (o,), ["mean", "scale", "beta", "b"][: len(bias_inputs)], bias_body)
    for v, hint in ((scale, "bn_scale"), (weight, "folded_weight"), (bias, "folded_bias")):
        v.name_hint = hint
    return irt_nn.Conv2dOp(producer.input, weight, bias, consumer.result.type, **producer.geometry())


RULES: tuple[FusionRule, ...] = (
    FusionRule(
        "conv-batchnorm-fold",
        consumer=(irt_nn.BatchNormOp,),
        producer=(irt_nn.Conv2dOp,),
        where=(is_input, single_user, has_no_epilogue, bn_params_are_parameters),
        combine=fold_batch_norm,
        doc="batch_norm(conv2d(x, w, b)) -> conv2d(x, w * scale, (b - mean) * scale + beta), params folded at compile time",
    ),
)

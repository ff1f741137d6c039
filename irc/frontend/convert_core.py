"""FX converters for the core ops of `dialects/irt/core.py`.

relu, sigmoid, tanh, gelu, linear, dropout (eval), torchvision's stochastic_depth and drop_block
(eval: by qualified name, `LIBRARY_FUNCTIONS`), add/sub/mul/div
(folded when every operand is known at compile time; a constant splat operand passed as its
number), transpose/t; and nn.Linear, nn.ReLU, nn.Sigmoid, nn.Tanh, nn.GELU, nn.Flatten,
nn.Identity, nn.Dropout. (The reshapes are convert_shape's, the matmuls convert_reduce's.)
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.nn.functional as F
from torch import fx, nn
from xdsl.ir import SSAValue

from irc.dialects.irt import core as irt
from irc.frontend.convert_base import (
    Converter,
    ImportContext,
    Unsupported,
    accepts_ints,
    binary,
    identity,
    reshape,
    stateless_module,
    unary,
)
from irc.frontend.folding import folding, method_call, splats_as_scalars


def _gelu(imp: ImportContext, node: fx.Node, x, approximate: str = "none") -> SSAValue:
    if approximate not in ("none", "tanh"):
        raise Unsupported(f"approximate={approximate!r}")
    return imp.insert(irt.GeluOp(x, approximate))


@accepts_ints
def _dropout(imp: ImportContext, node: fx.Node, x, p=0.5, training=True, inplace=False) -> SSAValue:
    if training and p != 0:  # F.dropout(x, p=0.0) is x in training too (torchvision's Swin calls it so)
        raise Unsupported("dropout in training mode; compile the model in eval mode (model.eval())")
    return imp.tensor(x)


def _unless_training(imp: ImportContext, what: str, x, p, training) -> SSAValue:
    """`x`, for a library's regularizer that is its input outside training (irc compiles
    inference). Arguments torch would refuse (p outside [0, 1]) are Unsupported: the call then
    runs in eager PyTorch and raises there."""
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
        raise Unsupported(f"{what} with p={p!r}")
    if training and p != 0:
        raise Unsupported(f"{what} in training mode; compile the model in eval mode (model.eval())")
    return imp.tensor(x)


def _stochastic_depth(imp: ImportContext, node: fx.Node, x, p, mode, training=True) -> SSAValue:
    if mode not in ("batch", "row"):
        raise Unsupported(f"stochastic depth with mode={mode!r}")
    return _unless_training(imp, "stochastic depth", x, p, training)


def _drop_block(rank: int) -> Converter:
    def convert(imp: ImportContext, node: fx.Node, x, p, block_size, inplace=False, eps=1e-6, training=True):
        got = len(irt.shape_of(imp.tensor(x)))
        if got != rank:  # torchvision raises: the call runs in eager PyTorch, which does
            raise Unsupported(f"drop_block{rank - 2}d of a rank-{got} input")
        return _unless_training(imp, f"drop_block{rank - 2}d", x, p, training)

    return convert


LIBRARY_FUNCTIONS: dict[str, Converter] = {
    # torchvision keeps these as torch.fx leaves (torch.fx.wrap): EfficientNet, ConvNeXt, Swin and
    # MaxViT call stochastic_depth(x, p, mode, self.training) in every block
    "torchvision.ops.stochastic_depth.stochastic_depth": _stochastic_depth,
    "torchvision.ops.drop_block.drop_block2d": _drop_block(4),
    "torchvision.ops.drop_block.drop_block3d": _drop_block(5),
}
"""Functions of libraries irc does not import, by qualified name (`converters.function_converter`)."""


class _AutocastOff:
    """The value of `_enter_autocast(..., enabled=False)`: a region computing in float32 as it is."""


def _enter_autocast(imp: ImportContext, node: fx.Node, device_type, dtype=None, enabled=True, cache_enabled=None):
    """Dynamo's `with torch.autocast(...)`: a region with autocast disabled (Llama's rotary
    embedding) changes nothing in a float32 graph; one enabling it would compute in lower
    precision, which irc does not."""
    if enabled:
        raise Unsupported("an autocast region (lower-precision compute); irc computes in float32")
    return _AutocastOff()


def _exit_autocast(imp: ImportContext, node: fx.Node, state, *args):
    if not isinstance(state, _AutocastOff):
        raise Unsupported("the end of an autocast region irc did not take")
    return state


@accepts_ints
def _transpose(imp: ImportContext, node: fx.Node, x, dim0: int, dim1: int) -> SSAValue:
    x = imp.tensor(x)
    rank = len(irt.shape_of(x))
    perm = list(range(rank))
    d0, d1 = dim0 % rank, dim1 % rank
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return imp.insert(irt.TransposeOp(x, perm, imp.result_type(node)))


@accepts_ints
def _t(imp: ImportContext, node: fx.Node, x) -> SSAValue:
    x = imp.tensor(x)
    if len(irt.shape_of(x)) < 2:
        return x
    return _transpose(imp, node, x, 0, 1)


def _linear(imp: ImportContext, node: fx.Node, x, weight, bias=None) -> SSAValue:
    return imp.insert(irt.LinearOp(imp.tensor(x), imp.tensor(weight), bias, imp.result_type(node)))


def _linear_module(imp: ImportContext, node: fx.Node, mod: nn.Linear, x) -> SSAValue:
    bias = imp.param(mod.bias) if mod.bias is not None else None
    return imp.insert(irt.LinearOp(imp.tensor(x), imp.param(mod.weight), bias, imp.result_type(node)))


def _arithmetic(op_cls, eager: Any) -> Converter:
    """Python-level and torch arithmetic: folded when constant, a splat operand passed as its number."""
    return folding(splats_as_scalars(binary(op_cls)), eager)


FUNCTIONS: dict[Any, Converter] = {
    torch.relu: unary(irt.ReluOp),
    F.relu: unary(irt.ReluOp),
    torch.sigmoid: unary(irt.SigmoidOp),
    F.sigmoid: unary(irt.SigmoidOp),
    torch.tanh: unary(irt.TanhOp),
    F.tanh: unary(irt.TanhOp),
    F.gelu: _gelu,
    F.linear: _linear,
    F.dropout: _dropout,
    torch.add: _arithmetic(irt.AddOp, torch.add),
    operator.add: _arithmetic(irt.AddOp, operator.add),
    operator.iadd: _arithmetic(irt.AddOp, operator.iadd),
    operator.isub: _arithmetic(irt.SubOp, operator.isub),
    operator.imul: _arithmetic(irt.MulOp, operator.imul),
    operator.itruediv: _arithmetic(irt.DivOp, operator.itruediv),
    torch.sub: _arithmetic(irt.SubOp, torch.sub),
    operator.sub: _arithmetic(irt.SubOp, operator.sub),
    torch.mul: _arithmetic(irt.MulOp, torch.mul),
    operator.mul: _arithmetic(irt.MulOp, operator.mul),
    torch.div: _arithmetic(irt.DivOp, torch.div),
    operator.truediv: _arithmetic(irt.DivOp, operator.truediv),
    torch.transpose: _transpose,
    torch.swapaxes: _transpose,
    torch.swapdims: _transpose,
    torch.t: _t,
    torch.amp.autocast_mode._enter_autocast: _enter_autocast,
    torch.amp.autocast_mode._exit_autocast: _exit_autocast,
    **LIBRARY_FUNCTIONS,
}

METHODS: dict[str, Converter] = {
    "relu": unary(irt.ReluOp),
    "sigmoid": unary(irt.SigmoidOp),
    "tanh": unary(irt.TanhOp),
    "add": folding(binary(irt.AddOp), method_call("add")),
    "sub": folding(binary(irt.SubOp), method_call("sub")),
    "mul": folding(binary(irt.MulOp), method_call("mul")),
    "div": folding(binary(irt.DivOp), method_call("div")),
    "t": folding(_t, method_call("t")),
    "transpose": folding(_transpose, method_call("transpose")),
    "swapaxes": folding(_transpose, method_call("swapaxes")),
    "swapdims": folding(_transpose, method_call("swapdims")),
}

MODULES: dict[type, Converter] = {
    nn.Linear: _linear_module,
    nn.ReLU: stateless_module(unary(irt.ReluOp)),
    nn.Sigmoid: stateless_module(unary(irt.SigmoidOp)),
    nn.Tanh: stateless_module(unary(irt.TanhOp)),
    nn.GELU: lambda imp, node, mod, x: _gelu(imp, node, x, mod.approximate),
    nn.Flatten: stateless_module(reshape),
    nn.Identity: stateless_module(identity),
    nn.Dropout: lambda imp, node, mod, x: _dropout(imp, node, x, training=mod.training),
}

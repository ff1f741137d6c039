"""FX converters for the ops of `dialects/irt/math.py` (this family's `FUNCTIONS`, `METHODS`, `MODULES`).

torch.X, F.X, Tensor.X and the nn modules of: exp, log, sqrt, rsqrt, neg, abs, cos, sin,
pow/square by a scalar exponent, clamp/clip/hardtanh with scalar bounds, relu6, leaky_relu, silu,
hardswish, hardsigmoid, and where/masked_fill: a mask computed at run time is a bool tensor
(`irt.where` on i1), one known at compile time a constant folded to 0.0/1.0 f32; the values
take the result's dtype (float32, int64 or bool). neg also takes int64 tensors. Arguments
that are all compile-time values (Python numbers, constant tensors) are evaluated right away
with torch (`folding`) for exp, log, sqrt, rsqrt, neg, abs, pow, clamp, where and masked_fill;
the others (cos, sin, negative, square, clip ...) take a constant as an `irt.constant` operand.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.nn.functional as F
from torch import fx, nn
from xdsl.ir import SSAValue

from irc.dialects.irt import math as m
from irc.frontend.convert_base import (
    Converter,
    ImportContext,
    Unsupported,
    accepts_ints,
    dtype_of,
    dtype_of_type,
    stateless_module,
    unary,
)
from irc.frontend.folding import folding, method_call


def _number(value: Any, what: str) -> float:
    if isinstance(value, SSAValue):
        raise Unsupported(f"{what} must be a Python number known at compile time, not a tensor computed at run time")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Unsupported(f"{what} must be a Python number known at compile time, got {type(value).__name__}")
    return float(value)


def _pow(imp: ImportContext, node: fx.Node, x, exponent) -> SSAValue:
    if not isinstance(x, SSAValue):
        raise Unsupported("a tensor exponent (number ** tensor); irc supports tensor ** number")
    return imp.insert(m.PowOp(x, _number(exponent, "the exponent")))


def _square(imp: ImportContext, node: fx.Node, x) -> SSAValue:
    return imp.insert(m.PowOp(imp.tensor(x), 2.0))


@accepts_ints
def _clamp(imp: ImportContext, node: fx.Node, x, min=None, max=None) -> SSAValue:
    """clamp of a float32 tensor, or of an int64 one by integer bounds (up to 2**24)."""
    if min is None and max is None:
        raise Unsupported("clamp without min or max")
    lo = None if min is None else _number(min, "clamp's min")
    hi = None if max is None else _number(max, "clamp's max")
    x = imp.tensor(x)
    if dtype_of(x) != torch.float32:
        bounds = [v for v in (lo, hi) if v is not None]
        if dtype_of(x) == torch.bool or dtype_of_type(imp.result_type(node)) != dtype_of(x):
            raise Unsupported(f"clamp of a {dtype_of(x)} tensor to {imp.result_type(node)}")
        if not all(v.is_integer() and abs(v) <= 2**24 for v in bounds):
            raise Unsupported(f"clamp of an int64 tensor by {bounds} (irc takes integer bounds up to 2**24)")
    return imp.insert(m.ClampOp(x, lo, hi))


def _hardtanh(imp: ImportContext, node: fx.Node, x, min_val=-1.0, max_val=1.0, inplace=False) -> SSAValue:
    return _clamp(imp, node, x, min_val, max_val)


def _leaky_relu(imp: ImportContext, node: fx.Node, x, negative_slope=0.01, inplace=False) -> SSAValue:
    return imp.insert(m.LeakyReluOp(imp.tensor(x), _number(negative_slope, "negative_slope")))


def _activation(op_cls):
    """F.relu6/silu/hardswish/hardsigmoid(x, inplace=False): in place or not, the same value."""

    def convert(imp: ImportContext, node: fx.Node, x, inplace=False) -> SSAValue:
        return imp.insert(op_cls(imp.tensor(x)))

    return convert


def constant_mask(mask: Any) -> torch.Tensor:
    """A compile-time mask as a 0.0/1.0 float32 tensor."""
    if isinstance(mask, bool):
        mask = torch.tensor(mask)
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        raise Unsupported(f"the condition must be a bool tensor, got {type(mask).__name__}")
    return mask.to(torch.float32)


def _condition(imp: ImportContext, mask: Any) -> SSAValue:
    """A run-time mask as a bool tensor (x != 0 for another dtype), a compile-time one folded
    to a 0.0/1.0 f32 constant."""
    if isinstance(mask, SSAValue):
        return imp.tensor(mask, torch.bool)
    return imp.tensor(constant_mask(mask))


@accepts_ints
def _where(imp: ImportContext, node: fx.Node, cond, a=None, b=None) -> SSAValue:
    if a is None or b is None:
        raise Unsupported("torch.where(cond) with one argument (indices of nonzeros)")
    t = imp.result_type(node)
    c, dtype = _condition(imp, cond), dtype_of_type(t)
    return imp.insert(m.WhereOp(c, imp.tensor(a, dtype), imp.tensor(b, dtype), t))


@accepts_ints
def _masked_fill(imp: ImportContext, node: fx.Node, x, mask, value) -> SSAValue:
    t = imp.result_type(node)
    cond = _condition(imp, mask)  # before the fill value: the order the constants print in
    if isinstance(value, torch.Tensor) and value.dim() == 0:
        value = value.item()
    if not isinstance(value, SSAValue):
        value = _number(value, "the fill value") if not isinstance(value, bool) else value
    elif irt_rank(value):
        raise Unsupported("masked_fill with a fill tensor of rank > 0")
    dtype = dtype_of_type(t)
    return imp.insert(m.WhereOp(cond, imp.tensor(value, dtype), imp.tensor(x, dtype), t))


def irt_rank(value: SSAValue) -> int:
    return len(value.type.get_shape())  # type: ignore[attr-defined]


@accepts_ints
def _neg(imp: ImportContext, node: fx.Node, x, *rest, **kwargs) -> SSAValue:
    """-x of a float32 or int64 tensor (eager refuses bool)."""
    x = imp.tensor(x)
    if dtype_of(x) == torch.bool:
        raise Unsupported("negation of a bool tensor (eager raises too)")
    return imp.insert(m.NegOp(x))


UNARY = {
    "exp": m.ExpOp,
    "log": m.LogOp,
    "sqrt": m.SqrtOp,
    "rsqrt": m.RsqrtOp,
    "neg": m.NegOp,
    "negative": m.NegOp,
    "abs": m.AbsOp,
    "cos": m.CosOp,
    "sin": m.SinOp,
}

FOLDED = ("exp", "log", "sqrt", "rsqrt", "neg", "abs")
"""The UNARY functions and methods evaluated at compile time on constant arguments."""


def _unary_op(name: str, fold: Any) -> Converter:
    if UNARY[name] is m.NegOp:
        return folding(_neg, fold)
    return folding(unary(UNARY[name]), fold) if name in FOLDED else unary(UNARY[name])


FUNCTIONS: dict[Any, Converter] = {
    **{getattr(torch, name): _unary_op(name, getattr(torch, name)) for name in UNARY},
    operator.neg: folding(_neg, operator.neg),
    operator.pow: folding(_pow, operator.pow),
    torch.pow: folding(_pow, torch.pow),
    torch.square: _square,
    torch.clamp: folding(_clamp, torch.clamp),
    torch.clip: _clamp,
    F.hardtanh: _hardtanh,
    F.relu6: _activation(m.Relu6Op),
    F.silu: _activation(m.SiluOp),
    F.hardswish: _activation(m.HardswishOp),
    F.hardsigmoid: _activation(m.HardsigmoidOp),
    F.leaky_relu: _leaky_relu,
    torch.where: folding(_where, torch.where),
    torch.masked_fill: folding(_masked_fill, torch.masked_fill),
}
METHODS: dict[str, Converter] = {
    **{name: _unary_op(name, method_call(name)) for name in UNARY},
    "pow": folding(_pow, method_call("pow")),
    "square": _square,
    "clamp": folding(_clamp, method_call("clamp")),
    "clip": _clamp,
    "masked_fill": folding(_masked_fill, method_call("masked_fill")),
    "where": accepts_ints(lambda imp, node, x, cond, other: _where(imp, node, cond, x, other)),
}
MODULES: dict[type, Converter] = {
    nn.ReLU6: stateless_module(unary(m.Relu6Op)),
    nn.SiLU: stateless_module(unary(m.SiluOp)),
    nn.Hardswish: stateless_module(unary(m.HardswishOp)),
    nn.Hardsigmoid: stateless_module(unary(m.HardsigmoidOp)),
    nn.LeakyReLU: lambda imp, node, mod, x: _leaky_relu(imp, node, x, mod.negative_slope),
    nn.Hardtanh: lambda imp, node, mod, x: _hardtanh(imp, node, x, mod.min_val, mod.max_val),
}

"""FX converters for the ops of `dialects/irt/math.py` (this family's `FUNCTIONS`, `METHODS`, `MODULES`).

torch.X, F.X, Tensor.X and the nn modules of: exp, log, sqrt, rsqrt, neg, abs, cos, sin,
pow/square by a scalar exponent, clamp/clip/hardtanh/clamp_min/clamp_max with scalar bounds, relu6,
leaky_relu, silu, hardswish, hardsigmoid; softplus, mish, logsigmoid, elu, selu and celu as
compositions of these (exp, log, where and arithmetic); and where/masked_fill: a mask computed at run time is a bool tensor
(`irt.where` on i1), one known at compile time a constant folded to 0.0/1.0 f32; the values
take the result's dtype (float32, int64 or bool). neg also takes int64 tensors. Arguments
that are all compile-time values (Python numbers, constant tensors) are evaluated right away
with torch (`folding`) for exp, log, sqrt, rsqrt, neg, abs, pow, clamp, where and masked_fill;
the others (cos, sin, negative, square, clip ...) take a constant as an `irt.constant` operand.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import torch
import torch.nn.functional as F
from torch import fx, nn
from xdsl.ir import SSAValue

from irc.dialects.irt import core as irt, math as m
from irc.dialects.irt.logic import CmpOp
from irc.frontend.convert_base import (
    Converter,
    ImportContext,
    Unsupported,
    accepts_ints,
    dtype_of,
    dtype_of_type,
    stateless_module,
    tensor_type,
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


def _clamp_min(imp: ImportContext, node: fx.Node, x, min) -> SSAValue:
    return _clamp(imp, node, x, min, None)


def _clamp_max(imp: ImportContext, node: fx.Node, x, max) -> SSAValue:
    return _clamp(imp, node, x, None, max)


# Activations made of exp and log: irt ops the fusion puts in one elementwise kernel. torch computes
# them with expm1 and log1p, whose small results exp(x) - 1 and log(1 + u) would lose (all of
# softplus(-30) = 9.4e-14, to 0); `_expm1` and `_log1p` keep them.


def _op(imp: ImportContext, op_cls, a: SSAValue, b: Any) -> SSAValue:
    return imp.insert(op_cls(a, imp.tensor(b), a.type))


def _cmp(imp: ImportContext, predicate: str, a: SSAValue, b: Any) -> SSAValue:
    return imp.insert(CmpOp(predicate, a, imp.tensor(b), tensor_type(irt.shape_of(a), torch.bool)))


def _select(imp: ImportContext, cond: SSAValue, a: Any, b: Any, like: SSAValue) -> SSAValue:
    return imp.insert(m.WhereOp(cond, imp.tensor(a), imp.tensor(b), like.type))


def _expm1(imp: ImportContext, x: SSAValue) -> SSAValue:
    """exp(x) - 1: for |x| < 1/2, where the subtraction would cancel, x + x^2 (1/2! + x/3! + ...
    + x^7/9!), whose next term is below 7e-10 of the result; elsewhere exp(x) - 1 itself (-1,
    inf at the ends). Arithmetic besides the one exp, so the activation stays one kernel."""
    poly = imp.tensor(1.0 / math.factorial(9))
    for k in range(8, 1, -1):
        poly = _op(imp, irt.AddOp, imp.insert(irt.MulOp(poly, x, x.type)), 1.0 / math.factorial(k))
    small = imp.insert(irt.AddOp(x, imp.insert(irt.MulOp(imp.insert(irt.MulOp(x, x, x.type)), poly, x.type)), x.type))
    um1 = _op(imp, irt.SubOp, imp.insert(m.ExpOp(x)), 1.0)
    return _select(imp, _cmp(imp, "lt", imp.insert(m.AbsOp(x)), 0.5), small, um1, x)


def _log1p(imp: ImportContext, u: SSAValue) -> SSAValue:
    """log(1 + u) for u >= 0: below 1, log(w) u / (w - 1) with w = 1 + u (Goldberg: the rounding
    error of 1 + u divides out), u where w rounds to 1; from 1 on log(w) itself, which loses
    nothing there (and the quotient would overflow)."""
    w = _op(imp, irt.AddOp, u, 1.0)
    log_w = imp.insert(m.LogOp(w))
    r = imp.insert(irt.DivOp(imp.insert(irt.MulOp(log_w, u, u.type)), _op(imp, irt.SubOp, w, 1.0), u.type))
    r = _select(imp, _cmp(imp, "eq", w, 1.0), u, r, u)
    return _select(imp, _cmp(imp, "lt", u, 1.0), r, log_w, u)


def _softplus_of(imp: ImportContext, x: SSAValue, beta: Any = 1.0, threshold: Any = 20.0) -> SSAValue:
    """log(1 + exp(beta x)) / beta; x itself where beta x > threshold, as torch does."""
    beta, threshold = _number(beta, "softplus's beta"), _number(threshold, "softplus's threshold")
    bx = x if beta == 1.0 else _op(imp, irt.MulOp, x, beta)
    sp = _log1p(imp, imp.insert(m.ExpOp(bx)))
    sp = sp if beta == 1.0 else _op(imp, irt.DivOp, sp, beta)
    return imp.insert(m.WhereOp(_cmp(imp, "gt", bx, threshold), x, sp, x.type))


def _softplus(imp: ImportContext, node: fx.Node, x, beta=1.0, threshold=20.0) -> SSAValue:
    return _softplus_of(imp, imp.tensor(x), beta, threshold)


def _logsigmoid(imp: ImportContext, node: fx.Node, x) -> SSAValue:
    """log(sigmoid(x)) = -softplus(-x)."""
    return imp.insert(m.NegOp(_softplus_of(imp, imp.insert(m.NegOp(imp.tensor(x))))))


def _mish(imp: ImportContext, node: fx.Node, x, inplace=False) -> SSAValue:
    """x tanh(softplus(x))."""
    x = imp.tensor(x)
    return imp.insert(irt.MulOp(x, imp.insert(irt.TanhOp(_softplus_of(imp, x))), x.type))


def _elu_of(imp: ImportContext, x: SSAValue, alpha: float, scale: float = 1.0, input_scale: float = 1.0) -> SSAValue:
    """scale x where x > 0, else scale alpha (exp(input_scale x) - 1): elu, selu and celu."""
    neg = _expm1(imp, x if input_scale == 1.0 else _op(imp, irt.MulOp, x, input_scale))
    neg = _op(imp, irt.MulOp, neg, alpha * scale)
    pos = x if scale == 1.0 else _op(imp, irt.MulOp, x, scale)
    return imp.insert(m.WhereOp(_cmp(imp, "gt", x, 0.0), pos, neg, x.type))


def _elu(imp: ImportContext, node: fx.Node, x, alpha=1.0, inplace=False) -> SSAValue:
    return _elu_of(imp, imp.tensor(x), _number(alpha, "elu's alpha"))


def _celu(imp: ImportContext, node: fx.Node, x, alpha=1.0, inplace=False) -> SSAValue:
    alpha = _number(alpha, "celu's alpha")
    if alpha == 0.0:
        raise Unsupported("celu with alpha 0 (eager raises too)")
    return _elu_of(imp, imp.tensor(x), alpha, input_scale=1.0 / alpha)


SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _selu(imp: ImportContext, node: fx.Node, x, inplace=False) -> SSAValue:
    return _elu_of(imp, imp.tensor(x), SELU_ALPHA, SELU_SCALE)


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
    torch.clamp_min: _clamp_min,
    torch.clamp_max: _clamp_max,
    F.softplus: _softplus,
    torch._C._nn.softplus: _softplus,
    F.mish: _mish,
    F.logsigmoid: _logsigmoid,
    F.elu: _elu,
    F.celu: _celu,
    torch.celu: _celu,
    F.selu: _selu,
    torch.selu: _selu,
    torch.where: folding(_where, torch.where),
    torch.masked_fill: folding(_masked_fill, torch.masked_fill),
}
METHODS: dict[str, Converter] = {
    **{name: _unary_op(name, method_call(name)) for name in UNARY},
    "pow": folding(_pow, method_call("pow")),
    "square": _square,
    "clamp": folding(_clamp, method_call("clamp")),
    "clip": _clamp,
    "clamp_min": _clamp_min,
    "clamp_max": _clamp_max,
    "masked_fill": folding(_masked_fill, method_call("masked_fill")),
    "where": accepts_ints(lambda imp, node, x, cond, other: _where(imp, node, cond, x, other)),
}
MODULES: dict[type, Converter] = {
    nn.ReLU6: stateless_module(unary(m.Relu6Op)),
    nn.SiLU: stateless_module(unary(m.SiluOp)),
    nn.Hardswish: stateless_module(unary(m.HardswishOp)),
    nn.Hardsigmoid: stateless_module(unary(m.HardsigmoidOp)),
    nn.Softplus: lambda imp, node, mod, x: _softplus(imp, node, x, mod.beta, mod.threshold),
    nn.Mish: stateless_module(_mish),
    nn.LogSigmoid: stateless_module(_logsigmoid),
    nn.ELU: lambda imp, node, mod, x: _elu(imp, node, x, mod.alpha),
    nn.CELU: lambda imp, node, mod, x: _celu(imp, node, x, mod.alpha),
    nn.SELU: stateless_module(_selu),
    nn.LeakyReLU: lambda imp, node, mod, x: _leaky_relu(imp, node, x, mod.negative_slope),
    nn.Hardtanh: lambda imp, node, mod, x: _hardtanh(imp, node, x, mod.min_val, mod.max_val),
}

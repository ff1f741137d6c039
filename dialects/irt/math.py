"""`irt` ops: elementwise math beyond the core.

exp, log, sqrt, rsqrt, neg, abs, cos, sin, relu6, silu, hardswish, hardsigmoid (one op each,
`%y = irt.exp %x : tensor<4xf32>`), and the parametrized pow, clamp, leaky_relu and where:

    %y = irt.pow %x exponent 3.000000e+00 : tensor<4xf32>
    %y = irt.clamp %x min -1.000000e+00 max 1.000000e+00 : tensor<4xf32>
    %y = irt.leaky_relu %x slope 1.000000e-02 : tensor<4xf32>
    %y = irt.where %c, %a, %b : (tensor<4xi1>, tensor<f32>, tensor<4xf32>) -> tensor<4xf32>

Each is an `irt.ElementwiseOp` defining `build_scalar`, so fusion, lowering and the reference
evaluator handle it with no further code. The scalar bodies follow PyTorch's CPU kernels where
it matters: clamp/relu6/hardswish use `arith.maximumf`/`minimumf`, which propagate NaN as torch
does, and pow by 0.5, 2, 3, -0.5, -1, -2 uses the same special forms as torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.builder import Builder
from xdsl.dialects import arith, math as xmath
from xdsl.dialects.builtin import FloatAttr, TensorType, f32, i1
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    AnyAttr,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from irc.dialects.irt.core import (
    ELEMENT_TYPES,
    NUMERIC_TYPES,
    ElementwiseOp,
    UnaryOp,
    _check_same_element_type,
    _check_tensor,
    _fmt,
    _relu,
    fconst,
    is_float,
    scalar_constant,
    shape_of,
)

# ---------------------------------------------------------------------------------------------
# Scalar helpers
# ---------------------------------------------------------------------------------------------


def _ins(b: Builder, op: Operation) -> SSAValue:
    return b.insert(op).results[0]


def _max(b: Builder, x: SSAValue, c: float) -> SSAValue:
    return _ins(b, arith.MaximumfOp(x, fconst(b, c)))


def _min(b: Builder, x: SSAValue, c: float) -> SSAValue:
    return _ins(b, arith.MinimumfOp(x, fconst(b, c)))


def _mul(b: Builder, x: SSAValue, y: SSAValue) -> SSAValue:
    return _ins(b, arith.MulfOp(x, y))


def _div(b: Builder, x: SSAValue, y: SSAValue) -> SSAValue:
    return _ins(b, arith.DivfOp(x, y))


def _relu6(b: Builder, x: SSAValue) -> SSAValue:
    """min(max(x, 0), 6): NaN stays NaN, as in torch."""
    return _min(b, _relu(b, x), 6.0)


def _hardsigmoid_times6(b: Builder, x: SSAValue) -> SSAValue:
    """min(max(x + 3, 0), 6), the common part of hardsigmoid and hardswish."""
    return _relu6(b, _ins(b, arith.AddfOp(x, fconst(b, 3.0))))


def _f32(value: float) -> FloatAttr:
    return FloatAttr(float(value), f32)


# ---------------------------------------------------------------------------------------------
# Unary ops without parameters
# ---------------------------------------------------------------------------------------------


@irdl_op_definition
class ExpOp(UnaryOp):
    """e^x.   %y = irt.exp %x : tensor<4xf32>"""

    name = "irt.exp"

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        return _ins(b, xmath.ExpOp(args[0]))


@irdl_op_definition
class LogOp(UnaryOp):
    """Natural logarithm.   %y = irt.log %x : tensor<4xf32>"""

    name = "irt.log"

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        return _ins(b, xmath.LogOp(args[0]))


@irdl_op_definition
class SqrtOp(UnaryOp):
    """Square root.   %y = irt.sqrt %x : tensor<4xf32>"""

    name = "irt.sqrt"

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        return _ins(b, xmath.SqrtOp(args[0]))


@irdl_op_definition
class RsqrtOp(UnaryOp):
    """1 / sqrt(x), computed as torch's CPU kernel does.   %y = irt.rsqrt %x : tensor<4xf32>"""

    name = "irt.rsqrt"

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        return _div(b, fconst(b, 1.0), _ins(b, xmath.SqrtOp(args[0])))


@irdl_op_definition
class NegOp(UnaryOp):
    """-x, of f32 or i64 (0 - x, wrapping as torch does).   %y = irt.neg %x : tensor<4xf32>"""

    name = "irt.neg"

    def verify_element_types(self) -> None:
        _check_same_element_type(self, (("the input", self.input), ("the result", self.result)), NUMERIC_TYPES)

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        x = args[0]
        if is_float(x.type):
            return _ins(b, arith.NegfOp(x))
        return _ins(b, arith.SubiOp(scalar_constant(b, 0, x.type), x))


@irdl_op_definition
class AbsOp(UnaryOp):
    """|x|.   %y = irt.abs %x : tensor<4xf32>"""

    name = "irt.abs"

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        return _ins(b, xmath.AbsFOp(args[0]))


@irdl_op_definition
class CosOp(UnaryOp):
    """cos(x).   %y = irt.cos %x : tensor<4xf32>"""

    name = "irt.cos"

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        return _ins(b, xmath.CosOp(args[0]))


@irdl_op_definition
class SinOp(UnaryOp):
    """sin(x).   %y = irt.sin %x : tensor<4xf32>"""

    name = "irt.sin"

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        return _ins(b, xmath.SinOp(args[0]))


@irdl_op_definition
class Relu6Op(UnaryOp):
    """min(max(x, 0), 6).   %y = irt.relu6 %x : tensor<4xf32>"""

    name = "irt.relu6"

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        return _relu6(b, args[0])


@irdl_op_definition
class SiluOp(UnaryOp):
    """x * sigmoid(x), as x / (1 + exp(-x)) like torch.   %y = irt.silu %x : tensor<4xf32>"""

    name = "irt.silu"

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        x = args[0]
        e = _ins(b, xmath.ExpOp(_ins(b, arith.NegfOp(x))))
        return _div(b, x, _ins(b, arith.AddfOp(fconst(b, 1.0), e)))


@irdl_op_definition
class HardswishOp(UnaryOp):
    """x * min(max(x + 3, 0), 6) / 6.   %y = irt.hardswish %x : tensor<4xf32>"""

    name = "irt.hardswish"

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        return _div(b, _mul(b, args[0], _hardsigmoid_times6(b, args[0])), fconst(b, 6.0))


@irdl_op_definition
class HardsigmoidOp(UnaryOp):
    """min(max(x + 3, 0), 6) / 6.   %y = irt.hardsigmoid %x : tensor<4xf32>"""

    name = "irt.hardsigmoid"

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        return _div(b, _hardsigmoid_times6(b, args[0]), fconst(b, 6.0))


# ---------------------------------------------------------------------------------------------
# Parametrized ops
# ---------------------------------------------------------------------------------------------


class _ScalarParamOp(ElementwiseOp):
    """A unary elementwise op with f32 scalar properties (common operand/result/traits)."""

    T: ClassVar = VarConstraint("T", AnyAttr())
    input = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())


@irdl_op_definition
class PowOp(_ScalarParamOp):
    """x ** exponent for a scalar exponent.   %y = irt.pow %x exponent 2.000000e+00 : tensor<4xf32>

    Exponents 0, 0.5, 1, 2, 3, -0.5, -1 and -2 use multiplications/sqrt as torch's kernel does;
    others call powf."""

    name = "irt.pow"
    exponent = prop_def(FloatAttr.constr(f32))
    assembly_format = "$input `exponent` $exponent attr-dict `:` type($result)"

    def __init__(self, input: SSAValue | Operation, exponent: float):
        v = SSAValue.get(input)
        super().__init__(operands=[v], result_types=[v.type], properties={"exponent": _f32(exponent)})

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        x, e = args[0], self.exponent.value.data
        one = lambda: fconst(b, 1.0)  # noqa: E731
        special = {
            0.0: lambda: one(),
            1.0: lambda: x,
            2.0: lambda: _mul(b, x, x),
            3.0: lambda: _mul(b, _mul(b, x, x), x),
            0.5: lambda: _ins(b, xmath.SqrtOp(x)),
            -0.5: lambda: _div(b, one(), _ins(b, xmath.SqrtOp(x))),
            -1.0: lambda: _div(b, one(), x),
            -2.0: lambda: _div(b, one(), _mul(b, x, x)),
        }
        if e in special:
            return special[e]()
        return _ins(b, xmath.PowFOp(x, fconst(b, e)))


@irdl_op_definition
class ClampOp(_ScalarParamOp):
    """min(max(x, min), max), either bound optional; NaN stays NaN as in torch.clamp. On i64 the
    bounds are integers (held as f32: exact up to 2**24).

        %y = irt.clamp %x min -1.000000e+00 max 1.000000e+00 : tensor<4xf32>
    """

    name = "irt.clamp"
    min = opt_prop_def(FloatAttr.constr(f32))
    max = opt_prop_def(FloatAttr.constr(f32))
    assembly_format = "$input (`min` $min^)? (`max` $max^)? attr-dict `:` type($result)"

    def __init__(self, input: SSAValue | Operation, min: float | None = None, max: float | None = None):
        v = SSAValue.get(input)
        props = {k: _f32(x) for k, x in (("min", min), ("max", max)) if x is not None}
        super().__init__(operands=[v], result_types=[v.type], properties=props)

    def verify_element_types(self) -> None:
        _check_same_element_type(self, (("the input", self.input), ("the result", self.result)), NUMERIC_TYPES)

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        x = args[0]
        if not is_float(x.type):  # integer bounds
            if self.min is not None:
                x = _ins(b, arith.MaxSIOp(x, scalar_constant(b, int(self.min.value.data), x.type)))
            if self.max is not None:
                x = _ins(b, arith.MinSIOp(x, scalar_constant(b, int(self.max.value.data), x.type)))
            return x
        if self.min is not None:
            x = _max(b, x, self.min.value.data)
        if self.max is not None:
            x = _min(b, x, self.max.value.data)
        return x

    def verify_(self) -> None:
        super().verify_()
        bounds = [a.value.data for a in (self.min, self.max) if a is not None]
        if not is_float(self.input.type.element_type) and not all(v.is_integer() for v in bounds):
            raise VerifyException(f"irt.clamp: an i64 clamp needs integer bounds, got {bounds}")
        if self.min is None and self.max is None:
            raise VerifyException(
                f"irt.clamp: at least one of min and max is required (input {_fmt(shape_of(self.input))})"
            )


@irdl_op_definition
class LeakyReluOp(_ScalarParamOp):
    """x if x > 0 else slope * x, as max(x, 0) + slope * min(x, 0).

        %y = irt.leaky_relu %x slope 1.000000e-02 : tensor<4xf32>
    """

    name = "irt.leaky_relu"
    negative_slope = prop_def(FloatAttr.constr(f32))
    assembly_format = "$input `slope` $negative_slope attr-dict `:` type($result)"

    def __init__(self, input: SSAValue | Operation, negative_slope: float = 0.01):
        v = SSAValue.get(input)
        super().__init__(
            operands=[v], result_types=[v.type], properties={"negative_slope": _f32(negative_slope)}
        )

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        x = args[0]
        neg = _mul(b, _min(b, x, 0.0), fconst(b, self.negative_slope.value.data))
        return _ins(b, arith.AddfOp(_relu(b, x), neg))


@irdl_op_definition
class WhereOp(ElementwiseOp):
    """cond ? a : b per element, all three broadcast to the result shape; a, b and the result have
    one element type (f32, i64 or i1). cond is a bool (i1) tensor, or an f32 one of 0.0 (false)
    and 1.0 (true): the form a mask known at compile time is folded to.

        %y = irt.where %c, %a, %b : (tensor<4x4xi1>, tensor<f32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    """

    name = "irt.where"
    cond = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$cond `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(self, cond: SSAValue, lhs: SSAValue, rhs: SSAValue, result_type: TensorType):
        super().__init__(operands=[cond, lhs, rhs], result_types=[result_type])

    def verify_element_types(self) -> None:
        _check_tensor(self, self.cond, "the condition", (i1, f32))
        values = (("lhs", self.lhs), ("rhs", self.rhs), ("the result", self.result))
        _check_same_element_type(self, values, ELEMENT_TYPES)

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        c = args[0] if args[0].type == i1 else _ins(b, arith.FPToUIOp(args[0], i1))
        return _ins(b, arith.SelectOp(c, args[1], args[2]))


OPS = [
    ExpOp,
    LogOp,
    SqrtOp,
    RsqrtOp,
    NegOp,
    AbsOp,
    CosOp,
    SinOp,
    Relu6Op,
    SiluOp,
    HardswishOp,
    HardsigmoidOp,
    PowOp,
    ClampOp,
    LeakyReluOp,
    WhereOp,
]
ATTRS: list = []

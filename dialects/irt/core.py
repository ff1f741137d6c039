"""`irt`: irc's high-level tensor dialect.

Values are builtin `tensor<...xf32>`; parameters are function arguments, so weights never
appear in IR text. Ops come in three families, each with one Python interface that every
later stage uses instead of looking at concrete op classes:

* elementwise ops (`irt.add`, `irt.relu`, ..., and the fused `irt.elementwise`) broadcast their
  operands numpy-style to the result shape and define their meaning per element with
  `build_scalar`, which emits `arith`/`math` ops on f32 scalars;
* contractions (`irt.linear`, `irt.matmul`, and the fused `irt.contract`) define `kind`,
  `lhs`, `rhs`, `epilogue_inputs` and `build_epilogue`, applied to each accumulated element;
* layout and data ops (`irt.reshape`, `irt.transpose`, `irt.constant`).

The fused ops hold their scalar computation in a region (as `linalg.generic` does), so fusing
two ops is concatenating two scalar bodies, and lowering is cloning one into a loop nest.

    %y = irt.linear %x, %w, %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %z = irt.relu %y : tensor<4x16xf32>
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.builder import Builder
from xdsl.dialects import arith, math as xmath
from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    f32,
    i1,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Operation, Region, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    AnyAttr,
    ParamAttrConstraint,
    VarConstraint,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from irc.dialects.irt.contraction import (  # noqa: F401
    ContractionBase,
    ContractionKind,
    ContractionKindAttr,
    ContractOp,
    LinearOp,
    MatmulOp,
    contraction_shape,
)

# The shared interfaces and the contractions live beside this module; `irt.X` names them all.
from irc.dialects.irt.interfaces import (  # noqa: F401
    ELEMENT_TYPES,
    NUMERIC_TYPES,
    ElementwiseOp,
    EpilogueOp,
    YieldOp,
    _check_f32_tensor,
    _check_same_element_type,
    _check_tensor,
    _fmt,
    _verify_scalar_region,
    broadcast_shapes,
    clone_body,
    element_type,
    fconst,
    is_float,
    scalar_constant,
    scalar_region,
    shape_of,
    stretched_dims,
)
from irc.dialects.static_shape import StaticShapeOp
from irc.dialects.symbolic import DimsAttr, format_dim, product

# ---------------------------------------------------------------------------------------------
# Scalar bodies of the core elementwise ops
# ---------------------------------------------------------------------------------------------


def _relu(b: Builder, x: SSAValue) -> SSAValue:
    return b.insert(arith.MaximumfOp(x, fconst(b, 0.0))).result


def _sigmoid(b: Builder, x: SSAValue) -> SSAValue:
    one = fconst(b, 1.0)
    e = b.insert(xmath.ExpOp(b.insert(arith.NegfOp(x)).result)).result
    return b.insert(arith.DivfOp(one, b.insert(arith.AddfOp(one, e)).result)).result


def _tanh(b: Builder, x: SSAValue) -> SSAValue:
    return b.insert(xmath.TanhOp(x)).result


def _gelu_erf(b: Builder, x: SSAValue) -> SSAValue:
    """0.5 * x * (1 + erf(x / sqrt(2))): PyTorch's default GELU."""
    t = b.insert(arith.MulfOp(x, fconst(b, 1.0 / math.sqrt(2.0)))).result
    e = b.insert(arith.AddfOp(fconst(b, 1.0), b.insert(xmath.ErfOp(t)).result)).result
    return b.insert(arith.MulfOp(b.insert(arith.MulfOp(x, fconst(b, 0.5))).result, e)).result


def _gelu_tanh(b: Builder, x: SSAValue) -> SSAValue:
    """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))): GELU(approximate='tanh')."""
    x3 = b.insert(arith.MulfOp(b.insert(arith.MulfOp(x, x)).result, x)).result
    inner = b.insert(arith.AddfOp(x, b.insert(arith.MulfOp(x3, fconst(b, 0.044715))).result)).result
    t = b.insert(xmath.TanhOp(b.insert(arith.MulfOp(inner, fconst(b, math.sqrt(2.0 / math.pi)))).result)).result
    e = b.insert(arith.AddfOp(fconst(b, 1.0), t)).result
    return b.insert(arith.MulfOp(b.insert(arith.MulfOp(x, fconst(b, 0.5))).result, e)).result


# ---------------------------------------------------------------------------------------------
# Elementwise ops
# ---------------------------------------------------------------------------------------------


class UnaryOp(ElementwiseOp):
    T: ClassVar = VarConstraint("T", AnyAttr())
    input = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($result)"

    def __init__(self, input: SSAValue | Operation):
        v = SSAValue.get(input)
        super().__init__(operands=[v], result_types=[v.type])


@irdl_op_definition
class ReluOp(UnaryOp):
    """max(x, 0).   %y = irt.relu %x : tensor<4x8xf32>"""

    name = "irt.relu"

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        return _relu(b, args[0])


@irdl_op_definition
class SigmoidOp(UnaryOp):
    """1 / (1 + exp(-x)).   %y = irt.sigmoid %x : tensor<4x8xf32>"""

    name = "irt.sigmoid"

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        return _sigmoid(b, args[0])


@irdl_op_definition
class TanhOp(UnaryOp):
    """tanh(x).   %y = irt.tanh %x : tensor<4x8xf32>"""

    name = "irt.tanh"

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        return _tanh(b, args[0])


class GeluApprox(StrEnum):
    NONE = "none"
    TANH = "tanh"


@irdl_attr_definition
class GeluApproxAttr(EnumAttribute[GeluApprox], SpacedOpaqueSyntaxAttribute):
    """How GELU is computed: `none` (erf, exact) or `tanh`, as in torch.nn.GELU."""

    name = "irt.approx"


@irdl_op_definition
class GeluOp(ElementwiseOp):
    """GELU, exact (erf) or tanh-approximated.   %y = irt.gelu %x approx tanh : tensor<4x8xf32>"""

    name = "irt.gelu"
    T: ClassVar = VarConstraint("T", AnyAttr())
    input = operand_def(T)
    approximate = prop_def(GeluApproxAttr, default_value=GeluApproxAttr(GeluApprox.NONE))
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$input (`approx` $approximate^)? attr-dict `:` type($result)"

    def __init__(self, input: SSAValue | Operation, approximate: str = "none"):
        v = SSAValue.get(input)
        super().__init__(
            operands=[v],
            result_types=[v.type],
            properties={"approximate": GeluApproxAttr(GeluApprox(approximate))},
        )

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        if self.approximate.data == GeluApprox.TANH:
            return _gelu_tanh(b, args[0])
        return _gelu_erf(b, args[0])


class BinaryOp(ElementwiseOp):
    """Two operands and the result of one element type: f32, or i64 too where the op has an
    integer form (`INT_OP`: add, sub, mul wrap around on overflow, as torch's int64 ops do)."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"
    SCALAR_OP: ClassVar[type[Operation]]
    INT_OP: ClassVar[type[Operation] | None] = None

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation, result_type: Attribute):
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def verify_element_types(self) -> None:
        if self.INT_OP is None:
            super().verify_element_types()
            return
        values = (("lhs", self.lhs), ("rhs", self.rhs), ("the result", self.result))
        _check_same_element_type(self, values, NUMERIC_TYPES)

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        cls = self.SCALAR_OP if is_float(args[0].type) or self.INT_OP is None else self.INT_OP
        return b.insert(cls(args[0], args[1])).results[0]  # type: ignore[call-arg]


@irdl_op_definition
class AddOp(BinaryOp):
    """lhs + rhs with broadcasting.   %z = irt.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>"""

    name = "irt.add"
    SCALAR_OP: ClassVar = arith.AddfOp
    INT_OP: ClassVar = arith.AddiOp


@irdl_op_definition
class SubOp(BinaryOp):
    """lhs - rhs with broadcasting."""

    name = "irt.sub"
    SCALAR_OP: ClassVar = arith.SubfOp
    INT_OP: ClassVar = arith.SubiOp


@irdl_op_definition
class MulOp(BinaryOp):
    """lhs * rhs with broadcasting."""

    name = "irt.mul"
    SCALAR_OP: ClassVar = arith.MulfOp
    INT_OP: ClassVar = arith.MuliOp


@irdl_op_definition
class DivOp(BinaryOp):
    """lhs / rhs with broadcasting (true division)."""

    name = "irt.div"
    SCALAR_OP: ClassVar = arith.DivfOp

@irdl_op_definition
class ElementwiseFusedOp(ElementwiseOp):
    """A fused chain of elementwise ops: one loop nest, no intermediate tensors.

    The body computes one element from one scalar per input (of the input's element type, each
    broadcast to the result shape) and yields one of the result's element type:

        %r = irt.elementwise ins(%x, %y : tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
        ^bb0(%a: f32, %b: f32):
          %0 = arith.mulf %a, %b : f32
          irt.yield %0 : f32
        }
    """

    name = "irt.elementwise"
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(Pure())
    assembly_format = (
        "`ins` `(` $inputs `:` type($inputs) `)` `->` type($result) attr-dict-with-keyword $body"
    )

    def __init__(self, inputs: Sequence[SSAValue], result_type: Attribute, body: Region):
        super().__init__(operands=[inputs], result_types=[result_type], regions=[body])

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        return clone_body(b, self.body, args)

    def scalar_body(self) -> Region | None:
        return self.body

    def verify_element_types(self) -> None:
        for i, v in enumerate(self.inputs):
            _check_tensor(self, v, f"operand {i}")
        _check_tensor(self, self.result, "the result")

    def verify_(self) -> None:
        super().verify_()
        _verify_scalar_region(self, self.body, [element_type(v) for v in self.inputs], element_type(self.result))

# ---------------------------------------------------------------------------------------------
# Layout and data
# ---------------------------------------------------------------------------------------------


@irdl_op_definition
class ReshapeOp(StaticShapeOp):
    """Same elements, new shape (view, reshape, flatten).   %y = irt.reshape %x : (tensor<2x6xf32>) -> tensor<12xf32>"""

    SYMBOLIC_DIMS: ClassVar[bool] = True
    name = "irt.reshape"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type($input, $result)"

    def __init__(self, input: SSAValue, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_(self) -> None:
        _check_same_element_type(self, (("the input", self.input), ("the result", self.result)), ELEMENT_TYPES)
        a, r = shape_of(self.input), shape_of(self.result)
        if product(a) != product(r):
            raise VerifyException(
                f"irt.reshape: cannot reshape {_fmt(a)} ({format_dim(product(a))} elements) "
                f"to {_fmt(r)} ({format_dim(product(r))} elements)"
            )


@irdl_op_definition
class TransposeOp(StaticShapeOp):
    """Permutes dimensions: result dim i is input dim perm[i].

        %y = irt.transpose %x [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
    """

    SYMBOLIC_DIMS: ClassVar[bool] = True
    name = "irt.transpose"
    input = operand_def(TensorType)
    perm = prop_def(DenseArrayBase.constr(i64))
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input $perm attr-dict `:` functional-type($input, $result)"

    def __init__(self, input: SSAValue, perm: Sequence[int], result_type: Attribute):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"perm": DenseArrayBase.from_list(i64, list(perm))},
        )

    @property
    def permutation(self) -> tuple[int, ...]:
        return tuple(self.perm.get_values())

    def verify_(self) -> None:
        _check_same_element_type(self, (("the input", self.input), ("the result", self.result)), ELEMENT_TYPES)
        a, perm = shape_of(self.input), self.permutation
        if sorted(perm) != list(range(len(a))):
            raise VerifyException(f"irt.transpose: {list(perm)} is not a permutation of {len(a)} dimensions")
        expected = tuple(a[p] for p in perm)
        if shape_of(self.result) != expected:
            raise VerifyException(f"irt.transpose: result shape should be {_fmt(expected)}")


@irdl_op_definition
class PackOp(StaticShapeOp):
    """Cuts a matrix into panels for the GEMM engine: the panel dimension in slices of `width`
    (the last one zero-padded), each stored as [other dimension][width].

        %p = irt.pack %w "rows" 16 : (tensor<10x8xf32>) -> tensor<1x8x16xf32>   // p[q, k, r] = w[16q + r, k]
        %p = irt.pack %w "cols" 16 : (tensor<8x10xf32>) -> tensor<1x8x16xf32>   // p[q, k, r] = w[k, 16q + r]

    `rows` packs an nn.Linear weight [N, K]; `cols` a matmul rhs [K, N]. `rows` also takes a
    tensor of more dimensions, read as [D0, D1*D2*...]: a conv2d weight [O, C, kH, kW] becomes
    the engine's lhs panels [ceil(O/width), C*kH*kW, width]. `winograd` takes a 3x3 conv2d
    weight [O, C, 3, 3] to its Winograd F(2x2, 3x3) transform, U = G g G^T per 3x3 kernel g
    (16 values xi = 4a + b), in panels of `width` output channels: [16, ceil(O/width), C, width],
    u[xi, q, c, r] = U[o = q*width + r, c][a, b] (the engine's `irc_conv_winograd`). Rules apply
    it to parameters only, so compile-time folding packs each weight once, never per call.

        %u = irt.pack %w "winograd" 14 : (tensor<64x64x3x3xf32>) -> tensor<16x5x64x14xf32>
    """

    name = "irt.pack"
    input = operand_def(TensorType)
    axis = prop_def(StringAttr)
    width = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input $axis $width attr-dict `:` functional-type($input, $result)"

    def __init__(self, input: SSAValue, axis: str, width: int):
        shape = shape_of(input)
        if axis == "winograd":
            result = [16, -(-shape[0] // width), shape[1], width]
        else:
            panel, other = (shape[0], math.prod(shape[1:])) if axis == "rows" else (shape[1], shape[0])
            result = [-(-panel // width), other, width]
        super().__init__(
            operands=[input],
            result_types=[TensorType(f32, result)],
            properties={"axis": StringAttr(axis), "width": IntegerAttr(width, i64)},
        )

    @property
    def panel_width(self) -> int:
        return self.width.value.data

    def verify_(self) -> None:
        a = shape_of(self.input)
        if self.axis.data == "winograd":
            if len(a) != 4 or tuple(a[2:]) != (3, 3) or self.panel_width < 1:
                raise VerifyException(
                    f"irt.pack: \"winograd\" transforms a 3x3 conv weight [O, C, 3, 3] in panels of width >= 1, "
                    f"got {_fmt(a)} in panels of {self.panel_width}"
                )
            expected = (16, -(-a[0] // self.panel_width), a[1], self.panel_width)
            if shape_of(self.result) != expected:
                raise VerifyException(f"irt.pack: result shape should be {_fmt(expected)}, got {_fmt(shape_of(self.result))}")
            return
        rows = self.axis.data == "rows"
        if self.axis.data not in ("rows", "cols") or len(a) < 2 or (len(a) != 2 and not rows) or self.panel_width < 1:
            raise VerifyException(
                f"irt.pack: packs a 2-D tensor by `rows` or `cols` (or a higher one by `rows`) in panels of "
                f"width >= 1, got {_fmt(a)} by {self.axis.data} {self.panel_width}"
            )
        panel, other = (a[0], math.prod(a[1:])) if rows else (a[1], a[0])
        expected = (-(-panel // self.panel_width), other, self.panel_width)
        if shape_of(self.result) != expected:
            raise VerifyException(f"irt.pack: result shape should be {_fmt(expected)}, got {_fmt(shape_of(self.result))}")


@irdl_op_definition
class ConstantOp(StaticShapeOp):
    """A small literal tensor, such as the scalar in `x * 0.5`, of f32, i64 or i1. Weights are
    arguments, not constants.

        %c = irt.constant dense<5.000000e-01> : tensor<f32>
        %m = irt.constant dense<[true, false]> : tensor<2xi1>
    """

    name = "irt.constant"
    T: ClassVar = VarConstraint("T", AnyAttr())
    value = prop_def(ParamAttrConstraint(DenseIntOrFPElementsAttr, (T, AnyAttr())))
    result = result_def(T)
    traits = traits_def(Pure(), ConstantLike())
    assembly_format = "$value attr-dict"

    def __init__(self, value: DenseIntOrFPElementsAttr):
        super().__init__(properties={"value": value}, result_types=[value.type])

    @staticmethod
    def from_floats(values: Sequence[float], shape: Sequence[int] = ()) -> ConstantOp:
        return ConstantOp(DenseIntOrFPElementsAttr.from_list(TensorType(f32, list(shape)), list(values)))

    @staticmethod
    def from_values(values: Sequence[float | int | bool], element: Attribute, shape: Sequence[int] = ()) -> ConstantOp:
        """A constant of element type `element` (f32, i64 or i1)."""
        if is_float(element):
            return ConstantOp.from_floats([float(v) for v in values], shape)
        ints = [int(v) for v in values]
        return ConstantOp(DenseIntOrFPElementsAttr.from_list(TensorType(element, list(shape)), ints))

    def verify_(self) -> None:
        _check_tensor(self, self.result, "the result")


def splat_value(value: SSAValue) -> float | None:
    """The element of `value` if it is an `irt.constant` with all elements equal (a splat), else
    None (an integer or bool element as a float: see `splat_element` for its own type)."""
    element = splat_element(value)
    return None if element is None else float(element)


def splat_element(value: SSAValue) -> float | int | None:
    """The element of a splat `irt.constant`, as the Python value of its type (float, or int;
    a bool is 0 or 1), else None."""
    op = value.owner
    if isinstance(op, ConstantOp) and op.value.is_splat():
        element, t = next(iter(op.value.iter_values())), element_type(op.result)
        if is_float(t):
            return float(element)
        return int(element) & 1 if t == i1 else int(element)  # i1 stores true as -1
    return None


OPS = [
    ReluOp,
    SigmoidOp,
    TanhOp,
    GeluOp,
    AddOp,
    SubOp,
    MulOp,
    DivOp,
    ElementwiseFusedOp,
    YieldOp,
    LinearOp,
    MatmulOp,
    ContractOp,
    ReshapeOp,
    TransposeOp,
    PackOp,
    ConstantOp,
]
ATTRS = [GeluApproxAttr, ContractionKindAttr, DimsAttr]

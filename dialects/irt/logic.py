"""`irt` ops: casts, comparisons and logic, the ops that make and read int64 and bool tensors.

    %f = irt.cast %ids : (tensor<2x5xi64>) -> tensor<2x5xf32>
    %m = irt.cmp lt %a, %b : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
    %k = irt.and %m, %n : (tensor<4x8xi1>, tensor<8xi1>) -> tensor<4x8xi1>
    %n = irt.not %m : tensor<4x8xi1>

Each is an `irt.ElementwiseOp` (operands broadcast numpy-style to the result), so fusion,
lowering, the reference evaluator and costs need nothing more. What they compute is torch's:

* `irt.cast` converts as `Tensor.to(dtype)` does: f32 -> i64 truncates toward zero, anything
  -> i1 is `x != 0` (NaN is true), i1 -> f32/i64 is 0 or 1;
* `irt.cmp` compares two operands of one element type (the importer promotes them first, as
  torch does): on f32 NaN compares unequal to everything (`ne` is true, the others false); on i1
  false < true;
* `irt.and`, `irt.or`, `irt.xor` are bitwise on i64 and logical on i1; `irt.not` flips every bit
  (`~x`: logical not on i1, bitwise not on i64).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType, i1, i64
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Operation, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import irdl_attr_definition, irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.str_enum import StrEnum

from irc.dialects.irt.core import (
    ELEMENT_TYPES,
    ElementwiseOp,
    UnaryOp,
    _check_same_element_type,
    _check_tensor,
    element_type,
    is_float,
    scalar_constant,
)

INTEGER_TYPES: tuple[Attribute, ...] = (i64, i1)


def _ins(b: Builder, op: Operation) -> SSAValue:
    return b.insert(op).results[0]


def convert_scalar(b: Builder, x: SSAValue, to: Attribute) -> SSAValue:
    """The scalar `x` converted to element type `to`, as torch's `.to(dtype)` converts."""
    src = x.type
    if src == to:
        return x
    if to == i1:  # x != 0
        if is_float(src):
            return _ins(b, arith.CmpfOp(x, scalar_constant(b, 0.0, src), "une"))
        return _ins(b, arith.CmpiOp(x, scalar_constant(b, 0, src), "ne"))
    if is_float(to):
        return _ins(b, arith.UIToFPOp(x, to) if src == i1 else arith.SIToFPOp(x, to))
    if is_float(src):
        return _ins(b, arith.FPToSIOp(x, to))  # truncates toward zero
    return _ins(b, arith.ExtUIOp(x, to))  # i1 -> i64: 0 or 1


@irdl_op_definition
class CastOp(ElementwiseOp):
    """The input converted to the result's element type (f32, i64, i1), as `Tensor.to(dtype)`.

        %f = irt.cast %ids : (tensor<2x5xi64>) -> tensor<2x5xf32>
    """

    name = "irt.cast"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type($input, $result)"

    def __init__(self, input: SSAValue | Operation, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_element_types(self) -> None:
        _check_tensor(self, self.input, "the input")
        _check_tensor(self, self.result, "the result")

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        return convert_scalar(b, args[0], element_type(self.result))


class Predicate(StrEnum):
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"


@irdl_attr_definition
class PredicateAttr(EnumAttribute[Predicate], SpacedOpaqueSyntaxAttribute):
    """What `irt.cmp` tests: eq, ne, lt, le, gt or ge."""

    name = "irt.predicate"


CMPF = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
"""torch's float comparisons: ordered (false with a NaN), but `ne` unordered (true with a NaN)."""
CMPI = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}
CMPI_BOOL = {"eq": "eq", "ne": "ne", "lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge"}
"""On i1, false < true: unsigned (signed i1 would read true as -1)."""


@irdl_op_definition
class CmpOp(ElementwiseOp):
    """lhs <predicate> rhs per element, broadcast, as a bool tensor; both operands have one
    element type (f32, i64 or i1).

        %m = irt.cmp lt %a, %b : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
    """

    name = "irt.cmp"
    predicate = prop_def(PredicateAttr)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$predicate $lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(self, predicate: str, lhs: SSAValue | Operation, rhs: SSAValue | Operation, result_type: Attribute):
        super().__init__(
            operands=[lhs, rhs], result_types=[result_type], properties={"predicate": PredicateAttr(Predicate(predicate))}
        )

    @property
    def kind(self) -> str:
        return self.predicate.data.value

    def verify_element_types(self) -> None:
        _check_same_element_type(self, (("lhs", self.lhs), ("rhs", self.rhs)), ELEMENT_TYPES)
        _check_tensor(self, self.result, "the result", (i1,))

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        lhs, rhs = args
        if is_float(lhs.type):
            return _ins(b, arith.CmpfOp(lhs, rhs, CMPF[self.kind]))
        return _ins(b, arith.CmpiOp(lhs, rhs, (CMPI_BOOL if lhs.type == i1 else CMPI)[self.kind]))


class _BitwiseOp(ElementwiseOp):
    """Two operands and the result of one integer element type (i64, or i1 for logic)."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"
    SCALAR_OP: ClassVar[type[Operation]]

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation, result_type: Attribute):
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def verify_element_types(self) -> None:
        values = (("lhs", self.lhs), ("rhs", self.rhs), ("the result", self.result))
        _check_same_element_type(self, values, INTEGER_TYPES)

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        return _ins(b, self.SCALAR_OP(args[0], args[1]))  # type: ignore[call-arg]


@irdl_op_definition
class AndOp(_BitwiseOp):
    """lhs & rhs: logical and on i1, bitwise on i64.   %k = irt.and %m, %n : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>"""

    name = "irt.and"
    SCALAR_OP: ClassVar = arith.AndIOp


@irdl_op_definition
class OrOp(_BitwiseOp):
    """lhs | rhs: logical or on i1, bitwise on i64."""

    name = "irt.or"
    SCALAR_OP: ClassVar = arith.OrIOp


@irdl_op_definition
class XorOp(_BitwiseOp):
    """lhs ^ rhs: logical xor on i1, bitwise on i64."""

    name = "irt.xor"
    SCALAR_OP: ClassVar = arith.XOrIOp


@irdl_op_definition
class NotOp(UnaryOp):
    """~x: logical not on i1, bitwise not on i64 (x xor all ones).   %n = irt.not %m : tensor<4xi1>"""

    name = "irt.not"

    def verify_element_types(self) -> None:
        _check_same_element_type(self, (("the input", self.input), ("the result", self.result)), INTEGER_TYPES)

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        x = args[0]
        return _ins(b, arith.XOrIOp(x, scalar_constant(b, -1, x.type)))


OPS = [CastOp, CmpOp, AndOp, OrOp, XorOp, NotOp]
ATTRS = [PredicateAttr]

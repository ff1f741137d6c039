"""`irt` contractions: `irt.linear`, `irt.matmul` and the fused `irt.contract`.

result[..., n] = epilogue(sum_k lhs[..., k] * rhs(n, k), ...): `kind` says how rhs is laid out
(`linear`: [N, K], nn.Linear's weight; `matmul`: [K, N]; `packed`: panels from `irt.pack`), and
the epilogue (bias, activations, residual adds) is the `EpilogueOp` interface's. `core`
re-exports every name here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Operation, Region, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from irc.dialects.irt.interfaces import (
    EpilogueOp,
    _check_f32_tensor,
    _fmt,
    _verify_scalar_region,
    clone_body,
    shape_of,
)


class ContractionKind(StrEnum):
    LINEAR = "linear"  # rhs is [N, K]: y = x @ rhs^T, nn.Linear's weight layout
    MATMUL = "matmul"  # rhs is [K, N]: y = x @ rhs
    PACKED = "packed"  # rhs is [ceil(N/P), K, P]: N in panels of P columns (`irt.pack`), for the GEMM engine


@irdl_attr_definition
class ContractionKindAttr(EnumAttribute[ContractionKind], SpacedOpaqueSyntaxAttribute):
    name = "irt.kind"


def contraction_shape(
    kind: ContractionKind, lhs: tuple[int, ...], rhs: tuple[int, ...], n: int | None = None
) -> tuple[int, ...]:
    """Result shape of `lhs [..., K]` contracted with `rhs`; raises VerifyException.

    A packed rhs does not record N (its last panel is zero-padded): `n` gives it."""
    if kind == ContractionKind.PACKED:
        if len(lhs) < 1 or len(rhs) != 3 or n is None:
            raise VerifyException(f"a packed contraction needs lhs of rank >= 1 and a 3-D rhs, got {_fmt(lhs)} and {_fmt(rhs)}")
        panels, k, width = rhs
        if lhs[-1] != k or panels != -(-n // width):
            raise VerifyException(
                f"packed rhs {_fmt(rhs)} does not hold a [K={lhs[-1]}, N={n}] matrix in panels of {width} columns"
            )
        return (*lhs[:-1], n)
    if len(lhs) < 1 or len(rhs) != 2:
        raise VerifyException(
            f"a {kind} contraction needs lhs of rank >= 1 and a 2-D rhs, got {_fmt(lhs)} and {_fmt(rhs)}"
        )
    n, k = rhs if kind == ContractionKind.LINEAR else rhs[::-1]
    if lhs[-1] != k:
        raise VerifyException(
            f"contracting dimensions differ: lhs {_fmt(lhs)} has {lhs[-1]}, "
            f"rhs {_fmt(rhs)} has {k} ({kind} expects rhs as {'[N, K]' if kind == 'linear' else '[K, N]'})"
        )
    return (*lhs[:-1], n)

class ContractionBase(EpilogueOp):
    """Base of the contraction family: result[..., n] = epilogue(sum_k lhs[..., k] * rhs(n, k), ...).
    Any size may be symbolic (the rows of a language model's batch x sequence, or N and K of a
    run-time rhs); a packed rhs holds weights, whose sizes are static."""

    SYMBOLIC_DIMS: ClassVar[bool] = True
    KIND: ClassVar[ContractionKind]

    @property
    def contraction_kind(self) -> ContractionKind:
        return self.KIND

    def with_epilogue(self, inputs: Sequence[SSAValue], body: Region, result_type: Attribute) -> Operation:
        return ContractOp(self.contraction_kind, self.lhs, self.rhs, inputs, result_type, body)  # type: ignore[attr-defined]

    def verify_(self) -> None:
        lhs, rhs, res = self.lhs, self.rhs, self.results[0]  # type: ignore[attr-defined]
        for what, v in (("lhs", lhs), ("rhs", rhs), ("the result", res)):
            _check_f32_tensor(self, v, what)
        try:
            n = shape_of(res)[-1] if shape_of(res) else None
            expected = contraction_shape(self.contraction_kind, shape_of(lhs), shape_of(rhs), n)
        except VerifyException as e:
            raise VerifyException(f"{self.name}: {e}") from None
        if shape_of(res) != expected:
            raise VerifyException(
                f"{self.name}: result shape {_fmt(shape_of(res))} should be {_fmt(expected)}"
            )
        self.verify_epilogue_inputs(self.epilogue_inputs, expected)



@irdl_op_definition
class LinearOp(ContractionBase):
    """nn.Linear: x @ w^T (+ b), with w as [out, in].

        %y = irt.linear %x, %w, %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    """

    name = "irt.linear"
    KIND: ClassVar = ContractionKind.LINEAR
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs (`,` $bias^)? attr-dict `:` functional-type(operands, results)"

    def __init__(self, x: SSAValue, w: SSAValue, bias: SSAValue | None, result_type: Attribute):
        super().__init__(operands=[x, w, bias], result_types=[result_type])

    @property
    def epilogue_inputs(self) -> Sequence[SSAValue]:
        return (self.bias,) if self.bias is not None else ()

    def build_epilogue(self, b: Builder, acc: SSAValue, args: Sequence[SSAValue]) -> SSAValue:
        return b.insert(arith.AddfOp(acc, args[0])).result if args else acc

    def verify_(self) -> None:
        super().verify_()
        if self.bias is not None and len(shape_of(self.bias)) != 1:
            raise VerifyException(f"irt.linear: bias must be 1-D, got {_fmt(shape_of(self.bias))}")


@irdl_op_definition
class MatmulOp(ContractionBase):
    """torch.matmul of a [..., K] tensor and a 2-D [K, N] tensor.

        %y = irt.matmul %a, %b : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    """

    name = "irt.matmul"
    KIND: ClassVar = ContractionKind.MATMUL
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute):
        super().__init__(operands=[lhs, rhs], result_types=[result_type])


@irdl_op_definition
class ContractOp(ContractionBase):
    """A contraction with a fused epilogue: bias, activations, residual adds, applied per element.

    The body gets the accumulated dot product, then one f32 per epilogue input (each broadcast
    to the result shape) and yields the stored element:

        %y = irt.contract linear %x, %w epilogue(%b : tensor<16xf32>) : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32> {
        ^bb0(%acc: f32, %bias: f32):
          ...
          irt.yield %r : f32
        }
    """

    name = "irt.contract"
    kind = prop_def(ContractionKindAttr)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    epilogue = var_operand_def(TensorType)
    result = result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(Pure())
    irdl_options = ()
    assembly_format = (
        "$kind $lhs `,` $rhs (`epilogue` `(` $epilogue^ `:` type($epilogue) `)`)? `:` "
        "`(` type($lhs) `,` type($rhs) `)` `->` type($result) attr-dict-with-keyword $body"
    )

    def __init__(
        self,
        kind: ContractionKind,
        lhs: SSAValue,
        rhs: SSAValue,
        epilogue: Sequence[SSAValue],
        result_type: Attribute,
        body: Region,
    ):
        super().__init__(
            operands=[lhs, rhs, epilogue],
            result_types=[result_type],
            regions=[body],
            properties={"kind": ContractionKindAttr(kind)},
        )

    @property
    def contraction_kind(self) -> ContractionKind:
        return self.kind.data

    @property
    def epilogue_inputs(self) -> Sequence[SSAValue]:
        return self.epilogue

    def build_epilogue(self, b: Builder, acc: SSAValue, args: Sequence[SSAValue]) -> SSAValue:
        return clone_body(b, self.body, [acc, *args])

    def epilogue_body(self) -> Region | None:
        return self.body

    def verify_(self) -> None:
        super().verify_()
        _verify_scalar_region(self, self.body, 1 + len(self.epilogue))

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
from xdsl.rewriter import InsertPoint
from xdsl.dialects import arith, math as xmath
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float32Type,
    FloatAttr,
    I64,
    IntegerAttr,
    StringAttr,
    TensorType,
    f32,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    AnyAttr,
    ParamAttrConstraint,
    VarConstraint,
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
from xdsl.traits import ConstantLike, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from irc.dialects.static_shape import StaticShapeOp

# ---------------------------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------------------------


def shape_of(value: SSAValue) -> tuple[int, ...]:
    """The static shape of a tensor or memref value."""
    return tuple(value.type.get_shape())  # type: ignore[attr-defined]


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...] | None:
    """Numpy/PyTorch broadcasting of static shapes; None when they do not broadcast."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for d in range(rank):
        sizes = {s[d - rank + len(s)] for s in shapes if d - rank + len(s) >= 0} - {1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _fmt(shape: Sequence[int]) -> str:
    return "x".join(map(str, shape)) or "scalar"


def _check_f32_tensor(op: Operation, value: SSAValue, what: str) -> None:
    if not isinstance(value.type, TensorType) or not isinstance(value.type.element_type, Float32Type):
        raise VerifyException(f"{op.name}: {what} must be a tensor of f32, got {value.type}")


# ---------------------------------------------------------------------------------------------
# Scalar helpers: how an element is computed, shared by every elementwise op and epilogue
# ---------------------------------------------------------------------------------------------


def fconst(b: Builder, value: float) -> SSAValue:
    return b.insert(arith.ConstantOp(FloatAttr(value, f32))).result


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


def clone_body(b: Builder, region: Region, args: Sequence[SSAValue]) -> SSAValue:
    """Clone a single-block scalar region at `b`, binding its arguments; returns the yielded value."""
    block = region.block
    mapping: dict[SSAValue, SSAValue] = dict(zip(block.args, args, strict=True))
    for op in block.ops:
        if isinstance(op, YieldOp):
            return mapping.get(op.value, op.value)
        new = op.clone(value_mapper=mapping)
        b.insert(new)
        mapping.update(zip(op.results, new.results))
    raise VerifyException("scalar region has no irt.yield")


# ---------------------------------------------------------------------------------------------
# Elementwise ops
# ---------------------------------------------------------------------------------------------


class ElementwiseOp(StaticShapeOp):
    """Base of the elementwise family: operands broadcast to the result shape."""

    def elementwise_inputs(self) -> Sequence[SSAValue]:
        return self.operands

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        raise NotImplementedError

    def scalar_body(self) -> Region | None:
        """The region `build_scalar` copies, when the op stores its computation as one
        (`irt.elementwise`); None when `build_scalar` builds its ops afresh."""
        return None

    def verify_(self) -> None:
        for i, v in enumerate(self.elementwise_inputs()):
            _check_f32_tensor(self, v, f"operand {i}")
        _check_f32_tensor(self, self.results[0], "the result")
        shapes = [shape_of(v) for v in self.elementwise_inputs()]
        expected = broadcast_shapes(*shapes)
        if expected is None:
            raise VerifyException(
                f"{self.name}: operand shapes {', '.join(map(_fmt, shapes))} do not broadcast"
            )
        if shape_of(self.results[0]) != expected:
            raise VerifyException(
                f"{self.name}: result shape {_fmt(shape_of(self.results[0]))} does not match the "
                f"broadcast operand shape {_fmt(expected)}"
            )


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
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"
    SCALAR_OP: ClassVar[type[Operation]]

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation, result_type: Attribute):
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        return b.insert(self.SCALAR_OP(args[0], args[1])).results[0]  # type: ignore[call-arg]


@irdl_op_definition
class AddOp(BinaryOp):
    """lhs + rhs with broadcasting.   %z = irt.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>"""

    name = "irt.add"
    SCALAR_OP: ClassVar = arith.AddfOp


@irdl_op_definition
class SubOp(BinaryOp):
    """lhs - rhs with broadcasting."""

    name = "irt.sub"
    SCALAR_OP: ClassVar = arith.SubfOp


@irdl_op_definition
class MulOp(BinaryOp):
    """lhs * rhs with broadcasting."""

    name = "irt.mul"
    SCALAR_OP: ClassVar = arith.MulfOp


@irdl_op_definition
class DivOp(BinaryOp):
    """lhs / rhs with broadcasting (true division)."""

    name = "irt.div"
    SCALAR_OP: ClassVar = arith.DivfOp


@irdl_op_definition
class YieldOp(StaticShapeOp):
    """Ends a scalar region of a fused op, yielding the element it computed."""

    name = "irt.yield"
    value = operand_def(Float32Type)
    traits = traits_def(IsTerminator())
    assembly_format = "$value attr-dict `:` type($value)"

    def __init__(self, value: SSAValue | Operation):
        super().__init__(operands=[value])

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), (ElementwiseFusedOp, EpilogueOp)):
            raise VerifyException("irt.yield must end the body of irt.elementwise or of an op's epilogue")


def _verify_scalar_region(op: Operation, region: Region, n_args: int) -> None:
    if len(region.blocks) != 1:
        raise VerifyException(f"{op.name}: the scalar body must have exactly one block")
    block = region.block
    if len(block.args) != n_args or any(not isinstance(a.type, Float32Type) for a in block.args):
        raise VerifyException(
            f"{op.name}: the scalar body must take {n_args} f32 argument(s), "
            f"got ({', '.join(str(a.type) for a in block.args)})"
        )
    if not isinstance(block.last_op, YieldOp):
        raise VerifyException(f"{op.name}: the scalar body must end with irt.yield")


def scalar_region(names: Sequence[str], body) -> Region:
    """A one-block region of f32 arguments named `names`; `body(builder, args)` returns the element."""
    block = Block(arg_types=[f32] * len(names))
    for arg, name in zip(block.args, names):
        arg.name_hint = name
    b = Builder(InsertPoint.at_end(block))
    b.insert(YieldOp(body(b, block.args)))
    return Region(block)


@irdl_op_definition
class ElementwiseFusedOp(ElementwiseOp):
    """A fused chain of elementwise ops: one loop nest, no intermediate tensors.

    The body computes one element from one f32 per input (each broadcast to the result shape):

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

    def verify_(self) -> None:
        super().verify_()
        _verify_scalar_region(self, self.body, len(self.inputs))


# ---------------------------------------------------------------------------------------------
# Contractions
# ---------------------------------------------------------------------------------------------


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


class EpilogueOp(StaticShapeOp):
    """Ops that accumulate each output element, then apply a per-element epilogue before storing it
    (contractions, convolutions). Fusion grows the epilogue; `with_epilogue` rebuilds the op."""

    @property
    def epilogue_inputs(self) -> Sequence[SSAValue]:
        return ()

    def build_epilogue(self, b: Builder, acc: SSAValue, args: Sequence[SSAValue]) -> SSAValue:
        return acc

    def epilogue_body(self) -> Region | None:
        """The region over (acc, *epilogue_inputs) `build_epilogue` copies, when the op stores its
        epilogue as one (built by fusion); None when `build_epilogue` builds its ops afresh."""
        return None

    def with_epilogue(self, inputs: Sequence[SSAValue], body: Region, result_type: Attribute) -> Operation:
        """The same accumulation with epilogue `body` over (acc, *inputs) in place of the current one."""
        raise NotImplementedError


class ContractionOp(EpilogueOp):
    """Base of the contraction family: result[..., n] = epilogue(sum_k lhs[..., k] * rhs(n, k), ...)."""

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
        for i, v in enumerate(self.epilogue_inputs):
            _check_f32_tensor(self, v, f"epilogue input {i}")
            if broadcast_shapes(shape_of(v), expected) != expected:
                raise VerifyException(
                    f"{self.name}: epilogue input {i} of shape {_fmt(shape_of(v))} does not broadcast "
                    f"to the result shape {_fmt(expected)}"
                )


@irdl_op_definition
class LinearOp(ContractionOp):
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
class MatmulOp(ContractionOp):
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
class ContractOp(ContractionOp):
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


# ---------------------------------------------------------------------------------------------
# Layout and data
# ---------------------------------------------------------------------------------------------


@irdl_op_definition
class ReshapeOp(StaticShapeOp):
    """Same elements, new shape (view, reshape, flatten).   %y = irt.reshape %x : (tensor<2x6xf32>) -> tensor<12xf32>"""

    name = "irt.reshape"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type($input, $result)"

    def __init__(self, input: SSAValue, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_(self) -> None:
        a, r = shape_of(self.input), shape_of(self.result)
        if math.prod(a) != math.prod(r):
            raise VerifyException(
                f"irt.reshape: cannot reshape {_fmt(a)} ({math.prod(a)} elements) "
                f"to {_fmt(r)} ({math.prod(r)} elements)"
            )


@irdl_op_definition
class TransposeOp(StaticShapeOp):
    """Permutes dimensions: result dim i is input dim perm[i].

        %y = irt.transpose %x [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
    """

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
    the engine's lhs panels [ceil(O/width), C*kH*kW, width]. Rules apply it to parameters only,
    so compile-time folding packs each weight once, never per call.
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
        panel, other = (shape[0], math.prod(shape[1:])) if axis == "rows" else (shape[1], shape[0])
        super().__init__(
            operands=[input],
            result_types=[TensorType(f32, [-(-panel // width), other, width])],
            properties={"axis": StringAttr(axis), "width": IntegerAttr(width, i64)},
        )

    @property
    def panel_width(self) -> int:
        return self.width.value.data

    def verify_(self) -> None:
        a = shape_of(self.input)
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
    """A small literal tensor, such as the scalar in `x * 0.5`. Weights are arguments, not constants.

        %c = irt.constant dense<5.000000e-01> : tensor<f32>
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

    def verify_(self) -> None:
        _check_f32_tensor(self, self.result, "the result")


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
ATTRS = [GeluApproxAttr, ContractionKindAttr]

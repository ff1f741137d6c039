"""The interfaces every `irt` family shares, and the scalar regions fused ops keep their
per-element computation in.

* shapes: `shape_of`, numpy broadcasting (`broadcast_shapes`), and the checks verifiers share;
* `ElementwiseOp`: operands broadcast to the result shape; `build_scalar` says what one element is;
* `EpilogueOp`: ops that accumulate each output element (contractions, convolutions), then apply
  a per-element epilogue (`build_epilogue`) before storing it;
* element types: tensors hold f32, i64 or i1 (`ELEMENT_TYPES`; i1 is torch.bool, one byte per
  element in memory); most ops compute on f32 only (`_check_f32_tensor`), the elementwise ops
  that take integers and booleans say which in `verify_element_types`;
* scalar regions: one block of scalar arguments (one per input, of its element type) ending in
  `irt.yield` (`scalar_region` builds one, `clone_body` inlines one).

`core` re-exports all of it, so `irt.ElementwiseOp` and `irt.shape_of` stay where every stage
looks for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, FloatAttr, IntegerAttr, TensorType, f32, i1, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import AnyAttr, irdl_op_definition, operand_def, traits_def
from xdsl.rewriter import InsertPoint
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import VerifyException

from irc.dialects.static_shape import StaticShapeOp
from irc.dialects.symbolic import Dim, dims_of, format_dim

# ---------------------------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------------------------


def shape_of(value: SSAValue) -> tuple[Dim, ...]:
    """The shape of a tensor or memref value: ints, and expressions for its symbolic sizes."""
    return dims_of(value.type)


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


def stretched_dims(shape: Sequence[int], out_shape: Sequence[int]) -> list[bool]:
    """For each dim of `shape` broadcast (right-aligned) to `out_shape`: whether it is a size-1 dim
    stretched over a larger one, so that every read along it takes element 0 (stride 0)."""
    lead = len(out_shape) - len(shape)
    return [size == 1 and out_shape[lead + d] != 1 for d, size in enumerate(shape)]


def _fmt(shape: Sequence[Dim]) -> str:
    return "x".join(map(format_dim, shape)) or "scalar"


# ---------------------------------------------------------------------------------------------
# Element types
# ---------------------------------------------------------------------------------------------

ELEMENT_TYPES: tuple[Attribute, ...] = (f32, i64, i1)
"""The element types of irt tensors: float32, int64 and bool (i1)."""
NUMERIC_TYPES: tuple[Attribute, ...] = (f32, i64)
"""The element types integer arithmetic (add, sub, mul, neg, cumsum) computes on."""


def element_type(value: SSAValue) -> Attribute:
    """The element type of a tensor or memref value."""
    return value.type.element_type  # type: ignore[attr-defined]


def is_float(t: Attribute) -> bool:
    return isinstance(t, Float32Type)


def _type_names(types: Sequence[Attribute]) -> str:
    names = [str(t) for t in types]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def _check_tensor(op: Operation, value: SSAValue, what: str, types: Sequence[Attribute] = ELEMENT_TYPES) -> None:
    """`value` is a tensor whose element type is one of `types`."""
    if not isinstance(value.type, TensorType) or value.type.element_type not in types:
        raise VerifyException(f"{op.name}: {what} must be a tensor of {_type_names(types)}, got {value.type}")


def _check_f32_tensor(op: Operation, value: SSAValue, what: str) -> None:
    _check_tensor(op, value, what, (f32,))


def _check_same_element_type(op: Operation, values: Sequence[tuple[str, SSAValue]], types: Sequence[Attribute]) -> None:
    """Each named value is a tensor of one of `types`, all of the same one."""
    for what, v in values:
        _check_tensor(op, v, what, types)
    found = {str(element_type(v)) for _, v in values}
    if len(found) > 1:
        listed = ", ".join(f"{what} {element_type(v)}" for what, v in values)
        raise VerifyException(f"{op.name}: operands and result must have one element type, got {listed}")


# ---------------------------------------------------------------------------------------------
# Scalar regions: how an element is computed, shared by every elementwise op and epilogue
# ---------------------------------------------------------------------------------------------


def fconst(b: Builder, value: float) -> SSAValue:
    return b.insert(arith.ConstantOp(FloatAttr(value, f32))).result


def scalar_constant(b: Builder, value: float | int | bool, t: Attribute) -> SSAValue:
    """The scalar constant `value` of element type `t` (f32, i64 or i1)."""
    if is_float(t):
        return fconst(b, float(value))
    return b.insert(arith.ConstantOp(IntegerAttr(int(value), t))).result


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
# The family interfaces
# ---------------------------------------------------------------------------------------------


class ElementwiseOp(StaticShapeOp):
    """Base of the elementwise family: operands broadcast to the result shape."""

    SYMBOLIC_DIMS: ClassVar[bool] = True

    def elementwise_inputs(self) -> Sequence[SSAValue]:
        return self.operands

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        raise NotImplementedError

    def scalar_body(self) -> Region | None:
        """The region `build_scalar` copies, when the op stores its computation as one
        (`irt.elementwise`); None when `build_scalar` builds its ops afresh."""
        return None

    def verify_element_types(self) -> None:
        """The element types the op computes on: f32 only, unless the op says otherwise."""
        for i, v in enumerate(self.elementwise_inputs()):
            _check_f32_tensor(self, v, f"operand {i}")
        _check_f32_tensor(self, self.results[0], "the result")

    def verify_(self) -> None:
        self.verify_element_types()
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

    def verify_epilogue_inputs(self, inputs: Sequence[SSAValue], result_shape: Sequence[int]) -> None:
        """Each epilogue input is an f32 tensor that broadcasts to the result (verifiers' shared rule)."""
        expected = tuple(result_shape)
        for i, v in enumerate(inputs):
            _check_f32_tensor(self, v, f"epilogue input {i}")
            if broadcast_shapes(shape_of(v), expected) != expected:
                raise VerifyException(
                    f"{self.name}: epilogue input {i} of shape {_fmt(shape_of(v))} does not broadcast "
                    f"to the result shape {_fmt(expected)}"
                )


@irdl_op_definition
class YieldOp(StaticShapeOp):
    """Ends a scalar region of a fused op, yielding the element it computed."""

    name = "irt.yield"
    value = operand_def(AnyAttr())
    traits = traits_def(IsTerminator())
    assembly_format = "$value attr-dict `:` type($value)"

    def __init__(self, value: SSAValue | Operation):
        super().__init__(operands=[value])

    def verify_(self) -> None:
        if self.value.type not in ELEMENT_TYPES:
            raise VerifyException(f"irt.yield: yields a scalar of {_type_names(ELEMENT_TYPES)}, got {self.value.type}")
        parent = self.parent_op()  # an elementwise op keeping its computation in a region: irt.elementwise
        fused_elementwise = isinstance(parent, ElementwiseOp) and parent.scalar_body() is not None
        if not (fused_elementwise or isinstance(parent, EpilogueOp)):
            raise VerifyException("irt.yield must end the body of irt.elementwise or of an op's epilogue")


def _verify_scalar_region(
    op: Operation, region: Region, args: int | Sequence[Attribute], result: Attribute = f32
) -> None:
    """One block taking `args` (a count of f32 arguments, or their types) and yielding a `result`."""
    if len(region.blocks) != 1:
        raise VerifyException(f"{op.name}: the scalar body must have exactly one block")
    block = region.block
    types = [f32] * args if isinstance(args, int) else list(args)
    if [a.type for a in block.args] != types:
        got = ", ".join(str(a.type) for a in block.args)
        if all(is_float(t) for t in types):
            raise VerifyException(f"{op.name}: the scalar body must take {len(types)} f32 argument(s), got ({got})")
        raise VerifyException(f"{op.name}: the scalar body must take ({', '.join(map(str, types))}), got ({got})")
    if not isinstance(block.last_op, YieldOp):
        raise VerifyException(f"{op.name}: the scalar body must end with irt.yield")
    if block.last_op.value.type != result:
        raise VerifyException(f"{op.name}: the scalar body must yield {result}, got {block.last_op.value.type}")


def scalar_region(names: Sequence[str], body, types: Sequence[Attribute] | None = None) -> Region:
    """A one-block region of scalar arguments named `names` (f32, or `types`); `body(builder,
    args)` returns the element."""
    block = Block(arg_types=list(types) if types is not None else [f32] * len(names))
    for arg, name in zip(block.args, names):
        arg.name_hint = name
    b = Builder(InsertPoint.at_end(block))
    b.insert(YieldOp(body(b, block.args)))
    return Region(block)

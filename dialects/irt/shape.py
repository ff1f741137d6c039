"""`irt` ops: layout and data movement beyond reshape/transpose: slice, concat, expand,
embedding, and the index ops of language models: arange, gather, index_select, triu/tril.

    %s = irt.slice %x offsets [0, 2] strides [1, 2] : (tensor<4x8xf32>) -> tensor<4x3xf32>
    %c = irt.concat %a, %b dim 1 : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x7xf32>
    %e = irt.expand %x : (tensor<4x1xf32>) -> tensor<4x8xf32>
    %p = irt.arange start 0 step 1 : tensor<?xi64, #irt.dims<"s0">>
    %g = irt.gather %x, %idx dim 1 : (tensor<4x8xf32>, tensor<4x3xi64>) -> tensor<4x3xf32>
    %r = irt.index_select %x, %idx dim 0 : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<3x8xf32>
    %t = irt.tril %m diagonal 0 : tensor<?x?xi1, #irt.dims<"s0", "s0">>

The index ops are written for symbolic sizes (`SYMBOLIC_DIMS`): arange takes its length from its
result type, and their verifiers check what the sizes decide.

A slice takes, in each dimension d, `size_d` elements (the result's size) starting at
`offsets[d]`, `strides[d]` apart (torch's `x[a:b:s]`; int indexing is a size-1 slice followed by
an `irt.reshape`). Sizes may be symbolic (`dialects/symbolic.py`; strides are static), and so
may offsets: a `-1` in `offsets` (like a `?` in a shape) takes the next expression of
`dims <"...">`, an `#irt.dims` (GPT-2's decode step cuts row `s0` of its causal table). A concat
along the sequence of a KV cache gives `s0 + s1`, a slice of a run-time
dimension `s0 - 1` elements, and so on. Where a slice stays inside its input only for some
values of the symbols (`x[:, 0]` of an `s0`-long dimension needs s0 >= 1), the verifier accepts
it unless no value can, and `SliceOp.call_time_requirements` lists what a caller must check
(the importer turns them into size rules every call checks).
`irt.expand` broadcasts numpy-style, as torch's `expand` does; the importer emits it only when
no consumer broadcasts by itself (see convert_shape.py).
Permutations use `irt.transpose`, and views (squeeze, unsqueeze, flatten, ...) `irt.reshape`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    f32,
    f64,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    AnyAttr,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from irc.dialects.irt.core import (
    ELEMENT_TYPES,
    NUMERIC_TYPES,
    _check_f32_tensor,
    _check_same_element_type,
    _check_tensor,
    _fmt,
    element_type,
    shape_of,
)
from irc.dialects.static_shape import StaticShapeOp
from irc.dialects.symbolic import Dim, DimsAttr, dim, format_dim, parse_dim, symbols_of

SYMBOLIC_OFFSET = -1
"""A slice's offset that is an expression (offsets are otherwise >= 0)."""


@irdl_op_definition
class SliceOp(StaticShapeOp):
    """A strided box of the input: result[i...] = input[offsets + i * strides ...] (sizes may be
    symbolic, and so may offsets: see the module doc and `call_time_requirements`).

        %s = irt.slice %x offsets [0, 2] strides [1, 2] : (tensor<4x8xf32>) -> tensor<4x3xf32>
        %t = irt.slice %b offsets [0, -1] dims <"s0"> strides [1, 1] : (tensor<1x128xi1>) -> tensor<1x1xi1>
    """

    SYMBOLIC_DIMS: ClassVar[bool] = True
    name = "irt.slice"
    input = operand_def(TensorType)
    offsets = prop_def(DenseArrayBase.constr(i64))
    offset_dims = opt_prop_def(DimsAttr)
    strides = prop_def(DenseArrayBase.constr(i64))
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `offsets` $offsets (`dims` $offset_dims^)? `strides` $strides attr-dict `:` functional-type($input, $result)"
    )

    def __init__(self, input: SSAValue, offsets: Sequence[Dim], strides: Sequence[int], result_type: Attribute):
        exprs = [o for o in offsets if not isinstance(o, int)]
        properties = {
            "offsets": DenseArrayBase.from_list(i64, [o if isinstance(o, int) else SYMBOLIC_OFFSET for o in offsets]),
            "strides": DenseArrayBase.from_list(i64, list(strides)),
        }
        if exprs:
            properties["offset_dims"] = DimsAttr.get(exprs)
        super().__init__(operands=[input], result_types=[result_type], properties=properties)

    @property
    def offset_values(self) -> tuple[Dim, ...]:
        """Every offset: an int, or (a `-1` in `offsets`, as a `?` in a shape) the next
        expression of `offset_dims`."""
        exprs = iter(self.offset_dims.dims if self.offset_dims is not None else ())
        return tuple(next(exprs) if o == SYMBOLIC_OFFSET else o for o in self.offsets.get_values())

    @property
    def static_strides(self) -> tuple[int, ...]:
        return tuple(self.strides.get_values())

    def verify_(self) -> None:
        _check_same_element_type(self, (("the input", self.input), ("the result", self.result)), ELEMENT_TYPES)
        a, r = shape_of(self.input), shape_of(self.result)
        dynamic = sum(1 for o in self.offsets.get_values() if o == SYMBOLIC_OFFSET)
        given = len(self.offset_dims.dims) if self.offset_dims is not None else 0
        if dynamic != given:
            raise VerifyException(f"irt.slice: {dynamic} offset(s) are -1 (symbolic) but `dims` gives {given} expression(s)")
        offs, strides = self.offset_values, self.static_strides
        if not (len(a) == len(r) == len(offs) == len(strides)):
            raise VerifyException(
                f"irt.slice: input {_fmt(a)}, result {_fmt(r)}, {len(offs)} offsets and {len(strides)} "
                "strides must all have the same rank"
            )
        for d, (n, size, off, st) in enumerate(zip(a, r, offs, strides)):
            if st < 1:
                raise VerifyException(f"irt.slice: stride {st} in dimension {d} must be >= 1")
            if not _may_fit(n, size, off, st):
                raise VerifyException(
                    f"irt.slice: dimension {d} takes {format_dim(size)} element(s) from offset {format_dim(off)} with "
                    f"stride {st}, outside the input's size {format_dim(n)} (input {_fmt(a)}, result {_fmt(r)})"
                )

    def call_time_requirements(self) -> list[tuple[Dim, Dim]]:
        """(size, room) per dimension with symbolic sizes or offsets: when `size` > 0 at call
        time, `room` must be >= 0, or the slice would read outside its input: the input's size
        minus one past the last element read, and a symbolic offset itself."""
        found = []
        for n, size, off, st in zip(shape_of(self.input), shape_of(self.result), self.offset_values, self.static_strides):
            if not isinstance(off, int):
                found.append((size, off))
            if not (isinstance(n, int) and isinstance(size, int) and isinstance(off, int)):
                found.append((size, _room(n, size, off, st)))
        return found


def _room(n: Dim, size: Dim, offset: Dim, stride: int) -> Dim:
    """How far the last element a slice reads lies inside its input: n - 1 - (offset + (size - 1) * stride)."""
    return dim(n - 1 - (offset + (size - 1) * stride))


def _may_fit(n: Dim, size: Dim, offset: Dim, stride: int) -> bool:
    """Whether a slice of `size` elements from `offset`, `stride` apart, can stay inside `n`:
    for static sizes, whether it does (an empty box fits at any offset); with symbols, unless
    its last element is past the end whatever their values (a symbolic size that fits only
    when it is 0 is taken for a mistake)."""
    if (offset < 0 if isinstance(offset, int) else offset.is_negative) or (isinstance(size, int) and size < 0):
        return False
    if isinstance(size, int) and size == 0:
        return True
    room = _room(n, size, offset, stride)
    return room >= 0 if isinstance(room, int) else room.is_negative is not True


@irdl_op_definition
class ConcatOp(StaticShapeOp):
    """Inputs joined along `dim`; every other dimension agrees (sizes may be symbolic).

        %c = irt.concat %a, %b dim 1 : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x7xf32>
    """

    SYMBOLIC_DIMS: ClassVar[bool] = True
    name = "irt.concat"
    inputs = var_operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$inputs `dim` $dim attr-dict `:` functional-type($inputs, $result)"

    def __init__(self, inputs: Sequence[SSAValue], dim: int, result_type: Attribute):
        super().__init__(operands=[list(inputs)], result_types=[result_type], properties={"dim": IntegerAttr(dim, i64)})

    @property
    def axis(self) -> int:
        return self.dim.value.data

    def verify_(self) -> None:
        values = [(f"input {i}", v) for i, v in enumerate(self.inputs)] + [("the result", self.result)]
        _check_same_element_type(self, values, ELEMENT_TYPES)
        r, d = shape_of(self.result), self.axis
        shapes = [shape_of(v) for v in self.inputs]
        listed = ", ".join(map(_fmt, shapes))
        if not shapes:
            raise VerifyException("irt.concat: needs at least one input")
        if not 0 <= d < len(r):
            raise VerifyException(f"irt.concat: dim {d} is out of range for the result {_fmt(r)}")
        for s in shapes:
            if len(s) != len(r) or any(s[k] != r[k] for k in range(len(r)) if k != d):
                raise VerifyException(
                    f"irt.concat: inputs {listed} must match the result {_fmt(r)} in every dimension but {d}"
                )
        total = dim(sum(s[d] for s in shapes))
        if total != r[d]:
            raise VerifyException(
                f"irt.concat: inputs {listed} add up to {format_dim(total)} in dimension {d}, "
                f"the result {_fmt(r)} has {format_dim(r[d])}"
            )


def broadcasts_to(shape: Sequence[int], target: Sequence[int]) -> bool:
    """Whether `shape` broadcasts numpy-style to exactly `target`."""
    lead = len(target) - len(shape)
    return lead >= 0 and all(s in (1, target[lead + d]) for d, s in enumerate(shape))


@irdl_op_definition
class ExpandOp(StaticShapeOp):
    """The input broadcast numpy-style to the result shape (torch's expand/broadcast_to).

        %e = irt.expand %x : (tensor<4x1xf32>) -> tensor<4x8xf32>
    """

    SYMBOLIC_DIMS: ClassVar[bool] = True
    name = "irt.expand"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type($input, $result)"

    def __init__(self, input: SSAValue, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_(self) -> None:
        _check_same_element_type(self, (("the input", self.input), ("the result", self.result)), ELEMENT_TYPES)
        a, r = shape_of(self.input), shape_of(self.result)
        if not broadcasts_to(a, r):
            raise VerifyException(f"irt.expand: input {_fmt(a)} does not broadcast to the result {_fmt(r)}")


@irdl_op_definition
class EmbeddingOp(StaticShapeOp):
    """Rows of a table picked by integer indices: result[i..., d] = weight[indices[i...], d]
    (torch's `nn.Embedding` / `F.embedding` in inference).

        %e = irt.embedding %idx, %w : (tensor<2x5xi64>, tensor<10x8xf32>) -> tensor<2x5x8xf32>

    The indices are the only i64 tensors irc compiles (a model input or parameter); the result
    shape is the indices' shape plus [D]. An index outside [0, V) does not read out of bounds:
    its whole result row is NaN (eager PyTorch raises an IndexError instead).
    """

    SYMBOLIC_DIMS: ClassVar[bool] = True
    name = "irt.embedding"
    indices = operand_def(TensorType)
    weight = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$indices `,` $weight attr-dict `:` functional-type(operands, $result)"

    def __init__(self, indices: SSAValue, weight: SSAValue, result_type: Attribute):
        super().__init__(operands=[indices, weight], result_types=[result_type])

    def verify_(self) -> None:
        t = self.indices.type
        if not isinstance(t, TensorType) or not (isinstance(t.element_type, IntegerType) and t.element_type.width.data == 64):
            raise VerifyException(f"irt.embedding: the indices must be a tensor of i64, got {t}")
        _check_f32_tensor(self, self.weight, "the weight")
        _check_f32_tensor(self, self.result, "the result")
        idx, w, r = shape_of(self.indices), shape_of(self.weight), shape_of(self.result)
        if len(w) != 2:
            raise VerifyException(f"irt.embedding: the weight {_fmt(w)} must be 2-D (rows x embedding size)")
        if r != (*idx, w[1]):
            raise VerifyException(
                f"irt.embedding: indices {_fmt(idx)} and weight {_fmt(w)} give a result of shape "
                f"{_fmt((*idx, w[1]))}, not {_fmt(r)}"
            )


# ---------------------------------------------------------------------------------------------
# The index ops of language models (symbolic sizes)
# ---------------------------------------------------------------------------------------------


def _normalize_dim(op_name: str, dim: int, rank: int) -> int:
    if not 0 <= dim < rank:
        raise VerifyException(f"{op_name}: dim {dim} is out of range for a rank-{rank} tensor")
    return dim


@irdl_op_definition
class ArangeOp(StaticShapeOp):
    """start, start + step, start + 2 * step, ...: as many as the 1-D result has (torch.arange,
    its length taken from the result type, so it may be a symbolic size). i64 results need an
    integral start and step; f32 ones compute start + i * step in f32 (exact for integral values
    up to 2**24).

        %p = irt.arange start 0.000000e+00 step 1.000000e+00 : tensor<?xi64, #irt.dims<"s0">>
    """

    SYMBOLIC_DIMS: ClassVar[bool] = True
    name = "irt.arange"
    start = prop_def(FloatAttr[Float64Type])
    step = prop_def(FloatAttr[Float64Type])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "`start` $start `step` $step attr-dict `:` type($result)"

    def __init__(self, start: float, step: float, result_type: Attribute):
        super().__init__(
            result_types=[result_type],
            properties={"start": FloatAttr(float(start), f64), "step": FloatAttr(float(step), f64)},
        )

    @property
    def start_value(self) -> float:
        return self.start.value.data

    @property
    def step_value(self) -> float:
        return self.step.value.data

    def verify_(self) -> None:
        _check_tensor(self, self.result, "the result", NUMERIC_TYPES)
        if len(shape_of(self.result)) != 1:
            raise VerifyException(f"irt.arange: the result must be 1-D, got {_fmt(shape_of(self.result))}")
        values = (self.start_value, self.step_value)
        if not all(math.isfinite(v) for v in values):
            raise VerifyException(f"irt.arange: start and step must be finite, got {values[0]} and {values[1]}")
        if element_type(self.result) == i64 and not all(v.is_integer() for v in values):
            raise VerifyException(f"irt.arange: an i64 result needs an integral start and step, got {values[0]} and {values[1]}")


def _check_indices(op: StaticShapeOp, indices: SSAValue) -> None:
    _check_tensor(op, indices, "the indices", (i64,))


class _IndexedByDim(StaticShapeOp):
    """An op reading its input at integer `indices` along `dim` (gather, index_select): the
    operands, the dim and the checks they share; `check` is each op's own shape rule."""

    SYMBOLIC_DIMS: ClassVar[bool] = True
    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input `,` $indices `dim` $dim attr-dict `:` functional-type(operands, $result)"

    def __init__(self, input: SSAValue, indices: SSAValue, dim: int, result_type: Attribute):
        super().__init__(operands=[input, indices], result_types=[result_type], properties={"dim": IntegerAttr(dim, i64)})

    @property
    def axis(self) -> int:
        return self.dim.value.data

    def verify_(self) -> None:
        _check_same_element_type(self, (("the input", self.input), ("the result", self.result)), ELEMENT_TYPES)
        _check_indices(self, self.indices)
        x, idx, r = shape_of(self.input), shape_of(self.indices), shape_of(self.result)
        d = _normalize_dim(self.name, self.axis, len(x))
        self.check(x, idx, r, d)

    def check(self, x: tuple[Dim, ...], idx: tuple[Dim, ...], r: tuple[Dim, ...], d: int) -> None:
        raise NotImplementedError


@irdl_op_definition
class GatherOp(_IndexedByDim):
    """torch.gather: result[i..., j, k...] = input[i..., index[i..., j, k...], k...] along `dim`;
    the indices have the input's rank, and the result their shape. An index outside
    [0, input.shape[dim]) (eager raises) reads nothing: the element is NaN, or 0 / false.

        %g = irt.gather %x, %idx dim 1 : (tensor<4x8xf32>, tensor<4x3xi64>) -> tensor<4x3xf32>
    """

    name = "irt.gather"

    def check(self, x: tuple[Dim, ...], idx: tuple[Dim, ...], r: tuple[Dim, ...], d: int) -> None:
        if len(idx) != len(x) or r != idx:
            raise VerifyException(
                f"irt.gather: indices {_fmt(idx)} must have the rank of the input {_fmt(x)}, and the result "
                f"{_fmt(r)} their shape"
            )
        for k, (n, m) in enumerate(zip(x, idx)):  # torch: index.size(k) <= input.size(k) for k != dim
            if k != d and isinstance(n, int) and isinstance(m, int) and m > n:
                raise VerifyException(f"irt.gather: indices {_fmt(idx)} are larger than the input {_fmt(x)} in dim {k}")


@irdl_op_definition
class IndexSelectOp(_IndexedByDim):
    """torch.index_select: the input's slices along `dim` picked by 1-D indices, in their order:
    result[..., j, ...] = input[..., index[j], ...]. An index outside the input (eager raises)
    reads nothing: its slice is NaN, or 0 / false.

        %r = irt.index_select %x, %idx dim 0 : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<3x8xf32>
    """

    name = "irt.index_select"

    def check(self, x: tuple[Dim, ...], idx: tuple[Dim, ...], r: tuple[Dim, ...], d: int) -> None:
        expected = (*x[:d], *idx, *x[d + 1 :])
        if len(idx) != 1 or r != expected:
            raise VerifyException(
                f"irt.index_select: 1-D indices {_fmt(idx)} into dim {d} of {_fmt(x)} give {_fmt(expected)}, "
                f"not {_fmt(r)}"
            )


class TriangleOp(StaticShapeOp):
    """The input with the elements on one side of a diagonal of its last two dims set to zero
    (false for i1): torch.triu / torch.tril at run time."""

    SYMBOLIC_DIMS: ClassVar[bool] = True
    T: ClassVar = VarConstraint("T", AnyAttr())
    input = operand_def(T)
    diagonal = prop_def(IntegerAttr[I64])
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$input `diagonal` $diagonal attr-dict `:` type($result)"
    UPPER: ClassVar[bool]

    def __init__(self, input: SSAValue, diagonal: int = 0):
        super().__init__(operands=[input], result_types=[input.type], properties={"diagonal": IntegerAttr(diagonal, i64)})

    @property
    def offset(self) -> int:
        return self.diagonal.value.data

    def verify_(self) -> None:
        _check_same_element_type(self, (("the input", self.input), ("the result", self.result)), ELEMENT_TYPES)
        if len(shape_of(self.input)) < 2 or shape_of(self.result) != shape_of(self.input):
            raise VerifyException(
                f"{self.name}: needs an input of rank >= 2 and a result of its shape, got "
                f"{_fmt(shape_of(self.input))} -> {_fmt(shape_of(self.result))}"
            )


@irdl_op_definition
class TriuOp(TriangleOp):
    """Keeps x[..., i, j] where j - i >= diagonal (torch.triu).   %t = irt.triu %x diagonal 1 : tensor<4x4xf32>"""

    name = "irt.triu"
    UPPER: ClassVar[bool] = True


@irdl_op_definition
class TrilOp(TriangleOp):
    """Keeps x[..., i, j] where j - i <= diagonal (torch.tril).   %t = irt.tril %x diagonal 0 : tensor<4x4xi1>"""

    name = "irt.tril"
    UPPER: ClassVar[bool] = False


@irdl_op_definition
class SizeOp(StaticShapeOp):
    """A size as a number: the value of a size expression, a 0-d f32 tensor (torch's
    `x * x.shape[0]`, a size used in arithmetic).

        %n = irt.size %x "2 * s0" : (tensor<?x16xf32, #irt.dims<"s0">>) -> tensor<f32>

    The operand binds the expression's symbols (each is one of its dimensions' sizes), so the
    value is the call's, never folded at compile time: only its shape is read."""

    SYMBOLIC_DIMS: ClassVar[bool] = True
    name = "irt.size"
    source = operand_def(TensorType)
    expr = prop_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$source $expr attr-dict `:` functional-type($source, $result)"

    def __init__(self, source: SSAValue, value: Dim):
        super().__init__(
            operands=[source], properties={"expr": StringAttr(format_dim(value))}, result_types=[TensorType(f32, [])]
        )

    @property
    def value(self) -> Dim:
        return parse_dim(self.expr.data)

    def verify_(self) -> None:
        _check_f32_tensor(self, self.result, "the result")
        if shape_of(self.result) != ():
            raise VerifyException(f"irt.size: the result is a 0-d tensor<f32>, got {self.result.type}")
        try:
            value = self.value
        except ValueError as e:
            raise VerifyException(f"irt.size: {e}") from None
        dims = set(shape_of(self.source))
        missing = sorted(str(s) for s in symbols_of([value]) if s not in dims)
        if missing:
            raise VerifyException(
                f"irt.size: {', '.join(missing)} is no dimension of the operand {_fmt(shape_of(self.source))}"
            )


OPS = [SliceOp, ConcatOp, ExpandOp, EmbeddingOp, SizeOp, ArangeOp, GatherOp, IndexSelectOp, TriuOp, TrilOp]
ATTRS: list = []

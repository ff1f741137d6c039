"""`irt` ops: layout and data movement beyond reshape/transpose: slice, concat, expand.

    %s = irt.slice %x offsets [0, 2] strides [1, 2] : (tensor<4x8xf32>) -> tensor<4x3xf32>
    %c = irt.concat %a, %b dim 1 : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x7xf32>
    %e = irt.expand %x : (tensor<4x1xf32>) -> tensor<4x8xf32>

A slice takes, in each dimension d, `size_d` elements (the result's size) starting at
`offsets[d]`, `strides[d]` apart (torch's `x[a:b:s]`; int indexing is a size-1 slice followed by
an `irt.reshape`). Sizes may be symbolic (`dialects/symbolic.py`; offsets and strides are
static): a concat along the sequence of a KV cache gives `s0 + s1`, a slice of a run-time
dimension `s0 - 1` elements, and so on. Where a slice stays inside its input only for some
values of the symbols (`x[:, 0]` of an `s0`-long dimension needs s0 >= 1), the verifier accepts
it unless no value can, and `SliceOp.call_time_requirements` lists what a caller must check.
`irt.expand` broadcasts numpy-style, as torch's `expand` does; the importer emits it only when
no consumer broadcasts by itself (see convert_shape.py).
Permutations use `irt.transpose`, and views (squeeze, unsqueeze, flatten, ...) `irt.reshape`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import I64, DenseArrayBase, IntegerAttr, IntegerType, StringAttr, TensorType, f32, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from irc.dialects.irt.core import _check_f32_tensor, _fmt, shape_of
from irc.dialects.static_shape import StaticShapeOp
from irc.dialects.symbolic import Dim, dim, format_dim, parse_dim, symbols_of


@irdl_op_definition
class SliceOp(StaticShapeOp):
    """A strided box of the input: result[i...] = input[offsets + i * strides ...].

        %s = irt.slice %x offsets [0, 2] strides [1, 2] : (tensor<4x8xf32>) -> tensor<4x3xf32>
    """

    SYMBOLIC_DIMS: ClassVar[bool] = True
    name = "irt.slice"
    input = operand_def(TensorType)
    offsets = prop_def(DenseArrayBase.constr(i64))
    strides = prop_def(DenseArrayBase.constr(i64))
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input `offsets` $offsets `strides` $strides attr-dict `:` functional-type($input, $result)"

    def __init__(self, input: SSAValue, offsets: Sequence[int], strides: Sequence[int], result_type: Attribute):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={
                "offsets": DenseArrayBase.from_list(i64, list(offsets)),
                "strides": DenseArrayBase.from_list(i64, list(strides)),
            },
        )

    @property
    def static_offsets(self) -> tuple[int, ...]:
        return tuple(self.offsets.get_values())

    @property
    def static_strides(self) -> tuple[int, ...]:
        return tuple(self.strides.get_values())

    def verify_(self) -> None:
        _check_f32_tensor(self, self.input, "the input")
        _check_f32_tensor(self, self.result, "the result")
        a, r = shape_of(self.input), shape_of(self.result)
        offs, strides = self.static_offsets, self.static_strides
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
                    f"irt.slice: dimension {d} takes {format_dim(size)} element(s) from offset {off} with stride "
                    f"{st}, outside the input's size {format_dim(n)} (input {_fmt(a)}, result {_fmt(r)})"
                )

    def call_time_requirements(self) -> list[tuple[Dim, Dim]]:
        """(size, room) per dimension with symbolic sizes: when `size` > 0 at call time, `room`
        (the input's size minus one past the last element read) must be >= 0, or the slice
        would read outside its input."""
        return [(size, _room(n, size, off, st))
                for n, size, off, st in zip(shape_of(self.input), shape_of(self.result), self.static_offsets,
                                            self.static_strides)
                if not (isinstance(n, int) and isinstance(size, int))]


def _room(n: Dim, size: Dim, offset: int, stride: int) -> Dim:
    """How far the last element a slice reads lies inside its input: n - 1 - (offset + (size - 1) * stride)."""
    return dim(n - 1 - (offset + (size - 1) * stride))


def _may_fit(n: Dim, size: Dim, offset: int, stride: int) -> bool:
    """Whether a slice of `size` elements from `offset`, `stride` apart, can stay inside `n`:
    for static sizes, whether it does (an empty box fits at any offset); with symbols, unless
    its last element is past the end whatever their values (a symbolic size that fits only
    when it is 0 is taken for a mistake)."""
    if offset < 0 or (isinstance(size, int) and size < 0):
        return False
    if isinstance(size, int) and size == 0:
        return True
    room = _room(n, size, offset, stride)
    return room >= 0 if isinstance(room, int) else room.is_negative is not True


@irdl_op_definition
class ConcatOp(StaticShapeOp):
    """Inputs joined along `dim`; every other dimension agrees.

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
        _check_f32_tensor(self, self.result, "the result")
        r, d = shape_of(self.result), self.axis
        shapes = [shape_of(v) for v in self.inputs]
        for i, v in enumerate(self.inputs):
            _check_f32_tensor(self, v, f"input {i}")
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
        _check_f32_tensor(self, self.input, "the input")
        _check_f32_tensor(self, self.result, "the result")
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


OPS = [SliceOp, ConcatOp, ExpandOp, EmbeddingOp, SizeOp]
ATTRS: list = []

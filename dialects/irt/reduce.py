"""`irt` ops: reductions and normalizations (sum, mean, amax over dims; softmax, log_softmax,
layer_norm), batched matmul and attention.

Softmax, log_softmax and layer_norm are single ops: the importer maps `F.softmax`,
`F.log_softmax`, `F.layer_norm` and `nn.LayerNorm` straight to them, so each is already one
fused kernel (a row-wise reduction followed by the normalizing write) and no fusion rule has to
recognize a decomposed form (mean, sub, pow, mean, add eps, rsqrt, mul...). `irt.attention` is
`F.scaled_dot_product_attention` as one op: its lowering keeps one row of running softmax state
per (batch, head, query) and never materializes the scores matrix. All ops compute on f32 and
accumulate in f32.

Every size may be symbolic (`dialects/symbolic.py`): a batch, a sequence length, attention's Lq
and Lk (the scores' last dim, which softmax then runs over). Verifiers compare sizes as
expressions. What only the call can tell is the caller's to check: an `amax` over a dimension
that is 0 at call time gives -inf (eager raises, and the verifier rejects a static one).

    %s = irt.reduce sum %x [1] keepdim : (tensor<4x8xf32>) -> tensor<4x1xf32>
    %p = irt.softmax %x dim 1 : tensor<4x8xf32>
    %n = irt.layer_norm %x : tensor<4x8xf32> weight %w : tensor<8xf32> bias %b : tensor<8xf32> dims 1 eps 1.000000e-05 -> tensor<4x8xf32>
    %y = irt.batch_matmul matmul %a, %b : (tensor<2x4x8xf32>, tensor<2x8x16xf32>) -> tensor<2x4x16xf32>
    %o = irt.attention %q, %k, %v scale 0.125 causal : (...) -> tensor<1x4x16x8xf32>
    %c = irt.cumsum %m dim 1 : tensor<?x?xi64, #irt.dims<"s0", "s1">>

`irt.cumsum` (running sums along one dim, f32 or i64: position ids from an attention mask) is
written for symbolic sizes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    DenseArrayBase,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    TensorType,
    UnitAttr,
    f64,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    AnyAttr,
    AttrSizedOperandSegments,
    VarConstraint,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from irc.dialects.irt.core import (
    NUMERIC_TYPES,
    ContractionKind,
    ContractionKindAttr,
    _check_f32_tensor,
    _check_same_element_type,
    _fmt,
    broadcast_shapes,
    shape_of,
)
from irc.dialects.static_shape import StaticShapeOp


def _normalize_dim(op_name: str, dim: int, rank: int) -> int:
    if not -max(rank, 1) <= dim < max(rank, 1):
        raise VerifyException(f"{op_name}: dim {dim} is out of range for a rank-{rank} tensor")
    return dim % max(rank, 1)


# ---------------------------------------------------------------------------------------------
# irt.reduce
# ---------------------------------------------------------------------------------------------


class ReduceKind(StrEnum):
    SUM = "sum"
    MEAN = "mean"
    MAX = "max"  # torch.amax: NaN propagates


@irdl_attr_definition
class ReduceKindAttr(EnumAttribute[ReduceKind], SpacedOpaqueSyntaxAttribute):
    """What `irt.reduce` computes: `sum`, `mean` or `max` (torch.amax)."""

    name = "irt.reduce_kind"


def reduced_shape(shape: Sequence[int], dims: Sequence[int], keepdim: bool) -> tuple[int, ...]:
    """The shape of reducing `shape` over `dims` (non-negative): size 1 or dropped."""
    if keepdim:
        return tuple(1 if d in dims else s for d, s in enumerate(shape))
    return tuple(s for d, s in enumerate(shape) if d not in dims)


@irdl_op_definition
class ReduceOp(StaticShapeOp):
    """Sum, mean or max over `dims` (sorted, non-negative; all dims for a full reduction). Sizes
    may be symbolic (a mean over a sequence of any length).

        %s = irt.reduce mean %x [0, 2] keepdim : (tensor<3x4x5xf32>) -> tensor<1x4x1xf32>
    """

    SYMBOLIC_DIMS: ClassVar[bool] = True
    name = "irt.reduce"
    kind = prop_def(ReduceKindAttr)
    input = operand_def(TensorType)
    dims = prop_def(DenseArrayBase.constr(i64))
    keepdim = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$kind $input $dims (`keepdim` $keepdim^)? attr-dict `:` functional-type($input, $result)"

    def __init__(self, kind: str, input: SSAValue, dims: Sequence[int], keepdim: bool, result_type: Attribute):
        props: dict[str, Attribute] = {
            "kind": ReduceKindAttr(ReduceKind(kind)),
            "dims": DenseArrayBase.from_list(i64, sorted(dims)),
        }
        if keepdim:
            props["keepdim"] = UnitAttr()
        super().__init__(operands=[input], result_types=[result_type], properties=props)

    @property
    def reduce_kind(self) -> ReduceKind:
        return self.kind.data

    @property
    def reduce_dims(self) -> tuple[int, ...]:
        return tuple(self.dims.get_values())

    @property
    def keeps_dims(self) -> bool:
        return self.keepdim is not None

    def verify_(self) -> None:
        _check_f32_tensor(self, self.input, "the input")
        _check_f32_tensor(self, self.result, "the result")
        shape, dims = shape_of(self.input), self.reduce_dims
        if list(dims) != sorted(set(dims)) or any(not 0 <= d < len(shape) for d in dims):
            raise VerifyException(
                f"irt.reduce: dims {list(dims)} must be sorted, distinct and within 0..{len(shape) - 1} "
                f"for input {_fmt(shape)}"
            )
        empty = [d for d in dims if shape[d] == 0]
        if self.reduce_kind == ReduceKind.MAX and empty:
            raise VerifyException(
                f"irt.reduce: max over dimension {empty[0]} of size 0 (input {_fmt(shape)}) has no value; "
                "torch.amax raises for it too"
            )
        expected = reduced_shape(shape, dims, self.keeps_dims)
        if shape_of(self.result) != expected:
            raise VerifyException(
                f"irt.reduce: reducing {_fmt(shape)} over {list(dims)}"
                f"{' with keepdim' if self.keeps_dims else ''} gives {_fmt(expected)}, "
                f"not {_fmt(shape_of(self.result))}"
            )


# ---------------------------------------------------------------------------------------------
# irt.softmax, irt.log_softmax
# ---------------------------------------------------------------------------------------------


class SoftmaxBase(StaticShapeOp):
    """Softmax-like ops over one dim: a stable (max-subtracting) two-pass row computation."""

    SYMBOLIC_DIMS: ClassVar[bool] = True
    T: ClassVar = VarConstraint("T", AnyAttr())
    input = operand_def(T)
    dim = prop_def(IntegerAttr[i64])
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$input `dim` $dim attr-dict `:` type($result)"
    LOG: ClassVar[bool] = False

    def __init__(self, input: SSAValue, dim: int):
        v = SSAValue.get(input)
        super().__init__(operands=[v], result_types=[v.type], properties={"dim": IntegerAttr(dim, i64)})

    @property
    def axis(self) -> int:
        """The (non-negative) dim the softmax runs over."""
        return self.dim.value.data % max(len(shape_of(self.input)), 1)

    def verify_(self) -> None:
        _check_f32_tensor(self, self.input, "the input")
        shape = shape_of(self.input)
        if not shape:
            raise VerifyException(f"{self.name}: the input must have rank >= 1, got a scalar")
        _normalize_dim(self.name, self.dim.value.data, len(shape))


@irdl_op_definition
class SoftmaxOp(SoftmaxBase):
    """exp(x - max) / sum(exp(x - max)) along `dim`.   %p = irt.softmax %x dim -1 : tensor<4x8xf32>"""

    name = "irt.softmax"


@irdl_op_definition
class LogSoftmaxOp(SoftmaxBase):
    """x - max - log(sum(exp(x - max))) along `dim`.   %p = irt.log_softmax %x dim 1 : tensor<4x8xf32>"""

    name = "irt.log_softmax"
    LOG: ClassVar[bool] = True


# ---------------------------------------------------------------------------------------------
# irt.layer_norm
# ---------------------------------------------------------------------------------------------


@irdl_op_definition
class LayerNormOp(StaticShapeOp):
    """Layer normalization over the trailing `dims` dimensions, with optional affine weight and bias
    (shaped like those dimensions): (x - mean) / sqrt(var + eps) * weight + bias, biased variance.

        %y = irt.layer_norm %x : tensor<4x8xf32> weight %w : tensor<8xf32> bias %b : tensor<8xf32> dims 1 eps 1.000000e-05 -> tensor<4x8xf32>
    """

    SYMBOLIC_DIMS: ClassVar[bool] = True
    name = "irt.layer_norm"
    input = operand_def(TensorType)
    weight = opt_operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    dims = prop_def(IntegerAttr[i64])
    eps = prop_def(FloatAttr[Float64Type])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$input `:` type($input) (`weight` $weight^ `:` type($weight))? (`bias` $bias^ `:` type($bias))? "
        "`dims` $dims `eps` $eps attr-dict `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue,
        weight: SSAValue | None,
        bias: SSAValue | None,
        dims: int,
        eps: float,
    ):
        super().__init__(
            operands=[input, weight, bias],
            result_types=[input.type],
            properties={"dims": IntegerAttr(dims, i64), "eps": FloatAttr(eps, f64)},
        )

    @property
    def normalized_rank(self) -> int:
        return self.dims.value.data

    @property
    def epsilon(self) -> float:
        return self.eps.value.data

    def verify_(self) -> None:
        _check_f32_tensor(self, self.input, "the input")
        _check_f32_tensor(self, self.result, "the result")
        shape, n = shape_of(self.input), self.normalized_rank
        if not 1 <= n <= len(shape):
            raise VerifyException(
                f"irt.layer_norm: dims {n} must be between 1 and the rank of the input {_fmt(shape)}"
            )
        if shape_of(self.result) != shape:
            raise VerifyException(
                f"irt.layer_norm: result shape {_fmt(shape_of(self.result))} should be the input shape {_fmt(shape)}"
            )
        trailing = shape[len(shape) - n :]
        for what, v in (("weight", self.weight), ("bias", self.bias)):
            if v is None:
                continue
            _check_f32_tensor(self, v, f"the {what}")
            if shape_of(v) != trailing:
                raise VerifyException(
                    f"irt.layer_norm: {what} of shape {_fmt(shape_of(v))} should have the normalized "
                    f"shape {_fmt(trailing)} (the last {n} dim(s) of {_fmt(shape)})"
                )


# ---------------------------------------------------------------------------------------------
# irt.batch_matmul
# ---------------------------------------------------------------------------------------------


def batch_matmul_shape(
    kind: ContractionKind, lhs: tuple[int, ...], rhs: tuple[int, ...]
) -> tuple[int, ...]:
    """[..., M, K] x [..., K, N] (matmul) or [..., N, K] (linear) with broadcast batch dims."""
    if len(lhs) < 2 or len(rhs) < 2:
        raise VerifyException(f"operands must have rank >= 2, got {_fmt(lhs)} and {_fmt(rhs)}")
    m, k = lhs[-2:]
    n, rk = rhs[-2:] if kind == ContractionKind.LINEAR else rhs[-2:][::-1]
    if k != rk:
        layout = "[..., N, K]" if kind == ContractionKind.LINEAR else "[..., K, N]"
        raise VerifyException(
            f"contracting dimensions differ: lhs {_fmt(lhs)} has {k}, rhs {_fmt(rhs)} has {rk} "
            f"({kind} expects rhs as {layout})"
        )
    batch = broadcast_shapes(lhs[:-2], rhs[:-2])
    if batch is None:
        raise VerifyException(f"batch dimensions of {_fmt(lhs)} and {_fmt(rhs)} do not broadcast")
    return (*batch, m, n)


@irdl_op_definition
class BatchMatmulOp(StaticShapeOp):
    """Batched matmul with broadcast batch dims: lhs [..., M, K] times rhs [..., K, N] (`matmul`)
    or rhs [..., N, K] read transposed in place (`linear`, e.g. q @ k^T).

        %s = irt.batch_matmul linear %q, %k : (tensor<2x4x16x8xf32>, tensor<2x4x32x8xf32>) -> tensor<2x4x16x32xf32>
    """

    SYMBOLIC_DIMS: ClassVar[bool] = True
    name = "irt.batch_matmul"
    kind = prop_def(ContractionKindAttr)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$kind $lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(self, kind: str, lhs: SSAValue, rhs: SSAValue, result_type: Attribute):
        super().__init__(
            operands=[lhs, rhs],
            result_types=[result_type],
            properties={"kind": ContractionKindAttr(ContractionKind(kind))},
        )

    @property
    def contraction_kind(self) -> ContractionKind:
        return self.kind.data

    def verify_(self) -> None:
        for what, v in (("lhs", self.lhs), ("rhs", self.rhs), ("the result", self.result)):
            _check_f32_tensor(self, v, what)
        try:
            expected = batch_matmul_shape(self.contraction_kind, shape_of(self.lhs), shape_of(self.rhs))
        except VerifyException as e:
            raise VerifyException(f"irt.batch_matmul: {e}") from None
        if shape_of(self.result) != expected:
            raise VerifyException(
                f"irt.batch_matmul: result shape {_fmt(shape_of(self.result))} should be {_fmt(expected)}"
            )


# ---------------------------------------------------------------------------------------------
# irt.attention
# ---------------------------------------------------------------------------------------------


def attention_shape(q: tuple[int, ...], k: tuple[int, ...], v: tuple[int, ...]) -> tuple[int, ...]:
    """q [..., Lq, E], k [..., Lk, E], v [..., Lk, Ev] -> [..., Lq, Ev]; raises VerifyException."""
    if min(len(q), len(k), len(v)) < 2:
        raise VerifyException(f"q, k, v must have rank >= 2, got {_fmt(q)}, {_fmt(k)}, {_fmt(v)}")
    if q[-1] != k[-1]:
        raise VerifyException(f"q {_fmt(q)} and k {_fmt(k)} have different head dims ({q[-1]} vs {k[-1]})")
    if k[-2] != v[-2]:
        raise VerifyException(f"k {_fmt(k)} and v {_fmt(v)} have different lengths ({k[-2]} vs {v[-2]})")
    batch = broadcast_shapes(q[:-2], k[:-2], v[:-2])
    if batch is None:
        raise VerifyException(f"batch dims of q {_fmt(q)}, k {_fmt(k)}, v {_fmt(v)} do not broadcast")
    return (*batch, q[-2], v[-1])


@irdl_op_definition
class AttentionOp(StaticShapeOp):
    """Scaled dot-product attention, as F.scaled_dot_product_attention (dropout 0):
    softmax(q @ k^T * scale + mask [causal: -inf above the diagonal]) @ v, one fused op.

    q [..., Lq, E], k [..., Lk, E], v [..., Lk, Ev], optional additive float mask broadcasting to
    [..., Lq, Lk]; `causal` lets query i attend keys j <= i (top-left aligned, as torch). A row
    whose scores are all -inf (masked whole) is NaN, as torch.softmax gives; with `safe` it is 0,
    as F.scaled_dot_product_attention gives from torch 2.5 on (its `_safe_softmax`).

        %o = irt.attention %q, %k, %v mask %m scale 0.125 : (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<16x16xf32>) -> tensor<1x4x16x8xf32>
    """

    SYMBOLIC_DIMS: ClassVar[bool] = True
    name = "irt.attention"
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    scale = prop_def(FloatAttr[Float64Type])
    is_causal = opt_prop_def(UnitAttr)
    zero_masked_rows = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$q `,` $k `,` $v (`mask` $mask^)? `scale` $scale (`causal` $is_causal^)? (`safe` $zero_masked_rows^)? "
        "attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        q: SSAValue,
        k: SSAValue,
        v: SSAValue,
        mask: SSAValue | None,
        scale: float,
        causal: bool,
        result_type: Attribute,
        safe: bool = False,
    ):
        props: dict[str, Attribute] = {"scale": FloatAttr(scale, f64)}
        if causal:
            props["is_causal"] = UnitAttr()
        if safe:
            props["zero_masked_rows"] = UnitAttr()
        super().__init__(operands=[q, k, v, mask], result_types=[result_type], properties=props)

    @property
    def scale_value(self) -> float:
        return self.scale.value.data

    @property
    def causal(self) -> bool:
        return self.is_causal is not None

    @property
    def safe(self) -> bool:
        """A row masked whole gives 0 (else NaN)."""
        return self.zero_masked_rows is not None

    def verify_(self) -> None:
        for what, val in (("q", self.q), ("k", self.k), ("v", self.v), ("the result", self.result)):
            _check_f32_tensor(self, val, what)
        q, k, v = shape_of(self.q), shape_of(self.k), shape_of(self.v)
        try:
            expected = attention_shape(q, k, v)
        except VerifyException as e:
            raise VerifyException(f"irt.attention: {e}") from None
        if shape_of(self.result) != expected:
            raise VerifyException(
                f"irt.attention: result shape {_fmt(shape_of(self.result))} should be {_fmt(expected)}"
            )
        if self.mask is not None:
            _check_f32_tensor(self, self.mask, "the mask")
            scores = (*expected[:-2], q[-2], k[-2])
            if broadcast_shapes(shape_of(self.mask), scores) != scores:
                raise VerifyException(
                    f"irt.attention: mask of shape {_fmt(shape_of(self.mask))} does not broadcast to the "
                    f"scores shape {_fmt(scores)}"
                )
        if not math.isfinite(self.scale_value):
            raise VerifyException(f"irt.attention: scale must be finite, got {self.scale_value}")


# ---------------------------------------------------------------------------------------------
# irt.cumsum
# ---------------------------------------------------------------------------------------------


@irdl_op_definition
class CumsumOp(StaticShapeOp):
    """Running sums along `dim` (torch.cumsum): result[..., j, ...] = sum of input[..., :j+1, ...].
    f32 sums accumulate in double, as torch's CPU kernel does; i64 ones wrap.

        %c = irt.cumsum %m dim 1 : tensor<?x?xi64, #irt.dims<"s0", "s1">>
    """

    SYMBOLIC_DIMS: ClassVar[bool] = True
    name = "irt.cumsum"
    T: ClassVar = VarConstraint("T", AnyAttr())
    input = operand_def(T)
    dim = prop_def(IntegerAttr[i64])
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$input `dim` $dim attr-dict `:` type($result)"

    def __init__(self, input: SSAValue, dim: int):
        v = SSAValue.get(input)
        super().__init__(operands=[v], result_types=[v.type], properties={"dim": IntegerAttr(dim, i64)})

    @property
    def axis(self) -> int:
        return self.dim.value.data % max(len(shape_of(self.input)), 1)

    def verify_(self) -> None:
        _check_same_element_type(self, (("the input", self.input), ("the result", self.result)), NUMERIC_TYPES)
        shape = shape_of(self.input)
        if not shape:
            raise VerifyException("irt.cumsum: the input must have rank >= 1, got a scalar")
        _normalize_dim(self.name, self.dim.value.data, len(shape))


OPS: list = [ReduceOp, SoftmaxOp, LogSoftmaxOp, LayerNormOp, BatchMatmulOp, AttentionOp, CumsumOp]
ATTRS: list = [ReduceKindAttr]

"""`irt` ops: convolution and pooling, NCHW, f32.

* `irt.conv2d`: stride, padding, dilation, groups, optional bias, fused epilogue (an `EpilogueOp`,
  so activations and residual adds fuse into it through the generic `contraction-epilogue` rule);
* `irt.batch_norm`: inference-mode batch norm, an `ElementwiseOp` (its statistics are shaped
  `[C, 1, ...]` so they broadcast over dim 1), so it fuses like any elementwise op, and the
  `conv-batchnorm-fold` rule (`fusion_rules_nn.py`) folds it into a preceding convolution;
* `irt.max_pool2d`, `irt.avg_pool2d`, `irt.adaptive_avg_pool2d`.

    %y = irt.conv2d %x, %w bias(%b : tensor<16xf32>) stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x16x16xf32>
    %p = irt.max_pool2d %y kernel [3, 3] stride [2, 2] padding [1, 1] dilation [1, 1] : (tensor<1x16x16x16xf32>) -> tensor<1x16x8x8xf32>
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith, math as xmath
from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    TensorType,
    UnitAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, Operation, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from irc.dialects.irt.core import (
    ElementwiseOp,
    EpilogueOp,
    _check_f32_tensor,
    _fmt,
    _verify_scalar_region,
    clone_body,
    fconst,
    shape_of,
)
from irc.dialects.static_shape import StaticShapeOp

Pair = tuple[int, int]


def _pair_prop(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def _pair(attr: DenseArrayBase) -> Pair:
    values = tuple(attr.get_values())
    return values  # type: ignore[return-value]


class StridedWindow:
    """The (h, w) pairs of a sliding window, shared by convolution and pooling ops
    (which define `stride` and `padding` properties; `dilation` where they have one)."""

    @property
    def strides(self) -> Pair:
        return _pair(self.stride)  # type: ignore[attr-defined]

    @property
    def paddings(self) -> Pair:
        return _pair(self.padding)  # type: ignore[attr-defined]

    @property
    def dilations(self) -> Pair:
        dilation = getattr(self, "dilation", None)
        return _pair(dilation) if dilation is not None else (1, 1)


def _check_pairs(op: Operation, **pairs: DenseArrayBase) -> None:
    for what, attr in pairs.items():
        values = tuple(attr.get_values())
        if len(values) != 2:
            raise VerifyException(f"{op.name}: {what} must have 2 values (height, width), got {list(values)}")
        lowest = 0 if what == "padding" else 1
        if any(v < lowest for v in values):
            raise VerifyException(f"{op.name}: {what} must be >= {lowest}, got {list(values)}")


def pool_output_size(size: int, kernel: int, stride: int, pad: int, dilation: int, ceil_mode: bool) -> int:
    """One spatial output size, PyTorch's formula (`pooling_output_shape`); also conv's (ceil off)."""
    span = dilation * (kernel - 1) + 1
    out = (size + 2 * pad - span + ((stride - 1) if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1  # the last window must start inside the input or its left padding
    return out


def _check_nchw(op: Operation, value: SSAValue, what: str) -> tuple[int, ...]:
    _check_f32_tensor(op, value, what)
    shape = shape_of(value)
    if len(shape) != 4:
        raise VerifyException(f"{op.name}: {what} must be 4-D (N, C, H, W), got {_fmt(shape)}")
    return shape


# ---------------------------------------------------------------------------------------------
# Convolution
# ---------------------------------------------------------------------------------------------


@irdl_op_definition
class Conv2dOp(StridedWindow, EpilogueOp):
    """2-D convolution (cross-correlation, as PyTorch), NCHW, with an optional fused epilogue.

    input [N, C, H, W], weight [O, C/groups, kH, kW], bias [O] (optional) -> [N, O, OH, OW].
    Each output element is `epilogue(bias[o] + sum_{c,kh,kw} x[...] * w[o, c, kh, kw], e...)`.

        %y = irt.conv2d %x, %w bias(%b : tensor<16xf32>) stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x8x8xf32>
        %r = irt.conv2d %x, %w epilogue(%res : tensor<1x16x8x8xf32>) stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : (...) -> tensor<1x16x8x8xf32> {
        ^bb0(%acc: f32, %e0: f32):
          ...
          irt.yield %v : f32
        }

    Design choices:

    * One op for the fused and the unfused form. The *unfused* conv has an **empty region** (no
      block): the epilogue is the identity and there are no epilogue inputs. A fused conv has a
      one-block region over (acc, *epilogue) ending in `irt.yield`, exactly as `irt.contract`. A
      second op name for the same loop nest would only duplicate the verifier and the lowering.
    * The bias is an optional operand in nn.Conv2d's `[O]` layout that **initializes the
      accumulator**, not an epilogue input. An epilogue input must broadcast to `[N, O, OH, OW]`,
      which `[O]` does not, so it would need a reshape to `[O, 1, 1]` in every imported conv; as
      the accumulator's start value it costs nothing, keeps imported IR one op per layer (like
      `irt.linear`), and the batch-norm fold is a plain rewrite of (weight, bias) operands.
      Activations, residual adds and any bias written as a separate add still fuse into the
      epilogue through the generic `contraction-epilogue` rule.
    * `packed` (optional) is the same weight as the GEMM engine's lhs panels,
      `irt.pack %w "rows" R` = [ceil(O/R), C/groups*kH*kW, R], added by `irc-pack-weights` when
      the weight is known at compile time, so folding packs it once instead of every call; with
      groups, each group's rows are panels of their own, [groups * ceil(O/groups/R), ..., R]
      (zero rows after each group's last where O/groups is not a multiple of R). It must hold
      exactly that packing of `weight`: a rewrite that changes the weight drops it. `weight`
      stays the op's meaning (verifier, reference, the scalar nest); only the engine reads `packed`.
      A 3x3 stride-1 conv the engine runs as Winograd F(2x2, 3x3) takes `irt.pack %w "winograd" R`
      instead, [16, ceil(O/R), C, R] (see `irt.pack`).

        %y = irt.conv2d %x, %w packed(%wp : tensor<3x27x6xf32>) stride [1, 1] ... -> tensor<1x16x8x8xf32>
    """

    name = "irt.conv2d"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    packed = opt_operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    epilogue = var_operand_def(TensorType)
    stride = prop_def(DenseArrayBase.constr(i64))
    padding = prop_def(DenseArrayBase.constr(i64))
    dilation = prop_def(DenseArrayBase.constr(i64))
    groups = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    body = region_def()
    traits = traits_def(Pure())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$input `,` $weight (`packed` `(` $packed^ `:` type($packed) `)`)? (`bias` `(` $bias^ `:` type($bias) `)`)? "
        "(`epilogue` `(` $epilogue^ `:` type($epilogue) `)`)? "
        "`stride` $stride `padding` $padding `dilation` $dilation `groups` $groups `:` "
        "`(` type($input) `,` type($weight) `)` `->` type($result) attr-dict-with-keyword ($body^)?"
    )

    def __init__(
        self,
        input: SSAValue,
        weight: SSAValue,
        bias: SSAValue | None,
        result_type: Attribute,
        *,
        stride: Sequence[int] = (1, 1),
        padding: Sequence[int] = (0, 0),
        dilation: Sequence[int] = (1, 1),
        groups: int = 1,
        epilogue: Sequence[SSAValue] = (),
        body: Region | None = None,
        packed: SSAValue | None = None,
    ):
        super().__init__(
            operands=[input, weight, packed, bias, list(epilogue)],
            result_types=[result_type],
            regions=[body if body is not None else Region()],
            properties={
                "stride": _pair_prop(stride),
                "padding": _pair_prop(padding),
                "dilation": _pair_prop(dilation),
                "groups": IntegerAttr(groups, i64),
            },
        )

    # -- the geometry, as Python ints -----------------------------------------------------
    @property
    def group_count(self) -> int:
        return self.groups.value.data

    def geometry(self) -> dict:
        return dict(stride=self.strides, padding=self.paddings, dilation=self.dilations, groups=self.group_count)

    # -- EpilogueOp -----------------------------------------------------------------------
    @property
    def epilogue_inputs(self) -> Sequence[SSAValue]:
        return self.epilogue

    def build_epilogue(self, b: Builder, acc: SSAValue, args: Sequence[SSAValue]) -> SSAValue:
        return clone_body(b, self.body, [acc, *args]) if self.body.blocks else acc

    def epilogue_body(self) -> Region | None:
        return self.body if self.body.blocks else None

    def with_epilogue(self, inputs: Sequence[SSAValue], body: Region, result_type: Attribute) -> Operation:
        return Conv2dOp(
            self.input, self.weight, self.bias, result_type, epilogue=inputs, body=body, packed=self.packed,
            **self.geometry()
        )

    # -- verification ---------------------------------------------------------------------
    def expected_shape(self) -> tuple[int, ...]:
        n, c, h, w = shape_of(self.input)
        o, cg, kh, kw = shape_of(self.weight)
        (sh, sw), (ph, pw), (dh, dw) = self.strides, self.paddings, self.dilations
        return (
            n,
            o,
            pool_output_size(h, kh, sh, ph, dh, False),
            pool_output_size(w, kw, sw, pw, dw, False),
        )

    def verify_(self) -> None:
        _check_pairs(self, stride=self.stride, padding=self.padding, dilation=self.dilation)
        x = _check_nchw(self, self.input, "the input")
        wt = _check_nchw(self, self.weight, "the weight")
        _check_f32_tensor(self, self.result, "the result")
        g = self.group_count
        if g < 1 or x[1] % g or wt[0] % g:
            raise VerifyException(
                f"irt.conv2d: groups = {g} must divide the input channels ({x[1]}) and the output channels ({wt[0]})"
            )
        if wt[1] * g != x[1]:
            raise VerifyException(
                f"irt.conv2d: weight {_fmt(wt)} expects {wt[1] * g} input channels "
                f"({wt[1]} per group x {g} groups), input {_fmt(x)} has {x[1]}"
            )
        if self.bias is not None:
            _check_f32_tensor(self, self.bias, "the bias")
            if shape_of(self.bias) != (wt[0],):
                raise VerifyException(
                    f"irt.conv2d: bias must be [{wt[0]}] (one per output channel), got {_fmt(shape_of(self.bias))}"
                )
        if self.packed is not None and len(shape_of(self.packed)) == 4:  # irt.pack "winograd"
            p = shape_of(self.packed)
            if (tuple(wt[2:]) != (3, 3) or g != 1 or p[3] < 1 or p[0] != 16 or p[2] != wt[1]
                    or p[1] != -(-wt[0] // p[3])):
                raise VerifyException(
                    f"irt.conv2d: Winograd-packed weight {_fmt(p)} should be [16, ceil({wt[0]}/R), {wt[1]}, R] "
                    f"(irt.pack \"winograd\" of a 3x3 weight, groups 1), the weight is {_fmt(wt)} in {g} group(s)"
                )
        elif self.packed is not None:
            p = shape_of(self.packed)
            k = wt[1] * wt[2] * wt[3]
            if len(p) != 3 or p[2] < 1 or p[1] != k or p[0] != g * -(-(wt[0] // g) // p[2]):
                panels = f"ceil({wt[0]}/R)" if g == 1 else f"{g} * ceil({wt[0] // g}/R)"
                raise VerifyException(
                    f"irt.conv2d: packed weight {_fmt(p)} should be [{panels}, {k}, R], the weight {_fmt(wt)} in "
                    f"panels of R rows" + ("" if g == 1 else f", each of its {g} groups' rows in panels of their own")
                )
        expected = self.expected_shape()
        if min(expected[2:]) < 1:
            raise VerifyException(
                f"irt.conv2d: the dilated kernel {_fmt(wt[2:])} does not fit the padded input {_fmt(x)}"
            )
        if shape_of(self.result) != expected:
            raise VerifyException(
                f"irt.conv2d: result shape {_fmt(shape_of(self.result))} should be {_fmt(expected)} "
                f"(input {_fmt(x)}, weight {_fmt(wt)}, stride {list(self.strides)}, padding {list(self.paddings)}, "
                f"dilation {list(self.dilations)})"
            )
        self.verify_epilogue_inputs(self.epilogue, expected)
        if self.body.blocks:
            _verify_scalar_region(self, self.body, 1 + len(self.epilogue))
        elif self.epilogue:
            raise VerifyException(
                f"irt.conv2d: {len(self.epilogue)} epilogue input(s) but no epilogue body to use them"
            )


# ---------------------------------------------------------------------------------------------
# Batch norm (inference): elementwise with per-channel operands
# ---------------------------------------------------------------------------------------------


def batch_norm_scalar(b: Builder, x, mean, var, weight, bias, eps: float) -> SSAValue:
    """(x - mean) * (weight / sqrt(var + eps)) + bias, on f32 scalars."""
    one = fconst(b, 1.0)  # inserted first, as before
    std = b.insert(xmath.SqrtOp(b.insert(arith.AddfOp(var, fconst(b, eps))).result)).result
    inv = b.insert(arith.DivfOp(one, std)).result
    scale = b.insert(arith.MulfOp(weight, inv)).result
    centered = b.insert(arith.SubfOp(x, mean)).result
    return b.insert(arith.AddfOp(b.insert(arith.MulfOp(centered, scale)).result, bias)).result


@irdl_op_definition
class BatchNormOp(ElementwiseOp):
    """Batch norm with running statistics (eval mode), normalizing over dim 1 of a 2-D, 3-D or 4-D x.

    mean, var, weight and bias are per-channel: shaped `[C]` for a 2-D x, `[C, 1]` for 3-D and
    `[C, 1, 1]` for 4-D (the importer reshapes nn.BatchNorm's `[C]` tensors), so numpy
    broadcasting lines them up with dim 1, or rank-0 (a constant 1 or 0 when affine=False).
    Being elementwise, it fuses into a preceding conv's epilogue, or is folded into its weights.

        %y = irt.batch_norm %x, %mean, %var, %w, %b eps 1.000000e-05 : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
    """

    name = "irt.batch_norm"
    input = operand_def(TensorType)
    mean = operand_def(TensorType)
    var = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = operand_def(TensorType)
    eps = prop_def(FloatAttr[Float64Type])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `,` $mean `,` $var `,` $weight `,` $bias `eps` $eps attr-dict `:` functional-type(operands, results)"
    )

    def __init__(self, x: SSAValue, mean: SSAValue, var: SSAValue, weight: SSAValue, bias: SSAValue, eps: float):
        super().__init__(
            operands=[x, mean, var, weight, bias],
            result_types=[x.type],
            properties={"eps": FloatAttr(float(eps), f64)},
        )

    @property
    def epsilon(self) -> float:
        return self.eps.value.data

    def build_scalar(self, b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        return batch_norm_scalar(b, *args, eps=self.epsilon)

    def verify_(self) -> None:
        _check_f32_tensor(self, self.input, "the input")
        x = shape_of(self.input)
        if len(x) not in (2, 3, 4):
            raise VerifyException(f"irt.batch_norm: the input must be 2-D, 3-D or 4-D (N, C, ...), got {_fmt(x)}")
        channel_shape = (x[1],) + (1,) * (len(x) - 2)
        for what in ("mean", "var", "weight", "bias"):
            v = getattr(self, what)
            _check_f32_tensor(self, v, what)
            if shape_of(v) not in (channel_shape, ()):
                raise VerifyException(
                    f"irt.batch_norm: {what} must be {_fmt(channel_shape)} (per channel of input {_fmt(x)}) "
                    f"or a scalar, got {_fmt(shape_of(v))}"
                )
        if self.epsilon < 0:
            raise VerifyException(f"irt.batch_norm: eps must be >= 0, got {self.epsilon}")
        super().verify_()


# ---------------------------------------------------------------------------------------------
# Pooling
# ---------------------------------------------------------------------------------------------


class WindowPoolOp(StridedWindow, StaticShapeOp):
    """Base of max/avg pooling: a kernel window per output element, PyTorch's output sizes."""

    input = operand_def(TensorType)
    kernel = prop_def(DenseArrayBase.constr(i64))
    stride = prop_def(DenseArrayBase.constr(i64))
    padding = prop_def(DenseArrayBase.constr(i64))
    ceil_mode = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    @property
    def kernels(self) -> Pair:
        return _pair(self.kernel)

    def expected_shape(self) -> tuple[int, ...]:
        n, c, h, w = shape_of(self.input)
        ceil = self.ceil_mode is not None
        sizes = [
            pool_output_size(size, k, s, p, d, ceil)
            for size, k, s, p, d in zip((h, w), self.kernels, self.strides, self.paddings, self.dilations)
        ]
        return (n, c, *sizes)

    def verify_(self) -> None:
        _check_pairs(self, kernel=self.kernel, stride=self.stride, padding=self.padding)
        x = _check_nchw(self, self.input, "the input")
        _check_f32_tensor(self, self.result, "the result")
        for p, k, d in zip(self.paddings, self.kernels, self.dilations):
            if p > (d * (k - 1) + 1) // 2:
                raise VerifyException(
                    f"{self.name}: padding {list(self.paddings)} must be at most half the kernel {list(self.kernels)}"
                )
        expected = self.expected_shape()
        if min(expected[2:]) < 1:
            raise VerifyException(f"{self.name}: the kernel {list(self.kernels)} does not fit the input {_fmt(x)}")
        if shape_of(self.result) != expected:
            raise VerifyException(
                f"{self.name}: result shape {_fmt(shape_of(self.result))} should be {_fmt(expected)} "
                f"(input {_fmt(x)}, kernel {list(self.kernels)}, stride {list(self.strides)}, "
                f"padding {list(self.paddings)}{', ceil_mode' if self.ceil_mode is not None else ''})"
            )


@irdl_op_definition
class MaxPool2dOp(WindowPoolOp):
    """Max over each (dilated) window; padding never wins (it is -inf). NaN propagates.

        %y = irt.max_pool2d %x kernel [3, 3] stride [2, 2] padding [1, 1] dilation [1, 1] : (tensor<1x8x9x9xf32>) -> tensor<1x8x5x5xf32>
    """

    name = "irt.max_pool2d"
    dilation = prop_def(DenseArrayBase.constr(i64))
    assembly_format = (
        "$input `kernel` $kernel `stride` $stride `padding` $padding `dilation` $dilation "
        "(`ceil_mode` $ceil_mode^)? attr-dict `:` functional-type($input, $result)"
    )

    def __init__(
        self, input: SSAValue, result_type: Attribute, *, kernel, stride, padding=(0, 0), dilation=(1, 1), ceil_mode=False
    ):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={
                "kernel": _pair_prop(kernel),
                "stride": _pair_prop(stride),
                "padding": _pair_prop(padding),
                "dilation": _pair_prop(dilation),
                **({"ceil_mode": UnitAttr()} if ceil_mode else {}),
            },
        )

    def verify_(self) -> None:
        _check_pairs(self, dilation=self.dilation)
        super().verify_()


@irdl_op_definition
class AvgPool2dOp(WindowPoolOp):
    """Mean over each window. The divisor is the window clipped to the padded input
    (`count_include_pad`, PyTorch's default) or to the input itself.

        %y = irt.avg_pool2d %x kernel [2, 2] stride [2, 2] padding [0, 0] count_include_pad : (tensor<1x8x9x9xf32>) -> tensor<1x8x4x4xf32>
    """

    name = "irt.avg_pool2d"
    count_include_pad = opt_prop_def(UnitAttr)
    assembly_format = (
        "$input `kernel` $kernel `stride` $stride `padding` $padding (`ceil_mode` $ceil_mode^)? "
        "(`count_include_pad` $count_include_pad^)? attr-dict `:` functional-type($input, $result)"
    )

    def __init__(
        self,
        input: SSAValue,
        result_type: Attribute,
        *,
        kernel,
        stride,
        padding=(0, 0),
        ceil_mode=False,
        count_include_pad=True,
    ):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={
                "kernel": _pair_prop(kernel),
                "stride": _pair_prop(stride),
                "padding": _pair_prop(padding),
                **({"ceil_mode": UnitAttr()} if ceil_mode else {}),
                **({"count_include_pad": UnitAttr()} if count_include_pad else {}),
            },
        )


@irdl_op_definition
class AdaptiveAvgPool2dOp(StaticShapeOp):
    """Mean over windows chosen to tile the input into the result's OH x OW grid (any sizes):
    output row i averages input rows floor(i*H/OH) .. ceil((i+1)*H/OH) - 1, as PyTorch.

        %y = irt.adaptive_avg_pool2d %x : (tensor<1x512x7x7xf32>) -> tensor<1x512x1x1xf32>
    """

    name = "irt.adaptive_avg_pool2d"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` functional-type($input, $result)"

    def __init__(self, input: SSAValue, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_(self) -> None:
        x = _check_nchw(self, self.input, "the input")
        y = _check_nchw(self, self.result, "the result")
        if y[:2] != x[:2] or min(y[2:]) < 1:
            raise VerifyException(
                f"irt.adaptive_avg_pool2d: result {_fmt(y)} must keep N and C of input {_fmt(x)} "
                "and have a positive output size"
            )


OPS: list = [Conv2dOp, BatchNormOp, MaxPool2dOp, AvgPool2dOp, AdaptiveAvgPool2dOp]
ATTRS: list = []

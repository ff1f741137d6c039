"""FX converters for the ops of `dialects/irt/nn.py` (this family's `FUNCTIONS` and `MODULES`).

nn.Conv2d / F.conv2d / torch.conv2d, nn.BatchNorm1d/2d / F.batch_norm (eval), nn.MaxPool2d /
F.max_pool2d, nn.AvgPool2d / F.avg_pool2d, nn.AdaptiveAvgPool2d / F.adaptive_avg_pool2d.
Unbatched (3-D, C x H x W) inputs are viewed as a batch of one and the result viewed back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import fx, nn
from xdsl.ir import SSAValue

from irc.dialects.irt import core as irt, nn as irt_nn
from irc.dialects.irt.reduce import LayerNormOp
from irc.dialects.symbolic import dims_of
from irc.frontend.convert_base import Converter, ImportContext, Unsupported, tensor_type


def _pair(value, what: str) -> tuple[int, int]:
    if isinstance(value, int):
        return (value, value)
    if isinstance(value, (tuple, list)) and len(value) == 1:
        return (int(value[0]), int(value[0]))
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return (int(value[0]), int(value[1]))
    raise Unsupported(f"{what}={value!r}: irc takes an int or a pair of ints")


def _tensor_arg(imp: ImportContext, value, what: str) -> SSAValue:
    if not isinstance(value, SSAValue):
        raise Unsupported(f"{what} must be a tensor, got {value!r}")
    return value


def _nchw(imp: ImportContext, node: fx.Node, x, build: Callable[[SSAValue, tuple[int, ...]], SSAValue]) -> SSAValue:
    """Run `build(x4, result_shape4)` on a 4-D view of x (unbatched C x H x W gets N = 1)."""
    x = _tensor_arg(imp, x, "the input")
    shape = irt.shape_of(x)
    out = dims_of(imp.result_type(node))
    if len(shape) == 4:
        return build(x, out)
    if len(shape) != 3:
        raise Unsupported(f"input of shape {list(shape)}: irc takes N x C x H x W or C x H x W")
    y = build(imp.insert(irt.ReshapeOp(x, tensor_type((1, *shape)))), (1, *out))
    return imp.insert(irt.ReshapeOp(y, tensor_type(out)))


# ---------------------------------------------------------------------------------------------
# Convolution
# ---------------------------------------------------------------------------------------------


def _conv_padding(padding, weight_shape: Sequence[int], dilation: tuple[int, int], stride: tuple[int, int]) -> tuple[int, int]:
    if padding == "valid":
        return (0, 0)
    if padding == "same":
        totals = [d * (k - 1) for d, k in zip(dilation, weight_shape[2:])]
        if any(t % 2 for t in totals):
            raise Unsupported("padding='same' with an even dilated kernel pads asymmetrically; irc pads symmetrically")
        return (totals[0] // 2, totals[1] // 2)
    if isinstance(padding, str):
        raise Unsupported(f"padding={padding!r}")
    return _pair(padding, "padding")


def _conv2d(imp: ImportContext, node: fx.Node, x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> SSAValue:
    return _nchw(imp, node, x, lambda x4, out: _conv2d_op(imp, x4, weight, bias, stride, padding, dilation, groups, out))


def _conv2d_op(imp: ImportContext, x4: SSAValue, weight, bias, stride, padding, dilation, groups,
               out: tuple[int, ...]) -> SSAValue:
    """One irt.conv2d of the 4-D input x4 into an `out`-shaped result, torch's arguments checked."""
    weight = _tensor_arg(imp, weight, "the weight")
    if bias is not None:
        bias = _tensor_arg(imp, bias, "the bias")
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    pad = _conv_padding(padding, irt.shape_of(weight), dilation, stride)
    if not isinstance(groups, int):
        raise Unsupported(f"groups={groups!r}")
    if 0 in irt.shape_of(weight)[1:]:  # eager then returns [N, 0, OH, OW], not the bias-filled [N, O, OH, OW]
        raise Unsupported(f"conv2d with an empty weight {irt.shape_of(weight)} (zero input channels or kernel size)")
    op = irt_nn.Conv2dOp(x4, weight, bias, tensor_type(out), stride=stride, padding=pad, dilation=dilation, groups=groups)
    return imp.insert(op)


def _conv2d_module(imp: ImportContext, node: fx.Node, mod: nn.Conv2d, x) -> SSAValue:
    if mod.padding_mode != "zeros":
        raise Unsupported(f"padding_mode={mod.padding_mode!r}; irc pads with zeros only")
    bias = imp.param(mod.bias) if mod.bias is not None else None
    return _conv2d(imp, node, x, imp.param(mod.weight), bias, mod.stride, mod.padding, mod.dilation, mod.groups)


def _single(value, what: str) -> int:
    if isinstance(value, int):
        return value
    if isinstance(value, (tuple, list)) and len(value) == 1 and isinstance(value[0], int):
        return int(value[0])
    raise Unsupported(f"{what}={value!r}: irc takes an int (or a tuple of one) for conv1d")


def _conv1d(imp: ImportContext, node: fx.Node, x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> SSAValue:
    """conv1d as a conv2d of height 1: [N, C, L] -> [N, C, 1, L] (unbatched [C, L] gets N = 1),
    the weight [O, C/g, K] -> [O, C/g, 1, K] (a parameter's reshape: folded at compile time)."""
    x, weight = _tensor_arg(imp, x, "the input"), _tensor_arg(imp, weight, "the weight")
    shape, wshape, out = irt.shape_of(x), irt.shape_of(weight), dims_of(imp.result_type(node))
    if len(shape) not in (2, 3) or len(wshape) != 3:
        raise Unsupported(f"conv1d of an input {list(shape)} with a weight {list(wshape)}: irc takes N x C x L or C x L")
    n, c, length = (1, *shape) if len(shape) == 2 else shape
    x4 = imp.insert(irt.ReshapeOp(x, tensor_type((n, c, 1, length))))
    w4 = imp.insert(irt.ReshapeOp(weight, tensor_type((wshape[0], wshape[1], 1, wshape[2]))))
    pad = padding if isinstance(padding, str) else (0, _single(padding, "padding"))
    y = _conv2d_op(imp, x4, w4, bias, (1, _single(stride, "stride")), pad, (1, _single(dilation, "dilation")), groups,
                   (n, out[-2], 1, out[-1]))
    return imp.insert(irt.ReshapeOp(y, tensor_type(out)))


def _conv1d_module(imp: ImportContext, node: fx.Node, mod: nn.Conv1d, x) -> SSAValue:
    if mod.padding_mode != "zeros":
        raise Unsupported(f"padding_mode={mod.padding_mode!r}; irc pads with zeros only")
    bias = imp.param(mod.bias) if mod.bias is not None else None
    return _conv1d(imp, node, x, imp.param(mod.weight), bias, mod.stride, mod.padding, mod.dilation, mod.groups)


# ---------------------------------------------------------------------------------------------
# Batch norm (inference)
# ---------------------------------------------------------------------------------------------


def _per_channel(imp: ImportContext, v, rank: int, channels: int, what: str, default: float) -> SSAValue:
    """A [C] statistic or affine parameter reshaped to [C, 1, ...] so it broadcasts over dim 1."""
    if v is None:
        return imp.tensor(default)
    v = _tensor_arg(imp, v, what)
    if irt.shape_of(v) != (channels,):
        raise Unsupported(f"{what} of shape {list(irt.shape_of(v))}; expected [{channels}]")
    if rank <= 2:
        return v
    return imp.insert(irt.ReshapeOp(v, tensor_type((channels,) + (1,) * (rank - 2))))


def _batch_norm(
    imp: ImportContext, node: fx.Node, x, running_mean, running_var, weight=None, bias=None, training=False,
    momentum=0.1, eps=1e-5,
) -> SSAValue:
    if training:
        raise Unsupported("batch norm in training mode (batch statistics); call model.eval() before compiling")
    if running_mean is None or running_var is None:
        raise Unsupported("batch norm without running statistics (track_running_stats=False) uses batch statistics")
    x = _tensor_arg(imp, x, "the input")
    shape = irt.shape_of(x)
    if len(shape) not in (2, 3, 4):
        raise Unsupported(f"batch norm of a {len(shape)}-D input; irc takes 2-D, 3-D or 4-D (N, C, ...)")
    c, rank = shape[1], len(shape)
    mean = _per_channel(imp, running_mean, rank, c, "running_mean", 0.0)
    var = _per_channel(imp, running_var, rank, c, "running_var", 1.0)
    w = _per_channel(imp, weight, rank, c, "weight", 1.0)
    b = _per_channel(imp, bias, rank, c, "bias", 0.0)
    return imp.insert(irt_nn.BatchNormOp(x, mean, var, w, b, float(eps)))


def _batch_norm_module(imp: ImportContext, node: fx.Node, mod: nn.modules.batchnorm._BatchNorm, x) -> SSAValue:
    if mod.training:
        raise Unsupported("batch norm in training mode (batch statistics); call model.eval() before compiling")
    mean = imp.param(mod.running_mean) if mod.running_mean is not None else None
    var = imp.param(mod.running_var) if mod.running_var is not None else None
    weight = imp.param(mod.weight) if mod.weight is not None else None
    bias = imp.param(mod.bias) if mod.bias is not None else None
    return _batch_norm(imp, node, x, mean, var, weight, bias, False, mod.momentum, mod.eps)


def _group_norm(imp: ImportContext, node: fx.Node, x, num_groups, weight=None, bias=None, eps=1e-5) -> SSAValue:
    """F.group_norm: the [N, G, C/G * spatial] view of x normalized over its last dim (an
    irt.layer_norm without affine: mean and biased variance, as torch), then the per-channel
    weight and bias."""
    x = _tensor_arg(imp, x, "the input")
    shape = irt.shape_of(x)
    if len(shape) < 2 or not all(isinstance(d, int) for d in shape[1:]):
        raise Unsupported(f"group_norm of an input {list(shape)}: irc takes N x C x ... with static C and spatial sizes")
    c, groups = shape[1], int(num_groups)
    if groups < 1 or c % groups:
        raise Unsupported(f"group_norm of {c} channels in {groups} groups (eager raises too)")
    size = c // groups
    for d in shape[2:]:
        size *= d
    x3 = imp.insert(irt.ReshapeOp(x, tensor_type((shape[0], groups, size))))
    y3 = imp.insert(LayerNormOp(x3, None, None, 1, float(eps)))
    y = imp.insert(irt.ReshapeOp(y3, x.type))
    rank = len(shape)
    if weight is not None:
        y = imp.insert(irt.MulOp(y, _per_channel(imp, weight, rank, c, "weight", 1.0), x.type))
    if bias is not None:
        y = imp.insert(irt.AddOp(y, _per_channel(imp, bias, rank, c, "bias", 0.0), x.type))
    return y


def _group_norm_module(imp: ImportContext, node: fx.Node, mod: nn.GroupNorm, x) -> SSAValue:
    weight = imp.param(mod.weight) if mod.weight is not None else None
    bias = imp.param(mod.bias) if mod.bias is not None else None
    return _group_norm(imp, node, x, mod.num_groups, weight, bias, mod.eps)


# ---------------------------------------------------------------------------------------------
# Pooling
# ---------------------------------------------------------------------------------------------


def _max_pool2d(
    imp: ImportContext, node: fx.Node, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
    return_indices=False,
) -> SSAValue:
    if return_indices:
        raise Unsupported("return_indices=True; irc returns the pooled values only")
    kernel = _pair(kernel_size, "kernel_size")
    strides = kernel if stride is None or stride == [] or stride == () else _pair(stride, "stride")
    pad, dil = _pair(padding, "padding"), _pair(dilation, "dilation")
    return _nchw(
        imp, node, x,
        lambda x4, out: imp.insert(
            irt_nn.MaxPool2dOp(x4, tensor_type(out), kernel=kernel, stride=strides, padding=pad, dilation=dil,
                               ceil_mode=bool(ceil_mode))
        ),
    )


def _avg_pool2d(
    imp: ImportContext, node: fx.Node, x, kernel_size, stride=None, padding=0, ceil_mode=False,
    count_include_pad=True, divisor_override=None,
) -> SSAValue:
    if divisor_override is not None:
        raise Unsupported("divisor_override; irc divides by the window size")
    kernel = _pair(kernel_size, "kernel_size")
    strides = kernel if stride is None or stride == [] or stride == () else _pair(stride, "stride")
    pad = _pair(padding, "padding")
    return _nchw(
        imp, node, x,
        lambda x4, out: imp.insert(
            irt_nn.AvgPool2dOp(x4, tensor_type(out), kernel=kernel, stride=strides, padding=pad,
                               ceil_mode=bool(ceil_mode), count_include_pad=bool(count_include_pad))
        ),
    )


def _adaptive_avg_pool2d(imp: ImportContext, node: fx.Node, x, output_size) -> SSAValue:
    """The output size (ints or None = keep the input's) is read from the traced result shape."""
    return _nchw(imp, node, x, lambda x4, out: imp.insert(irt_nn.AdaptiveAvgPool2dOp(x4, tensor_type(out))))


FUNCTIONS: dict[Any, Converter] = {
    F.conv1d: _conv1d,
    torch.conv1d: _conv1d,
    F.conv2d: _conv2d,
    torch.conv2d: _conv2d,
    F.batch_norm: _batch_norm,
    F.group_norm: _group_norm,
    F.max_pool2d: _max_pool2d,
    torch.max_pool2d: _max_pool2d,
    torch._C._nn.avg_pool2d: _avg_pool2d,  # F.avg_pool2d is this builtin
    torch._C._nn.adaptive_avg_pool2d: _adaptive_avg_pool2d,
    F.avg_pool2d: _avg_pool2d,
    F.adaptive_avg_pool2d: _adaptive_avg_pool2d,
}

MODULES: dict[type, Converter] = {
    nn.Conv1d: _conv1d_module,
    nn.Conv2d: _conv2d_module,
    nn.BatchNorm1d: _batch_norm_module,
    nn.BatchNorm2d: _batch_norm_module,
    nn.GroupNorm: _group_norm_module,
    nn.MaxPool2d: lambda imp, node, mod, x: _max_pool2d(
        imp, node, x, mod.kernel_size, mod.stride, mod.padding, mod.dilation, mod.ceil_mode, mod.return_indices
    ),
    nn.AvgPool2d: lambda imp, node, mod, x: _avg_pool2d(
        imp, node, x, mod.kernel_size, mod.stride, mod.padding, mod.ceil_mode, mod.count_include_pad,
        mod.divisor_override,
    ),
    nn.AdaptiveAvgPool2d: lambda imp, node, mod, x: _adaptive_avg_pool2d(imp, node, x, mod.output_size),
}

"""ATen-level graphs (`torch.export`, decomposed graphs) → the importer's torch-level converters.

An `ExportedProgram`'s graph calls ATen overloads (`torch.ops.aten.linear.default`,
`aten.addmm.default`, `aten._native_batch_norm_legit_no_training.default` ...) instead of the
Python-level functions the converters are keyed by (`F.linear`, `torch.mm`, `F.batch_norm`).
This module's `FUNCTIONS` has one converter per overload; each is an *alias*: it normalizes the
ATen arguments to a torch-level call and hands it to the importer's converter for that torch
function **when the node is converted** (`ImportContext.function_converter`: the composed
tables of `converters.py`, which this module does not import). So an alias whose target has no
converter behaves as absent (`Unsupported`, naming the torch function it maps onto).

Overloads with several results (`native_layer_norm`, `max_pool2d_with_indices`, ...) convert to
a Python tuple `(out, None, ...)`: irc computes only the main result, and `operator.getitem`
picks it (convert_shape; taking a secondary result — indices, saved statistics, a dropout mask —
is unsupported).

`exported_program_module(ep)` turns an `ExportedProgram` into a plain GraphModule irc can import:
parameters, buffers and constants are `get_attr` nodes (function parameters, not inputs), the
export guards are dropped, and inputs/outputs are flat tensors.
"""

from __future__ import annotations

import logging
import math
import operator
import warnings
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import torch
import torch.nn.functional as F
from torch import fx

from irc.dialects.irt import core as irt
from irc.errors import IrcError
from irc.frontend.convert_base import Converter, ImportContext, Unsupported, dtype_problem
from irc.frontend.folding import has_runtime_value

aten = torch.ops.aten

# A normalizer maps the ATen call's (args, kwargs) to the torch-level call's (args, kwargs).
Normalizer = Callable[..., tuple[tuple, dict]]
# A target is a torch-level callable (a FUNCTIONS key) or "Tensor.<name>" (a METHODS key).
Target = Any


def _same(*args, **kwargs) -> tuple[tuple, dict]:
    return args, kwargs


def _lookup(imp: ImportContext, target: Target) -> Converter | None:
    """The importer's converter for `target` right now, or None."""
    if isinstance(target, str) and target.startswith("Tensor."):
        return imp.method_converter(target[len("Tensor."):])
    return imp.function_converter(target)


def _name(target: Target) -> str:
    if isinstance(target, str):
        return target
    mod = getattr(target, "__module__", None) or "torch"
    mod = {"torch._C._nn": "torch.nn.functional", "torch._C._VariableFunctions": "torch"}.get(mod, mod)
    return f"{mod}.{getattr(target, '__name__', target)}"


def _checked(converter: Converter, node: fx.Node, args: tuple, kwargs: dict) -> Converter:
    """`converter`, if it takes the call's tensors: the importer checks the alias (which takes
    every dtype), so the dtypes the torch-level converter takes are checked here."""
    values = [v for v in (*args, *kwargs.values()) if not isinstance(v, (tuple, list))]
    values += [v for a in (*args, *kwargs.values()) if isinstance(a, (tuple, list)) for v in a]
    problem = dtype_problem(converter, node, values, has_runtime_value((args, kwargs)))
    if problem is not None:
        raise Unsupported(problem)
    return converter


def call(imp: ImportContext, node: fx.Node, target: Target, *args, **kwargs) -> Any:
    """Convert `target(*args, **kwargs)` with the importer's converter for it (result shape: `node`'s)."""
    converter = _lookup(imp, target)
    if converter is None:
        raise Unsupported(f"no converter for {_name(target)}")
    return _checked(converter, node, args, kwargs)(imp, node, *args, **kwargs)


def alias(*candidates: Target | tuple[Target, Normalizer]) -> Callable[..., Any]:
    """A converter trying each (torch-level target, normalizer) in order; the first with a converter wins."""
    pairs = [c if isinstance(c, tuple) else (c, _same) for c in candidates]

    def convert(imp: ImportContext, node: fx.Node, *args, **kwargs):
        for target, normalize in pairs:
            converter = _lookup(imp, target)
            if converter is not None:
                a, kw = normalize(*args, **kwargs)
                return _checked(converter, node, a, kw)(imp, node, *a, **kw)
        names = " or ".join(_name(t) for t, _ in pairs)
        raise Unsupported(f"no converter for {names}, which this ATen op maps onto")

    convert.__irc_alias_of__ = [t for t, _ in pairs]
    return convert


class NodeView:
    """A node seen with another result: converters ask it for `result_type` and `meta` only."""

    def __init__(self, node: fx.Node, shape: Sequence[int] | None = None, index: int | None = None):
        self._node = node
        meta = node.meta.get("tensor_meta")
        if index is not None and isinstance(meta, (tuple, list)):
            meta = meta[index]
        if shape is not None:
            meta = SimpleNamespace(shape=torch.Size(shape), dtype=getattr(meta, "dtype", torch.float32))
        self.meta = {**node.meta, "tensor_meta": meta}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._node, name)


def multi(converter: Callable[..., Any], n_results: int) -> Callable[..., Any]:
    """An overload with `n_results` results of which irc computes the first: (out, None, ...)."""

    def convert(imp: ImportContext, node: fx.Node, *args, **kwargs):
        out = converter(imp, NodeView(node, index=0), *args, **kwargs)
        return (out,) + (None,) * (n_results - 1)

    return convert


def _shape(node: fx.Node) -> tuple[int, ...]:
    return tuple(node.meta["tensor_meta"].shape)


# -- converters composed of several torch-level calls ----------------------------------------


def _scaled(imp: ImportContext, node: fx.Node, b, alpha) -> Any:
    """alpha * b, for the `alpha=` of add/sub (a number is folded)."""
    if alpha == 1:
        return b
    if isinstance(b, (int, float)):
        return b * alpha
    return call(imp, NodeView(node, shape=irt.shape_of(b)), torch.mul, b, alpha)


def _add(target: Target) -> Callable[..., Any]:
    def convert(imp: ImportContext, node: fx.Node, a, b, alpha=1):
        return call(imp, node, target, a, _scaled(imp, node, b, alpha))

    return convert


def _rsub(imp: ImportContext, node: fx.Node, a, b, alpha=1):
    return call(imp, node, torch.sub, b, _scaled(imp, node, a, alpha))


def _addmm(imp: ImportContext, node: fx.Node, bias, a, b, *, beta=1, alpha=1):
    if beta != 1 or alpha != 1:
        raise Unsupported(f"addmm with beta={beta}, alpha={alpha}; irc supports beta=alpha=1")
    return call(imp, node, torch.add, call(imp, node, torch.mm, a, b), bias)


def _permute(imp: ImportContext, node: fx.Node, x, dims):
    if _lookup(imp, torch.permute) is not None:
        return call(imp, node, torch.permute, x, dims)
    moved = [i for i, d in enumerate(dims) if i != d % len(dims)]
    if not moved:
        return call(imp, node, "Tensor.contiguous", x)
    if len(moved) == 2:
        return call(imp, node, torch.transpose, x, *moved)
    raise Unsupported(f"permute {list(dims)} (irc has no general permute converter)")


def _reshape_to_result(target: Target) -> Callable[..., Any]:
    """squeeze/unsqueeze/view-likes: `target` if it has a converter, else a reshape to the result shape."""

    def convert(imp: ImportContext, node: fx.Node, x, *args, **kwargs):
        if target is not torch.reshape and _lookup(imp, target) is not None:
            return call(imp, node, target, x, *args, **kwargs)
        return call(imp, node, torch.reshape, x, _shape(node))

    return convert


def _dropout(imp: ImportContext, node: fx.Node, x, p, train):
    return call(imp, node, F.dropout, x, p, training=bool(train))


def _sym_size(imp: ImportContext, node: fx.Node, x, dim: int) -> int:
    return irt.shape_of(imp.tensor(x))[dim]


def _conv2d_norm(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    return (x, w, b, stride, padding, dilation, groups), {}


def _convolution(imp: ImportContext, node: fx.Node, x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    rank = len(irt.shape_of(imp.tensor(x)))
    if transposed:
        target = {4: torch.conv_transpose2d, 3: torch.conv_transpose1d}.get(rank)
        if target is None:
            raise Unsupported(f"transposed convolution of a rank-{rank} input")
        return call(imp, node, target, x, w, b, stride, padding, output_padding, groups, dilation)
    target = {4: torch.conv2d, 3: torch.conv1d}.get(rank)
    if target is None:
        raise Unsupported(f"convolution of a rank-{rank} input")
    return alias(target, (F.conv2d if rank == 4 else F.conv1d))(imp, node, x, w, b, stride, padding, dilation, groups)


def _bn_functional(x, w, b, rm, rv, training, momentum, eps, cudnn_enabled=True):
    """aten.batch_norm's order → F.batch_norm(input, running_mean, running_var, weight, bias, ...)."""
    return (x, rm, rv, w, b, training, momentum, eps), {}


def _bn_torch(x, w, b, rm, rv, training, momentum, eps, cudnn_enabled=True):
    return (x, w, b, rm, rv, training, momentum, eps, cudnn_enabled), {}


_batch_norm = alias((torch.batch_norm, _bn_torch), (F.batch_norm, _bn_functional))


def _bn_no_training(imp: ImportContext, node: fx.Node, x, w, b, rm, rv, momentum, eps):
    return _batch_norm(imp, node, x, w, b, rm, rv, False, momentum, eps)


def _native_bn(imp: ImportContext, node: fx.Node, x, w, b, rm, rv, training, momentum, eps):
    if training:
        raise Unsupported("batch norm in training mode; compile the model in eval mode (model.eval())")
    return _batch_norm(imp, node, x, w, b, rm, rv, False, momentum, eps)


def _bn_training(imp: ImportContext, node: fx.Node, x, w, b, rm, rv, training, momentum, eps):
    """AOTAutograd's training-mode batch norm: (out, saved mean, saved 1/sqrt(var + eps), new
    running mean, new running variance), composed as eager computes them: the batch statistics
    over every dimension but the channels (the variance from the deviations, biased for the
    normalization, unbiased for the running variance), and running = (1 - momentum) * running +
    momentum * batch statistic."""
    if not training:  # the running statistics are returned as they are
        return _bn_no_training(imp, NodeView(node, index=0), x, w, b, rm, rv, momentum, eps), None, None, rm, rv
    shape = irt.shape_of(imp.tensor(x))
    if len(shape) < 2 or any(not isinstance(d, int) for d in shape):
        raise Unsupported("a training-mode batch norm of symbolic or rank-1 shape")
    c, count = shape[1], math.prod(shape) // shape[1]
    if count < 2:
        raise Unsupported("a training-mode batch norm over a single value per channel")
    dims = [d for d in range(len(shape)) if d != 1]
    kept = (1, c) + (1,) * (len(shape) - 2)
    full, per_c, channels = NodeView(node, shape=shape), NodeView(node, shape=kept), NodeView(node, index=1)
    mean = call(imp, per_c, torch.mean, x, dims, True)
    centered = call(imp, full, torch.sub, x, mean)
    var = call(imp, per_c, torch.mean, call(imp, full, torch.mul, centered, centered), dims, True)
    rstd = call(imp, per_c, torch.rsqrt, call(imp, per_c, torch.add, var, eps))
    out = call(imp, full, torch.mul, centered, rstd)
    if w is not None:
        out = call(imp, full, torch.mul, out, call(imp, per_c, torch.reshape, w, kept))
    if b is not None:
        out = call(imp, full, torch.add, out, call(imp, per_c, torch.reshape, b, kept))

    def running(old, batch):
        return call(imp, channels, torch.add, call(imp, channels, torch.mul, old, 1.0 - momentum),
                    call(imp, channels, torch.mul, batch, momentum))

    flat_mean = call(imp, channels, torch.reshape, mean, [c])
    flat_var = call(imp, channels, torch.reshape, var, [c])
    unbiased = call(imp, channels, torch.mul, flat_var, count / (count - 1))
    return (out, flat_mean, call(imp, channels, torch.reshape, rstd, [c]),
            running(rm, flat_mean), running(rv, unbiased))


def _pool_functional(x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
    return (x, kernel, list(stride) or None, padding, dilation), {"ceil_mode": ceil_mode}


def _avg_pool_functional(x, kernel, stride=(), padding=0, ceil_mode=False, count_include_pad=True, divisor=None):
    return (x, kernel, list(stride) or None, padding, ceil_mode, count_include_pad, divisor), {}


_max_pool2d = alias(torch.max_pool2d, (F.max_pool2d, _pool_functional))


def _softmax_norm(x, dim, half_to_float_or_dtype=None):
    return (x, dim), {}


def _layer_norm_norm(x, shape, w=None, b=None, eps=1e-5, cudnn_enable=True):
    return (x, list(shape), w, b, eps), {}


_layer_norm = alias((F.layer_norm, _layer_norm_norm), (torch.layer_norm, _layer_norm_norm))


def _native_layer_norm(imp: ImportContext, node: fx.Node, x, shape, w=None, b=None, eps=1e-5):
    """(out, mean, rstd): AOTAutograd's training forward saves the mean and 1/sqrt(var + eps) over
    the normalized dimensions (kept, size 1) for the backward. They are computed, when the graph
    takes them, as eager does: the mean, then the mean of the squared deviations from it."""
    out = _layer_norm(imp, NodeView(node, index=0), x, shape, w, b, eps)
    taken = {u.args[1] for u in node.users if u.target is operator.getitem}
    if not taken & {1, 2}:
        return out, None, None
    x_shape = irt.shape_of(imp.tensor(x))
    full, rank = NodeView(node, shape=x_shape), len(x_shape)
    dims = list(range(rank - len(shape), rank))
    mean = call(imp, NodeView(node, index=1), torch.mean, x, dims, True)
    centered = call(imp, full, torch.sub, x, mean)
    var = call(imp, NodeView(node, index=2), torch.mean, call(imp, full, torch.mul, centered, centered), dims, True)
    rstd = call(imp, NodeView(node, index=2), torch.rsqrt, call(imp, NodeView(node, index=2), torch.add, var, eps))
    return out, mean, rstd


def _reduce_norm(x, dims=None, keepdim=False, *, dtype=None):
    if dtype not in (None, torch.float32):
        raise Unsupported(f"reduction to {dtype}")
    return ((x,) if dims is None else (x, list(dims), keepdim)), {}


def _sdpa_norm(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None, enable_gqa=False):
    kwargs = {"scale": scale} if scale is not None else {}
    if enable_gqa:
        kwargs["enable_gqa"] = True
    return (q, k, v, attn_mask, dropout_p, is_causal), kwargs


_sdpa = alias((F.scaled_dot_product_attention, _sdpa_norm))


def _sdpa_flash_cpu(imp: ImportContext, node: fx.Node, q, k, v, dropout_p=0.0, is_causal=False, *, attn_mask=None,
                    scale=None):
    """(out, logsumexp): the attention, and, when the graph takes it (AOTAutograd's training
    forward saves it for the backward), the log-sum-exp of each row of the scaled scores,
    composed from a matmul and reductions (without a mask only)."""
    out = _sdpa(imp, NodeView(node, index=0), q, k, v, attn_mask, dropout_p, is_causal, scale=scale)
    if 1 not in {u.args[1] for u in node.users if u.target is operator.getitem}:
        return out, None
    if attn_mask is not None or is_causal:
        raise Unsupported("the log-sum-exp of masked or causal attention (result 1 of the flash attention)")
    qs, ks = irt.shape_of(imp.tensor(q)), irt.shape_of(imp.tensor(k))
    scores_shape = (*qs[:-1], ks[-2])
    rows = NodeView(node, shape=scores_shape)
    kt = call(imp, NodeView(node, shape=(*ks[:-2], ks[-1], ks[-2])), torch.transpose, k, -2, -1)
    scores = call(imp, rows, torch.matmul, q, kt)
    factor = scale if scale is not None else 1.0 / math.sqrt(qs[-1])
    scores = call(imp, rows, torch.mul, scores, factor)
    kept = NodeView(node, shape=(*qs[:-1], 1))
    top = call(imp, kept, torch.amax, scores, [-1], True)
    total = call(imp, NodeView(node, index=1), torch.sum,
                 call(imp, rows, torch.exp, call(imp, rows, torch.sub, scores, top)), [-1], False)
    lse = call(imp, NodeView(node, index=1), torch.add, call(imp, NodeView(node, index=1), torch.log, total),
               call(imp, NodeView(node, index=1), torch.squeeze, top, -1))
    return out, lse


def _to_copy_norm(x, *, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, memory_format=None):
    return ((x,) if dtype is None else (x, dtype)), {} if device is None else {"device": device}


def _unary_names() -> dict[Any, Callable[..., Any]]:
    """aten.<f>.default → torch.<f> / F.<f> for the elementwise functions of the same name."""
    table = {}
    for name in (
        "relu", "sigmoid", "tanh", "exp", "exp2", "expm1", "log", "log2", "log1p", "sqrt", "rsqrt",
        "neg", "abs", "sin", "cos", "tan", "erf", "reciprocal", "sign", "floor", "ceil", "round",
        "silu", "mish", "hardswish", "hardsigmoid", "selu", "logit", "square",
    ):
        overload = getattr(getattr(aten, name, None), "default", None)
        if overload is None:
            continue
        targets = [f for f in (getattr(torch, name, None), getattr(F, name, None)) if f is not None]
        if targets:
            table[overload] = alias(*targets)
    return table


def _at_dim(dim: int, item: Any) -> tuple:
    """The basic index taking `item` (an int or a slice) along `dim` (negative: from the end)."""
    return (slice(None),) * dim + (item,) if dim >= 0 else (Ellipsis, item) + (slice(None),) * (-dim - 1)


def _slice_index(x: Any, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> tuple[tuple, dict]:
    """aten.slice(x, dim, start, end, step) as x[..., start:end:step, ...] (basic indexing)."""
    return (x, _at_dim(dim, slice(start, end, step))), {}


def _select_index(x: Any, dim: int, index: int) -> tuple[tuple, dict]:
    """aten.select(x, dim, i) as x[..., i, ...]."""
    return (x, _at_dim(dim, index)), {}


def _aliases() -> dict[Any, Callable[..., Any]]:
    identity = alias("Tensor.contiguous")
    reshape = _reshape_to_result(torch.reshape)
    binary = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}
    table: dict[Any, Callable[..., Any]] = {
        **_unary_names(),
        # contractions
        aten.linear.default: alias(F.linear),
        aten.addmm.default: _addmm,
        aten.mm.default: alias(torch.mm, torch.matmul),
        aten.matmul.default: alias(torch.matmul),
        aten.bmm.default: alias(torch.bmm, torch.matmul),
        # layout
        aten.t.default: alias(torch.t),
        aten.transpose.int: alias(torch.transpose),
        aten.permute.default: _permute,
        aten.view.default: reshape,
        aten._unsafe_view.default: reshape,
        aten.reshape.default: reshape,
        aten.flatten.using_ints: reshape,
        aten.unsqueeze.default: _reshape_to_result(torch.unsqueeze),
        aten.squeeze.dim: _reshape_to_result(torch.squeeze),
        aten.squeeze.dims: _reshape_to_result(torch.squeeze),
        aten.squeeze.default: _reshape_to_result(torch.squeeze),
        aten.expand.default: alias("Tensor.expand"),
        aten.cat.default: alias(torch.cat),
        aten.slice.Tensor: alias((operator.getitem, _slice_index)),
        aten.select.int: alias((operator.getitem, _select_index)),
        aten.clone.default: identity,
        aten.alias.default: identity,
        aten.detach.default: identity,
        aten.contiguous.default: identity,
        aten.lift_fresh_copy.default: identity,
        # elementwise
        aten.gelu.default: alias(F.gelu),
        aten.hardtanh.default: alias(F.hardtanh),
        aten.leaky_relu.default: alias(F.leaky_relu),
        aten.elu.default: alias(F.elu),
        aten.softplus.default: alias(F.softplus),
        aten.clamp.default: alias(torch.clamp),
        aten.clamp_min.default: alias((torch.clamp, lambda x, lo: ((x, lo, None), {}))),
        aten.clamp_max.default: alias((torch.clamp, lambda x, hi: ((x, None, hi), {}))),
        aten.pow.Tensor_Scalar: alias(torch.pow),
        aten.pow.Tensor_Tensor: alias(torch.pow),
        aten.maximum.default: alias(torch.maximum),
        aten.minimum.default: alias(torch.minimum),
        aten.where.self: alias(torch.where),
        aten.rsub.Scalar: _rsub,
        aten.rsub.Tensor: _rsub,
        aten.div.Tensor_mode: alias(torch.div),
        aten.dropout.default: _dropout,
        aten.native_dropout.default: multi(_dropout, 2),
        # nn
        aten.conv2d.default: alias((torch.conv2d, _conv2d_norm), (F.conv2d, _conv2d_norm)),
        aten.conv1d.default: alias((torch.conv1d, _conv2d_norm), (F.conv1d, _conv2d_norm)),
        aten.convolution.default: _convolution,
        aten.batch_norm.default: _batch_norm,
        aten._native_batch_norm_legit_no_training.default: multi(_bn_no_training, 3),
        aten.native_batch_norm.default: multi(_native_bn, 3),
        aten._native_batch_norm_legit_functional.default: _bn_training,
        aten.max_pool2d.default: _max_pool2d,
        aten.max_pool2d_with_indices.default: multi(_max_pool2d, 2),
        aten.avg_pool2d.default: alias((F.avg_pool2d, _avg_pool_functional)),
        aten.adaptive_avg_pool2d.default: alias(F.adaptive_avg_pool2d),
        aten._adaptive_avg_pool2d.default: alias(F.adaptive_avg_pool2d),
        aten.softmax.int: alias((torch.softmax, _softmax_norm), (F.softmax, _softmax_norm)),
        aten._softmax.default: alias((torch.softmax, _softmax_norm), (F.softmax, _softmax_norm)),
        aten.log_softmax.int: alias((torch.log_softmax, _softmax_norm), (F.log_softmax, _softmax_norm)),
        aten._log_softmax.default: alias((torch.log_softmax, _softmax_norm), (F.log_softmax, _softmax_norm)),
        aten.layer_norm.default: _layer_norm,
        aten.native_layer_norm.default: _native_layer_norm,
        aten.scaled_dot_product_attention.default: _sdpa,
        aten._scaled_dot_product_flash_attention_for_cpu.default: _sdpa_flash_cpu,
        # reductions
        aten.mean.dim: alias((torch.mean, _reduce_norm)),
        aten.mean.default: alias((torch.mean, _reduce_norm)),
        aten.sum.dim_IntList: alias((torch.sum, _reduce_norm)),
        aten.sum.default: alias((torch.sum, _reduce_norm)),
        aten.amax.default: alias((torch.amax, lambda x, dim=(), keepdim=False: ((x, list(dim), keepdim), {}))),
        # shape queries (dynamic-shape graphs)
        aten.sym_size.int: _sym_size,
        # masks, casts and index ops (language models)
        aten.where.ScalarSelf: alias(torch.where),
        aten.where.ScalarOther: alias(torch.where),
        aten.masked_fill.Scalar: alias(torch.masked_fill),
        aten.masked_fill.Tensor: alias(torch.masked_fill),
        aten.logical_not.default: alias(torch.logical_not),
        aten.bitwise_not.default: alias(torch.bitwise_not),
        aten._to_copy.default: alias(("Tensor.to", _to_copy_norm)),
        aten.to.dtype: alias(("Tensor.to", lambda x, dtype, *a, **k: ((x, dtype), {}))),
        aten.cumsum.default: alias(torch.cumsum),
        aten.triu.default: alias(torch.triu),
        aten.tril.default: alias(torch.tril),
        aten.gather.default: alias(torch.gather),
        aten.index_select.default: alias(torch.index_select),
        aten.embedding.default: alias((torch.embedding, lambda w, idx, *a: ((w, idx), {}))),
    }
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        packet = getattr(aten, name)
        table[packet.Tensor] = table[packet.Scalar] = alias(getattr(torch, name))
    for name in ("logical_and", "logical_or", "logical_xor"):
        table[getattr(aten, name).default] = alias(getattr(torch, name))
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        packet = getattr(aten, name)
        table[packet.Tensor] = table[packet.Scalar] = alias(getattr(torch, name))
    for name, target in binary.items():
        packet = getattr(aten, name)
        if name in ("add", "sub"):
            table[packet.Tensor] = table[packet.Scalar] = _add(target)
        else:
            table[packet.Tensor] = table[packet.Scalar] = alias(target)
    return table


FUNCTIONS: dict[Any, Converter] = _aliases()
for _converter in FUNCTIONS.values():  # each checks the dtypes its torch-level converter takes (`_checked`)
    _converter.accepts_ints = True  # type: ignore[attr-defined]

# Ops an exported graph uses for run-time checks only: dropped when they have no users.
_CHECKS = {
    getattr(aten, name).default
    for name in ("_assert_tensor_metadata", "_assert_async", "sym_constrain_range_for_size", "sym_constrain_range")
    if hasattr(aten, name) and hasattr(getattr(aten, name), "default")
} | {getattr(aten._assert_scalar, "default", None)} - {None}


def _children(spec) -> list:
    """A pytree spec's children (`children()` in new torch, `children_specs` in old)."""
    return list(spec.children()) if callable(getattr(spec, "children", None)) else list(spec.children_specs)


def _mutates(graph: fx.Graph) -> bool:
    """Whether a node of an ATen graph calls an in-place or out= overload."""
    return any(node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload)
               and node.target._schema.is_mutable for node in graph.nodes)


def exported_program_module(ep: torch.export.ExportedProgram) -> fx.GraphModule:
    """A plain GraphModule for `ep`: flat tensor inputs, a tensor or tuple output, weights as get_attr.

    `ep.module()` already turns the parameters, buffers and constants the graph signature names
    into attributes read by `get_attr` (so irc makes them function parameters). This drops the
    export guards and check ops, and replaces the pytree calling convention by flat arguments.
    A graph with in-place ops (`torch.export.export` keeps a model's `x += y` as `aten.add_`,
    which no converter takes: a BERT ran that add in eager PyTorch, between two native parts) is
    functionalized first (`run_decompositions({})`: the same ATen ops, without their mutations); if
    that fails, the graph is imported as exported.
    """
    if _mutates(ep.graph):
        try:
            with warnings.catch_warnings():  # torch's own pytree deprecation notice, not the user's to act on
                warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
                ep = ep.run_decompositions({})
        except Exception as e:  # the graph as exported still compiles: its in-place ops become eager nodes
            logging.getLogger("irc").info("irc: functionalizing the exported program failed (%s); its in-place "
                                          "ops run in eager PyTorch", str(e).strip().splitlines()[:1])
    in_spec, out_spec = ep.call_spec.in_spec, ep.call_spec.out_spec
    if in_spec is not None:
        args_spec, kwargs_spec = _children(in_spec) if in_spec.num_children == 2 else (in_spec, None)
        if (kwargs_spec is not None and kwargs_spec.num_children) or any(not c.is_leaf() for c in _children(args_spec)):
            raise IrcError(
                "irc compiles ExportedPrograms whose inputs are tensors passed positionally; "
                f"this one takes {in_spec}"
            )
    gm = ep.module()
    graph = gm.graph
    for node in reversed(list(graph.nodes)):
        is_guard = node.op == "call_module" and str(node.target).startswith("_guards_fn")
        if (is_guard or (node.op == "call_function" and node.target in _CHECKS)) and not node.users:
            graph.erase_node(node)
    output = next(n for n in graph.nodes if n.op == "output")
    flat = output.args[0]
    if out_spec is None or out_spec.is_leaf():
        if isinstance(flat, (tuple, list)):
            output.args = (flat[0],)
    elif out_spec.type not in (tuple, list) or any(not c.is_leaf() for c in _children(out_spec)):
        raise IrcError(f"irc compiles ExportedPrograms returning a tensor or a tuple of tensors; this one returns {out_spec}")
    else:
        output.args = (tuple(flat),)
    graph._codegen = fx.graph.CodeGen()
    gm.recompile()
    return gm

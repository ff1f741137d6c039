"""FX converters for layout and data ops (`dialects/irt/shape.py`), and compile-time values.

Tensor ops: getitem with constant int/slice/None/Ellipsis indices (`irt.slice`, then an
`irt.reshape` where ints drop and None adds dimensions), cat/concat/stack (`irt.concat`),
expand/expand_as/broadcast_to (`irt.expand`, or nothing at all when every consumer broadcasts
by itself), permute (`irt.transpose`), squeeze/unsqueeze/flatten/unflatten/view_as/reshape_as
(`irt.reshape`), split/chunk/unbind (a Python tuple of slices; FX picks elements with getitem),
contiguous/clone/detach and float32-preserving casts (identity).

Compile-time values: shape queries (`x.size()`, `x.size(d)`, `x.shape`, `x.dim()`, `x.ndim`,
`x.numel()`) give Python values, and every converter written with `folding` (folding.py) evaluates
its node with torch when no argument is a run-time tensor: shape arithmetic and comparisons,
`torch._assert` (a false assertion is a compile error), factories (zeros, ones, full, arange,
..._like, new_...), triu/tril, masks (`torch.ones(n, n).tril() == 0`). Where a run-time op uses
such a tensor it becomes an `irt.constant` (up to 16 elements), a broadcast scalar (a splat) or
a new function argument, never IR text (`ImportContext.constant`); a splat operand of a binary op
that broadcasts anyway is just its number (`splats_as_scalars`). Random factories are never folded
(they have no converter).
"""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import fx
from xdsl.ir import SSAValue

from irc.dialects.irt import core as irt
from irc.dialects.irt.shape import ConcatOp, EmbeddingOp, ExpandOp, SliceOp
from irc.dialects.symbolic import Dim, all_static, dims_of, product
from irc.errors import IrcError
from irc.frontend.convert_base import (
    Converter,
    ImportContext,
    Unsupported,
    accepts_int64,
    identity,
    is_int64,
    reshape,
    slice_dim,
    tensor_type,
)
from irc.frontend.folding import folding, has_runtime_value, method_call

# ---------------------------------------------------------------------------------------------
# Compile-time checks
# ---------------------------------------------------------------------------------------------


def _assert(cond, msg=None):
    """torch._assert on a compile-time condition: nothing if true, a compile error if false."""
    if isinstance(cond, torch.Tensor):
        cond = bool(cond)
    if not cond:
        raise IrcError(f"torch._assert failed at compile time: {msg}")
    return None


# ---------------------------------------------------------------------------------------------
# Shape queries on run-time tensors
# ---------------------------------------------------------------------------------------------


def _shape(x: SSAValue) -> tuple[Dim, ...]:
    return irt.shape_of(x)


def _torch_size(shape: tuple[Dim, ...]) -> torch.Size | tuple[Dim, ...]:
    """`x.shape` as the program sees it: a torch.Size, or a tuple when some sizes are symbolic."""
    return torch.Size(shape) if all_static(shape) else tuple(shape)


def _size(imp: ImportContext, node: fx.Node, x: SSAValue, dim: int | None = None):
    size = _torch_size(_shape(x))
    return size if dim is None else size[dim]


def _dim(imp: ImportContext, node: fx.Node, x: SSAValue) -> int:
    return len(_shape(x))


def _numel(imp: ImportContext, node: fx.Node, x: SSAValue) -> int:
    return product(_shape(x))


def _getattr(imp: ImportContext, node: fx.Node, x: SSAValue, name: str, *default):
    shape = _shape(x)
    attrs = {
        "shape": lambda: _torch_size(shape),
        "ndim": lambda: len(shape),
        "dtype": lambda: torch.float32,
        "device": lambda: torch.device("cpu"),
        "is_cuda": lambda: False,
        "requires_grad": lambda: False,
        "data": lambda: x,
        "T": lambda: _permute(imp, node, x, *reversed(range(len(shape)))),
        "mT": lambda: _transpose_last(imp, node, x),
    }
    if name not in attrs:
        raise Unsupported(f"the tensor attribute {name!r}")
    return attrs[name]()


def _transpose_last(imp: ImportContext, node: fx.Node, x: SSAValue) -> SSAValue:
    rank = len(_shape(x))
    if rank < 2:
        raise Unsupported("mT of a tensor with fewer than 2 dimensions")
    return _permute(imp, node, x, *range(rank - 2), rank - 1, rank - 2)


# ---------------------------------------------------------------------------------------------
# Slicing
# ---------------------------------------------------------------------------------------------


def _reshaped(imp: ImportContext, x: SSAValue, shape: Sequence[int]) -> SSAValue:
    if _shape(x) == tuple(shape):
        return x
    return imp.insert(irt.ReshapeOp(x, tensor_type(shape)))


def _index_tensor(imp: ImportContext, node: fx.Node, x: SSAValue, index: Any) -> SSAValue:
    """x[index] for constant ints, slices, None and Ellipsis (basic indexing)."""
    items = list(index) if isinstance(index, tuple) else [index]
    for it in items:
        if isinstance(it, bool) or not (it is None or it is Ellipsis or isinstance(it, (int, slice))):
            raise Unsupported(f"indexing with {type(it).__name__} (irc supports ints, slices, None and ...)")
        if isinstance(it, slice) and not all(isinstance(v, (int, type(None))) for v in (it.start, it.stop, it.step)):
            raise Unsupported("a slice whose bounds are not known at compile time")
    shape = _shape(x)
    consumed = sum(1 for it in items if it is not None and it is not Ellipsis)
    if items.count(Ellipsis) > 1 or consumed > len(shape):
        raise Unsupported(f"index {index!r} for a tensor of shape {list(shape)}")
    fill = [slice(None)] * (len(shape) - consumed)
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at : at + 1] = fill
    else:
        items += fill

    offsets, strides, sizes, out_shape, d = [], [], [], [], 0
    for it in items:
        if it is None:
            out_shape.append(1)
            continue
        n = shape[d]
        if isinstance(it, int):
            i = it + n if it < 0 else it
            if not 0 <= i < n:
                raise Unsupported(f"index {it} is out of range for dimension {d} of size {n}")
            box = (i, 1, 1)
        else:
            if it.step is not None and it.step <= 0:
                raise Unsupported("a slice step must be positive")
            start, stop, step = it.indices(n)
            size = len(range(start, stop, step))
            box = (start, step, size)  # size 0: an empty tensor, as in eager
            out_shape.append(size)
        offsets.append(box[0])
        strides.append(box[1])
        sizes.append(box[2])
        d += 1
    v = x
    if tuple(sizes) != shape or any(o != 0 for o in offsets):
        v = imp.insert(SliceOp(x, offsets, strides, tensor_type(sizes)))
    return _reshaped(imp, v, out_shape)


def _getitem(imp: ImportContext, node: fx.Node, x: Any, index: Any):
    """getitem on a tensor (slicing) or on a Python sequence (shapes, split results)."""
    if isinstance(x, SSAValue):
        if has_runtime_value(index) or isinstance(index, (torch.Tensor, list)):
            raise Unsupported("indexing with tensors or lists (advanced indexing)")
        return _index_tensor(imp, node, x, index)
    if isinstance(x, (tuple, list)):
        return x[index]
    raise Unsupported(f"indexing a {type(x).__name__} with a run-time tensor")


# ---------------------------------------------------------------------------------------------
# split / chunk / unbind: Python tuples of slices
# ---------------------------------------------------------------------------------------------


def _pieces(imp: ImportContext, x: SSAValue, dim: int, sizes: Sequence[int]) -> tuple[SSAValue, ...]:
    out, start = [], 0
    for size in sizes:
        out.append(slice_dim(imp, x, dim, start, size))
        start += size
    return tuple(out)


def _meta_sizes(x: SSAValue, dim: int, how: Callable[[torch.Tensor], Sequence[torch.Tensor]]) -> list[int]:
    """Piece sizes along `dim` exactly as torch computes them (on a shape-only tensor)."""
    return [p.shape[dim] for p in how(torch.empty(_shape(x), device="meta"))]


def _split(imp: ImportContext, node: fx.Node, x, split_size_or_sections, dim: int = 0):
    x = imp.tensor(x)
    dim %= len(_shape(x))
    sizes = _meta_sizes(x, dim, lambda t: torch.split(t, split_size_or_sections, dim))
    return _pieces(imp, x, dim, sizes)


def _chunk(imp: ImportContext, node: fx.Node, x, chunks: int, dim: int = 0):
    x = imp.tensor(x)
    dim %= len(_shape(x))
    return _pieces(imp, x, dim, _meta_sizes(x, dim, lambda t: torch.chunk(t, chunks, dim)))


def _unbind(imp: ImportContext, node: fx.Node, x, dim: int = 0):
    x = imp.tensor(x)
    shape = _shape(x)
    dim %= len(shape)
    rest = shape[:dim] + shape[dim + 1 :]
    return tuple(_reshaped(imp, p, rest) for p in _pieces(imp, x, dim, [1] * shape[dim]))


# ---------------------------------------------------------------------------------------------
# cat / stack / expand / permute
# ---------------------------------------------------------------------------------------------


def _cat(imp: ImportContext, node: fx.Node, tensors, dim: int = 0, **kwargs) -> SSAValue:
    if kwargs:
        raise Unsupported(f"cat with {', '.join(kwargs)}")
    inputs = [imp.tensor(t) for t in tensors]
    t = imp.result_type(node)
    if len(inputs) == 1:
        return inputs[0]
    return imp.insert(ConcatOp(inputs, dim % len(t.get_shape()), t))


def _stack(imp: ImportContext, node: fx.Node, tensors, dim: int = 0) -> SSAValue:
    inputs = [imp.tensor(t) for t in tensors]
    t = imp.result_type(node)
    dim %= len(t.get_shape())
    shape = list(_shape(inputs[0]))
    shape.insert(dim, 1)
    inputs = [_reshaped(imp, v, shape) for v in inputs]
    return inputs[0] if len(inputs) == 1 else imp.insert(ConcatOp(inputs, dim, t))


BROADCASTING_FUNCTIONS = {operator.add, operator.sub, operator.mul, operator.truediv, operator.iadd,
                          torch.add, torch.sub, torch.mul, torch.div}
BROADCASTING_METHODS = {"add", "sub", "mul", "div"}


def _value_shape(arg: Any) -> tuple[int, ...] | None:
    if isinstance(arg, fx.Node):
        meta = arg.meta.get("tensor_meta")
        return tuple(meta.shape) if meta is not None and hasattr(meta, "shape") else None
    return () if isinstance(arg, (int, float)) and not isinstance(arg, bool) else None


def _is_expand(node: Any) -> bool:
    return isinstance(node, fx.Node) and (
        (node.op == "call_function" and node.target is torch.broadcast_to)
        or (node.op == "call_method" and node.target in ("expand", "expand_as", "broadcast_to"))
    )


def consumers_broadcast(node: fx.Node, source_shape: Sequence[int]) -> bool:
    """Whether every user of `node` (an expand) is a binary elementwise op that would broadcast
    the unexpanded source to the same result by itself, so the expand needs no op at all. The
    other operand must not be an expand itself: its value may have been left unexpanded too."""
    for user in node.users:
        plain = (user.op == "call_function" and user.target in BROADCASTING_FUNCTIONS) or (
            user.op == "call_method" and user.target in BROADCASTING_METHODS
        )
        if not plain or user.kwargs or len(user.args) != 2:
            return False
        if any(_is_expand(a) and a is not node for a in user.args):
            return False
        shapes = [tuple(source_shape) if a is node else _value_shape(a) for a in user.args]
        if any(s is None for s in shapes) or irt.broadcast_shapes(*shapes) != _value_shape(user):
            return False
    return bool(node.users)


def _expand(imp: ImportContext, node: fx.Node, x, *sizes, **kwargs) -> SSAValue:
    x = imp.tensor(x)
    t = imp.result_type(node)
    if _shape(x) == dims_of(t) or consumers_broadcast(node, _shape(x)):
        return x
    return imp.insert(ExpandOp(x, t))


def _permute(imp: ImportContext, node: fx.Node, x, *dims) -> SSAValue:
    x = imp.tensor(x)
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    rank = len(_shape(x))
    perm = [d % rank for d in dims] if rank else []
    if perm == list(range(rank)):
        return x
    shape = [_shape(x)[p] for p in perm]
    return imp.insert(irt.TransposeOp(x, perm, tensor_type(shape)))


def _movedim(imp: ImportContext, node: fx.Node, x, source, destination) -> SSAValue:
    """movedim as a permutation: result dimension d comes from input dimension perm[d]."""
    x = imp.tensor(x)
    n = len(_shape(x))
    src = [s % n for s in ([source] if isinstance(source, int) else source)]
    dst = [d % n for d in ([destination] if isinstance(destination, int) else destination)]
    perm: list[int | None] = [None] * n
    for s, d in zip(src, dst):
        perm[d] = s
    rest = iter(d for d in range(n) if d not in src)
    return _permute(imp, node, x, *(p if p is not None else next(rest) for p in perm))


# ---------------------------------------------------------------------------------------------
# Identity and casts
# ---------------------------------------------------------------------------------------------


def _check_float32(arg: Any) -> None:
    if isinstance(arg, torch.dtype) and arg != torch.float32:
        raise Unsupported(f"a cast to {arg}: irc compiles float32 tensors")
    if isinstance(arg, str) and arg not in ("torch.FloatTensor", "cpu") and not arg.startswith("cpu"):
        raise Unsupported(f"a conversion to {arg!r}: irc compiles float32 CPU tensors")
    if isinstance(arg, torch.device) and arg.type != "cpu":
        raise Unsupported(f"a move to {arg}: irc compiles for the CPU")


def _to(imp: ImportContext, node: fx.Node, x, *args, **kwargs) -> SSAValue:
    """.to(dtype/device/tensor), .type(dtype): the identity when it keeps float32 on the CPU."""
    for arg in (*args, kwargs.get("dtype"), kwargs.get("device")):
        _check_float32(arg)
        if isinstance(arg, torch.Tensor) and arg.dtype != torch.float32:
            raise Unsupported(f"a cast to {arg.dtype}: irc compiles float32 tensors")
    return imp.tensor(x)


def _type(imp: ImportContext, node: fx.Node, x, dtype=None, **kwargs):
    if dtype is None:
        return "torch.FloatTensor"
    return _to(imp, node, x, dtype)


# ---------------------------------------------------------------------------------------------
# Factories shaped like a run-time tensor (their values are still known at compile time)
# ---------------------------------------------------------------------------------------------


def _like(fn: Callable[..., torch.Tensor]) -> Converter:
    """zeros_like(x), ones_like(x), full_like(x, v), x.new_zeros(...): x only lends its shape."""

    def convert(imp: ImportContext, node: fx.Node, x, *args, **kwargs):
        proxy = torch.empty(_shape(x)) if isinstance(x, SSAValue) else x
        if has_runtime_value((args, kwargs)):
            raise Unsupported("a factory whose arguments are computed at run time")
        return fn(proxy, *args, **kwargs)

    return convert


# ---------------------------------------------------------------------------------------------
# Embedding: the one consumer of int64 tensors (run-time indices)
# ---------------------------------------------------------------------------------------------


def _embedding_op(imp: ImportContext, node: fx.Node, indices, weight, max_norm=None) -> SSAValue:
    """irt.embedding of run-time int64 indices; padding_idx, scale_grad_by_freq and sparse only
    change training, so they are accepted; max_norm renormalizes the table in place: unsupported."""
    if max_norm is not None:
        raise Unsupported("max_norm (renormalizes the weight in place on every call)")
    if not is_int64(indices):
        raise Unsupported("the indices must be an int64 tensor given at run time (a model input)")
    if not isinstance(weight, SSAValue) or is_int64(weight):
        raise Unsupported("the weight must be a float32 parameter")
    return imp.insert(EmbeddingOp(indices, weight, imp.result_type(node)))


@accepts_int64
def _f_embedding(imp: ImportContext, node: fx.Node, input, weight, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False) -> SSAValue:
    return _embedding_op(imp, node, input, weight, max_norm)


@accepts_int64
def _torch_embedding(imp: ImportContext, node: fx.Node, weight, input, padding_idx=-1,
                     scale_grad_by_freq=False, sparse=False) -> SSAValue:
    return _embedding_op(imp, node, input, weight)


@accepts_int64
def _embedding_module(imp: ImportContext, node: fx.Node, mod: torch.nn.Embedding, input) -> SSAValue:
    return _embedding_op(imp, node, input, imp.param(mod.weight), mod.max_norm)




# ---------------------------------------------------------------------------------------------
# The tables
# ---------------------------------------------------------------------------------------------


def _results_getitem(convert: Converter) -> Converter:
    """getitem on the `(out, None, ...)` tuple a multi-result ATen overload converts to
    (`aten.multi`): result 0 (irc computes no other); any other getitem goes to `convert`."""

    def getitem(imp: ImportContext, node: fx.Node, value, index, *args, **kwargs):
        if isinstance(value, tuple) and not isinstance(value, SSAValue):
            item = value[index]
            if item is None:
                raise Unsupported(
                    f"result {index} of {getattr(node.args[0], 'target', '?')} (irc computes only result 0)"
                )
            return item
        return convert(imp, node, value, index, *args, **kwargs)

    return getitem


_RUNTIME_COMPARISON = (
    "a comparison or logical op on a run-time tensor (it makes a bool tensor; irc compiles float32 only)"
)
_FACTORY = "a factory whose arguments are computed at run time"


def _only_folded(targets: Sequence[Any], what: str) -> dict[Any, Converter]:
    """Targets evaluated at compile time; on a run-time tensor unsupported, for `what`."""
    return {target: folding(None, target, what) for target in targets}


FUNCTIONS: dict[Any, Converter] = {
    **_only_folded(
        (operator.floordiv, operator.mod, operator.eq, operator.ne, operator.lt, operator.le, operator.gt,
         operator.ge, operator.not_, operator.and_, operator.or_, operator.invert, operator.xor, torch.eq, torch.ne,
         torch.lt, torch.le, torch.gt, torch.ge, torch.logical_not, torch.logical_and, torch.logical_or,
         builtins.len),
        _RUNTIME_COMPARISON,
    ),
    # Size arithmetic Dynamo records (math on x.shape, SymInt/SymFloat helpers)
    **_only_folded(
        (math.sqrt, math.floor, math.ceil, torch._sym_sqrt, torch.sym_float, torch.sym_int, torch.sym_max,
         torch.sym_min, torch.sym_sum, torch.sym_not),
        "size arithmetic on a value computed at run time",
    ),
    **_only_folded((torch.zeros, torch.ones, torch.full, torch.arange, torch.eye, torch.linspace, torch.tensor), _FACTORY),
    **_only_folded((torch.triu, torch.tril), "triu/tril of a tensor computed at run time"),
    # torch.empty is folded to zeros: its contents are unspecified, and zeros are one valid choice.
    torch.empty: folding(None, lambda *a, **k: torch.zeros(*a, **k), _FACTORY),
    operator.getitem: _results_getitem(folding(_getitem, operator.getitem)),
    builtins.getattr: folding(_getattr, builtins.getattr),
    torch._assert: folding(None, _assert, "torch._assert on a value computed at run time"),
    torch.cat: folding(_cat, torch.cat),
    torch.concat: folding(_cat, torch.concat),
    torch.concatenate: folding(_cat, torch.concatenate),
    torch.stack: folding(_stack, torch.stack),
    torch.permute: folding(_permute, torch.permute),
    torch.movedim: folding(_movedim, torch.movedim),
    torch.unsqueeze: folding(reshape, torch.unsqueeze),
    torch.squeeze: folding(reshape, torch.squeeze),
    torch.flatten: folding(reshape, torch.flatten),
    torch.reshape: folding(reshape, torch.reshape),
    torch.unflatten: folding(reshape, torch.unflatten),
    torch.split: folding(_split, torch.split),
    torch.chunk: folding(_chunk, torch.chunk),
    torch.unbind: folding(_unbind, torch.unbind),
    torch.broadcast_to: folding(_expand, torch.broadcast_to),
    torch.clone: folding(identity, torch.clone),
    torch.detach: folding(identity, torch.detach),
    torch.zeros_like: _like(torch.zeros_like),
    torch.ones_like: _like(torch.ones_like),
    torch.full_like: _like(torch.full_like),
    torch.nn.functional.embedding: _f_embedding,
    torch.embedding: _torch_embedding,
}

METHODS: dict[str, Converter] = {
    "size": folding(_size, method_call("size")),
    "dim": folding(_dim, method_call("dim")),
    "ndimension": folding(_dim, method_call("ndimension")),
    "numel": folding(_numel, method_call("numel")),
    "permute": folding(_permute, method_call("permute")),
    "movedim": folding(_movedim, method_call("movedim")),
    "view": folding(reshape, method_call("view")),
    "reshape": folding(reshape, method_call("reshape")),
    "flatten": folding(reshape, method_call("flatten")),
    "unsqueeze": folding(reshape, method_call("unsqueeze")),
    "squeeze": folding(reshape, method_call("squeeze")),
    "unflatten": folding(reshape, method_call("unflatten")),
    "view_as": folding(reshape, method_call("view_as")),
    "reshape_as": folding(reshape, method_call("reshape_as")),
    "split": folding(_split, method_call("split")),
    "chunk": folding(_chunk, method_call("chunk")),
    "unbind": folding(_unbind, method_call("unbind")),
    "expand": folding(_expand, method_call("expand")),
    "expand_as": folding(_expand, method_call("expand_as")),
    "broadcast_to": folding(_expand, method_call("broadcast_to")),
    "contiguous": folding(identity, method_call("contiguous")),
    "clone": folding(identity, method_call("clone")),
    "detach": folding(identity, method_call("detach")),
    "cpu": folding(identity, method_call("cpu")),
    "float": folding(identity, method_call("float")),
    "to": folding(_to, method_call("to")),
    "type": folding(_type, method_call("type")),
    "new_zeros": _like(lambda t, *a, **k: t.new_zeros(*a, **k)),
    "new_ones": _like(lambda t, *a, **k: t.new_ones(*a, **k)),
    "new_full": _like(lambda t, *a, **k: t.new_full(*a, **k)),
    # Folded on compile-time tensors (masks, index arithmetic); on run-time tensors unsupported:
    **{
        name: folding(None, method_call(name), what)
        for name, what in {
            "bool": "a cast to torch.bool: irc compiles float32 tensors",
            "long": "a cast to torch.int64: irc compiles float32 tensors",
            "int": "a cast to torch.int32: irc compiles float32 tensors",
            "triu": "triu/tril of a tensor computed at run time",
            "tril": "triu/tril of a tensor computed at run time",
            **dict.fromkeys(
                ("eq", "ne", "lt", "le", "gt", "ge", "logical_not", "logical_and", "logical_or"), _RUNTIME_COMPARISON
            ),
            "item": "item() of a run-time tensor",
            "tolist": "tolist() of a run-time tensor",
        }.items()
    },
}

MODULES: dict[type, Converter] = {torch.nn.Embedding: _embedding_module}

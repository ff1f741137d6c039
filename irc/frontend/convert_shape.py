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
from irc.dialects.irt.logic import CmpOp
from irc.dialects.irt.math import WhereOp
from irc.dialects.irt.shape import ArangeOp, ConcatOp, EmbeddingOp, ExpandOp, IndexSelectOp, SliceOp
from irc.dialects.symbolic import Dim, all_static, dim, dims_of, is_expr, product
from irc.errors import IrcError
from irc.frontend.convert_base import (
    Converter,
    ImportContext,
    Unsupported,
    accepts_ints,
    dtype_of,
    identity,
    like,
    reshape,
    size,
    slice_dim,
    tensor_type,
)
from irc.frontend.folding import folding, has_runtime_value, has_size_expr, method_call

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


@accepts_ints
def _size(imp: ImportContext, node: fx.Node, x: SSAValue, dim: int | None = None):
    size = _torch_size(_shape(x))
    return size if dim is None else size[dim]


@accepts_ints
def _dim(imp: ImportContext, node: fx.Node, x: SSAValue) -> int:
    return len(_shape(x))


@accepts_ints
def _numel(imp: ImportContext, node: fx.Node, x: SSAValue) -> int:
    return product(_shape(x))


@accepts_ints
def _getattr(imp: ImportContext, node: fx.Node, x: SSAValue, name: str, *default):
    shape = _shape(x)
    attrs = {
        "shape": lambda: _torch_size(shape),
        "ndim": lambda: len(shape),
        "dtype": lambda: dtype_of(x),
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
    return imp.insert(irt.ReshapeOp(x, like(x, shape)))


def _index_tensor(imp: ImportContext, node: fx.Node, x: SSAValue, index: Any) -> SSAValue:
    """x[index] for constant ints, slices, None and Ellipsis (basic indexing)."""
    items = list(index) if isinstance(index, tuple) else [index]
    for it in items:
        if isinstance(it, bool) or not (it is None or it is Ellipsis or isinstance(it, (int, slice))):
            raise Unsupported(f"indexing with {type(it).__name__} (irc supports ints, slices, None and ...)")
        bounds = (it.start, it.stop, it.step) if isinstance(it, slice) else ()
        if not all(isinstance(v, (int, type(None))) or is_expr(v) for v in bounds):
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
    bounds = [v for it in items if isinstance(it, slice) for v in (it.start, it.stop, it.step)]
    if not all_static(shape) or any(is_expr(v) for v in bounds):
        return _index_symbolic(imp, node, x, items)

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
        v = imp.insert(SliceOp(x, offsets, strides, like(x, sizes)))
    return _reshaped(imp, v, out_shape)


SYMBOLIC_MIN = 2
"""The least size a symbolic dimension has (tracing assumes >= 2; the runtime checks it)."""


def _index_symbolic(imp: ImportContext, node: fx.Node, x: SSAValue, items: list) -> SSAValue:
    """x[items] where sizes or slice bounds are symbolic: steps must be static, starts may be
    expressions (GPT-2's decode step cuts row `s0` of its causal table; `x[:, -1:]` of an
    `s1`-long dimension starts at `s1 - 1`), the sizes are the traced ones (torch's own
    arithmetic on the symbols). A static box on a symbolic dimension must fit in its least size;
    what other boxes need (a symbolic start >= 0, the last element inside the input) is checked
    at every call (the slice's call-time requirements become size rules:
    fx_importer.slice_requirements)."""
    shape, out_shape = _shape(x), list(dims_of(imp.result_type(node)))
    offsets, strides, sizes, d, o = [], [], [], 0, 0
    for it in items:
        if it is None:
            o += 1
            continue
        n = shape[d]
        index = isinstance(it, int) or is_expr(it)
        start, step = (it, 1) if index else (it.start or 0, it.step or 1)
        if isinstance(start, int) and start < 0:  # from the end: x[:, -1:]
            start = max(start + n, 0) if isinstance(n, int) else dim(n + start)
        if not isinstance(step, int) or step < 1 or (isinstance(start, int) and start < 0):
            raise Unsupported(f"index {it} of a dimension of size {n}: irc takes static steps >= 1 here")
        size = 1 if index else out_shape[o]
        if not isinstance(n, int) and isinstance(size, int) and isinstance(start, int) and size \
                and start + (size - 1) * step >= SYMBOLIC_MIN:
            raise Unsupported(f"index {it} of a dimension of size {n} (static reach past its least size {SYMBOLIC_MIN})")
        offsets.append(start)
        strides.append(step)
        sizes.append(size)
        o += 0 if index else 1
        d += 1
    v = x
    if tuple(sizes) != shape or any(off != 0 for off in offsets):
        v = imp.insert(SliceOp(x, offsets, strides, like(x, sizes)))
    return _reshaped(imp, v, out_shape)


@accepts_ints
def _getitem(imp: ImportContext, node: fx.Node, x: Any, index: Any):
    """getitem on a tensor (slicing, or rows picked by an int64 tensor) or on a Python sequence
    (shapes, split results)."""
    if isinstance(x, torch.Tensor) and (has_size_expr(index) or isinstance(index, SSAValue)):
        x = imp.constant(x, "sliced", keep=True)  # cut to symbolic sizes, or rows picked at run time
    if isinstance(x, SSAValue):
        if isinstance(index, SSAValue):
            return _take_rows(imp, node, x, index)
        rows = _compile_time_rows(imp, x, index)
        if rows is not None:
            return _take_rows(imp, node, *rows)
        advanced = (torch.Tensor, list)
        if has_runtime_value(index) or isinstance(index, advanced) or (
                isinstance(index, tuple) and any(isinstance(i, advanced) for i in index)):
            raise Unsupported("indexing with several tensors, or a tuple with a tensor or list in it (advanced indexing)")
        return _index_tensor(imp, node, x, index)
    if isinstance(x, (tuple, list)):
        return x[index]
    raise Unsupported(f"indexing a {type(x).__name__} with a run-time tensor")


def _compile_time_rows(imp: ImportContext, x: SSAValue, index: Any) -> tuple[SSAValue, SSAValue] | None:
    """x[index] for an index known at compile time that picks rows, as (the rows' tensor, their
    int64 indices) for `_take_rows`: a tensor or list of integers (rows of dim 0; a relative
    position bias table read at a buffer's indices), or a bool mask over x's leading dimensions
    (the rows where it is True, counted at compile time, of x with those dimensions flattened).
    None for anything else."""
    if isinstance(index, list) and index and all(isinstance(i, int) and not isinstance(i, bool) for i in index):
        index = torch.tensor(index)
    elif isinstance(index, list) and index and all(isinstance(i, bool) for i in index):
        index = torch.tensor(index)
    # uint8 indexes as a mask in torch (deprecated): left to eager, as are float indices
    if not isinstance(index, torch.Tensor) or index.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8,
                                                                   torch.bool):
        return None
    shape = _shape(x)
    if index.dtype != torch.bool:  # in range: the model ran on the example inputs before its import
        return x, imp.constant(index.to(torch.int64), "index", keep=True)
    k = index.dim()
    if k == 0 or tuple(index.shape) != tuple(shape[:k]) or not all(isinstance(d, int) for d in shape[:k]):
        return None
    flat = _reshaped(imp, x, (math.prod(shape[:k]), *shape[k:]))
    return flat, imp.constant(index.reshape(-1).nonzero().reshape(-1), "index", keep=True)


def _take_rows(imp: ImportContext, node: fx.Node, x: SSAValue, index: SSAValue) -> SSAValue:
    """x[index] for a run-time int64 tensor: the rows x[index[i...]] (negative indices count from
    the end, as in eager): an irt.index_select along dim 0 of the flattened indices, reshaped to
    index.shape + x.shape[1:]."""
    if dtype_of(index) != torch.int64 or not _shape(x):
        raise Unsupported("indexing with a bool mask or a float tensor (the result's size depends on the values)")
    n, idx_shape = _shape(x)[0], _shape(index)
    zero = imp.tensor(0, torch.int64)
    negative = imp.insert(CmpOp("lt", index, zero, tensor_type(idx_shape, torch.bool)))
    wrapped = imp.insert(irt.AddOp(index, imp.tensor(n, torch.int64), like(index, idx_shape)))
    index = imp.insert(WhereOp(negative, wrapped, index, like(index, idx_shape)))
    flat = _reshaped(imp, index, (math.prod(idx_shape),))
    rows = imp.insert(IndexSelectOp(x, flat, 0, like(x, (math.prod(idx_shape), *_shape(x)[1:]))))
    return _reshaped(imp, rows, (*idx_shape, *_shape(x)[1:]))


# ---------------------------------------------------------------------------------------------
# split / chunk / unbind: Python tuples of slices
# ---------------------------------------------------------------------------------------------


def _pieces(imp: ImportContext, x: SSAValue, dim: int, sizes: Sequence[int]) -> tuple[SSAValue, ...]:
    out, start = [], 0
    for n in sizes:
        out.append(slice_dim(imp, x, dim, start, n))
        start += n
    return tuple(out)


@accepts_ints
def _narrow(imp: ImportContext, node: fx.Node, x: Any, dim: int, start: Any, length: Any):
    """x.narrow(dim, start, length): the slice [start, start + length) of `dim` (a negative start
    counts from the end). torch raises where the box leaves the dimension, which slicing would
    clamp instead; the traced run on the example inputs has raised for that already, and a box on
    a symbolic dimension is checked at every call (`_index_symbolic`)."""
    shape = tuple(x.shape) if isinstance(x, torch.Tensor) else _shape(x)
    dim %= len(shape)
    n = shape[dim]
    if isinstance(start, int) and start < 0:
        start = start + n if isinstance(n, int) else n + start
    return _getitem(imp, node, x, (slice(None),) * dim + (slice(start, start + length),))


def _meta_sizes(x: SSAValue, dim: int, how: Callable[[torch.Tensor], Sequence[torch.Tensor]]) -> list[int]:
    """Piece sizes along `dim` exactly as torch computes them (on a shape-only tensor; the other
    dimensions do not matter, so symbolic ones stand in as 1)."""
    n = _shape(x)[dim]
    if not isinstance(n, int):
        raise Unsupported(f"splitting a dimension of symbolic size {n}")
    shape = [d if isinstance(d, int) else 1 for d in _shape(x)]
    return [p.shape[dim] for p in how(torch.empty(shape, device="meta"))]


@accepts_ints
def _split(imp: ImportContext, node: fx.Node, x, split_size_or_sections, dim: int = 0):
    x = imp.tensor(x)
    dim %= len(_shape(x))
    sizes = _meta_sizes(x, dim, lambda t: torch.split(t, split_size_or_sections, dim))
    return _pieces(imp, x, dim, sizes)


@accepts_ints
def _chunk(imp: ImportContext, node: fx.Node, x, chunks: int, dim: int = 0):
    x = imp.tensor(x)
    dim %= len(_shape(x))
    return _pieces(imp, x, dim, _meta_sizes(x, dim, lambda t: torch.chunk(t, chunks, dim)))


@accepts_ints
def _unbind(imp: ImportContext, node: fx.Node, x, dim: int = 0):
    x = imp.tensor(x)
    shape = _shape(x)
    dim %= len(shape)
    rest = shape[:dim] + shape[dim + 1 :]
    return tuple(_reshaped(imp, p, rest) for p in _pieces(imp, x, dim, [1] * shape[dim]))


# ---------------------------------------------------------------------------------------------
# cat / stack / expand / permute
# ---------------------------------------------------------------------------------------------


@accepts_ints
def _cat(imp: ImportContext, node: fx.Node, tensors, dim: int = 0, **kwargs) -> SSAValue:
    if kwargs:
        raise Unsupported(f"cat with {', '.join(kwargs)}")
    t = imp.result_type(node)
    dtype = _dtype_of_type(t)
    inputs = [imp.tensor(v, dtype) for v in tensors]  # torch.cat promotes its inputs to one dtype
    if len(inputs) == 1:
        return inputs[0]
    return imp.insert(ConcatOp(inputs, dim % len(t.get_shape()), t))


@accepts_ints
def _stack(imp: ImportContext, node: fx.Node, tensors, dim: int = 0) -> SSAValue:
    t = imp.result_type(node)
    inputs = [imp.tensor(v, _dtype_of_type(t)) for v in tensors]
    dim %= len(t.get_shape())
    shape = list(_shape(inputs[0]))
    shape.insert(dim, 1)
    inputs = [_reshaped(imp, v, shape) for v in inputs]
    return inputs[0] if len(inputs) == 1 else imp.insert(ConcatOp(inputs, dim, t))


BROADCASTING_FUNCTIONS = {operator.add, operator.sub, operator.mul, operator.truediv, operator.iadd,
                          torch.add, torch.sub, torch.mul, torch.div}
BROADCASTING_METHODS = {"add", "sub", "mul", "div"}


def _value_shape(arg: Any) -> tuple[Dim, ...] | None:
    if isinstance(arg, fx.Node):
        meta = arg.meta.get("tensor_meta")
        return tuple(map(size, meta.shape)) if meta is not None and hasattr(meta, "shape") else None
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


@accepts_ints
def _expand(imp: ImportContext, node: fx.Node, x, *sizes, **kwargs) -> SSAValue:
    x = imp.tensor(x)
    t = imp.result_type(node)
    if _shape(x) == dims_of(t) or consumers_broadcast(node, _shape(x)):
        return x
    return imp.insert(ExpandOp(x, t))


@accepts_ints
def _permute(imp: ImportContext, node: fx.Node, x, *dims) -> SSAValue:
    x = imp.tensor(x)
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    rank = len(_shape(x))
    perm = [d % rank for d in dims] if rank else []
    if perm == list(range(rank)):
        return x
    shape = [_shape(x)[p] for p in perm]
    return imp.insert(irt.TransposeOp(x, perm, like(x, shape)))


@accepts_ints
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


def _dtype_of_type(t: Any) -> torch.dtype:
    return {"f32": torch.float32, "i64": torch.int64, "i1": torch.bool}[str(t.element_type)]


# ---------------------------------------------------------------------------------------------
# Factories shaped like a run-time tensor (their values are still known at compile time)
# ---------------------------------------------------------------------------------------------


def _filled(imp: ImportContext, node: fx.Node, value: Any) -> SSAValue:
    """A tensor of the node's traced shape (symbolic sizes included) and dtype, every element
    `value`: one constant, broadcast (nothing is materialized until a kernel reads it)."""
    if isinstance(value, SSAValue) or is_expr(value) or not isinstance(value, (int, float, bool)):
        raise Unsupported("a factory whose fill value is computed at run time")
    t = imp.result_type(node)
    c = imp.tensor(value, _dtype_of_type(t))
    return c if not t.get_shape() else imp.insert(ExpandOp(c, t))


FILLS = {"zeros": 0, "ones": 1, "empty": 0}


def _sized(eager: Callable[..., Any], fill: Callable[..., Any]) -> Converter:
    """A factory (zeros, ones, full, empty...): evaluated at compile time when its sizes are static,
    else a broadcast constant of the traced shape (`fill(*args, **kwargs)` gives the value)."""
    folded = folding(None, eager, _FACTORY)

    def convert(imp: ImportContext, node: fx.Node, *args, **kwargs):
        if not has_size_expr((args, kwargs)):
            return folded(imp, node, *args, **kwargs)
        return _filled(imp, node, fill(*args, **kwargs))

    return convert


def _full_value(size, fill_value, *args, **kwargs):
    return fill_value


def _arange(imp: ImportContext, node: fx.Node, *args, **kwargs) -> SSAValue:
    """torch.arange: folded when its bounds are static, else irt.arange of the traced (symbolic)
    length, plus a symbolic start as a number."""
    if not has_size_expr((args, kwargs)):
        return folding(None, torch.arange, _FACTORY)(imp, node, *args, **kwargs)
    bounds = list(args) + [kwargs[k] for k in ("start", "end", "step") if k in kwargs]
    start, step = (bounds[0], bounds[2] if len(bounds) > 2 else 1) if len(bounds) > 1 else (0, 1)
    if is_expr(step) or not isinstance(step, (int, float)):
        raise Unsupported("arange with a step computed at run time")
    t = imp.result_type(node)
    v = imp.insert(ArangeOp(0 if is_expr(start) else start, step, t))
    if is_expr(start):
        v = imp.insert(irt.AddOp(v, imp.tensor(start, _dtype_of_type(t)), t))
    return v


def _like(fn: Callable[..., torch.Tensor], fill: Callable[..., Any] | None = None) -> Converter:
    """zeros_like(x), ones_like(x), full_like(x, v), x.new_zeros(...): x only lends its shape and
    dtype; evaluated at compile time when the shape is static, else (`fill(*args)` gives the
    value) a broadcast constant of the traced symbolic shape."""

    @accepts_ints
    def convert(imp: ImportContext, node: fx.Node, x, *args, **kwargs):
        if has_runtime_value((args, kwargs)):
            raise Unsupported("a factory whose arguments are computed at run time")
        symbolic = isinstance(x, SSAValue) and not all_static(_shape(x))
        if symbolic or has_size_expr((args, kwargs)):
            if fill is None:
                raise Unsupported("this factory with symbolic sizes")
            return _filled(imp, node, fill(*args, **kwargs))
        proxy = torch.empty(_shape(x), dtype=dtype_of(x)) if isinstance(x, SSAValue) else x
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
    if isinstance(indices, torch.Tensor) and not indices.dtype.is_floating_point:
        indices = imp.constant(indices, "indices", keep=True)  # position ids known at compile time
    if not isinstance(indices, SSAValue) or dtype_of(indices) != torch.int64:
        raise Unsupported("the indices must be an int64 tensor")
    if not isinstance(weight, SSAValue) or dtype_of(weight) != torch.float32:
        raise Unsupported("the weight must be a float32 parameter")
    return imp.insert(EmbeddingOp(indices, weight, imp.result_type(node)))


@accepts_ints
def _f_embedding(imp: ImportContext, node: fx.Node, input, weight, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False) -> SSAValue:
    return _embedding_op(imp, node, input, weight, max_norm)


@accepts_ints
def _torch_embedding(imp: ImportContext, node: fx.Node, weight, input, padding_idx=-1,
                     scale_grad_by_freq=False, sparse=False) -> SSAValue:
    return _embedding_op(imp, node, input, weight)


@accepts_ints
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

    getitem.accepts_ints = getattr(convert, "accepts_ints", False)  # type: ignore[attr-defined]
    return getitem


_FACTORY = "a factory whose arguments are computed at run time"


def _only_folded(targets: Sequence[Any], what: str) -> dict[Any, Converter]:
    """Targets evaluated at compile time; on a run-time tensor unsupported, for `what`."""
    return {target: folding(None, target, what) for target in targets}


FUNCTIONS: dict[Any, Converter] = {
    **_only_folded(
        (operator.floordiv, operator.mod, operator.not_, builtins.len),
        "integer division, modulo or `not` of a value computed at run time",
    ),
    # Size arithmetic Dynamo records (math on x.shape, SymInt/SymFloat helpers)
    **_only_folded(
        (math.sqrt, math.floor, math.ceil, torch._sym_sqrt, torch.sym_float, torch.sym_int, torch.sym_max,
         torch.sym_min, torch.sym_sum, torch.sym_not),
        "size arithmetic on a value computed at run time",
    ),
    **_only_folded((torch.eye, torch.linspace, torch.tensor), _FACTORY),
    # dtype facts (`torch.finfo(x.dtype).min`: the fill value of masks)
    **_only_folded((torch.finfo, torch.iinfo), "finfo/iinfo of a value computed at run time"),
    # torch.Size(...) of sizes (Dynamo records it for `x.size()[:-1] + (n,)`), API-usage logging
    **_only_folded((torch._C._log_api_usage_once,), "a value computed at run time"),
    torch.Size: folding(None, lambda sizes=(): _torch_size(tuple(sizes)), "a value computed at run time"),
    torch.zeros: _sized(torch.zeros, lambda *a, **k: 0),
    torch.ones: _sized(torch.ones, lambda *a, **k: 1),
    torch.full: _sized(torch.full, _full_value),
    torch.arange: _arange,
    # torch.empty is folded to zeros: its contents are unspecified, and zeros are one valid choice.
    torch.empty: _sized(lambda *a, **k: torch.zeros(*a, **k), lambda *a, **k: 0),
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
    torch.narrow: folding(_narrow, torch.narrow),
    torch.unbind: folding(_unbind, torch.unbind),
    torch.broadcast_to: folding(_expand, torch.broadcast_to),
    torch.clone: folding(identity, torch.clone),
    torch.detach: folding(identity, torch.detach),
    torch.zeros_like: _like(torch.zeros_like, lambda *a, **k: 0),
    torch.ones_like: _like(torch.ones_like, lambda *a, **k: 1),
    torch.full_like: _like(torch.full_like, lambda fill_value, *a, **k: fill_value),
    torch.nn.functional.embedding: _f_embedding,
    torch.embedding: _torch_embedding,
}

METHODS: dict[str, Converter] = {
    # a compile-time tensor indexed by a traced value: symbolic_trace records the method
    "__getitem__": folding(_getitem, operator.getitem),
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
    "narrow": folding(_narrow, method_call("narrow")),
    "unbind": folding(_unbind, method_call("unbind")),
    "expand": folding(_expand, method_call("expand")),
    "expand_as": folding(_expand, method_call("expand_as")),
    "broadcast_to": folding(_expand, method_call("broadcast_to")),
    "contiguous": folding(identity, method_call("contiguous")),
    "clone": folding(identity, method_call("clone")),
    "detach": folding(identity, method_call("detach")),
    "cpu": folding(identity, method_call("cpu")),
    "new_zeros": _like(lambda t, *a, **k: t.new_zeros(*a, **k), lambda *a, **k: 0),
    "new_ones": _like(lambda t, *a, **k: t.new_ones(*a, **k), lambda *a, **k: 1),
    "new_full": _like(lambda t, *a, **k: t.new_full(*a, **k), _full_value),
    # Folded on compile-time tensors; on run-time tensors unsupported:
    **{
        name: folding(None, method_call(name), what)
        for name, what in {
            "item": "item() of a run-time tensor",
            "tolist": "tolist() of a run-time tensor",
        }.items()
    },
}

MODULES: dict[type, Converter] = {torch.nn.Embedding: _embedding_module}

"""FX converters for the nodes `order_mutations` leaves in a graph: in-place writes and their order.

- `setitem_value(x, index, value)` (was `x[index] = value`): evaluated at compile time when `x`,
  the index and the value are all known then (Swin's shifted-window mask, built by writing
  region numbers into `new_zeros`), changing the folded tensor in place as eager PyTorch does.
  A write into a run-time tensor with a basic index (ints, unit-step slices, ...) is a new value:
  the box is the value broadcast (cast to x's dtype), the rest x's slices around it, joined by
  `irt.concat` (Llama's padding mask, `mask[:, :, :, :n] = mask[..., :n].masked_fill(...)`).
  A write into a folded tensor that a run-time op already took as a constant is unsupported:
  the IR holds the old contents, and a later read would need the new ones.
- `after(x, *deps)`: `x`; the deps only order nodes.
- `stale_alias(view, mutation)`: a view read after an in-place change to its storage. Folded
  (compile-time) tensors share storage as in eager PyTorch, so it is the view itself; a run-time
  value is SSA and cannot see the change: unsupported (an eager node, which sees it).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import fx
from xdsl.ir import SSAValue

from irc.dialects.irt import core as irt
from irc.dialects.irt.shape import ConcatOp, ExpandOp
from irc.dialects.symbolic import Dim
from irc.frontend.convert_base import (
    Converter,
    ImportContext,
    Unsupported,
    accepts_ints,
    dtype_of,
    like,
    slice_dim,
)
from irc.frontend.folding import folding, has_runtime_value
from irc.frontend.order_mutations import after, setitem_value, stale_alias


def _storage(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


def _box(shape: tuple[Dim, ...], index: Any) -> tuple[list[Dim], list[Dim], list[bool]]:
    """(offsets, sizes, kept) of the box a basic index writes: ints (kept False: the value has no
    such dim), unit-step slices, Ellipsis; None and other steps are unsupported."""
    items = list(index) if isinstance(index, tuple) else [index]
    if items.count(Ellipsis) > 1 or any(it is None for it in items):
        raise Unsupported(f"a write through the index {index!r}")
    consumed = sum(1 for it in items if it is not Ellipsis)
    at = items.index(Ellipsis) if Ellipsis in items else len(items)
    items[at : at + 1] = [slice(None)] * (len(shape) - consumed)
    offsets, sizes, kept = [], [], []
    for it, n in zip(items, shape, strict=True):
        if isinstance(it, int) and not isinstance(it, bool) and isinstance(n, int) and -n <= it < n:
            offsets.append(it % n)
            sizes.append(1)
            kept.append(False)
        elif isinstance(it, slice) and it.step in (None, 1) and isinstance(n, int) and all(
            isinstance(v, (int, type(None))) for v in (it.start, it.stop)
        ):
            start, stop, _ = it.indices(n)
            offsets.append(start)
            sizes.append(max(stop - start, 0))
            kept.append(True)
        elif isinstance(it, slice) and it.step in (None, 1) and it.start in (None, 0) and it.stop in (None, n):
            offsets.append(0)  # the whole of a symbolic dimension
            sizes.append(n)
            kept.append(True)
        else:
            raise Unsupported(f"a write through the index {index!r} (irc takes ints and unit-step slices)")
    return offsets, sizes, kept


def _write_box(imp: ImportContext, x: SSAValue, value: SSAValue, offsets: list, sizes: list, d: int = 0) -> SSAValue:
    """`x` with the box at `offsets` of `sizes` (dims d and later) replaced by `value` (the box's
    shape): x's slices before and after the box in dim d, around the box of the next dims."""
    shape = irt.shape_of(x)
    if d == len(shape):
        return value
    off, size, n = offsets[d], sizes[d], shape[d]
    inner = _write_box(imp, slice_dim(imp, x, d, off, size), value, offsets, sizes, d + 1)
    parts = [slice_dim(imp, x, d, 0, off)] if off else []
    parts.append(inner)
    rest = n - off - size
    if rest != 0:
        parts.append(slice_dim(imp, x, d, off + size, rest))
    return parts[0] if len(parts) == 1 else imp.insert(ConcatOp(parts, d, like(x, shape)))


@accepts_ints
def _setitem(imp: ImportContext, node: fx.Node, x: Any, index: Any, value: Any) -> Any:
    if isinstance(x, torch.Tensor) and isinstance(value, SSAValue) and not has_runtime_value(index):
        x = imp.constant(x, "written", keep=True)  # a folded tensor given run-time contents: a value
    if isinstance(x, SSAValue) and not has_runtime_value(index):
        return _setitem_runtime(imp, x, index, value)
    if not isinstance(x, torch.Tensor) or has_runtime_value((x, index, value)):
        raise Unsupported("an in-place write (x[i] = v) into a tensor computed at run time, through a run-time index")
    if x.numel() and any(_storage(t) == _storage(x) for t, _ in imp.constants.values() if t.numel()):
        raise Unsupported("an in-place write into a compile-time tensor that a run-time op already used")
    return folding(None, setitem_value)(imp, node, x, index, value)


def _setitem_runtime(imp: ImportContext, x: SSAValue, index: Any, value: Any) -> SSAValue:
    """x[index] = value on a run-time x, as a new value (see the module doc)."""
    offsets, sizes, kept = _box(irt.shape_of(x), index)
    v = imp.tensor(value, dtype_of(x))
    view = [s for s, k in zip(sizes, kept) if k]
    if irt.shape_of(v) != tuple(view):  # broadcast to what x[index] reads, as eager does
        if irt.broadcast_shapes(irt.shape_of(v), view) != tuple(view):
            raise Unsupported(f"a value of shape {list(irt.shape_of(v))} written into x[index] of shape {view}")
        v = imp.insert(ExpandOp(v, like(v, view)))
    if tuple(view) != tuple(sizes):
        v = imp.insert(irt.ReshapeOp(v, like(v, sizes)))
    return _write_box(imp, x, v, offsets, sizes)


@accepts_ints
def _after(imp: ImportContext, node: fx.Node, x: Any, *deps: Any) -> Any:
    return x


@accepts_ints
def _stale_alias(imp: ImportContext, node: fx.Node, x: Any, mutation: Any) -> Any:
    if has_runtime_value(x) or has_runtime_value(mutation):  # a run-time change reaches no folded view
        raise Unsupported("it reads a view of a tensor changed in place after the view was taken")
    return x


_NEW_TENSOR_FUNCTIONS = {torch.zeros_like, torch.ones_like, torch.full_like, torch.empty_like, torch.zeros,
                         torch.ones, torch.full, torch.empty, torch.clone}
_NEW_TENSOR_METHODS = {"new_zeros", "new_ones", "new_full", "new_empty", "clone"}


def _makes_a_new_tensor(node: fx.Node) -> bool:
    """A factory or clone: its result shares storage with nothing."""
    if node.op == "call_method":
        return node.target in _NEW_TENSOR_METHODS
    return node.op == "call_function" and node.target in _NEW_TENSOR_FUNCTIONS


def _in_place_on_a_new_value(name: str) -> Converter:
    """`x.<name>_(...)` where `x` is a new tensor (a factory's or a clone) nothing else reads
    (`torch.zeros_like(mask, dtype=torch.float32).masked_fill_(mask, -inf)`, as
    nn.MultiheadAttention turns a bool mask into a float one): the functional `x.<name>(...)`,
    whose result the graph reads from the in-place call."""

    @accepts_ints  # as masked_fill: a bool mask
    def convert(imp: ImportContext, node: fx.Node, x: Any, *args: Any, **kwargs: Any) -> Any:
        target = node.args[0]
        fresh = isinstance(target, fx.Node) and _makes_a_new_tensor(target) and set(target.users) == {node}
        functional = imp.method_converter(name)
        if not fresh or functional is None:
            raise Unsupported(f"{name}_ in place on a tensor other than a new one that nothing else reads")
        return functional(imp, node, x, *args, **kwargs)

    return convert


FUNCTIONS: dict[Any, Converter] = {setitem_value: _setitem, after: _after, stale_alias: _stale_alias}
METHODS: dict[str, Converter] = {"masked_fill_": _in_place_on_a_new_value("masked_fill")}

"""FX converters for the nodes `order_mutations` leaves in a graph: in-place writes and their order.

- `setitem_value(x, index, value)` (was `x[index] = value`): evaluated at compile time when `x`,
  the index and the value are all known then (Swin's shifted-window mask, built by writing
  region numbers into `new_zeros`), changing the folded tensor in place as eager PyTorch does.
  A write into a run-time tensor is unsupported (an eager node). So is a write into a folded
  tensor that a run-time op already took as a constant: the IR holds the old contents, and a
  later read would need the new ones.
- `after(x, *deps)`: `x`; the deps only order nodes.
- `stale_alias(view, mutation)`: a view read after an in-place change to its storage. Folded
  (compile-time) tensors share storage as in eager PyTorch, so it is the view itself; a run-time
  value is SSA and cannot see the change: unsupported (an eager node, which sees it).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import fx

from irc.frontend.convert_base import Converter, ImportContext, Unsupported, accepts_ints
from irc.frontend.folding import folding, has_runtime_value
from irc.frontend.order_mutations import after, setitem_value, stale_alias


def _storage(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


def _setitem(imp: ImportContext, node: fx.Node, x: Any, index: Any, value: Any) -> Any:
    if not isinstance(x, torch.Tensor) or has_runtime_value((x, index, value)):
        raise Unsupported("an in-place write (x[i] = v) into a tensor computed at run time")
    if x.numel() and any(_storage(t) == _storage(x) for t, _ in imp.constants.values() if t.numel()):
        raise Unsupported("an in-place write into a compile-time tensor that a run-time op already used")
    return folding(None, setitem_value)(imp, node, x, index, value)


@accepts_ints
def _after(imp: ImportContext, node: fx.Node, x: Any, *deps: Any) -> Any:
    return x


@accepts_ints
def _stale_alias(imp: ImportContext, node: fx.Node, x: Any, mutation: Any) -> Any:
    if has_runtime_value(x):
        raise Unsupported("it reads a view of a tensor changed in place after the view was taken")
    return x


FUNCTIONS: dict[Any, Converter] = {setitem_value: _setitem, after: _after, stale_alias: _stale_alias}

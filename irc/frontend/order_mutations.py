"""order-mutations: make every in-place mutation in an FX graph a data dependency.

Dynamo graphs (and traced ones with in-place methods) are not functional: `mask[0:2] = 1`
(`operator.setitem`), `x.add_(y)`, `F.relu(x, inplace=True)`, `x += y` change a tensor that
later nodes read through the *old* node (`view = mask.view(...)` reads `mask`, not the setitem).
Nothing in the graph orders those readers after the mutation, so an importer that treats ops as
values, or a partitioner that regroups nodes, reads the tensor before it changed: Swin's shifted
window mask then came out all zeros under torch.compile (issue 10, item 4).

This pass rewrites the graph, keeping its eager meaning (every rewritten node returns the same
tensor object), so that data dependencies carry the order:

- a node reading the mutated tensor after the mutation reads the mutation's result instead
  (`operator.setitem`, which returns None, becomes `setitem_value`, which returns the tensor);
- a node reading, after the mutation, a view of it taken before (or the tensor a view was taken
  of) reads `stale_alias(view, mutation)`: the same object in eager PyTorch, and for the importer
  a value it can only provide when it folded the mutation at compile time;
- the mutation reads its target through `after(target, *earlier readers)`, so it runs after
  every node that read the old value;
- a mutation of a graph input, parameter or buffer (or a view of one) is marked to run eagerly
  (`node.meta["irc_eager"]`): native code cannot change the caller's tensor;
- a call writing its result into `out=` is split into the call and `write_out(out, result)`,
  a mutation of `out`.

An attribute read several times (symbolic_trace makes a `get_attr` node at every `self.buf`)
is read through one node first, so a write through one read orders the others. `t[i] = v` and
`t += v` on a real tensor (a constant or attribute) with a traced index or value trace as the
methods `__setitem__` and `__iadd__`, mutations like `setitem` and `add_`.

Idempotent: running it again on its output changes nothing.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch import fx

from irc.errors import IrcError

EAGER_META = "irc_eager"
"""node.meta key: the reason a node must run in eager PyTorch (the importer reports it unsupported)."""

# Ops whose result may share storage with their first argument (over-approximated: a reshape or
# contiguous that copies only costs an unneeded ordering edge).
_VIEW_METHODS = {
    "view", "view_as", "reshape", "reshape_as", "permute", "transpose", "t", "unsqueeze", "squeeze",
    "expand", "expand_as", "flatten", "unflatten", "narrow", "select", "as_strided", "contiguous",
    "detach", "diagonal", "movedim", "swapaxes", "swapdims", "split", "chunk", "unbind", "to", "float", "type", "__getitem__",
}
_VIEW_FUNCTIONS = {
    operator.getitem, torch.reshape, torch.permute, torch.transpose, torch.unsqueeze, torch.squeeze,
    torch.flatten, torch.unflatten, torch.narrow, torch.select, torch.movedim, torch.split, torch.chunk,
    torch.unbind, torch.detach, torch.t, torch.swapaxes, torch.swapdims,
}
_NOT_MUTATING = {"requires_grad_", "share_memory_", "retain_grad_"}
# Tensor methods that change `self` and whose names do not end in one underscore: symbolic_trace
# records `t[i] = v` and `t += v` on a real tensor (a constant or attribute) with a traced
# index or value as these calls.
_INPLACE_METHODS = {"__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__",
                    "__ipow__", "__imod__", "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__",
                    "__imatmul__"}
_INPLACE_OPERATORS = {operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
                      operator.ipow, operator.imod, operator.iand, operator.ior, operator.ixor}


def setitem_value(x: torch.Tensor, index: Any, value: Any) -> torch.Tensor:
    """`x[index] = value`, returning `x` (operator.setitem returns None)."""
    x[index] = value
    return x


def write_out(out: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """`f(..., out=out)` as `write_out(out, f(...))`: `value` written into `out` (resized to its
    shape first, as `out=` does), returning `out`."""
    if out.shape != value.shape:
        out.resize_(value.shape)
    return out.copy_(value)


def after(x: Any, *deps: Any) -> Any:
    """`x` itself; `deps` only order this node after the nodes that produce them."""
    return x


def stale_alias(x: Any, mutation: Any) -> Any:
    """`x` itself, read after `mutation` changed the storage `x` shares (in eager PyTorch `x` sees
    the change; a value-based importer cannot, unless it folded both at compile time)."""
    return x


def _target_name(node: fx.Node) -> str:
    return node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")


def mutated_arg(node: fx.Node, gm: fx.GraphModule | None = None) -> fx.Node | None:
    """The node whose tensor `node` changes in place, or None."""
    if node.op == "call_function" and isinstance(node.kwargs.get("out"), fx.Node):
        return node.kwargs["out"]  # `f(..., out=t)` (order_mutations splits it: `_split_out_arguments`)
    first = node.args[0] if node.args else None
    if not isinstance(first, fx.Node):
        return None
    name = _target_name(node)
    if node.op == "call_function":
        inplace = (node.target in (operator.setitem, setitem_value, write_out) or node.target in _INPLACE_OPERATORS
                   or (name.endswith("_") and not name.startswith("_") and hasattr(torch.Tensor, name)))
    elif node.op == "call_method":
        inplace = (name.endswith("_") and not name.startswith("_") and name not in _NOT_MUTATING
                   or name in _INPLACE_METHODS)
    elif node.op == "call_module" and gm is not None:
        inplace = bool(getattr(gm.get_submodule(str(node.target)), "inplace", False))
    else:
        inplace = False
    if node.op in ("call_function", "call_module") and node.kwargs.get("inplace") is True:
        inplace = True
    if node.op == "call_function" and node.target in _INPLACE_OPERATORS:
        # `a += b` on a Python number is not a mutation; on a tensor it is.
        meta = first.meta.get("example_value", first.meta.get("tensor_meta"))
        inplace = meta is None or isinstance(meta, torch.Tensor) or hasattr(meta, "shape")
    return first if inplace else None


def _is_view(node: fx.Node) -> bool:
    if node.op == "call_method":
        return node.target in _VIEW_METHODS
    return node.op == "call_function" and (node.target in _VIEW_FUNCTIONS or node.target in (after, stale_alias))


def _reads_shape(node: fx.Node) -> bool:
    """x.size(), x.shape, x.dim(): reads no values, so needs no order against a mutation."""
    if node.op == "call_method":
        return node.target in ("size", "dim", "ndimension", "numel")
    return node.op == "call_function" and node.target is getattr and node.args[1:2] in (("shape",), ("ndim",))


def _alias_group(start: fx.Node, gm: fx.GraphModule) -> set[fx.Node]:
    """Every node that may share storage with `start`: its view ancestors and their view
    descendants, mutations of them (which return their target) included."""
    base = start
    while True:
        up = mutated_arg(base, gm) or (base.args[0] if _is_view(base) and base.args else None)
        if not isinstance(up, fx.Node):
            break
        base = up
    group, todo = {base}, [base]
    while todo:
        n = todo.pop()
        for user in n.users:
            if user not in group and (
                (_is_view(user) and user.args and user.args[0] is n) or mutated_arg(user, gm) is n
            ):
                group.add(user)
                todo.append(user)
    return group


def order_mutations(gm: fx.GraphModule) -> fx.GraphModule:
    """Rewrite `gm` in place as described in the module docstring; returns it."""
    graph = gm.graph
    _split_out_arguments(gm)
    if not any(mutated_arg(n, gm) is not None for n in graph.nodes):
        return gm
    _one_node_per_attribute(gm)
    order = {n: i for i, n in enumerate(graph.nodes)}
    for m in list(graph.nodes):
        target = mutated_arg(m, gm)
        if target is None:
            continue
        if m.target is operator.setitem or (m.op == "call_method" and m.target == "__setitem__"):
            with graph.inserting_after(m):
                new = graph.call_function(setitem_value, m.args, m.kwargs)
            new.meta = dict(m.meta)
            m.replace_all_uses_with(new)
            graph.erase_node(m)
            order[new] = order.pop(m)
            m = new
        group = _alias_group(target, gm)
        stale = _order_readers(graph, m, target, group, order)
        group = _alias_group(target, gm)  # with the `after` the mutation now reads its target through
        if any(n.op in ("placeholder", "get_attr") for n in group):
            _run_eagerly(group, gm, "it is, or changes in place, a view of a model input, parameter or buffer")
        elif stale:
            _run_eagerly(group, gm, "it is, or changes in place, a view of a tensor that is read after the change")
    graph.lint()
    gm.recompile()
    return gm


def _split_out_arguments(gm: fx.GraphModule) -> None:
    """`torch.maximum(a, b, out=t)` becomes `write_out(t, torch.maximum(a, b))`: a mutation of
    `t` like the others (the importer read the call as its value and never wrote `t`). An `out=`
    of several tensors (`torch.max(x, 0, out=(v, i))`) cannot be split so: an IrcError."""
    graph = gm.graph
    for node in list(graph.nodes):
        out = node.kwargs.get("out") if node.op == "call_function" else None
        if out is None:
            continue
        if not isinstance(out, fx.Node):
            raise IrcError(
                f"{node.format_node()}: irc compiles `out=` of one tensor; write this call without "
                "`out=` and assign or copy its results"
            )
        kwargs = {k: v for k, v in node.kwargs.items() if k != "out"}
        with graph.inserting_before(node):
            value = graph.call_function(node.target, node.args, kwargs)
            value.meta = dict(node.meta)
            written = graph.call_function(write_out, (out, value))
            written.meta = dict(node.meta)
        node.replace_all_uses_with(written)
        graph.erase_node(node)


def _one_node_per_attribute(gm: fx.GraphModule) -> None:
    """symbolic_trace makes a `get_attr` node at every `self.buf` read, so a write through one
    and a read through another look unrelated (and tied weights are two names of one tensor):
    every read of one tensor attribute now goes through its first `get_attr` node."""
    first: dict[int, fx.Node] = {}
    for node in list(gm.graph.nodes):
        obj = _attribute(gm, node) if node.op == "get_attr" else None
        if not isinstance(obj, torch.Tensor):
            continue
        if id(obj) in first:
            node.replace_all_uses_with(first[id(obj)])
            gm.graph.erase_node(node)
        else:
            first[id(obj)] = node


def mutated_attributes(gm: fx.GraphModule) -> list[torch.Tensor]:
    """The tensor attributes (buffers, parameters, constants) `gm` changes in place, directly or
    through a view: running it at compile time must leave them as they were."""
    found: list[torch.Tensor] = []
    for node in gm.graph.nodes:
        target = mutated_arg(node, gm)
        if target is None:
            continue
        for n in _alias_group(target, gm):
            obj = _attribute(gm, n) if n.op == "get_attr" else None
            if isinstance(obj, torch.Tensor):
                found.append(obj)
    return found


def _attribute(gm: fx.GraphModule, node: fx.Node) -> Any:
    obj: Any = gm
    for part in str(node.target).split("."):
        obj = getattr(obj, part, None)
    return obj


def _run_eagerly(group: set[fx.Node], gm: fx.GraphModule, reason: str) -> None:
    """Views share storage only in eager PyTorch (a native op's result is a new buffer): when a
    change must reach another view of the tensor, every view and mutation of it runs eagerly."""
    for n in group:
        if _is_view(n) or mutated_arg(n, gm) is not None:  # not the tensor's creator
            n.meta.setdefault(EAGER_META, reason)


def _order_readers(graph: fx.Graph, m: fx.Node, target: fx.Node, group: set[fx.Node], order: dict) -> bool:
    """Order `m` after the earlier readers of `group`, later readers after `m`; True if a later
    node reads a view taken before `m` (or the tensor it views), which sees the change."""
    pos = order[m]
    first = m.args[0]
    ordered = set(first.args[1:]) if isinstance(first, fx.Node) and first.target is after else set()
    earlier = [u for g in group for u in g.users
               if order.get(u, pos) < pos and u not in group and u not in ordered and not _reads_shape(u)]
    if earlier:
        with graph.inserting_before(m):
            dep = graph.call_function(after, (target, *dict.fromkeys(earlier)))
        order[dep] = pos - 0.5
        m.update_arg(0, dep)
    stale = any(u.target is stale_alias for g in group for u in g.users)
    for g in group:
        if order.get(g, pos) >= pos:  # created by or after the mutation: it sees the new value
            continue
        for user in list(g.users):
            if order.get(user, -1) <= pos or user.target is stale_alias:
                continue
            if g is target:
                user.replace_input_with(g, m)
            else:
                with graph.inserting_before(user):
                    wrapped = graph.call_function(stale_alias, (g, m))
                order[wrapped] = order[user] - 0.5
                user.replace_input_with(g, wrapped)
                stale = True
    return stale

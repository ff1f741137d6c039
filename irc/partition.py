"""Eager fallback: compile the supported parts of a graph, run the rest in PyTorch.

`partition(gm, inputs, compile_graph)` asks the importer which nodes it cannot convert (a probe
import, see `unsupported_nodes`), splits the graph into subgraphs of supported nodes
(`propose_partitions`: one pass over the graph, so it ends on every graph), compiles each with
`compile_graph` (irc without fallback) and leaves everything else to eager PyTorch. The result is
a GraphModule whose `fused_<i>` submodules are native partitions, called in between the eager
nodes.
"""

from __future__ import annotations

import copy
import logging
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import fx, nn
from torch._prims_common import is_non_overlapping_and_dense_or_false
from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

from irc.errors import InputError, IrcError, UnsupportedNode, UnsupportedOpError
from irc.frontend.folding import has_runtime_value
from irc.frontend.fx_importer import INPUT_DTYPES, EagerTensor, FxImporter, describe_target, tensor_type
from irc.frontend.order_mutations import order_mutations

log = logging.getLogger("irc")

CALLABLE = ("call_function", "call_method", "call_module")


class _Probe(FxImporter):
    """An import that goes on past unsupported nodes: a node that depends on one gets a stand-in
    for its result (what the eager node will compute), so its own converter is tried as well."""

    def _import_node(self, node: fx.Node) -> None:
        for producer in node.all_input_nodes:
            if producer in self.failed:
                self._stand_in(producer)
        super()._import_node(node)

    def _stand_in(self, node: fx.Node) -> None:
        """A float32 or int64 tensor becomes a new function argument; anything else an
        `EagerTensor`, which makes each node taking it unsupported as well."""
        meta = node.meta.get("tensor_meta")
        self.failed.discard(node)
        if meta is None or not hasattr(meta, "shape"):
            self.values[node] = EagerTensor(node.name, None, "eager")
        elif meta.dtype not in INPUT_DTYPES:
            self.values[node] = EagerTensor(node.name, meta.dtype, "eager")
        else:
            block = self.builder.insertion_point.block
            self.values[node] = block.insert_arg(tensor_type(tuple(meta.shape), meta.dtype), len(block.args))


def unsupported_nodes(gm: fx.GraphModule, example_inputs: Sequence[torch.Tensor]) -> list[UnsupportedNode]:
    """Every node of `gm` irc cannot convert even when its inputs are available (no side effects
    on `gm` beyond the shape metadata ShapeProp writes)."""
    return probe(gm, example_inputs)[0]


def probe(gm: fx.GraphModule, example_inputs: Sequence[torch.Tensor]) -> tuple[list[UnsupportedNode], set[str]]:
    """`unsupported_nodes`, and the names of the callable nodes whose values the importer
    computes at compile time (sizes, constants, masks: `folded`, whether eager nodes read them
    or not)."""
    importer = _Probe(gm)
    try:
        importer.run(example_inputs, "probe")
        unsupported: list[UnsupportedNode] = []
    except UnsupportedOpError as e:
        unsupported = e.nodes
    folded = {n.name for n in gm.graph.nodes if n.op in CALLABLE and _is_folded(importer.values.get(n))}
    return (_with_folded_inputs(gm, importer, unsupported) if unsupported else []), folded


def _is_folded(value: Any) -> bool:
    return value is not None and not isinstance(value, EagerTensor) and not has_runtime_value(value)


def _with_folded_inputs(gm: fx.GraphModule, importer: _Probe, nodes: list[UnsupportedNode]) -> list[UnsupportedNode]:
    """`nodes` and every node folded at compile time (a mask, an index, a size) that an eager
    node reads: a native partition returns tensors it computes, so these run eagerly too."""
    eager = {n.node for n in nodes}
    for node in reversed(gm.graph.nodes):  # users first: folding chains become eager as a whole
        if (node.op in CALLABLE and node.name not in eager and _is_folded(importer.values.get(node))
                and any(u.name in eager for u in node.users)):
            reason = "a compile-time value an eager node reads"
            nodes.append(UnsupportedNode(node.name, describe_target(node, gm), reason))
            eager.add(node.name)
    return nodes


def propose_partitions(graph: fx.Graph, eager: set[str], folded: set[str] = frozenset()) -> list[list[fx.Node]]:
    """The native partitions of `graph` when the callable nodes named in `eager` run in eager
    PyTorch: lists of nodes, in graph order, that contract to an acyclic graph (every partition
    runs as one call, after all its inputs and before all its users).

    A node's *eager depth* is the largest number of eager nodes on a path from the graph's
    inputs to it (itself included). The supported callable nodes of one depth are one
    partition: a path from one to another cannot pass an eager node (the depth would grow), so
    no partition waits for an eager node that waits for it, and every path between partitions
    goes from a lower depth to a higher one. One pass in graph order, whatever the graph.

    Attributes (`get_attr`) and the nodes named in `folded` (values the importer computes at
    compile time: sizes, constants, masks) belong to no depth: each partition reading one gets
    its own copy (`_share`), so a weight stays a parameter and a folded value stays folded in
    every partition that reads it, instead of a result one partition hands the next (which
    cannot be a Python number)."""
    free = {n for n in graph.nodes if n.name not in eager and (
        n.op == "get_attr" or (n.op in CALLABLE and n.name in folded))}
    for node in reversed(graph.nodes):  # unused ones (a traced shape check) would pin their inputs
        if node in free and not node.users:
            free.discard(node)
            graph.erase_node(node)
    depth: dict[fx.Node, int] = {}
    levels: dict[int, list[fx.Node]] = {}
    for node in graph.nodes:
        d = max((depth[i] for i in node.all_input_nodes), default=0)
        if node.op in CALLABLE and node.name in eager:
            d += 1
        elif node.op in CALLABLE and node not in free:
            levels.setdefault(d, []).append(node)
        depth[node] = d
    parts = [levels[d] for d in sorted(levels)]
    _share(graph, parts, free)
    order = {n: k for k, n in enumerate(graph.nodes)}
    return [sorted(nodes, key=order.__getitem__) for nodes in parts]


def _share(graph: fx.Graph, parts: list[list[fx.Node]], free: set[fx.Node]) -> None:
    """Add to each partition the free nodes it reads (directly or through other free nodes):
    the node itself to the first partition reading it when nothing outside the partitions does,
    a copy (`graph.node_copy`) everywhere else. A free node's other inputs are tensors computed
    before every partition reading it (depth), which become the partition's inputs."""
    part_of = {n: i for i, nodes in enumerate(parts) for n in nodes}
    readers: dict[fx.Node, set[int]] = {}
    outside: set[fx.Node] = set()  # read by an eager node, a node left out of all partitions or the output
    for node in reversed(graph.nodes):
        if node not in free:
            continue
        readers[node] = set()
        for user in node.users:
            if user in part_of:
                readers[node].add(part_of[user])
            elif user in free:
                readers[node] |= readers[user]
                if user in outside:
                    outside.add(node)
            else:
                outside.add(node)
    home = {n: min(r) for n, r in readers.items() if r and n not in outside}
    local: dict[tuple[int, fx.Node], fx.Node] = {}  # (partition, free node) -> what that partition reads
    for node in [n for n in graph.nodes if n in free]:
        for i in sorted(readers[node]):
            if home.get(node) == i:
                mine = node
            else:
                with graph.inserting_after(node):
                    mine = graph.node_copy(node, lambda a, i=i: local.get((i, a), a))
            local[(i, node)] = mine
            parts[i].append(mine)
    for i, nodes in enumerate(parts):  # copies already read the partition's own; the rest now do
        for n in nodes:
            n.args = fx.node.map_arg(n.args, lambda a, i=i: local.get((i, a), a))
            n.kwargs = fx.node.map_arg(n.kwargs, lambda a, i=i: local.get((i, a), a))


class NativePartition(nn.Module):
    """A compiled partition inside the split GraphModule: inputs made contiguous for it, results
    laid out like the traced ones (`like_traced`), for the eager nodes and autograd after it.

    An eager node before it may make a tensor whose shape depends on the values
    (`x[:, :int(mask.sum())]`): inputs the native code was not built for (an `InputError`) run
    through `graph`, the partition as a GraphModule, in eager PyTorch (one WARNING)."""

    def __init__(
        self, forward: Callable[..., Any], source: Any, layouts: list | None = None,
        graph: fx.GraphModule | None = None, name: str = "",
    ):
        super().__init__()
        self._native = forward
        self.compiled = source  # what compile_graph returned (IR, C++ source, library)
        self._layouts = layouts  # per result: (shape, stride) as traced, or None
        self.graph = graph
        self._name = name
        self._warned = False

    def forward(self, *args: Any) -> Any:
        args = tuple(a.contiguous() if isinstance(a, torch.Tensor) and not a.is_contiguous() else a for a in args)
        try:
            out = self._native(*args)
        except InputError as e:
            if self.graph is None:
                raise
            if not self._warned:
                self._warned = True
                log.warning("irc runs native partition %s in eager PyTorch for inputs it was not compiled for "
                            "(an eager node before it makes shapes that depend on the values): %s", self._name, e)
            return self.graph(*args)
        if not self._layouts:
            return out
        if isinstance(out, (tuple, list)):
            return type(out)(like_traced(t, layout) for t, layout in zip(out, self._layouts))
        return like_traced(out, self._layouts[0])


def traced_layouts(gm: fx.GraphModule) -> list:
    """(shape, stride) of each result of `gm` as ShapeProp or FakeTensor tracing recorded it
    (None where unknown or symbolic)."""
    (output,) = [n for n in gm.graph.nodes if n.op == "output"]
    items = output.args[0] if isinstance(output.args[0], (tuple, list)) else [output.args[0]]
    layouts = []
    for item in items:
        meta = (item.meta.get("tensor_meta") or item.meta.get("val")) if isinstance(item, fx.Node) else None
        shape, stride = getattr(meta, "shape", None), None
        if meta is not None:
            stride = meta.stride() if callable(getattr(meta, "stride", None)) else getattr(meta, "stride", None)
        concrete = shape is not None and stride is not None and all(type(v) is int for v in (*shape, *stride))
        layouts.append((tuple(shape), tuple(stride)) if concrete else None)
    return layouts


def like_traced(t: Any, layout: tuple | None) -> Any:
    """`t` copied into the strides the traced graph had, when they differ: eager code after a
    native result may depend on them (`aten.view` needs viewable strides; the training graph's
    backward reads saved activations as laid out in the forward). Overlapping layouts (expanded
    tensors) are left contiguous."""
    if layout is None or not isinstance(t, torch.Tensor) or tuple(t.shape) != layout[0] or t.stride() == layout[1]:
        return t
    if t.numel() <= 1 or not is_non_overlapping_and_dense_or_false(
        torch.empty_strided(layout[0], layout[1], device="meta")
    ):
        return t
    return torch.empty_strided(layout[0], layout[1], dtype=t.dtype).copy_(t)


@dataclass
class Partitioned:
    """A graph split into native partitions and eager nodes."""

    module: fx.GraphModule  # call it like the model
    native: dict[str, Any] = field(default_factory=dict)  # partition name -> compile_graph's result
    eager: list[UnsupportedNode] = field(default_factory=list)  # nodes run by PyTorch (failed partitions' too)
    failed_partitions: dict[str, str] = field(default_factory=dict)  # supported, but compiling failed: why


def partition(
    gm: fx.GraphModule,
    example_inputs: Sequence[torch.Tensor],
    compile_graph: Callable[[fx.GraphModule, Sequence[torch.Tensor]], tuple[Callable[..., Any], Any]],
    unsupported: list[UnsupportedNode] | None = None,
) -> Partitioned:
    """Split `gm` into native partitions (compiled by `compile_graph(sub_gm, inputs) -> (forward,
    info)`) and eager nodes. `unsupported` (default: probe the importer) names the eager nodes.
    In-place mutations are made data dependencies first (`order_mutations`, rewriting `gm`):
    regrouped nodes would otherwise read a tensor before or after it changes."""
    order_mutations(gm)
    folded: set[str] = set()
    if unsupported is None:
        unsupported, folded = probe(gm, example_inputs)
    unsupported = list(unsupported) + _tuple_producers(gm, {n.node for n in unsupported})
    work = fx.GraphModule(gm, copy.deepcopy(gm.graph))  # partitioning rewrites its graph
    # A folded node is eager only for the eager nodes reading it; partitions fold their own copy.
    parts = propose_partitions(work.graph, {n.node for n in unsupported} - folded, folded)
    split = fuse_by_partitions(work, [dict.fromkeys(nodes) for nodes in parts])  # fused_<i>: depth order
    fused = [str(n.target) for n in split.graph.nodes if n.op == "call_module" and str(n.target).startswith("fused_")]
    part_inputs = _partition_inputs(split, example_inputs, set(fused))

    result = Partitioned(split, eager=list(unsupported))
    for name in fused:
        sub = getattr(split, name)
        try:
            forward, info = compile_graph(sub, part_inputs[name])
        except IrcError as e:  # e.g. a partition taking or returning a Python number: stays eager
            reason = str(e).splitlines()[0]
            result.failed_partitions[name] = reason
            result.eager += [
                UnsupportedNode(n.name, describe_target(n, sub), f"its partition {name} failed to compile: {reason}")
                for n in sub.graph.nodes if n.op in CALLABLE
            ]
            continue
        setattr(split, name, NativePartition(forward, info, traced_layouts(sub), sub, name))
        result.native[name] = info
    return result


def _tuple_producers(gm: fx.GraphModule, eager: set[str]) -> list[UnsupportedNode]:
    """Nodes with several results (`max_pool2d_with_indices`, `native_layer_norm`, `split` ...)
    of which an eager node takes one, or the whole tuple (as the output may): a partition cannot
    hand a tuple over, so the producer and its `getitem`s run eagerly too (and so on up, when
    the producer is itself a getitem of a tuple). A getitem of a tensor (`y[:, :n]`, eager
    because `n` is) is not one: `y` is a tensor a partition can return."""
    found: list[UnsupportedNode] = []
    todo = [n for n in gm.graph.nodes if n.name in eager or n.op == "output"]
    while todo:
        node = todo.pop()
        one = node.target is operator.getitem and bool(node.args)
        taken = ([node.args[0]] if isinstance(node.args[0], fx.Node) else []) if one else node.all_input_nodes
        for producer in taken:
            if producer.name in eager or producer.op not in CALLABLE or not _returns_sequence(producer, unknown=one):
                continue
            why = (f"{node.name}, a result of {producer.name}, runs in eager PyTorch" if one
                   else f"{node.name} takes the tuple {producer.name} returns and runs in eager PyTorch")
            for n in (producer, *producer.users):
                if n.name not in eager and (n is producer or n.target is operator.getitem):
                    eager.add(n.name)
                    found.append(UnsupportedNode(n.name, describe_target(n, gm), why))
                    todo.append(n)
    return found


def _returns_sequence(node: fx.Node, unknown: bool) -> bool:
    """Whether `node` returns a tuple or list, as ShapeProp (the probe) or Dynamo recorded it;
    `unknown` when nothing was recorded."""
    kind = node.meta.get("type")
    if isinstance(kind, type):
        return issubclass(kind, (tuple, list))
    for key in ("example_value", "val"):
        if key in node.meta:
            return isinstance(node.meta[key], (tuple, list))
    return unknown


def _partition_inputs(split: fx.GraphModule, example_inputs: Sequence[torch.Tensor], names: set[str]) -> dict[str, tuple]:
    """The arguments each partition receives when `split` runs on the example inputs."""
    seen: dict[str, tuple] = {}

    class Recorder(fx.Interpreter):
        def call_module(self, target, args, kwargs):
            if target in names:
                seen[target] = tuple(args)
            return super().call_module(target, args, kwargs)

    with torch.no_grad():  # on copies: a graph may change its inputs in place (x.mul_(2))
        Recorder(split).run(*(x.clone() if isinstance(x, torch.Tensor) else x for x in example_inputs))
    return seen


def describe_fallback(p: Partitioned) -> str:
    """One line for the log: which ops run eagerly and how many native partitions there are."""
    targets = sorted({n.target for n in p.eager})
    unsupported = [n for n in p.eager if not n.reason.startswith("its partition ")]
    nodes = ", ".join(f"{n.node} ({n.target}: {n.reason})" for n in unsupported)
    msg = (
        f"irc runs {len(p.eager)} node(s) in eager PyTorch ({', '.join(targets)}) and the rest as "
        f"{len(p.native)} native partition(s): {nodes}"
    )
    if p.failed_partitions:
        msg += "; partitions left eager because compiling them failed: " + "; ".join(
            f"{k}: {v}" for k, v in p.failed_partitions.items()
        )
    return msg + ". Pass fallback=False to get an error instead."

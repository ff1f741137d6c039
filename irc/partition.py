"""Eager fallback: compile the supported parts of a graph, run the rest in PyTorch.

`partition(gm, inputs, compile_graph)` asks the importer which nodes it cannot convert (a probe
import, see `unsupported_nodes`), splits the graph into maximal subgraphs of supported nodes
(torch.fx's `CapabilityBasedPartitioner`), compiles each with `compile_graph` (irc without
fallback) and leaves everything else to eager PyTorch. The result is a GraphModule whose
`fused_<i>` submodules are native partitions, called in between the eager nodes.
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
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from irc.errors import IrcError, UnsupportedNode, UnsupportedOpError
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
    probe = _Probe(gm)
    try:
        probe.run(example_inputs, "probe")
    except UnsupportedOpError as e:
        return _with_folded_inputs(gm, probe, e.nodes)
    return []


def _with_folded_inputs(gm: fx.GraphModule, probe: _Probe, nodes: list[UnsupportedNode]) -> list[UnsupportedNode]:
    """`nodes` and every node folded at compile time (a mask, an index, a size) that an eager
    node reads: a native partition returns tensors it computes, so these run eagerly too."""
    eager = {n.node for n in nodes}
    for node in reversed(gm.graph.nodes):  # users first: folding chains become eager as a whole
        value = probe.values.get(node)
        if (node.op in CALLABLE and node.name not in eager and value is not None
                and not isinstance(value, EagerTensor) and not has_runtime_value(value)
                and any(u.name in eager for u in node.users)):
            reason = "a compile-time value an eager node reads"
            nodes.append(UnsupportedNode(node.name, describe_target(node, gm), reason))
            eager.add(node.name)
    return nodes


class _Supported(OperatorSupportBase):
    def __init__(self, unsupported: set[str]):
        self.unsupported = unsupported

    def is_node_supported(self, submodules, node: fx.Node) -> bool:
        return node.op in (*CALLABLE, "get_attr") and node.name not in self.unsupported


class NativePartition(nn.Module):
    """A compiled partition inside the split GraphModule: inputs made contiguous for it, results
    laid out like the traced ones (`like_traced`), for the eager nodes and autograd after it."""

    def __init__(self, forward: Callable[..., Any], source: Any, layouts: list | None = None):
        super().__init__()
        self._native = forward
        self.compiled = source  # what compile_graph returned (IR, C++ source, library)
        self._layouts = layouts  # per result: (shape, stride) as traced, or None

    def forward(self, *args: Any) -> Any:
        out = self._native(*(a if a.is_contiguous() else a.contiguous() for a in args))
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
    if unsupported is None:
        unsupported = unsupported_nodes(gm, example_inputs)
    unsupported = list(unsupported) + _tuple_producers(gm, {n.node for n in unsupported})
    names = {n.node for n in unsupported}
    work = fx.GraphModule(gm, copy.deepcopy(gm.graph))  # the partitioner rewrites its graph
    partitioner = CapabilityBasedPartitioner(work, _Supported(names), allows_single_node_partition=True)
    parts = partitioner.propose_partitions()
    for p in parts:
        # The partitioner pulls every getitem of a node into its partition, supported or not, and
        # takes in attributes only eager nodes read (which the partition would have to return).
        for n in [n for n in p.nodes if n.name in names]:
            p.remove_node(n)
        for n in [n for n in p.nodes if n.op == "get_attr" and not any(u in p.nodes for u in n.users)]:
            p.remove_node(n)
    parts = [p for p in parts if any(n.op in CALLABLE for n in p.nodes)]
    split = partitioner.fuse_partitions(parts)
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
        setattr(split, name, NativePartition(forward, info, traced_layouts(sub)))
        result.native[name] = info
    return result


def _tuple_producers(gm: fx.GraphModule, eager: set[str]) -> list[UnsupportedNode]:
    """Nodes with several results (`max_pool2d_with_indices`, `native_layer_norm` ...) of which
    an eager node takes one: a partition cannot hand a tuple over, so the producer and its other
    `getitem`s run eagerly too."""
    found: list[UnsupportedNode] = []
    for node in gm.graph.nodes:
        producer = node.args[0] if node.target is operator.getitem and node.args else None
        if node.name not in eager or not isinstance(producer, fx.Node) or producer.op not in CALLABLE:
            continue
        for n in (producer, *producer.users):
            if n.name not in eager and (n is producer or n.target is operator.getitem):
                eager.add(n.name)
                found.append(UnsupportedNode(
                    n.name, describe_target(n, gm), f"{node.name}, a result of {producer.name}, runs in eager PyTorch"
                ))
    return found


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

"""The eager fallback's partitioning (irc/partition.py) ends on every graph and never changes a result.

torch's CapabilityBasedPartitioner, which irc used before, looped forever on Hugging Face's
fx-traced BERT and Llama: its post-pass moves every `getitem` into the partition of a node whose
users are all getitems, and `position_ids[:, 0:n]` is such a user of two nodes (the buffer and
`n`) in different partitions, so each pass moved it back. Every test here runs under a deadline
(SIGALRM), so a regression fails instead of hanging the suite.
"""

from __future__ import annotations

import copy
import logging
import operator
import random
import threading

import pytest
import torch
from torch import fx, nn
from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

import irc
from irc.frontend.fx_importer import _propagate_shapes
from irc.partition import CALLABLE, _tuple_producers, propose_partitions
from irc.tools.deadline import time_limit


def deadline(seconds: float):
    """Fail the test when the block runs longer than `seconds` (SIGALRM interrupts the Python
    loop where it spins; pytest runs tests on the main thread, where signals are delivered)."""
    assert threading.current_thread() is threading.main_thread(), "SIGALRM needs the main thread"
    return time_limit(seconds, lambda s: TimeoutError(f"still running after {s} s: partitioning does not end"))


@torch.fx.wrap
def opaque_len(x):
    """A Python int irc cannot compute (no converter): an eager node."""
    return int(torch.count_nonzero(x[0] > -100))


def sliced_buffer_graph() -> fx.GraphModule:
    """BERT's `position_ids[:, 0:seq_len]`: a getitem of a buffer whose bound is an eager int.
    Both the buffer and the int have only getitem users, and they are in different partitions."""
    root = nn.Module()
    root.register_buffer("pos", torch.randn(1, 16))
    g = fx.Graph()
    x = g.placeholder("x")
    n = g.call_function(opaque_len, (x,))
    pos = g.call_function(operator.getitem, (g.get_attr("pos"), (slice(None), slice(0, n))))
    y = g.call_function(torch.relu, (g.call_function(operator.mul, (x, 2.0)),))
    g.output(g.call_function(operator.add, (y, pos)))
    return fx.GraphModule(root, g)


def test_a_getitem_of_two_partitions_terminates_and_matches_eager():
    gm, x = sliced_buffer_graph(), torch.randn(3, 8)
    with deadline(60):
        cm = irc.compile(gm, (x,))
    torch.testing.assert_close(cm(x), gm(x))
    assert [n.node for n in cm.eager_nodes] == ["opaque_len", "getitem"]
    version = next(iter(cm.versions.values()))
    assert len(version.partitions) == 2  # x * 2 and relu; the add after the eager slice


def test_a_tensor_sliced_by_an_eager_bound_stays_native():
    """`y[:, 0:n]` with an eager `n` is eager, but `y` is a tensor, not a tuple a partition
    would have to hand over: relu stays native (Llama's causal mask `clone()` ran eagerly)."""

    def f(x):
        y = torch.relu(x * 2)
        return y[:, 0 : opaque_len(x)] * 3

    gm, x = fx.symbolic_trace(f), torch.randn(3, 8)
    with deadline(60):
        cm = irc.compile(gm, (x,))
    torch.testing.assert_close(cm(x), f(x))
    assert [n.node for n in cm.eager_nodes] == ["opaque_len", "getitem"]
    assert "irt.relu" in cm.ir("import")


@torch.fx.wrap
def opaque_cat(parts):
    return torch.cat([p.flip(0) for p in parts], 1)


def test_a_tuple_an_eager_node_takes_whole_keeps_its_producer_eager():
    """`opaque_cat(y.split(2, 1))`: the split's tuple goes to an eager node as it is, so the
    split runs eagerly; the nodes before and after it stay native (the partition holding the
    split used to fail to compile: it had to return a tuple)."""

    def f(x):
        y = x * 2
        return opaque_cat(y.split(2, dim=1)) + 1, y - 1

    gm, x = fx.symbolic_trace(f), torch.randn(4, 6)
    with deadline(60):
        cm = irc.compile(gm, (x,))
    torch.testing.assert_close(cm(x), f(x))
    eager = {n.node: n.reason for n in cm.eager_nodes}
    assert set(eager) == {"opaque_cat", "split"} and "takes the tuple split returns" in eager["split"]


@torch.fx.wrap
def positives(x):
    """How many entries of the first row are positive: a size that depends on the values."""
    return int((x[0] > 0).sum())


def test_a_shape_an_eager_node_makes_from_values_runs_its_partition_eagerly(caplog):
    """`x[:, :positives(x)]` has another width at every call: the partition after it gets inputs
    of a shape it was not compiled for, which it now runs in eager PyTorch (one WARNING) instead
    of raising InputError from inside the user's call."""

    def f(x):
        return x[:, 0 : positives(x)] * 3 + 1, torch.relu(x * 2)

    first = torch.tensor([[1.0, -1, 2, -2, 3, -3]]).repeat(3, 1)
    cm = irc.compile(fx.symbolic_trace(f), (first,))
    assert [n.node for n in cm.eager_nodes] == ["positives", "getitem"]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="irc"):
        for row in ([1.0, 1, 1, 1, -1, 1], [-1.0, -1, -1, -1, -1, 2], [1.0, -1, 2, -2, 3, -3], [1.0] * 6):
            x = torch.tensor([row]).repeat(3, 1)
            torch.testing.assert_close(cm(x), f(x))
    (warning,) = [r.getMessage() for r in caplog.records if r.name == "irc" and r.levelno >= logging.WARNING]
    assert "inputs it was not compiled for" in warning


# --- the partitioning itself, on random graphs ----------------------------------------------------


def random_graph(rng: random.Random) -> tuple[fx.GraphModule, set[str], set[str]]:
    """A random graph over 4x6 tensors, Python ints read from sizes, slices bounded by those
    ints (getitems of two nodes), tuple producers (split, taken apart or whole) and attributes, with a random set of
    eager nodes; the ints are folded (computed at compile time), as the importer does."""
    root = nn.Module()
    g = fx.Graph()
    tensors = [g.placeholder("x")]
    ints: list[fx.Node] = []
    for step in range(rng.randint(3, 14)):
        kind = rng.choice(["binary", "unary", "size", "int", "slice", "split", "attr"])
        if kind == "binary":
            op = rng.choice([operator.add, operator.mul, torch.sub])
            tensors.append(g.call_function(op, (rng.choice(tensors), rng.choice(tensors))))
        elif kind == "unary":
            tensors.append(g.call_function(rng.choice([torch.relu, torch.tanh, torch.neg]), (rng.choice(tensors),)))
        elif kind == "size":
            ints.append(g.call_method("size", (rng.choice(tensors), 1)))
        elif kind == "int" and ints:
            ints.append(g.call_function(operator.add, (rng.choice(ints), rng.randint(0, 2))))
        elif kind == "slice" and ints:  # a bound of at least 6 keeps the shape
            bound = (slice(None), slice(0, rng.choice(ints)))
            tensors.append(g.call_function(operator.getitem, (rng.choice(tensors), bound)))
        elif kind == "split":
            parts = g.call_method("split", (rng.choice(tensors), 3, 1))
            if rng.random() < 0.3:  # the whole tuple taken by one node
                tensors.append(g.call_function(torch.cat, (parts, 1)))
                continue
            a, b = (g.call_function(operator.getitem, (parts, i)) for i in range(2))
            tensors.append(g.call_function(torch.cat, ((b, a) if rng.random() < 0.5 else (a, b), 1)))
        elif kind == "attr":
            setattr(root, f"w{step}", nn.Parameter(torch.randn(4, 6)))
            tensors.append(g.get_attr(f"w{step}"))
    results = rng.sample(tensors[1:], min(len(tensors) - 1, rng.randint(1, 3))) or tensors[:1]
    g.output(tuple(results) + (tuple(rng.sample(ints, 1)) if ints and rng.random() < 0.3 else ()))
    callables = [n.name for n in g.nodes if n.op in CALLABLE]
    eager = {name for name in callables if rng.random() < 0.35}
    folded = {n.name for n in ints}  # the importer folds every int it computes; eager ones too
    return fx.GraphModule(root, g), eager, folded


def split_like_irc(gm: fx.GraphModule, x: torch.Tensor, eager: set[str], folded: set[str]):
    """What `partition` does before compiling: eager tuple producers, the partitions, the split
    module (whose partitions here run as the GraphModules they are)."""
    _propagate_shapes(gm, (x,))  # the producers' result types, as the probe records them
    eager = eager | {n.node for n in _tuple_producers(gm, set(eager))}
    work = fx.GraphModule(gm, copy.deepcopy(gm.graph))
    parts = propose_partitions(work.graph, eager - folded, folded)
    in_parts = [n for nodes in parts for n in nodes]
    assert len(in_parts) == len(set(in_parts)), "a node in two partitions"
    assert not any(n.name in eager - folded for n in in_parts), "an eager node in a partition"
    supported = [n for n in work.graph.nodes if n.op in CALLABLE and n.name not in eager | folded]
    assert set(supported) <= set(in_parts), "a supported node in no partition"
    split = fuse_by_partitions(work, [dict.fromkeys(nodes) for nodes in parts])
    return split, len(parts)


class Handed(fx.Interpreter):
    """Runs the split module and records what each partition takes and returns."""

    def __init__(self, gm):
        super().__init__(gm)
        self.handed: list = []

    def call_module(self, target, args, kwargs):
        out = super().call_module(target, args, kwargs)
        if str(target).startswith("fused_"):
            self.handed.append((target, out))
        return out


def test_random_graphs_split_into_partitions_that_compute_the_same():
    """Every supported node lands in exactly one partition, the partitions contract to an
    acyclic graph (fuse_by_partitions checks), the split module computes what the graph does,
    and no partition hands a Python number or a tuple over (irc returns tensors only)."""
    with deadline(120):
        for seed in range(300):
            rng = random.Random(seed)
            gm, eager, folded = random_graph(rng)
            x = torch.randn(4, 6)
            want = gm(x)
            try:
                split, count = split_like_irc(gm, x, eager, folded)
                runner = Handed(split)
                got = runner.run(x)
            except Exception as e:
                raise AssertionError(f"seed {seed}: {type(e).__name__}: {e}\n{gm.code}") from e
            assert len(got) == len(want), seed
            for a, b in zip(got, want):
                assert (torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b), f"seed {seed}\n{gm.code}"
            for name, out in runner.handed:
                for value in out if isinstance(out, tuple) else (out,):
                    assert isinstance(value, torch.Tensor), f"seed {seed}: {name} returns {type(value)}\n{split.code}"


# --- Hugging Face's fx tracer ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["bert", "llama"])
def test_hf_fx_traced_language_models_compile_and_match_eager(name):
    """The graphs that hung: tiny BERT (`position_ids[:, 0:n]`) and Llama (the causal mask's
    `mask[..., :n]` after a slice assignment). All partitions compile; outputs match eager."""
    pytest.importorskip("transformers")
    # Dynamo first: its guards keep the torch.finfo they see when first imported, and the HF
    # tracer replaces torch.finfo while it traces (Dynamo tests later in this process broke).
    import torch._dynamo  # noqa: F401
    from transformers.utils.fx import symbolic_trace

    from irc.models.lm import INPUT_NAMES, build, lm_inputs

    model = build(name)
    with deadline(240):
        traced = symbolic_trace(model, input_names=list(INPUT_NAMES))
        inputs = lm_inputs(2, 7)
        cm = irc.compile(traced, tuple(inputs[n] for n in INPUT_NAMES))
    assert not any("failed to compile" in n.reason for n in cm.eager_nodes)
    with torch.no_grad():
        want = model(**inputs).logits
    got = cm(*(inputs[n] for n in INPUT_NAMES))
    torch.testing.assert_close(got["logits"], want)

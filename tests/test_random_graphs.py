"""Differential testing: random graphs over irc's supported ops, compiled and compared with eager.

Each example is a random DAG built directly as a torch.fx graph: inputs of random shapes (1 to 3
dims, sizes 1 to 7), parameters, elementwise ops with broadcasting and scalars, linear layers,
matmuls against transposed weights, reshapes, transposes and concatenations (whose inputs irc may
compute in place in the result: lowering/to_loops/function.py), with values reused by several
users (which must not be fused away) and several outputs. Each of the 5 chunks has a fixed seed, so
CI runs the same 500 graphs every time (`IRC_RANDOM_GRAPHS=N` changes the total), and Hypothesis
shrinks any failure to a small graph.
"""

from __future__ import annotations

import math
import operator
import os

import pytest
import torch
import torch.nn.functional as F
from torch import fx, nn

import irc

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

FAST_FLAGS = ["-O1", "-fopenmp", "-std=c++17", "-shared", "-fPIC"]  # many small builds: compile fast

UNARY = [torch.relu, torch.sigmoid, torch.tanh, F.gelu]
BINARY = [operator.add, operator.sub, operator.mul, torch.add, torch.mul]


class GraphBuilder:
    """Grows a random fx graph; tracks each value's node and shape."""

    def __init__(self, draw):
        self.draw = draw
        self.graph = fx.Graph()
        self.root = nn.Module()
        self.values: list[tuple[fx.Node, tuple[int, ...]]] = []
        self.inputs: list[torch.Tensor] = []

    def shape(self, rank: int | None = None) -> tuple[int, ...]:
        rank = self.draw(st.integers(1, 3)) if rank is None else rank
        return tuple(self.draw(st.lists(st.integers(1, 7), min_size=rank, max_size=rank)))

    def add_input(self, shape: tuple[int, ...]) -> None:
        node = self.graph.placeholder(f"x{len(self.inputs)}")
        self.inputs.append(torch.randn(shape))
        self.values.append((node, shape))

    def add_param(self, shape: tuple[int, ...]) -> fx.Node:
        name = f"p{len(list(self.root.parameters()))}"
        self.root.register_parameter(name, nn.Parameter(torch.randn(shape) / math.sqrt(shape[-1])))
        return self.graph.get_attr(name)

    def pick(self) -> tuple[fx.Node, tuple[int, ...]]:
        return self.values[self.draw(st.integers(0, len(self.values) - 1))]

    def broadcastable_to(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """A random shape that broadcasts with `shape` (trailing dims kept or set to 1)."""
        keep = self.draw(st.integers(0, len(shape)))
        return tuple(d if self.draw(st.booleans()) else 1 for d in shape[len(shape) - keep :])

    def step(self) -> None:
        x, shape = self.pick()
        if not shape:
            return
        kind = self.draw(
            st.sampled_from(["unary", "binary", "scalar", "linear", "matmul", "reshape", "transpose", "cat"])
        )
        if kind == "unary":
            node = self.graph.call_function(self.draw(st.sampled_from(UNARY)), (x,))
        elif kind == "binary":
            if self.draw(st.booleans()):
                other_shape = self.broadcastable_to(shape)
                self.add_input(other_shape)
                other = self.values[-1][0]
            else:
                other, other_shape = self.pick()
            try:
                out_shape = tuple(torch.broadcast_shapes(shape, other_shape))
            except RuntimeError:
                return  # shapes that do not broadcast: draw another op
            node = self.graph.call_function(self.draw(st.sampled_from(BINARY)), (x, other))
            self.values.append((node, out_shape))
            return
        elif kind == "scalar":
            c = self.draw(st.sampled_from([0.5, 2.0, -1.0, 3.0]))
            op = self.draw(st.sampled_from([operator.add, operator.mul, operator.sub, operator.truediv]))
            node = self.graph.call_function(op, (c, x) if op is not operator.truediv and self.draw(st.booleans()) else (x, c))
        elif kind == "linear":
            n = self.draw(st.integers(1, 7))
            w = self.add_param((n, shape[-1]))
            b = self.add_param((n,)) if self.draw(st.booleans()) else None
            node = self.graph.call_function(F.linear, (x, w, b))
            self.values.append((node, (*shape[:-1], n)))
            return
        elif kind == "matmul":
            n = self.draw(st.integers(1, 7))
            w = self.add_param((n, shape[-1]))
            wt = self.graph.call_method("t", (w,))
            node = self.graph.call_function(torch.matmul, (x, wt))
            self.values.append((node, (*shape[:-1], n)))
            return
        elif kind == "cat":  # with an earlier value that fits, else a new input; 2 or 3 parts
            d = self.draw(st.integers(0, len(shape) - 1))
            parts = [(x, shape)]
            for _ in range(self.draw(st.integers(1, 2))):
                fits = [(v, s) for v, s in self.values if len(s) == len(shape) and all(
                    a == b for k, (a, b) in enumerate(zip(s, shape)) if k != d)]
                if fits and self.draw(st.booleans()):
                    parts.append(fits[self.draw(st.integers(0, len(fits) - 1))])
                else:
                    self.add_input(tuple(self.draw(st.integers(1, 7)) if k == d else n for k, n in enumerate(shape)))
                    parts.append(self.values[-1])
            order = self.draw(st.permutations(range(len(parts))))
            parts = [parts[i] for i in order]
            node = self.graph.call_function(torch.cat, ([v for v, _ in parts], d))
            out_shape = tuple(sum(s[d] for _, s in parts) if k == d else n for k, n in enumerate(shape))
            self.values.append((node, out_shape))
            return
        elif kind == "reshape":
            node = self.graph.call_method("reshape", (x, -1))
            self.values.append((node, (math.prod(shape),)))
            return
        else:
            if len(shape) != 2:
                return
            node = self.graph.call_method("t", (x,))
            self.values.append((node, shape[::-1]))
            return
        self.values.append((node, shape))

    def finish(self) -> fx.GraphModule:
        computed = self.values[len(self.inputs) :] or self.values
        n_out = self.draw(st.integers(1, min(2, len(computed))))
        outs = [computed[-1][0]] + [self.pick()[0] for _ in range(n_out - 1)]
        self.graph.output(tuple(outs) if len(outs) > 1 else outs[0])
        return fx.GraphModule(self.root, self.graph)


def check_random_graph(data) -> None:
    g = GraphBuilder(data.draw)
    torch.manual_seed(data.draw(st.integers(0, 2**16)))
    g.add_input(g.shape())
    for _ in range(data.draw(st.integers(1, 8))):
        g.step()
    gm = g.finish()
    with torch.no_grad():
        expected = gm(*g.inputs)
    fuse = data.draw(st.booleans())
    cm = irc.compile(gm, g.inputs, fuse=fuse, cxx_flags=FAST_FLAGS)
    torch.testing.assert_close(cm(*g.inputs), expected)


def _chunk(index: int):
    """One test of EXAMPLES random graphs with its own fixed seed (chunks run in parallel)."""

    @hypothesis.seed(1000 + index)
    @hypothesis.settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(hypothesis.HealthCheck),
    )
    @hypothesis.given(st.data())
    def test(data):
        check_random_graph(data)

    test.__name__ = f"test_random_graphs_{index}"
    return test


TOTAL = int(os.environ.get("IRC_RANDOM_GRAPHS", "500"))
CHUNKS = 5
EXAMPLES = max(1, TOTAL // CHUNKS)
for _i in range(CHUNKS):
    globals()[f"test_random_graphs_{_i}"] = _chunk(_i)

"""Concatenations whose inputs are computed in place in the result's buffer (`concat_homes` in
lowering/to_loops/function.py): the copies they save, and every case where an input must still be
copied (batch > 1, an argument, a returned value, an unaligned range, an input given twice)."""

from __future__ import annotations

import re

import pytest
import torch
from irc_testing import check
from torch import nn

import irc
from irc.models.cnn import randomize_batch_norms
from irc.models.modern_cnn import DenseLayer


def _copies(cm) -> list[str]:
    """The concatenations' copy kernels left in the loop IR: "input k at offset" of each."""
    return re.findall(r'irc.kernel = "irt.concat -> [^"(]*\((input \d+ at \d+)\)"', cm.ir("loops"))


def _dense_block(cin: int, growth: int, layers: int) -> nn.Module:
    """A stem conv, then irc's DenseNet layers: each concatenates its new channels to its input."""
    return nn.Sequential(
        nn.Conv2d(3, cin, 3, padding=1),
        *[DenseLayer(cin + k * growth, growth) for k in range(layers)],
    ).eval()


class TorchvisionDenseBlock(nn.Module):
    """torchvision's DenseNet block: each layer concatenates every earlier feature again, and the
    block returns them all concatenated (then a transition conv, so the result is not returned)."""

    def __init__(self, cin: int, growth: int, layers: int):
        super().__init__()
        self.stem = nn.Conv2d(3, cin, 3, padding=1)
        self.layers = nn.ModuleList(
            nn.Sequential(nn.BatchNorm2d(cin + k * growth), nn.ReLU(), nn.Conv2d(cin + k * growth, growth, 3, padding=1))
            for k in range(layers)
        )
        self.transition = nn.Conv2d(cin + layers * growth, 8, 1)

    def forward(self, x):
        features = [self.stem(x)]
        for layer in self.layers:
            features.append(layer(torch.cat(features, 1)))
        return self.transition(torch.relu(torch.cat(features, 1)))


@pytest.mark.parametrize("hw", [(12, 12), (8, 6), (7, 7)])
def test_dense_chain_needs_no_copies(hw):
    """Each layer's `cat([x, new])` nests in the next one's: the stem's and every layer's output
    are written where the block's last concatenation (here the model's output) keeps them. At
    7x7 the second layer's channels would start at 24 x 49 = 1176 elements, not 64-byte aligned:
    that one input is copied."""
    torch.manual_seed(0)
    m = randomize_batch_norms(_dense_block(16, 8, 3))
    x = torch.randn(1, 3, *hw)
    cm = check(m, x)
    assert _copies(cm) == (["input 1 at 24"] if hw == (7, 7) else [])


def test_dense_chain_inside_a_model():
    """The block's result read by a transition (not returned): the nest lives in the arena."""
    torch.manual_seed(1)
    m = nn.Sequential(_dense_block(16, 8, 4), nn.BatchNorm2d(48), nn.ReLU(), nn.Conv2d(48, 8, 1),
                      nn.AvgPool2d(2)).eval()
    randomize_batch_norms(m)
    x = torch.randn(1, 3, 10, 10)
    cm = check(m, x)
    assert _copies(cm) == []
    assert "irt.concat" not in cm.ir("loops")


@pytest.mark.parametrize("fuse", [True, False])
def test_torchvision_dense_block_concatenations_become_views(fuse):
    """Every `torch.cat(features, 1)` but the last is a prefix of the last: a view, no copies."""
    torch.manual_seed(2)
    m = randomize_batch_norms(TorchvisionDenseBlock(16, 8, 4)).eval()
    x = torch.randn(1, 3, 12, 12)
    cm = check(m, x, fuse=fuse)
    assert _copies(cm) == []


def test_batch_two_copies_every_input():
    """At batch 2 an input is not one range of the result: each is copied, as before."""
    torch.manual_seed(3)
    m = randomize_batch_norms(_dense_block(16, 8, 2))
    cm = check(m, torch.randn(2, 3, 8, 8))
    assert len(_copies(cm)) == 4


def test_argument_returned_value_and_repeated_input_are_copied():
    """An argument's and a returned value's buffers are the caller's; an input given twice is
    computed in one place only; an unaligned range (15 elements: the next starts unaligned) is copied."""

    def f(x, w):
        a = torch.relu(x @ w)  # 1 x 16: homed at 0
        b = a * 2.0  # also returned
        c = torch.sigmoid(x @ w)
        return torch.cat([a, x, b, c, a], 1), b

    x, w = torch.randn(1, 16), torch.randn(16, 16)
    cm = check(f, x, w)
    assert _copies(cm) == ["input 1 at 16", "input 2 at 32", "input 4 at 64"]

    def g(x):
        u = torch.tanh(x)  # 15 elements: the next input would start unaligned
        v = torch.relu(x)
        return torch.cat([u, v], 1) * 3.0

    cm = check(g, torch.randn(1, 15))
    assert _copies(cm) == ["input 1 at 15"]


def test_inputs_read_after_the_concatenation_and_written_in_place():
    """Inputs read again after the concatenation, one computed elementwise in place of a dying
    intermediate (unfused), the concatenation's result consumed by an elementwise op as it dies,
    an input in two concatenations (computed in the last one's buffer, copied into the first)."""

    def f(x, w):
        t = x @ w  # 1 x 32
        a = t * 2.0  # written in place of t, homed at 0
        b = torch.relu(x @ (w * 0.5 - 1.0))
        c = torch.cat([a, b], 1)
        d = torch.sigmoid(c)  # c dies here
        return d * a.sum() + torch.cat([b, b], 1)

    x, w = torch.randn(1, 32), torch.randn(32, 32)
    for fuse in (True, False):
        cm = check(f, x, w, fuse=fuse)
        # the last concatenation is visited first: b lives at 0 in cat([b, b]); the first copies it
        assert _copies(cm) == ["input 1 at 32", "input 1 at 32"]


def test_nested_and_last_dim_concatenations():
    """cat(cat(a, b), cat(c, d)) along the last dim of 1 x 1 x n tensors: all four in place; a
    concatenation reshaped and returned, its inputs in the caller's buffer."""

    def f(x):
        a, b, c, d = torch.relu(x), torch.tanh(x), torch.sigmoid(x), torch.exp(x)
        return torch.cat([torch.cat([a, b], -1), torch.cat([c, d], -1)], -1).reshape(4, 1, 16)

    cm = check(f, torch.randn(1, 1, 16))
    assert _copies(cm) == []


def test_dense_block_through_torch_compile():
    torch.manual_seed(4)
    m = randomize_batch_norms(TorchvisionDenseBlock(16, 8, 3)).eval()
    x = torch.randn(1, 3, 9, 9)
    with torch.no_grad():
        expected = m(x)
        torch._dynamo.reset()
        got = torch.compile(m, backend="irc")(x)
    torch.testing.assert_close(got, expected)


hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies
FAST_FLAGS = ["-O1", "-fopenmp", "-std=c++17", "-shared", "-fPIC"]  # many small builds: compile fast


class _CatGraph(nn.Module):
    """A random program over 1 x C x 4 x 4 values (16 elements a channel: every channel offset
    is 64-byte aligned, so every computed input may be homed): elementwise ops, sums, 1x1 convs,
    channel slices and concatenations of 1-3 earlier values (repeats allowed), several outputs."""

    def __init__(self, data):
        super().__init__()
        self.program, self.convs, channels = [], nn.ModuleList(), [data.draw(st.integers(1, 4))]
        for _ in range(data.draw(st.integers(4, 10))):
            kind = data.draw(st.sampled_from(["unary", "add", "conv", "slice", "cat", "cat", "cat"]))
            value = st.one_of(st.just(len(channels) - 1), st.integers(0, len(channels) - 1))  # chains often
            a = data.draw(value)
            if kind == "cat":
                args = data.draw(st.lists(value, min_size=1, max_size=3))
                self.program.append(("cat", args))
                channels.append(sum(channels[i] for i in args))
            elif kind == "add":
                same = [i for i, c in enumerate(channels) if c == channels[a]]
                self.program.append(("add", [a, same[data.draw(st.integers(0, len(same) - 1))]]))
                channels.append(channels[a])
            elif kind == "conv":
                out = data.draw(st.integers(1, 5))
                self.convs.append(nn.Conv2d(channels[a], out, 1))
                self.program.append(("conv", [a, len(self.convs) - 1]))
                channels.append(out)
            elif kind == "slice" and channels[a] > 1:
                lo = data.draw(st.integers(0, channels[a] - 1))
                self.program.append(("slice", [a, lo]))
                channels.append(channels[a] - lo)
            else:
                self.program.append((data.draw(st.sampled_from(["relu", "tanh", "sigmoid"])), [a]))
                channels.append(channels[a])
        n = len(channels)
        self.outputs = sorted({n - 1, data.draw(st.integers(1, n - 1))})
        self.channels = channels

    def forward(self, x):
        v = [x]
        for kind, args in self.program:
            if kind == "cat":
                v.append(torch.cat([v[i] for i in args], 1))
            elif kind == "add":
                v.append(v[args[0]] + v[args[1]])
            elif kind == "conv":
                v.append(self.convs[args[1]](v[args[0]]))
            elif kind == "slice":
                v.append(v[args[0]][:, args[1]:])
            else:
                v.append(getattr(torch, kind)(v[args[0]]))
        return tuple(v[i] for i in self.outputs)


@hypothesis.seed(45)
@hypothesis.settings(max_examples=100, deadline=None, database=None, suppress_health_check=list(hypothesis.HealthCheck))
@hypothesis.given(st.data())
def test_random_concatenation_programs(data):
    """Differential: random programs of concatenations, their inputs reused, sliced, summed,
    returned, against eager."""
    torch.manual_seed(data.draw(st.integers(0, 2**16)))
    m = _CatGraph(data).eval()
    x = torch.randn(1, m.channels[0], 4, 4)
    with torch.no_grad():
        expected = m(x)
    cm = irc.compile(m, (x,), fuse=data.draw(st.booleans()), cxx_flags=FAST_FLAGS, fallback=False)
    torch.testing.assert_close(cm(x), expected)

"""Compile-time folding of parameter-only computations (lowering/tensor/fold_params.py)."""

from __future__ import annotations

import re

import torch
from torch import nn

import irc


class Scaled(nn.Module):
    """Weight and bias transformations that depend on parameters only, next to run-time work."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(6, 5))
        self.b = nn.Parameter(torch.randn(6))
        self.s = nn.Parameter(torch.randn(6))

    def forward(self, x):
        w2 = torch.sigmoid(self.w * 2 + 1)
        return torch.relu(x @ w2.t() + self.b * self.s) + self.s, self.w.t()


def test_parameter_only_ops_are_computed_once_at_compile_time():
    m, x = Scaled(), torch.randn(3, 5)
    cm = irc.compile(m, (x,))
    with torch.no_grad():
        expected = m(x)
    for got, want in zip(cm(x), expected):
        torch.testing.assert_close(got, want)
    fused = cm.ir("fused")
    ops = re.findall(r"= (irt\.\w+)", fused)
    assert ops == ["irt.contract"], fused  # sigmoid(w*2+1), the transposes and b*s are gone
    # %s is still read at run time (the residual add), the rest became folded parameters
    names = [name for name, _ in cm._graph.params]
    assert names.count("s") == 1 and "w" not in names and "b" not in names, names
    assert sum(name.startswith("folded:") for name in names) == 3, names


def test_ops_reading_inputs_are_not_folded():
    m = nn.Sequential(nn.Linear(4, 3), nn.Tanh()).eval()
    cm = irc.compile(m, (torch.randn(2, 4),), fuse=False)
    # the linear reads the input so it stays (as the GEMM's packed form); only its weight's
    # packing is folded
    assert re.findall(r"= (irt\.\w+)", cm.ir("fused")) == ["irt.contract", "irt.tanh"]
    assert [name for name, _ in cm._graph.params] == ["0.bias", "folded:p0_weight_packed"]


def test_folded_weights_follow_in_place_updates():
    """A weight updated in place after compiling (an optimizer step) is folded again before the
    next call: packed weights and folded transformations are never stale."""
    m, x = Scaled(), torch.randn(3, 5)
    cm = irc.compile(m, (x,))
    for _ in range(2):
        with torch.no_grad():
            m.w.mul_(0.5).add_(0.25)
            m.b.add_(1.0)
            for got, want in zip(cm(x), m(x)):
                torch.testing.assert_close(got, want)


def test_folding_without_fusion_matches_eager():
    m, x = Scaled(), torch.randn(1, 5)
    cm = irc.compile(m, (x,), fuse=False)
    with torch.no_grad():
        for got, want in zip(cm(x), m(x)):
            torch.testing.assert_close(got, want)
    assert "irt.sigmoid" not in cm.ir("fused")

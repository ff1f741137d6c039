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


class PreActivation(nn.Module):
    """DenseNet's order: a batch norm with no conv before it (after a pool), then ReLU."""

    def __init__(self, channels: int = 6):
        super().__init__()
        self.pool, self.bn = nn.MaxPool2d(2), nn.BatchNorm2d(channels)
        with torch.no_grad():
            self.bn.running_mean.normal_()
            self.bn.running_var.uniform_(0.3, 3.0)
            self.bn.weight.normal_()
            self.bn.bias.normal_()

    def forward(self, x):
        return torch.relu(self.bn(self.pool(x)))


def _kernel_code(cm) -> str:
    return cm.cpp_source.split('extern "C" void forward(', 1)[1]


def test_a_batch_norms_per_channel_math_is_folded_not_run_per_element():
    """gamma / sqrt(var + eps) of a batch norm no conv absorbs is parameter-only: it becomes a
    folded parameter, and the kernel has no square root or division left, fused with the ReLU
    or not."""
    x = torch.randn(2, 6, 10, 14)
    for fuse in (True, False):
        m = PreActivation().eval()
        cm = irc.compile(m, (x,), fuse=fuse)
        with torch.no_grad():
            torch.testing.assert_close(cm(x), m(x))
        code = _kernel_code(cm)
        assert "sqrt" not in code and "1.0f /" not in code, code
        assert "param_math" in cm.ir("fused")


def test_a_folded_batch_norm_scale_follows_in_place_updates():
    m, x = PreActivation().eval(), torch.randn(1, 6, 8, 8)
    cm = irc.compile(m, (x,))
    for _ in range(2):
        with torch.no_grad():
            m.bn.running_var.mul_(2.0)
            m.bn.weight.neg_()
            torch.testing.assert_close(cm(x), m(x))


class MaskedScale(nn.Module):
    """Parameter-only math that reads a boolean buffer, inside a body that reads the input."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Parameter(torch.randn(7)), nn.Parameter(torch.randn(7))
        self.register_buffer("mask", torch.tensor([True, False, True, True, False, False, True]))

    def forward(self, x):
        return x * torch.exp(torch.where(self.mask, self.a, self.b)) + 1.0


def test_parameter_math_reading_a_boolean_buffer_is_folded():
    """(Folded as whole ops here; a fused body reading a mask parameter is the golden's @mask.)"""
    m, x = MaskedScale(), torch.randn(3, 7)
    cm = irc.compile(m, (x,))
    with torch.no_grad():
        torch.testing.assert_close(cm(x), m(x))
        assert "irc_exp" not in _kernel_code(cm)
        m.mask.logical_not_()
        m.a.mul_(-1.0)
        torch.testing.assert_close(cm(x), m(x))

"""irc explain: kernels, FLOPs, bytes and the intermediate traffic fusion removes, computed from IR."""

from __future__ import annotations

import pytest
import torch
from torch import fx, nn

import irc
from irc.context import irc_context
from irc.frontend.fx_importer import import_fx
from irc.lowering.tensor.irc_fuse import IrcFusePass
from irc.tools.explain import explain, intermediate_bytes, kernels, unfused_reasons


def imported_and_fused(model, *inputs):
    graph = import_fx(fx.symbolic_trace(model), inputs)
    imported = graph.module.clone()
    IrcFusePass().apply(irc_context(), graph.module)
    return imported, graph.module


def test_mlp_kernels_flops_bytes_and_traffic():
    m = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 64), nn.GELU(), nn.Linear(64, 10)).eval()
    imported, fused = imported_and_fused(m, torch.randn(1, 784))
    ks = kernels(fused)
    assert [k.fused_from for k in ks] == [("irt.linear", "irt.relu"), ("irt.linear", "irt.gelu"), ("irt.linear",)]
    # 2*M*N*K for the dot products, plus the epilogue's scalar ops per output element
    assert ks[0].flops == 2 * 128 * 784 + 2 * 128  # bias add, max
    assert ks[2].flops == 2 * 10 * 64 + 10  # bias add
    gelu_ops = ks[1].flops - 2 * 64 * 128 - 64  # erf form: mul, erf, add, mul, mul
    assert gelu_ops == 5 * 64
    # x, W, b read once, y written once
    assert ks[0].bytes == 4 * (784 + 128 * 784 + 128 + 128)
    # unfused: 4 intermediates (1x128, 1x128, 1x64, 1x64) written once and read once each
    assert intermediate_bytes(imported) == 4 * 2 * (128 + 128 + 64 + 64)
    assert intermediate_bytes(fused) == 4 * 2 * (128 + 64)


def test_unfused_reasons_name_the_cause():
    def f(x):
        y = torch.sigmoid(x)
        return torch.tanh(y), y  # y is also returned: it must be materialized

    imported, fused = imported_and_fused(f, torch.randn(4, 4))
    reasons = unfused_reasons(fused)
    assert any("2 users" in r for r in reasons), reasons
    report = explain(imported, fused)
    assert "Left unfused:" in report and "Intermediate traffic:" in report


def test_conv_and_attention_flops():
    conv = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1)).eval()
    _, fused = imported_and_fused(conv, torch.randn(1, 3, 10, 10))
    (k,) = kernels(fused)
    assert k.flops == 2 * 8 * 10 * 10 * 3 * 9 + 8 * 10 * 10  # MACs, then the bias per output

    def attn(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)

    _, fused = imported_and_fused(attn, torch.randn(2, 5, 4), torch.randn(2, 7, 4), torch.randn(2, 7, 3))
    (k,) = kernels(fused)
    assert k.flops == 2 * 5 * 7 * (2 * 4 + 2 * 3 + 5)


def test_explain_profile_needs_a_run():
    m = torch.nn.Sequential(torch.nn.Linear(8, 4)).eval()
    cm = irc.compile(m, (torch.randn(3, 8),))
    with pytest.raises(ValueError, match=r"runs >= 1.*got 0"):
        cm.explain(profile=True, runs=0)


def test_concatenations_computed_in_place_are_not_kernels():
    """A concatenation whose inputs irc-to-loops computes in place in its buffer is no kernel; one
    with an argument among its inputs moves only that input (read and written); the profile's
    times line up with the kernels left."""

    def f(x):
        a, b = torch.relu(x), torch.tanh(x)
        c = torch.cat([a, b], 1)  # both in place
        return torch.sigmoid(torch.cat([c, torch.exp(c), x], 1))  # c and exp(c) in place, x copied

    x = torch.randn(1, 16)
    imported, fused = imported_and_fused(f, x)
    ks = kernels(fused)
    assert [k.op for k in ks].count("irt.concat") == 1
    (cat,) = [k for k in ks if k.op == "irt.concat"]
    assert cat.bytes == 2 * 4 * 16
    report = explain(imported, fused)
    assert "Concatenations: 4 of their 5 inputs computed in place in the result's buffer, no copy " \
        "(1 of 2 concatenations with no kernel at all)" in report

    cm = irc.compile(f, (x,))
    profiled = cm.explain(profile=True, runs=3)
    rows = [line.split() for line in profiled.splitlines() if line.strip()[:1].isdigit()]
    assert [r[1] for r in rows] == [k.op for k in ks]
    assert all(any(t.endswith("us") for t in r) for r in rows)  # every kernel timed: none shifted

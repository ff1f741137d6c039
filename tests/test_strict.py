"""IRC_STRICT=1: reductions sum in sequential float32 order, bit for bit."""

from __future__ import annotations

import re

import numpy as np
import torch
from torch import nn

import irc


def sequential_linear(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x @ w.T + b with each dot product summed left to right in float32."""
    out = np.empty((x.shape[0], w.shape[0]), dtype=np.float32)
    for i in range(x.shape[0]):
        for j in range(w.shape[0]):
            acc = np.float32(0)
            for k in range(x.shape[1]):
                acc = np.float32(acc + np.float32(x[i, k] * w[j, k]))
            out[i, j] = np.float32(acc + b[j])
    return out


def test_strict_mode_is_sequential_and_bit_exact(monkeypatch):
    torch.manual_seed(0)
    m = nn.Linear(67, 5).eval()
    x = torch.randn(3, 67)
    monkeypatch.setenv("IRC_STRICT", "1")
    cm = irc.compile(m, (x,))
    assert "omp simd reduction" not in cm.cpp_source
    expected = sequential_linear(x.numpy(), m.weight.detach().numpy(), m.bias.detach().numpy())
    with torch.no_grad():  # the parameters require grad: outside no_grad the result would, as in eager
        assert np.array_equal(cm(x).numpy(), expected)


def test_default_mode_vectorizes_reductions(monkeypatch):
    monkeypatch.delenv("IRC_STRICT", raising=False)
    cm = irc.compile(lambda x: x.sum(-1), (torch.randn(3, 67),))
    assert re.search(r"#pragma omp simd reduction\(\+:acc\w*\)", cm.cpp_source)

"""Zero-size tensors behave as in eager: an empty batch compiles and returns eager's shapes
(and values, where a result has any: a contraction over K = 0, the NaN mean of nothing), for
every op family; where eager raises (amax over an empty dimension), irc raises a clear error."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from irc_testing import check
from torch import nn

import irc
from irc.errors import IrcError


class Fn1(nn.Module):
    def __init__(self, f, *mods: nn.Module):
        super().__init__()
        self.f, self.mods = f, nn.ModuleList(mods)

    def forward(self, x):
        return self.f(x)


class Fn2(Fn1):
    def forward(self, x, y):
        return self.f(x, y)


class Fn3(Fn1):
    def forward(self, x, y, z):
        return self.f(x, y, z)


def Fn(f, *mods: nn.Module) -> nn.Module:
    """A module calling `f` on as many inputs as `f` takes."""
    return {1: Fn1, 2: Fn2, 3: Fn3}[f.__code__.co_argcount](f, *mods)


def _mlp():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


CASES = {
    "mlp": (_mlp(), [(0, 8)]),  # the GEMM engine's lowering (issue 10, item 8)
    "matmul_k0": (Fn(lambda x, y: x @ y + 1), [(3, 0), (0, 5)]),  # values: the epilogue of 0
    "linear_k0": (nn.Linear(0, 4), [(3, 0)]),
    "linear_n0": (nn.Linear(8, 0), [(3, 8)]),
    "bmm": (Fn(lambda x, y: torch.bmm(x, y)), [(0, 3, 8), (0, 8, 5)]),
    "cnn": (nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.AvgPool2d(2),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4)), [(0, 3, 8, 8)]),
    "adaptive_empty_image": (nn.AdaptiveAvgPool2d(1), [(1, 3, 0, 4)]),  # NaN, as eager
    "reductions": (Fn(lambda x: torch.cat([x.sum(-1), x.mean(-1), x.amax(-1)])), [(0, 8)]),
    "mean_empty_dim": (Fn(lambda x: x.mean(-1) + x.sum(-1)), [(3, 0)]),  # NaN and 0
    "softmax": (Fn(lambda x: x.softmax(-1) + x.log_softmax(-1)), [(0, 8)]),
    "softmax_empty_dim": (Fn(lambda x: x.softmax(-1)), [(3, 0)]),
    "layer_norm": (nn.LayerNorm(8), [(0, 8)]),
    "attention": (Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v)), [(0, 2, 4, 8)] * 3),
    "attention_no_keys": (Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v)),
                          [(1, 2, 4, 8), (1, 2, 0, 8), (1, 2, 0, 8)]),
    "attention_e0": (Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v)),
                     [(2, 4, 64, 0), (2, 4, 64, 0), (2, 4, 64, 32)]),
    "elementwise": (Fn(lambda x, y: torch.relu(x * y + 1).sigmoid()), [(0, 8), (8,)]),
    "shape": (Fn(lambda x, y: torch.cat([x, y], 1)[:, 2:9].reshape(0, 7).t().contiguous() + x[:, :1].expand(0, 4).sum()),
              [(0, 8), (0, 3)]),
    "empty_slice": (Fn(lambda x: x[:, 8:] * 2), [(3, 8)]),
}


@pytest.mark.parametrize("name", CASES)
def test_zero_size_like_eager(name):
    model, shapes = CASES[name]
    torch.manual_seed(0)
    inputs = [torch.randn(*s) for s in shapes]
    check(model.eval(), *inputs, equal_nan=True)


def test_empty_batch_as_a_new_shape_version():
    """Called first with a normal batch, then with batch 0 (a new version), then normal again."""
    m = _mlp().eval()
    cm = irc.compile(m, (torch.randn(3, 8),), fallback=False)
    for batch in (0, 3, 0, 5):
        x = torch.randn(batch, 8)
        torch.testing.assert_close(cm(x), m(x))


def test_mha_empty_batch():
    mha = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    model = Fn(lambda q, k, v: mha(q, k, v, need_weights=False)[0], mha)
    x = torch.randn(0, 4, 8)
    check(model.eval(), x, x, x)


def test_amax_over_empty_dim_raises_like_eager():
    model = Fn(lambda x: x.amax(-1))
    with pytest.raises(IndexError):
        model(torch.randn(3, 0))
    reason = r"at node amax \(eager PyTorch raises too\): IndexError: amax\(\): Expected reduction dim -1 to have non-zero size"
    with pytest.raises(IrcError, match=reason):
        irc.compile(model, (torch.randn(3, 0),), fallback=False)
    cm = irc.compile(model, (torch.randn(3, 4),), fallback=False)
    with pytest.raises(IrcError, match=reason):  # a new shape version
        cm(torch.randn(3, 0))

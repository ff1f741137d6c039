"""Winograd F(2x2, 3x3) convolutions (`irc_conv_winograd` in `include/irc_gemm.h`, weights by
`irt.pack "winograd"`): numerics against eager at every vector width and thread count, on
planes of odd and even sizes, padding 0-2, ragged channel panels and fused epilogues; which
convs take the layout; and weights updated in place."""

from __future__ import annotations

import pytest
import torch
from irc_testing import check, kernel_code, target_env
from torch import nn

import irc
from irc.dialects.irt import core as irt
from irc.lowering.to_loops.gemm import WINOGRAD_MIN_CHANNELS, conv_winograd

# name: (cin, cout, h, w, pad). Tiles per row: 28 (a vector and a ragged second), 7 (less than one),
# 32 (exactly two at 16 lanes); odd planes leave a last tile row or column of one output; cout 70
# and 72 fill the last panel of 14 (or 6) output channels partly. At two threads the tasks share
# out the tile rows, or the output channels where the transformed weights are large (96 -> 128)
# or there is one tile row (2x64).
WINOGRAD_CONVS = {
    "56x56": (64, 64, 56, 56, 1),
    "odd-15x13": (64, 70, 15, 13, 1),
    "wide-8x64": (64, 72, 8, 64, 1),
    "unpadded-12x34": (80, 64, 12, 34, 0),
    "pad2-9x31": (64, 96, 9, 31, 2),
    "14x14": (96, 128, 14, 14, 1),
    "2x64": (64, 64, 2, 64, 1),
}


class Block(nn.Module):
    """conv -> BN -> + residual -> ReLU: the epilogue reads an input at every output."""

    def __init__(self, cin: int, cout: int, pad: int):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=pad)
        self.bn = nn.BatchNorm2d(cout)
        self.bn.running_mean.uniform_(-1, 1)
        self.bn.running_var.uniform_(0.5, 2)

    def forward(self, x, res):
        return torch.relu(self.bn(self.conv(x)) + res)


@pytest.mark.parametrize("lanes,threads", [(16, 1), (16, 2), (8, 1), (8, 2), (4, 1)],
                         ids=["avx512-1", "avx512-2", "avx2-1", "avx2-2", "portable-1"])
@pytest.mark.parametrize("name", WINOGRAD_CONVS)
def test_winograd_conv_matches_eager(name, lanes, threads, monkeypatch):
    """At each vector width (the portable one at one thread: how tasks share out the work does not
    depend on the width)."""
    cin, cout, h, w, pad = WINOGRAD_CONVS[name]
    target_env(monkeypatch, lanes, threads)
    torch.manual_seed(0)
    m = Block(cin, cout, pad).eval()
    x = torch.randn(2, cin, h, w)
    with torch.no_grad():
        res = torch.randn_like(m.conv(x))
    cm = check(m, x, res)
    assert "irc_conv_winograd(" in kernel_code(cm) and f"#define IRC_VL {lanes}  //" in cm.cpp_source


def _conv(cin: int, cout: int, h: int, w: int, **kw) -> irt.PackOp | None:
    """Whether irc would run nn.Conv2d(cin, cout, ...) on an h x w input as Winograd."""
    cm = irc.compile(nn.Conv2d(cin, cout, kw.pop("k", 3), **kw).eval(), (torch.randn(1, cin, h, w),))
    return "irc_conv_winograd(" in kernel_code(cm)


def test_which_convs_run_as_winograd():
    """3x3, stride 1, undilated, one group, enough channels and tiles: Winograd; otherwise not."""
    c = WINOGRAD_MIN_CHANNELS
    assert _conv(c, c, 16, 16, padding=1)
    assert not _conv(c, c, 8, 8, padding=1)  # 16 tiles
    assert not _conv(c, c - 1, 16, 16, padding=1)
    assert not _conv(c - 1, c, 16, 16, padding=1)
    assert not _conv(c, c, 16, 16, padding=1, stride=2)
    assert not _conv(c, c, 16, 16, padding=2, dilation=2)
    assert not _conv(2 * c, 2 * c, 16, 16, padding=1, groups=2)
    assert not _conv(c, c, 16, 16, k=5, padding=2)


def test_winograd_weights_follow_in_place_updates():
    """The transformed weights are folded from the (BN-folded) weight: updating the conv or BN
    parameters in place transforms them again before the next call."""
    m = nn.Sequential(nn.Conv2d(64, 72, 3, padding=1), nn.BatchNorm2d(72), nn.ReLU()).eval()
    x = torch.randn(1, 64, 12, 12)
    cm = irc.compile(m, (x,))
    assert "irc_conv_winograd(" in kernel_code(cm)
    with torch.no_grad():
        for _ in range(2):
            m[0].weight.mul_(-0.5)
            m[1].running_var.mul_(2.0)
            torch.testing.assert_close(cm(x), m(x))


def test_winograd_pack_is_g_w_gt():
    """irt.pack "winograd": u[4a + b, q, c, r] = (G w[o, c] G^T)[a, b] for o = q*R + r, zeros
    past the last output channel."""
    from xdsl.dialects.builtin import TensorType, f32
    from xdsl.ir import Block as IrBlock

    from irc.dialects.irt.semantics import WINOGRAD_G, _pack

    w = torch.randn(5, 3, 3, 3)
    arg = IrBlock(arg_types=[TensorType(f32, [5, 3, 3, 3])]).args[0]
    u = _pack(irt.PackOp(arg, "winograd", 4), [w])
    assert u.shape == (16, 2, 3, 4)
    g = torch.tensor(WINOGRAD_G)
    for o in range(8):
        for c in range(3):
            expected = g @ w[o, c] @ g.T if o < 5 else torch.zeros(4, 4)
            torch.testing.assert_close(u[:, o // 4, c, o % 4].reshape(4, 4), expected)


def test_conv_winograd_rule_reads_the_op():
    """`conv_winograd` decides on the op alone (pack_weights and the lowering agree)."""
    from xdsl.dialects.builtin import TensorType, f32
    from xdsl.ir import Block as IrBlock

    from irc.dialects.irt import nn as irt_nn

    args = IrBlock(arg_types=[TensorType(f32, [1, 64, 16, 16]), TensorType(f32, [64, 64, 3, 3])]).args
    conv = irt_nn.Conv2dOp(args[0], args[1], None, TensorType(f32, [1, 64, 16, 16]), stride=(1, 1), padding=(1, 1))
    assert conv_winograd(conv)


def test_winograd_weights_packed_at_run_time():
    """Hand-written IR whose weight is an input (irc-opt, `run_ir`, the default Target: panels of 6
    output channels): `irt.pack "winograd"` runs as a loop nest before the conv, and the result
    is eager's; packed for another target's tile (14), the conv reads its weight unpacked."""
    from irc_testing import run_ir

    text = """
func.func @winograd(%x: tensor<1x64x15x13xf32>, %w: tensor<70x64x3x3xf32>) -> tensor<1x70x15x13xf32> {
  %p = irt.pack %w "winograd" 6 : (tensor<70x64x3x3xf32>) -> tensor<16x12x64x6xf32>
  %y = irt.conv2d %x, %w packed(%p : tensor<16x12x64x6xf32>) stride [1, 1] padding [1, 1] dilation [1, 1] groups 1
      : (tensor<1x64x15x13xf32>, tensor<70x64x3x3xf32>) -> tensor<1x70x15x13xf32>
  func.return %y : tensor<1x70x15x13xf32>
}
"""
    x, w = torch.randn(1, 64, 15, 13), torch.randn(70, 64, 3, 3) / 24  # outputs of about unit size, as in a model
    (y,) = run_ir(text, [x, w])
    torch.testing.assert_close(y, torch.nn.functional.conv2d(x, w, padding=1))
    other = text.replace('"winograd" 6', '"winograd" 14').replace("16x12x64x6", "16x5x64x14")
    (y,) = run_ir(other, [x, w])
    torch.testing.assert_close(y, torch.nn.functional.conv2d(x, w, padding=1))


def test_an_infinite_input_gives_nan_where_its_window_subtracts():
    """The documented difference (README, Numerics): the input transform subtracts neighbours, so
    an inf in the input gives NaN at outputs where eager gives inf; a NaN spreads to exactly the
    outputs that read it; `IRC_WINOGRAD=0` keeps the direct sums, which match eager."""
    torch.manual_seed(0)
    conv = nn.Conv2d(64, 64, 3, padding=1).eval()
    x = torch.randn(1, 64, 16, 16)
    x[0, 3, 7, 7] = float("inf")
    with torch.no_grad():
        want = conv(x)
        got = irc.compile(conv, (x,))(x)
    assert want.isinf().sum() == 576 and not want.isnan().any()
    assert got.isnan().sum() > 0 and (got.isnan() | got.isinf()).sum() == 576
    x[0, 3, 7, 7] = float("nan")
    with torch.no_grad():
        assert torch.equal(irc.compile(conv, (x,))(x).isnan(), conv(x).isnan())


def test_winograd_off(monkeypatch):
    """IRC_WINOGRAD=0: the same conv in the pixels layout, an inf input as eager has it."""
    monkeypatch.setenv("IRC_WINOGRAD", "0")
    torch.manual_seed(0)
    conv = nn.Conv2d(64, 64, 3, padding=1).eval()
    x = torch.randn(1, 64, 16, 16)
    x[0, 3, 7, 7] = float("inf")
    cm = irc.compile(conv, (x,))
    assert "irc_conv_winograd(" not in kernel_code(cm)
    with torch.no_grad():
        torch.testing.assert_close(cm(x), conv(x))

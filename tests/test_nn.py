"""The CNN op family against eager PyTorch: conv2d, batch norm, max/avg/adaptive pooling, fused
and unfused; the conv-batchnorm fold and conv epilogues; the `cnn` and `resnet18` models."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from irc_testing import check as shared_check, kernel_code
from torch import nn

import irc
from irc.dialects.irt import nn as irt_nn
from irc.lowering.to_loops import nn as irt_nn_lowering
from irc.models import get_model
from irc.models.cnn import randomize_batch_norms

torch.manual_seed(0)
FUSE = pytest.mark.parametrize("fuse", [True, False], ids=["fused", "unfused"])


def check(model, *inputs, fuse=True, **tol):
    """Compile (no eager fallback), run, compare with eager at float32 tolerances; returns the
    compiled module. A bare layer is wrapped in nn.Sequential so it is traced as a module call."""
    if isinstance(model, nn.Module):
        model = model.eval()
        if not isinstance(model, nn.Sequential) and not list(model.children()):
            model = nn.Sequential(model)
    return shared_check(model, *inputs, fuse=fuse, **tol)


def kernels(cm) -> list[str]:
    return re.findall(r"// kernel \d+: (.*)", cm.cpp_source)


# --- conv2d ---------------------------------------------------------------------------------

# (in channels, out channels, kernel, stride, padding, dilation, groups, bias, input H x W)
CONVS = [
    (1, 1, 1, 1, 0, 1, 1, False, (1, 1)),
    (3, 8, 3, 1, 1, 1, 1, True, (8, 8)),
    (3, 5, 3, 2, 1, 1, 1, True, (9, 13)),  # stride 2, odd non-square
    (3, 4, 7, 2, 3, 1, 1, False, (17, 11)),  # ResNet's stem shape, small
    (1, 6, 5, 1, 0, 1, 1, True, (5, 7)),  # kernel as tall as the input
    (4, 6, (3, 1), (2, 1), (1, 0), 1, 2, True, (7, 6)),  # grouped, non-square kernel and stride
    (6, 6, 3, 1, 1, 1, 6, False, (6, 9)),  # depthwise
    (6, 12, 3, 2, 2, 2, 3, True, (10, 9)),  # dilation + groups + stride
    (2, 3, 3, 1, 4, 1, 1, True, (3, 3)),  # padding wider than the kernel: all-padding windows
    (3, 2, 1, 2, 0, 1, 1, True, (6, 5)),  # strided 1x1 (a downsample)
    (3, 4, 3, 3, 0, 3, 1, False, (11, 8)),  # dilation 3, no padding
]


@FUSE
@pytest.mark.parametrize("cfg", CONVS, ids=lambda c: "c{}o{}k{}s{}p{}d{}g{}{}_{}x{}".format(*c[:7], "b" if c[7] else "", *c[8]))
def test_conv2d_matches_eager(cfg, fuse):
    cin, cout, k, s, p, d, g, bias, (h, w) = cfg
    conv = nn.Conv2d(cin, cout, k, stride=s, padding=p, dilation=d, groups=g, bias=bias)
    cm = check(conv, torch.randn(1, cin, h, w), fuse=fuse)
    assert "irt.conv2d" in cm.ir("import")


@FUSE
def test_conv2d_batch_and_activation(fuse):
    m = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(inplace=True))
    check(m, torch.randn(2, 3, 5, 6), fuse=fuse)


@pytest.mark.parametrize("padding", ["same", "valid"])
def test_functional_conv_with_string_padding(padding):
    w, b = torch.randn(4, 3, 3, 5), torch.randn(4)
    check(lambda x: F.conv2d(x, w * 1.0, b * 1.0, padding=padding, dilation=(2, 1)), torch.randn(1, 3, 9, 10))


def test_torch_conv2d_and_unbatched_input():
    w = torch.randn(4, 1, 3, 3)
    check(lambda x: torch.conv2d(x, w * 1.0, None, 2, 1, 1, 2), torch.randn(1, 2, 7, 7))
    check(nn.Conv2d(3, 2, 3, padding=1), torch.randn(3, 6, 5))  # C x H x W


def test_conv_padding_modes_are_refused():
    with pytest.raises(irc.UnsupportedOpError, match="padding_mode='reflect'"):
        conv = nn.Sequential(nn.Conv2d(3, 2, 3, padding=1, padding_mode="reflect")).eval()
        irc.compile(conv, (torch.randn(1, 3, 5, 5),), fallback=False)
    w = torch.randn(2, 3, 2, 2)
    with pytest.raises(irc.UnsupportedOpError, match="asymmetrically"):
        irc.compile(lambda x: F.conv2d(x, w * 1.0, padding="same"), (torch.randn(1, 3, 5, 5),), fallback=False)


# --- depthwise conv2d: the row-wise, vectorized nest -------------------------------------

# (channels, multiplier, kernel, stride, padding, bias, batch, input H x W, activation)
DEPTHWISE = [
    (5, 1, 3, 1, 1, True, 2, (7, 7), None),  # ragged width 7, batch 2
    (17, 1, 3, 2, 1, False, 1, (13, 13), nn.ReLU6()),  # stride 2, odd width
    (24, 1, 5, 1, 2, True, 2, (15, 15), nn.ReLU()),
    (7, 1, 5, 2, 2, True, 1, (15, 11), nn.ReLU6()),
    (19, 1, 7, 1, 3, True, 1, (13, 15), None),  # ConvNeXt's kernel
    (3, 1, 7, 2, 3, False, 2, (9, 7), nn.SiLU()),
    (6, 1, 3, 1, 2, True, 1, (5, 3), None),  # padding wider than the kernel's reach: no interior
    (4, 1, 7, 1, 3, True, 1, (3, 3), None),  # kernel wider than the input
    (33, 1, 3, 2, 0, True, 1, (16, 17), nn.ReLU6()),  # no padding, 17 columns (a 16-lane tail)
    (4, 2, 3, 1, 1, True, 2, (6, 9), nn.ReLU()),  # channel multiplier 2 (below the GEMM's 6 rows)
    (1, 3, 3, 2, 1, True, 1, (8, 8), None),  # one input channel, groups 1
    # the row blocks (stride 1, every tap in bounds after padding: `_depthwise_blocked`)
    (9, 1, 7, 1, 3, True, 1, (17, 29), None),  # 7x7 pad 3: rows 7 + 7 + 3, columns [0, 16) + [13, 29)
    (5, 1, 7, 1, 3, False, 2, (28, 28), nn.ReLU6()),  # ConvNeXt's stage-1 plane, batch 2
    (3, 1, 5, 1, 2, True, 1, (9, 14), nn.SiLU()),  # 14 columns: [0, 8) + [6, 14)
    (4, 2, 3, 1, 0, True, 1, (9, 13), nn.ReLU6()),  # multiplier 2, no padding: 11 columns
    (6, 1, 3, 1, 1, True, 1, (4, 9), nn.ReLU()),  # 9 columns: [0, 8) + [5, 9); one block of 4 rows
    # flat planes (rows narrower than 8, stride 1, the row width kept: `_depthwise_flat`)
    (6, 1, 3, 1, 1, True, 1, (4, 3), nn.ReLU()),  # 12 outputs as [0, 8) + [4, 12)
    (2, 1, 7, 1, 3, True, 1, (1, 1), None),  # one pixel: every tap but the centre is padding
    # column phases (a padded row stored as its stride's phases side by side: `PaddedRow`)
    (8, 1, 3, 2, 1, True, 1, (56, 56), nn.ReLU6()),  # MobileNet's 3x3/s2: 28 columns as [0, 16) + [12, 28)
    (5, 1, 3, 3, 1, True, 2, (13, 14), None),  # stride 3: 3 phases of 6 columns
    (6, 1, 5, 2, 2, False, 1, (10, 9), nn.ReLU()),  # padded width 13: phases of 7 and 6 (+ 1 zero)
]


@pytest.mark.parametrize(
    "cfg", DEPTHWISE,
    ids=lambda c: "c{}m{}k{}s{}p{}{}_n{}_{}x{}_{}".format(*c[:5], "b" if c[5] else "", c[6], *c[7], type(c[8]).__name__),
)
def test_depthwise_conv_matches_eager(cfg):
    """Odd widths, strides 1 and 2, paddings 0..3, kernels 3/5/7, channel counts not a multiple
    of 16, batch 2, with and without bias, BN folded and an activation fused into the epilogue."""
    c, mult, k, s, p, bias, n, (h, w), act = cfg
    layers = [nn.Conv2d(c, c * mult, k, stride=s, padding=p, groups=c, bias=bias), _bn(nn.BatchNorm2d, c * mult)]
    model = nn.Sequential(*layers, *([act] if act is not None else []))
    cm = check(model, torch.randn(n, c, h, w))
    ks = kernels(cm)
    assert len(ks) == 1 and ks[0].startswith("irt.conv2d (irt.conv2d + irt.batch_norm"), ks
    loops = cm.ir("loops")
    assert "irl.gemm" not in loops
    assert "iter_args" not in loops  # no loop over taps carries an accumulator: the columns are innermost


@pytest.mark.parametrize("stride,dilation,column_loops,width", [
    ((2, 2), 2, 2, 48),  # phases of 13 columns at 15 and 31 (input columns from 16 and 32)
    ((1, 2), 1, 4, 48),
    ((2, 1), 1, 4, 48),  # one phase of 25 at 14 (input columns from 16)
    ((2, 3), 1, 2, 64),  # phases of 9 at 15, 31 and 48
])
def test_depthwise_column_phases(stride, dilation, column_loops, width):
    """A strided padded depthwise conv reads its padded rows as column phases (`PaddedRow`), every
    tap unit-stride; dilation and unequal strides included. It runs in row blocks
    (`_depthwise_blocked`: 7 output rows, so 7 rows are one block, 15 and 8 two); output rows of
    11, 12 and 23 columns run as two overlapping column loops of whole vectors per block, 8
    columns as one."""
    model = nn.Sequential(nn.Conv2d(4, 4, 3, stride=stride, padding=2, dilation=dilation, groups=4), nn.ReLU6())
    cm = check(model, torch.randn(2, 4, 13, 21))
    loops = cm.ir("loops")
    assert f"memref<2x4x17x{width}xf32>" in loops
    assert len(re.findall(r"scf.for %ow\S* = ", loops)) == column_loops


@pytest.mark.parametrize("padded,pad,phases", [(58, 1, 2), (25, 2, 2), (25, 2, 1), (25, 2, 3), (9, 4, 4), (16, 0, 1),
                                               (113, 1, 2), (30, 3, 1), (7, 0, 3)])
def test_padded_row_aligns_every_phase_input(padded, pad, phases):
    """`PaddedRow`: every padded column has its own place in the row; a phase's columns are
    consecutive and its first input column (padded column >= pad) is at a multiple of 16, as is
    the row's width, so the copy of an input row stores aligned vectors."""
    from irc.lowering.to_loops.nn import ROW_ALIGN, PaddedRow

    row = PaddedRow.of(padded, pad, phases)
    places = [row.at(j) for j in range(row.phases * row.columns)]
    assert len(set(places)) == len(places) and 0 <= min(places) and max(places) < row.width
    assert row.width % ROW_ALIGN == 0 and row.columns * phases >= padded
    for p in range(phases):
        phase = [row.at(j) for j in range(p, phases * row.columns, phases)]
        assert phase == list(range(phase[0], phase[0] + row.columns))
        first_input = next(j for j in range(p, padded + phases, phases) if j >= pad)
        assert row.at(first_input) % ROW_ALIGN == 0


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_padded_planes_per_chunk_of_channels(threads, stride):
    """A padded depthwise conv writes each channel's padded input into its chunk's plane (4 per
    thread it is compiled for: 4, 8 and 12 planes for 13 channels, chunks of 3-4, 1-2 and 1-2
    channels), the zeros once per chunk: each channel overwrites exactly the previous one's
    input, at batch 2, stride 1 (14 columns copied as [16, 24) + [22, 30)) and stride 2 (phases)."""
    from irc.target import Target

    model = nn.Sequential(nn.Conv2d(13, 13, 3, stride=stride, padding=1, groups=13), nn.ReLU6()).eval()
    x = torch.randn(2, 13, 14, 14)
    cm = irc.compile(model, (x,), fallback=False, target=Target.host().replace(threads=threads))
    with torch.no_grad():
        torch.testing.assert_close(cm(x), model(x))
    slots, width = 4 * threads, 32 if stride == 1 else 48  # (`PaddedRow`: input columns from 16, and from 16 and 32)
    assert re.search(rf"%padded = memref.reinterpret_cast %arena .* to memref<2x{slots}x16x{width}xf32>", cm.ir("loops"))


def test_depthwise_conv_columns_run_in_simd_lanes():
    """The interior column loop, with the 3 taps of a row unrolled, is marked for SIMD; no loop
    over kernel taps carries an accumulator (the scalar nest's form, which GCC cannot vectorize)."""
    model = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.ReLU6())
    cm = check(model, torch.randn(1, 8, 20, 20))
    code = kernel_code(cm)
    assert "omp simd" in code
    assert "reduction(+" not in code
    assert 'irc.reduction = "add"' not in cm.ir("loops")


@pytest.mark.parametrize("width", [4, 8, 16])
def test_depthwise_row_blocks_at_every_vector_width(width):
    """ConvNeXt's 7x7 depthwise conv (padding 3) takes the row blocks: 7 output rows per column
    loop, the columns as [0, 16) and [13, 29) (whole vectors at 16, 8 and 4 lanes, the second
    overlapping the first), a residual add fused; it matches eager at every vector width."""
    from irc.target import Target

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.dw = nn.Conv2d(6, 6, 7, padding=3, groups=6)

        def forward(self, x):
            return self.dw(x) + x

    model, x = Block().eval(), torch.randn(1, 6, 17, 29)
    cm = irc.compile(model, (x,), fallback=False, target=Target.host().replace(vector_width=width))
    with torch.no_grad():
        torch.testing.assert_close(cm(x), model(x))
    assert kernels(cm) == ["irt.conv2d (irt.conv2d + irt.add) -> 1x6x17x29"]
    loops = cm.ir("loops")
    assert re.search(r"scf.for %ow\S* = %c13 to %c29 step %c1", loops)
    assert re.search(r"scf.for %ow\S* = %c0 to %c16 step %c1", loops)
    assert "iter_args" not in loops
    assert f"simdlen({width})" in kernel_code(cm)


@pytest.mark.parametrize("width", [16, 8, 4])
@pytest.mark.parametrize("k,dilation,hw", [(3, 1, (7, 7)), (5, 1, (6, 4)), (3, 2, (9, 5)), (7, 1, (3, 2))])
def test_depthwise_flat_planes(width, k, dilation, hw):
    """A stride-1 depthwise conv on rows narrower than 8 whose padding keeps the row width runs
    each plane as one flat row of OH*W outputs (`_depthwise_flat`): its taps the same flat offsets
    apart for every output, zero rows above and below the plane's copy, and a mask of each kernel
    column's valid output columns (a tap off the row reads the next row's element). An infinite
    input at a row's first and last column reaches exactly the outputs eager gives it (the mask
    selects, it does not multiply); a residual add reads the same flat position; batch 2."""
    from irc.target import Target

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.dw = nn.Conv2d(5, 5, k, padding=dilation * (k // 2), dilation=dilation, groups=5)

        def forward(self, x):
            return torch.clamp(self.dw(x), 0, 6) + x

    model, x = Block().eval(), torch.randn(2, 5, *hw)
    x[0, 1, 1, 0], x[1, 3, 0, -1], x[1, 4, -1, 0] = float("inf"), float("-inf"), float("nan")
    cm = irc.compile(model, (x,), fallback=False, target=Target.host().replace(vector_width=width))
    with torch.no_grad():
        torch.testing.assert_close(cm(x), model(x), equal_nan=True)
        y = torch.randn(2, 5, *hw)
        torch.testing.assert_close(cm(y), model(y))
    assert kernels(cm) == [f"irt.conv2d (irt.conv2d + irt.clamp + irt.add) -> 2x5x{hw[0]}x{hw[1]}"]
    loops = cm.ir("loops")
    masks = sum(1 for j in range(k) if j * dilation != dilation * (k // 2))
    # the valid columns of each off-centre kernel column; each plane's buffer: rows of zeros above and below
    assert re.search(rf"%valid = memref.reinterpret_cast %arena .* to memref<{masks}x{hw[0]}x{hw[1]}xf32", loops)
    pad = dilation * (k // 2)
    need = (hw[0] + 2 * pad) * hw[1] + 2 * pad  # every tap of every output in bounds
    # (and the input's copy at a multiple of 16 floats, after up to 15 unused ones: whole 64-byte lines)
    length = int(re.search(r"%padded = memref.reinterpret_cast %arena .* to memref<2x\d+x(\d+)xf32", loops).group(1))
    assert length % 16 == 0 and need <= length < need + 32, (length, need)
    loops_over_f = re.findall(r"scf.for %f\S* = ", loops)
    assert len(loops_over_f) == len(irt_nn_lowering.column_chunks(hw[0] * hw[1]))
    assert "arith.select" in loops and "iter_args" not in loops


@pytest.mark.parametrize("channels,batch", [(37, 2), (384, 1)])
def test_depthwise_flat_planes_in_chunks_of_channels(channels, batch):
    """`_depthwise_flat` copies every plane of a parallel iteration's chunk of channels (more
    channels than chunks, not evenly split) before computing any: each computes from its own."""
    model = nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1, groups=channels), nn.BatchNorm2d(channels),
                          nn.ReLU6()).eval()
    with torch.no_grad():
        model[1].running_mean.uniform_(-1, 1)
        model[1].running_var.uniform_(0.5, 2)
    x = torch.randn(batch, channels, 7, 7)
    x[0, 0, 0, 0], x[-1, -1, 6, 6] = float("nan"), float("inf")
    cm = irc.compile(model, (x,), fallback=False)
    with torch.no_grad():
        torch.testing.assert_close(cm(x), model(x), equal_nan=True)
    assert "%valid" in cm.ir("loops")


def test_depthwise_column_chunks():
    """Whole vectors at 16, 8 and 4 lanes: a prefix of C-column vectors and one overlapping tail
    of a power of two columns, together exactly [0, width)."""
    assert irt_nn_lowering.column_chunks(28) == [(0, 16), (12, 28)]
    assert irt_nn_lowering.column_chunks(14) == [(0, 8), (6, 14)]
    assert irt_nn_lowering.column_chunks(56) == [(0, 48), (48, 56)]
    assert irt_nn_lowering.column_chunks(9) == [(0, 8), (5, 9)]  # a tail of one column takes 4 lanes
    assert irt_nn_lowering.column_chunks(64) == [(0, 64)]
    for width in range(1, 80):
        ranges = irt_nn_lowering.column_chunks(width)
        covered = set().union(*(range(lo, hi) for lo, hi in ranges))
        assert covered == set(range(width)), width
        for lo, hi in ranges:
            n = hi - lo
            assert n % 16 == 0 or n & (n - 1) == 0, (width, ranges)  # whole vectors at 4, 8 and 16 lanes when n >= 4


def test_depthwise_conv_residual_epilogue():
    """A residual add after a depthwise conv fuses into its epilogue (read per column)."""

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.dw = nn.Conv2d(6, 6, 3, padding=1, groups=6)

        def forward(self, x):
            return torch.relu(self.dw(x) + x)

    cm = check(Block(), torch.randn(2, 6, 9, 11))
    assert kernels(cm) == ["irt.conv2d (irt.conv2d + irt.add + irt.relu) -> 2x6x9x11"]


def _sequential_depthwise(x, w, b, stride, pad):
    """Each output as the scalar nest sums it: bias, then every in-bounds tap in (kh, kw) order,
    each product and sum rounded to float32 (numpy, over all outputs at once)."""
    n, c, h, wd = x.shape
    k = w.shape[-1]
    oh, ow = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    acc = np.broadcast_to(b[None, :, None, None], (n, c, oh, ow)).astype(np.float32).copy()
    rows, cols = np.arange(oh) * stride - pad, np.arange(ow) * stride - pad
    for i in range(k):
        for j in range(k):
            r, q = rows + i, cols + j
            ok_r, ok_c = (r >= 0) & (r < h), (q >= 0) & (q < wd)
            tap = x[:, :, r.clip(0, h - 1)][:, :, :, q.clip(0, wd - 1)] * w[None, :, 0, i, j, None, None]
            add = (acc + tap.astype(np.float32)).astype(np.float32)
            acc = np.where(ok_r[:, None] & ok_c[None, :], add, acc)
    return acc


@pytest.mark.parametrize("k,stride,pad,hw", [(3, 1, 1, (11, 13)), (5, 2, 2, (11, 13)), (7, 1, 3, (11, 13)),
                                             (7, 1, 3, (17, 29))])
def test_depthwise_conv_strict_is_sequential_and_bit_exact(monkeypatch, k, stride, pad, hw):
    """Strict builds run the same nest; every output sums bias then its taps in order, bit for bit
    (a 7x7 on 17x29, which other builds give the row blocks, included)."""
    monkeypatch.setenv("IRC_STRICT", "1")
    torch.manual_seed(1)
    conv = nn.Conv2d(5, 5, k, stride=stride, padding=pad, groups=5).eval()
    x = torch.randn(2, 5, *hw)
    cm = irc.compile(nn.Sequential(conv), (x,), fallback=False)
    expected = _sequential_depthwise(x.numpy(), conv.weight.detach().numpy(), conv.bias.detach().numpy(), stride, pad)
    with torch.no_grad():
        assert np.array_equal(cm(x).numpy(), expected)


# --- batch norm -----------------------------------------------------------------------------


def _bn(cls, c, **kw):
    return randomize_batch_norms(cls(c, **kw)).eval()


@FUSE
@pytest.mark.parametrize(
    "make,shape",
    [
        (lambda: _bn(nn.BatchNorm1d, 5), (3, 5)),
        (lambda: _bn(nn.BatchNorm1d, 4), (2, 4, 7)),
        (lambda: _bn(nn.BatchNorm2d, 3), (1, 3, 4, 5)),
        (lambda: _bn(nn.BatchNorm2d, 1, eps=1e-3), (2, 1, 3, 3)),
        (lambda: nn.BatchNorm2d(3, affine=False).eval(), (1, 3, 2, 2)),
    ],
    ids=["1d-2D", "1d-3D", "2d", "2d-eps", "2d-no-affine"],
)
def test_batch_norm_matches_eager(make, shape, fuse):
    check(make(), torch.randn(shape), fuse=fuse)


def test_functional_batch_norm():
    mean, var, w, b = torch.randn(4), torch.rand(4) + 0.5, torch.randn(4), torch.randn(4)
    check(lambda x: F.batch_norm(x, mean * 1.0, var * 1.0, w * 1.0, b * 1.0, training=False, eps=1e-4),
          torch.randn(2, 4, 3, 3))


def test_batch_norm_in_training_mode_is_explained():
    with pytest.raises(irc.UnsupportedOpError, match=r"call model\.eval\(\)"):
        irc.compile(nn.Sequential(nn.BatchNorm2d(3)), (torch.randn(2, 3, 4, 4),), fallback=False)


# --- pooling --------------------------------------------------------------------------------


@FUSE
@pytest.mark.parametrize(
    "pool,hw",
    [
        (nn.MaxPool2d(3, 2, 1), (9, 12)),
        (nn.MaxPool2d(2), (7, 5)),
        (nn.MaxPool2d(3, 2, 1, ceil_mode=True), (8, 11)),
        (nn.MaxPool2d((2, 3), (1, 2), (1, 1), dilation=(2, 1)), (6, 7)),
        (nn.MaxPool2d(3, 2, 0, ceil_mode=True), (6, 6)),
        (nn.AvgPool2d(2), (6, 7)),
        (nn.AvgPool2d(3, 2, 1), (7, 8)),
        (nn.AvgPool2d(3, 2, 1, count_include_pad=False), (7, 8)),
        (nn.AvgPool2d(3, 2, 1, ceil_mode=True), (8, 9)),
        (nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False), (8, 9)),
        (nn.AvgPool2d((2, 3), 3, 0, ceil_mode=True), (7, 10)),
        (nn.AdaptiveAvgPool2d(1), (7, 7)),
        (nn.AdaptiveAvgPool2d((3, 2)), (7, 5)),
        (nn.AdaptiveAvgPool2d((4, None)), (10, 3)),
        (nn.AdaptiveAvgPool2d(5), (3, 4)),  # output larger than the input: overlapping windows
    ],
    ids=lambda v: repr(v).replace(" ", "") if isinstance(v, nn.Module) else "x".join(map(str, v)),
)
def test_pooling_matches_eager(pool, hw, fuse):
    check(pool, torch.randn(1, 3, *hw), fuse=fuse)


@FUSE
@pytest.mark.parametrize("shape", [(1, 64, 8, 8), (2, 3, 7, 7), (2, 5, 1, 33), (1, 4, 33, 1), (3, 2, 17, 19)])
def test_global_average_pool_sums_each_plane_as_one_row(shape, fuse):
    """AdaptiveAvgPool2d(1), a global average pool: each plane's H*W contiguous elements summed in
    one reduction (a [N, C, 1, H*W] view), not row by row; strict builds in (ih, iw) order, bit for
    bit as a sequential float32 sum."""
    n, c, h, w = shape
    x = torch.randn(*shape)
    cm = check(nn.AdaptiveAvgPool2d(1), x, fuse=fuse)
    assert f"memref<{n}x{c}x1x{h * w}xf32>" in cm.ir("loops")


def test_global_average_pool_strict_is_sequential(monkeypatch):
    monkeypatch.setenv("IRC_STRICT", "1")
    x = torch.randn(2, 3, 9, 11)
    m = nn.Sequential(nn.ReLU(), nn.AdaptiveAvgPool2d(1))  # the pool's input an intermediate buffer
    cm = irc.compile(m, (x,), fallback=False)
    planes = torch.relu(x).reshape(2, 3, 99).numpy()
    expected = np.empty((2, 3, 1, 1), dtype=np.float32)
    for i in range(2):
        for j in range(3):
            acc = np.float32(0)
            for v in planes[i, j]:
                acc = np.float32(acc + v)
            expected[i, j] = np.float32(acc / np.float32(99))
    assert np.array_equal(cm(x).numpy(), expected)


def test_functional_pooling_and_unbatched():
    check(lambda x: F.max_pool2d(x, 3, 1, 1) + F.avg_pool2d(x, 3, 1, 1, count_include_pad=False), torch.randn(1, 2, 5, 6))
    check(lambda x: F.adaptive_avg_pool2d(x, (2, 3)), torch.randn(2, 3, 5, 7))
    check(nn.MaxPool2d(2), torch.randn(3, 6, 4))  # C x H x W


def test_max_pool_propagates_nan_and_ignores_padding():
    x = -torch.rand(1, 1, 4, 4) - 1  # all negative: a zero from the padding would win
    x[0, 0, 0, 0] = float("nan")
    check(nn.MaxPool2d(3, 1, 1), x, equal_nan=True)


POOLS = [  # (pool, input N x C x H x W): odd sizes, ragged vector tails, every border kind
    (nn.MaxPool2d(3, 2, 1), (1, 5, 13, 17)),
    (nn.MaxPool2d(3, 2, 1), (1, 3, 32, 32)),  # DenseNet's stem pool, fewer channels
    (nn.MaxPool2d(3, 1, 1), (2, 3, 9, 33)),  # stride 1, 33 columns: a one-column tail at 16 lanes
    (nn.MaxPool2d(2), (1, 4, 7, 9)),  # floor: the last input row and column unused
    (nn.MaxPool2d(2, 2, 0, ceil_mode=True), (1, 3, 7, 9)),
    (nn.MaxPool2d(5, 2, 2, ceil_mode=True), (1, 3, 12, 18)),
    (nn.MaxPool2d(3, 2, 0, ceil_mode=True), (1, 3, 10, 21)),
    (nn.MaxPool2d(3, 2, 1, dilation=2), (1, 3, 11, 19)),
    (nn.MaxPool2d((2, 5), (3, 1), (1, 2)), (1, 2, 8, 23)),  # non-square kernel, stride, padding
    (nn.MaxPool2d(5, 1, 2), (1, 2, 4, 4)),  # kernel larger than the input: no interior row
    (nn.MaxPool2d(4, 4, 1, ceil_mode=True), (1, 2, 17, 35)),  # stride 4, the widest vectorized read
    (nn.MaxPool2d(2, 5), (1, 2, 11, 26)),  # stride 5: the horizontal pass stays scalar
    (nn.AvgPool2d(2), (1, 7, 16, 16)),  # DenseNet's transition pool, fewer channels
    (nn.AvgPool2d(3, 2, 1), (2, 3, 13, 17)),
    (nn.AvgPool2d(3, 1, 1, count_include_pad=False), (1, 3, 9, 33)),
    (nn.AvgPool2d(3, 2, 1, ceil_mode=True), (1, 3, 10, 20)),
    (nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False), (1, 3, 10, 20)),
    (nn.AvgPool2d(5, 2, 2, count_include_pad=False), (1, 2, 11, 19)),
    (nn.AvgPool2d((2, 3), (1, 2), (1, 1), ceil_mode=True), (1, 2, 6, 15)),
    (nn.AvgPool2d(2, 2, 0, ceil_mode=True), (1, 3, 7, 9)),
]
WIDTHS = pytest.mark.parametrize("width", [4, 8, 16])


def _at_width(width: int):
    """The host's Target at `width` float lanes (skips the test if the host has fewer)."""
    from irc.target import Target

    host = Target.host()
    if width > host.vector_width:
        pytest.skip(f"the host's vectors hold {host.vector_width} floats")
    return host.replace(vector_width=width)


def _pool_id(v):
    return repr(v).replace(" ", "") if isinstance(v, nn.Module) else "x".join(map(str, v))


@WIDTHS
@pytest.mark.parametrize("pool,shape", POOLS, ids=_pool_id)
def test_pooling_at_every_vector_width(pool, shape, width):
    """The separable pooling nest (rows of the window, then its columns, from a padded row) at
    16, 8 and 4 lanes: its loops have constant bounds and no loop carries an accumulator."""
    x = torch.randn(shape)
    model = nn.Sequential(pool).eval()
    cm = irc.compile(model, (x,), fallback=False, target=_at_width(width))
    torch.testing.assert_close(cm(x), model(x))
    loops = cm.ir("loops")
    assert "iter_args" not in loops and "window_rows" in loops


@WIDTHS
@pytest.mark.parametrize("pool", [nn.MaxPool2d(3, 2, 1), nn.MaxPool2d(2, 2, 0, ceil_mode=True), nn.AvgPool2d(3, 2, 1)],
                         ids=_pool_id)
def test_pooling_nan_and_inf_at_every_vector_width(pool, width):
    """NaN propagates from any tap (corners, borders, vector tails, interior); a window of -inf
    (a whole plane) is -inf, not a padding value; inf - inf in an average is NaN, as eager."""
    x = torch.randn(1, 3, 11, 19)
    for r, c in [(0, 0), (0, 18), (10, 0), (10, 18), (5, 9), (4, 16), (7, 17)]:
        x[0, 0, r, c] = float("nan")
    x[0, 1] = float("-inf")
    x[0, 2, 3, 4], x[0, 2, 3, 5], x[0, 2, 8, 12] = float("inf"), float("-inf"), float("inf")
    model = nn.Sequential(pool).eval()
    cm = irc.compile(model, (x,), fallback=False, target=_at_width(width))
    torch.testing.assert_close(cm(x), model(x), equal_nan=True)


@pytest.mark.parametrize(
    "pool,shape",
    [
        (nn.MaxPool2d(3, 2, 1), (1, 20, 40, 33)),  # 20 interior rows: two blocks of 8 and one of 2
        (nn.MaxPool2d(3, 1, 1), (2, 11, 19, 17)),  # 17 interior rows (8 + 8 + 1), two images
        (nn.MaxPool2d(3, 2, 1, dilation=2), (1, 9, 23, 21)),  # borders of two rows at each end
        (nn.AvgPool2d(3, 2, 1, count_include_pad=False), (1, 20, 33, 30)),
        (nn.AvgPool2d(5, 3, 2, ceil_mode=True), (1, 17, 29, 26)),
        (nn.MaxPool2d(2), (1, 20, 18, 18)),  # windows that tile the row: one row at a time
    ],
    ids=_pool_id,
)
def test_pooling_in_blocks_of_rows_over_chunks_of_channels(pool, shape):
    """`separable_pool` runs each pass over a block of output rows before the other, in a buffer
    of rows per chunk of channels (more channels than the chunks, and rows that the blocks do
    not divide evenly): NaN and inf anywhere still come out as eager's."""
    x = torch.randn(shape)
    x[0, 0, 0, 0], x[0, -1, -1, -1], x[0, 5, 7, 3] = float("nan"), float("inf"), float("-inf")
    x[-1, 3, shape[2] // 2, shape[3] - 2] = float("nan")
    model = nn.Sequential(pool).eval()
    cm = irc.compile(model, (x,), fallback=False)
    torch.testing.assert_close(cm(x), model(x), equal_nan=True)
    loops = cm.ir("loops")
    assert "window_rows" in loops and "iter_args" not in loops


def test_strict_max_pool_keeps_eager_s_first_of_equal_values(monkeypatch):
    """Strict builds take each window's taps in (kh, kw) order and keep the first of equal values
    as eager does, so -0 and +0 come out with eager's signs (bit for bit)."""
    monkeypatch.setenv("IRC_STRICT", "1")
    signs = torch.rand(1, 3, 7, 9, generator=torch.Generator().manual_seed(0)) < 0.5
    x = torch.where(signs, -0.0, 0.0)  # windows of +0 and -0 in every order
    assert 0 < int(torch.signbit(x).sum()) < x.numel()
    model = nn.Sequential(nn.MaxPool2d(3, 2, 1, ceil_mode=True)).eval()
    cm = irc.compile(model, (x,), fallback=False)
    assert torch.equal(torch.signbit(cm(x)), torch.signbit(model(x)))


def test_pooling_options_irc_lacks_are_refused():
    with pytest.raises(irc.UnsupportedOpError, match="return_indices"):
        irc.compile(nn.Sequential(nn.MaxPool2d(2, return_indices=True)), (torch.randn(1, 1, 4, 4),), fallback=False)
    with pytest.raises(irc.UnsupportedOpError, match="divisor_override"):
        irc.compile(nn.Sequential(nn.AvgPool2d(2, divisor_override=3)), (torch.randn(1, 1, 4, 4),), fallback=False)


# --- fusion ---------------------------------------------------------------------------------


def conv_bn(act=None, bias=False):
    layers = [nn.Conv2d(3, 8, 3, padding=1, bias=bias), nn.BatchNorm2d(8)] + ([act] if act else [])
    return randomize_batch_norms(nn.Sequential(*layers)).eval()


@pytest.mark.parametrize("bias", [False, True], ids=["no-bias", "bias"])
@pytest.mark.parametrize("act", [None, nn.ReLU(), nn.ReLU6(), nn.SiLU()], ids=["none", "relu", "relu6", "silu"])
def test_conv_bn_act_is_one_kernel_with_folded_weights(act, bias):
    m = conv_bn(act, bias)
    cm = check(m, torch.randn(1, 3, 7, 6))
    names = ["irt.conv2d", "irt.batch_norm"] + ([f"irt.{type(act).__name__.lower()}"] if act else [])
    assert kernels(cm) == [f"irt.conv2d ({' + '.join(names)}) -> 1x8x7x6"]
    assert "sqrt" not in kernel_code(cm)  # the batch norm was folded into the weights at compile time
    assert "batch_norm" not in re.sub(r'irc\.fused = \[[^]]*\]', "", cm.ir("fused"))


def test_folded_batch_norm_follows_running_stats_updated_in_place():
    """The fold is redone before the next call when a source tensor changes in place (its
    `_version` moves); the unfused module reads the stats live."""
    m, x = conv_bn(nn.ReLU()), torch.randn(1, 3, 5, 5)
    folded, unfused = irc.compile(m, (x,)), irc.compile(m, (x,), fuse=False)
    with torch.no_grad():
        m[1].running_mean.add_(1.0)
        m[0].weight.mul_(0.5)
        after = m(x)
    torch.testing.assert_close(folded(x), after)
    torch.testing.assert_close(unfused(x), after)


def test_conv_with_two_users_is_not_folded():
    class TwoUsers(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.bn = nn.Conv2d(3, 4, 3, padding=1), randomize_batch_norms(nn.BatchNorm2d(4))

        def forward(self, x):
            y = self.conv(x)
            return torch.relu(self.bn(y)) + y

    cm = check(TwoUsers(), torch.randn(1, 3, 6, 6))
    # Not folded into the weights (the other user needs the conv's own output): the BN is
    # computed per element in the epilogue, after relu(bn(y)) + y became one elementwise op that
    # reads y twice; its gamma / sqrt(var + eps) is folded at compile time (irc-fold-params).
    assert "folded_weight" not in cm.ir("fused") and "param_math" in cm.ir("fused")
    assert "sqrt" not in kernel_code(cm)
    assert kernels(cm) == ["irt.conv2d (irt.conv2d + irt.batch_norm + irt.relu + irt.add) -> 1x4x6x6"]


def test_conv_residual_relu_fuses_into_the_conv():
    class Res(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(4, 4, 3, padding=1)

        def forward(self, x):
            return torch.relu(self.conv(x) + x)

    cm = check(Res(), torch.randn(1, 4, 5, 5))
    assert kernels(cm) == ["irt.conv2d (irt.conv2d + irt.add + irt.relu) -> 1x4x5x5"]


# --- the verifier ---------------------------------------------------------------------------


def test_conv_verifier_names_op_and_shapes():
    from xdsl.dialects.builtin import TensorType, f32
    from xdsl.ir import Block
    from xdsl.utils.exceptions import VerifyException

    block = Block(arg_types=[TensorType(f32, [1, 3, 8, 8]), TensorType(f32, [4, 2, 3, 3])])
    op = irt_nn.Conv2dOp(block.args[0], block.args[1], None, TensorType(f32, [1, 4, 6, 6]))
    with pytest.raises(VerifyException, match=r"irt.conv2d: weight 4x2x3x3 expects 2 input channels .* input 1x3x8x8 has 3"):
        op.verify()


# --- models ---------------------------------------------------------------------------------


@FUSE
def test_cnn_matches_eager(fuse):
    model, inputs = get_model("cnn").build()
    cm = check(model, *inputs, fuse=fuse)
    if fuse:
        assert kernels(cm)[:3] == [
            "irt.conv2d (irt.conv2d + irt.batch_norm + irt.relu) -> 1x16x32x32",
            "irt.conv2d (irt.conv2d + irt.batch_norm + irt.relu) -> 1x32x16x16",
            "irt.max_pool2d -> 1x32x8x8",
        ]


@pytest.fixture(scope="module")
def resnet18():
    return get_model("resnet18").build()


def test_resnet18_fused_matches_eager_with_folded_batch_norms(resnet18):
    """Default float32 tolerances hold (measured max abs error ~1.7e-6 on logits up to ~6)."""
    model, inputs = resnet18
    cm = check(model, *inputs)
    ks = kernels(cm)
    assert not any("batch_norm" in k and "conv2d" not in k for k in ks), "every BN folds into its conv"
    assert "sqrt" not in kernel_code(cm)
    conv_kernels = [k for k in ks if k.startswith("irt.conv2d")]
    assert len(conv_kernels) == 20  # 1 stem + 16 block convs + 3 downsamples: one kernel each
    bn_relu = "irt.conv2d (irt.conv2d + irt.batch_norm + irt.relu)"
    residual = "irt.conv2d (irt.conv2d + irt.batch_norm + irt.add + irt.relu)"
    assert sum(k.startswith(bn_relu) for k in ks) == 9  # stem + first conv of each of the 8 blocks
    assert sum(k.startswith(residual) for k in ks) == 8  # second conv of each block, with the skip
    assert ks[1] == "irt.max_pool2d -> 1x64x56x56"
    assert len(ks) == 23  # 20 convs, max pool, adaptive avg pool, fc


def test_resnet18_unfused_matches_eager(resnet18):
    model, inputs = resnet18
    cm = check(model, *inputs, fuse=False)
    assert sum("irt.batch_norm" in k for k in kernels(cm)) == 20


# --- the modern CNNs (irc/models/modern_cnn.py) ---------------------------------------------


@pytest.fixture(scope="module")
def mobilenet_v2():
    return get_model("mobilenet-v2").build()


def test_mobilenet_v2_matches_eager_with_vectorized_depthwise_convs(mobilenet_v2):
    model, inputs = mobilenet_v2
    cm = check(model, *inputs)
    ks = kernels(cm)
    assert not any("batch_norm" in k and "conv2d" not in k for k in ks), "every BN folds into its conv"
    # stem + 7 expand convs + 8 depthwise convs + head, each with its BN folded and ReLU6 fused
    assert sum(k.startswith("irt.conv2d (irt.conv2d + irt.batch_norm + irt.relu6)") for k in ks) == 17
    assert sum("irt.add" in k for k in ks) == 4  # the residual adds fuse into the project convs
    loops = cm.ir("loops")
    assert len(re.findall(r"%padded\S* = memref.reinterpret_cast", loops)) == 8  # the depthwise convs: the row-wise nest


def test_mobilenet_v2_unfused_matches_eager(mobilenet_v2):
    model, inputs = mobilenet_v2
    check(model, *inputs, fuse=False)


@FUSE
def test_densenet_matches_eager(fuse):
    model, inputs = get_model("densenet").build()
    cm = check(model, *inputs, fuse=fuse)
    if fuse:
        # every dense layer's input and new channels are computed in place in the block's last
        # concatenation (tests/test_concat_in_place.py): no copies (there were 16)
        assert sum(k.startswith("irt.concat") for k in kernels(cm)) == 0


@FUSE
def test_convnext_matches_eager(fuse):
    model, inputs = get_model("convnext").build()
    cm = check(model, *inputs, fuse=fuse)
    if fuse:
        padded_planes = re.findall(r"%padded\S* = memref.reinterpret_cast", cm.ir("loops"))
        assert len(padded_planes) == 4  # the four 7x7 depthwise convs: the row-wise nest


CONV1D = {  # (module, input shape): conv1d as a conv2d of height 1
    "3 taps": (lambda: nn.Conv1d(6, 8, 3), (2, 6, 20)),
    "stride 2, padding 2": (lambda: nn.Conv1d(6, 8, 5, stride=2, padding=2), (2, 6, 21)),
    "depthwise causal pad (Mamba)": (lambda: nn.Conv1d(6, 6, 4, padding=3, groups=6), (1, 6, 33)),
    "same, dilated, groups": (lambda: nn.Conv1d(6, 12, 3, padding="same", dilation=2, groups=3), (2, 6, 17)),
    "valid, no bias, unbatched": (lambda: nn.Conv1d(6, 8, 3, padding="valid", bias=False), (6, 19)),
    "1 tap": (lambda: nn.Conv1d(64, 40, 1), (1, 64, 50)),
    "with batch norm and relu": (lambda: nn.Sequential(nn.Conv1d(16, 32, 3, padding=1), nn.BatchNorm1d(32), nn.ReLU(),
                                                       nn.Conv1d(32, 8, 5, stride=3)), (2, 16, 40)),
}


@pytest.mark.parametrize("name", sorted(CONV1D))
def test_conv1d_matches_eager(name):
    make, shape = CONV1D[name]
    m = make().eval()
    if isinstance(m, nn.Sequential):
        randomize_batch_norms(m)
    check(m, torch.randn(shape))


def test_functional_conv1d_on_run_time_weights():
    f = lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, groups=2)  # noqa: E731
    check(f, torch.randn(2, 4, 15), torch.randn(6, 2, 3), torch.randn(6))


GROUP_NORMS = {  # (module, input shape)
    "4 groups of 4 channels, 2-D": (lambda: nn.GroupNorm(4, 16), (2, 16, 5, 7)),
    "one group (layer norm over C x L)": (lambda: nn.GroupNorm(1, 8), (3, 8, 10)),
    "a group per channel, no affine": (lambda: nn.GroupNorm(8, 8, affine=False), (2, 8, 4, 4)),
    "no spatial dims, eps": (lambda: nn.GroupNorm(2, 6, eps=1e-3), (2, 6)),
    "after a conv, before SiLU (diffusion)": (lambda: nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.GroupNorm(8, 32),
                                                                    nn.SiLU()), (2, 3, 9, 9)),
}


@pytest.mark.parametrize("name", sorted(GROUP_NORMS))
def test_group_norm_matches_eager(name):
    make, shape = GROUP_NORMS[name]
    m = make().eval()
    with torch.no_grad():
        for p in m.parameters():
            p.normal_()
    check(m, torch.randn(shape) * 2 + 1)


def test_functional_group_norm_on_run_time_affine():
    f = lambda x, w, b: F.group_norm(x, 3, w, b)  # noqa: E731
    check(f, torch.randn(2, 6, 5), torch.randn(6), torch.randn(6))

"""The GEMM engine (lowering/to_loops/gemm.py, lowering/cpp/gemm.py) against eager: ragged tile
edges, K in several KC steps, every B layout, epilogue operands read per row, column or both,
convolutions through im2col or read in place (stride 1) and attention through two GEMMs per block of queries."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess

import pytest
import torch
import torch.nn.functional as F
from irc_testing import check, target_env
from torch import nn

import irc
from irc.lowering.cpp.headers import INCLUDE_DIR
from irc.lowering.to_loops.gemm import A_BLOCK_BYTES, KC_MAX, KC_MIN, NC_MAX, blocking, choose_tiles


@pytest.fixture(autouse=True)
def _no_winograd(monkeypatch):
    """These tests are the im2col, direct and pixels layouts': the 3x3 stride-1 convs among them
    that would run as Winograd (`tests/test_winograd.py`) take those layouts instead."""
    monkeypatch.setenv("IRC_WINOGRAD", "0")

torch.manual_seed(0)


def _gemm_kernels(cm) -> int:
    """Calls of the engine in the generated functions (not its definition)."""
    return len(re.findall(r"^\s+(irc_gemm|irc_conv_direct<\d+>|irc_conv_pixels<[^(]*>)\(\d", cm.cpp_source, re.M))


# M: one row, a ragged 6-row tile, several tiles; N: ragged 16-column panels; K: one KC step or more.
SHAPES = [(1, 1, 1), (1, 17, 7), (5, 16, 321), (7, 33, 700), (13, 520, 64), (130, 40, 333)]


@pytest.mark.parametrize("m,n,k", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
def test_linear_relu_on_packed_weights(m, n, k):
    model = nn.Sequential(nn.Linear(k, n), nn.ReLU()).eval()
    cm = check(model, torch.randn(m, k))
    assert "irc_prepacked" in cm.cpp_source and _gemm_kernels(cm) == 1


@pytest.mark.parametrize("m,n,k", SHAPES[1:], ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES[1:]])
def test_runtime_operands_in_both_layouts(m, n, k):
    # scaled so that results are O(1), as a layer's are: the default float32 tolerances then
    # hold whatever order the K products are summed in
    a, b = torch.randn(m, k), torch.randn(k, n) / k**0.5
    cm = check(lambda x, y: torch.relu(x @ y), a, b)
    assert "irc_dense<IRC_NR, true>" in cm.cpp_source  # [K, N] packed on the fly
    cm = check(lambda x, y: x @ y.t() * 0.5, a, b.t().contiguous())
    assert "irc_dense<IRC_NR, false>" in cm.cpp_source  # [N, K] packed on the fly


class Epilogues(nn.Module):
    """A residual read per element, a per-row scale read per row, a bias per column, GELU."""

    def __init__(self, k: int, n: int):
        super().__init__()
        self.fc = nn.Linear(k, n)

    def forward(self, x, residual, row_scale):
        return F.gelu(self.fc(x) + residual) * row_scale


@pytest.mark.parametrize("batch", [(9,), (2, 5)])
def test_epilogue_operands_per_row_column_and_element(batch):
    k, n = 40, 37
    m = Epilogues(k, n).eval()
    x, res, scale = torch.randn(*batch, k), torch.randn(*batch, n), torch.randn(*batch, 1)
    cm = check(m, x, res, scale)
    assert _gemm_kernels(cm) == 1, cm.cpp_source  # gelu, the residual and the scale: one epilogue
    assert "irc_splat<V>(" in cm.cpp_source  # the per-row scale is one value for 8 columns


class RowScaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(24, 40)

    def forward(self, x, s):
        return torch.relu(self.fc(x)) * s


def test_a_per_row_epilogue_operand_keeps_the_sign_of_zero():
    """A per-row operand is broadcast over the row's columns (`irc_splat`). It was 0 + x, which
    turns -0.0 into +0.0: relu(x W^T) * -0.0 came out +0.0 where eager gives -0.0 (and -0.0 where
    eager gives +0.0 for a negative product). assert_close cannot see a zero's sign; signbit can."""
    torch.manual_seed(0)
    m = RowScaled().eval()
    x = torch.randn(13, 24)
    s = torch.where(torch.arange(13).unsqueeze(1) % 2 == 0, -0.0, 1.0).float()
    cm = irc.compile(m, (x, s), fallback=False)
    assert "irc_splat<V>(" in cm.cpp_source
    with torch.no_grad():
        out, expected = cm(x, s), m(x, s)
    torch.testing.assert_close(out, expected)
    assert torch.equal(torch.signbit(out), torch.signbit(expected))


def test_epilogue_broadcast_over_batch_only_keeps_scalar_loops():
    """[T, N] against [B, T, N] is not affine in the flattened row: the scalar nest, still right."""
    m = Epilogues(8, 5).eval()
    cm = check(m, torch.randn(2, 3, 8), torch.randn(3, 5), torch.randn(2, 3, 1))
    assert _gemm_kernels(cm) == 0


CONVS = {
    "3x3-pad": dict(cin=8, cout=12, k=3, stride=1, pad=1, dil=1, groups=1, hw=(9, 7)),
    "stride2": dict(cin=6, cout=12, k=3, stride=2, pad=1, dil=1, groups=1, hw=(11, 10)),
    "stem7x7": dict(cin=3, cout=8, k=7, stride=2, pad=3, dil=1, groups=1, hw=(32, 30)),
    "1x1": dict(cin=16, cout=32, k=1, stride=1, pad=0, dil=1, groups=1, hw=(12, 12)),
    "dilated": dict(cin=4, cout=6, k=3, stride=1, pad=2, dil=2, groups=1, hw=(8, 8)),
    "groups": dict(cin=8, cout=12, k=3, stride=1, pad=1, dil=1, groups=2, hw=(6, 6)),
    "groups-8": dict(cin=4, cout=16, k=3, stride=1, pad=1, dil=1, groups=2, hw=(6, 6)),  # 8 rows a group: not packed
    "deep-K": dict(cin=64, cout=7, k=3, stride=1, pad=0, dil=1, groups=1, hw=(4, 30)),  # K = 576: two KC steps
    # K = 333 in two steps of 167: the second starts at channel 18, tap 5 (im2col is walked tap-major)
    "K-mid-channel": dict(cin=37, cout=6, k=3, stride=2, pad=1, dil=1, groups=1, hw=(7, 9)),
    # stride 1 reads the image in place (irc_conv_direct): virtual columns oh*W + ow, the last
    # tile ragged and packed; rows of 41 columns that tiles of 16/32 straddle; a rectangular
    # kernel with its own paddings; padding on one axis
    "1x1-ragged": dict(cin=16, cout=24, k=1, stride=1, pad=0, dil=1, groups=1, hw=(7, 13)),
    # a ragged last tile of at most one vector's columns runs one vector per row
    # (irc_accumulate_half): 196 = 6 x 32 + 4 and 12 x 16 + 4, a ragged panel of 13 = 6 + 6 + 1 rows
    "1x1-half-tile": dict(cin=32, cout=13, k=1, stride=1, pad=0, dil=1, groups=1, hw=(14, 14)),
    "wide": dict(cin=5, cout=13, k=3, stride=1, pad=1, dil=1, groups=1, hw=(23, 41)),
    # output rows a multiple of the panel width (16 and 32): tiles in rows, dropped columns skipped
    "rows-of-32": dict(cin=3, cout=16, k=3, stride=1, pad=1, dil=1, groups=1, hw=(19, 32)),
    "rows-of-32-s2": dict(cin=4, cout=13, k=3, stride=2, pad=1, dil=1, groups=1, hw=(11, 64)),
    "3x5": dict(cin=8, cout=12, k=(3, 5), stride=1, pad=(1, 2), dil=1, groups=1, hw=(10, 17)),
    "pad-h-only": dict(cin=6, cout=7, k=3, stride=1, pad=(1, 0), dil=(1, 2), groups=1, hw=(9, 12)),
    # strided, overlapping windows: read in place from phase planes (a 2x1 stride: two of them;
    # a dilated 3x3 with stride 3, whose taps 0, 2, 4 fall in phases 0, 2, 1)
    "5x5-s2": dict(cin=5, cout=8, k=5, stride=2, pad=2, dil=1, groups=1, hw=(13, 17)),
    "s2x1": dict(cin=4, cout=9, k=3, stride=(2, 1), pad=1, dil=1, groups=1, hw=(11, 14)),
    "s3-dilated": dict(cin=3, cout=6, k=3, stride=3, pad=2, dil=2, groups=1, hw=(16, 19)),
    "s2-dilated": dict(cin=4, cout=7, k=3, stride=2, pad=2, dil=2, groups=1, hw=(12, 13)),  # taps in phase 0 only
    # strided windows that do not overlap keep im2col: ResNet's downsample, a patchify stem
    "1x1-s2": dict(cin=16, cout=12, k=1, stride=2, pad=0, dil=1, groups=1, hw=(9, 11)),
    "patchify": dict(cin=3, cout=12, k=4, stride=4, pad=0, dil=1, groups=1, hw=(16, 20)),
}


# Output pixels as the register tile's rows (irc_conv_pixels, `conv_on_pixels`): small planes
# with a long K. Ragged channel panels (56 = 32 + 24, 62, 8 channels in a 32-wide panel), pixel
# counts that split into uneven tiles (49, 6, 42, 54, 1), stride 2, a dilated rectangular kernel
# with its own paddings, 1x1 convs (ResNet's strided downsample, which was im2col), one pixel.
PIXEL_CONVS = {
    "7x7-ragged-channels": dict(cin=64, cout=56, k=3, stride=1, pad=1, dil=1, groups=1, hw=(7, 7)),
    "tiny-plane": dict(cin=32, cout=8, k=3, stride=1, pad=1, dil=1, groups=1, hw=(2, 3)),
    "stride2": dict(cin=48, cout=64, k=3, stride=2, pad=1, dil=1, groups=1, hw=(13, 11)),
    "dilated-3x5": dict(cin=40, cout=62, k=(3, 5), stride=1, pad=(2, 4), dil=2, groups=1, hw=(6, 9)),
    "1x1-deep": dict(cin=384, cout=64, k=1, stride=1, pad=0, dil=1, groups=1, hw=(7, 7)),
    "1x1-s2": dict(cin=256, cout=96, k=1, stride=2, pad=0, dil=1, groups=1, hw=(14, 14)),
    "one-pixel": dict(cin=64, cout=70, k=3, stride=1, pad=1, dil=1, groups=1, hw=(1, 1)),
    # strides read from the (padded) image at oh*sH, ow*sW: no phase planes, so any stride
    "s2x1-unpadded": dict(cin=64, cout=32, k=3, stride=(2, 1), pad=0, dil=1, groups=1, hw=(9, 8)),
    "s3-dilated": dict(cin=64, cout=32, k=3, stride=3, pad=2, dil=2, groups=1, hw=(11, 13)),
    "s9": dict(cin=32, cout=32, k=3, stride=9, pad=1, dil=1, groups=1, hw=(20, 19)),
    # tiles of 12 (and 11) pixels, each inside one output row: broadcast from one pointer (RUN);
    # one panel, its pixels split between two threads
    "run-12": dict(cin=128, cout=64, k=3, stride=1, pad=1, dil=1, groups=1, hw=(3, 48)),
    "run-11": dict(cin=128, cout=64, k=3, stride=1, pad=1, dil=1, groups=1, hw=(3, 33)),
    "run-split": dict(cin=192, cout=32, k=3, stride=1, pad=1, dil=1, groups=1, hw=(6, 36)),
    # ... at column stride 2 (two output rows of 24 pixels) and 3 (three rows of 24)
    "run-s2": dict(cin=64, cout=64, k=3, stride=2, pad=1, dil=1, groups=1, hw=(4, 48)),
    "run-s3": dict(cin=64, cout=64, k=3, stride=(1, 3), pad=1, dil=1, groups=1, hw=(3, 70)),
    # rows cut into run tiles of their own (`pixel_run_rows`): 16 into 8 + 8, 13 into 7 + 6 (at
    # two threads a task's pixels start mid-row), a column of one pixel per row
    "rows-16": dict(cin=128, cout=32, k=3, stride=1, pad=1, dil=1, groups=1, hw=(5, 16)),
    "rows-13": dict(cin=96, cout=32, k=3, stride=1, pad=1, dil=1, groups=1, hw=(9, 13)),
    "rows-1": dict(cin=128, cout=32, k=3, stride=1, pad=1, dil=1, groups=1, hw=(9, 1)),
    # run tiles of at most half a vector of pixels (8 and 7 at AVX-512's width), one transpose for
    # both vectors of a whole panel's channels (irc_pixels_store_halves), a half-vector store or a
    # masked one
    "rows-15": dict(cin=128, cout=32, k=3, stride=1, pad=1, dil=1, groups=1, hw=(5, 15)),
    # rows that tiles of 14 cut evenly and tiles of 12 do not, cut into 14s (`pixel_run_rows`'s
    # `tall`; at two threads a task's pixels start mid-row, its first tiles up to 14 pixels read
    # through a pointer each): 28, 56 (stride 2 from 112), 42 (a 1x3)
    "rows-28": dict(cin=64, cout=64, k=3, stride=1, pad=1, dil=1, groups=1, hw=(5, 28)),
    "rows-56-s2": dict(cin=32, cout=32, k=3, stride=2, pad=1, dil=1, groups=1, hw=(7, 112)),
    "rows-42-1x3": dict(cin=96, cout=64, k=(1, 3), stride=1, pad=(0, 1), dil=1, groups=1, hw=(3, 42)),
    # edge rows skip the kernel rows that read padding alone (irc_row_taps): two at the top and
    # bottom of a 5x5 (one, then two kernel rows), rows of a 3x3 padded by 3 that read padding
    # alone (no taps at all), a 7-wide plane (two-row tiles, which skip none; its first row, the
    # panel's first tile, skips), dilation 2 with stride 2 (the top row alone skips)
    "edges-5x5": dict(cin=64, cout=64, k=5, stride=1, pad=2, dil=1, groups=1, hw=(6, 10)),
    "edges-pad-3": dict(cin=32, cout=32, k=3, stride=1, pad=3, dil=1, groups=1, hw=(4, 9)),
    "edges-7-wide": dict(cin=64, cout=32, k=3, stride=1, pad=1, dil=1, groups=1, hw=(6, 7)),
    "edges-dilated-s2": dict(cin=32, cout=32, k=3, stride=2, pad=2, dil=2, groups=1, hw=(11, 14)),
    # rows of one run tile each leave out the taps their first and last pixels read column padding
    # with (irc_cols): two pixels at each end (padding 2), the left end alone (stride 2), dilation
    # 2 (the second pixel from each end too), a 1x3 padded in its columns only
    "cols-pad-2": dict(cin=64, cout=32, k=3, stride=1, pad=2, dil=1, groups=1, hw=(5, 8)),
    "cols-s2-left": dict(cin=64, cout=32, k=3, stride=2, pad=1, dil=1, groups=1, hw=(9, 14)),
    "cols-dilated": dict(cin=64, cout=32, k=3, stride=1, pad=2, dil=2, groups=1, hw=(6, 9)),
    "cols-1x3": dict(cin=96, cout=64, k=(1, 3), stride=1, pad=(0, 1), dil=1, groups=1, hw=(4, 10)),
    # ... and rows of two run tiles, the first skipping the row's first pixels' taps, the second its
    # last pixels' (irc_cols<..., 0>): 16 = 8 + 8 with padding 2 (two pixels at each end), 14 = 7 + 7
    # in two-row tiles, dilation 2, stride 2 to 14 (the left end alone), a 1x3, one row (no pair)
    "halves-pad-2": dict(cin=64, cout=32, k=3, stride=1, pad=2, dil=1, groups=1, hw=(5, 14)),
    "halves-pairs": dict(cin=64, cout=64, k=3, stride=1, pad=1, dil=1, groups=1, hw=(7, 14)),
    "halves-dilated": dict(cin=64, cout=32, k=3, stride=1, pad=2, dil=2, groups=1, hw=(6, 16)),
    "halves-s2": dict(cin=48, cout=32, k=3, stride=2, pad=1, dil=1, groups=1, hw=(9, 28)),
    "halves-1x3": dict(cin=96, cout=32, k=(1, 3), stride=1, pad=(0, 1), dil=1, groups=1, hw=(4, 16)),
    "halves-one-row": dict(cin=64, cout=32, k=3, stride=1, pad=1, dil=1, groups=1, hw=(1, 16)),
    "halves-12": dict(cin=64, cout=32, k=3, stride=1, pad=1, dil=1, groups=1, hw=(5, 12)),  # 6 + 6 at 16-wide panels
}
COLS_CONVS = {"cols-pad-2", "cols-s2-left", "cols-dilated", "cols-1x3", "edges-7-wide", "7x7-ragged-channels"}
HALVES_CONVS = {"halves-pad-2", "halves-pairs", "halves-dilated", "halves-s2", "halves-1x3", "halves-one-row", "rows-16"}
TALL_ROWS = {"rows-28": 14, "rows-56-s2": 14, "rows-42-1x3": 14}  # RH at AVX-512's 32-wide panels


def _direct_conv(g: dict) -> bool:
    """Whether the engine reads the conv's image in place (lowering/to_loops/gemm.py): stride 1,
    or strided windows that overlap."""
    pair = lambda v: v if isinstance(v, tuple) else (v, v)  # noqa: E731
    (kh, kw), (sh, sw), (dh, dw) = pair(g["k"]), pair(g["stride"]), pair(g["dil"])
    return (sh, sw) == (1, 1) or (kh - 1) * dh >= sh or (kw - 1) * dw >= sw


@pytest.mark.parametrize("name", CONVS)
@pytest.mark.parametrize("batch", [1, 2])
def test_conv_bn_relu_residual_through_im2col(name, batch):
    g = CONVS[name]
    m = _conv_block(g)
    x = torch.randn(batch, g["cin"], *g["hw"])
    with torch.no_grad():
        res = torch.randn_like(m.conv(x))
    cm = check(m, x, res)
    assert ("irc_conv_direct<" if _direct_conv(g) else "irc_gemm(") in cm.cpp_source and _gemm_kernels(cm) == 1
    # packed at compile time, a group's rows in panels of their own (zero rows after a group
    # that is not a whole number of panels)
    assert "irc_prepacked<IRC_MR> irc_a" in cm.cpp_source


def _conv_block(g: dict) -> nn.Module:
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(g["cin"], g["cout"], g["k"], g["stride"], g["pad"], g["dil"], g["groups"])
            self.bn = nn.BatchNorm2d(g["cout"])
            self.bn.running_mean.uniform_(-1, 1)
            self.bn.running_var.uniform_(0.5, 2)

        def forward(self, x, res):
            return torch.relu(self.bn(self.conv(x)) + res)

    return Block().eval()


def test_a_ragged_one_vector_tile_sums_as_a_whole_tile():
    """A 1x1 conv's last 4 of 196 columns run in a one-vector ragged tile (irc_accumulate_half),
    which sums each column's products in a whole tile's order: the same bits as those columns of
    224, all in whole tiles."""
    conv = nn.Conv2d(48, 13, 1).eval()
    x = torch.randn(1, 48, 1, 224)
    whole = irc.compile(conv, (x,), fallback=False)
    ragged = irc.compile(conv, (x[..., :196],), fallback=False)
    with torch.no_grad():
        assert torch.equal(ragged(x[..., :196].contiguous()), whole(x)[..., :196])
        torch.testing.assert_close(whole(x), conv(x))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", PIXEL_CONVS)
@pytest.mark.parametrize("batch", [1, 2])
def test_conv_with_pixels_as_the_tiles_rows(name, batch, threads, monkeypatch):
    """Conv + BN + residual + ReLU in the pixels layout, its weights packed at compile time into
    panels of output channels; at two threads the panels (or, with one panel, the pixels) are
    split between the threads."""
    monkeypatch.setenv("IRC_NUM_THREADS", str(threads))
    g = PIXEL_CONVS[name]
    m = _conv_block(g)
    x = torch.randn(batch, g["cin"], *g["hw"])
    with torch.no_grad():
        res = torch.randn_like(m.conv(x))
    cm = check(m, x, res)
    assert "irc_conv_pixels<" in cm.cpp_source and _gemm_kernels(cm) == 1
    assert "irc_prepacked<IRC_NR> irc_a" in cm.cpp_source
    if name in TALL_ROWS and irc.Target.host().gemm_width == 32:
        assert _run_rows(cm) == [TALL_ROWS[name]]
    if name in COLS_CONVS and irc.Target.host().gemm_width == 32:
        assert "irc_cols<" in cm.cpp_source
    if name in HALVES_CONVS and irc.Target.host().gemm_width == 32:
        assert re.search(r"irc_cols<\d+, \d+, \d+, -?\d+, 0>", cm.cpp_source)


def _pixels_calls(cm) -> list[tuple[list[str], list[str]]]:
    """Each irc_conv_pixels call in the C++: its template arguments and its arguments."""
    return [(t.split(", "), a.split(", ")) for t, a in re.findall(r"irc_conv_pixels<([^(]*)>\(([^;]*)\);", cm.cpp_source)]


def _run_rows(cm) -> list[int]:
    """irc_conv_pixels's RH (its third template argument)."""
    return [int(t[2]) for t, _ in _pixels_calls(cm)]


# Padded pixels-layout convs whose image is copied a band of output rows at a time
# (`pixel_band_rows`), each at the L2 sizes (bytes) that give bands of one and of several rows.
PIXEL_BAND_CONVS = {
    "3x3": (dict(cin=32, cout=32, k=3, stride=1, pad=1, dil=1, groups=1, hw=(12, 17)), (81920, 262144)),
    "3x3-s2": (dict(cin=32, cout=32, k=3, stride=2, pad=1, dil=1, groups=1, hw=(29, 36)), (81920, 524288)),
    "5x5-dilated": (dict(cin=16, cout=32, k=5, stride=1, pad=(4, 2), dil=(2, 1), groups=1, hw=(16, 20)),
                    (114688, 262144)),
    "1x3-pad-w-only": (dict(cin=48, cout=32, k=(1, 3), stride=1, pad=(0, 1), dil=1, groups=1, hw=(10, 20)),
                       (65536, 262144)),
}


def _band_rows(cm) -> list[int]:
    """irc_conv_pixels's BH (its 6th argument)."""
    return [int(a[5]) for _, a in _pixels_calls(cm)]


@pytest.mark.parametrize("name", PIXEL_BAND_CONVS)
@pytest.mark.parametrize("threads", [1, 2])
def test_pixels_conv_copies_its_padded_image_in_bands(name, threads, monkeypatch):
    """A padded image copied a band of output rows at a time, by each thread for its own rows,
    gives the same bits as one copy of the whole image (the tiles sum K in the same order), and
    matches eager: bands of one row and of several, strides, dilation, padding on one axis only,
    row counts the threads and bands do not divide. At two threads these convs (one panel of
    output channels) share out their pixels, and each task copies its own rows even where the
    whole image would fit (BH = OH): the reference then is a one-task compile's whole copy."""
    monkeypatch.setenv("IRC_NUM_THREADS", str(threads))
    g, l2s = PIXEL_BAND_CONVS[name]
    m = _conv_block(g)
    x = torch.randn(1, g["cin"], *g["hw"])
    with torch.no_grad():
        res = torch.randn_like(m.conv(x))
        expected = m(x, res)
    one_task = irc.compile(m, (x, res), target=dataclasses.replace(irc.Target.host(), l2=0, threads=1), fallback=False)
    whole = irc.compile(m, (x, res), target=dataclasses.replace(irc.Target.host(), l2=0), fallback=False)
    oh = res.shape[2]
    assert _band_rows(whole) == [oh]
    reference = one_task(x, res)
    torch.testing.assert_close(reference, expected)
    assert torch.equal(whole(x, res), reference)
    seen = set()
    for l2 in l2s:
        cm = irc.compile(m, (x, res), target=dataclasses.replace(irc.Target.host(), l2=l2), fallback=False)
        (rows,) = _band_rows(cm)
        assert rows < oh and "irc_prepacked<IRC_NR> irc_a" in cm.cpp_source
        seen.add(rows == 1)
        assert torch.equal(cm(x, res), reference), (l2, rows)
    assert seen == {True, False}  # bands of one row and of more


# Pixels-layout convs whose rows are at most half a two-row tile (`pixel_run_segments`): a tile
# takes the same columns of two output rows, and its panel's two-row tiles fetch the next panel
# ahead. (width, cin, cout, k, stride, pad, hw): rows of 7 (one run each, whole rows stored as
# one), 14 and 13 (two runs of 7, or 7 and 6, each stored apart), 4, 5, 3 and 2 (16 wide: at
# most 3), odd row counts (the last row alone), one output row (no pair), stride 2, a 1x1,
# several panels (the next one fetched ahead) and ragged channels.
PAIR_CONVS = {
    "7x7": (32, 64, 96, 3, 1, 1, (7, 7)),
    "14x14": (32, 48, 64, 3, 1, 1, (14, 14)),
    "9x13-ragged": (32, 96, 70, 3, 1, 1, (9, 13)),
    "4x4-5x5": (32, 32, 64, 5, 1, 2, (4, 5)),
    "s2-to-7x7": (32, 24, 96, 3, 2, 1, (13, 14)),
    "1x1-7x7": (32, 96, 160, 1, 1, 0, (7, 7)),
    "one-row": (32, 64, 32, 3, 1, (0, 1), (3, 7)),
    "w16-3x3": (16, 40, 48, 3, 1, 1, (5, 3)),
    "w16-2x2": (16, 24, 40, 3, 1, 1, (2, 2)),
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", PAIR_CONVS)
@pytest.mark.parametrize("batch", [1, 2])
def test_pixels_conv_tiles_of_two_rows(name, batch, threads, monkeypatch):
    """Conv + BN + residual + ReLU (the residual read per pixel: a store to the wrong pixel
    shows) on planes whose tiles take two rows, at one thread and at two (panels or pixels
    split, a task starting mid-row), with the padded image whole and, where an L2 size gives
    them, in bands (a band of an odd row count ends with a row alone): the same bits."""
    width, cin, cout, k, stride, pad, hw = PAIR_CONVS[name]
    monkeypatch.setenv("IRC_NUM_THREADS", str(threads))
    monkeypatch.setenv("IRC_GEMM_WIDTH", str(width))
    monkeypatch.setenv("IRC_GEMM_ROWS", "6")
    if width == 16:
        monkeypatch.setenv("IRC_VECTOR_WIDTH", "8")
    g = dict(cin=cin, cout=cout, k=k, stride=stride, pad=pad, dil=1, groups=1, hw=hw)
    m = _conv_block(g)
    x = torch.randn(batch, cin, *hw)
    with torch.no_grad():
        res = torch.randn_like(m.conv(x))
    cm = check(m, x, res)
    flags = r"(?:true|false), (?:true|false), \w+(?:<[^>]*>)?"  # EVEN, EDGES, COLS
    (args,) = re.findall(rf"irc_conv_pixels<(\d+), \d+, (\d+), (\d+), {flags}>", cm.cpp_source)
    assert args[2] == ("1" if name == "one-row" else "2"), args
    banded = False  # an L2 size that bands the padded image (`pixel_band_rows`), if any does
    for l2 in (131072, 196608, 262144, 393216):
        cb = irc.compile(m, (x, res), target=dataclasses.replace(irc.Target.host(), l2=l2), fallback=False)
        if _band_rows(cb)[0] < res.shape[2]:
            banded = True
            assert torch.equal(cb(x, res), cm(x, res))
            break
    assert banded or name != "14x14" or threads == 2  # at two threads a task has half the channels: no bands


@pytest.mark.parametrize("name", ["7x7-ragged-channels", "stride2", "1x1-s2"])
def test_conv_with_pixels_on_run_time_weights(name):
    """A weight that is an input: the pixels layout packs its panels of channels per call."""
    g = PIXEL_CONVS[name]
    x = torch.randn(2, g["cin"], *g["hw"])
    w = torch.randn(g["cout"], g["cin"], *((g["k"],) * 2 if isinstance(g["k"], int) else g["k"])) / 10

    def f(x, w):
        return torch.relu(F.conv2d(x, w, stride=g["stride"], padding=g["pad"], dilation=g["dil"]))

    cm = check(f, x, w)
    assert "irc_conv_pixels<" in cm.cpp_source and "irc_dense<IRC_NR, false> irc_a" in cm.cpp_source


@pytest.mark.parametrize("widths", [(16, 8), (16, 4), (32, 16)], ids=["avx2", "portable", "avx512"])
@pytest.mark.parametrize("name", ["pixels:7x7-ragged-channels", "pixels:dilated-3x5", "pixels:halves-pad-2",
                                  "pixels:halves-pairs", "pixels:halves-12", "direct:wide", "direct:5x5-s2", "direct:rows-of-32"])
def test_conv_stores_at_every_vector_width(name, widths, monkeypatch):
    """The tile stores of both conv layouts at each vector width (16-wide panels with tiles of
    at most 6 pixels, `PIXEL_ROWS`, at the AVX2 and portable widths; on any host): the pixels
    tile transposed in IRC_VL x IRC_VL blocks, the direct tile's runs of real columns split by
    the dropped ones, both with partial-vector stores (irc_vstore_n: masked with AVX-512 and
    AVX, lane by lane portable) and scalar ones at a row's end."""
    width, lanes = widths
    monkeypatch.setenv("IRC_GEMM_WIDTH", str(width))
    monkeypatch.setenv("IRC_VECTOR_WIDTH", str(lanes))
    if width == 16:
        monkeypatch.setenv("IRC_GEMM_ROWS", "6")  # the AVX2 and portable tile: 6 rows x 16
    layout, case = name.split(":")
    g = (PIXEL_CONVS if layout == "pixels" else CONVS)[case]
    m = _conv_block(g)
    x = torch.randn(2, g["cin"], *g["hw"])
    with torch.no_grad():
        res = torch.randn_like(m.conv(x))
    cm = check(m, x, res)
    assert f"#define IRC_PR {12 if width == 32 else 6}" in cm.cpp_source
    assert f"irc_conv_{layout}<" in cm.cpp_source and _gemm_kernels(cm) == 1
    if case == "halves-12" and width == 16:
        assert "irc_cols<3, 1, 1, 2, 0>" in cm.cpp_source  # rows of 12 in two tiles of 6


# Padded images of pixels-layout convs, copied by irc_pad_rows: rows one lane short of a vector,
# exactly one, one with an overlapping last vector, two with one; padding wider than the rows; a
# channel block larger than IRC_PAD_BLOCK (copied row by row). (cin, k, stride, pad, (h, (vectors,
# extra))): the row width is vectors x lanes + extra.
PAD_COPY_CONVS = {
    "lanes-1": (24, 3, 1, 1, (5, (1, -1))),
    "lanes": (24, 3, 1, 1, (5, (1, 0))),
    "lanes+3": (24, 3, 1, 2, (4, (1, 3))),
    "2lanes+5": (16, 3, 2, 1, (6, (2, 5))),
    "pad-5-narrow": (16, 3, 1, 5, (3, (0, 3))),
    "block-rows": (3, 7, 2, 3, (100, (0, 90))),
}


@pytest.mark.parametrize("lanes", [16, 8, 4], ids=["avx512", "avx2", "portable"])
@pytest.mark.parametrize("name", PAD_COPY_CONVS)
@pytest.mark.parametrize("threads", [1, 2])
def test_pixels_conv_padded_copy_at_every_vector_width(name, lanes, threads, monkeypatch):
    """The zero-padded copy of a pixels-layout conv's image: zeroed whole and then copied over
    with unmasked vectors (the last overlapping the one before it) where a channel's block is
    small, row by row where it is large, at each vector width. One panel of output channels, so
    at two threads the tasks share out the pixels and each copies its own rows (a band, whose
    rows above or below the image are zeros)."""
    cin, k, stride, pad, (h, (vectors, extra)) = PAD_COPY_CONVS[name]
    width = target_env(monkeypatch, lanes, threads)
    w = vectors * lanes + extra
    m = _conv_block(dict(cin=cin, cout=width, k=k, stride=stride, pad=pad, dil=1, groups=1, hw=(h, w)))
    x = torch.randn(1, cin, h, w)
    with torch.no_grad():
        res = torch.randn_like(m.conv(x))
    cm = check(m, x, res)
    assert "irc_conv_pixels<" in cm.cpp_source and f"#define IRC_VL {lanes}  //" in cm.cpp_source


@pytest.mark.parametrize("cin,hw,panels", [(8, 10, "IRC_MR"), (96, 5, "IRC_NR")], ids=["direct", "pixels"])
def test_conv_weights_packed_at_compile_time_follow_in_place_updates(cin, hw, panels):
    """The conv's weight panels (6-row for the direct layout, 32 channels wide for pixels) are
    folded from the (BN-folded) weight; updating the conv or BN parameters in place packs them
    again before the next call."""
    m = nn.Sequential(nn.Conv2d(cin, 20, 3, padding=1), nn.BatchNorm2d(20), nn.ReLU()).eval()
    x = torch.randn(1, cin, hw, hw)
    cm = irc.compile(m, (x,))
    assert f"irc_prepacked<{panels}> irc_a" in cm.cpp_source
    with torch.no_grad():
        for _ in range(2):
            m[0].weight.mul_(-0.5)
            m[1].running_var.mul_(2.0)
            torch.testing.assert_close(cm(x), m(x), rtol=1e-4, atol=1e-5)


ATTENTION = {
    "plain": dict(lq=16, lk=16, e=8, mask=None, causal=False),
    "causal-ragged": dict(lq=70, lk=70, e=12, mask=None, causal=True),  # two blocks of queries
    "mask-LxL": dict(lq=9, lk=20, e=8, mask=(9, 20), causal=False),
    "mask-per-head": dict(lq=17, lk=17, e=16, mask=(2, 3, 17, 17), causal=False),
    # a thread's blocks of one head share the packed keys: causal blocks append panels (64,
    # 128, 192, then a ragged 200), non-causal ones pack a ragged 77 keys once for 3 blocks
    "causal-4-blocks": dict(lq=200, lk=200, e=16, mask=None, causal=True),
    "3-blocks-ragged-keys": dict(lq=150, lk=77, e=20, mask=None, causal=False),
}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", ATTENTION)
def test_attention_blocks(name, threads, monkeypatch):
    monkeypatch.setenv("IRC_NUM_THREADS", str(threads))
    a = ATTENTION[name]
    q = torch.randn(2, 3, a["lq"], a["e"])
    k, v = torch.randn(2, 3, a["lk"], a["e"]), torch.randn(2, 3, a["lk"], a["e"] + 3)
    args = [q, k, v] + ([torch.randn(*a["mask"])] if a["mask"] else [])

    if a["mask"]:
        def f(q, k, v, mask):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    else:
        def f(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=a["causal"])

    cm = check(f, *args)
    assert "irc_attention(" in cm.cpp_source


@pytest.mark.parametrize("threads", [1, 2])
def test_same_results_at_any_thread_count(threads, monkeypatch):
    monkeypatch.setenv("IRC_NUM_THREADS", str(threads))
    model = nn.Sequential(nn.Linear(300, 520), nn.ReLU(), nn.Linear(520, 64)).eval()
    x = torch.randn(96, 300)
    cm = irc.compile(model, (x,))
    assert "irc_gemm(96, 520, 300" in cm.cpp_source and ", true);" in cm.cpp_source  # threaded
    with torch.no_grad():
        torch.testing.assert_close(cm(x), model(x))


@pytest.mark.parametrize("threads", [1, 2])
def test_conv_split_by_rows_for_the_targets_thread_count(threads, monkeypatch):
    """48 output channels a group on a 4x4 image (grouped: not the pixels layout): tasks split
    the rows (channels), as many as the Target's threads (IRC_NUM_THREADS when compiling): one
    task of 48 rows for one thread, two of 24 for two (each reading the padded image in place).
    Either runs right at the other thread count."""
    monkeypatch.setenv("IRC_NUM_THREADS", str(threads))
    model = nn.Sequential(nn.Conv2d(80, 96, 3, padding=1, groups=2), nn.ReLU()).eval()
    x = torch.randn(1, 80, 4, 4)
    cm = check(model, x)
    rows = 48 // threads
    assert re.search(rf"irc_conv_direct<9>\(48, irc_a, irc_b, irc_c, irc_epi, \d+, \d+, {rows}, true\);", cm.cpp_source)
    monkeypatch.setenv("IRC_NUM_THREADS", str(3 - threads))  # called at the other count
    with torch.no_grad():
        torch.testing.assert_close(cm(x), model(x))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("cout,hw", [(64, 7), (32, 7), (64, 28)])
def test_conv_pixels_split_for_the_targets_thread_count(cout, hw, threads, monkeypatch):
    """The pixels layout's tasks (`pixel_tiles`): at two threads, two panels of 32 channels on
    7x7 go one to each thread; one panel splits its 49 pixels 25 + 24; a 28x28 plane splits its
    784 pixels 392 + 392 for both panels. Either runs right at the other count."""
    monkeypatch.setenv("IRC_NUM_THREADS", str(threads))
    monkeypatch.setenv("IRC_GEMM_WIDTH", "32")
    model = nn.Sequential(nn.Conv2d(128, cout, 3, padding=1), nn.ReLU()).eval()
    x = torch.randn(1, 128, hw, hw)
    cm = check(model, x)
    p = hw * hw
    ms, np_ = (cout // threads, p) if (cout, hw) == (64, 7) else (cout, -(-p // threads))
    # (its argument before NP is the band height, the output rows whose padded input a task
    # copies at a time: whole planes on 7x7 at any L2, see test_pixels_conv_copies_...)
    template = r"9, \d+, \d+, \d+, \w+, \w+, \w+(?:<[^>]*>)?"
    call = rf"irc_conv_pixels<{template}>\({cout}, irc_a, irc_b, irc_c, irc_epi, (\d+), {np_}, {ms}, true\);"
    bands = re.findall(call, cm.cpp_source)
    assert len(bands) == 1 and (int(bands[0]) == 7 if hw == 7 else 1 <= int(bands[0]) <= hw), bands
    monkeypatch.setenv("IRC_NUM_THREADS", str(3 - threads))
    with torch.no_grad():
        torch.testing.assert_close(cm(x), model(x))


def test_strict_builds_keep_the_sequential_scalar_nests(monkeypatch):
    monkeypatch.setenv("IRC_STRICT", "1")
    cm = check(nn.Sequential(nn.Linear(20, 10), nn.ReLU()).eval(), torch.randn(3, 20))
    assert _gemm_kernels(cm) == 0 and "irt.pack" not in cm.ir("fused")


# Every register tile height of matrix products (Target.matmul_rows, IRC_MMR) at sizes that are
# not multiples of the tile: one row, fewer rows than the tile, ragged rows and columns, K in one
# or several KC steps (K = 2100 takes 3 steps of the cache-derived KC of a 1 MiB L2, 7 of the
# fixed 320). The other height (convolutions': gemm_rows, IRC_MR) is set apart from it, so that
# a product read with the wrong one would show.
TALL = [(1, 33, 2100), (5, 70, 1030), (13, 45, 700), (29, 40, 333), (130, 96, 2100)]


def _tall(model, rows: int, *inputs, conv: bool = False):
    """`model` compiled with a `rows`-row register tile for convolutions (`conv`) or for matrix
    products, the other height 6 (8 when rows is 6); checked against eager."""
    other = 8 if rows == 6 else 6
    heights = dict(gemm_rows=rows, matmul_rows=other) if conv else dict(gemm_rows=other, matmul_rows=rows)
    cm = irc.compile(model, inputs, target=irc.Target.host(**heights), fallback=False)
    with torch.no_grad():
        torch.testing.assert_close(cm(*inputs), model(*inputs))
    assert f"#define IRC_MR {heights['gemm_rows']}" in cm.cpp_source
    assert f"#define IRC_MMR {heights['matmul_rows']}" in cm.cpp_source
    return cm


@pytest.mark.parametrize("rows", [6, 8, 12, 14])
@pytest.mark.parametrize("m,n,k", TALL, ids=[f"{m}x{n}x{k}" for m, n, k in TALL])
def test_every_tile_height_on_packed_and_runtime_operands(rows, m, n, k):
    model = nn.Sequential(nn.Linear(k, n), nn.ReLU()).eval()
    cm = _tall(model, rows, torch.randn(m, k))
    assert "irc_prepacked<IRC_NR>" in cm.cpp_source and _gemm_kernels(cm) == 1
    assert "irc_dense<IRC_MMR, false> irc_a" in cm.cpp_source
    a, b = torch.randn(m, k), torch.randn(k, n) / k**0.5
    assert "irc_dense<IRC_NR, true>" in _tall(lambda x, y: torch.relu(x @ y), rows, a, b).cpp_source
    assert "irc_dense<IRC_NR, false>" in _tall(lambda x, y: x @ y.t() * 0.5, rows, a, b.t().contiguous()).cpp_source
    bmm = _tall(lambda x, y: torch.bmm(x, y), rows, a.expand(3, m, k).contiguous(), b.expand(3, k, n).contiguous())
    assert "irc_gemm_batched(" in bmm.cpp_source


@pytest.mark.parametrize("conv_rows,matmul_rows", [(6, 12), (12, 6), (14, 8)])
def test_convs_and_products_with_tiles_of_different_heights(conv_rows, matmul_rows):
    """One library with both: conv weights packed in conv_rows-row panels (IRC_MR), the linear
    layer's tiles matmul_rows high (IRC_MMR), a ragged edge on each."""
    m = nn.Sequential(nn.Conv2d(5, 2 * conv_rows + 1, 3, padding=1), nn.ReLU(), nn.Flatten(),
                      nn.Linear((2 * conv_rows + 1) * 36, 40)).eval()
    x = torch.randn(matmul_rows + 3, 5, 6, 6)
    target = irc.Target.host(gemm_rows=conv_rows, matmul_rows=matmul_rows)
    cm = irc.compile(m, (x,), target=target, fallback=False)
    with torch.no_grad():
        torch.testing.assert_close(cm(x), m(x))
    src = cm.cpp_source
    assert f"#define IRC_MR {conv_rows}" in src and f"#define IRC_MMR {matmul_rows}" in src
    assert "irc_dense<IRC_MMR, false> irc_a" in src and _gemm_kernels(cm) == 2


@pytest.mark.parametrize("rows", [12, 14])
def test_conv_weights_packed_in_panels_of_the_tile_height(rows):
    """Two groups of `rows` output channels: packed in `rows`-row panels, one per group; a group
    of 6 more channels is not a whole number of panels: two per group, the second's last rows
    zeros, so that no panel straddles the groups. Both packed at compile time, both right."""
    x = torch.randn(2, 6, 9, 7)
    for per_group in (rows, rows + 6):
        m = nn.Sequential(nn.Conv2d(6, 2 * per_group, 3, padding=1, groups=2), nn.ReLU()).eval()
        cm = _tall(m, rows, x, conv=True)
        assert "irc_prepacked<IRC_MR> irc_a" in cm.cpp_source
        assert f"memref<{2 * -(-per_group // rows)}x27x{rows}xf32>" in cm.ir("loops")


@pytest.mark.parametrize("rows", [8, 12, 14])
def test_ragged_conv_tiles_at_every_height(rows):
    """Output channels 2 x rows - 1: a whole tile, then one a row short, which runs as tiles of at
    most IRC_RAGGED (6) rows (at 14 rows: 6 + 6 + 1); convs on the engine's direct and pixel
    paths, stride 1 and 2, and a 1x1."""
    for cin, k, s, hw in ((3, 3, 1, 32), (5, 3, 2, 17), (16, 3, 1, 7), (7, 1, 1, 16)):
        m = nn.Sequential(nn.Conv2d(cin, 2 * rows - 1, k, stride=s, padding=k // 2), nn.ReLU()).eval()
        cm = _tall(m, rows, torch.randn(2, cin, hw, hw), conv=True)
        assert "irc_conv_" in cm.cpp_source


@pytest.mark.parametrize("rows", [8, 14])
def test_attention_at_every_tile_height(rows):
    q, k, v = torch.randn(2, 3, 70, 12), torch.randn(2, 3, 70, 12), torch.randn(2, 3, 70, 15)
    cm = _tall(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), rows, q, k, v)
    assert "irc_attention(" in cm.cpp_source


def test_blocking_from_the_cache_sizes():
    """Unknown caches (irc-opt's default Target): the fixed blocking. Known: KC = L2 / 1 KiB,
    the lhs block in half of L2, NC = NC_MAX unless the rhs block would crowd a thread's L3;
    for an lhs read in place (matrix products) KC = L2 / 512 and a block of up to 2 x L2."""
    assert blocking(32, 2) == blocking(16, 1, (32768, 0, 0)) == (KC_MAX, A_BLOCK_BYTES, NC_MAX)
    assert blocking(32, 2, lhs_in_place=True) == (KC_MAX, A_BLOCK_BYTES, NC_MAX)
    assert blocking(32, 1, (32768, 1 << 20, 32 << 20)) == (1024, 512 << 10, NC_MAX)
    assert blocking(32, 1, (32768, 1 << 20, 32 << 20), lhs_in_place=True) == (2048, 2 << 20, NC_MAX)
    assert blocking(16, 2, (32768, 512 << 10, 32 << 20)) == (512, 256 << 10, NC_MAX)
    assert blocking(32, 2, (0, 1 << 20, 4 << 20)) == (1024, 512 << 10, 256)  # 4 MiB of L3 for 2 threads
    assert blocking(32, 2, (0, 1 << 20, 4 << 20), lhs_in_place=True) == (2048, 2 << 20, 128)
    # K = 4096 in 4 steps of 1024; MC: 128 rows of 4 KiB in 512 KiB, a multiple of the tile's rows
    zen4 = (32768, 1 << 20, 32 << 20)
    assert choose_tiles(256, 4096, 4096, 32, 1, rows=12, caches=zen4, lhs_in_place=False) == (120, 1024, 1024, 256)
    assert choose_tiles(256, 4096, 4096, 32, 1, rows=14, caches=zen4, lhs_in_place=False)[0] == 126
    # In place: K in 2 steps of 2048 would need two lhs blocks of 252 rows (8 KiB each in 2 MiB);
    # one block of all 264 rows in 3 steps of 1366 costs less: 3 x 4 x 256 + 4096 against
    # 2 x 4 x 256 + 2 x 4096 (C_PASS_WEIGHT)
    assert choose_tiles(256, 4096, 4096, 32, 1, rows=12, caches=zen4) == (264, 1024, 1366, 256)


@pytest.mark.parametrize("m,n,k,one_block", [(256, 4096, 4096, True), (256, 4096, 8192, True), (256, 2048, 2048, True),
                                             (512, 1024, 1024, True), (1024, 1024, 4096, False),
                                             (2048, 1024, 4096, False), (128, 1024, 256, True), (1, 4096, 4096, True)])
def test_k_steps_shorten_for_one_lhs_block_where_that_pays(m, n, k, one_block):
    """On a 2 MiB L2 (K steps of up to 4096 and lhs blocks of up to 4 MiB read in place): where
    one lhs block of all M rows saves more passes over the rhs than the shorter K steps add over
    C, KC shrinks (not below KC_MIN) and MC covers M; else the long K steps stay. The same rule
    built as arith ops for a run-time M gives the same tiles."""
    caches = (49152, 2 << 20, 480 << 20)
    kc_max, a_block, _ = blocking(32, 1, caches, lhs_in_place=True)
    mc, nc, kc, ms = choose_tiles(m, n, k, 32, 1, rows=6, caches=caches)
    assert (mc >= m) == one_block and kc >= min(k, KC_MIN)
    if not one_block:
        assert kc == min(k, kc_max)
    elif kc < min(k, kc_max):  # shortened: at the longest steps, one block would not hold every row
        assert a_block // (4 * min(k, kc_max)) // 6 * 6 < m
    model = nn.Linear(k, n).eval()
    x = torch.randn(m, k)
    cm = irc.compile(model, (x,), fallback=False)
    with torch.no_grad():
        torch.testing.assert_close(cm(x), model(x), rtol=1e-4, atol=1e-4)


_GUARDED_DIRECT = r"""
#include "irc_prelude.h"
#define IRC_NR __NR__
#include "irc_gemm.h"
#include <sys/mman.h>
#include <unistd.h>
// The image ends exactly where a PROT_NONE page starts: a load past its last float faults.
int main() {
  const int64_t shapes[][5] = {{3, 7, 5, 1, 1}, {4, 9, 13, 1, 1}, {2, 6, 7, 3, 3}, {5, 5, 37, 3, 3}, {1, 1, 17, 1, 1},
                               {3, 4, 4, 3, 3}, {2, 8, 40, 1, 3}, {6, 3, 3, 3, 3}};
  const long page = sysconf(_SC_PAGESIZE);
  for (const auto& s : shapes) {
    const int64_t C = s[0], H = s[1], W = s[2], KH = s[3], KW = s[4], M = 7, OH = H - KH + 1, OW = W - KW + 1;
    const int64_t bytes = C * H * W * 4, span = (bytes + page - 1) / page * page;
    char* mem = (char*)mmap(nullptr, span + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(mem + span, page, PROT_NONE);
    float* x = (float*)(mem + span - bytes);
    for (int64_t i = 0; i < C * H * W; ++i) x[i] = (float)((i * 7919) % 23) - 11.0f;
    float w[7 * 6 * 9], out[7 * 9 * 40];
    for (int64_t i = 0; i < M * C * KH * KW; ++i) w[i] = (float)((i * 104729) % 17) - 8.0f;
    const irc_dense<IRC_MR, false> a{w, C * KH * KW, M};
    const irc_direct d{x, C, H, W, KH, KW, 1, 1, 0, 0, 1, 1, OH, OW};
    const auto same = [](auto acc, int64_t, int64_t) { return acc; };
    irc_conv_direct<0>(M, a, d, out, same, 6, 64, M, false);
    for (int64_t o = 0; o < M; ++o)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          float ref = 0.0f;  // small integers: exact in any order
          for (int64_t c = 0; c < C; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw)
                ref += w[((o * C + c) * KH + kh) * KW + kw] * x[(c * H + oh + kh) * W + ow + kw];
          if (out[(o * OH + oh) * OW + ow] != ref) return 1;
        }
    munmap(mem, span + page);
  }
  return 0;
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
@pytest.mark.parametrize("width", [16, 32])
def test_direct_conv_reads_nothing_past_the_image(tmp_path, width):
    """irc_conv_direct reads the caller's image in place (an unpadded 1x1 conv's input is the
    user's tensor): the ragged last tile, whose two vector loads would run past the image's end,
    is packed with bounds checks. Its image here ends at a page the process may not read."""
    src = tmp_path / "guard.cpp"
    src.write_text(_GUARDED_DIRECT.replace("__NR__", str(width)))
    exe = tmp_path / "guard"
    subprocess.run(["g++", "-std=c++17", "-O2", "-fopenmp", "-march=native", f"-I{INCLUDE_DIR}", str(src), "-o", str(exe)],
                   check=True)
    assert subprocess.run([str(exe)]).returncode == 0


# irc_pixels_task's tiles, seen through the epilogue: it is called once per tile (per channel) with
# a vector of the tile's pixels from the tile's first, except near the plane's end (the plane's
# last vector). Prints OW, the plane's pixels, then the first pixel of every vector call for
# channel 0.
_PIXEL_TILES = r"""
#define IRC_VL 16
#include "irc_prelude.h"
#define IRC_NR 32
#define IRC_PR 12
#include "irc_gemm.h"
#include <cstdio>
#include <vector>
template <int RH> static void tiles(int64_t H, int64_t W, int64_t NP) {
  const int64_t C = 2, M = 32, P = H * W;
  std::vector<float> x(C * H * W, 1.0f), w(C * 9 * M, 0.5f), out(M * P);
  const irc_dense<IRC_NR, false> pb{w.data(), C * 9, M};
  const irc_direct g{x.data(), C, H, W, 3, 3, 1, 1, 1, 1, 1, 1, H, W};
  std::vector<int64_t> starts;
  const auto epi = [&](auto acc, int64_t i, int64_t j) {
    if constexpr (!std::is_same_v<decltype(acc), float>)
      if (i == 0) starts.push_back(j);
    return acc;
  };
  irc_conv_pixels<9, 1, RH>(M, pb, g, out.data(), epi, H, NP, M, true);  // parallel: tasks of NP pixels
  std::printf("%ld %ld", (long)W, (long)P);
  for (int64_t j : starts) std::printf(" %ld", (long)j);
  std::printf("\n");
}
int main() {
  omp_set_num_threads(1);  // one thread runs the tasks in order; NP < P: tasks start mid-row
  tiles<__RH16__>(20, 16, 20 * 16);
  tiles<__RH13__>(20, 13, 75);
  tiles<__RH28__>(12, 28, 12 * 28);
  tiles<0>(20, 16, 20 * 16);
  return 0;
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_pixels_conv_cuts_each_row_into_run_tiles(tmp_path):
    """A row of OW output pixels is cut into ceil(OW / 12) balanced tiles (`pixel_run_rows`):
    every tile is one run of a row (the broadcast from one pointer), also where a task starts
    mid-row, and on whole rows of the two heights compiled for it. Tiles balanced over the whole
    plane (RH = 0, the last case) straddle rows."""
    from irc.lowering.cpp.gemm import pixel_run_rows

    src = tmp_path / "tiles.cpp"
    rh = {ow: pixel_run_rows(ow, 12) for ow in (16, 13, 28)}
    assert rh == {16: 8, 13: 7, 28: 10}
    text = _PIXEL_TILES
    for ow, h in rh.items():
        text = text.replace(f"__RH{ow}__", str(h))
    src.write_text(text)
    exe = tmp_path / "tiles"
    subprocess.run(["g++", "-std=c++17", "-O1", "-fopenmp", f"-I{INCLUDE_DIR}", str(src), "-o", str(exe)], check=True)
    lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines()
    # (16: whole rows in one task; 13: tasks of 75 pixels, starting mid-row; 28; 16 with RH = 0)
    for line, run_tiles in zip(lines, (True, True, True, False)):
        ow, plane, *starts = map(int, line.split())
        assert len(starts) > 10
        # not across a task's end, nor near the plane's end (there: its last 16 pixels)
        tiles = [(a, b) for a, b in zip(starts, starts[1:]) if 0 < b - a <= 12 and b + 16 < plane]
        straddles = [a // ow != (b - 1) // ow for a, b in tiles]
        if run_tiles and ow != 13:  # whole rows: every tile RH or RH - 1 pixels
            assert {b - a for a, b in tiles} <= {rh[ow], rh[ow] - 1}, (ow, starts)
        assert any(straddles) != run_tiles, (ow, starts)


# irc_direct_task's column tiles, seen through the epilogue's vector calls for channel 0: a whole
# tile is stored from its first column in vectors of 16; a tile spanning two output rows, run by
# run from the columns where each run starts. Prints OW, then those columns.
_DIRECT_TILES = r"""
#define IRC_VL 16
#include "irc_prelude.h"
#define IRC_NR 32
#include "irc_gemm.h"
#include <cstdio>
#include <vector>
static void tiles(int64_t H, int64_t W) {
  const int64_t C = 2, M = 6;
  std::vector<float> x(C * H * W, 1.0f), w(M * C * 9, 0.5f), out(M * H * W);
  const irc_dense<IRC_MR, false> a{w.data(), C * 9, M};
  const irc_direct g{x.data(), C, H, W, 3, 3, 1, 1, 1, 1, 1, 1, H, W};  // 3x3, padding 1: rows of W + 2
  std::vector<int64_t> at;
  const auto epi = [&](auto acc, int64_t i, int64_t j) {
    if constexpr (!std::is_same_v<decltype(acc), float>)
      if (i == 0) at.push_back(j);
    return acc;
  };
  irc_conv_direct<9>(M, a, g, out.data(), epi, M, H * (W + 2), M, false);  // one task
  std::printf("%ld", (long)W);
  for (int64_t j : at) std::printf(" %ld", (long)j);
  std::printf("\n");
}
int main() {
  tiles(9, 32);
  tiles(9, 64);
  tiles(9, 40);
  return 0;
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_direct_conv_tiles_whole_rows_of_a_multiple_of_the_panel(tmp_path):
    """A padded conv's direct tiles run on through each row's padding columns, so they span two
    output rows, except where the output row is a multiple of the panel width: there every tile
    starts at a row's first column or a panel width after it and is stored whole (vector stores
    at multiples of 16 only). A row of 40 (the last case) keeps tiles that span rows."""
    src = tmp_path / "tiles.cpp"
    src.write_text(_DIRECT_TILES)
    exe = tmp_path / "tiles"
    subprocess.run(["g++", "-std=c++17", "-O1", "-fopenmp", f"-I{INCLUDE_DIR}", str(src), "-o", str(exe)], check=True)
    lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines()
    for line, whole in zip(lines, (True, True, False)):
        ow, *at = map(int, line.split())
        assert len(at) > 10
        assert all(j % 16 == 0 for j in at) == whole, (ow, at)


# The first tile to read a panel of compiled-in weights prefetches it (IRC_PF_K steps ahead, in
# lowering/cpp/include/irc_gemm.h): at a whole tile, at one row, and (pixels) at the first tile of
# each panel, RUN-shaped or not. The sums must be the same to the bit as with no prefetch.
PREFETCH_CASES = {
    "gemv": (nn.Linear(300, 70), (1, 300)),
    "whole-tiles": (nn.Linear(200, 96), (13, 200)),
    "ragged-first-tile": (nn.Linear(130, 33), (4, 130)),
    "pixels-7x7": (nn.Conv2d(64, 56, 3, padding=1), (1, 64, 7, 7)),
    "pixels-in-one-row": (nn.Conv2d(128, 64, 3, padding=1), (1, 128, 3, 48)),
}


@pytest.mark.parametrize("name", PREFETCH_CASES)
def test_prefetching_the_weights_changes_no_bit(name, monkeypatch):
    from irc.runtime.build import DEFAULT_CXXFLAGS

    layer, shape = PREFETCH_CASES[name]
    model = nn.Sequential(layer, nn.ReLU()).eval()
    x = torch.randn(shape)
    outs = []
    for extra in ([], ["-DIRC_PF_K=0"]):
        monkeypatch.setenv("IRC_CXXFLAGS", " ".join([*DEFAULT_CXXFLAGS, *extra]))
        cm = check(model, x)
        assert "irc_prepacked<IRC_NR>" in cm.cpp_source
        outs.append(cm(x))
    assert torch.equal(outs[0], outs[1])


# (channels, groups, H x W, stride, batch), each above PARALLEL_FLOPS: RegNet's grouped 3x3s (8
# channels a group), a ragged group (12 channels), wide groups (64 channels: the pixels layout),
# groups and images shared out together, and too few of them (4 groups on 2 threads: parallel 1)
GROUPED = [(48, 6, (14, 13), 1, 1), (96, 12, (13, 13), 2, 1), (36, 3, (10, 11), 1, 2), (72, 6, (9, 9), 1, 1),
           (256, 4, (7, 7), 1, 1), (48, 2, (16, 16), 2, 3)]


@pytest.mark.parametrize("c,g,hw,s,n", GROUPED, ids=[f"{c}g{g}-{h}x{w}-s{s}-n{n}" for c, g, (h, w), s, n in GROUPED])
def test_grouped_convs_share_out_their_groups_among_threads(c, g, hw, s, n):
    """Compiled for two threads, a grouped conv with at least GROUP_TASKS images x groups per
    thread runs each group's product on one thread (`parallel 2`), the same numbers either way."""
    m = nn.Sequential(nn.Conv2d(c, c, 3, s, 1, groups=g), nn.BatchNorm2d(c), nn.ReLU()).eval()
    x = torch.randn(n, c, *hw)
    target = dataclasses.replace(irc.Target.host(), threads=2)
    cm = irc.compile(m, (x,), target=target, fallback=False)
    with torch.no_grad():
        torch.testing.assert_close(cm(x), m(x))
    shared = g * n >= 3 * 2
    assert ("parallel 2" in cm.ir("loops")) == shared
    serial = irc.compile(m, (x,), target=dataclasses.replace(target, threads=1), fallback=False)
    assert "parallel 2" not in serial.ir("loops")


# (in, out, groups, kernel, stride, padding, dilation, H x W, batch): few output channels per group
# on the engine (`conv_on_engine`): ResNeXt-50's groups of 4, groups of 1-5 in and out, a one- and
# a three-channel head, ragged planes, stride 2, dilation, a 5x5 and a 1x1, two images
FEW_ROWS = [(128, 128, 32, 3, 1, 1, 1, (13, 11), 1), (64, 64, 32, 3, 2, 1, 1, (15, 9), 2),
            (20, 15, 5, 5, 1, 2, 1, (9, 10), 1), (12, 12, 6, 3, 1, 2, 2, (11, 7), 1),
            (64, 1, 1, 3, 1, 1, 1, (17, 19), 2), (48, 3, 1, 3, 2, 0, 1, (23, 21), 1),
            (30, 10, 5, 1, 1, 0, 1, (7, 33), 1), (24, 40, 8, 3, 1, 1, 1, (6, 6), 1)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("ci,co,g,k,s,p,d,hw,n", FEW_ROWS,
                         ids=[f"{ci}-{co}g{g}-k{k}s{s}p{p}d{d}-{h}x{w}-n{n}" for ci, co, g, k, s, p, d, (h, w), n in FEW_ROWS])
def test_convs_with_few_output_channels_per_group_run_on_the_engine(ci, co, g, k, s, p, d, hw, n, threads):
    """More than one input channel per group: the engine, whatever the output channels per group
    (they were on the scalar nest below 6, 4-10x slower than eager), with a bias, BN and ReLU."""
    m = nn.Sequential(nn.Conv2d(ci, co, k, s, p, dilation=d, groups=g), nn.BatchNorm2d(co), nn.ReLU()).eval()
    with torch.no_grad():
        m[1].running_mean.uniform_(-1, 1), m[1].running_var.uniform_(0.5, 2), m[1].weight.uniform_(0.5, 2)
    x = torch.randn(n, ci, *hw)
    target = dataclasses.replace(irc.Target.host(), threads=threads)
    cm = irc.compile(m, (x,), target=target, fallback=False)
    with torch.no_grad():
        torch.testing.assert_close(cm(x), m(x))
    assert "irl.gemm" in cm.ir("loops")


@pytest.mark.parametrize("multiplier", [1, 2, 6])
def test_depthwise_convs_keep_their_nest_at_any_multiplier(multiplier):
    m = nn.Sequential(nn.Conv2d(8, 8 * multiplier, 3, 1, 1, groups=8), nn.ReLU()).eval()
    x = torch.randn(1, 8, 12, 11)
    cm = check(m, x)
    assert "irl.gemm" not in cm.ir("loops")


# (channels, groups, H x W, stride, batch): a group's output channels in whole panels of the
# Target's width on a small plane: the pixels layout per group (ResNeXt-50's last stage, 32 a
# group on 7x7), its panels packed at compile time and indexed per group
PIXEL_GROUPS = [(512, 16, (7, 7), 1, 1), (256, 4, (9, 7), 2, 2), (192, 6, (6, 6), 1, 1), (256, 2, (5, 8), 1, 1)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("c,g,hw,s,n", PIXEL_GROUPS, ids=[f"{c}g{g}-{h}x{w}-s{s}-n{n}" for c, g, (h, w), s, n in PIXEL_GROUPS])
def test_grouped_convs_of_whole_channel_panels_take_the_pixels_layout(c, g, hw, s, n, threads):
    m = nn.Sequential(nn.Conv2d(c, c, 3, s, 1, groups=g), nn.BatchNorm2d(c), nn.ReLU()).eval()
    with torch.no_grad():
        m[1].running_mean.uniform_(-1, 1), m[1].running_var.uniform_(0.5, 2)
    x = torch.randn(n, c, *hw)
    target = dataclasses.replace(irc.Target.host(), threads=threads)
    cm = irc.compile(m, (x,), target=target, fallback=False)
    with torch.no_grad():
        torch.testing.assert_close(cm(x), m(x))
    assert "pixels_panels %" in cm.ir("loops") and f"groups {g}>" in cm.ir("loops")


def test_grouped_convs_with_run_time_weights_take_their_layouts_per_group():
    """Weights that are inputs (nothing packed at compile time): a grouped conv of whole 32-channel
    groups on 7x7 in the pixels layout, each group's rows packed per call from its own offset, and
    one of 8 a group (stride 2) in the direct layout; both against eager."""
    cases = [((2, 128, 7, 7), (128, 32, 3, 3), 1, 4, "pixels"), ((1, 64, 9, 7), (64, 8, 3, 3), 2, 8, "direct")]
    for xs, ws, s, g, layout in cases:
        x, w = torch.randn(xs), torch.randn(ws) / ws[1] ** 0.5 / 3

        def f(x, w, s=s, g=g):
            return F.relu(F.conv2d(x, w, stride=s, padding=1, groups=g))

        cm = irc.compile(f, (x, w), fallback=False)
        assert f"irl.gemm {layout} %" in cm.ir("loops")
        torch.testing.assert_close(cm(x, w), f(x, w))

"""Reductions, softmax, layer_norm, batched matmul and attention against eager PyTorch: every op
fused and unfused, the attention fusion rule (and where it must not fire), nn.MultiheadAttention,
nn.TransformerEncoderLayer and the transformer models.

Everything compares at the default float32 tolerances of `torch.testing.assert_close`
(measured max abs errors are at most ~3e-6, on the 64x4096 eltwise-layernorm model).
Every compile uses `fallback=False`, so an unsupported node fails the test instead of running
in eager PyTorch.
"""

from __future__ import annotations

import logging
import math
import re

import pytest
import torch
import torch.nn.functional as F
from irc_testing import check
from torch import nn

import irc
from irc.dialects.irt import reduce as irt_reduce
from irc.lowering.to_loops.reduce import layer_norm_rows
from irc.reference import evaluate

torch.manual_seed(0)




FUSE = pytest.mark.parametrize("fuse", [True, False], ids=["fused", "unfused"])


def kernels(cm) -> list[str]:
    return re.findall(r"// kernel \d+: (.*)", cm.cpp_source)


# --- reductions ---------------------------------------------------------------------------

REDUCTIONS = {
    "sum last": lambda x: x.sum(-1),
    "sum dim kw keepdim": lambda x: x.sum(dim=1, keepdim=True),
    "torch.sum tuple neg": lambda x: torch.sum(x, (-1, 0)),
    "sum full": lambda x: x.sum(),
    "torch.sum full": lambda x: torch.sum(x) * 2,
    "mean multiple keepdim": lambda x: torch.mean(x, (0, 2), keepdim=True),
    "mean last": lambda x: x.mean(-1),
    "mean full": lambda x: x.mean(),
    "amax": lambda x: torch.amax(x, 1),
    "amax tuple keepdim": lambda x: torch.amax(x, (-1, -3), keepdim=True),
    "amax method": lambda x: x.amax(dim=-2),
    "max full": lambda x: x.max(),
    "torch.max full": lambda x: torch.max(x) + 1,
    "sum then relu": lambda x: torch.relu(x.sum(1) - 1),
}


@FUSE
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("shape", [(3, 5, 7), (1, 1, 1), (2, 1, 9)], ids=lambda s: "x".join(map(str, s)))
def test_reduction(name, shape, fuse):
    check(REDUCTIONS[name], torch.randn(shape), fuse=fuse)


def test_reduction_ir():
    cm = check(lambda x: torch.mean(x, (-1, 0), keepdim=True), torch.randn(3, 4, 5))
    assert "irt.reduce mean %x [0, 2] keepdim : (tensor<3x4x5xf32>) -> tensor<1x4x1xf32>" in cm.ir("import")


def test_amax_propagates_nan():
    x = torch.randn(3, 4)
    x[1, 2] = float("nan")
    cm = irc.compile(lambda x: torch.amax(x, -1), (x,), fallback=False)
    torch.testing.assert_close(cm(x), torch.amax(x, -1), equal_nan=True)


# --- softmax, log_softmax -----------------------------------------------------------------

SOFTMAXES = {
    "F.softmax -1": lambda x: F.softmax(x, dim=-1),
    "torch.softmax 0": lambda x: torch.softmax(x, 0),
    "method softmax 1": lambda x: x.softmax(1),
    "F.log_softmax -1": lambda x: F.log_softmax(x, dim=-1),
    "log_softmax 1": lambda x: torch.log_softmax(x, 1),
    "method log_softmax -3": lambda x: x.log_softmax(-3),
    "nn.Softmax": nn.Softmax(dim=-2),
    "nn.LogSoftmax": nn.LogSoftmax(dim=2),
    "large values": lambda x: F.softmax(x * 1000, dim=-1),
    "softmax of chain": lambda x: F.softmax(torch.tanh(x) * 3 + 1, dim=-1) * 2,
}


@FUSE
@pytest.mark.parametrize("name", sorted(SOFTMAXES))
@pytest.mark.parametrize("shape", [(3, 5, 7), (1, 1, 1), (2, 1, 33)], ids=lambda s: "x".join(map(str, s)))
def test_softmax(name, shape, fuse):
    check(SOFTMAXES[name], torch.randn(shape), fuse=fuse)


def test_softmax_of_minus_inf_entries_is_not_nan():
    """Masked (-inf) entries, even leading ones, give exact zeros: the running max starts finite."""
    x = torch.randn(4, 9)
    x[:, :3] = float("-inf")
    x[2, 5] = float("-inf")
    cm = check(lambda x: F.softmax(x, dim=-1), x)
    assert not cm(x).isnan().any()
    check(lambda x: F.log_softmax(x, dim=-1), x)


@pytest.mark.parametrize("offset", [1e4, 1e6, 1e30])
def test_log_softmax_of_large_rows_subtracts_the_max_first(offset):
    """(x - max) - log(sum), as eager: irc's x - (max + log(sum)) rounded max + log(sum) to the
    row's magnitude (a row of 1e30s gave 0 rather than -log 33; rows around 1e4 were 4e-4 off)."""
    torch.manual_seed(0)
    x = torch.randn(4, 33) + offset
    x[1] = offset  # a constant row: -log(33) everywhere
    check(lambda x: F.log_softmax(x, dim=-1), x)


def test_softmax_reads_each_row_twice():
    """Three vectorized passes per row: max, exp-sum (exps kept in the output row), in-place
    scale; the input is read twice and exp computed once per element."""
    cm = check(lambda x: F.softmax(x, dim=-1), torch.randn(4, 9))
    loops = cm.ir("loops")
    assert loops.count("scf.for") == 3 and loops.count('irc.reduction = "max"') == 1
    assert loops.count("memref.load %x") == 2 and loops.count("math.exp") == 1
    assert loops.count("irc.vectorize") == 3


# --- layer_norm -----------------------------------------------------------------------------

LAYER_NORMS = {
    "nn.LayerNorm": lambda: nn.LayerNorm(7),
    "two dims": lambda: nn.LayerNorm((5, 7), eps=1e-3),
    "no affine": lambda: nn.LayerNorm(7, elementwise_affine=False),
    "no bias": lambda: nn.LayerNorm(7, bias=False),
}


def _random_affine(m: nn.Module) -> nn.Module:
    with torch.no_grad():
        for p in m.parameters():
            p.normal_()
    return m.eval()


@FUSE
@pytest.mark.parametrize("name", sorted(LAYER_NORMS))
@pytest.mark.parametrize("shape", [(3, 5, 7), (1, 1, 7)], ids=lambda s: "x".join(map(str, s)))
def test_layer_norm_module(name, shape, fuse):
    m = _random_affine(LAYER_NORMS[name]())
    if isinstance(m.normalized_shape, tuple) and len(m.normalized_shape) == 2 and shape[1] != 5:
        shape = (shape[0], 5, 7)
    check(m, torch.randn(shape), fuse=fuse)


@FUSE
def test_functional_layer_norm_weight_only_then_gelu(fuse):
    w = torch.randn(33)
    check(lambda x: F.gelu(F.layer_norm(x * 2, (33,), w, None, 1e-6)), torch.randn(4, 33), fuse=fuse)


def test_layer_norm_with_large_mean_is_as_accurate_as_torch():
    """On x = 1000 + randn the f32 input itself limits accuracy (eager is off by ~5e-5 from a
    float64 reference), so irc is compared with float64 and must do at least as well as eager:
    its mean sums x - x[0], and the variance is computed from x - mean."""
    x = torch.randn(8, 64) + 1000.0
    m = nn.LayerNorm(64, elementwise_affine=False).eval()
    cm = irc.compile(m, (x,), fallback=False)
    exact = F.layer_norm(x.double(), (64,))
    with torch.no_grad():
        eager_error = (m(x).double() - exact).abs().max().item()
    irc_error = (cm(x).double() - exact).abs().max().item()
    assert irc_error <= eager_error, (irc_error, eager_error)


@pytest.mark.parametrize("shape,rows", [
    ((2, 7, 64), 4),  # 7 rows: blocks of 4, the second ends on row 6 again
    ((3, 4, 48), 4),
    ((5, 1, 64), 1),  # a last outer dim of 1: one row at a time
    ((2, 3, 33), 3),  # three rows, one block
    ((1, 6, 1024), 4),  # 4 KB rows: 16 KB a block
    ((1, 5, 2048), 2),  # 8 KB rows: two at a time
    ((2, 4096), 1),  # 16 KB rows: one at a time
])
def test_layer_norm_rows_in_blocks(shape, rows):
    """layer_norm normalizes `layer_norm_rows` rows of the last outer dim per iteration, each pass
    over all of them in turn; the block that the rows do not fill takes the last row again. Every
    row is computed exactly as alone: bit for bit what a one-row compile gives it."""
    m = _random_affine(nn.LayerNorm(shape[-1]))
    x = torch.randn(shape) * 3 + 0.5
    cm = check(m, x)
    outer = list(shape[:-1])
    assert layer_norm_rows(outer, [shape[-1]]) == rows
    (header,) = re.findall(r'"scf.parallel"\(([^)]*)\)', cm.ir("loops"))  # the one kernel's
    bounds = header.split(", ")
    assert bounds[len(bounds) // 3: 2 * len(bounds) // 3][-1] == f"%c{-(-outer[-1] // rows)}", header
    one = irc.compile(m, (x.reshape(-1, shape[-1])[:1],), fallback=False)
    with torch.no_grad():
        alone = torch.cat([one(r) for r in x.reshape(-1, 1, shape[-1])]).reshape(shape)
    assert torch.equal(cm(x).detach(), alone.detach())


def test_layer_norm_is_one_kernel():
    cm = check(_random_affine(nn.LayerNorm(16)), torch.randn(4, 16))
    assert kernels(cm) == ["irt.layer_norm -> 4x16"]


# --- batched matmul -------------------------------------------------------------------------

MATMULS = {
    "3d @ 3d": (lambda a, b: a @ b, (2, 4, 5), (2, 5, 3)),
    "4d @ 4d": (lambda a, b: torch.matmul(a, b), (2, 3, 4, 5), (2, 3, 5, 6)),
    "broadcast batch": (lambda a, b: a @ b, (2, 1, 4, 5), (3, 5, 6)),
    "2d @ 3d": (lambda a, b: a @ b, (4, 5), (2, 5, 3)),
    "bmm": (lambda a, b: torch.bmm(a, b), (3, 1, 7), (3, 7, 1)),
    "method bmm": (lambda a, b: a.bmm(b) + 1, (1, 4, 5), (1, 5, 6)),
    "method matmul": (lambda a, b: a.matmul(b), (2, 4, 5), (2, 5, 3)),
    "@ transposed": (lambda a, b: a @ b.transpose(-2, -1), (2, 3, 4, 5), (2, 3, 6, 5)),
    "3d @ 2d (core)": (lambda a, b: a @ b, (2, 4, 5), (5, 3)),
}


@FUSE
@pytest.mark.parametrize("name", sorted(MATMULS))
def test_batch_matmul(name, fuse):
    fn, sa, sb = MATMULS[name]
    check(fn, torch.randn(sa), torch.randn(sb), fuse=fuse)


def test_transposed_rhs_is_read_in_place():
    cm = check(lambda a, b: a @ b.transpose(-2, -1), torch.randn(2, 4, 5), torch.randn(2, 6, 5))
    assert "irt.batch_matmul linear %a, %b" in cm.ir("fused")
    assert kernels(cm) == ["irt.batch_matmul (irt.transpose + irt.batch_matmul) -> 2x4x6"]


@FUSE
def test_addmm(fuse):
    cm = check(lambda b, x, w: torch.addmm(b, x, w), torch.randn(6), torch.randn(3, 5), torch.randn(5, 6), fuse=fuse)
    assert len(kernels(cm)) == (1 if fuse else 2)


# --- scaled_dot_product_attention ---------------------------------------------------------------

ATTENTION_SHAPES = {
    "Lq != Lk, E 3": ((1, 2, 5, 3), (1, 2, 7, 3), (1, 2, 7, 4)),
    "batch 2, E 5": ((2, 3, 6, 5), (2, 3, 6, 5), (2, 3, 6, 5)),
    "3-D": ((2, 9, 7), (2, 4, 7), (2, 4, 3)),
    "one query": ((1, 1, 1, 6), (1, 1, 11, 6), (1, 1, 11, 2)),
    "broadcast kv": ((2, 3, 4, 5), (1, 3, 6, 5), (1, 3, 6, 5)),
}


@FUSE
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("name", sorted(ATTENTION_SHAPES))
def test_sdpa(name, causal, fuse):
    q, k, v = (torch.randn(s) for s in ATTENTION_SHAPES[name])
    cm = check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal), q, k, v, fuse=fuse)
    assert ("causal" in cm.ir("import")) == causal


ENGINE_ATTENTION_SHAPES = {  # (B, H, Lq, Lk, E, Ev): P v read in place (Ev of 1-4 vectors) or on the engine
    "Ev 16, 3 blocks ragged": (1, 2, 150, 150, 16, 16),
    "Ev 32, Lq < Lk": (2, 1, 40, 97, 24, 32),
    "Ev 48, Lq > Lk": (1, 3, 130, 70, 8, 48),
    "Ev 64": (1, 2, 65, 65, 64, 64),
    "Ev 80 (engine)": (1, 1, 70, 70, 16, 80),
    "Ev 20 (engine)": (1, 2, 66, 66, 20, 20),
}


@pytest.mark.parametrize("width", [4, 8, 16])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("name", sorted(ENGINE_ATTENTION_SHAPES))
def test_sdpa_on_the_engine_at_every_vector_width(name, causal, width):
    """The attention kernel's paths at each vector width: several query blocks (64 rows) with a
    ragged last one, P v from P's rows for a value width of 1 to 4 vectors and on the GEMM
    engine otherwise, causal blocks that skip their future keys with Lq < Lk and Lq > Lk."""
    from irc.target import Target

    host = Target.host()
    if width > host.vector_width:
        pytest.skip(f"the host's vectors hold {host.vector_width} floats")
    b, h, lq, lk, e, ev = ENGINE_ATTENTION_SHAPES[name]
    q, k, v = torch.randn(b, h, lq, e), torch.randn(b, h, lk, e), torch.randn(b, h, lk, ev)
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # noqa: E731
    cm = irc.compile(fn, (q, k, v), target=host.replace(vector_width=width))
    assert "irl.attention" in cm.ir("loops")
    torch.testing.assert_close(cm(q, k, v), fn(q, k, v))  # measured: max abs error <= 9.6e-7 over all cases


@pytest.mark.parametrize("path", ["engine-8", "engine-16", "strict"])
def test_attention_rows_far_below_their_maximum_or_masked_whole(path):
    """Scores 80 to 110 below their row's maximum (the engine's exps near and under FLT_MIN: 0
    below 1.2e-38 where torch has a subnormal), masked -inf scores (exactly 0), a row masked
    whole (0 from F.scaled_dot_product_attention since torch 2.5, NaN from torch.softmax: one
    `irt.attention` each, `safe` or not) and a NaN query (a NaN row either way); on the engine at
    8 and 16 lanes and on the strict build's loop nest."""
    from irc.frontend.convert_reduce import SDPA_ZERO_MASKED_ROWS
    from irc.target import Target

    host = Target.host()
    width = int(path.split("-")[1]) if path.startswith("engine") else host.vector_width
    if width > host.vector_width:
        pytest.skip(f"the host's vectors hold {host.vector_width} floats")
    target = host.replace(vector_width=width) if path.startswith("engine") else host.replace(strict=True)
    q, k, v = torch.randn(1, 2, 70, 16), torch.randn(1, 2, 96, 16), torch.randn(1, 2, 96, 16)
    mask = torch.zeros(70, 96)
    mask[:, ::3] = -torch.linspace(80, 110, 32)  # every third key far below the others
    mask[:, 5] = float("-inf")
    mask[7] = float("-inf")  # a row masked whole
    sdpa = lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)  # noqa: E731
    softmax = lambda q, k, v, m: torch.softmax(q @ k.transpose(-1, -2) / 4.0 + m, -1) @ v  # noqa: E731
    for fn, zero in ((sdpa, SDPA_ZERO_MASKED_ROWS), (softmax, False)):
        cm = irc.compile(fn, (q, k, v, mask), target=target, fallback=False)
        assert ("irl.attention" in cm.ir("loops")) == path.startswith("engine")
        assert ("safe" in cm.ir("fused")) == zero
        x = q.clone()
        x[0, 1, 9, 3] = float("nan")
        expected, got = fn(x, k, v, mask), cm(x, k, v, mask)
        torch.testing.assert_close(got, expected, equal_nan=True)
        assert (got[0, :, 7] == 0).all() if zero else got[0, :, 7].isnan().all()
        assert got[0, 1, 9].isnan().all() and not got[0, 0, 9].isnan().any()


@FUSE
@pytest.mark.parametrize("mask_shape", [(5, 7), (1, 2, 5, 7), (2, 1, 7)], ids=lambda s: "x".join(map(str, s)))
def test_sdpa_float_mask(mask_shape, fuse):
    q, k, v = torch.randn(1, 2, 5, 3), torch.randn(1, 2, 7, 3), torch.randn(1, 2, 7, 4)
    mask = torch.randn(mask_shape)
    mask[..., 0, 1] = float("-inf")
    check(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.3), q, k, v, mask, fuse=fuse)


class MaskedAttention(nn.Module):
    def __init__(self, mask: torch.Tensor):
        super().__init__()
        self.register_buffer("mask", mask)

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask)


def test_sdpa_constant_causal_bool_mask_becomes_causal():
    q, k, v = torch.randn(1, 2, 6, 5), torch.randn(1, 2, 8, 5), torch.randn(1, 2, 8, 5)
    cm = check(MaskedAttention(torch.ones(6, 8, dtype=torch.bool).tril()), q, k, v)
    assert re.search(r"irt\.attention .* causal (safe )?:", cm.ir("import")) and " mask " not in cm.ir("import")


def test_sdpa_constant_bool_mask_is_folded_to_an_additive_constant():
    allowed = torch.rand(6, 8) > 0.3
    allowed[:, 0] = True
    q, k, v = torch.randn(1, 2, 6, 5), torch.randn(1, 2, 8, 5), torch.randn(1, 2, 8, 5)
    cm = check(MaskedAttention(allowed), q, k, v)
    assert "irt.attention" in cm.ir("import") and " mask " in cm.ir("import") and "causal" not in cm.ir("import")


def test_sdpa_unsupported_forms():
    q = torch.randn(1, 2, 4, 3)
    with pytest.raises(irc.UnsupportedOpError, match="dropout_p=0.1"):
        irc.compile(lambda q: F.scaled_dot_product_attention(q, q, q, dropout_p=0.1), (q,), fallback=False)


def test_sdpa_grouped_query_heads():
    """enable_gqa: each key/value head serves a group of query heads (repeat_kv before attention)."""
    q, kv = torch.randn(2, 6, 4, 3), torch.randn(2, 2, 5, 3)
    cm = check(lambda q, kv: F.scaled_dot_product_attention(q, kv, kv * 2, enable_gqa=True), q, kv)
    assert "irt.attention" in cm.ir("import")


# --- the attention fusion rule --------------------------------------------------------------


def attention_by_hand(q, k, v):
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1) @ v


HAND_WRITTEN = {
    "div sqrt": lambda q, k, v, m: torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(3), dim=-1) @ v,
    "mul scale": lambda q, k, v, m: F.softmax(torch.matmul(q, k.transpose(-1, -2)) * 0.4, dim=-1) @ v,
    "scale then mask": lambda q, k, v, m: torch.softmax(q @ k.transpose(-2, -1) * 0.5 + m, dim=3) @ v,
    "mask, no scale": lambda q, k, v, m: torch.softmax(m + q @ k.transpose(-2, -1), dim=-1) @ v,
}


@FUSE
@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_hand_written_attention_becomes_one_op(name, fuse):
    q, k, v, m = torch.randn(2, 2, 5, 3), torch.randn(2, 2, 7, 3), torch.randn(2, 2, 7, 6), torch.randn(5, 7)
    cm = check(HAND_WRITTEN[name], q, k, v, m, fuse=fuse)
    if fuse:
        assert len(kernels(cm)) == 1 and kernels(cm)[0].startswith("irt.attention")
        assert "softmax" not in cm.ir("fused").replace('"irt.softmax"', "")
    else:
        assert "irt.attention" not in cm.ir("fused")


NOT_ATTENTION = {
    "scores returned too": lambda q, k, v: (lambda s: (torch.softmax(s, dim=-1) @ v, s))(q @ k.transpose(-2, -1)),
    "scaled scores returned too": lambda q, k, v: (lambda s: (torch.softmax(s, dim=-1) @ v, s))(q @ k.mT * 0.3),
    "softmax over dim -2": lambda q, k, v: torch.softmax(q @ k.transpose(-2, -1), dim=-2) @ v,
    "probabilities returned too": lambda q, k, v: (lambda p: (p @ v, p))(torch.softmax(q @ k.transpose(-2, -1), dim=-1)),
    "mask then scale": lambda q, k, v: torch.softmax((q @ k.transpose(-2, -1) + 1.5 * q.sum(-1, keepdim=True)) * 0.5, dim=-1) @ v,
    "log_softmax": lambda q, k, v: torch.log_softmax(q @ k.transpose(-2, -1), dim=-1) @ v,
}


@pytest.mark.parametrize("name", sorted(NOT_ATTENTION))
def test_attention_rule_must_not_fire(name):
    q, k, v = torch.randn(1, 2, 7, 3), torch.randn(1, 2, 7, 3), torch.randn(1, 2, 7, 7)
    fn = NOT_ATTENTION[name]
    cm = irc.compile(fn, (q, k, v), fallback=False)
    with torch.no_grad():
        torch.testing.assert_close(cm(q, k, v), fn(q, k, v))
    assert "irt.attention" not in cm.ir("fused")


# --- nn.MultiheadAttention --------------------------------------------------------------------


class SelfAttention(nn.Module):
    def __init__(self, batch_first: bool, mask=None, **kwargs):
        super().__init__()
        self.attn = nn.MultiheadAttention(12, 3, batch_first=batch_first, **kwargs)
        self.mask = mask

    def forward(self, x):
        return self.attn(x, x, x, attn_mask=self.mask)[0]


def _randomize(m: nn.Module) -> nn.Module:
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.5)
    return m.eval()


@FUSE
@pytest.mark.parametrize("batch_first", [True, False], ids=["batch_first", "seq_first"])
@pytest.mark.parametrize("batch", [1, 3])
def test_multihead_attention(batch_first, batch, fuse):
    shape = (batch, 5, 12) if batch_first else (5, batch, 12)
    check(_randomize(SelfAttention(batch_first)), torch.randn(shape), fuse=fuse)


def test_multihead_attention_unbatched_no_bias():
    check(_randomize(SelfAttention(True, bias=False)), torch.randn(5, 12))


@pytest.mark.parametrize("batch_first", [True, False], ids=["batch_first", "seq_first"])
def test_multihead_cross_attention_separate_weights(batch_first):
    class Cross(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(12, 4, batch_first=batch_first, kdim=7, vdim=5)

        def forward(self, x, y, z):
            out, _ = self.attn(x, y, z, need_weights=False)
            return out

    n, lq, lk = 2, 3, 9
    shapes = [(n, lq, 12), (n, lk, 7), (n, lk, 5)] if batch_first else [(lq, n, 12), (lk, n, 7), (lk, n, 5)]
    m = _randomize(Cross())
    assert not m.attn._qkv_same_embed_dim
    check(m, *(torch.randn(s) for s in shapes))


@pytest.mark.parametrize(
    "mask",
    [
        torch.randn(5, 5),
        nn.Transformer.generate_square_subsequent_mask(5),
        torch.ones(5, 5, dtype=torch.bool).triu(1),
        torch.tensor([[False, True, False, False, True]] * 5),
    ],
    ids=["float", "float causal", "bool causal", "bool"],
)
def test_multihead_attention_masks(mask):
    """Bool masks are compile-time constants (True = masked, MultiheadAttention's convention)."""
    m = _randomize(SelfAttention(True))
    m.register_buffer("mask_buf", mask)
    m.mask = m.mask_buf
    check(m, torch.randn(2, 5, 12))


def test_multihead_attention_3d_float_mask():
    m = _randomize(SelfAttention(True))
    m.register_buffer("mask_buf", torch.randn(2 * 3, 5, 5))
    m.mask = m.mask_buf
    check(m, torch.randn(2, 5, 12))


def test_multihead_attention_params_read_in_place():
    m = _randomize(SelfAttention(True))
    x = torch.randn(2, 5, 12)
    cm = irc.compile(m, (x,), fallback=False)
    with torch.no_grad():
        m.attn.in_proj_weight.mul_(1.5)
        m.attn.out_proj.bias.add_(1.0)
        torch.testing.assert_close(cm(x), m(x))


def test_multihead_attention_weights_used_is_unsupported():
    class Weights(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(12, 3, batch_first=True)

        def forward(self, x):
            out, w = self.attn(x, x, x)
            return out + w.sum()

    with pytest.raises(irc.UnsupportedOpError, match="attention weights output is used"):
        irc.compile(Weights().eval(), (torch.randn(2, 5, 12),), fallback=False)


def test_multihead_attention_key_padding_mask_is_unsupported():
    class Padded(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(12, 3, batch_first=True)

        def forward(self, x, pad):
            return self.attn(x, x, x, key_padding_mask=pad, need_weights=False)[0]

    with pytest.raises(irc.UnsupportedOpError, match="key_padding_mask"):
        irc.compile(Padded().eval(), (torch.randn(2, 5, 12), torch.zeros(2, 5)), fallback=False)


class CrossAttention(nn.Module):
    def __init__(self, batch_first: bool):
        super().__init__()
        self.attn = nn.MultiheadAttention(12, 4, batch_first=batch_first, kdim=7, vdim=5)

    def forward(self, x, y, z):
        return self.attn(x, y, z, need_weights=False)[0]


def _masked(mask: torch.Tensor) -> nn.Module:
    m = SelfAttention(True)
    m.register_buffer("mask_buf", mask)
    m.mask = m.mask_buf
    return m


FUNCTIONAL_MHA = {
    "batch_first": (lambda: SelfAttention(True), [(3, 5, 12)]),
    "seq_first": (lambda: SelfAttention(False), [(5, 2, 12)]),
    "unbatched no bias": (lambda: SelfAttention(True, bias=False), [(5, 12)]),
    "float mask": (lambda: _masked(torch.randn(5, 5)), [(2, 5, 12)]),
    "bool causal mask": (lambda: _masked(torch.ones(5, 5, dtype=torch.bool).triu(1)), [(2, 5, 12)]),
    "cross, separate weights": (lambda: CrossAttention(False), [(3, 2, 12), (9, 2, 7), (9, 2, 5)]),
}


@pytest.mark.parametrize("name", list(FUNCTIONAL_MHA))
def test_multihead_attention_with_grad_enabled_through_torch_compile(name, caplog):
    """With grad enabled nn.MultiheadAttention leaves its fast path and calls
    F.multi_head_attention_forward, which TorchDynamo keeps as one call: it is compiled natively
    (it ran eagerly between two native partitions)."""
    make, shapes = FUNCTIONAL_MHA[name]
    m = _randomize(make())
    xs = [torch.randn(s) for s in shapes]
    torch._dynamo.reset()
    try:
        with caplog.at_level(logging.WARNING, logger="irc"):
            out = torch.compile(m, backend="irc")(*xs)
    finally:
        torch._dynamo.reset()
    assert out.grad_fn is not None
    torch.testing.assert_close(out, m(*xs), rtol=1e-4, atol=1e-5)
    assert not [r.getMessage() for r in caplog.records if r.name == "irc" and r.levelno >= logging.WARNING]


# --- nn.TransformerEncoderLayer ------------------------------------------------------------------


class Encoder(nn.Module):
    def __init__(self, mask=None, is_causal=False, **kwargs):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 4, 24, **kwargs)
        self.mask, self.is_causal = mask, is_causal

    def forward(self, x):
        return self.layer(x, src_mask=self.mask, is_causal=self.is_causal)


ENCODERS = {
    "post-norm relu": dict(batch_first=True),
    "pre-norm gelu": dict(batch_first=True, norm_first=True, activation="gelu"),
    "seq first": dict(batch_first=False),
    "nn.ReLU module": dict(batch_first=True, activation=nn.ReLU()),
}


@FUSE
@pytest.mark.parametrize("name", sorted(ENCODERS))
def test_transformer_encoder_layer(name, fuse):
    m = _randomize(Encoder(**ENCODERS[name]))
    check(m, torch.randn(2, 6, 16), fuse=fuse)


def test_transformer_encoder_layer_gelu_tanh():
    """Under no_grad eager takes the fused fast path, which computes exact GELU even for
    nn.GELU(approximate="tanh"); irc computes what the layer's Python forward does (tanh GELU),
    so the reference here is eager with grad enabled (the Python path)."""
    m = _randomize(Encoder(batch_first=True, activation=nn.GELU(approximate="tanh")))
    x = torch.randn(2, 6, 16)
    cm = irc.compile(m, (x,), fallback=False)
    with torch.enable_grad():
        expected = m(x).detach()
    torch.testing.assert_close(cm(x), expected)


@pytest.mark.parametrize("name", ["post-norm relu", "pre-norm gelu"])
def test_transformer_encoder_layer_fast_path_under_dynamo(name, caplog):
    """Under no_grad TorchDynamo traces the layer's fused fast path
    (torch._transformer_encoder_layer_fwd); irc compiles it natively, nothing runs in eager."""
    m = _randomize(Encoder(**ENCODERS[name]))
    x = torch.randn(2, 6, 16)
    torch._dynamo.reset()
    compiled = torch.compile(m, backend="irc")
    with torch.no_grad(), caplog.at_level(logging.INFO, logger="irc"):
        out = compiled(x)
        expected = m(x)
    torch.testing.assert_close(out, expected)
    assert "eager" not in caplog.text


@pytest.mark.parametrize("is_causal", [False, True])
def test_transformer_encoder_layer_causal_mask(is_causal):
    mask = nn.Transformer.generate_square_subsequent_mask(6)
    m = _randomize(Encoder(mask=mask, is_causal=is_causal, batch_first=True, norm_first=True))
    cm = check(m, torch.randn(1, 6, 16))
    assert ("causal" in cm.ir("import")) == is_causal


# --- models ---------------------------------------------------------------------------------------


@FUSE
@pytest.mark.parametrize("name", ["transformer-encoder", "transformer-block", "eltwise-layernorm"])
def test_model(name, fuse):
    from irc.models import get_model

    model, inputs = get_model(name).build()
    cm = check(model, *inputs, fuse=fuse)
    if fuse and name == "transformer-block":
        assert sum(k.startswith("irt.attention") for k in kernels(cm)) == 1
        assert "irt.softmax" not in cm.ir("fused").replace('"irt.softmax"', "")
    if fuse and name == "eltwise-layernorm":  # x * sigmoid(x); gelu (no_transcendental_chain); layer_norm
        assert len(kernels(cm)) == 3


# --- the reference evaluator ----------------------------------------------------------------------


def test_reference_evaluator_matches_torch():
    """irc.reference.evaluate on each op of the family (the oracle compile-time folding uses)."""
    from xdsl.dialects.builtin import TensorType, f32
    from xdsl.ir import Block

    def arg(shape):
        return Block(arg_types=[TensorType(f32, list(shape))]).args[0]

    x, q, k, v, m = torch.randn(3, 4, 5), torch.randn(2, 4, 3), torch.randn(2, 6, 3), torch.randn(2, 6, 7), torch.randn(4, 6)
    w, b = torch.randn(5), torch.randn(5)
    xa, qa, ka, va, ma, wa, ba = (arg(t.shape) for t in (x, q, k, v, m, w, b))
    t = lambda *s: TensorType(f32, list(s))  # noqa: E731
    cases = [
        (irt_reduce.ReduceOp("mean", xa, [0, 2], True, t(1, 4, 1)), [x], x.mean((0, 2), keepdim=True)),
        (irt_reduce.ReduceOp("max", xa, [1], False, t(3, 5)), [x], x.amax(1)),
        (irt_reduce.SoftmaxOp(xa, -2), [x], x.softmax(-2)),
        (irt_reduce.LogSoftmaxOp(xa, 0), [x], x.log_softmax(0)),
        (irt_reduce.LayerNormOp(xa, wa, ba, 1, 1e-5), [x, w, b], F.layer_norm(x, (5,), w, b)),
        (irt_reduce.LayerNormOp(xa, None, ba, 1, 1e-5), [x, b], F.layer_norm(x, (5,), None, b)),
        (irt_reduce.BatchMatmulOp("linear", qa, ka, t(2, 4, 6)), [q, k], q @ k.transpose(1, 2)),
        (
            irt_reduce.AttentionOp(qa, ka, va, ma, 0.7, True, t(2, 4, 7)),
            [q, k, v, m],
            F.scaled_dot_product_attention(q, k, v, attn_mask=m + torch.full((4, 6), float("-inf")).triu(1), scale=0.7),
        ),
    ]
    for op, inputs, expected in cases:
        op.verify()
        torch.testing.assert_close(evaluate(op, inputs), expected, msg=op.name)


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("grad", [False, True])
def test_multihead_attention_row_masked_whole_through_torch_compile(need_weights, grad):
    """A query row whose keys are all masked (an additive float mask, -inf): the graph Dynamo
    traces computes F.multi_head_attention_forward, by F.scaled_dot_product_attention without
    the weights (0 on torch >= 2.5) and by softmax with them (NaN); irc gives what that graph
    gives (Dynamo's eager backend), whatever nn.MultiheadAttention's own fast path would."""
    torch.manual_seed(0)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.MultiheadAttention(8, 2, batch_first=True)

        def forward(self, x, mask):
            return self.a(x, x, x, attn_mask=mask, need_weights=need_weights)[0]

    m = M().eval()
    x, mask = torch.randn(2, 4, 8), torch.zeros(4, 4)
    mask[2] = float("-inf")
    with torch.set_grad_enabled(grad):
        torch._dynamo.reset()
        expected = torch.compile(m, backend="eager")(x, mask)
        torch._dynamo.reset()
        got = torch.compile(m, backend="irc", options={"fallback": False})(x, mask)
    torch.testing.assert_close(got, expected, equal_nan=True)
    assert got[:, [0, 1, 3]].isfinite().all()


@pytest.mark.parametrize("case", ["last dim", "two dims eps", "no weight", "functional run-time weight"])
def test_rms_norm_matches_eager(case):
    """nn.RMSNorm / F.rms_norm: x * rsqrt(mean(x^2) + eps) * weight (eps None: float32's
    machine epsilon), over the trailing normalized dims."""
    x = torch.randn(3, 4, 16) * 3
    if case == "functional run-time weight":
        f = lambda x, w: F.rms_norm(x, (16,), w)  # noqa: E731
        check(f, x, torch.randn(16))
        return
    m = {"last dim": nn.RMSNorm(16), "two dims eps": nn.RMSNorm([4, 16], eps=1e-3),
         "no weight": nn.RMSNorm(16, elementwise_affine=False)}[case]
    if m.weight is not None:
        with torch.no_grad():
            m.weight.normal_()
    check(m, x)


VAR_LOGSUMEXP = {
    "var": lambda x: x.var(-1),
    "var dims keepdim": lambda x: torch.var(x, (0, 2), keepdim=True),
    "var unbiased=False": lambda x: x.var(1, unbiased=False),
    "var correction=0": lambda x: torch.var(x, dim=1, correction=0),
    "var all": lambda x: x.var(),
    "std": lambda x: x.std(-1),
    "std all keepdim": lambda x: torch.std(x, None, keepdim=True),
    "var of one element (NaN)": lambda x: x[:, :1].var(1),
    "logsumexp": lambda x: torch.logsumexp(x, -1),
    "logsumexp dims keepdim": lambda x: x.logsumexp((0, 1), keepdim=True),
    "normalize": lambda x: F.normalize(x, dim=-1),
    "normalize p=1, dim 1": lambda x: F.normalize(x, p=1.0, dim=1),
    "normalize a zero vector (eps)": lambda x: F.normalize(x * (x[:, :, :1] > 0), dim=2),
    "vector_norm": lambda x: torch.linalg.vector_norm(x, dim=-1),
    "vector_norm all": lambda x: torch.linalg.vector_norm(x),
    "vector_norm inf dims keepdim": lambda x: torch.linalg.vector_norm(x, float("inf"), (0, 2), keepdim=True),
    "vector_norm 1": lambda x: torch.linalg.vector_norm(x, 1, 1),
}


@pytest.mark.parametrize("name", sorted(VAR_LOGSUMEXP))
def test_var_std_logsumexp_and_norms_match_eager(name):
    """Including rows holding -inf (logsumexp: -inf for a row of them) and +inf (+inf)."""
    f = VAR_LOGSUMEXP[name]
    x = torch.randn(3, 5, 7) * 4
    inputs = [x]
    if "logsumexp" in name:
        y = x.clone()
        y[0, 1] = float("-inf")
        y[1, 2, 3] = float("inf")
        y[2, 0, :3] = float("-inf")
        inputs.append(y)
    for t in inputs:
        cm = irc.compile(f, (t,), fallback=False)
        torch.testing.assert_close(cm(t), f(t), equal_nan=True)


BADDBMM_OUTER = {  # (function, input shapes)
    "baddbmm": (lambda i, a, b: torch.baddbmm(i, a, b), ((4, 5, 6), (4, 5, 8), (4, 8, 6))),
    "baddbmm beta alpha": (lambda i, a, b: torch.baddbmm(i, a, b, beta=0.5, alpha=0.125), ((4, 5, 6), (4, 5, 8), (4, 8, 6))),
    "baddbmm broadcast bias (BLOOM's alibi)": (lambda i, a, b: torch.baddbmm(i, a, b, beta=1.0, alpha=0.3),
                                               ((1, 1, 6), (4, 5, 8), (4, 8, 6))),
    "baddbmm method": (lambda i, a, b: i.baddbmm(a, b, alpha=0.5), ((4, 5, 6), (4, 5, 8), (4, 8, 6))),
    "outer": (lambda a, b: torch.outer(a, b) + 1, ((7,), (5,))),
    "ger method": (lambda a, b: a.outer(b) * 2, ((3,), (9,))),
    "outer of integer positions (RoPE)": (lambda a, b: torch.outer(torch.arange(6), b).cos() + a[:, None], ((6,), (4,))),
}


@pytest.mark.parametrize("name", sorted(BADDBMM_OUTER))
def test_baddbmm_and_outer_match_eager(name):
    f, shapes = BADDBMM_OUTER[name]
    check(f, *(torch.randn(s) for s in shapes))


def test_baddbmm_with_beta_zero_does_not_read_the_bias():
    """torch: with beta 0 the bias's NaN and inf do not reach the result."""
    bias = torch.randn(2, 3, 4)
    bias[0, 0, 0], bias[1, 2, 3] = float("nan"), float("inf")
    f = lambda i, a, b: torch.baddbmm(i, a, b, beta=0, alpha=2.0)  # noqa: E731
    cm = check(f, bias, torch.randn(2, 3, 5), torch.randn(2, 5, 4))
    assert cm(bias, torch.randn(2, 3, 5), torch.randn(2, 5, 4)).isfinite().all()

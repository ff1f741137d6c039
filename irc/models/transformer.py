"""Built-in transformer models (their `SPECS` are listed in `irc.models.BUILTIN_MODELS`).

* `transformer-encoder`: `nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024,
  batch_first=True)` in eval mode on a 1x128x256 input. `torch.fx.symbolic_trace` cannot trace
  the layer's own forward (its fast-path checks), so the model wraps it: FX keeps the layer as a
  leaf module and irc's converter lowers it (`irc/frontend/convert_reduce.py`). Through
  `torch.compile(model, backend="irc")` under no_grad, Dynamo traces the layer's fused fast path
  (`torch._transformer_encoder_layer_fwd`), which irc also converts.
* `transformer-block`: a hand-written pre-norm block, LayerNorm -> multi-head self-attention
  written out (linear, reshape, transpose, q @ k^T / sqrt(d), softmax, @ v) -> residual ->
  LayerNorm -> GELU MLP -> residual; d_model 256, 4 heads, seq 128, batch 1. irc's `attention`
  fusion rule turns the written-out attention into one `irt.attention`.
* `eltwise-layernorm`: x * sigmoid(x) -> gelu -> layer_norm on 64x4096: three kernels, x *
  sigmoid(x), gelu and layer_norm (`no_transcendental_chain` keeps erf after exp out of one
  loop: the fused loop was latency-bound).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from irc.models.spec import Inputs, ModelSpec


class EncoderLayer(nn.Module):
    """`nn.TransformerEncoderLayer` behind a wrapper, so torch.fx keeps it as one leaf call."""

    def __init__(self, d_model: int = 256, nhead: int = 4, dim_feedforward: int = 1024, **kwargs):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, batch_first=True, **kwargs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x)


class TransformerBlock(nn.Module):
    """Pre-norm transformer block with the attention written out by hand.

    Shapes are static (as everywhere in irc): `seq_len` fixes the sequence length the heads are
    reshaped with; the batch dim is inferred.
    """

    def __init__(self, d_model: int = 256, n_heads: int = 4, d_ff: int = 1024, seq_len: int = 128):
        super().__init__()
        self.d_model, self.n_heads, self.d_head, self.seq_len = d_model, n_heads, d_model // n_heads, seq_len
        self.ln1 = nn.LayerNorm(d_model)
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.o = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)

    def heads(self, t: torch.Tensor) -> torch.Tensor:
        """[B, L, E] -> [B, H, L, D]."""
        return t.reshape(-1, self.seq_len, self.n_heads, self.d_head).transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln1(x)
        q, k, v = self.heads(self.q(h)), self.heads(self.k(h)), self.heads(self.v(h))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        attn = torch.softmax(scores, dim=-1) @ v
        attn = attn.transpose(1, 2).reshape(-1, self.seq_len, self.d_model)
        x = x + self.o(attn)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class EltwiseLayerNorm(nn.Module):
    """x * sigmoid(x) -> gelu -> layer_norm over the last dim."""

    def __init__(self, features: int = 4096):
        super().__init__()
        self.norm = nn.LayerNorm(features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(F.gelu(x * torch.sigmoid(x)))


def _randomize_norms(model: nn.Module) -> nn.Module:
    """LayerNorm weights start at 1 and biases at 0; random ones make the check meaningful."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.normal_(1.0, 0.1)
                m.bias.normal_(0.0, 0.1)
    return model


def _encoder() -> tuple[nn.Module, Inputs]:
    return _randomize_norms(EncoderLayer()), (torch.randn(1, 128, 256),)


def _block() -> tuple[nn.Module, Inputs]:
    return _randomize_norms(TransformerBlock()), (torch.randn(1, 128, 256),)


def _eltwise_layernorm() -> tuple[nn.Module, Inputs]:
    return _randomize_norms(EltwiseLayerNorm(4096)), (torch.randn(64, 4096),)


def _transformer_flops(batch: int, seq: int, d: int, d_ff: int) -> int:
    """Multiply-adds counted as 2 FLOPs: 4 projections, q @ k^T and p @ v, and the MLP."""
    tokens = batch * seq
    return 2 * tokens * d * d * 4 + 2 * 2 * batch * seq * seq * d + 2 * tokens * d * d_ff * 2


SPECS = (
    ModelSpec(
        "transformer-encoder",
        "nn.TransformerEncoderLayer d256 h4 ff1024, 1x128x256 (post-norm, ReLU)",
        _encoder,
        flops=_transformer_flops(1, 128, 256, 1024),
    ),
    ModelSpec(
        "transformer-block",
        "hand-written pre-norm block d256 h4 ff1024 GELU, 1x128x256",
        _block,
        flops=_transformer_flops(1, 128, 256, 1024),
    ),
    ModelSpec(
        "eltwise-layernorm",
        "x*sigmoid(x) -> gelu -> layer_norm, 64x4096",
        _eltwise_layernorm,
        flops=64 * 4096 * 8,
    ),
)

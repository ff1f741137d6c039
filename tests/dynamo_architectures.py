"""Small versions of real architectures' building blocks, written for the differential test
(tests/test_dynamo_differential.py): each uses the ops its family is known for, at tiny sizes.

The shifted-window attention follows torchvision's Swin (`swin_transformer.py`): pad to whole
windows, cyclic shift with torch.roll, window partition by view/permute, relative-position bias
gathered from a table by an index buffer, the shift mask built by writing region numbers into
`new_zeros` and compared at run time, softmax, reverse partition and shift, crop.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def window_attention(x, qkv, proj, table, index, ws: int, heads: int, shift: int):
    B, H, W, C = x.shape
    x = F.pad(x, (0, 0, 0, (ws - W % ws) % ws, 0, (ws - H % ws) % ws))
    _, pH, pW, _ = x.shape
    if shift:
        x = torch.roll(x, shifts=(-shift, -shift), dims=(1, 2))
    nw, n = (pH // ws) * (pW // ws), ws * ws
    x = x.view(B, pH // ws, ws, pW // ws, ws, C).permute(0, 1, 3, 2, 4, 5).reshape(B * nw, n, C)
    q, k, v = qkv(x).reshape(x.size(0), n, 3, heads, C // heads).permute(2, 0, 3, 1, 4)
    attn = (q * (C // heads) ** -0.5).matmul(k.transpose(-2, -1))
    attn = attn + table[index].view(n, n, -1).permute(2, 0, 1).contiguous().unsqueeze(0)
    if shift:
        mask = x.new_zeros((pH, pW))
        cuts = ((0, -ws), (-ws, -shift), (-shift, None))
        region = 0
        for h in cuts:
            for w in cuts:
                mask[h[0]:h[1], w[0]:w[1]] = region
                region += 1
        mask = mask.view(pH // ws, ws, pW // ws, ws).permute(0, 2, 1, 3).reshape(nw, n)
        mask = mask.unsqueeze(1) - mask.unsqueeze(2)
        mask = mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0)
        attn = attn.view(x.size(0) // nw, nw, heads, n, n) + mask.unsqueeze(1).unsqueeze(0)
        attn = attn.view(-1, heads, n, n)
    attn = F.dropout(F.softmax(attn, dim=-1), p=0.0)
    x = proj(attn.matmul(v).transpose(1, 2).reshape(x.size(0), n, C))
    x = x.view(B, pH // ws, pW // ws, ws, ws, C).permute(0, 1, 3, 2, 4, 5).reshape(B, pH, pW, C)
    if shift:
        x = torch.roll(x, shifts=(shift, shift), dims=(1, 2))
    return x[:, :H, :W, :].contiguous()


torch.fx.wrap("window_attention")  # as torchvision does: a leaf for fx.symbolic_trace


class WindowAttention(nn.Module):
    def __init__(self, dim: int, ws: int, shift: int, heads: int):
        super().__init__()
        self.ws, self.shift, self.heads = ws, shift, heads
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.table = nn.Parameter(torch.randn((2 * ws - 1) ** 2, heads) * 0.5)
        c = torch.arange(ws)
        coords = torch.stack(torch.meshgrid(c, c, indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (ws - 1)
        self.register_buffer("index", (rel[:, :, 0] * (2 * ws - 1) + rel[:, :, 1]).flatten())

    def forward(self, x):
        return window_attention(x, self.qkv, self.proj, self.table, self.index, self.ws, self.heads, self.shift)


class SwinBlock(nn.Module):
    def __init__(self, dim: int, heads: int, ws: int, shift: int):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, ws, shift, heads)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class PatchMerging(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm, self.reduction = nn.LayerNorm(4 * dim), nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x):
        x = F.pad(x, (0, 0, 0, x.shape[-2] % 2, 0, x.shape[-3] % 2))
        x = torch.cat([x[..., 0::2, 0::2, :], x[..., 1::2, 0::2, :], x[..., 0::2, 1::2, :], x[..., 1::2, 1::2, :]], -1)
        return self.reduction(self.norm(x))


class TinySwin(nn.Module):
    """Patch embed, a plain and a shifted block (window 2 on a 5x5 map: padded to 6x6, 9 windows),
    patch merging; mean-pooled head."""

    def __init__(self, dim: int = 8):
        super().__init__()
        self.embed, self.norm = nn.Conv2d(3, dim, 2, 2), nn.LayerNorm(dim)
        self.stage = nn.Sequential(SwinBlock(dim, 2, 2, 0), SwinBlock(dim, 2, 2, 1), PatchMerging(dim))
        self.head = nn.Linear(2 * dim, 5)

    def forward(self, x):
        x = self.stage(self.norm(self.embed(x).permute(0, 2, 3, 1)))
        return self.head(x.mean((1, 2)))


class ViTBlock(nn.Module):
    """Patchify, a class token and learned position embedding, nn.MultiheadAttention, MLP."""

    def __init__(self, dim: int = 16, patches: int = 4):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, 4, 4)
        self.cls = nn.Parameter(torch.randn(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, patches + 1, dim) * 0.1)
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, 2, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Dropout(0.1), nn.Linear(2 * dim, dim))

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        x = x + self.mlp(self.ln2(x))
        return x[:, 0]


class ConvNeXtBlock(nn.Module):
    """7x7 depthwise conv, LayerNorm over channels in channels-last, MLP, layer scale."""

    def __init__(self, dim: int = 8):
        super().__init__()
        self.dw = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.rand(dim))

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.gamma * self.fc2(F.gelu(self.fc1(self.norm(y))))
        return x + y.permute(0, 3, 1, 2)


def conv_bn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, act: nn.Module | None = None):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, *([act] if act is not None else []))


class InvertedResidual(nn.Module):
    """MobileNetV2/V3: expand, depthwise, squeeze-excite (hardsigmoid), project, residual."""

    def __init__(self, dim: int = 8, expand: int = 3):
        super().__init__()
        hidden = dim * expand
        self.expand = conv_bn(dim, hidden, 1, act=nn.ReLU6(inplace=True))
        self.dw = conv_bn(hidden, hidden, 3, groups=hidden, act=nn.Hardswish(inplace=True))
        self.se1, self.se2 = nn.Conv2d(hidden, 4, 1), nn.Conv2d(4, hidden, 1)
        self.project = conv_bn(hidden, dim, 1)

    def forward(self, x):
        y = self.dw(self.expand(x))
        s = F.adaptive_avg_pool2d(y, 1)
        y = y * F.hardsigmoid(self.se2(F.relu(self.se1(s), inplace=True)), inplace=True)
        return x + self.project(y)


class BasicBlock(nn.Module):
    """ResNet: conv-bn-relu(inplace) twice, a strided 1x1 downsample, `out += identity`."""

    def __init__(self, cin: int = 4, cout: int = 8):
        super().__init__()
        self.c1 = conv_bn(cin, cout, 3, 2, act=nn.ReLU(inplace=True))
        self.c2 = conv_bn(cout, cout, 3)
        self.down = conv_bn(cin, cout, 1, 2)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        identity = self.down(x)
        out = self.c2(self.c1(x))
        out += identity
        return self.relu(out)


class DenseBlock(nn.Module):
    """DenseNet: each layer reads the concatenation of all earlier features; a transition."""

    def __init__(self, cin: int = 4, growth: int = 4, layers: int = 3):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.Sequential(nn.BatchNorm2d(cin + i * growth), nn.ReLU(inplace=True),
                          nn.Conv2d(cin + i * growth, growth, 3, padding=1, bias=False))
            for i in range(layers)
        )
        c = cin + layers * growth
        self.transition = nn.Sequential(nn.BatchNorm2d(c), nn.ReLU(inplace=True), nn.Conv2d(c, c // 2, 1),
                                        nn.AvgPool2d(2))

    def forward(self, x):
        features = [x]
        for layer in self.layers:
            features.append(layer(torch.cat(features, 1)))
        return self.transition(torch.cat(features, 1))


class SequenceMixer(nn.Module):
    """A recurrence-free sequence model: causal prefix sums, shifted and reversed copies, a gather
    by a fixed permutation, a causal attention with a triu mask buffer, and a masked mean."""

    def __init__(self, dim: int = 8, length: int = 6):
        super().__init__()
        self.inp = nn.Linear(dim, dim)
        self.mix = nn.Linear(4 * dim, dim)
        self.register_buffer("perm", torch.randperm(length))
        self.register_buffer("causal", torch.triu(torch.ones(length, length, dtype=torch.bool), 1))

    def forward(self, x):
        h = self.inp(x)
        prefix = h.cumsum(1) / torch.arange(1, h.shape[1] + 1, dtype=h.dtype).view(1, -1, 1)
        shifted = torch.roll(h, 1, dims=1)
        rev = torch.flip(h, [1])
        gathered = torch.gather(h, 1, self.perm.view(1, -1, 1).expand(h.shape[0], -1, h.shape[2]))
        h = self.mix(torch.cat([prefix, shifted, rev + gathered, h], -1))
        scores = (h @ h.transpose(1, 2)).masked_fill(self.causal, float("-inf"))
        h = torch.softmax(scores, -1) @ h
        keep = (x.sum(-1, keepdim=True) > 0).float()
        return (h * keep).sum(1) / keep.sum(1).clamp(min=1.0)


class LlamaBlock(nn.Module):
    """A decoder layer in the Llama style: RMSNorm (pow, mean, rsqrt), rotary position embedding
    from cos/sin buffers (halves swapped by cat), causal scaled_dot_product_attention, a SiLU
    gated MLP; and an additive padding mask built at run time from the input."""

    def __init__(self, dim: int = 16, heads: int = 2, length: int = 6):
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.w1, self.w2 = nn.Parameter(torch.rand(dim) + 0.5), nn.Parameter(torch.rand(dim) + 0.5)
        self.qkv, self.o = nn.Linear(dim, 3 * dim, bias=False), nn.Linear(dim, dim, bias=False)
        self.gate, self.up = nn.Linear(dim, 2 * dim, bias=False), nn.Linear(dim, 2 * dim, bias=False)
        self.down = nn.Linear(2 * dim, dim, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        angles = torch.outer(torch.arange(length).float(), inv)
        self.register_buffer("cos", torch.cat([angles, angles], -1).cos())
        self.register_buffer("sin", torch.cat([angles, angles], -1).sin())

    @staticmethod
    def rms(x, w):
        return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))

    def rotate(self, t):
        a, b = t.chunk(2, dim=-1)
        return t * self.cos + torch.cat([-b, a], -1) * self.sin

    def forward(self, x):
        B, L, D = x.shape
        q, k, v = self.qkv(self.rms(x, self.w1)).view(B, L, 3, self.heads, self.hd).permute(2, 0, 3, 1, 4).unbind(0)
        h = F.scaled_dot_product_attention(self.rotate(q), self.rotate(k), v, is_causal=True)
        x = x + self.o(h.transpose(1, 2).reshape(B, L, D))
        y = self.rms(x, self.w2)
        x = x + self.down(F.silu(self.gate(y)) * self.up(y))
        pad = (x[..., :1] > -1.0).float()  # a run-time mask, as HF builds from attention_mask
        return x + (1.0 - pad) * torch.finfo(torch.float32).min

"""A stock nn.TransformerEncoderLayer through torch.compile(backend="irc").

    python examples/transformer_encoder.py

No `import irc` is needed: irc registers itself as a Dynamo backend through the
`torch_dynamo_backends` entry point. Dynamo traces the layer (under no_grad, its fused fast path
`torch._transformer_encoder_layer_fwd`), and irc compiles the graph it hands over: attention
becomes one `irt.attention` kernel, the linears absorb bias, ReLU and residual adds.
"""

from __future__ import annotations

import logging

import torch
from torch import nn

logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")  # shows any eager fallback
torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True).eval()
x = torch.randn(1, 128, 256)

compiled = torch.compile(layer, backend="irc")
with torch.no_grad():
    got, expected = compiled(x), layer(x)
torch.testing.assert_close(got, expected)
print(f"torch.compile(backend='irc') matches eager: max |diff| = {(got - expected).abs().max().item():.2e}")

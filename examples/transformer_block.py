"""Compile a hand-written transformer block with irc and compare it with eager PyTorch.

    python examples/transformer_block.py

The block (irc/models/transformer.py) writes attention out by hand: q @ k^T / sqrt(d), softmax,
@ v. irc imports it as batch_matmul, div, softmax and batch_matmul ops; the `attention` fusion
rule turns them into one `irt.attention` kernel (online softmax, no scores matrix), LayerNorm is
one `irt.layer_norm` kernel, and the linears absorb their bias, GELU and residual adds.
"""

from __future__ import annotations

import re
import time

import torch

import irc
from irc.models.transformer import TransformerBlock

torch.manual_seed(0)
block = TransformerBlock(d_model=256, n_heads=4, d_ff=1024, seq_len=128).eval()
x = torch.randn(1, 128, 256)

cm = irc.compile(block, (x,))
with torch.no_grad():
    expected = block(x)
torch.testing.assert_close(cm(x), expected)
print(f"max |irc - eager| = {(cm(x) - expected).abs().max().item():.2e}")

print("\nkernels in the generated C++:")
for kernel in re.findall(r"// kernel \d+: (.*)", cm.cpp_source):
    print("  ", kernel)

print("\nthe attention, after fusion:")
print("\n".join(line for line in cm.ir("fused").splitlines() if "irt.attention" in line))


def median_ms(fn, repeats: int = 20) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return sorted(times)[len(times) // 2]


with torch.no_grad():
    print(f"\neager {median_ms(lambda: block(x)):.2f} ms, irc {median_ms(lambda: cm(x)):.2f} ms "
          f"({torch.get_num_threads()} threads)")

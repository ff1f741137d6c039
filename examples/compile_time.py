"""Cold and warm `irc.compile` times of a long graph, each in a fresh process.

    python examples/compile_time.py [relu|mixed] [N]

`relu N`: a chain of N relus; `mixed N`: N/4 blocks of linear, add, relu and layer_norm (d=16).
The first run compiles with an empty cache directory (every pass, g++); the second, a new
process on the same directory, is a warm hit of the pipeline cache (no pass runs; folding is
recomputed from the weights). Prints both, and checks the result against eager.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time


def model(kind: str, n: int):
    import torch
    from torch import nn

    class Chain(nn.Module):
        def forward(self, x):
            for _ in range(n):
                x = torch.relu(x)
            return x

    class Mixed(nn.Module):
        def __init__(self, blocks: int, d: int = 16):
            super().__init__()
            self.lins = nn.ModuleList(nn.Linear(d, d) for _ in range(blocks))
            self.lns = nn.ModuleList(nn.LayerNorm(d) for _ in range(blocks))

        def forward(self, x):
            for lin, ln in zip(self.lins, self.lns):
                x = ln(torch.relu(lin(x) + x))
            return x

    torch.manual_seed(0)
    return (Chain() if kind == "relu" else Mixed(n // 4).eval()), (torch.randn(4, 16),)


def once(kind: str, n: int) -> None:
    import torch

    import irc

    m, inputs = model(kind, n)
    start = time.perf_counter()
    cm = irc.compile(m, inputs)
    seconds = time.perf_counter() - start
    with torch.no_grad():
        torch.testing.assert_close(cm(*inputs), m(*inputs), rtol=1e-4, atol=1e-4)
    print(f"{seconds:.2f}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--once":
        once(sys.argv[2], int(sys.argv[3]))
        return
    kind = sys.argv[1] if len(sys.argv) > 1 else "mixed"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 600
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "IRC_CACHE_DIR": cache}
        run = [sys.executable, __file__, "--once", kind, str(n)]
        cold = subprocess.run(run, env=env, check=True, capture_output=True, text=True).stdout.split()[-1]
        warm = subprocess.run(run, env=env, check=True, capture_output=True, text=True).stdout.split()[-1]
    print(f"{kind} N={n}: irc.compile cold {cold} s, warm (new process, pipeline cache hit) {warm} s")


if __name__ == "__main__":
    main()

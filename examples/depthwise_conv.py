"""Depthwise convolution layers (conv-BN-ReLU6, MobileNet-v2's and ConvNeXt's shapes) in irc
against eager PyTorch: the measurement behind `nn.lower_depthwise_conv2d`.

    python examples/depthwise_conv.py [--threads 1] [--repeat 3]

For each layer: compile it with irc (BN folded, ReLU6 fused), check it against eager, then time
eager and irc interleaved (`--repeat` rounds of 30 calls each after a warm-up; the median call
of each round, then the median round). Prints both times and irc / eager.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch import nn

import irc

# (channels, height = width, kernel, stride)
LAYERS = [(32, 112, 3, 1), (96, 112, 3, 2), (144, 56, 3, 1), (144, 56, 3, 2), (192, 28, 3, 1), (384, 14, 3, 1),
          (960, 7, 3, 1), (32, 112, 5, 1), (96, 56, 7, 1), (64, 28, 7, 1), (128, 14, 7, 1)]


def median_call(f, x, calls: int = 30) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        f(x)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    for c, hw, k, s in LAYERS:
        model = nn.Sequential(nn.Conv2d(c, c, k, stride=s, padding=k // 2, groups=c), nn.BatchNorm2d(c), nn.ReLU6())
        model = model.eval()
        x = torch.randn(1, c, hw, hw)
        cm = irc.compile(model, (x,), target=irc.Target.host(threads=args.threads))
        with torch.no_grad():
            torch.testing.assert_close(cm(x), model(x))
            for f in (model, cm):
                median_call(f, x, 5)
            rounds = [(median_call(model, x), median_call(cm, x)) for _ in range(args.repeat)]
        eager, ours = (statistics.median(r[i] for r in rounds) * 1e3 for i in (0, 1))
        print(f"{c:4d} ch {hw:3d}x{hw:<3d} k{k} s{s}: eager {eager:.3f} ms  irc {ours:.3f} ms  irc/eager {ours / eager:.2f}",
              flush=True)


if __name__ == "__main__":
    main()

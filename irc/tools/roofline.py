"""This machine's roofline: measured peak FP32 FLOP rate and memory bandwidth.

Both come from two small kernels built with the same compiler and flags as irc's own code: a
loop of independent fused multiply-adds as wide as the build's vectors (16 floats with AVX-512,
as irc's GEMM tile uses, else 8; the compute roof) and a sum over a 64 MiB array (the memory
roof, streaming reads): `roofline.cpp`, next to this file.
"""

from __future__ import annotations

import ctypes
import os
import time
from dataclasses import dataclass
from pathlib import Path

from irc.runtime import build_library, load_library

SOURCE = Path(__file__).with_name("roofline.cpp")
CHAINS = 12  # independent FMA chains in `irc_peak` (roofline.cpp)


@dataclass(frozen=True)
class Roofline:
    threads: int
    peak_gflops: float
    bandwidth_gbs: float

    def attainable(self, intensity: float) -> float:
        """GFLOP/s reachable at `intensity` FLOP/byte."""
        return min(self.peak_gflops, self.bandwidth_gbs * intensity)


def _best(fn, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def measure(threads: int) -> Roofline:
    import torch

    lib = load_library(build_library(SOURCE.read_text()))
    lib.irc_peak.argtypes = [ctypes.c_int64, ctypes.c_int]
    lib.irc_peak.restype = ctypes.c_float
    lib.irc_stream.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int]
    lib.irc_stream.restype = ctypes.c_float
    iters = 2_000_000
    t = _best(lambda: lib.irc_peak(iters, threads))
    peak = 2 * lib.irc_peak_lanes() * CHAINS * iters * threads / t / 1e9
    data = torch.ones(16 * 1024 * 1024)  # 64 MiB: beyond the last-level cache
    t = _best(lambda: lib.irc_stream(data.data_ptr(), data.numel(), threads))
    return Roofline(threads, peak, data.numel() * 4 / t / 1e9)


def roofline(threads: int | None = None) -> Roofline:
    """The roofline for `threads` (default: torch's thread count), measured now (about 2 s).

    Not cached: a measurement taken while other processes hold the cores would stick. Set
    IRC_PEAK_GFLOPS and IRC_BANDWIDTH_GBS to use known figures instead.
    """
    import torch

    threads = threads or torch.get_num_threads()
    peak, bandwidth = os.environ.get("IRC_PEAK_GFLOPS"), os.environ.get("IRC_BANDWIDTH_GBS")
    if peak and bandwidth:
        return Roofline(threads, float(peak), float(bandwidth))
    return measure(threads)

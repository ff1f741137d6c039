"""This machine's roofline: measured peak FP32 FLOP rate and memory bandwidth.

Both come from two small kernels built with the same compiler and flags as irc's own code: a
loop of independent fused multiply-adds as wide as the build's vectors (16 floats with AVX-512,
as irc's GEMM tile uses, else 8; or `lanes` wide, e.g. `Target.host().vector_width`; the compute
roof) and a sum over a 64 MiB array (the memory roof, streaming reads): `roofline.cpp`, next to
this file. `peak_gflops` measures the compute roof alone (`irc bench`'s "% of peak").
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


def _library(lanes: int | None) -> ctypes.CDLL:
    """roofline.cpp built (and cached) with `lanes`-wide FMA vectors (None: the build's own width)."""
    if lanes is not None and lanes not in (4, 8, 16):
        raise ValueError(f"lanes must be 4, 8 or 16 (a Target's vector width), got {lanes!r}")
    prefix = "" if lanes is None else f"#define IRC_LANES {lanes}\n"
    lib = load_library(build_library(prefix + SOURCE.read_text()))
    lib.irc_peak.argtypes = [ctypes.c_int64, ctypes.c_int]
    lib.irc_peak.restype = ctypes.c_float
    lib.irc_stream.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int]
    lib.irc_stream.restype = ctypes.c_float
    return lib


def _peak(lib: ctypes.CDLL, threads: int, repeats: int = 5) -> float:
    """GFLOP/s of `irc_peak` at `threads`: the best of `repeats` runs of 2M iterations per thread."""
    iters = 2_000_000
    t = _best(lambda: lib.irc_peak(iters, threads), repeats)
    return 2 * lib.irc_peak_lanes() * CHAINS * iters * threads / t / 1e9


def peak_gflops(threads: int, lanes: int | None = None) -> float:
    """The FMA peak in GFLOP/s at `threads` with `lanes`-wide vectors, measured now: the best of
    ten runs (about 0.5 s; it comes out low when other processes hold the cores all along).
    IRC_PEAK_GFLOPS overrides it, as in `roofline`."""
    if known := os.environ.get("IRC_PEAK_GFLOPS"):
        return float(known)
    return _peak(_library(lanes), threads, repeats=10)


def measure(threads: int, lanes: int | None = None) -> Roofline:
    import torch

    lib = _library(lanes)
    peak = _peak(lib, threads)
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

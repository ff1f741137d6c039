"""Where OpenMP starts paying off on this machine: the measurement behind irc-parallelize's threshold.

    python examples/omp_threshold.py [--threads 2] [--repeat 9]

For elementwise nests of growing size (`x * sigmoid(x)` fused: about 8 ops per element) and
additions (4 ops per element: two loads, the add, the store; memory-bound), builds the same
kernel with and without `#pragma omp parallel for` (irc-parallelize with threshold 0 and with an
infinite one) and times the bare native call, interleaved, median of `--repeat` rounds. Prints work (irc.work) and both times.
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import timeit

import torch
from xdsl.parser import Parser

from irc.context import irc_context
from irc.lowering.cpp.emit_cpp import emit_cpp
from irc.lowering.loops.parallelize import WORK_ATTR, ParallelizePass
from irc.lowering.tensor.irc_fuse import IrcFusePass
from irc.lowering.to_loops.irc_to_loops import IrcToLoopsPass  # noqa: F401  (first: import order)
from irc.runtime import build_library, load_library

SILU = """func.func @k(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %s = irt.sigmoid %x : tensor<{n}xf32>
  %r = irt.mul %x, %s : (tensor<{n}xf32>, tensor<{n}xf32>) -> tensor<{n}xf32>
  func.return %r : tensor<{n}xf32>
}}"""
ADD = """func.func @k(%x: tensor<{n}xf32>, %y: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %r = irt.add %x, %y : (tensor<{n}xf32>, tensor<{n}xf32>) -> tensor<{n}xf32>
  func.return %r : tensor<{n}xf32>
}}"""


def build(text: str, threshold: int):
    ctx = irc_context()
    module = Parser(ctx, text).parse_module()
    IrcFusePass().apply(ctx, module)
    IrcToLoopsPass().apply(ctx, module)
    ParallelizePass(threshold=threshold).apply(ctx, module)
    work = max(op.attributes[WORK_ATTR].value.data for op in module.walk() if WORK_ATTR in op.attributes)
    lib = load_library(build_library(emit_cpp(module)))
    lib.irc_set_num_threads.argtypes = [ctypes.c_int]
    return lib, work


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args()
    cases = [("silu", SILU.format(n=n), [(n,)]) for n in (256, 1024, 2048, 4096, 8192, 16384, 65536)]
    cases += [("add", ADD.format(n=n), [(n,), (n,)]) for n in (1024, 4096, 8192, 16384, 65536, 262144)]
    print(f"{'kernel':<8} {'shape':<16} {'work':>9} {'serial us':>10} {'omp us':>8}  faster")
    for name, text, shapes in cases:
        tensors = [torch.randn(s) for s in shapes]
        out = torch.empty(shapes[0])
        ptrs = [t.data_ptr() for t in tensors] + [out.data_ptr()]
        (serial, work), (omp, _) = build(text, 1 << 62), build(text, 0)
        calls = {}
        for label, lib in (("serial", serial), ("omp", omp)):
            lib.irc_set_num_threads(args.threads)
            fn = lib.k
            fn.argtypes = [ctypes.c_void_p] * len(ptrs)
            calls[label] = lambda fn=fn, ptrs=ptrs: fn(*ptrs)
        number = max(20, int(2e6 // max(work, 1)))
        times = {k: [] for k in calls}
        for _ in range(args.repeat):
            for k, f in calls.items():
                times[k].append(timeit.timeit(f, number=number) / number * 1e6)
        s, o = statistics.median(times["serial"]), statistics.median(times["omp"])
        shape = "x".join(map(str, shapes[-1]))
        print(f"{name:<8} {shape:<16} {work:>9} {s:>10.2f} {o:>8.2f}  {'omp' if o < s else 'serial'}")


if __name__ == "__main__":
    main()

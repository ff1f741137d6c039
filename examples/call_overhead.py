"""What irc's Python wrapper adds over a bare ctypes call.

    python examples/call_overhead.py [--model NAME] [--repeat 15] [--number 20000]

Without --model, compiles `relu(x + 1)` on a 4-element input (the native work is a few
nanoseconds); with it, a built-in model (irc.models). Times, interleaved, the medians (and
p10/p90) of `--repeat` rounds of `--number` calls each:
  raw ctypes   the entry point, one ctypes argument per buffer, pointers precomputed (outputs
               and arena preallocated): what "a bare ctypes call" costs
  raw argv     the `__argv` twin the wrapper calls: one pointer array, precomputed
  forward      the generated wrapper: checks the inputs, allocates the outputs, follows the
               thread count, fills this thread's pointer array, calls once
  cm(x)        CompiledModule.__call__: the whole call made in one C call (the weight guard, the
               fold plan's check, inputs, outputs, thread count and the native code:
               runtime/native_guard.py fast_call)
  cm(x) Python the same call through the Python path (the weight guard's checks, the fold
               plan's, then the generated wrapper), as where the native call gives way
  eager        the model in PyTorch, for scale
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import timeit

import torch

import irc
from irc.models import get_model
from irc.runtime import load_library
from irc.runtime.wrapper import ARGV_SUFFIX


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="a built-in model (default: relu(x + 1) on 4 floats)")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--number", type=int, default=20000)
    args = ap.parse_args()

    if args.model:
        model, inputs = get_model(args.model).build()
    else:
        model, inputs = (lambda x: torch.relu(x + 1.0)), (torch.randn(4),)
    cm = irc.compile(model, inputs)
    version = next(iter(cm.versions.values()))
    lib = load_library(cm.library_path)
    fn = getattr(lib, version.graph.func_name)
    outs = [torch.empty(s) for s in version.graph.output_shapes]
    arena = torch.empty(max(1, version.memory["arena_bytes"]) // 4 + 16)
    ptrs = [x.data_ptr() for x in inputs] + [p.data_ptr() for p in version.bound] + [o.data_ptr() for o in outs]
    ptrs += [arena.data_ptr() + (-arena.data_ptr()) % 64] if version.memory["arena_bytes"] else []
    fn.argtypes, fn.restype = [ctypes.c_void_p] * len(ptrs), None
    argv, array = getattr(lib, version.graph.func_name + ARGV_SUFFIX), (ctypes.c_void_p * len(ptrs))(*ptrs)
    python = irc.compile(model, inputs)  # (the build cache's copy)
    with torch.no_grad():
        for _ in range(2):  # the native call is made at the second call
            torch.testing.assert_close(cm(*inputs), model(*inputs))
        python._fast = False  # never made: each call takes the Python path
        torch.testing.assert_close(python(*inputs), model(*inputs))
    candidates = {
        "raw ctypes": lambda: fn(*ptrs),
        "raw argv": lambda: argv(array),
        "forward": lambda: version.forward(*inputs),
        "cm(x)": lambda: cm(*inputs),
        "cm(x) Python": lambda: python(*inputs),
        "eager": lambda: model(*inputs),
    }
    times: dict[str, list[float]] = {k: [] for k in candidates}
    with torch.no_grad():
        for _ in range(args.repeat):  # interleaved rounds
            for name, f in candidates.items():
                times[name].append(timeit.timeit(f, number=args.number) / args.number * 1e6)
    raw = statistics.median(times["raw ctypes"])
    print(f"{args.model or 'relu(x + 1), 4 floats'}: {len(ptrs)} pointer arguments")
    print(f"{'call':<13} {'median us':>10} {'p10':>7} {'p90':>7} {'over raw':>9}")
    for name, ts in times.items():
        q = statistics.quantiles(ts, n=10)
        med = statistics.median(ts)
        print(f"{name:<13} {med:>10.2f} {q[0]:>7.2f} {q[-1]:>7.2f} {med - raw:>+9.2f}")


if __name__ == "__main__":
    main()

"""A GEMM with a run-time M against the same GEMM compiled for one M: the measurement behind
"symbolic sizes cost nothing" (issue 12).

    python examples/symbolic_gemm.py [--threads 1] [--rounds 8]

For M x 256 x 256 (M = 128 and 1, the prefill and decode shapes of a 256-wide layer), builds
`irt.contract packed` (weights in the engine's panels, bias epilogue) twice through the
declared pipeline: once with M static, once with M the symbol s0 (its tiles computed at call
time). A small C++ driver calls each entry point in a loop (no ctypes in the timing); the best
of `--rounds` interleaved runs is printed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
from pathlib import Path

from xdsl.parser import Parser

from irc.context import irc_context
from irc.lowering.cpp.emit_cpp import emit_cpp
from irc.lowering.to_loops.irc_to_loops import IrcToLoopsPass  # noqa: F401  (first: import order)
from irc.pipeline import declared
from irc.target import Target

IR = """
func.func @f(%x: {t}, %wp: tensor<16x256x16xf32>, %b: tensor<256xf32>) -> {t} {{
  %y = irt.contract packed %x, %wp epilogue(%b : tensor<256xf32>) : ({t}, tensor<16x256x16xf32>) -> {t} {{
  ^bb0(%acc: f32, %bias: f32):
    %s = arith.addf %acc, %bias : f32
    irt.yield %s : f32
  }}
  func.return %y : {t}
}}
"""

DRIVER = """
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
int main(int argc, char** argv) {{
  const int64_t m = atoll(argv[1]); const int reps = atoi(argv[2]);
  std::vector<float> x(m * 256 + 1, 0.5f), w(16 * 256 * 16, 0.01f), b(256, 0.1f), y(m * 256 + 1);
  for (int r = 0; r < reps / 10 + 1; ++r) {call};  // warm up
  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) {call};
  auto t1 = std::chrono::steady_clock::now();
  printf("%.3f\\n", std::chrono::duration<double, std::micro>(t1 - t0).count() / reps);
}}
"""


def build(m: int, symbolic: bool, threads: int, out: Path) -> Path:
    t = 'tensor<?x256xf32, #irt.dims<"s0">>' if symbolic else f"tensor<{m}x256xf32>"
    module = Parser(irc_context(), IR.format(t=t)).parse_module()
    declared(Target(threads=threads), inputs=3).apply(irc_context(), module)
    call = "f(m, x.data(), w.data(), b.data(), y.data())" if symbolic else "f(x.data(), w.data(), b.data(), y.data())"
    src = out / f"{'sym' if symbolic else 'static'}{m}.cpp"
    src.write_text(emit_cpp(module) + DRIVER.format(call=call))
    exe = src.with_suffix("")
    subprocess.run(["g++", "-O3", "-march=native", "-fopenmp", "-std=c++17", str(src), "-o", str(exe)], check=True)
    return exe


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
    with tempfile.TemporaryDirectory() as d:
        for m, reps in ((128, 200), (1, 20000)):
            exes = {kind: build(m, kind == "symbolic", args.threads, Path(d)) for kind in ("static", "symbolic")}
            best = {kind: float("inf") for kind in exes}
            for _ in range(args.rounds):
                for kind, exe in exes.items():
                    run = subprocess.run([str(exe), str(m), str(reps)], env=env, capture_output=True, text=True, check=True)
                    best[kind] = min(best[kind], float(run.stdout))
            print(f"{m}x256x256, {args.threads} thread(s): static {best['static']:.2f} us, "
                  f"symbolic M {best['symbolic']:.2f} us")


if __name__ == "__main__":
    main()

"""The generated code's C++ runtime lives in real header files (lowering/cpp/include), pasted into
every translation unit by the emitter."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from irc import pipeline
from irc.lowering.cpp.headers import INCLUDE_DIR, header


def test_local_includes_are_pasted_once():
    prelude = header("irc_prelude.h")
    assert '#include "' not in prelude
    assert prelude.count("template <class F> IRC_MATH F irc_exp(F x) {") == 1  # irc_math.h, pasted
    assert (INCLUDE_DIR / "irc_math.h").read_text() in prelude


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_headers_compile_as_headers(tmp_path: Path):
    """Included (not pasted) from their directory, the headers form a valid translation unit."""
    src = tmp_path / "t.cpp"
    src.write_text(
        '#include "irc_prelude.h"\n#define IRC_NR 16\n#include "irc_gemm.h"\n'
        '#define IRC_PROFILE_KERNELS 1\n#define IRC_PROFILE_LABELS "k"\n#include "irc_profile.h"\n'
    )
    subprocess.run(["g++", "-std=c++17", "-fopenmp", "-fsyntax-only", "-Wall", "-Werror", f"-I{INCLUDE_DIR}", str(src)],
                   check=True)


def test_pipeline_cache_key_covers_the_headers(monkeypatch):
    """The pipeline cache stores the C++ source: editing a header must invalidate it."""
    monkeypatch.setattr(pipeline, "_code_digest", None)
    before = pipeline._code_version()
    read_bytes = Path.read_bytes

    def edited(self: Path) -> bytes:
        return read_bytes(self) + (b"// edited\n" if self.name == "irc_math.h" else b"")

    monkeypatch.setattr(Path, "read_bytes", edited)
    monkeypatch.setattr(pipeline, "_code_digest", None)
    assert pipeline._code_version() != before


PAD_ROW_TEST = r"""
#include "irc_prelude.h"
#define IRC_NR 32
#include "irc_gemm.h"
#include <sys/mman.h>
#include <unistd.h>
#include <cstdio>
#include <initializer_list>
// irc_pad_row and irc_vload_n against a source row that ends where an unreadable page begins
// (a read past the row faults), into a row between canaries (a write outside it shows).
int main() {
  const long page = sysconf(_SC_PAGESIZE);
  char* mem = static_cast<char*>(mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (mem == MAP_FAILED || mprotect(mem + page, page, PROT_NONE) != 0) return 2;
  float* end = reinterpret_cast<float*>(mem + page);
  float buf[128];
  int checked = 0;
  for (int64_t pw : {0, 1, 2, 3, 5, 16, 17})
    for (int64_t w = 0; w <= 40; ++w)
      for (int64_t extra : {0, 1, 2, 7, 17}) {
        const int64_t wp = pw + w + extra;
        float* src = end - w;
        for (int64_t i = 0; i < w; ++i) src[i] = 1.0f + i;
        for (float& f : buf) f = -7.0f;
        float* dst = buf + 8;
        irc_pad_row(dst, src, pw, w, wp);
        for (int64_t j = 0; j < 128; ++j) {
          const int64_t k = j - 8;
          const float want = k < 0 || k >= wp ? -7.0f : k < pw || k >= pw + w ? 0.0f : 1.0f + (k - pw);
          if (buf[j] != want) {
            printf("pad_row pw=%ld w=%ld wp=%ld: [%ld] = %g, not %g\n", (long)pw, (long)w, (long)wp, (long)k, buf[j], want);
            return 1;
          }
        }
        ++checked;
      }
  // irc_pad_rows: rows [r0, r0 + rows) of an H x W plane (its last row ending at the page)
  static float big[4096];
  for (int64_t H = 1; H <= 3; ++H)
    for (int64_t W = 1; W <= 40; ++W)
      for (int64_t pw : {0, 1, 3})
        for (int64_t extra : {0, 1, 5})
          for (int64_t r0 = -2; r0 <= 1; ++r0)
            for (int64_t rows = 1; rows <= H + 3; ++rows) {
              const int64_t wp = pw + W + extra;
              float* src = end - H * W;
              for (int64_t i = 0; i < H * W; ++i) src[i] = 1.0f + i;
              for (float& f : big) f = -7.0f;
              float* dst = big + 8;
              irc_pad_rows(dst, src, r0, rows, H, W, pw, wp);
              for (int64_t j = 0; j < 4096; ++j) {
                const int64_t k = j - 8, i = k / wp, col = k % wp, r = r0 + i;
                const float want = k < 0 || k >= rows * wp ? -7.0f
                                   : r < 0 || r >= H || col < pw || col >= pw + W ? 0.0f : 1.0f + r * W + (col - pw);
                if (big[j] != want) {
                  printf("pad_rows H=%ld W=%ld pw=%ld wp=%ld r0=%ld rows=%ld: [%ld] = %g, not %g\n", (long)H, (long)W,
                         (long)pw, (long)wp, (long)r0, (long)rows, (long)k, big[j], want);
                  return 1;
                }
              }
              ++checked;
            }
  for (int64_t n = 0; n <= IRC_VL; ++n) {
    const irc_vec v = irc_vload_n(end - n, n);
    for (int q = 0; q < IRC_VL; ++q)
      if (v[q] != (q < n ? (end - n)[q] : 0.0f)) { printf("vload_n n=%ld lane %d\n", (long)n, q); return 1; }
  }
  printf("ok %d\n", checked);
  return 0;
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
@pytest.mark.parametrize("lanes", [16, 8, 4])
def test_pad_row_reads_and_writes_only_its_row(tmp_path: Path, lanes: int):
    """A padded conv image's rows (irc_pad_row: zeros, the source row, zeros; irc_pad_rows: a block
    of them, rows outside the plane zero) at each vector width: exact, nothing read past the
    source, nothing written outside the padded rows; and irc_vload_n's lanes."""
    src = tmp_path / "t.cpp"
    src.write_text(PAD_ROW_TEST)
    exe = tmp_path / "t"
    subprocess.run(["g++", "-std=c++17", "-O2", "-march=native", "-fopenmp", f"-DIRC_VL={lanes}", f"-I{INCLUDE_DIR}",
                    str(src), "-o", str(exe)], check=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("ok ")


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_math_in_a_large_forward_is_inlined_and_vectorized(tmp_path: Path):
    """EfficientNet-B0's forward is one large function: there GCC's inliner reached its growth
    limits and left `irc_exp` (a SiLU epilogue's) an out-of-line function, so its 5x5 depthwise
    kernels could not vectorize and ran 8x slower (1.6 ms against 0.2 ms in a small unit). The
    math is always inlined: the object has no copy of it to call."""
    import torch
    from torch import nn

    import irc
    from irc.runtime import build

    class MBConv(nn.Module):  # EfficientNet-B0's stage 5 block: expand, depthwise 5x5, SE, project
        def __init__(self, c: int):
            super().__init__()
            e = 6 * c
            self.expand = nn.Sequential(nn.Conv2d(c, e, 1, bias=False), nn.BatchNorm2d(e), nn.SiLU())
            self.dw = nn.Sequential(nn.Conv2d(e, e, 5, padding=2, groups=e, bias=False), nn.BatchNorm2d(e), nn.SiLU())
            self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(e, c // 4, 1), nn.SiLU(), nn.Conv2d(c // 4, e, 1),
                                    nn.Sigmoid())
            self.project = nn.Sequential(nn.Conv2d(e, c, 1, bias=False), nn.BatchNorm2d(c))

        def forward(self, x):
            y = self.dw(self.expand(x))
            return x + self.project(y * self.se(y))

    model = nn.Sequential(*[MBConv(112) for _ in range(3)]).eval()
    cm = irc.compile(model, (torch.randn(1, 112, 14, 14),), target=irc.Target.host(vector_width=16), fallback=False)
    src = tmp_path / "forward.cpp"
    src.write_text(cm.cpp_source)
    flags = [f for f in build.default_flags() if f not in build.PARALLEL_LTO_FLAGS and f != "-shared"]
    subprocess.run(["g++", *flags, "-c", str(src), "-o", str(tmp_path / "f.o")], check=True)
    symbols = subprocess.run(["nm", "-C", str(tmp_path / "f.o")], check=True, capture_output=True, text=True).stdout
    outlined = re.findall(r" t (.*\birc_(?:exp|log|tanh|erf|maxf|minf|fma)\w*<?.*)", symbols)
    assert not outlined, outlined  # a call left in a loop: that loop is scalar

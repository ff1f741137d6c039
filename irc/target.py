"""The Target: everything about the machine and the user's choices that changes generated code.

A `Target` is built once per compile (`Target.host()`: the CPU, then the arguments, then the
environment) and handed to the passes as their options (`irc.pipeline.declared`), so that
`str(pass)` of every pass is an exact reproducer and no pass reads the environment or the CPU
itself. `irc-opt` runs the same passes with the options written on its command line; the options'
defaults are `Target()`'s (AVX2-shaped: 16-wide GEMM panels, 8 lanes, not strict), the same on every
host, so a golden's output depends on its RUN line only.

    >>> t = Target.host()
    >>> t.isa, t.vector_width, t.gemm_width, t.threads

Fields:
  isa            "avx512", "avx2" or "portable" (what -march=native gives the vector code)
  vector_width   float32 lanes of the vector code (elementwise loops, reductions, softmax and
                 layer_norm rows, the vector math, GEMM epilogues): the widest the ISA has
                 (16, 8 or 4), or narrower with `IRC_VECTOR_WIDTH` (forced widths keep
                 comparisons and goldens stable; wider than the ISA is refused)
  gemm_width     the GEMM micro-kernel's register tile width = the packed weight panels'
                 width: two vectors, 32 with AVX-512, else 16 (`IRC_GEMM_WIDTH` overrides)
  gemm_rows      the convolutions' register tile rows (`IRC_MR`: the height of the panels their
                 weights are packed in): 6 (12 vector accumulators, fits AVX2's 16
                 registers), or 8, 12, 14 (16-28 accumulators: AVX-512's 32 registers);
                 `IRC_GEMM_ROWS` overrides the ISA's default
  matmul_rows    the register tile rows of matrix products (linear layers, matmul, bmm,
                 attention; `IRC_MMR`), whose lhs is read in place, never packed: the same
                 choices; `IRC_MATMUL_ROWS` overrides the CPU's default (`matmul_rows_for`)
  strict         sequential-order sums, no FMA contraction, libm transcendentals, no GEMM
                 engine (`IRC_STRICT=1`; the README's numerics section)
  alignment      bytes every planned buffer in the arena is aligned to (16, 32 or 64; the
                 runtime aligns the arena itself to 64)
  omp_threshold  work (iterations x body ops) from which a loop nest runs on OpenMP threads
                 (`IRC_OMP_THRESHOLD`; examples/omp_threshold.py measured the default)
  threads        the thread count the GEMM blocking is chosen for (`IRC_NUM_THREADS`, else
                 torch's); calls may use another count, which is correct, only less balanced
  l1d, l2, l3    data cache sizes in bytes (sysfs; 0 when unknown)
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

GEMM_ROWS = 6
"""Rows of the GEMM engine's register tile (`IRC_MR` in the C++, the lhs panel height) by default."""
GEMM_ROWS_CHOICES = (6, 8, 12, 14)
"""Register tile heights the engine supports: 2 x rows accumulators + 2 rhs vectors + 1 broadcast
must fit the vector registers (16 with AVX2: 6 rows; 32 with AVX-512: up to 14)."""
DEFAULT_GEMM_ROWS = {"avx512": 6, "avx2": 6, "portable": 6}
"""The ISA's register tile height for convolutions. AVX-512 stays at 6, though 12 (24 of its 32
registers accumulating, each load of the B panel feeding 24 FMAs) is faster on most models at one thread.
Measured on an Intel Xeon (two 512-bit FMA ports), whole models, 6 -> 12 rows: one thread,
mlp-medium 1362 -> 1314 us, transformer-encoder 1531 -> 1461, transformer-block 1644 -> 1575,
ConvNeXt 2435 -> 2352, DenseNet 1349 -> 1325, MobileNet-v2 828 -> 822; two threads,
transformer-block 890 -> 863, mlp-medium 702 -> 674, but MobileNet-v2 628 -> 678 (+8%, one
process, alternating), while each of its convs alone at two threads was level or faster with
12 rows: the loss is in how the model's kernels run together, not found. Matrix products
have a tile height of their own (`DEFAULT_MATMUL_ROWS`). On a Zen 4 (double-pumped 512-bit FMA, one per cycle) 6, 8,
12 and 14 rows measured within 2% of each other (6 ahead). `IRC_GEMM_ROWS` overrides it
(`GEMM_ROWS_CHOICES`)."""
DEFAULT_MATMUL_ROWS = {"avx512": 12, "avx2": 6, "portable": 6}
"""The ISA's register tile height for matrix products. With AVX-512, 12: the tile (12 x 32
floats in 24 of 32 zmm registers) takes a broadcast per row and two loads of the B panel per
24 FMAs, against 6 rows' 12, and reads each B panel from L2 half as often. Measured on an Intel
Xeon, whole models, one process alternating, 6 -> 12: mlp-medium 1346 -> 1280 us (one thread),
707 -> 673 (two); transformer-encoder 1505 -> 1443; transformer-block 1614 -> 1559 and 884 ->
850; mlp-large level. (The K loop alone, one thread: with a packed lhs 163-166 GFLOP/s at 6 rows
and 178-181 at 12, of 215; with the lhs read in place, as products read it, 156-180 at 6
depending on its row stride and 160 at 12.) AVX2 has 16 registers: 6 rows. Not on CPUs that split
each 512-bit FMA into two 256-bit halves (`SPLIT_AVX512`): there 6 rows."""
SPLIT_AVX512 = {("AuthenticAMD", 0x19)}
"""(vendor, CPU family) of the CPUs with AVX-512 whose 512-bit FMAs issue as two 256-bit halves, one
per cycle (AMD Zen 4; Zen 3, the same family, has no AVX-512; Zen 5, family 0x1A, is full width).
Their matrix products take 6-row tiles (`matmul_rows_for`). Measured on a Zen 4 (peak 116 GFLOP/s
per core), one thread, 12 -> 6 rows: Linear 4096 -> 4096 + ReLU at batch 256 89.6 -> 104.8
GFLOP/s (KC 512 or 256 did not bring 12 rows near it: 91.8, 88.8); whole models, best of each
run's calls: mlp-medium 1.99 -> 1.79 ms, transformer-encoder 2.18 -> 2.04, transformer-block
2.26 -> 2.12."""
DEFAULT_OMP_THRESHOLD = 65536
DEFAULT_ALIGNMENT = 64
GEMM_WIDTHS = (16, 32)
PIXEL_ROWS = {32: 12, 16: 6}
"""Per GEMM panel width, the most output pixels in a register tile of the convolutions that run
with pixels as the tile's rows (`IRC_PR` in `include/irc_gemm.h`): 2 x 12 accumulators of
AVX-512's 32 registers, 2 x 6 of AVX2's 16. Measured on a Zen 4, ResNet-18's 512-channel 3x3 on
7x7: 6 rows 101 GFLOP/s, 8 rows 104, 12 rows 107. On an Intel Xeon 14 rows (rows of 56 in four
tiles of 14) measured ResNet-18 1.5% faster at one thread and DenseNet 1.2% slower, both level
at two threads (three alternating rounds): not worth two more tile heights to compile. Only rows
that 14 cuts evenly take it (`PIXEL_PAIR_ROWS`)."""
PIXEL_PAIR_ROWS = {32: 14, 16: 6}
"""Per GEMM panel width, the most output pixels in a two-row tile of those convolutions
(`IRC_PT`): where a row's tiles are at most half of it (a 7 or 14 wide plane's 7 pixels), a tile
takes the same columns of two rows (2 x 14 accumulators of AVX-512's 32; 2 x 6 of AVX2's 16).
Also the height of one-row tiles where it cuts a row evenly and `PIXEL_ROWS` does not (28, 56,
112: `pixel_run_rows`): ResNet-18 1-3% faster at one thread in four runs (Intel Xeon, one process,
alternating; 25.2 -> 24.3 ms and 28.1 -> 27.8 the extremes), level at two; its 7x7 stem and
64-channel 3x3s on 56x56 1-4% faster."""
ISAS = {"avx512": 16, "avx2": 8, "portable": 4}
"""ISA -> float32 lanes per vector register."""
VECTOR_WIDTHS = (4, 8, 16)


@dataclass(frozen=True)
class Target:
    isa: str = "avx2"
    gemm_width: int = 16
    strict: bool = False
    alignment: int = DEFAULT_ALIGNMENT
    omp_threshold: int = DEFAULT_OMP_THRESHOLD
    threads: int = 2
    l1d: int = 0
    l2: int = 0
    l3: int = 0
    gemm_rows: int = GEMM_ROWS
    matmul_rows: int = GEMM_ROWS
    vector_width: int = 0  # 0: the ISA's width (resolved in __post_init__)
    winograd: bool = True  # 3x3 stride-1 convs as Winograd F(2x2, 3x3) where `conv_winograd` picks them

    def __post_init__(self) -> None:
        if self.isa not in ISAS:
            raise ValueError(f"Target.isa must be one of {', '.join(ISAS)}, got {self.isa!r}")
        if self.gemm_width not in GEMM_WIDTHS:
            raise ValueError(f"Target.gemm_width must be 16 or 32, got {self.gemm_width!r}")
        for name in ("gemm_rows", "matmul_rows"):
            if getattr(self, name) not in GEMM_ROWS_CHOICES:
                raise ValueError(f"Target.{name} must be one of {GEMM_ROWS_CHOICES} (the C++ register tile's rows), "
                                 f"got {getattr(self, name)!r}")
        if self.vector_width == 0:  # frozen: set once, here
            object.__setattr__(self, "vector_width", ISAS[self.isa])
        if self.vector_width not in VECTOR_WIDTHS or self.vector_width > ISAS[self.isa]:
            widths = " or ".join(str(w) for w in VECTOR_WIDTHS if w <= ISAS[self.isa])
            raise ValueError(f"Target.vector_width must be {widths} on {self.isa} (float32 lanes per vector), "
                             f"got {self.vector_width!r}")
        if self.threads < 1 or self.omp_threshold < 0 or self.alignment not in (16, 32, 64):
            raise ValueError(f"invalid {self}: threads >= 1, omp_threshold >= 0 and alignment 16, 32 or 64 are needed")

    @classmethod
    def host(
        cls,
        *,
        strict: bool | None = None,
        gemm_width: int | None = None,
        gemm_rows: int | None = None,
        matmul_rows: int | None = None,
        omp_threshold: int | None = None,
        threads: int | None = None,
        vector_width: int | None = None,
        winograd: bool | None = None,
    ) -> Target:
        """This machine: the ISA and caches from the CPU, then each argument given, else its
        environment variable (`IRC_STRICT`, `IRC_GEMM_WIDTH`, `IRC_GEMM_ROWS`, `IRC_MATMUL_ROWS`,
        `IRC_OMP_THRESHOLD`, `IRC_NUM_THREADS`, `IRC_VECTOR_WIDTH`, `IRC_WINOGRAD`), else the default
        (the ISA's width for vectors; Winograd on).
        A bad environment value is a ValueError naming it."""
        from irc.runtime.build import cpu_features

        flags = set(cpu_features().split())
        isa = "avx512" if "avx512f" in flags else "avx2" if {"avx2", "fma"} <= flags else "portable"
        if strict is None:
            strict = os.environ.get("IRC_STRICT", "0") not in ("", "0")
        if gemm_width is None:
            gemm_width = _env_int("IRC_GEMM_WIDTH", 32 if isa == "avx512" else 16, choices=GEMM_WIDTHS)
        if gemm_rows is None:
            gemm_rows = _env_int("IRC_GEMM_ROWS", DEFAULT_GEMM_ROWS[isa], choices=GEMM_ROWS_CHOICES)
        if matmul_rows is None:
            matmul_rows = _env_int("IRC_MATMUL_ROWS", matmul_rows_for(isa, *cpu_model()), choices=GEMM_ROWS_CHOICES)
        if omp_threshold is None:
            omp_threshold = _env_int("IRC_OMP_THRESHOLD", DEFAULT_OMP_THRESHOLD)
        if threads is None:
            threads = _env_int("IRC_NUM_THREADS", 0) or _torch_threads()
        if vector_width is None:
            allowed = tuple(w for w in VECTOR_WIDTHS if w <= ISAS[isa])
            vector_width = _env_int("IRC_VECTOR_WIDTH", ISAS[isa], choices=allowed)
        if winograd is None:
            winograd = bool(_env_int("IRC_WINOGRAD", 1, choices=(0, 1)))
        l1d, l2, l3 = _cache_sizes()
        return cls(isa=isa, gemm_width=gemm_width, gemm_rows=gemm_rows, matmul_rows=matmul_rows, strict=strict,
                   omp_threshold=omp_threshold,
                   threads=threads, l1d=l1d, l2=l2, l3=l3, vector_width=vector_width, winograd=winograd)

    def replace(self, **changes) -> Target:
        return dataclasses.replace(self, **changes)

    def __str__(self) -> str:
        fields = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self))
        return f"Target({fields})"


def matmul_rows_for(isa: str, vendor: str, family: int) -> int:
    """The default register tile rows of matrix products on a CPU of this ISA, vendor and family
    (`DEFAULT_MATMUL_ROWS`, 6 where AVX-512 is split in halves: `SPLIT_AVX512`)."""
    if isa == "avx512" and (vendor, family) in SPLIT_AVX512:
        return 6
    return DEFAULT_MATMUL_ROWS[isa]


def cpu_model() -> tuple[str, int]:
    """(vendor, CPU family) of CPU 0 (`/proc/cpuinfo`); ("", 0) where it does not say."""
    from irc.runtime.build import cpu_info

    info = cpu_info()
    family = info.get("cpu family", "")
    return info.get("vendor_id", ""), int(family) if family.isdigit() else 0


def _env_int(name: str, default: int, choices: tuple[int, ...] | None = None) -> int:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        n = int(value)
    except ValueError:
        n = -1
    if n < 0 or (choices is not None and n not in choices):
        allowed = " or ".join(map(str, choices)) if choices else "a non-negative integer"
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return n


def _torch_threads() -> int:
    import torch

    return max(1, torch.get_num_threads())


_caches: tuple[int, int, int] | None = None


def _cache_sizes() -> tuple[int, int, int]:
    """(L1d, L2, L3) bytes of CPU 0 from sysfs; 0 for a level it does not report."""
    global _caches
    if _caches is None:
        sizes = {}
        for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
            try:
                level = int((index / "level").read_text())
                kind = (index / "type").read_text().strip()
                size = (index / "size").read_text().strip()
            except (OSError, ValueError):
                continue
            if kind == "Instruction":
                continue
            scale = {"K": 1024, "M": 1024 * 1024}.get(size[-1:], 1)
            sizes[level] = int(size.rstrip("KM")) * scale
        _caches = (sizes.get(1, 0), sizes.get(2, 0), sizes.get(3, 0))
    return _caches

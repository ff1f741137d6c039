"""The Target (irc/target.py): built once from the CPU, the arguments and the environment, and
handed to the passes as options; no pass reads the environment itself."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

import irc
from irc.pipeline import declared, spelled
from irc.target import DEFAULT_GEMM_ROWS, DEFAULT_MATMUL_ROWS, Target, cpu_model, matmul_rows_for

ENV = ("IRC_STRICT", "IRC_GEMM_WIDTH", "IRC_GEMM_ROWS", "IRC_MATMUL_ROWS", "IRC_OMP_THRESHOLD", "IRC_NUM_THREADS",
       "IRC_VECTOR_WIDTH", "IRC_WINOGRAD")


@pytest.fixture
def clean_env(monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_host_reads_the_cpu_then_arguments_then_environment(clean_env):
    host = Target.host()
    assert host.isa in ("avx512", "avx2", "portable")
    assert host.gemm_width == (32 if host.isa == "avx512" else 16)
    assert host.vector_width == {"avx512": 16, "avx2": 8, "portable": 4}[host.isa]
    assert host.threads == torch.get_num_threads() and not host.strict
    assert host.gemm_rows == DEFAULT_GEMM_ROWS[host.isa] and host.matmul_rows == matmul_rows_for(host.isa, *cpu_model())
    assert host.winograd
    clean_env.setenv("IRC_WINOGRAD", "0")
    assert not Target.host().winograd and Target.host(winograd=True).winograd
    clean_env.setenv("IRC_WINOGRAD", "2")
    with pytest.raises(ValueError, match="IRC_WINOGRAD"):
        Target.host()
    clean_env.delenv("IRC_WINOGRAD")
    clean_env.setenv("IRC_STRICT", "1")
    clean_env.setenv("IRC_GEMM_WIDTH", "16")
    clean_env.setenv("IRC_GEMM_ROWS", "12")
    clean_env.setenv("IRC_MATMUL_ROWS", "8")
    clean_env.setenv("IRC_OMP_THRESHOLD", "7")
    clean_env.setenv("IRC_NUM_THREADS", "3")
    t = Target.host()
    assert (t.strict, t.gemm_width, t.gemm_rows, t.matmul_rows, t.omp_threshold, t.threads) == (True, 16, 12, 8, 7, 3)
    t = Target.host(strict=False, gemm_width=32, gemm_rows=14, matmul_rows=6, omp_threshold=0, threads=1)  # arguments win
    assert (t.strict, t.gemm_width, t.gemm_rows, t.matmul_rows, t.omp_threshold, t.threads) == (False, 32, 14, 6, 0, 1)
    clean_env.setenv("IRC_VECTOR_WIDTH", "4")  # a forced width, narrower than the ISA's
    assert Target.host().vector_width == 4 and Target.host(vector_width=host.vector_width).vector_width == host.vector_width


def test_matmul_rows_follow_the_cpu_model():
    """12-row product tiles where 512-bit FMAs are full width; 6 where they issue in halves (Zen 4)."""
    assert matmul_rows_for("avx512", "GenuineIntel", 6) == DEFAULT_MATMUL_ROWS["avx512"] == 12
    assert matmul_rows_for("avx512", "AuthenticAMD", 0x1A) == 12  # Zen 5: full-width AVX-512
    assert matmul_rows_for("avx512", "AuthenticAMD", 0x19) == 6  # Zen 4
    assert matmul_rows_for("avx2", "AuthenticAMD", 0x19) == matmul_rows_for("avx2", "", 0) == 6  # Zen 3, unknown
    vendor, family = cpu_model()
    assert isinstance(vendor, str) and isinstance(family, int)


def test_cpu_model_reads_cpu_zeros_record(clean_env):
    """vendor_id and cpu family of CPU 0's record in /proc/cpuinfo; ("", 0) where it has none (Arm)."""
    monkeypatch = clean_env  # no IRC_MATMUL_ROWS from the caller's environment
    from irc.runtime import build

    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        record = cpuinfo.read_text().split("\n\n")[0]
        vendor = re.search(r"^vendor_id\s*:\s*(\S+)", record, re.M)
        family = re.search(r"^cpu family\s*:\s*(\d+)", record, re.M)
        assert cpu_model() == (vendor.group(1) if vendor else "", int(family.group(1)) if family else 0)
    monkeypatch.setattr(build, "_cpu0", {"processor": "0", "Features": "fp asimd", "CPU implementer": "0x41"})
    assert cpu_model() == ("", 0)
    monkeypatch.setattr(build, "_cpu0", {"vendor_id": "AuthenticAMD", "cpu family": "25", "flags": "avx512f"})
    monkeypatch.setattr(build, "_cpu_flags", None)
    assert cpu_model() == ("AuthenticAMD", 25) and build.cpu_features() == "avx512f"
    assert Target.host().matmul_rows == 6 and Target.host(matmul_rows=12).matmul_rows == 12


@pytest.mark.parametrize("name, value, message", [
    ("IRC_GEMM_WIDTH", "24", "IRC_GEMM_WIDTH must be 16 or 32, got '24'"),
    ("IRC_GEMM_WIDTH", "wide", "IRC_GEMM_WIDTH must be 16 or 32, got 'wide'"),
    ("IRC_GEMM_ROWS", "7", "IRC_GEMM_ROWS must be 6 or 8 or 12 or 14, got '7'"),
    ("IRC_MATMUL_ROWS", "16", "IRC_MATMUL_ROWS must be 6 or 8 or 12 or 14, got '16'"),
    ("IRC_OMP_THRESHOLD", "-5", "IRC_OMP_THRESHOLD must be a non-negative integer, got '-5'"),
    ("IRC_NUM_THREADS", "two", "IRC_NUM_THREADS must be a non-negative integer, got 'two'"),
    ("IRC_VECTOR_WIDTH", "32", "IRC_VECTOR_WIDTH must be 4"),
    ("IRC_VECTOR_WIDTH", "6", "IRC_VECTOR_WIDTH must be 4"),
])
def test_a_bad_environment_value_names_the_variable(clean_env, name, value, message):
    clean_env.setenv(name, value)
    with pytest.raises(ValueError, match=re.escape(message)):
        Target.host()


def test_invalid_targets_are_refused():
    with pytest.raises(ValueError, match="gemm_width must be 16 or 32"):
        Target(gemm_width=8)
    with pytest.raises(ValueError, match="gemm_rows must be one of"):
        Target(gemm_rows=16)  # 32 accumulators: no register left for the rhs
    with pytest.raises(ValueError, match="matmul_rows must be one of"):
        Target(matmul_rows=10)
    with pytest.raises(ValueError, match="isa must be one of"):
        Target(isa="neon")
    with pytest.raises(ValueError, match="threads >= 1"):
        Target(threads=0)
    assert (Target().vector_width, Target(isa="portable").vector_width, Target(isa="avx512").vector_width) == (8, 4, 16)
    assert Target(isa="avx512").replace(isa="avx2", vector_width=8).vector_width == 8
    with pytest.raises(ValueError, match="vector_width must be 4 or 8 on avx2"):
        Target(isa="avx2", vector_width=16)  # wider than the ISA: emulated in halves, slower, never asked for
    with pytest.raises(ValueError, match="vector_width must be 4 or 8 or 16 on avx512"):
        Target(isa="avx512", vector_width=12)


def test_the_pipeline_is_spelled_with_every_option():
    t = Target(gemm_width=32, gemm_rows=12, matmul_rows=14, threads=4, omp_threshold=1000, strict=False, l1d=1, l2=2, l3=3)
    text = spelled(t, inputs=2)
    assert "irc-pack-weights{inputs=2 gemm_width=32 gemm_rows=12 winograd=true}" in text
    assert "irc-pack-weights{inputs=2 gemm_width=32 gemm_rows=12 winograd=false}" in spelled(t.replace(winograd=False), inputs=2)
    assert "irc-fold-params{inputs=2}" in text
    assert ("irc-to-loops{tag_ops=false gemm_width=32 gemm_rows=12 matmul_rows=14 strict=false threads=4 l1d=1 l2=2 "
            "l3=3}") in text
    assert "irc-parallelize{threshold=1000}" in text
    assert "-t 'cpp{strict=false gemm_width=32 gemm_rows=12 matmul_rows=14 vector_width=8 profile=false}'" in text
    assert "irc-vectorize{vector_width=8}" in text
    wide = spelled(t.replace(isa="avx512", vector_width=16), inputs=2)
    assert "irc-vectorize{vector_width=16}" in wide and "vector_width=16 profile=false}'" in wide
    strict = [p.name for p in declared(t.replace(strict=True), inputs=1, fuse=False).passes]
    assert strict == ["irc-fold-params", "irc-to-loops", "irc-vectorize", "irc-plan-memory", "irc-parallelize"]


def test_compile_follows_the_target_given(clean_env):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 8)).eval()
    x = torch.randn(5, 32)
    with torch.no_grad():
        want = m(x)
    for target in (Target(strict=True), Target(gemm_width=16), Target.host(gemm_width=32, threads=1),
                   Target.host(gemm_width=32, gemm_rows=14, matmul_rows=8, threads=2)):
        cm = irc.compile(m, (x,), target=target)
        with torch.no_grad():
            torch.testing.assert_close(cm(x), want)
        assert ("irl.gemm" in cm.ir("loops")) != target.strict
        assert f"#define IRC_NR {target.gemm_width}" in cm.cpp_source or target.strict
        assert f"#define IRC_MR {target.gemm_rows}" in cm.cpp_source or target.strict
        assert f"#define IRC_MMR {target.matmul_rows}" in cm.cpp_source or target.strict


def test_no_pass_reads_the_environment(tmp_path):
    """irc-opt with IRC_* variables set prints exactly what it prints without them."""
    src = Path(__file__).parent / "filecheck" / "lowering" / "tensor" / "fold_params.mlir"
    args = [sys.executable, "-m", "irc.tools.irc_opt", str(src), "--split-input-file",
            "-p", "irc-pipeline{inputs=1}", "-t", "cpp"]
    clean = {k: v for k, v in __import__("os").environ.items() if not k.startswith("IRC_")}
    plain = subprocess.run(args, env=clean, capture_output=True, text=True, check=True).stdout
    noisy = {**clean, "IRC_STRICT": "1", "IRC_GEMM_WIDTH": "32", "IRC_GEMM_ROWS": "12", "IRC_OMP_THRESHOLD": "1",
             "IRC_NUM_THREADS": "1", "IRC_VECTOR_WIDTH": "4"}
    assert subprocess.run(args, env=noisy, capture_output=True, text=True, check=True).stdout == plain
    assert "#define IRC_NR 16" in plain and "#define IRC_VL 8" in plain


@pytest.mark.parametrize("width", [4, 8, 16])
@pytest.mark.parametrize("name", ["transformer-block", "cnn", "eltwise-layernorm", "mlp-small", "densenet"])
def test_builtin_models_match_eager_at_every_vector_width(name, width):
    """The portable (4 lanes), AVX2 (8) and AVX-512 (16) vector code on the host: elementwise
    chains, reductions, GEMM epilogues in IRC_VL pieces, attention's softmax and P v, pooling
    windows at their narrowed `irc.lanes`."""
    from irc.models import get_model

    host = Target.host()
    if width > host.vector_width:
        pytest.skip(f"the host's vectors hold {host.vector_width} floats")
    model, inputs = get_model(name).build()
    cm = irc.compile(model, inputs, target=host.replace(vector_width=width))
    assert f"#define IRC_VL {width}" in cm.cpp_source
    with torch.no_grad():
        torch.testing.assert_close(cm(*inputs), model(*inputs))  # measured: max abs error <= 2.9e-6 at every width

"""Tests of irc.runtime: the cached C++ build and the generated forward wrapper."""

from __future__ import annotations

import ctypes
import os
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

from irc.errors import CompileError, InputError
from irc.runtime import (
    TensorSpec,
    build_library,
    compiler_invocations,
    libraries_loaded,
    load_library,
    make_forward,
)
from irc.runtime.wrapper import check_inputs, num_threads

# Plain C++ (no OpenMP needed), so the tests pass with any working g++.
FLAGS = ["-O1", "-std=c++17", "-shared", "-fPIC"]

KERNELS = r"""
extern "C" {
static int g_threads = 0;
void irc_set_num_threads(int n) { g_threads = n; }
int irc_get_num_threads_for_test() { return g_threads; }

// out = x + y + 1, elementwise over 6 floats
void add1(float* x, float* y, float* out) {
  for (int i = 0; i < 6; ++i) out[i] = x[i] + y[i] + 1.0f;
}

// what lowering/cpp/emit_cpp.py prints next to every entry point
void add1__argv(void* const* a) { add1((float*)a[0], (float*)a[1], (float*)a[2]); }

// out = x * w (elementwise, 4 floats, w is a parameter); out2 = x - w
void mul_sub(float* x, float* w, float* out, float* out2) {
  for (int i = 0; i < 4; ++i) { out[i] = x[i] * w[i]; out2[i] = x[i] - w[i]; }
}

// int64 and bool buffers: shifted = ids + k (k an int64 parameter), keep = ids > 0 && m
void shift_keep(long long* ids, bool* m, long long* k, long long* shifted, bool* keep) {
  for (int i = 0; i < 3; ++i) { shifted[i] = ids[i] + k[i]; keep[i] = ids[i] > 0 && m[i]; }
}
}
"""


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test builds into its own cache dir and ignores the user's compiler settings."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("IRC_CACHE_DIR", str(cache))
    monkeypatch.delenv("IRC_CXX", raising=False)
    monkeypatch.delenv("IRC_CXXFLAGS", raising=False)
    return cache


@pytest.fixture
def lib():
    return load_library(build_library(KERNELS, flags=FLAGS))


def add1_forward(lib, **kw):
    specs = [TensorSpec("x", (2, 3)), TensorSpec("y", (2, 3))]
    return make_forward(lib.add1, specs, [], [TensorSpec("out", (2, 3))], False, **kw)


# --- build ------------------------------------------------------------------------------------


def test_build_respects_cache_dir_and_layout(isolated_cache: Path):
    path = build_library(KERNELS, flags=FLAGS)
    assert path.parent.parent == isolated_cache
    assert path.parent.name == path.stem[:2]
    assert path.suffix == ".so" and len(path.stem) == 64
    assert path.with_suffix(".cpp").read_text() == KERNELS
    assert stat.S_IMODE(os.stat(isolated_cache).st_mode) & 0o077 == 0
    # no temp files left behind
    assert sorted(p.name for p in path.parent.iterdir()) == sorted(
        [path.name, path.stem + ".cpp", path.stem + ".sha256"]
    )


def test_second_build_is_cache_hit():
    first = build_library(KERNELS, flags=FLAGS)
    count = compiler_invocations()
    second = build_library(KERNELS, flags=FLAGS)
    assert second == first
    assert compiler_invocations() == count


def test_flags_and_source_change_key():
    a = build_library(KERNELS, flags=FLAGS)
    count = compiler_invocations()
    b = build_library(KERNELS, flags=[*FLAGS, "-DIRC_TEST_VARIANT=1"])
    c = build_library(KERNELS + "\n// changed\n", flags=FLAGS)
    assert len({a, b, c}) == 3
    assert compiler_invocations() == count + 2


def test_env_flags_and_compiler_are_used(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("IRC_CXXFLAGS", " ".join(FLAGS) + " -DFROM_ENV")
    source = '#ifndef FROM_ENV\n#error "IRC_CXXFLAGS ignored"\n#endif\n' + KERNELS
    assert build_library(source).exists()

    monkeypatch.setenv("IRC_CXX", "definitely-not-a-compiler")
    with pytest.raises(CompileError) as info:
        build_library(source)
    assert info.value.command[0] == "definitely-not-a-compiler"
    assert "-DFROM_ENV" in info.value.command


def test_concurrent_processes_share_one_valid_entry(isolated_cache: Path):
    """Processes racing to build the same source all get the same loadable library."""
    script = (
        "import sys, ctypes; from irc.runtime import build_library; "
        f"p = build_library(sys.stdin.read(), flags={FLAGS!r}); "
        "ctypes.CDLL(str(p)).add1; print(p)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env,
        )
        for _ in range(4)
    ]
    results = [p.communicate(KERNELS) for p in procs]
    assert all(p.returncode == 0 for p in procs), results
    paths = {out.strip() for out, _ in results}
    assert len(paths) == 1
    (path,) = paths
    files = sorted(p.name for p in Path(path).parent.iterdir())
    stem = Path(path).stem
    assert files == sorted([Path(path).name, stem + ".cpp", stem + ".sha256"])  # no temp leftovers


def test_loaded_once():
    path = build_library(KERNELS, flags=FLAGS)
    assert load_library(path) is load_library(str(path))


def test_libraries_loaded_counts_distinct_libraries():
    """Each library counts once, whether just built or found in the cache (lm_check's build count)."""
    before = libraries_loaded()
    built = build_library(KERNELS + "\n// libraries_loaded 1\n", flags=FLAGS)
    load_library(built)
    load_library(str(built))  # the same library again: not another one
    assert libraries_loaded() == before + 1
    invocations = compiler_invocations()
    cached = build_library(KERNELS + "\n// libraries_loaded 2\n", flags=FLAGS)
    hit = build_library(KERNELS + "\n// libraries_loaded 2\n", flags=FLAGS)  # a cache hit, no compiler run
    assert hit == cached and compiler_invocations() == invocations + 1
    load_library(hit)
    assert libraries_loaded() == before + 2


def test_broken_source_raises_compile_error(isolated_cache: Path):
    broken = 'extern "C" void f(float* x) { x[0] = undefined_name; }\n'
    before = compiler_invocations()
    with pytest.raises(CompileError) as info:
        build_library(broken, flags=FLAGS)
    err = info.value
    assert compiler_invocations() == before + 1
    assert err.command[0] == "g++" and "-shared" in err.command
    assert str(err.source_path) in err.command  # the command compiles the kept file
    assert "error" in err.output and "undefined_name" in err.output
    assert err.source_path.exists() and err.source_path.read_text() == broken
    assert isolated_cache in err.source_path.parents
    assert not list(isolated_cache.rglob("*.so"))  # no library entry for a failed build
    assert "undefined_name" in str(err)


def test_missing_compiler_has_hint():
    with pytest.raises(CompileError) as info:
        build_library(KERNELS, flags=FLAGS, cxx="definitely-not-a-compiler")
    err = info.value
    assert err.command[0] == "definitely-not-a-compiler"
    hint = str(err).split("hint:")[1]
    assert "IRC_CXX" in hint and "definitely-not-a-compiler" in hint
    assert err.source_path.exists()


def test_openmp_failure_has_hint():
    source = '#include <omp.h>\n#error "pretend omp.h is broken"\n'
    with pytest.raises(CompileError) as info:
        build_library(source, flags=FLAGS)
    assert "hint:" in str(info.value) and "OpenMP" in str(info.value).split("hint:")[1]


# --- wrapper ----------------------------------------------------------------------------------


def test_forward_matches_torch(lib):
    forward = add1_forward(lib)
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    out = forward(x, y)
    assert isinstance(out, torch.Tensor) and out.shape == (2, 3)
    torch.testing.assert_close(out, x + y + 1)
    assert forward(x, y).data_ptr() != out.data_ptr()  # fresh output per call
    assert "def forward" in forward.__irc_source__


def test_forward_with_params_and_tuple(lib):
    w = torch.tensor([1.0, 2.0, 3.0, 4.0])
    forward = make_forward(
        lib.mul_sub,
        [TensorSpec("x", (4,))],
        [w],
        [TensorSpec("prod", (4,)), TensorSpec("diff", (4,))],
        True,
    )
    x = torch.randn(4)
    result = forward(x)
    assert isinstance(result, tuple) and len(result) == 2
    torch.testing.assert_close(result[0], x * w)
    torch.testing.assert_close(result[1], x - w)
    w.add_(1.0)  # parameters are used by pointer: in-place updates are seen
    torch.testing.assert_close(forward(x)[0], x * w)


def test_forward_accepts_grad_leaf_under_grad_mode(lib):
    forward = add1_forward(lib)
    x = torch.randn(2, 3, requires_grad=True)
    y = torch.randn(2, 3)
    torch.testing.assert_close(forward(x, y), (x + y + 1).detach())


def test_single_output_tuple(lib):
    specs = [TensorSpec("x", (2, 3)), TensorSpec("y", (2, 3))]
    forward = make_forward(lib.add1, specs, [], [TensorSpec("out", (2, 3))], True)
    result = forward(torch.zeros(2, 3), torch.ones(2, 3))
    assert isinstance(result, tuple) and len(result) == 1
    torch.testing.assert_close(result[0], torch.full((2, 3), 2.0))


@pytest.mark.parametrize(
    "args, expected",
    [
        ((torch.zeros(2, 3),), ["expected 2 input(s)", "x, y", "got 1"]),
        ((torch.zeros(2, 3),) * 3, ["expected 2 input(s)", "got 3"]),
        ((torch.zeros(2, 3), [1.0] * 6), ["input 1 ('y')", "torch.Tensor", "got list"]),
        (
            (torch.zeros(2, 3), torch.zeros(2, 3, dtype=torch.float64)),
            ["input 1 ('y')", "expected dtype torch.float32", "got torch.float64"],
        ),
        (
            (torch.zeros(3, 2), torch.zeros(2, 3)),
            ["input 0 ('x')", "expected shape (2, 3), got (3, 2)"],
        ),
        ((torch.zeros(6), torch.zeros(2, 3)), ["input 0 ('x')", "expected shape (2, 3), got (6,)"]),
        (
            (torch.zeros(2, 3, device="meta"), torch.zeros(2, 3)),
            ["input 0 ('x')", "expected device cpu", "got meta"],
        ),
    ],
    ids=["too-few", "too-many", "non-tensor", "dtype", "shape", "rank", "device"],
)
def test_bad_inputs_raise_input_error(lib, args, expected):
    forward = add1_forward(lib)
    with pytest.raises(InputError) as info:
        forward(*args)
    message = str(info.value)
    for part in expected:
        assert part in message, (part, message)


def test_check_order_dtype_before_shape(lib):
    forward = add1_forward(lib)
    with pytest.raises(InputError, match="dtype"):
        forward(torch.zeros(5, dtype=torch.int32), torch.zeros(2, 3))


def test_set_threads_called_only_on_change(lib):
    calls: list[int] = []
    forward = add1_forward(lib, set_threads=FakeSetThreads(calls))
    x = torch.zeros(2, 3)
    old = torch.get_num_threads()
    forward(x, x)
    forward(x, x)
    assert calls == [old]
    new = old - 1 if old > 1 else 2
    torch.set_num_threads(new)
    try:
        forward(x, x)
        forward(x, x)
    finally:
        torch.set_num_threads(old)
    assert calls == [old, new]


class FakeSetThreads:
    """Stands in for the ctypes function: records calls, accepts argtypes/restype."""

    def __init__(self, calls: list[int]):
        self.calls = calls

    def __call__(self, n: int) -> None:
        self.calls.append(n)


def test_set_threads_reaches_native(lib):
    forward = add1_forward(lib, set_threads=lib.irc_set_num_threads)
    forward(torch.zeros(2, 3), torch.zeros(2, 3))
    assert lib.irc_get_num_threads_for_test() == torch.get_num_threads()


def test_bad_params_rejected(lib):
    spec = [TensorSpec("x", (4,))]
    outs = [TensorSpec("a", (4,)), TensorSpec("b", (4,))]
    with pytest.raises(ValueError):
        make_forward(lib.mul_sub, spec, [torch.zeros(4, dtype=torch.float64)], outs, True)
    with pytest.raises(ValueError):
        make_forward(lib.mul_sub, spec, [torch.zeros(2, 4).t()], outs, True)
    with pytest.raises(ValueError):
        make_forward(lib.mul_sub, spec, [torch.zeros(4)], outs, False)  # 2 outputs need a tuple


def test_int64_and_bool_inputs_params_and_outputs(lib):
    """Inputs, parameters and outputs of dtype int64 and bool pass as their own pointers; the
    outputs are allocated with their spec's dtype."""
    inputs = [TensorSpec("ids", (3,), torch.int64), TensorSpec("m", (3,), torch.bool)]
    outs = [TensorSpec("shifted", (3,), torch.int64), TensorSpec("keep", (3,), torch.bool)]
    k = torch.tensor([10, 20, 30])
    forward = make_forward(lib.shift_keep, inputs, [k], outs, True)
    ids, m = torch.tensor([-1, 2, 3]), torch.tensor([True, True, False])
    shifted, keep = forward(ids, m)
    assert shifted.dtype == torch.int64 and keep.dtype == torch.bool
    assert shifted.tolist() == [9, 22, 33] and keep.tolist() == [False, True, False]
    with pytest.raises(InputError, match="expected dtype torch.bool"):
        forward(ids, m.float())


def test_wrapper_and_dispatch_share_one_check(lib):
    """The generated wrapper raises exactly what `check_inputs` (which CompiledModule's dispatch
    calls too) says, for every kind of mismatch."""
    forward = add1_forward(lib)
    names, dtypes, shapes = ["x", "y"], [torch.float32] * 2, [(2, 3), (2, 3)]
    x = torch.zeros(2, 3)
    bad = [(x,), (x, x, x), (x, [1.0]), (x, x.double()), (x, torch.zeros(3, 2)), (torch.zeros(2, 3, device="meta"), x)]
    for args in bad:
        with pytest.raises(InputError) as direct:
            check_inputs(args, names, dtypes, shapes)
        with pytest.raises(InputError) as wrapped:
            forward(*args)
        assert str(wrapped.value) == str(direct.value)
    check_inputs((x, torch.zeros(3, 2)), names, dtypes)  # no shapes: any shape passes
    with pytest.raises(InputError, match=r"expected 2 input\(s\) \(x, y\), got 1; a note"):
        check_inputs((x,), names, dtypes, note="; a note")


def test_non_contiguous_inputs_are_copied(lib):
    forward = add1_forward(lib)
    x, y = torch.randn(3, 2).t(), torch.randn(2, 6)[:, ::2]
    assert not x.is_contiguous() and not y.is_contiguous()
    torch.testing.assert_close(forward(x, y), x + y + 1)


def test_negative_views_are_resolved(lib):
    """A view with the negative bit reads as its values negated, contiguous or not: its raw
    memory holds the other sign (the contiguous one used to be read as is)."""
    forward = add1_forward(lib)
    base = torch.randn(2, 3)
    x = torch._neg_view(base)
    assert x.is_neg() and x.is_contiguous()
    y = torch._neg_view(torch.randn(2, 6))[:, ::2]
    torch.testing.assert_close(forward(x, y), -base + y.resolve_neg() + 1)


def test_thread_count_is_set_in_every_calling_thread(monkeypatch):
    """OpenMP's thread count is per thread: a second thread gets `irc_set_num_threads` too, even
    when the count equals the one the first thread set (it used to be skipped there)."""
    source = r"""
#include <omp.h>
extern "C" {
void irc_set_num_threads(int n) { omp_set_num_threads(n); }
void max_threads(float* x, float* out) { out[0] = (float)omp_get_max_threads(); }
}
"""
    lib = load_library(build_library(source, flags=[*FLAGS, "-fopenmp"]))
    forward = make_forward(lib.max_threads, [TensorSpec("x", (1,))], [], [TensorSpec("out", (1,))], False,
                           set_threads=lib.irc_set_num_threads)
    x = torch.zeros(1)
    wanted = 3 if os.cpu_count() != 3 else 5  # not OpenMP's default (the core count)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("IRC_NUM_THREADS", str(wanted))
    assert forward(x).item() == wanted
    seen: list[float] = []
    t = threading.Thread(target=lambda: seen.append(forward(x).item()))
    t.start()
    t.join()
    assert seen == [wanted]


def test_irc_num_threads_written_through_os_environ_is_read_at_call_time(lib):
    calls: list[int] = []
    forward = add1_forward(lib, set_threads=FakeSetThreads(calls))
    x = torch.zeros(2, 3)
    old = os.environ.pop("IRC_NUM_THREADS", None)
    try:
        forward(x, x)
        os.environ["IRC_NUM_THREADS"] = "7"
        forward(x, x)
        del os.environ["IRC_NUM_THREADS"]
        forward(x, x)
    finally:
        if old is not None:
            os.environ["IRC_NUM_THREADS"] = old
    assert calls == [torch.get_num_threads(), 7, torch.get_num_threads()]
    assert num_threads() == torch.get_num_threads()


def test_argv_twin_is_what_is_called(lib):
    """With the `__argv` twin the wrapper makes one call with one argument; the entry point
    itself keeps its declared ABI (pointer arguments) for whoever calls it directly."""
    calls = []
    twin = lib.add1__argv

    class Spy:
        argtypes = restype = None

        def __call__(self, a):
            calls.append(a)
            twin(a)

    forward = add1_forward(lib, argv=Spy())
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    torch.testing.assert_close(forward(x, y), x + y + 1)
    assert len(calls) == 1
    assert lib.add1.argtypes == [ctypes.c_void_p] * 3


def _fake_compiler(directory: Path, version: str, compile_output: str = "") -> Path:
    """An executable that prints `version` for --version and otherwise fails with `compile_output`."""
    path = directory / "fake-cxx"
    path.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = --version ]; then printf %s "{version}"; exit 0; fi\n'
        f'printf %s "{compile_output}"; exit 1\n'
    )
    path.chmod(0o755)
    return path


def test_default_flags_add_parallel_lto_only_for_gcc_with_make(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from irc.runtime.build import DEFAULT_CXXFLAGS, PARALLEL_LTO_FLAGS, default_flags, resolve_flags

    (tmp_path / "gcc").mkdir()
    (tmp_path / "clang").mkdir()
    gcc = _fake_compiler(tmp_path / "gcc", "c++ (Debian 12.2.0-14) 12.2.0\\nCopyright (C) 2022 Free Software Foundation, Inc.\\n")
    clang = _fake_compiler(tmp_path / "clang", "Debian clang version 14.0.6\\nTarget: x86_64-pc-linux-gnu\\n")
    make = tmp_path / "bin" / "make"
    make.parent.mkdir()
    make.write_text("#!/bin/sh\n")
    make.chmod(0o755)

    monkeypatch.setenv("PATH", str(make.parent))
    assert default_flags(str(gcc)) == DEFAULT_CXXFLAGS + PARALLEL_LTO_FLAGS
    assert default_flags(str(clang)) == DEFAULT_CXXFLAGS  # clang has no --param=lto-min-partition
    assert default_flags("definitely-not-a-compiler") == DEFAULT_CXXFLAGS
    monkeypatch.setenv("IRC_CXX", str(gcc))
    assert tuple(resolve_flags()) == DEFAULT_CXXFLAGS + PARALLEL_LTO_FLAGS  # the compiler from IRC_CXX
    assert tuple(resolve_flags(["-O1"])) == ("-O1",)  # given flags are used as they are
    monkeypatch.setenv("IRC_CXXFLAGS", "-O2 -shared")
    assert tuple(resolve_flags()) == ("-O2", "-shared")

    monkeypatch.delenv("IRC_CXXFLAGS")
    monkeypatch.setenv("PATH", str(tmp_path / "gcc"))  # no make: GCC would run the jobs one by one
    assert default_flags(str(gcc)) == DEFAULT_CXXFLAGS


def _fake_gcc_tuning(directory: Path, tune: str) -> Path:
    """A GCC that answers --version and reports `tune` as its -march=native tuning."""
    path = directory / "fake-gcc"
    path.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = --version ]; then printf "gcc (GCC) 12.2.0\\nFree Software Foundation, Inc.\\n"; exit 0; fi\n'
        f'if [ "$2" = -Q ]; then printf "  -march=   \\t\\t{tune}\\n  -mtune=   \\t\\t{tune}\\n"; exit 0; fi\n'
        "exit 1\n"
    )
    path.chmod(0o755)
    return path


@pytest.mark.parametrize(
    "tune, features, tuned",
    [("znver3", "avx2 avx512f fma", True),  # GCC 12 on a Zen 4 or Zen 5: tuned as an AVX-512 CPU it knows
     ("icelake-server", "avx2 avx512f fma", False),  # GCC knows this AVX-512 CPU: its own tuning
     ("znver4", "avx2 avx512f fma", False),
     ("znver3", "avx2 fma", False),  # no AVX-512: the native tuning is right
     ("", "avx2 avx512f fma", False)],  # GCC does not say: nothing guessed
)
def test_default_flags_tune_avx512_cpus_gcc_does_not_know(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          tune: str, features: str, tuned: bool):
    from irc.runtime import build
    from irc.runtime.build import AVX512_TUNING_FLAGS, DEFAULT_CXXFLAGS, default_flags, native_tuning

    gcc = _fake_gcc_tuning(tmp_path, tune)
    monkeypatch.setenv("PATH", str(tmp_path))  # no make: no link-time flags
    monkeypatch.setattr(build, "_cpu_flags", features)
    monkeypatch.setattr(build, "_outputs", {})
    assert native_tuning(str(gcc)) == tune
    assert default_flags(str(gcc)) == DEFAULT_CXXFLAGS + (AVX512_TUNING_FLAGS if tuned else ())


def test_failed_link_time_optimization_has_hint(tmp_path: Path):
    if not shutil.which("make"):
        pytest.skip("no make on PATH: the default flags have no -flto")
    gcc = _fake_compiler(
        tmp_path,
        "g++ (GCC) 12.2.0\\nCopyright (C) 2022 Free Software Foundation, Inc.\\n",
        "lto-wrapper: fatal error: LTO support has not been enabled in this configuration\\n",
    )
    with pytest.raises(CompileError) as info:
        build_library(KERNELS, cxx=str(gcc))
    assert "-flto=auto" in info.value.command
    hint = str(info.value).split("hint:")[1]
    assert "IRC_CXXFLAGS" in hint and "-flto=auto" in hint

    # an error in the source that merely contains "lto" gets no hint about link-time optimization
    with pytest.raises(CompileError) as info:
        build_library(KERNELS + "int plto_count = undefined_altogether;\n")
    assert "-flto=auto" in info.value.command and "link-time" not in str(info.value)


def test_default_build_links_with_gcc_lto():
    """The default flags build and run a library (with GCC: through its parallel LTO)."""
    source = KERNELS + 'extern "C" int twice(int x) { return 2 * x; }\n'
    lib = load_library(build_library(source))
    lib.twice.restype = ctypes.c_int
    assert lib.twice(21) == 42

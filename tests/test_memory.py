"""Memory planning (one arena per calling thread, liveness reuse, in place) and thread count."""

from __future__ import annotations

import json
import threading

import pytest
import torch
import torch.nn.functional as F
from irc_testing import check
from torch import nn

import irc
from irc.models import get_model
from irc.runtime import TensorSpec, build_library, load_library, make_forward
from irc.runtime.wrapper import num_threads


def _chain(x):
    """Elementwise ops with reshapes and a transpose between them: five intermediates, of which
    liveness keeps at most two alive, and several written in place."""
    a = torch.relu(x)
    b = torch.sigmoid(a)
    c = torch.tanh(b)
    d = c + a
    e = torch.relu(d.reshape(-1)).reshape(x.shape[1], x.shape[0])
    return e.t() * 2.0


def _stats_are_sane(stats: dict) -> None:
    assert set(stats) == {"arena_bytes", "intermediate_bytes", "buffers", "in_place", "reuse_ratio"}
    assert stats["arena_bytes"] % 64 == 0
    # every buffer is 64-byte aligned in the arena: never more than the aligned sum
    assert stats["arena_bytes"] <= stats["intermediate_bytes"] + 64 * stats["buffers"]
    assert stats["in_place"] < max(1, stats["buffers"])
    if stats["arena_bytes"]:
        assert stats["reuse_ratio"] == pytest.approx(stats["intermediate_bytes"] / stats["arena_bytes"])


@pytest.mark.parametrize("fuse", [True, False])
def test_chain_reuses_and_writes_in_place(fuse):
    x = torch.randn(24, 40)
    cm = check(_chain, x, fuse=fuse)
    stats = cm.memory_stats()
    _stats_are_sane(stats)
    if not fuse:
        assert stats["buffers"] >= 5 and stats["in_place"] >= 2
        assert stats["arena_bytes"] < stats["intermediate_bytes"] / 2  # two 3840-byte slots at most
        assert stats["reuse_ratio"] > 2
    loops = cm.ir("loops")
    assert "memref.alloc" not in loops and "memref.dealloc" not in loops
    assert f"irc.arena_bytes = {stats['arena_bytes']} : i64" in loops
    assert "aligned_alloc" not in cm.cpp_source


@pytest.mark.parametrize("name", ["mlp-small", "mlp-medium", "cnn", "transformer-block", "eltwise-layernorm"])
def test_builtin_models_through_the_arena(name):
    model, inputs = get_model(name).build()
    cm = check(model, *inputs)
    stats = cm.memory_stats()
    _stats_are_sane(stats)
    if stats["buffers"] > 2:
        assert stats["arena_bytes"] < stats["intermediate_bytes"]


def test_unfused_mlp_stats_and_explain():
    m = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.Sigmoid(), nn.Linear(32, 8)).eval()
    cm = check(m, torch.randn(3, 16), fuse=False)
    stats = cm.memory_stats()
    # four 3x32 intermediates (384 B each): relu and sigmoid in place, so two slots
    assert stats == {"arena_bytes": 768, "intermediate_bytes": 1536, "buffers": 4, "in_place": 2, "reuse_ratio": 2.0}
    assert "Intermediate buffers: 768 B in one arena per calling thread" in cm.explain()


def test_no_intermediates_no_arena():
    cm = check(lambda x: torch.relu(x) * 3.0, torch.randn(5, 7))
    assert cm.memory_stats() == {"arena_bytes": 0, "intermediate_bytes": 0, "buffers": 0, "in_place": 0, "reuse_ratio": 1.0}
    assert "%arena" not in cm.ir("loops")


def test_stats_follow_the_version_called_last():
    cm = check(_chain, torch.randn(4, 6), fuse=False)
    small = cm.memory_stats()
    big = torch.randn(32, 64)
    torch.testing.assert_close(cm(big), _chain(big))
    assert cm.memory_stats()["intermediate_bytes"] == small["intermediate_bytes"] * (32 * 64) // (4 * 6)
    cm(torch.randn(4, 6))
    assert cm.memory_stats() == small


def test_broadcast_reads_keep_separate_slots():
    """`a` (4x1) is read at column 0 for every column of the sum: not in place."""
    cm = check(lambda x, y: torch.tanh(torch.relu(x) + y), torch.randn(4, 1), torch.randn(4, 8), fuse=False)
    assert cm.memory_stats()["in_place"] == 0


class MlpChain(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, 8))

    def forward(self, x):
        return _chain(self.mlp(x))


def test_four_threads_each_get_their_own_answer():
    """Concurrent calls must not share scratch: each thread has its own arena."""
    torch.manual_seed(0)
    m = MlpChain().eval()
    cm = irc.compile(m, (torch.randn(16, 64),), fuse=False)
    assert cm.memory_stats()["arena_bytes"] > 0
    inputs = [torch.randn(16, 64) * (i + 1) for i in range(4)]
    with torch.no_grad():
        expected = [m(x) for x in inputs]
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def worker(i: int) -> None:
        try:
            start.wait()
            for _ in range(150):
                torch.testing.assert_close(cm(inputs[i]), expected[i])
        except BaseException as e:  # reported on the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_arena_is_per_thread_and_reused():
    """The wrapper allocates one 64-byte aligned arena per thread on its first call, then reuses it."""
    lib = load_library(build_library(SCRATCH_KERNEL, flags=["-O1", "-std=c++17", "-shared", "-fPIC"]))
    seen: list[int] = []
    lib.scratch_addr.restype = None
    forward = make_forward(lib.scratch_addr, [TensorSpec("x", (2,))], [], [TensorSpec("out", (2,))], False, scratch_bytes=100)
    x = torch.zeros(2)

    def call() -> None:
        out = forward(x)
        seen.append(int(out[0].item()) * 65536 + int(out[1].item()))

    call()
    call()
    t = threading.Thread(target=call)
    t.start()
    t.join()
    assert seen[0] == seen[1] != seen[2]
    assert all(s % 64 == 0 for s in seen)


# out = the arena address (low 32 bits, as two 16-bit halves in floats)
SCRATCH_KERNEL = r"""
#include <cstdint>
extern "C" void scratch_addr(float* x, float* out, float* arena) {
  uint32_t a = (uint32_t)(uintptr_t)arena;
  out[0] = (float)(a >> 16); out[1] = (float)(a & 0xffff);
  arena[24] = x[0];  // the arena is writable up to its size (100 bytes)
}
"""


def test_saved_artifact_keeps_its_arena(tmp_path):
    m = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.Sigmoid(), nn.Linear(16, 4)).eval()
    x = torch.randn(2, 8)
    cm = irc.compile(m, (x,), fuse=False)
    arena = cm.memory_stats()["arena_bytes"]
    assert arena > 0
    loaded = irc.load(cm.save(tmp_path / "art"))
    assert json.loads((tmp_path / "art" / "manifest.json").read_text())["versions"][0]["arena_bytes"] == arena
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), m(x))


# --- thread count ------------------------------------------------------------------------------


class Spy:
    """Stands in for `irc_set_num_threads`: records each call."""

    def __init__(self) -> None:
        self.calls: list[int] = []
        self.argtypes = self.restype = None

    def __call__(self, n: int) -> None:
        self.calls.append(n)


def test_irc_num_threads_overrides_torch_at_call_time(monkeypatch):
    lib = load_library(build_library(SCRATCH_KERNEL, flags=["-O1", "-std=c++17", "-shared", "-fPIC"]))
    spy = Spy()
    forward = make_forward(
        lib.scratch_addr, [TensorSpec("x", (2,))], [], [TensorSpec("out", (2,))], False, set_threads=spy, scratch_bytes=100
    )
    x = torch.zeros(2)
    monkeypatch.delenv("IRC_NUM_THREADS", raising=False)
    forward(x)
    assert spy.calls == [torch.get_num_threads()]
    monkeypatch.setenv("IRC_NUM_THREADS", str(torch.get_num_threads() + 3))
    forward(x)
    forward(x)  # unchanged: not set again
    assert spy.calls == [torch.get_num_threads(), torch.get_num_threads() + 3]
    monkeypatch.setenv("IRC_NUM_THREADS", "not a number")  # ignored: torch's count
    forward(x)
    monkeypatch.setenv("IRC_NUM_THREADS", "0")
    forward(x)
    assert spy.calls[2:] == [torch.get_num_threads()]


def test_num_threads(monkeypatch):
    monkeypatch.setenv("IRC_NUM_THREADS", "1")
    assert num_threads() == 1
    monkeypatch.setenv("IRC_NUM_THREADS", "")
    assert num_threads() == torch.get_num_threads()
    monkeypatch.delenv("IRC_NUM_THREADS")
    assert num_threads() == torch.get_num_threads()


def test_compiled_model_under_irc_num_threads(monkeypatch):
    x = torch.randn(64, 2048)
    cm = check(lambda x: F.silu(x) * torch.sigmoid(x), x)
    assert '"omp"' in cm.ir("loops")  # big enough to run on OpenMP threads
    for n in ("1", "2", "3"):
        monkeypatch.setenv("IRC_NUM_THREADS", n)
        torch.testing.assert_close(cm(x), F.silu(x) * torch.sigmoid(x))


def test_small_model_pays_no_openmp_start_up():
    model, inputs = get_model("mlp-small").build()
    cm = check(model, *inputs)
    assert 'irc.parallel = "omp"' not in cm.ir("loops")  # batch 1: no loop nest worth OpenMP's start-up

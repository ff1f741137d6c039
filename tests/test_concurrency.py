"""One compiled module under concurrent calls, and over many calls."""

from __future__ import annotations

import gc
import resource
import threading

import pytest
import torch
from torch import nn

import irc
from irc.runtime import native_guard


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 16), nn.Sigmoid()).eval()


# Grad mode on: the autograd path; off (grad mode is per thread): the native call on the thread
# that made it (runtime/native_guard.py fast_call), the Python path on the others.
GRAD = pytest.mark.parametrize("grad", [True, False], ids=["grad", "no_grad"])


@GRAD
def test_eight_threads_share_one_module(grad):
    m = _model()
    native = native_guard.library() is not None  # loaded, not still building in the background
    cm = irc.compile(m, (torch.randn(4, 32),))
    inputs = [torch.randn(4, 32) for _ in range(8)]
    with torch.no_grad():
        expected = [m(x) for x in inputs]
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def worker(i: int) -> None:
        try:
            start.wait()
            with torch.set_grad_enabled(grad):
                for _ in range(200):
                    torch.testing.assert_close(cm(inputs[i]), expected[i])
        except BaseException as e:  # reported below, on the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    if not grad and native:
        assert callable(cm._fast), "one of the threads made the native call"


def _rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


@GRAD
def test_ten_thousand_calls_do_not_grow_memory(grad):
    m = _model()
    x = torch.randn(4, 32)
    assert native_guard.library() is not None
    cm = irc.compile(m, (x,))
    with torch.set_grad_enabled(grad):
        for _ in range(1000):  # warm up allocator caches and thread pools
            cm(x)
        assert grad or callable(cm._fast)
        gc.collect()
        before = _rss_kib()
        for _ in range(10_000):
            cm(x)
        gc.collect()
    grown = _rss_kib() - before
    assert grown < 1024, f"resident memory grew by {grown} KiB over 10,000 calls"

"""A compiled module's whole call made natively (runtime/native_guard.py fast_call, guard.cpp's
irc_fast_call): it must give what the Python path gives, and leave to it every call where the
Python path would do anything but run the current version's native code."""

from __future__ import annotations

import threading

import pytest
import torch
from irc_testing import build_scaled as build
from torch import nn

import irc
from irc.errors import InputError
from irc.runtime import native_guard
from irc.runtime.wrapper import THREADS_VARIABLE


class Pair(nn.Module):
    """Two outputs: returned as a tuple."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(7, 4)

    def forward(self, x):
        y = self.fc(x)
        return torch.relu(y), y.sum(1)


def count_python_calls(cm) -> list[int]:
    """A counter of the calls that take the Python path (each runs the weight guard's `stale`)."""
    counter = [0]
    guard = cm._weights
    stale = guard.stale

    def counting():
        counter[0] += 1
        return stale()

    guard.stale = counting
    return counter


def armed(m, x):
    """The model compiled and called until its native call is made (the library loaded first)."""
    assert native_guard.library() is not None
    cm = irc.compile(m, (x,))
    with torch.no_grad():
        cm(x)
        cm(x)
    assert callable(cm._fast), "the native call was not made"
    return cm


def test_calls_take_the_native_call_and_match_eager():
    m, x = build()
    cm = armed(m, x)
    python = count_python_calls(cm)
    with torch.no_grad():
        outs = [cm(x) for _ in range(5)]
        expected = m(x)
    assert python[0] == 0
    for out in outs:
        torch.testing.assert_close(out, expected)
    assert len({o.data_ptr() for o in outs}) == len(outs), "each call's output is a tensor of its own"
    # and with other values in the same input
    with torch.no_grad():
        x2 = torch.randn_like(x)
        torch.testing.assert_close(cm(x2), m(x2))
    assert python[0] == 0


def test_tuple_outputs():
    torch.manual_seed(1)
    m = Pair()
    x = torch.randn(3, 7)
    cm = armed(m, x)
    python = count_python_calls(cm)
    with torch.no_grad():
        out = cm(x)
        expected = m(x)
    assert python[0] == 0 and type(out) is tuple and len(out) == 2
    torch.testing.assert_close(out, expected)


def _folded_weight(m):
    m.conv.weight.mul_(1.5)


def _running_var(m):
    m.bn.running_var.mul_(2)


def _read_in_place(m):
    m.fc.weight.add_(0.25)


def _reassigned(m):
    m.fc.weight = nn.Parameter(torch.randn_like(m.fc.weight))


def _data_set(m):
    m.fc.bias.data = torch.randn_like(m.fc.bias)


def _swapped(m):
    torch.utils.swap_tensors(m.fc.bias, nn.Parameter(torch.randn_like(m.fc.bias)))


def _attribute(m):
    m.scale = 3.0


def _train_mode(m):
    m.bn.train()


def _submodule(m):
    m.fc = nn.Linear(8 * 6 * 6, 5)


def _hook(m):
    m.fc.register_forward_hook(lambda mod, args, out: out * 10)


def _refreshed(m):
    m.fc.weight.data.mul_(3)  # unseen by any check: the documented contract is refresh_weights()
    irc.refresh_weights(m)


CHANGES = [_folded_weight, _running_var, _read_in_place, _reassigned, _data_set, _swapped, _attribute, _train_mode,
           _submodule, _hook, _refreshed]


@pytest.mark.parametrize("change", CHANGES, ids=[c.__name__.strip("_") for c in CHANGES])
def test_every_change_reaches_the_python_path(change):
    m, x = build()
    cm = armed(m, x)
    with torch.no_grad():
        change(m)
        for _ in range(3):  # the change's call, then the calls after (the native call made again)
            torch.testing.assert_close(cm(x), m(x))
        if m.bn.training or change is _hook:
            return  # batch statistics, a hooked module: a graph with nodes run by PyTorch, no one native call
        assert callable(cm._fast), "the native call is made again after the change"


def test_inputs_it_leaves_to_the_python_path():
    m, x = build()
    cm = armed(m, x)
    python = count_python_calls(cm)
    with torch.no_grad():
        expected = m(x)
        cases = {
            "channels_last": x.contiguous(memory_format=torch.channels_last),
            "a slice": torch.cat([x, x], 3)[..., :6],
            "a negative view": torch._neg_view(-x),
            "a subclass": x.as_subclass(type("Sub", (torch.Tensor,), {})),
        }
        for name, value in cases.items():
            before = python[0]
            torch.testing.assert_close(cm(value).as_subclass(torch.Tensor), expected, msg=name)
            assert python[0] == before + 1, name
        with torch.inference_mode():  # a plain CPU tensor without autograd: the native call
            before = python[0]
            torch.testing.assert_close(cm(x.clone()), expected)
            assert python[0] == before
        before = python[0]
        torch.testing.assert_close(cm(nn.Parameter(x.clone(), requires_grad=False)), expected)
        assert python[0] == before
        assert callable(cm._fast)
        with pytest.raises(InputError, match="dtype"):
            cm(x.double())
        with pytest.raises(InputError, match="dtype"):
            cm(x.int())
        with pytest.raises(InputError):
            cm(x, x)
        with pytest.raises(InputError):
            cm()
        other = torch.randn(1, 3, 6, 6)  # another shape: another version
        torch.testing.assert_close(cm(other), m(other))
        torch.testing.assert_close(cm(x), expected)  # and back
        torch.testing.assert_close(cm(x), expected)
        assert callable(cm._fast)


def test_grad_mode_and_autocast_are_left_to_the_python_path():
    m, x = build()
    cm = armed(m, x)
    out = cm(x)  # grad mode on, the parameters require grad: autograd's path
    assert out.requires_grad
    out.sum().backward()
    assert m.fc.weight.grad is not None
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        assert cm(x).dtype == m(x).dtype
    with torch.no_grad():
        torch.testing.assert_close(cm(x), m(x))


def test_thread_counts(monkeypatch):
    m, x = build()
    cm = armed(m, x)
    spec = cm._forward.__wrapped__.irc_call
    old = torch.get_num_threads()
    try:
        with torch.no_grad():
            expected = m(x)
            for env, torch_threads, used in [(None, 1, 1), (None, 2, 2), ("1", 2, 1), ("2", 1, 2), ("x", 1, 1),
                                             ("x", 2, 2), ("0", 1, 1), ("0", 2, 2), ("2", 1, 2), (None, 1, 1)]:
                if env is None:
                    monkeypatch.delenv(THREADS_VARIABLE, raising=False)
                else:
                    monkeypatch.setenv(THREADS_VARIABLE, env)
                torch.set_num_threads(torch_threads)
                torch.testing.assert_close(cm(x), expected)
                assert spec.tls.a[spec.thread_slot] == used, (env, torch_threads)
    finally:
        torch.set_num_threads(old)


def test_other_threads_take_the_python_path():
    m, x = build()
    cm = armed(m, x)
    results: dict[str, object] = {}

    def other():
        with torch.no_grad():
            results["direct"] = cm._fast(x)  # made on the main thread: not for this one
            results["call"] = cm(x)

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert results["direct"] is None
    with torch.no_grad():
        torch.testing.assert_close(results["call"], m(x))
        torch.testing.assert_close(cm(x), m(x))


def test_no_native_call_without_the_library(monkeypatch):
    monkeypatch.setenv(native_guard.VARIABLE, "0")
    m, x = build()
    cm = irc.compile(m, (x,))
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(cm(x), m(x))
    assert not cm._fast


class Stats(nn.Module):
    """Running statistics of its own passed to F.batch_norm: no counter shows their updates, so
    the guard compares their bytes."""

    def __init__(self, strided: bool = False):
        super().__init__()
        self.fc = nn.Linear(6, 6)
        # strided: every second element of a larger tensor (no byte view of it is its memory)
        self.register_buffer("mean", torch.zeros(6, 2)[:, 0] if strided else torch.zeros(6))
        self.register_buffer("var", torch.ones(6, 2)[:, 1] if strided else torch.ones(6))

    def forward(self, x):
        return torch.nn.functional.batch_norm(self.fc(x), self.mean, self.var, training=self.training)


def recording(monkeypatch) -> list[bool]:
    """Each native call made from now on, as True (it returned the outputs) or False (it gave way)."""
    made: list[bool] = []
    real = native_guard.fast_call

    def wrapped(*args, **kwargs):
        fast = real(*args, **kwargs)
        if fast is None:
            return None

        def counted(*inputs):
            out = fast(*inputs)
            made.append(out is not None)
            return out

        return counted

    monkeypatch.setattr(native_guard, "fast_call", wrapped)
    return made


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("frontend", ["irc.compile", "torch.compile"])
def test_tensors_compared_by_value(frontend, strided, monkeypatch):
    """A training step's running statistics (no version counter moves) reach the Python path.
    A strided one has no live byte view: its bytes are compared by the Python path at every call."""
    assert native_guard.library() is not None
    made = recording(monkeypatch)
    torch.manual_seed(2)
    m = Stats(strided).eval()
    x = torch.randn(4, 6)
    compiled = irc.compile(m, (x,)) if frontend == "irc.compile" else torch.compile(m, backend="irc")
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(compiled(x), m(x))
        if strided:
            assert not made, "a strided tensor compared by value keeps the Python path"
        else:
            assert made and made[-1], "the native call was made"
        m.train()
        m(torch.randn(8, 6) * 3 + 1)  # updates mean and var in place, through the kernel
        m.eval()
        before = len(made)
        torch.testing.assert_close(compiled(x), m(x))
        assert strided or made[before] is False, "the native call saw the new statistics"
        for _ in range(2):
            torch.testing.assert_close(compiled(x), m(x))
        assert strided or made[-1], "and is made again"


def test_torch_compile_takes_it(monkeypatch):
    made = recording(monkeypatch)
    m, x = build()
    assert native_guard.library() is not None
    compiled = torch.compile(m, backend="irc")
    with torch.no_grad():
        for _ in range(4):
            torch.testing.assert_close(compiled(x), m(x))
        assert made[-2:] == [True, True]
        m.conv.weight.mul_(1.1)
        torch.testing.assert_close(compiled(x), m(x))
        torch.testing.assert_close(compiled(x), m(x))


def test_a_failure_making_it_leaves_the_python_path(monkeypatch):
    def failing(*args, **kwargs):
        raise RuntimeError("made to fail")

    monkeypatch.setattr(native_guard, "fast_call", failing)
    m, x = build()
    assert native_guard.library() is not None
    cm = irc.compile(m, (x,))
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(cm(x), m(x))
    assert cm._fast is False


def test_made_when_the_library_loads_between_the_guard_and_the_call(monkeypatch):
    """The library may finish loading after a call's weight guard ran (its C++ check not yet
    taken up) and before the native call is made: the guard takes it up then, rather than the
    native call being given up until the weights change."""
    assert native_guard.library() is not None
    m, x = build()
    monkeypatch.setattr(native_guard, "pending", lambda: True)
    cm = irc.compile(m, (x,))
    with torch.no_grad():
        torch.testing.assert_close(cm(x), m(x))
    assert cm._weights._native is None and not cm._fast
    monkeypatch.setattr(native_guard, "pending", lambda: False)  # loaded now
    plan = cm._forward.fold_plan
    plan._take_up_native()
    assert callable(cm._weights.fast_call(cm._forward.__wrapped__.irc_call, plan.native))

"""The weight guard's C++ check (runtime/native_guard.py): its "unchanged" must be exact, each kind
of change a compiled module watches for must reach the Python checks, and irc falls back to them
where the C++ cannot read a tensor."""

from __future__ import annotations

import pytest
import torch
from irc_testing import build_scaled as build
from torch import nn

import irc
from irc.runtime import native_guard
from irc.runtime.native_guard import NativeCheck, native_check


@pytest.fixture(params=["native", "python"])
def guard(request, monkeypatch):
    if request.param == "python":
        monkeypatch.setenv(native_guard.VARIABLE, "0")
    else:  # loaded, not still building in the background: the calls below take it up at once
        assert native_guard.library() is not None
    return request.param


def test_the_native_check_is_what_calls_use():
    """Else the rest of the suite would test only the Python checks, and a build that broke
    would pass unseen."""
    assert native_guard.library() is not None
    m, x = build()
    cm = irc.compile(m, (x,))
    cm(x)
    assert cm._weights._native is not None
    assert cm._forward.fold_plan.native is not None


def test_calls_made_while_it_builds_take_it_up_after(monkeypatch):
    """A compile does not wait for the library's one-time build (`prepare`): the calls run the
    Python checks until it is loaded."""
    m, x = build()
    monkeypatch.setattr(native_guard, "pending", lambda: True)
    cm = irc.compile(m, (x,))
    torch.testing.assert_close(cm(x), m(x))
    assert cm._weights._native is None and cm._forward.fold_plan.native is None
    with torch.no_grad():
        m.bn.running_var.mul_(2)  # seen by the Python checks
        torch.testing.assert_close(cm(x), m(x))
    monkeypatch.setattr(native_guard, "pending", lambda: False)
    with torch.no_grad():
        torch.testing.assert_close(cm(x), m(x))
        assert cm._weights._native is not None and cm._forward.fold_plan.native is not None
        m.bn.running_var.mul_(2)  # and now by the C++ check
        torch.testing.assert_close(cm(x), m(x))


def test_the_variable_turns_it_off(monkeypatch):
    monkeypatch.setenv(native_guard.VARIABLE, "0")
    m, x = build()
    cm = irc.compile(m, (x,))
    assert cm._weights._native is None and cm._forward.fold_plan.native is None


def _swap(m):
    other = nn.Parameter(torch.randn_like(m.fc.weight))
    torch.utils.swap_tensors(m.fc.weight, other)


CHANGES = {
    "reassigned": lambda m: setattr(m.fc, "weight", nn.Parameter(torch.randn_like(m.fc.weight))),
    "dict-written": lambda m: m.fc._parameters.__setitem__("weight", nn.Parameter(torch.randn_like(m.fc.weight))),
    "new-storage": lambda m: setattr(m.fc.weight, "data", torch.randn_like(m.fc.weight)),
    "swapped": _swap,
    "in-place-read-in-place": lambda m: m.fc.weight.data.mul_(1),  # nothing to see: read in place
    "in-place-folded-weight": lambda m: m.conv.weight.add_(0.5),
    "in-place-running-var": lambda m: m.bn.running_var.mul_(3),
    "in-place-bn-bias": lambda m: m.bn.bias.sub_(1),
    "train-mode": lambda m: m.bn.train(),
    "attribute": lambda m: setattr(m, "scale", -1.5),
}


@pytest.mark.parametrize("change", CHANGES)
def test_every_change_is_seen(change, guard):
    m, x = build()
    cm = irc.compile(m, (x,))
    torch.testing.assert_close(cm(x), m(x))
    assert (cm._weights._native is not None) == (guard == "native")
    with torch.no_grad():
        CHANGES[change](m)
        expected = m(x)
        torch.testing.assert_close(cm(x), expected)
        torch.testing.assert_close(cm(x), m(x))


def test_an_equal_new_value_is_a_maybe_the_python_check_answers(monkeypatch):
    """`m.scale = 2.0` again is another float object: the C++ check says "maybe", the Python
    check "unchanged", and nothing is rebuilt."""
    assert native_guard.library() is not None
    m, x = build()
    cm = irc.compile(m, (x,))
    seen = []
    monkeypatch.setattr(cm, "_rebind_weights", lambda *a, **k: seen.append(1))
    m.scale = float("2.0") * 1.0 + 0.0
    assert m.scale == 2.0
    with torch.no_grad():
        torch.testing.assert_close(cm(x), m(x))
    assert cm._weights._native.changed() and not cm._weights.stale()
    assert seen == []


def test_the_check_itself():
    a, b = torch.randn(4, 3), torch.randn(5)
    table = {"a": a, "b": b}
    check = native_check([a, b], [table, table], ["a", "b"], [True, False])
    assert isinstance(check, NativeCheck) and not check.changed()
    b.add_(1)  # its version is not watched
    assert not check.changed()
    a.add_(1)
    assert check.changed()
    assert check.record() and not check.changed()
    table["a"] = a.clone()
    assert check.changed()
    table["a"] = a
    assert not check.changed()
    a.data = torch.randn(4, 3)
    assert check.changed()
    assert check.record() and not check.changed()
    torch.utils.swap_tensors(b, torch.randn(5))
    assert check.changed()


def test_an_offset_into_the_same_storage_is_a_change():
    base = torch.randn(10)
    t = base[2:6]
    check = native_check([t])
    assert not check.changed()
    t.data = base[3:7]
    assert check.changed()


def test_what_it_cannot_read_falls_back(monkeypatch):
    with torch.inference_mode():
        frozen = torch.randn(3)
    assert native_check([frozen], versions=[True]) is None  # no version counter
    assert native_check([torch.randn(3)], objects=[(2.5, {"x": float("2.5")}, "x")]) is None  # not that object
    assert native_check([torch.randn(3)], [{}], ["x"]).changed()  # a tensor not in its table: "maybe"
    monkeypatch.setattr(native_guard, "THPVARIABLE_IMPL", 24)  # another torch's object layout
    assert native_check([torch.randn(3)]) is None


class Delegating(nn.Module):
    """A module whose `training` is a property of its class: it reads another module's flag, and
    its setter also keeps a copy in the instance's __dict__ (which the C++ check would read)."""

    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(4, 4)

    @property
    def training(self):
        inner = self.__dict__.get("_modules", {}).get("inner")
        return inner.training if inner is not None else self.__dict__.get("training", True)

    @training.setter
    def training(self, mode):
        self.__dict__["training"] = mode
        inner = self.__dict__.get("_modules", {}).get("inner")
        if inner is not None:
            inner.training = mode

    def forward(self, x):
        return self.inner(x) * (2.0 if self.training else 1.0)


def test_a_training_property_keeps_the_python_checks():
    """Were the flag read from the __dict__, switching the inner module alone would go unseen."""
    torch.manual_seed(0)
    assert native_guard.library() is not None
    m, x = Delegating().eval(), torch.randn(3, 4)
    cm = irc.compile(m, (x,))
    torch.testing.assert_close(cm(x), m(x))
    assert not cm._weights._native_due and cm._weights._native is None
    m.inner.train()  # m.training is now True; its __dict__ entry still False
    with torch.no_grad():
        torch.testing.assert_close(cm(x), m(x))

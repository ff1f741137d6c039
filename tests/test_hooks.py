"""Forward hooks through irc.compile (irc/hooks.py): run where eager PyTorch runs them, or refused.

Before, symbolic_trace recorded a hooked leaf module (nn.Linear) as a node irc converted from its
type alone, ran a hooked container's hooks once on proxies, and skipped the model's own hooks:
every case below gave other results than eager, silently."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import irc


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Sequential(nn.Linear(4, 8), nn.ReLU()), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3))


def same(cm, model, x):
    with torch.no_grad():
        torch.testing.assert_close(cm(x), model(x))


def double(module, inputs, output):
    return output * 2


def triple_input(module, inputs):
    return (inputs[0] * 3,)


@pytest.mark.parametrize("where", ["leaf", "container"])
@pytest.mark.parametrize("kind", ["forward", "pre"])
def test_hooks_registered_before_compiling_run_at_every_call(where, kind):
    model = mlp()
    target = model[1] if where == "leaf" else model[0]
    if kind == "forward":
        target.register_forward_hook(double)
    else:
        target.register_forward_pre_hook(triple_input)
    x = torch.randn(3, 4)
    cm = irc.compile(model, (x,))
    assert [n.node for n in cm.eager_nodes] == ["_1" if where == "leaf" else "_0"]
    for _ in range(2):
        same(cm, model, torch.randn(3, 4))


def test_a_hook_recording_activations_sees_every_call():
    """The feature-extraction habit: the hook keeps the last output (it kept a tracing proxy)."""
    model, seen = mlp(), {}
    model[0].register_forward_hook(lambda m, i, o: seen.__setitem__("block", o))
    cm = irc.compile(model, (torch.randn(3, 4),))
    for _ in range(2):
        x = torch.randn(3, 4)
        with torch.no_grad():
            cm(x)
            torch.testing.assert_close(seen["block"], model[0](x))


@pytest.mark.parametrize("target", [1, 3])
def test_a_hook_registered_after_compiling_rebuilds(target):
    model = mlp()
    x = torch.randn(3, 4)
    cm = irc.compile(model, (x,))
    same(cm, model, x)
    model[target].register_forward_hook(double)
    same(cm, model, x)
    assert any(n.node == f"_{target}" for n in cm.eager_nodes)


def test_unrelated_hook_registrations_do_not_rebuild(monkeypatch):
    """Only a hook on one of the model's modules matters; a tensor hook or another model's module
    hook only makes the next call look at the modules again."""
    model = mlp()
    x = torch.randn(3, 4)
    cm = irc.compile(model, (x,))
    rebuilt = []
    monkeypatch.setattr(cm, "_rebind_weights", lambda *a, **k: rebuilt.append(1))
    nn.Linear(2, 2).register_forward_hook(double)
    torch.randn(2, requires_grad=True).register_hook(lambda g: g)
    same(cm, model, x)
    assert rebuilt == []


def test_hooks_on_the_model_itself_are_refused():
    model = mlp()
    model.register_forward_pre_hook(triple_input)
    with pytest.raises(irc.IrcError, match="forward hooks or forward pre-hooks of its own"):
        irc.compile(model, (torch.randn(3, 4),))


def test_a_hook_on_the_model_registered_after_compiling_is_an_error_not_a_wrong_result():
    model = mlp()
    x = torch.randn(3, 4)
    cm = irc.compile(model, (x,))
    model.register_forward_hook(double)
    with pytest.raises(irc.IrcError, match="of its own"), torch.no_grad():
        cm(x)


def test_global_module_hooks_are_refused():
    handle = torch.nn.modules.module.register_module_forward_hook(lambda m, i, o: o)
    try:
        with pytest.raises(irc.IrcError, match="global module forward hooks"):
            irc.compile(mlp(), (torch.randn(3, 4),))
    finally:
        handle.remove()


def test_a_forward_set_on_the_instance_runs():
    """`module.forward = f` (accelerate's hooks, some adapters): irc converted the module from its
    type and ignored f; it is now an eager call through the module, as eager PyTorch runs it."""
    model = mlp()
    lin = model[1]
    lin.forward = lambda x: nn.functional.linear(x, lin.weight) * 2  # no bias, doubled
    x = torch.randn(3, 4)
    cm = irc.compile(model, (x,))
    assert [n.node for n in cm.eager_nodes] == ["_1"]
    same(cm, model, x)

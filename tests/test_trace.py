"""irc.compile's symbolic_trace (irc/frontend/trace.py): what torch.fx would evaluate once while
tracing, and so keep as a constant, is an IrcError. (Model state updated that way, and state read
that way that the graph changes: tests/test_mutations.py; hooks: tests/test_hooks.py.)"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import irc


class Noisy(nn.Module):
    def __init__(self, draw):
        super().__init__()
        self.lin, self.draw = nn.Linear(4, 4), draw

    def forward(self, x):
        return self.lin(x) + self.draw(x)


FIXED = {
    "rand": lambda x: torch.rand(4),
    "randn-2d": lambda x: torch.randn(3, 4) * 0.1,
    "normal_": lambda x: torch.empty(4).normal_(),
    "bernoulli": lambda x: torch.bernoulli(torch.full((4,), 0.5)),
    "randint": lambda x: torch.randint(0, 3, (4,)).float(),
    "dropout-training": lambda x: nn.functional.dropout(torch.ones(4), 0.5, training=True),
}


@pytest.mark.parametrize("draw", list(FIXED.values()), ids=list(FIXED))
def test_a_random_draw_on_known_values_is_an_error(draw):
    """irc.compile kept the draw made while tracing: every call added the same noise."""
    with pytest.raises(irc.IrcError, match="draws random numbers"):
        irc.compile(Noisy(draw), (torch.randn(3, 4),))


FROM_INPUT = {
    "rand_like": lambda x: torch.rand_like(x),
    "rand-of-shape": lambda x: torch.rand(x.shape),
}


@pytest.mark.parametrize("draw", list(FROM_INPUT.values()), ids=list(FROM_INPUT))
def test_a_random_draw_from_an_input_runs_at_every_call(draw):
    x = torch.randn(3, 4)
    cm = irc.compile(Noisy(draw), (x,))
    with torch.no_grad():
        assert not torch.equal(cm(x), cm(x))


def test_deterministic_constants_are_kept():
    class Ramp(nn.Module):
        def forward(self, x):
            return x + torch.arange(4.0) * nn.functional.dropout(torch.ones(4), 0.5, training=False)

    x = torch.randn(3, 4)
    cm = irc.compile(Ramp(), (x,), fallback=False)
    torch.testing.assert_close(cm(x), Ramp()(x))


class Normalized(nn.Module):
    """Buffers computed with on their own: torch.fx keeps `self.mean * 2` and `self.scale.exp()`
    as constants of the graph, not reads of the buffers."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("mean", torch.zeros(4))
        self.register_buffer("scale", torch.tensor(2.0))

    def forward(self, x):
        return (self.lin(x) - self.mean * 2) * self.scale.exp()


@pytest.mark.parametrize("update", ["load_state_dict", "in-place", "reassigned"])
def test_state_computed_with_while_tracing_is_watched(update, monkeypatch):
    """A buffer update after compiling never reached those constants: 8.0 apart after a
    load_state_dict. The buffers are now watched, and a change traces again."""
    torch.manual_seed(0)
    m, x = Normalized().eval(), torch.randn(3, 4)
    cm = irc.compile(m, (x,))
    rebuilds = []
    rebind = cm._rebind_weights
    monkeypatch.setattr(cm, "_rebind_weights", lambda *a, **k: (rebuilds.append(1), rebind(*a, **k)))
    with torch.no_grad():
        torch.testing.assert_close(cm(x), m(x))
        assert rebuilds == []
        if update == "load_state_dict":
            m.load_state_dict({**m.state_dict(), "mean": torch.ones(4), "scale": torch.tensor(0.5)})
        elif update == "in-place":
            m.mean.add_(1.0)
        else:
            m.scale = torch.tensor(-1.0)
        torch.testing.assert_close(cm(x), m(x))
        torch.testing.assert_close(cm(x), m(x))
    assert rebuilds == [1]


def test_state_read_through_a_tensor_property_while_tracing_is_watched():
    """`self.w.T` and `self.b.data` are property reads that make tensors: computations, watched
    like the others (a property that makes no tensor, `t.shape`, is not)."""

    class Projected(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("w", torch.randn(4, 4))
            self.register_buffer("b", torch.randn(4))

        def forward(self, x):
            return x @ self.w.T + self.b.data * 2

    m, x = Projected(), torch.randn(3, 4)
    cm = irc.compile(m, (x,))
    with torch.no_grad():
        m.w.mul_(3)
        m.b.add_(1)
        torch.testing.assert_close(cm(x), m(x))

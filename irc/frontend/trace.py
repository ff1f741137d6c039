"""symbolic_trace for irc.compile: torch.fx's tracing, and what it would get silently wrong.

`torch.fx.symbolic_trace` runs the model's forward once on proxies. Whatever that forward does on
real tensors only (a module's own buffers and attributes, with no input involved) runs then, once,
and is not in the graph:

- an update of the model's state (`self.steps += 1`, `self.buf.zero_()`): the compiled model would
  never repeat it, and compiling would have made one. Every tensor the model holds (parameters,
  buffers, plain tensor attributes of its modules) is versioned before tracing; a moved version is
  put back (parameters are not copied, so theirs cannot be) and is an IrcError;
- a random draw (`torch.rand(4)`) becomes a constant: an IrcError;
- a computation on such a tensor (`self.buf.sum()`) becomes a constant: wrong when the graph also
  changes that tensor in place (`torch.cat(..., out=self.buf)`), as eager recomputes it at every
  call. The tensors read so are recorded (`_RealReads`, a TorchFunctionMode) and checked against
  the graph's mutations (`order_mutations.mutated_attributes`): an IrcError. Otherwise they are
  listed in `gm.meta[BAKED_META]`, and the weight guard traces again when one of them changes
  (a buffer's `self.mean * 2` was a constant that `load_state_dict` never reached).

Forward hooks are traced as irc/hooks.py says (hooked modules are leaves; the model's own hooks
and global ones are an IrcError).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.utils._pytree as pytree
from torch import fx

from irc import hooks
from irc.errors import IrcError
from irc.frontend.order_mutations import mutated_attributes

State = list[tuple[str, torch.Tensor, int, "torch.Tensor | None"]]

BAKED_META = "irc_baked"
"""GraphModule.meta key: the model's tensors a torch call read while tracing with no traced
operand (`self.mean * 2`, `self.scale.exp()`), whose results torch.fx kept as constants: the
weight guard watches them, and a change traces again (irc/weights.py)."""


def symbolic_trace(model: Any, concrete_args: dict[str, Any] | None = None) -> fx.GraphModule:
    """`torch.fx.symbolic_trace(model, concrete_args)`, or an IrcError where its graph would
    differ from eager PyTorch (see the module docstring)."""
    why = hooks.root_hooks(model)
    if why:
        raise IrcError(
            f"irc cannot compile this model as it is: {why}. Its graph is the model's forward, which "
            "does not run them. Register the hooks on submodules (their calls then run in eager PyTorch, "
            "hooks included), or run them around the compiled module's call."
        )
    state = _model_state(model)
    reads = _RealReads({id(t) for _, t, _, _ in state})
    try:
        with reads:
            tracer = hooks.Tracer()
            graph = tracer.trace(model, concrete_args=concrete_args)
            name = type(model).__name__ if isinstance(model, torch.nn.Module) else model.__name__
            gm = fx.GraphModule(tracer.root, graph, name)
    except Exception as e:
        _restore(state)
        raise IrcError(
            f"torch.fx could not trace the model: {type(e).__name__}: {e}\n"
            "irc needs a graph torch.fx.symbolic_trace can capture: no Python control flow "
            "that depends on tensor values (or pass a torch.export.ExportedProgram, or use "
            "torch.compile(model, backend='irc'))."
        ) from e
    changed = _restore(state)
    if changed:
        raise IrcError(
            f"the model's forward changes {', '.join(changed)} in place with no traced operand "
            "(`self.n += 1`, `self.buf.zero_()`): torch.fx ran that once while tracing and the graph "
            "does not repeat it at every call, so the compiled model would differ from eager. irc put "
            "the value(s) back. Use torch.compile(model, backend='irc'), whose graphs keep such "
            "updates (they run eagerly), or move the update out of forward."
        )
    if reads.random:
        raise IrcError(
            f"the model's forward draws random numbers from values known while tracing "
            f"(torch.{reads.random[0]}, no input involved): torch.fx kept the one draw it made as a "
            "constant, so every call would add the same noise. Derive the draw from an input "
            "(`torch.rand_like(x)`, `torch.rand(x.shape)`: it then runs in eager PyTorch at every "
            "call), or use torch.compile(model, backend='irc')."
        )
    gm.meta[BAKED_META] = [n for n, t, _, _ in state if id(t) in reads.ids]
    if reads.ids:
        mutated = {id(t) for t in mutated_attributes(gm)}
        baked = [n for n, t, _, _ in state if id(t) in reads.ids and id(t) in mutated]
        if baked:
            raise IrcError(
                f"the model's forward changes {', '.join(baked)} in place and also computes with "
                "it on its own (`self.buf.sum()`, no traced input involved): torch.fx evaluated that "
                "computation once, on the value it had while tracing, so the compiled model would "
                "differ from eager. Use torch.compile(model, backend='irc'), or involve an input."
            )
    return gm


RANDOM = {
    "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "bernoulli", "multinomial",
    "normal", "poisson", "uniform_", "normal_", "bernoulli_", "random_", "exponential_", "geometric_",
    "log_normal_", "cauchy_",
}
"""torch functions and Tensor methods that draw random numbers: called with no traced argument
(`torch.rand(4)`), torch.fx keeps the one draw it made as a constant."""


DROPOUT = {"dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d", "feature_dropout"}
"""... and those that draw a mask when training (`F.dropout(self.table, 0.1, training=True)`)."""


def _dropping(args: tuple, kwargs: dict) -> bool:
    """Does a dropout call with these arguments (F.dropout's or torch.dropout's order) draw a mask?"""
    p = kwargs.get("p", args[1] if len(args) > 1 else 0.5)
    training = kwargs.get("training", kwargs.get("train", args[2] if len(args) > 2 else True))
    return bool(training) and p > 0


class _RealReads(torch.overrides.TorchFunctionMode):
    """While tracing: which of the tensors `watched` (by id) a torch call read with no fx.Proxy
    among its arguments, a computation torch.fx evaluates then and keeps as a constant."""

    def __init__(self, watched: set[int]):
        super().__init__()
        self.watched, self.ids = watched, set()
        self.random: list[str] = []  # random draws made on known values only: constants in the graph

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", None)
        result = func(*args, **kwargs)
        if name == "__get__" and not isinstance(result, torch.Tensor):
            return result  # a property read that is no tensor (`t.shape`, `t.requires_grad`); `t.T` is
        leaves = pytree.tree_leaves((args, kwargs))
        if not any(isinstance(a, fx.Proxy) for a in leaves):
            self.ids.update(id(a) for a in leaves if isinstance(a, torch.Tensor) and id(a) in self.watched)
            if name in RANDOM or (name in DROPOUT and _dropping(args, kwargs)):
                self.random.append(name)
        return result


def _model_state(model: Any) -> State:
    """Every tensor `model` holds (parameters, buffers, plain tensor attributes of its modules)
    with its version, and a copy of those that are not parameters."""
    if not isinstance(model, torch.nn.Module):
        return []
    found: dict[int, tuple[str, torch.Tensor]] = {}
    for prefix, mod in model.named_modules(remove_duplicate=False):
        for key, t in (*mod._parameters.items(), *mod._buffers.items(), *vars(mod).items()):
            if isinstance(t, torch.Tensor):
                found.setdefault(id(t), (f"{prefix}.{key}" if prefix else key, t))
    with torch.no_grad():
        return [(name, t, t._version, None if isinstance(t, torch.nn.Parameter) else t.detach().clone())
                for name, t in found.values()]


def _restore(state: State) -> list[str]:
    """The names of the tensors in `state` whose version moved, their values put back (a
    parameter's cannot be: it is named, not copied)."""
    changed = []
    with torch.no_grad():
        for name, t, version, copy in state:
            if t._version != version:
                changed.append(name)
                if copy is not None:
                    t.copy_(copy)
    return changed

"""The registry of built-in models: `ModelSpec`, `BUILTIN_MODELS`, `register` and the look-ups.

The model families (`mlps`, `cnn`, `transformer`) import this and register their specs;
`irc.models` imports them all, in that order, and re-exports these names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import nn

from irc.errors import IrcError

Inputs = tuple[torch.Tensor, ...]
Factory = Callable[[], tuple[nn.Module, Inputs]]


class UsageError(IrcError, ValueError):
    """The user named something irc cannot find or use (a model, an input shape, ...)."""


@dataclass(frozen=True)
class ModelSpec:
    """A reproducible model plus example inputs.

    `flops` is the floating-point operation count of one forward call (multiply and add
    each count as one), or None to have `model_flops` measure it.
    """

    name: str
    description: str
    factory: Factory = field(repr=False)
    flops: int | None = None
    seed: int = 0

    def build(self) -> tuple[nn.Module, Inputs]:
        """Return `(model.eval(), example_inputs)`, deterministic for a given spec."""
        torch.manual_seed(self.seed)
        model, inputs = self.factory()
        return model.eval(), tuple(inputs)


BUILTIN_MODELS: dict[str, ModelSpec] = {}


def register(spec: ModelSpec) -> ModelSpec:
    """Add `spec` to `BUILTIN_MODELS` (names must be unique) and return it."""
    if spec.name in BUILTIN_MODELS:
        raise ValueError(f"model {spec.name!r} is already registered")
    BUILTIN_MODELS[spec.name] = spec
    return spec


def get_model(name: str) -> ModelSpec:
    """Look a built-in model up by name; unknown names raise a `UsageError` listing the known ones."""
    try:
        return BUILTIN_MODELS[name]
    except KeyError:
        known = ", ".join(BUILTIN_MODELS)
        raise UsageError(f"unknown model {name!r}; built-in models are: {known}") from None


def model_flops(spec: ModelSpec) -> int:
    """FLOPs of one forward call of `spec`: the declared count, else counted by torch."""
    if spec.flops is not None:
        return spec.flops
    from torch.utils.flop_counter import FlopCounterMode

    model, inputs = spec.build()
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(*inputs)
    return counter.get_total_flops()

"""What a built-in model is (`ModelSpec`), its FLOP count, and the MLPs.

`spec.build()` seeds torch and returns `(model.eval(), example_inputs)`, so two builds of the
same spec give identical weights and inputs. Give `flops=` when the count is known
analytically; otherwise `model_flops` counts it once with torch's FLOP counter.
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


# --- MLPs ------------------------------------------------------------------------------


def mlp(sizes: list[int]) -> nn.Sequential:
    """Linear layers `sizes[0] -> sizes[1] -> ...` with a ReLU between them (none after the last)."""
    layers: list[nn.Module] = []
    for i, (k, n) in enumerate(zip(sizes, sizes[1:])):
        if i:
            layers.append(nn.ReLU())
        layers.append(nn.Linear(k, n))
    return nn.Sequential(*layers)


def mlp_flops(batch: int, sizes: list[int]) -> int:
    """2*M*K*N per Linear layer (bias adds and ReLUs are not counted)."""
    return sum(2 * batch * k * n for k, n in zip(sizes, sizes[1:]))


def mlp_spec(name: str, batch: int, sizes: list[int]) -> ModelSpec:
    """A `ModelSpec` for `mlp(sizes)` fed a float32 randn batch of shape (batch, sizes[0])."""

    def factory() -> tuple[nn.Module, Inputs]:
        model = mlp(sizes)
        return model, (torch.randn(batch, sizes[0]),)

    shape = "-".join(map(str, sizes))
    return ModelSpec(
        name=name,
        description=f"MLP {shape}, batch {batch} (Linear+ReLU)",
        factory=factory,
        flops=mlp_flops(batch, sizes),
    )


MLPS = (
    mlp_spec("mlp-small", 1, [784, 128, 10]),
    mlp_spec("mlp-medium", 64, [512, 1024, 1024, 10]),
    mlp_spec("mlp-large", 256, [4096, 4096, 4096, 1024]),
)

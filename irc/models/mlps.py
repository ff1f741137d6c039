"""Built-in MLPs (registered into `irc.models.BUILTIN_MODELS` on import): mlp-small/-medium/-large."""

from __future__ import annotations

import torch
from torch import nn

from irc.models.registry import Inputs, ModelSpec, register


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


register(mlp_spec("mlp-small", 1, [784, 128, 10]))
register(mlp_spec("mlp-medium", 64, [512, 1024, 1024, 10]))
register(mlp_spec("mlp-large", 256, [4096, 4096, 4096, 1024]))

"""Built-in models that `irc verify`, `irc visualize` and the benchmarks run.

Each entry of `BUILTIN_MODELS` is a `ModelSpec` (`irc/models/spec.py`): a name, a one-line
description and a factory. The table is written here, from each family module's own `SPECS`
(`spec.MLPS`, `cnn.SPECS`, `modern_cnn.SPECS`, `transformer.SPECS`): to add a model, write a factory returning
`(module, inputs_tuple)`, give it a `ModelSpec` in its family's `SPECS`.

The tiny language models (`irc.models.lm.LM_MODELS`, transformers-based) are a table of their own,
measured by `python -m irc.tools.lm_check`; they are not built-in models yet.
"""

from __future__ import annotations

from irc.models import cnn, modern_cnn, transformer
from irc.models.spec import MLPS, Factory, Inputs, ModelSpec, UsageError, mlp, mlp_flops, mlp_spec, model_flops

__all__ = ["BUILTIN_MODELS", "Factory", "Inputs", "ModelSpec", "UsageError", "get_model", "mlp", "mlp_flops",
           "mlp_spec", "model_flops"]


def _table(*families: tuple[ModelSpec, ...]) -> dict[str, ModelSpec]:
    table: dict[str, ModelSpec] = {}
    for spec in (s for family in families for s in family):
        if spec.name in table:
            raise ValueError(f"model {spec.name!r} is written twice")
        table[spec.name] = spec
    return table


BUILTIN_MODELS: dict[str, ModelSpec] = _table(MLPS, cnn.SPECS, modern_cnn.SPECS, transformer.SPECS)


def get_model(name: str) -> ModelSpec:
    """Look a built-in model up by name; unknown names raise a `UsageError` listing the known ones."""
    try:
        return BUILTIN_MODELS[name]
    except KeyError:
        known = ", ".join(BUILTIN_MODELS)
        raise UsageError(f"unknown model {name!r}; built-in models are: {known}") from None

"""Built-in models that `irc verify`, `irc visualize` and the benchmarks run.

Each entry of `BUILTIN_MODELS` is a `ModelSpec`: a name, a one-line description and a
factory. `spec.build()` seeds torch and returns `(model.eval(), example_inputs)`, so two
builds of the same spec give identical weights and inputs.

To add a model (a CNN, a transformer block, ...), write a factory returning
`(module, inputs_tuple)` and `register(ModelSpec(...))` it. Give `flops=` when the count
is known analytically; otherwise `model_flops` counts it once with torch's FLOP counter.
"""

# Each family registers its specs on import; BUILTIN_MODELS lists them in this order.
from irc.models import mlps  # noqa: F401  (registers mlp-small, mlp-medium, mlp-large)

# isort: split
from irc.models import (
    cnn,  # noqa: F401  (registers cnn, resnet18)
    transformer,  # noqa: F401  (registers transformer-encoder, transformer-block, eltwise-layernorm)
)
from irc.models.mlps import mlp, mlp_flops, mlp_spec
from irc.models.registry import (
    BUILTIN_MODELS,
    Factory,
    Inputs,
    ModelSpec,
    UsageError,
    get_model,
    model_flops,
    register,
)

__all__ = [
    "BUILTIN_MODELS",
    "Factory",
    "Inputs",
    "ModelSpec",
    "UsageError",
    "get_model",
    "mlp",
    "mlp_flops",
    "mlp_spec",
    "model_flops",
    "register",
]

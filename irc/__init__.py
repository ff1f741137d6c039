"""irc: a multi-level IR compiler for running PyTorch models on CPUs, built on xDSL.

    cm = irc.compile(model, example_inputs)
    y = cm(x)                      # one native call
    print(cm.ir("fused"))          # the IR after fusion; also "import", "loops"; cm.cpp_source
    print(cm.explain())            # what fused, FLOPs and bytes per kernel
    cm.refresh_weights()           # after writing weights through .data (irc.refresh_weights(): all)
    cm.save("model.irc"); irc.load("model.irc")   # AOT artifact: no compiler, no xDSL
    torch.compile(model, backend="irc")   # irc as a Dynamo backend (entry point; no import needed)

The compiler (and xDSL) is imported on first use of `compile`, so `irc.load` stays light; torch
on first use of `load` or `compile`, so `irc-opt` (which imports this package) starts in 0.5 s.
"""

from irc.errors import CompileError, InputError, IrcError, UnsupportedOpError
from irc.target import Target

__version__ = "0.1.0"

__all__ = [
    "CompileError",
    "CompiledModule",
    "InputError",
    "IrcError",
    "Target",
    "UnsupportedOpError",
    "compile",
    "load",
    "refresh_weights",
]


def __getattr__(name: str):
    if name == "load":  # torch too is imported on first use: `irc-opt` starts without it
        from irc.aot import load

        return load
    if name in ("compile", "CompiledModule", "refresh_weights"):
        from irc import api

        return getattr(api, name)
    raise AttributeError(f"module 'irc' has no attribute {name!r}")

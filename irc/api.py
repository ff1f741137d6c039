"""`irc.compile`: trace, import, fuse, lower, emit, build, wrap — all in memory."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import fx

from irc.context import irc_context
from irc.errors import IrcError
from irc.fold_params import fold_parameters
from irc.frontend.fx_importer import ImportedGraph, import_fx
from irc.lowering.emit_cpp import emit_cpp
from irc.lowering.irc_fuse import IrcFusePass
from irc.lowering.irc_to_loops import IrcToLoopsPass
from irc.runtime import TensorSpec, build_library, load_library, make_forward

LEVELS = ("import", "fused", "loops")


@dataclass
class CompiledModule:
    """A model compiled to native code. Call it like the model; inspect every level with `ir()`."""

    graph_module: fx.GraphModule
    cpp_source: str
    library_path: Path
    _ir: dict[str, str]
    _forward: Callable[..., Any] = field(repr=False)
    _graph: ImportedGraph = field(repr=False)

    def __call__(self, *inputs: torch.Tensor) -> Any:
        return self._forward(*inputs)

    def ir(self, level: str = "fused") -> str:
        """The IR text at `level`: "import" (irt as imported), "fused" (after irc-fuse), "loops"."""
        if level not in self._ir:
            raise ValueError(f"unknown IR level {level!r}; choose one of {', '.join(LEVELS)}")
        return self._ir[level]

    @property
    def input_shapes(self) -> list[tuple[int, ...]]:
        return list(self._graph.input_shapes)

    def __repr__(self) -> str:
        shapes = ", ".join("x".join(map(str, s)) for s in self._graph.input_shapes)
        return f"CompiledModule({self._graph.func_name}({shapes}), library={self.library_path})"


def trace(model: torch.nn.Module | Callable[..., Any]) -> fx.GraphModule:
    """The FX graph of a model or function; a GraphModule is used as it is."""
    if isinstance(model, fx.GraphModule):
        return model
    try:
        return fx.symbolic_trace(model)
    except Exception as e:
        raise IrcError(
            f"torch.fx could not trace the model: {type(e).__name__}: {e}\n"
            "irc needs a graph torch.fx.symbolic_trace can capture: no Python control flow "
            "that depends on tensor values."
        ) from e


def compile(
    model: torch.nn.Module | Callable[..., Any],
    example_inputs: Sequence[torch.Tensor] | torch.Tensor,
    *,
    fuse: bool = True,
    cxx_flags: Sequence[str] | None = None,
) -> CompiledModule:
    """Compile `model` for inputs shaped like `example_inputs`.

    fuse: apply irc's fusion rules (False compiles every op as its own kernel).
    cxx_flags: the C++ compiler flags (default: irc.runtime.DEFAULT_CXXFLAGS, or $IRC_CXXFLAGS).
    Raises UnsupportedOpError (every unsupported node at once) or CompileError (g++ failed).
    """
    inputs = (example_inputs,) if isinstance(example_inputs, torch.Tensor) else tuple(example_inputs)
    gm = trace(model)
    graph = import_fx(gm, inputs)
    module, ctx = graph.module, irc_context()
    ir = {"import": str(module)}
    if fuse:
        IrcFusePass().apply(ctx, module)
    fold_parameters(graph)  # parameter-only computations (also those rules create): once, now
    module.verify()
    ir["fused"] = str(module)
    IrcToLoopsPass().apply(ctx, module)
    module.verify()
    ir["loops"] = str(module)
    source = emit_cpp(module)

    library_path = build_library(source, flags=cxx_flags)
    lib = load_library(library_path)
    params = [t.detach() if t.is_contiguous() else t.detach().contiguous() for _, t in graph.params]
    forward = make_forward(
        getattr(lib, graph.func_name),
        inputs=[TensorSpec(n, s) for n, s in zip(graph.input_names, graph.input_shapes)],
        params=params,
        outputs=[TensorSpec(f"out{i}", s) for i, s in enumerate(graph.output_shapes)],
        return_tuple=graph.return_tuple,
        set_threads=lib.irc_set_num_threads,
    )
    return CompiledModule(gm, source, library_path, ir, forward, graph)

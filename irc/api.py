"""`irc.compile`: trace, import, fuse, lower, emit, build, wrap — all in memory.

A `CompiledModule` holds one *version* per set of input shapes it has been called with (at most
`max_versions`). A version is either one native function for the whole graph, or — when some
nodes are unsupported and `fallback=True` — a split graph whose supported partitions are native
and whose other nodes run in eager PyTorch (`irc/partition.py`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import fx

from irc.context import irc_context
from irc.debugging import CompileLog, configure_logging
from irc.errors import CompileError, InputError, IrcError, UnsupportedNode, UnsupportedOpError
from irc.frontend.fx_importer import ImportedGraph, import_fx
from irc.pipeline import lower
from irc.runtime import TensorSpec, build_library, compiler_invocations, load_library, make_forward
from irc.runtime.build import resolve_flags
from irc.runtime.wrapper import PACKED_SUFFIX

LEVELS = ("import", "fused", "loops")
DEFAULT_MAX_VERSIONS = 8

log = logging.getLogger("irc")

Shapes = tuple[tuple[int, ...], ...]


@dataclass
class Version:
    """The model compiled for one set of input shapes."""

    input_shapes: Shapes
    forward: Callable[..., Any] = field(repr=False)
    ir: dict[str, str] = field(repr=False)  # level -> text (partitions separated by `// -----`)
    cpp_source: str = field(repr=False)
    library_path: Path | None  # None if no partition is native
    graph: ImportedGraph | None = field(default=None, repr=False)  # the whole graph, when native
    eager_nodes: list[UnsupportedNode] = field(default_factory=list)  # run by PyTorch (fallback)
    partitions: dict[str, Version] = field(default_factory=dict, repr=False)  # native partitions
    memory: dict[str, Any] = field(default_factory=dict, repr=False)  # irc-plan-memory's stats (native only)


class CompiledModule:
    """A model compiled to native code. Call it like the model; inspect every level with `ir()`.

    Calling it with new input shapes compiles a version for them (logged at INFO; the build
    cache makes a shape seen before cheap) and keeps the earlier ones, up to `max_versions`.
    `ir()`, `cpp_source`, `library_path` and `input_shapes` describe the *first* version (the
    example inputs'); `versions` maps every input-shape tuple compiled so far to its `Version`.
    """

    def __init__(self, graph_module: fx.GraphModule, first: Version, build: Callable[..., Version], max_versions: int):
        self.graph_module = graph_module
        self.max_versions = max_versions
        self.versions: dict[Shapes, Version] = {first.input_shapes: first}
        self._first = first
        self._build = build
        self._input_names = [n.name for n in graph_module.graph.nodes if n.op == "placeholder"]
        self._forward = first.forward  # the version called last: the fast path

    def __call__(self, *inputs: torch.Tensor) -> Any:
        try:
            return self._forward(*inputs)
        except InputError as e:
            return self._dispatch(inputs, e)

    def _dispatch(self, inputs: tuple, error: InputError) -> Any:
        """The slow path: an input did not match the current version. Other shapes → another
        version (compiled if new); any other mismatch → the InputError."""
        _check_inputs(inputs, self._input_names, getattr(self, "_input_dtypes", None))
        shapes = tuple(tuple(x.shape) for x in inputs)
        version = self.versions.get(shapes)
        if version is None:
            version = self._new_version(inputs, shapes)
        elif version.forward is self._forward:
            raise error
        self._forward = version.forward
        return version.forward(*inputs)

    def _new_version(self, inputs: tuple, shapes: Shapes) -> Version:
        seen = "; ".join(_fmt_shapes(s) for s in self.versions)
        if len(self.versions) >= self.max_versions:
            raise IrcError(
                f"irc: this model was already compiled for {len(self.versions)} different input shapes "
                f"(max_versions={self.max_versions}): {seen}; now it is called with {_fmt_shapes(shapes)}. "
                "Every new shape costs a compilation. Pad or bucket the inputs to a few fixed shapes, "
                "or allow more versions: irc.compile(..., max_versions=N)."
            )
        current = next(v for v in self.versions.values() if v.forward is self._forward)
        changed = [
            f"input {i} ({name!r}) has shape {new}, compiled for {old}"
            for i, (name, old, new) in enumerate(zip(self._input_names, current.input_shapes, shapes))
            if old != new
        ]
        log.info(
            "irc: compiling version %d of at most %d for new input shapes: %s",
            len(self.versions) + 1, self.max_versions, "; ".join(changed),
        )
        try:
            version = self._build(inputs, first=False)
        except IrcError as e:
            raise IrcError(
                f"irc: compiling for the new input shapes {_fmt_shapes(shapes)} failed "
                f"(compiled so far: {seen}):\n{e}"
            ) from e
        self.versions[shapes] = version
        return version

    def ir(self, level: str = "fused") -> str:
        """The IR text at `level`: "import" (irt as imported), "fused" (after irc-fuse), "loops"."""
        if level not in LEVELS:
            raise ValueError(f"unknown IR level {level!r}; choose one of {', '.join(LEVELS)}")
        return self._first.ir[level]

    @property
    def cpp_source(self) -> str:
        return self._first.cpp_source

    @property
    def library_path(self) -> Path | None:
        return self._first.library_path

    @property
    def input_shapes(self) -> list[tuple[int, ...]]:
        return list(self._first.input_shapes)

    @property
    def eager_nodes(self) -> list[UnsupportedNode]:
        """The nodes that run in eager PyTorch (empty when the whole graph is native)."""
        return list(self._first.eager_nodes)

    def memory_stats(self) -> dict[str, Any]:
        """Scratch memory of the version called last (see lowering/plan_memory.py): `arena_bytes`
        (one arena per calling thread), `intermediate_bytes` (the sum of all intermediate
        buffers, what separate allocations would take), `buffers`, `in_place` (buffers written
        over a dying input) and `reuse_ratio` (intermediate / arena bytes; 1.0: no reuse).
        A partitioned version sums its native partitions."""
        from irc.lowering.plan_memory import with_ratio

        version = next((v for v in self.versions.values() if v.forward is self._forward), self._first)
        parts = [version] if version.graph is not None else list(version.partitions.values())
        keys = ("arena_bytes", "intermediate_bytes", "buffers", "in_place")
        return with_ratio({k: sum(p.memory.get(k, 0) for p in parts) for k in keys})

    @property
    def _graph(self) -> ImportedGraph | None:
        return self._first.graph

    def _native_parts(self) -> list[Version]:
        first = self._first
        return [first] if first.graph is not None else list(first.partitions.values())

    def save(self, path: str | Path) -> Path:
        """Write an AOT artifact (library, folded weights, manifest) for the example input shapes;
        `irc.load(path)` runs it without recompiling. See irc/aot.py."""
        from irc import aot

        v = self._first
        if v.graph is None or v.library_path is None:
            raise IrcError(
                "only a model compiled entirely to native code can be saved; this one runs "
                f"{len(v.eager_nodes)} node(s) in eager PyTorch: {', '.join(n.target for n in v.eager_nodes)}"
            )
        g = v.graph
        return aot.save(
            path, library_path=v.library_path, func_name=g.func_name, input_names=g.input_names,
            input_shapes=g.input_shapes, input_dtypes=g.input_dtypes, output_shapes=g.output_shapes, return_tuple=g.return_tuple,
            params=g.params, cxx_flags=self._options["cxx_flags"], arena_bytes=v.memory.get("arena_bytes", 0),
        )

    def explain(self, profile: bool = False, runs: int = 20, roofline_png: str | Path | None = None) -> str:
        """What irc did (see irc/explain.py); with `profile`, each kernel's measured time and
        GFLOP/s against this machine's measured peak, and optionally a roofline plot."""
        from xdsl.parser import Parser

        from irc import explain as ex

        reports = []
        for v in self._native_parts():
            imported = Parser(irc_context(), v.ir["import"]).parse_module()
            fused = Parser(irc_context(), v.ir["fused"]).parse_module()
            loops = Parser(irc_context(), v.ir["loops"]).parse_module()
            timings, roof = None, None
            if profile:
                timings, roof = self._profile(v, fused, runs)
                if roofline_png is not None:
                    ex.plot_roofline(ex.kernels(fused), timings, roof, roofline_png)
            report = ex.explain(imported, fused, timings, roof.peak_gflops if roof else None, loops)
            if roof:
                report += f"Measured roofline: {roof.peak_gflops:.1f} GFLOP/s peak, {roof.bandwidth_gbs:.1f} GB/s ({roof.threads} threads)\n"
            reports.append(report)
        if self._first.eager_nodes:
            reports.append("Run in eager PyTorch: " + ", ".join(str(n) for n in self._first.eager_nodes) + "\n")
        return "\n".join(reports)

    def _profile(self, v: Version, fused, runs: int):
        from irc import explain as ex
        from irc.machine import roofline

        if v.graph is None or v is not self._first:
            raise IrcError("--profile needs a model compiled entirely to native code")
        opts = {**self._options, "dump_dir": None}
        profiled = _native_version(self.graph_module, self._example_inputs, profile=True, **opts)
        lib = load_library(profiled.library_path)
        for _ in range(3):
            profiled.forward(*self._example_inputs)
        lib.irc_profile_reset()
        for _ in range(runs):
            profiled.forward(*self._example_inputs)
        return ex.kernel_seconds(fused, ex.read_profile(lib), runs), roofline()

    def __repr__(self) -> str:
        shapes = ", ".join("x".join(map(str, s)) for s in self._first.input_shapes)
        name = self._first.graph.func_name if self._first.graph else "forward"
        extra = f", {len(self._first.eager_nodes)} eager node(s)" if self._first.eager_nodes else ""
        return f"CompiledModule({name}({shapes}), library={self.library_path}{extra})"


def _fmt_shapes(shapes: Shapes) -> str:
    return "(" + ", ".join("x".join(map(str, s)) or "scalar" for s in shapes) + ")"


def _check_inputs(inputs: tuple, names: list[str], dtypes: Sequence[torch.dtype] | None = None) -> None:
    """Everything the native wrapper checks except shapes, with the same messages. `dtypes`: the
    example inputs' (float32, or int64 for embedding indices); default all float32."""
    if len(inputs) != len(names):
        raise InputError(f"expected {len(names)} input(s) ({', '.join(names)}), got {len(inputs)}")
    for i, (x, name) in enumerate(zip(inputs, names)):
        label = f"input {i} ({name!r})"
        if not isinstance(x, torch.Tensor):
            raise InputError(f"{label}: expected a torch.Tensor, got {type(x).__name__}")
        if not x.is_cpu:
            raise InputError(f"{label}: expected device cpu, got {x.device}")
        expected = dtypes[i] if dtypes is not None else torch.float32
        if x.dtype != expected:
            raise InputError(f"{label}: expected dtype {expected}, got {x.dtype}")
        if not x.is_contiguous():
            raise InputError(
                f"{label}: expected a contiguous tensor, got strides {x.stride()}; call .contiguous() on it first"
            )


def trace(model: Any) -> fx.GraphModule:
    """The FX graph of a model: a GraphModule as it is, an ExportedProgram's ATen graph (weights
    as function parameters), or `torch.fx.symbolic_trace` of an nn.Module or function."""
    if isinstance(model, fx.GraphModule):
        return model
    if isinstance(model, torch.export.ExportedProgram):
        from irc.frontend.aten import exported_program_module

        return exported_program_module(model)
    try:
        return fx.symbolic_trace(model)
    except Exception as e:
        raise IrcError(
            f"torch.fx could not trace the model: {type(e).__name__}: {e}\n"
            "irc needs a graph torch.fx.symbolic_trace can capture: no Python control flow "
            "that depends on tensor values (or pass a torch.export.ExportedProgram, or use "
            "torch.compile(model, backend='irc'))."
        ) from e


def compile(
    model: torch.nn.Module | Callable[..., Any] | fx.GraphModule | torch.export.ExportedProgram,
    example_inputs: Sequence[torch.Tensor] | torch.Tensor,
    *,
    fuse: bool = True,
    cxx_flags: Sequence[str] | None = None,
    fallback: bool = True,
    max_versions: int = DEFAULT_MAX_VERSIONS,
    dump_dir: str | Path | None = None,
) -> CompiledModule:
    """Compile `model` for inputs shaped like `example_inputs`.

    model: an nn.Module or function (traced with torch.fx.symbolic_trace), a torch.fx.GraphModule
      (used as it is) or a torch.export.ExportedProgram (its ATen graph).
    fuse: apply irc's fusion rules (False compiles every op as its own kernel).
    cxx_flags: the C++ compiler flags (default: irc.runtime.DEFAULT_CXXFLAGS, or $IRC_CXXFLAGS).
    fallback: run nodes irc cannot compile in eager PyTorch, between native partitions (logged
      once, at WARNING, on logger "irc"). False raises UnsupportedOpError listing them all.
    max_versions: how many input-shape versions a call may compile before raising IrcError.
    dump_dir: write the FX graph, the IR after every pass, the C++ and the build log there
      (default: $IRC_DUMP_DIR; nothing when unset).
    Raises UnsupportedOpError (fallback=False) or CompileError (g++ failed).
    """
    if max_versions < 1:
        raise ValueError(f"max_versions must be at least 1, got {max_versions}")
    configure_logging()
    inputs = (example_inputs,) if isinstance(example_inputs, torch.Tensor) else tuple(example_inputs)
    gm = trace(model)
    options = dict(fuse=fuse, cxx_flags=cxx_flags, dump_dir=dump_dir)

    def build(inputs: Sequence[torch.Tensor], first: bool = True) -> Version:
        return _build_version(gm, inputs, fallback=fallback, first=first, **options)

    cm = CompiledModule(gm, build(inputs), build, max_versions)
    cm._options, cm._example_inputs = options, inputs
    cm._input_dtypes = [getattr(x, "dtype", torch.float32) for x in inputs]
    return cm


def _build_version(gm: fx.GraphModule, inputs, *, fuse, cxx_flags, dump_dir, fallback: bool, first: bool) -> Version:
    """The whole graph native; or, if unsupported nodes and `fallback`, a partitioned version."""
    try:
        return _native_version(gm, inputs, fuse=fuse, cxx_flags=cxx_flags, dump_dir=dump_dir)
    except UnsupportedOpError:
        if not fallback:
            raise
    from irc.partition import describe_fallback, partition

    def compile_partition(sub: fx.GraphModule, sub_inputs) -> tuple[Callable[..., Any], Version]:
        v = _native_version(sub, sub_inputs, fuse=fuse, cxx_flags=cxx_flags, dump_dir=dump_dir)
        return v.forward, v

    p = partition(gm, inputs, compile_partition)
    # Once per model, where people look (WARNING): the model is not all native, and that costs
    # speed; later shape versions repeat it at INFO only.
    log.log(logging.WARNING if first else logging.INFO, describe_fallback(p))
    parts = p.native
    ir = {
        level: "\n// -----\n".join(f"// partition {name}\n{v.ir[level].rstrip()}" for name, v in parts.items())
        for level in LEVELS
    }
    source = "\n".join(f"// ===== partition {name} =====\n{v.cpp_source}" for name, v in parts.items())
    library = next((v.library_path for v in parts.values()), None)
    shapes = tuple(tuple(x.shape) for x in inputs)
    return Version(
        shapes, _partitioned_forward(p.module, shapes), ir, source, library, None, list(p.eager), dict(parts)
    )


def _partitioned_forward(module: fx.GraphModule, shapes: Shapes) -> Callable[..., Any]:
    """Run the split graph; inputs of other shapes raise InputError (-> another version)."""
    n = len(shapes)

    def forward(*args: Any) -> Any:
        if len(args) != n or any(not isinstance(a, torch.Tensor) or a.shape != s for a, s in zip(args, shapes)):
            raise InputError("the inputs do not match this version's shapes")
        with torch.no_grad():
            return module(*args)

    return forward


def _native_version(
    gm: fx.GraphModule, inputs: Sequence[torch.Tensor], *, fuse: bool, cxx_flags, dump_dir=None, profile: bool = False
) -> Version:
    """Import, fuse, lower, emit, build and wrap the whole graph (UnsupportedOpError if it can't).

    Every stage is dumped when a dump directory is set, and a failing pass leaves a reproducer."""
    clog = CompileLog(dump_dir)
    clog.write("fx-graph.py", gm.code)
    graph = import_fx(gm, inputs)
    ir = {"import": str(graph.module)}
    clog.write("import.mlir", ir["import"])
    lowered = lower(graph, ir, clog, fuse=fuse, cxx_flags=cxx_flags, profile=profile)  # or the pipeline cache's
    plan, source, stats = lowered.plan, lowered.source, lowered.memory
    specs = [TensorSpec(n, s, d) for n, s, d in zip(graph.input_names, graph.input_shapes, graph.input_dtypes)]
    clog.write("model.cpp", source)

    built = compiler_invocations()
    try:
        library_path = build_library(source, flags=cxx_flags)
    except CompileError as e:
        clog.write("build.log", f"$ {' '.join(e.command)}\n{e.output}")
        raise
    how = "built" if compiler_invocations() > built else "found in the build cache"
    clog.write("build.log", f"{library_path}: {how}\nflags: {' '.join(resolve_flags(cxx_flags))}\n")
    lib = load_library(library_path)
    params = [t.detach() if t.is_contiguous() else t.detach().contiguous() for _, t in graph.params]
    forward = make_forward(
        getattr(lib, graph.func_name),
        inputs=specs,
        params=params,
        outputs=[TensorSpec(f"out{i}", s) for i, s in enumerate(graph.output_shapes)],
        return_tuple=graph.return_tuple,
        set_threads=lib.irc_set_num_threads,
        scratch_bytes=stats["arena_bytes"],
        packed=getattr(lib, graph.func_name + PACKED_SUFFIX),
    )
    if plan is not None:  # weights updated in place are folded (packed) again before the next call
        forward = plan.guard(forward)
    return Version(tuple(graph.input_shapes), forward, ir, source, library_path, graph, memory=stats)

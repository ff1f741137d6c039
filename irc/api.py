"""`irc.compile`: trace, import, fuse, lower, emit, build, wrap — all in memory.

A `CompiledModule` holds one *version* per set of input shapes it has been called with (at most
`max_versions`). A version is either one native function for the whole graph, or — when some
nodes are unsupported and `fallback=True` — a split graph whose supported partitions are native
and whose other nodes run in eager PyTorch (`irc/partition.py`).

Every call first checks the model's weights and train/eval mode (`irc/weights.py`: a reassigned
or re-stored weight, or a mode switch, rebuilds the versions), then runs the version for the
inputs' shapes, through `irc/autograd.py` when eager PyTorch would record the call for autograd.
Versions are created under a lock, so threads may make first calls at once.
"""

from __future__ import annotations

import inspect
import logging
import threading
import types
import weakref
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch import fx

from irc.autograd import NativeForward, buffers_kept
from irc.context import irc_context
from irc.debugging import CompileLog, configure_logging
from irc.errors import CompileError, InputError, IrcError, UnsupportedNode, UnsupportedOpError
from irc.frontend.fx_importer import ImportedGraph, import_fx
from irc.frontend.symbolic_import import dynamic_dims, exported_dynamic_shapes
from irc.frontend.trace import BAKED_META, symbolic_trace
from irc.pipeline import lower
from irc.runtime import TensorSpec, build_library, compiler_invocations, load_library, make_forward, native_guard
from irc.runtime.build import resolve_flags
from irc.runtime.native_guard import prepare as prepare_native_guard
from irc.runtime.wrapper import ARGV_SUFFIX, autocast_enabled, check_inputs
from irc.target import Target
from irc.weights import (
    ModuleWatch,
    WeightGuard,
    baked_attributes,
    mode_modules,
    read_module_names,
    read_tensor_names,
    running_statistics_names,
    sync,
    watch,
)

LEVELS = ("import", "fused", "loops")
DEFAULT_MAX_VERSIONS = 8

log = logging.getLogger("irc")

Shapes = tuple[tuple[int, ...], ...]

_LIVE: weakref.WeakSet[CompiledModule] = weakref.WeakSet()  # for irc.refresh_weights()


def refresh_weights(model: torch.nn.Module | None = None) -> int:
    """`refresh_weights()` of every live CompiledModule (those torch.compile(backend="irc")
    made included), or of those compiled from `model` or one of its submodules; returns how
    many were refreshed. The call to make after writing weights through `.data`."""
    targets = list(_LIVE)
    if model is not None:
        owned = {id(t) for t in (*model.parameters(), *model.buffers())}
        targets = [cm for cm in targets if any(id(t) in owned for t in cm._weights.tensors())]
    for cm in targets:
        cm.refresh_weights()
    return len(targets)


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
    bound: list[torch.Tensor] = field(default_factory=list, repr=False)  # tensors the native code reads in place
    folded_sources: list[torch.Tensor] = field(default_factory=list, repr=False)  # refolded when updated in place


class CompiledModule:
    """A model compiled to native code. Call it like the model; inspect every level with `ir()`.

    Calling it with new input shapes compiles a version for them (logged at INFO; the build
    cache makes a shape seen before cheap) and keeps the earlier ones, up to `max_versions`.
    `ir()`, `cpp_source`, `library_path` and `input_shapes` describe the *first* version (the
    example inputs'); `versions` maps every input-shape tuple compiled so far to its `Version`.
    """

    def __init__(
        self, graph_module: fx.GraphModule, first: Version, build: Callable[..., Version], max_versions: int,
        model: Any = None, example_inputs: Sequence[torch.Tensor] = (),
    ):
        self.graph_module = graph_module
        self.max_versions = max_versions
        self.versions: dict[Shapes, Version] = {first.input_shapes: first}
        self._first = first
        self._build = build
        self._input_names = [n.name for n in graph_module.graph.nodes if n.op == "placeholder"]
        self._input_dtypes = [getattr(x, "dtype", torch.float32) for x in example_inputs] or None
        self._example_inputs = tuple(example_inputs)
        self._forward = first.forward  # the version called last: the fast path
        self.specialized = ""  # forward arguments compiled as their defaults ("mask=None, scale=2.0")
        self._lock = threading.RLock()  # creating versions and rebinding weights: one thread at a time
        # Where the model keeps its weights: the user's module (a traced GraphModule holds its
        # own references to get_attr tensors, so reassigning them on the model would not reach it).
        self._roots = [r for r in (model, graph_module) if isinstance(r, torch.nn.Module)]
        # A model symbolic_trace can trace again (a module or function, not a GraphModule): traced
        # again when what tracing baked in changes (train/eval modes, hooks, attributes).
        traced = not isinstance(model, (fx.GraphModule, torch.export.ExportedProgram)) and callable(model)
        self._retrace = model if traced else None
        self._weight_names = read_tensor_names(graph_module)
        self._weights = self._watch()
        self._warned_autocast = False
        self.backward_calls = 0  # backward passes through this module's native forward (NativeForward)
        _LIVE.add(self)

    def _watch(self) -> WeightGuard:
        versions = list(self.versions.values())
        return watch(
            self._roots, self._weight_names,
            bound=[t for v in versions for t in v.bound],
            folded_sources=[t for v in versions for t in v.folded_sources],
            modes=mode_modules(self.graph_module, self._roots[0] if self._roots else None),
            by_value=running_statistics_names(self.graph_module),
            attributes=baked_attributes(self._retrace),
            modules=ModuleWatch(self._roots[0], read_module_names(self.graph_module, self._weight_names))
            if self._roots else None,
            baked=self.graph_module.meta.get(BAKED_META, ()),
        )

    # The native call (runtime/native_guard.py fast_call): the whole of a call below, made in one
    # C call for the current version on the thread that made it, where it would call that
    # version's native code; it answers None where it would not, and the Python path runs. None,
    # to be made again, whenever the version called or the weight guard changes (the setters
    # below); False where it cannot be made. The cnn, one thread, hot, with a null kernel in place
    # of its own: 6.6 -> 1.7 us a call.
    _fast: Any = None

    @property
    def _forward(self) -> Callable[..., Any]:
        return self.__dict__["_forward_"]

    @_forward.setter
    def _forward(self, forward: Callable[..., Any]) -> None:
        self._fast = None
        self.__dict__["_forward_"] = forward

    @property
    def _weights(self) -> WeightGuard:
        return self.__dict__["_weights_"]

    @_weights.setter
    def _weights(self, guard: WeightGuard) -> None:
        self._fast = None
        self.__dict__["_weights_"] = guard

    def __call__(self, *inputs: torch.Tensor) -> Any:
        fast = self._fast
        if fast:
            out = fast(*inputs)
            if out is not None:
                return out
        if self._weights.stale():
            self._rebind_weights()
        if autocast_enabled():
            return self._under_autocast(inputs)
        if torch.is_grad_enabled() and self._wants_grad(inputs):
            structure: list = []  # the output's pytree spec: apply passes tensors, not dicts or lists
            leaves = NativeForward.apply(self, len(inputs), structure, *inputs, *self._grad_params())
            return pytree.tree_unflatten(list(leaves), structure[0])
        if fast is None:
            self._arm_fast()
        try:  # _call_native, inlined: this is the per-call path
            return self._forward(*inputs)
        except InputError as e:
            return self._dispatch(inputs, e)

    def _arm_fast(self) -> None:
        """Make `_fast` for the version called last, on this thread, if it can be (else False:
        not tried again until the version or the guard changes). Under the lock that rebinding
        and switching versions hold, so that it is made of one version and that version's guard."""
        with self._lock:
            forward = self._forward
            plan = getattr(forward, "fold_plan", None)
            spec = getattr(getattr(forward, "__wrapped__", forward), "irc_call", None)
            if spec is None:
                fast = False
            elif native_guard.pending() or (plan is not None and plan.native_due):
                return  # the C++ check's library is still being built: the next call tries again
            elif plan is not None and plan.native is None:
                fast = False
            else:
                try:
                    fast = self._weights.fast_call(spec, plan.native if plan is not None else None) or False
                except Exception as e:  # noqa: BLE001 - never the user's call's failure: the Python path runs
                    log.debug("irc: the native call could not be made (%s); calls take the Python path", e)
                    fast = False
            self._fast = fast

    def _under_autocast(self, inputs: tuple) -> Any:
        """A call under `torch.autocast`: eager PyTorch would compute in lower precision (and
        return its dtypes), which irc's float32 code does not, so the traced graph runs in eager
        PyTorch, autocast applying (one WARNING)."""
        if not self._warned_autocast:
            self._warned_autocast = True
            log.warning("irc: this compiled module is called under torch.autocast; irc computes in float32 "
                        "only, so such calls run the traced graph in eager PyTorch (autocast applying)")
        return self.graph_module(*inputs)

    def _call_native(self, inputs: tuple) -> Any:
        try:
            return self._forward(*inputs)
        except InputError as e:
            return self._dispatch(inputs, e)

    def _wants_grad(self, inputs: tuple) -> bool:
        """Would eager PyTorch record this call for autograd?"""
        for x in inputs:
            if isinstance(x, torch.Tensor) and x.requires_grad:
                return True
        for t in self._weights.tensors():
            if t.requires_grad:
                return True
        return False

    def _grad_params(self) -> list[torch.Tensor]:
        return [t for t in self._weights.tensors() if t.requires_grad]

    def refresh_weights(self) -> None:
        """Read every weight of the model again and rebuild what was derived from them.

        Calls check by themselves whether a parameter or buffer was reassigned, given new
        storage (`.data = t`) or updated in place; what they cannot see is a write through
        `.data` (`w.data.mul_(2)`, `w.data.copy_(t)`), because `.data` has its own version
        counter. Call this after such a write."""
        self._rebind_weights(force=True)

    def _rebind_weights(self, force: bool = False) -> None:
        """Rebuild every version against the model's current weights (a reassigned weight may
        have another shape, layout or dtype; the build cache makes unchanged code cheap)."""
        with self._lock:
            if not force and not self._weights.stale():
                return  # another thread rebound first
            reasons = self._weights.reasons()
            log.info("irc: %s; rebuilding %d version(s) against the model's current weights",
                     "; ".join(reasons) or "refresh_weights()", len(self.versions))
            if self._retrace is not None and self._weights.needs_retrace():
                self.graph_module = trace(self._retrace, len(self._input_names))
                self._roots[-1] = self.graph_module
                self._weight_names = read_tensor_names(self.graph_module)
            sync(self.graph_module, self._roots[0], self._weight_names)
            current = next((s for s, v in self.versions.items() if v.forward is self._forward), None)
            rebuilt: dict[Shapes, Version] = {}
            for shapes, old in self.versions.items():
                inputs = self._example_inputs if old is self._first else _stand_in_inputs(shapes, self._input_dtypes)
                try:
                    rebuilt[shapes] = self._build(self.graph_module, inputs, first=False, symbolic=old is self._first)
                except IrcError as e:
                    raise IrcError(
                        f"irc: rebuilding for the model's new weights failed ({'; '.join(reasons) or 'refresh'}):\n{e}"
                    ) from e
            first_shapes = self._first.input_shapes
            self.versions = rebuilt
            self._first = rebuilt[first_shapes]
            self._forward = rebuilt[current].forward if current in rebuilt else self._first.forward
            self._weights = self._watch()

    def _dispatch(self, inputs: tuple, error: InputError) -> Any:
        """The slow path: an input did not match the current version. Other shapes → another
        version (compiled if new); any other mismatch → the InputError."""
        names = self._input_names
        note = f"; specialized to their defaults when compiled: {self.specialized}" if self.specialized else ""
        check_inputs(inputs, names, self._input_dtypes or [torch.float32] * len(names), note=note)  # all but shapes
        shapes = tuple(tuple(x.shape) for x in inputs)
        with self._lock:
            served = self.versions.get(shapes) is not None
            symbolic = [v for v in self.versions.values() if v.forward is not self._forward and _symbolic(v)]
        if not served:
            # A version for symbolic sizes serves every shape its checks pass, which a shape
            # compiled for since (one outside its ranges) must not take over from. Its checks
            # run before anything native, and the rest of the inputs was checked above.
            for v in symbolic:
                try:
                    out = v.forward(*inputs)
                except InputError:
                    continue
                with self._lock:
                    self._forward = v.forward
                return out
        with self._lock:
            version = self.versions.get(shapes)
            if version is None:
                version = self._new_version(inputs, shapes)
                self._weights = self._watch()
            self._forward = version.forward
        # Everything but the shapes was checked above, so an InputError now is a real one
        # (another thread may have switched the fast path since `error` was raised).
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
            version = self._build(self.graph_module, inputs, first=False)
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
        """Scratch memory of the version called last (see lowering/loops/plan_memory.py): `arena_bytes`
        (one arena per calling thread), `intermediate_bytes` (the sum of all intermediate
        buffers, what separate allocations would take), `buffers`, `in_place` (buffers written
        over a dying input) and `reuse_ratio` (intermediate / arena bytes; 1.0: no reuse).
        A partitioned version sums its native partitions."""
        from irc.lowering.loops.plan_memory import with_ratio

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
        """Write an AOT artifact holding every version compiled so far (one library per set of
        input shapes, the folded weights, a manifest); `irc.load(path)` runs it without
        recompiling and dispatches on the input shapes like this module. See irc/aot.py."""
        from irc import aot

        with self._lock:
            if self._weights.stale():  # what the next call would do: the model's weights as they are now
                self._rebind_weights()
            versions = [aot.ArtifactVersion.of(shapes, v) for shapes, v in self.versions.items()]
        return aot.save(path, versions, self._options["cxx_flags"])

    def _example_sizes(self, v: Version) -> dict[str, int] | None:
        """The values the example inputs give a symbolic version's size symbols (None: static)."""
        if v.graph is None or not v.graph.symbol_ranges:
            return None
        sizes: dict[str, int] = {}
        for shape, x in zip(v.graph.input_shapes, self._example_inputs):
            for d, n in zip(shape, getattr(x, "shape", ())):
                if not isinstance(d, int) and d.is_Symbol:
                    sizes.setdefault(d.name, int(n))
        return sizes

    def explain(self, profile: bool = False, runs: int = 20, roofline_png: str | Path | None = None) -> str:
        """What irc did (see irc/tools/explain.py); with `profile`, each kernel's measured time and
        GFLOP/s against this machine's measured peak, and optionally a roofline plot."""
        from xdsl.parser import Parser

        from irc.tools import explain as ex

        if profile and (not isinstance(runs, int) or runs < 1):
            raise ValueError(f"explain(profile=True) needs runs >= 1 (the calls timed per kernel), got {runs!r}")

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
            report = ex.explain(imported, fused, timings, roof.peak_gflops if roof else None, loops,
                                self._example_sizes(v))
            if roof:
                report += (
                    f"Measured roofline: {roof.peak_gflops:.1f} GFLOP/s peak, "
                    f"{roof.bandwidth_gbs:.1f} GB/s ({roof.threads} threads)\n"
                )
            reports.append(report)
        if self._first.eager_nodes:
            reports.append("Run in eager PyTorch: " + ", ".join(str(n) for n in self._first.eager_nodes) + "\n")
        copies = [
            f"input {i} ({name!r}) has strides {x.stride()}: each call copies its {x.numel() * x.element_size()} "
            "bytes to a contiguous tensor first (pass it contiguous to skip the copy)"
            for i, (name, x) in enumerate(zip(self._input_names, self._example_inputs))
            if isinstance(x, torch.Tensor) and not x.is_contiguous()
        ]
        if copies:
            reports.append("Input copies: " + "; ".join(copies) + "\n")
        return "\n".join(reports)

    def _profile(self, v: Version, fused, runs: int):
        from irc.tools import explain as ex
        from irc.tools.roofline import roofline

        if v.graph is None or v is not self._first:
            raise IrcError("--profile needs a model compiled entirely to native code")
        opts = {**self._options, "dump_dir": None}
        # built as `v` was (symbolic sizes if `v` has them): the profile's kernel indices are
        # positions in that IR, which `fused` must be; a static build folds other ops
        dynamic = getattr(self, "_dynamic", None) if self._example_sizes(v) is not None else None
        profiled = _native_version(self.graph_module, self._example_inputs, profile=True, dynamic=dynamic, **opts)
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


def _symbolic(v: Version) -> bool:
    """Whether `v` was compiled for symbolic sizes (a range of shapes)."""
    return any(not isinstance(d, int) for shape in v.input_shapes for d in shape)


def _fmt_shapes(shapes: Shapes) -> str:
    return "(" + ", ".join("x".join(map(str, s)) or "scalar" for s in shapes) + ")"


def _stand_in_inputs(shapes: Shapes, dtypes: Sequence[torch.dtype] | None) -> tuple[torch.Tensor, ...]:
    """Inputs of the given shapes to build a version with (zeros: valid embedding indices too)."""
    dtypes = dtypes or [torch.float32] * len(shapes)
    return tuple(torch.zeros(s, dtype=d) for s, d in zip(shapes, dtypes))


def trace(model: Any, n_inputs: int | None = None) -> fx.GraphModule:
    """The FX graph of a model: a GraphModule as it is, an ExportedProgram's ATen graph (weights
    as function parameters), or `torch.fx.symbolic_trace` of an nn.Module or function. With
    `n_inputs`, the arguments after the first `n_inputs` that have defaults (`mask=None`,
    `scale: float = 2.0`) are specialized to their defaults, as torch.compile does."""
    if isinstance(model, fx.GraphModule):
        return model
    if isinstance(model, torch.export.ExportedProgram):
        from irc.frontend.aten import exported_program_module

        return exported_program_module(model)
    if isinstance(model, types.MethodType) and isinstance(model.__self__, torch.nn.Module) \
            and model.__func__ is type(model.__self__).forward:
        model = model.__self__  # model.forward: the module, its weights watched as the module's
    elif n_inputs is not None and not isinstance(model, (torch.nn.Module, types.FunctionType)) and callable(model):
        model = _positional(model, n_inputs)  # torch.relu, a partial, a bound method: symbolic_trace refuses them
    concrete = _defaults_beyond(model, n_inputs) if n_inputs is not None else {}
    gm = symbolic_trace(model, concrete or None)
    if concrete:
        _drop_specialized_placeholders(gm, n_inputs)
    return gm


def _positional(fn: Callable[..., Any], n: int) -> Callable[..., Any]:
    """A Python function of `n` arguments calling `fn` on them."""
    names = [f"x{i}" for i in range(n)]
    scope: dict[str, Any] = {"fn": fn}
    exec(f"def forward({', '.join(names)}):\n    return fn({', '.join(names)})", scope)  # noqa: S102
    forward = scope["forward"]
    forward.__name__ = getattr(fn, "__name__", "forward")
    return forward


def _drop_specialized_placeholders(gm: fx.GraphModule, n_inputs: int) -> None:
    """symbolic_trace keeps a specialized argument as a placeholder with its default and asserts
    its value; the compiled graph takes only the example inputs, so both go."""
    graph = gm.graph
    extra = [n for n in graph.nodes if n.op == "placeholder"][n_inputs:]
    asserts = (torch._assert, fx._symbolic_trace._assert_is_none)
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target in asserts:
            graph.erase_node(node)
    graph.eliminate_dead_code()
    for p in extra:
        if not p.users:  # the traced code reads the default itself, not the placeholder
            graph.erase_node(p)
    gm.recompile()


def _defaults_beyond(model: Any, n_inputs: int) -> dict[str, Any]:
    """The defaults of the parameters of `model`'s forward that `n_inputs` example inputs do not
    reach (keyword-only ones included); empty when the signature cannot be read."""
    fn = model.forward if isinstance(model, torch.nn.Module) else model
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return {}
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return {}
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    out = {}
    for i, p in enumerate(q for q in params if q.kind is not inspect.Parameter.VAR_KEYWORD):
        given = i < n_inputs and p.kind in positional
        if not given and p.default is not inspect.Parameter.empty:
            out[p.name] = p.default
    return out


def compile(
    model: torch.nn.Module | Callable[..., Any] | fx.GraphModule | torch.export.ExportedProgram,
    example_inputs: Sequence[torch.Tensor] | torch.Tensor,
    *,
    fuse: bool = True,
    cxx_flags: Sequence[str] | None = None,
    fallback: bool = True,
    max_versions: int = DEFAULT_MAX_VERSIONS,
    dump_dir: str | Path | None = None,
    target: Target | None = None,
    dynamic_shapes: Any = None,
) -> CompiledModule:
    """Compile `model` for inputs shaped like `example_inputs`.

    model: an nn.Module or function (traced with torch.fx.symbolic_trace), a torch.fx.GraphModule
      (used as it is) or a torch.export.ExportedProgram (its ATen graph).
    fuse: apply irc's fusion rules (False compiles every op as its own kernel).
    cxx_flags: the C++ compiler flags (default: $IRC_CXXFLAGS, else irc.runtime.default_flags():
      DEFAULT_CXXFLAGS, with GCC plus its parallel link-time optimization and, on an AVX-512 CPU
      its native tuning does not know as one, an AVX-512 tuning).
    fallback: run nodes irc cannot compile in eager PyTorch, between native partitions (logged
      once, at WARNING, on logger "irc"). False raises UnsupportedOpError listing them all.
    max_versions: how many input-shape versions a call may compile before raising IrcError.
    dump_dir: write the FX graph, the IR after every pass, the C++ and the build log there
      (default: $IRC_DUMP_DIR; nothing when unset).
    target: what to generate code for (irc/target.py); default `irc.Target.host()`, read once
      now: this CPU, and `IRC_STRICT`, `IRC_GEMM_WIDTH`, `IRC_GEMM_ROWS`, `IRC_OMP_THRESHOLD`,
      `IRC_NUM_THREADS`.
      Every version of the module (each new input shape) is compiled for the same Target.
    dynamic_shapes: input dimensions whose size changes from call to call, in torch.export's
      convention: {input name: {dim: torch.export.Dim("batch", min=1, max=64)}} (or a list by
      input position; a dimension spec may also be Dim.AUTO or a plain name; dimensions sharing a
      name share a size). One native build then serves every size in range (symbolic sizes): a
      call outside it (a size below 2, which tracing treats specially, or beyond the bounds, or
      breaking an equality) gets its own static version like a new shape does. The example sizes
      of dynamic dimensions must be >= 2. A graph irc runs partly in eager PyTorch (fallback) is
      compiled per shape, as without dynamic_shapes (logged). An ExportedProgram's own dynamic
      dimensions (its `Dim`s and range_constraints) are used when dynamic_shapes is not given.
    Raises UnsupportedOpError (fallback=False) or CompileError (g++ failed).
    """
    if max_versions < 1:
        raise ValueError(f"max_versions must be at least 1, got {max_versions}")
    configure_logging()
    inputs = (example_inputs,) if isinstance(example_inputs, torch.Tensor) else tuple(example_inputs)
    _refuse_inference_tensors(model)
    gm = trace(model, len(inputs))
    specialized = ", ".join(f"{k}={v!r}" for k, v in _defaults_beyond(model, len(inputs)).items()) \
        if not isinstance(model, (fx.GraphModule, torch.export.ExportedProgram)) else ""
    if specialized:
        log.info("irc: forward arguments not among the example inputs are compiled as their defaults: %s", specialized)
    options = dict(fuse=fuse, cxx_flags=cxx_flags, dump_dir=dump_dir, target=target or Target.host())
    names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    if dynamic_shapes is None and isinstance(model, torch.export.ExportedProgram):
        dynamic_shapes = exported_dynamic_shapes(gm, model)  # its Dims: symbolic sizes here too
    dynamic = dynamic_dims(dynamic_shapes, names, inputs) if dynamic_shapes is not None else None

    def build(gm: fx.GraphModule, inputs: Sequence[torch.Tensor], first: bool = True, symbolic: bool = False) -> Version:
        return _build_version(gm, inputs, fallback=fallback, first=first, dynamic=dynamic if symbolic else None, **options)

    cm = CompiledModule(gm, build(gm, inputs, symbolic=True), build, max_versions, model=model, example_inputs=inputs)
    cm._options = options
    cm._dynamic = dynamic
    cm.specialized = specialized
    return cm


def _refuse_inference_tensors(model: Any) -> None:
    """An IrcError if the model's weights are inference tensors: their in-place updates (possible
    only under torch.inference_mode()) move no version counter, which the weight guard and the
    fold plan read, so irc could not tell its copies were stale."""
    if isinstance(model, torch.export.ExportedProgram):
        tensors = list(model.state_dict.items())
    elif isinstance(model, torch.nn.Module):
        tensors = [*model.named_parameters(), *model.named_buffers()]
    else:
        return
    names = [n for n, t in tensors if isinstance(t, torch.Tensor) and t.is_inference()]
    if names:
        more = f" and {len(names) - 3} more" if len(names) > 3 else ""
        raise IrcError(
            f"irc: the model's weights are inference tensors ({', '.join(names[:3])}{more}), made under "
            "torch.inference_mode(). irc sees weight updates through version counters, which inference "
            "tensors do not have. Create or load the model outside inference_mode (torch.no_grad() is "
            "enough), or make normal tensors of them there: model.load_state_dict({k: v.clone() for k, v "
            "in model.state_dict().items()}, assign=True). Calling the compiled model under "
            "inference_mode is fine."
        )


def _build_version(gm: fx.GraphModule, inputs, *, fallback: bool, first: bool, **options) -> Version:
    """The whole graph native; or, if unsupported nodes and `fallback`, a partitioned version.
    `options`: `_native_version`'s."""
    with buffers_kept(gm):
        return _build_any_version(gm, inputs, fallback=fallback, first=first, **options)


DYNAMIC_FALLBACK_LEVEL: ContextVar[int] = ContextVar("irc_dynamic_fallback_level", default=logging.WARNING)
"""The level of the note that a graph could not be compiled for symbolic sizes (the Dynamo
backend, whose automatic dynamic nobody asked for, logs it at INFO)."""


def _build_any_version(gm: fx.GraphModule, inputs, *, fallback: bool, first: bool, dynamic=None, **options) -> Version:
    if dynamic is not None and any(dynamic):
        try:
            return _native_version(gm, inputs, dynamic=dynamic, **options)
        except Exception as e:  # an op not written for symbolic sizes yet, ...: per-shape versions, never wrong
            reason = " ".join(str(e).split())[:400]
            log.log(DYNAMIC_FALLBACK_LEVEL.get(),
                    "irc: the graph could not be compiled for every size of its dynamic dimensions, so it is "
                    "compiled for each input shape instead: %s", reason)
            log.debug("irc: the error that made the graph static", exc_info=e)
    try:
        return _native_version(gm, inputs, **options)
    except UnsupportedOpError:
        if not fallback:
            raise
    from irc.partition import describe_fallback, partition

    def compile_partition(sub: fx.GraphModule, sub_inputs) -> tuple[Callable[..., Any], Version]:
        v = _native_version(sub, sub_inputs, **options)
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
        shapes, _partitioned_forward(p.module, shapes), ir, source, library, None, list(p.eager), dict(parts),
        bound=[t for v in parts.values() for t in v.bound],
        folded_sources=[t for v in parts.values() for t in v.folded_sources],
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
    gm: fx.GraphModule, inputs: Sequence[torch.Tensor], *, fuse: bool, cxx_flags, target: Target, dump_dir=None,
    profile: bool = False, dynamic=None,
) -> Version:
    """Import, fuse, lower, emit, build and wrap the whole graph (UnsupportedOpError if it can't).

    Every stage is dumped when a dump directory is set, and a failing pass leaves a reproducer."""
    prepare_native_guard()  # its one-time build, if due, beside this one
    clog = CompileLog(dump_dir)
    clog.write("fx-graph.py", gm.code)
    graph = import_fx(gm, inputs, dynamic=dynamic)
    ir = {"import": str(graph.module)}
    clog.write("import.mlir", ir["import"])
    lowered = lower(graph, ir, clog, target, fuse=fuse, cxx_flags=cxx_flags, profile=profile)  # or the pipeline cache's
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
        outputs=[TensorSpec(f"out{i}", s, d) for i, (s, d) in enumerate(zip(graph.output_shapes, graph.output_dtypes))],
        return_tuple=graph.return_tuple,
        output_spec=graph.output_spec,
        set_threads=lib.irc_set_num_threads,
        scratch_bytes=stats["arena_bytes"],
        argv=getattr(lib, graph.func_name + ARGV_SUFFIX),
        ranges=graph.symbol_ranges,
        guards=graph.symbol_guards,
    )
    if plan is not None:  # weights updated in place are folded (packed) again before the next call
        forward = plan.guard(forward)
    return Version(
        tuple(graph.input_shapes), forward, ir, source, library_path, graph, memory=stats,
        bound=params, folded_sources=plan.sources if plan is not None else [],
    )

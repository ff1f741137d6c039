"""`torch.compile(model, backend="irc")`: irc as a TorchDynamo backend.

Registered through the `torch_dynamo_backends` entry point (pyproject.toml), so the name "irc"
works without importing irc first. Dynamo hands over an FX graph of functional calls
(`torch._C._nn.linear`, `torch.relu`, methods ...) whose placeholders are the user's tensors, the
module's parameters and buffers (Dynamo inlines built-in nn modules, so weights arrive as graph
inputs) and, for dynamic shapes, SymInt sizes. irc compiles it on the first call, with:

- parameters and buffers turned into `get_attr` attributes: they become function parameters of
  the native code (read in place, foldable at compile time), not per-call inputs. If Dynamo
  later passes a different tensor object for one of them, the graph is compiled again for it;
- symbolic sizes kept symbolic: a tensor input whose fake value (`example_value`) has SymInt
  sizes is compiled once for every size (`irc.compile(..., dynamic_shapes=...)`, one name per
  torch symbol), and a SymInt input that is one of those sizes is read from the tensor's shape
  instead of being specialized (`dynamic=True`, and automatic dynamic's recompiled graphs);
- other SymInt/int inputs specialized to their values (`dynamic=False` semantics), and so are the
  Python floats Dynamo lifts to 0-d tensors read by `.item()` (`LayerNorm.eps`, a float module
  attribute under `dynamic=True`): their values are read at every call and are part of the key,
  so one compiled module per distinct set of values; inputs the graph does not use are dropped;
- eager fallback for unsupported nodes and one native version per input-shape set
  (`irc.compile` defaults). Past `max_versions` shapes, calls run the graph eagerly (one warning).

**The backend never breaks the program**: whatever fails while compiling a graph (an
unsupported dtype, a verifier error, g++, a bug in irc) makes that graph run in eager PyTorch,
with one WARNING on logger "irc" naming the reason. `options={"fallback": False}` raises instead.

**Grad enabled** and an input requiring grad (a parameter) when Dynamo calls the backend: either
an eval model called without `torch.no_grad()` or training, which the graph alone cannot tell
apart. AOTAutograd traces its training graphs. If they draw random numbers or update a batch
norm's running statistics (training), they are run from the start; otherwise the graph runs as
inference would (`GradGraph`: weights folded, irc.compile's autograd recording the call) until a
backward pass goes through it, and then the training graphs do. irc compiles AOTAutograd's ATen
forward (every input, weights included, read at every call; the saved views of inputs made in
Python) and the backward runs the ATen backward graph in eager PyTorch.

Outputs keep the structure Dynamo expects (the graph's tuple).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import fx, nn

from irc.api import DEFAULT_MAX_VERSIONS, DYNAMIC_FALLBACK_LEVEL, CompiledModule, compile
from irc.errors import IrcError
from irc.partition import like_traced, traced_layouts

log = logging.getLogger("irc")

__all__ = ["irc_backend"]

OPTIONS = {"fuse": True, "cxx_flags": None, "max_versions": DEFAULT_MAX_VERSIONS, "fallback": True}
_ITEM = ("item", torch.ops.aten._local_scalar_dense.default)


def irc_backend(
    gm: fx.GraphModule, example_inputs: Sequence[Any], *, mode: str | None = None,
    options: dict[str, Any] | None = None, **kwargs: Any,
) -> Callable[..., Any]:
    """The Dynamo backend: returns a callable running `gm` through irc (or, if irc cannot
    compile it, in eager PyTorch).

    options (torch.compile(..., options={...})): `fuse`, `cxx_flags`, `max_versions`, and
    `fallback` (default True: a graph irc cannot compile runs eagerly; False: raise).
    """
    opts = _options({**(options or {}), **kwargs})
    try:
        if torch.is_grad_enabled() and any(isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs):
            return _with_grad(gm, example_inputs, opts)
        return DynamoGraph(gm, example_inputs, **opts)
    except torch._dynamo.exc.RestartAnalysis:
        raise  # AOTAutograd restarting Dynamo (e.g. to specialize a float): not a failure
    except Exception as e:
        if not opts["fallback"]:
            raise
        warn_eager(e)
        return gm.forward


def _options(given: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(given) - set(OPTIONS))
    if unknown:
        raise IrcError(
            f"unknown irc option(s) {', '.join(map(repr, unknown))} in torch.compile(..., options=...); "
            f"irc takes {', '.join(map(repr, OPTIONS))}"
        )
    return {**OPTIONS, **given}


def warn_eager(error: BaseException, what: str = "this graph") -> None:
    """The one WARNING when irc declines a graph: what failed, and how to get the error instead."""
    reason = " ".join(line.strip() for line in str(error).splitlines() if line.strip())
    reason = reason if len(reason) <= 600 else reason[:600] + " ..."
    if not isinstance(error, IrcError):
        reason = f"{type(error).__name__}: {reason} (an internal error in irc; please report it)"
    log.warning(
        "irc could not compile %s and runs it in eager PyTorch: %s. "
        "Pass torch.compile(..., options={'fallback': False}) to raise instead.", what, reason,
    )
    log.debug("irc: the error that made the graph run eagerly", exc_info=error)


def _with_grad(gm: fx.GraphModule, example_inputs: Sequence[Any], opts: dict[str, Any]) -> Callable[..., Any]:
    """A graph Dynamo captured with grad enabled and a tensor requiring grad: AOTAutograd's
    training graphs (`_training`) for a training graph (one with random ops or a training-mode
    batch norm); otherwise a `GradGraph`, which starts as inference would run and takes the
    training graphs from the first backward pass on."""
    trains: list[bool] = []
    aot = _training(gm, example_inputs, opts, trains)
    if any(trains) or not trains or any(isinstance(x, (list, tuple, dict)) for x in example_inputs):
        return aot
    return GradGraph(DynamoGraph(gm, example_inputs, **opts), aot)


# ATen ops whose presence in a forward says "training": a training-mode batch norm (its running
# statistics are updated) and, through the `nondeterministic_seeded` tag, random draws (dropout).
_TRAINING_OPS = {
    torch.ops.aten._native_batch_norm_legit_functional.default, torch.ops.aten._native_batch_norm_legit.default,
    torch.ops.aten._native_batch_norm_legit.no_stats,
}


def _is_training_graph(fw: fx.GraphModule) -> bool:
    return any(n.op == "call_function" and (n.target in _TRAINING_OPS or _draws(n)) for n in fw.graph.nodes)


def _draws(node: fx.Node) -> bool:
    """A random op, unless its `dropout_p` is 0 (an eval-mode attention is tagged as random)."""
    if torch.Tag.nondeterministic_seeded not in getattr(node.target, "tags", ()):
        return False
    names = [a.name for a in node.target._schema.arguments]
    if "dropout_p" not in names:
        return True
    k = names.index("dropout_p")
    return node.kwargs.get("dropout_p", node.args[k] if k < len(node.args) else 0.0) != 0.0


class GradGraph:
    """A graph called with grad enabled that is not (yet) seen to train: an eval model called
    without `torch.no_grad()`, the most common way to run one.

    Until the first backward pass through it, it runs as `DynamoGraph` (the inference graph:
    weights folded and packed once, intermediates fused away; `irc.compile`'s autograd records
    the call, and a backward recomputes the graph in eager PyTorch and differentiates it). From
    the first backward pass on, calls run AOTAutograd's training graphs: a native forward saving
    what the ATen backward needs, without recomputation."""

    def __init__(self, inference: DynamoGraph, training: Callable[..., Any]):
        self.inference: DynamoGraph | None = inference  # None once training: its folded weights freed
        self.training = training

    def __call__(self, *args: Any) -> Any:
        inference = self.inference
        if inference is not None:
            if not inference.backward_calls():
                return inference(*args)
            self.inference = None
            log.info("irc: a backward pass went through this graph; from now on it runs AOTAutograd's "
                     "training graphs (a native forward saving activations for the backward)")
        return self.training(*args)


def _training(
    gm: fx.GraphModule, example_inputs: Sequence[Any], opts: dict[str, Any], trains: list[bool] | None = None,
) -> Callable[..., Any]:
    """AOTAutograd with irc compiling the forward (lazily, every input a run-time input) and the
    ATen backward graph run by PyTorch. `trains` gets, for each forward graph AOTAutograd
    traces, whether it is a training graph (`_is_training_graph`)."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    def forward_compiler(fw: fx.GraphModule, fake_inputs: Sequence[Any]) -> Callable[[list], Any]:
        if trains is not None:
            trains.append(_is_training_graph(fw))
        return make_boxed_func(DynamoGraph(fw, fake_inputs, weights_as_inputs=True, **opts))

    def backward_compiler(bw: fx.GraphModule, fake_inputs: Sequence[Any]) -> Callable[[list], Any]:
        return make_boxed_func(bw.forward)

    backend = aot_autograd(
        fw_compiler=forward_compiler, bw_compiler=backward_compiler, inference_compiler=forward_compiler
    )
    return backend(gm, example_inputs)


def _is_param_or_buffer(node: fx.Node, example: Any) -> bool:
    """Is this placeholder a module's parameter or buffer (rather than a user input)?"""
    if isinstance(example, nn.Parameter):
        return True
    source = getattr(node.meta.get("grapharg"), "source", None)
    while source is not None:
        if "ParamBuffer" in type(source).__name__:
            return True
        source = getattr(source, "base", None)
    return False


def _is_lifted_scalar(node: fx.Node, example: Any) -> bool:
    """A 0-d tensor the graph only reads with `.item()`: a Python number Dynamo lifted to an
    input (under dynamic=True). It is specialized to its value, read at every call."""
    return (
        isinstance(example, torch.Tensor) and example.dim() == 0 and bool(node.users)
        and all(u.target in _ITEM for u in node.users)
    )


class DynamoGraph:
    """A Dynamo graph compiled by irc, lazily (on the first call, with real values).

    `weights_as_inputs`: parameters are run-time inputs like any other (AOTAutograd's training
    forward, whose weights change at every optimizer step)."""

    def __init__(
        self, gm: fx.GraphModule, example_inputs: Sequence[Any], *, fuse: bool = True, cxx_flags=None,
        max_versions: int = DEFAULT_MAX_VERSIONS, fallback: bool = True, weights_as_inputs: bool = False,
    ):
        self.gm = gm
        self.aot = weights_as_inputs  # an AOTAutograd forward
        self.options = {"fuse": fuse, "cxx_flags": cxx_flags, "max_versions": max_versions}
        self.fallback = fallback
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        self.const_idx: list[int] = []  # ints / SymInts / floats the graph uses: specialized
        self.unused_idx: list[int] = []  # ints / SymInts it does not use (sizes Dynamo passes along)
        self.scalar_idx: list[int] = []  # 0-d tensors read by .item() (lifted floats): specialized
        self.param_idx: list[int] = []  # parameters and buffers: function parameters
        self.input_idx: list[int] = []  # the rest: run-time inputs
        self.dynamic: dict[int, dict[int, str]] = {}  # input -> {dim: torch symbol}: symbolic sizes
        self.size_of: dict[int, tuple[int, int]] = {}  # SymInt placeholder -> (placeholder, dim) holding it
        for i, node in enumerate(placeholders):
            fake = node.meta.get("example_value")
            is_weight = not weights_as_inputs and _is_param_or_buffer(node, example_inputs[i])
            if isinstance(fake, torch.Tensor) and node.users and not is_weight:
                dims = {d: str(s.node.expr) for d, s in enumerate(fake.shape) if isinstance(s, torch.SymInt)}
                if dims:
                    self.dynamic[i] = dims
        where = {sym: (i, d) for i, dims in self.dynamic.items() for d, sym in dims.items()}
        # Outputs made in Python at each call: ints computed from sizes and int inputs only
        # (Llama's DynamicCache returns `_seen_tokens + L`), so an int input only they read is not
        # specialized (no build per decoded token); and tensors with no elements (an eval batch
        # norm's saved statistics, which the training forward returns for the backward).
        self.int_out, int_only, self.int_gm = _python_outputs(gm)
        self._int_only = int_only
        for i, (node, example) in enumerate(zip(placeholders, example_inputs)):
            fake = node.meta.get("example_value")
            if not node.users or node in int_only:
                self.unused_idx.append(i)
            elif isinstance(fake, torch.SymInt) and str(fake.node.expr) in where:
                self.size_of[i] = where[str(fake.node.expr)]
            elif not isinstance(example, torch.Tensor):
                self.const_idx.append(i)
            elif _is_lifted_scalar(node, example):
                self.scalar_idx.append(i)
            elif not weights_as_inputs and _is_param_or_buffer(node, example):
                self.param_idx.append(i)
            else:
                self.input_idx.append(i)
        # key -> (parameters compiled for, the module; None: runs eagerly)
        self.compiled: dict[tuple, tuple[list[torch.Tensor], CompiledModule | None]] = {}
        self._eager_shapes: set[tuple] = set()  # (key, input shapes) whose version failed to compile
        self._warned_versions = False
        self._warned_eager = False
        # AOTAutograd's forward: its results laid out as traced (the backward may view them)
        self._layouts = traced_layouts(gm) if weights_as_inputs else None
        self._lock = threading.Lock()

    def __call__(self, *args: Any) -> Any:
        key = self._key(args)
        entry = self.compiled.get(key)
        if entry is None or any(args[i] is not p for i, p in zip(self.param_idx, entry[0])):
            with self._lock:  # threads making first calls at once compile once
                entry = self.compiled.get(key)
                if entry is None or any(args[i] is not p for i, p in zip(self.param_idx, entry[0])):
                    if entry is None and len(self.compiled) >= self.options["max_versions"]:
                        return self._over_max_versions(args, len(self.compiled))
                    entry = self._compile(args, key)
        cm = entry[1]
        if cm is None:
            return self.gm(*args)
        inputs = [args[i] for i in self.input_idx]
        shapes = tuple(tuple(x.shape) for x in inputs)
        if shapes in cm.versions:
            return self._laid_out(self._with_ints(cm(*inputs), args))
        if len(cm.versions) >= cm.max_versions:
            return self._over_max_versions(args, len(cm.versions))
        if (key, shapes) in self._eager_shapes:
            return self.gm(*args)
        try:  # a new shape: cm compiles a version for it before running anything
            out = cm(*inputs)
        except Exception as e:
            if not self.fallback or shapes in cm.versions:
                raise
            self._decline(e, "this graph for new input shapes")
            self._eager_shapes.add((key, shapes))
            return self.gm(*args)
        return self._laid_out(self._with_ints(out, args))

    def backward_calls(self) -> int:
        """Backward passes through the modules compiled for this graph (`irc.compile`'s autograd)."""
        # a copy taken at once: another thread's first call may be adding a version
        return sum(cm.backward_calls for _, cm in tuple(self.compiled.values()) if cm is not None)

    def _with_ints(self, out: Any, args: tuple) -> Any:
        """The graph's outputs: the compiled tensors with the outputs made in Python (ints and
        empty tensors; before `_laid_out`, whose layouts are the whole graph's outputs)."""
        if not self.int_out:
            return out
        ints = dict(zip(self.int_out, self.int_gm(*args, *out)))
        tensors = iter(out)
        return tuple(ints[k] if k in ints else next(tensors) for k in range(len(ints) + len(out)))

    def _laid_out(self, out: Any) -> Any:
        if not self._layouts or not isinstance(out, (tuple, list)):
            return out
        return type(out)(like_traced(t, layout) for t, layout in zip(out, self._layouts))

    def _key(self, args: tuple) -> tuple:
        """The values the compiled code is specialized to, read from this call's arguments."""
        return tuple(args[i] for i in self.const_idx) + tuple(args[i].item() for i in self.scalar_idx)

    def _over_max_versions(self, args: tuple, n_versions: int) -> Any:
        if not self._warned_versions:
            self._warned_versions = True
            log.warning(
                "irc: this graph was compiled for %d input shapes (max_versions); further shapes run "
                "in eager PyTorch. Pad or bucket the inputs, or pass options={'max_versions': N}.",
                n_versions,
            )
        return self.gm(*args)

    def _decline(self, error: BaseException, what: str) -> None:
        if not self._warned_eager:
            self._warned_eager = True
            warn_eager(error, what)
        else:
            log.info("irc runs %s in eager PyTorch too: %s", what, str(error).strip().splitlines()[:1])

    def _compile(self, args: tuple, key: tuple) -> tuple[list[torch.Tensor], CompiledModule | None]:
        params = [args[i] for i in self.param_idx]
        if self.compiled:
            names = [p.name for p in self._placeholders()]
            log.info("irc: compiling the Dynamo graph again for %s", ", ".join(
                f"{names[i]}={v}" for i, v in zip(self.const_idx + self.scalar_idx, key)
            ) or "new parameter tensors")
        try:
            gm = self._specialize(args)
            inputs = [args[i] for i in self.input_idx]
            dynamic = [self.dynamic.get(i) or None for i in self.input_idx]
            usable = all(_symbolic_example_ok(args[i], self.dynamic.get(i, {})) for i in self.input_idx)
            shapes = dynamic if any(dynamic) and usable else None
            token = DYNAMIC_FALLBACK_LEVEL.set(logging.INFO)  # Dynamo's sizes: nobody asked irc for them
            try:
                with _warnings_as_info(enabled=bool(self.compiled)):  # the partition note: once per graph
                    cm: CompiledModule | None = compile(
                        gm, inputs, fallback=self.fallback, dynamic_shapes=shapes, **self.options
                    )
            finally:
                DYNAMIC_FALLBACK_LEVEL.reset(token)
        except Exception as e:  # whatever irc cannot do, PyTorch runs (one WARNING says why)
            if not self.fallback:
                raise
            self._decline(e, "this graph")
            cm = None
        self.compiled[key] = (params, cm)
        return self.compiled[key]

    def _placeholders(self) -> list[fx.Node]:
        return [n for n in self.gm.graph.nodes if n.op == "placeholder"]

    def _specialize(self, args: tuple) -> fx.GraphModule:
        """A copy of the graph taking the run-time inputs only: parameters become attributes read
        by get_attr, int/SymInt placeholders their values, lifted scalars' `.item()` their value."""
        root = nn.Module()
        graph = fx.Graph()
        env: dict[fx.Node, Any] = {}
        placeholders = self._placeholders()
        kinds = {
            **{i: "const" for i in self.const_idx}, **{i: "param" for i in self.param_idx},
            **{i: "scalar" for i in self.scalar_idx}, **{i: "unused" for i in self.unused_idx},
        }
        inputs: dict[int, fx.Node] = {}
        for i, node in enumerate(placeholders):
            kind = kinds.get(i)
            if i in self.size_of:
                continue  # read from its tensor's shape below, once that tensor is a placeholder
            if kind == "const":
                env[node] = args[i] if isinstance(args[i], (int, float, bool)) else int(args[i])
            elif kind == "scalar":
                for use in node.users:
                    env[use] = args[i].item()
            elif kind == "param":
                name = f"irc_param_{i}"
                setattr(root, name, args[i])  # plain attribute: keeps the tensor object itself
                env[node] = graph.get_attr(name)
            elif kind is None:
                env[node] = inputs[i] = graph.placeholder(node.name)
        for i, (j, d) in self.size_of.items():
            env[placeholders[i]] = graph.call_method("size", (inputs[j], d))
        for node in self.gm.graph.nodes:
            if node.op == "placeholder" or node in env or node in self._int_only:
                continue
            if node.op == "output" and self.int_out:  # the outputs made in Python: _with_ints
                outs = [a for k, a in enumerate(node.args[0]) if k not in self.int_out]
                graph.output(tuple(fx.node.map_arg(outs, lambda n: env[n])))
                continue
            if node.op in ("get_attr", "call_module"):
                _copy_attr(self.gm, root, str(node.target))
            args_ = fx.node.map_arg((node.args, node.kwargs), lambda n: env[n])
            if node.op == "call_function" and _is_number_op(node, args_):
                env[node] = node.target(*args_[0], **args_[1])  # int/float arithmetic on constants
                continue
            env[node] = graph.node_copy(node, lambda n: env[n])
        # The graph is functional: train/eval was decided when Dynamo traced it. The container's
        # own flag must not say "training" (buffers_kept would then guard every buffer).
        return fx.GraphModule(root, graph).eval()


class _warnings_as_info(logging.Filter):
    """While active, WARNINGs on logger "irc" are logged at INFO (compiling the same Dynamo
    graph again for other values: its fallback note was already given once)."""

    def __init__(self, enabled: bool):
        super().__init__()
        self.enabled = enabled

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.WARNING:
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True

    def __enter__(self) -> None:
        if self.enabled:
            log.addFilter(self)

    def __exit__(self, *exc: Any) -> None:
        log.removeFilter(self)


_NUMBERS = (int, float, bool, torch.SymInt, torch.SymFloat, torch.SymBool)
_SIZE_FUNCTIONS = {torch.sym_int, torch.sym_max, torch.sym_min, torch.sym_sum, torch.ops.aten.sym_size.int}


def _is_size_arithmetic(node: fx.Node) -> bool:
    """A size query or integer arithmetic: `x.size(1)`, `s0 + 1`, `sym_max(...)`."""
    if node.op == "call_method":
        return node.target in ("size", "dim")
    if node.op != "call_function":
        return False
    return node.target in _SIZE_FUNCTIONS or getattr(node.target, "__module__", None) in ("_operator", "operator")


def _ancestors(roots: Sequence[Any]) -> set[fx.Node]:
    found: set[fx.Node] = set()
    stack = [r for r in roots if isinstance(r, fx.Node)]
    while stack:
        node = stack.pop()
        if node not in found:
            found.add(node)
            stack += node.all_input_nodes
    return found


def _python_outputs(gm: fx.GraphModule) -> tuple[list[int], set[fx.Node], fx.GraphModule | None]:
    """The positions of the graph's outputs that Python makes at each call, the nodes only they
    need, and a GraphModule making them from the graph's own inputs followed by the native
    outputs ([], set(), None when there are none):

    - int outputs, when each is size arithmetic on the inputs (see `_is_size_arithmetic`; none
      are made in Python when one needs more);
    - tensors with no elements and a static shape (an eval batch norm's saved mean and inverse
      std, `aten._native_batch_norm_legit_no_training`'s results 1 and 2, which AOTAutograd's
      training forward returns for the backward): a new empty tensor, as eager returns;
    - ATen views of an input or of a native output (AOTAutograd's training forward saves
      `aten.t(weight)`, an input itself, `aten.detach(relu)` for the backward): the view itself,
      so no copy is made of a weight at every call, and the backward sees the tensors eager
      would save (an input changed in place before `backward()` is an error, as in eager)."""
    output = next(n for n in gm.graph.nodes if n.op == "output")
    outs = output.args[0]
    if not isinstance(outs, (tuple, list)):
        return [], set(), None
    ints = [
        k for k, a in enumerate(outs)
        if isinstance(a, fx.Node) and type(a.meta.get("example_value", a.meta.get("val"))) in (int, torch.SymInt)
    ]
    int_side = _ancestors([outs[k] for k in ints])
    if not all(n.op == "placeholder" or _is_size_arithmetic(n) for n in int_side):
        ints, int_side = [], set()
    empty = [k for k, a in enumerate(outs) if _empty_tensor(a)]
    chains = {k: c for k, a in enumerate(outs) if k not in ints and k not in empty and (c := _view_chain(a))}
    native = {a for k, a in enumerate(outs) if k not in ints and k not in empty and k not in chains}
    # a view of a tensor that is neither an input nor a native output stays native
    chains = {k: c for k, c in chains.items() if c[0].op == "placeholder" or c[0] in native}
    native = [a for k, a in enumerate(outs) if k not in ints and k not in empty and k not in chains]
    if not native:  # nothing left to compile: the views stay in the graph
        chains = {}
        native = [a for k, a in enumerate(outs) if k not in ints and k not in empty]
    made = sorted(ints + empty + list(chains))
    if not made:
        return [], set(), None
    view_side = {n for c in chains.values() for n in c[1:]}
    size_side = _ancestors([a for n in view_side for a in n.all_input_nodes if a not in view_side and a not in
                            {c[0] for c in chains.values()}])
    only = (int_side | size_side | view_side | _ancestors([outs[k] for k in empty])
            | {c[0] for c in chains.values() if c[0].op == "placeholder"}) - _ancestors(native)
    graph, env = fx.Graph(), {}
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            env[node] = graph.placeholder(node.name)
    for k, node in enumerate(native):  # one per native result, as the compiled module returns them
        p = graph.placeholder(f"irc_native_{k}")
        if isinstance(node, fx.Node) and node not in env:
            env[node] = p
    copied = int_side | size_side | view_side
    for node in gm.graph.nodes:
        if node not in env and node in copied:
            env[node] = graph.node_copy(node, lambda n: env[n])
    for k in empty:
        fake = outs[k].meta.get("example_value", outs[k].meta.get("val"))
        env[outs[k]] = graph.call_function(torch.empty, (tuple(fake.shape),), {"dtype": fake.dtype, "device": fake.device})
    graph.output(tuple(env[outs[k]] for k in made))
    return made, only, fx.GraphModule(gm, graph)


def _view_chain(node: Any) -> list[fx.Node] | None:
    """[base, view, view, ...] when `node` is an input or a chain of ATen view ops (their other
    arguments sizes or constants) from a base; None otherwise."""
    chain = []
    while isinstance(node, fx.Node) and node.op == "call_function" and getattr(node.target, "is_view", False):
        rest = _ancestors([a for a in node.all_input_nodes if a is not node.args[0]])
        if not all(n.op == "placeholder" or _is_size_arithmetic(n) for n in rest) or any(
            isinstance(n.meta.get("example_value", n.meta.get("val")), torch.Tensor) for n in rest
        ):
            return None
        chain.append(node)
        node = node.args[0]
    if not isinstance(node, fx.Node) or (not chain and node.op != "placeholder"):
        return None
    if not isinstance(node.meta.get("example_value", node.meta.get("val")), torch.Tensor):
        return None
    return [node, *reversed(chain)]


def _empty_tensor(node: Any) -> bool:
    """An output node whose traced value is a tensor with no elements and a static shape."""
    fake = node.meta.get("example_value", node.meta.get("val")) if isinstance(node, fx.Node) else None
    return (isinstance(fake, torch.Tensor) and node.op != "placeholder"
            and all(type(d) is int for d in fake.shape) and fake.numel() == 0)


def _is_number_op(node: fx.Node, args: tuple) -> bool:
    """A call computing a Python number from Python numbers only (SymInt/SymFloat arithmetic
    such as `s0 * 2`, `sym_sum`, `_sym_sqrt`, once its inputs are specialized)."""
    found: list[fx.Node] = []
    fx.node.map_arg(args, found.append)
    return isinstance(node.meta.get("example_value", node.meta.get("val")), _NUMBERS) and not found


def _symbolic_example_ok(x: Any, dims: dict[int, str]) -> bool:
    """Whether this call's tensor can be the example of a symbolic compile: every symbolic size
    >= 2 (irc, like torch.export, traces sizes 0 and 1 as special cases)."""
    return isinstance(x, torch.Tensor) and all(x.shape[d] >= 2 for d in dims)


def _copy_attr(src: nn.Module, dst: nn.Module, target: str) -> None:
    """Make `dst.<target>` the same object as `src.<target>` (dotted path; intermediate modules)."""
    *path, last = target.split(".")
    s, d = src, dst
    for part in path:
        s = getattr(s, part)
        if not hasattr(d, part):
            setattr(d, part, nn.Module())
        d = getattr(d, part)
    setattr(d, last, getattr(s, last))

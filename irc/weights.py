"""Weight guards: a compiled module never runs on weights the model no longer has.

irc binds the storage of every parameter and buffer it reads when it compiles, and folds
parameter-only computations (batch norms into convolutions, packed GEMM panels) into new
tensors. A `WeightGuard` watches, per call and cheaply, each tensor the graph read from the
model, *at the place the model keeps it* (the owning module's `_parameters`, `_buffers` or
`__dict__` entry):

- the object there is still the one compiled against (catches `m.fc.weight = nn.Parameter(t)`,
  a reassigned buffer, `load_state_dict(..., assign=True)`);
- its storage is still the same (`data_ptr()`: catches `m.fc.weight.data = t`);
- for tensors the native code does not read in place (a copy made to be contiguous, a mask
  buffer folded into the IR), its version counter (catches in-place updates, which the native
  code would otherwise never see).

These checks run in C++ first (runtime/native_guard.py: the same state read from torch's
TensorImpls, the tensors' cache misses overlapped), which answers only "unchanged" or "maybe";
on "maybe" the Python checks below decide. `IRC_NATIVE_GUARD=0` leaves them alone.

In-place updates of tensors read in place need nothing; those of tensors that were folded are
refolded by the fold plan (`lowering/tensor/fold_params.py`). What no cheap check can see is a write through
`.data` (`w.data.mul_(2)`, `w.data.copy_(t)`): `.data` is a new tensor with its own version
counter, and the storage stays. That is the documented contract: after such a write, call
`cm.refresh_weights()`.

The tensors are watched in their owner's dict, which a replaced owner no longer is: a
`ModuleWatch` watches the submodules the graph reads where the model keeps them.

Tracing also makes constants of the plain attributes the model's own modules read
(`self.temperature`, `self.use_res_connect`) and of the globals and closure variables its code
reads: `baked_attributes` lists those its code names, compared per call (a changed one
rebuilds, tracing again). The settings of torch.nn modules (a
conv's padding, a batch norm's eps) are read when compiling and not watched (ResNet-18 has 318):
after changing one, call `cm.refresh_weights()`.

Nor does a batch norm's kernel bump the version counters of the running statistics it updates
in a training step. nn.BatchNorm's `num_batches_tracked`, which the step increments with `add_`,
is the witness the guard sees (watched as a copy, though the native code never reads it): eager
training steps between calls (`m.train(); m(x); m.eval()`) rebuild the next call. Running
statistics a graph passes to a batch norm by function (a module of the user's own calling
`F.batch_norm(x, self.rm, self.rv, training=self.training)`) have no such counter: the guard
keeps a copy of their values and compares it at every call (about 0.7 us per tensor; a forward
pre-hook would cost nothing per call, but it is a local function in the module's dict, which
`torch.save(model)` cannot pickle).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from dataclasses import dataclass
from operator import is_
from typing import Any

import torch
from torch import fx, nn
from torch.utils.hooks import RemovableHandle

from irc.hooks import HookWatch
from irc.runtime import native_guard
from irc.runtime.native_guard import NativeCheck, native_check


@dataclass
class WatchedTensor:
    """One tensor the graph reads, where the model keeps it."""

    name: str  # qualified name in the model (``layer1.0.conv1.weight``)
    table: dict  # the owner's _parameters / _buffers / __dict__
    key: str
    tensor: torch.Tensor
    data_ptr: int
    version: int | None  # watched only for tensors the native code does not read in place
    snapshot: torch.Tensor | None = None  # the bytes compiled against: updates no version counter shows
    baked: bool = False  # read by tracing itself (a constant of the graph derives from it): a change retraces

    @staticmethod
    def bytes_of(t: torch.Tensor) -> torch.Tensor:
        """`t`'s elements as bytes, compared bitwise (so a NaN equals itself): a view of its
        memory where it is contiguous, else a copy made now."""
        return t.detach().contiguous().view(-1).view(torch.uint8)

    def changed(self) -> str | None:
        """Why this entry no longer holds what was compiled (None if it still does)."""
        current = self.table.get(self.key)
        if current is not self.tensor:
            return f"{self.name} was reassigned"
        if current.data_ptr() != self.data_ptr:
            return f"{self.name} has new storage (.data was assigned)"
        if self.version is not None and current._version != self.version:
            return f"{self.name} was updated in place (irc holds a copy of it)"
        if self.snapshot is not None and not torch.equal(self.bytes_of(current), self.snapshot):
            return f"{self.name} changed (running statistics a batch norm updated in a training step)"
        return None


_REGISTRATIONS = [0]  # submodule assignments anywhere in the process, once the hook below is in


def _count_registration(module: nn.Module, name: str, submodule: nn.Module | None) -> None:
    _REGISTRATIONS[0] += 1


_counting = False


def _count_module_registrations() -> None:
    """Install, once, the global hook counting submodule assignments (a public torch API that
    runs at every `parent.name = module`, `add_module`, `sequential[i] = module`)."""
    global _counting
    if not _counting:
        torch.nn.modules.module.register_module_module_registration_hook(_count_registration)
        _counting = True


def _submodule(root: nn.Module, name: str) -> object:
    owner: object = root
    for part in name.split(".") if name else ():
        owner = getattr(owner, part, None)
    return owner


class ModuleWatch:
    """The submodules a compiled graph reads (the owners of the tensors it reads, the modules it
    calls, and their parents), where the model keeps them: replacing one after compiling
    (`model.fc = nn.Linear(...)`, `model[1] = nn.GELU()`) rebuilds, tracing again. The guard
    above watches tensors in their owner's dict, which a replaced owner no longer is. A call
    compares one count of submodule assignments (`_REGISTRATIONS`) and looks at the modules only
    when it moved."""

    def __init__(self, root: nn.Module, names: Iterable[str]):
        _count_module_registrations()
        self.root = root
        self.epoch = _REGISTRATIONS[0]
        self.modules = [(n, _submodule(root, n)) for n in names]

    def changed(self) -> bool:
        if _REGISTRATIONS[0] == self.epoch:
            return False
        if self.reasons():
            return True
        self.epoch = _REGISTRATIONS[0]
        return False

    def reasons(self) -> list[str]:
        return [f"the submodule {n} was replaced" for n, m in self.modules if _submodule(self.root, n) is not m]


def read_module_names(gm: fx.GraphModule, tensor_names: Iterable[str]) -> list[str]:
    """The qualified names of the modules that own `tensor_names`, that `gm` calls, and all
    their parents (the root excluded)."""
    found: dict[str, None] = {}
    owners = [n.rsplit(".", 1)[0] for n in tensor_names if "." in n]
    called = [str(n.target) for n in gm.graph.nodes if n.op == "call_module"]
    for name in (*owners, *called):
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            found[".".join(parts[:i])] = None
    return list(found)


_VERSION = operator.attrgetter("_version")
_TRAINING = operator.attrgetter("training")


class WeightGuard:
    """The per-call check over every tensor a compiled graph reads from its model, and over what
    tracing baked into the graph: the train/eval mode of the modules whose meaning depends on
    it, forward hooks, the attributes and variables the model's code reads, its submodules."""

    def __init__(self, watched: list[WatchedTensor], modes: list[tuple[str, nn.Module]] = (),
                 hooks: HookWatch | None = None, attributes: list[BakedAttribute] = (),
                 modules: ModuleWatch | None = None):
        self.watched = watched
        self.hooks = hooks
        self.modules = modules
        self.attributes = list(attributes)
        self.modes = [(name, m, m.training) for name, m in modes]
        # Flat lists for the Python checks, walked by map() in C (in `irc bench`'s regime, each
        # call after the other contenders' calls, caches cold, MobileNet-v2's whole guard took
        # 177 us as a Python loop over tuples of bound methods, 147 so; with the C++ check below
        # in front, 40-46; the cnn's 13.3, 12.3, 6.1-6.4).
        self._tables = [w.table for w in watched]  # the owner's own dict, as `changed` reads it
        self._keys = [w.key for w in watched]
        self._tensors = [w.tensor for w in watched]
        self._ptrs = [w.data_ptr for w in watched]
        # torch's data_ptr, unbound (a subclass's own method, looked up per call, only if one overrides it)
        plain = all(type(t).data_ptr is torch.Tensor.data_ptr for t in self._tensors)
        self._data_ptr = torch.Tensor.data_ptr if plain else operator.methodcaller("data_ptr")
        self._copies = [w.tensor for w in watched if w.version is not None]
        self._versions = [w.version for w in watched if w.version is not None]
        # a live byte view of each contiguous tensor watched by value, and its bytes when compiled;
        # the others (strided: no byte view of them is live) with their bytes copied at each check
        by_value = [w for w in watched if w.snapshot is not None]
        self._values = [(w.bytes_of(w.tensor), w.snapshot) for w in by_value if w.tensor.is_contiguous()]
        self._strided_values = [(w.tensor, w.snapshot) for w in by_value if not w.tensor.is_contiguous()]
        # attributes holding a number, flag, string or None in a dict: their current values and
        # types compared in one list comparison each (equal types make == BakedAttribute.changed's
        # test: a value replaced by a tensor is a new type); the others (tensors, tuples, lists,
        # closure cells) one by one
        scalars = [a for a in self.attributes if type(a.table) is dict and type(a.value) in PLAIN]
        self._attr_tables = [a.table for a in scalars]
        self._attr_keys = [a.key for a in scalars]
        self._attr_missing = [_MISSING] * len(scalars)
        self._attr_values = [a.value for a in scalars]
        self._attr_types = [type(a.value) for a in scalars]
        self._attr_others = [a for a in self.attributes if not (type(a.table) is dict and type(a.value) in PLAIN)]
        self._mode_modules = [m for _, m, _ in self.modes]
        self._trainings = [t for _, _, t in self.modes]
        # The tensors' checks in C++ where it can (runtime/native_guard.py), with the modes and
        # scalar attributes as `table[key] is value` (a module's `training` in its __dict__, where
        # `module.training` reads it; native_check refuses any that is not there): its "unchanged"
        # is taken, its "maybe" answered by the Python checks. Made now, when those pass.
        # While its library is being built (native_guard.prepare), the calls take it up later.
        self._native: NativeCheck | None = None
        self._native_due = True
        self._take_up_native()

    def _take_up_native(self) -> None:
        if native_guard.pending():
            return
        self._native_due = False
        if any(hasattr(type(m), "training") for m in self._mode_modules):
            return  # a class's own `training` (a property) is not the __dict__ entry the C++ reads
        if not (self._tensors_changed() or self._flags_changed()):
            flags = [(m.training, m.__dict__, "training") for m in self._mode_modules]
            flags += [(v, table, key) for v, table, key in zip(self._attr_values, self._attr_tables, self._attr_keys)]
            self._native = native_check(self._tensors, self._tables, self._keys,
                                        [w.version is not None for w in self.watched], flags)

    def stale(self) -> bool:
        """Has any watched tensor been reassigned, given new storage, or (if a copy) updated,
        or a watched module switched between train() and eval()?"""
        native = self._native
        if native is None and self._native_due:
            self._take_up_native()
            native = self._native
        if (native is None or native.changed()) and (self._tensors_changed() or self._flags_changed()):
            return True
        for live, snapshot in self._values:
            if not torch.equal(live, snapshot):
                return True
        for t, snapshot in self._strided_values:
            if not torch.equal(WatchedTensor.bytes_of(t), snapshot):
                return True
        for a in self._attr_others:
            if a.changed():
                return True
        # the two counts compared inline (a call each only when one moved): cnn's guard 2.95 -> 2.87 us
        modules, hooks = self.modules, self.hooks
        if modules is not None and _REGISTRATIONS[0] != modules.epoch and modules.changed():
            return True
        return hooks is not None and RemovableHandle.next_id != hooks.epoch and hooks.changed()

    def fast_call(self, spec, plan: NativeCheck | None):
        """The builtin making a call of `spec` (a static forward's `runtime.wrapper.CallSpec`)
        natively, this guard's checks included, with the fold plan's `plan`
        (runtime/native_guard.py fast_call); None where `stale()` is more than its C++ check and
        the two counts compared and the contiguous tensors compared by value (attributes that
        are not scalars, strided tensors compared by value)."""
        if self._native is None and self._native_due:  # its library loaded since this call's stale()
            self._take_up_native()
        native = self._native
        if native is None or self._attr_others or self._strided_values:
            return None
        modules, hooks = self.modules, self.hooks
        return native_guard.fast_call(
            spec, native, plan, registrations=_REGISTRATIONS if modules is not None else None, modules=modules,
            handle_type=RemovableHandle if hooks is not None else None, hooks=hooks, values=self._values)

    def _tensors_changed(self) -> bool:
        """Is a watched tensor reassigned, given new storage, or (if a copy) updated in place?"""
        if not all(map(is_, map(dict.get, self._tables, self._keys), self._tensors)):
            return True
        if list(map(self._data_ptr, self._tensors)) != self._ptrs:
            return True
        return list(map(_VERSION, self._copies)) != self._versions

    def _flags_changed(self) -> bool:
        """Has a watched module switched between train() and eval(), or a scalar attribute changed?"""
        if list(map(_TRAINING, self._mode_modules)) != self._trainings:
            return True
        if self._attr_tables:
            current = list(map(dict.get, self._attr_tables, self._attr_keys, self._attr_missing))
            if list(map(type, current)) != self._attr_types or current != self._attr_values:
                return True
        return False

    def mode_changed(self) -> bool:
        return any(m.training is not t for _, m, t in self.modes)

    def hooks_changed(self) -> bool:
        return self.hooks is not None and bool(self.hooks.reasons())

    def needs_retrace(self) -> bool:
        """Did anything change that tracing baked into the graph (modes, hooks, attributes,
        submodules)?"""
        return (self.mode_changed() or self.hooks_changed() or any(a.changed() for a in self.attributes)
                or (self.modules is not None and bool(self.modules.reasons()))
                or any(w.baked and w.changed() is not None for w in self.watched))

    def reasons(self) -> list[str]:
        modes = [f"{n or 'the model'} is now in {'train' if m.training else 'eval'} mode"
                 for n, m, t in self.modes if m.training is not t]
        hooks = self.hooks.reasons() if self.hooks is not None else []
        attributes = [f"{a.name} is now {_shown(a.table.get(a.key, '(deleted)'))}, compiled as {_shown(a.value)}"
                      for a in self.attributes if a.changed()]
        modules = self.modules.reasons() if self.modules is not None else []
        return [r for w in self.watched if (r := w.changed()) is not None] + modes + hooks + attributes + modules

    def tensors(self) -> list[torch.Tensor]:
        return [w.tensor for w in self.watched]


def read_tensor_names(gm: fx.GraphModule) -> list[str]:
    """Qualified names of every tensor `gm` reads from its module: get_attr targets and the
    direct parameters and buffers of the modules it calls, once each, in graph order."""
    names: dict[str, None] = {}
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            names[str(node.target)] = None
        elif node.op == "call_module":
            mod = gm.get_submodule(str(node.target))
            for n, _ in (*mod.named_parameters(recurse=False), *mod.named_buffers(recurse=False)):
                names[f"{node.target}.{n}"] = None
    return list(names)


def running_statistics_names(gm: fx.GraphModule) -> set[str]:
    """Qualified names of the tensors `gm` passes to a batch or instance norm function as its
    running statistics (`F.batch_norm(x, self.rm, self.rv, ...)`, the ATen overloads of an
    exported program): a training step updates them inside the kernel, with no version bump
    and, unlike nn.BatchNorm's, no num_batches_tracked beside them."""
    names = set()
    for node in gm.graph.nodes:
        name = getattr(node.target, "__name__", "") if node.op == "call_function" else ""
        if "batch_norm" not in name and "instance_norm" not in name:
            continue
        normalized = node.normalized_arguments(gm, normalize_to_only_use_kwargs=True)
        kwargs = normalized.kwargs if normalized is not None else {}
        if kwargs.get("training", kwargs.get("use_input_stats", False)) is not False:
            continue  # batch statistics: the graph's own (eager) call updates them at every call
        for key in ("running_mean", "running_var"):
            arg = kwargs.get(key)
            if isinstance(arg, fx.Node) and arg.op == "get_attr":
                names.add(str(arg.target))
    return names


MODE_DEPENDENT = (
    nn.modules.dropout._DropoutNd, nn.modules.batchnorm._BatchNorm, nn.MultiheadAttention,
    nn.TransformerEncoderLayer, nn.TransformerDecoderLayer,
)
"""Modules whose result depends on `training`; their converters read it at compile time."""


def mode_modules(gm: fx.GraphModule, root: nn.Module | None) -> list[tuple[str, nn.Module]]:
    """The modules whose train/eval mode a compiled graph depends on: the mode-dependent
    modules it calls, and the model's own modules that tracing inlined (any class not from
    torch.nn, the model itself included: a `self.training` read in their forward became a
    constant). `m.train()` on the model or on one such submodule is seen."""
    found: dict[int, tuple[str, nn.Module]] = {}
    if root is not None:
        for name, mod in root.named_modules():
            if mod is root or not type(mod).__module__.startswith("torch.nn"):
                found.setdefault(id(mod), (name, mod))
    for node in gm.graph.nodes:
        if node.op == "call_module":
            mod = gm.get_submodule(str(node.target))
            if isinstance(mod, MODE_DEPENDENT):
                found.setdefault(id(mod), (str(node.target), mod))
    return list(found.values())


PLAIN = (int, float, bool, str, type(None))


@dataclass
class BakedAttribute:
    """A value the model's own code reads that tracing made a constant of the graph: a plain
    attribute (a number, flag, string, None, or a tuple or list of them) of one of its modules,
    or such a global or closure variable of its code (a tensor one too, compared by identity)."""

    name: str  # `blocks.0.use_res_connect`, `global SCALE`, `closure scale`
    table: Any  # the module's __dict__, the function's globals, or a closure cell (`_Cell`)
    key: str
    value: Any  # as compiled (a list is copied)

    def changed(self) -> bool:
        current = self.table.get(self.key, _MISSING)
        if isinstance(self.value, torch.Tensor) or isinstance(current, torch.Tensor):
            return current is not self.value
        return current is not self.value and current != self.value


_MISSING = object()


class _Cell:
    """A closure cell, read like a dict (the key is its variable's name)."""

    def __init__(self, cell):
        self.cell = cell

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self.cell.cell_contents
        except ValueError:  # an empty cell
            return default


def _shown(v: Any) -> str:
    return f"a {tuple(v.shape)} tensor (id {id(v):#x})" if isinstance(v, torch.Tensor) else repr(v)


def _plain(v: Any) -> bool:
    return isinstance(v, PLAIN) or (isinstance(v, (tuple, list)) and len(v) <= 16 and all(isinstance(x, PLAIN) for x in v))


def _functions(cls: type) -> list:
    """The functions of `cls` and of its bases not from torch, but `__init__`: methods, static
    and class methods, and the getters of properties (`self.scale` reading `self._scale`)."""
    found = []
    for c in cls.__mro__:
        if c.__module__.startswith("torch.") or c is object:
            continue
        for k, v in vars(c).items():
            if k == "__init__":
                continue
            if isinstance(v, property):
                found += [f for f in (v.fget, v.fset) if f is not None]
            else:
                v = v.__func__ if isinstance(v, (staticmethod, classmethod)) else v
                if hasattr(v, "__code__"):
                    found.append(v)
    return found


def _names(code) -> set[str]:
    """The names `code` and the code nested in it (comprehensions, lambdas) refer to."""
    names: set[str] = set()
    todo = [code]
    while todo:
        c = todo.pop()
        names.update(c.co_names)
        todo += [k for k in c.co_consts if hasattr(k, "co_names")]
    return names


def _snapshot(v: Any) -> Any:
    return list(v) if isinstance(v, list) else v


def _free_variables(fn, found: list[BakedAttribute], seen: set) -> None:
    """The plain and tensor globals and closure variables `fn`'s code reads, once each."""
    code = fn.__code__
    for name in _names(code):
        v = fn.__globals__.get(name, _MISSING)
        if (id(fn.__globals__), name) not in seen and (_plain(v) or isinstance(v, torch.Tensor)):
            seen.add((id(fn.__globals__), name))
            found.append(BakedAttribute(f"global {name}", fn.__globals__, name, _snapshot(v)))
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        v = _Cell(cell).get(name, _MISSING)
        if id(cell) not in seen and (_plain(v) or isinstance(v, torch.Tensor)):
            seen.add(id(cell))
            found.append(BakedAttribute(f"closure {name}", _Cell(cell), name, _snapshot(v)))


def baked_attributes(model: Any) -> list[BakedAttribute]:
    """What the model's own code reads that tracing made constants of the graph, so that a
    changed one must rebuild (and trace again): the plain attributes its own modules (any class
    not from torch.nn: their forward was traced, not called) have and their code names
    (`self.temperature`, `self.use_res_connect`), and the plain or tensor globals and closure
    variables of that code (of a traced function's)."""
    found: list[BakedAttribute] = []
    seen: set = set()
    if isinstance(model, nn.Module):
        for prefix, mod in model.named_modules():
            if type(mod).__module__.startswith("torch.nn"):
                continue
            functions = _functions(type(mod))
            names = set().union(*(_names(f.__code__) for f in functions))
            for key, v in vars(mod).items():
                if key in names and key != "training" and _plain(v):  # (modes: `mode_modules`)
                    found.append(BakedAttribute(f"{prefix}.{key}" if prefix else key, vars(mod), key, _snapshot(v)))
            for f in functions:
                _free_variables(f, found, seen)
    elif callable(model) and hasattr(model, "__code__"):
        _free_variables(model, found, seen)
    return found


def _locate(root: nn.Module, name: str) -> tuple[dict, str] | None:
    """The dict entry holding tensor `name` in `root` (None if `root` has no such tensor)."""
    *path, key = name.split(".")
    owner = root
    for part in path:
        owner = getattr(owner, part, None)
        if not isinstance(owner, nn.Module):
            return None
    for table in (owner._parameters, owner._buffers, owner.__dict__):
        if isinstance(table.get(key), torch.Tensor):
            return table, key
    return None


def watch(
    roots: Iterable[nn.Module], names: list[str], bound: list[torch.Tensor], folded_sources: list[torch.Tensor],
    modes: list[tuple[str, nn.Module]] = (), by_value: set[str] = frozenset(),
    attributes: list[BakedAttribute] = (), modules: ModuleWatch | None = None, baked: Iterable[str] = (),
) -> WeightGuard:
    """A guard over the tensors `names` as the first of `roots` that has each one keeps them.

    `bound`: the tensors the native code reads in place (their storage is compared, their
    in-place updates need no check); `folded_sources`: tensors a fold plan refolds itself when
    they change in place. Every other watched tensor is a copy, so its version is watched too.
    `by_value`: names whose values are compared too (`running_statistics_names`); `baked`: the
    model's tensors tracing computed with on their own (`self.mean * 2`: irc/frontend/trace.py),
    whose results are constants of the graph, watched as copies (a change traces again)."""
    in_place = {t.data_ptr() for t in bound if t.numel()}
    refolded = {id(t) for t in folded_sources}
    watched = []
    roots = list(roots)
    baked = set(baked)
    for name in dict.fromkeys([*names, *baked]):
        found = next((loc for r in roots if (loc := _locate(r, name)) is not None), None)
        if found is None:
            continue
        table, key = found
        t = table[key]
        copied = name in baked or (id(t) not in refolded and (t.numel() == 0 or t.data_ptr() not in in_place))
        snapshot = WatchedTensor.bytes_of(t).clone() if name in by_value else None
        watched.append(WatchedTensor(name, table, key, t, t.data_ptr(), t._version if copied else None, snapshot,
                                     baked=name in baked))
    return WeightGuard(watched, modes, HookWatch(roots), attributes, modules)


def sync(gm: fx.GraphModule, root: nn.Module, names: list[str]) -> None:
    """Make `gm` read the tensors `root` holds now (where it keeps its own references: a traced
    GraphModule copies get_attr tensors of the root module; called modules are shared)."""
    if gm is root:
        return
    for name in names:
        src, dst = _locate(root, name), _locate(gm, name)
        if src is not None and dst is not None:
            dst[0][dst[1]] = src[0][src[1]]

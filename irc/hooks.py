"""Forward hooks: a compiled module runs them where eager PyTorch would, or refuses.

`torch.fx.symbolic_trace` does not run a module's forward hooks the way eager PyTorch does: it
records a leaf module (nn.Linear, nn.Conv2d ...) as one `call_module` node, which irc converts
from the module's type alone, and it runs the hooks of other modules once, on its proxies, so a
hook that records activations (`features[name] = out`) would keep a proxy and never run again.
irc's graphs therefore:

- trace a module that has forward hooks or forward pre-hooks, or a `forward` set on the instance,
  as a leaf (`Tracer`), and run every `call_module` node of such a module in eager PyTorch,
  through its `__call__`, hooks included (`hooked`, checked by the importer);
- refuse the model itself having them, or global module hooks
  (`register_module_forward_hook`): the graph is the model's forward, which no `__call__` wraps
  (`root_hooks`);
- see hooks registered after compiling (`HookWatch`): every registration takes a new
  `RemovableHandle` id, so a call compares one integer, and only when it moved looks at the
  model's modules again; a change rebuilds the compiled module (a traced model is traced again).
  A removal takes no new id: its module runs eagerly until the next registration anywhere,
  which stays correct.
"""

from __future__ import annotations

from collections.abc import Iterable

from torch import fx, nn
from torch.nn.modules import module as _module
from torch.utils.hooks import RemovableHandle


def hooked(m: nn.Module) -> bool:
    """Does `m` have forward hooks or forward pre-hooks (its own or global ones), or a forward
    of its own (`m.forward = f`, as accelerate's hooks and some adapters install), which irc's
    converters, keyed by the module's type, would not run?"""
    return bool(m._forward_hooks or m._forward_pre_hooks or global_hooks() or "forward" in m.__dict__)


def global_hooks() -> bool:
    return bool(_module._global_forward_hooks or _module._global_forward_pre_hooks)


def root_hooks(model: object) -> str | None:
    """Why irc cannot compile `model` as it is because of hooks (None: it can)."""
    if global_hooks():
        return "global module forward hooks are registered (torch.nn.modules.module.register_module_forward_hook)"
    if isinstance(model, nn.Module) and (model._forward_hooks or model._forward_pre_hooks):
        return f"the model ({type(model).__name__}) has forward hooks or forward pre-hooks of its own"
    return None


class Tracer(fx.Tracer):
    """torch.fx's tracer, with every module that has forward hooks kept as a leaf."""

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        return hooked(m) or super().is_leaf_module(m, module_qualified_name)


def _epoch() -> int:
    return RemovableHandle.next_id


class HookWatch:
    """Which modules of `roots` had forward hooks when compiled, and the per-call check that
    none gained or lost them since."""

    def __init__(self, roots: Iterable[nn.Module]):
        self.roots = [r for r in roots if isinstance(r, nn.Module)]
        self.epoch = _epoch()
        self.hooked = self._hooked()

    def _hooked(self) -> frozenset[int]:
        return frozenset(id(m) for r in self.roots for m in r.modules() if hooked(m))

    def changed(self) -> bool:
        """Per call: one integer compared; the modules scanned only when a hook was registered
        anywhere since the last look."""
        if RemovableHandle.next_id == self.epoch:
            return False
        if self._hooked() == self.hooked:
            self.epoch = _epoch()
            return False
        return True

    def reasons(self) -> list[str]:
        now = self._hooked()
        names = [name or "the model" for r in self.roots for name, m in r.named_modules()
                 if (id(m) in now) != (id(m) in self.hooked)]
        return [f"forward hooks were registered on {', '.join(dict.fromkeys(names))}"] if names else []


def node_hooked(gm: fx.GraphModule, node: fx.Node) -> bool:
    """Is `node` a call of a module with forward hooks?"""
    if node.op != "call_module":
        return False
    try:
        return hooked(gm.get_submodule(str(node.target)))
    except AttributeError:
        return False

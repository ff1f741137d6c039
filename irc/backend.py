"""`torch.compile(model, backend="irc")`: irc as a TorchDynamo backend.

Registered through the `torch_dynamo_backends` entry point (pyproject.toml), so the name "irc"
works without importing irc first. Dynamo hands over an FX graph of functional calls
(`torch._C._nn.linear`, `torch.relu`, methods ...) whose placeholders are the user's tensors, the
module's parameters and buffers (Dynamo inlines built-in nn modules, so weights arrive as graph
inputs) and, for dynamic shapes, SymInt sizes. irc compiles it on the first call, with:

- parameters and buffers turned into `get_attr` attributes: they become function parameters of
  the native code (read in place, foldable at compile time), not per-call inputs. If Dynamo
  later passes a different tensor object for one of them, the graph is compiled again for it;
- SymInt/int inputs specialized to their values (`dynamic=False` semantics): one compiled
  module per distinct set of values;
- eager fallback for unsupported nodes and one native version per input-shape set
  (`irc.compile` defaults). Past `max_versions` shapes, calls run the graph eagerly (one warning).

Outputs keep the structure Dynamo expects (the graph's tuple).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import torch
from torch import fx, nn

from irc.api import DEFAULT_MAX_VERSIONS, CompiledModule, compile

log = logging.getLogger("irc")

__all__ = ["irc_backend"]


def irc_backend(gm: fx.GraphModule, example_inputs: Sequence[Any], **options: Any) -> "DynamoGraph":
    """The Dynamo backend: returns a callable running `gm` through irc.

    options (torch.compile(..., options={...})): `fuse`, `cxx_flags`, `max_versions`.
    """
    return DynamoGraph(gm, example_inputs, **options)


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


class DynamoGraph:
    """A Dynamo graph compiled by irc, lazily (on the first call, with real values)."""

    def __init__(self, gm: fx.GraphModule, example_inputs: Sequence[Any], **options: Any):
        self.gm = gm
        self.options = {"fuse": True, "cxx_flags": None, "max_versions": DEFAULT_MAX_VERSIONS, **options}
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        self.const_idx: list[int] = []  # ints / SymInts the graph uses: specialized
        self.unused_idx: list[int] = []  # ints / SymInts it does not use (sizes Dynamo passes along)
        self.param_idx: list[int] = []  # parameters and buffers: function parameters
        self.input_idx: list[int] = []  # the rest: run-time inputs
        for i, (node, example) in enumerate(zip(placeholders, example_inputs)):
            if not isinstance(example, torch.Tensor):
                (self.const_idx if node.users else self.unused_idx).append(i)
            elif _is_param_or_buffer(node, example):
                self.param_idx.append(i)
            else:
                self.input_idx.append(i)
        self.compiled: dict[tuple, tuple[list[torch.Tensor], CompiledModule]] = {}
        self._warned = False

    def __call__(self, *args: Any) -> Any:
        key = tuple(args[i] for i in self.const_idx)
        entry = self.compiled.get(key)
        if entry is None or any(args[i] is not p for i, p in zip(self.param_idx, entry[0])):
            if entry is None and len(self.compiled) >= self.options["max_versions"]:
                return self._eager(args, len(self.compiled))
            entry = self._compile(args, key)
        cm = entry[1]
        inputs = [args[i] for i in self.input_idx]
        if len(cm.versions) >= cm.max_versions and tuple(tuple(x.shape) for x in inputs) not in cm.versions:
            return self._eager(args, len(cm.versions))
        return cm(*inputs)

    def _eager(self, args: tuple, n_versions: int) -> Any:
        if not self._warned:
            self._warned = True
            log.warning(
                "irc: this graph was compiled for %d input shapes (max_versions); further shapes run "
                "in eager PyTorch. Pad or bucket the inputs, or pass options={'max_versions': N}.",
                n_versions,
            )
        with torch.no_grad():
            return self.gm(*args)

    def _compile(self, args: tuple, key: tuple) -> tuple[list[torch.Tensor], CompiledModule]:
        params = [args[i] for i in self.param_idx]
        gm = self._specialize(args)
        inputs = [args[i] for i in self.input_idx]
        if self.compiled:
            log.info("irc: compiling the Dynamo graph again for %s", ", ".join(
                f"{self._placeholders()[i].name}={args[i]}" for i in self.const_idx
            ) or "new parameter tensors")
        cm = compile(
            gm, inputs, fuse=self.options["fuse"], cxx_flags=self.options["cxx_flags"],
            max_versions=self.options["max_versions"],
        )
        self.compiled[key] = (params, cm)
        return self.compiled[key]

    def _placeholders(self) -> list[fx.Node]:
        return [n for n in self.gm.graph.nodes if n.op == "placeholder"]

    def _specialize(self, args: tuple) -> fx.GraphModule:
        """A copy of the graph taking the run-time inputs only: parameters become attributes read
        by get_attr, int/SymInt placeholders their values."""
        root = nn.Module()
        graph = fx.Graph()
        env: dict[fx.Node, Any] = {}
        placeholders = self._placeholders()
        kinds = {**{i: "const" for i in self.const_idx}, **{i: "param" for i in self.param_idx}}
        for i, node in enumerate(placeholders):
            kind = kinds.get(i)
            if i in self.unused_idx:
                continue
            if kind == "const":
                env[node] = args[i] if isinstance(args[i], (int, float, bool)) else int(args[i])
            elif kind == "param":
                name = f"irc_param_{i}"
                setattr(root, name, args[i])  # plain attribute: keeps the tensor object itself
                env[node] = graph.get_attr(name)
            else:
                env[node] = graph.placeholder(node.name)
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op in ("get_attr", "call_module"):
                _copy_attr(self.gm, root, str(node.target))
            env[node] = graph.node_copy(node, lambda n: env[n])
        return fx.GraphModule(root, graph)


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

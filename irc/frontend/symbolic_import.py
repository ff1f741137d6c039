"""Importing a graph with symbolic sizes: the example inputs' dynamic dimensions become symbols.

`irc.compile(model, inputs, dynamic_shapes=...)` names, for some input dimensions, a size that
changes from call to call. The graph is then run once more on fake tensors (torch's
`FakeTensorMode` with a `ShapeEnv`) whose dynamic dimensions are torch symbols, so every node's
`tensor_meta` holds sizes as `SymInt`s: expressions of those symbols, simplified by the
`ShapeEnv` (two dimensions the graph forces equal become one symbol). `SymbolTable` maps them
to irc's symbols `s0, s1, ...` (dialects/symbolic.py), numbered in the order the inputs'
dimensions first show them, and records each one's valid range: the user's bounds intersected
with what tracing assumed (torch takes a symbolic size to be >= 2: sizes 0 and 1 may change what
the program does, e.g. broadcasting, so a call with such a size gets its own static version).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import fx

from irc.dialects.symbolic import Dim, dim, symbol, sympy
from irc.errors import IrcError


@dataclass(frozen=True)
class DynamicDim:
    """One input dimension declared dynamic: its name (dimensions sharing a name share a size),
    and its bounds (inclusive; `max` None: unbounded)."""

    name: str
    min: int = 0
    max: int | None = None


@dataclass
class SymbolTable:
    """torch's symbols of one import, as irc's."""

    shape_env: Any
    symbols: dict[sympy.Symbol, sympy.Symbol] = field(default_factory=dict)  # torch's -> irc's
    ranges: dict[str, tuple[int, int | None]] = field(default_factory=dict)  # irc name -> (min, max)
    guards: list[str] = field(default_factory=list)  # what tracing assumed, as Python over s0, s1, ...
    input_shapes: list[tuple[Dim, ...]] = field(default_factory=list)

    def size(self, d: Any) -> Dim:
        """A torch size (int or SymInt) as an irc Dim; IrcError for a size the inputs do not give."""
        if isinstance(d, int):
            return d
        return self.size_expr(d.node.expr)

    def size_expr(self, expr: Any) -> Dim:
        """A torch size expression as an irc Dim."""
        expr = self.shape_env.replace(expr)
        unknown = expr.free_symbols - set(self.symbols)
        if unknown:
            raise IrcError(
                f"the size {expr} depends on {', '.join(sorted(map(str, unknown)))}, which is no input's "
                "dimension (a data-dependent size); irc compiles sizes the inputs' shapes determine"
            )
        return dim(expr.xreplace(self.symbols))


def dynamic_dims(
    dynamic_shapes: Any, names: Sequence[str], example_inputs: Sequence[torch.Tensor]
) -> list[dict[int, DynamicDim]]:
    """`dynamic_shapes` in torch.export's convention, as {dim: DynamicDim} per input.

    It is a dict keyed by input name, or a list/tuple in input order; each entry is None (all
    static), a dict {dim: spec} or a list/tuple with a spec or None per dimension. A spec is a
    `torch.export.Dim` (its name and bounds), `Dim.AUTO`/`Dim.DYNAMIC` (a size of its own), or a
    string (a name)."""
    if isinstance(dynamic_shapes, dict):
        unknown = sorted(set(dynamic_shapes) - set(names))
        if unknown:
            raise IrcError(f"dynamic_shapes names {', '.join(map(repr, unknown))}, which are not inputs ({', '.join(names)})")
        per_input = [dynamic_shapes.get(n) for n in names]
    elif isinstance(dynamic_shapes, (list, tuple)):
        if len(dynamic_shapes) != len(names):
            raise IrcError(f"dynamic_shapes has {len(dynamic_shapes)} entries for {len(names)} inputs ({', '.join(names)})")
        per_input = list(dynamic_shapes)
    else:
        raise IrcError(
            f"dynamic_shapes must be a dict (by input name) or a list (by position), got {type(dynamic_shapes).__name__}"
        )
    result: list[dict[int, DynamicDim]] = []
    for name, entry, x in zip(names, per_input, example_inputs):
        dims: dict[int, DynamicDim] = {}
        if entry is None:
            result.append(dims)
            continue
        items = entry.items() if isinstance(entry, dict) else enumerate(entry)
        for d, spec in items:
            if spec is None:
                continue
            if not isinstance(d, int) or not -x.dim() <= d < x.dim():
                raise IrcError(f"dynamic_shapes: input {name!r} has {x.dim()} dimensions, no dimension {d!r}")
            d %= x.dim()
            dims[d] = _dynamic_dim(spec, f"{name}.shape[{d}]")
            size = x.shape[d]
            lo, hi = dims[d].min, dims[d].max
            if size < 2:
                raise IrcError(
                    f"dynamic_shapes: input {name!r} dimension {d} is declared dynamic, but its example size is "
                    f"{size}; give an example of size >= 2 (sizes 0 and 1 are special cases, as in torch.export)"
                )
            if size < lo or (hi is not None and size > hi):
                raise IrcError(f"dynamic_shapes: input {name!r} dimension {d} has example size {size}, outside [{lo}, {hi}]")
        result.append(dims)
    return result


def exported_dynamic_shapes(gm: fx.GraphModule, ep: Any) -> list[dict[int, DynamicDim]] | None:
    """The dynamic dimensions an ExportedProgram declares (its inputs' symbolic sizes, with the
    ranges of `ep.range_constraints`), as `dynamic_shapes` for `gm` (its plain module); None
    when every size is static."""
    found: list[dict[int, DynamicDim]] = []
    for node in (n for n in gm.graph.nodes if n.op == "placeholder"):
        val = node.meta.get("val")
        dims: dict[int, DynamicDim] = {}
        for d, s in enumerate(getattr(val, "shape", ())):
            if isinstance(s, torch.SymInt) and isinstance(s.node.expr, sympy.Symbol):
                vr = ep.range_constraints.get(s.node.expr)
                lo = int(vr.lower) if vr is not None and vr.lower.is_Integer else 0
                hi = int(vr.upper) if vr is not None and vr.upper.is_Integer else None
                dims[d] = DynamicDim(str(s.node.expr), lo, hi)
        found.append(dims)
    return found if any(found) else None


_RELATIONS = {"Equality": "==", "Unequality": "!=", "GreaterThan": ">=", "StrictGreaterThan": ">",
              "LessThan": "<=", "StrictLessThan": "<"}


def _guard(table: SymbolTable, expr: Any) -> str:
    """One of tracing's assumptions (`s89 >= 3`, `Ne(s89, 3)`) over irc's symbols, in Python:
    the compiled code is right only where it holds, so every call checks it (runtime.wrapper)."""
    from irc.dialects.symbolic import format_dim

    op = _RELATIONS.get(type(expr).__name__)
    if op is None:
        raise IrcError(f"tracing assumed {expr}, a size rule irc cannot check at call time")
    try:
        lhs, rhs = (table.size_expr(e) for e in (expr.lhs, expr.rhs))
        return f"{format_dim(lhs)} {op} {format_dim(rhs)}"
    except ValueError as e:  # torch's own Mod/FloorDiv...: compiled per shape instead, never unchecked
        raise IrcError(f"tracing assumed {expr}, a size rule irc cannot check at call time ({e})") from None


def _dynamic_dim(spec: Any, where: str) -> DynamicDim:
    if isinstance(spec, DynamicDim):
        return spec
    if isinstance(spec, str):
        return DynamicDim(spec)
    name = getattr(spec, "__name__", None)
    if name is None:
        raise IrcError(f"dynamic_shapes: {where} is {spec!r}; give a torch.export.Dim, Dim.AUTO/Dim.DYNAMIC or a name")
    if type(spec).__name__ == "_DimHint" or name in ("AUTO", "DYNAMIC"):  # Dim.AUTO / Dim.DYNAMIC: a size of its own
        return DynamicDim(f"{where}")
    lo, hi = getattr(spec, "min", 0), getattr(spec, "max", None)
    return DynamicDim(name, int(lo or 0), None if hi is None or hi >= 2**62 else int(hi))


def propagate_symbolic(
    gm: fx.GraphModule, example_inputs: Sequence[Any], dynamic: Sequence[dict[int, DynamicDim]]
) -> SymbolTable:
    """Run `gm` on fake inputs whose `dynamic` dimensions are symbols (overwriting each node's
    `tensor_meta` with symbolic sizes) and return the table of its symbols."""
    from torch._dynamo.source import ConstantSource
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv
    from torch.fx.passes.shape_prop import ShapeProp

    env = ShapeEnv()
    mode = FakeTensorMode(shape_env=env)
    by_name: dict[str, Any] = {}  # a declared name -> its SymInt (dimensions sharing a name share a size)
    fakes = []
    for x, dims in zip(example_inputs, dynamic):
        if not isinstance(x, torch.Tensor):
            fakes.append(x)
            continue
        sizes = []
        for d, n in enumerate(x.shape):
            spec = dims.get(d)
            if spec is None:
                sizes.append(int(n))
                continue
            if spec.name not in by_name:
                s = env.create_symbol(int(n), ConstantSource(f"irc_{len(by_name)}"), dynamic_dim=DimDynamic.DYNAMIC)
                by_name[spec.name] = env.create_symintnode(s, hint=int(n))
            sizes.append(by_name[spec.name])
        with mode:
            fakes.append(torch.empty(sizes, dtype=x.dtype))
    with torch.no_grad():
        ShapeProp(gm, fake_mode=mode).propagate(*fakes)
    table = SymbolTable(env)
    bounds: dict[str, tuple[int, int | None]] = {}
    for x, dims in zip(fakes, dynamic):
        if not isinstance(x, torch.Tensor):
            continue
        for d, n in enumerate(x.shape):
            if not isinstance(n, torch.SymInt):
                continue
            expr = env.replace(n.node.expr)
            if isinstance(expr, sympy.Symbol) and expr not in table.symbols:
                ours = symbol(f"s{len(table.symbols)}")
                table.symbols[expr] = ours
                vr = env.var_to_range.get(expr)
                lo = int(vr.lower) if vr is not None and vr.lower.is_Integer else 0
                hi = int(vr.upper) if vr is not None and vr.upper.is_Integer else None
                spec = dims[d]
                lo = max(lo, spec.min)
                hi = spec.max if hi is None else (hi if spec.max is None else min(hi, spec.max))
                bounds[ours.name] = (lo, hi)
    table.ranges = bounds
    table.guards = [_guard(table, g.expr) for g in env.guards]
    table.input_shapes = [tuple(table.size(n) for n in x.shape) if isinstance(x, torch.Tensor) else () for x in fakes]
    return table

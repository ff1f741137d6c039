"""The front end's structure: converter tables composed once (converters.py), no import cycles,
and the same IR whichever front-end module a process imports first."""

from __future__ import annotations

import ast
import os
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import irc.frontend
from irc.frontend import converters, fx_importer

FRONTEND = Path(irc.frontend.__file__).parent
BASE_MODULES = {"irc.frontend.convert_base", "irc.frontend.folding", "irc.frontend.order_mutations"}


def frontend_modules() -> list[str]:
    return sorted(f"irc.frontend.{m.name}" for m in pkgutil.iter_modules([str(FRONTEND)]))


def frontend_imports(module: str) -> set[str]:
    """The irc.frontend modules `module` imports anywhere in its source (module level or local)."""
    tree = ast.parse((FRONTEND / f"{module.rsplit('.', 1)[1]}.py").read_text())
    known = set(frontend_modules())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return found & known


def test_no_import_cycles_among_frontend_modules():
    graph = {m: frontend_imports(m) for m in frontend_modules()}
    done: set[str] = set()

    def visit(m: str, path: list[str]) -> None:
        if m in path:
            cycle = path[path.index(m):] + [m]
            pytest.fail("import cycle: " + " -> ".join(cycle))
        if m in done:
            return
        for dep in sorted(graph[m]):
            visit(dep, path + [m])
        done.add(m)

    for m in graph:
        visit(m, [])


def test_families_import_only_the_base_modules():
    """Families build on convert_base/folding/order_mutations only (the layering converters.py
    states), and the base modules import no family."""
    for family in converters.FAMILIES:
        assert frontend_imports(family.__name__) <= BASE_MODULES, family.__name__
    for base in BASE_MODULES:
        assert frontend_imports(base) <= BASE_MODULES, base


def test_composed_tables_are_the_union_of_the_families():
    for name in ("FUNCTIONS", "METHODS", "MODULES"):
        composed = getattr(converters, name)
        # what the importer (and aten's aliases) look up: FUNCTIONS through function_converter
        # (which adds the qualified names of library functions)
        if name == "FUNCTIONS":
            assert fx_importer.function_converter is converters.function_converter
        else:
            assert getattr(fx_importer, name) is composed
        families = [getattr(f, name, {}) for f in converters.FAMILIES]
        assert sum(len(t) for t in families) == len(composed)
        for table in families:
            assert all(composed[k] is v for k, v in table.items())


def test_a_target_written_in_two_families_is_refused():
    def first(imp, node, x):
        return x

    def second(imp, node, x):
        return x

    assert converters.compose([("a", {torch.relu: first}), ("b", {torch.exp: second})]) == {
        torch.relu: first,
        torch.exp: second,
    }
    with pytest.raises(RuntimeError, match=r"converter in both a and b; write it in one family"):
        converters.compose([("a", {torch.relu: first}), ("b", {torch.relu: second})])


# A model touching every family: core (linear, a splat operand), math, reduce, shape (split,
# getitem, size), layout (roll), nn (conv, pool); and an ATen graph: aliases, a mutation
# (setitem on a folded tensor), a multi-result overload picked by getitem.
IMPORT_SCRIPT = textwrap.dedent(
    """
    import importlib, operator, sys
    importlib.import_module(sys.argv[1])
    import torch
    import torch.nn.functional as F
    from torch import fx, nn

    from irc.frontend.converters import FUNCTIONS, METHODS, MODULES
    from irc.frontend.fx_importer import import_fx

    torch.manual_seed(0)


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin, self.ln = nn.Linear(8, 8), nn.LayerNorm(8)
            self.conv = nn.Conv2d(2, 2, 3, padding=1)

        def forward(self, x, img):
            y = self.lin(x) + torch.zeros_like(x)
            y = torch.exp(y).clamp(0, 3)
            y = F.softmax(self.ln(y), dim=-1)
            a, b = y.split(4, dim=1)
            y = torch.roll(torch.cat([b, a], 1), 1, 1)
            z = F.max_pool2d(self.conv(img), 2)
            return y * y.size(0), z.flatten(1)


    g = fx.Graph()
    x = g.placeholder("x")
    aten = torch.ops.aten
    s = g.call_function(aten.add.Tensor, (g.call_function(aten.relu.default, (x,)), x), {"alpha": 2})
    mask = g.call_method("new_zeros", (x, (4, 8)))
    g.call_function(operator.setitem, (mask, (slice(None), 0), 1.0))
    s = g.call_function(aten.add.Tensor, (s, mask))
    ln = g.call_function(aten.native_layer_norm.default, (s, [8], None, None, 1e-5))
    g.output(g.call_function(operator.getitem, (ln, 0)))

    print(import_fx(fx.symbolic_trace(Model().eval()), (torch.randn(4, 8), torch.randn(1, 2, 6, 6))).module)
    print(import_fx(fx.GraphModule(nn.Module(), g), (torch.randn(4, 8),)).module)


    def name(obj):
        return f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', None) or getattr(obj, '__name__', obj)}"


    for table in (FUNCTIONS, METHODS, MODULES):
        print(sorted((str(k) if isinstance(k, str) else name(k), name(v)) for k, v in table.items()))
    """
)


def test_import_order_does_not_change_the_ir():
    """In fresh processes, importing any front-end module first gives the tables and IR that
    `import irc` first does (main: importing convert_shape first was a circular ImportError)."""
    firsts = ["irc", *frontend_modules()]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    runs = {
        first: subprocess.Popen(
            [sys.executable, "-c", IMPORT_SCRIPT, first], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        for first in firsts
    }
    results = {first: run.communicate(timeout=600) + (run.returncode,) for first, run in runs.items()}
    out, err, rc = results["irc"]
    assert rc == 0, err
    assert "irt.linear" in out and "irt.softmax" in out and "irt.conv2d" in out and "irt.layer_norm" in out
    for first, (got, err, rc) in results.items():
        assert rc == 0, f"importing {first} first: {err}"
        assert got == out, f"importing {first} first changes the import"

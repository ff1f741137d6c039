"""No module's behaviour depends on what was imported first, and no module-level import cycles.

The op tables (`irc.lowering.to_loops.table.LOWERINGS`, `irc.dialects.irt.semantics`,
`irc.dialects.irt.costs`, the front end's `converters`) are explicit values and no pass reads
the environment, so whichever module of the package (`irc`, `irc.dialects`, `irc.lowering`,
`irc.runtime`) a program imports first, it compiles the same C++.
"""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import irc
import irc.dialects
import irc.lowering
import irc.runtime

PACKAGES = (irc, irc.dialects, irc.lowering, irc.runtime)
"""irc's own directory, and the three installed from dialects/, lowering/ and runtime/."""


def _modules() -> dict[str, Path]:
    """Every module of the package -> its file."""
    found = {}
    for pkg in PACKAGES:
        root = Path(pkg.__path__[0])
        found[pkg.__name__] = root / "__init__.py"
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            rel = Path(*info.name.split(".")[pkg.__name__.count(".") + 1 :])
            path = root / rel / "__init__.py" if info.ispkg else (root / rel).with_suffix(".py")
            if path.exists():  # walk_packages also lists the mapped packages under irc/
                found.setdefault(info.name, path)
    return found


# ---------------------------------------------------------------------------------------------
# (1) import order: a fresh interpreter per module, importing it first, compiles the same C++
# ---------------------------------------------------------------------------------------------

DRIVER = r'''
import hashlib, importlib, json, multiprocessing, os, sys
import torch, torch.fx  # irc-independent and slow to import: shared by the forked interpreters
import xdsl.context, xdsl.parser, xdsl.passes, xdsl.pattern_rewriter, xdsl.printer, xdsl.rewriter
import xdsl.transforms.dead_code_elimination
import xdsl.dialects.arith, xdsl.dialects.builtin, xdsl.dialects.func, xdsl.dialects.math, xdsl.dialects.memref
import xdsl.dialects.scf

os.environ["IRC_PIPELINE_CACHE"] = "0"  # run every pass, never restore a cached result
assert not any(m == "irc" or m.startswith("irc.") for m in sys.modules)


def compile_first(module):
    if module:
        importlib.import_module(module)
    import irc
    from torch import nn
    import torch.nn.functional as F

    class Model(nn.Module):  # an MLP, conv + bn + relu + pools, attention + layer norm
        def __init__(self):
            super().__init__()
            self.mlp = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
            self.conv = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                      nn.MaxPool2d(2), nn.AdaptiveAvgPool2d(1), nn.Flatten())
            self.qkv = nn.Linear(16, 48)
            self.norm = nn.LayerNorm(16)

        def forward(self, x, img):
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            att = torch.softmax(q @ k.transpose(-2, -1) * 0.25, dim=-1) @ v
            return self.mlp(x), self.conv(img), self.norm(att + x).sum(-1)

    torch.manual_seed(0)
    model = Model().eval()
    with torch.no_grad():
        model.conv[1].running_mean.uniform_(-0.5, 0.5)
        model.conv[1].running_var.uniform_(0.5, 2.0)
    cm = irc.compile(model, (torch.randn(4, 16), torch.randn(1, 3, 8, 8)))
    return module, hashlib.sha256(cm.cpp_source.encode()).hexdigest()


if __name__ == "__main__":
    modules = [""] + json.loads(sys.argv[1])
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2, maxtasksperchild=1) as pool:  # a fresh fork (no irc module) per task
        print(json.dumps(dict(pool.map(compile_first, modules, chunksize=1))))
'''


def test_importing_any_module_first_compiles_the_same_cpp(tmp_path):
    modules = sorted(_modules())
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    run = subprocess.run([sys.executable, str(driver), json.dumps(modules)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    hashes = json.loads(run.stdout.strip().splitlines()[-1])
    baseline = hashes.pop("")
    differ = [m for m, h in hashes.items() if h != baseline]
    assert not differ, f"importing these modules before `irc` changes the compiled C++: {differ}"
    assert set(hashes) == set(modules)


# ---------------------------------------------------------------------------------------------
# (2) no import cycles among the modules of irc.dialects and irc.lowering (module level)
# ---------------------------------------------------------------------------------------------


def _module_level_imports(path: Path, name: str, is_pkg: bool, known: set[str]) -> set[str]:
    """The modules of `known` that `name` imports when it is executed (imports inside functions
    and `if TYPE_CHECKING:` blocks run later or never, and are not counted)."""
    tree = ast.parse(path.read_text())
    package = name if is_pkg else name.rpartition(".")[0]
    targets: set[str] = set()

    def visit(stmts):
        for node in stmts:
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parent = ".".join(parts[: len(parts) - node.level + 1])
                    base = f"{parent}.{base}" if base else parent
                targets.add(base)
                targets.update(f"{base}.{a.name}" for a in node.names)
            elif isinstance(node, ast.If):
                test = ast.unparse(node.test)
                if "TYPE_CHECKING" not in test:
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, (ast.Try, ast.With)):
                visit(node.body)
                for h in getattr(node, "handlers", []):
                    visit(h.body)
                visit(getattr(node, "orelse", []))
                visit(getattr(node, "finalbody", []))

    visit(tree.body)
    return {t for t in targets if t in known and t != name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def strongconnect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return found


def test_no_import_cycles_in_the_package():
    modules = _modules()
    known = set(modules)
    graph = {
        name: _module_level_imports(path, name, path.name == "__init__.py", known) for name, path in modules.items()
    }
    assert _cycles(graph) == []


def test_cycle_check_sees_a_cycle():
    """The checker itself: a two-module cycle and a package importing its own module are told apart."""
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert _cycles({"p": {"p.m"}, "p.m": set()}) == []

"""The pipeline cache (irc/pipeline.py): a model compiled before skips the passes, and still
folds the weights it has now."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

import irc
from irc.lowering.tensor.irc_fuse import IrcFusePass
from irc.lowering.to_loops.irc_to_loops import IrcToLoopsPass
from irc.pipeline import cpp_target, declared, pipeline_key
from irc.target import Target

FLAGS = ["-O1", "-fopenmp", "-std=c++17", "-shared", "-fPIC"]


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """A cache of this test's own: its first compile is cold."""
    root = tmp_path / "cache"
    monkeypatch.setenv("IRC_CACHE_DIR", str(root))
    return root


@pytest.fixture
def passes_run(monkeypatch) -> list[str]:
    """The names of the passes run, in order (irc-fuse and irc-to-loops stand for all)."""
    ran: list[str] = []
    for cls in (IrcFusePass, IrcToLoopsPass):
        apply = cls.apply

        def spy(self, ctx, op, _apply=apply):
            ran.append(self.name)
            _apply(self, ctx, op)

        monkeypatch.setattr(cls, "apply", spy)
    return ran


def convnet(seed: int) -> nn.Module:
    """conv + batch norm (folded into the conv's weights) + ReLU + linear (packed weights)."""
    torch.manual_seed(seed)
    m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 5))
    with torch.no_grad():
        m[1].running_mean.uniform_(-1, 1)
        m[1].running_var.uniform_(0.5, 2)
    return m.eval()


def test_a_warm_hit_runs_no_pass_and_folds_the_weights_it_has_now(cache, passes_run, monkeypatch):
    x = torch.randn(2, 3, 8, 8)
    first = convnet(0)
    cold = irc.compile(first, (x,), cxx_flags=FLAGS)
    assert passes_run == ["irc-fuse", "irc-to-loops"]
    assert "irc.fused" in cold.ir("fused") and "folded" in cold.ir("fused")  # BN folded, weights packed

    def refuse(self, ctx, op):
        raise AssertionError(f"{self.name} ran on a pipeline cache hit")

    monkeypatch.setattr(IrcFusePass, "apply", refuse)
    monkeypatch.setattr(IrcToLoopsPass, "apply", refuse)
    second = convnet(1)  # same architecture, other weights and batch-norm statistics
    warm = irc.compile(second, (x,), cxx_flags=FLAGS)
    torch.testing.assert_close(warm(x), second(x))
    torch.testing.assert_close(cold(x), first(x))
    for level in ("import", "fused", "loops"):
        assert warm.ir(level) == cold.ir(level)
    assert warm.cpp_source == cold.cpp_source and warm.library_path == cold.library_path
    assert warm.memory_stats() == cold.memory_stats()
    with torch.no_grad():  # updated in place after the hit: folded again before the next call
        second[1].running_var.mul_(3)
        second[4].weight.mul_(-2)
    torch.testing.assert_close(warm(x), second(x))


def _entry(cache: Path) -> Path:
    (path,) = cache.glob("*/*.pipeline")
    return path


def _resealed(edit):
    def damage(data: bytes) -> bytes:
        entry = json.loads(data.partition(b"\n")[2])
        payload = json.dumps(edit(entry)).encode()
        return hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload

    return damage


DAMAGE = {
    "truncated": lambda data: data[: len(data) // 2],
    "one byte flipped": lambda data: data[:-10] + bytes([data[-10] ^ 1]) + data[-9:],
    "empty": lambda data: b"",
    "not json": lambda data: hashlib.sha256(b"{oops").hexdigest().encode() + b"\n{oops",
    "a field missing": _resealed(lambda e: {k: v for k, v in e.items() if k != "cpp"}),
    "a fold naming a parameter the graph lacks": _resealed(lambda e: {**e, "fold": {**e["fold"], "kept": [99]}}),
    "folded shapes that do not fit": _resealed(lambda e: {**e, "fold": {**e["fold"], "params": [[1]]}}),
}


def test_a_damaged_entry_is_a_miss_and_is_written_again(cache, passes_run):
    x = torch.randn(1, 3, 8, 8)
    model = convnet(2)
    irc.compile(model, (x,), cxx_flags=FLAGS)
    good = _entry(cache).read_bytes()
    for name, damage in DAMAGE.items():
        _entry(cache).write_bytes(damage(good))
        passes_run.clear()
        cm = irc.compile(model, (x,), cxx_flags=FLAGS)
        assert passes_run == ["irc-fuse", "irc-to-loops"], name  # a miss: compiled afresh
        torch.testing.assert_close(cm(x), model(x))
        assert _entry(cache).read_bytes() == good, name  # and the entry is whole again
        passes_run.clear()
        irc.compile(model, (x,), cxx_flags=FLAGS)
        assert passes_run == [], name


def test_a_dump_of_a_hit_says_so_and_holds_every_level(cache, tmp_path):
    x = torch.randn(3, 3, 8, 8)
    irc.compile(convnet(3), (x,), cxx_flags=FLAGS)
    dumps = tmp_path / "dumps"
    cm = irc.compile(convnet(3), (x,), cxx_flags=FLAGS, dump_dir=dumps)
    (run,) = dumps.iterdir()
    files = {p.name[3:]: p.read_text() for p in run.iterdir()}
    assert sorted(files) == sorted([
        "fx-graph.py", "import.mlir", "pipeline-cache-hit.txt", "before-folding.mlir",
        "fold-function.mlir", "irc-fold-params.mlir", "loops.mlir", "model.cpp", "build.log",
    ])
    assert "did not run" in files["pipeline-cache-hit.txt"]
    assert files["import.mlir"] == cm.ir("import") and files["irc-fold-params.mlir"] == cm.ir("fused")
    assert "irc.compile_time" in files["fold-function.mlir"] and "irt.pack" in files["fold-function.mlir"]
    assert files["loops.mlir"] == cm.ir("loops") and files["model.cpp"] == cm.cpp_source
    assert "irt.pack" in files["before-folding.mlir"] and "irt.pack" not in cm.ir("fused")


def _key(text: str, target: Target, *, fuse: bool = True, profile: bool = False, cxx_flags=None) -> str:
    return pipeline_key(text, declared(target, inputs=1, fuse=fuse, profile=profile),
                        cpp_target(target, profile=profile), cxx_flags=cxx_flags)


def test_the_key_covers_every_option_that_changes_the_result(monkeypatch):
    text = 'func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {\n  func.return %x : tensor<2xf32>\n}'
    target = Target()
    key = _key(text, target)
    assert _key(text, target) == key
    variants = [
        _key(text.replace("2xf32", "3xf32"), target),
        _key(text, target, fuse=False),
        _key(text, target, profile=True),
        _key(text, target, cxx_flags=["-O1"]),
        *(_key(text, target.replace(**{name: value}))
          for name, value in (("strict", True), ("gemm_width", 32), ("gemm_rows", 12), ("matmul_rows", 14), ("omp_threshold", 1),
                              ("threads", 1), ("l2", 1 << 20))),
    ]
    monkeypatch.setenv("IRC_CXXFLAGS", "-O2")
    variants.append(_key(text, target))
    assert len({key, *variants}) == len(variants) + 1


def test_the_key_reads_no_environment_but_through_the_target(monkeypatch):
    """The passes read no IRC_* variable: with the Target fixed, they change nothing; through
    Target.host() they do."""
    text = 'func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {\n  func.return %x : tensor<2xf32>\n}'
    for name in ("IRC_STRICT", "IRC_GEMM_WIDTH", "IRC_GEMM_ROWS", "IRC_MATMUL_ROWS", "IRC_OMP_THRESHOLD", "IRC_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    key, host = _key(text, Target()), _key(text, Target.host())
    plain = Target.host()
    for name, value in (("IRC_STRICT", "1"), ("IRC_GEMM_WIDTH", "32" if plain.gemm_width == 16 else "16"),
                        ("IRC_GEMM_ROWS", "12" if plain.gemm_rows == 6 else "6"),
                        ("IRC_MATMUL_ROWS", "14" if plain.matmul_rows != 14 else "6"),
                        ("IRC_OMP_THRESHOLD", str(plain.omp_threshold + 7)), ("IRC_NUM_THREADS", str(plain.threads + 1))):
        monkeypatch.setenv(name, value)
        assert _key(text, Target()) == key, name
        assert _key(text, Target.host()) != host, name
        monkeypatch.delenv(name)


def test_importing_a_model_does_not_import_sympy():
    """torch's ShapeProp imports sympy (about a second per process) for fake tensors; irc's
    import must not pay it, or a cache hit in a new process costs more than a second."""
    code = (
        "import sys, torch; from torch import nn; from irc.api import trace; "
        "from irc.frontend.fx_importer import import_fx; "
        "m = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4), nn.ReLU()); "
        "import_fx(trace(m), (torch.randn(2, 4),)); "
        "print('sympy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_static_compile_does_not_import_sympy(tmp_path):
    """Nor does compiling a model of static shapes, every pass run (no cached pipeline): sympy is
    for symbolic sizes. irc-to-loops asked every function's sizes `isinstance(d, sympy.Symbol)`,
    which imported it (0.2-0.3 s per process: each irc-opt run of the goldens, every first
    compile), static sizes included."""
    code = (
        "import sys, torch; from torch import nn; import irc; "
        "m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(64, 4), nn.LayerNorm(4)); "
        "cm = irc.compile(m, (torch.randn(2, 3, 6, 6),)); "
        "print('sympy' in sys.modules)"
    )
    env = {**os.environ, "IRC_PIPELINE_CACHE": "0", "IRC_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out.strip() == "False"

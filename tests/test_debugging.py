"""Dumps, reproducers and explain: seeing what the compiler did."""

from __future__ import annotations

import re
import shlex

import pytest
import torch
from torch import nn

import irc
from irc.debugging import PassFailure
from irc.lowering.to_loops import irc_to_loops
from irc.tools.cli import main as irc_main
from irc.tools.irc_opt import main as irc_opt


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4), nn.Sigmoid()).eval()


def test_dump_dir_has_every_stage_numbered(tmp_path, monkeypatch):
    monkeypatch.setenv("IRC_PIPELINE_CACHE", "0")  # every pass runs (a hit dumps what it skipped)
    irc.compile(_mlp(), (torch.randn(2, 16),), dump_dir=tmp_path)
    (run,) = tmp_path.iterdir()
    names = sorted(p.name for p in run.iterdir())
    assert names == [
        "01-fx-graph.py", "02-import.mlir", "03-pipeline.sh", "04-irc-fuse.mlir", "05-irc-pack-weights.mlir",
        "06-fold-function.mlir", "07-irc-fold-params.mlir", "08-irc-to-loops.mlir", "09-irc-vectorize.mlir",
        "10-irc-plan-memory.mlir", "11-irc-parallelize.mlir", "12-model.cpp", "13-build.log",
    ]
    assert "irt.linear" in (run / "02-import.mlir").read_text()
    assert "irt.contract" in (run / "04-irc-fuse.mlir").read_text()
    assert "irc.compile_time" in (run / "06-fold-function.mlir").read_text()
    assert "irl.gemm" in (run / "08-irc-to-loops.mlir").read_text()
    assert "%arena" in (run / "10-irc-plan-memory.mlir").read_text()
    assert 'extern "C"' in (run / "12-model.cpp").read_text()


def test_dumped_pipeline_reproduces_the_compile(tmp_path, monkeypatch):
    """03-pipeline.sh is the irc-opt command of the whole compile: run on the dumped import, it
    prints the C++ irc.compile built."""
    monkeypatch.setenv("IRC_PIPELINE_CACHE", "0")
    cm = irc.compile(_mlp(), (torch.randn(2, 16),), dump_dir=tmp_path)
    (run,) = tmp_path.iterdir()
    command = (run / "03-pipeline.sh").read_text().splitlines()[-1]
    assert command.startswith("irc-opt import.mlir -p 'irc-fuse")
    args = shlex.split(command)[2:]
    out = tmp_path / "out.cpp"
    irc_opt([str(run / "02-import.mlir"), *args, "-o", str(out)])
    assert out.read_text() == cm.cpp_source


def test_irc_dump_dir_environment_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("IRC_DUMP_DIR", str(tmp_path))
    monkeypatch.setenv("IRC_PIPELINE_CACHE", "0")
    irc.compile(_mlp(), (torch.randn(1, 16),), fuse=False)
    (run,) = tmp_path.iterdir()
    assert (run / "04-irc-pack-weights.mlir").exists()  # no irc-fuse stage without fusion


def test_failing_pass_leaves_a_reproducer_that_fails_the_same_way(tmp_path, monkeypatch, capsys):
    monkeypatch.delitem(irc_to_loops.LOWERINGS, irc_to_loops.irt.ElementwiseOp)  # a broken compiler
    monkeypatch.setenv("IRC_PIPELINE_CACHE", "0")  # which the pipeline cache does not know about
    with pytest.raises(PassFailure) as err:
        irc.compile(_mlp(), (torch.randn(2, 16),), fuse=False, dump_dir=tmp_path)
    e = err.value
    assert e.stage == "irc-to-loops" and e.command.startswith("irc-opt -p 'irc-to-loops{tag_ops=false gemm_width=")
    assert "irt.relu" in e.reproducer.read_text() and str(e.reproducer) in str(e)
    with pytest.raises(SystemExit) as code:
        irc_opt(shlex.split(e.command)[1:])
    assert code.value.code == 1
    assert "no lowering for irt.relu" in capsys.readouterr().err


def test_explain_reports_fusions_and_traffic():
    report = irc.compile(_mlp(), (torch.randn(2, 16),)).explain()
    assert "irt.linear + irt.relu -> one irt.contract" in report
    assert "irt.linear + irt.sigmoid -> one irt.contract" in report
    assert re.search(r"Intermediate traffic: .* removed per forward", report)
    # fused: the two linear+activation kernels, one 2x8 intermediate between them
    assert "Intermediate buffers: 64 B in one arena per calling thread, allocated once (1 buffer, 64 B without reuse" in report


def test_explain_profile_times_every_kernel_and_draws_the_roofline(tmp_path, monkeypatch):
    monkeypatch.setenv("IRC_PEAK_GFLOPS", "100")
    monkeypatch.setenv("IRC_BANDWIDTH_GBS", "20")
    report = irc.compile(_mlp(), (torch.randn(2, 16),)).explain(profile=True, runs=5, roofline_png=tmp_path / "r.png")
    rows = [line for line in report.splitlines() if re.match(r"\s+\d+\s+irt\.", line)]
    assert len(rows) == 2 and all(re.search(r"\d+\.\dus\s+[\d.]+\s+[\d.]+%", r) for r in rows), report
    assert (tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"


def test_irc_explain_command(capsys):
    assert irc_main(["explain", "mlp-small"]) == 0
    assert "irt.linear + irt.relu -> one irt.contract" in capsys.readouterr().out


class _Positions(nn.Module):
    """A buffer sliced at the input's length (a language model's position ids): a kernel when the
    length is symbolic, folded into a constant in a build for one length."""

    def __init__(self):
        super().__init__()
        self.register_buffer("pos", torch.arange(32))
        self.emb = nn.Embedding(32, 16)
        self.lin = nn.Linear(16, 16)

    def forward(self, x):
        return torch.relu(self.lin(x + self.emb(self.pos.narrow(0, 0, x.shape[1]))))


def test_explain_profile_of_symbolic_sizes_times_the_symbolic_kernels(monkeypatch):
    """The profiled build is the symbolic one the report lists: a build for the example's sizes
    alone folds the position slice and its embedding, and its kernel indices then named other
    kernels of the list (times under the wrong rows, '?' for the rest)."""
    monkeypatch.setenv("IRC_PEAK_GFLOPS", "100")
    monkeypatch.setenv("IRC_BANDWIDTH_GBS", "20")
    x = torch.randn(1, 20, 16)
    cm = irc.compile(_Positions(), (x,), dynamic_shapes={"x": {1: torch.export.Dim("L", min=2, max=32)}})
    report = cm.explain(profile=True, runs=5)
    rows = [line for line in report.splitlines() if re.match(r"\s+\d+\s+irt\.", line)]
    assert any("irt.slice" in r for r in rows) and any("irt.embedding" in r for r in rows), report
    assert all(re.search(r"\d+\.\dus", r) for r in rows), report

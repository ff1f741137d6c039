"""Tests of `irc bench`: its files, its table, its raw numbers and its verdicts.

Each test runs the real command in-process on mlp-small with a tiny timing budget and
without Inductor (its compile costs seconds); no test asserts anything about speed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import pytest
import torch

import irc
from irc.tools.bench import thread_list
from irc.tools.bench_report import (
    BENCH_JSON,
    BENCH_MD,
    BENCH_PNG,
    COMPARED,
    CONTENDERS,
    EAGER,
    IRC,
    ORT,
    BenchRow,
    check_cell,
    notes,
    summary_rows,
)
from irc.tools.cli import main
from irc.tools.verify import Timing

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FAST = ["bench", "--models", "mlp-small", "--budget", "0.2", "--min-repeats", "3", "--no-inductor"]


def bench(tmp_path, *extra: str) -> tuple[int, dict, str]:
    """Run `irc bench FAST... extra` into tmp_path; (exit code, bench.json, bench.md)."""
    code = main([*FAST, "--out", str(tmp_path), *extra])
    return code, json.loads((tmp_path / BENCH_JSON).read_text()), (tmp_path / BENCH_MD).read_text()


def table_header(markdown: str) -> list[str]:
    """The column names of the first markdown table in `markdown`."""
    line = next(line for line in markdown.splitlines() if line.startswith("| model |"))
    return [c.strip() for c in line.strip("|").split("|")]


def without_onnxruntime(monkeypatch) -> None:
    """Make `import onnxruntime` raise ImportError, as on a machine without the `bench` extra."""
    monkeypatch.setitem(sys.modules, "onnxruntime", None)


def test_bench_writes_table_json_and_plot(tmp_path, monkeypatch, capsys):
    without_onnxruntime(monkeypatch)
    code, data, md = bench(tmp_path, "--threads", "1,2")
    assert code == 0
    assert (tmp_path / BENCH_PNG).read_bytes()[:8] == PNG_MAGIC
    header = table_header(md)
    for column in ["model", "threads", "GFLOP", "eager ms", "irc ms", "irc / eager", "inductor / eager",
                   "onnxruntime / eager", "irc GFLOP/s", "irc compile s cold", "irc compile s warm", "check"]:
        assert column in header
    assert "lower is better" in md and "load average" in md
    assert data["command"] == "irc bench --models mlp-small --threads 1,2 --budget 0.2 --min-repeats 3 " \
                              "--no-inductor"
    assert all(len(data["load_average"][k]) == 3 for k in ("start", "end"))
    assert [(r["model"], r["threads"]) for r in data["results"]] == [("mlp-small", 1), ("mlp-small", 2)]
    for result in data["results"]:
        assert result["flops"] == 2 * (784 * 128 + 128 * 10)
        assert result["irc_compiler_runs"] == {"irc-cold": 1, "irc-warm": 0}  # cold really was cold
        assert result["compile_seconds"]["irc-cold"] > 0 and result["compile_seconds"]["irc-warm"] > 0
        for name in (EAGER, IRC):
            c = result["contenders"][name]
            t = c["timing"]
            assert c["status"] == "ok" and c["error"] is None
            assert 0 < t["p10"] <= t["median"] <= t["p90"] and t["samples"] >= 3
            assert c["gflops"] == pytest.approx(result["flops"] / t["median"] / 1e9)
        ratio = result["contenders"][IRC]["ratio_to_eager"]
        assert ratio == pytest.approx(result["contenders"][IRC]["timing"]["median"]
                                      / result["contenders"][EAGER]["timing"]["median"])
        assert result["contenders"]["inductor"]["status"] == "skipped (--no-inductor)"
    out = capsys.readouterr().out
    assert "| mlp-small | 1 |" in out and "| mlp-small | 2 |" in out
    assert "load average at start" in out and "load average at end" in out


def test_threads_are_set_and_restored(tmp_path, monkeypatch):
    """Every contender runs at the requested count; the caller's count comes back afterwards."""
    without_onnxruntime(monkeypatch)
    seen = []
    real = irc.compile

    def spy(model, inputs, **kw):
        cm = real(model, inputs, **kw)

        def call(*x):
            seen.append((torch.get_num_threads(), os.environ["IRC_NUM_THREADS"]))
            return cm(*x)

        return call

    monkeypatch.setattr(irc, "compile", spy)
    before = torch.get_num_threads()
    assert bench(tmp_path, "--threads", "1")[0] == 0
    assert set(seen) == {(1, "1")}
    assert torch.get_num_threads() == before


def test_wrong_irc_output_fails_and_is_marked(tmp_path, monkeypatch):
    without_onnxruntime(monkeypatch)
    real = irc.compile

    def off_by_one(model, inputs, **kw):
        cm = real(model, inputs, **kw)
        return lambda *x: cm(*x) + 1

    monkeypatch.setattr(irc, "compile", off_by_one)
    code, data, md = bench(tmp_path)
    assert code == 1
    result = data["results"][0]["contenders"][IRC]
    assert result["status"] == "WRONG" and "Mismatched elements" in result["error"]
    assert result["timing"] is not None  # a wrong contender is still timed
    assert "irc WRONG" in md and "WRONG" in md.split("## Notes")[1]


def test_irc_compile_failure_fails(tmp_path, monkeypatch):
    without_onnxruntime(monkeypatch)

    def broken(model, inputs, **kw):
        raise RuntimeError("no kernel for you")

    monkeypatch.setattr(irc, "compile", broken)
    code, data, _ = bench(tmp_path)
    assert code == 1
    result = data["results"][0]["contenders"][IRC]
    assert result["timing"] is None and "no kernel for you" in result["error"]


def test_missing_onnxruntime_is_na(tmp_path, monkeypatch):
    without_onnxruntime(monkeypatch)
    code, data, md = bench(tmp_path)
    assert code == 0
    assert data["onnxruntime"] is None
    ort = data["results"][0]["contenders"][ORT]
    assert ort["timing"] is None and ort["status"].startswith("n/a: not installed")
    assert "irc[bench]" in ort["status"]
    assert "| n/a |" in md


def test_onnx_export_failure_is_na(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")

    def broken_export(*args, **kwargs):
        raise RuntimeError("exporter says no")

    monkeypatch.setattr(torch.onnx, "export", broken_export)
    code, data, _ = bench(tmp_path)
    assert code == 0
    status = data["results"][0]["contenders"][ORT]["status"]
    assert status == "n/a: ONNX export failed: RuntimeError: exporter says no"


def test_onnxruntime_is_checked_and_timed(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    code, data, _ = bench(tmp_path, "--threads", "1")
    assert code == 0
    result = data["results"][0]
    ort = result["contenders"][ORT]
    assert ort["status"] == "ok", ort
    assert ort["timing"]["p10"] <= ort["timing"]["median"] <= ort["timing"]["p90"]
    assert result["compile_seconds"]["onnx-export"] > 0


# --- the table on its own ----------------------------------------------------------------


def _row(**medians: float) -> BenchRow:
    row = BenchRow("m", "a model", flops=2_000_000, threads=2)
    row.timings = {c: Timing(t, t * 0.9, t * 1.1, 5, 1) for c, t in medians.items()}
    for c in medians:
        if c != EAGER:
            row.checks[c] = None
    return row


def test_ratio_is_latency_over_eager():
    row = _row(eager=2e-3, irc=1e-3, onnxruntime=4e-3)
    assert row.ratio(IRC) == pytest.approx(0.5) and row.ratio(ORT) == pytest.approx(2.0)
    assert row.ratio("inductor") is None
    header, [cells] = summary_rows([row])
    table = dict(zip(header, cells))
    assert table["irc / eager"] == "0.50" and table["onnxruntime / eager"] == "2.00"
    assert table["inductor / eager"] == "n/a" and table["irc GFLOP/s"] == "2"
    assert len(header) == len(cells) and all(f"{c} ms" in header for c in CONTENDERS)


def test_wrong_peer_is_marked_but_not_irc_failure():
    row = _row(eager=2e-3, irc=1e-3, onnxruntime=4e-3)
    row.checks[ORT] = "AssertionError: Tensor-likes are not close!"
    assert row.irc_ok and row.wrong(ORT) and not row.wrong(IRC)
    assert check_cell(row) == "onnxruntime WRONG"
    header, [cells] = summary_rows([row])
    assert dict(zip(header, cells))["onnxruntime / eager"] == "2.00 WRONG"
    assert notes([row]) == ["m / onnxruntime: WRONG\nAssertionError: Tensor-likes are not close!"]
    assert set(COMPARED) == {IRC, "inductor", ORT}


@pytest.mark.parametrize("text, expected", [("2", [2]), ("1,2", [1, 2]), ("2,2,1", [2, 1])])
def test_thread_list(text, expected):
    assert thread_list(text) == expected


@pytest.mark.parametrize("text", ["0", "x", "", "1,-2"])
def test_thread_list_rejects(text):
    with pytest.raises(argparse.ArgumentTypeError):
        thread_list(text)


def test_unknown_model_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--models", "nope", "--out", str(tmp_path)])
    assert exc.value.code == 2
    assert "unknown model(s) 'nope'" in capsys.readouterr().err
    assert not (tmp_path / BENCH_JSON).exists()

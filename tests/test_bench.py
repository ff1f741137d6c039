"""Tests of `irc bench`: its files, its table, its raw numbers and its verdicts.

Each test runs the real command in-process on mlp-small with a tiny timing budget and
without Inductor (its compile costs seconds); no test asserts anything about speed. The FMA
peak is IRC_PEAK_GFLOPS=100 (measuring it takes a second per thread count) except where its
measurement is the test. ONNX Runtime and OpenVINO run only in the tests about them (and are
skipped where the `bench` extra is not installed, as in CI).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from types import SimpleNamespace

import pytest
import torch

import irc
from irc.models import get_model
from irc.target import Target
from irc.tools import bench as bench_module
from irc.tools.bench import thread_list
from irc.tools.bench_report import (
    BENCH_JSON,
    BENCH_MD,
    BENCH_PNG,
    COMPARED,
    CONTENDERS,
    EAGER,
    INDUCTOR,
    IRC,
    OPENVINO,
    ORT,
    BenchRow,
    check_cell,
    detail_rows,
    fmt_share,
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


@pytest.fixture(autouse=True)
def known_peak(monkeypatch):
    """A known FMA peak of 100 GFLOP/s at every thread count instead of measuring it."""
    monkeypatch.setenv("IRC_PEAK_GFLOPS", "100")


def without_onnxruntime(monkeypatch) -> None:
    """Make `import onnxruntime` and `import openvino` raise ImportError, as on a machine without
    the `bench` extra."""
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    monkeypatch.setitem(sys.modules, "openvino", None)


def test_bench_writes_table_json_and_plot(tmp_path, monkeypatch, capsys):
    without_onnxruntime(monkeypatch)
    code, data, md = bench(tmp_path, "--threads", "1,2")
    assert code == 0
    assert (tmp_path / BENCH_PNG).read_bytes()[:8] == PNG_MAGIC
    header = table_header(md)
    for column in ["model", "threads", "GFLOP", "eager ms", "irc ms", "openvino ms", "irc / eager",
                   "inductor / eager", "onnxruntime / eager", "openvino / eager", "irc / best peer", "best peer",
                   "irc GFLOP/s", "irc % of peak", "peak GFLOP/s", "irc compile s cold", "irc compile s warm",
                   "check"]:
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
            assert c["peak_share"] == pytest.approx(c["gflops"] / 100)
        assert result["peak_gflops"] == 100
        # eager is the only peer timed here
        assert result["best_peer"]["contender"] == EAGER
        assert result["best_peer"]["irc_ratio"] == pytest.approx(result["contenders"][IRC]["ratio_to_eager"])
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
    monkeypatch.setitem(sys.modules, "openvino", None)

    def broken_export(*args, **kwargs):
        raise RuntimeError("exporter says no")

    monkeypatch.setattr(torch.onnx, "export", broken_export)
    code, data, _ = bench(tmp_path)
    assert code == 0
    status = data["results"][0]["contenders"][ORT]["status"]
    assert status == "n/a: ONNX export failed: RuntimeError: exporter says no"


def test_missing_openvino_is_na(tmp_path, monkeypatch):
    """Without openvino (as in CI: `.[dev]` only) its contender is n/a with the reason."""
    without_onnxruntime(monkeypatch)
    code, data, md = bench(tmp_path)
    assert code == 0
    assert data["openvino"] is None and "openvino not installed" in md
    ov = data["results"][0]["contenders"][OPENVINO]
    assert ov["timing"] is None and ov["status"].startswith("n/a: not installed") and "irc[bench]" in ov["status"]
    assert "openvino-convert" not in data["results"][0]["compile_seconds"]


def test_no_openvino_flag_skips_it(tmp_path, monkeypatch):
    without_onnxruntime(monkeypatch)
    code, data, _ = bench(tmp_path, "--no-openvino")
    assert code == 0
    assert data["command"].endswith("--no-inductor --no-openvino")
    assert data["results"][0]["contenders"][OPENVINO]["status"] == "skipped (--no-openvino)"


def test_openvino_conversion_failure_is_na(tmp_path, monkeypatch):
    without_onnxruntime(monkeypatch)
    monkeypatch.setattr(bench_module, "import_openvino", lambda: SimpleNamespace(__version__="2099.0"))

    def broken(ov, model, inputs):
        raise RuntimeError("frontend says no")

    monkeypatch.setattr(bench_module, "convert_openvino", broken)
    code, data, _ = bench(tmp_path)
    assert code == 0
    status = data["results"][0]["contenders"][OPENVINO]["status"]
    assert status == "n/a: OpenVINO conversion failed: RuntimeError: frontend says no"


def _openvino_runner(threads: int = 1):
    """(runner, model, inputs) for mlp-small under OpenVINO at `threads`."""
    ov = pytest.importorskip("openvino")
    model, inputs = get_model("mlp-small").build()
    converted = bench_module.convert_openvino(ov, model, inputs)
    return bench_module.openvino_runner(ov, converted, inputs, threads), model, inputs


def test_openvino_binds_its_inputs_once_sharing_torch_memory():
    run, model, (x,) = _openvino_runner()
    bound = run.request.get_input_tensor(0)
    assert bound.data.ctypes.data == x.data_ptr()  # no copy: OpenVINO reads the torch tensor
    with torch.no_grad():
        torch.testing.assert_close(run(), model(x))
        x.mul_(-2)  # the same memory, new values: the bound tensor sees them without rebinding
        torch.testing.assert_close(run(), model(x))
    assert run.request.get_input_tensor(0).data.ctypes.data == x.data_ptr()


def test_openvino_is_compiled_f32_latency_at_the_row_thread_count():
    run, _, _ = _openvino_runner(threads=2)
    compiled = run.request.get_compiled_model()
    assert str(compiled.get_property("INFERENCE_PRECISION_HINT")) == "<Type: 'float32'>"
    assert str(compiled.get_property("PERFORMANCE_HINT")) == "LATENCY"
    assert compiled.get_property("INFERENCE_NUM_THREADS") == 2
    assert compiled.get_property("NUM_STREAMS") == 1 and compiled.get_property("ENABLE_CPU_PINNING") is False


def test_openvino_is_checked_and_timed(tmp_path, monkeypatch):
    pytest.importorskip("openvino")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    code, data, _ = bench(tmp_path, "--threads", "1")
    assert code == 0
    result = data["results"][0]
    ov = result["contenders"][OPENVINO]
    assert ov["status"] == "ok", ov
    assert ov["timing"]["p10"] <= ov["timing"]["median"] <= ov["timing"]["p90"]
    assert ov["peak_share"] == pytest.approx(ov["gflops"] / 100)
    assert result["compile_seconds"]["openvino-convert"] > 0 and result["compile_seconds"]["openvino-compile"] > 0
    assert data["openvino"].startswith("20")


def test_wrong_openvino_is_marked(tmp_path, monkeypatch):
    pytest.importorskip("openvino")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    real = bench_module.openvino_runner

    def off(*args, **kwargs):
        run = real(*args, **kwargs)
        return lambda: run() + 1

    monkeypatch.setattr(bench_module, "openvino_runner", off)
    code, data, md = bench(tmp_path, "--threads", "1")
    assert code == 0  # a wrong peer is not irc's failure
    ov = data["results"][0]["contenders"][OPENVINO]
    assert ov["status"] == "WRONG" and "Mismatched elements" in ov["error"] and ov["timing"] is not None
    assert "openvino WRONG" in md
    assert data["results"][0]["best_peer"]["contender"] != OPENVINO  # a wrong peer is no bar


def test_peak_is_measured_once_per_thread_count_at_the_target_width(tmp_path, monkeypatch):
    without_onnxruntime(monkeypatch)
    calls = []

    def fake_peak(threads, lanes):
        calls.append((threads, lanes))
        return 10.0 * threads

    monkeypatch.setattr(bench_module, "peak_gflops", fake_peak)
    code, data, md = bench(tmp_path, "--threads", "1,2")
    assert code == 0
    width = Target.host().vector_width
    assert calls == [(1, width), (2, width)]
    assert data["peak_gflops"] == {"1": 10.0, "2": 20.0}
    for result in data["results"]:
        irc_result = result["contenders"][IRC]
        assert result["peak_gflops"] == 10.0 * result["threads"]
        assert irc_result["peak_share"] == pytest.approx(irc_result["gflops"] / (10.0 * result["threads"]))


def test_a_peak_measured_on_shared_cores_is_flagged(tmp_path, monkeypatch):
    without_onnxruntime(monkeypatch)
    monkeypatch.setattr(bench_module, "peak_gflops", lambda threads, lanes: {1: 100.0, 2: 120.0}[threads])
    code, data, md = bench(tmp_path, "--threads", "1,2")
    assert code == 0
    [warning] = [w for w in data["warnings"] if "FMA peak" in w]
    assert warning.startswith("the FMA peak at 2 threads is 120 GFLOP/s, 60% per thread") and warning in md
    assert bench_module.peak_warnings({1: 100.0, 2: 190.0, 4: None}) == []


def test_peak_probe_is_built_at_the_requested_width(monkeypatch):
    from irc.tools import roofline

    monkeypatch.delenv("IRC_PEAK_GFLOPS")
    for lanes in (8, 16):
        assert roofline._library(lanes).irc_peak_lanes() == lanes
    assert roofline.peak_gflops(1, 8) > 0
    with pytest.raises(ValueError, match="lanes must be 4, 8 or 16"):
        roofline.peak_gflops(1, 12)


def test_onnxruntime_is_checked_and_timed(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    monkeypatch.setitem(sys.modules, "openvino", None)
    code, data, _ = bench(tmp_path, "--threads", "1")
    assert code == 0
    result = data["results"][0]
    ort = result["contenders"][ORT]
    assert ort["status"] == "ok", ort
    assert ort["timing"]["p10"] <= ort["timing"]["median"] <= ort["timing"]["p90"]
    assert result["compile_seconds"]["onnx-export"] > 0


# --- the table on its own ----------------------------------------------------------------


def _row(peak: float | None = None, **medians: float) -> BenchRow:
    row = BenchRow("m", "a model", flops=2_000_000, threads=2, peak_gflops=peak)
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
    assert set(COMPARED) == {IRC, "inductor", ORT, OPENVINO}


def test_peak_share_is_gflops_over_the_peak():
    row = _row(peak=10.0, eager=2e-3, irc=1e-3, openvino=4e-3)  # 2 MFLOP: irc 2 GFLOP/s, openvino 0.5
    assert row.peak_share(IRC) == pytest.approx(0.2) and row.peak_share(OPENVINO) == pytest.approx(0.05)
    assert row.peak_share(INDUCTOR) is None  # no timing
    header, [cells] = summary_rows([row])
    table = dict(zip(header, cells))
    assert table["irc % of peak"] == "20%" and table["peak GFLOP/s"] == "10"
    spread = {r[2]: dict(zip(detail_rows([row])[0], r)) for r in detail_rows([row])[1]}
    assert spread[OPENVINO]["% of peak"] == "5%" and spread[EAGER]["% of peak"] == "10%"
    assert _row(eager=2e-3, irc=1e-3).peak_share(IRC) is None  # no peak measured
    no_flops = _row(peak=10.0, eager=2e-3, irc=1e-3)
    no_flops.flops = 0
    assert no_flops.peak_share(IRC) is None
    header, [cells] = summary_rows([no_flops])
    assert dict(zip(header, cells))["irc % of peak"] == "n/a"
    assert [fmt_share(s) for s in (0.2, 0.0041, 1.5, None)] == ["20%", "0.41%", "150%", "n/a"]


def test_best_peer_is_the_fastest_correct_other_contender():
    row = _row(eager=2e-3, irc=1e-3, inductor=1.5e-3, onnxruntime=4e-3, openvino=0.5e-3)
    assert row.best_peer() == OPENVINO and row.ratio_to_best_peer() == pytest.approx(2.0)
    header, [cells] = summary_rows([row])
    table = dict(zip(header, cells))
    assert table["irc / best peer"] == "2.00" and table["best peer"] == OPENVINO
    row.checks[OPENVINO] = "AssertionError: Tensor-likes are not close!"  # wrong: not a bar
    assert row.best_peer() == INDUCTOR and row.ratio_to_best_peer() == pytest.approx(1 / 1.5)
    only_eager = _row(eager=2e-3, irc=1e-3)
    assert only_eager.best_peer() == EAGER and only_eager.ratio_to_best_peer() == pytest.approx(0.5)
    no_irc = _row(eager=2e-3, inductor=1e-3)
    header, [cells] = summary_rows([no_irc])
    assert no_irc.ratio_to_best_peer() is None and dict(zip(header, cells))["irc / best peer"] == "n/a"
    assert dict(zip(header, cells))["best peer"] == INDUCTOR


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

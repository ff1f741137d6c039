"""Tests of `irc bench --lm` (the language-model section): its files, tables, raw numbers, verdicts.

One test compiles for real (irc on the tiny Llama at one prefill shape and one decode length,
without Inductor and ONNX Runtime); the others replace irc's contender with eager PyTorch (wrong
on purpose, or too slow), so they compile nothing. No test asserts anything about speed.
"""

from __future__ import annotations

import json
import sys
import time

import pytest

from irc.tools import bench_lm
from irc.tools.bench_lm_report import (
    DECODE,
    LM_JSON,
    LM_MD,
    LM_PNG,
    PREFILL,
    LMRow,
    LMSection,
    mark_slowdowns,
    section_rows,
    summary_rows,
)
from irc.tools.bench_report import EAGER, INDUCTOR, IRC, OPENVINO, ORT
from irc.tools.cli import main
from irc.tools.verify import Timing

pytest.importorskip("transformers")


@pytest.fixture(autouse=True)
def known_peak(monkeypatch):
    """A known FMA peak of 100 GFLOP/s at every thread count instead of measuring it."""
    monkeypatch.setenv("IRC_PEAK_GFLOPS", "100")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FAST = ["bench", "--lm", "--threads", "1", "--budget", "0.1", "--min-repeats", "3", "--no-inductor"]


def bench_lm_run(tmp_path, *extra: str) -> tuple[int, dict, str]:
    """Run `irc bench FAST... extra` into tmp_path; (exit code, bench-lm.json, bench-lm.md)."""
    code = main([*FAST, "--out", str(tmp_path), *extra])
    return code, json.loads((tmp_path / LM_JSON).read_text()), (tmp_path / LM_MD).read_text()


def table_header(markdown: str, first: str = "| model | threads | phase |") -> list[str]:
    line = next(line for line in markdown.splitlines() if line.startswith(first))
    return [c.strip() for c in line.strip("|").split("|")]


def eager_as_irc(monkeypatch, offset: float = 0.0, delay: float = 0.0) -> None:
    """irc's contender becomes the eager model (logits + `offset`, first call `delay` s slower)."""

    def make(model):
        calls = []

        def fn(**kwargs):
            if not calls and delay:
                time.sleep(delay)
            calls.append(1)
            out = model(**kwargs)
            out.logits = out.logits + offset
            return out

        return fn

    monkeypatch.setattr(bench_lm, "make_irc", make)


def test_lm_section_compiles_checks_and_reports(tmp_path, capsys):
    """The real thing on the smallest case: Llama prefill 1x8 and decode with a cache of 8."""
    code, data, md = bench_lm_run(tmp_path, "--lm-models", "llama", "--prefill", "1x8", "--decode", "8",
                                  "--no-onnxruntime", "--no-openvino")
    assert code == 0
    assert (tmp_path / LM_PNG).read_bytes()[:8] == PNG_MAGIC
    header = table_header(md)
    for column in ["shape", "eager ms", "irc ms", "inductor ms", "onnxruntime ms", "irc / eager",
                   "inductor / eager", "onnxruntime / eager", "irc native", "irc first call s", "noise", "target", "check"]:
        assert column in header
    assert "irc g++ runs" in table_header(md, "| model | threads | irc g++")
    assert "lower is better" in md and "load average" in md and "0.5x eager" in md
    assert data["command"] == ("irc bench --lm --lm-models llama --prefill 1x8 --decode 8 --threads 1 --budget 0.1 "
                               "--min-repeats 3 --no-inductor --no-onnxruntime --no-openvino")
    assert all(len(data["load_average"][k]) == 3 for k in ("start", "end")) and data["seconds"] > 0
    [section] = data["sections"]
    assert (section["model"], section["threads"]) == ("llama", 1)
    assert section["irc_compiler_runs"] >= 1 and section["irc_libraries"] >= 1  # a fresh cache: irc built
    assert [(r["phase"], r["shape"]) for r in section["rows"]] == [(PREFILL, "1x8"), (DECODE, "1x1 cache 8")]
    for row in section["rows"]:
        assert row["flops"] > 0 and row["irc_builds_while_timed"] == 0 and row["spread"] >= 1
        assert 0 <= row["irc_native"] <= 1 and row["compile_seconds"][IRC] > 0
        for name in (EAGER, IRC):
            c = row["contenders"][name]
            assert c["status"] == "ok" and c["error"] is None, c
            assert 0 < c["timing"]["p10"] <= c["timing"]["median"] <= c["timing"]["p90"]
        assert row["contenders"][IRC]["ratio_to_eager"] == pytest.approx(
            row["contenders"][IRC]["timing"]["median"] / row["contenders"][EAGER]["timing"]["median"])
        assert row["contenders"][INDUCTOR]["status"] == "skipped (--no-inductor)"
        assert row["contenders"][ORT]["status"] == "skipped (--no-onnxruntime)"
        assert row["contenders"][OPENVINO]["status"] == ("skipped (--no-openvino)" if row["phase"] == PREFILL
                                                         else bench_lm.OPENVINO_NO_DECODE)
        assert row["contenders"][IRC]["peak_share"] == pytest.approx(row["contenders"][IRC]["gflops"] / 100)
        assert row["target"].startswith("no:")  # without Inductor the target cannot be met
    assert set(section["targets"]) == {PREFILL, DECODE}
    out = capsys.readouterr().out
    assert "| llama | 1 | prefill | 1x8 |" in out and "| llama | 1 | decode | 1x1 cache 8 |" in out
    assert "load average at end" in out and "the section took" in out


def test_wrong_contender_is_flagged_and_fails(tmp_path, monkeypatch):
    """A contender whose logits are off is WRONG in the table, the json and the notes (and still
    timed); irc wrong is exit code 1. ONNX Runtime, exported for real, is right."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    eager_as_irc(monkeypatch, offset=1.0)
    code, data, md = bench_lm_run(tmp_path, "--lm-models", "bert", "--prefill", "1x8,2x5")
    assert code == 1
    [section] = data["sections"]
    assert [r["shape"] for r in section["rows"]] == ["1x8", "2x5"]  # BERT: prefill only
    for row in section["rows"]:
        irc = row["contenders"][IRC]
        assert irc["status"] == "WRONG" and "Mismatched elements" in irc["error"]
        assert irc["timing"] is not None  # a wrong contender is still timed
        assert row["target"].startswith("no: WRONG")
        ort = row["contenders"][ORT]
        assert ort["status"] == "ok" and ort["timing"] is not None, ort
        assert row["compile_seconds"]["onnx-export"] > 0
    assert "irc WRONG" in md and "WRONG" in md.split("## Notes")[1]


def test_openvino_runs_the_prefill_checked_against_eager(tmp_path, monkeypatch):
    """GPT-2's prefill (logits and the cache: five outputs) under OpenVINO is checked and timed at
    its static shape; the decode rows say why OpenVINO has none."""
    pytest.importorskip("openvino")
    eager_as_irc(monkeypatch)
    code, data, md = bench_lm_run(tmp_path, "--lm-models", "gpt2", "--prefill", "1x8,2x5", "--decode", "8",
                                  "--no-onnxruntime")
    assert code == 0
    [section] = data["sections"]
    prefill = [r for r in section["rows"] if r["phase"] == PREFILL]
    assert [r["shape"] for r in prefill] == ["1x8", "2x5"]
    for row in prefill:
        ov = row["contenders"][OPENVINO]
        assert ov["status"] == "ok" and ov["error"] is None, ov
        assert 0 < ov["timing"]["p10"] <= ov["timing"]["median"] <= ov["timing"]["p90"]
        assert row["compile_seconds"]["openvino-convert"] > 0 and row["compile_seconds"]["openvino-compile"] > 0
    [decode] = [r for r in section["rows"] if r["phase"] == DECODE]
    assert decode["contenders"][OPENVINO]["status"].startswith("n/a: prefill only")
    assert data["openvino"] and "openvino ms" in table_header(md)


def test_wrong_openvino_prefill_is_marked(tmp_path, monkeypatch):
    pytest.importorskip("openvino")
    eager_as_irc(monkeypatch)
    real = bench_lm.openvino_runner

    def off(*args, **kwargs):
        run = real(*args, **kwargs)
        return lambda: (run()[0] + 1,)

    monkeypatch.setattr(bench_lm, "openvino_runner", off)
    code, data, md = bench_lm_run(tmp_path, "--lm-models", "bert", "--prefill", "1x8", "--no-onnxruntime")
    assert code == 0  # a wrong peer is not irc's failure
    ov = data["sections"][0]["rows"][0]["contenders"][OPENVINO]
    assert ov["status"] == "WRONG" and "Mismatched elements" in ov["error"] and ov["timing"] is not None


def test_missing_openvino_is_na(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "openvino", None)
    eager_as_irc(monkeypatch)
    code, data, _ = bench_lm_run(tmp_path, "--lm-models", "bert", "--prefill", "1x8", "--no-onnxruntime")
    assert code == 0 and data["openvino"] is None
    status = data["sections"][0]["rows"][0]["contenders"][OPENVINO]["status"]
    assert status.startswith("n/a: not installed") and "irc[bench]" in status


def test_first_call_timeout_fails_irc_for_the_model(tmp_path, monkeypatch):
    """A first call past --compile-timeout is irc's failure at that case, and irc is skipped for
    the rest of the model (every thread count) instead of hanging again."""
    eager_as_irc(monkeypatch, delay=3.0)
    start = time.perf_counter()
    code, data, md = bench_lm_run(tmp_path, "--lm-models", "bert", "--prefill", "1x4,1x6", "--threads", "1,2",
                                  "--compile-timeout", "0.5", "--no-onnxruntime")
    assert time.perf_counter() - start < 30
    assert code == 1
    statuses = [r["contenders"][IRC]["status"] for s in data["sections"] for r in s["rows"]]
    assert statuses[0].startswith("failed: first call timed out after 0.5 s")
    assert all(s.startswith("skipped: first call timed out") for s in statuses[1:]), statuses
    assert [s["irc_compiler_runs"] for s in data["sections"]] == [0, None]
    notes = md.split("## Notes")[1]
    assert "timed out" in notes
    assert "test_bench_lm.py:" in notes.split("it was running ")[1].split(" <- ")[0]  # the sleeping frame


def test_lm_options_need_lm(tmp_path, capsys):
    assert main(["bench", "--prefill", "1x8", "--out", str(tmp_path)]) == 2
    assert "need --lm" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--lm", "--lm-models", "gpt3", "--out", str(tmp_path)])
    assert exc.value.code == 2 and "the language models are: bert, gpt2, llama" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["bench", "--lm", "--prefill", "1x129", "--out", str(tmp_path)])
    assert not (tmp_path / LM_JSON).exists()


# --- targets on their own -------------------------------------------------------------------


def _row(phase: str = PREFILL, **medians: float) -> LMRow:
    row = LMRow(f"gpt2 {phase} 1x16", "a model", flops=2_000_000, threads=2, model="gpt2", phase=phase,
                shape="1x16")
    row.timings = {c: Timing(t, t * 0.9, t * 1.1, 5, 1) for c, t in medians.items()}
    for c in medians:
        if c != EAGER:
            row.checks[c] = None
    return row


def test_target_is_half_of_eager_and_faster_than_inductor():
    assert _row(eager=2e-3, irc=0.9e-3, inductor=1e-3).target() == "met"
    assert _row(eager=2e-3, irc=1.2e-3, inductor=1e-3).target() == "no: 0.60x eager > 0.5, not faster than Inductor"
    assert _row(eager=2e-3, irc=0.9e-3).target() == "no: no Inductor timing"
    missing = _row(eager=2e-3)
    missing.unavailable[IRC] = "failed: boom"
    assert missing.target() == "n/a: irc failed: boom"
    wrong = _row(eager=2e-3, irc=0.5e-3, inductor=1e-3)
    wrong.checks[IRC] = "AssertionError: Tensor-likes are not close!"
    assert wrong.target() == "no: WRONG"


def test_section_targets_need_every_row():
    section = LMSection("gpt2", "a model", 2, rows=[
        _row(PREFILL, eager=2e-3, irc=0.9e-3, inductor=1e-3), _row(PREFILL, eager=2e-3, irc=3e-3, inductor=1e-3),
        _row(DECODE, eager=2e-3, irc=0.5e-3, inductor=1e-3)], irc_compiler_runs=2, irc_libraries=2)
    assert section.phase_target(PREFILL) == "no (1/2 met)" and section.phase_target(DECODE) == "met"
    header, [cells] = section_rows([section])
    table = dict(zip(header, cells))
    assert table["irc g++ runs"] == "2" and table["prefill target"] == "no (1/2 met)"
    assert LMSection("bert", "", 1).phase_target(DECODE) == "-"


def test_busy_rows_are_marked_noisy():
    quiet = _row(eager=2e-3, irc=0.9e-3, inductor=1e-3)
    header, [cells] = summary_rows([LMSection("gpt2", "", 2, rows=[quiet])])
    assert dict(zip(header, cells))["noise"] == "1.2" and not quiet.noisy
    spread = _row(eager=2e-3, irc=0.9e-3, inductor=1e-3)
    spread.timings[EAGER] = Timing(2e-3, 1e-3, 5e-3, 5, 1)
    header, [cells] = summary_rows([LMSection("gpt2", "", 2, rows=[spread])])
    assert dict(zip(header, cells))["noise"] == "5.0 NOISY" and spread.target() == "met (NOISY)"
    # steady but slow: eager at 2 threads 30x its 1-thread time (OpenMP waiting for a busy core)
    one, two = _row(eager=1e-3, irc=0.4e-3, inductor=0.3e-3), _row(eager=30e-3, irc=0.4e-3, inductor=60e-3)
    sections = [LMSection("gpt2", "", 2, rows=[two]), LMSection("gpt2", "", 1, rows=[one])]
    one.threads = 1
    mark_slowdowns(sections)
    assert one.eager_slowdown is None and two.eager_slowdown == pytest.approx(30)
    assert two.noisy and not one.noisy and two.target() == "met (NOISY)"
    header, [cells] = summary_rows(sections[:1])
    assert dict(zip(header, cells))["noise"] == "1.2, eager 30x NOISY"
    assert sections[0].phase_target(PREFILL) == "met (1 NOISY)"

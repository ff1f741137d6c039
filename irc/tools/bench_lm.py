"""`irc bench --lm`: the language-model section (issue 12, item 5).

The tiny random-init GPT-2, Llama and BERT of irc/models/lm.py, timed the way `irc bench` times
the built-in models (irc/tools/bench.py): every contender in one process, round-robin and
interleaved (warm-up, then repeats; median, p10 and p90 per call), one timing per case, so a
contender's turns are spread over the same minutes as eager's.

Cases, per model and `--threads` count:

* **prefill** at each `--prefill` shape BATCHxLENGTH (default 1x16, 1x64, 1x128, 4x32): one
  forward over the whole prompt, `model(input_ids, attention_mask)` with `lm_inputs(batch,
  length)` (row b of a batch has its last b positions padded); GPT-2 and Llama return their
  KV cache too (`use_cache`, as generate's first step does).
* **decode** at each `--decode` cache length L (default 16, 64; GPT-2 and Llama, BERT is no
  decoder): the per-token step, measured as one forward of one new token (batch 1) with
  `past_key_values` of length L built by an eager prefill of L tokens and an attention mask of
  L + 1 ones (not as generate of N tokens divided by N). GPT-2 takes the cache as its legacy
  tuples; Llama as a `DynamicCache` made from them at every call (as generate passes it; the
  forward appends to it, so it cannot be reused), which is in every torch contender's time.

Contenders: eager; irc, `torch.compile(model, backend="irc", dynamic=True)`; Inductor,
`torch.compile(model, dynamic=True)`; ONNX Runtime on `torch.onnx.export(..., dynamo=True)` of
a wrapper returning the logits and the cache as flat tensors, one graph per phase with dynamic
batch and length (prefill) or cache length (decode) axes, exported once per model ('n/a' with
the exporter's reason when it fails); OpenVINO, prefill only: the same wrapper converted by
`openvino.convert_model` at each prefill case's static shape (once per model and shape), compiled
per thread count as `irc bench` compiles it (irc/tools/bench.py: f32, LATENCY, one stream of the
row's threads, inputs bound once). Its decode rows are 'n/a': the decode wrapper, converted the
same way, gave logits far from eager's when tried (max abs difference 0.42 on GPT-2).

irc and Inductor are compiled once per model and thread
count (after `torch._dynamo.reset()`), under `torch.no_grad()`, and called once at every case
before it is timed, so compiling is not timed ("first call s" in the report is that call). Dynamo's
recompile limit is raised for the section: both backends compile the same `forward`, whose
cache entries share one limit. A first call running past `--compile-timeout` seconds is that
contender's failure, and it is not run again for that model.

Checked at every case: each contender's logits against eager's (`torch.testing.assert_close`; a
wrong one is marked WRONG and still timed); irc's native share of eager's matmul FLOPs
(torch.profiler, as irc/tools/lm_check.py counts it: 0% means irc ran the case in eager
PyTorch); irc's native builds over the whole section of a model and thread count
(`compiler_invocations()`, `libraries_loaded()` in a fresh IRC_CACHE_DIR), and whether any
happened while timing. Issue 12's targets (irc at most 0.5x eager and faster than Inductor, for
prefill and decode) are flagged per row and per section.

Outputs in `--out`: `bench-lm.md` (also printed), `bench-lm.json`, `bench-lm.png`
(irc/tools/bench_lm_report.py). The exit code is 1 if irc fails or is wrong on a case.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from irc.models.lm import INPUT_NAMES, LM_MODELS, POSITIONS, build, lm_inputs
from irc.tools import deadline
from irc.tools.bench import (
    INSTALL_HINT,
    _first_line,
    _quiet_exporter,
    convert_openvino,
    cpu_name,
    import_onnxruntime,
    import_openvino,
    load_average,
    measure_peaks,
    openvino_runner,
    peak_warnings,
    thread_count,
)
from irc.tools.bench_lm_report import (
    DECODE,
    LM_JSON,
    LM_MD,
    LM_PNG,
    PREFILL,
    LMRow,
    LMSection,
    failures,
    json_report,
    lm_notes,
    mark_slowdowns,
    markdown_report,
    section_rows,
    summary_rows,
)
from irc.tools.bench_report import (
    COMPARED,
    EAGER,
    INDUCTOR,
    IRC,
    OPENVINO,
    ORT,
    RATIO_NOTE,
    check_cell,
    fmt_ratio,
    plot_ratios,
)
from irc.tools.cli import writing_to
from irc.tools.lm_check import (
    GENERATORS,
    Flops,
    IrcLog,
    fresh_state,
    native_share,
    profile_matmuls,
    warning_summary,
)
from irc.tools.verify import benchmark, load_warning, render_markdown, short_error

DEFAULT_PREFILL: tuple[tuple[int, int], ...] = ((1, 16), (1, 64), (1, 128), (4, 32))
DEFAULT_DECODE: tuple[int, ...] = (16, 64)
DEFAULT_COMPILE_TIMEOUT = 300.0
#: Dynamo's recompile limit during the section (irc's and Inductor's entries share the default 8).
RECOMPILE_LIMIT = 64
#: The example the ONNX graphs are exported from (not a timed case; batch and length not 1, which
#: torch.export would specialize).
EXPORT_EXAMPLE = (2, 9)


@dataclass
class LMOptions:
    """What the section runs and for how long."""

    models: list[str]
    threads: list[int]
    prefill: list[tuple[int, int]]
    decode: list[int]
    budget: float = 3.0
    min_repeats: int = 5
    inductor: bool = True
    onnxruntime: bool = True
    openvino: bool = True
    compile_timeout: float | None = DEFAULT_COMPILE_TIMEOUT
    #: Thread count -> the FMA peak in GFLOP/s (bench.measure_peaks, once per run).
    peaks: dict[int, float | None] = field(default_factory=dict)


# --- cases ---------------------------------------------------------------------------------


def logits_of(out: Any) -> torch.Tensor:
    """The logits of a model's output (a ModelOutput, a tuple whose first item they are, or a tensor)."""
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "logits"):
        return out.logits
    return out[0]


def legacy_cache(past: Any) -> tuple[tuple[torch.Tensor, torch.Tensor], ...]:
    """A transformers cache as its legacy tuple of (key, value) per layer."""
    return past.to_legacy_cache() if hasattr(past, "to_legacy_cache") else tuple(tuple(kv) for kv in past)


def cache_factory(model: nn.Module, legacy: tuple) -> Callable[[], Any]:
    """What the model takes as `past_key_values`, fresh at every call: a DynamicCache made from the
    legacy tuples for models that use Cache classes (Llama), the tuples themselves otherwise (GPT-2)."""
    if getattr(model, "_supports_cache_class", False):
        from transformers import DynamicCache

        return lambda: DynamicCache.from_legacy_cache(legacy)
    return lambda: legacy


@dataclass
class Case:
    """One timed configuration of one model: the forward's arguments and eager's answer."""

    phase: str
    shape: str
    kwargs: Callable[[], dict[str, Any]]  # the forward's keyword arguments, fresh for every call
    onnx_inputs: list[torch.Tensor]  # the exported graph's inputs, in order
    expected: torch.Tensor  # eager's logits
    flops: Flops  # eager's matmul FLOPs (torch.profiler)


def prefill_case(model: nn.Module, batch: int, length: int) -> Case:
    inputs = lm_inputs(batch, length)
    expected, flops = profile_matmuls(lambda: model(**inputs))
    return Case(PREFILL, f"{batch}x{length}", lambda: dict(inputs), [inputs[n] for n in INPUT_NAMES],
                logits_of(expected), flops)


def decode_inputs(model: nn.Module, length: int) -> tuple[torch.Tensor, torch.Tensor, tuple]:
    """(next token, attention mask of length + 1 ones, legacy cache of length `length`): eager's
    greedy token after a prefill of `length` unpadded tokens (batch 1), and that prefill's cache."""
    prompt = lm_inputs(1, length)
    prompt["attention_mask"].fill_(1)
    out = model(**prompt, use_cache=True)
    token = out.logits[:, -1:].argmax(-1)
    return token, torch.ones(1, length + 1, dtype=torch.int64), legacy_cache(out.past_key_values)


def decode_case(model: nn.Module, length: int) -> Case:
    token, mask, legacy = decode_inputs(model, length)
    make_cache = cache_factory(model, legacy)

    def kwargs() -> dict[str, Any]:
        return {"input_ids": token, "attention_mask": mask, "past_key_values": make_cache(), "use_cache": True}

    expected, flops = profile_matmuls(lambda: model(**kwargs()))
    return Case(DECODE, f"1x1 cache {length}", kwargs, [token, mask, *(t for kv in legacy for t in kv)],
                logits_of(expected), flops)


def make_cases(name: str, model: nn.Module, opts: LMOptions) -> list[Case]:
    """The prefill cases, then the decode cases (generators only), eager's answers included."""
    with torch.no_grad():
        cases = [prefill_case(model, b, s) for b, s in opts.prefill]
        if name in GENERATORS:
            cases += [decode_case(model, n) for n in opts.decode]
    return cases


# --- contenders ----------------------------------------------------------------------------


def make_irc(model: nn.Module) -> Callable[..., Any]:
    """irc's contender, as a user writes it."""
    return torch.compile(model, backend="irc", dynamic=True)


def make_inductor(model: nn.Module) -> Callable[..., Any]:
    return torch.compile(model, dynamic=True)


class CompileTimeout(BaseException):  # noqa: N818 - not an error of the code under test
    """The first call ran past --compile-timeout. A BaseException: irc's and Dynamo's fallbacks
    catch Exception (they would run the graph in eager and hide the timeout)."""


def time_limit(seconds: float | None) -> contextlib.AbstractContextManager[None]:
    """Raise CompileTimeout after `seconds` (irc/tools/deadline.py)."""
    return deadline.time_limit(seconds, lambda s: CompileTimeout(f"first call timed out after {s:g} s (--compile-timeout)"))


def interrupted_at(exc: BaseException, depth: int = 3) -> str:
    """Where the alarm interrupted the call: the innermost `depth` frames (innermost first) below
    the alarm's own handler, as file:line function, site-packages paths shortened."""
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.name != "expire"][-depth:]
    root = str(Path(__file__).resolve().parents[2]) + os.sep
    shown = []
    for f in reversed(frames):
        path = f.filename.split("site-packages" + os.sep, 1)[-1].removeprefix(root)
        shown.append(f"{path}:{f.lineno} {f.name}")
    return " <- ".join(shown) or "?"


@contextlib.contextmanager
def recompile_room(limit: int = RECOMPILE_LIMIT) -> Iterator[None]:
    """Dynamo's per-frame recompile limit raised to `limit` (named cache_size_limit before torch 2.6)."""
    config = torch._dynamo.config
    key = "recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit"
    with config.patch(**{key: max(limit, getattr(config, key))}):
        yield


def compare(row: LMRow, contender: str, actual: Any, expected: torch.Tensor) -> None:
    """assert_close of the contender's logits with eager's; the verdict goes to `row.checks`."""
    try:
        torch.testing.assert_close(logits_of(actual), expected)
        row.checks[contender] = None
    except AssertionError as exc:
        row.checks[contender] = short_error(exc)


def first_call(row: LMRow, contender: str, fn: Callable[..., Any], case: Case, timeout: float | None,
               dead: dict[str, str]) -> Callable[[], Any] | None:
    """Call the compiled `fn` at `case` once (compiling; its seconds are recorded), then once more
    under the profiler, compared with eager. The runner to time, or None when it raised. A
    timeout is recorded in `dead` (the contender is not called again for this model)."""
    def runner() -> Any:
        return fn(**case.kwargs())

    try:
        with time_limit(timeout):
            start = time.perf_counter()
            runner()
            row.compile_seconds[contender] = time.perf_counter() - start
            actual, flops = profile_matmuls(runner)
    except CompileTimeout as exc:
        dead[contender] = f"{exc} at {row.name}, {row.threads} thread(s)"
        row.checks[contender] = f"CompileTimeout: it was running {interrupted_at(exc)}"
        row.unavailable[contender] = f"failed: {exc}"
        return None
    except Exception as exc:  # noqa: BLE001 - the contender's verdict for this case
        row.checks[contender] = short_error(exc)
        row.unavailable[contender] = f"failed: {_first_line(exc)}"
        return None
    compare(row, contender, actual, case.expected)
    if contender == IRC:
        row.irc_native = native_share(case.flops, flops)
    return runner


# --- ONNX Runtime --------------------------------------------------------------------------


class _Prefill(nn.Module):
    """The prefill as torch.onnx.export takes it: logits, then the cache as flat tensors."""

    def __init__(self, model: nn.Module, cache: bool):
        super().__init__()
        self.model, self.cache = model, cache

    def forward(self, input_ids, attention_mask):
        if not self.cache:
            return self.model(input_ids=input_ids, attention_mask=attention_mask).logits
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=True)
        return (out.logits, *(t for kv in legacy_cache(out.past_key_values) for t in kv))


class _Decode(nn.Module):
    """One decode step with the cache as flat tensors in (key, value per layer) and out."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, *past):
        legacy = tuple((past[i], past[i + 1]) for i in range(0, len(past), 2))
        out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                         past_key_values=cache_factory(self.model, legacy)(), use_cache=True)
        return (out.logits, *(t for kv in legacy_cache(out.past_key_values) for t in kv))


def export_graph(name: str, model: nn.Module, phase: str, path: Path) -> float:
    """Export `phase` of `model` to `path` with dynamic axes; returns the seconds it took."""
    from torch.export import Dim

    batch, length = EXPORT_EXAMPLE
    if phase == PREFILL:
        inputs = lm_inputs(batch, length)
        args = tuple(inputs[n] for n in INPUT_NAMES)
        b, s = Dim("batch", min=1, max=64), Dim("length", min=1, max=POSITIONS)
        wrapper, shapes = _Prefill(model, cache=name in GENERATORS), ({0: b, 1: s}, {0: b, 1: s})
    else:
        token, mask, legacy = decode_inputs(model, length)
        flat = tuple(t for kv in legacy for t in kv)
        args = (token, mask, *flat)
        past = Dim("past", min=1, max=POSITIONS - 1)
        wrapper, shapes = _Decode(model), ({}, {1: past + 1}, tuple({2: past} for _ in flat))
    start = time.perf_counter()
    with _quiet_exporter(), torch.no_grad():
        torch.onnx.export(wrapper.eval(), args, str(path), dynamo=True, dynamic_shapes=shapes, verbose=False)
    return time.perf_counter() - start


@dataclass
class OnnxGraphs:
    """Per phase: the exported file and its export seconds, or why there is none."""

    paths: dict[str, Path]
    seconds: dict[str, float]
    missing: dict[str, str]


def export_onnx(name: str, model: nn.Module, phases: list[str], opts: LMOptions, workdir: Path) -> OnnxGraphs:
    graphs = OnnxGraphs({}, {}, {})
    for phase in phases:
        if not opts.onnxruntime:
            graphs.missing[phase] = "skipped (--no-onnxruntime)"
            continue
        try:
            import_onnxruntime()
            path = workdir / f"{name}-{phase}.onnx"
            graphs.seconds[phase] = export_graph(name, model, phase, path)
            graphs.paths[phase] = path
        except ImportError as exc:
            graphs.missing[phase] = f"n/a: not installed ({exc}; {INSTALL_HINT})"
        except Exception as exc:  # noqa: BLE001 - an exporter failure must not stop the bench
            graphs.missing[phase] = f"n/a: ONNX export of the {phase} failed: {_first_line(exc)}"
    return graphs


def ort_session(path: Path, threads: int):
    """An ONNX Runtime session (intra-op `threads`, inter-op 1, no spinning: see irc/tools/bench.py)."""
    ort = import_onnxruntime()
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def ort_runner(session, case: Case) -> Callable[[], torch.Tensor]:
    """The session at `case` as a zero-argument callable returning the logits (every output is fetched)."""
    names = [i.name for i in session.get_inputs()]
    if len(names) != len(case.onnx_inputs):
        raise ValueError(f"the ONNX graph takes {len(names)} inputs ({', '.join(names)}), "
                         f"the case has {len(case.onnx_inputs)}")
    feed = {n: x.numpy() for n, x in zip(names, case.onnx_inputs)}

    def run() -> torch.Tensor:
        return torch.from_numpy(session.run(None, feed)[0])

    return run


def add_ort(row: LMRow, runners: dict, case: Case, graphs: OnnxGraphs, sessions: dict) -> None:
    if case.phase in graphs.missing:
        row.unavailable[ORT] = graphs.missing[case.phase]
        return
    row.compile_seconds["onnx-export"] = graphs.seconds[case.phase]
    try:
        if case.phase not in sessions:
            sessions[case.phase] = ort_session(graphs.paths[case.phase], row.threads)
        run = ort_runner(sessions[case.phase], case)
        actual = run()
    except Exception as exc:  # noqa: BLE001 - the contender's verdict for this case
        row.checks[ORT] = short_error(exc)
        row.unavailable[ORT] = f"failed: {_first_line(exc)}"
        return
    compare(row, ORT, actual, case.expected)
    runners[ORT] = run


# --- OpenVINO (prefill only) -----------------------------------------------------------------

#: Why OpenVINO has no decode rows.
OPENVINO_NO_DECODE = ("n/a: prefill only (OpenVINO's conversion of the decode step, the cache as flat inputs as "
                      "exported for ONNX Runtime, gave logits far from eager's when tried)")


@dataclass
class OpenVinoGraphs:
    """Per prefill shape: OpenVINO's model of the prefill at that static shape and its conversion
    seconds, or why there is none."""

    models: dict[str, Any]
    seconds: dict[str, float]
    missing: dict[str, str]


def convert_prefills(name: str, model: nn.Module, cases: list[Case], opts: LMOptions) -> OpenVinoGraphs:
    """Convert the prefill (`_Prefill`: logits, then the cache as flat tensors) at every prefill
    case's static shape with OpenVINO's PyTorch frontend."""
    graphs = OpenVinoGraphs({}, {}, {})
    for case in cases:
        if case.phase != PREFILL:
            continue
        if not opts.openvino:
            graphs.missing[case.shape] = "skipped (--no-openvino)"
            continue
        try:
            ov = import_openvino()
            start = time.perf_counter()
            graphs.models[case.shape] = convert_openvino(ov, _Prefill(model, cache=name in GENERATORS).eval(),
                                                         case.onnx_inputs)
            graphs.seconds[case.shape] = time.perf_counter() - start
        except ImportError as exc:
            graphs.missing[case.shape] = f"n/a: not installed ({exc}; {INSTALL_HINT})"
        except Exception as exc:  # noqa: BLE001 - a conversion failure must not stop the bench
            graphs.missing[case.shape] = f"n/a: OpenVINO conversion failed: {_first_line(exc)}"
    return graphs


def add_openvino(row: LMRow, runners: dict, case: Case, graphs: OpenVinoGraphs) -> None:
    """OpenVINO at a prefill case: compiled for the row's thread count (bench.openvino_config),
    inputs bound once, every output fetched, the logits compared with eager's."""
    if case.phase != PREFILL:
        row.unavailable[OPENVINO] = OPENVINO_NO_DECODE
        return
    if case.shape in graphs.missing:
        row.unavailable[OPENVINO] = graphs.missing[case.shape]
        return
    row.compile_seconds["openvino-convert"] = graphs.seconds[case.shape]
    try:
        start = time.perf_counter()
        run = openvino_runner(import_openvino(), graphs.models[case.shape], case.onnx_inputs, row.threads,
                              single=False)
        row.compile_seconds["openvino-compile"] = time.perf_counter() - start
        actual = run()
    except Exception as exc:  # noqa: BLE001 - the contender's verdict for this case
        row.checks[OPENVINO] = short_error(exc)
        row.unavailable[OPENVINO] = f"failed: {_first_line(exc)}"
        return
    compare(row, OPENVINO, actual, case.expected)
    runners[OPENVINO] = run


# --- one model at one thread count ----------------------------------------------------------


def compiled_contenders(model: nn.Module, opts: LMOptions, dead: dict[str, str]) -> tuple[dict, dict[str, str]]:
    """(contender -> compiled model, contender -> why it is not run)."""
    compiled, skipped = {}, {}
    makers = {IRC: make_irc, INDUCTOR: make_inductor}
    for contender, make in makers.items():
        if contender == INDUCTOR and not opts.inductor:
            skipped[contender] = "skipped (--no-inductor)"
        elif contender in dead:
            skipped[contender] = f"skipped: {dead[contender]}"
        else:
            compiled[contender] = make(model)
    return compiled, skipped


def bench_case(row: LMRow, case: Case, model: nn.Module, compiled: dict, skipped: dict[str, str],
               opts: LMOptions, dead: dict[str, str], graphs: OnnxGraphs, sessions: dict, builds,
               ov_graphs: OpenVinoGraphs) -> None:
    """Check every contender at `case`, then time them round-robin."""
    runners: dict[str, Callable[[], Any]] = {EAGER: lambda: model(**case.kwargs())}
    for contender, fn in compiled.items():
        if contender in dead:
            row.unavailable[contender] = f"skipped: {dead[contender]}"
            continue
        runner = first_call(row, contender, fn, case, opts.compile_timeout, dead)
        if runner is not None:
            runners[contender] = runner
    row.unavailable.update(skipped)
    add_ort(row, runners, case, graphs, sessions)
    add_openvino(row, runners, case, ov_graphs)
    before = builds.gxx
    row.timings = benchmark(runners, opts.budget, opts.min_repeats)
    row.irc_builds_while_timed = builds.gxx - before


def bench_section(name: str, model: nn.Module, cases: list[Case], threads: int, opts: LMOptions,
                  graphs: OnnxGraphs, ov_graphs: OpenVinoGraphs, dead: dict[str, str],
                  progress: Callable[[LMRow], None]) -> LMSection:
    """Every case of `name` at `threads`, with irc and Inductor compiled afresh."""
    section = LMSection(name, LM_MODELS[name].description, threads)
    start = time.perf_counter()
    irc_log = IrcLog()
    with thread_count(threads), fresh_state() as builds, recompile_room(), irc_log.attached(), torch.no_grad():
        compiled, skipped = compiled_contenders(model, opts, dead)
        sessions: dict = {}
        for case in cases:
            row = LMRow(f"{name} {case.phase} {case.shape}", section.description, case.flops.flops, threads=threads,
                        model=name, phase=case.phase, shape=case.shape, peak_gflops=opts.peaks.get(threads))
            bench_case(row, case, model, compiled, skipped, opts, dead, graphs, sessions, builds, ov_graphs)
            section.rows.append(row)
            progress(row)
        if IRC in compiled:
            section.irc_compiler_runs, section.irc_libraries = builds.gxx, builds.libs
        del compiled, sessions
    section.irc_warnings = list(dict.fromkeys(warning_summary(m) for m in irc_log.warnings))
    section.seconds = time.perf_counter() - start
    gc.collect()
    return section


def bench_lm_model(name: str, opts: LMOptions, workdir: Path, progress: Callable[[LMRow], None]) -> list[LMSection]:
    """Every thread count of model `name`: build it, export its ONNX graphs, then one section per count."""
    model = build(name)
    cases = make_cases(name, model, opts)
    phases = list(dict.fromkeys(c.phase for c in cases))
    graphs = export_onnx(name, model, phases, opts, workdir)
    ov_graphs = convert_prefills(name, model, cases, opts)
    dead: dict[str, str] = {}  # contender -> why it is no longer run for this model
    return [bench_section(name, model, cases, t, opts, graphs, ov_graphs, dead, progress) for t in opts.threads]


# --- command line --------------------------------------------------------------------------


def command_line(opts: LMOptions) -> str:
    """The `irc bench --lm ...` command that reproduces this run."""
    parts = ["irc bench --lm", f"--lm-models {','.join(opts.models)}",
             f"--prefill {','.join(f'{b}x{s}' for b, s in opts.prefill)}",
             f"--decode {','.join(map(str, opts.decode))}",
             f"--threads {','.join(map(str, opts.threads))}", f"--budget {opts.budget:g}"]
    if opts.min_repeats != 5:
        parts.append(f"--min-repeats {opts.min_repeats}")
    if opts.compile_timeout != DEFAULT_COMPILE_TIMEOUT:
        parts.append(f"--compile-timeout {opts.compile_timeout or 0:g}")
    parts += [flag for flag, on in (("--no-inductor", opts.inductor), ("--no-onnxruntime", opts.onnxruntime),
                                    ("--no-openvino", opts.openvino)) if not on]
    return " ".join(parts)


def options(args: argparse.Namespace) -> LMOptions:
    return LMOptions(
        models=args.lm_models or list(LM_MODELS), threads=args.threads or [torch.get_num_threads()],
        prefill=args.prefill or list(DEFAULT_PREFILL),
        decode=list(DEFAULT_DECODE) if args.decode is None else args.decode,
        budget=args.budget, min_repeats=args.min_repeats, inductor=args.inductor, onnxruntime=args.onnxruntime,
        openvino=args.openvino, compile_timeout=args.compile_timeout or None,
    )


def metadata(opts: LMOptions) -> dict:
    import transformers

    try:
        ort_version = import_onnxruntime().__version__ if opts.onnxruntime else None
    except ImportError:
        ort_version = None
    try:
        ov_version = import_openvino().__version__.split("-")[0] if opts.openvino else None
    except ImportError:
        ov_version = None
    return {
        "command": command_line(opts), "cpu": cpu_name(), "cpus": os.cpu_count(), "torch": torch.__version__,
        "transformers": transformers.__version__, "onnxruntime": ort_version, "openvino": ov_version,
        "budget_seconds": opts.budget,
        "load_average": {"start": load_average(), "end": None}, "warnings": [], "seconds": 0.0,
        "prefill_note": "GPT-2 and Llama with use_cache (their cache is returned too); row b of a batch has its "
                        "last b positions padded",
        "decode_note": "one forward of one new token (batch 1) with past_key_values of length L from an eager "
                       "prefill of L tokens and an attention mask of L + 1 ones, not generate divided by N; "
                       "GPT-2 takes the legacy tuples, Llama a DynamicCache made from them at every call (timed)",
        "contenders_note": "irc = torch.compile(model, backend='irc', dynamic=True), inductor = "
                           "torch.compile(model, dynamic=True), both compiled once per model and thread count and "
                           "first called at every case before timing ('first call s', compiling included); "
                           "onnxruntime = torch.onnx.export(dynamo=True) of the prefill / decode step with dynamic "
                           "axes, one graph per phase; openvino = openvino.convert_model of the prefill at each "
                           "case's static shape (prefill only), compiled as irc bench compiles it (f32, latency, "
                           "the row's threads) with its inputs bound once; every contender's logits are compared "
                           "with eager's (assert_close: WRONG if not)",
    }


def run_lm(args: argparse.Namespace) -> int:
    """`irc bench --lm`; returns the exit code."""
    import transformers

    transformers.logging.set_verbosity_error()
    opts = options(args)
    meta = metadata(opts)
    print(f"{meta['command']}\nload average at start (1/5/15 min): {meta['load_average']['start']}", flush=True)
    if warning := load_warning():
        meta["warnings"].append(f"at start: {warning}")
        print(f"warning: {warning}")
    opts.peaks = measure_peaks(opts.threads)
    meta["peak_gflops"] = {str(n): p for n, p in opts.peaks.items()}
    meta["warnings"] += peak_warnings(opts.peaks)

    def progress(row: LMRow) -> None:
        print(f"  {row.name} @ {row.threads} threads: "
              + ", ".join(f"{c} {fmt_ratio(row, c)}" for c in COMPARED) + f" ({check_cell(row)})", flush=True)

    start = time.perf_counter()
    sections: list[LMSection] = []
    with tempfile.TemporaryDirectory(prefix="irc-bench-lm-") as tmp:
        for name in opts.models:
            print(f"  {name}: {LM_MODELS[name].description} ...", flush=True)
            sections += bench_lm_model(name, opts, Path(tmp), progress)
    meta["seconds"] = time.perf_counter() - start
    mark_slowdowns(sections)
    meta["load_average"]["end"] = end = load_average()
    if end and load_warning():
        meta["warnings"].append(f"at end: 1-min load average {end[0]:.1f} on {os.cpu_count()} CPUs: "
                                "other processes were competing for the cores during the run")
    rows = [r for s in sections for r in s.rows]
    with writing_to(args.out):
        (args.out / LM_MD).write_text(markdown_report(sections, meta))
        (args.out / LM_JSON).write_text(json.dumps(json_report(sections, meta), indent=2) + "\n")
        plot_ratios(rows, args.out / LM_PNG, stacked=True, title="irc bench --lm")

    print()
    print(render_markdown(*summary_rows(sections)))
    print()
    print(render_markdown(*section_rows(sections)))
    for note in lm_notes(sections):
        print("\n" + note)
    print(f"\n{RATIO_NOTE}")
    print(f"the section took {meta['seconds']:.0f} s; load average at end (1/5/15 min): {end}")
    for w in meta["warnings"]:
        print(f"warning: {w}")
    print(f"wrote {args.out / LM_MD}, {args.out / LM_JSON}, {args.out / LM_PNG}")
    bad = failures(sections)
    if bad:
        print(f"FAIL: irc is wrong or failed on {', '.join(bad)}")
        return 1
    return 0

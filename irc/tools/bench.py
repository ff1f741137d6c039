"""`irc bench`: irc against eager PyTorch, Inductor, ONNX Runtime and OpenVINO on the built-in models.

For every model, in this one process: build it; compile it with irc twice, cold (into a
fresh, empty build cache) and warm (the same model again, from the cache just filled);
`torch.compile` it (Inductor, compile time = its first call); export it with
`torch.onnx.export` and load it into an ONNX Runtime session; convert it with
`openvino.convert_model` and compile it for OpenVINO's CPU plugin (ONNX Runtime and OpenVINO
when installed: `pip install 'irc[bench]'`; otherwise that contender is 'n/a' with the reason).
Every contender's output is checked against eager with `torch.testing.assert_close`; a wrong one
is marked WRONG and still timed. Then, at each `--threads` count, all contenders are timed
round-robin and interleaved (warm-up, then repeats; median, p10 and p90 per call).

Ratio = contender latency / eager latency: lower is better, 0.5 is twice as fast as eager.
GFLOP/s = the model's FLOPs per forward call / median latency. % of peak = GFLOP/s / the
machine's FMA peak at the row's thread count, measured once per count before the models
(irc/tools/roofline.py: independent FMA chains as wide as the host Target's vector width, the
best of ten runs; low if other processes hold the cores, which is warned about when a count's
peak per thread is under 75% of the best count's; IRC_PEAK_GFLOPS sets it instead).
irc / best peer = irc's latency / the fastest of eager, Inductor, ONNX Runtime and OpenVINO
whose output was correct ("best peer" names it): below 1, irc beats every one of them.

`--threads N` sets `torch.set_num_threads(N)` (eager, Inductor and irc follow it),
`IRC_NUM_THREADS=N`, ONNX Runtime's intra-op thread count (inter-op: 1) and OpenVINO's
`INFERENCE_NUM_THREADS`; `--threads 1,2` runs each count and reports a row per model and count.
ONNX Runtime's intra-op threads are told not to spin between calls
(`session.intra_op.allow_spinning = 0`): spinning, they keep the second core busy after every
ONNX Runtime call, and the next contender in the round-robin runs on one core (measured: eager's
cnn at 2 threads went from 0.27 to 0.85 ms). ONNX Runtime pays for this on the smallest models
(its cnn at 2 threads: 59 -> 81 µs).

OpenVINO is converted from the torch module by its PyTorch frontend, with the example inputs'
shapes as static input shapes (the ONNX file would work too for every built-in model, but would
tie OpenVINO to the ONNX exporter and its extra packages), and compiled per thread count with
`INFERENCE_PRECISION_HINT=f32` (it defaults to bf16 on CPUs with AVX-512 BF16),
`PERFORMANCE_HINT=LATENCY`, `NUM_STREAMS=1`, `INFERENCE_NUM_THREADS=N`, no CPU pinning and no
hyper-threading, so it uses no more cores than irc. Its timed call is `infer()` on one infer
request whose inputs were bound once as OpenVINO tensors sharing the torch tensors' memory, and
whose outputs are returned as torch tensors over OpenVINO's buffers (no copy). Its TBB workers
spin about 1 ms after a call (eager's OpenMP threads: about 8 ms); it has no switch for that.

Outputs in `--out`: `bench.md` (the table, also printed), `bench.json` (every raw number)
and `bench.png` (ratios to eager per model and contender), written by irc/tools/bench_report.py.
The exit code is 1 if irc fails to compile a model or gives a wrong result.

`--lm` runs the language-model section instead (irc/tools/bench_lm.py): prefill and per-token
decode latency of the tiny GPT-2, Llama and BERT of irc/models/lm.py under
`torch.compile(dynamic=True)`, irc's native builds, and issue 12's targets.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import os
import platform
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from irc.models import BUILTIN_MODELS, ModelSpec, get_model, model_flops
from irc.tools.bench_report import (
    BENCH_JSON,
    BENCH_MD,
    BENCH_PNG,
    COMPARED,
    EAGER,
    INDUCTOR,
    IRC,
    OPENVINO,
    ORT,
    RATIO_NOTE,
    BenchRow,
    check_cell,
    fmt_ratio,
    json_report,
    markdown_report,
    notes,
    plot_ratios,
    summary_rows,
)
from irc.tools.cli import model_names, output_dir, positive_float, positive_int, writing_to
from irc.tools.roofline import peak_gflops
from irc.tools.verify import _bind, benchmark, compile_inductor, load_warning, render_markdown, short_error

INSTALL_HINT = "pip install 'irc[bench]'"


# --- environment -------------------------------------------------------------------------


@contextlib.contextmanager
def _environ(**values: str):
    """Set environment variables for the duration of the block, then restore them."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def thread_count(n: int):
    """Run the block with `torch.set_num_threads(n)` and `IRC_NUM_THREADS=n`."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        with _environ(IRC_NUM_THREADS=str(n)):
            yield
    finally:
        torch.set_num_threads(old)


@contextlib.contextmanager
def _quiet_exporter():
    """Silence the ONNX exporter's warnings and log lines (they are not the user's business)."""
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def _first_line(exc: BaseException) -> str:
    """`Type: first line of the message` (at most 200 characters of it)."""
    line = (str(exc).strip().splitlines() or [""])[0][:200]
    return f"{type(exc).__name__}: {line}"


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages, or None where the platform has none."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def cpu_name() -> str:
    """The CPU model and its vector extensions (avx2, fma, avx512f) from /proc/cpuinfo."""
    name, flags = platform.processor() or "unknown CPU", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                name = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
                break
    except OSError:
        pass
    vector = [f for f in ("avx2", "fma", "avx512f") if f in flags]
    return f"{name} ({', '.join(vector)})" if vector else name


# --- contenders --------------------------------------------------------------------------


@dataclass
class IrcBuild:
    """irc's compiled module (None if compiling failed) with its cold and warm compile times."""

    runner: Callable[[], object] | None
    compile_seconds: dict[str, float]
    builds: dict[str, int]  # compiler invocations during the cold and the warm compile
    error: str | None = None


def compile_irc(model, inputs, cache_dir: Path) -> IrcBuild:
    """`irc.compile` twice with `IRC_CACHE_DIR=cache_dir` (a fresh, empty directory): cold, then warm."""
    import irc
    from irc.runtime import compiler_invocations

    seconds, builds = {}, {}
    try:
        with _environ(IRC_CACHE_DIR=str(cache_dir)):
            for phase in ("irc-cold", "irc-warm"):
                before = compiler_invocations()
                start = time.perf_counter()
                cm = irc.compile(model, inputs)
                seconds[phase] = time.perf_counter() - start
                builds[phase] = compiler_invocations() - before
    except Exception as exc:  # noqa: BLE001 - a compile failure is this model's verdict
        return IrcBuild(None, seconds, builds, short_error(exc))
    return IrcBuild(_bind(cm, inputs), seconds, builds)


def import_onnxruntime():
    """The `onnxruntime` module; ImportError when it (or the exporter's onnx/onnxscript) is missing."""
    import onnx  # noqa: F401  (torch.onnx.export needs onnx and onnxscript)
    import onnxruntime
    import onnxscript  # noqa: F401

    return onnxruntime


def export_onnx(model, inputs, path: Path) -> float:
    """Export `model` to `path` with `torch.onnx.export`; returns the seconds it took."""
    import torch

    start = time.perf_counter()
    with _quiet_exporter():
        torch.onnx.export(model, tuple(inputs), str(path), dynamo=True, verbose=False)
    return time.perf_counter() - start


def ort_runner(ort, path: Path, inputs, expected, threads: int) -> Callable[[], object]:
    """An ONNX Runtime session on `path` (intra-op `threads`, inter-op 1) as a zero-argument
    callable returning torch tensors shaped like eager's output (one tensor or a tuple)."""
    import torch

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # see the module doc
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    if len(names) != len(inputs):
        raise ValueError(f"the ONNX graph takes {len(names)} inputs ({', '.join(names)}), the model {len(inputs)}")
    feed = {name: x.numpy() for name, x in zip(names, inputs)}
    single = isinstance(expected, torch.Tensor)

    def run():
        outs = session.run(None, feed)
        return torch.from_numpy(outs[0]) if single else tuple(torch.from_numpy(o) for o in outs)

    return run


def import_openvino():
    """The `openvino` module; ImportError when it is missing."""
    import openvino

    return openvino


def convert_openvino(ov, model, inputs):
    """`model` as an OpenVINO model, converted by OpenVINO's PyTorch frontend from the module with
    `inputs` as the example and their shapes and dtypes as the (static) input shapes."""
    import torch

    if not all(isinstance(x, torch.Tensor) for x in inputs):
        raise TypeError("OpenVINO's contender takes tensor inputs only")
    with _quiet_exporter(), torch.no_grad():
        return ov.convert_model(model, example_input=tuple(inputs),
                                input=[(list(x.shape), ov.Type(x.numpy().dtype)) for x in inputs])


def openvino_config(threads: int) -> dict[str, object]:
    """How OpenVINO is compiled for a row of `threads` threads (see the module doc)."""
    return {"INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads,
            "NUM_STREAMS": 1, "ENABLE_CPU_PINNING": False, "ENABLE_HYPER_THREADING": False}


def openvino_runner(ov, ov_model, inputs, threads: int, single: bool = True) -> Callable[[], object]:
    """`ov_model` compiled for the CPU (`openvino_config(threads)`) as a zero-argument callable
    returning its first output as a torch tensor (`single`) or all of them as a tuple. The infer
    request's inputs are bound once, as OpenVINO tensors sharing the torch tensors' memory; each
    call runs the request and wraps its output buffers (no copy: the next call overwrites them)."""
    import torch

    compiled = ov.Core().compile_model(ov_model, "CPU", openvino_config(threads))
    request = compiled.create_infer_request()
    if len(compiled.inputs) != len(inputs):
        raise ValueError(f"the OpenVINO model takes {len(compiled.inputs)} inputs, the model {len(inputs)}")
    for i, x in enumerate(inputs):
        request.set_input_tensor(i, ov.Tensor(x.contiguous().numpy(), shared_memory=True))
    outputs = range(len(compiled.outputs))

    def run():
        request.infer()
        if single:
            return torch.from_numpy(request.get_output_tensor(0).data)
        return tuple(torch.from_numpy(request.get_output_tensor(i).data) for i in outputs)

    run.request = request  # for the tests: the bound input tensors
    return run


def check(row: BenchRow, contender: str, runner: Callable[[], object], expected) -> bool:
    """Run `runner` once and compare with eager; False (and 'failed') if it raised."""
    import torch

    try:
        actual = runner()
    except Exception as exc:  # noqa: BLE001 - recorded as the contender's verdict
        row.checks[contender] = short_error(exc)
        row.unavailable[contender] = f"failed: {_first_line(exc)}"
        return False
    try:
        torch.testing.assert_close(actual, expected)
        row.checks[contender] = None
    except AssertionError as exc:
        row.checks[contender] = short_error(exc)
    return True


# --- one model ---------------------------------------------------------------------------


@dataclass
class BenchOptions:
    """What to run and for how long."""

    threads: list[int]
    budget: float = 3.0
    min_repeats: int = 5
    inductor: bool = True
    onnxruntime: bool = True
    openvino: bool = True
    #: Thread count -> the FMA peak in GFLOP/s (measured once per run, before the models).
    peaks: dict[int, float | None] = field(default_factory=dict)


def prepare_openvino(opts: BenchOptions, model, inputs) -> tuple[object, object, str | None, float | None]:
    """(openvino module, converted model, why it is not run, conversion seconds)."""
    if not opts.openvino:
        return None, None, "skipped (--no-openvino)", None
    try:
        ov = import_openvino()
        start = time.perf_counter()
        converted = convert_openvino(ov, model, inputs)
        return ov, converted, None, time.perf_counter() - start
    except ImportError as exc:
        return None, None, f"n/a: not installed ({exc}; {INSTALL_HINT})", None
    except Exception as exc:  # noqa: BLE001 - a conversion failure must not stop the bench
        return None, None, f"n/a: OpenVINO conversion failed: {_first_line(exc)}", None


def add_openvino(row: BenchRow, runners: dict, prepared, inputs, expected) -> None:
    """Compile OpenVINO's model for the row's thread count, check it and add it to `runners`."""
    import torch

    ov, converted, missing, seconds = prepared
    if missing:
        row.unavailable[OPENVINO] = missing
        return
    row.compile_seconds["openvino-convert"] = seconds
    try:
        start = time.perf_counter()
        run = openvino_runner(ov, converted, inputs, row.threads, single=isinstance(expected, torch.Tensor))
        row.compile_seconds["openvino-compile"] = time.perf_counter() - start
    except Exception as exc:  # noqa: BLE001
        row.unavailable[OPENVINO] = f"n/a: compile failed: {_first_line(exc)}"
        return
    if check(row, OPENVINO, run, expected):
        runners[OPENVINO] = run


def bench_model(spec: ModelSpec, opts: BenchOptions, workdir: Path) -> list[BenchRow]:
    """Compile, check and time `spec` with every contender; one row per thread count."""
    import torch

    model, inputs = spec.build()
    flops = model_flops(spec)
    with torch.no_grad():
        expected = model(*inputs)
        irc_build = compile_irc(model, inputs, workdir / f"{spec.name}-cache")
        ort, onnx_path, ort_missing, export_seconds = None, workdir / f"{spec.name}.onnx", None, None
        if not opts.onnxruntime:
            ort_missing = "skipped (--no-onnxruntime)"
        else:
            try:
                ort = import_onnxruntime()
                export_seconds = export_onnx(model, inputs, onnx_path)
            except ImportError as exc:
                ort_missing = f"n/a: not installed ({exc}; {INSTALL_HINT})"
            except Exception as exc:  # noqa: BLE001 - an exporter failure must not stop the bench
                ort_missing = f"n/a: ONNX export failed: {_first_line(exc)}"
        openvino = prepare_openvino(opts, model, inputs)

        rows = []
        for threads in opts.threads:
            row = BenchRow(spec.name, spec.description, flops, threads=threads, peak_gflops=opts.peaks.get(threads))
            with thread_count(threads):
                runners = {EAGER: _bind(model, inputs)}
                row.compile_seconds.update(irc_build.compile_seconds)
                row.irc_compiler_runs.update(irc_build.builds)
                if irc_build.runner is None:
                    row.checks[IRC] = irc_build.error
                    row.unavailable[IRC] = "failed: irc.compile raised"
                elif check(row, IRC, irc_build.runner, expected):
                    runners[IRC] = irc_build.runner
                if opts.inductor:
                    torch._dynamo.reset()  # Inductor's C++ specializes on the thread count
                    compiled = compile_inductor(model, inputs, row)
                    if compiled is not None and check(row, INDUCTOR, compiled, expected):
                        runners[INDUCTOR] = compiled
                else:
                    row.unavailable[INDUCTOR] = "skipped (--no-inductor)"
                if ort_missing:
                    row.unavailable[ORT] = ort_missing
                else:
                    row.compile_seconds["onnx-export"] = export_seconds
                    try:
                        start = time.perf_counter()
                        run = ort_runner(ort, onnx_path, inputs, expected, threads)
                        row.compile_seconds["onnxruntime-session"] = time.perf_counter() - start
                    except Exception as exc:  # noqa: BLE001
                        row.unavailable[ORT] = f"n/a: session failed: {_first_line(exc)}"
                    else:
                        if check(row, ORT, run, expected):
                            runners[ORT] = run
                add_openvino(row, runners, openvino, inputs, expected)
                row.timings = benchmark(runners, opts.budget, opts.min_repeats)
            rows.append(row)
            del runners
    if opts.inductor:
        torch._dynamo.reset()
    del model, irc_build, openvino
    gc.collect()
    return rows


# --- command line ------------------------------------------------------------------------


def thread_list(text: str) -> list[int]:
    """'1,2' -> [1, 2]; every count a positive integer."""
    try:
        counts = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"expected positive thread counts like 2 or 1,2; got {text!r}")
    return list(dict.fromkeys(counts))


def lm_model_names(text: str) -> list[str]:
    """A comma-separated list of the language models of irc/models/lm.py, each one known."""
    from irc.models.lm import LM_MODELS

    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in LM_MODELS]
    if not names or unknown:
        what = f"unknown language model(s) {', '.join(map(repr, unknown))}" if unknown else f"no model in {text!r}"
        raise argparse.ArgumentTypeError(f"{what}; the language models are: {', '.join(LM_MODELS)}")
    return list(dict.fromkeys(names))


def prefill_shapes(text: str) -> list[tuple[int, int]]:
    """'1x16,4x32' -> [(1, 16), (4, 32)]: batch x length, each at least 1, length at most 128."""
    from irc.models.lm import POSITIONS

    try:
        shapes = [tuple(int(v) for v in item.lower().split("x")) for item in text.split(",") if item.strip()]
    except ValueError:
        shapes = []
    if not shapes or any(len(s) != 2 or min(s) < 1 or s[1] > POSITIONS for s in shapes):
        raise argparse.ArgumentTypeError(f"expected BATCHxLENGTH shapes like 1x16,4x32 (length 1..{POSITIONS}); "
                                         f"got {text!r}")
    return list(dict.fromkeys(shapes))


def cache_lengths(text: str) -> list[int]:
    """'16,64' -> [16, 64]: KV-cache lengths for the decode step (1..127); '' or 'none': no decode."""
    from irc.models.lm import POSITIONS

    if text.strip().lower() in ("", "none"):
        return []
    try:
        lengths = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        lengths = []
    if not lengths or min(lengths) < 1 or max(lengths) >= POSITIONS:
        raise argparse.ArgumentTypeError(f"expected cache lengths like 16,64 (1..{POSITIONS - 1}) or none; "
                                         f"got {text!r}")
    return list(dict.fromkeys(lengths))


def non_negative_float(text: str) -> float:
    """A number of seconds >= 0 (0: no limit)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `irc bench`."""
    parser.add_argument("--models", type=model_names, help="comma-separated built-in model names "
                        f"(default: all: {','.join(BUILTIN_MODELS)})")
    parser.add_argument("--threads", type=thread_list,
                        help="thread count(s), e.g. 2 or 1,2 (default: torch.get_num_threads())")
    parser.add_argument("--budget", type=positive_float, default=3.0,
                        help="timing seconds per model and thread count, shared by all contenders (default: 3)")
    parser.add_argument("--min-repeats", type=positive_int, default=5,
                        help="timed repeats per contender at least (default: 5)")
    parser.add_argument("--out", type=output_dir, default=Path("."),
                        help=f"directory for {BENCH_MD}, {BENCH_JSON} and {BENCH_PNG} (default: .)")
    parser.add_argument("--no-inductor", dest="inductor", action="store_false",
                        help="do not time torch.compile (Inductor)")
    parser.add_argument("--no-onnxruntime", dest="onnxruntime", action="store_false",
                        help="do not time ONNX Runtime")
    parser.add_argument("--no-openvino", dest="openvino", action="store_false",
                        help="do not time OpenVINO")
    lm = parser.add_argument_group(
        "language models", "`--lm` runs the language-model section (irc/tools/bench_lm.py) instead of the built-in "
        "models: prefill and per-token decode of the tiny GPT-2, Llama and BERT, with torch.compile(dynamic=True); "
        "--threads, --budget (per case), --min-repeats, --out and the --no-* options apply")
    lm.add_argument("--lm", action="store_true", help="run the language-model section (writes bench-lm.md/.json/.png)")
    lm.add_argument("--lm-models", type=lm_model_names,
                    help="comma-separated language models (default: all: bert,gpt2,llama)")
    lm.add_argument("--prefill", type=prefill_shapes,
                    help="prefill shapes BATCHxLENGTH (default: 1x16,1x64,1x128,4x32)")
    lm.add_argument("--decode", type=cache_lengths,
                    help="decode: KV-cache lengths of the one-token step, or none (default: 16,64)")
    lm.add_argument("--compile-timeout", type=non_negative_float, default=300.0,
                    help="seconds a compiled contender's first call at a case may take before it counts as "
                    "failed (0: no limit; default: 300)")


def command_line(args: argparse.Namespace, names: list[str], opts: BenchOptions) -> str:
    """The `irc bench ...` command that reproduces this run."""
    parts = ["irc bench", f"--models {','.join(names)}", f"--threads {','.join(map(str, opts.threads))}",
             f"--budget {opts.budget:g}"]
    if opts.min_repeats != 5:
        parts.append(f"--min-repeats {opts.min_repeats}")
    parts += [flag for flag, on in (("--no-inductor", opts.inductor), ("--no-onnxruntime", opts.onnxruntime),
                                    ("--no-openvino", opts.openvino)) if not on]
    return " ".join(parts)


def _ort_version() -> str | None:
    try:
        return import_onnxruntime().__version__
    except ImportError:
        return None


def _openvino_version() -> str | None:
    try:
        return import_openvino().__version__.split("-")[0]
    except ImportError:
        return None


#: A thread count's peak per thread below this share of the best count's counts as measured on shared cores.
PEAK_SCALING = 0.75


def peak_warnings(peaks: dict[int, float | None]) -> list[str]:
    """One warning per thread count whose peak per thread is below PEAK_SCALING x the best count's:
    its cores were shared while it was measured, so its % of peak is flattered."""
    per_thread = {n: p / n for n, p in peaks.items() if p}
    best = max(per_thread.values(), default=0.0)
    return [f"the FMA peak at {n} threads is {peaks[n]:.0f} GFLOP/s, {v / best:.0%} per thread of the best count's: "
            f"other processes held cores while it was measured, so % of peak at {n} threads reads high"
            for n, v in per_thread.items() if v < PEAK_SCALING * best]


def measure_peaks(threads: list[int]) -> dict[int, float | None]:
    """The FMA peak (GFLOP/s) at each thread count, at the host Target's vector width
    (irc/tools/roofline.py); None for a count where building or running the probe failed."""
    from irc.target import Target

    lanes = Target.host().vector_width
    peaks: dict[int, float | None] = {}
    for n in threads:
        try:
            peaks[n] = peak_gflops(n, lanes)
        except Exception as exc:  # noqa: BLE001 - no peak means no "% of peak", not no bench
            print(f"warning: the FMA peak at {n} thread(s) could not be measured: {_first_line(exc)}")
            peaks[n] = None
    return peaks


def run(args: argparse.Namespace) -> int:
    """Entry point of `irc bench`; returns the exit code."""
    if args.lm or args.lm_models or args.prefill or args.decode is not None:
        if not args.lm or args.models:
            print("irc bench: error: --lm-models, --prefill and --decode need --lm; --models does not go with --lm",
                  file=sys.stderr)
            return 2
        from irc.tools.bench_lm import run_lm

        return run_lm(args)
    names = args.models or list(BUILTIN_MODELS)
    specs = [get_model(n) for n in names]  # fail fast on a typo, before any work
    import torch

    opts = BenchOptions(threads=args.threads or [torch.get_num_threads()], budget=args.budget,
                        min_repeats=args.min_repeats, inductor=args.inductor, onnxruntime=args.onnxruntime,
                        openvino=args.openvino)
    meta = {"command": command_line(args, names, opts), "cpu": cpu_name(), "cpus": os.cpu_count(),
            "torch": torch.__version__, "onnxruntime": _ort_version() if opts.onnxruntime else None,
            "openvino": _openvino_version() if opts.openvino else None,
            "budget_seconds": opts.budget, "load_average": {"start": load_average(), "end": None},
            "warnings": []}
    print(f"{meta['command']}\nload average at start (1/5/15 min): {meta['load_average']['start']}", flush=True)
    if warning := load_warning():
        meta["warnings"].append(f"at start: {warning}")
        print(f"warning: {warning}")
    opts.peaks = measure_peaks(opts.threads)
    meta["peak_gflops"] = {str(n): p for n, p in opts.peaks.items()}
    print("FMA peak GFLOP/s: " + ", ".join(f"{p:.1f} at {n} thread(s)" if p else f"n/a at {n} thread(s)"
                                           for n, p in opts.peaks.items()), flush=True)
    for warning in peak_warnings(opts.peaks):
        meta["warnings"].append(warning)
        print(f"warning: {warning}")

    rows: list[BenchRow] = []
    with tempfile.TemporaryDirectory(prefix="irc-bench-") as tmp:
        for spec in specs:
            print(f"  {spec.name}: {spec.description} ...", flush=True)
            model_rows = bench_model(spec, opts, Path(tmp))
            for r in model_rows:
                print(f"  {spec.name} @ {r.threads} threads: "
                      + ", ".join(f"{c} {fmt_ratio(r, c)}" for c in COMPARED) + f" ({check_cell(r)})", flush=True)
            rows += model_rows

    meta["load_average"]["end"] = end = load_average()
    if end and load_warning():
        meta["warnings"].append(f"at end: 1-min load average {end[0]:.1f} on {os.cpu_count()} CPUs: "
                                "other processes were competing for the cores during the run")
    with writing_to(args.out):
        report = markdown_report(rows, meta)
        (args.out / BENCH_MD).write_text(report)
        (args.out / BENCH_JSON).write_text(json.dumps(json_report(rows, meta), indent=2) + "\n")
        plot_ratios(rows, args.out / BENCH_PNG)

    print()
    print(render_markdown(*summary_rows(rows)))
    for note in notes(rows):
        print("\n" + note)
    print(f"\n{RATIO_NOTE}")
    print(f"load average at end (1/5/15 min): {meta['load_average']['end']}")
    for w in meta["warnings"]:
        print(f"warning: {w}")
    print(f"wrote {args.out / BENCH_MD}, {args.out / BENCH_JSON}, {args.out / BENCH_PNG}")
    bad = [f"{r.name}@{r.threads}" for r in rows if not r.irc_ok]
    if bad:
        print(f"FAIL: irc is wrong or failed on {', '.join(bad)}")
        return 1
    return 0

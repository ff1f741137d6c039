"""`irc verify`: check irc against eager PyTorch on the built-in models and time it.

For every model: build it, compile it with irc (fused and `fuse=False`), compare both
against eager with `torch.testing.assert_close`, then time eager, irc, irc-unfused and
`torch.compile` (Inductor) side by side in this process. Timing is round-robin: each
repeat calls every contender once (in rotating order), so drifts in machine load hit all
of them alike. The number of repeats is chosen from a per-model time budget.

Outputs: a table on stdout, `verify_report.md`, `final_performance_report.png` and
`scaling_comparison.png` in the output directory. The exit code is 1 if any model gives
wrong results or fails to compile with irc.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from irc.models import BUILTIN_MODELS, ModelSpec, get_model, model_flops
from irc.tools.cli import model_names, output_dir, positive_float, positive_int, writing_to

EAGER = "eager"
IRC = "irc"
IRC_UNFUSED = "irc-unfused"
INDUCTOR = "inductor"
CONTENDERS = (EAGER, IRC, IRC_UNFUSED, INDUCTOR)
#: Contenders compared against eager in speedup columns and charts.
COMPARED = (IRC, IRC_UNFUSED, INDUCTOR)
#: irc variants checked for correctness, with their `fuse=` flag.
IRC_VARIANTS = {IRC: True, IRC_UNFUSED: False}

#: One timing sample lasts at least this long (fast calls are looped inside a sample).
MIN_SAMPLE_SECONDS = 2e-3
MAX_REPEATS = 200
MAX_WARMUP_ROUNDS = 10

REPORT_MD = "verify_report.md"
PERFORMANCE_PNG = "final_performance_report.png"
SCALING_PNG = "scaling_comparison.png"


# --- results -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    """Seconds per call: median and 10th/90th percentiles over `samples` samples."""

    median: float
    p10: float
    p90: float
    samples: int
    calls_per_sample: int


@dataclass
class ModelResult:
    """Everything `irc verify` learned about one model."""

    name: str
    description: str
    flops: int
    #: irc variant -> None if it matched eager, else the error text.
    checks: dict[str, str | None] = field(default_factory=dict)
    #: contender -> seconds spent compiling (irc: `irc.compile`; inductor: first call).
    compile_seconds: dict[str, float] = field(default_factory=dict)
    timings: dict[str, Timing] = field(default_factory=dict)
    #: contender -> why it has no timing.
    unavailable: dict[str, str] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """True when every irc variant compiled and matched eager."""
        return all(err is None for err in self.checks.values())

    def speedup(self, contender: str) -> float | None:
        """eager time / contender time, or None when either is missing."""
        if EAGER not in self.timings or contender not in self.timings:
            return None
        return self.timings[EAGER].median / self.timings[contender].median

    def gflops(self, contender: str) -> float | None:
        """Achieved GFLOP/s of `contender`, or None without a timing."""
        t = self.timings.get(contender)
        return None if t is None else self.flops / t.median / 1e9


# --- checking ----------------------------------------------------------------------------


def short_error(exc: BaseException, max_lines: int = 12) -> str:
    """`Type: message`, cut to `max_lines` lines so one failure does not flood the report."""
    text = f"{type(exc).__name__}: {exc}".rstrip()
    lines = text.splitlines()
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"... ({len(lines) - max_lines} more lines)"]
    return "\n".join(lines)


def compile_irc_variants(model, inputs, expected, result: ModelResult) -> dict[str, Callable]:
    """Compile `model` with each irc variant, check it against `expected`.

    Records verdicts and compile times in `result`; returns runnable contenders (a variant
    whose output is wrong is still timed, its failed check shows in the report).
    """
    import torch

    import irc

    runners: dict[str, Callable] = {}
    for variant, fuse in IRC_VARIANTS.items():
        try:
            start = time.perf_counter()
            cm = irc.compile(model, inputs, fuse=fuse)
            result.compile_seconds[variant] = time.perf_counter() - start
            actual = cm(*inputs)
        except Exception as exc:  # noqa: BLE001 - any failure is this model's verdict
            result.checks[variant] = short_error(exc)
            result.unavailable[variant] = f"failed: {type(exc).__name__}"
            continue
        runners[variant] = _bind(cm, inputs)
        try:
            torch.testing.assert_close(actual, expected)
            result.checks[variant] = None
        except AssertionError as exc:
            result.checks[variant] = short_error(exc)
    return runners


def compile_inductor(model, inputs, result: ModelResult) -> Callable | None:
    """`torch.compile(model)` and run it once; on any error record 'n/a' with the reason."""
    import torch

    try:
        compiled = torch.compile(model)
        start = time.perf_counter()
        compiled(*inputs)
        result.compile_seconds[INDUCTOR] = time.perf_counter() - start
    except Exception as exc:  # noqa: BLE001 - Inductor problems must not stop verify
        first_line = (str(exc).strip().splitlines() or [""])[0][:200]
        result.unavailable[INDUCTOR] = f"n/a: {type(exc).__name__}: {first_line}"
        return None
    return _bind(compiled, inputs)


def _bind(fn: Callable, inputs: tuple) -> Callable[[], object]:
    """A zero-argument callable running `fn(*inputs)`."""
    return lambda: fn(*inputs)


# --- timing ------------------------------------------------------------------------------


def _time_calls(fn: Callable[[], object], calls: int) -> float:
    """Seconds per call of `fn`, averaged over `calls` back-to-back calls."""
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def _estimate_cost(fn: Callable[[], object], cheap: float = 0.05, tries: int = 5) -> float:
    """Seconds per call of `fn`: one call, or the fastest of a few when calls are cheap.

    The minimum is robust to a stray slow call (page faults, a busy machine), which would
    otherwise make a microsecond model look like a millisecond one.
    """
    best = _time_calls(fn, 1)
    if best < cheap:
        best = min([best] + [_time_calls(fn, 1) for _ in range(tries)])
    return max(best, 1e-7)


def _percentile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolated percentile `q` (0..100) of an already sorted list."""
    pos = (len(sorted_values) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def plan_repeats(round_seconds: float, budget: float, min_repeats: int) -> tuple[int, int]:
    """(warm-up rounds, timed repeats) so that the timed repeats fill about `budget` seconds."""
    warmup = max(1, min(MAX_WARMUP_ROUNDS, int(0.1 * budget / round_seconds)))
    repeats = max(min_repeats, min(MAX_REPEATS, int(0.9 * budget / round_seconds)))
    return warmup, repeats


def benchmark(
    runners: dict[str, Callable[[], object]], budget: float, min_repeats: int = 5
) -> dict[str, Timing]:
    """Time every runner round-robin and return a `Timing` per runner.

    A first call of each measures its cost; calls cheaper than `MIN_SAMPLE_SECONDS` are
    looped within one sample. Each repeat visits all runners, starting at a rotating
    position so no runner always goes first.
    """
    if not runners:
        return {}
    names = list(runners)
    cost = {name: _estimate_cost(runners[name]) for name in names}
    calls = {name: max(1, int(MIN_SAMPLE_SECONDS / cost[name])) for name in names}
    round_seconds = sum(cost[n] * calls[n] for n in names)
    warmup, repeats = plan_repeats(round_seconds, budget, min_repeats)

    samples: dict[str, list[float]] = {name: [] for name in names}
    for rnd in range(warmup + repeats):
        for i in range(len(names)):
            name = names[(rnd + i) % len(names)]
            seconds = _time_calls(runners[name], calls[name])
            if rnd >= warmup:
                samples[name].append(seconds)

    timings = {}
    for name, values in samples.items():
        values.sort()
        timings[name] = Timing(
            median=statistics.median(values),
            p10=_percentile(values, 10),
            p90=_percentile(values, 90),
            samples=len(values),
            calls_per_sample=calls[name],
        )
    return timings


# --- one model ---------------------------------------------------------------------------


def verify_model(
    spec: ModelSpec, *, budget: float, inductor: bool = True, min_repeats: int = 5
) -> ModelResult:
    """Check and time one model; never raises for a compiler failure (it becomes the verdict)."""
    import torch

    result = ModelResult(spec.name, spec.description, model_flops(spec))
    model, inputs = spec.build()
    with torch.no_grad():
        expected = model(*inputs)
        runners = {EAGER: _bind(model, inputs)}
        runners.update(compile_irc_variants(model, inputs, expected, result))
        if inductor:
            compiled = compile_inductor(model, inputs, result)
            if compiled is not None:
                runners[INDUCTOR] = compiled
        else:
            result.unavailable[INDUCTOR] = "skipped (--no-inductor)"
        result.timings = benchmark(runners, budget, min_repeats)
    del runners, model
    gc.collect()
    return result


# --- report ------------------------------------------------------------------------------


def fmt_ms(seconds: float | None) -> str:
    """Milliseconds with about three significant digits, or 'n/a'."""
    if seconds is None:
        return "n/a"
    ms = seconds * 1e3
    return f"{ms:.0f}" if ms >= 1000 else f"{ms:.3g}"


def fmt_speedup(value: float | None) -> str:
    """'1.23x' or 'n/a'."""
    return "n/a" if value is None else f"{value:.2f}x"


def summary_rows(results: list[ModelResult]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the main table (one row per model)."""
    header = ["model", "GFLOP", *(f"{c} ms" for c in CONTENDERS)]
    header += [f"{c} speedup" for c in COMPARED]
    header += ["irc GFLOP/s", "irc compile s", "check"]
    rows = []
    for r in results:
        row = [r.name, f"{r.flops / 1e9:.3g}"]
        row += [fmt_ms(r.timings[c].median if c in r.timings else None) for c in CONTENDERS]
        row += [fmt_speedup(r.speedup(c)) for c in COMPARED]
        gf = r.gflops(IRC)
        row.append("n/a" if gf is None else f"{gf:.3g}")
        cs = r.compile_seconds.get(IRC)
        row.append("n/a" if cs is None else f"{cs:.2f}")
        row.append("PASS" if r.passed else "FAIL")
        rows.append(row)
    return header, rows


def detail_rows(results: list[ModelResult]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the timing-spread table (one row per model and contender)."""
    header = ["model", "contender", "median ms", "p10 ms", "p90 ms", "samples", "calls/sample",
              "compile s"]
    rows = []
    for r in results:
        for c in CONTENDERS:
            t = r.timings.get(c)
            cs = r.compile_seconds.get(c)
            compile_text = "" if cs is None else f"{cs:.2f}"
            if t is None:
                rows.append([r.name, c, r.unavailable.get(c, "n/a"), "", "", "", "", compile_text])
            else:
                rows.append([r.name, c, fmt_ms(t.median), fmt_ms(t.p10), fmt_ms(t.p90),
                             str(t.samples), str(t.calls_per_sample), compile_text])
    return header, rows


def render_text(header: list[str], rows: list[list[str]]) -> str:
    """A plain aligned table for the terminal."""
    widths = [max(len(x) for x in col) for col in zip(header, *rows)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows]
    return "\n".join(lines)


def render_markdown(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub-flavoured markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def failure_notes(results: list[ModelResult]) -> list[str]:
    """One paragraph per failed check and per unavailable contender."""
    notes = []
    for r in results:
        for variant, err in r.checks.items():
            if err is not None:
                notes.append(f"{r.name} / {variant}: FAIL\n{err}")
        for contender, why in r.unavailable.items():
            if contender == INDUCTOR and why.startswith("n/a"):
                notes.append(f"{r.name} / {contender}: {why}")
    return notes


def verdict(results: list[ModelResult]) -> str:
    """'PASS (3/3 models)' or 'FAIL (...)'."""
    ok = sum(r.passed for r in results)
    word = "PASS" if ok == len(results) else "FAIL"
    return f"{word} ({ok}/{len(results)} models match eager)"


def load_warning() -> str | None:
    """A warning when other processes keep the CPUs busy (timings are then unreliable)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # not available on this platform
        return None
    cpus = os.cpu_count() or 1
    if load - 1 < 0.5 * cpus:  # this process itself accounts for about 1
        return None
    return (f"machine busy: 1-min load average {load:.1f} on {cpus} CPUs before timing; "
            "other processes compete for the cores, so timings may be noisy")


def write_markdown(results: list[ModelResult], path: Path, threads: int, warning: str | None = None) -> None:
    """Write the full report (summary, timing detail, notes, verdict) as markdown."""
    parts = [
        "# irc verify report",
        "",
        f"- threads: {threads} (`torch.get_num_threads()`)",
        f"- verdict: **{verdict(results)}**",
        "- speedup = eager time / contender time; times are medians per forward call",
        *([f"- warning: {warning}"] if warning else []),
        "",
        "## Summary",
        "",
        render_markdown(*summary_rows(results)),
        "",
        "## Timing detail",
        "",
        render_markdown(*detail_rows(results)),
    ]
    notes = failure_notes(results)
    if notes:
        parts += ["", "## Notes", ""]
        parts += [f"```\n{note}\n```" for note in notes]
    path.write_text("\n".join(parts) + "\n")


# --- charts ------------------------------------------------------------------------------

COLOURS = {IRC: "#1f77b4", IRC_UNFUSED: "#9ecae1", INDUCTOR: "#ff7f0e"}


def _speedup_axis(ax, values: list[float]) -> None:
    """Scale the y axis for speedups: log (ticks 0.1x 0.2x 0.5x 1x ...) when they span over 20x."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    values = [v for v in values if v] + [1.0]
    if max(values) / min(values) > 20:
        ax.set_yscale("log")
        ax.set_ylim(min(values) / 1.5, max(values) * 1.5)
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_minor_formatter(NullFormatter())
    else:
        ax.set_ylim(0, max(values) * 1.18)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))


def plot_speedups(results: list[ModelResult], path: Path, threads: int) -> None:
    """Grouped bars: speedup vs eager per model for irc, irc-unfused and Inductor."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    width = 0.8 / len(COMPARED)
    fig, ax = plt.subplots(figsize=(max(6.0, 2.2 * len(results) + 2), 4.8))
    values = []
    for i, contender in enumerate(COMPARED):
        for j, r in enumerate(results):
            x = j + (i - (len(COMPARED) - 1) / 2) * width
            s = r.speedup(contender)
            if s is None:
                ax.text(x, 0.02, "n/a", ha="center", va="bottom", fontsize=8, rotation=90,
                        transform=ax.get_xaxis_transform())
                continue
            values.append(s)
            ax.bar(x, s, width, color=COLOURS[contender], label=contender)
            ax.text(x, s, f"{s:.2f}x", ha="center", va="bottom", fontsize=8)
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1, label="eager (1.0x)")
    _speedup_axis(ax, values)
    ax.set_xticks(range(len(results)), [r.name for r in results])
    ax.set_ylabel("speedup vs eager PyTorch (higher is better)")
    ax.set_title(f"irc vs eager and Inductor ({threads} threads)")
    _dedup_legend(ax, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=4, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_scaling(results: list[ModelResult], path: Path, threads: int) -> None:
    """Speedup vs eager against FLOPs per forward (log x), one line per contender."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ordered = sorted(results, key=lambda r: r.flops)
    fig, ax = plt.subplots(figsize=(7, 4.8))
    values = []
    for contender in COMPARED:
        points = [(r.flops, r.speedup(contender)) for r in ordered]
        points = [(f, s) for f, s in points if s is not None]
        if not points:
            continue
        xs, ys = zip(*points)
        values += ys
        ax.plot(xs, ys, marker="o", color=COLOURS[contender], label=contender)
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1, label="eager (1.0x)")
    ax.set_xscale("log")
    _speedup_axis(ax, values)
    names = ax.secondary_xaxis("top")
    names.set_xticks([r.flops for r in ordered], [r.name for r in ordered], fontsize=8)
    names.tick_params(which="minor", top=False)
    if len(ordered) == 1:
        f = ordered[0].flops
        ax.set_xlim(f / 10, f * 10)
    else:
        ax.set_xlim(ordered[0].flops / 3, ordered[-1].flops * 3)
    ax.set_xlabel("FLOPs per forward call (log scale)")
    ax.set_ylabel("speedup vs eager PyTorch")
    ax.set_title(f"Speedup as models grow ({threads} threads)", pad=22)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=4, frameon=False)
    ax.grid(True, which="major", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _dedup_legend(ax, **legend_kwargs) -> None:
    """Show each legend label once."""
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(unique.values(), unique.keys(), **legend_kwargs)


# --- command line ------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `irc verify`."""
    parser.add_argument("--models", type=model_names, help="comma-separated built-in model names "
                        f"(default: all: {','.join(BUILTIN_MODELS)})")
    parser.add_argument("--out", type=output_dir, default=Path("."),
                        help="directory for the report and charts (default: .)")
    parser.add_argument("--budget", type=positive_float, default=3.0,
                        help="timing seconds per model, shared by all contenders (default: 3)")
    parser.add_argument("--min-repeats", type=positive_int, default=5,
                        help="timed repeats per contender at least (default: 5)")
    parser.add_argument("--threads", type=positive_int, help="torch.set_num_threads(N); irc, eager and Inductor all use it")
    parser.add_argument("--no-inductor", dest="inductor", action="store_false",
                        help="do not time torch.compile (Inductor)")


def run(args: argparse.Namespace) -> int:
    """Entry point of `irc verify`; returns the exit code."""
    names = args.models or list(BUILTIN_MODELS)
    specs = [get_model(n) for n in names]  # fail fast on a typo, before any work
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)  # irc's OpenMP kernels follow torch's thread count
    threads = torch.get_num_threads()
    print(f"irc verify: {len(specs)} model(s), {threads} threads, "
          f"budget {args.budget:g}s per model, inductor {'on' if args.inductor else 'off'}")
    warning = load_warning()
    if warning:
        print(f"warning: {warning}")

    results = []
    for spec in specs:
        print(f"  {spec.name}: {spec.description} ...", flush=True)
        result = verify_model(spec, budget=args.budget, inductor=args.inductor,
                              min_repeats=args.min_repeats)
        print(f"  {spec.name}: {'PASS' if result.passed else 'FAIL'}", flush=True)
        results.append(result)

    print()
    print(render_text(*summary_rows(results)))
    for note in failure_notes(results):
        print("\n" + note)

    with writing_to(args.out):
        write_markdown(results, args.out / REPORT_MD, threads, warning)
        plot_speedups(results, args.out / PERFORMANCE_PNG, threads)
        plot_scaling(results, args.out / SCALING_PNG, threads)
    print(f"\nthreads: {threads}")
    print(f"verdict: {verdict(results)}")
    print(f"wrote {args.out / REPORT_MD}, {args.out / PERFORMANCE_PNG}, {args.out / SCALING_PNG}")
    return 0 if all(r.passed for r in results) else 1

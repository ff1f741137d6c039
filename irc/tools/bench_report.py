"""`irc bench`'s results and its report: the contenders, one `BenchRow` per model and thread
count, and what is written from them: the tables (`bench.md`, also printed), every raw number
(`bench.json`) and the ratio plot (`bench.png`). The measuring is in irc/tools/bench.py.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from irc.tools.verify import COLOURS, ModelResult, _dedup_legend, _speedup_axis, fmt_ms, render_markdown

EAGER = "eager"
IRC = "irc"
INDUCTOR = "inductor"
ORT = "onnxruntime"
OPENVINO = "openvino"
CONTENDERS = (EAGER, IRC, INDUCTOR, ORT, OPENVINO)
#: Contenders with a ratio to eager.
COMPARED = (IRC, INDUCTOR, ORT, OPENVINO)
#: The contenders irc is measured against in the "best peer" columns.
PEERS = (EAGER, INDUCTOR, ORT, OPENVINO)
BAR_COLOURS = {IRC: COLOURS[IRC], INDUCTOR: COLOURS[INDUCTOR], ORT: "#2ca02c", OPENVINO: "#9467bd"}

BENCH_MD = "bench.md"
BENCH_JSON = "bench.json"
BENCH_PNG = "bench.png"


# --- results -----------------------------------------------------------------------------


@dataclass
class BenchRow(ModelResult):
    """One model (`name`) at one thread count: checks, compile times and timings of every contender.

    `checks` has irc, Inductor, ONNX Runtime and OpenVINO; `compile_seconds` has irc-cold,
    irc-warm, inductor, onnx-export, onnxruntime-session, openvino-convert and openvino-compile;
    `unavailable` says why a contender has no timing ('n/a: ...', 'failed: ...', 'skipped ...').
    """

    threads: int = 1
    #: irc-cold, irc-warm -> C++ compiler runs (1 and 0 when the cache did its job). Inductor's
    #: compile seconds are its first call after `torch._dynamo.reset()`, with whatever its own
    #: on-disk caches hold.
    irc_compiler_runs: dict[str, int] = field(default_factory=dict)
    #: The machine's measured FMA peak at this row's thread count (irc/tools/roofline.py), or
    #: None when it was not measured (or could not be).
    peak_gflops: float | None = None

    @property
    def irc_ok(self) -> bool:
        """True when irc compiled and its output matched eager."""
        return self.checks.get(IRC, "not compiled") is None

    def wrong(self, contender: str) -> bool:
        """True when `contender` ran but its output did not match eager."""
        return self.checks.get(contender) is not None and contender in self.timings

    def ratio(self, contender: str) -> float | None:
        """Contender latency / eager latency (lower is better), or None when either is missing."""
        speedup = self.speedup(contender)
        return None if speedup is None else 1 / speedup

    def peak_share(self, contender: str) -> float | None:
        """The contender's GFLOP/s / the FMA peak (0.25 = 25% of peak), or None when the model has
        no FLOP count, the contender no timing, or the row no peak."""
        gflops = self.gflops(contender)
        if not self.flops or gflops is None or not self.peak_gflops:
            return None
        return gflops / self.peak_gflops

    def best_peer(self) -> str | None:
        """The fastest of eager, Inductor, ONNX Runtime and OpenVINO with a timing and a correct
        output (a WRONG contender's speed is not a bar to measure against), or None."""
        timed = [c for c in PEERS if c in self.timings and not self.wrong(c)]
        return min(timed, key=lambda c: self.timings[c].median, default=None)

    def ratio_to_best_peer(self) -> float | None:
        """irc latency / the best peer's latency (below 1: irc beats all of them), or None."""
        peer = self.best_peer()
        if peer is None or IRC not in self.timings:
            return None
        return self.timings[IRC].median / self.timings[peer].median

    def status(self, contender: str) -> str:
        """'ok', 'WRONG', or why there is no timing."""
        if contender in self.unavailable:
            return self.unavailable[contender]
        return "WRONG" if self.checks.get(contender) is not None else "ok"


# --- report ------------------------------------------------------------------------------

RATIO_NOTE = "ratio = contender latency / eager latency (lower is better; below 1 is faster than eager)"
PEAK_NOTE = ("% of peak = GFLOP/s / the FMA peak measured at the row's thread count and the Target's vector width "
             "(irc/tools/roofline.py; peak GFLOP/s column)")
BEST_PEER_NOTE = ("irc / best peer = irc latency / the fastest correct one of eager, inductor, onnxruntime and "
                  "openvino (best peer: which); below 1 irc beats them all")


def fmt_ratio(row: BenchRow, contender: str) -> str:
    """'0.43', '0.43 WRONG' or 'n/a'."""
    r = row.ratio(contender)
    if r is None:
        return "n/a"
    return ratio_text(r) + (" WRONG" if row.wrong(contender) else "")


def ratio_text(ratio: float) -> str:
    """Two decimals ('0.43'), or two significant digits below 0.1 ('0.0042')."""
    return f"{ratio:.2f}" if ratio >= 0.1 else f"{ratio:.2g}"


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def fmt_share(share: float | None) -> str:
    """A share of the peak as a percentage: '23%', '0.41%' below 1%, 'n/a'."""
    if share is None:
        return "n/a"
    percent = 100 * share
    return f"{percent:.0f}%" if percent >= 1 else f"{percent:.2g}%"


def fmt_best_peer(row: BenchRow) -> tuple[str, str]:
    """('0.62', 'inductor'): irc / the best peer and which peer that is; 'n/a' where missing."""
    ratio, peer = row.ratio_to_best_peer(), row.best_peer()
    cell = "n/a" if ratio is None else ratio_text(ratio) + (" WRONG" if row.wrong(IRC) else "")
    return cell, peer or "n/a"


def check_cell(row: BenchRow) -> str:
    """'ok', or which contenders are wrong or failed."""
    bad = [f"{c} WRONG" for c in COMPARED if row.wrong(c)]
    bad += [f"{c} failed" for c in COMPARED if row.unavailable.get(c, "").startswith("failed")]
    return ", ".join(bad) or "ok"


def summary_rows(rows: list[BenchRow]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the main table: one row per model and thread count."""
    header = ["model", "threads", "GFLOP", *(f"{c} ms" for c in CONTENDERS)]
    header += [f"{c} / eager" for c in COMPARED]
    header += ["irc / best peer", "best peer", "irc GFLOP/s", "irc % of peak", "peak GFLOP/s",
               "irc compile s cold", "irc compile s warm", "inductor compile s", "check"]
    table = []
    for r in rows:
        cells = [r.name, str(r.threads), f"{r.flops / 1e9:.3g}"]
        cells += [fmt_ms(r.timings[c].median if c in r.timings else None) for c in CONTENDERS]
        cells += [fmt_ratio(r, c) for c in COMPARED]
        cells += fmt_best_peer(r)
        cells += [_fmt(r.gflops(IRC), ".3g"), fmt_share(r.peak_share(IRC)), _fmt(r.peak_gflops, ".4g")]
        cells += [_fmt(r.compile_seconds.get(k), ".2f") for k in ("irc-cold", "irc-warm", INDUCTOR)]
        cells.append(check_cell(r))
        table.append(cells)
    return header, table


def detail_rows(rows: list[BenchRow]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the spread table: one row per model, thread count and contender."""
    header = ["model", "threads", "contender", "median ms", "p10 ms", "p90 ms", "/ eager", "GFLOP/s",
              "% of peak", "samples", "calls/sample", "result"]
    table = []
    for r in rows:
        for c in CONTENDERS:
            t = r.timings.get(c)
            if t is None:
                table.append([r.name, str(r.threads), c, "", "", "", "", "", "", "", "", r.status(c)])
                continue
            ratio = "1" if c == EAGER else _fmt(r.ratio(c), ".3f")
            table.append([r.name, str(r.threads), c, fmt_ms(t.median), fmt_ms(t.p10), fmt_ms(t.p90), ratio,
                          _fmt(r.gflops(c), ".3g"), fmt_share(r.peak_share(c)), str(t.samples),
                          str(t.calls_per_sample), r.status(c)])
    return header, table


def notes(rows: list[BenchRow]) -> list[str]:
    """One paragraph per wrong, failed or missing contender (each distinct text once)."""
    out: list[str] = []
    for r in rows:
        for c in COMPARED:
            why, err = r.unavailable.get(c), r.checks.get(c)
            if (why or "").startswith("skipped") or not (why or err):
                continue
            text = f"{r.name} / {c}: {why or 'WRONG'}" + (f"\n{err}" if err else "")
            if text not in out:
                out.append(text)
    return out


def markdown_report(rows: list[BenchRow], meta: dict) -> str:
    """The whole `bench.md`: how it was run, the table, the spread, the notes."""
    loads = meta["load_average"]
    parts = [
        "# irc bench",
        "",
        f"- command: `{meta['command']}`",
        f"- machine: {meta['cpu']}, {meta['cpus']} CPUs; torch {meta['torch']}, "
        f"onnxruntime {meta['onnxruntime'] or 'not installed'}, openvino {meta.get('openvino') or 'not installed'}",
        f"- load average (1/5/15 min) at start {loads['start']}, at end {loads['end']}",
        *([f"- warning: {w}" for w in meta["warnings"]]),
        f"- {RATIO_NOTE}",
        "- times are medians per forward call of interleaved round-robin repeats; GFLOP/s = FLOPs / median",
        f"- {PEAK_NOTE}",
        f"- {BEST_PEER_NOTE}",
        "- ONNX Runtime's intra-op threads do not spin between calls (they would hold a core during the other contenders' turns)",
        "- OpenVINO: f32 inference precision, latency hint, one stream of as many threads as the row, not pinned; "
        "inputs bound once as OpenVINO tensors sharing the torch tensors' memory",
        "",
        render_markdown(*summary_rows(rows)),
        "",
        "## Timing spread",
        "",
        render_markdown(*detail_rows(rows)),
    ]
    found = notes(rows)
    if found:
        parts += ["", "## Notes", ""] + [f"```\n{n}\n```" for n in found]
    return "\n".join(parts) + "\n"


def json_report(rows: list[BenchRow], meta: dict) -> dict:
    """Every raw number: the run's metadata and, per row, each contender's timing and verdict."""
    results = []
    for r in rows:
        results.append({"model": r.name, "description": r.description, "flops": r.flops,
                        "threads": r.threads, "compile_seconds": r.compile_seconds,
                        "irc_compiler_runs": r.irc_compiler_runs, "peak_gflops": r.peak_gflops,
                        "best_peer": {"contender": r.best_peer(), "irc_ratio": r.ratio_to_best_peer()},
                        "contenders": {c: contender_json(r, c) for c in CONTENDERS}})
    return {**meta, "ratio": RATIO_NOTE, "peak_share": PEAK_NOTE, "best_peer": BEST_PEER_NOTE, "results": results}


def contender_json(r: BenchRow, c: str) -> dict:
    """One contender of a row: its timing (seconds per call), ratio to eager, GFLOP/s, share of the
    FMA peak (a fraction: 0.25 = 25%) and verdict."""
    t = r.timings.get(c)
    return {
        "timing": None if t is None else {**asdict(t), "unit": "seconds per call"},
        "ratio_to_eager": r.ratio(c) if c != EAGER else (1.0 if t else None),
        "gflops": r.gflops(c),
        "peak_share": r.peak_share(c),
        "status": r.status(c),
        "error": r.checks.get(c),
    }


def plot_ratios(rows: list[BenchRow], path: Path, stacked: bool = False, title: str = "irc bench") -> None:
    """Grouped bars per thread count: latency / eager per model for irc, Inductor, ORT and OpenVINO. The
    thread counts' panels side by side, or one above the other (`stacked`: many rows per count)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    counts = sorted({r.threads for r in rows})
    models = list(dict.fromkeys(r.name for r in rows))
    width = 0.8 / len(COMPARED)
    panel = max(6.0, (1.1 if stacked else 1.6) * len(models) + 2)
    if stacked:
        fig, columns = plt.subplots(len(counts), 1, figsize=(panel, 4.8 * len(counts)), squeeze=False, sharey=True)
        axes = [[row[0] for row in columns]]
    else:
        fig, axes = plt.subplots(1, len(counts), figsize=(panel * len(counts), 4.8), squeeze=False, sharey=True)
    values = [v for r in rows for c in COMPARED if (v := r.ratio(c)) is not None]
    for ax, threads in zip(axes[0], counts):
        by_model = {r.name: r for r in rows if r.threads == threads}
        for i, contender in enumerate(COMPARED):
            for j, name in enumerate(models):
                x = j + (i - (len(COMPARED) - 1) / 2) * width
                r = by_model.get(name)
                v = r.ratio(contender) if r else None
                if v is None:
                    ax.text(x, 0.02, "n/a", ha="center", va="bottom", fontsize=8, rotation=90,
                            transform=ax.get_xaxis_transform())
                    continue
                wrong = r.wrong(contender)
                ax.bar(x, v, width, color=BAR_COLOURS[contender], hatch="xx" if wrong else None,
                       label=f"{contender} (WRONG output)" if wrong else contender)
                ax.text(x, v, ratio_text(v) + ("\nWRONG" if wrong else ""), ha="center", va="bottom", fontsize=7)
        ax.axhline(1.0, color="black", linestyle="--", linewidth=1, label="eager (1.0)")
        _speedup_axis(ax, values)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))  # ratios, not speedups
        ax.set_xticks(range(len(models)), models, rotation=20, ha="right", fontsize=8)
        ax.set_xlim(-0.5, len(models) - 0.5)
        ax.set_title(f"{threads} thread{'s' if threads != 1 else ''}")
    for ax in axes[0][: len(counts) if stacked else 1]:
        ax.set_ylabel("latency / eager PyTorch (lower is better)")
    _dedup_legend(axes[0][-1] if stacked else axes[0][0], loc="upper left", bbox_to_anchor=(0.0, -0.2), ncol=5,
                  frameon=False)
    fig.suptitle(f"{title}: latency relative to eager")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)

"""The language-model section of `irc bench` (`irc bench --lm`): its results and its report.

One `LMRow` per model, phase (prefill or decode), shape and thread count; one `LMSection` per
model and thread count (the rows, irc's native builds for the whole section, its wall time).
Written as `bench-lm.md` (also printed), `bench-lm.json` (every raw number) and `bench-lm.png`
(ratios to eager, irc/tools/bench_report.py's plot). The measuring is in irc/tools/bench_lm.py.

Issue 12's targets, at every thread count: prefill and decode each at most 0.5x eager's latency
and faster than Inductor. A row meets them when irc is correct, its ratio to eager is <= 0.5 and
its median is below Inductor's; a phase of a section meets them when every row of it does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from irc.tools.bench_report import (
    COMPARED,
    CONTENDERS,
    EAGER,
    INDUCTOR,
    IRC,
    RATIO_NOTE,
    BenchRow,
    check_cell,
    contender_json,
    detail_rows,
    fmt_ratio,
    notes,
)
from irc.tools.verify import fmt_ms, render_markdown

LM_MD = "bench-lm.md"
LM_JSON = "bench-lm.json"
LM_PNG = "bench-lm.png"

PREFILL = "prefill"
DECODE = "decode"
PHASES = (PREFILL, DECODE)
#: Issue 12: irc's latency at most this fraction of eager's (and below Inductor's).
TARGET_RATIO = 0.5
#: A row was timed on a busy machine when its widest p90 / p10 exceeds NOISY_SPREAD, or when
#: eager took more than NOISY_SLOWDOWN times its time at the fewest threads for the same case
#: (OpenMP threads waiting for a core other processes hold: steady, so the spread misses it).
NOISY_SPREAD = 2.0
NOISY_SLOWDOWN = 1.5


@dataclass
class LMRow(BenchRow):
    """One case (a prefill shape or a decode cache length) of one model at one thread count.

    `name` is "MODEL PHASE SHAPE"; `flops` the matrix-product FLOPs eager ran for one call
    (torch.profiler); `compile_seconds` holds each compiled contender's first call at this case
    ("irc", "inductor": compiling included) and the ONNX export of this phase's graph.
    """

    model: str = ""
    phase: str = PREFILL
    shape: str = ""
    #: Share of eager's matmul FLOPs that PyTorch did not run in irc's checked call (None: no irc).
    irc_native: float | None = None
    #: C++ compiler runs irc made while this row was being timed (0 unless a compile leaked in).
    irc_builds_while_timed: int = 0
    #: Eager's median here / eager's median at the same case with the fewest threads timed (None
    #: at that count itself, or without both timings); set by `mark_slowdowns`.
    eager_slowdown: float | None = None

    def spread(self) -> float | None:
        """The widest p90 / p10 among the timed contenders (None without timings)."""
        spreads = [t.p90 / t.p10 for t in self.timings.values() if t.p10 > 0]
        return max(spreads) if spreads else None

    @property
    def noisy(self) -> bool:
        """True when the machine was visibly busy while this row was timed (see NOISY_SPREAD)."""
        return (self.spread() or 0) > NOISY_SPREAD or (self.eager_slowdown or 0) > NOISY_SLOWDOWN

    def target(self) -> str:
        """'met', or what misses issue 12's target ('n/a: ...' when irc has no timing)."""
        ratio = self.ratio(IRC)
        if ratio is None:
            return f"n/a: irc {self.status(IRC)}"
        missed = []
        if self.wrong(IRC):
            missed.append("WRONG")
        if ratio > TARGET_RATIO:
            missed.append(f"{ratio:.2f}x eager > {TARGET_RATIO}")
        inductor = self.timings.get(INDUCTOR)
        if inductor is None:
            missed.append("no Inductor timing")
        elif self.timings[IRC].median >= inductor.median:
            missed.append("not faster than Inductor")
        verdict = "no: " + ", ".join(missed) if missed else "met"
        return verdict + " (NOISY)" if self.noisy else verdict


@dataclass
class LMSection:
    """One model at one thread count: its rows and what irc built for all of them."""

    model: str
    description: str
    threads: int
    rows: list[LMRow] = field(default_factory=list)
    #: C++ compiler runs and distinct native libraries loaded (irc.runtime's counters) over the
    #: whole section, in a fresh IRC_CACHE_DIR; None when irc was not run.
    irc_compiler_runs: int | None = None
    irc_libraries: int | None = None
    seconds: float = 0.0
    #: Distinct warnings irc logged (why it ran something in eager PyTorch).
    irc_warnings: list[str] = field(default_factory=list)

    def phase_target(self, phase: str) -> str:
        """'met' when every row of `phase` meets the target, else 'no (k/n met)'; '-' without rows."""
        rows = [r for r in self.rows if r.phase == phase]
        if not rows:
            return "-"
        met = sum(r.target().startswith("met") for r in rows)
        noisy = sum(r.noisy for r in rows)
        verdict = "met" if met == len(rows) else f"no ({met}/{len(rows)} met)"
        return verdict + (f" ({noisy} NOISY)" if noisy else "")


def mark_slowdowns(sections: list[LMSection]) -> None:
    """Set each row's `eager_slowdown` against the same model and case at the fewest threads."""
    fewest: dict[str, LMRow] = {}
    for s in sorted(sections, key=lambda s: s.threads):
        for r in s.rows:
            base = fewest.setdefault(r.name, r)
            if base is not r and EAGER in base.timings and EAGER in r.timings:
                r.eager_slowdown = r.timings[EAGER].median / base.timings[EAGER].median


def _pct(share: float | None) -> str:
    return "n/a" if share is None else f"{100 * share:.0f}%"


def _seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def summary_rows(sections: list[LMSection]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the main table: one row per model, thread count, phase and shape."""
    header = ["model", "threads", "phase", "shape", *(f"{c} ms" for c in CONTENDERS)]
    header += [f"{c} / eager" for c in COMPARED]
    header += ["irc native", "irc first call s", "inductor first call s", "noise", "target", "check"]
    table = []
    for s in sections:
        for r in s.rows:
            cells = [r.model, str(r.threads), r.phase, r.shape]
            cells += [fmt_ms(r.timings[c].median if c in r.timings else None) for c in CONTENDERS]
            cells += [fmt_ratio(r, c) for c in COMPARED]
            cells += [_pct(r.irc_native), _seconds(r.compile_seconds.get(IRC)),
                      _seconds(r.compile_seconds.get(INDUCTOR)), _noise(r), r.target(), check_cell(r)]
            table.append(cells)
    return header, table


def section_rows(sections: list[LMSection]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the per-section table: builds, targets and wall time per model and thread count."""
    header = ["model", "threads", "irc g++ runs", "irc libraries", "irc builds while timed",
              "prefill target", "decode target", "section s"]
    table = []
    for s in sections:
        leaked = sum(r.irc_builds_while_timed for r in s.rows)
        table.append([s.model, str(s.threads), _count(s.irc_compiler_runs), _count(s.irc_libraries), str(leaked),
                      s.phase_target(PREFILL), s.phase_target(DECODE), f"{s.seconds:.0f}"])
    return header, table


def _noise(row: LMRow) -> str:
    """'1.3', or '1.3, eager 9.5x' (its time at the fewest threads), + ' NOISY' when `row.noisy`."""
    spread = row.spread()
    text = "n/a" if spread is None else f"{spread:.1f}"
    if row.eager_slowdown is not None and row.eager_slowdown > NOISY_SLOWDOWN:
        slow = row.eager_slowdown
        text += f", eager {slow:.1f}x" if slow < 10 else f", eager {slow:.0f}x"
    return text + (" NOISY" if row.noisy else "")


def _count(value: int | None) -> str:
    return "n/a" if value is None else str(value)


def all_rows(sections: list[LMSection]) -> list[LMRow]:
    return [r for s in sections for r in s.rows]


def lm_notes(sections: list[LMSection]) -> list[str]:
    """The contenders' failures and wrong outputs (bench's notes), then what irc said it left to eager."""
    out = notes(all_rows(sections))
    for s in sections:
        for w in s.irc_warnings:
            text = f"{s.model} / irc logged: {w}"
            if text not in out:
                out.append(text)
    return out


def method_lines(meta: dict) -> list[str]:
    """How the section measures, as markdown list items."""
    return [
        f"- {RATIO_NOTE}",
        "- times are medians per forward call of interleaved round-robin repeats (each case on its own)",
        f"- prefill: one forward over the whole prompt (batch x length), {meta['prefill_note']}",
        f"- decode: {meta['decode_note']}",
        f"- contenders: {meta['contenders_note']}",
        "- irc native: share of eager's matmul FLOPs (torch.profiler) that PyTorch did not run in irc's call; "
        "0% means irc ran that case in eager PyTorch",
        f"- target (issue 12): irc correct, <= {TARGET_RATIO}x eager and faster than Inductor, per row; "
        "a section's phase meets it when all its rows do",
        f"- noise: the widest p90/p10 among the row's contenders, and eager's time over its time at the fewest "
        f"threads for the same case when above {NOISY_SLOWDOWN:g}; NOISY when the spread is above {NOISY_SPREAD:g} "
        f"or eager above {NOISY_SLOWDOWN:g}x (other processes held the cores while the row was timed: its ratios, "
        "and whether it meets the target, are not to be trusted)",
        "- irc g++ runs / libraries: irc.runtime.compiler_invocations() / libraries_loaded() over the whole "
        "section (every prefill shape and decode length) in a fresh IRC_CACHE_DIR",
        "- % of peak (timing spread): GFLOP/s (eager's matmul FLOPs / median) / the FMA peak measured at the row's "
        f"thread count {meta.get('peak_gflops') or {}} (irc/tools/roofline.py)",
    ]


def markdown_report(sections: list[LMSection], meta: dict) -> str:
    """The whole `bench-lm.md`: how it was run, the tables, the spread, the notes."""
    loads = meta["load_average"]
    parts = [
        "# irc bench --lm",
        "",
        f"- command: `{meta['command']}`",
        f"- machine: {meta['cpu']}, {meta['cpus']} CPUs; torch {meta['torch']}, transformers "
        f"{meta['transformers']}, onnxruntime {meta['onnxruntime'] or 'not installed'}, "
        f"openvino {meta.get('openvino') or 'not installed'}",
        f"- load average (1/5/15 min) at start {loads['start']}, at end {loads['end']}; "
        f"the section took {meta['seconds']:.0f} s",
        *([f"- warning: {w}" for w in meta["warnings"]]),
        *method_lines(meta),
        "",
        render_markdown(*summary_rows(sections)),
        "",
        "## Builds and targets per model and thread count",
        "",
        render_markdown(*section_rows(sections)),
        "",
        "## Timing spread",
        "",
        render_markdown(*detail_rows(all_rows(sections))),
    ]
    found = lm_notes(sections)
    if found:
        parts += ["", "## Notes", ""] + [f"```\n{n}\n```" for n in found]
    return "\n".join(parts) + "\n"


def json_report(sections: list[LMSection], meta: dict) -> dict:
    """Every raw number: the run's metadata and, per section, its builds and each row's contenders."""
    out = []
    for s in sections:
        rows = [{"name": r.name, "phase": r.phase, "shape": r.shape, "flops": r.flops,
                 "compile_seconds": r.compile_seconds, "irc_native": r.irc_native,
                 "irc_builds_while_timed": r.irc_builds_while_timed, "target": r.target(),
                 "spread": r.spread(), "eager_slowdown": r.eager_slowdown, "noisy": r.noisy,
                 "contenders": {c: contender_json(r, c) for c in CONTENDERS}} for r in s.rows]
        out.append({"model": s.model, "description": s.description, "threads": s.threads,
                    "irc_compiler_runs": s.irc_compiler_runs, "irc_libraries": s.irc_libraries,
                    "seconds": s.seconds, "irc_warnings": s.irc_warnings,
                    "targets": {p: s.phase_target(p) for p in PHASES}, "rows": rows})
    return {**meta, "ratio": RATIO_NOTE, "target_ratio": TARGET_RATIO, "sections": out}


def failures(sections: list[LMSection]) -> list[str]:
    """Rows where irc was wrong or failed (not where it was skipped)."""
    return [f"{r.name}@{r.threads}" for r in all_rows(sections)
            if r.wrong(IRC) or r.status(IRC).startswith("failed")]


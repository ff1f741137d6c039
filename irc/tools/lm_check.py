"""Measure irc on the tiny language models of irc/models/lm.py (issue 12: shapes that change).

    python -m irc.tools.lm_check [--models bert,gpt2,llama] [--shapes 1x5,2x7,...] [--checks ...]

For every model, each *check* is one row of the table; everything in it is measured here, through
irc's public API only (torch.compile(backend="irc"), irc.compile, the build counters of
irc.runtime):

* `dynamic=True`, `dynamic=None`: `torch.compile(model, backend="irc", dynamic=...)` called at
  every (batch, length) shape, outputs against eager (`torch.testing.assert_close` on the logits
  and every cache tensor; the largest absolute difference is reported).
* `eager-backend`: the same with `torch.compile(backend="eager")`: the FLOP counter's own check,
  its native share must be about 0.
* `generate`, `generate+unspec`: greedy `model.generate` with `model.forward =
  torch.compile(model.forward, backend="irc", dynamic=True)` against eager's tokens, without and
  with `torch._dynamo.config.allow_unspec_int_on_nn_module=True` (GPT-2 and Llama; BERT is no
  generator).
* `fx`: `transformers.utils.fx.symbolic_trace(model, input_names=[...])`, then
  `irc.compile(traced, example_inputs)` at the first shape and the module called at every shape.

How each number is measured:

* **native share** of matmul FLOPs = 1 - (FLOPs PyTorch ran during the compiled call) / (FLOPs of
  the eager call), both counted by `torch.profiler` with `with_flops=True` over the matrix
  products it counts (`MATMUL_OPS`). irc's native code runs behind ctypes, invisible to the
  profiler; whatever irc leaves to PyTorch (a declined graph, eager nodes between partitions)
  is seen. The compiled call is profiled after a first call at the same shape, so compiling
  (and its compile-time evaluation) is not counted. A generate row compares a second generate
  call with an eager one.
* **builds**: each row runs with a fresh, empty `IRC_CACHE_DIR` (so neither the build cache nor
  the pipeline cache hides work) after `torch._dynamo.reset()`. `g++` is the number of compiler
  runs (`irc.runtime.compiler_invocations()`), `libs` the number of distinct native libraries
  loaded (`irc.runtime.libraries_loaded()`: a library found in the cache counts too). irc keeps
  no other in-process compile cache (the loaded libraries are keyed by path, and a fresh cache
  directory means fresh paths).
* **graphs**: Dynamo's `counters["stats"]["unique_graphs"]` (graphs handed to the backend),
  **recompiles** the guard failures Dynamo recorded, **breaks** `counters["graph_break"]`. For `fx`:
  the native partitions and the eager nodes of the first version (`cm.versions`, `cm.eager_nodes`).

A failure in one cell (an exception, or a row running past `--timeout` seconds) is that cell's
result; the report always completes. Issue 12's goals are shown in the `goal` column: native share
>= 90% and at most 3 libraries per model.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from irc.models.lm import INPUT_NAMES, LM_MODELS, build, lm_inputs
from irc.tools import deadline

DEFAULT_SHAPES: tuple[tuple[int, int], ...] = ((1, 5), (2, 7), (1, 16), (3, 9), (2, 32), (1, 1))
CHECKS = ("dynamic=True", "dynamic=None", "eager-backend", "generate", "generate+unspec", "fx")
GENERATORS = ("gpt2", "llama")  # models with a generate(); BertForMaskedLM is not one
NATIVE_GOAL = 0.90
LIBRARY_GOAL = 3

# The matrix products torch.profiler counts FLOPs for (torch/csrc/profiler/util.cpp). Composite ops
# (aten::linear, aten::matmul) dispatch to these and carry no FLOPs themselves, so nothing is
# counted twice. Matrix products the profiler does not count are listed in UNCOUNTED and reported.
MATMUL_OPS = frozenset({"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"})
UNCOUNTED = frozenset({
    "aten::mv", "aten::addmv", "aten::dot", "aten::vdot", "aten::addbmm", "aten::_addmm_activation",
    "aten::_scaled_dot_product_attention_math", "aten::_scaled_dot_product_flash_attention_for_cpu",
    "aten::einsum", "aten::tensordot", "aten::conv1d", "aten::convolution",
})

log = logging.getLogger("irc")


# --- counting -------------------------------------------------------------------------------


@dataclass
class Flops:
    """Matrix-product FLOPs PyTorch ran, as torch.profiler counted them."""

    flops: int = 0
    calls: int = 0
    uncounted: set[str] = field(default_factory=set)  # matrix products seen without a FLOP count

    def __iadd__(self, other: Flops) -> Flops:
        self.flops += other.flops
        self.calls += other.calls
        self.uncounted |= other.uncounted
        return self


def profile_matmuls(fn: Callable[[], Any]) -> tuple[Any, Flops]:
    """Run `fn()` under torch.profiler(with_flops=True): its result and the matmul FLOPs PyTorch ran."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], with_flops=True) as prof:
        out = fn()
    count = Flops()
    for event in prof.events():
        if event.name in MATMUL_OPS:
            count.flops += int(event.flops or 0)
            count.calls += 1
        elif event.name in UNCOUNTED:
            count.uncounted.add(event.name)
    return out, count


def native_share(eager: Flops, compiled: Flops) -> float | None:
    """1 - compiled / eager: the share of the eager call's matmul FLOPs PyTorch did not run."""
    return None if eager.flops == 0 else 1.0 - compiled.flops / eager.flops


@dataclass
class Builds:
    """Compiler runs and distinct libraries loaded since the row started (see the module doc)."""

    gxx0: int
    libs0: int

    @property
    def gxx(self) -> int:
        from irc.runtime import compiler_invocations

        return compiler_invocations() - self.gxx0

    @property
    def libs(self) -> int:
        from irc.runtime import libraries_loaded

        return libraries_loaded() - self.libs0


@contextlib.contextmanager
def fresh_state() -> Iterator[Builds]:
    """A fresh, empty IRC_CACHE_DIR and a reset Dynamo (compiled code, counters, guard failures)
    for one row; yields the row's build counters. The previous IRC_CACHE_DIR is restored after."""
    from torch._dynamo.utils import counters, guard_failures

    from irc.runtime import compiler_invocations, libraries_loaded

    torch._dynamo.reset()
    counters.clear()
    guard_failures.clear()
    old = os.environ.get("IRC_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="irc-lm-check-") as d:
        os.environ["IRC_CACHE_DIR"] = d
        try:
            yield Builds(compiler_invocations(), libraries_loaded())
        finally:
            if old is None:
                os.environ.pop("IRC_CACHE_DIR", None)
            else:
                os.environ["IRC_CACHE_DIR"] = old
            torch._dynamo.reset()


def dynamo_counts() -> dict[str, int]:
    """Since `fresh_state()`: graphs Dynamo compiled, recompiles (compiles of a frame after its
    first, from Dynamo's per-frame compile counter; a recompile's guard failures are one per cached
    entry, so they are not counted) and graph breaks."""
    from torch._dynamo import convert_frame
    from torch._dynamo.utils import counters

    return {
        "graphs": int(counters["stats"]["unique_graphs"]),
        "recompiles": sum(max(0, n - 1) for n in convert_frame.FRAME_COMPILE_COUNTER.values()),
        "breaks": int(sum(counters["graph_break"].values())),
    }


def recompile_reasons(limit: int = 4) -> list[str]:
    """The distinct guard failures that made Dynamo recompile (first line each, compile id dropped)."""
    from torch._dynamo.utils import guard_failures

    reasons = dict.fromkeys(
        r.splitlines()[0].split(": ", 1)[-1] for v in guard_failures.values() for r in v
    )
    return [short(r, 160) for r in list(reasons)[:limit]]


class CellTimeout(Exception):
    pass


def time_limit(seconds: float | None) -> contextlib.AbstractContextManager[None]:
    """Raise CellTimeout in this thread after `seconds` (irc/tools/deadline.py)."""
    return deadline.time_limit(seconds, lambda s: CellTimeout(f"timed out after {s:.0f} s"))


class IrcLog(logging.Handler):
    """Collects what logger "irc" says at INFO and above while attached (instead of printing it)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[tuple[int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((record.levelno, record.getMessage()))

    @property
    def warnings(self) -> list[str]:
        return [m for level, m in self.records if level >= logging.WARNING]

    def count(self, text: str) -> int:
        """How many messages contain `text`."""
        return sum(text in m for _, m in self.records)

    @contextlib.contextmanager
    def attached(self) -> Iterator[IrcLog]:
        propagate, level = log.propagate, log.level
        log.addHandler(self)
        log.propagate = False
        if log.getEffectiveLevel() > logging.INFO:
            log.setLevel(logging.INFO)
        try:
            yield self
        finally:
            log.removeHandler(self)
            log.propagate, log.level = propagate, level


# --- comparing outputs ------------------------------------------------------------------------


def leaves(out: Any, prefix: str = "") -> dict[str, torch.Tensor]:
    """The tensors of a model's output by path: a ModelOutput or dict by key, tuples by index,
    a transformers Cache as its legacy tuple of (key, value) per layer."""
    if isinstance(out, torch.Tensor):
        return {prefix or "out": out}
    if hasattr(out, "to_legacy_cache"):
        return leaves(out.to_legacy_cache(), prefix)
    if isinstance(out, dict):  # ModelOutput is an OrderedDict
        items = out.items()
    elif isinstance(out, (tuple, list)):
        items = enumerate(out)
    else:
        return {}
    found: dict[str, torch.Tensor] = {}
    for key, value in items:
        found.update(leaves(value, f"{prefix}.{key}" if prefix else str(key)))
    return found


@dataclass
class Compared:
    ok: bool
    max_err: float
    why: str = ""


def compare(actual: Any, expected: Any) -> Compared:
    """assert_close on every tensor of the outputs (paired by path), and the largest |difference|."""
    got, want = leaves(actual), leaves(expected)
    if set(got) != set(want):
        missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
        return Compared(False, math.nan, f"outputs differ: missing {missing[:3]}, extra {extra[:3]}")
    err = 0.0
    for key in want:
        a, e = got[key], want[key]
        if a.shape != e.shape:
            return Compared(False, math.nan, f"{key}: shape {tuple(a.shape)}, eager {tuple(e.shape)}")
        if a.numel():
            err = max(err, (a.detach().double() - e.detach().double()).abs().max().item())
    try:
        torch.testing.assert_close(got, want)
    except AssertionError as e:
        return Compared(False, err, short(str(e).strip().splitlines()[0], 100))
    return Compared(True, err)


def short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def reason(error: BaseException) -> str:
    """One line for a cell: the exception's type and the first line of its message."""
    lines = [ln for ln in str(error).splitlines() if ln.strip()]
    return short(f"{type(error).__name__}: {lines[0] if lines else ''}", 160)


# --- rows -----------------------------------------------------------------------------------


@dataclass
class Row:
    """One (model, check) cell of the table; None means not measured."""

    model: str
    check: str
    status: str = "ERROR"  # PASS / FAIL / ERROR
    shapes: str = ""  # "ok/total"
    max_err: float | None = None
    native: float | None = None  # over all shapes
    worst_native: float | None = None  # the lowest per-shape share
    gxx: int | None = None
    libs: int | None = None
    graphs: int | None = None
    recompiles: int | None = None
    breaks: int | None = None
    seconds: float = 0.0
    goal: str = ""
    note: str = ""
    details: list[str] = field(default_factory=list)


def _finish(row: Row, builds: Builds, counted_dynamo: bool = True) -> None:
    row.gxx, row.libs = builds.gxx, builds.libs
    if counted_dynamo:
        counts = dynamo_counts()
        row.graphs, row.recompiles, row.breaks = counts["graphs"], counts["recompiles"], counts["breaks"]


def _shapes_check(
    row: Row, model: torch.nn.Module, shapes: Sequence[tuple[int, int]], call: Callable[[dict], Any]
) -> None:
    """Call `call(inputs)` at every shape: a first call (compiles), then a profiled one; compare
    with eager and fill the row's errors, native shares and per-shape details."""
    eager_total, compiled_total = Flops(), Flops()
    errors, shares, passed, failures = [], [], 0, []
    for batch, length in shapes:
        inputs = lm_inputs(batch, length)
        tag = f"{batch}x{length}"
        with torch.no_grad():
            expected, eager = profile_matmuls(lambda inputs=inputs: model(**inputs))
            try:
                call(inputs)  # compiles; not profiled
                actual, compiled = profile_matmuls(lambda inputs=inputs: call(inputs))
            except CellTimeout:
                raise
            except Exception as e:
                failures.append(f"{tag}: {reason(e)}")
                row.details.append(f"{tag}: ERROR {reason(e)}")
                continue
        cmp = compare(actual, expected)
        share = native_share(eager, compiled)
        eager_total += eager
        compiled_total += compiled
        errors.append(cmp.max_err)
        shares.append(share)
        passed += cmp.ok
        if not cmp.ok:
            failures.append(f"{tag}: {cmp.why}")
        row.details.append(
            f"{tag}: {'ok' if cmp.ok else 'MISMATCH'} max|err| {cmp.max_err:.2e}, native {_pct(share)} "
            f"(eager {eager.flops} matmul FLOPs in {eager.calls} calls, compiled call {compiled.flops} in "
            f"{compiled.calls}){'' if cmp.ok else ' ' + cmp.why}"
        )
        uncounted = eager.uncounted | compiled.uncounted
        if uncounted:
            row.details.append(f"{tag}: matrix products the profiler gives no FLOPs for: {sorted(uncounted)}")
    row.shapes = f"{passed}/{len(shapes)}"
    row.max_err = max(errors) if errors else None
    row.native = native_share(eager_total, compiled_total) if errors else None
    row.worst_native = min((s for s in shares if s is not None), default=None)
    row.status = "PASS" if passed == len(shapes) else "FAIL"
    row.note = "; ".join(failures[:2])


def check_compile(name: str, shapes: Sequence[tuple[int, int]], dynamic: bool | None, backend: str = "irc") -> Row:
    """`torch.compile(model, backend=backend, dynamic=dynamic)` at every shape, against eager."""
    check = "eager-backend" if backend == "eager" else f"dynamic={dynamic}"
    row = Row(name, check)
    model = build(name)
    with fresh_state() as builds:
        compiled = torch.compile(model, backend=backend, dynamic=dynamic)
        _shapes_check(row, model, shapes, lambda inputs: compiled(**inputs))
        _finish(row, builds)
    if backend == "eager":  # the counter's own check: PyTorch ran everything
        sane = row.native is not None and abs(row.native) < 0.01
        row.status = "PASS" if sane and row.status == "PASS" else "FAIL"
        row.note = row.note or ("counter sane: ~0% native" if sane else f"counter wrong: {_pct(row.native)} native")
    return row


def check_fx(name: str, shapes: Sequence[tuple[int, int]]) -> Row:
    """transformers' fx tracer, then irc.compile on the GraphModule at the first shape; the
    compiled module is then called at every shape (each new shape is another irc version). The
    tracer sets `model.config.use_cache = False` (no cache among the input names), so eager, run
    on the same model afterwards, returns the logits only, as the traced graph does."""
    from transformers.utils.fx import symbolic_trace

    import irc

    row = Row(name, "fx")
    model = build(name)
    with fresh_state() as builds:
        traced = symbolic_trace(model, input_names=list(INPUT_NAMES))
        first = lm_inputs(*shapes[0])
        cm = irc.compile(traced, tuple(first[n] for n in INPUT_NAMES), max_versions=max(8, len(shapes)))
        version = next(iter(cm.versions.values()))
        parts = 1 if version.graph is not None else len(version.partitions)
        row.details.append(
            f"first version: {parts} native partition(s), {len(cm.eager_nodes)} eager node(s)"
            + (f": {short(', '.join(sorted({n.target for n in cm.eager_nodes})), 200)}" if cm.eager_nodes else "")
        )
        _shapes_check(row, model, shapes, lambda inputs: cm(*(inputs[n] for n in INPUT_NAMES)))
        _finish(row, builds, counted_dynamo=False)
        row.graphs = parts
        row.breaks = len(cm.eager_nodes)  # shown as "eager nodes" for this check
    return row


def check_generate(
    name: str, prompt: tuple[int, int], max_new_tokens: int, unspec_int: bool
) -> Row:
    """Greedy generate with a compiled forward against eager's tokens (two generate calls: the
    first compiles, the second is profiled for the native share)."""
    row = Row(name, "generate+unspec" if unspec_int else "generate")
    model = build(name)
    inputs = lm_inputs(*prompt)
    inputs["attention_mask"] = inputs["attention_mask"].flip(-1)  # generate wants padding on the left
    kwargs = dict(max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=0)
    with torch.no_grad():
        start = time.perf_counter()
        expected, eager = profile_matmuls(lambda: model.generate(**inputs, **kwargs))
        eager_seconds = time.perf_counter() - start
    with fresh_state() as builds, torch._dynamo.config.patch(allow_unspec_int_on_nn_module=unspec_int):
        model.forward = torch.compile(model.forward, backend="irc", dynamic=True)  # what users write
        try:
            with torch.no_grad():
                first = model.generate(**inputs, **kwargs)
                counts_first, gxx_first, libs_first = dynamo_counts(), builds.gxx, builds.libs
                with IrcLog().attached() as second_log:
                    start = time.perf_counter()
                    second, compiled = profile_matmuls(lambda: model.generate(**inputs, **kwargs))
                    second_seconds = time.perf_counter() - start
        finally:
            del model.forward  # the class's forward again
        _finish(row, builds)
        reasons = recompile_reasons()
    same = torch.equal(first, expected) and torch.equal(second, expected)
    row.status = "PASS" if same else "FAIL"
    row.shapes = f"{int(torch.equal(first, expected)) + int(torch.equal(second, expected))}/2"
    row.max_err = max(_tokens_differing(first, expected), _tokens_differing(second, expected))
    row.native = native_share(eager, compiled)
    row.worst_native = row.native
    row.details.append(
        f"prompt {inputs['input_ids'].shape[0]}x{inputs['input_ids'].shape[1]}, {max_new_tokens} new tokens; "
        f"eager {expected[0, -max_new_tokens:].tolist()}, compiled {first[0, -max_new_tokens:].tolist()} "
        f"(second call {'the same' if torch.equal(first, second) else second[0, -max_new_tokens:].tolist()})"
    )
    row.details.append(
        f"first generate: {counts_first['graphs']} graph(s), {counts_first['recompiles']} recompile(s), "
        f"{gxx_first} g++ run(s), {libs_first} librar(ies)"
    )
    row.details.append(
        f"second generate: native {_pct(row.native)} (eager generate {eager.flops} matmul FLOPs, compiled "
        f"{compiled.flops}); {row.gxx - gxx_first} more g++ run(s), {row.libs - libs_first} more librar(ies), "
        f"irc said 'rebuilding' {second_log.count('rebuilding')} time(s) and 'compiling' "
        f"{second_log.count('compiling')} time(s); {second_seconds:.2f} s (eager generate {eager_seconds:.2f} s, "
        "both profiled)"
    )
    row.details += [f"recompiled for: {r}" for r in reasons]
    if not same:
        row.note = "tokens differ from eager"
    return row


def _tokens_differing(actual: torch.Tensor, expected: torch.Tensor) -> int:
    """Positions whose token differs (a length difference counts every missing or extra token)."""
    n = min(actual.shape[-1], expected.shape[-1])
    return int((actual[..., :n] != expected[..., :n]).sum()) + abs(actual.shape[-1] - expected.shape[-1]) * len(actual)


# --- running and printing -------------------------------------------------------------------


def run_cell(fn: Callable[[], Row], model: str, check: str, timeout: float | None) -> Row:
    """One cell; any exception (or the time limit) becomes the cell's result."""
    start = time.perf_counter()
    irc_log = IrcLog()
    try:
        with irc_log.attached(), time_limit(timeout):
            row = fn()
    except BaseException as e:  # noqa: B036 - KeyboardInterrupt stops the run; the rest is the cell's result
        if isinstance(e, KeyboardInterrupt):
            raise
        row = Row(model, check, status="ERROR", note=reason(e), details=[f"where: {where(e)}"])
        if isinstance(e, CellTimeout):
            row.status = "TIMEOUT"
        with contextlib.suppress(Exception):
            torch._dynamo.reset()
    row.seconds = time.perf_counter() - start
    row.goal = goal(row)
    if irc_log.warnings:
        distinct = list(dict.fromkeys(warning_summary(m) for m in irc_log.warnings))
        row.details.append(f"irc logged {len(irc_log.warnings)} warning(s), {len(distinct)} distinct:")
        row.details += [f"  {m}" for m in distinct[:3]]
    return row


FAILED_PARTITIONS = "partitions left eager because compiling them failed"


def warning_summary(message: str) -> str:
    """An irc warning, short: its beginning, and the partitions that failed to compile if it names them."""
    head = short(message, 220)
    if FAILED_PARTITIONS in message and FAILED_PARTITIONS not in head:
        head += " ... " + short(message[message.index(FAILED_PARTITIONS):], 220)
    return head


def where(error: BaseException) -> str:
    """The innermost frame of an error's traceback, and the innermost one in irc when that is another."""
    import traceback

    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return "?"

    root = str(Path(__file__).resolve().parents[2]) + os.sep

    def fmt(f: traceback.FrameSummary) -> str:
        path = f.filename
        if "site-packages" + os.sep in path:
            path = path.split("site-packages" + os.sep, 1)[1]
        elif path.startswith(root):
            path = path[len(root):]
        return f"{path}:{f.lineno} {f.name}"

    outside = [f for f in frames if f.filename != __file__] or frames  # not the harness (nor its alarm)
    innermost = outside[-1]
    ours = next((f for f in reversed(outside) if "site-packages" not in f.filename and f is not innermost), None)
    return fmt(innermost) + (f" (from {fmt(ours)})" if ours else "")


def goal(row: Row) -> str:
    """Issue 12's goals for a row compiled by irc: native share >= 90% and at most 3 libraries."""
    if row.check == "eager-backend" or row.status in ("ERROR", "TIMEOUT"):
        return "-"
    native = row.native is not None and row.native >= NATIVE_GOAL
    libs = row.libs is not None and row.libs <= LIBRARY_GOAL
    if native and libs and row.status == "PASS":
        return "met"
    missed = [w for w, ok in (("correct", row.status == "PASS"), ("native", native), ("libs", libs)) if not ok]
    return "no: " + ",".join(missed)


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.1f}%"


def _num(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.1e}"
    return str(v)


COLUMNS = (
    ("model", lambda r: r.model), ("check", lambda r: r.check), ("status", lambda r: r.status),
    ("shapes", lambda r: r.shapes or "-"), ("max|err|", lambda r: _num(r.max_err)),
    ("native", lambda r: _pct(r.native)), ("worst", lambda r: _pct(r.worst_native)),
    ("g++", lambda r: _num(r.gxx)), ("libs", lambda r: _num(r.libs)),
    ("graphs", lambda r: _num(r.graphs)), ("recomp", lambda r: _num(r.recompiles)),
    ("breaks", lambda r: _num(r.breaks)), ("sec", lambda r: f"{r.seconds:.0f}"), ("goal", lambda r: r.goal),
)


def format_table(rows: Sequence[Row]) -> str:
    cells = [[name for name, _ in COLUMNS]] + [[get(r) for _, get in COLUMNS] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(COLUMNS))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_report(rows: Sequence[Row], shapes: Sequence[tuple[int, int]], seconds: float) -> str:
    import transformers

    from irc import __version__

    head = (
        f"irc {__version__} lm_check: torch {torch.__version__}, transformers {transformers.__version__}, "
        f"{torch.get_num_threads()} threads; shapes (batch x length) {', '.join(f'{b}x{s}' for b, s in shapes)}"
    )
    legend = (
        "native: share of eager's matmul FLOPs (torch.profiler) that PyTorch did not run in the compiled call "
        "(all shapes; worst: lowest shape).\n"
        "g++: compiler runs, libs: distinct native libraries loaded (fresh IRC_CACHE_DIR per row). "
        "graphs/recomp/breaks: Dynamo's graphs, recompiles, graph breaks (fx: native partitions / - / eager nodes).\n"
        f"goal (issue 12): correct, native >= {NATIVE_GOAL:.0%}, libs <= {LIBRARY_GOAL}. "
        "generate rows: shapes = generate calls with eager's tokens, max|err| = tokens differing."
    )
    notes = [f"{r.model} {r.check}: {r.note}" for r in rows if r.note]
    details = [f"{r.model} {r.check}:\n" + "\n".join(f"    {d}" for d in r.details) for r in rows if r.details]
    parts = [head, "", format_table(rows), "", legend]
    if notes:
        parts += ["", "Notes:", *notes]
    if details:
        parts += ["", "Details:", *details]
    parts += ["", f"total {seconds:.0f} s"]
    return "\n".join(parts)


def run(
    models: Sequence[str] = tuple(LM_MODELS), shapes: Sequence[tuple[int, int]] = DEFAULT_SHAPES,
    checks: Sequence[str] = CHECKS, prompt: tuple[int, int] = (1, 5), max_new_tokens: int = 8,
    timeout: float | None = 300.0, progress: Callable[[Row], None] | None = None,
) -> list[Row]:
    """Every (model, check) cell, in order; `progress(row)` after each."""
    cells: list[tuple[str, str, Callable[[], Row]]] = []
    for name in models:
        for check in checks:
            if check.startswith("generate") and name not in GENERATORS:
                continue
            cells.append((name, check, _cell(name, check, shapes, prompt, max_new_tokens)))
    rows = []
    for name, check, fn in cells:
        row = run_cell(fn, name, check, timeout)
        rows.append(row)
        if progress:
            progress(row)
    return rows


def _cell(name: str, check: str, shapes, prompt, max_new_tokens) -> Callable[[], Row]:
    if check == "dynamic=True":
        return lambda: check_compile(name, shapes, True)
    if check == "dynamic=None":
        return lambda: check_compile(name, shapes, None)
    if check == "eager-backend":
        return lambda: check_compile(name, shapes, True, backend="eager")
    if check in ("generate", "generate+unspec"):
        return lambda: check_generate(name, prompt, max_new_tokens, unspec_int=check == "generate+unspec")
    if check == "fx":
        return lambda: check_fx(name, shapes)
    raise ValueError(f"unknown check {check!r}; checks are: {', '.join(CHECKS)}")


def _shape(text: str) -> tuple[int, int]:
    try:
        batch, length = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a shape is BATCHxLENGTH, such as 2x7, not {text!r}") from None
    if batch < 1 or length < 1:
        raise argparse.ArgumentTypeError(f"batch and length must be at least 1: {text!r}")
    return batch, length


def _list(known: Sequence[str]) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        items = [t.strip() for t in text.split(",") if t.strip()]
        bad = [t for t in items if t not in known]
        if bad or not items:
            raise argparse.ArgumentTypeError(f"unknown {bad or 'empty list'}; choose from {', '.join(known)}")
        return items

    return parse


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m irc.tools.lm_check", description=__doc__.split("\n\n")[0])
    p.add_argument("--models", type=_list(tuple(LM_MODELS)), default=list(LM_MODELS))
    p.add_argument("--checks", type=_list(CHECKS), default=list(CHECKS))
    p.add_argument("--shapes", type=lambda t: [_shape(s) for s in t.split(",")], default=list(DEFAULT_SHAPES))
    p.add_argument("--prompt", type=_shape, default=(1, 5), help="generate's prompt, BATCHxLENGTH (default 1x5)")
    p.add_argument("--max-new-tokens", type=int, default=8)
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per row before it is cut off (0: none)")
    args = p.parse_args(argv)

    import transformers

    transformers.logging.set_verbosity_error()  # BertForMaskedLM's GenerationMixin notice, etc.
    start = time.perf_counter()

    def progress(row: Row) -> None:
        print(f"[{time.perf_counter() - start:6.0f} s] {row.model} {row.check}: {row.status} ({row.seconds:.0f} s)",
              file=sys.stderr, flush=True)

    rows = run(args.models, args.shapes, args.checks, args.prompt, args.max_new_tokens, args.timeout or None,
               progress)
    print(format_report(rows, args.shapes, time.perf_counter() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main())

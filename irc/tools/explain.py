"""What irc did to a model, computed from its IR: which rules fired where, what stayed unfused and
why, each kernel's FLOPs and bytes moved, and the intermediate traffic fusion removed.

FLOPs count floating-point operations per forward, as `irc.dialects.irt.costs` (beside the
dialect) says: a multiply-add is 2, an elementwise op counts the scalar ops of its own body (so
`gelu` costs what its formula costs). Bytes moved are the
compulsory traffic of a kernel: every distinct tensor it reads plus the one it writes, once.
Intermediate traffic is, for every tensor produced and consumed inside the function, one write
plus one read per user; fusion removes exactly the tensors that stop existing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from irc.dialects.irt import core as irt, nn as irt_nn
from irc.dialects.irt.costs import nbytes, numel, op_flops
from irc.dialects.irt.shape import ConcatOp
from irc.dialects.symbolic import dims_of, evaluate, format_dim, product
from irc.lowering.tensor.irc_fuse import fused_from, fused_names
from irc.lowering.to_loops.function import concat_copies, function_homes

BYTES = 4  # float32: every intermediate and result irc computes
VIEWS: tuple[type[Operation], ...] = (irt.ReshapeOp,)


def _storage(value: SSAValue) -> SSAValue:
    """The tensor whose buffer `value` lives in (reshapes are views)."""
    while isinstance(value.owner, VIEWS):
        value = value.owner.operands[0]
    return value


@dataclass(frozen=True)
class Kernel:
    op: str
    fused_from: tuple[str, ...]
    shape: tuple[int, ...]
    flops: int | None
    bytes: int

    @property
    def intensity(self) -> float | None:
        return self.flops / self.bytes if self.flops is not None and self.bytes else None


def _function(module: ModuleOp) -> func.FuncOp:
    return next(op for op in module.ops if isinstance(op, func.FuncOp))


def _kernel_ops(fn: func.FuncOp) -> list[tuple[int, Operation, list[SSAValue] | None]]:
    """(index in the function, op, the inputs a concatenation copies, else None) of each op that
    becomes a kernel: not views, literals, or concatenations whose inputs are all computed in
    place in their result (irc-to-loops: `concat_homes`)."""
    homes = function_homes(fn)
    found = []
    for i, op in enumerate(fn.body.block.ops):
        if isinstance(op, (*VIEWS, irt.ConstantOp, func.ReturnOp)):
            continue
        copied = None
        if isinstance(op, ConcatOp):
            copied = [x for x, copy in zip(op.inputs, concat_copies(op, homes)) if copy]
            if not copied:
                continue
        found.append((i, op, copied))
    return found


def kernels(module: ModuleOp) -> list[Kernel]:
    """One entry per op that becomes a kernel (views, literals and concatenations computed in
    place do not; a concatenation moves the inputs it copies)."""
    found = []
    for _, op, copied in _kernel_ops(_function(module)):
        # A conv with a packed weight reads the panels only (`weight` stays for its meaning).
        unread = op.weight if isinstance(op, irt_nn.Conv2dOp) and op.packed is not None else None
        reads = {_storage(v) for v in op.operands if not isinstance(v.owner, irt.ConstantOp) and v is not unread}
        moved = sum(nbytes(v) for v in reads) + sum(nbytes(r) for r in op.results)
        if copied is not None:  # reads and writes the inputs it copies
            moved = 2 * sum(nbytes(_storage(v)) for v in set(copied))
        names = tuple(fused_from(op))
        shape = irt.shape_of(op.results[0]) if op.results else ()
        found.append(Kernel(op.name, names, shape, op_flops(op), moved))
    return found


def intermediate_bytes(module: ModuleOp) -> int:
    """Bytes written and read back through memory for tensors produced and consumed inside the
    function: one write plus one read per user (arguments and returned tensors excluded)."""
    fn = _function(module)
    returned = {_storage(v) for v in fn.body.block.last_op.operands}  # type: ignore[union-attr]
    total = 0
    for op in fn.body.block.ops:
        if isinstance(op, (*VIEWS, irt.ConstantOp, func.ReturnOp)):
            continue
        for result in op.results:
            if result in returned:
                continue
            readers = _readers(result)
            total += numel(result) * BYTES * (1 + readers)
    return total


def _readers(value: SSAValue) -> int:
    """Ops reading a tensor, looking through views."""
    count = 0
    for use in value.uses:
        if isinstance(use.operation, VIEWS):
            count += _readers(use.operation.results[0])
        else:
            count += 1
    return count


def unfused_reasons(module: ModuleOp) -> list[str]:
    """For each elementwise op left on its own after fusion, why it did not fuse."""
    reasons = []
    for op in _function(module).body.block.ops:
        if not isinstance(op, irt.ElementwiseOp) or fused_names(op) is not None:
            continue
        for v in op.elementwise_inputs():
            producer = v.owner
            if not isinstance(producer, (irt.ElementwiseOp, irt.EpilogueOp)):
                continue
            users = {u.operation for u in v.uses}
            if len(users) > 1:
                reasons.append(f"{op.name} -> {_shape(op)}: its input from {producer.name} has {len(users)} users")
            elif irt.shape_of(v) != irt.shape_of(op.results[0]):
                reasons.append(f"{op.name} -> {_shape(op)}: it broadcasts {producer.name}'s result")
        if not any(isinstance(v.owner, (irt.ElementwiseOp, irt.EpilogueOp)) for v in op.elementwise_inputs()):
            reasons.append(f"{op.name} -> {_shape(op)}: its inputs come from no fusable producer")
    return reasons


def _shape(op: Operation) -> str:
    return "x".join(map(str, irt.shape_of(op.results[0]))) or "scalar"


def _fmt_count(n: float | None, unit: str) -> str:
    if n is None:
        return "?"
    for scale, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= scale:
            return f"{n / scale:.2f} {prefix}{unit}"
    return f"{n:.0f} {unit}"


def _unplanned_bytes(loops: ModuleOp, sizes: dict | None = None) -> int:
    """Bytes of the `memref.alloc`s that `irc-plan-memory` left out of the arena (allocated per call)."""
    from xdsl.dialects import memref

    return sum(
        _at(product(dims_of(op.memref.type)) * BYTES, sizes) for op in loops.walk() if isinstance(op, memref.AllocOp)
    )


def _at(n, sizes: dict | None):
    """A count that may be symbolic, at the symbols' `sizes` (the example inputs')."""
    return evaluate(n, sizes) if sizes and n is not None and not isinstance(n, (int, float)) else n


def memory_line(loops: ModuleOp, sizes: dict | None = None) -> str:
    """The report's line on intermediate buffers: the arena against the sum of the buffers
    (symbolic ones at `sizes`, the symbols' values)."""
    from irc.lowering.loops.plan_memory import memory_stats

    m = memory_stats(loops, sizes)
    line = (
        f"Intermediate buffers: {_fmt_count(m['arena_bytes'], 'B')} in one arena per calling thread, "
        f"allocated once ({m['buffers']} buffer{'' if m['buffers'] == 1 else 's'}, "
        f"{_fmt_count(m['intermediate_bytes'], 'B')} without reuse, "
        f"{m['in_place']} written in place; reuse {m['reuse_ratio']:.2f}x)"
    )
    unplanned = _unplanned_bytes(loops, sizes)
    return line + (f"; {_fmt_count(unplanned, 'B')} more allocated per call" if unplanned else "")


def explain(
    imported: ModuleOp,
    fused: ModuleOp,
    timings: list[float | None] | None = None,
    peak_gflops: float | None = None,
    loops: ModuleOp | None = None,
    sizes: dict[str, int] | None = None,
) -> str:
    """The report `cm.explain()` and `irc explain` print. `sizes`: the values of the symbolic
    sizes (a module compiled for every size) at which counts are reported."""
    ks = [replace(k, flops=_at(k.flops, sizes), bytes=_at(k.bytes, sizes)) for k in kernels(fused)]
    lines = ["irc explain", ""]
    if sizes:
        at = ", ".join(f"{k} = {v}" for k, v in sizes.items())
        lines += [f"Symbolic sizes: counts below are at the example inputs' sizes ({at}).", ""]
    lines += ["Kernels (after irc-fuse):"]
    header = f"  {'#':>2}  {'op':<16} {'computes':<44} {'shape':<14} {'FLOPs':>11} {'bytes':>11} {'FLOP/B':>7}"
    if timings:
        header += f" {'time':>10} {'GFLOP/s':>8}" + ("  % peak" if peak_gflops else "")
    lines.append(header)
    for i, k in enumerate(ks):
        computes = " + ".join(k.fused_from)
        row = (
            f"  {i:>2}  {k.op:<16} {computes[:44]:<44} {'x'.join(map(format_dim, k.shape)) or 'scalar':<14} "
            f"{_fmt_count(k.flops, 'F'):>11} {_fmt_count(k.bytes, 'B'):>11} "
            f"{(f'{k.intensity:.2f}' if k.intensity is not None else '?'):>7}"
        )
        if timings:
            t = timings[i]
            rate = k.flops / t / 1e9 if k.flops and t else None
            row += f" {(f'{t * 1e6:.1f}us' if t is not None else '?'):>10} {(f'{rate:.1f}' if rate is not None else '?'):>8}"
            if peak_gflops and rate is not None:
                row += f"  {100 * rate / peak_gflops:5.1f}%"
        lines.append(row)
    total_flops = sum(k.flops or 0 for k in ks)
    lines += ["", f"Total: {len(ks)} kernels, {_fmt_count(total_flops, 'FLOP')} per forward"]

    fired = [k for k in ks if len(k.fused_from) > 1]
    lines += ["", "Fusions:"]
    lines += [f"  {' + '.join(k.fused_from)} -> one {k.op}" for k in fired] or ["  none"]
    fn = _function(fused)
    homes = function_homes(fn)
    cats = [concat_copies(op, homes) for op in fn.body.block.ops if isinstance(op, ConcatOp)]
    if any(not all(c) for c in cats):
        whole = sum(1 for c in cats if not any(c))
        inputs = sum(1 for c in cats for copy in c if not copy)
        lines += [
            "",
            f"Concatenations: {inputs} of their {sum(map(len, cats))} inputs computed in place in the result's "
            f"buffer, no copy ({whole} of {len(cats)} concatenations with no kernel at all)",
        ]
    reasons = unfused_reasons(fused)
    lines += ["", "Left unfused:"]
    lines += [f"  {r}" for r in reasons] or ["  nothing fusable was left"]

    before, after = _at(intermediate_bytes(imported), sizes), _at(intermediate_bytes(fused), sizes)
    lines += [
        "",
        f"Intermediate traffic: {_fmt_count(before, 'B')} unfused -> {_fmt_count(after, 'B')} fused "
        f"({_fmt_count(before - after, 'B')} removed per forward)",
    ]
    if loops is not None:
        lines.append(memory_line(loops, sizes))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# --profile: measured time per kernel, and the roofline plot
# ---------------------------------------------------------------------------------------------


def read_profile(lib) -> list[tuple[str, float]]:
    """(kernel label, accumulated nanoseconds) from a library built with `emit_cpp(profile=True)`."""
    import ctypes

    lib.irc_profile_label.restype = ctypes.c_char_p
    lib.irc_profile_label.argtypes = [ctypes.c_int]
    lib.irc_profile_ns.restype = ctypes.c_double
    lib.irc_profile_ns.argtypes = [ctypes.c_int]
    return [(lib.irc_profile_label(i).decode(), lib.irc_profile_ns(i)) for i in range(lib.irc_profile_count())]


def kernel_seconds(fused: ModuleOp, profile: list[tuple[str, float]], calls: int) -> list[float | None]:
    """Seconds per call of each kernel of `kernels(fused)`. Profile labels are `index|label`, the
    index being the op's position in its function (`irc-to-loops{tag-ops=true}`); an op's loop
    nests add up, output copies (index -1) are not kernels of the IR."""
    per_op: dict[int, float] = {}
    for label, ns in profile:
        index, _, _ = label.partition("|")
        if index.lstrip("-").isdigit() and int(index) >= 0:
            per_op[int(index)] = per_op.get(int(index), 0.0) + ns
    return [per_op[i] / 1e9 / calls if i in per_op else None for i, _, _ in _kernel_ops(_function(fused))]


def plot_roofline(ks: list[Kernel], seconds: list[float | None], roof, path) -> None:
    """Each kernel at (FLOP/byte, achieved GFLOP/s) under the machine's measured roofs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = [(k, t) for k, t in zip(ks, seconds) if t and k.flops and k.bytes]
    fig, ax = plt.subplots(figsize=(8, 5.5))
    xs = [k.intensity for k, _ in points] or [1.0]
    lo, hi = min(min(xs) / 4, 0.05), max(max(xs) * 4, 2 * roof.peak_gflops / roof.bandwidth_gbs)
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    ax.plot(grid, [roof.attainable(x) for x in grid], color="black", lw=2,
            label=f"roofline: {roof.peak_gflops:.0f} GFLOP/s, {roof.bandwidth_gbs:.1f} GB/s ({roof.threads} threads)")
    for i, (k, t) in enumerate(points):
        rate = k.flops / t / 1e9
        ax.scatter([k.intensity], [rate], s=40, zorder=3)
        ax.annotate(f"{i}: {' + '.join(n.split('.')[-1] for n in k.fused_from)}", (k.intensity, rate),
                    fontsize=7, xytext=(4, 4), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("achieved GFLOP/s")
    ax.set_title("irc kernels against this machine's roofline")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------
# `irc explain`
# ---------------------------------------------------------------------------------------------


def add_arguments(parser) -> None:
    from pathlib import Path

    from irc.tools.cli import input_shapes, output_dir, positive_int

    parser.add_argument("model", nargs="?", default="mlp-small",
                        help="built-in model name or package.module:attribute (default: mlp-small)")
    parser.add_argument("--input-shape", type=input_shapes, help="input shape(s) for an nn.Module instance, e.g. 1x784")
    parser.add_argument("--profile", action="store_true",
                        help="time each kernel and draw roofline.png against this machine's measured peak")
    parser.add_argument("--runs", type=positive_int, default=20, help="calls to average over with --profile")
    parser.add_argument("--out", type=output_dir, default=Path("."), help="where roofline.png goes (default: .)")


def run(args) -> int:
    import contextlib

    import irc
    from irc.tools.cli import writing_to
    from irc.tools.visualize import load_model

    model, inputs = load_model(args.model, args.input_shape)
    cm = irc.compile(model, inputs)
    png = None
    if args.profile:
        png = args.out / "roofline.png"
    with writing_to(args.out) if png is not None else contextlib.nullcontext():
        report = cm.explain(profile=args.profile, runs=args.runs, roofline_png=png)
    print(report, end="")
    if png is not None:
        print(f"wrote {png}")
    return 0

"""irt to C++: the pass pipeline behind `irc.compile`, and its on-disk cache.

    irc-fuse, irc-pack-weights        (skipped on a cache hit)
    fold-parameters                   (always: it reads the weights' current values)
    irc-to-loops, irc-vectorize, irc-plan-memory, irc-parallelize, -t cpp   (skipped on a hit)

The passes cost seconds on a big model, and their result depends only on the imported IR and
a few options, so it is cached: the key is a sha256 over the imported IR text, `fuse`,
`profile`, the C++ flags and compiler, the environment the passes read (`IRC_STRICT`,
`IRC_GEMM_WIDTH`, `IRC_OMP_THRESHOLD`), the CPU's features, and the source of irc itself plus
xDSL's version (so editing a pass invalidates every entry). An entry holds the IR levels and
C++ as emitted, the memory statistics, the IR before folding (for dumps), and the *fold
recipe*: the ops fold-parameters evaluated (packing weights, folding batch norms) as a function
of the parameters they read, and where each final parameter comes from. Weights never appear in
the key or the entry: a hit evaluates the recipe on the weights as they are now, so it folds
exactly what a cold compile would. The library itself comes from the build cache
(`runtime/build.py`), rebuilt from the cached C++ if it is gone.

Entries are `<cache dir>/<key[:2]>/<key>.pipeline` (`irc cache clear` removes them): a sha256
line, then JSON, written atomically. A missing, partial or corrupt entry, or one that does not
fit the graph, is a miss, and the compile writes it again.

Environment: `IRC_PIPELINE_CACHE=0` runs every pass every time (when debugging a pass).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from irc.context import irc_context
from irc.debugging import CompileLog
from irc.lowering.tensor.fold_params import FoldPlan, fold_parameters
from irc.frontend.fx_importer import ImportedGraph
from irc.runtime.build import cache_file, compiler_version, cpu_features, resolve_flags, write_cache_file

log = logging.getLogger("irc")

FORMAT = 1
ENVIRONMENT = ("IRC_STRICT", "IRC_GEMM_WIDTH", "IRC_OMP_THRESHOLD", "IRC_CXX")
SUFFIX = ".pipeline"
_FIELDS = {"key": str, "before_folding": str, "fold": dict, "fused": str, "loops": str, "cpp": str, "memory": dict}


@dataclass
class Lowered:
    """What the pipeline hands the build: the fold plan (None: nothing folded), the C++ and
    irc-plan-memory's statistics. `ir` gets the "fused" and "loops" levels."""

    plan: FoldPlan | None
    source: str
    memory: dict[str, Any]
    cache_hit: bool


def lower(graph: ImportedGraph, ir: dict[str, str], clog: CompileLog, *, fuse: bool, cxx_flags, profile: bool) -> Lowered:
    """Run the pipeline on `graph.module` (ir["import"] is its text), or take it from the cache."""
    enabled = os.environ.get("IRC_PIPELINE_CACHE", "1") not in ("0", "")
    key = pipeline_key(ir["import"], fuse=fuse, cxx_flags=cxx_flags, profile=profile) if enabled else None
    entry = _read(key) if key is not None else None
    if entry is not None:
        lowered = _restore(entry, graph, ir, clog)
        if lowered is not None:
            return lowered
    lowered, entry = _run_passes(graph, ir, clog, fuse=fuse, profile=profile)
    if key is not None:
        _write(key, entry)
    return lowered


def pipeline_key(imported: str, *, fuse: bool, cxx_flags, profile: bool) -> str:
    parts = [
        f"irc pipeline {FORMAT}", imported, f"fuse={fuse}", f"profile={profile}",
        "flags=" + "\0".join(resolve_flags(cxx_flags)), "cxx=" + compiler_version(),
        *(f"{name}={os.environ.get(name, '')}" for name in ENVIRONMENT), cpu_features(), _code_version(),
    ]
    return hashlib.sha256("\0\0".join(parts).encode()).hexdigest()


_code_digest: str | None = None


def _code_version() -> str:
    """A digest of irc's own source (every package) and xDSL's version, once per process."""
    global _code_digest
    if _code_digest is None:
        import xdsl

        import irc
        from irc import dialects, lowering, runtime

        h = hashlib.sha256(str(getattr(xdsl, "__version__", "?")).encode())
        roots = [Path(irc.__file__).parent, *(Path(p) for pkg in (dialects, lowering, runtime) for p in pkg.__path__)]
        for root in roots:
            for path in sorted(p for ext in ("*.py", "*.h") for p in root.rglob(ext)):  # .h: the C++ runtime
                h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
        _code_digest = h.hexdigest()
    return _code_digest


# -- the passes --------------------------------------------------------------------------------


def _run_passes(graph: ImportedGraph, ir: dict[str, str], clog: CompileLog, *, fuse: bool, profile: bool):
    from irc.lowering.cpp.emit_cpp import emit_cpp, strict_mode
    from irc.lowering.tensor.irc_fuse import IrcFusePass
    from irc.lowering.to_loops.irc_to_loops import IrcToLoopsPass
    from irc.lowering.tensor.pack_weights import PackWeightsPass
    from irc.lowering.loops.parallelize import ParallelizePass
    from irc.lowering.loops.plan_memory import PlanMemoryPass, memory_stats
    from irc.lowering.loops.vectorize import VectorizePass

    module, ctx = graph.module, irc_context()
    if fuse:
        clog.stage("irc-fuse", "-p irc-fuse", ir["import"], lambda: (IrcFusePass().apply(ctx, module), module.verify()))
        clog.write("irc-fuse.mlir", str(module))
    if not strict_mode():  # the GEMM engine's packed weights (strict builds keep scalar loops)
        pack = PackWeightsPass(inputs=len(graph.input_names))
        before = str(module)
        clog.stage("irc-pack-weights", f"-p 'irc-pack-weights{{inputs={pack.inputs}}}'", before,
                   lambda: (pack.apply(ctx, module), module.verify()))
        clog.write("irc-pack-weights.mlir", str(module))
    before, imported = str(module), list(graph.params)
    plan, _ = clog.stage("fold-parameters", None, before, lambda: (fold_parameters(graph), module.verify()))
    recipe = _recipe(plan, imported, graph.params)
    ir["fused"] = str(module)
    clog.write("fold-parameters.mlir", ir["fused"])
    to_loops = IrcToLoopsPass(tag_ops=profile)
    clog.stage("irc-to-loops", "-p irc-to-loops", ir["fused"], lambda: (to_loops.apply(ctx, module), module.verify()))
    ir["loops"] = str(module)
    clog.write("irc-to-loops.mlir", ir["loops"])
    loop_passes = (("irc-vectorize", VectorizePass()), ("irc-plan-memory", PlanMemoryPass()), ("irc-parallelize", ParallelizePass()))
    for name, loop_pass in loop_passes:
        clog.stage(name, f"-p {name}", ir["loops"], lambda: (loop_pass.apply(ctx, module), module.verify()))
        ir["loops"] = str(module)  # the "loops" level is the IR as emitted, after the loop-level passes
        clog.write(f"{name}.mlir", ir["loops"])
    target = "-t cpp" + (" (profiling build)" if profile else "")
    source = clog.stage("cpp", target, ir["loops"], lambda: emit_cpp(module, profile=profile))
    stats = memory_stats(module)
    entry = dict(before_folding=before, fold=recipe, fused=ir["fused"], loops=ir["loops"], cpp=source, memory=stats)
    return Lowered(plan, source, stats, cache_hit=False), entry


def _restore(entry: dict, graph: ImportedGraph, ir: dict[str, str], clog: CompileLog) -> Lowered | None:
    """A hit: evaluate the cached fold recipe on the current weights; None (a miss) if it does
    not fit this graph."""
    try:
        plan = _refold(entry["fold"], graph)
    except Exception as e:  # an entry irc cannot use is a miss, never an error
        log.info("irc: ignoring a pipeline cache entry that does not fit (%s: %s)", type(e).__name__, e)
        return None
    ir["fused"], ir["loops"] = entry["fused"], entry["loops"]
    log.info("irc: pipeline cache hit: skipped irc-fuse .. emit-cpp (parameters folded with their current values)")
    clog.write(
        "pipeline-cache-hit.txt",
        "pipeline cache hit: irc-fuse, irc-pack-weights, irc-to-loops, irc-vectorize, irc-plan-memory,\n"
        "irc-parallelize and the C++ emitter did not run; the IR files below are their cached output.\n"
        "The parameters were folded now, from the weights' current values.\n",
    )
    clog.write("before-folding.mlir", entry["before_folding"])
    clog.write("fold-parameters.mlir", ir["fused"])
    clog.write("loops.mlir", ir["loops"])
    return Lowered(plan, entry["cpp"], dict(entry["memory"]), cache_hit=True)


# -- the fold recipe: fold_parameters' result, replayable on new weights -------------------------


def _recipe(plan: FoldPlan | None, before: list[tuple[str, torch.Tensor]], after: list[tuple[str, torch.Tensor]]) -> dict:
    """How fold_parameters turned the imported parameters `before` into `after`: the folded ops
    as a function of the parameters they read (IR text), and where each final parameter comes
    from (an imported one, or an output of that function)."""
    index = {id(t): i for i, (_, t) in enumerate(before)}
    outputs = {id(t): j for j, (_, t) in enumerate(plan.outputs)} if plan is not None else {}
    params = [
        ["param", index[id(t)], name] if id(t) in index else ["folded", outputs[id(t)], name] for name, t in after
    ]
    recipe: dict[str, Any] = {"inputs": len(before), "params": params, "shapes": [list(t.shape) for _, t in after]}
    if plan is not None:
        recipe["sources"] = [index[id(t)] for t in plan.sources]
        recipe["plan"] = _plan_text(plan)
    return recipe


def _plan_text(plan: FoldPlan) -> str:
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Block, Region

    block = Block(arg_types=[a.type for a in plan.block.args])
    mapping = dict(zip(plan.block.args, block.args))
    for op in plan.block.ops:
        clone = op.clone(value_mapper=mapping)
        block.add_op(clone)
        mapping.update(zip(op.results, clone.results))
    results = [mapping[v] for v, _ in plan.outputs]
    block.add_op(func.ReturnOp(*results))
    fn = func.FuncOp("fold", func.FunctionType.from_lists(block.arg_types, [r.type for r in results]), Region(block))
    return str(ModuleOp([fn]))


def _refold(recipe: dict, graph: ImportedGraph) -> FoldPlan | None:
    """Replay a recipe on `graph`'s parameters (their current values); sets graph.params."""
    imported = list(graph.params)
    if recipe["inputs"] != len(imported):
        raise ValueError(f"the entry folds {recipe['inputs']} parameters, the graph has {len(imported)}")
    plan, outputs = None, []
    if "plan" in recipe:
        from xdsl.parser import Parser

        from irc.reference import evaluate

        (fn,) = Parser(irc_context(), recipe["plan"]).parse_module().ops
        block = fn.body.blocks[0]
        ret = block.last_op
        values: dict = dict(zip(block.args, (imported[i][1].detach() for i in recipe["sources"]), strict=True))
        with torch.no_grad():
            for op in block.ops:
                if op is not ret:
                    values[op.results[0]] = evaluate(op, [values[v] for v in op.operands])
        results = list(ret.operands)
        outputs = [values[v].contiguous() for v in results]  # the runtime passes their storage as is
        block.erase_op(ret)
        plan = FoldPlan(fn.body.detach_block(block), [imported[i][1] for i in recipe["sources"]])
        plan.outputs.extend(zip(results, outputs))
    params = [imported[i] if kind == "param" else (name, outputs[i]) for kind, i, name in recipe["params"]]
    if [list(t.shape) for _, t in params] != recipe["shapes"]:
        raise ValueError("the folded parameters' shapes differ from the entry's")
    graph.params[:] = params
    return plan


# -- entries -----------------------------------------------------------------------------------


def _read(key: str) -> dict | None:
    try:
        data = cache_file(key, SUFFIX).read_bytes()
    except OSError:
        return None
    digest, _, payload = data.partition(b"\n")
    if hashlib.sha256(payload).hexdigest().encode() != digest:
        return None  # partial or corrupt
    try:
        entry = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(entry, dict) or any(not isinstance(entry.get(k), t) for k, t in _FIELDS.items()):
        return None
    return entry if entry["key"] == key else None


def _write(key: str, entry: dict) -> None:
    payload = json.dumps({"key": key, **entry}).encode()
    try:
        write_cache_file(key, SUFFIX, hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
    except OSError as e:  # a cache that cannot be written costs the next compile time, nothing else
        log.info("irc: could not write the pipeline cache entry (%s)", e)

"""irt to C++: the one declared pass pipeline behind `irc.compile`, and its on-disk cache.

`declared(target, inputs=N)` is the pipeline, as xDSL passes whose options come from the
`Target` (irc/target.py); `irc-opt` runs the same passes by the same names, and
`spelled(...)` gives the `-p`/`-t` arguments that reproduce a compile exactly:

    irc-fuse                                   (unless fuse=False)
    irc-pack-weights{inputs gemm_width gemm_rows winograd}  (unless the Target is strict)
    irc-fold-params{inputs}                    (its @NAME__fold is evaluated on the weights)
    irc-to-loops{tag_ops gemm_width gemm_rows matmul_rows strict threads l1d l2 l3}
    irc-vectorize{vector_width}, irc-plan-memory{alignment}, irc-parallelize{threshold}
    -t cpp{strict gemm_width gemm_rows matmul_rows vector_width profile}

The passes cost seconds on a big model, and their result depends only on the imported IR and
their options, so it is cached: the key is a sha256 over the imported IR text, the pipeline's
spelling (every option written out), the C++ flags and compiler, and the source of irc itself
plus xDSL's version (so editing a pass invalidates every entry). An entry holds the IR levels
and C++ as emitted, the memory statistics, the IR before folding (for dumps) and the fold
function with the parameters it reads. Weights never appear in the key or the entry: a hit
evaluates the fold function on the weights as they are now, so it folds exactly what a cold
compile would. The library itself comes from the build cache (`runtime/build.py`), rebuilt
from the cached C++ if it is gone.

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

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline

from irc.context import irc_context
from irc.debugging import CompileLog
from irc.folding import FoldPlan, fold
from irc.frontend.fx_importer import ImportedGraph
from irc.lowering.cpp.emit_cpp import CppTarget
from irc.lowering.loops.parallelize import ParallelizePass
from irc.lowering.loops.plan_memory import PlanMemoryPass, memory_stats
from irc.lowering.loops.vectorize import VectorizePass
from irc.lowering.tensor.fold_params import COMPILE_TIME_ATTR, FoldParamsPass, fold_function_of, param_indices
from irc.lowering.tensor.irc_fuse import IrcFusePass
from irc.lowering.tensor.pack_weights import PackWeightsPass
from irc.lowering.to_loops.irc_to_loops import IrcToLoopsPass
from irc.runtime.build import cache_file, compiler_version, resolve_flags, write_cache_file
from irc.target import Target

log = logging.getLogger("irc")

FORMAT = 2
SUFFIX = ".pipeline"
_FIELDS = {"key": str, "before_folding": str, "fold": dict, "fused": str, "loops": str, "cpp": str, "memory": dict}


def declared(target: Target, *, inputs: int, fuse: bool = True, profile: bool = False) -> PassPipeline:
    """irc's pipeline from imported irt to planned loops, its options the Target's: what
    irc.compile runs, and what `irc-opt -p` runs given `spelled(...)`."""
    passes: list[ModulePass] = [IrcFusePass()] if fuse else []
    if not target.strict:  # the GEMM engine's packed weights (strict builds keep scalar loops)
        passes.append(PackWeightsPass(inputs=inputs, gemm_width=target.gemm_width, gemm_rows=target.gemm_rows,
                                      winograd=target.winograd))
    passes += [
        FoldParamsPass(inputs=inputs),
        IrcToLoopsPass(tag_ops=profile, gemm_width=target.gemm_width, gemm_rows=target.gemm_rows,
                       matmul_rows=target.matmul_rows, strict=target.strict,
                       threads=target.threads, l1d=target.l1d, l2=target.l2, l3=target.l3),
        VectorizePass(vector_width=target.vector_width),
        PlanMemoryPass(alignment=target.alignment),
        ParallelizePass(threshold=target.omp_threshold),
    ]
    return PassPipeline(tuple(passes))


@dataclass(frozen=True)
class IrcPipelinePass(ModulePass):
    """`irc-pipeline`: the whole declared pipeline as one irc-opt pass, its options the Target's
    (defaults: `Target()`'s) and irc.compile's; the fold function stays in the module (there are
    no weights to evaluate it on), irc-to-loops and `-t cpp` leave it alone.

        irc-opt model.mlir -p 'irc-pipeline{inputs=1 gemm_width=32}' -t 'cpp{gemm_width=32}'
    """

    name = "irc-pipeline"
    inputs: int = 1
    fuse: bool = True
    profile: bool = False
    strict: bool = Target.strict
    gemm_width: int = Target.gemm_width
    gemm_rows: int = Target.gemm_rows
    matmul_rows: int = Target.matmul_rows
    threads: int = Target.threads
    omp_threshold: int = Target.omp_threshold
    l1d: int = Target.l1d
    l2: int = Target.l2
    l3: int = Target.l3

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = Target(strict=self.strict, gemm_width=self.gemm_width, gemm_rows=self.gemm_rows,
                        matmul_rows=self.matmul_rows, threads=self.threads,
                        omp_threshold=self.omp_threshold, l1d=self.l1d, l2=self.l2, l3=self.l3)
        declared(target, inputs=self.inputs, fuse=self.fuse, profile=self.profile).apply(ctx, op)


def cpp_target(target: Target, *, profile: bool = False) -> CppTarget:
    """The C++ emitter, `-t cpp{...}`, with the Target's options."""
    return CppTarget(strict=target.strict, gemm_width=target.gemm_width, gemm_rows=target.gemm_rows,
                     matmul_rows=target.matmul_rows,
                     vector_width=target.vector_width, profile=profile)


def spell(p: ModulePass | CppTarget) -> str:
    """A pass or target as `irc-opt` takes it, every option written out."""
    return str(p.spec(include_default=True))


def spelled(target: Target, *, inputs: int, fuse: bool = True, profile: bool = False) -> str:
    """The `irc-opt` arguments that run `declared(...)` and emit the C++: `-p '...' -t '...'`."""
    pipeline = ",".join(spell(p) for p in declared(target, inputs=inputs, fuse=fuse, profile=profile).passes)
    return f"-p '{pipeline}' -t '{spell(cpp_target(target, profile=profile))}'"


@dataclass
class Lowered:
    """What the pipeline hands the build: the fold plan (None: nothing folded), the C++ and
    irc-plan-memory's statistics. `ir` gets the "fused" and "loops" levels."""

    plan: FoldPlan | None
    source: str
    memory: dict[str, Any]
    cache_hit: bool


def lower(graph: ImportedGraph, ir: dict[str, str], clog: CompileLog, target: Target, *,
          fuse: bool, cxx_flags, profile: bool) -> Lowered:
    """Run the pipeline on `graph.module` (ir["import"] is its text), or take it from the
    cache; sets graph.params to the parameters the native code reads (folded ones included)."""
    pipeline = declared(target, inputs=len(graph.input_names), fuse=fuse, profile=profile)
    emitter = cpp_target(target, profile=profile)
    enabled = os.environ.get("IRC_PIPELINE_CACHE", "1") not in ("0", "")
    key = pipeline_key(ir["import"], pipeline, emitter, cxx_flags=cxx_flags) if enabled else None
    entry = _read(key) if key is not None else None
    if entry is not None:
        lowered = _restore(entry, graph, ir, clog)
        if lowered is not None:
            return lowered
    clog.write("pipeline.sh", f"# the passes and target of this compile; the input is import.mlir\nirc-opt import.mlir "
               f"-p '{','.join(spell(p) for p in pipeline.passes)}' -t '{spell(emitter)}'\n")
    lowered, entry = _run_passes(graph, ir, clog, pipeline, emitter)
    if key is not None:
        _write(key, entry)
    return lowered


def pipeline_key(imported: str, pipeline: PassPipeline, emitter: CppTarget, *, cxx_flags) -> str:
    parts = [
        f"irc pipeline {FORMAT}", imported, *(spell(p) for p in pipeline.passes), spell(emitter),
        "flags=" + "\0".join(resolve_flags(cxx_flags)), "cxx=" + compiler_version(), _code_version(),
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


def _run_passes(graph: ImportedGraph, ir: dict[str, str], clog: CompileLog, pipeline: PassPipeline, emitter: CppTarget):
    module, ctx = graph.module, irc_context()
    text = before_folding = ir["import"]
    plan, fold_entry = None, {}
    for p in pipeline.passes:
        before = text
        clog.stage(p.name, f"-p '{spell(p)}'", before, lambda p=p: (p.apply(ctx, module), module.verify()))
        if isinstance(p, FoldParamsPass):
            before_folding = before
            fn = next(op for op in module.ops if isinstance(op, func.FuncOp) and COMPILE_TIME_ATTR not in op.attributes)
            fold_fn = fold_function_of(module, fn)
            if fold_fn is not None:  # evaluated here, not lowered; the "fused" level is the run-time function
                fold_fn.detach()
            fold_entry = _fold_entry(fn, fold_fn)
            if fold_fn is not None:
                clog.write("fold-function.mlir", fold_entry["function"])
            graph.params[:], plan = clog.stage(
                "fold evaluation", None, before, lambda e=fold_entry, f=fold_fn: _evaluate(e, f, graph)
            )
        text = str(module)
        clog.write(f"{p.name}.mlir", text)
        if isinstance(p, FoldParamsPass):
            ir["fused"] = text
    ir["loops"] = text  # the "loops" level is the IR as emitted, after the loop-level passes
    source = clog.stage("cpp", f"-t '{spell(emitter)}'", text, lambda: emitter.emit_source(module))
    stats = memory_stats(module)
    fold_entry["params"] = [list(t.shape) for _, t in graph.params]
    entry = dict(before_folding=before_folding, fold=fold_entry, fused=ir["fused"], loops=ir["loops"], cpp=source, memory=stats)
    return Lowered(plan, source, stats, cache_hit=False), entry


def _fold_entry(fn: func.FuncOp, fold_fn: func.FuncOp | None) -> dict[str, Any]:
    """What a cache entry keeps of irc-fold-params' result: the fold function's text, the
    parameters the run-time function kept, and the names of the folded ones."""
    n_folded = len(fold_fn.function_type.outputs.data) if fold_fn is not None else 0
    folded = fn.body.block.args[len(fn.body.block.args) - n_folded:] if n_folded else []
    return {
        "function": str(ModuleOp([fold_fn.clone()])) if fold_fn is not None else "",
        "kept": param_indices(fn),
        "names": [a.name_hint or "folded" for a in folded],
    }


def _evaluate(fold_entry: dict, fold_fn: func.FuncOp | None, graph: ImportedGraph):
    return fold(fold_entry["kept"], fold_fn, fold_entry["names"], graph.params)


def _restore(entry: dict, graph: ImportedGraph, ir: dict[str, str], clog: CompileLog) -> Lowered | None:
    """A hit: evaluate the cached fold function on the current weights; None (a miss) if the
    entry does not fit this graph."""
    try:
        plan = _refold(entry["fold"], graph)
    except Exception as e:  # an entry irc cannot use is a miss, never an error
        log.info("irc: ignoring a pipeline cache entry that does not fit (%s: %s)", type(e).__name__, e)
        return None
    ir["fused"], ir["loops"] = entry["fused"], entry["loops"]
    log.info("irc: pipeline cache hit: skipped irc-fuse .. emit-cpp (parameters folded with their current values)")
    clog.write(
        "pipeline-cache-hit.txt",
        "pipeline cache hit: the passes and the C++ emitter did not run; the IR files below are\n"
        "their cached output. The fold function was evaluated now, on the weights' current values.\n",
    )
    clog.write("before-folding.mlir", entry["before_folding"])
    if entry["fold"]["function"]:
        clog.write("fold-function.mlir", entry["fold"]["function"])
    clog.write("irc-fold-params.mlir", ir["fused"])
    clog.write("loops.mlir", ir["loops"])
    return Lowered(plan, entry["cpp"], dict(entry["memory"]), cache_hit=True)


def _refold(fold_entry: dict, graph: ImportedGraph) -> FoldPlan | None:
    """Evaluate a cached entry's fold function on `graph`'s parameters; sets graph.params."""
    fold_fn = None
    if fold_entry["function"]:
        from xdsl.parser import Parser

        (fold_fn,) = Parser(irc_context(), fold_entry["function"]).parse_module().ops
        fold_fn.detach()
    params, plan = _evaluate(fold_entry, fold_fn, graph)
    if [list(t.shape) for _, t in params] != fold_entry["params"]:
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

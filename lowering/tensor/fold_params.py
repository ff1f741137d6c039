"""Compile-time folding of what depends on parameters only.

An `irt` op whose operands are all parameters (weights, buffers), constants, or results of other
such ops computes the same value on every call. `fold_parameters` evaluates those ops once, with
the reference evaluator, and replaces each folded value that run-time code still reads by a new
parameter argument holding the result. Parameters left without users are dropped.

This is how rules express weight transformations as ordinary IR (a batch norm folded into a
convolution's weights, a transposed weight) and pay nothing for them at run time. A folded
parameter is a snapshot: later in-place updates of the original weights do not reach it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import torch
from xdsl.dialects import func
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from irc.dialects.irt import core as irt
from irc.frontend.fx_importer import ImportedGraph
from irc.reference import evaluate


@dataclass
class FoldPlan:
    """The folded computations, to run again when a source parameter changes in place.

    `block` holds clones of the folded ops; its arguments stand for `sources` (the original
    parameter tensors); `outputs` pairs a value of `block` with the folded tensor it fills."""

    block: Block
    sources: list[torch.Tensor]
    outputs: list[tuple[SSAValue, torch.Tensor]] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.versions = [t._version for t in self.sources]

    def stale(self) -> bool:
        return any(t._version != v for t, v in zip(self.sources, self.versions))

    def refold(self) -> None:
        """Evaluate the plan on the sources' current values, into the folded tensors' storage."""
        with self.lock:
            if not self.stale():
                return
            self.versions = [t._version for t in self.sources]
            values: dict[SSAValue, torch.Tensor] = dict(zip(self.block.args, (t.detach() for t in self.sources)))
            with torch.no_grad():
                for op in self.block.ops:
                    values[op.results[0]] = evaluate(op, [values[v] for v in op.operands])
                for value, target in self.outputs:
                    target.copy_(values[value])

    def guard(self, forward):
        """`forward`, refolding first whenever a source parameter changed since the last fold."""

        def guarded(*args):
            if self.stale():
                self.refold()
            return forward(*args)

        guarded.__wrapped__ = forward  # type: ignore[attr-defined]
        guarded.fold_plan = self  # type: ignore[attr-defined]  # CompiledModule.save refolds before writing
        return guarded


def fold_parameters(graph: ImportedGraph) -> FoldPlan | None:
    """Fold parameter-only computations of `graph` in place; returns the plan to refold them
    (None when nothing was folded)."""
    fn = next(op for op in graph.module.ops if isinstance(op, func.FuncOp))
    block = fn.body.block
    n_inputs = len(graph.input_names)
    values: dict[SSAValue, torch.Tensor] = {
        arg: tensor for arg, (_, tensor) in zip(block.args[n_inputs:], graph.params, strict=True)
    }
    folded: list[Operation] = []
    for op in block.ops:
        if _foldable(op, values):
            values[op.results[0]] = evaluate(op, [values[v] for v in op.operands])
            folded.append(op)
    if not folded:
        return None

    plan, mapping = _plan(folded, block, values)
    for op in folded:
        result = op.results[0]
        if any(use.operation not in folded for use in result.uses):
            arg = block.insert_arg(result.type, len(block.args))
            arg.name_hint = result.name_hint or "folded"
            values[result] = values[result].contiguous()  # the runtime passes its storage as is
            plan.outputs.append((mapping[result], values[result]))
            result.replace_all_uses_with(arg)
            graph.params.append((f"folded:{arg.name_hint}", values[result]))
    for op in reversed(folded):
        block.erase_op(op)
    for op in list(block.ops):  # literals only folded ops read
        if isinstance(op, irt.ConstantOp) and not op.result.uses:
            block.erase_op(op)
    _drop_unused_params(graph, block, n_inputs)
    fn.function_type = func.FunctionType.from_lists(
        [a.type for a in block.args], list(fn.function_type.outputs.data)
    )
    return plan


def _plan(folded: list[Operation], block: Block, values: dict[SSAValue, torch.Tensor]) -> tuple[FoldPlan, dict]:
    """Clone the folded ops (and the literals they read) into a plan block whose arguments are
    the parameters they read; returns the plan and the map from original to plan values."""
    plan_block = Block()
    mapping: dict[SSAValue, SSAValue] = {}
    sources: list[torch.Tensor] = []
    for op in folded:
        for v in op.operands:
            if v in mapping:
                continue
            if isinstance(v, BlockArgument) and v.block is block:
                mapping[v] = plan_block.insert_arg(v.type, len(plan_block.args))
                sources.append(values[v])
            elif isinstance(v.owner, irt.ConstantOp):
                literal = v.owner.clone()
                plan_block.add_op(literal)
                mapping[v] = literal.results[0]
        clone = op.clone(value_mapper=dict(mapping))
        plan_block.add_op(clone)
        mapping.update(zip(op.results, clone.results))
    return FoldPlan(plan_block, sources), mapping


def _foldable(op: Operation, values: dict[SSAValue, torch.Tensor]) -> bool:
    """A pure irt op with one result whose operands are all known at compile time."""
    if op.dialect_name() != "irt" or len(op.results) != 1 or isinstance(op, irt.YieldOp):
        return False
    if isinstance(op, irt.ConstantOp):
        return False  # small literals stay visible in IR; they fold as operands of other ops
    known = [v in values or isinstance(v.owner, irt.ConstantOp) for v in op.operands]
    if not op.operands or not all(known):
        return False
    for v in op.operands:
        if v not in values:
            values[v] = evaluate(v.owner, [])  # type: ignore[arg-type]
    return True


def _drop_unused_params(graph: ImportedGraph, block, n_inputs: int) -> None:
    """Remove parameter arguments nobody reads any more, keeping graph.params aligned."""
    kept = []
    for arg, param in zip(list(block.args[n_inputs:]), graph.params, strict=True):
        if arg.uses:
            kept.append(param)
        else:
            assert isinstance(arg, BlockArgument)
            block.erase_arg(arg)
    graph.params[:] = kept

"""`irc-fold-params`: move what depends on parameters only into a compile-time function.

An `irt` op whose operands are all parameters (weights, buffers), literals, or results of other
such ops computes the same value on every call. This pass moves those ops out of the function
into a new one, `@NAME__fold`, marked `irc.compile_time`, whose arguments are the parameters
they read and whose results are the folded values the run-time code still reads. Those values
become new parameter arguments of `@NAME`, after the parameters it still reads itself;
parameters it no longer reads are dropped.

    irc-opt model.mlir -p 'irc-fold-params{inputs=1}'

The same holds inside an op's scalar body: where an elementwise op (fused or not) or a
contraction's or convolution's epilogue computes, per element, a value from parameter operands
only (a batch norm's `gamma / sqrt(var + eps)`, left per element when no conv could absorb the
batch norm), that part becomes an `irt.elementwise` of its own over those operands' broadcast
shape, which then folds like any other parameter-only op, and the body reads its result. A
standalone batch norm after a pooling or a concatenation (DenseNet's pre-activation) ran a square
root and a division per element: 20-24 us for its 192x16x16 BN + ReLU, one thread on an Intel
Xeon, where its memory traffic takes a few.

Two attributes say which parameter is which (indices count parameters, not inputs):

    func.func @f(%x, %w2, %w_packed) attributes {irc.params = array<i64: 2>, ...}
    func.func @f__fold(%w0, %w1) -> tensor<...> attributes {irc.compile_time, irc.params = array<i64: 0, 1>}

`@f`'s parameter arguments are the imported parameters listed in its `irc.params`, then
`@f__fold`'s results in order; `@f__fold`'s arguments are the imported parameters listed in
its own `irc.params`. The fold function is evaluated when the compiled module is created (and
again when one of its source parameters is updated in place: `irc/folding.py`), never
lowered to loops. This is how rules express weight transformations as ordinary IR (a batch norm
folded into a convolution's weights, a transposed or packed weight) and pay nothing for them at
run time.

Options:
  inputs: how many leading function arguments are run-time inputs; later arguments are
          parameters (irc's importer puts inputs first, then every parameter).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, ModuleOp, StringAttr, TensorType, UnitAttr, f32, i64
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from irc.dialects.irt import core as irt
from irc.dialects.irt.interfaces import broadcast_shapes
from irc.dialects.symbolic import DimsAttr, all_static
from irc.lowering.tensor.irc_fuse import FUSED_ATTR  # the provenance a rebuilt plain op is given

COMPILE_TIME_ATTR = "irc.compile_time"
"""Marks a function evaluated when the module is created (from its parameters), never lowered."""
PARAMS_ATTR = "irc.params"
"""Which imported parameters a function's parameter arguments are (see the module doc)."""
FOLD_SUFFIX = "__fold"


def foldable(op: Operation, known: set[SSAValue]) -> bool:
    """A pure irt op with one result of static shape whose operands are all known at compile time
    (`known`, or literals); literals themselves stay where they are (they fold as operands of
    other ops). A result with symbolic sizes, or an op with a symbolic property (a slice's
    offset `s0`), has no value before the call binds them."""
    if op.dialect_name() != "irt" or len(op.results) != 1 or isinstance(op, (irt.YieldOp, irt.ConstantOp)):
        return False
    if not all_static(irt.shape_of(op.results[0])) or any(isinstance(p, DimsAttr) for p in op.properties.values()):
        return False
    return bool(op.operands) and all(v in known or isinstance(v.owner, irt.ConstantOp) for v in op.operands)


# ---- parameter-only parts of scalar bodies ---------------------------------------------------



def _body_operands(op: Operation) -> tuple[Region, list[SSAValue], int] | None:
    """The scalar body an op computes each element with, the tensors its arguments stand for and
    how many leading arguments stand for none (a convolution's accumulator): a fused elementwise
    op's body, an epilogue, or (built here from `build_scalar`) a plain f32 elementwise op's."""
    if isinstance(op, irt.EpilogueOp):
        body = op.epilogue_body()
        return (body, list(op.epilogue_inputs), 1) if body is not None else None
    if not isinstance(op, irt.ElementwiseOp) or len(op.results) != 1:
        return None
    inputs = list(op.elementwise_inputs())
    if op.scalar_body() is not None:
        return op.scalar_body(), inputs, 0
    if not all(irt.element_type(v) == f32 for v in (*inputs, op.results[0])):
        return None
    body = irt.scalar_region([f"x{i}" for i in range(len(inputs))], op.build_scalar)
    return body, inputs, 0


Sources = dict[SSAValue, frozenset[BlockArgument] | None]
"""Per value of a scalar body: None when it depends on a run-time operand, else the parameter
arguments it is computed from (empty: literals only)."""


def _sources(block: Block, operands: list[SSAValue], skip: int, known: set[SSAValue]) -> Sources:
    sources: Sources = {}
    for i, arg in enumerate(block.args):
        v = operands[i - skip] if i >= skip else None
        static = v is not None and v in known and all_static(irt.shape_of(v))
        sources[arg] = frozenset((arg,)) if static else None
    for op in block.ops:
        if op.dialect_name() in ("arith", "math") and len(op.results) == 1:
            deps = [sources.get(v) for v in op.operands]
            sources[op.results[0]] = None if any(d is None for d in deps) else frozenset().union(*deps)
    return sources


def _roots(block: Block, sources: Sources) -> list[SSAValue]:
    """The f32 values computed from parameters (not an argument itself) that a run-time part of
    the body (or its yield) reads."""
    roots: list[SSAValue] = []
    for op in block.ops:
        if op.results and sources.get(op.results[0]) is not None:
            continue  # parameter-only: read by others like it, or a root found from its readers
        roots += [v for v in op.operands if sources.get(v) and not isinstance(v, BlockArgument) and v.type == f32
                  and v not in roots]
    return roots


def _part(block: Block, root: SSAValue, args: list[BlockArgument], operands: list[SSAValue]) -> Operation:
    """An irt.elementwise computing `root` from `args`' tensors (`operands`) over their broadcast shape."""
    cone: set[Operation] = set()
    stack = [root.owner]
    while stack:
        op = stack.pop()
        if isinstance(op, Operation) and op not in cone:
            cone.add(op)
            stack.extend(v.owner for v in op.operands)

    def body(b: Builder, new_args: Sequence[SSAValue]) -> SSAValue:
        mapping: dict[SSAValue, SSAValue] = dict(zip(args, new_args))
        for op in block.ops:
            if op in cone:
                clone = op.clone(value_mapper=mapping)
                b.insert(clone)
                mapping.update(zip(op.results, clone.results))
        return mapping[root]

    shape = broadcast_shapes(*(irt.shape_of(v) for v in operands))
    assert shape is not None  # they broadcast to the op's result
    names = [a.name_hint or f"p{a.index}" for a in args]
    region = irt.scalar_region(names, body, [a.type for a in args])  # a mask's i1, say, not only f32
    part = irt.ElementwiseFusedOp(operands, TensorType(f32, list(shape)), region)
    part.results[0].name_hint = "param_math"
    return part


def split_parameter_math(op: Operation, known: set[SSAValue]) -> list[Operation]:
    """Move the parts of `op`'s scalar body that read `known` operands and literals only into
    new `irt.elementwise` ops over those operands, inserted before `op`, which is replaced by one
    reading their results; returns the new ops (none when nothing moves)."""
    found = _body_operands(op)
    if found is None:
        return []
    body, operands, skip = found
    block = body.block
    sources = _sources(block, operands, skip, known)
    parts: list[Operation] = []
    for root in _roots(block, sources):
        args = sorted(sources[root] or (), key=lambda a: a.index)
        part = _part(block, root, args, [operands[a.index - skip] for a in args])
        Rewriter.insert_op(part, InsertPoint.before(op))
        parts.append(part)
        arg = block.insert_arg(f32, len(block.args))
        arg.name_hint = f"param{len(parts) - 1}"
        root.replace_all_uses_with(arg)
    if not parts:
        return []
    for inner in reversed(list(block.ops)):  # the moved parts, now unread
        if inner is not block.last_op and all(not r.uses for r in inner.results):
            block.erase_op(inner)
    inputs = operands + [part.results[0] for part in parts]
    for i in reversed(range(skip, len(block.args))):  # arguments the body no longer reads
        if not block.args[i].uses:
            block.erase_arg(block.args[i])
            del inputs[i - skip]
    region = Region()
    region.add_block(body.detach_block(block))
    if isinstance(op, irt.EpilogueOp):
        rebuilt = op.with_epilogue(inputs, region, op.results[0].type)
    else:
        rebuilt = irt.ElementwiseFusedOp(inputs, op.results[0].type, region)
        if op.scalar_body() is None and FUSED_ATTR not in op.attributes:
            rebuilt.attributes[FUSED_ATTR] = ArrayAttr([StringAttr(op.name)])
    for name, attr in op.attributes.items():
        rebuilt.attributes.setdefault(name, attr)
    Rewriter.replace_op(op, rebuilt)
    return parts


def split_parameter_math_in(fn: func.FuncOp, inputs: int) -> None:
    """`split_parameter_math` on every op of `fn` whose operands include values known at compile
    time (parameters, and what folds from them), before `fold_function` folds the new parts."""
    block = fn.body.block
    known: set[SSAValue] = set(block.args[inputs:])
    for op in list(block.ops):
        if foldable(op, known):
            known.add(op.results[0])
        elif any(v in known for v in op.operands):
            known.update(new.results[0] for new in split_parameter_math(op, known))


def fold_function(fn: func.FuncOp, inputs: int) -> func.FuncOp | None:
    """Split `fn`'s parameter-only computations into its fold function (returned, not yet
    inserted; None when nothing folds), rewriting `fn` to take their results as parameters."""
    block = fn.body.block
    params = list(block.args[inputs:])
    known: set[SSAValue] = set(params)
    folded: list[Operation] = []
    for op in block.ops:
        if foldable(op, known):
            folded.append(op)
            known.add(op.results[0])
    if not folded:
        return None

    fold_block, mapping, sources = _clone_into_block(folded, block, params)
    inside = set(folded)
    live = [op.results[0] for op in folded if any(use.operation not in inside for use in op.results[0].uses)]
    fold_block.add_op(func.ReturnOp(*(mapping[v] for v in live)))
    fold_fn = func.FuncOp(
        fn.sym_name.data + FOLD_SUFFIX,
        func.FunctionType.from_lists(fold_block.arg_types, [v.type for v in live]),
        Region(fold_block),
    )
    fold_fn.attributes[COMPILE_TIME_ATTR] = UnitAttr()
    fold_fn.attributes[PARAMS_ATTR] = DenseArrayBase.from_list(i64, sources)

    for value in live:
        arg = block.insert_arg(value.type, len(block.args))
        arg.name_hint = value.name_hint or "folded"
        value.replace_all_uses_with(arg)
    for op in reversed(folded):
        block.erase_op(op)
    for op in list(block.ops):  # literals only folded ops read
        if isinstance(op, irt.ConstantOp) and not op.result.uses:
            block.erase_op(op)
    kept = [i for i, arg in enumerate(params) if arg.uses]
    for arg in params:
        if not arg.uses:
            assert isinstance(arg, BlockArgument)
            block.erase_arg(arg)
    fn.function_type = func.FunctionType.from_lists([a.type for a in block.args], list(fn.function_type.outputs.data))
    fn.attributes[PARAMS_ATTR] = DenseArrayBase.from_list(i64, kept)
    return fold_fn


def _clone_into_block(
    folded: list[Operation], block: Block, params: list[SSAValue]
) -> tuple[Block, dict[SSAValue, SSAValue], list[int]]:
    """Clones of the folded ops (and the literals they read) in a new block whose arguments are
    the parameters they read, in parameter order; returns it, the value map and those
    parameters' indices."""
    read = {v for op in folded for v in op.operands}
    sources = [i for i, p in enumerate(params) if p in read]
    fold_block = Block(arg_types=[params[i].type for i in sources])
    mapping: dict[SSAValue, SSAValue] = {}
    for i, arg in zip(sources, fold_block.args):
        arg.name_hint = params[i].name_hint
        mapping[params[i]] = arg
    for op in folded:
        for v in op.operands:
            if v not in mapping and isinstance(v.owner, irt.ConstantOp):
                literal = v.owner.clone()
                fold_block.add_op(literal)
                mapping[v] = literal.results[0]
        clone = op.clone(value_mapper=dict(mapping))
        fold_block.add_op(clone)
        mapping.update(zip(op.results, clone.results))
    return fold_block, mapping, sources


def fold_function_of(module: ModuleOp, fn: func.FuncOp) -> func.FuncOp | None:
    """`fn`'s fold function in `module`, if irc-fold-params made one."""
    name = fn.sym_name.data + FOLD_SUFFIX
    return next((op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == name), None)


def param_indices(fn: func.FuncOp) -> list[int] | None:
    """`fn`'s `irc.params` (see the module doc), or None if it has none."""
    attr = fn.attributes.get(PARAMS_ATTR)
    return list(attr.get_values()) if isinstance(attr, DenseArrayBase) else None  # type: ignore[arg-type]


@dataclass(frozen=True)
class FoldParamsPass(ModulePass):
    name = "irc-fold-params"

    inputs: int = 1

    def apply(self, ctx: Context, module: ModuleOp) -> None:
        for fn in list(module.ops):
            if not isinstance(fn, func.FuncOp) or fn.is_declaration or COMPILE_TIME_ATTR in fn.attributes:
                continue
            if len(fn.body.block.args) < self.inputs:
                raise ValueError(
                    f"irc-fold-params: @{fn.sym_name.data} has {len(fn.body.block.args)} arguments, "
                    f"fewer than inputs={self.inputs}"
                )
            split_parameter_math_in(fn, self.inputs)
            fold_fn = fold_function(fn, self.inputs)
            if fold_fn is not None:
                module.body.block.insert_op_after(fold_fn, fn)

"""`irc-to-loops` for the core `irt` ops (`dialects/irt/core.py`): elementwise ops (fused or
not) and contractions as scalar loop nests, transpose, reshape (a view), constants.

Every computing op becomes one loop nest whose independent output dimensions form one
`scf.parallel`; contractions add an inner `scf.for` reduction carrying the accumulator (the
GEMM engine, `gemm.py`, takes over the contractions it can run). The scalar work per element
comes from the op's own `build_scalar`/`build_epilogue`, so fused and unfused ops lower through
the same code.
"""

from __future__ import annotations

from xdsl.builder import Builder
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IndexType, StringAttr, f32
from xdsl.ir import Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from irc.dialects.irt import core as irt
from irc.dialects.static_shape import row_major_strides
from irc.lowering.to_loops.function import REDUCTION_ATTR, FunctionLowering, describe


def lower_elementwise(fl: FunctionLowering, op: irt.ElementwiseOp) -> None:
    out = fl.result_buffer(op.results[0])
    shape = irt.shape_of(op.results[0])

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        args = [fl.load(b, x, ivs, shape) for x in op.elementwise_inputs()]
        b.insert(memref.StoreOp.get(op.build_scalar(b, args), out, ivs))

    fl.nest(shape, describe(op), body)


def lower_contraction(fl: FunctionLowering, op: irt.ContractionBase) -> None:
    out = fl.result_buffer(op.results[0])
    shape = irt.shape_of(op.results[0])
    k_size = irt.shape_of(op.lhs)[-1]
    linear = op.contraction_kind == irt.ContractionKind.LINEAR
    packed = op.contraction_kind == irt.ContractionKind.PACKED
    width = irt.shape_of(op.rhs)[-1]
    lhs, rhs = fl.buffers[op.lhs], fl.buffers[op.rhs]

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        lead, j = ivs[:-1], ivs[-1]
        k_block = Block(arg_types=[IndexType(), f32])
        k, acc = k_block.args
        k.name_hint, acc.name_hint = "k", "acc"
        kb = Builder(InsertPoint.at_end(k_block))
        x = kb.insert(memref.LoadOp.get(lhs, [*lead, k])).res
        if packed:  # panels of `width` columns: rhs[j / width, k, j % width]
            q = kb.insert(arith.DivSIOp(j, fl.index(width))).result
            r = kb.insert(arith.RemSIOp(j, fl.index(width))).result
            w = kb.insert(memref.LoadOp.get(rhs, [q, k, r])).res
        else:
            w = kb.insert(memref.LoadOp.get(rhs, [j, k] if linear else [k, j])).res
        prod = kb.insert(arith.MulfOp(x, w)).result
        kb.insert(scf.YieldOp(kb.insert(arith.AddfOp(acc, prod)).result))
        zero = irt.fconst(b, 0.0)
        loop = b.insert(scf.ForOp(fl.index(0), fl.index(k_size), fl.index(1), [zero], Region(k_block)))
        loop.attributes[REDUCTION_ATTR] = StringAttr("add")
        args = [fl.load(b, e, ivs, shape) for e in op.epilogue_inputs]
        value = op.build_epilogue(b, loop.results[0], args)
        b.insert(memref.StoreOp.get(value, out, ivs))

    fl.nest(shape, describe(op), body)


def lower_transpose(fl: FunctionLowering, op: irt.TransposeOp) -> None:
    out = fl.result_buffer(op.result)
    src = fl.buffers[op.input]
    perm = op.permutation

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        in_ivs: list[SSAValue] = [ivs[0]] * len(perm)
        for i, p in enumerate(perm):
            in_ivs[p] = ivs[i]
        value = b.insert(memref.LoadOp.get(src, in_ivs)).res
        b.insert(memref.StoreOp.get(value, out, ivs))

    fl.nest(irt.shape_of(op.result), describe(op), body)


def lower_reshape(fl: FunctionLowering, op: irt.ReshapeOp) -> None:
    if op.result not in fl.buffers:
        fl.buffers[op.result] = fl.view(fl.buffers[op.input], irt.shape_of(op.result), op.result.name_hint)


def lower_constant(fl: FunctionLowering, op: irt.ConstantOp) -> None:
    read_per_element = all(
        isinstance(use.operation, irt.ElementwiseOp)
        or (isinstance(use.operation, irt.ContractionBase) and use.index >= 2)
        for use in op.result.uses
    )
    if op.value.is_splat() and read_per_element and op.result not in fl.buffers:
        return  # every reader takes the value as a scalar constant (see `load`)
    out = fl.result_buffer(op.result)
    shape = irt.shape_of(op.result)
    strides = row_major_strides(shape)
    for flat, value in enumerate(op.value.iter_values()):
        idx = [fl.index(flat // stride % size) for stride, size in zip(strides, shape)]
        c = irt.scalar_constant(fl.b, value, irt.element_type(op.result))
        fl.b.insert(memref.StoreOp.get(c, out, idx))

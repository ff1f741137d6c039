"""`irc-to-loops`: bufferize `irt` functions and lower every op to loop nests.

After this pass a function takes one `memref` per input and parameter, then one per result
(caller-provided output buffers), and returns nothing. Tensor values become buffers:

* a value the function returns is computed straight into its output buffer;
* other results get a `memref.alloc`, freed before the return;
* `irt.reshape` is a view (`memref.reinterpret_cast`), never a copy;
* an op whose results have no elements (an empty batch) gets its buffers and no kernel.

Every computing op becomes one loop nest whose independent output dimensions form one
`scf.parallel`; contractions add an inner `scf.for` reduction carrying the accumulator. The
scalar work per element comes from the op's own `build_scalar`/`build_epilogue`, so fused and
unfused ops lower through the same code. Each nest carries an `irc.kernel` attribute naming the
op it came from, which the C++ emitter prints as a comment.

What is legal after it: func, arith, math, scf, memref; no irt op and no tensor value.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint

from irc.dialects.irt import core as irt
from irc.dialects.static_shape import check_static
from irc.lowering.tensor.fold_params import COMPILE_TIME_ATTR
from irc.lowering.tensor.irc_fuse import FUSED_ATTR
from irc.target import Target

KERNEL_ATTR = "irc.kernel"
OP_INDEX_ATTR = "irc.op"

LoweringFn = Callable[["FunctionLowering", Operation], None]
LOWERINGS: dict[type[Operation], LoweringFn] = {}
"""How each op (or op family base class) becomes loops; op families register with `@lowers`."""

VIEW_OPS: set[type[Operation]] = {irt.ReshapeOp}
"""Ops whose result aliases their input's buffer (no kernel of their own)."""


def lowers(*op_types: type[Operation]) -> Callable[[LoweringFn], LoweringFn]:
    """Register the lowering of `op_types` (a base class covers its whole family)."""

    def register(fn: LoweringFn) -> LoweringFn:
        for t in op_types:
            LOWERINGS[t] = fn
        return fn

    return register
REDUCTION_ATTR = "irc.reduction"


def memref_type(t: Attribute, what: str = "an argument or result") -> MemRefType:
    if not isinstance(t, TensorType):
        raise ValueError(f"irc-to-loops expects functions on tensors (irt level), got {what} of type {t}")
    check_static("irc-to-loops", what, t)
    return MemRefType(t.element_type, t.get_shape())


def describe(op: Operation) -> str:
    """A one-line name of an irt op for kernel comments: `irt.contract linear (irt.linear + irt.relu) -> 4x16`."""
    head = f"{op.name} {op.contraction_kind}" if isinstance(op, irt.ContractOp) else op.name
    fused = op.attributes.get(FUSED_ATTR)
    if isinstance(fused, ArrayAttr):
        head += f" ({' + '.join(s.data for s in fused.data)})"
    return f"{head} -> {_shape_str(op.results[0])}"


def _empty(v: SSAValue) -> bool:
    return isinstance(v.type, TensorType) and math.prod(irt.shape_of(v)) == 0


def _shape_str(v: SSAValue) -> str:
    return "x".join(map(str, irt.shape_of(v))) or "scalar"


@dataclass
class FunctionLowering:
    """Lowers one `func.func` on tensors into one on buffers."""

    fn: func.FuncOp
    block: Block = field(init=False)
    b: Builder = field(init=False)
    buffers: dict[SSAValue, SSAValue] = field(default_factory=dict)
    allocs: list[SSAValue] = field(default_factory=list)
    index_consts: dict[int, SSAValue] = field(default_factory=dict)
    tag_ops: bool = False  # mark each nest with the index of the irt op it lowers (profiling)
    gemm_width: int = Target.gemm_width  # the GEMM engine's panel width (packed weights of another width stay scalar)
    strict: bool = False  # no GEMM engine: the scalar nests sum in sequential order
    threads: int = Target.threads  # the thread count the GEMM blocking is chosen for
    op_index: int = -1  # the irt op being lowered (-1: copies of the return)

    # -- small builders -------------------------------------------------------------------
    def index(self, value: int) -> SSAValue:
        """An index constant, created once per function at its entry."""
        if value not in self.index_consts:
            op = arith.ConstantOp(IntegerAttr(value, IndexType()))
            first = self.block.first_op
            self.block.insert_op_before(op, first) if first else self.block.add_op(op)
            op.result.name_hint = f"c{value}"
            self.index_consts[value] = op.result
        return self.index_consts[value]

    def nest(self, shape: Sequence[int], label: str, body: Callable[[Builder, list[SSAValue]], None]) -> None:
        """One parallel loop nest over `shape`; `body(builder, ivs)` builds the per-element work."""
        if any(s < 0 for s in shape):  # verifiers reject dynamic dims: never print one as a bound
            raise ValueError(f"irc-to-loops: loop bounds {list(shape)} of `{label}` are not static sizes >= 0")
        if not shape:
            body(self.b, [])
            return
        block = Block(arg_types=[IndexType()] * len(shape))
        for d, iv in enumerate(block.args):
            iv.name_hint = f"i{d}"
        inner = Builder(InsertPoint.at_end(block))
        body(inner, list(block.args))
        inner.insert(scf.ReduceOp())
        zeros, ones = [self.index(0)] * len(shape), [self.index(1)] * len(shape)
        loop = scf.ParallelOp(zeros, [self.index(s) for s in shape], ones, Region(block))
        loop.attributes[KERNEL_ATTR] = StringAttr(label)
        if self.tag_ops:
            loop.attributes[OP_INDEX_ATTR] = IntegerAttr(self.op_index, 64)
        self.b.insert(loop)

    def load(self, b: Builder, tensor: SSAValue, ivs: Sequence[SSAValue], out_shape: Sequence[int]) -> SSAValue:
        """The element of `tensor` that broadcasts to position `ivs` of an `out_shape` result."""
        producer = tensor.owner
        if isinstance(producer, irt.ConstantOp) and producer.value.is_splat():
            value = float(next(iter(producer.value.iter_values())))
            return b.insert(arith.ConstantOp(FloatAttr(value, f32))).result
        shape = irt.shape_of(tensor)
        lead = len(out_shape) - len(shape)
        indices = [
            self.index(0) if size == 1 and out_shape[lead + d] != 1 else ivs[lead + d] for d, size in enumerate(shape)
        ]
        return b.insert(memref.LoadOp.get(self.buffers[tensor], indices)).res

    def result_buffer(self, value: SSAValue) -> SSAValue:
        """The buffer an op writes `value` into: an output buffer if returned, else a new allocation."""
        if value in self.buffers:
            return self.buffers[value]
        alloc = self.b.insert(memref.AllocOp.get(f32, 64, irt.shape_of(value)))
        alloc.memref.name_hint = value.name_hint
        self.allocs.append(alloc.memref)
        self.buffers[value] = alloc.memref
        return alloc.memref

    # -- the lowering ---------------------------------------------------------------------
    def run(self) -> func.FuncOp:
        old = self.fn.body.block
        ret = old.last_op
        assert isinstance(ret, func.ReturnOp)
        name = self.fn.sym_name.data
        in_types = [memref_type(a.type, f"argument {i} of @{name}") for i, a in enumerate(old.args)]
        out_types = [memref_type(v.type, f"result {i} of @{name}") for i, v in enumerate(ret.arguments)]
        self.block = Block(arg_types=in_types + out_types)
        self.b = Builder(InsertPoint.at_end(self.block))
        for a, new in zip(old.args, self.block.args):
            new.name_hint = a.name_hint
            self.buffers[a] = new
        outs = list(self.block.args[len(old.args) :])
        copies = self._assign_outputs(list(ret.arguments), outs)
        for self.op_index, op in enumerate(old.ops):
            if op is not ret:
                self.lower(op)
        self.op_index = -1
        for src, dst in copies:
            self._copy(src, dst)
        for buf in self.allocs:
            self.b.insert(memref.DeallocOp.get(buf))
        self.b.insert(func.ReturnOp())
        return func.FuncOp(self.fn.sym_name.data, (in_types + out_types, []), Region(self.block))

    def _assign_outputs(self, results: list[SSAValue], outs: list[SSAValue]) -> list[tuple[SSAValue, SSAValue]]:
        """Let each returned value be computed in place in its output buffer (a reshaped result:
        its source, into a view of the buffer); the rest (arguments, constants, values returned
        twice) are copied at the end. Returns the (value, buffer) pairs to copy."""
        copies = []
        for i, (value, out) in enumerate(zip(results, outs)):
            out.name_hint = f"out{i}"
            root = value
            while isinstance(root.owner, irt.ReshapeOp):  # a reshape's buffer is its input's
                root = root.owner.input
            computed = isinstance(root.owner, Operation) and not isinstance(
                root.owner, (*VIEW_OPS, irt.ConstantOp)
            )
            if computed and root not in self.buffers:
                self.buffers[root] = out if root is value else self.view(out, irt.shape_of(root))
            else:
                copies.append((value, out))
        return copies

    def _copy(self, src: SSAValue, dst: SSAValue) -> None:
        shape = irt.shape_of(src)
        self.nest(
            shape,
            f"copy to {dst.name_hint}",
            lambda b, ivs: b.insert(memref.StoreOp.get(self.load(b, src, ivs, shape), dst, ivs)),
        )

    def lower(self, op: Operation) -> None:
        if op.results and type(op) not in VIEW_OPS and all(_empty(r) for r in op.results):
            for r in op.results:  # zero elements to compute (an empty batch): no kernel at all
                self.result_buffer(r)
            return
        for cls in type(op).__mro__:
            if cls in LOWERINGS:
                LOWERINGS[cls](self, op)
                return
        raise NotImplementedError(f"irc-to-loops: no lowering for {op.name}")

    def view(self, buffer: SSAValue, shape: Sequence[int], name: str | None = None) -> SSAValue:
        """The same contiguous elements seen with another shape; no copy."""
        strides = [math.prod(shape[d + 1 :]) for d in range(len(shape))]
        cast = memref.ReinterpretCastOp(buffer, [], [], [], [0], list(shape), strides, MemRefType(f32, shape))
        cast.result.name_hint = name
        return self.b.insert(cast).result


# ---------------------------------------------------------------------------------------------
# Lowerings of the core ops (op families in other modules register their own)
# ---------------------------------------------------------------------------------------------


@lowers(irt.ElementwiseOp)
def lower_elementwise(fl: FunctionLowering, op: irt.ElementwiseOp) -> None:
    out = fl.result_buffer(op.results[0])
    shape = irt.shape_of(op.results[0])

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        args = [fl.load(b, x, ivs, shape) for x in op.elementwise_inputs()]
        b.insert(memref.StoreOp.get(op.build_scalar(b, args), out, ivs))

    fl.nest(shape, describe(op), body)

@lowers(irt.ContractionOp)
def lower_contraction(fl: FunctionLowering, op: irt.ContractionOp) -> None:
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
        zero = b.insert(arith.ConstantOp(FloatAttr(0.0, f32))).result
        loop = b.insert(scf.ForOp(fl.index(0), fl.index(k_size), fl.index(1), [zero], Region(k_block)))
        loop.attributes[REDUCTION_ATTR] = StringAttr("add")
        args = [fl.load(b, e, ivs, shape) for e in op.epilogue_inputs]
        value = op.build_epilogue(b, loop.results[0], args)
        b.insert(memref.StoreOp.get(value, out, ivs))

    fl.nest(shape, describe(op), body)

@lowers(irt.TransposeOp)
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

@lowers(irt.ReshapeOp)
def lower_reshape(fl: FunctionLowering, op: irt.ReshapeOp) -> None:
    if op.result not in fl.buffers:
        fl.buffers[op.result] = fl.view(fl.buffers[op.input], irt.shape_of(op.result), op.result.name_hint)

@lowers(irt.ConstantOp)
def lower_constant(fl: FunctionLowering, op: irt.ConstantOp) -> None:
    read_per_element = all(
        isinstance(use.operation, irt.ElementwiseOp)
        or (isinstance(use.operation, irt.ContractionOp) and use.index >= 2)
        for use in op.result.uses
    )
    if op.value.is_splat() and read_per_element and op.result not in fl.buffers:
        return  # every reader takes the value as a scalar constant (see `load`)
    out = fl.result_buffer(op.result)
    shape = irt.shape_of(op.result)
    for flat, value in enumerate(op.value.iter_values()):
        idx = [fl.index(flat // math.prod(shape[d + 1 :]) % shape[d]) for d in range(len(shape))]
        c = fl.b.insert(arith.ConstantOp(FloatAttr(float(value), f32))).result
        fl.b.insert(memref.StoreOp.get(c, out, idx))


@dataclass(frozen=True)
class IrcToLoopsPass(ModulePass):
    """Options (the Target's, see irc/target.py; the defaults are `Target()`'s):
    tag_ops: mark every loop nest with `irc.op`, the index of the op it came from in its
      function (used by profiling builds to attribute time to ops).
    gemm_width: the GEMM engine's register tile width (16 or 32); a packed rhs of another
      width stays on the scalar nest.
    strict: no GEMM engine (IRC_STRICT builds: sequential-order sums).
    threads: the thread count the GEMM blocking (`tiles`) is chosen for.

    Functions marked `irc.compile_time` (irc-fold-params' fold functions) are left as they are:
    they are evaluated when the module is created, never lowered."""

    name = "irc-to-loops"
    tag_ops: bool = False
    gemm_width: int = Target.gemm_width
    strict: bool = False
    threads: int = Target.threads

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        options = dict(tag_ops=self.tag_ops, gemm_width=self.gemm_width, strict=self.strict, threads=self.threads)
        for fn in list(op.ops):
            if isinstance(fn, func.FuncOp) and not fn.is_declaration and COMPILE_TIME_ATTR not in fn.attributes:
                new = FunctionLowering(fn, **options).run()
                op.body.block.insert_op_before(new, fn)
                fn.detach()
                fn.erase()


# Op families register their lowerings on import (they are only ever imported from here).
from irc.lowering.to_loops import nn as _nn, reduce as _reduce, shape as _shape  # noqa: E402, F401
from irc.lowering.to_loops import gemm as _gemm  # noqa: E402, F401  (last: overrides the scalar contraction and conv nests)

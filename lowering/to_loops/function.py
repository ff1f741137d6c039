"""The core of `irc-to-loops`: `FunctionLowering` bufferizes one `func.func` on tensors and
gives every op's lowering the builders it needs (index constants, parallel nests, broadcasting
loads, result buffers, views).

It lowers each op with the function its `lowerings` table gives for the op's class (or nearest
base class); the table is `irc.lowering.to_loops.table.LOWERINGS`, and the op families'
lowerings import this module, never the table or the pass.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass, field

from xdsl.builder import Builder
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    TensorType,
    f32,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from irc.dialects.irt import core as irt
from irc.dialects.irt.shape import ConcatOp
from irc.dialects.static_shape import check_static
from irc.dialects.symbolic import (
    Dim,
    dim,
    dims_of,
    format_dim,
    memref_of,
    product,
    row_major_strides,
    size_ops,
    symbol_order,
    symbols_of,
    sympy,
)
from irc.lowering.tensor.irc_fuse import fused_names
from irc.target import DEFAULT_ALIGNMENT, Target

KERNEL_ATTR = "irc.kernel"
OP_INDEX_ATTR = "irc.op"
REDUCTION_ATTR = "irc.reduction"

LoweringFn = Callable[["FunctionLowering", Operation], None]
"""How one op (or op family base class) becomes loops."""

VIEW_OPS: set[type[Operation]] = {irt.ReshapeOp}
"""Ops whose result aliases their input's buffer (no kernel of their own)."""


def memref_type(t: Attribute, what: str = "an argument or result") -> MemRefType:
    if not isinstance(t, TensorType):
        raise ValueError(f"irc-to-loops expects functions on tensors (irt level), got {what} of type {t}")
    check_static("irc-to-loops", what, t, symbolic=True)
    return memref_of(t.element_type, dims_of(t))


def bound_symbols(fn: func.FuncOp) -> list[sympy.Symbol]:
    """The symbols a function's sizes use, in order; each must be some argument's whole size
    (that is where the caller's value comes from), or the function cannot be called."""
    name = fn.sym_name.data
    bound, used = set(), set()
    for t in fn.function_type.inputs.data:
        dims = dims_of(t) if isinstance(t, TensorType) else ()
        bound |= {d for d in dims if not isinstance(d, int) and isinstance(d, sympy.Symbol)}  # static: no sympy
        used |= symbols_of(dims)
    for t in fn.function_type.outputs.data:
        used |= symbols_of(dims_of(t) if isinstance(t, TensorType) else ())
    unbound = sorted(used - bound, key=symbol_order)
    if unbound:
        raise ValueError(
            f"irc-to-loops: @{name} uses the size symbol(s) {', '.join(map(str, unbound))} that no argument "
            "has as a whole dimension, so a caller cannot give their values"
        )
    return sorted(used, key=symbol_order)


Homes = dict[SSAValue, tuple[SSAValue, int]]
"""value -> (the concatenation result whose buffer holds it, its element offset there)."""


def place(homes: Homes, value: SSAValue) -> tuple[SSAValue, int]:
    """The value whose own buffer holds `value`, and the element offset of `value` in it
    (`value`, 0 unless `value` has a home in a concatenation)."""
    offset = 0
    while value in homes:
        value, at = homes[value]
        offset += at
    return value, offset


def concat_homes(ops: Sequence[Operation], returned: Container[SSAValue]) -> Homes:
    """Values computed in place inside a concatenation's buffer, so that its copy of them is not
    needed: value -> (the concatenation's result, the value's element offset in it).

    A concatenation along dim d whose result has size 1 in every dim before d (NCHW channels at
    batch 1: DenseNet) holds each input as one contiguous range of its buffer. An input gets that
    range as its buffer (`FunctionLowering.result_buffer`) when it is computed in this function
    by a kernel of its own (not an argument, a constant or a view), is not `returned` (its buffer
    is then the output's), has no home yet, and starts 64-byte aligned. Concatenations are visited
    last first, so a chain (`x1 = cat(x0, a)`, `x2 = cat(x1, b)`, ...) nests into the last one's
    buffer, and a concatenation whose inputs already lie in order in one buffer (torchvision's
    DenseNet concatenates all earlier features again in each layer) becomes a view of them.

    Sound because every range of a buffer is written once, by the kernel computing the value
    homed there (or by the one copy of an input that has no home), before anything reads it: an
    input is computed before its concatenation, and a value's home is its own. `lower_concat`
    skips a copy only where source and destination are the same elements (`concat_copies`)."""
    homes: Homes = {}

    def homeless(v: SSAValue) -> bool:
        return v not in returned and v not in homes and isinstance(v.owner, Operation) and not isinstance(
            v.owner, (*VIEW_OPS, irt.ConstantOp)
        )

    for op in reversed(ops):
        if not isinstance(op, ConcatOp) or irt.element_type(op.result) != f32:
            continue
        shapes = [irt.shape_of(v) for v in (*op.inputs, op.result)]
        if not all(isinstance(n, int) for s in shapes for n in s) or not _ranges(op):
            continue
        offsets = _range_offsets(op)
        if homeless(op.result) and all(x in homes for x in op.inputs):
            (root, start), *rest = [place(homes, x) for x in op.inputs]
            if all(p == (root, start + at) for p, at in zip(rest, offsets[1:])):
                homes[op.result] = (root, start)  # a view of its inputs, already in order in one buffer
                continue
        for x, at in zip(op.inputs, offsets):
            if homeless(x) and at * 4 % DEFAULT_ALIGNMENT == 0:
                homes[x] = (op.result, at)
    return homes


def _ranges(op: ConcatOp) -> bool:
    """Whether each input of `op` is one contiguous range of its result (size 1 before the dim)."""
    return all(n == 1 for n in irt.shape_of(op.result)[: op.axis])


def _range_offsets(op: ConcatOp) -> list[Dim]:
    """The element offset of each input's range in the result (when `_ranges`)."""
    offsets = [0]
    for x in op.inputs[:-1]:
        offsets.append(dim(offsets[-1] + product(irt.shape_of(x))))
    return offsets


def concat_copies(op: ConcatOp, homes: Homes) -> list[bool]:
    """For each input of `op`: whether it must be copied into the result, i.e. is not already
    the very elements it would be copied to (an input computed in place, `concat_homes`)."""
    if not _ranges(op):
        return [True] * len(op.inputs)
    root, start = place(homes, op.result)
    return [place(homes, x) != (root, dim(start + at)) for x, at in zip(op.inputs, _range_offsets(op))]


def returned_roots(ret: func.ReturnOp) -> set[SSAValue]:
    """The values a function's outputs are computed in (a returned reshape's: its source)."""
    roots = set()
    for value in ret.arguments:
        while isinstance(value.owner, irt.ReshapeOp):
            value = value.owner.input
        roots.add(value)
    return roots


def function_homes(fn: func.FuncOp) -> Homes:
    """`concat_homes` of a function on tensors (what irc-to-loops computes in place)."""
    ops = list(fn.body.block.ops)
    return concat_homes(ops, returned_roots(ops[-1]))


def describe(op: Operation) -> str:
    """A one-line name of an irt op for kernel comments: `irt.contract linear (irt.linear + irt.relu) -> 4x16`."""
    head = f"{op.name} {op.contraction_kind}" if isinstance(op, irt.ContractOp) else op.name
    fused = fused_names(op)
    if fused is not None:
        head += f" ({' + '.join(fused)})"
    return f"{head} -> {_shape_str(op.results[0])}"


def _empty(v: SSAValue) -> bool:
    return isinstance(v.type, TensorType) and product(irt.shape_of(v)) == 0


def _shape_str(v: SSAValue) -> str:
    dims = [format_dim(d) if isinstance(d, int) or d.is_Symbol else f"({format_dim(d)})" for d in irt.shape_of(v)]
    return "x".join(dims) or "scalar"


def load_at(b: Builder, buf: SSAValue, indices: Sequence[SSAValue]) -> SSAValue:
    """The element of buffer `buf` at `indices`."""
    return b.insert(memref.LoadOp.get(buf, list(indices))).res


def store_at(b: Builder, value: SSAValue, buf: SSAValue, indices: Sequence[SSAValue]) -> None:
    """Store `value` into buffer `buf` at `indices`."""
    b.insert(memref.StoreOp.get(value, buf, list(indices)))


@dataclass
class FunctionLowering:
    """Lowers one `func.func` on tensors into one on buffers."""

    fn: func.FuncOp
    lowerings: Mapping[type[Operation], LoweringFn]
    block: Block = field(init=False)
    b: Builder = field(init=False)
    buffers: dict[SSAValue, SSAValue] = field(default_factory=dict)
    allocs: list[SSAValue] = field(default_factory=list)
    index_consts: dict[Dim, SSAValue] = field(default_factory=dict)
    symbols: dict[sympy.Symbol, SSAValue] = field(default_factory=dict)  # the function's size arguments
    entry_last: Operation | None = None  # the last size computation at the function's entry
    tag_ops: bool = False  # mark each nest with the index of the irt op it lowers (profiling)
    gemm_width: int = Target.gemm_width  # the GEMM engine's panel width (packed weights of another width stay scalar)
    gemm_rows: int = Target.gemm_rows  # the convolutions' register tile rows (a conv weight's panel height)
    matmul_rows: int = Target.matmul_rows  # the register tile rows of matrix products
    strict: bool = False  # no GEMM engine: the scalar nests sum in sequential order
    threads: int = Target.threads  # the thread count the GEMM blocking is chosen for
    caches: tuple[int, int, int] = (0, 0, 0)  # L1d, L2, L3 bytes the GEMM blocking is chosen for (0: unknown)
    op_index: int = -1  # the irt op being lowered (-1: copies of the return)
    homes: Homes = field(default_factory=dict)  # values computed in a concatenation's buffer: `concat_homes`

    # -- small builders -------------------------------------------------------------------
    def index(self, value: Dim) -> SSAValue:
        """An index value for a size: a constant, or a symbolic size computed from the function's
        size arguments; each created once per function at its entry."""
        if value in self.index_consts:
            return self.index_consts[value]
        if isinstance(value, int):
            op = arith.ConstantOp(IntegerAttr(value, IndexType()))
            first = self.block.first_op
            self.block.insert_op_before(op, first) if first else self.block.add_op(op)
            op.result.name_hint = f"c{value}"
            self.entry_last = self.entry_last or op
            self.index_consts[value] = op.result
            return op.result
        ops = size_ops(value, self.symbols, self.index)
        for op in ops:  # after the constants and the earlier sizes they use
            if self.entry_last is None:
                first = self.block.first_op
                self.block.insert_op_before(op, first) if first else self.block.add_op(op)
            else:
                self.block.insert_op_after(op, self.entry_last)
            self.entry_last = op
        self.index_consts[value] = ops[-1].results[0] if ops else self.symbols[value]
        return self.index_consts[value]

    def nest(self, shape: Sequence[int], label: str, body: Callable[[Builder, list[SSAValue]], None]) -> None:
        """One parallel loop nest over `shape`; `body(builder, ivs)` builds the per-element work."""
        if any(isinstance(s, int) and s < 0 for s in shape):  # never print xDSL's `?` placeholder as a bound
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
        value = irt.splat_element(tensor)
        if value is not None:
            return irt.scalar_constant(b, value, irt.element_type(tensor))
        indices = self.broadcast_indices(irt.shape_of(tensor), ivs, out_shape)
        return b.insert(memref.LoadOp.get(self.buffers[tensor], indices)).res

    def broadcast_indices(
        self, shape: Sequence[int], ivs: Sequence[SSAValue], out_shape: Sequence[int]
    ) -> list[SSAValue]:
        """Indices into an operand of `shape` that broadcasts to position `ivs` of an `out_shape`
        result: right-aligned, index 0 along a stretched size-1 dim (`irt.stretched_dims`)."""
        lead = len(out_shape) - len(shape)
        return [self.index(0) if s else ivs[lead + d] for d, s in enumerate(irt.stretched_dims(shape, out_shape))]

    def result_buffer(self, value: SSAValue) -> SSAValue:
        """The buffer an op writes `value` into: an output buffer if returned, its place in a
        concatenation's buffer if it has one there (`concat_homes`), else a new allocation."""
        if value in self.buffers:
            return self.buffers[value]
        if value in self.homes:
            parent, offset = self.homes[value]
            self.buffers[value] = self.view(self.result_buffer(parent), irt.shape_of(value), value.name_hint, offset)
            return self.buffers[value]
        dims = irt.shape_of(value)
        sizes = [self.index(d) for d in dims if not isinstance(d, int)]
        t = memref_of(irt.element_type(value), dims)
        alloc = self.b.insert(memref.AllocOp(sizes, [], t, IntegerAttr(64, 64)))
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
        symbols = bound_symbols(self.fn)
        size_types = [IndexType()] * len(symbols)
        self.block = Block(arg_types=size_types + in_types + out_types)
        self.b = Builder(InsertPoint.at_end(self.block))
        for s, arg in zip(symbols, self.block.args):
            arg.name_hint = s.name
            self.symbols[s] = arg
        for a, new in zip(old.args, self.block.args[len(symbols) :]):
            new.name_hint = a.name_hint
            self.buffers[a] = new
        outs = list(self.block.args[len(symbols) + len(old.args) :])
        copies = self._assign_outputs(list(ret.arguments), outs)
        self.homes = concat_homes(list(old.ops), returned_roots(ret))
        for self.op_index, op in enumerate(old.ops):
            if op is not ret:
                self.lower(op)
        self.op_index = -1
        for src, dst in copies:
            self._copy(src, dst)
        for buf in self.allocs:
            self.b.insert(memref.DeallocOp.get(buf))
        self.b.insert(func.ReturnOp())
        return func.FuncOp(self.fn.sym_name.data, (size_types + in_types + out_types, []), Region(self.block))

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
            if cls in self.lowerings:
                self.lowerings[cls](self, op)
                return
        raise NotImplementedError(f"irc-to-loops: no lowering for {op.name}")

    def view(self, buffer: SSAValue, shape: Sequence[int], name: str | None = None, offset: int = 0) -> SSAValue:
        """The same contiguous elements, from element `offset` on, seen with another shape; no copy."""
        strides = row_major_strides(shape)
        dynamic = [self.index(d) for d in (*shape, *strides) if not isinstance(d, int)]
        static = [d if isinstance(d, int) else DYNAMIC_INDEX for d in (*shape, *strides)]
        n = len(shape)
        cast = memref.ReinterpretCastOp(
            buffer, [], dynamic[: sum(1 for d in shape if not isinstance(d, int))],
            dynamic[sum(1 for d in shape if not isinstance(d, int)) :], [offset], static[:n], static[n:],
            memref_of(irt.element_type(buffer), shape),
        )
        cast.result.name_hint = name
        return self.b.insert(cast).result

"""`irc-plan-memory`: pack a lowered function's intermediate buffers into one arena.

    irc-opt model.mlir -p irc-fuse,irc-to-loops,irc-plan-memory -t cpp

After `irc-to-loops` every intermediate is a top-level `memref.alloc`, freed by a
`memref.dealloc` before the return. This pass:

1. gives each such buffer a live interval over the function's *top-level* op order: an op uses
   a buffer when the op or anything nested in it takes the buffer, or a view of it, as an
   operand (any op: loops, loads, stores, calls of a GEMM op... no op type is special-cased).
   An op that takes a buffer and returns a memref returns a view: its result aliases the buffer.
2. lets an elementwise kernel write its output *in place* of an input that dies in that kernel,
   when the kernel is one `scf.parallel` whose only access to the output is one store at the
   loop's induction variables, and whose every access to the input is a load of exactly that
   element before the store (same shape, same indices, both views start at the buffer's start).
3. packs the buffers (in-place pairs share one slot) into one arena: greedy by size, each at the
   lowest 64-byte aligned offset that overlaps no buffer live at the same time.
4. replaces every alloc by a view of the arena, a new trailing function argument
   `%arena: memref<Nxf32>` that the caller provides (the Python wrapper keeps one per calling
   thread, so concurrent calls never share scratch); drops the deallocs; rewrites views of
   planned buffers to view the arena directly (so a `reinterpret_cast` offset always counts from
   its source's first element, as in MLIR); and records on the function
   `irc.arena_bytes`, `irc.intermediate_bytes` (the sum over all planned buffers),
   `irc.buffers` and `irc.in_place` (buffers written in place of an input).

A function without intermediates is left as it is (no arena argument, `irc.arena_bytes = 0`).

With symbolic sizes (dialects/symbolic.py) the sizes and offsets are expressions of the
function's size arguments, and so is the arena: `%arena: memref<?xf32, #irt.dims<"...">>`,
`irc.arena_bytes = "<expression>"`, which the C++ entry point takes from a per-thread arena grown
to each call's size (lowering/cpp/include/irc_prelude.h). Sizes that depend on the call cannot be
compared at compile time, so such a function's slots are not fitted into gaps: each is placed
above every slot live at the same time (offset = max of their aligned ends), biggest first by
the size at a nominal value of the symbols (`HINT`). Overlap is impossible for every value of
the symbols; reuse of dead slots is kept.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StridedLayoutAttr,
    StringAttr,
    f32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass

from irc.dialects.symbolic import (
    Dim,
    DimsAttr,
    align_up,
    all_static,
    dim,
    dims_of,
    evaluate,
    format_dim,
    maximum,
    memref_of,
    multiple_of,
    parse_dim,
    product,
    row_major_strides,
    size_ops,
    symbol,
    sympy,
    upper_bound,
)
from irc.target import DEFAULT_ALIGNMENT

ARENA_BYTES = "irc.arena_bytes"
INTERMEDIATE_BYTES = "irc.intermediate_bytes"
BUFFERS = "irc.buffers"
IN_PLACE = "irc.in_place"
ALIGN = DEFAULT_ALIGNMENT
ALIGNMENTS = (16, 32, 64)
ELEMENT_BYTES = 4  # f32


@dataclass(eq=False)
class Buffer:
    """One planned allocation: its size, live interval (top-level op indices) and slot."""

    value: SSAValue
    alloc: memref.AllocOp
    bytes: Dim
    uses: list[int] = field(default_factory=list)
    offset: Dim = 0  # bytes into the arena

    @property
    def start(self) -> int:
        return min(self.uses, default=-1)

    @property
    def end(self) -> int:
        return max(self.uses, default=-2)


@dataclass(eq=False)
class Slot:
    """Buffers sharing one place in the arena (one buffer, or a chain written in place)."""

    members: list[Buffer]

    @property
    def bytes(self) -> Dim:
        sizes = [b.bytes for b in self.members]
        return upper_bound(*sizes)

    @property
    def start(self) -> int:
        return min(b.start for b in self.members)

    @property
    def end(self) -> int:
        return max(b.end for b in self.members)


class _Placed:
    """The slots placed so far, found by live interval in time proportional to the answer (a
    scan of every placed slot per new one is quadratic): those live at `start` (a segment tree
    over the top-level op indices) and those starting after it, up to `end` (a sorted list)."""

    def __init__(self, points: int):
        self.size = 1 << max(points, 1).bit_length()
        self.covering: list[list[tuple]] = [[] for _ in range(2 * self.size)]
        self.starts: list[tuple[int, int, tuple]] = []  # (start, order, item), sorted

    def add(self, start: int, end: int, item: tuple) -> None:
        start = max(start, 0)  # a slot with a never-used member starts at -1: the same overlaps
        lo, hi = start + self.size, end + self.size + 1
        while lo < hi:  # the tree nodes whose ranges together are [start, end]
            if lo & 1:
                self.covering[lo].append(item)
                lo += 1
            if hi & 1:
                hi -= 1
                self.covering[hi].append(item)
            lo, hi = lo // 2, hi // 2
        bisect.insort(self.starts, (start, len(self.starts), item))

    def overlapping(self, start: int, end: int) -> list[tuple]:
        start = max(start, 0)
        found: list[tuple] = []
        node = start + self.size
        while node:
            found += self.covering[node]
            node //= 2
        lo = bisect.bisect_left(self.starts, (start + 1,))
        hi = bisect.bisect_left(self.starts, (end + 1,))
        found += (item for _, _, item in self.starts[lo:hi])
        return found


def _aligned(n: Dim, alignment: int) -> Dim:
    return align_up(n, alignment)


PLANNED_BYTES = {"f32": 4, "i64": 8, "i1": 1}
"""Element types of planned buffers and their bytes (i1 is a C++ bool, one byte, as torch.bool);
every buffer starts at an aligned offset, so an int64 or bool buffer is a view of the arena too."""


def _element_bytes(t: MemRefType) -> int:
    return PLANNED_BYTES[str(t.element_type)]


def _plannable(op: Operation) -> bool:
    if not isinstance(op, memref.AllocOp) or op.symbol_operands:
        return False
    t = op.memref.type
    return isinstance(t, MemRefType) and str(t.element_type) in PLANNED_BYTES and isinstance(t.layout, (NoneAttr, DimsAttr))


HINT = 64
"""The value each symbol is taken to have when ordering symbolic slots by size (largest first)."""


def _hint(d: Dim) -> int:
    return d if isinstance(d, int) else evaluate(d, {s: HINT for s in d.free_symbols})


class EntrySizes:
    """Index values of sizes in a function with size arguments, computed once at its entry
    (after the constants and size computations irc-to-loops put there)."""

    def __init__(self, fn: func.FuncOp):
        block = fn.body.block
        self.block = block
        self.symbols = {symbol(a.name_hint): a for a in block.args if isinstance(a.type, IndexType)}
        self.values: dict[Dim, SSAValue] = {
            op.value.value.data: op.result
            for op in block.ops
            if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr) and isinstance(op.result.type, IndexType)
        }

    def _insert(self, op: Operation) -> None:
        anchor = next((top for top in self.block.ops if not _entry_op(top)), None)  # the body moves
        self.block.insert_op_before(op, anchor) if anchor else self.block.add_op(op)

    def constant(self, n: int) -> SSAValue:
        if n not in self.values:
            op = arith.ConstantOp(IntegerAttr(n, IndexType()))
            self._insert(op)
            self.values[n] = op.result
        return self.values[n]

    def __call__(self, d: Dim) -> SSAValue:
        if isinstance(d, int):
            return self.constant(d)
        if d not in self.values:
            ops = size_ops(d, self.symbols, self.constant)
            for op in ops:
                self._insert(op)
            self.values[d] = ops[-1].results[0] if ops else self.symbols[d]
        return self.values[d]


def _entry_op(op: Operation) -> bool:
    return isinstance(op, arith.ConstantOp) or (
        op.name.startswith("arith.") and bool(op.results) and all(isinstance(r.type, IndexType) for r in op.results)
    )


class FunctionPlan:
    """Liveness, in-place pairs and arena offsets of one function."""

    def __init__(self, fn: func.FuncOp, alignment: int = ALIGN):
        self.fn = fn
        self.alignment = alignment
        self.top = list(fn.body.block.ops)
        self.buffers: dict[SSAValue, Buffer] = {}
        self.roots: dict[SSAValue, set[Buffer]] = {}  # value -> the planned buffers it aliases
        self.offsets: dict[SSAValue, Dim | None] = {}  # element offset of a view into its root
        self.deallocs: list[Operation] = []
        for op in self.top:
            if _plannable(op):
                t = op.memref.type
                buf = Buffer(op.memref, op, product(dims_of(t)) * _element_bytes(t))
                self.buffers[op.memref] = buf
                self.roots[op.memref] = {buf}
                self.offsets[op.memref] = 0
        self._liveness()

    def _liveness(self) -> None:
        for i, top in enumerate(self.top):
            if isinstance(top, memref.DeallocOp) and top.memref in self.buffers:
                self.deallocs.append(top)
                continue
            for op in top.walk():
                used: set[Buffer] = set()
                for v in op.operands:
                    used |= self.roots.get(v, set())
                for buf in used:
                    buf.uses.append(i)
                if used:  # views: a memref result aliases the buffers its operands do
                    for r in op.results:
                        if isinstance(r.type, MemRefType):
                            self.roots[r] = set(used)
                            self.offsets[r] = self._view_offset(op)

    def _view_offset(self, op: Operation) -> int | None:
        """Element offset of a reinterpret_cast of a planned buffer (None: unknown view)."""
        if not isinstance(op, memref.ReinterpretCastOp) or op.offsets:
            return None
        base = self.offsets.get(op.source)
        return None if base is None else base + op.static_offsets.get_values()[0]

    # -- in place ----------------------------------------------------------------------------
    def in_place_pairs(self) -> list[tuple[Buffer, Buffer]]:
        """(input, output) pairs where the output may take the input's slot (see module doc)."""
        pairs, donors, takers = [], set(), set()
        ending: dict[int, list[Buffer]] = {}  # top-level op index -> the buffers dying / born there
        starting: dict[int, list[Buffer]] = {}
        for b in self.buffers.values():
            ending.setdefault(b.end, []).append(b)
            starting.setdefault(b.start, []).append(b)
        for i, top in enumerate(self.top):
            if not isinstance(top, scf.ParallelOp):
                continue
            dying = [b for b in ending.get(i, ()) if b not in donors]
            born = [b for b in starting.get(i, ()) if b not in takers]
            for out in born:
                for inp in dying:
                    if inp is not out and self._elementwise(top, inp, out):
                        pairs.append((inp, out))
                        donors.add(inp)
                        takers.add(out)
                        break
        return pairs

    def _elementwise(self, loop: scf.ParallelOp, inp: Buffer, out: Buffer) -> bool:
        body = loop.body.block
        stores, loads = [], []
        for op in loop.walk():
            for v in op.operands:
                roots = self.roots.get(v, set())
                if inp not in roots and out not in roots:
                    continue
                if len(roots) != 1 or self.offsets.get(v) != 0:
                    return False
                if isinstance(op, memref.StoreOp) and v is op.memref and out in roots:
                    stores.append(op)
                elif isinstance(op, memref.LoadOp) and inp in roots:
                    loads.append(op)
                else:
                    return False
        if len(stores) != 1 or any(isinstance(op, memref.StoreOp) for op in loop.walk() if op not in stores):
            return False  # one store only: every load of the input then feeds it
        (store,) = stores
        ivs = list(body.args)
        if store.parent_block() is not body or list(store.indices) != ivs:
            return False
        shape, element = dims_of(store.memref.type), store.memref.type.element_type
        order = {op: n for n, op in enumerate(body.ops)}
        return all(  # one element type: an 8-byte element written over 4-byte ones would clobber unread ones
            load.parent_block() is body
            and list(load.indices) == ivs
            and dims_of(load.memref.type) == shape
            and load.memref.type.element_type == element
            and order[load] < order[store]
            for load in loads
        )

    # -- packing -----------------------------------------------------------------------------
    def pack(self, in_place: bool = True) -> tuple[list[Slot], Dim]:
        """Slots with offsets (greedy by size, first fit) and the arena size in bytes."""
        slot_of: dict[Buffer, Slot] = {}
        slots: list[Slot] = []
        for b in self.buffers.values():
            slot_of[b] = Slot([b])
            slots.append(slot_of[b])
        if in_place:
            gone_slots: set[int] = set()
            for inp, out in self.in_place_pairs():
                keep, gone = slot_of[inp], slot_of[out]
                keep.members += gone.members
                for b in gone.members:
                    slot_of[b] = keep
                gone_slots.add(id(gone))
            slots = [s for s in slots if id(s) not in gone_slots]
        # One region of the arena per element type (f32, then i64, then i1): a place is never
        # reused by another type, so no write through one type can be reordered past a read or
        # write of the same bytes through another (C++'s type-based aliasing rules).
        arena: Dim = 0
        for element in PLANNED_BYTES:
            group = [s for s in slots if str(s.members[0].value.type.element_type) == element]
            if not group:
                continue
            size = self._first_fit(group) if all(isinstance(s.bytes, int) for s in group) else self._stack(group)
            for slot in group:  # each region's size is a multiple of the alignment already
                for b in slot.members:
                    b.offset = dim(b.offset + arena)
            arena = dim(arena + size)
        return slots, arena

    def _first_fit(self, slots: list[Slot]) -> int:
        """Static offsets: greedy by size, each slot at the lowest aligned offset that overlaps no
        slot live at the same time; returns the region's size in bytes."""
        placed = _Placed(len(self.top))
        arena = 0
        for n, slot in enumerate(sorted(slots, key=lambda s: (-s.bytes, s.start))):
            offset, size = 0, slot.bytes
            live = any(b.uses for b in slot.members)  # a dead buffer conflicts with nothing
            start, end = slot.start, slot.end
            if live:
                for at, _, other_bytes in sorted(placed.overlapping(start, end)):
                    if offset + size <= at:
                        break
                    offset = max(offset, _aligned(at + other_bytes, self.alignment))
                placed.add(start, end, (offset, n, size))
            for b in slot.members:
                b.offset = offset
            arena = max(arena, _aligned(offset + size, self.alignment))
        return arena

    def _stack(self, slots: list[Slot]) -> Dim:
        """Symbolic offsets (see the module doc): each slot above every placed slot it overlaps,
        at the aligned max of their ends. A placed slot's end is remembered as a polynomial bound
        (`upper_bound`: its offset's bound, plus alignment - 1 unless that bound is a multiple of
        the alignment, plus its bytes), so no size nests `max` in `max`: sympy's simplification
        of nested maxima grows with every buffer (a Llama's plan took minutes)."""
        placed = _Placed(len(self.top))
        ends: list[Dim] = []
        for n, slot in enumerate(sorted(slots, key=lambda s: (-_hint(s.bytes), s.start))):
            offset: Dim = 0
            if any(b.uses for b in slot.members):
                below = [end for _, _, end in placed.overlapping(slot.start, slot.end)]
                offset = _aligned(maximum(*below), self.alignment)
                bound = upper_bound(*below)
                slack = 0 if multiple_of(bound, self.alignment) else self.alignment - 1
                end = dim(bound + slack + slot.bytes)
                placed.add(slot.start, slot.end, (offset, n, end))
                ends.append(end)
            for b in slot.members:
                b.offset = offset
        return _aligned(maximum(*ends), self.alignment)

    # -- rewriting ---------------------------------------------------------------------------
    def rewrite(self, in_place: bool = True) -> None:
        slots, arena_bytes = self.pack(in_place)
        fn = self.fn
        total = dim(sum(b.bytes for b in self.buffers.values()))
        shared = sum(len(s.members) - 1 for s in slots)
        fn.attributes[ARENA_BYTES] = _size_attr(arena_bytes)
        fn.attributes[INTERMEDIATE_BYTES] = _size_attr(total)
        fn.attributes[BUFFERS] = IntegerAttr(len(self.buffers), 64)
        fn.attributes[IN_PLACE] = IntegerAttr(shared, 64)
        if not self.buffers:
            return
        block = fn.body.block
        arena = block.insert_arg(memref_of(f32, [_elements(arena_bytes)]), len(block.args))
        arena.name_hint = "arena"
        fn.update_function_type()
        sizes = EntrySizes(fn)
        absolute: dict[SSAValue, Dim] = {}  # planned buffer or view -> element offset in the arena
        for op in self.top:
            if isinstance(op, memref.AllocOp) and op.memref in self.buffers:
                buf = self.buffers[op.memref]
                t = op.memref.type
                view = _arena_view(arena, _elements(buf.offset), dims_of(t), op.memref.name_hint, sizes, t.element_type)
                self._replace(op, view, absolute)
            elif (
                isinstance(op, memref.ReinterpretCastOp)
                and op.source in absolute
                and self.offsets.get(op.results[0]) is not None
                and (op.static_offsets.get_values()[0] * _element_bytes(op.result.type)) % ELEMENT_BYTES == 0
            ):
                t = op.result.type  # its own offset in its elements, the arena's in f32 ones
                own = op.static_offsets.get_values()[0] * _element_bytes(t) // ELEMENT_BYTES
                view = _arena_view(
                    arena, absolute[op.source] + own, dims_of(t), op.result.name_hint, sizes, t.element_type
                )
                self._replace(op, view, absolute)
        for op in self.deallocs:
            op.detach()
            op.erase()

    @staticmethod
    def _replace(op: Operation, placed: tuple[memref.ReinterpretCastOp, Dim], absolute: dict[SSAValue, Dim]) -> None:
        view, offset = placed
        op.parent_block().insert_op_before(view, op)
        absolute[view.result] = offset
        op.results[0].replace_all_uses_with(view.result)
        op.detach()
        op.erase()


def _elements(n: Dim) -> Dim:
    """Bytes to f32 elements (every planned size and offset is a multiple of 4 bytes; floor
    division keeps an expression such as max(a, b) / 4 an integer one)."""
    return n // ELEMENT_BYTES if isinstance(n, int) else dim(sympy.floor(n / sympy.Integer(ELEMENT_BYTES)))


def _size_attr(n: Dim) -> Attribute:
    return IntegerAttr(n, 64) if isinstance(n, int) else StringAttr(format_dim(n))


def _arena_view(
    arena: SSAValue, offset: Dim, shape: tuple[Dim, ...], name: str | None, sizes: EntrySizes,
    element: Attribute = f32,
) -> tuple[memref.ReinterpretCastOp, Dim]:
    """`shape` elements of type `element` at the arena's f32 element `offset` (a strided layout
    records a non-zero static offset; symbolic sizes and offsets are index operands), and that
    offset. An int64 or bool view is the same bytes seen as another type (the emitter casts)."""
    if not (isinstance(offset, int) and all_static(shape)):
        strides = row_major_strides(shape)
        dynamic = [[sizes(d) for d in ds if not isinstance(d, int)] for ds in ([offset], shape, strides)]
        static = [[d if isinstance(d, int) else DYNAMIC_INDEX for d in ds] for ds in ([offset], shape, strides)]
        view = memref.ReinterpretCastOp(arena, *dynamic, *static, memref_of(element, shape))
        view.result.name_hint = name
        return view, offset
    strides = row_major_strides(shape)
    layout = StridedLayoutAttr(strides, offset) if offset else None
    t = MemRefType(element, shape, layout) if layout else MemRefType(element, shape)
    view = memref.ReinterpretCastOp(arena, [], [], [], [offset], list(shape), strides, t)
    view.result.name_hint = name
    return view, offset


def plan_function(fn: func.FuncOp, in_place: bool = True, alignment: int = ALIGN) -> None:
    FunctionPlan(fn, alignment).rewrite(in_place)


def memory_stats(module: ModuleOp, sizes: dict[str, int] | None = None) -> dict[str, float | int]:
    """Arena bytes, intermediate bytes, buffer count, in-place count and reuse ratio
    (intermediate bytes / arena bytes; 1.0 = no reuse) summed over a planned module's functions.
    Symbolic byte counts are evaluated at `sizes` (the symbols' values), else left out."""
    stats = {"arena_bytes": 0, "intermediate_bytes": 0, "buffers": 0, "in_place": 0}
    keys = {ARENA_BYTES: "arena_bytes", INTERMEDIATE_BYTES: "intermediate_bytes", BUFFERS: "buffers", IN_PLACE: "in_place"}
    for fn in module.walk():
        if isinstance(fn, func.FuncOp):
            for attr, key in keys.items():
                value = fn.attributes.get(attr)
                if isinstance(value, IntegerAttr):
                    stats[key] += value.value.data
                elif isinstance(value, StringAttr) and sizes:
                    stats[key] += evaluate(parse_dim(value.data), sizes)
    return with_ratio(stats)


def with_ratio(stats: dict) -> dict:
    arena, total = stats["arena_bytes"], stats["intermediate_bytes"]
    return {**stats, "reuse_ratio": total / arena if arena else 1.0}


@dataclass(frozen=True)
class PlanMemoryPass(ModulePass):
    """Options:
    in_place: let elementwise kernels write over an input that dies there (default true).
    alignment: the bytes every buffer's offset in the arena is a multiple of (the Target's
      `alignment`: 16, 32 or 64; the runtime allocates the arena itself 64-byte aligned)."""

    name = "irc-plan-memory"
    in_place: bool = True
    alignment: int = ALIGN

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.alignment not in ALIGNMENTS:
            raise ValueError(f"irc-plan-memory: alignment must be 16, 32 or 64, got {self.alignment}")
        for fn in list(op.ops):
            if isinstance(fn, func.FuncOp) and not fn.is_declaration:
                plan_function(fn, self.in_place, self.alignment)

"""The `cpp` target: loop-level IR (func, arith, math, scf, memref) → one C++17 translation unit.

    irc-opt model.mlir -p irc-fuse,irc-to-loops -t cpp

Each function becomes an `extern "C"` entry point taking one `float* __restrict__` per buffer
(`int64_t*` for i64 elements, `bool*` for i1: one byte, as torch.bool stores it),
with two twins: `NAME__argv(void* const* a)` (one array of all the pointers, the Python
wrapper's cheap call) and `NAME__signature()`, a JSON string `{"args": [[dtype, shape], ...]}`
naming every buffer's element type and shape in order, so a loader checks what it passes against
what the library was built for (irc/aot.py).
`scf.parallel` becomes `#pragma omp parallel for collapse(n)`, an `scf.for` marked as an additive
reduction becomes `#pragma omp simd reduction(+:acc)`; the loop-level passes' marks (irc-vectorize's
`irc.simd` and `irc.chunk`, irc-parallelize's `irc.parallel`) are printed as the schedule they
name, never re-decided here. Every SIMD loop gets `simdlen(W)`, W the Target's vector width
(`vector_width`, also `#define IRC_VL W` for the runtime headers' vector code). Each kernel (a top-level loop nest)
is preceded by a comment naming the IR op it came from. Constants are inlined as literals.
Includes are kept minimal (compile time is mostly headers); math uses GCC builtins.
"""

from __future__ import annotations

import json
import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import singledispatchmethod
from io import StringIO
from typing import IO

from xdsl.context import Context
from xdsl.dialects import arith, func, math as xmath, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.target import Target

from irc.dialects import irl
from irc.dialects.static_shape import static_shape_error
from irc.dialects.symbolic import (
    SYMBOL_NAME,
    align_up,
    cpp_dim,
    dims_of,
    format_dim,
    product,
    row_major_strides,
    symbolic_attr,
)
from irc.lowering.cpp.gemm import emit_attention, emit_gemm
from irc.lowering.cpp.headers import header
from irc.lowering.loops.parallelize import COLLAPSE_ATTR, run_time_condition, runs_serial
from irc.lowering.loops.vectorize import (
    CHUNK_ATTR,
    LANES_ATTR,
    SIMD_ATTR,
    SIMD_INNER,
    SIMD_SPLIT,
    constant_bounds,
    is_vectorized,
)
from irc.lowering.tensor.fold_params import COMPILE_TIME_ATTR
from irc.lowering.to_loops.core import TRANSPOSE_ATTR
from irc.lowering.to_loops.irc_to_loops import KERNEL_ATTR, OP_INDEX_ATTR, REDUCTION_ATTR
from irc.target import GEMM_ROWS_CHOICES, PIXEL_PAIR_ROWS, PIXEL_ROWS

BINARY = {arith.AddfOp: "+", arith.SubfOp: "-", arith.MulfOp: "*", arith.DivfOp: "/",
          arith.AddiOp: "+", arith.SubiOp: "-", arith.MuliOp: "*", arith.DivSIOp: "/", arith.RemSIOp: "%",
          arith.AndIOp: "&", arith.OrIOp: "|", arith.XOrIOp: "^"}
CMPI = {0: "==", 1: "!=", 2: "<", 3: "<=", 4: ">", 5: ">=", 6: "<", 7: "<=", 8: ">", 9: ">="}  # arith.cmpi predicates
CMPF = {1: "==", 2: ">", 3: ">=", 4: "<", 5: "<=", 13: "!="}
"""arith.cmpf predicates irc emits (oeq, ogt, oge, olt, ole: false with a NaN, as C++'s
comparisons are; une: true with a NaN, as C++'s != is)."""
CALLS = {xmath.ExpOp: "irc_exp",
         xmath.TanhOp: "irc_tanh", xmath.ErfOp: "irc_erf", xmath.SqrtOp: "__builtin_sqrtf",
         xmath.LogOp: "irc_log", xmath.AbsFOp: "__builtin_fabsf", xmath.CosOp: "__builtin_cosf",
         xmath.SinOp: "__builtin_sinf", xmath.PowFOp: "__builtin_powf"}


CPP_KEYWORDS = frozenset("""
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char16_t char32_t class
    compl const const_cast constexpr continue decltype default delete do double dynamic_cast else enum
    explicit export extern false float for friend goto if inline int long mutable namespace new noexcept
    not not_eq nullptr operator or or_eq private protected public register reinterpret_cast return short
    signed sizeof static static_assert static_cast struct switch template this thread_local throw true try
    typedef typeid typename union unsigned using virtual void volatile wchar_t while xor xor_eq
    int64_t intptr_t size_t std
""".split())
"""Names an SSA value's hint cannot keep as a C++ variable (an FX node of `x.long()` is named
`long`, a KV cache's new entries `new`), nor the types and namespace the unit uses."""

VECTOR_WIDTHS = (4, 8, 16)
"""float32 lanes of the vector code the emitter can print (`IRC_VL`): SSE/portable, AVX2, AVX-512."""
SIGNATURE_SUFFIX = "__signature"
SIGNATURE_DTYPES = {"float": "float32", "int64_t": "int64", "bool": "bool"}  # C++ element type -> torch's name in `__signature`


def ctype(t: Attribute) -> str:
    if isinstance(t, Float32Type):
        return "float"
    if isinstance(t, Float64Type):
        return "double"  # accumulators only (irt.cumsum sums f32 in double, as torch)
    if isinstance(t, IntegerType) and t.width.data == 1:
        return "bool"  # one byte holding 0 or 1, as torch.bool
    if isinstance(t, (IndexType, IntegerType)):
        return "int64_t"
    raise NotImplementedError(f"cpp emitter: no C++ type for {t}")


def element_bytes(t: Attribute) -> int:
    """Bytes per element of a buffer of element type `t` in the generated C++."""
    return 1 if ctype(t) == "bool" else 4 if ctype(t) == "float" else 8


def int_literal(value: int, t: Attribute) -> str:
    if ctype(t) == "bool":
        return "true" if value else "false"
    if value == -(2**63):  # the literal 9223372036854775808 does not fit: negate after
        return "(-9223372036854775807LL - 1)"
    return str(value)


def static_buffer(t: Attribute, what: str) -> Attribute:
    """`t` if its sizes are static or symbolic; sizes, strides and bounds are all printed from it."""
    reason = static_shape_error(what, t, symbolic=True)
    if reason is not None:
        raise ValueError(f"cpp emitter: {reason}")
    return t


def _signature_entry(t: Attribute) -> list:
    """[dtype, shape] of one argument in `__signature`: a symbolic size as its expression, a size
    argument as ["index", []]."""
    if isinstance(t, IndexType):
        return ["index", []]
    return [SIGNATURE_DTYPES[ctype(t.element_type)], [d if isinstance(d, int) else format_dim(d) for d in dims_of(t)]]


def bound_of(value: SSAValue) -> float | None:
    """The value of an f32 constant that is not NaN (a max/min against it is `irc_maxk`/`irc_mink`),
    else None."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, FloatAttr) and not math.isnan(owner.value.value.data):
        return owner.value.value.data
    return None


def float_literal(value: float) -> str:
    if math.isnan(value):
        return '__builtin_nanf("")'
    if math.isinf(value):
        return "__builtin_inff()" if value > 0 else "(-__builtin_inff())"
    return f"{value!r}f"


@dataclass
class CppEmitter:
    out: IO[str]
    strict: bool = False  # no reassociation: reductions sum in sequential order
    profile: bool = False  # time every kernel (include/irc_profile.h)
    gemm_width: int = 16  # IRC_NR: the GEMM engine's panel width (weights packed for another cannot be read)
    vector_width: int = 8  # IRC_VL: float32 lanes of the vector code (simdlen of every SIMD loop)
    gemm_rows: int = 6  # IRC_MR: the convolutions' register tile rows (conv weights packed for another cannot be read)
    matmul_rows: int = 6  # IRC_MMR: the register tile rows of matrix products (their lhs is never packed)
    labels: list[str] = field(default_factory=list)  # kernel labels, in emission order
    depth: int = 0
    names: dict[SSAValue, str] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)
    lanes: str | None = None  # see vector_lanes()
    uses_gemm: bool = False  # an irl.gemm was emitted: the GEMM engine goes into the prelude
    uses_thread_arena: bool = False  # a function with sizes has an arena: irc_thread_arena goes into the prelude
    bounds: dict[str, str] = field(default_factory=dict)  # a max/min bound's literal -> its irc_opaque name (`declare_bounds`)

    def line(self, text: str) -> None:
        self.out.write("  " * self.depth + text + "\n")

    def fresh(self, value: SSAValue, prefix: str = "v") -> str:
        """Bind a new C++ variable to an SSA value: its name hint where it has a free one (not a
        C++ keyword: `%new` is a fine IR name), else prefix+N."""
        name = value.name_hint
        if not name or name in self.used or name in CPP_KEYWORDS:
            name = f"{name or prefix}{'_' if name else ''}{len(self.used)}"
        self.used.add(name)
        self.names[value] = name
        return name

    def n(self, value: SSAValue) -> str:
        return self.names[value]

    def block(self, block: Block) -> None:
        for op in block.ops:
            self.emit(op)

    def element(self, ref: SSAValue, indices) -> str:
        shape = dims_of(ref.type)
        terms = []
        for i, stride in zip(indices, row_major_strides(shape)):
            terms.append(self.n(i) if stride == 1 else f"{self.n(i)}*{stride}" if isinstance(stride, int)
                         else f"{self.n(i)}*({cpp_dim(stride)})")
        return f"{self.n(ref)}[{' + '.join(terms) or '0'}]"

    def value(self, op: Operation, expr: str) -> None:
        t = op.results[0].type
        cpp_type = self.lanes if self.lanes and isinstance(t, Float32Type) else ctype(t)
        unused = "[[maybe_unused]] " if isinstance(t, IndexType) else ""  # a size not every branch reads
        self.line(f"{unused}const {cpp_type} {self.fresh(op.results[0])} = {expr};")

    @contextmanager
    def vector_lanes(self, cpp_type: str = "V"):
        """Emit scalar f32 code for lanes of type `cpp_type` (float or an IRC_VL-float vector inside a
        generic lambda: GEMM epilogues): f32 values get that type, float constants become splats."""
        self.lanes = cpp_type
        try:
            yield
        finally:
            self.lanes = None

    def loop_header(self, iv: SSAValue, lb: SSAValue, ub: SSAValue, step: SSAValue) -> None:
        i = self.fresh(iv, "i")
        inc = f"++{i}" if self.n(step) == "1" else f"{i} += {self.n(step)}"
        self.line(f"for (int64_t {i} = {self.n(lb)}; {i} < {self.n(ub)}; {inc})")

    @contextmanager
    def kernel(self, op: Operation):
        """Emit a loop nest; one labelled by irc-to-loops is a kernel: a comment naming its IR op
        and, in profiling builds, a timer around it."""
        label = op.attributes.get(KERNEL_ATTR)
        if not isinstance(label, StringAttr):
            yield
            return
        index = len(self.labels)
        op_index = op.attributes.get(OP_INDEX_ATTR)
        self.labels.append(f"{op_index.value.data}|{label.data}" if isinstance(op_index, IntegerAttr) else label.data)
        self.line(f"// kernel {index}: {label.data}")
        if self.profile:
            self.line(f"const double irc_t{index} = irc_now();")
        yield
        if self.profile:
            self.line(f"irc_prof_ns[{index}] += irc_now() - irc_t{index};")

    def nested(self, block: Block) -> None:
        self.line("{")
        self.depth += 1
        self.block(block)
        self.depth -= 1
        self.line("}")

    @singledispatchmethod
    def emit(self, op: Operation) -> None:
        raise NotImplementedError(f"cpp emitter: cannot emit {op.name}; run irc-to-loops first")

    @emit.register
    def _(self, op: func.FuncOp) -> None:
        self.names, self.used = {}, set()
        name = op.sym_name.data
        args = list(op.body.block.args)
        sizes = [a for a in args if isinstance(a.type, IndexType)]
        if args[: len(sizes)] != sizes or any(a.name_hint is None or not SYMBOL_NAME.fullmatch(a.name_hint) for a in sizes):
            raise NotImplementedError(f"cpp emitter: @{name}: size arguments (index, named s0, s1, ...) come first")
        # A function with size arguments takes this thread's arena itself, of a symbolic size or a
        # static one (only its 0-d irt.size buffers planned): its caller passes none.
        own_arena = bool(args) and args[-1].name_hint == "arena" and (bool(sizes) or symbolic_attr(args[-1].type) is not None)
        params = []
        for arg in args:
            if isinstance(arg.type, IndexType):
                self.names[arg] = arg.name_hint
                self.used.add(arg.name_hint)
                params.append(f"const int64_t {arg.name_hint}")
                continue
            if not isinstance(arg.type, MemRefType):
                raise NotImplementedError(f"cpp emitter: function arguments must be memrefs or sizes, got {arg.type}")
            static_buffer(arg.type, f"argument {arg.index} of @{name}")
            params.append(f"{ctype(arg.type.element_type)}* __restrict__ {self.fresh(arg, 'arg')}")
        self.line("")
        self.line(f'extern "C" void {name}({", ".join(params)})')
        self.line("{")
        self.depth += 1
        self.declare_bounds(op)
        self.block(op.body.block)
        self.depth -= 1
        self.line("}")
        # Its twin taking one array of pointers: the Python wrapper's cheap call (runtime/wrapper.py).
        # Sizes travel as the pointer-sized integers themselves; the arena of a function with sizes
        # is this thread's scratch, grown to the size this call needs (the caller passes none).
        casts = []
        for i, a in enumerate(args):
            if isinstance(a.type, IndexType):
                casts.append(f"static_cast<int64_t>(reinterpret_cast<intptr_t>(a[{i}]))")
            elif own_arena and a is args[-1]:
                self.uses_thread_arena = True
                casts.append(f"irc_thread_arena({cpp_dim(product(dims_of(a.type)) * 4)})")
            else:
                casts.append(f"static_cast<{ctype(a.type.element_type)}*>(a[{i}])")
        unpack = "".join(f"const int64_t {a.name_hint} = {casts[i]}; " for i, a in enumerate(sizes))
        call = ", ".join(a.name_hint if a in sizes else casts[i] for i, a in enumerate(args))
        self.line(f'extern "C" void {name}__argv(void* const* a) {{ {unpack}{name}({call}); }}')
        signature = json.dumps({"args": [_signature_entry(a.type) for a in args]}, separators=(",", ":"))
        self.line(f'extern "C" const char* {op.sym_name.data}{SIGNATURE_SUFFIX}() {{ return {json.dumps(signature)}; }}')

    def declare_bounds(self, op: func.FuncOp) -> None:
        """One `const float irc_boundN = irc_opaque(c);` at the top of the function per constant c that
        bounds a max or min (relu's 0, relu6's 0 and 6, a clamp's bounds): GCC, not seeing c, makes
        each such max/min one vmaxps/vminps (`irc_maxk`); seeing it, relu6 was 4x that in compare
        and mask logic."""
        self.bounds = {}
        for inner in op.walk():
            if isinstance(inner, (arith.MaximumfOp, arith.MinimumfOp)):
                for k in filter(lambda k: k is not None, map(bound_of, inner.operands)):
                    literal = float_literal(k)
                    if literal not in self.bounds:
                        self.bounds[literal] = self.fresh_name(f"irc_bound{len(self.bounds)}")
                        self.line(f"const float {self.bounds[literal]} = irc_opaque({literal});")

    @emit.register
    def _(self, op: func.ReturnOp) -> None:
        self.line("return;")

    @emit.register
    def _(self, op: arith.ConstantOp) -> None:
        attr = op.value
        if isinstance(attr, FloatAttr) and self.lanes:
            name = self.fresh(op.result, "c")
            # unused when its only users are max/min, which splat its `declare_bounds` name instead
            self.line(f"[[maybe_unused]] const {self.lanes} {name} = irc_splat<{self.lanes}>({float_literal(attr.value.data)});")
        elif isinstance(attr, FloatAttr):
            self.names[op.result] = float_literal(attr.value.data)
        elif isinstance(attr, IntegerAttr):
            self.names[op.result] = int_literal(attr.value.data, attr.type)
        else:
            raise NotImplementedError(f"cpp emitter: constant {attr}")

    @emit.register
    def _(self, op: arith.NegfOp) -> None:
        self.value(op, f"-{self.n(op.operand)}")

    @emit.register(arith.AddfOp)
    @emit.register(arith.SubfOp)
    @emit.register(arith.MulfOp)
    @emit.register(arith.DivfOp)
    @emit.register(arith.AddiOp)
    @emit.register(arith.SubiOp)
    @emit.register(arith.MuliOp)
    @emit.register(arith.DivSIOp)
    @emit.register(arith.RemSIOp)
    @emit.register(arith.AndIOp)
    @emit.register(arith.OrIOp)
    @emit.register(arith.XOrIOp)
    def _(self, op: Operation) -> None:
        lhs, rhs = op.operands
        self.value(op, f"{self.n(lhs)} {BINARY[type(op)]} {self.n(rhs)}")

    @emit.register(arith.MaxSIOp)
    @emit.register(arith.MinSIOp)
    def _(self, op: Operation) -> None:
        a, b = self.n(op.lhs), self.n(op.rhs)
        self.value(op, f"{a} {'>' if isinstance(op, arith.MaxSIOp) else '<'} {b} ? {a} : {b}")

    @emit.register
    def _(self, op: arith.CmpiOp) -> None:
        cmp = CMPI[op.predicate.value.data]  # signed/unsigned alike: irc compares index values only
        self.line(f"const bool {self.fresh(op.result)} = {self.n(op.lhs)} {cmp} {self.n(op.rhs)};")

    @emit.register
    def _(self, op: arith.CmpfOp) -> None:
        cmp = CMPF.get(op.predicate.value.data)
        if cmp is None:
            raise NotImplementedError(f"cpp emitter: arith.cmpf predicate {op.predicate.value.data}")
        self.line(f"const bool {self.fresh(op.result)} = {self.n(op.lhs)} {cmp} {self.n(op.rhs)};")

    @emit.register
    def _(self, op: arith.IndexCastOp) -> None:
        self.names[op.result] = self.n(op.input)  # index and i64 are both int64_t

    @emit.register(arith.SIToFPOp)
    @emit.register(arith.UIToFPOp)
    @emit.register(arith.FPToSIOp)
    @emit.register(arith.ExtUIOp)
    @emit.register(arith.ExtFOp)
    @emit.register(arith.TruncFOp)
    def _(self, op: Operation) -> None:  # float <-> int64 (toward zero), bool -> 0/1, float <-> double
        self.value(op, f"static_cast<{ctype(op.results[0].type)}>({self.n(op.input)})")

    @emit.register(arith.MaximumfOp)
    @emit.register(arith.MinimumfOp)
    def _(self, op: arith.MaximumfOp | arith.MinimumfOp) -> None:
        """irc_maxf/irc_minf (NaN in either propagates); against a constant bound that is not NaN,
        irc_maxk/irc_mink on its `declare_bounds` name (the other operand's NaN propagates)."""
        is_max = isinstance(op, arith.MaximumfOp)
        x, k = op.lhs, bound_of(op.rhs)
        if k is None or bound_of(x) is not None:
            x, k = op.rhs, bound_of(op.lhs)
        if k is None or bound_of(x) is not None:
            self.value(op, f"{'irc_maxf' if is_max else 'irc_minf'}({self.n(op.lhs)}, {self.n(op.rhs)})")
            return
        bound = self.bounds[float_literal(k)]
        bound = f"irc_splat<{self.lanes}>({bound})" if self.lanes else bound
        self.value(op, f"{'irc_maxk' if is_max else 'irc_mink'}({self.n(x)}, {bound})")

    @emit.register(xmath.ExpOp)
    @emit.register(xmath.TanhOp)
    @emit.register(xmath.ErfOp)
    @emit.register(xmath.SqrtOp)
    @emit.register(xmath.LogOp)
    @emit.register(xmath.AbsFOp)
    @emit.register(xmath.CosOp)
    @emit.register(xmath.SinOp)
    @emit.register(xmath.PowFOp)
    def _(self, op: Operation) -> None:
        self.value(op, f"{CALLS[type(op)]}({', '.join(self.n(v) for v in op.operands)})")

    @emit.register
    def _(self, op: arith.FPToUIOp) -> None:
        self.value(op, f"{self.n(op.input)} != 0.0f")  # irc uses it only on 0.0/1.0 masks, to i1

    @emit.register
    def _(self, op: arith.SelectOp) -> None:
        self.value(op, f"{self.n(op.cond)} ? {self.n(op.lhs)} : {self.n(op.rhs)}")

    @emit.register
    def _(self, op: memref.AllocOp) -> None:
        t = static_buffer(op.memref.type, "a memref.alloc")
        size = align_up(product(dims_of(t)) * element_bytes(t.element_type), 64)  # a multiple of the alignment
        name, c = self.fresh(op.memref, "buf"), ctype(t.element_type)
        self.line(f"{c}* __restrict__ {name} = static_cast<{c}*>(std::aligned_alloc(64, {cpp_dim(size)}));")

    @emit.register
    def _(self, op: memref.DeallocOp) -> None:
        self.line(f"std::free({self.n(op.memref)});")

    @emit.register
    def _(self, op: memref.ReinterpretCastOp) -> None:
        (offset,) = op.static_offsets.get_values()
        if offset == DYNAMIC_INDEX:
            offset = self.n(op.offsets[0])
        static_buffer(op.result.type, "a memref.reinterpret_cast")
        name, c = self.fresh(op.result, "view"), ctype(op.result.type.element_type)
        at = f"{self.n(op.source)} + {offset}"  # in the source's elements (an int64 or bool view of the f32 arena: cast)
        if op.source.type.element_type != op.result.type.element_type:
            at = f"reinterpret_cast<{c}*>({at})"
        self.line(f"[[maybe_unused]] {c}* __restrict__ {name} = {at};  // view as {op.result.type}")

    @emit.register
    def _(self, op: memref.LoadOp) -> None:
        self.value(op, self.element(op.memref, op.indices))

    @emit.register
    def _(self, op: memref.StoreOp) -> None:
        self.line(f"{self.element(op.memref, op.indices)} = {self.n(op.value)};")

    def parallel_pragma(self, op: scf.ParallelOp, d: int) -> None:
        """The pragma before dimension d of a parallel nest: OpenMP threads over all dimensions
        (`collapse`) unless irc-parallelize marked it serial; a nest with an `irc.simd` schedule
        (irc-vectorize) runs its innermost dimension as `omp simd` and threads over the outer
        ones ("split"), or over the innermost too ("inner": `parallel for simd`)."""
        rank, threads = len(op.lowerBound), not runs_serial(op)  # irc-parallelize marks small nests serial
        condition = run_time_condition(op)  # symbolic work: OpenMP or not decided per call
        when = f" if({condition})" if condition else ""
        simd = op.attributes.get(SIMD_ATTR)
        if simd is None:
            collapse = op.attributes.get(COLLAPSE_ATTR)  # irc-parallelize: the innermost left out
            depth = collapse.value.data if isinstance(collapse, IntegerAttr) else rank
            if collapse is not None and not (isinstance(collapse, IntegerAttr) and 1 <= depth <= rank):
                raise NotImplementedError(f"cpp emitter: {COLLAPSE_ATTR} must be an integer from 1 to the nest's "
                                          f"{rank} dimensions, got {collapse}")
            if d == 0 and threads:
                self.line(f"#pragma omp parallel for collapse({depth}) schedule(static){when}")
            return
        if simd not in (StringAttr(SIMD_SPLIT), StringAttr(SIMD_INNER)):
            raise NotImplementedError(f"cpp emitter: {SIMD_ATTR} must be {SIMD_SPLIT!r} or {SIMD_INNER!r}, got {simd}")
        split = simd == StringAttr(SIMD_SPLIT)
        if d == 0 and split and threads:
            self.line(f"#pragma omp parallel for collapse({rank - 1}) schedule(static){when}")
        if d == rank - 1:
            self.line(f"#pragma omp parallel for simd schedule(static){when}{self.simdlen}" if threads and not split
                      else f"#pragma omp simd{self.simdlen}")

    @emit.register
    def _(self, op: scf.ParallelOp) -> None:
        with self.kernel(op):
            dims = list(zip(op.body.block.args, op.lowerBound, op.upperBound, op.step))
            for d, (iv, lb, ub, st) in enumerate(dims):
                self.parallel_pragma(op, d)
                self.loop_header(iv, lb, ub, st)
            self.nested(op.body.block)

    def transpose_tile(self, op: scf.ForOp) -> bool:
        """A tile of a float32 transpose of the last two dimensions (irc-to-loops' `TRANSPOSE_ATTR`
        on its `b` loop: for b { for a { out[..., b, a] = x[..., a, b] } }, rows of static width)
        as one `irc_transpose` call. False, and the loops are printed as they are, if the nest is
        not that."""
        outer = list(op.body.block.ops)
        if len(outer) != 2 or not isinstance(inner := outer[0], scf.ForOp) or op.iter_args or inner.iter_args:
            return False
        ops = list(inner.body.block.ops)
        if len(ops) != 3 or not isinstance(load := ops[0], memref.LoadOp) or not isinstance(store := ops[1], memref.StoreOp):
            return False
        b, a = op.body.block.args[0], inner.body.block.args[0]
        lead = list(load.indices)[:-2]
        if (store.value is not load.res or list(load.indices) != [*lead, a, b] or list(store.indices) != [*lead, b, a]
                or self.n(op.step) != "1" or self.n(inner.step) != "1"):
            return False
        lds, ldd = dims_of(load.memref.type)[-1], dims_of(store.memref.type)[-1]
        floats = all(isinstance(m.type.element_type, Float32Type) for m in (load.memref, store.memref))
        if not (floats and isinstance(lds, int) and isinstance(ldd, int)):
            return False
        src = self.element(load.memref, [*lead, inner.lb, op.lb])
        dst = self.element(store.memref, [*lead, op.lb, inner.lb])
        self.line(f"irc_transpose(&{src}, {lds}, &{dst}, {ldd}, {self.n(op.ub)} - {self.n(op.lb)}, "
                  f"{self.n(inner.ub)} - {self.n(inner.lb)});")
        return True

    @emit.register
    def _(self, op: scf.ForOp) -> None:
        if TRANSPOSE_ATTR in op.attributes and self.transpose_tile(op):
            return
        with self.kernel(op):
            block = op.body.block
            carried = list(zip(op.iter_args, block.args[1:], op.results))
            for init, arg, res in carried:
                name = self.fresh(arg, "acc")
                self.names[res] = name
                self.line(f"{ctype(res.type)} {name} = {self.n(init)};")
            kind = op.attributes.get(REDUCTION_ATTR)
            if not self.strict and len(carried) == 1 and kind in (StringAttr("add"), StringAttr("max")):
                chunk = op.attributes.get(CHUNK_ATTR)  # irc-vectorize
                if chunk is not None:
                    self.chunked_reduction(op, kind.data, chunk)  # type: ignore[union-attr]
                    return
                self.line(f"#pragma omp simd reduction({'+' if kind == StringAttr('add') else 'max'}:{self.n(op.results[0])})"
                          f"{self.lanes_of(op)}")
            elif not carried and is_vectorized(op):  # irc-vectorize
                self.line(f"#pragma omp simd{self.lanes_of(op)}")
            self.loop_header(block.args[0], op.lb, op.ub, op.step)
            self.nested(block)

    def chunked_reduction(self, op: scf.ForOp, kind: str, chunk: Attribute) -> None:
        """A reduction marked `irc.chunk = C` (irc-vectorize's REDUCTION_CHUNK): C partial results
        filled C iterations at a time, combined at the end, then the remaining iterations."""
        bounds = constant_bounds(op)
        if not isinstance(chunk, IntegerAttr) or chunk.value.data < 1 or bounds is None:
            raise NotImplementedError(f"cpp emitter: {CHUNK_ATTR} = {chunk} needs a positive integer and a loop "
                                      "with constant bounds and step 1")
        (lb, trips), size = bounds, chunk.value.data
        block, res = op.body.block, op.results[0]
        acc = self.n(res)
        parts, base = self.fresh_name(f"{acc}_parts"), self.fresh_name("chunk")
        identity, combine = ("0.0f", "+") if kind == "add" else ("-__builtin_inff()", "max")
        full = lb + trips // size * size
        self.line(f"float {parts}[{size}];")
        self.line(f"for (int irc_j = 0; irc_j < {size}; ++irc_j) {parts}[irc_j] = {identity};")
        self.line(f"for (int64_t {base} = {lb}; {base} < {full}; {base} += {size})")
        self.line("{")
        self.depth += 1
        self.line(f"#pragma omp simd{self.simdlen}")
        i = self.fresh(block.args[0], "i")
        self.line(f"for (int64_t {i} = {base}; {i} < {base} + {size}; ++{i})")
        self.names[block.args[1]] = self.names[res] = f"{parts}[{i} - {base}]"
        self.nested(block)
        self.names[block.args[1]] = self.names[res] = acc
        self.depth -= 1
        self.line("}")
        self.line(f"#pragma omp simd reduction({combine}:{acc}){self.simdlen}")
        fold = f"{acc} + {parts}[irc_j]" if kind == "add" else f"irc_maxf({acc}, {parts}[irc_j])"
        self.line(f"for (int irc_j = 0; irc_j < {size}; ++irc_j) {acc} = {fold};")
        if full < lb + trips:
            self.line(f"#pragma omp simd reduction({combine}:{acc}){self.simdlen}")
            i = self.fresh(block.args[0], "i")
            self.line(f"for (int64_t {i} = {full}; {i} < {lb + trips}; ++{i})")
            self.nested(block)

    def lanes_of(self, loop: Operation) -> str:
        """The simdlen clause of an scf.for: irc-vectorize's `irc.lanes` on a short loop, else the
        Target's width."""
        lanes = loop.attributes.get(LANES_ATTR)
        return f" simdlen({lanes.value.data})" if isinstance(lanes, IntegerAttr) else self.simdlen

    @property
    def simdlen(self) -> str:
        """The clause giving every SIMD loop the Target's vector width: GCC's own choice depends
        on its tuning (-march=native on a CPU it does not know picks 256 bits on some AVX-512
        ones), the Target's does not."""
        return f" simdlen({self.vector_width})"

    def fresh_name(self, name: str) -> str:
        """A C++ name not used yet in this function, based on `name`."""
        if name in self.used:
            name = f"{name}_{len(self.used)}"
        self.used.add(name)
        return name

    @emit.register
    def _(self, op: scf.YieldOp) -> None:
        loop = op.parent_op()
        if isinstance(loop, scf.ForOp):
            for value, res in zip(op.operands, loop.results):
                self.line(f"{self.n(res)} = {self.n(value)};")

    @emit.register
    def _(self, op: scf.ReduceOp) -> None:
        if op.operands:
            raise NotImplementedError("cpp emitter: scf.parallel with reductions")

    @emit.register
    def _(self, op: irl.GemmOp) -> None:
        self.uses_gemm = True
        with self.kernel(op):
            emit_gemm(self, op)

    @emit.register
    def _(self, op: irl.AttentionOp) -> None:
        self.uses_gemm = True
        with self.kernel(op):
            emit_attention(self, op)




def emit_cpp(
    module: ModuleOp, out: IO[str] | None = None, *, strict: bool = False, gemm_width: int = 16, gemm_rows: int = 6,
    matmul_rows: int = 6, vector_width: int = 8,
    profile: bool = False,
) -> str:
    """The C++ source of a lowered module (also written to `out` when given).

    strict: sum reductions in sequential order instead of letting the compiler vectorize them
    by reassociating, no FMA contraction, libm transcendentals (the Target's `strict`).
    gemm_width: the GEMM engine's register tile width (`IRC_NR`), the width its packed weights
    were packed for (the Target's `gemm_width`).
    gemm_rows: the convolutions' register tile rows (`IRC_MR`), the height of conv weights' packed
    panels (the Target's `gemm_rows`).
    matmul_rows: the register tile rows of matrix products (`IRC_MMR`; the Target's `matmul_rows`).
    vector_width: float32 lanes of the vector code (`IRC_VL`, the `simdlen` of every SIMD loop,
    the pieces GEMM epilogues and softmax rows run in; the Target's `vector_width`).
    profile: time each kernel; the library then exports `irc_profile_*` (include/irc_profile.h).
    Functions marked `irc.compile_time` (irc-fold-params' fold functions) are not emitted.
    """
    body = StringIO()
    if vector_width not in VECTOR_WIDTHS:
        raise ValueError(f"cpp: vector_width must be one of {', '.join(map(str, VECTOR_WIDTHS))}, got {vector_width}")
    emitter = CppEmitter(body, strict=strict, profile=profile, gemm_width=gemm_width, gemm_rows=gemm_rows,
                         matmul_rows=matmul_rows, vector_width=vector_width)
    for op in module.ops:
        if isinstance(op, func.FuncOp) and COMPILE_TIME_ATTR in op.attributes:
            continue
        emitter.emit(op)
    buf = StringIO()
    if strict:  # and no a*b+c fused into one rounding: every operation rounds as written
        buf.write('#pragma GCC optimize("fp-contract=off")\n')
        buf.write("#define IRC_LIBM 1  // transcendentals from libm (include/irc_math.h)\n")
    buf.write(f"#define IRC_VL {vector_width}  // float32 lanes per vector (the Target's vector_width)\n")
    buf.write(header("irc_prelude.h"))
    if emitter.uses_thread_arena:
        buf.write(header("irc_arena.h"))
    if emitter.uses_gemm:
        buf.write(f"#define IRC_NR {gemm_width}  // GEMM panel width (the Target's gemm_width)\n")
        buf.write(f"#define IRC_MR {gemm_rows}  // conv register tile rows (the Target's gemm_rows)\n")
        buf.write(f"#define IRC_MMR {matmul_rows}  // matrix product register tile rows (the Target's matmul_rows)\n")
        buf.write(f"#define IRC_PR {PIXEL_ROWS[gemm_width]}  // most pixels in a pixels-layout conv tile\n")
        buf.write(f"#define IRC_PT {PIXEL_PAIR_ROWS[gemm_width]}  // most pixels in a two-row tile of such a conv\n")
        buf.write(header("irc_gemm.h"))
    if profile:
        labels = ", ".join(json.dumps(label) for label in emitter.labels) or '""'
        buf.write(f"#define IRC_PROFILE_KERNELS {max(1, len(emitter.labels))}\n#define IRC_PROFILE_LABELS {labels}\n")
        buf.write(header("irc_profile.h"))
    buf.write(body.getvalue())
    text = buf.getvalue()
    if out is not None:
        out.write(text)
    return text


@dataclass(frozen=True)
class CppTarget(Target):
    """`-t cpp`, with the Target's options: `-t 'cpp{strict=true gemm_width=32 vector_width=16}'`;
    `profile` makes a profiling build (see `emit_cpp`)."""

    name = "cpp"
    strict: bool = False
    gemm_width: int = 16
    gemm_rows: int = 6
    matmul_rows: int = 6
    vector_width: int = 8
    profile: bool = False

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        self.emit_source(module, output)

    def emit_source(self, module: ModuleOp, output: IO[str] | None = None) -> str:
        if self.gemm_width not in (16, 32):
            raise ValueError(f"cpp: gemm_width must be 16 or 32, got {self.gemm_width}")
        for name in ("gemm_rows", "matmul_rows"):
            if getattr(self, name) not in GEMM_ROWS_CHOICES:
                raise ValueError(f"cpp: {name} must be one of {GEMM_ROWS_CHOICES}, got {getattr(self, name)}")
        return emit_cpp(module, output, strict=self.strict, gemm_width=self.gemm_width, gemm_rows=self.gemm_rows,
                        matmul_rows=self.matmul_rows,
                        vector_width=self.vector_width, profile=self.profile)

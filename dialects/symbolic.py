"""Symbolic dimensions: sizes known only when the compiled function is called.

A size that varies from call to call (a batch, a sequence length) is `?` in a tensor or memref
type, and the type says which size it is with an `#irt.dims` attribute (a tensor's encoding, a
memref's layout) holding one expression per `?`, in order:

    tensor<?x128xf32, #irt.dims<"s0">>
    memref<?x?x64xf32, #irt.dims<"s0", "s0 + s1">>

The expressions are integer polynomials of *symbols* `s0, s1, ...` (non-negative integers bound
when the function is called, from the sizes of its inputs), with `+`, `-`, `*`, floor division
`//`, `%`, `max(a, b)` and parentheses. Two dimensions are the same size exactly when their
expressions are equal, so verifiers and fusion rules compare symbolic shapes as they compare
static ones, and every stage computes sizes, strides and byte counts with the same arithmetic
on ints and expressions alike (`Dim`).

In Python an expression is a `sympy.Expr` over integer, non-negative symbols, so `64 * s0` and
`s0 * 64` are one expression and `max(s0, 2 * s0)` simplifies to `2 * s0`. A static size stays
a Python `int` (`dim` normalizes). Deciding a comparison that depends on a symbol raises
(`sympy` refuses the truth value of `s0 < 16`): code that branches on a size must either ask
`is_static` first or defer the choice to run time.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Union

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    MemRefLayoutAttr,
    MemRefType,
    NoneAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation, ParametrizedAttribute, SSAValue
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException


class _LazySympy:
    """`sympy`, imported on first use: a static-shape compile never needs it, and importing it
    costs a new process about 0.3 s (tests/test_pipeline_cache.py). Other modules import this
    name from here."""

    def __getattr__(self, name: str):
        import sympy as module

        globals()["sympy"] = module
        return getattr(module, name)


sympy = _LazySympy()

Dim = Union[int, "sympy.Expr"]
"""One dimension's size: an int, or an expression of symbols."""


def is_expr(value: object) -> bool:
    """Is `value` a symbolic size (a sympy expression)? False without importing sympy."""
    module = sys.modules.get("sympy")
    return module is not None and isinstance(value, module.Expr)

SYMBOL_NAME = re.compile(r"s[0-9]+")


def symbol(name: str) -> sympy.Symbol:
    """The symbol `name` (`s0`, `s1`, ...): a non-negative integer known at call time."""
    if not SYMBOL_NAME.fullmatch(name):
        raise ValueError(f"a size symbol is named s0, s1, ...: got {name!r}")
    return sympy.Symbol(name, integer=True, nonnegative=True)


def dim(value: int | sympy.Expr) -> Dim:
    """`value` as a Dim: a Python int when it is a constant, else the expression."""
    if isinstance(value, bool):
        raise TypeError("a size is not a bool")
    if isinstance(value, int):
        return value
    expr = sympy.expand(sympy.sympify(value))  # one spelling per polynomial: s0*(s1 + 1) is s0*s1 + s0
    if expr.is_Integer:
        return int(expr)
    return expr


def is_static(d: Dim) -> bool:
    return isinstance(d, int)


def all_static(dims: Iterable[Dim]) -> bool:
    return all(isinstance(d, int) for d in dims)


def symbols_of(dims: Iterable[Dim]) -> set[sympy.Symbol]:
    found: set[sympy.Symbol] = set()
    for d in dims:
        if not isinstance(d, int):
            found |= d.free_symbols
    return found


def symbol_order(s: sympy.Symbol) -> int:
    """The number of a symbol (`s12` -> 12), to list symbols in order."""
    return int(s.name[1:])


def product(dims: Iterable[Dim]) -> Dim:
    return dim(math.prod(dims, start=1))


def row_major_strides(shape: Sequence[Dim]) -> list[Dim]:
    """Element strides of a contiguous (row-major, C order) array of `shape`: [12, 4, 1] for (2, 3, 4)."""
    return [product(shape[d + 1 :]) for d in range(len(shape))]


def align_up(n: Dim, alignment: int) -> Dim:
    """`n` rounded up to a multiple of `alignment`."""
    if isinstance(n, int):
        return (n + alignment - 1) // alignment * alignment
    return dim(sympy.floor((n + alignment - 1) / alignment) * alignment)


def ceil_div(n: Dim, k: int) -> Dim:
    """ceil(n / k) for k > 0."""
    if isinstance(n, int):
        return -(-n // k)
    return dim(sympy.floor((n + k - 1) / k))


def upper_bound(*sizes: Dim) -> Dim:
    """A size at least as large as each of `sizes` for every value of the symbols, with no
    `max` in it: the coefficient-wise maximum of the polynomials (every monomial of non-negative
    symbols is non-negative, so raising a coefficient never lowers the value), or, when a size
    is not a polynomial in the symbols (a floor division), their sum (sizes are never negative).
    Nested `max` expressions grow with every buffer of a memory plan and sympy's simplification
    with them (a Llama's plan took minutes); a bound stays one short polynomial."""
    if all(isinstance(s, int) for s in sizes):
        return max(sizes, default=0)
    terms = [_coefficients(s) for s in sizes]
    if any(t is None for t in terms):
        return dim(sum(sizes))
    monomials = {m for t in terms for m in t}
    return dim(sum(max(t.get(m, 0) for t in terms) * m for m in monomials))


def _coefficients(d: Dim) -> dict[sympy.Expr, int] | None:
    """`d` as {monomial of symbols: integer coefficient}, or None if it is no such polynomial."""
    terms = sympy.expand(sympy.sympify(d)).as_coefficients_dict()
    for monomial, c in terms.items():
        factors = sympy.Mul.make_args(monomial)
        if not c.is_Integer or not all(f == 1 or f.is_Symbol or (f.is_Pow and f.base.is_Symbol) for f in factors):
            return None
    return {m: int(c) for m, c in terms.items()}


def at_least(a: Dim, b: Dim) -> bool:
    """Whether a >= b for every value of the (non-negative) symbols, as far as the coefficients
    of a - b show (False: not known)."""
    if isinstance(a, int) and isinstance(b, int):
        return a >= b
    diff = _coefficients(dim(a - b))
    return diff is not None and all(c >= 0 for c in diff.values())


def maximum(*sizes: Dim) -> Dim:
    """max(sizes), flat: sizes another one is known to be at least are dropped first."""
    kept: list[Dim] = []
    for s in sizes:
        if any(at_least(k, s) for k in kept):
            continue
        kept = [k for k in kept if not at_least(s, k)] + [s]
    if not kept:
        return 0
    return kept[0] if len(kept) == 1 else dim(sympy.Max(*kept))


def multiple_of(d: Dim, n: int) -> bool:
    """Whether `d` is a multiple of `n` for every value of the symbols (as its coefficients show)."""
    if isinstance(d, int):
        return d % n == 0
    terms = _coefficients(d)
    return terms is not None and all(c % n == 0 for c in terms.values())


def evaluate(d: Dim, values: dict[sympy.Symbol, int] | dict[str, int]) -> int:
    """The size `d` for the symbols' `values` (keyed by symbol or by name)."""
    if isinstance(d, int):
        return d
    subs = {symbol(k) if isinstance(k, str) else k: v for k, v in values.items()}
    result = d.subs(subs)
    if not result.is_Integer:
        missing = sorted(str(s) for s in d.free_symbols if s not in subs)
        raise ValueError(f"size {format_dim(d)} needs the symbol(s) {', '.join(missing)}")
    return int(result)


# ---------------------------------------------------------------------------------------------
# Spelling: the IR's (`s0 // 2 + 1`), Python's (the same) and C++'s (`s0 / 2 + 1`)
# ---------------------------------------------------------------------------------------------


def _spell(e: sympy.Expr, cpp: bool) -> str:
    """`e` written with + - * // % max, fully parenthesized where precedence needs it."""

    def atom(x: sympy.Expr) -> str:
        text = _spell(x, cpp)
        return text if x.is_Atom or isinstance(x, (sympy.Max, sympy.Min)) else f"({text})"

    if e.is_Integer:
        return str(int(e))
    if e.is_Symbol:
        return e.name
    if e.is_Add:
        terms = sorted(e.args, key=lambda t: (t.is_Number, sympy.default_sort_key(t)))
        out = _spell(terms[0], cpp)
        for t in terms[1:]:
            if t.as_coeff_Mul()[0].is_negative:
                out += f" - {_spell(-t, cpp)}"
            else:
                out += f" + {_spell(t, cpp)}"
        return out
    if e.is_Mul or e.is_Pow:
        return _spell_product(e, atom)
    if isinstance(e, sympy.floor):
        num, den = sympy.fraction(sympy.together(e.args[0]))
        if not den.is_Integer or int(den) <= 0:
            raise ValueError(f"size expression {e}: floor division by a non-constant")
        return f"{atom(num)} {'/' if cpp else '//'} {int(den)}"
    if isinstance(e, sympy.Mod):
        a, b = e.args
        return f"{atom(a)} % {atom(b)}"
    if isinstance(e, (sympy.Max, sympy.Min)):  # in C++ irc_imax/irc_imin (include/irc_prelude.h)
        name = ("irc_imax" if cpp else "max") if isinstance(e, sympy.Max) else ("irc_imin" if cpp else "min")
        args = [_spell(a, cpp) for a in e.args]
        out = args[0]
        for a in args[1:]:
            out = f"{name}({out}, {a})"
        return out
    raise ValueError(f"size expression {e} uses {type(e).__name__}, which irc does not support")


def _spell_product(e: sympy.Expr, atom) -> str:
    """A product `c * f1 * f2 ...`; a power of a symbol is its repeated product (s0 * s0, as
    self-attention's s0 x s0 scores have: sympy writes s0**2)."""
    if e.is_Pow:
        if not (e.exp.is_Integer and int(e.exp) > 0):
            raise ValueError(f"size expression {e} is not an integer polynomial")
        return " * ".join([atom(e.base)] * int(e.exp))
    coeff, rest = e.as_coeff_Mul()
    if coeff == -1:
        return f"-{atom(rest)}"
    factors = ([str(int(coeff))] if coeff != 1 else []) + [atom(f) for f in sympy.Mul.make_args(rest)]
    if not coeff.is_Integer:
        raise ValueError(f"size expression {e} is not an integer polynomial")
    return " * ".join(factors)


def format_dim(d: Dim) -> str:
    """The IR spelling of a size: `128`, `s0`, `2 * s0 + 1`, `s1 // 2`."""
    return str(d) if isinstance(d, int) else _spell(d, cpp=False)


def cpp_dim(d: Dim) -> str:
    """The size as a C++ int64_t expression over variables named after the symbols (floor
    division is C++'s `/`: every size is non-negative)."""
    return str(d) if isinstance(d, int) else _spell(d, cpp=True)


_TOKEN = re.compile(r"\s*(?:(\d+)|(s\d+)|(max|min)|(//|[-+*%(),]))\s*")


class _Parser:
    """Recursive descent over `format_dim`'s grammar: sums of products of primaries."""

    def __init__(self, text: str):
        self.text = text
        self.tokens: list[tuple[int, str]] = []  # (kind: 0 int, 1 symbol, 2 function, 3 punctuation), text
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise ValueError(f"cannot parse size expression {text!r} at {text[pos:]!r}")
            self.tokens.append((m.lastindex - 1, m.group(m.lastindex)))
            pos = m.end()
        self.at = 0

    def peek(self) -> str | None:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else None

    def take(self, value: str | None = None) -> tuple[int, str]:
        if self.at >= len(self.tokens) or (value is not None and self.tokens[self.at][1] != value):
            raise ValueError(f"cannot parse size expression {self.text!r}: expected {value or 'more'}")
        self.at += 1
        return self.tokens[self.at - 1]

    def primary(self) -> sympy.Expr:
        kind, value = self.take()
        if kind == 0:
            return sympy.Integer(int(value))
        if kind == 1:
            return symbol(value)
        if kind == 2:
            self.take("(")
            a = self.sum()
            self.take(",")
            b = self.sum()
            self.take(")")
            return sympy.Max(a, b) if value == "max" else sympy.Min(a, b)
        if value == "(":
            e = self.sum()
            self.take(")")
            return e
        if value == "-":
            return -self.primary()
        raise ValueError(f"cannot parse size expression {self.text!r} at {value!r}")

    def product(self) -> sympy.Expr:
        e = self.primary()
        while (op := self.peek()) in ("*", "//", "%"):
            self.take()
            rhs = self.primary()
            e = e * rhs if op == "*" else sympy.floor(e / rhs) if op == "//" else sympy.Mod(e, rhs)
        return e

    def sum(self) -> sympy.Expr:
        e = self.product()
        while (op := self.peek()) in ("+", "-"):
            self.take()
            e = e + self.product() if op == "+" else e - self.product()
        return e


def parse_dim(text: str) -> Dim:
    """Parse an IR size expression (`format_dim`'s spelling); ValueError when it is not one."""
    parser = _Parser(text.strip())
    result = parser.sum()
    if parser.peek() is not None:
        raise ValueError(f"cannot parse size expression {text!r}: unexpected {parser.peek()!r}")
    return dim(result)


# ---------------------------------------------------------------------------------------------
# Computing a size at run time: arith ops on `index` values
# ---------------------------------------------------------------------------------------------


def size_ops(value: Dim, symbols: Mapping[sympy.Symbol, SSAValue], constant: Callable[[int], SSAValue]) -> list[Operation]:
    """The arith ops computing the index `value` from the `symbols`' values (`constant(n)` gives
    the constant n), in order; the last op's result is the value (none: a bare symbol)."""
    ops: list[Operation] = []

    def build(e: sympy.Expr) -> SSAValue:
        if e.is_Integer:
            return constant(int(e))
        if e.is_Symbol:
            return symbols[e]
        if e.is_Add or e.is_Mul:
            cls = arith.AddiOp if e.is_Add else arith.MuliOp
            args = sorted(e.args, key=lambda t: (t.is_Number, sympy.default_sort_key(t)))
            acc = build(args[0])
            for a in args[1:]:
                ops.append(cls(acc, build(a)))
                acc = ops[-1].results[0]
            return acc
        if e.is_Pow and e.exp.is_Integer and int(e.exp) > 0:  # s0**2 (self-attention's s0 x s0): s0 * s0
            base = acc = build(e.base)
            for _ in range(int(e.exp) - 1):
                ops.append(arith.MuliOp(acc, base))
                acc = ops[-1].results[0]
            return acc
        if isinstance(e, sympy.floor):
            num, den = sympy.fraction(sympy.together(e.args[0]))
            ops.append(arith.DivSIOp(build(sympy.expand(num)), build(den)))
            return ops[-1].results[0]
        if isinstance(e, sympy.Mod):
            ops.append(arith.RemSIOp(build(e.args[0]), build(e.args[1])))
            return ops[-1].results[0]
        if isinstance(e, (sympy.Max, sympy.Min)):
            cls = arith.MaxSIOp if isinstance(e, sympy.Max) else arith.MinSIOp
            acc = build(e.args[0])
            for a in e.args[1:]:
                ops.append(cls(acc, build(a)))
                acc = ops[-1].results[0]
            return acc
        raise ValueError(f"cannot compute the size {format_dim(value)}")

    build(sympy.sympify(value))
    return ops


# ---------------------------------------------------------------------------------------------
# The attribute and the shaped types
# ---------------------------------------------------------------------------------------------


@irdl_attr_definition
class DimsAttr(ParametrizedAttribute, MemRefLayoutAttr):
    """`#irt.dims<"s0", "2 * s1">`: the sizes of a type's `?` dimensions, in order. It is the
    encoding of a tensor type and the layout of a memref type (the memref is contiguous,
    row-major, with these sizes)."""

    name = "irt.dims"
    exprs: ArrayAttr[StringAttr]

    @staticmethod
    def get(dims: Sequence[Dim]) -> DimsAttr:
        return DimsAttr(ArrayAttr([StringAttr(format_dim(d)) for d in dims]))

    @property
    def dims(self) -> tuple[Dim, ...]:
        return tuple(parse_dim(s.data) for s in self.exprs.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            pos = parser.pos
            texts = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_str_literal)
            canonical = []
            for t in texts:  # one spelling per size, so equal sizes are equal types
                try:
                    canonical.append(format_dim(parse_dim(t)))
                except ValueError as e:
                    parser.raise_error(f"#irt.dims: {e}", pos, parser.pos)
        return [ArrayAttr([StringAttr(t) for t in canonical])]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<" + ", ".join(f'"{s.data}"' for s in self.exprs.data) + ">")

    def verify(self) -> None:
        if not self.exprs.data:
            raise VerifyException("#irt.dims: lists at least one size (a static type has none)")
        for s in self.exprs.data:
            try:
                d = parse_dim(s.data)
            except ValueError as e:
                raise VerifyException(f"#irt.dims: {e}") from None
            if isinstance(d, int):
                raise VerifyException(f"#irt.dims: {s.data!r} is a constant; write it in the type's shape")

    def get_affine_map(self):  # a contiguous row-major buffer: strides are the sizes' products
        raise NotImplementedError("#irt.dims: a symbolic layout has no affine map")


def dims_of(t: Attribute) -> tuple[Dim, ...]:
    """The sizes of a tensor or memref type, `?` dimensions replaced by their expressions."""
    shape = tuple(t.get_shape())  # type: ignore[attr-defined]
    n_dynamic = sum(1 for d in shape if d == DYNAMIC_INDEX)
    if not n_dynamic:
        return shape
    attr = symbolic_attr(t)
    exprs = attr.dims if attr is not None else ()
    if len(exprs) != n_dynamic:
        raise ValueError(f"type {t} has {n_dynamic} dynamic dimension(s) but {len(exprs)} size expression(s)")
    it = iter(exprs)
    return tuple(next(it) if d == DYNAMIC_INDEX else d for d in shape)


def symbolic_attr(t: Attribute) -> DimsAttr | None:
    if isinstance(t, TensorType) and isinstance(t.encoding, DimsAttr):
        return t.encoding
    if isinstance(t, MemRefType) and isinstance(t.layout, DimsAttr):
        return t.layout
    return None


def _split(dims: Sequence[Dim]) -> tuple[list[int], list[Dim]]:
    dims = [dim(d) for d in dims]
    return [d if isinstance(d, int) else DYNAMIC_INDEX for d in dims], [d for d in dims if not isinstance(d, int)]


def tensor_of(element_type: Attribute, dims: Sequence[Dim]) -> TensorType:
    """`tensor<...>` of `dims`, with an `#irt.dims` encoding when some are symbolic."""
    shape, exprs = _split(dims)
    return TensorType(element_type, shape, DimsAttr.get(exprs) if exprs else NoneAttr())


def memref_of(element_type: Attribute, dims: Sequence[Dim]) -> MemRefType:
    """`memref<...>` of `dims` (contiguous), with an `#irt.dims` layout when some are symbolic."""
    shape, exprs = _split(dims)
    return MemRefType(element_type, shape, DimsAttr.get(exprs) if exprs else NoneAttr())

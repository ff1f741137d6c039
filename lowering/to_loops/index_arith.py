"""Index arithmetic that folds, so one rule serves static and run-time sizes.

A decision computed from sizes (the GEMM engine's blocking, its threading threshold, an
epilogue's strides) is written once, against an `IndexArith`. `STATIC` computes on Python ints
(every size known at compile time: the rule's value, as a constant on the op); an `IndexArith`
with a `FunctionLowering` computes on ints where it can and builds `arith` ops on `index` (and
`i1`) values where a size is known only at call time, so the same rule runs in the generated
code, on the sizes of that call:

    ix = IndexArith(fl)
    ix.min(ix.round_up(m, 6), 66)     # m = 13: 18;  m = %s0: arith ops, their result value

Sizes are non-negative, so division is C++'s (truncating) `/`, which is floor division here.
Identical `select` arms fold (`select(c, x, x)` is `x`), so a condition that cannot change the
result builds nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Union

from xdsl.dialects import arith
from xdsl.ir import Operation, SSAValue

from irc.dialects.symbolic import Dim

if TYPE_CHECKING:
    from irc.lowering.to_loops.function import FunctionLowering

Index = Union[int, SSAValue]
"""An index: a Python int, or an `index` value known at call time."""
Cond = Union[bool, SSAValue]
"""A condition: a Python bool, or an `i1` value known at call time."""


@dataclass
class IndexArith:
    """See the module doc; `fl` None computes on ints only (`STATIC`)."""

    fl: FunctionLowering | None = None
    built: list[Operation] = field(default_factory=list)  # the ops built, in order

    def dim(self, d: Dim) -> Index:
        """A size (an int or an expression of the size symbols) as an Index: the int, or the
        value computed from the function's size arguments (`FunctionLowering.index`)."""
        if isinstance(d, int):
            return d
        assert self.fl is not None, "IndexArith: a symbolic size reached the static evaluator"
        return self.fl.index(d)

    def _value(self, x: Index) -> SSAValue:
        if isinstance(x, SSAValue):
            return x
        assert self.fl is not None, "IndexArith: a run-time value reached the static evaluator"
        return self.fl.index(x)

    def _build(self, op: Operation) -> SSAValue:
        assert self.fl is not None
        self.built.append(op)
        return self.fl.b.insert(op).results[0]

    def erase_unused(self) -> None:
        """Erase the ops built whose results nothing uses (a condition whose select folded):
        call it once the values computed are in use."""
        for op in reversed(self.built):
            if not any(r.uses for r in op.results):
                op.detach()
                op.erase()
        self.built.clear()

    def _binary(self, a: Index, b: Index, static: Callable[[int, int], int], cls) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return static(a, b)
        return self._build(cls(self._value(a), self._value(b)))

    def add(self, a: Index, b: Index) -> Index:
        if b == 0 or a == 0:
            return a if b == 0 else b
        return self._binary(a, b, lambda x, y: x + y, arith.AddiOp)

    def mul(self, a: Index, b: Index) -> Index:
        if b == 1 or a == 1:
            return a if b == 1 else b
        return self._binary(a, b, lambda x, y: x * y, arith.MuliOp)

    def div(self, a: Index, b: Index) -> Index:
        """a / b for a >= 0, b > 0."""
        if b == 1:
            return a
        return self._binary(a, b, lambda x, y: x // y, arith.DivSIOp)

    def ceil_div(self, a: Index, b: Index) -> Index:
        """ceil(a / b) for a >= 0, b > 0."""
        if isinstance(a, int) and isinstance(b, int):
            return -(-a // b)
        return self.div(self.add(a, self.add(b, -1) if isinstance(b, int) else self._sub1(b)), b)

    def _sub1(self, b: SSAValue) -> SSAValue:
        return self._build(arith.SubiOp(b, self._value(1)))

    def round_up(self, a: Index, m: Index) -> Index:
        """a rounded up to a multiple of m."""
        return self.mul(self.ceil_div(a, m), m)

    def min(self, a: Index, b: Index) -> Index:
        if a is b:
            return a
        return self._binary(a, b, min, arith.MinSIOp)

    def max(self, a: Index, b: Index) -> Index:
        if a is b:
            return a
        return self._binary(a, b, max, arith.MaxSIOp)

    def _compare(self, a: Index, b: Index, predicate: str, static: Callable[[int, int], bool]) -> Cond:
        if isinstance(a, int) and isinstance(b, int):
            return static(a, b)
        return self._build(arith.CmpiOp(self._value(a), self._value(b), predicate))

    def gt(self, a: Index, b: Index) -> Cond:
        return self._compare(a, b, "sgt", lambda x, y: x > y)

    def ge(self, a: Index, b: Index) -> Cond:
        return self._compare(a, b, "sge", lambda x, y: x >= y)

    def lt(self, a: Index, b: Index) -> Cond:
        return self._compare(a, b, "slt", lambda x, y: x < y)

    def le(self, a: Index, b: Index) -> Cond:
        return self._compare(a, b, "sle", lambda x, y: x <= y)

    def and_(self, a: Cond, b: Cond) -> Cond:
        if isinstance(a, bool) or isinstance(b, bool):
            const, other = (a, b) if isinstance(a, bool) else (b, a)
            return other if const else False
        return self._build(arith.AndIOp(a, b))

    def or_(self, a: Cond, b: Cond) -> Cond:
        if isinstance(a, bool) or isinstance(b, bool):
            const, other = (a, b) if isinstance(a, bool) else (b, a)
            return True if const else other
        return self._build(arith.OrIOp(a, b))

    def select(self, c: Cond, a: Index, b: Index) -> Index:
        if isinstance(c, bool):
            return a if c else b
        if a is b or (isinstance(a, int) and a == b):
            return a
        return self._build(arith.SelectOp(c, self._value(a), self._value(b)))


STATIC = IndexArith()
"""Index arithmetic on Python ints only."""

"""Reading the loop level's constants back: shared by irc-parallelize, irc-vectorize and the emitter."""

from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import BlockArgument, SSAValue

from irc.dialects.symbolic import SYMBOL_NAME, Dim, dim, symbol, sympy


def constant_int(v: SSAValue) -> int | None:
    """The value of `v` if an integer or index `arith.constant` defines it (a loop bound, a step), else None."""
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


_SIZE_OPS = {arith.AddiOp: "+", arith.SubiOp: "-", arith.MuliOp: "*", arith.DivSIOp: "//", arith.RemSIOp: "%"}


def size_expr(v: SSAValue) -> Dim | None:
    """The size `v` holds as a Dim (dialects/symbolic.py): an int for a constant, an expression
    for a function's size argument (`%s0: index`) or arith on sizes; None for anything else
    (an induction variable, a loaded value)."""
    c = constant_int(v)
    if c is not None:
        return c
    if isinstance(v, BlockArgument):
        is_size = isinstance(v.type, IndexType) and v.name_hint and SYMBOL_NAME.fullmatch(v.name_hint)
        return symbol(v.name_hint) if is_size and isinstance(v.owner.parent_op(), func.FuncOp) else None
    op = v.owner
    kind = _SIZE_OPS.get(type(op))
    if kind is None and isinstance(op, (arith.MaxSIOp, arith.MinSIOp)):
        a, b = size_expr(op.lhs), size_expr(op.rhs)
        if a is None or b is None:
            return None
        return dim((sympy.Max if isinstance(op, arith.MaxSIOp) else sympy.Min)(a, b))
    if kind is None:
        return None
    a, b = size_expr(op.lhs), size_expr(op.rhs)
    if a is None or b is None:
        return None
    if kind == "//":
        return dim(sympy.floor(sympy.sympify(a) / b)) if not isinstance(b, int) or b else None
    if kind == "%":
        return dim(sympy.Mod(a, b))
    return dim({"+": a + b, "-": a - b, "*": a * b}[kind])

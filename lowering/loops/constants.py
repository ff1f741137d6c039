"""Reading the loop level's constants back: shared by irc-parallelize, irc-vectorize and the emitter."""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import SSAValue


def constant_int(v: SSAValue) -> int | None:
    """The value of `v` if an integer or index `arith.constant` defines it (a loop bound, a step), else None."""
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None

"""The xDSL context irc parses and transforms IR in: builtin, func, arith, math, scf, memref, irt, irl."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, math, memref, scf

from irc.dialects.irl import IRL
from irc.dialects.irt import IRT


def irc_context() -> Context:
    ctx = Context()
    for dialect in (builtin.Builtin, func.Func, arith.Arith, math.Math, scf.Scf, memref.MemRef, IRT, IRL):
        ctx.load_dialect(dialect)
    return ctx

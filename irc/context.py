"""The xDSL context irc parses and transforms IR in: builtin, func, arith, math, scf, memref, irt."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, math, memref, scf

from irc.dialects.dialect import IRT


def irc_context() -> Context:
    ctx = Context()
    for dialect in (builtin.Builtin, func.Func, arith.Arith, math.Math, scf.Scf, memref.MemRef, IRT):
        ctx.load_dialect(dialect)
    return ctx

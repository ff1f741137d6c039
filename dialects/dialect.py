"""The `irt` dialect: the core ops of `irt.py` plus every op family module."""

from __future__ import annotations

from xdsl.ir import Dialect

from irc.dialects import irt, irt_math, irt_nn, irt_reduce, irt_shape

FAMILIES = (irt_math, irt_nn, irt_reduce, irt_shape)

IRT = Dialect(
    "irt",
    [*irt.CORE_OPS, *(op for family in FAMILIES for op in family.OPS)],
    [*irt.CORE_ATTRS, *(attr for family in FAMILIES for attr in family.ATTRS)],
)

"""Shapes: the one check every `irt` and `irl` op makes on its tensor and memref types.

Every size is either static or a symbolic expression (`dialects/symbolic.py`): a `?` dimension
must come with its expression in an `#irt.dims` attribute, or it would reach the later stages
(loop bounds, buffer sizes, flat indices) as xDSL's placeholder -2**63. An op takes symbolic
sizes only when its class says it is written for them (`SYMBOLIC_DIMS = True`: its verifier,
lowering and code generation compute with expressions); the others reject them:

    irt.conv2d: symbolic sizes are not supported by this op yet: operand 0 has type
    tensor<?x3x32x32xf32, #irt.dims<"s0">>

A static shape whose byte size does not fit in 64 bits would overflow every index computed from
it and is rejected too. Zero-size dimensions are static and valid, as in PyTorch (an empty
batch). `row_major_strides` gives the element strides of a shape laid out contiguously, as
every buffer here is.
"""

from __future__ import annotations

import math
from typing import ClassVar

from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType, TensorType
from xdsl.ir import Attribute, Operation
from xdsl.irdl import IRDLOperation, traits_def
from xdsl.traits import OpTrait
from xdsl.utils.exceptions import VerifyException

from irc.dialects.symbolic import dims_of, row_major_strides, symbolic_attr

__all__ = ["MAX_BYTES", "StaticShapeOp", "StaticShapes", "check_static", "row_major_strides", "static_shape_error"]

MAX_BYTES = 2**63 - 1
"""The largest buffer a shape may describe: flat indices and sizes are int64 in the generated C++."""


def static_shape_error(what: str, t: Attribute, symbolic: bool = False) -> str | None:
    """Why the shaped type `t` of `what` (an operand, an argument) cannot be compiled, else None.
    `symbolic`: `?` dimensions with their `#irt.dims` expressions are accepted."""
    if not isinstance(t, (TensorType, MemRefType)):
        return None
    shape = tuple(t.get_shape())
    if symbolic_attr(t) is not None and DYNAMIC_INDEX not in shape:
        return f"{what} has type {t}: #irt.dims lists the sizes of `?` dimensions, and it has none"
    if any(d == DYNAMIC_INDEX for d in shape):
        try:
            dims_of(t)
        except ValueError as e:
            return f"{what}: {e} (a `?` dimension needs its size in an #irt.dims attribute)"
        if not symbolic:
            return f"symbolic sizes are not supported by this op yet: {what} has type {t}"
        return None
    if any(d < 0 for d in shape):
        return f"dimension sizes must be >= 0: {what} has type {t}"
    elements = math.prod(shape)
    if elements * max(1, getattr(t.element_type, "bitwidth", 64) // 8) > MAX_BYTES:
        return f"{what} has type {t}: {elements:.3g} elements, more than a 64-bit size can address"
    return None


def check_static(where: str, what: str, t: Attribute, symbolic: bool = False) -> None:
    """Raise VerifyException naming `where` (an op, a function) when `t` is not a static shape
    (or, with `symbolic`, a shape of static and symbolic sizes)."""
    reason = static_shape_error(what, t, symbolic)
    if reason is not None:
        raise VerifyException(f"{where}: {reason}")


class StaticShapes(OpTrait):
    """Every tensor and memref operand and result of the op has an addressable shape: static,
    or with symbolic sizes where the op's class sets `SYMBOLIC_DIMS`."""

    def verify(self, op: Operation) -> None:
        symbolic = getattr(op, "SYMBOLIC_DIMS", False)
        for i, v in enumerate(op.operands):
            check_static(op.name, f"operand {i}", v.type, symbolic)
        for i, v in enumerate(op.results):
            check_static(op.name, f"result {i}", v.type, symbolic)


class StaticShapeOp(IRDLOperation):
    """Base of every irt and irl op: carries the `StaticShapes` trait (xDSL merges base traits).
    A subclass written for symbolic sizes sets `SYMBOLIC_DIMS = True`."""

    SYMBOLIC_DIMS: ClassVar[bool] = False
    traits = traits_def(StaticShapes())

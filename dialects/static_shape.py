"""Static shapes: the one check every `irt` and `irl` op makes on its tensor and memref types.

irc compiles one program per input shape, so every size is known at compile time and every
later stage (loop bounds, buffer sizes, flat indices, the GEMM engine's blocking) is computed
from it. A dynamic dimension (`tensor<?x4xf32>`) would reach those stages as xDSL's
placeholder -2**63 and print as a loop bound; a shape whose byte size does not fit in 64 bits
would overflow every index computed from it. Both are rejected by the op that sees them:

    irt.relu: dynamic dimensions are not supported yet: operand 0 has type tensor<?x4xf32>;
    give every dimension a static size (irc compiles one version per input shape)

Zero-size dimensions are static and valid, as in PyTorch (an empty batch). `row_major_strides`
gives the element strides of such a shape laid out contiguously, as every buffer here is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType, TensorType
from xdsl.ir import Attribute, Operation
from xdsl.irdl import IRDLOperation, traits_def
from xdsl.traits import OpTrait
from xdsl.utils.exceptions import VerifyException

MAX_BYTES = 2**63 - 1
"""The largest buffer a shape may describe: flat indices and sizes are int64 in the generated C++."""


def row_major_strides(shape: Sequence[int]) -> list[int]:
    """Element strides of a contiguous (row-major, C order) array of `shape`: [12, 4, 1] for (2, 3, 4)."""
    return [math.prod(shape[d + 1 :]) for d in range(len(shape))]


def static_shape_error(what: str, t: Attribute) -> str | None:
    """Why the shaped type `t` of `what` (an operand, an argument) cannot be compiled, else None."""
    if not isinstance(t, (TensorType, MemRefType)):
        return None
    shape = tuple(t.get_shape())
    if any(d == DYNAMIC_INDEX for d in shape):
        return (
            f"dynamic dimensions are not supported yet: {what} has type {t}; give every dimension "
            "a static size (irc compiles one version per input shape)"
        )
    if any(d < 0 for d in shape):
        return f"dimension sizes must be >= 0: {what} has type {t}"
    elements = math.prod(shape)
    if elements * max(1, getattr(t.element_type, "bitwidth", 64) // 8) > MAX_BYTES:
        return f"{what} has type {t}: {elements:.3g} elements, more than a 64-bit size can address"
    return None


def check_static(where: str, what: str, t: Attribute) -> None:
    """Raise VerifyException naming `where` (an op, a function) when `t` is not a static shape."""
    reason = static_shape_error(what, t)
    if reason is not None:
        raise VerifyException(f"{where}: {reason}")


class StaticShapes(OpTrait):
    """Every tensor and memref operand and result of the op has a static, addressable shape."""

    def verify(self, op: Operation) -> None:
        for i, v in enumerate(op.operands):
            check_static(op.name, f"operand {i}", v.type)
        for i, v in enumerate(op.results):
            check_static(op.name, f"result {i}", v.type)


class StaticShapeOp(IRDLOperation):
    """Base of every irt and irl op: carries the `StaticShapes` trait (xDSL merges base traits)."""

    traits = traits_def(StaticShapes())

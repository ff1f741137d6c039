"""`irt` ops: Elementwise math beyond the core: exp, log, sqrt, rsqrt, pow by a scalar, neg, abs, cos, sin,
clamp, relu6, leaky_relu, silu, hardswish, hardsigmoid, where. Each is an `irt.ElementwiseOp`
subclass defining `build_scalar`, so fusion and lowering handle it with no further code.
"""

from __future__ import annotations

OPS: list = []
ATTRS: list = []

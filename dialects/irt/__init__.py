"""The `irt` dialect: irc's tensor ops with torch semantics, one module per family.

    core    elementwise (unary, binary, gelu, fused elementwise), contractions, reshape, transpose,
            pack, constant
    math    exp, log, sqrt, ..., where
    nn      conv2d, batch_norm, pooling
    reduce  sum/mean/amax, softmax, layer_norm, batch_matmul, attention
    shape   slice, concat, expand, embedding
"""

from __future__ import annotations

from xdsl.ir import Dialect

from irc.dialects.irt import core, math, nn, reduce, shape

FAMILIES = (core, math, nn, reduce, shape)

IRT = Dialect(
    "irt",
    [op for family in FAMILIES for op in family.OPS],
    [attr for family in FAMILIES for attr in family.ATTRS],
)

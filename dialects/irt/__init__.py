"""The `irt` dialect: irc's tensor ops with torch semantics, one module per family.

    core    elementwise (unary, binary, gelu, fused elementwise), contractions, reshape, transpose,
            pack, constant (re-exporting `interfaces` and `contraction`, which it is split into)
    math    exp, log, sqrt, ..., where
    logic   cast, cmp, and/or/xor/not: the ops on int64 and bool tensors
    nn      conv2d, batch_norm, pooling
    reduce  sum/mean/amax, softmax, layer_norm, batch_matmul, attention
    shape   slice, concat, expand, embedding

Beside the ops, as explicit tables over all families: `semantics` (what each op computes on
torch tensors; imports torch, so only its users load it) and `costs` (FLOPs and bytes).
"""

from __future__ import annotations

from xdsl.ir import Dialect

from irc.dialects.irt import core, logic, math, nn, reduce, shape

FAMILIES = (core, math, logic, nn, reduce, shape)

IRT = Dialect(
    "irt",
    [op for family in FAMILIES for op in family.OPS],
    [attr for family in FAMILIES for attr in family.ATTRS],
)

"""Fusion rules for the ops of `dialects/irt/reduce.py`, in the form of `fusion_rules.py`.

| rule | consumer <- producer | constraints | result |
|---|---|---|---|
| `batch-matmul-transpose` | batch_matmul <- transpose | rhs, swaps the last two dims, single user | `linear` (k rows in place) |
| `attention` | batch_matmul <- softmax | lhs, softmax over dim -1, single users, q @ k^T * scale [+ mask] | `irt.attention` |

The attention rule recognizes attention written out by hand:
`softmax(q @ k.transpose(-2, -1) * scale [/ sqrt(d)] [+ mask], dim=-1) @ v`. The scale and the
mask may be separate `irt.mul`/`irt.div`/`irt.add` ops or already merged into one
`irt.elementwise`: the chain is read symbolically as `scores * a + mask`. GPT-2's form,
`where(causal, scores * a, min) [+ mask]` with `min` the float32 minimum or -inf, is the additive
mask `where(causal, 0, min) [+ mask]` (built beside the attention): scores are far smaller than
the ulp of the minimum, so `s + min` is `min` exactly. It does not fire when the scores (or any
step between them and the softmax, or the softmax itself) have another user, when the softmax
runs over another dim, or when the chain is anything but a scale, such a select and one additive
mask.

Softmax, log_softmax and layer_norm need no rule: the importer maps F.softmax, F.log_softmax,
F.layer_norm and nn.LayerNorm to single ops, which are already single fused row reductions.
Decomposed forms (mean, sub, pow, mean, add eps, rsqrt, mul ...) are not recognized.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, f32, i1
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import VerifyException

from irc.dialects.irt import core as irt
from irc.dialects.irt.math import WhereOp
from irc.dialects.irt.reduce import AttentionOp, BatchMatmulOp, SoftmaxOp, attention_shape
from irc.dialects.symbolic import tensor_of
from irc.lowering.tensor.fusion_rules import FusionRule, is_rhs, single_user

# ---------------------------------------------------------------------------------------------
# batch-matmul-transpose
# ---------------------------------------------------------------------------------------------


def _swaps_last_two(op: Operation) -> bool:
    if not isinstance(op, irt.TransposeOp):
        return False
    perm = op.permutation
    n = len(perm)
    return n >= 2 and perm == (*range(n - 2), n - 1, n - 2)


def is_matmul_kind(producer: Operation, consumer: Operation, index: int) -> bool:
    return consumer.contraction_kind == irt.ContractionKind.MATMUL  # type: ignore[attr-defined]


def swaps_last_two_dims(producer: Operation, consumer: Operation, index: int) -> bool:
    """transpose(x, -2, -1): so `a @ x^T` reads x's rows in place."""
    return _swaps_last_two(producer)


def batch_matmul_to_linear(producer: irt.TransposeOp, consumer: BatchMatmulOp, index: int) -> Operation:
    """a @ transpose(b, -2, -1)  =>  batch_matmul linear(a, b)."""
    return BatchMatmulOp("linear", consumer.lhs, producer.input, consumer.result.type)


# ---------------------------------------------------------------------------------------------
# attention
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scores:
    """`where(keep, q @ k^T * scale, fill) + mask` (keep and mask may be None)."""

    q: SSAValue
    k: SSAValue
    scale: float
    mask: SSAValue | None
    keep: SSAValue | None = None  # a bool or 0/1 f32 tensor: where it is false the score is `fill`
    fill: float = 0.0


@dataclass(frozen=True)
class Condition:
    """A select's condition read from a tensor: a bool one, or an f32 one of 0.0/1.0."""

    tensor: SSAValue


MASK_FILL = -3.4028234663852886e38
"""A select may replace scores by this (float32's minimum) or by -inf: no score is within an
ulp of it (2**104), so adding it to a score gives it exactly."""

# Symbolic values while reading the chain: a Scores, a float constant, an opaque tensor (a possible
# mask), a select's condition, or None (something the attention op cannot express).
Form = Scores | float | SSAValue | Condition | None


def _one_use(value: SSAValue) -> bool:
    return len(list(value.uses)) == 1


def _qk(value: SSAValue) -> Scores | None:
    """q @ k^T as a batch_matmul (linear kind, or matmul of a transposed k); else None."""
    op = value.owner
    if not isinstance(op, BatchMatmulOp) or not _one_use(value):
        return None
    if op.contraction_kind == irt.ContractionKind.LINEAR:
        return Scores(op.lhs, op.rhs, 1.0, None)
    t = op.rhs.owner
    if _swaps_last_two(t) and _one_use(op.rhs):
        return Scores(op.lhs, t.input, 1.0, None)  # type: ignore[union-attr]
    return None


def _combine(kind: str, a: Form, b: Form) -> Form:
    """One step of the chain on symbolic values; None if it leaves the `scores * a + mask` form."""
    s, other = (a, b) if isinstance(a, Scores) else (b, a)
    if not isinstance(s, Scores) or isinstance(other, Scores):
        return None
    if kind == "mul" and isinstance(other, float) and s.mask is None and s.keep is None:
        return Scores(s.q, s.k, s.scale * other, None)
    if kind == "div" and s is a and isinstance(other, float) and other != 0 and s.mask is None and s.keep is None:
        return Scores(s.q, s.k, s.scale / other, None)
    if kind == "add" and isinstance(other, SSAValue) and s.mask is None:
        return Scores(s.q, s.k, s.scale, other, s.keep, s.fill)
    return None


def _select(cond: Form | bool, a: Form, b: Form) -> Form:
    """where(cond, scores, fill): scores where the condition holds, float32's minimum (or -inf)
    elsewhere; before any additive mask. A condition true everywhere selects the scores."""
    if cond is True and isinstance(a, Scores):
        return a
    if not isinstance(cond, Condition) or not isinstance(a, Scores) or not isinstance(b, float):
        return None
    if a.mask is not None or a.keep is not None or not b <= MASK_FILL:
        return None
    return Scores(a.q, a.k, a.scale, None, cond.tensor, b)


SCALAR_KINDS = {arith.MulfOp: "mul", arith.DivfOp: "div", arith.AddfOp: "add"}
BINARY_KINDS = {irt.MulOp: "mul", irt.DivOp: "div", irt.AddOp: "add"}


def _read_body(op: irt.ElementwiseFusedOp, inputs: list[Form]) -> Form:
    """Read a fused elementwise body whose arguments are `inputs` (block args only may be opaque)."""
    env: dict[SSAValue, Form] = dict(zip(op.body.block.args, inputs))
    for arg, value in zip(op.body.block.args, op.inputs):
        if arg.type == i1:  # a bool input: a select's condition
            env[arg] = Condition(value)
    for inner in op.body.block.ops:
        if isinstance(inner, irt.YieldOp):
            return env.get(inner.value)
        if isinstance(inner, arith.ConstantOp) and isinstance(inner.value, FloatAttr):
            env[inner.result] = float(inner.value.value.data)
            continue
        if isinstance(inner, arith.FPToUIOp):  # a 0/1 f32 mask made a condition (irt.where)
            source = env.get(inner.input)
            env[inner.result] = Condition(source) if isinstance(source, SSAValue) else (
                source != 0.0 if isinstance(source, float) else None)  # a splat: true or false everywhere
            continue
        if isinstance(inner, arith.SelectOp):
            env[inner.result] = _select(env.get(inner.cond), env.get(inner.lhs), env.get(inner.rhs))
            continue
        kind = SCALAR_KINDS.get(type(inner))  # type: ignore[arg-type]
        if kind is None:
            return None
        env[inner.results[0]] = _combine(kind, env.get(inner.operands[0]), env.get(inner.operands[1]))
    return None


def read_scores(value: SSAValue) -> Form:
    """What `value` is, symbolically; intermediate values of the chain must have one user."""
    qk = _qk(value)
    if qk is not None:
        return qk
    c = irt.splat_value(value)
    if c is not None:
        return c
    op = value.owner
    if not isinstance(op, (*BINARY_KINDS, irt.ElementwiseFusedOp, WhereOp)):
        return value
    forms = [read_scores(v) for v in op.operands]
    if not any(isinstance(f, Scores) for f in forms):
        return value  # not on the scores path: an opaque tensor (e.g. a computed mask)
    if not _one_use(value):
        return None
    if isinstance(op, irt.ElementwiseFusedOp):
        return _read_body(op, forms)
    if isinstance(op, WhereOp):
        splat = irt.splat_value(op.cond)
        return _select(Condition(op.cond) if splat is None else splat != 0.0, forms[1], forms[2])
    return _combine(BINARY_KINDS[type(op)], forms[0], forms[1])


ATTENTION_REACH = 8
"""Links read up from the final batch_matmul: softmax, the scale/mask chain (any number of
mul/div steps, one add, or merged), q @ k^T and its transpose; chains longer than this fuse
too when nothing changes under them during irc-fuse."""


def attention_parts(producer: Operation, consumer: Operation, index: int) -> Scores | None:
    """The (q, k, scale, mask) of `softmax(scores, -1) @ v`, or None if it is not attention."""
    if not isinstance(producer, SoftmaxOp) or not isinstance(consumer, BatchMatmulOp) or index != 0:
        return None
    if consumer.contraction_kind != irt.ContractionKind.MATMUL:
        return None
    if producer.axis != len(irt.shape_of(producer.input)) - 1 or not _one_use(producer.input):
        return None
    s = read_scores(producer.input)
    if not isinstance(s, Scores):
        return None
    try:
        shape = attention_shape(irt.shape_of(s.q), irt.shape_of(s.k), irt.shape_of(consumer.rhs))
    except VerifyException:
        return None
    return s if shape == irt.shape_of(consumer.result) else None


def is_attention(producer: Operation, consumer: Operation, index: int) -> bool:
    """softmax over the last dim of q @ k^T * scale [+ mask], each step used once."""
    return attention_parts(producer, consumer, index) is not None


def softmax_last_dim(producer: Operation, consumer: Operation, index: int) -> bool:
    return isinstance(producer, SoftmaxOp) and producer.axis == len(irt.shape_of(producer.input)) - 1


def is_lhs(producer: Operation, consumer: Operation, index: int) -> bool:
    return index == 0


def _additive(s: Scores, before: Operation) -> SSAValue | None:
    """The additive mask of `where(keep, scores, fill) + mask`: where(keep, 0, fill) + mask,
    built before `before` (the mask alone when there is no select)."""
    if s.keep is None:
        return s.mask
    ops: list[Operation] = [irt.ConstantOp.from_floats([0.0]), irt.ConstantOp.from_floats([s.fill])]
    keep_shape = irt.shape_of(s.keep)
    ops.append(WhereOp(s.keep, ops[0].results[0], ops[1].results[0], tensor_of(f32, keep_shape)))
    if s.mask is not None:
        shape = irt.broadcast_shapes(keep_shape, irt.shape_of(s.mask))
        ops.append(irt.AddOp(ops[-1].results[0], s.mask, tensor_of(f32, shape)))
    for op in ops:
        Rewriter.insert_op(op, InsertPoint.before(before))
    return ops[-1].results[0]


def to_attention(producer: SoftmaxOp, consumer: BatchMatmulOp, index: int) -> Operation:
    """softmax(q @ k^T * scale + mask) @ v  =>  irt.attention(q, k, v, mask, scale)."""
    s = attention_parts(producer, consumer, index)
    assert s is not None
    return AttentionOp(s.q, s.k, consumer.rhs, _additive(s, consumer), s.scale, False, consumer.result.type)


RULES: tuple[FusionRule, ...] = (
    FusionRule(
        "batch-matmul-transpose",
        consumer=(BatchMatmulOp,),
        producer=(irt.TransposeOp,),
        where=(is_rhs, is_matmul_kind, swaps_last_two_dims, single_user),
        combine=batch_matmul_to_linear,
        doc="a @ transpose(b, -2, -1) -> batch_matmul linear(a, b)",
    ),
    FusionRule(
        "attention",
        consumer=(BatchMatmulOp,),
        producer=(SoftmaxOp,),
        where=(is_lhs, softmax_last_dim, single_user, is_attention),
        combine=to_attention,
        doc="softmax(q @ k^T * scale [+ mask], dim=-1) @ v -> irt.attention",
        reach=ATTENTION_REACH,
    ),
)

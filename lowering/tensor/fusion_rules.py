"""irc's fusion rules, as data.

A rule reads like the algebra it encodes: *when the consumer (the root) is one of these ops and
one of its operands is produced by one of those ops, and the named constraints hold, replace the
pair by what the combiner builds.* One generic driver (`irc_fuse.py`) applies the table.

Combiners are few and generic because fused ops keep their per-element computation in a region:
absorbing an elementwise consumer into a contraction's epilogue, or into another elementwise
op, is concatenating two scalar bodies. So `linear + relu`, `linear + gelu`, `matmul + bias`,
`linear + bias + residual add` and `relu(x * y + z)` all come from the same two rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import f32
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from irc.dialects.irt import core as irt
from irc.dialects.symbolic import product

# ---------------------------------------------------------------------------------------------
# Named constraints: (producer, consumer, operand index) -> bool
# ---------------------------------------------------------------------------------------------

Constraint = Callable[[Operation, Operation, int], bool]


def single_user(producer: Operation, consumer: Operation, index: int) -> bool:
    """The producer's value is used by the consumer alone, so fusing removes it entirely."""
    return all(use.operation is consumer for use in producer.results[0].uses)


def same_shape(producer: Operation, consumer: Operation, index: int) -> bool:
    """The consumer does not broadcast the producer's value: one produced element per output element."""
    return irt.shape_of(producer.results[0]) == irt.shape_of(consumer.results[0])


def swaps_last_two_dims(producer: Operation, consumer: Operation, index: int) -> bool:
    """A 2-D transpose, so `x @ w.T` is nn.Linear's contraction over w's rows."""
    return isinstance(producer, irt.TransposeOp) and producer.permutation == (1, 0)


def is_rhs(producer: Operation, consumer: Operation, index: int) -> bool:
    return index == 1


def float_consumer(producer: Operation, consumer: Operation, index: int) -> bool:
    """The consumer computes on f32 only, inside too: an epilogue runs on vectors of floats
    (comparisons, selects on a mask, casts and integer arithmetic after a contraction stay
    separate kernels)."""
    if not all(irt.is_float(irt.element_type(v)) for v in [*consumer.operands, *consumer.results]):
        return False
    body = consumer.scalar_body()
    if body is None:
        block = Block(arg_types=[f32] * len(consumer.elementwise_inputs()))
        consumer.build_scalar(Builder(InsertPoint.at_end(block)), list(block.args))
    else:
        block = body.block
    return all(irt.is_float(r.type) for op in block.ops for r in op.results)


TRANSCENDENTALS = (xmath.ExpOp, xmath.ErfOp, xmath.TanhOp, xmath.LogOp)
"""Scalar ops the C++ computes with a long inline polynomial chain (`irc_math.h`, about 20-40
vector operations and 60-110 cycles of latency each)."""


def _scalar_block(op: Operation) -> Block:
    """The op's scalar body: its stored region's block, else one built into a scratch block."""
    body = op.scalar_body()
    if body is not None:
        return body.block
    block = Block(arg_types=[irt.element_type(v) for v in op.elementwise_inputs()])
    op.build_scalar(Builder(InsertPoint.at_end(block)), list(block.args))
    return block


def _transcendental_after(block: Block, start: SSAValue | None) -> bool:
    """A transcendental op of `block` depends on `start` (on anything when `start` is None)."""
    tainted = {start} if start is not None else None
    for op in block.ops:
        if tainted is None or any(v in tainted for v in op.operands):
            if isinstance(op, TRANSCENDENTALS):
                return True
            if tainted is not None:
                tainted.update(op.results)
    return False


SPLIT_CHAIN_ELEMENTS = 1024
"""From this many elements on (or a run-time size) a transcendental chain is split in two
kernels; a smaller loop runs a few vectors, where a second kernel's buffer and loop cost more
than the overlap it gains."""


def no_transcendental_chain(producer: Operation, consumer: Operation, index: int) -> bool:
    """Fusing does not put a transcendental of the consumer after one of the producer in one
    dependency chain (x * sigmoid(x) -> gelu: exp, then erf of its result), on a tensor of
    `SPLIT_CHAIN_ELEMENTS` or more. Such a body is one chain of about 200 cycles of latency and
    100 vector operations per vector of elements, more than the out-of-order window holds (Zen 4
    keeps about 1.5 such iterations in flight): the fused loop runs at its latency, not at its
    throughput. x * sigmoid(x) -> gelu on 64x4096 at 16 lanes, one thread (Zen 4): 375 us fused,
    277 us as two loops (x * sigmoid(x), then gelu); so the two stay separate kernels."""
    numel = product(irt.shape_of(consumer.results[0]))
    if isinstance(numel, int) and numel < SPLIT_CHAIN_ELEMENTS:
        return True
    if not _transcendental_after(_scalar_block(producer), None):
        return True
    block = _scalar_block(consumer)
    args = [a for a, v in zip(block.args, consumer.elementwise_inputs()) if v is producer.results[0]]
    return not any(_transcendental_after(block, a) for a in args)


# ---------------------------------------------------------------------------------------------
# Combiners: (producer, consumer, operand index) -> the fused op replacing the consumer
# ---------------------------------------------------------------------------------------------


def _substitute(operands: Sequence[SSAValue], producer: Operation, value: SSAValue, others: list[SSAValue]):
    """The consumer's scalar arguments: the producer's element where it was used, else its own inputs."""
    args, rest = [], iter(others)
    for v in operands:
        args.append(value if v is producer.results[0] else next(rest))
    return args


Build = Callable[[Builder, Sequence[SSAValue]], SSAValue]


def _larger(a: Block, b: Block) -> bool:
    """`a` holds more ops than `b`; costs the smaller of the two sizes, not the larger."""
    rest = iter(b.ops)
    return any(next(rest, None) is None for _ in a.ops)


def concatenate_bodies(
    producer: Operation, consumer: irt.ElementwiseOp, first_types: Sequence[Attribute], build_first: Build,
    producer_body: Region | None, names: Sequence[str],
) -> Region:
    """The scalar region of `consumer(producer(...))`: its first arguments (of `first_types`)
    feed the producer's part (`build_first` returns the producer's element), the others are the
    consumer's other inputs, in order (of their element types); then the consumer's part.

    Fusing a chain grows one body op by op, so building both parts afresh at every step (cloning
    a stored body) is quadratic in the chain's length. Both ops are erased after the rewrite, so
    the larger stored body (`producer_body`, the consumer's `scalar_body()`) is taken over as it
    is and only the other part is built: the same region, in time of the smaller part (so
    linear over a chain)."""
    inputs, produced = consumer.elementwise_inputs(), producer.results[0]
    first = len(first_types)
    consumer_body = consumer.scalar_body()
    if producer_body is not None and (consumer_body is None or not _larger(consumer_body.block, producer_body.block)):
        block = producer_body.detach_block(0)
        yielded = block.last_op
        assert isinstance(yielded, irt.YieldOp)
        value = yielded.value
        block.erase_op(yielded)
        rest = [block.insert_arg(irt.element_type(v), len(block.args)) for v in inputs if v is not produced]
        b = Builder(InsertPoint.at_end(block))
        b.insert(irt.YieldOp(consumer.build_scalar(b, _substitute(inputs, producer, value, rest))))
    elif consumer_body is not None:
        block = consumer_body.detach_block(0)
        mine = [block.insert_arg(t, i) for i, t in enumerate(first_types)]
        value = build_first(Builder(InsertPoint.at_start(block)), mine)
        for v, arg in zip(inputs, list(block.args[first:]), strict=True):
            if v is produced:
                hint = value.name_hint
                arg.replace_all_uses_with(value)
                value.name_hint = hint  # not the argument's name
                block.erase_arg(arg)
    else:

        def body(b: Builder, args: Sequence[SSAValue]) -> SSAValue:
            value = build_first(b, args[:first])
            return consumer.build_scalar(b, _substitute(inputs, producer, value, list(args[first:])))

        types = [*first_types, *(irt.element_type(v) for v in inputs if v is not produced)]
        return irt.scalar_region(names, body, types)
    for arg, name in zip(block.args, names, strict=True):
        arg.name_hint = name
    return Region(block)


def absorb_into_epilogue(producer: irt.EpilogueOp, consumer: irt.ElementwiseOp, index: int) -> Operation:
    """contraction/convolution → elementwise  ⇒  the same op whose epilogue also does the elementwise op."""
    own = list(producer.epilogue_inputs)
    others = [v for v in consumer.elementwise_inputs() if v is not producer.results[0]]
    names = ["acc"] + [f"e{i}" for i in range(len(own) + len(others))]
    body = concatenate_bodies(
        producer, consumer, [f32] * (1 + len(own)), lambda b, args: producer.build_epilogue(b, args[0], args[1:]),
        producer.epilogue_body(), names,
    )
    return producer.with_epilogue(own + others, body, consumer.results[0].type)


def merge_elementwise(producer: irt.ElementwiseOp, consumer: irt.ElementwiseOp, index: int) -> Operation:
    """elementwise → elementwise  ⇒  one elementwise op computing both per element."""
    own = list(producer.elementwise_inputs())
    others = [v for v in consumer.elementwise_inputs() if v is not producer.results[0]]
    names = [f"x{i}" for i in range(len(own) + len(others))]
    types = [irt.element_type(v) for v in own]
    body = concatenate_bodies(producer, consumer, types, producer.build_scalar, producer.scalar_body(), names)
    return irt.ElementwiseFusedOp(own + others, consumer.results[0].type, body)


def matmul_to_linear(producer: irt.TransposeOp, consumer: irt.MatmulOp, index: int) -> Operation:
    """x @ transpose(w)  ⇒  linear(x, w): the contraction reads w's rows in place."""
    return irt.LinearOp(consumer.lhs, producer.input, None, consumer.result.type)


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FusionRule:
    name: str
    consumer: tuple[type[Operation], ...]
    producer: tuple[type[Operation], ...]
    where: tuple[Constraint, ...]
    combine: Callable[[Operation, Operation, int], Operation]
    doc: str = ""
    reach: int = 1
    """How many producer links up from the consumer the constraints read (1: the producer only).
    A rule reading further (through single-use values) says so, and irc-fuse revisits a
    consumer when an op that far up changes."""


ELEMENTWISE = (irt.ElementwiseOp,)
ACCUMULATORS = (irt.EpilogueOp,)  # contractions, convolutions

RULES: tuple[FusionRule, ...] = (
    FusionRule(
        "matmul-transpose-to-linear",
        consumer=(irt.MatmulOp,),
        producer=(irt.TransposeOp,),
        where=(is_rhs, swaps_last_two_dims, single_user),
        combine=matmul_to_linear,
        doc="matmul(x, transpose(w)) -> linear(x, w)",
    ),
    FusionRule(
        "contraction-epilogue",
        consumer=ELEMENTWISE,
        producer=ACCUMULATORS,
        where=(single_user, same_shape, float_consumer),
        combine=absorb_into_epilogue,
        doc="act(linear(x, w, b)), matmul(x, w) + b, linear(...) + residual -> contract with epilogue",
    ),
    FusionRule(
        "elementwise-chain",
        consumer=ELEMENTWISE,
        producer=ELEMENTWISE,
        where=(single_user, same_shape, no_transcendental_chain),
        combine=merge_elementwise,
        doc="f(g(x, ...), ...) -> one irt.elementwise",
    ),
)

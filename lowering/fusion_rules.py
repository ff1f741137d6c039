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
from xdsl.ir import Operation, SSAValue

from irc.dialects import irt

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


# ---------------------------------------------------------------------------------------------
# Combiners: (producer, consumer, operand index) -> the fused op replacing the consumer
# ---------------------------------------------------------------------------------------------


def _substitute(operands: Sequence[SSAValue], producer: Operation, value: SSAValue, others: list[SSAValue]):
    """The consumer's scalar arguments: the producer's element where it was used, else its own inputs."""
    args, rest = [], iter(others)
    for v in operands:
        args.append(value if v is producer.results[0] else next(rest))
    return args


def absorb_into_epilogue(producer: irt.EpilogueOp, consumer: irt.ElementwiseOp, index: int) -> Operation:
    """contraction/convolution → elementwise  ⇒  the same op whose epilogue also does the elementwise op."""
    own = list(producer.epilogue_inputs)
    others = [v for v in consumer.elementwise_inputs() if v is not producer.results[0]]

    def body(b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        acc, mine, theirs = args[0], args[1 : 1 + len(own)], list(args[1 + len(own) :])
        value = producer.build_epilogue(b, acc, mine)
        return consumer.build_scalar(b, _substitute(consumer.elementwise_inputs(), producer, value, theirs))

    names = ["acc"] + [f"e{i}" for i in range(len(own) + len(others))]
    return producer.with_epilogue(own + others, irt.scalar_region(names, body), consumer.results[0].type)


def merge_elementwise(producer: irt.ElementwiseOp, consumer: irt.ElementwiseOp, index: int) -> Operation:
    """elementwise → elementwise  ⇒  one elementwise op computing both per element."""
    own = list(producer.elementwise_inputs())
    others = [v for v in consumer.elementwise_inputs() if v is not producer.results[0]]

    def body(b: Builder, args: Sequence[SSAValue]) -> SSAValue:
        value = producer.build_scalar(b, args[: len(own)])
        return consumer.build_scalar(b, _substitute(consumer.elementwise_inputs(), producer, value, list(args[len(own) :])))

    return irt.ElementwiseFusedOp(
        own + others, consumer.results[0].type, irt.scalar_region([f"x{i}" for i in range(len(own) + len(others))], body)
    )


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
        where=(single_user, same_shape),
        combine=absorb_into_epilogue,
        doc="act(linear(x, w, b)), matmul(x, w) + b, linear(...) + residual -> contract with epilogue",
    ),
    FusionRule(
        "elementwise-chain",
        consumer=ELEMENTWISE,
        producer=ELEMENTWISE,
        where=(single_user, same_shape),
        combine=merge_elementwise,
        doc="f(g(x, ...), ...) -> one irt.elementwise",
    ),
)

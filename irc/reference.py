"""A reference evaluator of `irt` ops on torch tensors.

Used at compile time to precompute what depends on parameters only (folding a batch norm into a
convolution's weights, transposing a weight once), and by tests as an oracle independent of
the C++ path.

Elementwise ops need no code here: their own `build_scalar` body is built once into a scratch
block and interpreted with whole (broadcast) tensors as values, through `SCALAR_TORCH`.
Accumulating ops (contractions, convolutions) accumulate as `ACCUMULATE` says (in
`irc.dialects.irt.semantics`, beside the dialect); their epilogue is interpreted the same way.
Other ops evaluate as `REFERENCE` there says.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from xdsl.builder import Builder
from xdsl.dialects import arith, math as xmath
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, f32
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from irc.dialects.irt import core as irt
from irc.dialects.irt.semantics import ACCUMULATE, REFERENCE, lookup

Tensor = torch.Tensor

SCALAR_TORCH: dict[type[Operation], Callable[..., Tensor]] = {
    arith.AddfOp: torch.add,
    arith.SubfOp: torch.sub,
    arith.MulfOp: torch.mul,
    arith.DivfOp: torch.div,
    arith.MaximumfOp: torch.maximum,
    arith.MinimumfOp: torch.minimum,
    arith.NegfOp: torch.neg,
    xmath.ExpOp: torch.exp,
    xmath.TanhOp: torch.tanh,
    xmath.ErfOp: torch.erf,
    xmath.SqrtOp: torch.sqrt,
    xmath.RsqrtOp: torch.rsqrt,
    xmath.LogOp: torch.log,
    xmath.AbsFOp: torch.abs,
    xmath.CosOp: torch.cos,
    xmath.SinOp: torch.sin,
    xmath.PowFOp: torch.pow,
    arith.FPToUIOp: lambda c: c != 0,  # to i1, on 0.0/1.0 masks (irt.where)
    arith.SelectOp: torch.where,
}
"""Scalar op -> the torch function computing it on whole tensors."""


def interpret_scalar(build: Callable[[Builder, Sequence[SSAValue]], SSAValue], args: list[Tensor]) -> Tensor:
    """Build a scalar body into a scratch block and evaluate it with tensors as values."""
    block = Block(arg_types=[f32] * len(args))
    result = build(Builder(InsertPoint.at_end(block)), list(block.args))
    env: dict[SSAValue, object] = dict(zip(block.args, args))
    for op in block.ops:
        if isinstance(op, arith.ConstantOp):
            value = op.value
            env[op.result] = float(value.value.data) if isinstance(value, (FloatAttr, IntegerAttr)) else value
            continue
        fn = SCALAR_TORCH.get(type(op))
        if fn is None:
            raise NotImplementedError(f"reference: no torch equivalent for scalar op {op.name}")
        operands = [o if isinstance(o, Tensor) else torch.tensor(o, dtype=torch.float32) for o in map(env.get, op.operands)]
        env[op.results[0]] = fn(*operands)
    out = env[result]
    return out if isinstance(out, Tensor) else torch.tensor(out, dtype=torch.float32)


def evaluate(op: Operation, inputs: list[Tensor]) -> Tensor:
    """The value of `op`'s (single) result given its operands' values."""
    shape = irt.shape_of(op.results[0])
    if isinstance(op, irt.ElementwiseOp):
        out = interpret_scalar(op.build_scalar, inputs)
    elif isinstance(op, irt.EpilogueOp):
        acc_fn = lookup(ACCUMULATE, op)
        if acc_fn is None:
            raise NotImplementedError(f"reference: no accumulation for {op.name}")
        acc = acc_fn(op, inputs)
        extra = inputs[len(inputs) - len(op.epilogue_inputs) :] if op.epilogue_inputs else []
        out = interpret_scalar(lambda b, args: op.build_epilogue(b, args[0], args[1:]), [acc, *extra])
    else:
        fn = lookup(REFERENCE, op)
        if fn is None:
            raise NotImplementedError(f"reference: no evaluation for {op.name}")
        out = fn(op, inputs)
    return out.to(torch.float32).expand(shape).contiguous()

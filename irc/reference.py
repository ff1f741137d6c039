"""A reference evaluator of `irt` ops on torch tensors.

Used at compile time to precompute what depends on parameters only (folding a batch norm into a
convolution's weights, transposing a weight once), and by tests as an oracle independent of
the C++ path.

Elementwise ops need no code here: their own `build_scalar` body is built once into a scratch
block and interpreted with whole (broadcast) tensors as values, through `SCALAR_TORCH`.
Accumulating ops (contractions, convolutions) register how they accumulate in `ACCUMULATE`;
their epilogue is interpreted the same way. Other ops register in `REFERENCE`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from xdsl.builder import Builder
from xdsl.dialects import arith, math as xmath
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, f32
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from irc.dialects.irt import core as irt

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
"""Scalar op -> the torch function computing it on whole tensors (families may add entries)."""

REFERENCE: dict[type[Operation], Callable[[Operation, list[Tensor]], Tensor]] = {}
ACCUMULATE: dict[type[Operation], Callable[[Operation, list[Tensor]], Tensor]] = {}


def reference(*op_types: type[Operation]):
    def register(fn):
        for t in op_types:
            REFERENCE[t] = fn
        return fn

    return register


def accumulate(*op_types: type[Operation]):
    def register(fn):
        for t in op_types:
            ACCUMULATE[t] = fn
        return fn

    return register


def _lookup(table: dict, op: Operation):
    for cls in type(op).__mro__:
        if cls in table:
            return table[cls]
    return None


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
        acc_fn = _lookup(ACCUMULATE, op)
        if acc_fn is None:
            raise NotImplementedError(f"reference: no accumulation for {op.name}")
        acc = acc_fn(op, inputs)
        extra = inputs[len(inputs) - len(op.epilogue_inputs) :] if op.epilogue_inputs else []
        out = interpret_scalar(lambda b, args: op.build_epilogue(b, args[0], args[1:]), [acc, *extra])
    else:
        fn = _lookup(REFERENCE, op)
        if fn is None:
            raise NotImplementedError(f"reference: no evaluation for {op.name}")
        out = fn(op, inputs)
    return out.to(torch.float32).expand(shape).contiguous()


@accumulate(irt.ContractionOp)
def _contraction(op: irt.ContractionOp, inputs: list[Tensor]) -> Tensor:
    lhs, rhs = inputs[0], inputs[1]
    kind = op.contraction_kind
    if kind == irt.ContractionKind.PACKED:
        return lhs @ unpack(rhs, irt.shape_of(op.results[0])[-1])
    return lhs @ (rhs.t() if kind == irt.ContractionKind.LINEAR else rhs)


@reference(irt.ReshapeOp)
def _reshape(op: irt.ReshapeOp, inputs: list[Tensor]) -> Tensor:
    return inputs[0].reshape(irt.shape_of(op.result))


@reference(irt.TransposeOp)
def _transpose(op: irt.TransposeOp, inputs: list[Tensor]) -> Tensor:
    return inputs[0].permute(*op.permutation)


@reference(irt.ConstantOp)
def _constant(op: irt.ConstantOp, inputs: list[Tensor]) -> Tensor:
    values = [float(v) for v in op.value.iter_values()]
    return torch.tensor(values, dtype=torch.float32).reshape(irt.shape_of(op.result))


@reference(irt.PackOp)
def _pack(op: irt.PackOp, inputs: list[Tensor]) -> Tensor:
    x = inputs[0]  # [D0, D1*D2*...], spelled out: reshape's -1 is ambiguous for an empty weight
    w = x.reshape(x.shape[0], math.prod(x.shape[1:])) if op.axis.data == "rows" else x.t()
    panels, other, width = irt.shape_of(op.result)
    padded = w.new_zeros(panels * width, other)
    padded[: w.shape[0]] = w
    return padded.reshape(panels, width, other).transpose(1, 2).contiguous()


def unpack(packed: Tensor, n: int) -> Tensor:
    """The [K, N] matrix held by `irt.pack ... "cols"` panels (or an nn.Linear weight transposed)."""
    panels, k, width = packed.shape
    return packed.permute(1, 0, 2).reshape(k, panels * width)[:, :n]

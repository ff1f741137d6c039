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
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, f32, i1, i64
from xdsl.ir import Attribute, Block, Operation, SSAValue
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
    arith.AddiOp: torch.add,
    arith.SubiOp: torch.sub,
    arith.MuliOp: torch.mul,
    arith.AndIOp: torch.bitwise_and,
    arith.OrIOp: torch.bitwise_or,
    arith.XOrIOp: torch.bitwise_xor,
    arith.SIToFPOp: lambda x: x.to(torch.float32),
    arith.UIToFPOp: lambda x: x.to(torch.float32),
    arith.FPToSIOp: lambda x: x.to(torch.int64),
    arith.ExtUIOp: lambda x: x.to(torch.int64),
}
"""Scalar op -> the torch function computing it on whole tensors."""

COMPARE = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge}
CMPF = {"oeq": "eq", "une": "ne", "olt": "lt", "ole": "le", "ogt": "gt", "oge": "ge"}
CMPI = {"eq": "eq", "ne": "ne", "slt": "lt", "sle": "le", "sgt": "gt", "sge": "ge",
        "ult": "lt", "ule": "le", "ugt": "gt", "uge": "ge"}
"""arith.cmpf / arith.cmpi predicates -> torch's comparison (torch's own NaN and bool rules are
the ones irc's scalar comparisons follow)."""

TORCH_TYPES: dict[torch.dtype, Attribute] = {torch.float32: f32, torch.int64: i64, torch.bool: i1}
DTYPES: dict[str, torch.dtype] = {str(t): d for d, t in TORCH_TYPES.items()}


def dtype_of(t: Attribute) -> torch.dtype:
    """The torch dtype of an irt element type (f32, i64, i1)."""
    return DTYPES[str(t)]


def _compare(op: Operation, lhs: Tensor, rhs: Tensor) -> Tensor:
    names = arith.CMPF_COMPARISON_OPERATIONS if isinstance(op, arith.CmpfOp) else arith.CMPI_COMPARISON_OPERATIONS
    name = names[op.predicate.value.data]
    return COMPARE[(CMPF if isinstance(op, arith.CmpfOp) else CMPI)[name]](lhs, rhs)


def _scalar(op: arith.ConstantOp) -> Tensor:
    """An arith.constant as a 0-d tensor of its type (an i1 true is stored as -1)."""
    value = op.value
    assert isinstance(value, (FloatAttr, IntegerAttr))
    dtype = dtype_of(value.type)
    return torch.tensor(bool(value.value.data) if dtype == torch.bool else value.value.data, dtype=dtype)


def interpret_scalar(build: Callable[[Builder, Sequence[SSAValue]], SSAValue], args: list[Tensor]) -> Tensor:
    """Build a scalar body into a scratch block (arguments of the tensors' element types) and
    evaluate it with tensors as values."""
    block = Block(arg_types=[TORCH_TYPES[a.dtype] for a in args])
    result = build(Builder(InsertPoint.at_end(block)), list(block.args))
    env: dict[SSAValue, Tensor] = dict(zip(block.args, args))
    for op in block.ops:
        if isinstance(op, arith.ConstantOp):
            env[op.result] = _scalar(op)
            continue
        operands = [env[o] for o in op.operands]
        if isinstance(op, (arith.CmpfOp, arith.CmpiOp)):
            env[op.results[0]] = _compare(op, *operands)
            continue
        fn = SCALAR_TORCH.get(type(op))
        if fn is None:
            raise NotImplementedError(f"reference: no torch equivalent for scalar op {op.name}")
        env[op.results[0]] = fn(*operands)
    return env[result]


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
    return out.to(dtype_of(irt.element_type(op.results[0]))).expand(shape).contiguous()

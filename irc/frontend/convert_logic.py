"""FX converters for the ops of `dialects/irt/logic.py`: comparisons, logic and casts, the ops
that make the int64 and bool tensors of language models at run time (padding and causal masks,
position ids) (this family's `FUNCTIONS` and `METHODS`).

* comparisons (`==`, `torch.eq`, `Tensor.eq`, ... for eq/ne/lt/le/gt/ge): both operands converted
  to the dtype torch compares them in (`promoted`: int64 vs a float number compares as float32),
  then `irt.cmp`, a bool tensor;
* logic: `logical_and/or/xor/not` (each operand made bool: x != 0), and `&`, `|`, `^`, `~` and
  `torch.bitwise_*` on bool tensors (logical) and int64 ones (bitwise);
* casts: `.to(dtype)`, `.to(other)`, `.type(dtype)`, `.type_as(other)`, `.float()`, `.long()`,
  `.bool()`, ...: `irt.cast` to the traced result's dtype (nothing when it is already that one;
  a dtype irc does not compile, such as int32 or float16, is unsupported).

All of them evaluate at compile time when no argument is a run-time tensor (`folding`).
"""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch import fx
from xdsl.ir import SSAValue

from irc.dialects.irt.logic import AndOp, CmpOp, NotOp, OrOp, XorOp
from irc.frontend.convert_base import (
    DTYPES,
    Converter,
    ImportContext,
    Unsupported,
    accepts_ints,
    dtype_of,
    promoted,
)
from irc.frontend.folding import folding, method_call

# ---------------------------------------------------------------------------------------------
# Comparisons
# ---------------------------------------------------------------------------------------------


def _compare(predicate: str) -> Converter:
    @accepts_ints
    def convert(imp: ImportContext, node: fx.Node, a, b, *, out=None) -> SSAValue:
        if out is not None:
            raise Unsupported("out= is not supported")
        dtype = promoted(a, b)
        if dtype not in DTYPES:
            raise Unsupported(f"a comparison computed in {dtype}")
        return imp.insert(CmpOp(predicate, imp.tensor(a, dtype), imp.tensor(b, dtype), imp.result_type(node)))

    return convert


# ---------------------------------------------------------------------------------------------
# Logic
# ---------------------------------------------------------------------------------------------


def _logical(op_cls) -> Converter:
    """logical_and/or/xor: both operands as bool (x != 0), then the op."""

    @accepts_ints
    def convert(imp: ImportContext, node: fx.Node, a, b, *, out=None) -> SSAValue:
        if out is not None:
            raise Unsupported("out= is not supported")
        return imp.insert(op_cls(imp.tensor(a, torch.bool), imp.tensor(b, torch.bool), imp.result_type(node)))

    return convert


@accepts_ints
def _logical_not(imp: ImportContext, node: fx.Node, a, *, out=None) -> SSAValue:
    if out is not None:
        raise Unsupported("out= is not supported")
    return imp.insert(NotOp(imp.tensor(a, torch.bool)))


def _bitwise(op_cls) -> Converter:
    """&, |, ^ (and torch.bitwise_*): logical on bool tensors, bitwise on int64 ones."""

    @accepts_ints
    def convert(imp: ImportContext, node: fx.Node, a, b, *, out=None) -> SSAValue:
        dtype = promoted(a, b)
        if out is not None or dtype not in (torch.bool, torch.int64):
            raise Unsupported(f"{op_cls.name} on {dtype} tensors (irc takes bool and int64 ones)")
        return imp.insert(op_cls(imp.tensor(a, dtype), imp.tensor(b, dtype), imp.result_type(node)))

    return convert


@accepts_ints
def _invert(imp: ImportContext, node: fx.Node, a, *, out=None) -> SSAValue:
    """~x: logical not of a bool tensor, bitwise not of an int64 one."""
    if out is not None or not isinstance(a, SSAValue) or dtype_of(a) not in (torch.bool, torch.int64):
        raise Unsupported("~ of a float tensor (irc takes bool and int64 ones)")
    return imp.insert(NotOp(a))


# ---------------------------------------------------------------------------------------------
# Casts
# ---------------------------------------------------------------------------------------------


def _check_device(arg: Any) -> None:
    """A device argument of .to(...) that is not the CPU is unsupported (a tensor-type name such as
    "torch.LongTensor", .type()'s spelling, is a dtype)."""
    if isinstance(arg, str) and arg.startswith("torch."):
        return
    try:
        device = torch.device(arg)
    except (RuntimeError, TypeError):
        return
    if device.type != "cpu":
        raise Unsupported(f"a move to {arg}: irc compiles for the CPU")


@accepts_ints
def _cast(imp: ImportContext, node: fx.Node, x, *args, **kwargs) -> SSAValue:
    """.to(...), .type(...), .float(), .long(), .bool(), ...: to the traced result's dtype."""
    for arg in (*args, kwargs.get("device")):
        if isinstance(arg, (str, torch.device)):
            _check_device(arg)
    meta = node.meta.get("tensor_meta")
    dtype = getattr(meta, "dtype", None)
    if dtype not in DTYPES:
        raise Unsupported(f"a cast to {dtype}; irc compiles float32, int64 and bool tensors")
    return imp.tensor(x, dtype)


def _type(imp: ImportContext, node: fx.Node, x, dtype=None, **kwargs):
    """x.type() is the tensor type's name; x.type(dtype) a cast."""
    if dtype is None:
        return torch.empty(0, dtype=dtype_of(x)).type()
    return _cast(imp, node, x, dtype, **kwargs)


_type.accepts_ints = True  # type: ignore[attr-defined]

# ---------------------------------------------------------------------------------------------
# The tables
# ---------------------------------------------------------------------------------------------

PREDICATES = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
              "ge": operator.ge}
LOGICAL = {"logical_and": AndOp, "logical_or": OrOp, "logical_xor": XorOp}
BITWISE = {"bitwise_and": (AndOp, operator.and_), "bitwise_or": (OrOp, operator.or_), "bitwise_xor": (XorOp, operator.xor)}
CASTS = ("to", "float", "long", "bool", "int", "double", "half", "bfloat16", "short", "byte", "char", "type_as")

FUNCTIONS: dict[Any, Converter] = {
    **{fn: folding(_compare(name), fn) for name, fn in PREDICATES.items()},
    **{getattr(torch, name): folding(_compare(name), getattr(torch, name)) for name in PREDICATES},
    **{getattr(torch, name): folding(_logical(cls), getattr(torch, name)) for name, cls in LOGICAL.items()},
    torch.logical_not: folding(_logical_not, torch.logical_not),
    **{getattr(torch, name): folding(_bitwise(cls), getattr(torch, name)) for name, (cls, _) in BITWISE.items()},
    **{op: folding(_bitwise(cls), op) for cls, op in BITWISE.values()},
    operator.invert: folding(_invert, operator.invert),
    torch.bitwise_not: folding(_invert, torch.bitwise_not),
}

METHODS: dict[str, Converter] = {
    **{name: folding(_compare(name), method_call(name)) for name in PREDICATES},
    **{name: folding(_logical(cls), method_call(name)) for name, cls in LOGICAL.items()},
    "logical_not": folding(_logical_not, method_call("logical_not")),
    **{name: folding(_bitwise(cls), method_call(name)) for name, (cls, _) in BITWISE.items()},
    "bitwise_not": folding(_invert, method_call("bitwise_not")),
    **{name: folding(_cast, method_call(name)) for name in CASTS},
    "type": folding(_type, method_call("type")),
}

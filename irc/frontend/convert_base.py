"""What every converter family builds on; imports no family (the front end's import DAG starts here).

A converter is `(imp, node, *args, **kwargs) -> value`: `imp` is the `ImportContext` (the
function being built and the helpers to add ops and values to it), `node` the FX node, and the
arguments are the node's with every input node replaced by its value (an SSA tensor, or a
Python value folded at compile time). A converter raises `Unsupported` for a call form it
cannot import. `FxImporter` (fx_importer.py) is the context that drives the import.

Tensors are float32, int64 or bool (`DTYPES`). A converter gets int64 and bool tensors only when
it is marked `accepts_ints` (it builds ops that take them, promoting operands as torch does:
`promoted`, `ImportContext.tensor(value, dtype)`); every other converter sees float32 only, and
a node it would give an int64 or bool tensor to, or make one from run-time values, is
unsupported (`dtype_problem`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import fx
from xdsl.builder import Builder
from xdsl.dialects.builtin import TensorType, f32, i1, i64
from xdsl.ir import Attribute, Block, SSAValue

from irc.dialects.irt import core as irt
from irc.dialects.irt.logic import CastOp
from irc.dialects.irt.shape import ArangeOp, ExpandOp, SizeOp, SliceOp
from irc.dialects.symbolic import Dim, dim, dims_of, is_expr, sympy, tensor_of


class Unsupported(Exception):
    """Raised by a converter: this node, with these arguments, cannot be imported."""


Converter = Callable[..., SSAValue]


ELEMENT_TYPES: dict[torch.dtype, Attribute] = {torch.float32: f32, torch.int64: i64, torch.bool: i1}
DTYPES = tuple(ELEMENT_TYPES)
"""The tensor dtypes irc compiles: float32, int64 and bool (irt's f32, i64, i1)."""

SYMBOLS: ContextVar[Callable[[Any], Dim] | None] = ContextVar("irc_import_symbols", default=None)
"""While a graph with symbolic sizes is imported: how torch's SymInt sizes become irc's Dims."""


def size(d: Any) -> Dim:
    """A size as irc writes it: an int, or (a torch SymInt, or an irc expression) a Dim."""
    if isinstance(d, int):
        return d
    if isinstance(d, torch.SymInt):
        translate = SYMBOLS.get()
        if translate is None:
            raise Unsupported(f"size {d} is symbolic, and this import has no symbols")
        return translate(d)
    return dim(d)


def tensor_type(shape: Sequence[Any], dtype: torch.dtype = torch.float32) -> TensorType:
    """`tensor<...xf32>`, `tensor<...xi64>` or `tensor<...xi1>` for float32, int64 or bool;
    symbolic sizes (torch SymInts while a dynamic graph is imported) get `#irt.dims`."""
    if dtype not in ELEMENT_TYPES:
        raise Unsupported(f"a {dtype} tensor; irc compiles float32, int64 and bool tensors")
    return tensor_of(ELEMENT_TYPES[dtype], [size(d) for d in shape])


def like(x: SSAValue, shape: Sequence[Any]) -> TensorType:
    """A tensor type of `shape` (static or symbolic sizes) with the element type of `x`."""
    return tensor_of(irt.element_type(x), [size(d) for d in shape])


def dtype_of(value: SSAValue) -> torch.dtype:
    """The torch dtype of a tensor value."""
    t = irt.element_type(value)
    return next(d for d, e in ELEMENT_TYPES.items() if e == t)


def accepts_ints(converter: Converter) -> Converter:
    """Mark a converter as taking (and making) int64 and bool tensors; every other one gets and
    makes only float32 ones."""
    converter.accepts_ints = True  # type: ignore[attr-defined]
    return converter


def is_int(value: Any) -> bool:
    """Whether `value` is a run-time int64 or bool tensor."""
    return isinstance(value, SSAValue) and isinstance(value.type, TensorType) and not irt.is_float(irt.element_type(value))


def dtype_problem(converter: Converter, node: fx.Node, values: Sequence[Any], runtime: bool) -> str | None:
    """Why `converter` cannot take `node` (whose input values are `values`), if it is not marked
    `accepts_ints`: it takes a run-time int64 or bool tensor, or it would make one from run-time
    values (`runtime`: some argument is computed at run time), or a tensor of another dtype."""
    meta = node.meta.get("tensor_meta")
    dtype = getattr(meta, "dtype", None)
    if runtime and isinstance(dtype, torch.dtype) and dtype not in DTYPES:
        return f"it produces a {dtype} tensor; irc compiles float32, int64 and bool tensors"
    if getattr(converter, "accepts_ints", False):
        return None
    ints = [v for v in values if is_int(v)]
    if ints:
        names = ", ".join(v.name_hint or "a tensor" for v in ints)
        return f"it takes the {_name(dtype_of(ints[0]))} tensor {names}; irc computes this op on float32 only"
    if runtime and dtype in (torch.int64, torch.bool):
        return f"it produces a {_name(dtype)} tensor; irc computes this op on float32 only"
    return None


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def stand_in(value: Any) -> Any:
    """What `value` is to torch's type promotion: a run-time tensor as an empty tensor of its
    dtype and rank (0-d tensors promote differently from dimensioned ones), the rest as is."""
    if isinstance(value, SSAValue):
        return torch.empty([1] * len(irt.shape_of(value)), dtype=dtype_of(value))
    return value


def promoted(a: Any, b: Any) -> torch.dtype:
    """The dtype torch computes a binary op of `a` and `b` in (tensors, or Python numbers)."""
    return torch.result_type(stand_in(a), stand_in(b))


def ssa_name(name: str) -> str:
    """A valid SSA name hint for an FX or parameter name (`0.weight` -> `p0_weight`, `_1` -> `p1`)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", name).lstrip("_")
    return name if name[:1].isalpha() else f"p{name}"


@dataclass
class ImportContext:
    """The function being imported, as converters see it: its block and builder, the values of
    the nodes converted so far, its parameter arguments, and the helpers to add ops to it."""

    gm: fx.GraphModule
    builder: Builder = field(init=False)
    values: dict[fx.Node, Any] = field(default_factory=dict)  # SSA tensors, or Python values folded at compile time
    param_args: dict[int, SSAValue] = field(default_factory=dict)
    params: list[tuple[str, torch.Tensor]] = field(default_factory=list)  # in function-argument order
    block: Block = field(init=False)
    constants: dict[tuple[int, torch.dtype], tuple[torch.Tensor, SSAValue]] = field(default_factory=dict)  # by id, dtype

    SMALL_CONSTANT = 16
    """Compile-time tensors up to this many elements print inline (irt.constant); bigger ones are arguments."""

    def function_converter(self, target: Any) -> Converter | None:
        """The converter this import uses for a call of the function `target`, or None."""
        raise NotImplementedError

    def method_converter(self, name: str) -> Converter | None:
        """The converter this import uses for the tensor method `name`, or None."""
        raise NotImplementedError

    def result_type(self, node: fx.Node) -> TensorType:
        """The node's tensor type: its traced shape and dtype (float32, int64 or bool)."""
        meta = node.meta.get("tensor_meta")
        if meta is None or not hasattr(meta, "shape"):
            raise Unsupported("it does not produce a single tensor")
        return tensor_type(tuple(meta.shape), meta.dtype)

    def param(self, tensor: torch.Tensor) -> SSAValue:
        return self.param_args[id(tensor)]

    def tensor(self, value: Any, dtype: torch.dtype | None = None) -> SSAValue:
        """An SSA tensor for an argument that may be a Python number (a rank-0 constant) or a
        compile-time tensor; float32 unless `dtype` says which (a run-time tensor of another dtype
        is cast to it, as torch converts the operands of an op it promotes)."""
        if isinstance(value, SSAValue):
            return value if dtype is None else self.cast(value, dtype)
        if isinstance(value, (int, float, bool)) and (dtype is not None or not isinstance(value, bool)):
            d = dtype or torch.float32
            return self.insert(irt.ConstantOp.from_values([value], ELEMENT_TYPES[d]))
        if isinstance(value, torch.Tensor):
            return self.constant(value) if dtype in (None, torch.float32) else self.constant(value.to(dtype), keep=True)
        if is_expr(value):  # a symbolic size used as a number (irt.size is f32: exact up to 2**24)
            v = self.size_value(value)
            return v if dtype is None else self.cast(v, dtype)
        raise Unsupported(f"argument {value!r} is not a tensor or a number")

    def cast(self, value: SSAValue, dtype: torch.dtype) -> SSAValue:
        """`value` converted to `dtype` as `Tensor.to(dtype)` does (itself if it has that dtype)."""
        if dtype_of(value) == dtype:
            return value
        return self.insert(CastOp(value, tensor_type(irt.shape_of(value), dtype)))

    def size_value(self, value: sympy.Expr) -> SSAValue:
        """A symbolic size used as a number: `irt.size` of an argument that has its symbols."""
        needed = value.free_symbols
        for arg in self.block.args:
            if isinstance(arg.type, TensorType) and needed <= {d for d in irt.shape_of(arg) if not isinstance(d, int)}:
                return self.insert(SizeOp(arg, value))
        raise Unsupported(f"the size {value} is used as a number, and no single input has all its symbols")

    def insert(self, op) -> SSAValue:
        return self.builder.insert(op).results[0]

    def constant(self, value: torch.Tensor, name: str = "cst", keep: bool = False) -> SSAValue:
        """A tensor known at compile time (a factory's result, a folded mask) as f32, or in its own
        dtype with `keep` (int64 or bool; other integers as int64): an irt.constant if small, an
        expanded scalar if a splat, an irt.arange if it counts along one dimension (position
        ids), else a new function argument (`add_constant_param`). Once per tensor and dtype."""
        dtype = torch.float32
        if keep and not value.dtype.is_floating_point:
            dtype = torch.bool if value.dtype == torch.bool else torch.int64
        key = (id(value), dtype)
        if key not in self.constants:
            t = value.detach().to(dtype).contiguous()
            element = ELEMENT_TYPES[dtype]
            if t.numel() <= self.SMALL_CONSTANT:
                v = self.insert(irt.ConstantOp.from_values(t.flatten().tolist(), element, tuple(t.shape)))
            elif bool((t == t.flatten()[0]).all()):  # a big splat: one number, broadcast
                c = self.insert(irt.ConstantOp.from_values([t.flatten()[0].item()], element))
                v = self.insert(ExpandOp(c, tensor_type(t.shape, dtype)))
            else:
                v = self._arange(t) or self.add_constant_param(name, t)
            self.constants[key] = (value, v)
        return self.constants[key][1]

    def _arange(self, t: torch.Tensor) -> SSAValue | None:
        """`t` as irt.arange (reshaped) when it is start + i * step along its one dimension of size
        > 1, with integral start and step; else None."""
        long = [d for d in t.shape if d > 1]
        flat = t.flatten()
        if len(long) != 1 or t.dtype == torch.bool:
            return None
        start, step = flat[0].item(), (flat[1] - flat[0]).item()
        n = flat.numel()
        expected = torch.arange(n, dtype=t.dtype) * step + start
        if float(start) != int(start) or float(step) != int(step) or not torch.equal(flat, expected):
            return None
        v = self.insert(ArangeOp(start, step, tensor_type((n,), t.dtype)))
        return v if tuple(t.shape) == (n,) else self.insert(irt.ReshapeOp(v, tensor_type(t.shape, t.dtype)))

    def add_constant_param(self, name: str, tensor: torch.Tensor) -> SSAValue:
        """A new function argument after all others, bound to `tensor` at every call (so the tensor
        is never printed in IR text); float32 unless it is int64 or bool. Converters may call it
        while the function is being built."""
        dtype = tensor.dtype if tensor.dtype in (torch.int64, torch.bool) else torch.float32
        t = tensor.detach().to(dtype).contiguous()
        arg = self.block.insert_arg(tensor_type(t.shape, dtype), len(self.block.args))
        arg.name_hint = ssa_name(name)
        self.params.append((name, t))
        self.param_args[id(t)] = arg
        return arg


# ---------------------------------------------------------------------------------------------
# Converters and converter builders the families share
# ---------------------------------------------------------------------------------------------


def unary(op_cls) -> Converter:
    """`op_cls(x)` for f(x, ...) (the other arguments, like `inplace`, do not change the value)."""

    def convert(imp: ImportContext, node: fx.Node, x, *rest, **kwargs) -> SSAValue:
        return imp.insert(op_cls(imp.tensor(x)))

    return convert


def binary(op_cls, swap: bool = False) -> Converter:
    """`op_cls(a, b)` of the plain two-operand form, typed as the node's result; both operands
    converted to the result's dtype (torch's promotion: int64 + float -> float32; true division
    of integers is float32). Integer arithmetic where the op has an integer form (add, sub, mul),
    none on bool tensors."""

    @accepts_ints
    def convert(imp: ImportContext, node: fx.Node, a, b, *rest, alpha=1, **kwargs) -> SSAValue:
        if rest or alpha != 1 or kwargs.get("rounding_mode") is not None:
            raise Unsupported("only the plain two-operand form is supported (no alpha, out or rounding_mode)")
        lhs, rhs = (b, a) if swap else (a, b)
        t = imp.result_type(node)
        dtype = dtype_of_type(t)
        if dtype == torch.bool or (dtype == torch.int64 and getattr(op_cls, "INT_OP", None) is None):
            raise Unsupported(f"{op_cls.name} on {dtype} tensors")
        return imp.insert(op_cls(imp.tensor(lhs, dtype), imp.tensor(rhs, dtype), t))

    return convert


def dtype_of_type(t: TensorType) -> torch.dtype:
    return next(d for d, e in ELEMENT_TYPES.items() if e == t.element_type)


def stateless_module(fn: Converter) -> Converter:
    """Adapt a function converter to a stateless module: (imp, node, mod, *args)."""
    return lambda imp, node, mod, *args, **kwargs: fn(imp, node, *args, **kwargs)


@accepts_ints
def reshape(imp: ImportContext, node: fx.Node, x, *shape, **kwargs) -> SSAValue:
    """Any reshaping call (view, flatten, squeeze, ...): an irt.reshape to the node's result type."""
    x = imp.tensor(x)
    t = imp.result_type(node)
    if irt.shape_of(x) == dims_of(t):
        return x
    return imp.insert(irt.ReshapeOp(x, t))


@accepts_ints
def identity(imp: ImportContext, node: fx.Node, x, *args, **kwargs) -> SSAValue:
    return x if isinstance(x, SSAValue) else imp.tensor(x)


def slice_dim(imp: ImportContext, x: SSAValue, dim: int, start: int, size: int) -> SSAValue:
    """x narrowed to `size` elements from `start` along `dim` (x itself when that is everything)."""
    shape = list(irt.shape_of(x))
    if start == 0 and size == shape[dim]:
        return x
    offsets, strides = [0] * len(shape), [1] * len(shape)
    offsets[dim], shape[dim] = start, size
    return imp.insert(SliceOp(x, offsets, strides, like(x, shape)))

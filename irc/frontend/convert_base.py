"""What every converter family builds on; imports no family (the front end's import DAG starts here).

A converter is `(imp, node, *args, **kwargs) -> value`: `imp` is the `ImportContext` (the
function being built and the helpers to add ops and values to it), `node` the FX node, and the
arguments are the node's with every input node replaced by its value (an SSA tensor, or a
Python value folded at compile time). A converter raises `Unsupported` for a call form it
cannot import. `FxImporter` (fx_importer.py) is the context that drives the import.
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
from xdsl.dialects.builtin import IntegerType, TensorType, f32, i64
from xdsl.ir import Block, SSAValue

from irc.dialects.irt import core as irt
from irc.dialects.irt.shape import ExpandOp, SizeOp, SliceOp
from irc.dialects.symbolic import Dim, dim, dims_of, is_expr, sympy, tensor_of


class Unsupported(Exception):
    """Raised by a converter: this node, with these arguments, cannot be imported."""


Converter = Callable[..., SSAValue]


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
    """`tensor<...xf32>`, or `tensor<...xi64>` for int64 (irc's only other dtype: embedding
    indices); symbolic sizes (torch SymInts while a dynamic graph is imported) get `#irt.dims`."""
    return tensor_of(i64 if dtype == torch.int64 else f32, [size(d) for d in shape])


def accepts_int64(converter: Converter) -> Converter:
    """Mark a converter as taking int64 tensor arguments (every other one gets only f32)."""
    converter.accepts_int64 = True  # type: ignore[attr-defined]
    return converter


def is_int64(value: Any) -> bool:
    return isinstance(value, SSAValue) and isinstance(getattr(value.type, "element_type", None), IntegerType)


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
    constants: dict[int, tuple[torch.Tensor, SSAValue]] = field(default_factory=dict)  # by id(tensor)

    SMALL_CONSTANT = 16
    """Compile-time tensors up to this many elements print inline (irt.constant); bigger ones are arguments."""

    def function_converter(self, target: Any) -> Converter | None:
        """The converter this import uses for a call of the function `target`, or None."""
        raise NotImplementedError

    def method_converter(self, name: str) -> Converter | None:
        """The converter this import uses for the tensor method `name`, or None."""
        raise NotImplementedError

    def result_type(self, node: fx.Node) -> TensorType:
        meta = node.meta.get("tensor_meta")
        if meta is None or not hasattr(meta, "shape"):
            raise Unsupported("it does not produce a single tensor")
        if meta.dtype != torch.float32:
            raise Unsupported(f"it produces {meta.dtype}; irc compiles float32 tensors")
        return tensor_type(tuple(meta.shape))

    def param(self, tensor: torch.Tensor) -> SSAValue:
        return self.param_args[id(tensor)]

    def tensor(self, value: Any) -> SSAValue:
        """An SSA tensor for an argument that may be a Python number (a rank-0 constant)."""
        if isinstance(value, SSAValue):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return self.builder.insert(irt.ConstantOp.from_floats([float(value)])).result
        if isinstance(value, torch.Tensor):
            return self.constant(value)
        if is_expr(value):
            return self.size_value(value)
        raise Unsupported(f"argument {value!r} is not a tensor or a number")

    def size_value(self, value: sympy.Expr) -> SSAValue:
        """A symbolic size used as a number: `irt.size` of an argument that has its symbols."""
        needed = value.free_symbols
        for arg in self.block.args:
            if isinstance(arg.type, TensorType) and needed <= {d for d in irt.shape_of(arg) if not isinstance(d, int)}:
                return self.insert(SizeOp(arg, value))
        raise Unsupported(f"the size {value} is used as a number, and no single input has all its symbols")

    def insert(self, op) -> SSAValue:
        return self.builder.insert(op).results[0]

    def constant(self, value: torch.Tensor, name: str = "cst") -> SSAValue:
        """A tensor known at compile time (a factory's result, a folded mask) as f32: an irt.constant
        if small, an expanded scalar if a splat, else a new function argument (`add_constant_param`).
        Once per tensor."""
        if id(value) not in self.constants:
            t = value.detach().to(torch.float32).contiguous()
            if t.numel() <= self.SMALL_CONSTANT:
                v = self.insert(irt.ConstantOp.from_floats(t.flatten().tolist(), tuple(t.shape)))
            elif bool((t == t.flatten()[0]).all()):  # a big splat: one number, broadcast
                c = self.insert(irt.ConstantOp.from_floats([t.flatten()[0].item()]))
                v = self.insert(ExpandOp(c, tensor_type(t.shape)))
            else:
                v = self.add_constant_param(name, t)
            self.constants[id(value)] = (value, v)
        return self.constants[id(value)][1]

    def add_constant_param(self, name: str, tensor: torch.Tensor) -> SSAValue:
        """A new function argument after all others, bound to `tensor` at every call (so the tensor
        is never printed in IR text). Converters may call it while the function is being built."""
        t = tensor.detach().to(torch.float32).contiguous()
        arg = self.block.insert_arg(tensor_type(t.shape), len(self.block.args))
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
    """`op_cls(a, b)` of the plain two-operand form, typed as the node's result."""

    def convert(imp: ImportContext, node: fx.Node, a, b, *rest, alpha=1, **kwargs) -> SSAValue:
        if rest or alpha != 1 or kwargs.get("rounding_mode") is not None:
            raise Unsupported("only the plain two-operand form is supported (no alpha, out or rounding_mode)")
        lhs, rhs = (b, a) if swap else (a, b)
        return imp.insert(op_cls(imp.tensor(lhs), imp.tensor(rhs), imp.result_type(node)))

    return convert


def stateless_module(fn: Converter) -> Converter:
    """Adapt a function converter to a stateless module: (imp, node, mod, *args)."""
    return lambda imp, node, mod, *args, **kwargs: fn(imp, node, *args, **kwargs)


def reshape(imp: ImportContext, node: fx.Node, x, *shape, **kwargs) -> SSAValue:
    """Any reshaping call (view, flatten, squeeze, ...): an irt.reshape to the node's result type."""
    x = imp.tensor(x)
    t = imp.result_type(node)
    if irt.shape_of(x) == dims_of(t):
        return x
    return imp.insert(irt.ReshapeOp(x, t))


def identity(imp: ImportContext, node: fx.Node, x, *args, **kwargs) -> SSAValue:
    return imp.tensor(x)


def slice_dim(imp: ImportContext, x: SSAValue, dim: int, start: int, size: int) -> SSAValue:
    """x narrowed to `size` elements from `start` along `dim` (x itself when that is everything)."""
    shape = list(irt.shape_of(x))
    if start == 0 and size == shape[dim]:
        return x
    offsets, strides = [0] * len(shape), [1] * len(shape)
    offsets[dim], shape[dim] = start, size
    return imp.insert(SliceOp(x, offsets, strides, tensor_type(shape)))

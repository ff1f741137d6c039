"""FX converters for the index ops of `dialects/irt/shape.py` and `irt.cumsum` (this family's
`FUNCTIONS` and `METHODS`): what language models compute masks and position ids with.

* `torch.cumsum` / `Tensor.cumsum` (position ids from an attention mask): bool and int64 inputs
  sum as int64, as in eager (`dtype=` picks another of float32 and int64);
* `torch.triu` / `torch.tril` and the methods, with `diagonal`, on a run-time tensor of any dtype;
* `torch.gather` / `Tensor.gather` and `torch.index_select` / `Tensor.index_select` with int64
  indices (run-time, or known at compile time).

Each evaluates at compile time when no argument is a run-time tensor (`folding`), as the masks
of static-shape models do.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import fx
from xdsl.ir import SSAValue

from irc.dialects.irt import core as irt
from irc.dialects.irt.reduce import CumsumOp
from irc.dialects.irt.shape import GatherOp, IndexSelectOp, TrilOp, TriuOp
from irc.frontend.convert_base import (
    Converter,
    ImportContext,
    Unsupported,
    accepts_ints,
    dtype_of,
    dtype_of_type,
)
from irc.frontend.folding import folding, method_call


@accepts_ints
def _cumsum(imp: ImportContext, node: fx.Node, x, dim: int, *, dtype=None, out=None) -> SSAValue:
    if out is not None:
        raise Unsupported("out= is not supported")
    t = imp.result_type(node)
    result = dtype_of_type(t)
    if result == torch.bool:
        raise Unsupported("a cumsum into bool")
    x = imp.tensor(x, result)  # bool and int64 sum as int64, as in eager
    if not irt.shape_of(x):
        return x
    return imp.insert(CumsumOp(x, int(dim) % len(irt.shape_of(x))))


def _triangle(op_cls) -> Converter:
    @accepts_ints
    def convert(imp: ImportContext, node: fx.Node, x, diagonal: int = 0, *, out=None) -> SSAValue:
        if out is not None:
            raise Unsupported("out= is not supported")
        if not isinstance(diagonal, int):
            raise Unsupported("a diagonal computed at run time")
        x = imp.tensor(x, dtype_of_type(imp.result_type(node)))
        if len(irt.shape_of(x)) < 2:
            raise Unsupported("triu/tril of a tensor of rank < 2 (eager raises too)")
        return imp.insert(op_cls(x, diagonal))

    return convert


def _indices(imp: ImportContext, index: Any) -> SSAValue:
    """Indices as an int64 tensor: a run-time one, or one known at compile time."""
    if isinstance(index, torch.Tensor) and index.dtype == torch.int64:
        return imp.constant(index, "indices", keep=True)
    if not isinstance(index, SSAValue) or dtype_of(index) != torch.int64:
        raise Unsupported("the indices must be an int64 tensor")
    return index


@accepts_ints
def _gather(imp: ImportContext, node: fx.Node, x, dim: int, index, *, sparse_grad=False, out=None) -> SSAValue:
    if out is not None:
        raise Unsupported("out= is not supported")
    t = imp.result_type(node)
    x = imp.tensor(x, dtype_of_type(t))
    rank = len(irt.shape_of(x))
    if rank == 0:
        raise Unsupported("gather from a 0-d tensor")
    return imp.insert(GatherOp(x, _indices(imp, index), int(dim) % rank, t))


@accepts_ints
def _index_select(imp: ImportContext, node: fx.Node, x, dim: int, index, *, out=None) -> SSAValue:
    if out is not None:
        raise Unsupported("out= is not supported")
    t = imp.result_type(node)
    x = imp.tensor(x, dtype_of_type(t))
    rank = len(irt.shape_of(x))
    idx = _indices(imp, index)
    if rank == 0 or len(irt.shape_of(idx)) != 1:
        raise Unsupported("index_select needs a tensor of rank >= 1 and 1-D indices")
    return imp.insert(IndexSelectOp(x, idx, int(dim) % rank, t))


FUNCTIONS: dict[Any, Converter] = {
    torch.cumsum: folding(_cumsum, torch.cumsum),
    torch.triu: folding(_triangle(TriuOp), torch.triu),
    torch.tril: folding(_triangle(TrilOp), torch.tril),
    torch.gather: folding(_gather, torch.gather),
    torch.index_select: folding(_index_select, torch.index_select),
}

METHODS: dict[str, Converter] = {
    "cumsum": folding(_cumsum, method_call("cumsum")),
    "triu": folding(_triangle(TriuOp), method_call("triu")),
    "tril": folding(_triangle(TrilOp), method_call("tril")),
    "gather": folding(_gather, method_call("gather")),
    "index_select": folding(_index_select, method_call("index_select")),
}

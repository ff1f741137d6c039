"""FX converters for torch.roll and constant F.pad, as slices and concats (`irt.slice`, `irt.concat`).

- `torch.roll(x, shifts, dims)`: along each dim, the last `shift` elements then the rest (two
  slices and a concat); `dims=None` rolls the flattened tensor (a reshape on either side).
- `F.pad(x, pad, "constant", value)`: a zero-width pad is `x` itself; otherwise, per padded dim,
  a concat with a broadcast constant on either side. Negative pads (crops) and the other modes
  are unsupported.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import fx
from xdsl.ir import SSAValue

from irc.dialects.irt import core as irt
from irc.dialects.irt.shape import ConcatOp, ExpandOp
from irc.frontend.convert_base import Converter, ImportContext, Unsupported, slice_dim, tensor_type
from irc.frontend.folding import folding


def _concat(imp: ImportContext, parts: Sequence[SSAValue], dim: int) -> SSAValue:
    parts = [p for p in parts if irt.shape_of(p)[dim] > 0]
    if len(parts) == 1:
        return parts[0]
    shape = list(irt.shape_of(parts[0]))
    shape[dim] = sum(irt.shape_of(p)[dim] for p in parts)
    return imp.insert(ConcatOp(list(parts), dim, tensor_type(shape)))


def _roll_dim(imp: ImportContext, x: SSAValue, shift: int, dim: int) -> SSAValue:
    n = irt.shape_of(x)[dim]
    shift %= n
    if shift == 0:
        return x
    return _concat(imp, [slice_dim(imp, x, dim, n - shift, shift), slice_dim(imp, x, dim, 0, n - shift)], dim)


def _roll(imp: ImportContext, node: fx.Node, x, shifts, dims=None) -> SSAValue:
    x = imp.tensor(x)
    shape = irt.shape_of(x)
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    if dims is None or dims == ():
        if len(shifts) != 1:
            raise Unsupported("roll without dims takes one shift")
        flat = imp.insert(irt.ReshapeOp(x, tensor_type([max(1, int(torch.Size(shape).numel()))])))
        return imp.insert(irt.ReshapeOp(_roll_dim(imp, flat, shifts[0], 0), tensor_type(shape)))
    dims = [dims] if isinstance(dims, int) else list(dims)
    if len(dims) != len(shifts):
        raise Unsupported(f"roll with {len(shifts)} shifts for {len(dims)} dims")
    for shift, dim in zip(shifts, dims):
        x = _roll_dim(imp, x, shift, dim % len(shape))
    return x


def _pad(imp: ImportContext, node: fx.Node, x, pad, mode="constant", value=None) -> SSAValue:
    x = imp.tensor(x)
    if mode != "constant":
        raise Unsupported(f"pad mode {mode!r} (irc pads with a constant)")
    if any(p < 0 for p in pad):
        raise Unsupported("a negative pad (a crop)")
    shape = list(irt.shape_of(x))
    for i in range(0, len(pad), 2):  # pad lists (before, after) from the last dimension backwards
        before, after, dim = pad[i], pad[i + 1], len(shape) - 1 - i // 2
        if before == after == 0:
            continue
        fill = imp.insert(irt.ConstantOp.from_floats([float(value or 0.0)]))
        sides = []
        for width in (before, after):
            side = list(shape)
            side[dim] = width
            sides.append(imp.insert(ExpandOp(fill, tensor_type(side))) if width else None)
        x = _concat(imp, [s for s in (sides[0], x, sides[1]) if s is not None], dim)
        shape[dim] += before + after
    return x


FUNCTIONS: dict[Any, Converter] = {
    torch.roll: folding(_roll, torch.roll),
    F.pad: folding(_pad, F.pad),
    torch._C._nn.pad: folding(_pad, torch._C._nn.pad),
}

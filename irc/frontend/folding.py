"""Compile-time folding: converters that evaluate their node with torch when no argument is a
run-time tensor (shape arithmetic, factories, masks), and pass constant splats as numbers.

A family wraps a converter where it writes the table entry: `folding(convert, torch.add)`
evaluates `torch.add(*args)` on compile-time arguments and calls `convert` otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import fx
from xdsl.ir import SSAValue

from irc.dialects.irt import core as irt
from irc.dialects.symbolic import is_expr
from irc.errors import IrcError
from irc.frontend.convert_base import Converter, ImportContext, Unsupported


def has_runtime_value(obj: Any) -> bool:
    """Whether an argument (possibly nested in tuples, lists, dicts, slices) is a run-time tensor."""
    if isinstance(obj, SSAValue):
        return True
    if isinstance(obj, (tuple, list)):
        return any(map(has_runtime_value, obj))
    if isinstance(obj, dict):
        return any(map(has_runtime_value, obj.values()))
    if isinstance(obj, slice):
        return any(map(has_runtime_value, (obj.start, obj.stop, obj.step)))
    return False


def has_size_expr(obj: Any) -> bool:
    """Whether an argument (possibly nested in tuples, lists, dicts, slices) holds a symbolic size."""
    if isinstance(obj, (tuple, list)):
        return any(map(has_size_expr, obj))
    if isinstance(obj, dict):
        return any(map(has_size_expr, obj.values()))
    if isinstance(obj, slice):
        return any(map(has_size_expr, (obj.start, obj.stop, obj.step)))
    return is_expr(obj)


def folding(convert: Converter | None, eager: Callable[..., Any], what: str = "") -> Converter:
    """A converter that evaluates `eager(*args, **kwargs)` at compile time when no argument is a
    run-time tensor, and otherwise defers to `convert` (None: such a call is unsupported). Sizes
    that are symbolic are compile-time values to arithmetic on them (sympy computes it), but a
    torch function refuses them: then `convert` takes the call (a tensor of symbolic shape)."""

    def fold(imp: ImportContext, node: fx.Node, *args, **kwargs):
        if not has_runtime_value((args, kwargs)):
            try:
                with torch.no_grad():
                    return eager(*args, **kwargs)
            except IrcError:
                raise
            except Exception as e:  # the node itself fails on its constant arguments
                if convert is not None and has_size_expr((args, kwargs)):
                    return convert(imp, node, *args, **kwargs)
                raise Unsupported(f"evaluating it at compile time failed: {type(e).__name__}: {e}") from e
        if convert is None:
            raise Unsupported(what or "supported only on values known at compile time")
        return convert(imp, node, *args, **kwargs)

    fold.accepts_ints = getattr(convert, "accepts_ints", False)  # type: ignore[attr-defined]
    return fold


def method_call(name: str) -> Callable[..., Any]:
    """The eager form of a tensor method, for `folding`: `method_call("view")(x, 2, 3)` is `x.view(2, 3)`."""
    return lambda self, *args, **kwargs: getattr(self, name)(*args, **kwargs)


def _arg_shape(arg: Any) -> tuple[int, ...] | None:
    if isinstance(arg, SSAValue):
        return irt.shape_of(arg)
    if isinstance(arg, torch.Tensor):
        return tuple(arg.shape)
    return () if isinstance(arg, (int, float)) and not isinstance(arg, bool) else None


def splats_as_scalars(convert: Converter) -> Converter:
    """A binary elementwise converter that passes a constant splat tensor (`torch.zeros(n, m)`) as
    its one number when the other operand alone broadcasts to the result: no tensor is built."""

    def scalars(imp: ImportContext, node: fx.Node, a, b, *rest, **kwargs):
        out = node.meta.get("tensor_meta")
        args = [a, b]
        for i, t in enumerate(args):
            other = _arg_shape(args[1 - i])
            if (
                isinstance(t, torch.Tensor)
                and t.dtype.is_floating_point
                and t.numel() > 0
                and bool((t == t.flatten()[0]).all())
                and other is not None
                and out is not None
                and tuple(other) == tuple(getattr(out, "shape", ()))
            ):
                args[i] = t.flatten()[0].item()
        return convert(imp, node, *args, *rest, **kwargs)

    scalars.accepts_ints = getattr(convert, "accepts_ints", False)  # type: ignore[attr-defined]
    return scalars

"""The importer's converter tables, composed once from the families' own tables.

Each family module (`convert_*.py`, `aten.py`) exports plain `FUNCTIONS` (keyed by the called
function), `METHODS` (by tensor method name) and `MODULES` (by module type) and registers
nothing anywhere; every converter is assembled (`folding(...)` and all) where its entry is
written. The families import only the base modules (`convert_base`, `folding`,
`order_mutations`), so the import graph is a DAG whatever is imported first.

Precedence: none. A target has its converter in exactly one family; a target written in two
is an error here, at import. The families are merged in the order of `FAMILIES`, which fixes
only the tables' iteration order: ATen aliases last, and they resolve their torch-level target
in these tables when a node is converted, so they see every family's converter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import FunctionType, ModuleType
from typing import Any

from irc.frontend import (
    aten,
    convert_core,
    convert_index,
    convert_layout,
    convert_logic,
    convert_math,
    convert_mutation,
    convert_nn,
    convert_reduce,
    convert_shape,
)
from irc.frontend.convert_base import Converter

FAMILIES: tuple[ModuleType, ...] = (
    convert_core,
    convert_math,
    convert_logic,
    convert_index,
    convert_nn,
    convert_reduce,
    convert_shape,
    convert_layout,
    convert_mutation,
    aten,
)


def compose(tables: Sequence[tuple[str, Mapping[Any, Converter]]]) -> dict[Any, Converter]:
    """The union of (owner, table) pairs, in order; a target in two tables is an error."""
    composed: dict[Any, Converter] = {}
    owners: dict[Any, str] = {}
    for owner, table in tables:
        for target, converter in table.items():
            if target in owners:
                raise RuntimeError(
                    f"{target!r} has a converter in both {owners[target]} and {owner}; write it in one family"
                )
            owners[target] = owner
            composed[target] = converter
    return composed


def _tables(name: str) -> dict[Any, Converter]:
    return compose([(family.__name__, getattr(family, name, {})) for family in FAMILIES])


FUNCTIONS: dict[Any, Converter] = _tables("FUNCTIONS")
METHODS: dict[str, Converter] = _tables("METHODS")
MODULES: dict[type, Converter] = _tables("MODULES")


def function_converter(target: Any) -> Converter | None:
    """The converter for a called function: by the function itself, else, for a plain Python
    function, by its qualified name (a library's that irc does not import: torchvision's
    `stochastic_depth` is "torchvision.ops.stochastic_depth.stochastic_depth")."""
    try:
        found = FUNCTIONS.get(target)
    except TypeError:  # unhashable
        return None
    # by name only a function whose code is its own: a `functools.wraps` wrapper copies the name of
    # the function it wraps, not what it does
    if found is None and isinstance(target, FunctionType) and target.__code__.co_name == target.__name__:
        found = FUNCTIONS.get(f"{target.__module__}.{target.__qualname__}")
    return found

"""Generated Python wrappers that make exactly one native call per forward.

``make_forward`` writes the source of a ``forward(*args)`` specialised to one signature,
executes it, and returns the function. Everything the per-call path needs (the ctypes
function, parameter pointers, shapes, error labels) is pre-bound as globals of the generated
code, so a call is: validate each input, allocate outputs, one ``fn(...)``, return.

The native ABI is ``void f(float* in0, ..., float* param0, ..., float* out0, ...)``:
user inputs, then parameters, then outputs, all contiguous float32 on the CPU, except inputs
whose spec is int64 (embedding indices: ``int64_t*``).
"""

from __future__ import annotations

import ctypes
import itertools
import linecache
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from irc.errors import InputError

__all__ = ["TensorSpec", "make_forward"]

_counter = itertools.count()  # unique file names for generated sources in tracebacks


@dataclass(frozen=True)
class TensorSpec:
    """Name, exact shape and dtype of one input or output of a compiled function."""

    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype = torch.float32


def make_forward(
    fn: Any,
    inputs: Sequence[TensorSpec],
    params: Sequence[torch.Tensor],
    outputs: Sequence[TensorSpec],
    return_tuple: bool,
    set_threads: Any | None = None,
) -> Callable[..., Any]:
    """Return ``forward(*args)`` calling the ctypes function ``fn`` once per call.

    ``inputs`` describe the user arguments, checked in order for count, type, device, dtype,
    exact shape and contiguity (any mismatch raises :class:`~irc.errors.InputError`).
    ``params`` must be contiguous float32 CPU tensors; their pointers are taken now and the
    tensors are kept alive by the wrapper (so update them in place, never rebind them).
    ``outputs`` are freshly allocated per call; a single output is returned bare unless
    ``return_tuple``. ``set_threads`` (``irc_set_num_threads``), if given, is called whenever
    ``torch.get_num_threads()`` differs from the value last passed to it.

    The generated source is available as ``forward.__irc_source__``.
    """
    inputs, params, outputs = list(inputs), list(params), list(outputs)
    for spec in inputs:
        if spec.dtype not in (torch.float32, torch.int64):
            raise ValueError(f"{spec.name!r}: inputs must be float32 or int64, got {spec.dtype}")
    for spec in outputs:
        if spec.dtype != torch.float32:
            raise ValueError(f"{spec.name!r}: only float32 outputs are supported, got {spec.dtype}")
    for i, p in enumerate(params):
        if not isinstance(p, torch.Tensor):
            raise TypeError(f"param {i}: expected a torch.Tensor, got {type(p).__name__}")
        if p.device.type != "cpu" or p.dtype != torch.float32 or not p.is_contiguous():
            raise ValueError(
                f"param {i}: must be a contiguous float32 CPU tensor, got "
                f"{p.dtype} on {p.device} (contiguous={p.is_contiguous()})"
            )
    if not outputs:
        raise ValueError("a compiled function needs at least one output")
    if len(outputs) > 1 and not return_tuple:
        raise ValueError(f"{len(outputs)} outputs need return_tuple=True")

    fn.argtypes = [ctypes.c_void_p] * (len(inputs) + len(params) + len(outputs))
    fn.restype = None
    env: dict[str, Any] = {
        "__builtins__": __builtins__,
        "InputError": InputError,
        "Tensor": torch.Tensor,
        "_empty": torch.empty,
        "_f32": torch.float32,
        "_fn": fn,
        "_params": params,  # keeps the parameter storage alive
        "_n_inputs": len(inputs),
        "_names": ", ".join(s.name for s in inputs),
    }
    if set_threads is not None:
        set_threads.argtypes = [ctypes.c_int]
        set_threads.restype = None
        env.update(_set_threads=set_threads, _get_threads=torch.get_num_threads, _last=[-1])

    args = [f"a{i}" for i in range(len(inputs))]
    lines = ["def forward(*args):"]
    lines += [
        "    if len(args) != _n_inputs:",
        "        raise InputError(",
        "            f'expected {_n_inputs} input(s) ({_names}), got {len(args)}')",
    ]
    if inputs:
        lines.append(f"    {', '.join(args)}, = args")
    for i, (a, spec) in enumerate(zip(args, inputs)):
        env[f"_L{i}"] = f"input {i} ({spec.name!r})"
        env[f"_S{i}"] = tuple(spec.shape)
        env[f"_D{i}"] = spec.dtype
        lines += [
            f"    if not isinstance({a}, Tensor):",
            f"        raise InputError(f'{{_L{i}}}: expected a torch.Tensor, "
            f"got {{type({a}).__name__}}')",
            f"    if not {a}.is_cpu:",
            f"        raise InputError(f'{{_L{i}}}: expected device cpu, got {{{a}.device}}')",
            f"    if {a}.dtype != _D{i}:",
            f"        raise InputError(f'{{_L{i}}}: expected dtype {{_D{i}}}, got {{{a}.dtype}}')",
            f"    if {a}.shape != _S{i}:",
            f"        raise InputError(",
            f"            f'{{_L{i}}}: expected shape {{_S{i}}}, got {{tuple({a}.shape)}}')",
            f"    if not {a}.is_contiguous():",
            f"        raise InputError(",
            f"            f'{{_L{i}}}: expected a contiguous tensor, got strides "
            f"{{{a}.stride()}}; call .contiguous() on it first')",
        ]
    outs = [f"o{i}" for i in range(len(outputs))]
    for i, (o, spec) in enumerate(zip(outs, outputs)):
        env[f"_O{i}"] = tuple(spec.shape)
        lines.append(f"    {o} = _empty(_O{i}, dtype=_f32)")
    for i, p in enumerate(params):
        env[f"_P{i}"] = p.data_ptr()
    if set_threads is not None:
        lines += [
            "    n = _get_threads()",
            "    if n != _last[0]:",
            "        _set_threads(n)",
            "        _last[0] = n",
        ]
    call_args = [f"{a}.data_ptr()" for a in args]
    call_args += [f"_P{i}" for i in range(len(params))]
    call_args += [f"{o}.data_ptr()" for o in outs]
    lines.append(f"    _fn({', '.join(call_args)})")
    lines.append(f"    return ({', '.join(outs)},)" if return_tuple else f"    return {outs[0]}")
    source = "\n".join(lines) + "\n"

    filename = f"<irc-forward-{next(_counter)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), env)
    forward = env["forward"]
    forward.__irc_source__ = source
    return forward

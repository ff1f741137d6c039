"""Generated Python wrappers that make exactly one native call per forward.

``make_forward`` writes the source of a ``forward(*args)`` specialised to one signature,
executes it, and returns the function. Everything the per-call path needs (the ctypes
function, parameter pointers, shapes, error labels) is pre-bound as globals of the generated
code, so a call is: validate each input, allocate outputs, one ``fn(...)``, return.

The native ABI is ``void f(float* in0, ..., float* param0, ..., float* out0, ..., [float* arena])``:
user inputs, then parameters, then outputs, all contiguous float32 on the CPU (an input that is
not contiguous is copied for the call), except inputs
whose spec is int64 (embedding indices: ``int64_t*``); then, for a function whose intermediates
were planned by ``irc-plan-memory``, the scratch arena: one per calling thread, allocated on the
thread's first call and reused, so concurrent calls never share scratch.

The thread count follows ``IRC_NUM_THREADS`` if set (read at every call), else
``torch.get_num_threads()``.
"""

from __future__ import annotations

import ctypes
import itertools
import linecache
import math
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from irc.errors import InputError

__all__ = ["TensorSpec", "make_forward"]

_counter = itertools.count()  # unique file names for generated sources in tracebacks
_ENV = getattr(os.environ, "_data", None)  # CPython's bytes-keyed dict behind os.environ: a cheap lookup
ALIGN = 64  # bytes; the arena's alignment (irc-plan-memory aligns every buffer in it to 64)


def num_threads() -> int:
    """The thread count for the next call: ``IRC_NUM_THREADS`` if set to a positive integer,
    else ``torch.get_num_threads()``."""
    value = _ENV.get(b"IRC_NUM_THREADS") if _ENV is not None else os.environ.get("IRC_NUM_THREADS")
    if value:
        try:
            n = int(value)
        except ValueError:
            n = 0
        if n > 0:
            return n
    return torch.get_num_threads()


PACKED_SUFFIX = "__packed"
"""``NAME__packed(void* const* a)``, emitted next to every entry point (lowering/cpp/emit_cpp.py),
calls ``NAME(a[0], a[1], ...)``: one ctypes argument instead of one per buffer (ctypes converts
each argument, about 0.1 us apiece: 5 us for ResNet-18's 45)."""


def _thread_args(n_args: int, fixed: dict[int, int], scratch_bytes: int) -> tuple[threading.local, Callable[[], Any]]:
    """Per-thread argument arrays for a packed entry point: ``(tls, new)``; ``new()`` makes this
    thread's ``tls.a`` (``c_void_p * n_args``, the ``fixed`` slots (parameters) filled in, and
    the last one this thread's arena when ``scratch_bytes`` > 0) and returns it."""
    tls = threading.local()
    arena_tls, new_arena = _scratch_allocator(scratch_bytes) if scratch_bytes > 0 else (None, None)

    def new() -> Any:
        a = (ctypes.c_void_p * n_args)()
        for i, p in fixed.items():
            a[i] = p
        if new_arena is not None:
            a[n_args - 1] = new_arena()
            tls.keep = arena_tls.t
        tls.a = a
        return a

    return tls, new


def _scratch_allocator(nbytes: int) -> tuple[threading.local, Callable[[], int]]:
    """A per-thread arena of ``nbytes``: ``(tls, new)`` where ``tls.p`` is this thread's
    arena pointer once ``new()`` (which returns it) has run in the thread."""
    tls = threading.local()

    def new() -> int:
        t = torch.empty(nbytes + ALIGN, dtype=torch.uint8)
        tls.t = t  # keeps the storage alive as long as the thread (and the wrapper) lives
        tls.p = t.data_ptr() + (-t.data_ptr()) % ALIGN
        return tls.p

    return tls, new


@dataclass(frozen=True)
class TensorSpec:
    """Name, exact shape and dtype of one input or output of a compiled function."""

    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype = torch.float32


def _output_template(shape: tuple[int, ...]) -> torch.Tensor:
    """A tensor whose ``empty_like`` is a fresh contiguous float32 tensor of ``shape`` (the
    cheapest allocation from Python): stride 0, so no memory, unless it has at most one element
    (there torch would keep the zero strides)."""
    if math.prod(shape) <= 1:
        return torch.empty(shape, dtype=torch.float32)
    return torch.empty((), dtype=torch.float32).expand(shape)


def make_forward(
    fn: Any,
    inputs: Sequence[TensorSpec],
    params: Sequence[torch.Tensor],
    outputs: Sequence[TensorSpec],
    return_tuple: bool,
    set_threads: Any | None = None,
    scratch_bytes: int = 0,
    packed: Any | None = None,
    output_spec: Any | None = None,
) -> Callable[..., Any]:
    """Return ``forward(*args)`` calling the ctypes function ``fn`` once per call.

    ``inputs`` describe the user arguments, checked in order for count, type, device, dtype and
    exact shape (any mismatch raises :class:`~irc.errors.InputError`); a non-contiguous input
    (channels_last, transposed, a slice) is copied to a contiguous one for the call.
    ``params`` must be contiguous float32 CPU tensors; their pointers are taken now and the
    tensors are kept alive by the wrapper (so update them in place, never rebind them).
    ``outputs`` are freshly allocated per call; a single output is returned bare unless
    ``return_tuple``. ``set_threads`` (``irc_set_num_threads``), if given, is called whenever
    the thread count (``IRC_NUM_THREADS``, else ``torch.get_num_threads()``) differs from the
    value last passed to it. ``scratch_bytes`` > 0 appends a per-thread arena of that many bytes
    (64-byte aligned) as the last argument. ``packed``, the entry point's
    ``__packed`` twin, if given, is called instead of ``fn`` with one per-thread
    array of all the pointers (parameters and arena filled in once per thread).
    ``output_spec``, a ``torch.utils._pytree.TreeSpec`` with one leaf per output, if given,
    rebuilds the model's output structure (a dict, a list, nested tuples) from the outputs.

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
    if output_spec is not None and output_spec.num_leaves != len(outputs):
        raise ValueError(f"the output structure has {output_spec.num_leaves} tensors, not {len(outputs)}")

    fn.argtypes = [ctypes.c_void_p] * (len(inputs) + len(params) + len(outputs) + (scratch_bytes > 0))
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
        env.update(_set_threads=set_threads, _get_threads=num_threads, _last=[-1])

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
            "        raise InputError(",
            f"            f'{{_L{i}}}: expected shape {{_S{i}}}, got {{tuple({a}.shape)}}')",
            f"    if not {a}.is_contiguous():",  # channels_last, transposed, sliced: one copy
            f"        {a} = {a}.contiguous()",
        ]
    outs = [f"o{i}" for i in range(len(outputs))]
    env["_empty_like"] = torch.empty_like
    for i, (o, spec) in enumerate(zip(outs, outputs)):
        env[f"_O{i}"] = _output_template(tuple(spec.shape))
        lines.append(f"    {o} = _empty_like(_O{i})")
    for i, p in enumerate(params):
        env[f"_P{i}"] = p.data_ptr()
    if set_threads is not None:
        lines += [
            "    n = _get_threads()",
            "    if n != _last[0]:",
            "        _set_threads(n)",
            "        _last[0] = n",
        ]
    if packed is not None:
        n_args = len(inputs) + len(params) + len(outputs) + (scratch_bytes > 0)
        packed.argtypes = None  # an array passes as its address; no per-call conversion (cheapest)
        packed.restype = None
        fixed = {len(inputs) + i: p.data_ptr() for i, p in enumerate(params)}
        env["_packed"] = packed
        env["_tls"], env["_new_args"] = _thread_args(n_args, fixed, scratch_bytes)
        lines += [
            "    try:",
            "        c = _tls.a",
            "    except AttributeError:",
            "        c = _new_args()",
        ]
        slots = list(range(len(inputs))) + [len(inputs) + len(params) + i for i in range(len(outputs))]
        for slot, t in zip(slots, args + outs):
            lines.append(f"    c[{slot}] = {t}.data_ptr()")
        lines.append("    _packed(c)")
        lines.append(_return(outs, return_tuple, output_spec, env))
        return _define(lines, env)
    call_args = [f"{a}.data_ptr()" for a in args]
    call_args += [f"_P{i}" for i in range(len(params))]
    call_args += [f"{o}.data_ptr()" for o in outs]
    if scratch_bytes > 0:
        env["_tls"], env["_new_scratch"] = _scratch_allocator(scratch_bytes)
        lines += [
            "    try:",
            "        s = _tls.p",
            "    except AttributeError:",
            "        s = _new_scratch()",
        ]
        call_args.append("s")
    lines.append(f"    _fn({', '.join(call_args)})")
    lines.append(_return(outs, return_tuple, output_spec, env))
    return _define(lines, env)


def _return(outs: list[str], return_tuple: bool, output_spec: Any | None, env: dict[str, Any]) -> str:
    """The generated ``return`` line: the outputs bare, as a tuple, or rebuilt into ``output_spec``."""
    if output_spec is not None:
        env["_spec"] = output_spec
        return f"    return _spec.unflatten([{', '.join(outs)}])"
    return f"    return ({', '.join(outs)},)" if return_tuple else f"    return {outs[0]}"


def _define(lines: list[str], env: dict[str, Any]) -> Callable[..., Any]:
    """Execute the generated ``forward`` source in ``env``; keep its text for tracebacks."""
    source = "\n".join(lines) + "\n"

    filename = f"<irc-forward-{next(_counter)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), env)
    forward = env["forward"]
    forward.__irc_source__ = source
    return forward

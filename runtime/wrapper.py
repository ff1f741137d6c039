"""The Python side of a compiled function: exactly one native call per forward.

``make_forward`` writes the source of a ``forward(*args)`` specialised to one signature,
executes it, and returns the function; everything the per-call path needs (the argv entry
point, parameter pointers, expected dtypes and shapes, output templates) is pre-bound as its
globals, so a call is: check each input, allocate the outputs, fill this thread's pointer
array, one native call, return. Why generated source and not a closure: a closure has to
loop over the inputs, which measured 0.1-0.3 us more per call (of ~2.2 us for ``relu(x + 1)``,
``examples/call_overhead.py``), and the budget is to cost no more than before; the generated
function is straight code, five lines per input, registered with ``linecache`` so tracebacks
show it, and kept as ``forward.__irc_source__``.

The rules and messages for the inputs live in :func:`check_inputs`, which ``CompiledModule``
uses too; the generated code tests the same properties inline and calls ``check_inputs`` for
the error only when one fails.

The native ABI is ``void f(float* in0, ..., float* param0, ..., float* out0, ..., [float* arena])``:
user inputs, then parameters, then outputs, all contiguous CPU tensors (an input that is
not contiguous is copied for the call) of their spec's dtype: float32 (``float*``), int64
(``int64_t*``) or bool (``bool*``, one byte each); then, for a function whose intermediates
were planned by ``irc-plan-memory``, the scratch arena: one per calling thread, allocated on the
thread's first call and reused, so concurrent calls never share scratch. The wrapper calls the
entry point's ``__argv`` twin with one array of those pointers.

**Symbolic sizes** (a function compiled once for every size of some dimensions,
``dialects/symbolic.py``): the specs' shapes hold expressions of symbols ``s0, s1, ...``, and
the entry point takes each symbol's value first, as an integer in its pointer slot. The
generated ``forward`` binds each symbol from the first input dimension that is exactly it,
checks every other dimension and each symbol's range (an :class:`~irc.errors.InputError`
naming the dimension and the rule otherwise: ``check_symbolic``), and allocates the outputs
with the shapes evaluated from the symbols. The scratch arena of such a function is the entry
point's own (per thread, grown to the call's size).

The thread count follows ``IRC_NUM_THREADS`` if set (read at every call, with the C library's
``getenv``: about 0.1 us), else ``torch.get_num_threads()``; it is passed to ``irc_set_num_threads`` whenever it differs from
what the calling thread last passed (OpenMP's thread count is a per-thread setting).
"""

from __future__ import annotations

import ctypes
import itertools
import linecache
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from irc.errors import InputError

__all__ = ["ARGV_SUFFIX", "TensorSpec", "autocast_enabled", "check_inputs", "make_forward", "num_threads"]

ALIGN = 64  # bytes; the arena's alignment (irc-plan-memory aligns every buffer in it to 64)
DTYPES = (torch.float32, torch.int64, torch.bool)  # what the native code reads and writes

ARGV_SUFFIX = "__argv"

autocast_enabled = getattr(torch._C, "_is_any_autocast_enabled", None) or (lambda: torch.is_autocast_enabled("cpu"))
"""Is torch.autocast on (for any device)? Native code computes in float32 whatever it says, so a
call under it is not what eager PyTorch computes: checked per call (0.12 us; the public
torch.is_autocast_enabled("cpu") takes 0.29)."""
"""``NAME__argv(void* const* a)``, emitted next to every entry point (lowering/cpp/emit_cpp.py),
calls ``NAME(a[0], a[1], ...)``: one ctypes argument instead of one per buffer (ctypes converts
each argument, about 0.1 us apiece: 5 us for ResNet-18's 45)."""

THREADS_VARIABLE = "IRC_NUM_THREADS"

_counter = itertools.count()  # unique file names for generated sources in tracebacks


def _c_getenv() -> Callable[[bytes], bytes | None]:
    """The C library's ``getenv``, taking and returning bytes (None when unset).

    ``os.environ`` writes through to the process environment (``putenv``/``unsetenv``), so this
    reads what it holds, at about 0.1 us a call where ``os.environ.get`` takes 1.2 us for an
    unset variable (it raises and catches ``KeyError`` twice): cheap enough for every call.
    Called through ``PyDLL``, which keeps the GIL: ``getenv`` returns at once (dropping and
    retaking the GIL would cost more than the call), and no Python thread can write the
    environment meanwhile."""
    try:
        getenv = ctypes.PyDLL(None).getenv
    except (OSError, TypeError, AttributeError):  # no C library handle (not a POSIX system)
        return lambda key: os.environ.get(key.decode(), "").encode() or None
    getenv.argtypes = None  # bytes pass as char*: the cheapest conversion
    getenv.restype = ctypes.c_char_p
    return getenv


_getenv = _c_getenv()
_THREADS_KEY = THREADS_VARIABLE.encode()


def _thread_count(value: bytes | None) -> int:
    """``value`` of ``IRC_NUM_THREADS`` if it is a positive integer, else ``torch.get_num_threads()``."""
    if value:
        try:
            n = int(value)
        except ValueError:
            n = 0
        if n > 0:
            return n
    return torch.get_num_threads()


def num_threads() -> int:
    """The thread count for the next call: ``IRC_NUM_THREADS`` if set to a positive integer,
    else ``torch.get_num_threads()``."""
    return _thread_count(_getenv(_THREADS_KEY))


def check_inputs(
    args: Sequence[Any],
    names: Sequence[str],
    dtypes: Sequence[torch.dtype],
    shapes: Sequence[tuple[int, ...]] | None = None,
    note: str = "",
) -> None:
    """Raise :class:`~irc.errors.InputError` naming the first way ``args`` differ from the inputs
    ``names`` of a compiled function: their count (``note`` is appended to that message), then,
    input by input, the type (a ``torch.Tensor``), the device (cpu), the dtype and, when
    ``shapes`` are given, the exact shape. Returns when they all match. The layout is not
    checked: a non-contiguous input is copied to a contiguous one for the call."""
    if len(args) != len(names):
        raise InputError(f"expected {len(names)} input(s) ({', '.join(names)}), got {len(args)}{note}")
    for i, x in enumerate(args):
        label = f"input {i} ({names[i]!r})"
        if not isinstance(x, torch.Tensor):
            raise InputError(f"{label}: expected a torch.Tensor, got {type(x).__name__}")
        if not x.is_cpu:
            raise InputError(f"{label}: expected device cpu, got {x.device}")
        if x.dtype != dtypes[i]:
            raise InputError(f"{label}: expected dtype {dtypes[i]}, got {x.dtype}")
        if shapes is not None and x.shape != shapes[i]:
            raise InputError(f"{label}: expected shape {shapes[i]}, got {tuple(x.shape)}")


@dataclass(frozen=True)
class TensorSpec:
    """Name, shape and dtype of one input or output of a compiled function. A size is an int,
    or an expression of the symbols (``dialects/symbolic.py``: a sympy expression)."""

    name: str
    shape: tuple[Any, ...]
    dtype: torch.dtype = torch.float32

    @property
    def symbolic(self) -> bool:
        return not all(isinstance(d, int) for d in self.shape)


@dataclass(frozen=True)
class SymbolBinding:
    """Where a symbol's value comes from (dimension ``dim`` of input ``input``) and its range."""

    name: str
    input: int
    dim: int
    min: int = 0
    max: int | None = None


def bind_symbols(inputs: Sequence[TensorSpec], ranges: dict[str, tuple[int, int | None]] | None = None) -> list[SymbolBinding]:
    """Each symbol the input shapes use, in order (s0, s1, ...), bound at the first input
    dimension that is exactly that symbol; ValueError when a symbol has none."""
    import sympy

    from irc.dialects.symbolic import symbol_order

    found: dict[str, SymbolBinding] = {}
    used: set = set()
    for i, spec in enumerate(inputs):
        for d, size in enumerate(spec.shape):
            if isinstance(size, int):
                continue
            used |= size.free_symbols
            if isinstance(size, sympy.Symbol) and size.name not in found:
                lo, hi = (ranges or {}).get(size.name, (0, None))
                found[size.name] = SymbolBinding(size.name, i, d, lo, hi)
    missing = sorted((s.name for s in used if s.name not in found), key=lambda n: int(n[1:]))
    if missing:
        raise ValueError(f"the size symbol(s) {', '.join(missing)} are no input's whole dimension")
    return [found[n] for n in sorted(found, key=lambda n: symbol_order(sympy.Symbol(n)))]


def check_symbolic(
    args: Sequence[Any], inputs: Sequence[TensorSpec], bindings: Sequence[SymbolBinding], note: str = "",
    guards: Sequence[str] = (),
) -> None:
    """Raise :class:`~irc.errors.InputError` naming the first way ``args`` break the inputs'
    symbolic shapes: the checks of :func:`check_inputs` (but the shape), then the rank, each
    symbol's range, and every dimension against its size (a number, or an expression of the
    symbols bound from earlier dimensions)."""
    from irc.dialects.symbolic import evaluate, format_dim

    check_inputs(args, [s.name for s in inputs], [s.dtype for s in inputs], note=note)
    for i, (x, spec) in enumerate(zip(args, inputs)):
        if x.dim() != len(spec.shape):
            shape = "x".join(map(format_dim, spec.shape))
            raise InputError(f"input {i} ({spec.name!r}): expected {len(spec.shape)} dimensions ({shape}), got {tuple(x.shape)}")
    values = {}
    for b in bindings:
        v = args[b.input].shape[b.dim]
        if v < b.min or (b.max is not None and v > b.max):
            bound = f"in [{b.min}, {b.max}]" if b.max is not None else f">= {b.min}"
            raise InputError(
                f"input {b.input} ({inputs[b.input].name!r}): dimension {b.dim} is {v}, but its size {b.name} "
                f"must be {bound} for this compiled version"
            )
        values[b.name] = v
    for i, (x, spec) in enumerate(zip(args, inputs)):
        for d, size in enumerate(spec.shape):
            expected = evaluate(size, values)
            if x.shape[d] != expected:
                rule = "" if isinstance(size, int) else f" = {format_dim(size)}"
                raise InputError(
                    f"input {i} ({spec.name!r}): dimension {d} is {x.shape[d]}, expected {expected}{rule} "
                    f"(with {', '.join(f'{k} = {v}' for k, v in values.items())})"
                )
    for g in guards:
        if not eval(g, {"max": max, "min": min}, dict(values)):  # noqa: S307 (irc's own size rules)
            raise InputError(
                f"the sizes {', '.join(f'{k} = {v}' for k, v in values.items())} break `{g}`, which this "
                "compiled version assumes (tracing relied on it)"
            )


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, n = [], 1
    for d in reversed(shape):
        strides.append(n)
        n *= max(d, 1)
    return tuple(reversed(strides))


def _fast_empty_strided() -> Callable[[tuple, tuple, torch.dtype], torch.Tensor]:
    """``f(size, stride, dtype)``: a new uninitialized CPU tensor, the cheapest torch has.

    Inductor's generated code allocates with ``torch._C._dynamo.guards._empty_strided_cpu``,
    which skips the Python argument parser and the dispatcher: in ``irc bench``'s regime (each
    call after the other contenders', caches cold) it takes 3.4 us where ``empty_like`` of a
    template took 5.9 (0.7 and 1.2 warm). It is private, so it is used only if it is there and
    gives what it should; else ``torch.empty_strided``."""
    fast = getattr(getattr(getattr(torch._C, "_dynamo", None), "guards", None), "_empty_strided_cpu", None)
    if fast is not None:
        try:
            t = fast((2, 3), (3, 1), torch.float32)
            if (t.shape, t.stride(), t.dtype, t.device.type, t.requires_grad) == ((2, 3), (3, 1), torch.float32, "cpu", False):
                return fast
        except Exception:  # noqa: BLE001 - another signature in another torch: the public path
            pass
    return lambda size, stride, dtype: torch.empty_strided(size, stride, dtype=dtype)


_empty_strided = _fast_empty_strided()


def _per_thread_arrays(n_args: int, fixed: dict[int, int], scratch_bytes: int) -> tuple[threading.local, Callable[[], Any]]:
    """Per-thread pointer arrays: ``(tls, new)``; ``new()`` makes this thread's ``tls.a`` and
    returns it: ``c_void_p * (n_args + 1)`` with the ``fixed`` slots (parameters) filled in, slot
    ``n_args - 1`` this thread's arena when ``scratch_bytes`` > 0 (``nbytes``, 64-byte aligned,
    kept alive as long as the thread and the wrapper live), and slot ``n_args``, past the
    arguments, the thread count this thread last set (0: none yet)."""
    tls = threading.local()

    def new() -> Any:
        a = (ctypes.c_void_p * (n_args + 1))()
        for i, p in fixed.items():
            a[i] = p
        if scratch_bytes > 0:
            arena = torch.empty(scratch_bytes + ALIGN, dtype=torch.uint8)
            tls.arena = arena
            a[n_args - 1] = arena.data_ptr() + (-arena.data_ptr()) % ALIGN
        tls.a = a
        return a

    return tls, new


def _unpacking(fn: Any, n_args: int) -> Callable[[Any], None]:
    """A stand-in for the ``__argv`` twin of ``fn``, for a library without one (hand-written
    kernels): calls ``fn`` with the array's first ``n_args`` pointers."""

    def argv(a: Any) -> None:
        fn(*a[:n_args])

    return argv


def _ignore(n: int) -> None:
    """The ``set_threads`` of a library without ``irc_set_num_threads``."""


def _check_signature(
    inputs: list[TensorSpec],
    params: list[torch.Tensor],
    outputs: list[TensorSpec],
    return_tuple: bool,
    output_spec: Any | None,
) -> None:
    """Reject, once at build time, a signature :func:`make_forward` cannot call (see there)."""
    for spec in inputs:
        if spec.dtype not in DTYPES:
            raise ValueError(f"{spec.name!r}: inputs must be float32, int64 or bool, got {spec.dtype}")
    for spec in outputs:
        if spec.dtype not in DTYPES:
            raise ValueError(f"{spec.name!r}: outputs must be float32, int64 or bool, got {spec.dtype}")
    for i, p in enumerate(params):
        if not isinstance(p, torch.Tensor):
            raise TypeError(f"param {i}: expected a torch.Tensor, got {type(p).__name__}")
        if p.device.type != "cpu" or p.dtype not in DTYPES or not p.is_contiguous():
            raise ValueError(
                f"param {i}: must be a contiguous float32, int64 or bool CPU tensor, got "
                f"{p.dtype} on {p.device} (contiguous={p.is_contiguous()})"
            )
    if not outputs:
        raise ValueError("a compiled function needs at least one output")
    if len(outputs) > 1 and not return_tuple:
        raise ValueError(f"{len(outputs)} outputs need return_tuple=True")
    if output_spec is not None and output_spec.num_leaves != len(outputs):
        raise ValueError(f"the output structure has {output_spec.num_leaves} tensors, not {len(outputs)}")


def make_forward(
    fn: Any,
    inputs: Sequence[TensorSpec],
    params: Sequence[torch.Tensor],
    outputs: Sequence[TensorSpec],
    return_tuple: bool,
    set_threads: Any | None = None,
    scratch_bytes: int = 0,
    argv: Any | None = None,
    output_spec: Any | None = None,
    ranges: dict[str, tuple[int, int | None]] | None = None,
    guards: Sequence[str] = (),
) -> Callable[..., Any]:
    """Return ``forward(*args)`` calling the ctypes entry point ``fn`` once per call.

    ``inputs`` describe the user arguments, checked in order for count, type, device, dtype and
    exact shape (any mismatch raises :class:`~irc.errors.InputError`, see :func:`check_inputs`);
    a non-contiguous input (channels_last, transposed, a slice) is copied to a contiguous one
    for the call. ``params`` must be contiguous float32, int64 or bool CPU tensors; their pointers are taken now
    and the tensors are kept alive by the wrapper (so update them in place, never rebind them).
    ``outputs`` are freshly allocated per call; a single output is returned bare unless
    ``return_tuple``. ``set_threads`` (``irc_set_num_threads``), if given, is called whenever
    the thread count (``IRC_NUM_THREADS``, else ``torch.get_num_threads()``) differs from the
    value the calling thread last passed to it. ``scratch_bytes`` > 0 appends a per-thread arena
    of that many bytes (64-byte aligned) as the last argument. ``argv``, the entry point's
    ``__argv`` twin, is what is called, with one per-thread array of all the pointers
    (parameters and arena filled in once per thread); without it (a library that has none),
    ``fn`` is called with the array's pointers, at one ctypes conversion per pointer.
    ``output_spec``, a ``torch.utils._pytree.TreeSpec`` with one leaf per output, if given,
    rebuilds the model's output structure (a dict, a list, nested tuples) from the outputs.
    Specs with symbolic sizes make a forward for every size (see the module doc); ``ranges``
    maps a symbol's name to its (min, max or None), checked at every call (default: >= 0);
    ``guards`` are further rules on the symbols (Python expressions such as ``s0 != 3``: what
    tracing assumed), checked at every call too.
    """
    inputs, params, outputs = list(inputs), list(params), list(outputs)
    _check_signature(inputs, params, outputs, return_tuple, output_spec)
    if any(s.symbolic for s in (*inputs, *outputs)):
        return _symbolic_forward(
            fn, inputs, params, outputs, return_tuple, set_threads, argv, output_spec, bind_symbols(inputs, ranges),
            list(guards),
        )

    n_inputs = len(inputs)
    n_args = n_inputs + len(params) + len(outputs) + (scratch_bytes > 0)
    fn.argtypes = [ctypes.c_void_p] * n_args  # its ABI, for whoever calls it directly too
    fn.restype = None
    if argv is None:
        argv = _unpacking(fn, n_args)
    else:
        argv.argtypes = None  # an array passes as its address; no per-call conversion (cheapest)
        argv.restype = None
    if set_threads is None:
        set_threads = _ignore
    else:
        set_threads.argtypes = [ctypes.c_int]
        set_threads.restype = None
    tls, new_array = _per_thread_arrays(
        n_args, {n_inputs + i: p.data_ptr() for i, p in enumerate(params)}, scratch_bytes
    )
    names = [s.name for s in inputs]
    dtypes = [s.dtype for s in inputs]
    shapes = [tuple(s.shape) for s in inputs]
    env: dict[str, Any] = {
        "__builtins__": __builtins__,
        "Tensor": torch.Tensor,
        "check_inputs": check_inputs,
        "names": names,
        "dtypes": dtypes,
        "shapes": shapes,
        "params": params,  # keeps the parameter storage alive
        "tls": tls,
        "new_array": new_array,
        "empty_strided": _empty_strided,
        "getenv": _getenv,
        "key": _THREADS_KEY,
        "torch_threads": torch.get_num_threads,
        "thread_count": _thread_count,
        "set_threads": set_threads,
        "argv": argv,
        "spec": output_spec,
    }
    env.update({f"d{i}": d for i, d in enumerate(dtypes)})
    env.update({f"s{i}": s for i, s in enumerate(shapes)})
    env.update({f"os{i}": tuple(s.shape) for i, s in enumerate(outputs)})
    env.update({f"ot{i}": _contiguous_strides(tuple(s.shape)) for i, s in enumerate(outputs)})
    env.update({f"od{i}": s.dtype for i, s in enumerate(outputs)})
    xs = [f"x{i}" for i in range(n_inputs)]
    outs = [f"o{i}" for i in range(len(outputs))]
    first_out = n_inputs + len(params)  # the array slot of output 0
    lines = [
        "def forward(*args):",
        *([
            "    try:",
            f"        {', '.join(xs)}, = args",
            "    except ValueError:  # another count: x0 fails its check below, outside this block",
            f"        {' = '.join(xs)} = None",
        ] if xs else [
            "    if args:",
            "        check_inputs(args, names, dtypes, shapes)  # raises the message",
        ]),
        "    try:",
        "        c = tls.a",
        "    except AttributeError:",
        "        c = new_array()",
    ]
    for i, x in enumerate(xs):
        lines += [
            f"    if not (isinstance({x}, Tensor) and {x}.is_cpu and {x}.dtype is d{i} and {x}.shape == s{i}):",
            "        check_inputs(args, names, dtypes, shapes)  # raises the message",
            # channels_last, transposed, sliced: one copy; a view with the negative bit (its
            # values negated on reading: torch._neg_view) resolved too, even when contiguous
            f"    if not {x}.is_contiguous() or {x}.is_neg():",
            f"        {x} = {x}.resolve_neg().contiguous()",
            f"    c[{i}] = {x}.data_ptr()",
        ]
    for i, o in enumerate(outs):
        lines += [f"    {o} = empty_strided(os{i}, ot{i}, od{i})", f"    c[{first_out + i}] = {o}.data_ptr()"]
    lines += _call_and_return(n_args, outs, output_spec is not None, return_tuple)
    forward = _define(lines, env)
    if output_spec is None and isinstance(argv, ctypes._CFuncPtr) and outputs:
        forward.irc_call = CallSpec(  # for runtime/native_guard.py fast_call to make this call natively
            [s.dtype for s in inputs], shapes, [(env[f"os{i}"], env[f"ot{i}"], s.dtype) for i, s in enumerate(outputs)],
            argv, set_threads if isinstance(set_threads, ctypes._CFuncPtr) else None, tls, new_array, first_out,
            n_args, return_tuple,
        )
    return forward


@dataclass(frozen=True)
class CallSpec:
    """A static forward's call, for a native caller to make it as the generated Python does
    (runtime/native_guard.py fast_call): the inputs' dtypes and shapes, each output's
    `empty_strided` arguments, the `__argv` entry and `irc_set_num_threads` (None: the library
    has none), the per-thread arrays (`tls.a`, made by `new_array`), the array slot of output 0,
    the thread count's slot, and whether outputs return as a tuple."""

    dtypes: list[torch.dtype]
    shapes: list[tuple[int, ...]]
    outputs: list[tuple[tuple[int, ...], tuple[int, ...], torch.dtype]]
    argv: Any
    set_threads: Any | None
    tls: threading.local
    new_array: Callable[[], Any]
    first_out: int
    thread_slot: int
    return_tuple: bool


def _symbolic_forward(
    fn: Any,
    inputs: list[TensorSpec],
    params: list[torch.Tensor],
    outputs: list[TensorSpec],
    return_tuple: bool,
    set_threads: Any | None,
    argv: Any | None,
    output_spec: Any | None,
    bindings: list[SymbolBinding],
    guards: list[str],
) -> Callable[..., Any]:
    """``make_forward`` for specs with symbolic sizes: the ABI is (sizes..., inputs...,
    params..., outputs...); the generated code binds, checks and allocates as the module doc says."""
    from irc.dialects.symbolic import format_dim

    n_sizes, n_inputs = len(bindings), len(inputs)
    n_args = n_sizes + n_inputs + len(params) + len(outputs)
    fn.argtypes = [ctypes.c_void_p] * n_args
    fn.restype = None
    if argv is None:
        argv = _unpacking(fn, n_args)
    else:
        argv.argtypes = None
        argv.restype = None
    if set_threads is None:
        set_threads = _ignore
    else:
        set_threads.argtypes = [ctypes.c_int]
        set_threads.restype = None
    first_param = n_sizes + n_inputs
    tls, new_array = _per_thread_arrays(n_args, {first_param + i: p.data_ptr() for i, p in enumerate(params)}, 0)
    env: dict[str, Any] = {
        "__builtins__": __builtins__, "Tensor": torch.Tensor, "check_symbolic": check_symbolic,
        "specs": inputs, "bindings": bindings, "guards": guards, "params": params, "tls": tls, "new_array": new_array,
        "empty": torch.empty, "getenv": _getenv, "key": _THREADS_KEY,
        "torch_threads": torch.get_num_threads, "thread_count": _thread_count, "set_threads": set_threads,
        "argv": argv, "spec": output_spec,
    }
    env.update({f"d{i}": s.dtype for i, s in enumerate(inputs)})
    env.update({f"od{i}": s.dtype for i, s in enumerate(outputs)})
    xs = [f"x{i}" for i in range(n_inputs)]
    fail = "        check_symbolic(args, specs, bindings, guards=guards)  # raises the message"
    lines = [
        "def forward(*args):",
        "    try:",
        f"        {', '.join(xs)}, = args",
        "    except ValueError:",
        f"        {' = '.join(xs)} = None",
        "    try:",
        "        c = tls.a",
        "    except AttributeError:",
        "        c = new_array()",
    ]
    for i, (x, s) in enumerate(zip(xs, inputs)):
        lines += [
            f"    if not (isinstance({x}, Tensor) and {x}.is_cpu and {x}.dtype is d{i} and {x}.dim() == {len(s.shape)}):",
            fail,
        ]
    lines += [f"    {b.name} = x{b.input}.shape[{b.dim}]" for b in bindings]
    checks = [
        f"x{i}.shape[{d}] == {format_dim(size)}"
        for i, s in enumerate(inputs) for d, size in enumerate(s.shape)
        if not any(b.input == i and b.dim == d for b in bindings)
    ]
    checks += [f"{b.name} >= {b.min}" for b in bindings if b.min > 0]
    checks += [f"{b.name} <= {b.max}" for b in bindings if b.max is not None]
    checks += [f"({g})" for g in guards]
    if checks:
        lines += [f"    if not ({' and '.join(checks)}):", fail]
    lines += [f"    c[{k}] = {b.name}" for k, b in enumerate(bindings)]
    for i, x in enumerate(xs):
        lines += [
            f"    if not {x}.is_contiguous() or {x}.is_neg():",
            f"        {x} = {x}.resolve_neg().contiguous()",
            f"    c[{n_sizes + i}] = {x}.data_ptr()",
        ]
    outs = [f"o{i}" for i in range(len(outputs))]
    first_out = first_param + len(params)
    for i, (o, s) in enumerate(zip(outs, outputs)):
        shape = ", ".join(format_dim(d) for d in s.shape) + ("," if len(s.shape) == 1 else "")
        lines += [f"    {o} = empty(({shape}), dtype=od{i})", f"    c[{first_out + i}] = {o}.data_ptr()"]
    lines += _call_and_return(n_args, outs, output_spec is not None, return_tuple)
    return _define(lines, env)


def _call_and_return(n_args: int, outs: Sequence[str], structured: bool, return_tuple: bool) -> list[str]:
    """The generated forward's tail: set this thread's OpenMP count when it changed (slot
    `n_args` of the per-thread array `c` remembers what it last set), make the one native call
    through `argv(c)`, and return the outputs as the model does."""
    lines = [
        "    v = getenv(key)",
        "    n = torch_threads() if v is None else thread_count(v)",
        f"    if n != c[{n_args}]:  # what this thread last set",
        "        set_threads(n)",
        f"        c[{n_args}] = n",
        "    argv(c)",
    ]
    if structured:
        lines.append(f"    return spec.unflatten([{', '.join(outs)}])")
    else:
        lines.append(f"    return ({', '.join(outs)},)" if return_tuple else f"    return {outs[0]}")
    return lines


def _define(lines: list[str], env: dict[str, Any]) -> Callable[..., Any]:
    """Execute the generated ``forward`` source in ``env``; keep its text for tracebacks."""
    source = "\n".join(lines) + "\n"
    filename = f"<irc-forward-{next(_counter)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), env)
    forward = env["forward"]
    forward.__irc_source__ = source
    return forward

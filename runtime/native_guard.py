"""The weight guard's per-call check in C++ (`guard.cpp`): a fast "nothing changed".

A compiled module checks, at every call, each tensor it reads from its model (irc/weights.py):
still the object in its owner's dict, the same storage, the same version where it was copied or
folded. In Python that is a dependent chain of cache misses per tensor, paid in full when other
work ran between calls, as in `irc bench` (each contender's call after the others'): MobileNet-v2's
152 tensors cost about 100 us a call, DenseNet's 115 about 90. `guard.cpp` reads the same state
from torch's C++ objects (`c10/core/TensorImpl.h`, the header C++ extensions use), one tensor's
loads independent of the next's.

It answers only "unchanged" or "maybe changed": on "maybe", callers run their exact Python
checks, so what counts as a change is the Python guard's alone. It is built once per torch
version and compiler into irc's build cache: about 1.4 s of g++, in the background from the
start of a compile (`prepare`), so a compile does not wait for it; calls made before it is
loaded run the Python checks, and the first call after takes it up. It is used only if
- it builds and loads (else the Python checks, one DEBUG log line);
- each tensor's Python object keeps its TensorImpl where this torch does (`_cdata` is checked
  for every tensor watched, `THPVARIABLE_IMPL` bytes in: torch >= 2.5 holds an `at::Tensor`
  right after the object header; an older torch's `MaybeOwned` fails the check);
- `IRC_NATIVE_GUARD` is not `0`.

The same library makes a compiled module's whole call in one C call (`fast_call`, guard.cpp's
irc_fast_call): the checks above, the generated wrapper's input checks, output allocation and
thread count, and the native code, for the version called last on the thread that made it. In
Python those are a few frames and three ctypes calls around the native code (the cnn, a null
kernel in place of its own: 6.6 us a call, 1.7 so). It gives way to the Python path, having done
nothing, wherever that path might do anything else (see `fast_call`).
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
import sysconfig
import threading
from collections.abc import Sequence
from pathlib import Path

import torch

log = logging.getLogger("irc")

THPVARIABLE_IMPL = 16
"""Where a torch.Tensor's Python object keeps its TensorImpl*: after the object header
(reference count and type: 16 bytes on a 64-bit CPython without debug tracing)."""

VARIABLE = "IRC_NATIVE_GUARD"


class _Watch(ctypes.Structure):
    _fields_ = [
        ("table", ctypes.c_void_p), ("key", ctypes.c_void_p), ("tensor", ctypes.c_void_p), ("object", ctypes.c_int64),
        ("impl", ctypes.c_void_p), ("storage", ctypes.c_void_p), ("data", ctypes.c_void_p),
        ("offset", ctypes.c_int64), ("version", ctypes.c_int64),
    ]


_lock = threading.Lock()
_library: list = []  # [lib or None], once tried
_thread: list[threading.Thread] = []  # the background build `prepare` started


def _flags() -> list[str]:
    from irc.runtime.build import DEFAULT_CXXFLAGS

    root = Path(torch.__file__).parent
    return [
        *(f for f in DEFAULT_CXXFLAGS if f != "-fopenmp"), "-w",
        f"-D_GLIBCXX_USE_CXX11_ABI={int(torch.compiled_with_cxx11_abi())}",
        f"-I{sysconfig.get_paths()['include']}", f"-I{root / 'include'}",
        # the torch library the process has loaded (c10's out-of-line error paths)
        "-Wl,--no-as-needed", f"-L{root / 'lib'}", "-lc10", f"-Wl,-rpath,{root / 'lib'}",
    ]


def prepare() -> None:
    """Build and load the library in the background, if not done or under way: a compile calls
    this first, so the one g++ run (about 1.4 s, once per build cache) overlaps its tracing,
    lowering and build rather than adding to them."""
    if os.environ.get(VARIABLE, "1") == "0":
        return
    with _lock:
        if _library or _thread:
            return
        thread = threading.Thread(target=_settle, name="irc-native-guard", daemon=True)
        _thread.append(thread)
    thread.start()


def _settle() -> None:
    lib = _load()
    with _lock:
        if not _library:
            _library.append(lib)


def pending() -> bool:
    """Is `prepare`'s background build still running?"""
    return bool(_thread) and _thread[0].is_alive()


def library(wait: bool = True):
    """The loaded `guard.cpp` (ctypes.PyDLL), or None when it is off or unavailable, or (unless
    `wait`) while `prepare`'s build is under way."""
    if os.environ.get(VARIABLE, "1") == "0":
        return None
    if _thread:
        if not wait and _thread[0].is_alive():
            return None
        _thread[0].join()
    with _lock:
        if not _library:
            _library.append(_load())
        return _library[0]


def _load():
    from irc.runtime.build import build_library, check_library

    source = (Path(__file__).with_name("guard.cpp").read_text()
              + f"// built for torch {torch.__version__}, Python {sys.version.split()[0]}\n")
    try:
        path = build_library(source, flags=_flags(), counted=False)
        check_library(path)
        lib = ctypes.PyDLL(str(path))
    except Exception as e:  # noqa: BLE001 - any failure: the Python checks, which are exact
        log.debug("irc: the native weight guard is unavailable (%s); the Python checks run instead", e)
        return None
    lib.irc_guard_impl.argtypes = [ctypes.py_object, ctypes.c_int64]
    lib.irc_guard_impl.restype = ctypes.c_void_p
    lib.irc_scalar_type.argtypes = [ctypes.py_object, ctypes.c_int64]
    lib.irc_scalar_type.restype = ctypes.c_int64
    lib.irc_thread_id.argtypes = []
    lib.irc_thread_id.restype = ctypes.c_uint64
    lib.irc_fast_function.argtypes = [ctypes.py_object]
    lib.irc_fast_function.restype = ctypes.py_object
    for name in ("irc_guard_record", "irc_guard_changed"):
        fn = getattr(lib, name)
        fn.argtypes = None  # called with prepared ctypes arguments: the cheapest conversion
        fn.restype = ctypes.c_int
    return lib


class NativeCheck:
    """`changed()`: False only if every tensor is as when recorded: the same object at `tables[i]
    [keys[i]]` (where a table is given), the same TensorImpl, storage, data pointer and offset, and
    (where `versions[i]`) the same version counter value; and every object of `objects` (`(value,
    table, key)`) is still `table[key]`. True means "maybe": run the exact check."""

    def __init__(self, lib, tensors: Sequence[torch.Tensor], tables: Sequence[dict | None],
                 keys: Sequence[str | None], versions: Sequence[bool], objects: Sequence[tuple] = ()):
        self._keep = (list(tensors), list(tables), list(keys), list(objects))  # every address below stays valid
        n = len(tensors) + len(objects)
        self._entries = (_Watch * n)()
        rows = [(t, table, key, watched, 0) for t, table, key, watched in zip(tensors, tables, keys, versions, strict=True)]
        rows += [(value, table, key, False, 1) for value, table, key in objects]
        for e, (value, table, key, watched, is_object) in zip(self._entries, rows):
            e.table = id(table) if table is not None else None
            e.key = id(key) if table is not None else None
            e.tensor = id(value)
            e.object = is_object
            e.version = 0 if watched else -1
        self._args = (self._entries, ctypes.c_int64(n), ctypes.c_int64(THPVARIABLE_IMPL))
        self._changed = lib.irc_guard_changed
        self._record = lib.irc_guard_record
        if self._record(*self._args) != 0:
            raise ValueError("a tensor's state cannot be read natively")

    def changed(self) -> bool:
        return self._changed(*self._args) != 0

    @property
    def entries(self) -> tuple[int, int]:
        """The address of its entries (read in place by `fast_call`'s function) and their count."""
        return ctypes.addressof(self._entries), self._args[1].value

    def record(self) -> bool:
        """Read the tensors' state again as the reference; False if one cannot be read."""
        return self._record(*self._args) == 0


def native_check(tensors: Sequence[torch.Tensor], tables: Sequence[dict | None] | None = None,
                 keys: Sequence[str | None] | None = None, versions: Sequence[bool] | None = None,
                 objects: Sequence[tuple] = (), wait: bool = True) -> NativeCheck | None:
    """A `NativeCheck` over `tensors` and `objects`, or None: no library (or, unless `wait`, not
    yet: `pending()`), a table that is not a dict, an object not now in its table, or a tensor this
    torch's layout check refuses (its `_cdata` is not where `THPVARIABLE_IMPL` says) or whose
    state it cannot read."""
    lib = library(wait)
    if lib is None or not (tensors or objects):
        return None
    n = len(tensors)
    tables = list(tables) if tables is not None else [None] * n
    keys = list(keys) if keys is not None else [None] * n
    versions = list(versions) if versions is not None else [False] * n
    for t, table in zip(tensors, tables):
        if not isinstance(t, torch.Tensor) or (table is not None and type(table) is not dict):
            return None
        if lib.irc_guard_impl(t, THPVARIABLE_IMPL) != t._cdata:
            return None
    for value, table, key in objects:
        if type(table) is not dict or type(key) is not str or table.get(key, _NOT_THERE) is not value:
            return None
    try:
        return NativeCheck(lib, tensors, tables, keys, versions, objects)
    except ValueError:
        return None


_NOT_THERE = object()


class _Fast(ctypes.Structure):  # guard.cpp's irc_fast
    _fields_ = [
        ("tensor_type", ctypes.c_void_p), ("parameter_type", ctypes.c_void_p), ("n_inputs", ctypes.c_int64),
        ("dims", ctypes.c_void_p), ("sizes", ctypes.c_void_p), ("dtypes", ctypes.c_void_p),
        ("n_outputs", ctypes.c_int64), ("outputs", ctypes.c_void_p), ("empty_strided", ctypes.c_void_p),
        ("argv", ctypes.c_void_p), ("first_out", ctypes.c_int64), ("thread_slot", ctypes.c_int64),
        ("owner", ctypes.c_uint64), ("kernel", ctypes.c_void_p), ("set_threads", ctypes.c_void_p),
        ("torch_threads", ctypes.c_void_p), ("autocast", ctypes.c_void_p), ("thread_count", ctypes.c_void_p),
        ("env", ctypes.c_char_p), ("guard", ctypes.c_void_p), ("n_guard", ctypes.c_int64),
        ("plan", ctypes.c_void_p), ("n_plan", ctypes.c_int64), ("registrations", ctypes.c_void_p),
        ("modules", ctypes.c_void_p), ("handle_type", ctypes.c_void_p), ("hooks", ctypes.c_void_p),
        ("values", ctypes.c_void_p), ("n_values", ctypes.c_int64),
        ("epoch", ctypes.c_void_p), ("next_id", ctypes.c_void_p), ("at", ctypes.c_int64),
        ("return_tuple", ctypes.c_int64),
    ]


MAX_FAST_INPUTS, MAX_FAST_OUTPUTS = 64, 8  # guard.cpp IRC_FAST_*


def fast_call(spec, guard: NativeCheck, plan: NativeCheck | None = None, *, registrations: list | None = None,
              modules: object | None = None, handle_type: type | None = None, hooks: object | None = None,
              values: Sequence[tuple[torch.Tensor, torch.Tensor]] = ()):
    """A builtin function making a compiled module's whole call natively (guard.cpp's
    irc_fast_call) on the calling thread, or None where it cannot (no library, more inputs or
    outputs than `MAX_FAST_INPUTS`, `MAX_FAST_OUTPUTS`). `spec` is the static forward's
    `runtime.wrapper.CallSpec`; `guard` and `plan` the weight guard's and the fold plan's
    checks, whose "unchanged" it takes; `modules.epoch` is compared with `registrations[0]` and
    `hooks.epoch` with `handle_type.next_id`, as the weight guard does; each pair of `values`
    (uint8, contiguous, of one length) must hold the same bytes.

    Called with the module's inputs, it returns the outputs, or None having done nothing, for
    the Python path to take the call: an input not a plain contiguous CPU tensor (torch.Tensor
    or nn.Parameter) of the compiled dtype and shape, another thread, grad mode or autocast on,
    a check answering "maybe", any error."""
    from irc.runtime import wrapper

    lib = library(wait=False)
    if lib is None or not 0 < len(spec.outputs) <= MAX_FAST_OUTPUTS or len(spec.shapes) > MAX_FAST_INPUTS:
        return None
    if (modules is None) != (registrations is None) or (hooks is None) != (handle_type is None):
        return None
    if registrations is not None and not (type(registrations) is list and registrations):
        return None
    for pair in values:
        if any(type(t) is not torch.Tensor or t.dtype != torch.uint8 or not t.is_contiguous() or t.is_inference()
               for t in pair) or pair[0].numel() != pair[1].numel():
            return None
    codes = {d: lib.irc_scalar_type(torch.empty(0, dtype=d), THPVARIABLE_IMPL) for d in set(spec.dtypes)}
    try:
        array = spec.tls.a
    except AttributeError:
        array = spec.new_array()
    dims = (ctypes.c_int64 * max(1, len(spec.shapes)))(*[len(s) for s in spec.shapes])
    flat = [d for s in spec.shapes for d in s]
    sizes = (ctypes.c_int64 * max(1, len(flat)))(*flat)
    dtypes = (ctypes.c_int64 * max(1, len(spec.dtypes)))(*[codes[d] for d in spec.dtypes])
    out_objects = [x for shape, strides, dtype in spec.outputs for x in (tuple(shape), tuple(strides), dtype)]
    outputs = (ctypes.c_void_p * len(out_objects))(*map(id, out_objects))
    epoch, next_id = sys.intern("epoch"), sys.intern("next_id")
    env = wrapper.THREADS_VARIABLE.encode()
    objects = [torch.Tensor, torch.nn.Parameter, wrapper._empty_strided, torch.get_num_threads,
               wrapper.autocast_enabled, wrapper._thread_count, registrations, modules, handle_type, hooks, epoch, next_id]
    f = _Fast()
    f.tensor_type, f.parameter_type = id(torch.Tensor), id(torch.nn.Parameter)
    f.n_inputs, f.dims, f.sizes, f.dtypes = len(spec.shapes), ctypes.addressof(dims), ctypes.addressof(sizes), \
        ctypes.addressof(dtypes)
    f.n_outputs, f.outputs, f.empty_strided = len(spec.outputs), ctypes.addressof(outputs), id(wrapper._empty_strided)
    f.argv, f.first_out, f.thread_slot = ctypes.addressof(array), spec.first_out, spec.thread_slot
    f.owner = lib.irc_thread_id()
    f.kernel = ctypes.cast(spec.argv, ctypes.c_void_p).value
    f.set_threads = ctypes.cast(spec.set_threads, ctypes.c_void_p).value if spec.set_threads is not None else None
    f.torch_threads, f.autocast = id(torch.get_num_threads), id(wrapper.autocast_enabled)
    f.thread_count, f.env = id(wrapper._thread_count), env
    f.guard, f.n_guard = guard.entries
    f.plan, f.n_plan = plan.entries if plan is not None else (None, 0)
    f.registrations, f.modules = (id(registrations), id(modules)) if modules is not None else (None, None)
    f.handle_type, f.hooks = (id(handle_type), id(hooks)) if hooks is not None else (None, None)
    value_objects = [t for pair in values for t in pair]
    value_ids = (ctypes.c_void_p * max(1, len(value_objects)))(*map(id, value_objects))
    f.values, f.n_values = ctypes.addressof(value_ids), len(values)
    f.epoch, f.next_id, f.at = id(epoch), id(next_id), THPVARIABLE_IMPL
    f.return_tuple = int(spec.return_tuple)
    # everything f points at, kept alive as long as the function (its `self`)
    keep = (f, dims, sizes, dtypes, out_objects, outputs, env, array, getattr(spec.tls, "arena", None), spec.argv,
            spec.set_threads, guard, plan, objects, value_objects, value_ids)
    return lib.irc_fast_function((ctypes.addressof(f), keep))

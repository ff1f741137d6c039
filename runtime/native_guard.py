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

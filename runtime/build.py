"""Compile generated C++ into a shared library, through a content-addressed on-disk cache.

The cache key is a sha256 over the source, the full compiler command line (with placeholder
paths), the compiler's version line, the CPU's feature flags (libraries are built with
``-march=native``) and irc's version, so a change to any of them builds a new library.
Entries live at ``<cache dir>/<key[:2]>/<key>.so`` with the source next to them as
``<key>.cpp`` and the library's own sha256 as ``<key>.sha256``. Every file is written under a
unique temporary name in its final directory and then moved into place with ``os.replace``
(the checksum last), so concurrent builds of the same source (threads or processes), or a build
interrupted at any point, never expose a half-written entry. A library whose checksum is
missing or does not match (truncated, corrupted) is rebuilt.

irc loads native code from the cache, so it refuses a cache directory that another user owns
or that group or others can write to (they could plant a library).

Environment:
  ``IRC_CXX``        compiler to use (default ``g++``)
  ``IRC_CXXFLAGS``   flags, shell-split; replaces the defaults (:func:`default_flags`) entirely
  ``IRC_CACHE_DIR``  cache directory (default ``$XDG_CACHE_HOME/irc`` or ``~/.cache/irc``)
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from irc.errors import CompileError, IrcError

__all__ = [
    "DEFAULT_CXXFLAGS",
    "build_library",
    "cache_dir",
    "check_library",
    "cache_problem",
    "compiler_invocations",
    "default_flags",
    "libraries_loaded",
    "load_library",
]

DEFAULT_CXXFLAGS: tuple[str, ...] = (
    "-O3",
    "-march=native",
    # errno is never read: without this every sqrtf may call libm to set it for a negative input,
    # a "memory clobber" that keeps the loop around it scalar (a batch norm not folded into a conv
    # computes sqrt per element: 8x slower). The values are unchanged: sqrt(x < 0) is NaN either way.
    # (`#pragma GCC optimize("no-math-errno")` in the source does not reach the builtins.)
    "-fno-math-errno",
    "-fopenmp",
    "-std=c++17",
    "-shared",
    "-fPIC",
)

PARALLEL_LTO_FLAGS: tuple[str, ...] = ("-flto=auto", "--param=lto-min-partition=3000")
"""Added to DEFAULT_CXXFLAGS when the compiler is GCC and `make` is on PATH (GCC runs its parallel
link-time jobs through make; without it they run one after another): GCC then optimizes and
generates code for the unit's functions in partitions, as many at a time as there are CPUs. A
model's unit is one file whose time is mostly the engine's templates instantiated per kernel, so
on two cores (AMD EPYC Zen 4, g++ 12, one build at a time) ResNet-18's unit builds in 4.3 s
instead of 7.8, MobileNet-v2's in 3.4 instead of 5.5, the small CNN's in 1.6 instead of 2.2; a
unit too small to split costs about 0.05 s more (a two-layer MLP 0.53 against 0.48 s). Partitions
of at least 3000 instructions (GCC's default 10000 left the small CNN's unit in one): ResNet-18
4.7 s at 10000, 4.1 at 3000, 4.3 at 1000. Run times measured the same within 3% (eight models,
one thread, in one process)."""

AVX512_TUNING_FLAGS: tuple[str, ...] = ("-mtune=icelake-server", "-mprefer-vector-width=512")
"""Added to DEFAULT_CXXFLAGS when the compiler is GCC, the CPU has AVX-512 and GCC's
`-march=native` tunes for a CPU without it (`native_tuning`): GCC 12 knows no Zen 4 or Zen 5 and
tunes for a Zen 3, whose cost model folds a load into every instruction that uses it. A depthwise
conv's column loop, where each loaded vector feeds up to three FMAs, then loaded it three times,
two of them across a cache line: MobileNet-v2's 3x3 on 1x144x28x28, one thread, Zen 4, 42.5 ->
28.7 us. Tuned as an AVX-512 CPU GCC knows, with its vector code at 512 bits (Intel's tunings
prefer 256 for loops GCC vectorizes itself): the native call alone, one thread, alternating in
one process (Zen 4), MobileNet-v2 870 -> 832 us, ConvNeXt 3.00 -> 2.91 ms, ResNet-18 36.1 ->
34.2 ms, cnn 61.1 -> 58.6 us, DenseNet level; two threads MobileNet-v2 526 -> 513 us, ResNet-18
17.5 -> 17.0 ms. (The Intel tunings alone, at 256 bits, ran ResNet-18 at 41.8 ms.)"""

AVX512_TUNES = frozenset({
    "knl", "knm", "skylake-avx512", "cannonlake", "icelake-client", "icelake-server", "cascadelake",
    "cooperlake", "tigerlake", "rocketlake", "sapphirerapids", "emeraldrapids", "graniterapids",
    "graniterapids-d", "diamondrapids", "znver4", "znver5",
})
"""GCC's tunings (`-mtune=`) for CPUs with AVX-512."""

_LTO_FAILURES = ("lto-wrapper", "lto1:", "LTO support", "-flto")
"""What GCC's output names when its link-time step fails (not any "lto" inside an identifier)."""

# Stand-ins for the real paths when hashing the command line.
_SRC_PLACEHOLDER = "<source.cpp>"
_OUT_PLACEHOLDER = "<output.so>"

_lock = threading.Lock()
_invocations = 0  # compiler runs (not counting `--version` probes)
_outputs: dict[tuple[str, tuple[str, ...]], str] = {}  # (resolved compiler path, its arguments) -> output
_loaded: dict[str, ctypes.CDLL] = {}  # resolved library path -> loaded library
_cpu_flags: str | None = None
_cpu0: dict[str, str] | None = None


def compiler_invocations() -> int:
    """How many times this process has run the compiler to build a library (cache misses)."""
    return _invocations


def libraries_loaded() -> int:
    """How many distinct libraries (resolved paths) this process has loaded with `load_library`.

    A library taken from the build cache counts as well as one just built, so with a fresh
    `IRC_CACHE_DIR` the difference across a compile is the number of native libraries it needs
    (two partitions whose C++ is identical share one library, and count once)."""
    return len(_loaded)


def cache_dir() -> Path:
    """``$IRC_CACHE_DIR``, else ``$XDG_CACHE_HOME/irc``, else ``~/.cache/irc``."""
    if env := os.environ.get("IRC_CACHE_DIR"):
        return Path(env).expanduser()
    if xdg := os.environ.get("XDG_CACHE_HOME"):
        return Path(xdg).expanduser() / "irc"
    return Path.home() / ".cache" / "irc"


def _cache_errors(build):
    """Turn a cache directory irc cannot use (a file, read-only, not writable, full) into an
    `IrcError` naming it and the way out, instead of a raw OSError from deep inside a build."""

    @functools.wraps(build)
    def wrapper(*args, **kwargs):
        try:
            return build(*args, **kwargs)
        except OSError as e:
            root = cache_dir()
            raise IrcError(
                f"cannot use the irc build cache {root}: {cache_problem(root, e)}; set IRC_CACHE_DIR "
                "to a writable directory of your own"
            ) from None

    return wrapper


def cache_problem(root: Path, error: OSError) -> str:
    """What is wrong with the cache directory `root`, given the error using it raised."""
    if root.exists() and not root.is_dir():
        return "it is a file, not a directory"
    where = f" ({error.filename})" if error.filename and str(error.filename) != str(root) else ""
    return f"{error.strerror or error}{where}"


@_cache_errors
def build_library(
    source: str, *, flags: Sequence[str] | None = None, cxx: str | None = None, counted: bool = True
) -> Path:
    """Compile C++ ``source`` into a shared library and return its path.

    The compiler is ``cxx``, else ``$IRC_CXX``, else ``g++``; the flags are ``flags``, else
    ``$IRC_CXXFLAGS`` (shell-split), else :func:`default_flags`. A cached library for the
    same source, command line and compiler version is returned without running the compiler.

    Raises :class:`~irc.errors.CompileError` when the compiler is missing or fails; the
    source is kept at ``error.source_path`` (``<key>.cpp`` in the cache) and
    ``error.command`` is the exact command that was run. ``counted=False``: the run does not
    count in :func:`compiler_invocations` (irc's own runtime helper, not a model's code).
    """
    cxx = cxx or os.environ.get("IRC_CXX") or "g++"
    flags = list(resolve_flags(flags, cxx))
    version = compiler_version(cxx)

    command_line = shlex.join(_command(cxx, flags, _SRC_PLACEHOLDER, _OUT_PLACEHOLDER))
    key_material = "\0".join([source, command_line, version, cpu_features(), _irc_version()])
    key = hashlib.sha256(key_material.encode("utf-8")).hexdigest()

    root = cache_dir()
    shard = root / key[:2]
    lib_path = shard / f"{key}.so"
    sum_path = shard / f"{key}.sha256"
    _makedirs(root)  # makedirs applies the mode to the leaf only: create both levels
    _makedirs(shard)
    check_private(root)
    check_private(shard)
    if lib_path.exists() and _intact(lib_path, sum_path):
        return lib_path

    src_path = shard / f"{key}.cpp"
    _write_atomic(src_path, source.encode("utf-8"))

    fd, tmp_name = tempfile.mkstemp(dir=shard, prefix=f".{key}.{os.getpid()}.", suffix=".so")
    os.close(fd)
    tmp_lib = Path(tmp_name)
    command = _command(cxx, flags, str(src_path), str(tmp_lib))
    try:
        if counted:
            _count_invocation()
        returncode, output = _run_compiler(command)
        if returncode == 0:
            digest = _sha256(tmp_lib)
            os.replace(tmp_lib, lib_path)
            _write_atomic(sum_path, digest.encode("ascii"))  # last: marks the entry complete
            return lib_path
    finally:
        tmp_lib.unlink(missing_ok=True)
    # The source stays at src_path, which the (copy-pastable) command refers to.
    raise CompileError(command, output, src_path, _hint(cxx, flags, returncode, output))


def cache_file(key: str, suffix: str) -> Path:
    """`<cache dir>/<key[:2]>/<key><suffix>`: an entry of another kind beside the libraries (the
    pipeline cache, irc/pipeline.py), its directories created and checked as for a library."""
    root = cache_dir()
    shard = root / key[:2]
    _makedirs(root)
    _makedirs(shard)
    check_private(root)
    check_private(shard)
    return shard / f"{key}{suffix}"


def write_cache_file(key: str, suffix: str, data: bytes) -> Path:
    """Write `cache_file(key, suffix)` atomically (a reader sees the old entry or the new one)."""
    path = cache_file(key, suffix)
    _write_atomic(path, data)
    return path


def cpu_info() -> dict[str, str]:
    """The fields of Linux `/proc/cpuinfo` ("flags", "vendor_id", "cpu family", ...; on Arm
    "Features"), each as it first appears: CPU 0's, or a section's before or after the per-CPU
    records where a kernel writes it there (as `cpu_features` always found the flags); empty
    where there is no such file."""
    global _cpu0
    if _cpu0 is None:
        try:
            text = Path("/proc/cpuinfo").read_text()
        except OSError:
            text = ""
        fields: dict[str, str] = {}
        for line in text.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                fields.setdefault(key.strip(), value.strip())
        _cpu0 = fields
    return _cpu0


def cpu_features() -> str:
    """The CPU's feature flags (`cpu_info`), so a cache shared between machines never hands a
    library built with -march=native to a CPU lacking its instructions."""
    global _cpu_flags
    if _cpu_flags is None:
        info = cpu_info()
        _cpu_flags = " ".join(sorted((info.get("flags") or info.get("Features") or "").split()))
    return _cpu_flags


def check_private(directory: Path) -> None:
    """Raise IrcError unless `directory` is owned by this user and writable by nobody else."""
    st = directory.stat()
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise IrcError(
            f"refusing to use the irc cache {directory}: it is owned by uid {st.st_uid}, not by you; "
            "set IRC_CACHE_DIR to a directory of your own"
        )
    if st.st_mode & 0o022:
        raise IrcError(
            f"refusing to load native code from the irc cache {directory}: group or others can write "
            f"to it (mode {st.st_mode & 0o777:o}); run `chmod go-w {directory}` or set IRC_CACHE_DIR "
            "to a private directory"
        )


def _intact(lib_path: Path, sum_path: Path) -> bool:
    """True when the library's checksum file exists and matches (else the entry is rebuilt)."""
    try:
        return sum_path.read_text().strip() == _sha256(lib_path)
    except OSError:
        return False


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _irc_version() -> str:
    from irc import __version__

    return __version__


def load_library(path: str | os.PathLike[str]) -> ctypes.CDLL:
    """Load a shared library with ctypes; each resolved path is loaded once per process.

    The file is checked first (`check_library`), so a damaged library is an IrcError rather
    than a crash; so is a library the dynamic loader refuses."""
    key = str(Path(path).resolve())
    with _lock:
        lib = _loaded.get(key)
        if lib is None:
            check_library(key)
            try:
                lib = ctypes.CDLL(key)
            except OSError as e:
                raise IrcError(f"the dynamic loader refused the library {key}: {e}") from None
            _loaded[key] = lib
        return lib


_ELF_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")  # Elf64_Ehdr, little-endian
_ELF_PHDR = struct.Struct("<IIQQQQQQ")  # Elf64_Phdr
_ELF_MACHINES = {"x86_64": 62, "amd64": 62, "aarch64": 183, "arm64": 183}  # e_machine values


def check_library(path: str | os.PathLike[str]) -> None:
    """Raise IrcError unless `path` is a whole 64-bit little-endian ELF shared library for this
    CPU architecture: every segment and header table it declares lies inside the file. (dlopen
    maps a truncated library without complaint, and the first touch of a page past the end of
    the file kills the process with SIGBUS.) Not checked off Linux."""
    if not sys.platform.startswith("linux"):
        return
    name = str(path)
    try:
        with open(name, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            header = f.read(_ELF_HEADER.size)
            if len(header) < _ELF_HEADER.size or header[:4] != b"\x7fELF":
                raise IrcError(f"{name} is not a shared library (no ELF header); it is damaged or not irc's")
            ident, e_type, machine, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum, _ = _ELF_HEADER.unpack(header)
            if ident[4] != 2 or ident[5] != 1 or e_type != 3:
                raise IrcError(f"{name} is not a 64-bit little-endian ELF shared library")
            expected = _ELF_MACHINES.get(platform.machine().lower())
            if expected is not None and machine != expected:
                raise IrcError(
                    f"{name} was built for another CPU architecture (ELF machine {machine}), not {platform.machine()}"
                )
            if phentsize != _ELF_PHDR.size or phoff + phnum * phentsize > size or shoff + shnum * shentsize > size:
                raise IrcError(
                    f"{name} is truncated or damaged: its ELF header tables lie past the end of the file ({size} bytes)"
                )
            f.seek(phoff)
            table = f.read(phnum * phentsize)
    except OSError as e:
        raise IrcError(f"cannot read the library {name}: {e.strerror or e}") from None
    for i in range(phnum):
        _, _, offset, _, _, filesz, _, _ = _ELF_PHDR.unpack_from(table, i * phentsize)
        if offset + filesz > size:
            raise IrcError(
                f"{name} is truncated: {size} bytes, but a segment it maps ends at byte {offset + filesz}"
            )


def resolve_flags(flags: Sequence[str] | None = None, cxx: str | None = None) -> Sequence[str]:
    """The flags a build uses: `flags`, else $IRC_CXXFLAGS (shell-split), else default_flags(cxx)."""
    if flags is not None:
        if isinstance(flags, str):
            raise TypeError("flags must be a sequence of strings, not one string")
        return flags
    env = os.environ.get("IRC_CXXFLAGS")
    if env is not None:
        return shlex.split(env)
    return default_flags(cxx)


def default_flags(cxx: str | None = None) -> tuple[str, ...]:
    """DEFAULT_CXXFLAGS, plus, when `cxx` (default: $IRC_CXX or g++) is GCC: PARALLEL_LTO_FLAGS
    when `make` is on PATH, and AVX512_TUNING_FLAGS on a CPU with AVX-512 that GCC's native
    tuning names a CPU without it (`native_tuning`)."""
    if not is_gcc(cxx):
        return DEFAULT_CXXFLAGS
    flags = DEFAULT_CXXFLAGS + (PARALLEL_LTO_FLAGS if shutil.which("make") else ())
    if "avx512f" in cpu_features().split() and (tune := native_tuning(cxx)) and tune not in AVX512_TUNES:
        flags += AVX512_TUNING_FLAGS
    return flags


def native_tuning(cxx: str | None = None) -> str:
    """The CPU GCC `cxx` (default: $IRC_CXX or g++) tunes for with `-march=native` (its
    `-Q --help=target` report); "" if it does not say."""
    lines = (line.split() for line in _compiler_text(cxx, "-march=native", "-Q", "--help=target").splitlines())
    return next((words[1] for words in lines if words[:1] == ["-mtune="] and len(words) > 1), "")


def is_gcc(cxx: str | None = None) -> bool:
    """Whether `cxx` (default: $IRC_CXX or g++) is GCC: its `--version` names the Free Software
    Foundation and not clang (whose options differ: no `--param=lto-...`)."""
    text = _compiler_text(cxx)
    return "Free Software Foundation" in text and "clang" not in text.lower()


def _command(cxx: str, flags: Sequence[str], src: str, out: str) -> list[str]:
    return [cxx, *flags, src, "-o", out]


def compiler_version(cxx: str | None = None) -> str:
    """First line of ``cxx --version`` (default: $IRC_CXX or g++), memoized per resolved path.

    A compiler that cannot be run yields "" (not memoized): the build then fails with a
    proper CompileError when the real command is attempted.
    """
    lines = _compiler_text(cxx).splitlines()
    return lines[0].strip() if lines else ""


def _compiler_text(cxx: str | None = None, *args: str) -> str:
    """The whole output of ``cxx ARGS`` (default: $IRC_CXX or g++; ARGS: ``--version``),
    memoized per resolved path and arguments; "" (not memoized) for a compiler that cannot be
    run."""
    cxx = cxx or os.environ.get("IRC_CXX") or "g++"
    resolved, args = shutil.which(cxx) or cxx, args or ("--version",)
    if (cached := _outputs.get((resolved, args))) is not None:
        return cached
    try:
        proc = subprocess.run([resolved, *args], capture_output=True, encoding="utf-8", errors="replace")
    except OSError:
        return ""
    text = proc.stdout or proc.stderr or ""
    _outputs[(resolved, args)] = text
    return text


def _count_invocation() -> None:
    global _invocations
    with _lock:
        _invocations += 1


def _run_compiler(command: list[str]) -> tuple[int | None, str]:
    """Run the compiler; return (exit code, or None if it could not be started; output)."""
    try:
        proc = subprocess.run(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            encoding="utf-8",
            errors="replace",
        )
    except OSError as exc:  # missing binary, not executable, ...
        return None, f"{type(exc).__name__}: {exc}"
    return proc.returncode, proc.stdout or ""


def _hint(cxx: str, flags: Sequence[str], returncode: int | None, output: str) -> str:
    if returncode is None:
        return (
            f"could not run the C++ compiler {cxx!r}; install g++ or set IRC_CXX "
            "to the name or path of a C++17 compiler"
        )
    if "omp.h" in output or "fopenmp" in output or "gomp" in output:
        return (
            "OpenMP seems unavailable: install it (e.g. libgomp, the compiler's OpenMP "
            "package), or set IRC_CXXFLAGS to flags without -fopenmp"
        )
    if "-march=native" in flags and "march" in output:
        return "the compiler rejected -march=native; set IRC_CXXFLAGS without it"
    if "-flto=auto" in flags and any(m in output for m in _LTO_FAILURES):
        return (
            "link-time optimization (irc's default -flto=auto, which builds a model's functions in "
            "parallel) failed; set IRC_CXXFLAGS to the flags without -flto=auto and --param=lto-min-partition"
        )
    return ""


def _makedirs(path: Path) -> None:
    os.makedirs(path, mode=0o700, exist_ok=True)


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a unique temp file in the same dir and ``os.replace``."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

"""Ahead-of-time artifacts: `cm.save(dir)` writes what running a compiled model needs, and
`irc.load(dir)` runs it without recompiling and without importing xDSL or the compiler.

An artifact directory holds every input-shape version the model was compiled for:
  model-<sha>.so  one shared library per version (its entry point, `__argv` and `__signature`
                  twins); named after its content, so a new save never reuses a loaded file's name
  weights.pt      the parameters the entry points take, after compile-time folding (each distinct
                  tensor once, shared by the versions that take it)
  manifest.json   format, irc version, compiler and flags, the CPU features the libraries were built
                  for (-march=native), per version: entry point, library, inputs, outputs and
                  output structure, parameters (indices into weights.pt), scratch arena size; the
                  sha256 of every file; and `content_hash`, the sha256 of all of that.

`save` writes a new directory beside the target and renames it into place (atomically swapping
it with an existing artifact), so a reader sees the old artifact or the new one, never a mix, and
a process still running a library of the old one keeps its (unlinked, still mapped) file.

`load` refuses, with an IrcError saying what is wrong: a missing directory or file, a manifest
that is not JSON, of another format or missing a field, a file whose sha256 differs from the
manifest's (or a manifest whose content hash does not match), a library that is not a whole ELF
shared library for this CPU, one whose embedded signature (the dtype and shape of every buffer
it was built for) disagrees with the manifest or the weights, and a CPU lacking an instruction-set
feature the libraries use. The embedded signature is what makes a call memory-safe: every buffer
passed has the size the library was compiled for, whatever the manifest says.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import io
import json
import logging
import os
import secrets
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.utils._pytree as pytree

from irc.errors import InputError, IrcError
from irc.runtime import TensorSpec, load_library, make_forward
from irc.runtime.build import compiler_version, cpu_features, resolve_flags
from irc.runtime.wrapper import ARGV_SUFFIX, autocast_enabled

FORMAT = 3
DTYPES = {"float32": torch.float32, "int64": torch.int64, "bool": torch.bool}
WEIGHTS, MANIFEST = "weights.pt", "manifest.json"
SIGNATURE_SUFFIX = "__signature"  # `const char* NAME__signature()`, emitted by lowering/cpp/emit_cpp.py
ELEMENT_BYTES = 4  # the arena is float32 (irc-plan-memory)
Shapes = tuple[tuple[int, ...], ...]

# Instruction-set extensions a -march=native build may use (x86 and Arm names from /proc/cpuinfo).
ISA_FEATURES = frozenset(
    "sse sse2 ssse3 sse4_1 sse4_2 sse4a popcnt abm lzcnt movbe aes pclmulqdq avx avx2 fma fma4 f16c "
    "bmi1 bmi2 adx sha_ni vaes vpclmulqdq gfni avx_vnni avx512f avx512dq avx512cd avx512bw avx512vl "
    "avx512ifma avx512vbmi avx512_vbmi2 avx512_vnni avx512_bitalg avx512_vpopcntdq avx512_bf16 "
    "avx512_fp16 amx_tile amx_int8 amx_bf16 asimd asimdhp asimddp sve sve2 fphp".split()
)

# What load requires of manifest.json: a type, a tuple of alternatives, [item], or {field: schema}.
_SHAPE = [int]
_VERSION = {
    "entry_point": str,
    "library": str,
    "inputs": [{"name": str, "shape": _SHAPE, "dtype": str}],
    "outputs": [{"shape": _SHAPE, "dtype": str}],
    "return_tuple": bool,
    "output_structure": (str, type(None)),
    "params": [{"name": str, "shape": _SHAPE, "weight": int}],
    "arena_bytes": int,
}
_SCHEMA = {
    "format": int,
    "irc_version": str,
    "compiler": {"version": str, "flags": [str]},
    "cpu_features": [str],
    "versions": [_VERSION],
    "files": {str: str},
    "content_hash": str,
}


@dataclass(frozen=True)
class ArtifactVersion:
    """What `save` needs of one compiled version (see irc/api.py's `CompiledModule.save`)."""

    library_path: Path
    func_name: str
    input_names: Sequence[str]
    input_shapes: Sequence[tuple[int, ...]]
    input_dtypes: Sequence[torch.dtype]
    output_shapes: Sequence[tuple[int, ...]]
    output_dtypes: Sequence[torch.dtype]
    return_tuple: bool
    output_spec: pytree.TreeSpec | None
    params: Sequence[tuple[str, torch.Tensor]]
    arena_bytes: int

    @classmethod
    def of(cls, shapes: Shapes, v: Any) -> ArtifactVersion:
        """What to save of `v`, an `irc.api.Version` for input `shapes`, its folded weights
        brought up to date; IrcError if it is not all native code."""
        if v.graph is None or v.library_path is None:
            raise IrcError(
                f"cannot save: the version for input shapes {_fmt(shapes)} runs {len(v.eager_nodes)} "
                f"node(s) in eager PyTorch ({', '.join(str(n) for n in v.eager_nodes)}), and an artifact "
                "holds native code only. Compile with fallback=False to see why they are unsupported, "
                "or compile a new module for the shapes you want to save"
            )
        if any(not isinstance(d, int) for s in (*v.graph.input_shapes, *v.graph.output_shapes) for d in s):
            raise IrcError(
                f"cannot save: the version for input shapes {_fmt(shapes)} has symbolic sizes, which artifacts "
                "do not hold yet; compile without dynamic_shapes to save per-shape versions"
            )
        plan = getattr(v.forward, "fold_plan", None)
        if plan is not None and plan.stale():  # weights updated in place since the last call
            plan.refold()
        g = v.graph
        return cls(
            library_path=v.library_path, func_name=g.func_name, input_names=g.input_names,
            input_shapes=g.input_shapes, input_dtypes=g.input_dtypes, output_shapes=g.output_shapes,
            output_dtypes=g.output_dtypes,
            return_tuple=g.return_tuple, output_spec=g.output_spec, params=g.params,
            arena_bytes=v.memory.get("arena_bytes", 0),
        )


def save(path: str | Path, versions: Sequence[ArtifactVersion], cxx_flags: Sequence[str] | None) -> Path:
    """Write an artifact directory holding `versions` (see the module docstring); returns its path."""
    from irc import __version__

    out = Path(os.path.realpath(path))
    _check_target(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = _new_dir_beside(out)
    except OSError as e:
        raise IrcError(f"cannot save to {out}: {e.strerror or e} ({e.filename})") from None
    try:
        files: dict[str, str] = {}
        unique: dict[tuple, int] = {}  # (dtype, shape, sha256 of the bytes) -> index in weights.pt
        tensors: list[torch.Tensor] = []
        entries = []
        for v in versions:
            data = Path(v.library_path).read_bytes()
            digest = hashlib.sha256(data).hexdigest()
            library = f"model-{digest[:16]}.so"
            if library not in files:
                _write(tmp / library, data)
                files[library] = digest
            params = []
            for name, t in v.params:
                t = t.detach().contiguous()
                key = (str(t.dtype), tuple(t.shape), hashlib.sha256(t.numpy().tobytes()).hexdigest())
                if key not in unique:
                    unique[key] = len(tensors)
                    tensors.append(t.clone())  # its own storage: torch.save writes no larger base
                params.append({"name": name, "shape": list(t.shape), "weight": unique[key]})
            entries.append({
                "entry_point": v.func_name,
                "library": library,
                "inputs": [
                    {"name": n, "shape": list(s), "dtype": str(d).removeprefix("torch.")}
                    for n, s, d in zip(v.input_names, v.input_shapes, v.input_dtypes)
                ],
                "outputs": [
                    {"shape": list(s), "dtype": _dtype_name(d)} for s, d in zip(v.output_shapes, v.output_dtypes)
                ],
                "return_tuple": v.return_tuple,
                "output_structure": _dump_structure(v.output_spec),
                "params": params,
                "arena_bytes": v.arena_bytes,  # scratch the entry point takes last (irc-plan-memory); 0: none
            })
        buffer = io.BytesIO()
        torch.save(tensors, buffer)
        _write(tmp / WEIGHTS, buffer.getvalue())
        files[WEIGHTS] = hashlib.sha256(buffer.getvalue()).hexdigest()
        flags = list(resolve_flags(cxx_flags))
        manifest = {
            "format": FORMAT,
            "irc_version": __version__,
            "compiler": {"version": compiler_version(), "flags": flags},
            "cpu_features": sorted(set(cpu_features().split()) & ISA_FEATURES) if "-march=native" in flags else [],
            "versions": entries,
            "files": files,
        }
        manifest["content_hash"] = _content_hash(manifest)
        _write(tmp / MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode())
        _fsync(tmp)
        _replace_dir(tmp, out)
    except OSError as e:
        raise IrcError(f"cannot save to {out}: {e.strerror or e} ({e.filename})") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone already unless something failed
    return out


def _check_target(out: Path) -> None:
    """Refuse to replace a file, or a non-empty directory that is not an artifact."""
    if out.is_dir():
        if (out / MANIFEST).is_file() or not any(out.iterdir()):
            return
        raise IrcError(
            f"refusing to save to {out}: it is a non-empty directory that is not an irc artifact "
            f"(no {MANIFEST}), and saving replaces the whole directory; choose a new path"
        )
    if out.exists():
        raise IrcError(f"cannot save to {out}: it is a file; an artifact is a directory, choose another path")


def _new_dir_beside(out: Path) -> Path:
    """A new empty directory next to `out` (same file system, so it can be renamed onto it)."""
    while True:
        tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
        try:
            tmp.mkdir()
            return tmp
        except FileExistsError:
            continue


def _write(path: Path, data: bytes) -> None:
    with open(path, "xb") as f:  # a new file (a new inode): never one a process may have mapped
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _fsync(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_RENAME_EXCHANGE = 2  # renameat2 flag (Linux >= 3.15)
_AT_FDCWD = -100


def _replace_dir(tmp: Path, out: Path) -> None:
    """Move the directory `tmp` to `out`. An existing `out` is swapped atomically where the OS
    can (Linux renameat2), else moved aside first; the old artifact ends up in `tmp`, removed
    by the caller."""
    try:
        os.rename(tmp, out)  # `out` absent or an empty directory
        return
    except OSError as e:
        if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is not None:
        renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        if renameat2(_AT_FDCWD, os.fsencode(tmp), _AT_FDCWD, os.fsencode(out), _RENAME_EXCHANGE) == 0:
            return
    aside = _new_dir_beside(out)  # not atomic: a reader in between finds no artifact (an IrcError)
    os.rename(out, aside / "old")
    os.rename(tmp, out)
    os.rename(aside, tmp)


def _dump_structure(spec: pytree.TreeSpec | None) -> str | None:
    if spec is None:
        return None
    try:
        return pytree.treespec_dumps(spec)
    except Exception as e:  # a container torch's pytree cannot serialize (e.g. a namedtuple)
        raise IrcError(
            f"cannot save this model's output structure {spec}: {e}. Return a tensor, a tuple, "
            "a list or a dict of tensors from the model to save it"
        ) from None


def _content_hash(manifest: dict[str, Any]) -> str:
    """sha256 of the manifest without its `content_hash` (which covers every file's sha256)."""
    body = {k: v for k, v in manifest.items() if k != "content_hash"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class LoadedModule:
    """A model loaded from an artifact: call it like the model. Calls dispatch on the input
    shapes to the version saved for them; other shapes raise InputError naming the saved ones."""

    def __init__(self, path: Path, manifest: dict[str, Any], forwards: dict[Shapes, Callable[..., Any]]):
        self.path = path
        self.manifest = manifest
        self._forwards = forwards
        self._forward = next(iter(forwards.values()))  # the version called last: the fast path
        self._n_inputs = len(manifest["versions"][0]["inputs"])
        self._warned_autocast = False

    @property
    def input_shapes(self) -> list[Shapes]:
        """The input shapes of every saved version, in the order they were compiled."""
        return list(self._forwards)

    def __call__(self, *inputs: torch.Tensor) -> Any:
        if autocast_enabled() and not self._warned_autocast:
            self._warned_autocast = True
            logging.getLogger("irc").warning(
                "irc: the artifact %s is called under torch.autocast; it computes in float32 whatever "
                "autocast says (the model in eager PyTorch would compute in lower precision)", self.path)
        current = self._forward  # another thread may switch it meanwhile
        try:
            return current(*inputs)
        except InputError:
            if len(inputs) != self._n_inputs or not all(isinstance(x, torch.Tensor) for x in inputs):
                raise
            forward = self._forwards.get(tuple(tuple(x.shape) for x in inputs))
            if forward is None:
                if len(self._forwards) == 1:
                    raise
                raise InputError(
                    f"no version in {self.path} takes inputs of shapes {_fmt(tuple(tuple(x.shape) for x in inputs))}; "
                    f"it was saved for {'; '.join(_fmt(s) for s in self._forwards)}"
                ) from None
            if forward is current:
                raise
        self._forward = forward
        return forward(*inputs)

    def __repr__(self) -> str:
        entry = self.manifest["versions"][0]["entry_point"]
        return f"LoadedModule({entry} for {'; '.join(_fmt(s) for s in self._forwards)}, from {self.path})"


def _fmt(shapes: Shapes) -> str:
    return "(" + ", ".join("x".join(map(str, s)) or "scalar" for s in shapes) + ")"


def load(path: str | Path) -> LoadedModule:
    """Load an artifact written by `CompiledModule.save`; no compiler, no xDSL. Every check it
    makes is listed in the module docstring; each failure is an IrcError."""
    root = Path(path)
    manifest = _read_manifest(root)
    missing = sorted(set(manifest["cpu_features"]) - set(cpu_features().split()))
    if missing:
        raise IrcError(
            f"{root} was built for a CPU with {', '.join(missing)}, which this CPU lacks; "
            "recompile the model on this machine (or save it with flags without -march=native)"
        )
    for name in manifest["files"]:
        if name != WEIGHTS:
            _read_checked(root, name, manifest)  # hashed before dlopen reads it (truncated -> IrcError)
    weights = _load_weights(root, manifest)
    forwards = {}
    for k, entry in enumerate(manifest["versions"]):
        shapes = tuple(tuple(i["shape"]) for i in entry["inputs"])
        forwards[shapes] = _load_version(root, k, entry, weights, manifest["files"])
    if not forwards:
        raise IrcError(f"{root}/{MANIFEST} lists no versions; save the model again")
    return LoadedModule(root, manifest, forwards)


def _read_manifest(root: Path) -> dict[str, Any]:
    if not root.is_dir():
        raise IrcError(f"cannot load {root}: {'no such directory' if not root.exists() else 'not a directory'}")
    where = root / MANIFEST
    try:
        text = where.read_text()
    except FileNotFoundError:
        raise IrcError(f"{root} is not an irc artifact: it has no {MANIFEST}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise IrcError(f"cannot read {where}: {e}") from None
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError as e:
        raise IrcError(f"{where} is not valid JSON ({e}); the artifact is damaged: save the model again") from None
    if not isinstance(manifest, dict):
        raise IrcError(f"{where} is not an irc manifest (a JSON object); save the model again")
    if manifest.get("format") != FORMAT:
        raise IrcError(
            f"{root}: artifact format {manifest.get('format')!r} is not {FORMAT}, the one this irc reads; "
            "save the model again with this irc"
        )
    if not isinstance(manifest.get("content_hash"), str):
        raise IrcError(f"{where} has no content_hash; save the model again")
    if manifest["content_hash"] != _content_hash(manifest):
        raise IrcError(
            f"{where} was modified after it was saved (its content hash does not match); "
            "save the model again instead of editing the manifest"
        )
    _check_schema(manifest, _SCHEMA, where, "")
    return manifest


def _check_schema(value: Any, schema: Any, where: Path, at: str) -> None:
    """Raise IrcError naming the first field of `value` that does not fit `schema`."""
    if isinstance(schema, tuple):
        if any(_fits(value, s) for s in schema):
            return
    elif isinstance(schema, list):
        if isinstance(value, list):
            for i, item in enumerate(value):
                _check_schema(item, schema[0], where, f"{at}[{i}]")
            return
    elif isinstance(schema, dict):
        if isinstance(value, dict):
            if len(schema) == 1 and isinstance(next(iter(schema)), type):  # {key type: item schema}
                (item_schema,) = schema.values()
                for k, item in value.items():
                    _check_schema(item, item_schema, where, f"{at}[{k!r}]")
                return
            for key, field_schema in schema.items():
                if key not in value:
                    raise IrcError(f"{where}: {at + '.' if at else ''}{key} is missing; save the model again")
                _check_schema(value[key], field_schema, where, f"{at + '.' if at else ''}{key}")
            return
    elif _fits(value, schema):
        return
    raise IrcError(f"{where}: {at} is {json.dumps(value)[:60]}, not {_describe(schema)}; save the model again")


def _fits(value: Any, t: type) -> bool:
    return isinstance(value, t) and not (isinstance(value, bool) and t is int)


def _describe(schema: Any) -> str:
    if isinstance(schema, tuple):
        return " or ".join(_describe(s) for s in schema)
    if isinstance(schema, list):
        return "a list"
    if isinstance(schema, dict):
        return "an object"
    return {int: "an integer", str: "a string", bool: "true or false", type(None): "null"}[schema]


def _read_checked(root: Path, name: str, manifest: dict[str, Any]) -> bytes:
    """The bytes of file `name`, which must have the sha256 the manifest records."""
    if Path(name).name != name:
        raise IrcError(f"{root}/{MANIFEST} names the file {name!r} outside the artifact; save the model again")
    try:
        data = (root / name).read_bytes()
    except FileNotFoundError:
        raise IrcError(f"{root} is incomplete: {name} is missing; save the model again") from None
    except OSError as e:
        raise IrcError(f"cannot read {root / name}: {e.strerror}") from None
    if hashlib.sha256(data).hexdigest() != manifest["files"][name]:
        raise IrcError(
            f"{root / name} changed after the artifact was saved (its sha256 is not the manifest's): "
            "it is damaged or was replaced; save the model again"
        )
    return data


def _load_weights(root: Path, manifest: dict[str, Any]) -> list[torch.Tensor]:
    if WEIGHTS not in manifest["files"]:
        raise IrcError(f"{root}/{MANIFEST} records no sha256 for {WEIGHTS}; save the model again")
    data = _read_checked(root, WEIGHTS, manifest)
    try:
        weights = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    except Exception as e:
        raise IrcError(f"{root / WEIGHTS} cannot be read by torch.load ({type(e).__name__}: {e}); save the model again") from None
    if not isinstance(weights, list) or not all(isinstance(w, torch.Tensor) for w in weights):
        raise IrcError(f"{root / WEIGHTS} does not hold a list of tensors; save the model again")
    return weights


def _load_version(
    root: Path, k: int, entry: dict[str, Any], weights: list[torch.Tensor], files: dict[str, str]
) -> Callable[..., Any]:
    """One version's forward, after checking the manifest and weights against the library's
    embedded signature."""
    library = entry["library"]
    if library not in files or library == WEIGHTS:
        raise IrcError(f"{root}/{MANIFEST}: version {k}'s library {library!r} has no recorded sha256; save the model again")
    lib = load_library(root / library)  # hashed by `load` already
    name = entry["entry_point"]
    fn, argv, set_threads = (_symbol(lib, s, root / library) for s in (name, name + ARGV_SUFFIX, "irc_set_num_threads"))
    signature = _symbol(lib, name + SIGNATURE_SUFFIX, root / library)
    signature.restype, signature.argtypes = ctypes.c_char_p, []
    try:
        built = [(d, tuple(s)) for d, s in json.loads(signature().decode())["args"]]
    except (ValueError, KeyError, TypeError) as e:
        raise IrcError(f"{root / library}: its embedded signature is unreadable ({e}); save the model again") from None

    params = []
    for p in entry["params"]:
        if not 0 <= p["weight"] < len(weights):
            raise IrcError(
                f"{root}/{MANIFEST}: parameter {p['name']!r} refers to tensor {p['weight']} of {WEIGHTS}, "
                f"which holds {len(weights)}"
            )
        params.append(weights[p["weight"]])
    arena = entry["arena_bytes"]
    claimed = (
        [(f"input {i} ({x['name']!r})", x["dtype"], tuple(x["shape"])) for i, x in enumerate(entry["inputs"])]
        + [(f"parameter {p['name']!r}", _dtype_name(t.dtype), tuple(p["shape"])) for p, t in zip(entry["params"], params)]
        + [(f"output {i}", o["dtype"], tuple(o["shape"])) for i, o in enumerate(entry["outputs"])]
        + ([("the scratch arena", "float32", (arena // ELEMENT_BYTES,))] if arena else [])
    )
    if not entry["return_tuple"] and len(entry["outputs"]) != 1:
        mismatch = f"{len(entry['outputs'])} outputs are not returned as a tuple"
    elif arena % ELEMENT_BYTES:
        mismatch = f"arena_bytes {arena} is not a whole number of float32 elements"
    elif len(claimed) != len(built):
        mismatch = f"the manifest describes {len(claimed)} buffers, the library takes {len(built)}"
    else:
        mismatch = next(
            (f"{label} is {dtype} {list(shape)} in the manifest, the library was built for {b[0]} {list(b[1])}"
             for (label, dtype, shape), b in zip(claimed, built) if (dtype, shape) != b),
            None,
        )
    if mismatch:
        raise IrcError(
            f"{root}/{MANIFEST} (version {k}) does not match the library {library} it names: {mismatch}. "
            "The manifest was edited after saving; save the model again"
        )
    for p, t in zip(entry["params"], params):
        if t.dtype not in DTYPES.values() or tuple(t.shape) != tuple(p["shape"]) or not t.is_contiguous():
            raise IrcError(
                f"{root / WEIGHTS}: tensor {p['weight']} (parameter {p['name']!r}) is {t.dtype} {list(t.shape)}"
                f"{'' if t.is_contiguous() else ' (not contiguous)'}; the library takes a contiguous {_dtype_name(t.dtype)} "
                f"{list(p['shape'])}. Save the model again"
            )
    for what, x in [*(("input", x) for x in entry["inputs"]), *(("output", o) for o in entry["outputs"])]:
        if x["dtype"] not in DTYPES:
            raise IrcError(
                f"{root}/{MANIFEST}: {what} {x.get('name', '')!r} has dtype {x['dtype']!r}; irc takes float32, int64 or bool"
            )
    spec = _load_structure(root, entry, len(entry["outputs"]))
    return make_forward(
        fn,
        inputs=[TensorSpec(x["name"], tuple(x["shape"]), DTYPES[x["dtype"]]) for x in entry["inputs"]],
        params=params,
        outputs=[TensorSpec(f"out{i}", tuple(o["shape"]), DTYPES[o["dtype"]]) for i, o in enumerate(entry["outputs"])],
        return_tuple=entry["return_tuple"],
        set_threads=set_threads,
        scratch_bytes=arena,
        argv=argv,
        output_spec=spec,
    )


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _symbol(lib: ctypes.CDLL, name: str, library: Path) -> Any:
    try:
        return getattr(lib, name)
    except AttributeError:
        raise IrcError(
            f"{library} has no function {name}: it is not the library this manifest describes, or it "
            "was built by an older irc; save the model again"
        ) from None


def _load_structure(root: Path, entry: dict[str, Any], n_outputs: int) -> pytree.TreeSpec | None:
    text = entry["output_structure"]
    if text is None:
        return None
    try:
        spec = pytree.treespec_loads(text)
    except Exception as e:
        raise IrcError(f"{root}/{MANIFEST}: the output structure cannot be read ({type(e).__name__}: {e})") from None
    if spec.num_leaves != n_outputs:
        raise IrcError(f"{root}/{MANIFEST}: the output structure holds {spec.num_leaves} tensors, the outputs are {n_outputs}")
    return spec

"""Ahead-of-time artifacts: `cm.save(dir)` writes what running a compiled model needs, and
`irc.load(dir)` runs it without recompiling and without importing xDSL or the compiler.

An artifact directory holds:
  model.so       the shared library (one `extern "C"` entry point)
  weights.pt     the parameters the entry point takes, after compile-time folding
  manifest.json  irc version, entry point, input and output signature, scratch arena size, compiler
                 and flags, and the CPU features the library was built for (built with -march=native)

Loading checks that this CPU has every instruction-set feature the library was built for, and
raises a clear error naming the missing ones instead of crashing with an illegal instruction.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from irc.errors import IrcError
from irc.runtime import TensorSpec, load_library, make_forward
from irc.runtime.wrapper import PACKED_SUFFIX
from irc.runtime.build import compiler_version, cpu_features, resolve_flags

FORMAT = 1
DTYPES = {"float32": torch.float32, "int64": torch.int64}
LIBRARY, WEIGHTS, MANIFEST = "model.so", "weights.pt", "manifest.json"

# Instruction-set extensions a -march=native build may use (x86 and Arm names from /proc/cpuinfo).
ISA_FEATURES = frozenset(
    "sse sse2 ssse3 sse4_1 sse4_2 sse4a popcnt abm lzcnt movbe aes pclmulqdq avx avx2 fma fma4 f16c "
    "bmi1 bmi2 adx sha_ni vaes vpclmulqdq gfni avx_vnni avx512f avx512dq avx512cd avx512bw avx512vl "
    "avx512ifma avx512vbmi avx512_vbmi2 avx512_vnni avx512_bitalg avx512_vpopcntdq avx512_bf16 "
    "avx512_fp16 amx_tile amx_int8 amx_bf16 asimd asimdhp asimddp sve sve2 fphp".split()
)


def save(
    path: str | Path,
    *,
    library_path: Path,
    func_name: str,
    input_names: Sequence[str],
    input_shapes: Sequence[tuple[int, ...]],
    input_dtypes: Sequence[torch.dtype],
    output_shapes: Sequence[tuple[int, ...]],
    return_tuple: bool,
    params: Sequence[tuple[str, torch.Tensor]],
    cxx_flags: Sequence[str] | None,
    arena_bytes: int = 0,
) -> Path:
    """Write an artifact directory (see the module docstring); returns its path."""
    from irc import __version__

    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(library_path, out / LIBRARY)
    torch.save([t.detach().contiguous() for _, t in params], out / WEIGHTS)
    flags = list(resolve_flags(cxx_flags))
    manifest = {
        "format": FORMAT,
        "irc_version": __version__,
        "entry_point": func_name,
        "inputs": [
            {"name": n, "shape": list(s), "dtype": str(d).removeprefix("torch.")}
            for n, s, d in zip(input_names, input_shapes, input_dtypes)
        ],
        "outputs": [{"shape": list(s), "dtype": "float32"} for s in output_shapes],
        "return_tuple": return_tuple,
        "params": [{"name": n, "shape": list(t.shape)} for n, t in params],
        "arena_bytes": arena_bytes,  # scratch the entry point takes last (irc-plan-memory); 0: none
        "compiler": {"version": compiler_version(), "flags": flags},
        "cpu_features": sorted(set(cpu_features().split()) & ISA_FEATURES) if "-march=native" in flags else [],
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return out


@dataclass
class LoadedModule:
    """A model loaded from an artifact: call it like the model."""

    path: Path
    manifest: dict[str, Any]
    _forward: Callable[..., Any]

    def __call__(self, *inputs: torch.Tensor) -> Any:
        return self._forward(*inputs)

    def __repr__(self) -> str:
        shapes = ", ".join("x".join(map(str, i["shape"])) for i in self.manifest["inputs"])
        return f"LoadedModule({self.manifest['entry_point']}({shapes}), from {self.path})"


def load(path: str | Path) -> LoadedModule:
    """Load an artifact written by `CompiledModule.save`; no compiler, no xDSL."""
    root = Path(path)
    try:
        manifest = json.loads((root / MANIFEST).read_text())
    except FileNotFoundError:
        raise IrcError(f"{root} is not an irc artifact: it has no {MANIFEST}") from None
    if manifest.get("format") != FORMAT:
        raise IrcError(f"{root}: artifact format {manifest.get('format')} is not {FORMAT}; re-save it with this irc")
    missing = sorted(set(manifest["cpu_features"]) - set(cpu_features().split()))
    if missing:
        raise IrcError(
            f"{root} was built for a CPU with {', '.join(missing)}, which this CPU lacks; "
            "recompile the model on this machine (or save it with flags without -march=native)"
        )
    lib = load_library(root / LIBRARY)
    weights = torch.load(root / WEIGHTS, weights_only=True)
    expected = [tuple(p["shape"]) for p in manifest["params"]]
    if [tuple(w.shape) for w in weights] != expected:
        raise IrcError(f"{root}: {WEIGHTS} does not match the manifest's parameters")
    forward = make_forward(
        getattr(lib, manifest["entry_point"]),
        inputs=[TensorSpec(i["name"], tuple(i["shape"]), DTYPES[i["dtype"]]) for i in manifest["inputs"]],
        params=weights,
        outputs=[TensorSpec(f"out{k}", tuple(o["shape"])) for k, o in enumerate(manifest["outputs"])],
        return_tuple=manifest["return_tuple"],
        set_threads=lib.irc_set_num_threads,
        scratch_bytes=manifest.get("arena_bytes", 0),
        packed=getattr(lib, manifest["entry_point"] + PACKED_SUFFIX, None),  # absent from older artifacts
    )
    return LoadedModule(root, manifest, forward)

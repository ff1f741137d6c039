"""Helpers shared by the numerics tests."""

from __future__ import annotations

import torch

import irc


def target_env(monkeypatch, lanes: int, threads: int) -> int:
    """Set the environment `Target.host()` reads for `lanes`-float vectors (16, 8, 4) on
    `threads` threads, with the GEMM tile of that width: 32-wide panels at 16 lanes, else the
    AVX2 and portable tile, 16 wide and 6 rows. Returns the panel width."""
    width = 32 if lanes == 16 else 16
    monkeypatch.setenv("IRC_NUM_THREADS", str(threads))
    monkeypatch.setenv("IRC_VECTOR_WIDTH", str(lanes))
    monkeypatch.setenv("IRC_GEMM_WIDTH", str(width))
    if width == 16:
        monkeypatch.setenv("IRC_GEMM_ROWS", "6")
    return width


def check(model, *inputs, fuse=True, **tol):
    """Compile natively (no eager fallback), run, compare with eager at float32 tolerances
    unless `tol` says otherwise; returns the compiled module."""
    cm = irc.compile(model, inputs, fuse=fuse, fallback=False)
    with torch.no_grad():
        expected = model(*inputs)
    torch.testing.assert_close(cm(*inputs), expected, **tol)
    return cm


def kernel_code(cm) -> str:
    """The generated entry point's body: the C++ after the prelude (math, GEMM engine)."""
    return cm.cpp_source.split('extern "C" void forward(', 1)[1]



DTYPES = {"float32": torch.float32, "int64": torch.int64, "bool": torch.bool}


def run_ir(text: str, inputs, sizes=(), fuse: bool = True):
    """Lower irt IR text (one function whose arguments are all inputs) through irc's declared
    pipeline to C++, build it, call its plain entry point with the size symbols' values `sizes`
    (s0, s1, ...) and the inputs, and return its outputs (a tuple of torch tensors, shapes and
    dtypes from the library's signature with the symbols evaluated at `sizes`).

    This is how a function with symbolic sizes runs end to end before the runtime binds
    symbols itself."""
    import ctypes
    import json

    from xdsl.dialects import func
    from xdsl.parser import Parser

    from irc.context import irc_context
    from irc.dialects.symbolic import evaluate, parse_dim
    from irc.lowering.cpp.emit_cpp import emit_cpp
    from irc.pipeline import declared
    from irc.runtime.build import build_library, load_library
    from irc.target import Target

    ctx = irc_context()
    module = Parser(ctx, text).parse_module()
    (fn,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    name, n_outputs = fn.sym_name.data, len(fn.function_type.outputs.data)
    declared(Target(), inputs=len(inputs), fuse=fuse).apply(ctx, module)
    lib = load_library(build_library(emit_cpp(module)))
    entry = getattr(lib, name)
    signature = getattr(lib, name + "__signature")
    signature.restype = ctypes.c_char_p
    args = json.loads(signature())["args"]
    values = {f"s{i}": v for i, v in enumerate(sizes)}

    def tensor(dtype: str, shape: list) -> torch.Tensor:
        dims = [d if isinstance(d, int) else evaluate(parse_dim(d), values) for d in shape]
        return torch.empty(dims, dtype=DTYPES[dtype])

    n_sizes = sum(1 for dtype, _ in args if dtype == "index")
    assert n_sizes == len(sizes), f"{name} takes {n_sizes} size(s), got {len(sizes)}"
    tensors = [x.contiguous() for x in inputs]
    outs = [tensor(*a) for a in args[n_sizes + len(inputs) : n_sizes + len(inputs) + n_outputs]]
    extra = [tensor(*a) for a in args[n_sizes + len(inputs) + n_outputs :]]  # the arena, if planned
    for (dtype, shape), t in zip(args[n_sizes:], tensors + outs):
        assert DTYPES[dtype] == t.dtype and list(tensor(dtype, shape).shape) == list(t.shape), (dtype, shape, t)
    entry.argtypes = [ctypes.c_int64] * n_sizes + [ctypes.c_void_p] * (len(tensors) + len(outs) + len(extra))
    entry(*sizes, *(t.data_ptr() for t in tensors + outs + extra))
    return tuple(outs)


class Scaled(torch.nn.Module):
    """conv + batch norm (folded into the conv) + ReLU, a linear layer read in place, and a
    plain attribute of its own code: every kind of weight a compiled module watches."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8 * 6 * 6, 5)
        self.scale = 2.0

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1)) * self.scale


def build_scaled():
    """`Scaled` in eval mode with running statistics of its own, and an input for it."""
    torch.manual_seed(0)
    m = Scaled().eval()
    with torch.no_grad():
        m.bn.running_mean.uniform_(-1, 1)
        m.bn.running_var.uniform_(0.5, 2)
    return m, torch.randn(2, 3, 6, 6)

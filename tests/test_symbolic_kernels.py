"""Kernels with symbolic sizes against eager PyTorch: each test compiles ONE library from irc-opt
text IR whose sizes are symbols (`#irt.dims`), through the whole declared pipeline, and calls its
plain entry point at several sizes (0 or 1 where legal, odd ones like 7, 13, 65, 129), passing
each symbol's value as an int64 and each buffer as a pointer, as the Python runtime will."""

from __future__ import annotations

import ctypes
import json
import math
import re
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from xdsl.builder import Builder
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block
from xdsl.parser import Parser
from xdsl.rewriter import InsertPoint

from irc.context import irc_context
from irc.dialects.irt.shape import SliceOp
from irc.dialects.symbolic import evaluate, parse_dim, symbol
from irc.lowering.to_loops.function import FunctionLowering
from irc.lowering.to_loops.gemm import choose_tiles
from irc.lowering.to_loops.index_arith import IndexArith
from irc.runtime.build import build_library, load_library

torch.manual_seed(0)

SIZES = [0, 1, 7, 13, 65, 129]


def build(ir: str, options: str = "", target: str = "cpp") -> ctypes.CDLL:
    """The library irc-opt's whole pipeline makes of `ir` (every argument a run-time input:
    nothing is packed or folded, and every loop pass runs)."""
    inputs = len(re.findall(r"%\w+\s*:", re.split(r"\)\s*->", ir)[0]))
    passes = f"irc-pipeline{{inputs={inputs} {options}}}"
    cpp = subprocess.run(
        [sys.executable, "-m", "irc.tools.irc_opt", "-p", passes, "-t", target],
        input=ir, capture_output=True, text=True,
    )
    assert cpp.returncode == 0, cpp.stderr
    return load_library(build_library(cpp.stdout))


def call(lib: ctypes.CDLL, name: str, sizes: list[int], *buffers: torch.Tensor) -> None:
    """fn(s0, s1, ..., buffers...): sizes as int64, buffers (contiguous float/int64) as pointers;
    the scratch arena irc-plan-memory adds last (its size an expression of the symbols in
    `NAME__signature`) is allocated here for these sizes."""
    signature = getattr(lib, f"{name}__signature")
    signature.restype = ctypes.c_char_p
    args = json.loads(signature())["args"]
    if len(args) == len(sizes) + len(buffers) + 1:
        values = {f"s{i}": v for i, v in enumerate(sizes)}
        elements = math.prod(evaluate(parse_dim(str(d)), values) for d in args[-1][1])
        buffers = (*buffers, torch.empty(max(elements, 1)))
    assert len(args) == len(sizes) + len(buffers), args
    fn = getattr(lib, name)
    fn.restype = None
    args = [ctypes.c_int64(s) for s in sizes] + [ctypes.c_void_p(b.data_ptr()) for b in buffers]
    assert all(b.is_contiguous() for b in buffers)
    fn(*args)


def empty(*shape: int) -> torch.Tensor:
    return torch.full(shape, float("nan"))


def close(actual: torch.Tensor, expected: torch.Tensor, **tol) -> None:
    torch.testing.assert_close(actual, expected, equal_nan=True, **tol)


# ---------------------------------------------------------------------------------------------
# Contractions: run-time M (batch x sequence rows), and run-time N and K
# ---------------------------------------------------------------------------------------------

LINEAR = """
!X = tensor<?x?x48xf32, #irt.dims<"s0", "s1">>
!Y = tensor<?x?x40xf32, #irt.dims<"s0", "s1">>
func.func @f(%x: !X, %w: tensor<40x48xf32>, %b: tensor<40xf32>, %r: !Y) -> !Y {
  %y = irt.linear %x, %w, %b : (!X, tensor<40x48xf32>, tensor<40xf32>) -> !Y
  %g = irt.gelu %y : !Y
  %a = irt.add %g, %r : (!Y, !Y) -> !Y
  func.return %a : !Y
}
"""


def test_linear_with_runtime_rows():
    """M = batch x sequence, both symbols; the bias, GELU and residual run as the epilogue."""
    lib = build(LINEAR)
    w, b = torch.randn(40, 48), torch.randn(40)
    for batch, seq in [(1, 1), (0, 5), (2, 0), (1, 7), (3, 13), (1, 65), (2, 129)]:
        x, r = torch.randn(batch, seq, 48), torch.randn(batch, seq, 40)
        out = empty(batch, seq, 40)
        call(lib, "f", [batch, seq], x, w, b, r, out)
        close(out, F.gelu(F.linear(x, w, b)) + r)


RUNTIME_NK = """
!MK = tensor<?x?xf32, #irt.dims<"s0", "s1">>
!NK = tensor<?x?xf32, #irt.dims<"s2", "s1">>
!KN = tensor<?x?xf32, #irt.dims<"s1", "s2">>
!MN = tensor<?x?xf32, #irt.dims<"s0", "s2">>
func.func @f(%a: !MK, %b: !NK, %c: !KN, %r: !MN) -> (!MN, !MN) {
  %y = irt.linear %a, %b : (!MK, !NK) -> !MN
  %z = irt.matmul %a, %c : (!MK, !KN) -> !MN
  %s = irt.add %z, %r : (!MN, !MN) -> !MN
  func.return %y, %s : !MN, !MN
}
"""


def test_runtime_n_and_k_in_both_layouts():
    """Every size a symbol (q @ k^T, p @ v); K = 0 gives the epilogue of 0, the residual read
    with a run-time row stride (N)."""
    lib = build(RUNTIME_NK)
    for m, k, n in [(1, 1, 1), (7, 13, 65), (13, 0, 7), (0, 5, 3), (65, 129, 1), (129, 7, 13), (6, 320, 33)]:
        a, b, c, r = torch.randn(m, k), torch.randn(n, k), torch.randn(k, n), torch.randn(m, n)
        y, s = empty(m, n), empty(m, n)
        call(lib, "f", [m, k, n], a, b, c, r, y, s)
        close(y, a @ b.t(), rtol=1e-4, atol=1e-4)  # sums of up to 320 O(1) products
        close(s, a @ c + r, rtol=1e-4, atol=1e-4)


PACKED = """
!X = tensor<?x20xf32, #irt.dims<"s0">>
!Y = tensor<?x40xf32, #irt.dims<"s0">>
func.func @f(%x: !X, %wp: tensor<3x20x16xf32>, %b: tensor<40xf32>) -> !Y {
  %y = irt.contract packed %x, %wp epilogue(%b : tensor<40xf32>) : (!X, tensor<3x20x16xf32>) -> !Y {
  ^bb0(%acc: f32, %bias: f32):
    %s = arith.addf %acc, %bias : f32
    %z = arith.constant 0.000000e+00 : f32
    %r = arith.maximumf %s, %z : f32
    irt.yield %r : f32
  }
  func.return %y : !Y
}
"""


def test_packed_weight_panels_with_runtime_rows():
    lib = build(PACKED)
    w, b = torch.randn(40, 20), torch.randn(40)
    panels = torch.zeros(48, 20)
    panels[:40] = w
    wp = panels.reshape(3, 16, 20).transpose(1, 2).contiguous()  # [N/16, K, 16]: wp[q, k, r] = w[16q + r, k]
    for m in SIZES:
        x, out = torch.randn(m, 20), empty(m, 40)
        call(lib, "f", [m], x, wp, b, out)
        close(out, torch.relu(F.linear(x, w, b)))


def test_strict_contraction_with_runtime_sizes():
    """A strict build keeps contractions on the scalar nest, with run-time bounds."""
    lib = build(RUNTIME_NK, "strict=true", "cpp{strict=true}")
    for m, k, n in [(1, 1, 1), (7, 13, 65), (13, 0, 7), (0, 5, 3)]:
        a, b, c, r = torch.randn(m, k), torch.randn(n, k), torch.randn(k, n), torch.randn(m, n)
        y, s = empty(m, n), empty(m, n)
        call(lib, "f", [m, k, n], a, b, c, r, y, s)
        close(y, a @ b.t(), rtol=1e-4, atol=1e-4)  # sums of up to 320 O(1) products
        close(s, a @ c + r, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2])
def test_gemm_tiles_at_call_time_are_the_static_rule(threads):
    """The blocking computed by arith ops at call time is the one chosen at compile time for
    the same sizes (one rule, `choose_tiles`, evaluated both ways)."""
    for m, n, k in [(1, 256, 256), (128, 256, 256), (7, 13, 65), (129, 1, 700), (2048, 64, 64), (6, 4096, 33),
                    (256, 4096, 4096), (256, 2048, 2048), (512, 1024, 1024), (1024, 1024, 4096)]:
        for width in (16, 32):
            assert call_time_tiles(m, n, k, width, threads) == choose_tiles(m, n, k, width, threads)
            for rows, caches in ((12, (32768, 1 << 20, 32 << 20)), (14, (0, 512 << 10, 4 << 20)),
                                 (6, (49152, 2 << 20, 480 << 20))):
                options = dict(rows=rows, caches=caches)
                assert (call_time_tiles(m, n, k, width, threads, **options)
                        == choose_tiles(m, n, k, width, threads, **options))


_ARITH = {arith.AddiOp: lambda a, b: a + b, arith.SubiOp: lambda a, b: a - b, arith.MuliOp: lambda a, b: a * b,
          arith.DivSIOp: lambda a, b: a // b, arith.MinSIOp: min, arith.MaxSIOp: max,
          arith.AndIOp: lambda a, b: a and b, arith.OrIOp: lambda a, b: a or b}
_CMPI = {2: lambda a, b: a < b, 3: lambda a, b: a <= b, 4: lambda a, b: a > b, 5: lambda a, b: a >= b}


def call_time_tiles(m: int, n: int, k: int, width: int, threads: int, **options) -> tuple[int, ...]:
    """`choose_tiles` on three symbolic sizes, its arith ops then evaluated for m, n, k."""
    fl = FunctionLowering(func.FuncOp("tiles", ([], [])), {}, threads=threads)
    fl.block = Block(arg_types=[IndexType()] * 3)
    fl.b = Builder(InsertPoint.at_end(fl.block))
    for i, arg in enumerate(fl.block.args):
        fl.symbols[symbol(f"s{i}")] = arg
    tiles = choose_tiles(*(fl.index(symbol(f"s{i}")) for i in range(3)), width, threads, IndexArith(fl), **options)
    env = dict(zip(fl.block.args, (m, n, k)))
    for op in fl.block.ops:
        if isinstance(op, arith.ConstantOp):
            env[op.result] = op.value.value.data
        elif isinstance(op, arith.CmpiOp):
            env[op.result] = _CMPI[op.predicate.value.data](env[op.lhs], env[op.rhs])
        elif isinstance(op, arith.SelectOp):
            env[op.result] = env[op.lhs] if env[op.cond] else env[op.rhs]
        else:
            env[op.results[0]] = _ARITH[type(op)](*(env[v] for v in op.operands))
    return tuple(t if isinstance(t, int) else env[t] for t in tiles)


# ---------------------------------------------------------------------------------------------
# Batched matmul and attention: run-time batch, Lq, Lk (E static)
# ---------------------------------------------------------------------------------------------

BATCH_MATMUL = """
!Q = tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>
!K = tensor<?x4x?x16xf32, #irt.dims<"s0", "s2">>
!S = tensor<?x4x?x?xf32, #irt.dims<"s0", "s1", "s2">>
!W = tensor<4x?x16xf32, #irt.dims<"s2">>
!V = tensor<?x16xf32, #irt.dims<"s2">>
func.func @f(%q: !Q, %k: !K, %v: !K, %w: !W, %u: !V) -> (!S, !Q, !S, !Q) {
  %s = irt.batch_matmul linear %q, %k : (!Q, !K) -> !S
  %o = irt.batch_matmul matmul %s, %v : (!S, !K) -> !Q
  %b = irt.batch_matmul linear %q, %w : (!Q, !W) -> !S
  %c = irt.batch_matmul matmul %s, %u : (!S, !V) -> !Q
  func.return %s, %o, %b, %c : !S, !Q, !S, !Q
}
"""


@pytest.mark.parametrize("strict", [False, True], ids=["engine", "scalar"])
def test_batch_matmul_with_runtime_batch_and_lengths(strict):
    """q @ k^T and p @ v (batched GEMMs on the engine), a rhs whose batch dims broadcast
    ([4, Lk, E] against [B, 4, ...]: the scalar nest) and one shared by every batch entry
    ([Lk, E]: batch stride 0)."""
    lib = build(BATCH_MATMUL, "strict=true" if strict else "", "cpp{strict=true}" if strict else "cpp")
    for b, lq, lk in [(1, 1, 1), (2, 7, 13), (1, 13, 0), (0, 3, 5), (1, 65, 7), (2, 1, 129), (1, 129, 65)]:
        q, k, v = torch.randn(b, 4, lq, 16), torch.randn(b, 4, lk, 16) / 4, torch.randn(b, 4, lk, 16)
        w, u = torch.randn(4, lk, 16), torch.randn(lk, 16)
        s, o, bw, c = empty(b, 4, lq, lk), empty(b, 4, lq, 16), empty(b, 4, lq, lk), empty(b, 4, lq, 16)
        call(lib, "f", [b, lq, lk], q, k, v, w, u, s, o, bw, c)
        scores = q @ k.transpose(-1, -2)
        close(s, scores)
        close(o, scores @ v, rtol=1e-4, atol=1e-4)  # sums of up to 129 O(1) products
        close(bw, q @ w.transpose(-1, -2))
        close(c, scores @ u, rtol=1e-4, atol=1e-4)


ATTENTION = """
!Q = tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>
!K = tensor<?x4x?x16xf32, #irt.dims<"s0", "s2">>
!M = tensor<?x?xf32, #irt.dims<"s1", "s2">>
func.func @f(%q: !Q, %k: !K, %v: !K, %m: !M) -> (!Q, !Q, !Q) {
  %a = irt.attention %q, %k, %v scale 0.25 : (!Q, !K, !K) -> !Q
  %b = irt.attention %q, %k, %v mask %m scale 0.25 : (!Q, !K, !K, !M) -> !Q
  %c = irt.attention %q, %k, %v scale 0.25 causal : (!Q, !K, !K) -> !Q
  func.return %a, %b, %c : !Q, !Q, !Q
}
"""

ATTENTION_SIZES = [(1, 1, 1), (2, 7, 13), (1, 13, 7), (1, 5, 0), (0, 3, 3), (1, 65, 65), (1, 1, 129), (2, 129, 66)]


@pytest.mark.parametrize("strict", [False, True], ids=["engine", "scalar"])
def test_attention_with_runtime_batch_and_lengths(strict):
    """Plain, with an additive mask [Lq, Lk], and causal (top-left aligned when Lq != Lk), on
    the GEMM engine and on the scalar online-softmax nest (strict); no keys gives zeros."""
    lib = build(ATTENTION, "strict=true" if strict else "", "cpp{strict=true}" if strict else "cpp")
    for b, lq, lk in ATTENTION_SIZES:
        q, k, v = torch.randn(b, 4, lq, 16), torch.randn(b, 4, lk, 16), torch.randn(b, 4, lk, 16)
        m = torch.randn(lq, lk)
        outs = [empty(b, 4, lq, 16) for _ in range(3)]
        call(lib, "f", [b, lq, lk], q, k, v, m, *outs)
        sdpa = F.scaled_dot_product_attention
        close(outs[0], sdpa(q, k, v, scale=0.25) if lk else torch.zeros(b, 4, lq, 16))
        close(outs[1], sdpa(q, k, v, attn_mask=m, scale=0.25) if lk else torch.zeros(b, 4, lq, 16))
        causal = torch.ones(lq, lk, dtype=torch.bool).tril()
        close(outs[2], sdpa(q, k, v, attn_mask=causal, scale=0.25) if lk else torch.zeros(b, 4, lq, 16))


# ---------------------------------------------------------------------------------------------
# Reductions and normalizations
# ---------------------------------------------------------------------------------------------

REDUCE = """
!X = tensor<?x?x12xf32, #irt.dims<"s0", "s1">>
!S = tensor<?x?xf32, #irt.dims<"s0", "s1">>
!R = tensor<?x12xf32, #irt.dims<"s0">>
!M = tensor<?x1x1xf32, #irt.dims<"s0">>
func.func @f(%x: !X, %w: tensor<12xf32>, %b: tensor<12xf32>, %y: !S) -> (!R, !M, !S, !X, !X, !S, !X) {
  %sum = irt.reduce sum %x [1] : (!X) -> !R
  %mean = irt.reduce mean %x [1, 2] keepdim : (!X) -> !M
  %max = irt.reduce max %x [2] : (!X) -> !S
  %sm = irt.softmax %x dim -1 : !X
  %ls = irt.log_softmax %x dim 1 : !X
  %sy = irt.softmax %y dim 1 : !S
  %ln = irt.layer_norm %x : !X weight %w : tensor<12xf32> bias %b : tensor<12xf32> dims 1 eps 1.0e-05 -> !X
  func.return %sum, %mean, %max, %sm, %ls, %sy, %ln : !R, !M, !S, !X, !X, !S, !X
}
"""


def test_reductions_over_static_and_runtime_dims():
    """sum over a run-time dim, mean over a run-time and a static one (the count 12 * s1 at call
    time; NaN for none, as eager), max over a static dim with run-time outer dims; softmax over
    a static last dim, log_softmax over a run-time middle one, softmax over a run-time last dim
    (attention scores); layer_norm with run-time outer dims."""
    lib = build(REDUCE)
    w, b = torch.randn(12), torch.randn(12)
    for n, s in [(1, 1), (2, 7), (1, 13), (3, 0), (0, 5), (1, 65), (2, 129)]:
        x, y = torch.randn(n, s, 12), torch.randn(n, s)
        outs = [empty(n, 12), empty(n, 1, 1), empty(n, s), empty(n, s, 12), empty(n, s, 12), empty(n, s), empty(n, s, 12)]
        call(lib, "f", [n, s], x, w, b, y, *outs)
        expected = [x.sum(1), x.mean((1, 2), keepdim=True), x.amax(2), x.softmax(-1), x.log_softmax(1),
                    y.softmax(1), F.layer_norm(x, (12,), w, b)]
        for got, want in zip(outs, expected):
            close(got, want)


# ---------------------------------------------------------------------------------------------
# Shape ops: the KV-cache concat (s1 + s2), slices of run-time dims, embedding, expand, transpose
# ---------------------------------------------------------------------------------------------

SHAPES = """
!C = tensor<?x4x?x16xf32, #irt.dims<"s0", "s1">>
!N = tensor<?x4x?x16xf32, #irt.dims<"s0", "s2">>
!T = tensor<?x4x?x16xf32, #irt.dims<"s0", "s1 + s2">>
!X = tensor<?x?x8xf32, #irt.dims<"s0", "s1">>
!I = tensor<?x?xi64, #irt.dims<"s0", "s2">>
!L = tensor<?x?x4xf32, #irt.dims<"s0", "s1 - 1">>
!F = tensor<?x1x8xf32, #irt.dims<"s0">>
!E = tensor<?x?x8xf32, #irt.dims<"s0", "s2">>
!R = tensor<8x?x?xf32, #irt.dims<"s1", "s0">>
func.func @f(%cache: !C, %new: !N, %x: !X, %idx: !I, %w: tensor<10x8xf32>, %e: !F) -> (!T, !L, !F, !E, !X, !R) {
  %t = irt.concat %cache, %new dim 2 : (!C, !N) -> !T
  %s = irt.slice %x offsets [0, 1, 2] strides [1, 1, 1] : (!X) -> !L
  %first = irt.slice %x offsets [0, 0, 0] strides [1, 1, 1] : (!X) -> !F
  %em = irt.embedding %idx, %w : (!I, tensor<10x8xf32>) -> !E
  %ex = irt.expand %e : (!F) -> !X
  %tr = irt.transpose %x [2, 1, 0] : (!X) -> !R
  func.return %t, %s, %first, %em, %ex, %tr : !T, !L, !F, !E, !X, !R
}
"""


def test_shape_ops_with_runtime_sizes():
    """cat(cache [.., s1, ..], new [.., s2, ..]) along the sequence (s1 + s2), x[:, 1:, 2:6]
    (s1 - 1 rows), x[:, :1] (needs s1 >= 1), an embedding of [s0, s2] indices (one out of
    range: a NaN row), an expand along s1 and a transpose."""
    lib = build(SHAPES)
    w = torch.randn(10, 8)
    for b, past, new in [(1, 1, 1), (2, 7, 1), (1, 13, 0), (0, 3, 2), (1, 65, 7), (2, 129, 13), (1, 1, 65)]:
        cache, knew = torch.randn(b, 4, past, 16), torch.randn(b, 4, new, 16)
        x, e = torch.randn(b, past, 8), torch.randn(b, 1, 8)
        idx = torch.randint(0, 10, (b, new))
        if idx.numel():
            idx.view(-1)[-1] = 10  # outside the table
        outs = [empty(b, 4, past + new, 16), empty(b, past - 1, 4), empty(b, 1, 8), empty(b, new, 8),
                empty(b, past, 8), empty(8, past, b)]
        call(lib, "f", [b, past, new], cache, knew, x, idx, w, e, *outs)
        table = torch.cat([w, torch.full((1, 8), float("nan"))])
        expected = [torch.cat([cache, knew], 2), x[:, 1:, 2:6], x[:, :1], F.embedding(idx, table),
                    e.expand(b, past, 8), x.permute(2, 1, 0)]
        for got, want in zip(outs, expected):
            close(got, want)


def test_slice_lists_what_a_call_must_satisfy():
    """x[:, 1:] of an s1-long dim stays inside for any s1; x[:, :1] needs s1 >= 1 (room s1 - 1
    when its size, 1, is > 0): the verifier accepts both, the caller checks the second."""
    module = Parser(irc_context(), SHAPES).parse_module()
    slices = [op for op in module.walk() if isinstance(op, SliceOp)]
    s1 = symbol("s1")
    assert slices[0].call_time_requirements() == [(symbol("s0"), 0), (s1 - 1, 0)]
    assert slices[1].call_time_requirements() == [(symbol("s0"), 0), (1, s1 - 1)]


BATCH_NORM = """
!X = tensor<?x16x5x5xf32, #irt.dims<"s0">>
!C = tensor<16x1x1xf32>
func.func @f(%x: !X, %m: !C, %v: !C, %w: !C, %b: !C) -> !X {
  %0 = irt.batch_norm %x, %m, %v, %w, %b eps 1.000000e-05 : (!X, !C, !C, !C, !C) -> !X
  func.return %0 : !X
}
"""


def test_batch_norm_with_runtime_batch():
    """Batch norm (eval) is elementwise, so a run-time batch runs like any elementwise op."""
    lib = build(BATCH_NORM)
    m, v, w, b = torch.randn(16), torch.rand(16) + 0.5, torch.randn(16), torch.randn(16)
    for n in SIZES:
        x, out = torch.randn(n, 16, 5, 5), empty(n, 16, 5, 5)
        call(lib, "f", [n], x, *(t.view(16, 1, 1) for t in (m, v, w, b)), out)
        close(out, F.batch_norm(x, m, v, w, b, eps=1e-5))


# ---------------------------------------------------------------------------------------------
# A transformer block with a run-time sequence length, end to end
# ---------------------------------------------------------------------------------------------

BLOCK = """
!X = tensor<1x?x32xf32, #irt.dims<"s0">>
!H = tensor<1x?x64xf32, #irt.dims<"s0">>
!Q = tensor<1x4x?x8xf32, #irt.dims<"s0">>
!Q2 = tensor<1x?x4x8xf32, #irt.dims<"s0">>
!S = tensor<1x4x?x?xf32, #irt.dims<"s0", "s0">>
!W = tensor<32x32xf32>
func.func @f(%x: !X, %g: tensor<32xf32>, %wq: !W, %wk: !W, %w1: tensor<64x32xf32>, %w2: tensor<32x64xf32>, %t: !W) -> !X {
  %n = irt.layer_norm %x : !X weight %g : tensor<32xf32> dims 1 eps 1.0e-05 -> !X
  %q = irt.linear %n, %wq : (!X, !W) -> !X
  %k = irt.linear %n, %wk : (!X, !W) -> !X
  %q2 = irt.reshape %q : (!X) -> !Q2
  %k2 = irt.reshape %k : (!X) -> !Q2
  %qh = irt.transpose %q2 [0, 2, 1, 3] : (!Q2) -> !Q
  %kh = irt.transpose %k2 [0, 2, 1, 3] : (!Q2) -> !Q
  %s = irt.batch_matmul linear %qh, %kh : (!Q, !Q) -> !S
  %p = irt.softmax %s dim -1 : !S
  %o = irt.batch_matmul matmul %p, %kh : (!S, !Q) -> !Q
  %ot = irt.transpose %o [0, 2, 1, 3] : (!Q) -> !Q2
  %of = irt.reshape %ot : (!Q2) -> !X
  %wt = irt.transpose %t [1, 0] : (!W) -> !W
  %a = irt.matmul %of, %wt : (!X, !W) -> !X
  %r = irt.add %a, %x : (!X, !X) -> !X
  %h = irt.linear %r, %w1 : (!X, tensor<64x32xf32>) -> !H
  %ge = irt.gelu %h : !H
  %d = irt.linear %ge, %w2 : (!H, tensor<32x64xf32>) -> !X
  %y = irt.add %d, %r : (!X, !X) -> !X
  func.return %y : !X
}
"""


def test_transformer_block_with_runtime_sequence():
    """layer_norm, projections, heads (reshape + transpose), q @ k^T -> softmax -> @ v (fused into
    one attention over s0 x s0 scores), output projection, residual, GELU MLP: one library for
    every sequence length."""
    lib = build(BLOCK)
    g, wq, wk, t = torch.randn(32), torch.randn(32, 32) / 6, torch.randn(32, 32) / 6, torch.randn(32, 32) / 6
    w1, w2 = torch.randn(64, 32) / 6, torch.randn(32, 64) / 8
    for s in [1, 2, 7, 13, 65, 129]:
        x, out = torch.randn(1, s, 32), empty(1, s, 32)
        call(lib, "f", [s], x, g, wq, wk, w1, w2, t, out)
        n = F.layer_norm(x, (32,), g)
        qh, kh = ((n @ w.t()).view(1, s, 4, 8).transpose(1, 2) for w in (wq, wk))
        o = torch.softmax(qh @ kh.transpose(-1, -2), -1) @ kh
        r = o.transpose(1, 2).reshape(1, s, 32) @ t.t() + x
        close(out, F.gelu(r @ w1.t()) @ w2.t() + r, rtol=1e-4, atol=1e-4)

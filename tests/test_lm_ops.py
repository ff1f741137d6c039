"""Language-model ops natively: int64 and bool tensors, masks, casts, index ops, and the model
pieces built from them (RoPE, RMSNorm, gated MLP, grouped-query attention, GPT-2's Conv1D, tied
embeddings), each against eager PyTorch, at several sizes including odd ones.

Two levels: irt IR run end to end through the declared pipeline and g++ (`run_ir`; symbolic
sizes are bound by hand, as the runtime does not bind them yet), and nn.Modules through
`irc.compile` (static shapes), checked to compile with no eager partition."""

from __future__ import annotations

import pytest
import torch
from irc_testing import run_ir

F, L, B = (f'tensor<?x8x{t}, #irt.dims<"s0">>' for t in ("f32", "i64", "i1"))
LOGIC = f"""
func.func @mask(%x: {F}, %ids: {L}, %m: tensor<8xi1>) -> ({B}, {F}, {L}) {{
  %pad = irt.constant dense<0> : tensor<i64>
  %min = irt.constant dense<-3.40282347E+38> : tensor<f32>
  %ne = irt.cmp ne %ids, %pad : ({L}, tensor<i64>) -> {B}
  %f = irt.cast %ids : ({L}) -> {F}
  %le = irt.cmp le %x, %f : ({F}, {F}) -> {B}
  %a = irt.and %ne, %le : ({B}, {B}) -> {B}
  %o = irt.xor %a, %m : ({B}, tensor<8xi1>) -> {B}
  %n = irt.not %o : {B}
  %w = irt.where %n, %x, %min : ({B}, {F}, tensor<f32>) -> {F}
  %t = irt.cast %x : ({F}) -> {L}
  %b = irt.cast %n : ({B}) -> {L}
  %s = irt.mul %t, %b : ({L}, {L}) -> {L}
  %d = irt.sub %s, %ids : ({L}, {L}) -> {L}
  %g = irt.neg %d : {L}
  func.return %n, %w, %g : {B}, {F}, {L}
}}
"""


@pytest.mark.parametrize("fuse", [True, False])
@pytest.mark.parametrize("rows", [1, 3, 17])
def test_logic_ops_at_run_time_sizes(rows, fuse):
    """Comparisons, logic, casts and integer arithmetic on bool and int64 tensors, one library
    for every row count (the symbol s0)."""
    torch.manual_seed(rows)
    x = torch.randn(rows, 8) * 4
    x[0, :2] = float("nan")  # NaN compares false, and ne true
    ids = torch.randint(-3, 4, (rows, 8))
    m = torch.rand(8) > 0.5
    n, w, g = run_ir(LOGIC, [x, ids, m], sizes=[rows], fuse=fuse)
    expected_n = ~(((ids != 0) & (x <= ids.float())) ^ m)
    assert n.dtype == torch.bool and torch.equal(n, expected_n)
    torch.testing.assert_close(w, torch.where(expected_n, x, torch.finfo(torch.float32).min), equal_nan=True)
    expected_g = -(x.to(torch.int64) * expected_n.long() - ids)
    defined = ~x.isnan()  # NaN -> int64 is undefined behaviour (in C++ and in eager alike)
    assert g.dtype == torch.int64 and torch.equal(g[defined], expected_g[defined])


def _sym(dims: str, t: str) -> str:
    sizes = [d for d in dims.split("x") if d.startswith("s")]
    shape = "x".join("?" if d.startswith("s") else d for d in dims.split("x"))
    enc = f', #irt.dims<{", ".join(f"{chr(34)}{d}{chr(34)}" for d in sizes)}>' if sizes else ""
    return f"tensor<{shape}x{t}{enc}>"


X, M, G, SEL = _sym("s0x6", "f32"), _sym("s0xs1", "i64"), _sym("s0x3", "i64"), _sym("s1", "i64")
P, GA, IS, SQ, AF = _sym("s1", "i64"), _sym("s0x3", "f32"), _sym("s1x6", "f32"), _sym("s1xs1", "i1"), _sym("s1", "f32")
INDEX = f"""
func.func @index(%x: {X}, %m: {M}, %g: {G}, %sel: {SEL}) -> ({P}, {M}, {GA}, {IS}, {SQ}, {X}, {AF}) {{
  %p = irt.arange start 3.0 step -2.0 : {P}
  %c = irt.cumsum %m dim 1 : {M}
  %ga = irt.gather %x, %g dim 1 : ({X}, {G}) -> {GA}
  %is = irt.index_select %x, %sel dim 0 : ({X}, {SEL}) -> {IS}
  %t = irt.constant dense<true> : tensor<i1>
  %full = irt.expand %t : (tensor<i1>) -> {SQ}
  %tr = irt.tril %full diagonal -1 : {SQ}
  %fc = irt.cumsum %x dim 0 : {X}
  %af = irt.arange start 0.5 step 0.25 : {AF}
  func.return %p, %c, %ga, %is, %tr, %fc, %af : {P}, {M}, {GA}, {IS}, {SQ}, {X}, {AF}
}}
"""


@pytest.mark.parametrize("rows,length", [(1, 1), (2, 5), (7, 3), (4, 33)])
def test_index_ops_at_run_time_sizes(rows, length):
    """arange, cumsum (int64; float32 accumulating in double), gather, index_select (an index
    outside the input reads NaN) and tril on an L x L mask, one library for all sizes."""
    torch.manual_seed(rows * length)
    x = torch.randn(rows, 6)
    m = torch.randint(0, 2, (rows, length))
    g = torch.randint(0, 6, (rows, 3))
    sel = torch.randint(0, rows, (length,))
    sel[0] = rows  # out of range: eager raises, irc reads NaN
    p, c, ga, is_, tr, fc, af = run_ir(INDEX, [x, m, g, sel], sizes=[rows, length])
    assert torch.equal(p, torch.arange(3, 3 - 2 * length, -2))
    assert torch.equal(c, m.cumsum(1))
    assert torch.equal(ga, x.gather(1, g))
    assert is_[0].isnan().all() and torch.equal(is_[1:], x.index_select(0, sel[1:]))
    assert torch.equal(tr, torch.ones(length, length, dtype=torch.bool).tril(-1))
    assert torch.equal(fc, x.cumsum(0))
    assert torch.equal(af, torch.arange(length) * 0.25 + 0.5)

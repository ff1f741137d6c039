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

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

LOGIC = """
func.func @mask(%x: tensor<?x8xf32, #irt.dims<"s0">>, %ids: tensor<?x8xi64, #irt.dims<"s0">>, %m: tensor<8xi1>)
    -> (tensor<?x8xi1, #irt.dims<"s0">>, tensor<?x8xf32, #irt.dims<"s0">>, tensor<?x8xi64, #irt.dims<"s0">>) {
  %pad = irt.constant dense<0> : tensor<i64>
  %min = irt.constant dense<-3.40282347E+38> : tensor<f32>
  %ne = irt.cmp ne %ids, %pad : (tensor<?x8xi64, #irt.dims<"s0">>, tensor<i64>) -> tensor<?x8xi1, #irt.dims<"s0">>
  %f = irt.cast %ids : (tensor<?x8xi64, #irt.dims<"s0">>) -> tensor<?x8xf32, #irt.dims<"s0">>
  %le = irt.cmp le %x, %f : (tensor<?x8xf32, #irt.dims<"s0">>, tensor<?x8xf32, #irt.dims<"s0">>) -> tensor<?x8xi1, #irt.dims<"s0">>
  %a = irt.and %ne, %le : (tensor<?x8xi1, #irt.dims<"s0">>, tensor<?x8xi1, #irt.dims<"s0">>) -> tensor<?x8xi1, #irt.dims<"s0">>
  %o = irt.xor %a, %m : (tensor<?x8xi1, #irt.dims<"s0">>, tensor<8xi1>) -> tensor<?x8xi1, #irt.dims<"s0">>
  %n = irt.not %o : tensor<?x8xi1, #irt.dims<"s0">>
  %w = irt.where %n, %x, %min : (tensor<?x8xi1, #irt.dims<"s0">>, tensor<?x8xf32, #irt.dims<"s0">>, tensor<f32>) -> tensor<?x8xf32, #irt.dims<"s0">>
  %t = irt.cast %x : (tensor<?x8xf32, #irt.dims<"s0">>) -> tensor<?x8xi64, #irt.dims<"s0">>
  %b = irt.cast %n : (tensor<?x8xi1, #irt.dims<"s0">>) -> tensor<?x8xi64, #irt.dims<"s0">>
  %s = irt.mul %t, %b : (tensor<?x8xi64, #irt.dims<"s0">>, tensor<?x8xi64, #irt.dims<"s0">>) -> tensor<?x8xi64, #irt.dims<"s0">>
  %d = irt.sub %s, %ids : (tensor<?x8xi64, #irt.dims<"s0">>, tensor<?x8xi64, #irt.dims<"s0">>) -> tensor<?x8xi64, #irt.dims<"s0">>
  %g = irt.neg %d : tensor<?x8xi64, #irt.dims<"s0">>
  func.return %n, %w, %g : tensor<?x8xi1, #irt.dims<"s0">>, tensor<?x8xf32, #irt.dims<"s0">>, tensor<?x8xi64, #irt.dims<"s0">>
}
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

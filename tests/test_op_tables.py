"""The explicit per-op tables cover every `irt` op: how it lowers to loops, what it computes on
torch tensors, what it costs; and the GEMM engine's precedence is the one written in the table."""

from __future__ import annotations

from irc.dialects.irt import IRT, core as irt, costs, nn as irt_nn, reduce as irt_reduce, semantics
from irc.lowering.to_loops import core, gemm, nn, reduce, table

NO_KERNEL = {"irt.yield"}  # the terminator of scalar regions: lowered with the op it ends
NO_KNOWN_COST = {"irt.pack"}  # explain reports "?"


def _covered(tbl: dict, op: type) -> bool:
    return any(c in tbl for c in op.__mro__)


def test_every_op_lowers_has_semantics_and_a_cost():
    missing = []
    for op in IRT.operations:
        if op.name in NO_KERNEL:
            continue
        elementwise = issubclass(op, irt.ElementwiseOp)  # build_scalar is the definition and the cost
        meaning = semantics.ACCUMULATE if issubclass(op, irt.EpilogueOp) else semantics.REFERENCE
        if not _covered(table.LOWERINGS, op):
            missing.append(f"{op.name}: no lowering")
        if not (elementwise or _covered(meaning, op)):
            missing.append(f"{op.name}: no torch semantics")
        if not (elementwise or op.name in NO_KNOWN_COST or _covered(costs.FLOPS, op)):
            missing.append(f"{op.name}: no cost")
    assert missing == []


def test_gemm_engine_takes_precedence_over_the_scalar_nests_it_falls_back_to():
    engine = {
        irt.ContractionBase: (gemm.lower_contraction_gemm, core.lower_contraction),
        irt_nn.Conv2dOp: (gemm.lower_conv2d_gemm, nn.lower_conv2d),
        irt_reduce.AttentionOp: (gemm.lower_attention_gemm, reduce.lower_attention),
        irt_reduce.BatchMatmulOp: (gemm.lower_batch_matmul_gemm, reduce.lower_batch_matmul),
    }
    for op, (engine_fn, scalar_fn) in engine.items():
        assert table.LOWERINGS[op] is engine_fn
        assert table.SCALAR_NESTS[op] is scalar_fn
    assert {k: v for k, v in table.LOWERINGS.items() if k not in engine} == {
        k: v for k, v in table.SCALAR_NESTS.items() if k not in engine
    }

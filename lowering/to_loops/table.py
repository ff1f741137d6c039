"""How every `irt` op becomes loops: `LOWERINGS`, one explicit table.

`FunctionLowering.lower` takes the entry of an op's class, or of its nearest base class listed
here (`ElementwiseOp` covers every elementwise op of every family, `ContractionBase` linear,
matmul and contract). An op with no entry is an error naming it (`irt.batch_norm` has none: it
is folded into a convolution or rewritten before this pass).

Precedence, once: the GEMM engine's lowerings (`gemm.py`) replace the scalar nests of
contractions, batched matmuls, convolutions and attention. Each of them falls back to the scalar
nest it replaces (`core.lower_contraction`, `reduce.lower_batch_matmul`, `nn.lower_conv2d`,
`reduce.lower_attention`) where the engine does not apply (`IRC_STRICT`, depthwise
convolutions, an epilogue or batch broadcast it cannot stride); `nn.lower_conv2d` gives a conv
with one input channel per group (depthwise) its own vectorized row-wise nest.
"""

from __future__ import annotations

from xdsl.ir import Operation

from irc.dialects.irt import core as irt, nn as irt_nn, reduce as irt_reduce, shape as irt_shape
from irc.lowering.to_loops import core, gemm, nn, reduce, shape
from irc.lowering.to_loops.function import LoweringFn

SCALAR_NESTS: dict[type[Operation], LoweringFn] = {
    # core
    irt.ElementwiseOp: core.lower_elementwise,
    irt.ContractionBase: core.lower_contraction,
    irt.TransposeOp: core.lower_transpose,
    irt.ReshapeOp: core.lower_reshape,
    irt.ConstantOp: core.lower_constant,
    irt.PackOp: gemm.lower_pack,  # run-time packing for the engine's panels (hand-written IR)
    # nn
    irt_nn.Conv2dOp: nn.lower_conv2d,
    irt_nn.MaxPool2dOp: nn.lower_max_pool2d,
    irt_nn.AvgPool2dOp: nn.lower_avg_pool2d,
    irt_nn.AdaptiveAvgPool2dOp: nn.lower_adaptive_avg_pool2d,
    # reduce
    irt_reduce.ReduceOp: reduce.lower_reduce,
    irt_reduce.SoftmaxBase: reduce.lower_softmax,
    irt_reduce.LayerNormOp: reduce.lower_layer_norm,
    irt_reduce.BatchMatmulOp: reduce.lower_batch_matmul,
    irt_reduce.AttentionOp: reduce.lower_attention,
    irt_reduce.CumsumOp: reduce.lower_cumsum,
    # shape
    irt_shape.SliceOp: shape.lower_slice,
    irt_shape.ConcatOp: shape.lower_concat,
    irt_shape.ExpandOp: shape.lower_expand,
    irt_shape.EmbeddingOp: shape.lower_embedding,
    irt_shape.ArangeOp: shape.lower_arange,
    irt_shape.GatherOp: shape.lower_gather,
    irt_shape.IndexSelectOp: shape.lower_index_select,
    irt_shape.TriangleOp: shape.lower_triangle,
    irt_shape.SizeOp: shape.lower_size,
}
"""Every op as loop nests of its own (`scf.parallel`/`scf.for`)."""

GEMM_ENGINE: dict[type[Operation], LoweringFn] = {
    irt.ContractionBase: gemm.lower_contraction_gemm,
    irt_nn.Conv2dOp: gemm.lower_conv2d_gemm,
    irt_reduce.AttentionOp: gemm.lower_attention_gemm,
    irt_reduce.BatchMatmulOp: gemm.lower_batch_matmul_gemm,
}
"""The ops the GEMM engine runs (`irl.gemm`, `irl.attention`); each falls back to its entry in
`SCALAR_NESTS` where the engine does not apply."""

LOWERINGS: dict[type[Operation], LoweringFn] = {**SCALAR_NESTS, **GEMM_ENGINE}
"""The table `irc-to-loops` uses: the GEMM engine's entries take precedence."""

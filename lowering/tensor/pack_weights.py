"""`irc-pack-weights`: give contractions and convolutions with compile-time-known weights
packed weights.

The GEMM engine reads its rhs as panels of `gemm_width` columns ([ceil(N/W), K, W], see
`irt.pack`) and its lhs as panels of `gemm_rows` rows. For a weight that is known at compile
time (a parameter, or computed from parameters and constants only), this pass inserts
`irt.pack` on it: a contraction becomes `irt.contract packed` (its rhs replaced); a conv2d,
whose weight is the lhs of its im2col product, gets the panels as its `packed` operand (the
rhs's `gemm_width`-wide panels for a conv the engine runs with pixels as the tile's rows).
Compile-time folding then evaluates the pack once, so the weight is packed when the compiled
module is created, never per call. Run-time operands are left alone (the GEMM packs them on
the fly), and so are convs the engine does not run (depthwise ones, `conv_on_engine`). A
grouped conv whose groups are not whole panels of `gemm_rows` rows has each group's rows padded
with zero rows first (`_groups_padded`), so that no panel straddles two groups.

    irc-opt model.mlir -p 'irc-pack-weights{inputs=1 gemm_width=32 gemm_rows=6}'

Options:
  inputs: how many leading function arguments are run-time inputs; later arguments are
          parameters (irc's importer puts inputs first, then every parameter).
  gemm_width: the rhs panels' width, the Target's GEMM register tile width (16 or 32).
  gemm_rows: a conv weight's panels' height, the Target's GEMM register tile rows (also in the
          choice of the pixels layout, which must be the lowering's).
  winograd: whether 3x3 stride-1 convs that `conv_winograd` picks get their Winograd transform
          (`irt.pack "winograd"`, run as Winograd F(2x2, 3x3)); false packs them by rows (the
          goldens of the other layouts).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, BlockArgument, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from irc.dialects.irt import core as irt, nn as irt_nn
from irc.dialects.irt.core import ContractionKind, f32, shape_of
from irc.dialects.irt.shape import ConcatOp, ExpandOp
from irc.lowering.tensor.irc_fuse import FUSED_ATTR
from irc.lowering.to_loops.gemm import conv_on_engine, conv_on_pixels, conv_winograd
from irc.target import GEMM_ROWS_CHOICES, GEMM_WIDTHS, PIXEL_PAIR_ROWS, Target


def compile_time_known(value: SSAValue, inputs: int) -> bool:
    """A parameter, a literal, or an irt value computed from those only."""
    if isinstance(value, BlockArgument):
        return value.index >= inputs
    op = value.owner
    if isinstance(op, irt.ConstantOp):
        return True
    return op.dialect_name() == "irt" and all(compile_time_known(v, inputs) for v in op.operands)


def pack_contraction(op: irt.ContractionBase, gemm_width: int) -> irt.ContractOp:
    """`op` as `irt.contract packed`, its rhs through `irt.pack` into `gemm_width`-column
    panels (inserted before `op`)."""
    kind = op.contraction_kind
    pack = irt.PackOp(op.rhs, "rows" if kind == ContractionKind.LINEAR else "cols", gemm_width)  # type: ignore[attr-defined]
    pack.result.name_hint = f"{op.rhs.name_hint or 'w'}_packed"  # type: ignore[attr-defined]
    Rewriter.insert_op(pack, InsertPoint.before(op))
    inputs = list(op.epilogue_inputs)
    block = Block(arg_types=[f32] * (1 + len(inputs)))
    b = Builder(InsertPoint.at_end(block))
    b.insert(irt.YieldOp(op.build_epilogue(b, block.args[0], list(block.args[1:]))))
    return irt.ContractOp(ContractionKind.PACKED, op.lhs, pack.result, inputs, op.results[0].type, Region(block))  # type: ignore[attr-defined]


def pack_conv(op: irt_nn.Conv2dOp, rows: int = Target.gemm_rows, width: int = Target.gemm_width,
              winograd: bool = True) -> irt_nn.Conv2dOp | None:
    """`op` with its weight's panels (`irt.pack`, inserted before `op`) as its `packed` operand:
    `rows`-row panels (the lhs of its im2col or direct product), or `width`-wide ones for a conv
    that runs with output pixels as the tile's rows (`conv_on_pixels`: the weights are the rhs), or
    their Winograd transform in panels of `PIXEL_PAIR_ROWS[width]` output channels (`conv_winograd`,
    unless `winograd` is false: the Winograd tile's height); None for a conv the engine would not
    read them for."""
    out_per_group = shape_of(op.weight)[0] // op.group_count
    pixels = conv_on_pixels(op, rows, width)  # with groups, only where they are whole panels
    if not conv_on_engine(op):
        return None
    if winograd and conv_winograd(op):
        pack = irt.PackOp(op.weight, "winograd", PIXEL_PAIR_ROWS[width])
    elif pixels or op.group_count == 1 or out_per_group % rows == 0:
        pack = irt.PackOp(op.weight, "rows", width if pixels else rows)
    else:
        pack = irt.PackOp(_groups_padded(op, rows), "rows", rows)
    pack.result.name_hint = f"{op.weight.name_hint or 'w'}_packed"
    Rewriter.insert_op(pack, InsertPoint.before(op))
    return irt_nn.Conv2dOp(op.input, op.weight, op.bias, op.result.type, epilogue=list(op.epilogue),
                           body=op.detach_region(op.body), packed=pack.result, **op.geometry())


def _groups_padded(op: irt_nn.Conv2dOp, rows: int) -> SSAValue:
    """A grouped conv's weight as [groups * up(O/groups, rows), C/groups*kH*kW], each group's rows
    followed by zero rows up to a multiple of `rows` (inserted before `op`), so that its panels
    are its own: what the engine reads per group (RegNet's and ResNeXt's groups of 4, 8 or 16
    channels at 6-row tiles were packed per group at every call)."""
    o, cg, kh, kw = shape_of(op.weight)
    g = op.group_count
    m, k = o // g, cg * kh * kw
    up = -(-m // rows) * rows
    grouped = irt.ReshapeOp(op.weight, TensorType(f32, [g, m, k]))
    zero = irt.ConstantOp.from_values([0.0], f32)
    zeros = ExpandOp(zero.result, TensorType(f32, [g, up - m, k]))
    padded = ConcatOp([grouped.result, zeros.result], 1, TensorType(f32, [g, up, k]))
    flat = irt.ReshapeOp(padded.result, TensorType(f32, [g * up, k]))
    for new in (grouped, zero, zeros, padded, flat):
        Rewriter.insert_op(new, InsertPoint.before(op))
    return flat.result


@dataclass(frozen=True)
class PackWeightsPass(ModulePass):
    name = "irc-pack-weights"

    inputs: int = 1
    gemm_width: int = Target.gemm_width
    gemm_rows: int = Target.gemm_rows
    winograd: bool = True

    def apply(self, ctx: Context, module: ModuleOp) -> None:
        for fn in module.ops:
            if not isinstance(fn, func.FuncOp) or fn.is_declaration:
                continue
            if self.gemm_width not in GEMM_WIDTHS:
                raise ValueError(f"irc-pack-weights: gemm_width must be 16 or 32, got {self.gemm_width}")
            if self.gemm_rows not in GEMM_ROWS_CHOICES:
                raise ValueError(f"irc-pack-weights: gemm_rows must be one of {GEMM_ROWS_CHOICES}, got {self.gemm_rows}")
            for op in list(fn.body.block.ops):
                new = None
                if (
                    isinstance(op, irt.ContractionBase)
                    and op.contraction_kind != ContractionKind.PACKED
                    and compile_time_known(op.rhs, self.inputs)  # type: ignore[attr-defined]
                ):
                    new = pack_contraction(op, self.gemm_width)
                elif isinstance(op, irt_nn.Conv2dOp) and op.packed is None and compile_time_known(op.weight, self.inputs):
                    new = pack_conv(op, self.gemm_rows, self.gemm_width, self.winograd)
                if new is None:
                    continue
                for name, attr in op.attributes.items():
                    new.attributes[name] = attr
                new.attributes.setdefault(FUSED_ATTR, ArrayAttr([StringAttr(op.name)]))  # provenance
                new.results[0].name_hint = op.results[0].name_hint
                Rewriter.replace_op(op, new)

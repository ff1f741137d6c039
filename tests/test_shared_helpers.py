"""The helpers that replaced copies of the same rule in several lowering modules (issue 11)."""

from __future__ import annotations

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import ArrayAttr, IndexType, IntegerAttr, ModuleOp, StringAttr
from xdsl.rewriter import InsertPoint

from irc.dialects.irt import core as irt
from irc.dialects.static_shape import row_major_strides
from irc.lowering.loops.constants import constant_int
from irc.lowering.tensor.irc_fuse import FUSED_ATTR, fused_from, fused_names


def test_row_major_strides():
    assert row_major_strides((2, 3, 4)) == [12, 4, 1]
    assert row_major_strides((5,)) == [1]
    assert row_major_strides(()) == []
    assert row_major_strides((0, 3)) == [3, 1]


def test_stretched_dims_right_aligns_and_keeps_matching_ones():
    assert irt.stretched_dims((1, 4), (3, 4)) == [True, False]
    assert irt.stretched_dims((4,), (2, 3, 4)) == [False]
    assert irt.stretched_dims((1, 1), (1, 5)) == [False, True]  # size 1 against 1 is not stretched
    assert irt.stretched_dims((3, 1), (2, 3, 7)) == [False, True]


def test_splat_value():
    module = ModuleOp([])
    b = Builder(InsertPoint.at_end(module.body.block))
    splat = b.insert(irt.ConstantOp.from_floats([0.5, 0.5], (2,))).result
    mixed = b.insert(irt.ConstantOp.from_floats([0.5, 1.0], (2,))).result
    scalar = b.insert(irt.ConstantOp.from_floats([2.0])).result
    assert irt.splat_value(splat) == 0.5
    assert irt.splat_value(scalar) == 2.0
    assert irt.splat_value(mixed) is None
    assert irt.splat_value(irt.fconst(b, 1.0)) is None  # an f32 arith.constant is not an irt.constant


def test_constant_int():
    module = ModuleOp([])
    b = Builder(InsertPoint.at_end(module.body.block))
    c7 = b.insert(arith.ConstantOp(IntegerAttr(7, IndexType()))).result
    f = irt.fconst(b, 7.0)
    assert constant_int(c7) == 7
    assert constant_int(f) is None
    assert constant_int(b.insert(arith.AddiOp(c7, c7)).result) is None


def test_fused_names_and_fused_from():
    module = ModuleOp([])
    b = Builder(InsertPoint.at_end(module.body.block))
    op = b.insert(irt.ConstantOp.from_floats([1.0]))
    assert fused_names(op) is None and fused_from(op) == ["irt.constant"]
    op.attributes[FUSED_ATTR] = ArrayAttr([StringAttr("irt.linear"), StringAttr("irt.relu")])
    assert fused_names(op) == fused_from(op) == ["irt.linear", "irt.relu"]


def test_builtin_models_keep_their_order():
    """irc.models writes its table from the families in a fixed order, whatever was imported before it."""
    from irc.models import BUILTIN_MODELS, mlp_spec

    assert list(BUILTIN_MODELS) == [
        "mlp-small", "mlp-medium", "mlp-large", "cnn", "resnet18", "mobilenet-v2", "densenet", "convnext",
        "transformer-encoder", "transformer-block", "eltwise-layernorm",
    ]
    assert mlp_spec("m", 1, [2, 3]).flops == 12

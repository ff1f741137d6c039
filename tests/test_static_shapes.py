"""Shapes irc cannot compile are rejected by the op that sees them (issue 10, item 9), also
when IR is built in Python, where the parser's own checks (no negative sizes) do not apply."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType, f32
from xdsl.ir import Block
from xdsl.utils.exceptions import VerifyException

from irc.dialects.irt import core as irt
from irc.lowering.to_loops.gemm import choose_tiles


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ([DYNAMIC_INDEX, 4], r"irt.relu: operand 0: type tensor<\?x4xf32> has 1 dynamic dimension\(s\) but 0 size"),
        ([-3, 4], r"irt.relu: dimension sizes must be >= 0: operand 0 has type tensor<-3x4xf32>"),
        ([2**62, 4], r"irt.relu: operand 0 has type tensor<4611686018427387904x4xf32>: 1.84e\+19 elements"),
    ],
)
def test_python_built_ir_with_bad_shape_is_rejected(shape, message):
    block = Block(arg_types=[TensorType(f32, shape)])
    op = irt.ReluOp(block.args[0])
    block.add_op(op)
    with pytest.raises(VerifyException, match=message):
        op.verify()


def test_zero_size_shape_verifies():
    block = Block(arg_types=[TensorType(f32, [0, 4])])
    op = irt.ReluOp(block.args[0])
    block.add_op(op)
    op.verify()


def test_gemm_tiles_never_divide_by_zero():
    assert min(choose_tiles(1, 1, 1, 16, 2)) >= 1
    with pytest.raises(ValueError, match="needs M, N, K >= 1, got 4 x 16 x 0"):
        choose_tiles(4, 16, 0, 16, 2)

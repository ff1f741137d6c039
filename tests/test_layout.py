"""torch.roll, constant F.pad and F.dropout(p=0) compile natively (convert_layout.py), like eager."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from irc_testing import check

CASES = {
    "roll one dim": lambda x: torch.roll(x, 1, 1) * 2,
    "roll negative, two dims": lambda x: torch.roll(x, shifts=(-1, 2), dims=(1, 2)) + 1,
    "roll past the size": lambda x: torch.roll(x, 7, -1) - x,
    "roll flattened": lambda x: torch.roll(x, 3) * x,
    "roll by zero": lambda x: torch.roll(x, (0, 4), (1, 1)) + 0.5,
    "pad zero-width": lambda x: F.pad(x, (0, 0, 0, 0)) * 3,
    "pad last two dims": lambda x: F.pad(x, (1, 2, 0, 1)) + 1,
    "pad with a value": lambda x: F.pad(x, (0, 0, 2, 0), value=-3.0) * 2,
    "dropout p=0 in training": lambda x: F.dropout(x, p=0.0) + 1,
}


@pytest.mark.parametrize("name", list(CASES))
def test_layout_op_matches_eager(name):
    check(CASES[name], torch.randn(2, 3, 4))

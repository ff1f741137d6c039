"""torch.einsum (pairwise batched matmuls), torch.swapaxes, and indexing by a compile-time
tensor: what attention blocks written with einsum (MaxViT, Swin-style relative position bias)
are made of. Each runs natively and matches eager."""

from __future__ import annotations

import pytest
import torch
from irc_testing import check
from torch import nn

import irc


class Einsum(nn.Module):
    def __init__(self, equation: str):
        super().__init__()
        self.equation = equation

    def forward(self, a, b=None, c=None):
        return torch.einsum(self.equation, *[x for x in (a, b, c) if x is not None])


CASES = [
    ("bghid,bghjd->bghij", [(2, 3, 4, 5, 8), (2, 3, 4, 6, 8)]),  # MaxViT's scores: 5-D, batch dims merged
    ("bghij,bghjd->bghid", [(2, 3, 4, 5, 6), (2, 3, 4, 6, 8)]),  # and its weighted values
    ("ij,jk->ik", [(5, 7), (7, 3)]),
    ("i,j->ij", [(5,), (7,)]),  # an outer product (rotary embeddings' frequencies)
    ("ij->ji", [(5, 7)]),
    ("ij->", [(5, 7)]),
    ("i,i->", [(5,), (5,)]),
    ("...ij,...jk->...ik", [(2, 3, 5, 7), (2, 3, 7, 4)]),
    ("...ij,jk", [(3, 5, 7), (7, 4)]),  # an ellipsis on one side, implicit result
    ("b i d, b j d -> b i j", [(2, 5, 8), (2, 6, 8)]),  # spaces
    ("bij,jk,bkl->bil", [(2, 3, 4), (4, 5), (2, 5, 6)]),  # three operands
    ("ijk,ikl", [(2, 3, 4), (2, 4, 5)]),  # implicit result: the letters that occur once, sorted
    ("nchw,oc->nohw", [(2, 3, 4, 5), (6, 3)]),  # a 1x1 conv
    ("bxyz,b->bxz", [(2, 3, 4, 5), (2,)]),  # y summed in its operand before the product
    ("bij->bj", [(3, 4, 5)]),
    ("ab,cd->abcd", [(2, 3), (4, 1)]),
    ("bhqd,bhkd->bhqk", [(1, 3, 7, 16), (1, 3, 9, 16)]),  # odd sizes
]


@pytest.mark.parametrize("equation,shapes", CASES, ids=[c[0] for c in CASES])
def test_einsum_matches_eager(equation, shapes):
    torch.manual_seed(0)
    xs = [torch.randn(s) for s in shapes]
    cm = check(Einsum(equation).eval(), *xs, rtol=1e-5, atol=1e-5)
    assert "torch.einsum" not in cm.ir("import")


def test_einsum_takes_its_operands_as_a_list():
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    check(lambda x, y: torch.einsum("ij,jk->ik", [x, y]), a, b)


@pytest.mark.parametrize("equation,shapes,reason", [
    ("ii->i", [(4, 4)], "repeated within one operand"),
    ("ij,jk->ik", [(3, 1), (4, 5)], "is 1 in one operand and 4 in another"),
])
def test_einsum_forms_irc_does_not_take_are_refused_by_name_and_run_eagerly(equation, shapes, reason):
    xs = [torch.randn(s) for s in shapes]
    model = Einsum(equation).eval()
    with pytest.raises(irc.UnsupportedOpError, match=reason):
        irc.compile(model, tuple(xs), fallback=False)
    cm = irc.compile(model, tuple(xs))
    assert cm.eager_nodes
    torch.testing.assert_close(cm(*xs), model(*xs))


def test_swapaxes_and_swapdims():
    x = torch.randn(2, 3, 4, 5)
    check(lambda t: torch.swapaxes(t, -2, -3) * 2, x)
    check(lambda t: t.swapaxes(0, 3) + 1, x)
    check(lambda t: torch.swapdims(t, 1, 2).relu(), x)
    check(lambda t: t.swapdims(-1, 0) - 1, x)


class RelativeBias(nn.Module):
    """MaxViT's relative position bias: a parameter table read at a buffer of indices, which
    symbolic tracing folds into a compile-time tensor."""

    def __init__(self, size: int = 4, heads: int = 3):
        super().__init__()
        self.table = nn.Parameter(torch.randn((2 * size - 1) ** 2, heads))
        coords = torch.stack(torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + size - 1
        self.register_buffer("index", rel[..., 0] * (2 * size - 1) + rel[..., 1])
        self.n = size * size

    def forward(self, q, k):
        bias = self.table[self.index.view(-1)].view(self.n, self.n, -1).permute(2, 0, 1).unsqueeze(0)
        return torch.softmax(torch.einsum("bhid,bhjd->bhij", q, k) + bias, dim=-1)


def test_a_table_read_at_a_buffer_of_indices_runs_natively():
    model = RelativeBias().eval()
    q, k = torch.randn(2, 3, 16, 8), torch.randn(2, 3, 16, 8)
    cm = check(model, q, k)
    # the table is bound, not copied: a change to it in place is seen by the next call
    with torch.no_grad():
        model.table.mul_(-1)
    torch.testing.assert_close(cm(q, k), model(q, k))


@pytest.mark.parametrize("index", [
    [2, 0, 2], [-1, 0], torch.tensor([[1, 0], [2, -3]]), torch.tensor(1), torch.tensor([2, 1], dtype=torch.int32),
])
def test_indexing_by_compile_time_integers(index):
    x = torch.randn(3, 4)
    cm = check(lambda t: t[index] * 2, x)
    assert not cm.eager_nodes


@pytest.mark.parametrize("mask", [
    torch.tensor([True, False, True]),
    torch.tensor([[True, False, True, True], [False, False, True, False], [True, True, True, True]]),
    [False, True, False],
])
def test_indexing_by_a_compile_time_mask(mask):
    x = torch.randn(3, 4, 2)
    check(lambda t: t[mask] + 1, x)


def test_a_compile_time_uint8_index_is_a_mask_in_eager_and_left_to_it():
    """torch reads a uint8 index tensor as a mask (deprecated): irc leaves it to eager, not to its
    integer path (which made a 2x4 result a 3x4 product fail to verify)."""
    x = torch.randn(3, 4)
    mask = torch.tensor([1, 0, 1], dtype=torch.uint8)
    with pytest.warns(UserWarning, match="uint8"):
        expected = x[mask] * 2
    with pytest.raises(irc.UnsupportedOpError, match="advanced indexing"):
        irc.compile(lambda t: t[mask] * 2, (x,), fallback=False)
    cm = irc.compile(lambda t: t[mask] * 2, (x,))
    torch.testing.assert_close(cm(x), expected)


def test_a_compile_time_table_read_at_run_time_indices():
    table = torch.randn(5, 3)
    cm = irc.compile(lambda i: table[i] * 2, (torch.tensor([4, 0, 4]),), fallback=False)
    i = torch.tensor([1, 3])
    torch.testing.assert_close(cm(i), table[i] * 2)


def test_a_compile_time_index_out_of_range_fails_the_compile_as_eager_fails():
    with pytest.raises(irc.IrcError, match="eager PyTorch raises too.*out of bounds"):
        irc.compile(lambda t: t[[0, 3]], (torch.randn(3, 4),))

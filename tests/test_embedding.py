"""nn.Embedding / F.embedding: int64 index inputs, irt.embedding, and the int64 boundaries."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import irc
from irc.errors import InputError, UnsupportedOpError


class Emb(nn.Module):
    def __init__(self, v: int, d: int, **kwargs):
        super().__init__()
        self.e = nn.Embedding(v, d, **kwargs)

    def forward(self, x):
        return self.e(x)


class EmbLinear(nn.Module):
    def __init__(self, v: int = 11, d: int = 7, n: int = 5):
        super().__init__()
        self.e = nn.Embedding(v, d, padding_idx=0)
        self.l = nn.Linear(d, n)

    def forward(self, x):
        return torch.relu(self.l(self.e(x)))


class Functional(nn.Module):
    def __init__(self, v: int, d: int):
        super().__init__()
        self.w = nn.Parameter(torch.randn(v, d))

    def forward(self, x, y):
        return F.embedding(x, self.w) * y


@pytest.mark.parametrize("shape", [(1,), (9,), (1, 1), (3, 5), (2, 3, 4)])
@pytest.mark.parametrize("v,d", [(1, 3), (13, 1), (17, 9)])
def test_embedding_matches_eager(shape, v, d):
    torch.manual_seed(0)
    m = Emb(v, d).eval()
    x = torch.randint(0, v, shape)
    c = irc.compile(m, [x], fallback=False)
    torch.testing.assert_close(c(x), m(x))
    x2 = torch.randint(0, v, shape)
    torch.testing.assert_close(c(x2), m(x2))


@pytest.mark.parametrize("fuse", [True, False])
@pytest.mark.parametrize("shape", [(1, 1), (3, 4), (6,)])
def test_embedding_linear_relu(fuse, shape):
    torch.manual_seed(1)
    m = EmbLinear().eval()
    x = torch.randint(0, 11, shape)
    c = irc.compile(m, [x], fuse=fuse, fallback=False)
    assert "irt.embedding" in c.ir("import")
    torch.testing.assert_close(c(x), m(x))


def test_functional_embedding_with_float_input():
    torch.manual_seed(2)
    m = Functional(10, 6).eval()
    x, y = torch.randint(0, 10, (2, 3)), torch.randn(2, 3, 6)
    c = irc.compile(m, [x, y], fallback=False)
    torch.testing.assert_close(c(x, y), m(x, y))
    assert "int64_t* __restrict__" in c.cpp_source


def test_padding_idx_accepted_and_max_norm_unsupported():
    torch.manual_seed(3)
    m = Emb(8, 4, padding_idx=2).eval()
    x = torch.tensor([[2, 0, 7]])
    torch.testing.assert_close(irc.compile(m, [x], fallback=False)(x), m(x))
    with pytest.raises(UnsupportedOpError, match="max_norm"):
        irc.compile(Emb(8, 4, max_norm=1.0).eval(), [x], fallback=False)


def test_wrong_dtype_input_names_expected_and_actual():
    m = Emb(8, 4).eval()
    x = torch.randint(0, 8, (2, 3))
    c = irc.compile(m, [x], fallback=False)
    with pytest.raises(InputError, match=r"expected dtype torch\.int64, got torch\.float32"):
        c(x.float())
    with pytest.raises(InputError, match=r"expected dtype torch\.int64, got torch\.int32"):
        c(x.int())


def test_wrong_dtype_on_float_input_of_mixed_model():
    m = Functional(10, 6).eval()
    x, y = torch.randint(0, 10, (2, 3)), torch.randn(2, 3, 6)
    c = irc.compile(m, [x, y], fallback=False)
    with pytest.raises(InputError, match=r"input 1 .*expected dtype torch\.float32, got torch\.int64"):
        c(x, y.long())


def test_new_shape_version_keeps_int64():
    torch.manual_seed(4)
    m = Emb(9, 3).eval()
    c = irc.compile(m, [torch.randint(0, 9, (2, 2))], fallback=False)
    x = torch.randint(0, 9, (5,))
    torch.testing.assert_close(c(x), m(x))


def f_int64_into_relu(x, y):
    return torch.relu(x) + y


def test_int64_input_only_into_f32_ops_is_refused_without_fallback():
    with pytest.raises(UnsupportedOpError, match=r"relu \(torch\.relu\): it takes the int64 tensor x; irc computes .* float32"):
        irc.compile(f_int64_into_relu, [torch.randint(0, 5, (3,)), torch.randn(3)], fallback=False)


def test_int64_input_only_into_f32_ops_runs_eagerly_with_fallback():
    x, y = torch.randint(0, 5, (3,)), torch.randn(3)
    cm = irc.compile(f_int64_into_relu, [x, y])
    torch.testing.assert_close(cm(x, y), f_int64_into_relu(x, y))
    assert [n.node for n in cm.eager_nodes] == ["relu"]  # the add takes relu's int64 result natively


class EmbPlusIndex(nn.Module):
    def __init__(self):
        super().__init__()
        self.e = nn.Embedding(5, 3)

    def forward(self, x):
        return self.e(x) + x.unsqueeze(-1)


def test_int64_index_in_float_arithmetic_next_to_an_embedding_is_cast_as_in_eager():
    """int64 tensors are values like any other (they once were embedding indices only): the
    reshape keeps int64, the add promotes it to float32 as eager does."""
    x = torch.randint(0, 5, (4,))
    m = EmbPlusIndex().eval()
    cm = irc.compile(m, [x], fallback=False)
    assert "irt.cast" in cm.ir("import") and "irt.embedding" in cm.ir("import")
    torch.testing.assert_close(cm(x), m(x))


def test_unsupported_input_dtype_is_a_clear_error():
    with pytest.raises(UnsupportedOpError, match=r"torch\.int32.*float32.*int64"):
        irc.compile(Emb(4, 2).eval(), [torch.randint(0, 4, (3,), dtype=torch.int32)], fallback=False)


def test_int32_indices_run_the_embedding_eagerly():
    m, x = Emb(4, 2).eval(), torch.randint(0, 4, (3,), dtype=torch.int32)
    cm = irc.compile(m, [x])
    torch.testing.assert_close(cm(x), m(x))
    assert cm.eager_nodes and "torch.int32" in cm.eager_nodes[0].reason


def test_out_of_range_index_gives_nan_row_not_a_crash():
    torch.manual_seed(5)
    m = Emb(6, 4).eval()
    c = irc.compile(m, [torch.randint(0, 6, (5,))], fallback=False)
    x = torch.tensor([0, 6, -1, 5, 1000000])
    out = c(x)
    assert torch.isnan(out[[1, 2, 4]]).all()
    torch.testing.assert_close(out[[0, 3]], m(x[[0, 3]]))

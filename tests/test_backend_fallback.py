"""torch.compile(backend="irc") never breaks the program, and irc.compile's eager nodes.

Whatever irc cannot compile runs in eager PyTorch with eager's results and one WARNING on logger
"irc"; options={"fallback": False} raises instead. Lifted Python floats are specialized to the
value read at each call, not refused."""

from __future__ import annotations

import logging
import math

import pytest
import torch
from torch import nn

import irc
import irc.api
import irc.backend
from irc.errors import CompileError

torch.manual_seed(0)


def warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "irc" and r.levelno >= logging.WARNING]


def compiled(model, *, record: list | None = None, **kwargs):
    """torch.compile with irc, after a Dynamo reset; `record` collects every DynamoGraph made."""
    torch._dynamo.reset()
    if record is None:
        return torch.compile(model, backend="irc", **kwargs)

    def backend(gm, example_inputs, **kw):
        dg = irc.backend.irc_backend(gm, example_inputs, **kw)
        record.append(dg)
        return dg

    return torch.compile(model, backend=backend, **kwargs)


class MaskedFill(nn.Module):
    def forward(self, x, mask):
        return (x * 2).masked_fill(mask, -1.0) + 1


class EncoderWithPadding(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True)

    def forward(self, src, pad):
        return self.enc(src, src_key_padding_mask=pad)


class Indexing(nn.Module):
    def __init__(self, how: str):
        super().__init__()
        self.lin, self.how = nn.Linear(8, 8), how

    def forward(self, x, idx):
        y = torch.relu(self.lin(x))
        if self.how == "getitem":
            z = y[:, idx]
        elif self.how == "gather":
            z = torch.gather(y, 1, idx)
        else:
            z = torch.index_select(y, 1, idx)
        return z * 2 + 1


class Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.lin = nn.Embedding(10, 8), nn.Linear(8, 4)

    def forward(self, ids):
        return self.lin(self.emb(ids))


def _padding_case():
    pad = torch.zeros(2, 5, dtype=torch.bool)
    pad[0, 3:] = True
    return EncoderWithPadding().eval(), (torch.randn(2, 5, 16), pad)


def _mlp(dtype):
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(dtype).eval(), (torch.randn(3, 8, dtype=dtype),)


x48 = torch.randn(4, 8)
CASES = {
    "masked_fill_mask_input": lambda: (MaskedFill(), (x48, x48 > 0)),
    "src_key_padding_mask": _padding_case,
    "int64_getitem_index": lambda: (Indexing("getitem").eval(), (x48, torch.tensor([0, 2, 5]))),
    "int64_gather": lambda: (Indexing("gather").eval(), (x48, torch.randint(0, 8, (4, 3)))),
    "int64_index_select": lambda: (Indexing("index_select").eval(), (x48, torch.tensor([1, 1, 7]))),
    "int32_embedding_indices": lambda: (Embed().eval(), (torch.randint(0, 10, (2, 5), dtype=torch.int32),)),
    "float64_model": lambda: _mlp(torch.float64),
    "float16_model": lambda: _mlp(torch.float16),
    "bfloat16_model": lambda: _mlp(torch.bfloat16),
}


@pytest.mark.parametrize("case", list(CASES))
def test_graphs_irc_cannot_fully_compile_run_like_eager(case, caplog):
    model, args = CASES[case]()
    f = compiled(model)
    with torch.no_grad(), caplog.at_level(logging.WARNING, logger="irc"):
        for _ in range(2):
            torch.testing.assert_close(f(*args), model(*args))
    (warning,) = warnings(caplog)  # one, naming what runs eagerly and why
    assert "eager PyTorch" in warning


def test_fallback_false_raises_the_irc_error():
    model, (x, mask) = MaskedFill(), (x48, x48 > 0)
    f = compiled(model, options={"fallback": False})
    with torch.no_grad(), pytest.raises(irc.UnsupportedOpError, match=r"masked_fill.*torch\.bool tensor input"):
        f(x, mask)


def test_unknown_option_is_a_clear_error():
    f = compiled(nn.Linear(4, 2), options={"fallbak": False})
    with pytest.raises(Exception, match=r"unknown irc option\(s\) 'fallbak'.*'fallback'"):
        with torch.no_grad():
            f(torch.randn(2, 4))


def test_options_reach_the_backend(caplog):
    """Dynamo passes options= as one keyword: max_versions=1 makes the second shape eager."""
    m = nn.Sequential(nn.Linear(8, 4), nn.ReLU()).eval()
    f = compiled(m, dynamic=True, options={"max_versions": 1})
    with torch.no_grad(), caplog.at_level(logging.WARNING, logger="irc"):
        for batch in (3, 5):
            x = torch.randn(batch, 8)
            torch.testing.assert_close(f(x), m(x))
    (warning,) = warnings(caplog)
    assert "max_versions" in warning


def test_a_failing_cxx_build_runs_the_graph_eagerly(caplog):
    m, x = nn.Sequential(nn.Linear(8, 4), nn.Tanh()).eval(), torch.randn(2, 8)
    f = compiled(m, options={"cxx_flags": ["-O2", "-fno-such-flag-for-irc"]})
    with torch.no_grad(), caplog.at_level(logging.WARNING, logger="irc"):
        torch.testing.assert_close(f(x), m(x))
        torch.testing.assert_close(f(x), m(x))
    (warning,) = warnings(caplog)
    assert "C++ compilation failed" in warning and "options={'fallback': False}" in warning
    f = compiled(m, options={"cxx_flags": ["-O2", "-fno-such-flag-for-irc"], "fallback": False})
    with torch.no_grad(), pytest.raises(CompileError):
        f(x)


def test_an_internal_error_runs_the_graph_eagerly(caplog, monkeypatch):
    def broken(*args, **kwargs):
        raise AssertionError("a bug")

    monkeypatch.setattr(irc.backend, "compile", broken)
    m, x = nn.Sequential(nn.Linear(8, 4), nn.Tanh()).eval(), torch.randn(2, 8)
    f = compiled(m)
    with torch.no_grad(), caplog.at_level(logging.WARNING, logger="irc"):
        torch.testing.assert_close(f(x), m(x))
    (warning,) = warnings(caplog)
    assert "AssertionError: a bug" in warning and "internal error" in warning


def test_a_new_shape_that_fails_to_compile_runs_eagerly(caplog, monkeypatch):
    """The version for a new shape is compiled inside the returned callable: its failure too.
    (A convolution takes static sizes only, so under dynamic=True each batch is a version.)"""
    m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Sigmoid()).eval()
    f = compiled(m, dynamic=True)
    x3 = torch.randn(5, 3, 8, 8)
    with torch.no_grad():
        torch.testing.assert_close(f(x3), m(x3))

    def failing_build(source, flags=None):
        raise CompileError(["g++"], "simulated failure", "model.cpp")

    monkeypatch.setattr(irc.api, "build_library", failing_build)
    x = torch.randn(6, 3, 8, 8)
    with torch.no_grad(), caplog.at_level(logging.WARNING, logger="irc"):
        torch.testing.assert_close(f(x), m(x))
        torch.testing.assert_close(f(x), m(x))
    (warning,) = warnings(caplog)
    assert "new input shapes" in warning and "simulated failure" in warning


# --- lifted Python scalars under dynamic=True ------------------------------------------------


class Lifted(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 8, norm_type=2.0)
        self.ln = nn.LayerNorm(8)
        self.lin = nn.Linear(8, 4)
        self.alpha = 0.5

    def forward(self, ids):
        return self.lin(self.ln(self.emb(ids))) * self.alpha


def test_lifted_floats_are_specialized_and_a_free_one_is_read_at_every_call(caplog):
    m, ids = Lifted().eval(), torch.randint(0, 10, (2, 5))
    seen: list = []
    f = compiled(m, dynamic=True, record=seen)
    with torch.no_grad(), caplog.at_level(logging.WARNING, logger="irc"):
        torch.testing.assert_close(f(ids), m(ids))
        (dg,) = seen
        assert len(dg.scalar_idx) >= 2  # eps, norm_type and alpha arrive as 0-d float64 inputs
        m.alpha = 2.0  # a free SymFloat: Dynamo does not recompile, the value must not be stale
        torch.testing.assert_close(f(ids), m(ids))
        assert len(seen) == 1 and len(dg.compiled) == 2
        m.alpha = 0.5
        torch.testing.assert_close(f(ids), m(ids))
        assert len(dg.compiled) == 2  # the first version, reused
    assert warnings(caplog) == []
    assert all(cm is not None and not cm.eager_nodes for _, cm in dg.compiled.values())  # all native


class SizeArithmetic(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        y = self.lin(x) / math.sqrt(x.shape[-1])
        return y.reshape(x.shape[0] * 2, x.shape[1] // 2) + x.shape[0]


def test_symint_sizes_are_read_from_the_inputs_shapes(caplog):
    """SymInt inputs that are sizes of tensor inputs are not specialized: the graph reads them
    from the tensor's shape, so one compiled module serves every batch (with symbolic sizes
    where every op supports them, else a version per shape), and size arithmetic is right."""
    m = SizeArithmetic().eval()
    seen: list = []
    f = compiled(m, dynamic=True, record=seen)
    with torch.no_grad(), caplog.at_level(logging.WARNING, logger="irc"):
        for batch in (3, 5, 3, 7):
            x = torch.randn(batch, 8)
            torch.testing.assert_close(f(x), m(x))
    assert warnings(caplog) == []
    (dg,) = seen
    assert len(dg.compiled) == 1
    assert all(cm is not None and not cm.eager_nodes for _, cm in dg.compiled.values())


# --- irc.compile(fallback=True): eager nodes ----------------------------------------------------


def test_irc_compile_runs_nodes_taking_a_bool_input_eagerly():
    x, mask = torch.randn(4, 8), torch.randn(4, 8) > 0
    cm = irc.compile(MaskedFill(), (x, mask))
    torch.testing.assert_close(cm(x, mask), MaskedFill()(x, mask))
    assert [n.node for n in cm.eager_nodes] == ["masked_fill"] and "torch.bool" in cm.eager_nodes[0].reason
    assert len(cm.versions[((4, 8), (4, 8))].partitions) == 2  # x * 2 and + 1 stay native
    with pytest.raises(irc.UnsupportedOpError, match=r"masked_fill.*torch\.bool tensor input"):
        irc.compile(MaskedFill(), (x, mask), fallback=False)


class RuntimeMask(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        y = self.lin(x)
        return torch.where(y > 0, y, y * 0.1) + 1


def test_irc_compile_runs_a_runtime_mask_and_its_users_eagerly():
    m, x = RuntimeMask().eval(), torch.randn(3, 8)
    cm = irc.compile(m, (x,))
    torch.testing.assert_close(cm(x), m(x))
    assert [n.node for n in cm.eager_nodes] == ["gt", "where"]
    assert "a torch.bool tensor computed in eager PyTorch" in cm.eager_nodes[1].reason


def test_irc_compile_runs_a_float64_model_eagerly():
    m, (x,) = _mlp(torch.float64)
    cm = irc.compile(m, (x,))
    torch.testing.assert_close(cm(x), m(x), rtol=0, atol=0)
    with pytest.raises(irc.UnsupportedOpError, match=r"torch\.float64"):
        irc.compile(m, (x,), fallback=False)


@torch.fx.wrap
def opaque_cumsum(x):
    return torch.cumsum(x, 1)


class TwoParts(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin1, self.lin2 = nn.Linear(6, 6), nn.Linear(6, 3)

    def forward(self, x):
        return torch.sigmoid(self.lin2(opaque_cumsum(torch.relu(self.lin1(x)))))


def test_eager_nodes_include_a_partition_that_failed_to_compile(monkeypatch):
    real = irc.api._native_version

    def fail_on_sigmoid(gm, inputs, **kwargs):
        targets = {n.target for n in gm.graph.nodes}
        if torch.sigmoid in targets and opaque_cumsum not in targets:  # the partition, not the whole graph
            raise CompileError(["g++"], "simulated failure", "model.cpp")
        return real(gm, inputs, **kwargs)

    monkeypatch.setattr(irc.api, "_native_version", fail_on_sigmoid)
    m, x = TwoParts().eval(), torch.randn(2, 6)
    cm = irc.compile(m, (x,))
    torch.testing.assert_close(cm(x), m(x))
    eager = {n.node: n.reason for n in cm.eager_nodes}
    assert set(eager) == {"opaque_cumsum", "lin2", "sigmoid"}
    assert "failed to compile" in eager["sigmoid"] and "simulated failure" not in eager["opaque_cumsum"]


def pool_with_indices(x):
    y = torch.relu(x * 2)
    pooled = torch.ops.aten.max_pool2d_with_indices.default(y, [2, 2], [2, 2])
    return pooled[0] * 2, opaque_cumsum(pooled[1].float())


def test_a_tuple_result_taken_by_an_eager_node_keeps_its_producer_eager():
    """The pool's indices go to an eager node: a partition cannot return the pool's tuple, so the
    pool runs eagerly, and the nodes before and after it are still native."""
    x = torch.randn(1, 3, 8, 8)
    cm = irc.compile(pool_with_indices, (x,))
    torch.testing.assert_close(cm(x), pool_with_indices(x))
    eager = {n.node: n.reason for n in cm.eager_nodes}
    assert "getitem_1, a result of" in eager["max_pool2d_with_indices_default"]
    assert not any("failed to compile" in r for r in eager.values())
    assert "irt.relu" in cm.ir("import")


@torch.fx.wrap
def flat_of_transpose(y):
    return y.t().view(-1)  # works for the layout eager gives `y`, not for a contiguous one


def transposed_then_eager_view(x):
    return flat_of_transpose(torch.tanh(x.t() * 2)) + 1


def test_native_results_keep_the_traced_layout_for_eager_nodes():
    x = torch.randn(3, 5)
    cm = irc.compile(transposed_then_eager_view, (x,))
    torch.testing.assert_close(cm(x), transposed_then_eager_view(x))
    assert [n.node for n in cm.eager_nodes] == ["flat_of_transpose"]


class ScaledMaskedFill(nn.Module):
    def __init__(self):
        super().__init__()
        self.alpha = 0.5

    def forward(self, x, mask):
        return (x * self.alpha).masked_fill(mask, -1.0) + 1


def test_a_graph_compiled_again_for_a_new_value_warns_once(caplog):
    m, x = ScaledMaskedFill(), torch.randn(4, 8)
    mask = x > 0
    seen: list = []
    f = compiled(m, dynamic=True, record=seen)
    with torch.no_grad(), caplog.at_level(logging.INFO, logger="irc"):
        for alpha in (0.5, 3.0):
            m.alpha = alpha
            torch.testing.assert_close(f(x, mask), m(x, mask))
    (dg,) = seen
    assert len(dg.compiled) == 2
    assert len(warnings(caplog)) == 1  # the second version's partition note is at INFO
    assert any("masked_fill" in r.getMessage() for r in caplog.records if r.levelno == logging.INFO)

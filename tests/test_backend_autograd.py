"""Grad-enabled calls through torch.compile(backend="irc"). Until a backward pass goes through a
graph, it runs as inference would (weights folded, irc.compile's autograd recomputing the graph
eagerly for a backward); from the first backward on, AOTAutograd's training graphs: irc compiling
the forward and the ATen backward run eagerly. A graph with random ops or a training-mode batch
norm takes the training graphs from the start. Gradients must be eager's, and weights are read at
every call."""

from __future__ import annotations

import copy
import logging
import threading

import pytest
import torch
from torch import nn

import irc.backend


class Recording(irc.backend.DynamoGraph):
    made: list = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        Recording.made.append(self)


@pytest.fixture
def record(monkeypatch):
    Recording.made = []
    monkeypatch.setattr(irc.backend, "DynamoGraph", Recording)
    torch._dynamo.reset()
    yield Recording.made
    torch._dynamo.reset()


def mlp():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def cnn():
    return nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 4 * 4, 5)
    )


def block():
    return nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)


MODELS = {"mlp": (mlp, (3, 8)), "cnn": (cnn, (2, 3, 8, 8)), "transformer_block": (block, (2, 5, 16))}


def native_forwards(made, aot: bool | None = None) -> list:
    """The CompiledModules irc built: for AOTAutograd forwards (weights as run-time inputs) if
    `aot`, for inference graphs if not `aot`, for both if None."""
    return [
        cm for dg in made if aot is None or dg.aot == aot for _, cm in dg.compiled.values() if cm is not None
    ]


# Native fp32 GEMMs and convolutions sum in another order than eager, and three SGD steps carry the
# difference into the weights: measured at most 3.0e-5 absolute (CNN) and 1.2e-5 (transformer block),
# over the default atol of 1e-5.
TOL = {"rtol": 1e-4, "atol": 1e-4}


def assert_same_grads(model, ref):
    for (name, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
        assert p.grad is not None, name
        torch.testing.assert_close(p.grad, q.grad, **TOL, msg=lambda m, name=name: f"{name}: {m}")


@pytest.mark.parametrize("name", list(MODELS))
def test_training_gives_eager_gradients_and_sees_optimizer_steps(name, record):
    torch.manual_seed(0)
    build, shape = MODELS[name]
    model = build()
    ref = copy.deepcopy(model)
    f = torch.compile(model, backend="irc")
    opt, ref_opt = torch.optim.SGD(model.parameters(), lr=0.1), torch.optim.SGD(ref.parameters(), lr=0.1)
    for _ in range(3):
        x = torch.randn(*shape)
        out, expected = f(x), ref(x)
        torch.testing.assert_close(out, expected, **TOL)  # step > 0: the updated weights were read
        assert out.grad_fn is not None
        (out * out).sum().backward()
        (expected * expected).sum().backward()
        assert_same_grads(model, ref)
        opt.step(), ref_opt.step(), opt.zero_grad(), ref_opt.zero_grad()
    assert native_forwards(record, aot=True), "the training forward was not compiled by irc"


def test_a_compiled_submodule_gets_its_gradients(record):
    torch.manual_seed(1)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.pre, self.body, self.post = nn.Linear(8, 8), nn.Sequential(nn.Linear(8, 8), nn.Tanh()), nn.Linear(8, 2)

        def forward(self, x):
            return self.post(self.body(self.pre(x)))

    net = Net()
    ref = copy.deepcopy(net)
    net.body = torch.compile(net.body, backend="irc")
    x = torch.randn(3, 8)
    net(x).sum().backward()
    ref(x).sum().backward()
    assert_same_grads(net, ref)
    assert native_forwards(record)


def test_input_gradients_and_dynamic_shapes(record):
    torch.manual_seed(2)
    model = mlp()
    ref = copy.deepcopy(model)
    f = torch.compile(model, backend="irc", dynamic=True)
    for batch in (3, 5):
        x = torch.randn(batch, 8, requires_grad=True)
        xr = x.detach().clone().requires_grad_()
        f(x).sum().backward()
        ref(xr).sum().backward()
        torch.testing.assert_close(x.grad, xr.grad)
    assert_same_grads(model, ref)
    assert native_forwards(record)


def test_no_grad_after_training_uses_the_inference_path(record):
    torch.manual_seed(3)
    model = mlp()
    f = torch.compile(model, backend="irc")
    x = torch.randn(3, 8)
    f(x).sum().backward()
    with torch.no_grad():
        torch.testing.assert_close(f(x), model(x))
    assert any(dg.param_idx for dg in record)  # the inference graph binds weights as parameters


def test_a_training_forward_irc_cannot_compile_runs_eagerly(record, caplog):
    torch.manual_seed(4)
    model = mlp().double()
    ref = copy.deepcopy(model)
    f = torch.compile(model, backend="irc")
    x = torch.randn(3, 8, dtype=torch.float64)
    with caplog.at_level(logging.WARNING, logger="irc"):
        f(x).sum().backward()
    ref(x).sum().backward()
    assert_same_grads(model, ref)
    assert [r for r in caplog.records if r.name == "irc" and r.levelno == logging.WARNING]


def test_lifted_float_in_training_under_dynamic_shapes(record):
    """AOTAutograd restarts Dynamo to specialize LayerNorm's eps: the backend tolerates it."""
    torch.manual_seed(5)

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin, self.ln, self.alpha = nn.Linear(8, 8), nn.LayerNorm(8), 0.5

        def forward(self, x):
            return self.ln(self.lin(x)) * self.alpha

    model = Scaled()
    ref = copy.deepcopy(model)
    f = torch.compile(model, backend="irc", dynamic=True)
    x = torch.randn(4, 8)
    out = f(x)
    torch.testing.assert_close(out, ref(x))
    out.sum().backward()
    ref(x).sum().backward()
    assert_same_grads(model, ref)


class FunctionalNorm(nn.Module):
    """Running statistics of its own, read through F.batch_norm."""

    def __init__(self, c):
        super().__init__()
        self.register_buffer("mean", torch.randn(c) * 0.1)
        self.register_buffer("var", torch.rand(c) + 0.5)

    def forward(self, x):
        return nn.functional.batch_norm(x, self.mean, self.var, None, None, self.training, 0.1, 1e-5)


@pytest.mark.parametrize("norm", [nn.BatchNorm2d, FunctionalNorm], ids=["module", "functional"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_eval_batch_norm_with_grad_enabled_runs_natively(norm, dynamic, record, caplog):
    """An eval-mode model called with grad enabled (no torch.no_grad()): AOTAutograd's forward
    returns the batch norm's saved mean and inverse std, empty tensors in eval. They are made in
    Python, so the batch norm stays native (it ran eagerly, with a WARNING, before), and the
    gradients are eager's."""
    torch.manual_seed(6)
    model = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), norm(6), nn.ReLU(), nn.Conv2d(6, 4, 1), norm(4)).eval()
    if norm is nn.BatchNorm2d:
        for bn in (model[1], model[4]):
            bn.running_mean.normal_(0, 0.1)
            bn.running_var.uniform_(0.5, 1.5)
    ref = copy.deepcopy(model)
    f = torch.compile(model, backend="irc", dynamic=dynamic)
    for shape in [(2, 3, 8, 8), (3, 3, 6, 10)]:
        x = torch.randn(shape)
        with caplog.at_level(logging.WARNING, logger="irc"):
            out = f(x)
        expected = ref(x)
        torch.testing.assert_close(out, expected)
        out.square().sum().backward()
        expected.square().sum().backward()
        assert_same_grads(model, ref)
        model.zero_grad()
        ref.zero_grad()
    assert not [r for r in caplog.records if r.name == "irc" and r.levelno >= logging.WARNING]
    forwards = native_forwards(record)
    assert forwards and all(not cm.eager_nodes for cm in forwards)


def eval_cnn():
    torch.manual_seed(7)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 4 * 4, 5)
    ).eval()
    model[1].running_mean.normal_(0, 0.1)
    model[1].running_var.uniform_(0.5, 1.5)
    return model


def test_an_eval_model_called_with_grad_runs_as_inference_until_a_backward(record, caplog):
    """The common way to run an eval model (no torch.no_grad()): the inference graph, weights
    folded and packed once, and no AOTAutograd forward compiled. A backward pass gets eager's
    gradients (the graph recomputed eagerly); from then on the training graphs run."""
    model = eval_cnn()
    ref = copy.deepcopy(model)
    f = torch.compile(model, backend="irc")
    x = torch.randn(2, 3, 8, 8)
    for _ in range(2):
        out = f(x)
        torch.testing.assert_close(out, ref(x), **TOL)
        assert out.grad_fn is not None
    assert native_forwards(record, aot=False) and not native_forwards(record, aot=True)
    assert [dg for dg in record if not dg.aot][0].backward_calls() == 0
    for _ in range(2):  # the first backward recomputes; the second goes through the training graphs
        with caplog.at_level(logging.INFO, logger="irc"):
            out, expected = f(x), ref(x)
        torch.testing.assert_close(out, expected, **TOL)
        out.square().sum().backward()
        expected.square().sum().backward()
        assert_same_grads(model, ref)
        model.zero_grad(), ref.zero_grad()
    assert native_forwards(record, aot=True)
    assert any("a backward pass went through this graph" in r.getMessage() for r in caplog.records)


def test_a_training_graph_runs_the_training_graphs_from_the_start(record):
    """Random ops (a training-mode dropout) say the graph trains: AOTAutograd's graphs from the
    first call, whose backward uses the forward's mask (compiled graphs draw other masks than
    eager, so the mask is read from the output)."""
    torch.manual_seed(8)
    model = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.3)).train()
    ref = copy.deepcopy(model)
    f = torch.compile(model, backend="irc")
    x = torch.randn(5, 8)
    out = f(x)
    kept = out != 0
    assert 0 < kept.sum() < kept.numel()
    expected = ref[0](x) * kept / 0.7
    torch.testing.assert_close(out, expected, **TOL)
    out.square().sum().backward()
    expected.square().sum().backward()
    assert_same_grads(model, ref)
    assert record and all(dg.aot for dg in record)


@pytest.mark.parametrize("calls_before", [0, 2], ids=["inference", "training-graphs"])
def test_a_weight_changed_in_place_before_backward_is_an_error_as_in_eager(calls_before, record):
    """The forward saves the weights themselves (AOTAutograd's saved `aten.t(weight)` is a view,
    made in Python, not a native copy), so autograd sees a weight changed between the forward and
    the backward, and raises as eager does, instead of differentiating with the old values."""
    torch.manual_seed(10)
    model = mlp()
    f = torch.compile(model, backend="irc")
    x = torch.randn(3, 8)
    for _ in range(calls_before):
        f(x).sum().backward()
    for run in (model, f):
        out = run(x)
        with torch.no_grad():
            model[2].weight.mul_(1.5)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()
    assert native_forwards(record, aot=calls_before > 0)


def test_training_batch_norms_run_natively_with_eagers_statistics(record, caplog):
    """A training-mode CNN: the batch norms' batch statistics, outputs, gradients and updated
    running statistics are eager's over several optimizer steps, and only the max pool's
    indices (which irc does not compute) run eagerly."""
    torch.manual_seed(11)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 6, 3, stride=2), nn.BatchNorm2d(6, momentum=0.3), nn.ReLU(), nn.Flatten(), nn.Linear(6, 3),
    ).train()
    ref = copy.deepcopy(model)
    f = torch.compile(model, backend="irc")
    opt, ref_opt = torch.optim.SGD(model.parameters(), lr=0.1), torch.optim.SGD(ref.parameters(), lr=0.1)
    with caplog.at_level(logging.WARNING, logger="irc"):
        for _ in range(3):
            x = torch.randn(4, 3, 6, 6) * 2 + 1
            out, expected = f(x), ref(x)
            torch.testing.assert_close(out, expected, **TOL)
            out.square().sum().backward()
            expected.square().sum().backward()
            assert_same_grads(model, ref)
            opt.step(), ref_opt.step(), opt.zero_grad(), ref_opt.zero_grad()
    for (name, b), (_, r) in zip(model.named_buffers(), ref.named_buffers()):
        torch.testing.assert_close(b, r, **TOL, msg=lambda m, name=name: f"{name}: {m}")
    warnings = " ".join(r.getMessage() for r in caplog.records if r.name == "irc" and r.levelno >= logging.WARNING)
    assert "max_pool2d_with_indices" in warnings and "batch_norm" not in warnings
    assert record and all(dg.aot for dg in record)


def test_grad_enabled_first_calls_from_threads(record):
    """Threads making their first grad-enabled calls at once, one of them compiling while the
    others ask whether a backward went through the graph."""
    model = eval_cnn()
    f = torch.compile(model, backend="irc", dynamic=False)
    xs = [torch.randn(2, 3, 8, 8) for _ in range(4)]
    with torch.no_grad():
        expected = [model(x) for x in xs]
    start, errors = threading.Barrier(len(xs)), []

    def run(x, ref):
        try:
            start.wait()
            for _ in range(3):
                torch.testing.assert_close(f(x), ref, **TOL)
        except BaseException as e:  # re-raised on the test's thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=pair) for pair in zip(xs, expected)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    assert native_forwards(record, aot=False)

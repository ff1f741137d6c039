"""Weight guards, refresh_weights() and autograd through irc.compile: a compiled module never
runs on weights the model no longer has, and a call eager would record for autograd has eager's
gradients."""

from __future__ import annotations

import copy
import threading

import pytest
import torch
from torch import nn
from torch.nn import functional as F

import irc


def mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).eval()


def cnn() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 4, 1)).eval()


class Functional(nn.Module):
    """Weights read through get_attr: a traced GraphModule holds its own references to them."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(16, 8))
        self.register_buffer("scale", torch.rand(16) + 0.5)

    def forward(self, x):
        return F.relu(F.linear(x, self.weight) * self.scale)


def same(cm, model, *inputs):
    with torch.no_grad():
        torch.testing.assert_close(cm(*inputs), model(*inputs))


# --- reassignment and new storage: detected per call ---------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        lambda m: setattr(m[0], "weight", nn.Parameter(torch.randn(16, 8))),
        lambda m: setattr(m[0].weight, "data", torch.randn(16, 8)),
        lambda m: setattr(m[2], "bias", nn.Parameter(torch.randn(4))),
        lambda m: m.load_state_dict({k: torch.randn_like(v) for k, v in m.state_dict().items()}, assign=True),
        lambda m: m.load_state_dict({k: torch.randn_like(v) for k, v in m.state_dict().items()}),
    ],
    ids=["parameter", "data", "bias", "load_state_dict-assign", "load_state_dict"],
)
def test_changed_weights_are_seen(change):
    m, x = mlp(), torch.randn(3, 8)
    cm = irc.compile(m, (x,))
    same(cm, m, x)
    change(m)
    same(cm, m, x)
    same(cm, m, torch.randn(5, 8))  # and by a version compiled after the change


@pytest.mark.parametrize(
    "change",
    [
        lambda m: setattr(m[1], "running_var", torch.rand(8) + 2.0),  # a reassigned buffer
        lambda m: setattr(m[1].running_mean, "data", torch.randn(8)),
        lambda m: setattr(m[0], "weight", nn.Parameter(torch.randn(8, 3, 3, 3))),
        lambda m: m[1].running_var.mul_(4),  # in place: refolded
    ],
    ids=["buffer", "buffer-data", "conv-weight", "in-place"],
)
def test_changed_folded_weights_are_seen(change):
    m, x = cnn(), torch.randn(1, 3, 8, 8)
    cm = irc.compile(m, (x,))
    same(cm, m, x)
    change(m)
    same(cm, m, x)


@pytest.mark.parametrize(
    "change",
    [
        lambda m: setattr(m, "weight", nn.Parameter(torch.randn(16, 8))),
        lambda m: setattr(m.weight, "data", torch.randn(16, 8)),
        lambda m: setattr(m, "scale", torch.rand(16)),
        lambda m: m.scale.mul_(3),
    ],
    ids=["parameter", "data", "buffer", "buffer-in-place"],
)
def test_root_attributes_reassigned(change):
    m, x = Functional(), torch.randn(3, 8)
    cm = irc.compile(m, (x,))
    same(cm, m, x)
    change(m)
    same(cm, m, x)


def test_a_reassigned_weight_of_another_shape_is_a_clear_error():
    m, x = mlp(), torch.randn(3, 8)
    cm = irc.compile(m, (x,))
    m[0].weight = nn.Parameter(torch.randn(16, 9))
    with pytest.raises(irc.IrcError, match=r"rebuilding for the model's new weights failed.*0\.weight was reassigned"):
        cm(x)


def test_no_rebuild_without_a_change(monkeypatch):
    m, x = cnn(), torch.randn(1, 3, 8, 8)
    cm = irc.compile(m, (x,))
    with torch.no_grad():
        m[3].weight.mul_(2)  # read in place by the native code: nothing to rebuild
    monkeypatch.setattr(cm, "_build", lambda *a, **k: pytest.fail("rebuilt without a reassignment"))
    same(cm, m, x)


def test_eager_training_steps_between_calls_are_seen():
    """Training steps taken in eager PyTorch between calls (train(), forward, eval()) update a
    batch norm's running statistics inside its kernel, which does not bump their version counters;
    its num_batches_tracked (add_) does, and the guard watches it: the next call matches eager."""
    m, reference, x = cnn(), cnn(), torch.randn(4, 3, 8, 8)
    cm = irc.compile(m, (x,))
    same(cm, reference, x)
    version = m[1].running_mean._version
    for model in (m, reference):
        model.train()
        model(x)
        model(x + 1)
        model.eval()
    assert m[1].running_mean._version == version and int(m[1].num_batches_tracked) == 2
    same(cm, reference, x)


class FunctionalBatchNorm(nn.Module):
    """Running statistics of its own, passed to F.batch_norm: no num_batches_tracked."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.register_buffer("mean", torch.zeros(8))
        self.register_buffer("var", torch.ones(8))

    def forward(self, x):
        return F.relu(F.batch_norm(self.conv(x), self.mean, self.var, None, None, self.training, 0.1, 1e-5))


def test_functional_running_statistics_updated_by_eager_training_steps_are_seen():
    """Running statistics of a module's own, updated through F.batch_norm in eager training
    steps between calls: no version moves and there is no num_batches_tracked, so the guard
    compares their values (before, the results used the old statistics: 0.07 apart)."""
    torch.manual_seed(0)
    m, x = FunctionalBatchNorm().eval(), torch.randn(4, 3, 8, 8)
    cm = irc.compile(m, (x,))
    same(cm, m, x)
    for step in range(2):
        m.train()
        m(x + step)
        m.eval()
        assert m.mean._version == 0 and m.mean.abs().sum() > 0  # updated inside the kernel
        same(cm, m, x)


def rebuilds(cm, monkeypatch) -> list:
    """Records every rebuild of `cm` against the model's weights."""
    seen, rebind = [], cm._rebind_weights

    def counted(*args, **kwargs):
        seen.append(cm._weights.reasons())
        return rebind(*args, **kwargs)

    monkeypatch.setattr(cm, "_rebind_weights", counted)
    return seen


def test_running_statistics_compared_by_value_rebuild_only_when_they_change(monkeypatch):
    """The value comparison is bitwise (a NaN statistic equals itself: no rebuild per call), and
    running statistics the graph updates itself (a batch norm in training mode, run eagerly)
    are not compared (they change at every call)."""
    torch.manual_seed(1)
    x = torch.randn(2, 3, 8, 8)
    m = FunctionalBatchNorm().eval()
    m.var[3] = float("nan")
    cm = irc.compile(m, (x,))
    seen = rebuilds(cm, monkeypatch)
    for _ in range(3):
        torch.testing.assert_close(cm(x), m(x), equal_nan=True)
    assert seen == []
    m.mean.data[0] = 0.5  # through .data: no version moves, but the values are compared
    torch.testing.assert_close(cm(x), m(x), equal_nan=True)
    assert len(seen) == 1

    training = FunctionalBatchNorm().train()
    reference = FunctionalBatchNorm().train()
    reference.load_state_dict(training.state_dict())
    ct = irc.compile(training, (x,))  # the batch norm runs eagerly, updating the statistics
    seen = rebuilds(ct, monkeypatch)
    for _ in range(3):
        torch.testing.assert_close(ct(x), reference(x))
    assert seen == [] and training.mean.abs().sum() > 0
    torch.testing.assert_close(training.mean, reference.mean)


def test_optimizer_steps_are_seen():
    m, x = mlp(), torch.randn(3, 8)
    cm = irc.compile(m, (x,))
    opt = torch.optim.SGD(m.parameters(), lr=0.5)
    for _ in range(3):
        m(x).square().sum().backward()
        opt.step()
        opt.zero_grad()
        same(cm, m, x)


# --- writes through .data: the documented contract -----------------------------------------


@pytest.mark.parametrize("make", [mlp, cnn], ids=["mlp-packed", "cnn-folded"])
def test_writes_through_data_need_refresh_weights(make):
    m = make()
    x = torch.randn(3, 8) if isinstance(m[0], nn.Linear) else torch.randn(1, 3, 8, 8)
    cm = irc.compile(m, (x,))
    same(cm, m, x)
    for p in m.parameters():
        p.data.mul_(2)  # same storage, and .data's own version counter: invisible to a cheap check
    cm.refresh_weights()
    same(cm, m, x)


# --- autograd ------------------------------------------------------------------------------


def _grads(model: nn.Module, out: torch.Tensor) -> list[torch.Tensor]:
    model.zero_grad()
    out.square().sum().backward()
    return [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("make,shape", [(mlp, (3, 8)), (cnn, (2, 3, 8, 8))], ids=["mlp", "cnn"])
def test_autograd_gives_eager_gradients(make, shape):
    m = make()
    x = torch.randn(shape, requires_grad=True)
    cm = irc.compile(m, (x.detach(),))
    out = cm(x)
    assert out.grad_fn is not None
    got = _grads(m, out)
    x_grad = x.grad.clone()
    x.grad = None
    expected = _grads(m, m(x))
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e)
    torch.testing.assert_close(x_grad, x.grad)


def test_no_grad_and_inference_mode_record_nothing():
    m, x = mlp(), torch.randn(3, 8)
    cm = irc.compile(m, (x,))
    with torch.no_grad():
        assert cm(x).grad_fn is None
    with torch.inference_mode():
        assert cm(x).grad_fn is None
    for p in m.parameters():
        p.requires_grad_(False)
    assert cm(x).grad_fn is None


class TwoOutputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = mlp()

    def forward(self, x):
        y = self.body(x)
        return y.relu(), y * 2


def test_autograd_with_several_outputs():
    m = TwoOutputs()
    cm = irc.compile(m, (torch.randn(3, 8),))
    x = torch.randn(3, 8, requires_grad=True)
    a, b = cm(x)
    (a.sum() + b.square().sum()).backward()
    got = [x.grad.clone()] + [p.grad.clone() for p in m.parameters()]
    x.grad = None
    m.zero_grad()
    a, b = m(x)
    (a.sum() + b.square().sum()).backward()
    for g, e in zip(got, [x.grad] + [p.grad for p in m.parameters()]):
        torch.testing.assert_close(g, e)


# --- calls from several threads, layouts, signatures ----------------------------------------


def at_once(check, inputs) -> None:
    """Run `check(x)` three times for each input, one thread per input, all starting together;
    re-raise the first failure on this thread."""
    start, errors = threading.Barrier(len(inputs)), []

    def worker(x):
        try:
            start.wait()
            for _ in range(3):
                check(x)
        except BaseException as e:  # reported on the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(x,)) for x in inputs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_threads_creating_versions_at_once():
    m = mlp()
    cm = irc.compile(m, (torch.randn(3, 8),))
    at_once(lambda x: same(cm, m, x), [torch.randn(b, 8) for b in (1, 2, 4, 6)])
    assert len(cm.versions) == 5


def test_channels_last_and_strided_inputs():
    m, x = cnn(), torch.randn(2, 3, 8, 8).to(memory_format=torch.channels_last)
    cm = irc.compile(m, (x,))
    same(cm, m, x)
    same(cm, m, torch.randn(2, 3, 8, 8))
    same(cm, m, torch.randn(2, 3, 8, 16)[..., ::2])
    assert "has strides (192, 1, 24, 3): each call copies its 1536 bytes" in cm.explain()
    lin = mlp()
    cm = irc.compile(lin, (torch.randn(8, 3).t(),))
    same(cm, lin, torch.randn(8, 3).t())


class WithDefaults(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, x, mask=None, scale: float = 2.0, *, bias: float = 1.0):
        y = self.lin(x) * scale + bias
        if mask is not None:
            y = y.masked_fill(mask, 0.0)
        return y


def test_forward_defaults_are_specialized():
    m, x = WithDefaults().eval(), torch.randn(3, 8)
    cm = irc.compile(m, (x,))
    same(cm, m, x)
    with pytest.raises(irc.InputError, match=r"expected 1 input.*got 2; specialized .*mask=None, scale=2.0"):
        cm(x, torch.zeros(3, 4, dtype=torch.bool))
    cm2 = irc.compile(lambda x, y, alpha=0.5: x * alpha + y, (x, x))
    torch.testing.assert_close(cm2(x, x), x * 0.5 + x)


def test_torch_compile_sees_changed_weights():
    m, x = mlp(), torch.randn(3, 8)
    compiled = torch.compile(m, backend="irc")
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), m(x))
        m[0].weight.data = torch.randn(16, 8)  # new storage: seen per call
        torch.testing.assert_close(compiled(x), m(x))
        m[0].weight = nn.Parameter(torch.randn(16, 8))  # a new object
        torch.testing.assert_close(compiled(x), m(x))
        m[2].weight.data.mul_(2)  # through .data: the contract is irc.refresh_weights()
        assert irc.refresh_weights(m) >= 1
        torch.testing.assert_close(compiled(x), m(x))
    torch._dynamo.reset()


def test_refresh_weights_selects_the_model():
    a, b, x = mlp(), mlp(), torch.randn(3, 8)
    cms = [irc.compile(a, (x,)), irc.compile(b, (x,))]
    assert irc.refresh_weights(a) == 1
    b[0].weight.data.mul_(3)
    assert irc.refresh_weights(b) == 1
    same(cms[1], b, x)


def test_switching_to_train_mode_after_compiling():
    m, x = cnn(), torch.randn(4, 3, 8, 8)
    reference = cnn()
    cm = irc.compile(m, (x,))
    same(cm, m, x)
    m.train()
    reference.train()
    with torch.no_grad():
        torch.testing.assert_close(cm(x), reference(x))  # batch statistics, as eager
    torch.testing.assert_close(m[1].running_mean, reference[1].running_mean)  # updated once, like eager
    m.eval()
    reference.eval()
    same(cm, reference, x)


class TracedMode(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        y = self.lin(x)
        return y * 2 if self.training else y  # a Python branch symbolic_trace bakes in


def test_a_traced_training_flag_is_traced_again():
    m, x = TracedMode().eval(), torch.randn(3, 8)
    cm = irc.compile(m, (x,))
    same(cm, m, x)
    m.train()
    same(cm, m, x)


def test_autograd_in_train_mode_updates_running_stats_once():
    m, ref, x = cnn().train(), cnn().train(), torch.randn(4, 3, 8, 8)
    cm = irc.compile(m, (x,))
    m.load_state_dict(ref.state_dict())
    cm(x).sum().backward()
    ref(x).sum().backward()
    torch.testing.assert_close(m[1].running_var, ref[1].running_var)
    for p, q in zip(m.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad)


@pytest.mark.parametrize("draws_between", [False, True], ids=["backward-next", "draws-between"])
def test_autograd_through_a_training_dropout_uses_the_forwards_mask(draws_between):
    """The backward recomputes the graph eagerly: a training-mode dropout (run eagerly in the
    forward) must draw the forward's mask again, or the gradients belong to another mask. The
    caller's random stream after the backward is eager's."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.5), nn.Linear(16, 4)).train()
    ref = copy.deepcopy(m)
    x = torch.randn(3, 8)
    cm = irc.compile(m, (x,))
    results = []
    for model in (cm, ref):
        torch.manual_seed(1)
        out = model(x)
        if draws_between:
            torch.rand(5)
        out.square().sum().backward()
        results.append((out.detach(), torch.rand(3)))
    torch.testing.assert_close(results[0][0], results[1][0])
    torch.testing.assert_close(results[0][1], results[1][1])  # the stream after the backward
    for p, q in zip(m.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad)


def test_torch_compile_first_calls_from_threads():
    m = mlp()
    compiled = torch.compile(m, backend="irc", dynamic=False)
    try:
        at_once(lambda x: same(compiled, m, x), [torch.randn(b, 8) for b in (2, 3, 5, 7)])
    finally:
        torch._dynamo.reset()


class Inner(nn.Module):
    def forward(self, x):
        return x * 2 if self.training else x  # inlined by symbolic_trace: a constant in the graph


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin, self.inner = nn.Linear(8, 8), Inner()

    def forward(self, x):
        return self.inner(self.lin(x))


def test_a_submodule_switched_alone_is_traced_again():
    m, x = Outer().eval(), torch.randn(3, 8)
    cm = irc.compile(m, (x,))
    same(cm, m, x)
    m.inner.train()
    same(cm, m, x)


# --- plain attributes the model's own code reads: baked by tracing, watched --------------------


class Tempered(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.temperature, self.shift, self.scales, self.note = 2.0, True, [1.0, 2.0], "unread by forward"

    def forward(self, x):
        y = self.lin(x) / self.temperature * self.scales[1]
        return y + 1 if self.shift else y


@pytest.mark.parametrize("change", ["float", "flag", "list-in-place"])
def test_a_changed_attribute_of_the_models_own_code_rebuilds(change, monkeypatch):
    """irc.compile kept the value tracing saw: `m.temperature = 0.5` after compiling was
    silently ignored (2.4 apart); now the next call traces and builds again."""
    torch.manual_seed(0)
    m, x = Tempered().eval(), torch.randn(3, 4)
    cm = irc.compile(m, (x,))
    same(cm, m, x)
    seen = rebuilds(cm, monkeypatch)
    if change == "float":
        m.temperature = 0.5
    elif change == "flag":
        m.shift = False
    else:
        m.scales[1] = -3.0
    same(cm, m, x)
    same(cm, m, x)
    assert len(seen) == 1 and "compiled as" in seen[0][0]


def test_a_number_attribute_replaced_by_an_equal_tensor_rebuilds(monkeypatch):
    """The guard compares plain attributes' types as well as values: `2.0 == tensor(2.0)` is
    true, and without a rebuild the tensor's later in-place updates would go unseen."""
    torch.manual_seed(0)
    m, x = Tempered().eval(), torch.randn(3, 4)
    cm = irc.compile(m, (x,))
    seen = rebuilds(cm, monkeypatch)
    m.temperature = torch.tensor(2.0)
    same(cm, m, x)
    assert len(seen) == 1
    m.temperature.fill_(0.5)
    same(cm, m, x)


def test_attributes_its_code_does_not_read_or_nan_ones_do_not_rebuild(monkeypatch):
    m, x = Tempered().eval(), torch.randn(3, 4)
    m.temperature = float("nan")
    cm = irc.compile(m, (x,))
    seen = rebuilds(cm, monkeypatch)
    m.note = "changed"
    for _ in range(2):
        torch.testing.assert_close(cm(x), m(x), equal_nan=True)
    assert seen == []


def test_torch_nn_hyperparameters_need_refresh_weights():
    """The documented contract: a torch.nn module's own settings (a LeakyReLU's slope, a conv's
    padding, a batch norm's eps) are read when compiling, not watched per call."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.LeakyReLU(0.1)).eval()
    x = torch.randn(1, 3, 8, 8)
    cm = irc.compile(m, (x,))
    m[0].padding, m[1].eps, m[2].negative_slope = (1, 1), 0.5, 0.3
    cm.refresh_weights()
    same(cm, m, x)


SCALE = 2.0
OFFSET = torch.ones(4)


def scaled_by_globals(x):
    return x * SCALE + OFFSET


def test_changed_globals_of_a_traced_function_rebuild(monkeypatch):
    """A global number or tensor the traced code reads became a constant: reassigning it was
    silently ignored."""
    x = torch.randn(3, 4)
    cm = irc.compile(scaled_by_globals, (x,))
    torch.testing.assert_close(cm(x), scaled_by_globals(x))
    monkeypatch.setitem(globals(), "SCALE", -1.0)
    torch.testing.assert_close(cm(x), scaled_by_globals(x))
    monkeypatch.setitem(globals(), "OFFSET", torch.full((4,), 5.0))
    torch.testing.assert_close(cm(x), scaled_by_globals(x))


def test_a_changed_closure_variable_rebuilds():
    scale = 3.0

    def f(x):
        return x * scale

    x = torch.randn(3, 4)
    cm = irc.compile(f, (x,))
    torch.testing.assert_close(cm(x), x * 3.0)
    scale = 0.5  # noqa: F841 (read through f's closure)
    torch.testing.assert_close(cm(x), x * 0.5)


# --- submodules replaced after compiling ----------------------------------------------------


REPLACEMENTS = {
    "linear-same-shape": (2, lambda: nn.Linear(8, 4)),
    "linear-no-bias": (2, lambda: nn.Linear(8, 4, bias=False)),
    "linear-other-width": (2, lambda: nn.Linear(8, 6)),
    "relu-to-gelu": (1, nn.GELU),
    "relu-to-identity": (1, nn.Identity),
    "linear-to-block": (2, lambda: nn.Sequential(nn.Linear(8, 4), nn.Tanh())),
}


@pytest.mark.parametrize("given", ["module", "graph-module"])
@pytest.mark.parametrize("case", list(REPLACEMENTS))
def test_a_replaced_submodule_rebuilds(case, given):
    """`model[1] = nn.GELU()` or `model.fc = nn.Linear(...)` after compiling was silently
    ignored: the guard watched the old module's own tensor dicts (and a module with no tensors
    not at all). Now the replaced path is seen and the module rebuilds."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4)).eval()
    if given == "graph-module":
        m = torch.fx.symbolic_trace(m)
    x = torch.randn(3, 8)
    cm = irc.compile(m, (x,))
    same(cm, m, x)
    index, make = REPLACEMENTS[case]
    setattr(m, str(index), make())
    same(cm, m, x)


def test_module_assignments_elsewhere_do_not_rebuild(monkeypatch):
    """Every submodule assignment in the process moves the count the guard compares; one that
    replaces none of the compiled model's modules costs one look at them, and no rebuild."""
    m, x = Tempered().eval(), torch.randn(3, 4)
    cm = irc.compile(m, (x,))
    seen = rebuilds(cm, monkeypatch)
    other = nn.Sequential(nn.Linear(2, 2))
    other[0] = nn.ReLU()
    m.extra = nn.Linear(2, 2)  # added to the model, not read by its forward
    same(cm, m, x)
    same(cm, m, x)
    assert seen == []


def test_weights_made_under_inference_mode_are_refused_with_the_way_out():
    """Inference tensors have no version counter: irc failed deep in its fold evaluation ("a bug
    in irc"); it now says so up front, and the way out it names works."""
    with torch.inference_mode():
        m = cnn()
    x = torch.randn(1, 3, 8, 8)
    with pytest.raises(irc.IrcError, match="inference tensors"):
        irc.compile(m, (x,))
    m.load_state_dict({k: v.clone() for k, v in m.state_dict().items()}, assign=True)
    cm = irc.compile(m, (x,))
    with torch.inference_mode():
        torch.testing.assert_close(cm(x), m(x))


class Private(nn.Module):
    """A private attribute read in forward, and one read through a property."""

    def __init__(self):
        super().__init__()
        self.lin, self._temperature, self._shift = nn.Linear(4, 4), 2.0, 1.0

    @property
    def shift(self):
        return self._shift

    @staticmethod
    def act(y):
        return y.relu()

    def forward(self, x):
        return self.act(self.lin(x)) / self._temperature + self.shift


@pytest.mark.parametrize("name", ["_temperature", "_shift"])
def test_private_attributes_and_property_reads_are_watched(name):
    """Attributes whose names begin with `_` were left out, and property getters not read: both
    were silently stale after a change."""
    m, x = Private().eval(), torch.randn(3, 4)
    cm = irc.compile(m, (x,))
    setattr(m, name, -3.0)
    same(cm, m, x)

"""In-place mutations in captured graphs (`order_mutations`, `convert_mutation`) against eager.

Dynamo graphs are not functional: `mask[i:j] = c`, `y.add_(1)`, `y += 1` change a tensor that
later nodes read through the old node. Issue 10, item 4: torchvision's swin_t was off by 0.6%
under torch.compile(backend="irc") because its shifted-window mask (`new_zeros`, nine region
writes, then `mask != 0`) was read before the writes: the eager fallback ran the writes after
the native partition that had already used the all-zero mask.
"""

from __future__ import annotations

import copy

import pytest
import torch

import irc


def dynamo_graph(fn, *inputs):
    """The one FX graph Dynamo captures for `fn` (as torch.compile hands it to a backend)."""
    graphs = []

    def capture(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    torch.compile(fn, backend=capture, fullgraph=True)(*inputs)
    torch._dynamo.reset()
    assert len(graphs) == 1
    return graphs[0]


def through_dynamo(fn, *inputs):
    torch._dynamo.reset()
    try:
        return torch.compile(fn, backend="irc")(*inputs)
    finally:
        torch._dynamo.reset()


def region_mask(x):
    """The smallest form of Swin's shifted-window mask: regions written into new_zeros."""
    mask = x.new_zeros(x.shape[-1])
    mask[1:3] = 1.0
    mask[3:] = 2.0
    return x + mask.masked_fill(mask != 0, -100.0)


def test_region_mask_through_torch_compile():
    x = torch.randn(2, 5)
    torch.testing.assert_close(through_dynamo(region_mask, x), region_mask(x))


def test_region_mask_folds_at_compile_time():
    """Through irc.compile, the captured graph is all native: the writes are folded."""
    x = torch.randn(2, 5)
    cm = irc.compile(dynamo_graph(region_mask, x), (x,), fallback=False)
    torch.testing.assert_close(cm(x), (region_mask(x),))  # a Dynamo graph returns a tuple
    assert cm.eager_nodes == []


def write_runtime(x):
    y = x * 2
    y[:, 0] = 5.0
    return y + 1


def add_inplace(x):
    y = x * 2
    y.add_(1)
    return y * 3


def view_then_iadd(x):
    y = x * 2
    v = y.view(-1)
    y += 1
    return v * 3


def relu_on_a_slice(x):
    y = x * 2
    y[:, :2].relu_()
    return y - 1


def read_then_write(x):
    y = x * 2
    r = y.sum(-1)
    y[:, 0] = 0.0
    return r, y + 1


@pytest.mark.parametrize("fn", [write_runtime, add_inplace, view_then_iadd, relu_on_a_slice,
                                read_then_write])
def test_mutation_of_runtime_tensor(fn):
    """Writes irc cannot compile run eagerly, in order with the native nodes around them."""
    x = torch.randn(3, 4)
    want = fn(x)
    torch.testing.assert_close(through_dynamo(fn, x), want)
    cm = irc.compile(dynamo_graph(fn, x), (x,))
    torch.testing.assert_close(cm(x), want if isinstance(want, tuple) else (want,))


def test_mutation_of_an_input_reaches_the_caller():
    def scale_input(x):
        x.mul_(2)
        return x + 1

    x = torch.randn(3, 4)
    want_x = x.clone()
    want = scale_input(want_x)
    got = through_dynamo(scale_input, x)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(x, want_x)


def test_inplace_module_on_the_input_runs_eagerly():
    """nn.ReLU(inplace=True) on the model input changes the caller's tensor in eager PyTorch."""
    model = torch.nn.Sequential(torch.nn.ReLU(inplace=True), torch.nn.Linear(4, 3)).eval()
    x = torch.randn(3, 4)
    cm = irc.compile(model, (x.clone(),))
    assert [n.target for n in cm.eager_nodes] == ["torch.nn.ReLU"]
    with torch.no_grad():
        want_x = x.clone()
        want = model(want_x)
        torch.testing.assert_close(cm(x), want)
    torch.testing.assert_close(x, want_x)


def test_order_mutations_is_idempotent():
    from irc.frontend.order_mutations import order_mutations

    x = torch.randn(3, 4)
    gm = order_mutations(dynamo_graph(read_then_write, x))
    code = gm.code
    assert order_mutations(gm).code == code
    torch.testing.assert_close(gm(x), read_then_write(x))
    assert "irc_frontend_order_mutations_after" in code  # y[:, 0] = 0 waits for y.sum


# --- attributes changed in place, with eager nodes between native partitions ----------------------


@torch.fx.wrap
def opaque_row(x):
    """A Python int irc cannot compute: the write indexed by it runs eagerly."""
    return int(x.shape[0] // 2)


class BufferAddedTo(torch.nn.Module):
    """`self.buf` read, changed in place, read again: symbolic_trace makes three get_attr nodes."""

    def __init__(self):
        super().__init__()
        self.register_buffer("buf", torch.ones(4, 6))

    def forward(self, x):
        y = x + self.buf
        self.buf.add_(x)
        return y * self.buf


class ParameterScaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 6))

    def forward(self, x):
        y = x * self.w
        self.w.mul_(0.5)  # called under no_grad
        return y + self.w


def constant_written(x):
    """`m` is a real tensor, so symbolic_trace makes it a constant attribute and the write
    `Tensor.__setitem__` with the traced row; the graph changes its constant at every call."""
    m = torch.zeros(4, 6)
    a = torch.relu(x) + m
    m[opaque_row(x)] = x[0]
    return a * 2 + m


@pytest.mark.parametrize("make", [BufferAddedTo, ParameterScaled, lambda: constant_written],
                         ids=["buffer", "parameter", "constant"])
def test_attribute_changed_in_place_between_partitions(make):
    """A write into an attribute runs eagerly between native partitions; the reads before it see
    the old tensor, the reads after it the new one, call after call, as the traced module does.
    irc used to order a read through another get_attr node of the same attribute before the
    write, to write into a native copy (the `after` ordering the write), to miss `__setitem__`,
    and to run the write while compiling (the model's parameter halved twice)."""
    torch.manual_seed(0)
    gm = torch.fx.symbolic_trace(make())
    reference = copy.deepcopy(gm)
    x = torch.randn(4, 6)
    with torch.no_grad():
        cm = irc.compile(gm, (x,))
        for call in range(3):
            torch.testing.assert_close(cm(x), reference(x), msg=lambda m, call=call: f"call {call}: {m}")
    assert cm.eager_nodes and all("failed to compile" not in n.reason for n in cm.eager_nodes)
    for name, t in reference.state_dict().items():
        torch.testing.assert_close(gm.state_dict()[name], t)


# --- model state changed by the forward, through irc.compile's symbolic_trace -------------------


class StepCounter(torch.nn.Module):
    """`self.steps += 1` on a real buffer: symbolic_trace runs it once and records nothing."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("steps", torch.zeros(()))

    def forward(self, x):
        self.steps += 1
        return self.lin(x) * self.steps


class ScaledInPlace(torch.nn.Module):
    """An in-place method on a plain tensor attribute (not a buffer)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.scale = torch.ones(4)

    def forward(self, x):
        self.scale.mul_(2)
        return self.lin(x) * self.scale


@pytest.mark.parametrize("make", [StepCounter, ScaledInPlace], ids=["buffer", "plain-attribute"])
def test_state_changed_while_tracing_is_an_error_and_put_back(make):
    """irc.compile gave the first call's result at every call (and left the model one step on):
    the update ran once while tracing and was not in the graph."""
    torch.manual_seed(0)
    model = make()
    before = {k: v.clone() for k, v in {**model.state_dict(), **vars(model)}.items() if isinstance(v, torch.Tensor)}
    with pytest.raises(irc.IrcError, match="in place with no traced operand.*put\\s+the value"):
        irc.compile(model, (torch.randn(3, 4),))
    for name, value in before.items():
        torch.testing.assert_close(getattr(model, name) if hasattr(model, name) else model.state_dict()[name], value)


class RunningMaximum(torch.nn.Module):
    """`out=` into a buffer, read again through a traced operation."""

    def __init__(self):
        super().__init__()
        self.register_buffer("peak", torch.zeros(4))

    def forward(self, x):
        torch.maximum(self.peak, x.amax(0), out=self.peak)
        return x - self.peak


def test_out_argument_into_a_buffer_is_a_mutation():
    """irc read `torch.maximum(a, b, out=t)` as its value and never wrote `t`: the buffer stayed
    zero and every call after the first differed from eager."""
    torch.manual_seed(1)
    model, reference = RunningMaximum(), RunningMaximum()
    cm = irc.compile(model, (torch.randn(3, 4),))
    with torch.no_grad():
        for call in range(3):
            x = torch.randn(3, 4) + call
            torch.testing.assert_close(cm(x), reference(x), msg=lambda m, call=call: f"call {call}: {m}")
    torch.testing.assert_close(model.peak, reference.peak)


def out_into_new_tensor(x):
    y = x.new_empty(x.shape)
    torch.mul(x, 2, out=y)
    return y + 1, y


def test_out_argument_into_an_intermediate():
    x = torch.randn(3, 4)
    cm = irc.compile(out_into_new_tensor, (x,))
    torch.testing.assert_close(cm(x), out_into_new_tensor(x))


class ConcatenatedInto(torch.nn.Module):
    """A buffer written through `out=`, then reduced on its own: symbolic_trace evaluates the
    reduction while tracing (a constant) though each call's write changes it."""

    def __init__(self):
        super().__init__()
        self.register_buffer("both", torch.zeros(6, 4))

    def forward(self, x):
        torch.cat([x, x], out=self.both)
        return self.both.sum(0) + x


def test_state_read_on_its_own_and_changed_by_the_graph_is_an_error():
    with pytest.raises(irc.IrcError, match="computes with\\s+it on its own"):
        irc.compile(ConcatenatedInto(), (torch.randn(3, 4),))


def test_out_argument_of_several_tensors_is_an_error():
    def top(x):
        values, indices = torch.empty(0), torch.empty(0, dtype=torch.long)
        torch.max(x, 0, out=(values, indices))
        return values

    with pytest.raises(irc.IrcError, match="`out=` of one tensor"):
        irc.compile(top, (torch.randn(3, 4),))


def test_in_place_masked_fill_of_a_new_tensor_is_native():
    """`torch.zeros_like(m, dtype=float).masked_fill_(m, -inf)` (how nn.MultiheadAttention turns a
    bool mask into an additive one): a new tensor nothing else reads, so the fill is the
    functional one, compiled natively."""

    def f(x, mask):
        return x + torch.zeros_like(x).masked_fill_(mask, -1e4)

    x, mask = torch.randn(3, 5), torch.rand(3, 5) > 0.5
    torch.testing.assert_close(irc.compile(f, (x, mask), fallback=False)(x, mask), f(x, mask))


def _fill_read_after(x, mask):
    z = torch.zeros_like(x)
    y = z.masked_fill_(mask, 2.0)
    return y + z * 3  # z is y: both see the fill


def _fill_a_view(x, mask):
    z = torch.zeros(2, 3, 5)
    z[0].masked_fill_(mask, 1.0)
    return z + x


@pytest.mark.parametrize("f", [_fill_read_after, _fill_a_view], ids=["read after", "a view"])
def test_in_place_masked_fill_of_a_tensor_read_elsewhere_stays_eagers(f):
    x, mask = torch.randn(3, 5), torch.rand(3, 5) > 0.5
    torch.testing.assert_close(irc.compile(f, (x, mask))(x, mask), f(x, mask))

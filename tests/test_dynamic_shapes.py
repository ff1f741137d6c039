"""Symbolic sizes end to end: one native build serves every size of a dynamic dimension.

`irc.compile(..., dynamic_shapes=...)` (torch.export's convention) and `torch.compile(...,
backend="irc", dynamic=True / automatic dynamic)`: outputs match eager at many sizes, the
number of native builds stays at one per graph, calls outside the compiled range or breaking an
equality get their own version (never a wrong answer), and the per-call checks raise InputError
with the rule that failed.
"""

from __future__ import annotations

import pytest
import torch
from torch.export import Dim

import irc
from irc.errors import InputError, IrcError
from irc.runtime.build import compiler_invocations


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("IRC_CACHE_DIR", str(tmp_path))


class Elementwise(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.randn(16))

    def forward(self, x, y):
        return torch.relu(x * self.a + y).reshape(-1, 4) * 2.0


def test_one_build_serves_every_batch(fresh_cache):
    m = Elementwise()
    b = Dim("batch", max=1000)
    before = compiler_invocations()
    cm = irc.compile(m, (torch.randn(3, 16), torch.randn(3, 16)), dynamic_shapes={"x": {0: b}, "y": {0: b}})
    for n in (2, 5, 17, 64, 999, 3):
        x, y = torch.randn(n, 16), torch.randn(n, 16)
        torch.testing.assert_close(cm(x, y), m(x, y))
    assert len(cm.versions) == 1
    assert compiler_invocations() - before == 1
    assert '#irt.dims<"s0">' in cm.ir("import") and "%s0: index" in cm.ir("loops")


def test_a_shape_outside_the_ranges_does_not_take_over_from_the_symbolic_version(fresh_cache):
    """After a call at a size the symbolic version does not serve (1, or past max), later sizes
    inside its ranges run on it again: they were compiled one version each, until max_versions
    sent them to eager."""
    m = Elementwise()
    b = Dim("batch", max=100)
    cm = irc.compile(m, (torch.randn(3, 16), torch.randn(3, 16)), dynamic_shapes=[{0: b}, {0: b}], max_versions=3)
    before = compiler_invocations()
    for n in (1, 5, 101, 17, 1, 64, 2, 99, 101):
        x, y = torch.randn(n, 16), torch.randn(n, 16)
        torch.testing.assert_close(cm(x, y), m(x, y))
    assert len(cm.versions) == 3  # the symbolic one, batch 1, batch 101
    assert compiler_invocations() - before == 2


def test_sizes_outside_the_range_get_their_own_version(fresh_cache):
    m = Elementwise()
    b = Dim("batch", max=100)
    cm = irc.compile(m, (torch.randn(3, 16), torch.randn(3, 16)), dynamic_shapes=[{0: b}, {0: b}])
    for n in (1, 101):  # 1: traced as a special case (>= 2 assumed); 101: beyond max
        x, y = torch.randn(n, 16), torch.randn(n, 16)
        torch.testing.assert_close(cm(x, y), m(x, y))
    assert len(cm.versions) == 3
    # Broadcasting that only a static version can express: y of batch 1 against x of batch 6.
    x, y = torch.randn(6, 16), torch.randn(1, 16)
    torch.testing.assert_close(cm(x, y), m(x, y))


def test_the_symbolic_forward_checks_every_rule():
    m = Elementwise()
    b = Dim("batch", max=100)
    cm = irc.compile(m, (torch.randn(3, 16), torch.randn(3, 16)), dynamic_shapes={"x": {0: b}, "y": {0: b}})
    forward = cm.versions[next(iter(cm.versions))].forward
    with pytest.raises(InputError, match=r"input 1 \('y'\): dimension 0 is 4, expected 5 = s0 \(with s0 = 5\)"):
        forward(torch.randn(5, 16), torch.randn(4, 16))
    with pytest.raises(InputError, match=r"dimension 1 is 15, expected 16"):
        forward(torch.randn(5, 15), torch.randn(5, 15))
    with pytest.raises(InputError, match=r"dimension 0 is 101, but its size s0 must be in \[2, 100\]"):
        forward(torch.randn(101, 16), torch.randn(101, 16))
    with pytest.raises(InputError, match=r"expected 2 dimensions"):
        forward(torch.randn(5, 16, 1), torch.randn(5, 16))


def test_independent_dims_and_size_arithmetic(fresh_cache):
    class M(torch.nn.Module):
        def forward(self, x):  # two symbols; a size used as a number; views with run-time sizes
            b, t, c = x.shape
            return (x.transpose(1, 2).reshape(b, c * t) + 1.0) * t

    m = M()
    cm = irc.compile(m, (torch.randn(2, 3, 8),), dynamic_shapes={"x": {0: Dim("b"), 1: Dim("t")}})
    for b, t in ((2, 3), (5, 7), (3, 2), (9, 33)):
        x = torch.randn(b, t, 8)
        torch.testing.assert_close(cm(x), m(x))
    assert len(cm.versions) == 1


def test_dynamic_shapes_errors_are_actionable():
    m = Elementwise()
    x, y = torch.randn(3, 16), torch.randn(3, 16)
    with pytest.raises(IrcError, match="names 'z', which are not inputs"):
        irc.compile(m, (x, y), dynamic_shapes={"z": {0: Dim("b")}})
    with pytest.raises(IrcError, match="example size is 1; give an example of size >= 2"):
        irc.compile(m, (torch.randn(1, 16), torch.randn(1, 16)), dynamic_shapes={"x": {0: Dim("b")}, "y": {0: Dim("b")}})
    with pytest.raises(IrcError, match="has 2 dimensions, no dimension 2"):
        irc.compile(m, (x, y), dynamic_shapes={"x": {2: Dim("b")}})


@pytest.mark.parametrize("dynamic", [True, None])
def test_torch_compile_dynamic_builds_once(fresh_cache, dynamic):
    class M(torch.nn.Module):
        def forward(self, x):
            h = torch.relu(x * 2.0 + 1.0)
            return h.reshape(x.shape[0], -1) * x.shape[0]

    m = M()
    torch._dynamo.reset()
    compiled = torch.compile(m, backend="irc", dynamic=dynamic)
    before = compiler_invocations()
    for n in (3, 5, 8, 13, 2, 64):
        x = torch.randn(n, 16)
        torch.testing.assert_close(compiled(x), m(x))
    # dynamic=True: one symbolic build; automatic dynamic: the first shape static, then one symbolic.
    assert compiler_invocations() - before == (1 if dynamic else 2)


def test_arena_planned_for_symbolic_sizes(fresh_cache):
    """Five intermediates of two symbolic sizes share a per-call arena; in-place and stacked
    slots stay disjoint at every size (a wrong offset would corrupt an output)."""

    class M(torch.nn.Module):
        def forward(self, x, y):
            a = torch.exp(x)
            b = torch.tanh(a)
            c = a + b
            e = torch.exp(torch.exp(y) * 0.1)
            return c * c, torch.sigmoid(e), b * 2.0

    m = M()
    b, t = Dim("b"), Dim("t")
    cm = irc.compile(m, (torch.randn(2, 16), torch.randn(2, 3)), dynamic_shapes={"x": {0: b}, "y": {0: b, 1: t}})
    for n, k in ((2, 3), (7, 1000), (300, 5), (33, 65)):
        x, y = torch.randn(n, 16), torch.randn(n, k)
        for got, want in zip(cm(x, y), m(x, y)):
            torch.testing.assert_close(got, want)
    assert len(cm.versions) == 1


def test_exported_program_dims_are_symbolic(fresh_cache):
    m = Elementwise()
    b = Dim("batch", min=2, max=512)
    ep = torch.export.export(m, (torch.randn(3, 16), torch.randn(3, 16)), dynamic_shapes={"x": {0: b}, "y": {0: b}})
    cm = irc.compile(ep, (torch.randn(3, 16), torch.randn(3, 16)))
    for n in (2, 9, 512):
        x, y = torch.randn(n, 16), torch.randn(n, 16)
        torch.testing.assert_close(cm(x, y), m(x, y))
    assert len(cm.versions) == 1
    with pytest.raises(InputError, match=r"must be in \[2, 512\]"):
        cm.versions[next(iter(cm.versions))].forward(torch.randn(513, 16), torch.randn(513, 16))


def test_saving_a_symbolic_version_is_refused_with_the_reason(tmp_path):
    m = Elementwise()
    cm = irc.compile(m, (torch.randn(3, 16), torch.randn(3, 16)), dynamic_shapes=[{0: Dim("b")}, {0: Dim("b")}])
    with pytest.raises(IrcError, match="has symbolic sizes, which artifacts do not hold yet"):
        cm.save(tmp_path / "m.irc")


def test_explain_reports_counts_at_the_example_sizes():
    class M(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x * 2.0 + 1.0).exp() + x

    cm = irc.compile(M(), (torch.randn(3, 16),), dynamic_shapes=[{0: Dim("b")}])
    report = cm.explain()
    assert "counts below are at the example inputs' sizes (s0 = 3)" in report
    assert " s0x16 " in report and "per forward" in report


def test_a_region_with_autocast_disabled_compiles_natively(fresh_cache):
    """Llama's rotary embedding computes under `torch.autocast(..., enabled=False)`: in a float32
    graph that changes nothing, so it compiles (one symbolic build)."""

    class M(torch.nn.Module):
        def forward(self, x):
            with torch.autocast(device_type="cpu", enabled=False):
                y = x.float() * 2
            return torch.relu(y)

    m = M()
    torch._dynamo.reset()
    f = torch.compile(m, backend="irc", dynamic=True, options={"fallback": False})
    before = compiler_invocations()
    for n in (3, 5, 9):
        x = torch.randn(n, 8)
        torch.testing.assert_close(f(x), m(x))
    assert compiler_invocations() - before == 1


def test_a_torch_size_of_symbolic_sizes_builds_once(fresh_cache):
    """`x.size()[:-1] + (2, 4)` (HF's reshape of heads): Dynamo records torch.Size(...) of the
    sizes, which held symbols; torch.Size refused them, and the graph compiled per shape."""

    class M(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x).view(x.size()[:-1] + (2, 4)).sum(-1)

    m = M()
    torch._dynamo.reset()
    f = torch.compile(m, backend="irc", dynamic=True, options={"fallback": False})
    before = compiler_invocations()
    for b, n in ((2, 3), (3, 5), (4, 9)):
        x = torch.randn(b, n, 8)
        torch.testing.assert_close(f(x), m(x))
    assert compiler_invocations() - before == 1


class PositionRow(torch.nn.Module):
    """A decode step's row of a position table: table[p : p + 1] with p the cache's length (a
    slice starting at a symbol, as GPT-2 cuts its causal table)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.randn(16, 8))

    def forward(self, x, past):
        p = past.shape[1]
        return x + self.table[p : p + 1] + past.mean(dim=1, keepdim=True)


def test_a_slice_starting_at_a_symbol_is_one_version(fresh_cache):
    m = PositionRow()
    x, past = torch.randn(2, 1, 8), torch.randn(2, 5, 8)
    b, p = Dim("b"), Dim("p", max=15)  # export proves p + 1 <= 16 is needed
    ep = torch.export.export(m, (x, past), dynamic_shapes={"x": {0: b}, "past": {0: b, 1: p}})
    cm = irc.compile(ep, (x, past), fallback=False)
    assert 'dims <"s1">' in cm.ir("import")
    before = compiler_invocations()
    for b, p in ((2, 3), (3, 15), (4, 7)):
        x, past = torch.randn(b, 1, 8), torch.randn(b, p, 8)
        torch.testing.assert_close(cm(x, past), m(x, past))
    assert compiler_invocations() == before and len(cm.versions) == 1

    torch._dynamo.reset()
    f = torch.compile(m, backend="irc", dynamic=True, options={"fallback": False})
    before = compiler_invocations()
    for b, p in ((2, 3), (3, 15), (4, 7)):
        x, past = torch.randn(b, 1, 8), torch.randn(b, p, 8)
        torch.testing.assert_close(f(x, past), m(x, past))
    assert compiler_invocations() - before == 1
    x, past = torch.randn(2, 1, 8), torch.randn(2, 16, 8)  # past the table: Dynamo's guard, eager's empty row
    assert f(x, past).shape == m(x, past).shape == (2, 0, 8)


def test_a_slice_of_symbolic_bounds_becomes_a_rule_every_call_checks():
    """A slice's call-time requirements (here: row s1 of a 16-row table exists, s1 <= 15) are
    size rules the wrapper checks, whatever tracing assumed."""
    from xdsl.parser import Parser

    from irc.context import irc_context
    from irc.dialects.symbolic import parse_dim
    from irc.frontend.fx_importer import slice_requirements
    from irc.runtime.wrapper import SymbolBinding, TensorSpec, check_symbolic

    ir = """
    func.func @f(%t: tensor<16x8xf32>, %p: tensor<?x?xf32, #irt.dims<"s0", "s1">>) -> tensor<1x8xf32> {
      %r = irt.slice %t offsets [-1, 0] dims <"s1"> strides [1, 1] : (tensor<16x8xf32>) -> tensor<1x8xf32>
      func.return %r : tensor<1x8xf32>
    }"""
    rules = slice_requirements(Parser(irc_context(), ir).parse_module())
    assert rules == ["s1 >= 0", "-s1 + 15 >= 0"]
    spec = [TensorSpec("p", (parse_dim("s0"), parse_dim("s1")), torch.float32)]
    bindings = [SymbolBinding("s0", 0, 0, 0, None), SymbolBinding("s1", 0, 1, 0, None)]
    check_symbolic([torch.zeros(2, 15)], spec, bindings, guards=rules)
    with pytest.raises(InputError, match=r"s1 = 16 break `-s1 \+ 15 >= 0`"):
        check_symbolic([torch.zeros(2, 16)], spec, bindings, guards=rules)


def test_the_last_position_of_a_symbolic_length_is_one_version(fresh_cache):
    """x[:, -1:] (an LM head on the last token) starts at s1 - 1: a symbolic start."""

    class Last(torch.nn.Module):
        def forward(self, x):
            return torch.tanh(x[:, -1:]) + x[:, -2:-1]

    m = Last()
    cm = irc.compile(m, (torch.randn(2, 5, 4),), dynamic_shapes={"x": {0: Dim("b"), 1: Dim("n")}}, fallback=False)
    assert 'dims <"s1 - 1">' in cm.ir("import")
    for b, n in ((2, 3), (3, 9), (4, 2)):
        x = torch.randn(b, n, 4)
        torch.testing.assert_close(cm(x), m(x))
    assert len(cm.versions) == 1


class SeenTokens(torch.nn.Module):
    """A KV cache's Python int counter (transformers' DynamicCache._seen_tokens), updated in
    forward and returned: with allow_unspec_int_on_nn_module it is a SymInt input of the graph."""

    def __init__(self):
        super().__init__()
        self.seen = 0

    def forward(self, x):
        self.seen += x.shape[1]
        return torch.relu(x) * 2, self.seen


def test_int_outputs_are_computed_in_python_not_specialized(fresh_cache):
    m, ref = SeenTokens(), SeenTokens()
    torch._dynamo.reset()
    with torch._dynamo.config.patch(allow_unspec_int_on_nn_module=True):
        f = torch.compile(m, backend="irc", dynamic=True, options={"fallback": False})
        before = compiler_invocations()
        for n in (3, 5, 4, 7, 2):
            x = torch.randn(2, n, 8)
            got, expected = f(x), ref(x)
            torch.testing.assert_close(got[0], expected[0])
            assert got[1] == expected[1] and m.seen == ref.seen
    assert compiler_invocations() - before == 1


def test_a_training_forward_returning_sizes_stays_whole(fresh_cache, caplog):
    """AOTAutograd's forward returns the batch size (a SymInt saved for the backward): it is
    computed in Python beside the native call (it made the output node an eager partition)."""
    import copy
    import logging

    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    ref = copy.deepcopy(m)
    torch._dynamo.reset()
    f = torch.compile(m, backend="irc", dynamic=True)
    with caplog.at_level(logging.INFO, logger="irc"):
        for n in (3, 5, 7):
            x = torch.randn(n, 8)
            f(x).view(-1).sum().backward()
            ref(x).view(-1).sum().backward()
    for p, q in zip(m.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad)
    assert "returns int" not in caplog.text


def test_compiling_a_dynamo_graph_leaves_its_buffers_untouched(fresh_cache, caplog):
    """A buffer the graph reads (GPT-2's causal-mask buffer) must keep its version: a copy-back
    after each build bumped it, the weight guard took that for an in-place update, and every
    call rebuilt (4x eager's work in generate)."""

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("scale", torch.full((8,), 2.0))

        def forward(self, x):
            return torch.relu(x * self.scale)

    m = M().eval()
    torch._dynamo.reset()
    f = torch.compile(m, backend="irc", dynamic=True)
    version = m.scale._version
    with torch.no_grad(), caplog.at_level("INFO", logger="irc"):
        for n in (3, 4, 5, 6):
            x = torch.randn(n, 8)
            torch.testing.assert_close(f(x), m(x))
    assert m.scale._version == version
    assert not [r for r in caplog.records if "rebuilding" in r.getMessage()]


def test_attention_with_a_run_time_length_is_one_version(fresh_cache):
    """q @ k^T with both lengths symbolic (the scores are s1 x s1): the batched product's result
    type keeps its #irt.dims (it was imported with bare `?` sizes and compiled per shape)."""

    class Attn(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v = (torch.nn.Linear(16, 16) for _ in range(3))
            self.out = torch.nn.Linear(16, 16)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = (f(x).reshape(b, t, 2, 8).transpose(1, 2) for f in (self.q, self.k, self.v))
            p = torch.softmax(q @ k.transpose(-1, -2) * 8**-0.5, dim=-1)
            return self.out((p @ v).transpose(1, 2).reshape(b, t, 16))

    m = Attn().eval()
    cm = irc.compile(m, (torch.randn(2, 5, 16),), dynamic_shapes=[{0: Dim("b"), 1: Dim("t")}])
    with torch.no_grad():
        for b, t in ((2, 5), (3, 17), (2, 64), (4, 3)):
            x = torch.randn(b, t, 16)
            torch.testing.assert_close(cm(x), m(x))
    assert len(cm.versions) == 1


def test_what_tracing_assumed_is_checked_at_every_call():
    """Shape propagation on symbols records assumptions (`x[:, :3]` assumes s0 >= 3 and, for its
    view, s0 != 3); the compiled code is right only where they hold, so the forward checks
    them and a call breaking one raises InputError (a new static version then serves it)."""
    import ctypes

    from torch import fx

    from irc.dialects.symbolic import symbol
    from irc.frontend.symbolic_import import DynamicDim, propagate_symbolic
    from irc.runtime.wrapper import TensorSpec, make_forward

    table = propagate_symbolic(fx.symbolic_trace(lambda x: x[:, :3] * 2), [torch.randn(2, 5)], [{1: DynamicDim("t")}])
    assert sorted(table.guards) == ["s0 != 3", "s0 >= 3"]

    calls = []
    entry = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda a: calls.append(a))
    s0 = symbol("s0")
    fwd = make_forward(entry, [TensorSpec("x", (2, s0))], [], [TensorSpec("out0", (2, s0))], False,
                       argv=entry, guards=["s0 != 3"])
    fwd(torch.randn(2, 4))
    with pytest.raises(InputError, match=r"the sizes s0 = 3 break `s0 != 3`"):
        fwd(torch.randn(2, 3))
    assert len(calls) == 1

"""Elementwise math and shape/data ops against eager: every op, function, method and module,
fused and unfused, odd shapes; compile-time folding of shape queries, assertions and factories."""

from __future__ import annotations

import operator
import re

import pytest
import torch
import torch.nn.functional as F
from irc_testing import check, kernel_code
from torch import nn

import irc
from irc.errors import IrcError
from irc.frontend.converters import FUNCTIONS
from irc.frontend.fx_importer import import_fx

torch.manual_seed(0)




def kernels(cm) -> list[str]:
    return re.findall(r"// kernel \d+: (.*)", cm.cpp_source)


FUSE = pytest.mark.parametrize("fuse", [True, False], ids=["fused", "unfused"])
SHAPES = pytest.mark.parametrize("shape", [(3, 7), (1, 1), (16, 33), (2, 3, 5)], ids=lambda s: "x".join(map(str, s)))

# --- elementwise math ---------------------------------------------------------------------

pos = lambda x: x.abs() + 0.1  # noqa: E731  (domain of log, rsqrt, fractional powers)

MATH = {
    "torch.exp": lambda x: torch.exp(x),
    "Tensor.exp": lambda x: x.exp(),
    "torch.log": lambda x: torch.log(pos(x)),
    "Tensor.log": lambda x: pos(x).log(),
    "torch.sqrt": lambda x: torch.sqrt(pos(x)),
    "Tensor.sqrt": lambda x: pos(x).sqrt(),
    "torch.rsqrt": lambda x: torch.rsqrt(pos(x)),
    "Tensor.rsqrt": lambda x: pos(x).rsqrt(),
    "operator.neg": lambda x: -x,
    "torch.neg": lambda x: torch.neg(x),
    "Tensor.neg": lambda x: x.neg(),
    "torch.abs": lambda x: torch.abs(x),
    "Tensor.abs": lambda x: x.abs(),
    "torch.cos": lambda x: torch.cos(x),
    "Tensor.cos": lambda x: x.cos(),
    "torch.sin": lambda x: torch.sin(x),
    "Tensor.sin": lambda x: x.sin(),
    "x ** 2": lambda x: x**2,
    "x ** 3": lambda x: x**3,
    "x ** 0": lambda x: x**0,
    "x ** 1": lambda x: x**1 + 1,
    "x ** 0.5": lambda x: pos(x) ** 0.5,
    "x ** -0.5": lambda x: pos(x) ** -0.5,
    "x ** -1": lambda x: pos(x) ** -1,
    "x ** -2": lambda x: pos(x) ** -2,
    "x ** 2.5": lambda x: pos(x) ** 2.5,
    "x ** 1.7 negative base": lambda x: x**1.7,
    "torch.pow": lambda x: torch.pow(x, 2),
    "Tensor.pow": lambda x: pos(x).pow(1.5),
    "torch.square": lambda x: torch.square(x),
    "torch.clamp": lambda x: torch.clamp(x, -0.5, 0.7),
    "torch.clamp min": lambda x: torch.clamp(x, min=0.2),
    "torch.clamp max": lambda x: torch.clamp(x, max=-0.1),
    "torch.clamp min > max": lambda x: torch.clamp(x, 1.0, -1.0),
    "torch.clip": lambda x: torch.clip(x, -1, 1),
    "Tensor.clamp": lambda x: x.clamp(min=-0.3),
    "Tensor.clip": lambda x: x.clip(max=0.3),
    "F.hardtanh": lambda x: F.hardtanh(x, -0.5, 2.0),
    "F.relu6": lambda x: F.relu6(x * 4),
    "F.leaky_relu": lambda x: F.leaky_relu(x),
    "F.leaky_relu 0.2": lambda x: F.leaky_relu(x, 0.2),
    "F.leaky_relu negative slope": lambda x: F.leaky_relu(x, negative_slope=-1.5),
    "F.silu": lambda x: F.silu(x * 3),
    "F.hardswish": lambda x: F.hardswish(x * 4),
    "F.hardsigmoid": lambda x: F.hardsigmoid(x * 4),
    "nn.ReLU6": nn.ReLU6(),
    "nn.LeakyReLU": nn.LeakyReLU(0.3),
    "nn.SiLU": nn.SiLU(),
    "nn.Hardswish": nn.Hardswish(),
    "nn.Hardsigmoid": nn.Hardsigmoid(),
    "nn.Hardtanh": nn.Hardtanh(-2.0, 0.5),
    # On an intermediate: in place on the model input it changes the caller's tensor, so it runs
    # eagerly (tests/test_mutations.py).
    "nn.ReLU inplace": nn.Sequential(nn.Tanh(), nn.ReLU(inplace=True)),
    "F.relu6 inplace": lambda x: F.relu6(x * 4, inplace=True),
}


@FUSE
@SHAPES
@pytest.mark.parametrize("name", sorted(MATH))
def test_math_op_matches_eager(name, shape, fuse):
    check(MATH[name], torch.randn(shape), fuse=fuse, equal_nan=True)  # x ** 1.7 of x < 0 is NaN in both


@pytest.mark.parametrize("name", ["torch.exp", "x ** 3", "torch.clamp", "F.hardswish", "F.leaky_relu"])
def test_math_op_on_scalar_tensor(name):
    check(MATH[name], torch.randn(()))


def test_math_chain_fuses_into_one_kernel():
    def f(x):
        return F.hardswish(torch.clamp(torch.exp(-x.abs()) * 2, max=1.5) ** 2 + F.silu(x)).abs().sqrt() + F.relu6(x)

    cm = check(f, torch.randn(5, 9))
    assert len(kernels(cm)) == 1, kernels(cm)
    assert len(kernels(check(f, torch.randn(5, 9), fuse=False))) > 5


def test_activation_fuses_into_linear_epilogue():
    m = nn.Sequential(nn.Linear(6, 10), nn.Hardswish(), nn.Linear(10, 4), nn.LeakyReLU(0.1)).eval()
    cm = check(m, torch.randn(3, 6))
    assert kernels(cm) == [
        "irt.contract packed (irt.linear + irt.hardswish) -> 3x10",
        "irt.contract packed (irt.linear + irt.leaky_relu) -> 3x4",
    ]


SPECIAL = torch.tensor([[float("nan"), float("inf"), -float("inf"), -7.0, -3.0, -0.5, 0.0, 0.5, 3.0, 7.0]])


@pytest.mark.parametrize(
    "name",
    ["torch.clamp", "torch.clamp min", "F.relu6", "F.hardswish", "F.hardsigmoid", "F.leaky_relu", "F.hardtanh",
     "torch.abs", "operator.neg", "x ** 2", "torch.exp", "F.silu"],
)
def test_nan_and_inf_like_eager(name):
    check(MATH[name], SPECIAL.clone(), equal_nan=True)


# --- where / masked_fill with compile-time masks -------------------------------------------


class CausalMask(nn.Module):
    """Attention-style masking: a bool buffer (a compile-time constant) filled with -inf."""

    def __init__(self, n: int = 5):
        super().__init__()
        self.register_buffer("mask", torch.tril(torch.ones(n, n)).bool())

    def forward(self, scores):
        return scores.masked_fill(~self.mask, float("-inf")), scores.masked_fill(self.mask.logical_not(), 0.0)


@FUSE
def test_masked_fill_with_constant_buffer_mask(fuse):
    check(CausalMask(), torch.randn(2, 5, 5), fuse=fuse)


@FUSE
def test_where_and_masked_fill_with_folded_masks(fuse):
    def f(x, y):
        n = x.size(-1)
        upper = torch.ones((n, n)).triu(1) == 1
        a = torch.where(upper, x, y)
        b = x.masked_fill(torch.ones((n, n)).tril() == 0, -2.5)
        c = torch.where(upper, 0.5, x)
        return a, b, c

    check(f, torch.randn(3, 6, 6), torch.randn(6, 6), fuse=fuse)


@pytest.mark.parametrize("fuse", [True, False])
def test_runtime_masks_compile_natively(fuse):
    """A mask computed at run time is a bool tensor (once refused: irc had no bool tensors)."""
    check(lambda x: x.masked_fill(x > 0, 0.0), torch.randn(3, 3), fuse=fuse)
    check(lambda x: torch.where(x > 0, x, 0.0), torch.randn(3, 3), fuse=fuse)


def test_tensor_exponent_is_refused():
    with pytest.raises(irc.UnsupportedOpError, match="tensor exponent"):
        irc.compile(lambda x: 2**x, (torch.randn(3),), fallback=False)


# --- shape and data ops --------------------------------------------------------------------

SHAPE_OPS = {
    "getitem int": lambda x: x[1] * 2,
    "getitem negative int": lambda x: x[-1, :, -2],
    "getitem slices": lambda x: x[1:, ::2, 1:-1],
    "getitem step 3": lambda x: x[:, 1::3] + 1,
    "getitem None and ellipsis": lambda x: x[None, ..., 0, None],
    "getitem ellipsis last": lambda x: x[..., -2:],
    "getitem clamped slice": lambda x: x[:100, -100:2],
    "cat": lambda x: torch.cat([x, x * 2, x[:, :1]], dim=1),
    "cat negative dim": lambda x: torch.cat((x[:, :, :2], x), -1),
    "concat dim 0": lambda x: torch.concat([x[:1], torch.relu(x)]),
    "stack": lambda x: torch.stack([x, -x], 1),
    "expand standalone": lambda x: x[:, :1].expand(-1, 6, -1),
    "expand_as": lambda x: x[:1].expand_as(x),
    "broadcast_to": lambda x: torch.broadcast_to(x[0], (3, 6, 5)) + x.broadcast_to((2, 3, 6, 5))[1],
    "expand then matmul-free consumer": lambda x: x[:, :1, :].expand(3, 6, 5).exp(),
    "permute": lambda x: x.permute(2, 0, 1),
    "torch.permute": lambda x: torch.permute(x, (1, 2, 0)) * 3,
    "movedim": lambda x: torch.movedim(x, 0, -1),
    "T of 2-D": lambda x: x[0].T + 1,
    "unsqueeze": lambda x: x.unsqueeze(1) + 1,
    "torch.unsqueeze": lambda x: torch.unsqueeze(x, -1),
    "squeeze": lambda x: x[:, :1].squeeze(1) * 2,
    "squeeze all": lambda x: x[:1, :1].squeeze(),
    "flatten start end": lambda x: x.flatten(1, 2),
    "torch.flatten start": lambda x: torch.flatten(x, 1) + 1,
    "unflatten": lambda x: x.flatten().unflatten(0, (6, 15)),
    "view_as": lambda x: x.flatten().view_as(x) + 1,
    "reshape_as": lambda x: x.permute(1, 0, 2).reshape_as(x),
    "split int": lambda x: torch.split(x, 2, dim=1)[2] * 2,
    "split sections": lambda x: x.split([1, 4], -1)[1],
    "chunk": lambda x: x.chunk(4, 1)[-1] + x.chunk(4, 1)[0],
    "chunk uneven": lambda x: torch.chunk(x, 2, dim=2)[1],
    "unbind": lambda x: x.unbind(1)[3] * 2 + torch.unbind(x)[0][0],
    "narrow": lambda x: x.narrow(1, 2, 3) * 2,
    "torch.narrow negative dim and start": lambda x: torch.narrow(x, -1, -4, 2) + 1,
    "narrow whole and empty": lambda x: torch.cat([x.narrow(0, 0, 3), x.narrow(0, 3, 0)]) * 2,
    "contiguous clone detach": lambda x: x.contiguous().clone().detach() * 2,
    "returns clone of input": lambda x: x.clone(),
    "to float32": lambda x: x.to(torch.float32).float().type(torch.float32).to("cpu").cpu() + 1,
    "to dtype kwarg": lambda x: x.to(dtype=torch.float32, device="cpu") * 2,
}


@FUSE
@pytest.mark.parametrize("name", sorted(SHAPE_OPS))
def test_shape_op_matches_eager(name, fuse):
    check(SHAPE_OPS[name], torch.randn(3, 6, 5), fuse=fuse)


@pytest.mark.parametrize("shape,perm,tiled", [
    ((1, 28, 28, 64), (0, 3, 1, 2), True),  # ConvNeXt's NHWC -> NCHW: [784, 64] -> [64, 784], 16 x 56 tiles
    ((2, 17, 19, 5), (0, 3, 1, 2), True),  # 323 columns (tiles of 5 x 19), batch 2
    ((1, 257, 1, 3), (0, 3, 1, 2), True),  # 257 columns (prime): 64-column tiles, the last one clamped
    ((2, 300, 7), (0, 2, 1), True),  # a 3-D transpose: 7 x 60 tiles
    ((3, 5, 7, 9), (0, 3, 1, 2), True),  # 35 columns, H and W merged
    ((1, 14, 14, 128), (0, 3, 1, 2), True),  # ConvNeXt's stage-2 NHWC -> NCHW: 196 columns, 16 x 49 tiles
    ((1, 128, 14, 14), (0, 2, 3, 1), True),  # and back: 128 columns
    ((1, 64, 28, 28), (0, 2, 3, 1), True),  # NCHW -> NHWC: [64, 784] -> [784, 64]
    ((1, 37, 41, 19), (0, 3, 1, 2), True),  # 16 x 41 tiles (the last 3 rows): full blocks, ragged edges
    ((2, 33, 70), (0, 2, 1), True),  # 33 columns: 2 blocks of 16 and one ragged column
    ((16, 40), (1, 0), False),  # 16 output columns: one vector, untiled
    ((17, 40), (1, 0), True),
    ((4, 3, 5, 6), (2, 0, 3, 1), False),  # nothing to merge
    ((1, 20, 15, 0), (0, 3, 1, 2), False),  # no channels: an empty result
], ids=str)
def test_transpose_merged_and_tiled(shape, perm, tiled):
    """Transposes whose adjacent dimensions merge (through views) and whose output rows (over 16
    columns) are copied in tiles, each one irc_transpose call (blocks in registers), with ragged
    and clamped tiles, match eager."""
    cm = check(lambda x: x.permute(*perm) * 2.0, torch.randn(*shape))
    assert ("scf.for %a" in cm.ir("loops")) == tiled
    assert ("irc_transpose(&" in cm.cpp_source) == tiled


def test_integer_and_bool_transposes_tile_without_the_float_kernel():
    """int64 and bool transposes tile like float ones but keep the element loops: irc_transpose
    moves floats only (an int64 tile through it did not compile)."""
    def f(x, i, m):
        return x + i.t().contiguous().float() + m.t().contiguous().float()

    x, i, m = torch.randn(40, 33), torch.randint(0, 5, (33, 40)), torch.rand(33, 40) > 0.5
    cm = check(f, x, i, m)
    loops = cm.ir("loops")
    assert "memref<40x33xi64>" in loops and loops.count("scf.for %a") == 2
    assert "irc.transpose" not in loops and "irc_transpose(&" not in cm.cpp_source


@FUSE
def test_split_chunk_tuples(fuse):
    def f(x):
        a, b, c = x.split(2, dim=0)
        h1, h2 = torch.chunk(x, 2, -1)
        u = x.unbind(-1)
        return a + b * c, h1 * torch.sigmoid(h2), u[0] - u[-1]

    check(f, torch.randn(6, 4), fuse=fuse)


def test_slice_of_size_one_and_odd_shapes():
    check(lambda x: x[0:1, 2:3] * x[:, -1:], torch.randn(1, 3))
    check(lambda x: torch.cat([x[:, ::2], x[:, 1::2]], 1), torch.randn(7, 9))


def test_expand_consumed_by_a_broadcasting_op_makes_no_kernel():
    def f(x, y):
        return x.expand(4, 6) + y, y * x.expand_as(y)

    x, y = torch.randn(4, 1), torch.randn(4, 6)
    cm = check(f, x, y)
    assert "irt.expand" not in cm.ir("import")
    assert len(kernels(cm)) == 2
    # A consumer that does not broadcast by itself (relu keeps its operand's shape) gets an expand.
    cm = check(lambda x: torch.relu(x.expand(4, 6)), x)
    assert "irt.expand" in cm.ir("import")
    # Both operands expanded to a shape neither would broadcast to alone: still correct.
    cm = check(lambda x, z: x.expand(4, 6) * z.expand(4, 6), x, torch.randn(4, 1))
    assert "irt.expand" in cm.ir("import")


def test_cat_of_expanded_and_constant_inputs():
    check(lambda x: torch.cat([x, x[:, :1].expand(-1, 3), torch.ones((x.shape[0], 2))], 1), torch.randn(4, 5))


def test_bad_casts_are_refused():
    with pytest.raises(irc.UnsupportedOpError, match="torch.float64"):
        irc.compile(lambda x: x.to(torch.float64) * 2, (torch.randn(3),), fallback=False)
    with pytest.raises(irc.UnsupportedOpError, match="advanced indexing"):
        irc.compile(lambda x: x[[0, 2], [1, 0]], (torch.randn(3, 2),), fallback=False)


# --- compile-time shape queries, assertions and factories ------------------------------------


class Flattener(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 5)

    def forward(self, x):
        torch._assert(x.dim() == 3, "expects a 3-D input")
        torch._assert(x.shape[1] * x.size(2) == 12, "expects 12 features")
        n = x.size(0)
        h = x.view(x.size(0), -1)
        h = self.fc(h) * (x.ndim - 1) + x.numel() // n
        return h.reshape(n, x.shape[-1] - 3, -1), h[:, : h.size(1) // 2]


@FUSE
def test_shape_queries_fold_at_compile_time(fuse):
    cm = check(Flattener().eval(), torch.randn(2, 3, 4), fuse=fuse)
    text = cm.ir("import")
    assert "assert" not in text and "size" not in text


def test_false_assertion_is_a_compile_error():
    def f(x):
        torch._assert(x.size(0) == 3, "batch must be 3")
        return x + 1

    with pytest.raises(irc.IrcError, match="batch must be 3"):  # eager shape propagation fails first
        irc.compile(f, (torch.randn(2, 2),), fallback=False)
    with pytest.raises(irc.IrcError, match="torch._assert failed at compile time: batch must be 3"):
        FUNCTIONS[torch._assert](None, None, False, "batch must be 3")
    assert FUNCTIONS[torch._assert](None, None, True, "fine") is None


def test_shape_arithmetic_and_comparisons():
    def f(x):
        b, c = x.shape
        s = (c - 1) // 2 + b % 2
        k = x.size(-1) ** 2 - x.size(-1)
        torch._assert(x.size() == (3, 5), "shape")
        torch._assert(b <= c, "order")
        return x[:, :s] * (k - c) + (b * 2 - c) / (c % b)

    check(f, torch.randn(3, 5))


@FUSE
def test_small_factories_are_inline_constants(fuse):
    def f(x):
        n = x.size(0)
        return x + torch.arange(n).reshape(n, 1) * 0.5 + torch.full((1, x.shape[1]), 2.0) - torch.ones((n,)).unsqueeze(1)

    x = torch.randn(4, 3)
    cm = check(f, x, fuse=fuse)
    assert "1.500000e+00]]> : tensor<4x1xf32>" in cm.ir("import")


@FUSE
def test_big_factory_constants_are_parameters_not_ir_text(fuse):
    def f(x):
        n, m = x.shape
        ramp = torch.arange(n * m, dtype=torch.float32).reshape(n, m) / 7.0  # 35 distinct values
        return x * ramp + torch.triu(torch.ones((n, m))) + torch.zeros_like(x) + x.new_ones(n, m) * 3

    x = torch.randn(5, 7)
    cm = check(f, x, fuse=fuse)
    text = cm.ir("import")
    func_line = next(line for line in text.splitlines() if "func.func" in line)
    assert func_line.count("tensor<5x7xf32>") == 1 + 2 + 1  # x, ramp, triu and the result
    assert "1.428571" not in text and "dense<[" not in text  # no value of ramp (1/7) is printed


def test_factory_parameters_in_imported_graph():
    def f(x):
        return x + torch.arange(x.numel(), dtype=torch.float32).reshape(x.shape)

    g = import_fx(torch.fx.symbolic_trace(f), [torch.randn(4, 5)])
    assert [name for name, _ in g.params] == ["cst"]
    torch.testing.assert_close(g.params[0][1], torch.arange(20.0).reshape(4, 5))
    assert len(g.module.body.block.first_op.body.block.args) == 2


def test_comparison_on_runtime_tensor_is_a_bool_tensor_promoted_in_arithmetic():
    check(lambda x: (x > 0) * x, torch.randn(3))


def test_operator_table_entries_still_compute():
    """Folding wrappers keep the run-time converters: x + y, neg and pow on tensors."""
    check(lambda x, y: operator.add(operator.neg(x), operator.pow(y, 2)), torch.randn(3, 4), torch.randn(4))


# --- parameter-only computations fold at compile time (reference evaluation of these ops) ----


class ParamOnly(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 6))
        self.register_buffer("mask", torch.tril(torch.ones(4, 6)).bool())

    def forward(self, x):
        w = torch.cat([self.w[:, ::2].exp(), F.hardswish(self.w[:, 1::2]) ** 2], 1).masked_fill(self.mask, 0.5)
        w = torch.rsqrt(w.clamp(0.1, 2.0)) + F.leaky_relu(self.w[:1].expand(4, 6)).sin()
        return x @ w.t()


@FUSE
def test_parameter_only_math_and_shape_ops_fold_at_compile_time(fuse):
    cm = check(ParamOnly(), torch.randn(3, 6), fuse=fuse)
    assert "irt.slice" in cm.ir("import") and "irt.where" in cm.ir("import")
    after = cm.ir("fused")
    for name in ("irt.slice", "irt.concat", "irt.where", "irt.exp", "irt.expand", "irt.elementwise", "irt.clamp"):
        assert name not in after, f"{name} should have been folded:\n{after}"


def test_tensor_where_method_and_refusals_name_the_reason():
    def f(x):
        keep = torch.ones((x.size(0), x.size(1))).triu() > 0
        return x.where(keep, -x)

    check(f, torch.randn(4, 4))
    with pytest.raises(irc.UnsupportedOpError, match="not a tensor computed at run time"):
        irc.compile(lambda x: torch.clamp(x, min=x[0]), (torch.randn(3),), fallback=False)
    check(lambda x: x[1:1] + 1, torch.randn(3))  # an empty slice is an empty tensor, as in eager
    with pytest.raises(irc.UnsupportedOpError, match="produces a torch.float16 tensor"):
        irc.compile(lambda x: x.half(), (torch.randn(3),), fallback=False)
    check(lambda x: (x * 4).long(), torch.randn(3))  # int64 and triu of run-time tensors compile
    check(lambda x: x.triu() + 1, torch.randn(3, 3))


def test_scalar_index_and_leading_none():
    check(lambda x: x[0] * 2 + x[-1], torch.randn(5))
    check(lambda x: x[..., None] + x[None], torch.randn(5))
    check(lambda x: x.split([2, 3], dim=-1)[1].squeeze(0), torch.randn(1, 5))


def test_narrow_outside_the_dimension_raises_as_eager_does():
    """torch raises where a narrow's box leaves its dimension (slicing would clamp): the compile
    says so, quoting eager's error."""
    x = torch.randn(3, 6, 5)
    for f in (lambda x: x.narrow(1, 4, 3), lambda x: x.narrow(1, -7, 2), lambda x: x.narrow(2, 0, -1)):
        with pytest.raises((RuntimeError, IndexError)):
            f(x)
        with pytest.raises(IrcError, match="eager PyTorch raises too"):
            irc.compile(f, (x,))


def test_narrow_to_a_symbolic_length():
    """A buffer narrowed to the input's length (position ids), and the input narrowed by a
    length computed from its size, at every length of the range with one build."""

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("table", torch.randn(40, 8))

        def forward(self, x):
            n = x.shape[1]
            return x.narrow(1, 1, n - 1) * self.table.narrow(0, 0, n - 1) + torch.narrow(x, 1, 0, n - 1)

    m = M()
    cm = irc.compile(m, (torch.randn(2, 9, 8),), fallback=False,
                     dynamic_shapes={"x": {1: torch.export.Dim("L", min=2, max=40)}})
    for n in (3, 9, 17, 40):
        x = torch.randn(2, n, 8)
        torch.testing.assert_close(cm(x), m(x))
    assert len(cm.versions) == 1


# Activations made of exp and log (`convert_math._softplus_of`, `_elu_of`): on a grid over their
# whole range, with infinities, NaN, zeros of both signs, the threshold's neighbours, and values
# whose results are tiny (softplus(-30) = 9.4e-14: log1p and expm1, not log(1 + u) and exp(x) - 1).
EXP_ACTIVATIONS = {
    "softplus": (lambda x: F.softplus(x), 5e-7),
    "softplus beta threshold": (lambda x: F.softplus(x, beta=2.0, threshold=5.0), 5e-7),
    "nn.Softplus": (nn.Softplus(0.5, 10.0), 5e-7),
    "softplus past exp's range": (lambda x: F.softplus(x, threshold=200.0), 5e-7),  # exp(x) = inf: inf
    "mish": (lambda x: F.mish(x), 1e-5),  # tanh near 0 of a sum; torch's own: 1.2e-5
    "nn.Mish": (nn.Mish(), 1e-5),
    "logsigmoid": (lambda x: F.logsigmoid(x), 5e-7),
    "nn.LogSigmoid": (nn.LogSigmoid(), 5e-7),
    "elu": (lambda x: F.elu(x), 5e-7),
    "nn.ELU": (nn.ELU(0.3), 5e-7),
    "selu": (lambda x: F.selu(x), 5e-7),
    "nn.SELU": (nn.SELU(), 5e-7),
    "celu": (lambda x: F.celu(x, 2.0), 5e-7),
    "nn.CELU": (nn.CELU(0.5), 5e-7),
    "clamp_min clamp_max": (lambda x: torch.stack([x.clamp_min(-0.5), torch.clamp_max(x, 0.25), x.clamp_max(1.0)]), 0.0),
}


@FUSE
@pytest.mark.parametrize("name", sorted(EXP_ACTIVATIONS))
def test_exp_log_activations_match_eager_and_float64(name, fuse):
    f, bound = EXP_ACTIVATIONS[name]
    x = torch.cat([
        torch.linspace(-110, 110, 2001), torch.logspace(-30, 2, 200), -torch.logspace(-30, 2, 200),
        torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 5.0, 20.0, 20.0001, 19.9999, 2.5,
                      2.5001, -87.3, -104.0, -1e-7, 1e-7, 0.4999, 0.5, -0.5, -0.5001, 1.0]),
    ]).reshape(3, -1)  # rows of 807: not whole vectors
    cm = irc.compile(f, (x,), fuse=fuse, fallback=False)
    y = cm(x)
    torch.testing.assert_close(y, f(x), equal_nan=True)
    exact = f(x.double())
    # where float32 holds the result (torch's own overflows past exp's range: inf, as irc's)
    normal = torch.isfinite(f(x)) & (exact.abs() > torch.finfo(torch.float32).tiny)
    err = ((y.double() - exact).abs() / exact.abs())[normal].max().item()
    assert err <= bound, f"{name}: relative error {err:.3g} against float64 > {bound}"
    if fuse and "elu" in name.lower():  # one exp and arithmetic: one kernel
        assert len(re.findall(r"// kernel \d+", kernel_code(cm))) == 1

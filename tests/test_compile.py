"""irc.compile against eager PyTorch: every op, fused and unfused, MLPs of many shapes, errors."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from irc_testing import check
from torch import nn

import irc
from irc.pipeline import cpp_target, declared, spell
from irc.runtime import compiler_invocations
from irc.target import Target

torch.manual_seed(0)




def mlp(*sizes, act=nn.ReLU):
    layers: list[nn.Module] = []
    for a, b in zip(sizes, sizes[1:]):
        layers += [nn.Linear(a, b), act()]
    return nn.Sequential(*layers[:-1]).eval()


# --- every op, fused and unfused ---------------------------------------------------------

OPS = {
    "relu": lambda x, y: torch.relu(x),
    "F.relu": lambda x, y: F.relu(x),
    "method relu": lambda x, y: x.relu(),
    "sigmoid": lambda x, y: torch.sigmoid(x),
    "tanh": lambda x, y: torch.tanh(x),
    "gelu": lambda x, y: F.gelu(x),
    "gelu tanh": lambda x, y: F.gelu(x, approximate="tanh"),
    "add": lambda x, y: x + y,
    "torch.add": lambda x, y: torch.add(x, y),
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "div": lambda x, y: x / (y * y + 1),
    "scalar ops": lambda x, y: (2.5 - x) * 3 / 4 + 1,
    "matmul": lambda x, y: torch.matmul(x, y.t()),
    "mm": lambda x, y: torch.mm(x, y.t()),
    "@": lambda x, y: x @ y.t(),
    "F.linear": lambda x, y: F.linear(x, y),
    "transpose": lambda x, y: x.transpose(0, 1) * 2,
    "t": lambda x, y: x.t(),
    "reshape": lambda x, y: x.reshape(-1),
    "view": lambda x, y: (x * y).view(-1, 1),
    "flatten": lambda x, y: torch.flatten(x),
    "contiguous": lambda x, y: x.contiguous() + 1,
    "chain": lambda x, y: torch.tanh(torch.sigmoid(x * y + 1) - 0.5) / 2,
    "returns input": lambda x, y: x,
    "tuple": lambda x, y: (x + y, torch.relu(x), x),
}


@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("shape", [(3, 7), (1, 1), (16, 33)], ids=lambda s: "x".join(map(str, s)))
def test_op_matches_eager(name, shape, fuse):
    x, y = torch.randn(shape), torch.randn(shape)
    check(OPS[name], x, y, fuse=fuse)


@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize(
    "shapes",
    [((4, 1, 5), (3, 1), (5,)), ((2, 3), (3,), (1, 1)), ((1,), (6, 1), (1, 7)), ((), (2, 2), ())],
    ids=lambda s: ",".join("x".join(map(str, t)) or "scalar" for t in s),
)
def test_broadcasting(shapes, fuse):
    check(lambda a, b, c: torch.relu(a * b + c) - b / 3, *(torch.randn(s) for s in shapes), fuse=fuse)


def test_linear_on_3d_input():
    m = nn.Sequential(nn.Linear(6, 5), nn.GELU(), nn.Linear(5, 3)).eval()
    check(m, torch.randn(2, 4, 6))


def test_matmul_bias_activation_fuses_to_one_kernel():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w, self.b = nn.Parameter(torch.randn(9, 5)), nn.Parameter(torch.randn(5))

        def forward(self, x):
            return torch.sigmoid(torch.matmul(x, self.w) + self.b)

    cm = check(M(), torch.randn(4, 9))
    assert len(re.findall(r"^\s*// kernel \d+:", cm.cpp_source, re.M)) == 1  # the emitter's kernel marks
    assert 'irc.fused = ["irt.matmul", "irt.add", "irt.sigmoid"]' in cm.ir("fused")


# --- MLPs ---------------------------------------------------------------------------------

MLPS = [((784, 128, 10), 1), ((3, 7, 5), 3), ((1, 1), 1), ((7, 3, 1), 1), ((64, 100, 33, 10), 17)]


@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("sizes,batch", MLPS, ids=[f"{b}x{'-'.join(map(str, s))}" for s, b in MLPS])
def test_mlp_matches_eager(sizes, batch, fuse):
    check(mlp(*sizes), torch.randn(batch, sizes[0]), fuse=fuse)


@pytest.mark.parametrize("act", [nn.GELU, nn.Sigmoid, nn.Tanh])
def test_mlp_other_activations(act):
    check(mlp(20, 30, 10, act=act), torch.randn(5, 20))


def test_fused_cpp_has_one_kernel_per_linear_relu_pair():
    cm = irc.compile(mlp(784, 128, 64, 10), (torch.randn(1, 784),))
    kernels = re.findall(r"// kernel \d+: (.*)", cm.cpp_source)
    assert kernels == [
        "irt.contract packed (irt.linear + irt.relu) -> 1x128",
        "irt.contract packed (irt.linear + irt.relu) -> 1x64",
        "irt.contract packed (irt.linear) -> 1x10",
    ]
    assert cm.cpp_source.count("irc_gemm(") == 3 + 1  # three calls, one definition
    unfused = irc.compile(mlp(784, 128, 64, 10), (torch.randn(1, 784),), fuse=False)
    assert len(re.findall(r"// kernel \d+", unfused.cpp_source)) == 5


def test_ir_levels():
    cm = irc.compile(mlp(8, 4), (torch.randn(2, 8),))
    assert "irt.linear" in cm.ir("import") and "memref" not in cm.ir("import")
    assert "irt." in cm.ir("fused")
    assert "irl.gemm" in cm.ir("loops") and not re.search(r"= irt\.|^\s*irt\.", cm.ir("loops"), re.M)
    assert "weight" not in re.sub(r"%\w*weight\w*", "", cm.ir("import")), "weights must be arguments"
    with pytest.raises(ValueError, match="unknown IR level 'llvm'"):
        cm.ir("llvm")


def test_parameters_are_read_in_place():
    m = mlp(4, 3)
    x = torch.randn(2, 4)
    cm = irc.compile(m, (x,))
    with torch.no_grad():
        m[0].weight.mul_(2)
        torch.testing.assert_close(cm(x), m(x))


def test_second_compile_runs_no_compiler():
    m, x = mlp(13, 11, 3), torch.randn(2, 13)
    irc.compile(m, (x,))
    before = compiler_invocations()
    cm = irc.compile(m, (x,))
    assert compiler_invocations() == before
    torch.testing.assert_close(cm(x), m(x))


def test_nan_and_inf_propagate_like_eager():
    x = torch.tensor([[float("nan"), float("inf"), -float("inf"), -1.0, 0.0, 2.0]])
    check(lambda x: torch.relu(x) * 2, x, equal_nan=True)
    check(lambda x: torch.sigmoid(x) + torch.tanh(x), x, equal_nan=True)


@pytest.mark.parametrize("fn", [
    lambda x: torch.relu(x), F.relu6, lambda x: F.hardtanh(x, -0.0, 1.0), lambda x: torch.clamp(x, min=-1.0, max=-0.0),
    lambda x: torch.clamp(x, max=6.0), lambda x: F.hardswish(x) + torch.clamp(x, min=0.5), lambda x: torch.relu(-x) * 2,
], ids=["relu", "relu6", "hardtanh", "clamp_to_minus_zero", "clamp_max", "hardswish_clamp_min", "relu_neg"])
def test_constant_bounds_propagate_nan_and_keep_zero_signs_like_eager(fn):
    """Max/min against a constant bound (irc_maxk/irc_mink: one vmaxps/vminps each): NaN
    propagates, infinities and ties clamp, and a zero keeps eager's sign (relu(-0.0) is -0.0, a
    bound of -0.0 is not +0.0), in vector lanes and in the scalar remainder (43 columns)."""
    row = [float("nan"), float("inf"), -float("inf"), -1.0, -0.0, 0.0, 6.0, 7.0, 0.5, -6.0, 1.0]
    x = torch.tensor([row * 4 + row[:-2]] * 3)
    cm = check(fn, x, equal_nan=True)
    got, expected = cm(x), fn(x)
    assert torch.equal(torch.signbit(got), torch.signbit(expected))


@pytest.mark.parametrize("act", [nn.ReLU(), nn.ReLU6(), nn.Hardtanh(-0.5, 0.25)], ids=["relu", "relu6", "hardtanh"])
def test_gemm_and_conv_epilogue_bounds_propagate_nan(act):
    """The same bounds in a GEMM's and a conv's epilogue (vectors of the engine's tile): an input
    NaN reaches every output it feeds, +-inf clamp to the bounds."""
    torch.manual_seed(0)
    lin = nn.Sequential(nn.Linear(12, 37), act).eval()
    x = torch.randn(5, 12)
    x[1, 3], x[3, 0], x[4, 7] = float("nan"), float("inf"), -float("inf")
    check(lin, x, equal_nan=True)
    conv = nn.Sequential(nn.Conv2d(3, 20, 3, padding=1), act).eval()
    img = torch.randn(1, 3, 9, 11)
    img[0, 1, 4, 5], img[0, 2, 0, 0] = float("nan"), float("inf")
    check(conv, img, equal_nan=True)


def test_irc_opt_reproduces_the_cpp_and_compiles_imported_ir(tmp_path):
    """From the folded IR, irc-opt's loop passes with the compile's options (the Target's) give
    exactly the C++ irc.compile built; from the imported IR (weights not folded: irc-opt has no
    values), the declared pipeline runs the packing as kernels."""
    target = Target.host()
    cm = irc.compile(mlp(10, 7, 3), (torch.randn(2, 10),), target=target)
    irc_opt = [sys.executable, "-c", "from irc.tools.irc_opt import main; main()"]
    (tmp_path / "fused.mlir").write_text(cm.ir("fused"))
    loops = [p for p in declared(target, inputs=1).passes if p.name not in ("irc-fuse", "irc-pack-weights", "irc-fold-params")]
    emit = cpp_target(target)
    subprocess.run([*irc_opt, str(tmp_path / "fused.mlir"), "-p", ",".join(map(spell, loops)), "-t", spell(emit),
                    "-o", str(tmp_path / "a.cpp")], check=True)
    assert (tmp_path / "a.cpp").read_text() == cm.cpp_source
    (tmp_path / "model.mlir").write_text(cm.ir("import"))
    cpp = tmp_path / "model.cpp"
    pipeline = f"irc-pipeline{{inputs=1 gemm_width={target.gemm_width}}}"
    subprocess.run([*irc_opt, str(tmp_path / "model.mlir"), "-p", pipeline, "-t", spell(emit), "-o", str(cpp)], check=True)
    assert "irt.pack ->" not in cpp.read_text() and "__fold" not in cpp.read_text()  # no packing kernel: compile-time work
    subprocess.run(
        ["g++", "-std=c++17", "-O1", "-fopenmp", "-shared", "-fPIC", str(cpp), "-o", str(tmp_path / "m.so")],
        check=True,
    )


# --- errors -------------------------------------------------------------------------------


@torch.fx.wrap
def opaque(x):
    """A Python function FX keeps as one call: irc can never convert it."""
    return x * 2


class Unsupported(nn.Module):
    def __init__(self):
        super().__init__()
        self.pad = nn.ReflectionPad2d(1)
        self.lin = nn.Linear(10, 2)

    def forward(self, x):
        y = torch.cumprod(self.pad(x), 1)  # depends on an unsupported node: still checked
        return self.lin(opaque(y)), torch.special.erfcx(x)


def test_unsupported_ops_are_all_listed():
    with pytest.raises(irc.UnsupportedOpError) as err:
        irc.compile(Unsupported(), (torch.randn(1, 3, 8, 8),), fallback=False)
    nodes = {(n.node, n.target) for n in err.value.nodes}
    assert nodes == {
        ("pad", "torch.nn.ReflectionPad2d"),
        ("cumprod", "torch.cumprod"),
        ("opaque", "test_compile.opaque"),
        ("special_erfcx", "torch._C._special.special_erfcx"),
    }
    assert "torch.cumprod" in str(err.value) and "ReflectionPad2d" in str(err.value)


def test_dropout_in_training_mode_is_explained():
    m = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    with pytest.raises(irc.UnsupportedOpError, match=r"model\.eval\(\)"):
        irc.compile(m, (torch.randn(2, 4),), fallback=False)


def test_alpha_and_non_float_inputs_are_refused():
    with pytest.raises(irc.UnsupportedOpError, match="alpha"):
        irc.compile(lambda x, y: torch.add(x, y, alpha=2), (torch.randn(2), torch.randn(2)), fallback=False)
    with pytest.raises(irc.UnsupportedOpError, match="int32"):  # int64 and bool compile (test_lm_ops)
        irc.compile(lambda x: x + 1, (torch.arange(4, dtype=torch.int32),), fallback=False)


def test_untraceable_model_gives_irc_error():
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(irc.IrcError, match="torch.fx could not trace"):
        irc.compile(f, (torch.randn(3),))


@pytest.mark.parametrize(
    "bad,message",
    [
        # a new shape is not an error: it compiles another version (tests/test_frontends.py)
        ((torch.randn(2, 8, dtype=torch.float64),), r"expected dtype torch.float32, got torch.float64"),
        ((torch.randn(2, 8), torch.randn(2, 8)), r"expected 1 input"),
        (([1.0] * 8,), r"expected a torch.Tensor, got list"),
    ],
)
def test_call_time_input_errors(bad, message):
    cm = irc.compile(mlp(8, 2), (torch.randn(2, 8),))
    with pytest.raises(irc.InputError, match=message):
        cm(*bad)


def test_compiler_failure_raises_compile_error():
    with pytest.raises(irc.CompileError) as err:
        irc.compile(mlp(3, 2), (torch.randn(1, 3),), cxx_flags=["-shared", "-fPIC", "-DX=", "-include", "/nonexistent.h"])
    e = err.value
    assert e.command[0] == "g++" and "-include" in e.command
    assert "nonexistent.h" in e.output
    assert e.source_path.exists() and "extern \"C\"" in e.source_path.read_text()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_call_under_autocast_computes_as_eager(dtype, caplog):
    """Under torch.autocast eager computes linear and conv in lower precision and returns that
    dtype; irc returned float32 results (0.002 apart in bfloat16). Such calls run the traced
    graph eagerly, with one WARNING; calls outside autocast are native again."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 6 * 6, 5)).eval()
    x = torch.randn(2, 3, 8, 8)
    cm = irc.compile(model, (x,))
    with torch.no_grad():
        for _ in range(2):
            with torch.autocast("cpu", dtype=dtype):
                got, want = cm(x), model(x)
            assert got.dtype == want.dtype == dtype
            torch.testing.assert_close(got, want, rtol=0, atol=0)
        torch.testing.assert_close(cm(x), model(x))
        assert cm(x).dtype == torch.float32
    assert len([r for r in caplog.records if "autocast" in r.getMessage()]) == 1

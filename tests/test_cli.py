"""Tests of the `irc` command line: built-in models, `irc verify`, `irc visualize`."""

from __future__ import annotations

import textwrap

import pytest
import torch

from irc.errors import IrcError
from irc.models import BUILTIN_MODELS, UsageError, get_model, model_flops
from irc.tools.cli import main
from irc.tools.verify import (
    EAGER,
    INDUCTOR,
    IRC,
    IRC_UNFUSED,
    ModelResult,
    Timing,
    benchmark,
    plot_scaling,
    plot_speedups,
    summary_rows,
)
from irc.tools.visualize import BOX_W, NodeBox, assign_layers, layout, parse_shapes

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# name -> (input shape, output shape, linear layer sizes)
EXPECTED_MLPS = {
    "mlp-small": ((1, 784), (1, 10), [784, 128, 10]),
    "mlp-medium": ((64, 512), (64, 10), [512, 1024, 1024, 10]),
    "mlp-large": ((256, 4096), (256, 1024), [4096, 4096, 4096, 1024]),
}


def _is_png(path) -> bool:
    return path.is_file() and path.read_bytes()[:8] == PNG_MAGIC


# --- built-in models ---------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(EXPECTED_MLPS))
def test_builtin_mlp_shapes(name):
    in_shape, out_shape, sizes = EXPECTED_MLPS[name]
    model, inputs = get_model(name).build()
    assert not model.training
    assert [tuple(t.shape) for t in inputs] == [in_shape]
    assert inputs[0].dtype == torch.float32
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert [lin.in_features for lin in linears] + [linears[-1].out_features] == sizes
    relus = [m for m in model.modules() if isinstance(m, torch.nn.ReLU)]
    assert len(relus) == len(linears) - 1
    assert isinstance(list(model.children())[-1], torch.nn.Linear)  # last Linear is plain
    batch = in_shape[0]
    assert model_flops(get_model(name)) == sum(2 * batch * k * n for k, n in zip(sizes, sizes[1:]))
    if name != "mlp-large":
        with torch.no_grad():
            assert tuple(model(*inputs).shape) == out_shape


def test_build_is_deterministic():
    m1, (x1,) = get_model("mlp-small").build()
    m2, (x2,) = get_model("mlp-small").build()
    assert torch.equal(x1, x2)
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        assert torch.equal(p1, p2)


def test_mlp_large_is_about_19_gflop():
    assert 19e9 < model_flops(BUILTIN_MODELS["mlp-large"]) < 20e9


def test_unknown_model_lists_known_ones():
    with pytest.raises(UsageError, match="mlp-small"):
        get_model("resnet-9000")


# --- pieces of verify / visualize that need no compiler ---------------------------------


def test_benchmark_reports_every_runner():
    calls = {"a": 0, "b": 0}

    def bump(key):
        calls[key] += 1

    timings = benchmark({"a": lambda: bump("a"), "b": lambda: bump("b")}, budget=0.05, min_repeats=5)
    assert set(timings) == {"a", "b"}
    for t in timings.values():
        assert t.samples >= 5 and t.p10 <= t.median <= t.p90
    assert calls["a"] > 5 and calls["b"] > 5


def _fake_result(name, flops, eager, irc, unfused, inductor):
    r = ModelResult(name, "fake", flops, checks={IRC: None, IRC_UNFUSED: None})
    for contender, seconds in ((EAGER, eager), (IRC, irc), (IRC_UNFUSED, unfused), (INDUCTOR, inductor)):
        if seconds is None:
            r.unavailable[contender] = "n/a: RuntimeError: boom"
        else:
            r.timings[contender] = Timing(seconds, seconds * 0.9, seconds * 1.1, 5, 1)
    return r


def test_charts_and_table_with_missing_inductor(tmp_path):
    results = [_fake_result("a", 1e6, 1e-3, 5e-4, 2e-3, None),
               _fake_result("b", 1e9, 1e-1, 5e-2, 2e-1, 8e-2)]
    header, rows = summary_rows(results)
    assert rows[0][header.index("inductor ms")] == "n/a"
    assert rows[0][header.index("irc speedup")] == "2.00x"
    assert rows[1][header.index("irc GFLOP/s")] == "20"
    plot_speedups(results, tmp_path / "bars.png", threads=2)
    plot_scaling(results, tmp_path / "scaling.png", threads=2)
    assert _is_png(tmp_path / "bars.png") and _is_png(tmp_path / "scaling.png")


def test_parse_shapes():
    assert parse_shapes("1x784") == [(1, 784)]
    assert parse_shapes("2x3x4, 5") == [(2, 3, 4), (5,)]
    for bad in ("", "1x", "axb", "0x3"):
        with pytest.raises(UsageError):
            parse_shapes(bad)


def test_layers_follow_longest_path_and_weights_sit_above_users():
    boxes = [
        NodeBox("x", "placeholder", "x", "", []),
        NodeBox("w", "get_attr", "w", "", []),
        NodeBox("a", "call_function", "relu", "", ["x"]),
        NodeBox("b", "call_function", "mm", "", ["a", "w"]),
        NodeBox("c", "call_function", "add", "", ["b", "x"]),
        NodeBox("out", "output", "output", "", ["c"]),
    ]
    layer = assign_layers(boxes)
    assert layer == {"x": 0, "a": 1, "w": 1, "b": 2, "c": 3, "out": 4}

    lay = layout(boxes)
    (route,) = [r for r in lay.routes if r[0] == "x" and r[2] == "c"]
    assert len(route[1]) == 2  # x -> c skips layers 1 and 2: one virtual node in each
    for depth in range(5):
        xs = sorted(lay.x[n] for n, d in lay.layer.items() if d == depth and n in layer)
        assert all(b - a >= BOX_W for a, b in zip(xs, xs[1:]))  # real boxes never overlap


# --- the command line --------------------------------------------------------------------


def test_verify_mlp_small(tmp_path, capsys):
    rc = main(["verify", "--models", "mlp-small", "--no-inductor", "--budget", "0.3",
               "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert _is_png(tmp_path / "final_performance_report.png")
    assert _is_png(tmp_path / "scaling_comparison.png")
    report = (tmp_path / "verify_report.md").read_text()
    assert "mlp-small" in report and "PASS" in report and "FAIL" not in report
    assert "threads:" in out and "verdict: PASS" in out


def test_verify_reports_failures_and_continues(tmp_path, capsys, monkeypatch):
    """A wrong irc-unfused result and a crashing Inductor give FAIL / n/a, not a crash."""
    import irc

    class Wrong:
        def __init__(self, model):
            self.model = model

        def __call__(self, *inputs):
            return self.model(*inputs) + 1.0

    def fake_compile(model, inputs, *, fuse=True):
        if fuse:
            return lambda *xs: model(*xs)
        return Wrong(model)

    def broken_inductor(model, **kwargs):
        raise RuntimeError("no C++ compiler for Inductor")

    monkeypatch.setattr(irc, "compile", fake_compile)
    monkeypatch.setattr(torch, "compile", broken_inductor)
    rc = main(["verify", "--models", "mlp-small,mlp-medium", "--budget", "0.1", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 1
    assert "mlp-small / irc-unfused: FAIL" in out and "mlp-medium / irc-unfused: FAIL" in out
    assert "verdict: FAIL (0/2" in out
    report = (tmp_path / "verify_report.md").read_text()
    assert "no C++ compiler for Inductor" in report and "Mismatched elements" in report
    assert _is_png(tmp_path / "final_performance_report.png")


def test_visualize_builtin(tmp_path, capsys):
    assert main(["visualize", "mlp-small", "--out", str(tmp_path)]) == 0
    assert _is_png(tmp_path / "figure1_graph_structure.png")
    assert "irt." in (tmp_path / "fused_graph_structure.txt").read_text()
    assert str(tmp_path / "figure1_graph_structure.png") in capsys.readouterr().out


@pytest.fixture
def user_models(tmp_path, monkeypatch):
    """A module `irc_cli_user_models` on sys.path with a factory and a module instance."""
    (tmp_path / "irc_cli_user_models.py").write_text(textwrap.dedent("""
        import torch
        from torch import nn

        def make():
            torch.manual_seed(1)
            return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)), (torch.randn(2, 8),)

        tiny = nn.Sequential(nn.Linear(6, 3), nn.ReLU())
        number = 42

        class Odd(nn.Module):
            def forward(self, x):
                return torch.special.erfcx(x)

        def odd():
            return Odd(), (torch.randn(2, 3),)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("args", [["irc_cli_user_models:make"],
                                  ["irc_cli_user_models:tiny", "--input-shape", "3x6"]])
def test_visualize_user_model(user_models, args):
    out = user_models / "out"
    assert main(["visualize", *args, "--out", str(out)]) == 0
    assert _is_png(out / "figure1_graph_structure.png")
    assert "irt." in (out / "fused_graph_structure.txt").read_text()


@pytest.mark.parametrize("argv, message", [
    (["visualize", "no-such-model"], "unknown model 'no-such-model'"),
    (["visualize", "irc_cli_user_models:tiny"], "--input-shape"),
    (["visualize", "irc_cli_user_models:missing"], "no attribute"),
    (["visualize", "irc_cli_user_models:number"], "not an nn.Module or a callable"),
    (["visualize", "no_such_package_xyz:thing"], "cannot import module"),
    (["explain", "mlp-small", "--input-shape", "2x784"], "built-in model 'mlp-small' brings its own"),
])
def test_bad_model_gives_clear_error(user_models, capsys, argv, message):
    assert main([*argv, "--out", str(user_models / "out")]) == 1
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_visualize_unsupported_model_still_draws_graph(user_models, capsys):
    out = user_models / "out"
    assert main(["visualize", "irc_cli_user_models:odd", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "irc cannot compile" in err and "Traceback" not in err
    assert _is_png(out / "figure1_graph_structure.png")
    assert not (out / "fused_graph_structure.txt").exists()


def test_subcommand_is_required(capsys):
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 2


# --- argument validation: one argparse line, exit code 2, before any work -----------------


@pytest.mark.parametrize("argv, message", [
    (["explain", "--profile", "--runs", "0"], "argument --runs: expected a positive integer, got '0'"),
    (["explain", "--runs", "many"], "argument --runs: expected a positive integer"),
    (["explain", "--input-shape", "abc"], "argument --input-shape: expected shapes like 1x784"),
    (["visualize", "--input-shape", "1x0"], "argument --input-shape: expected shapes like 1x784"),
    (["verify", "--threads", "0"], "argument --threads: expected a positive integer, got '0'"),
    (["verify", "--budget", "0"], "argument --budget: expected a positive number of seconds"),
    (["verify", "--budget", "nan"], "argument --budget: expected a positive number of seconds"),
    (["bench", "--budget", "-1"], "argument --budget: expected a positive number of seconds"),
    (["bench", "--min-repeats", "0"], "argument --min-repeats: expected a positive integer"),
    (["verify", "--min-repeats", "-3"], "argument --min-repeats: expected a positive integer"),
    (["verify", "--models", ""], "argument --models: no model named in ''; the built-in models are: mlp-small,"),
    (["bench", "--models", " , "], "argument --models: no model named in"),
    (["verify", "--models", "mlp-small,bogus"], "argument --models: unknown model(s) 'bogus'; the built-in models are"),
    (["bench", "--models", "nope"], "unknown model(s) 'nope'"),
])
def test_bad_argument_is_a_one_line_usage_error(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2, err
    assert message in err and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith(f"irc {argv[0]}: error: argument ")


@pytest.mark.parametrize("command", ["verify", "visualize", "explain", "bench"])
@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_out_that_cannot_be_a_directory_is_a_usage_error(tmp_path, capsys, command, where):
    (tmp_path / "f").write_text("")
    out = tmp_path / "f" if where == "a file" else tmp_path / "f" / "sub"
    with pytest.raises(SystemExit) as exc:
        main([command, "--out", str(out)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err
    assert "argument --out" in err and "is a file, not a directory" in err


def test_out_unwritable_is_a_usage_error(tmp_path, capsys, monkeypatch):
    # Tests run as root here, for whom every directory is writable: stand in for the check.
    monkeypatch.setattr("irc.tools.cli.os.access", lambda path, mode: False)
    with pytest.raises(SystemExit) as exc:
        main(["explain", "--out", str(tmp_path / "new")])
    assert exc.value.code == 2
    assert f"cannot write to '{tmp_path / 'new'}': '{tmp_path}' is not writable by you" in capsys.readouterr().err


def test_failed_write_is_an_irc_error_naming_the_path(tmp_path):
    from irc.tools.cli import writing_to

    with pytest.raises(IrcError, match=r"cannot write to '.*report\.md': Read-only file system; choose another --out"):
        with writing_to(tmp_path / "out"):
            raise OSError(30, "Read-only file system", str(tmp_path / "out" / "report.md"))
    assert (tmp_path / "out").is_dir()


def test_version_names_irc_xdsl_and_torch(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == (
        f"irc {version('irc')} (xdsl {version('xdsl')}, torch {version('torch')})")


# --- irc-opt: a bad command line is one line and exit code 2 -------------------------------


def _irc_opt(argv, capsys) -> tuple[int, str, str]:
    from irc.tools.irc_opt import main as irc_opt

    try:
        irc_opt(argv)
        code = 0
    except SystemExit as e:
        code = e.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("case, message", [
    ("missing input", "cannot read the input file '{d}/missing.mlir': No such file or directory"),
    ("directory input", "cannot read the input file '{d}': Is a directory"),
    ("output in a missing directory", "cannot write the output file '{d}/no/out.mlir': No such file or directory"),
    ("output is a directory", "cannot write the output file '{d}': Is a directory"),
    ("unknown extension", "cannot tell the format of '{d}/ir.txt' from its extension 'txt': name it *.mlir or pass -f mlir"),
])
def test_irc_opt_bad_paths_are_one_line_usage_errors(tmp_path, capsys, case, message):
    good = tmp_path / "ok.mlir"
    good.write_text("func.func @f() {\n  func.return\n}\n")
    (tmp_path / "ir.txt").write_text("")
    argv = {
        "missing input": [str(tmp_path / "missing.mlir")],
        "directory input": [str(tmp_path)],
        "output in a missing directory": [str(good), "-o", str(tmp_path / "no" / "out.mlir")],
        "output is a directory": [str(good), "-o", str(tmp_path)],
        "unknown extension": [str(tmp_path / "ir.txt")],
    }[case]
    code, _, err = _irc_opt(argv, capsys)
    assert code == 2, err
    assert err == f"irc-opt: error: {message.format(d=tmp_path)}\n"


def test_irc_opt_version_names_irc_and_xdsl(capsys):
    from importlib.metadata import version

    code, out, _ = _irc_opt(["--version"], capsys)
    assert code == 0
    assert out.strip() == f"irc-opt {version('irc')} (xDSL {version('xdsl')})"


# --- a build cache irc cannot use: one line naming it, exit code 1 --------------------------


@pytest.mark.parametrize("kind, problem", [
    ("a file", "it is a file, not a directory"),
    ("under a file", "Not a directory"),
])
def test_unusable_cache_dir_is_an_irc_error(tmp_path, monkeypatch, capsys, kind, problem):
    (tmp_path / "f").write_text("")
    root = tmp_path / "f" if kind == "a file" else tmp_path / "f" / "cache"
    monkeypatch.setenv("IRC_CACHE_DIR", str(root))
    assert main(["explain", "mlp-small"]) == 1
    err = capsys.readouterr().err
    assert err == (f"irc explain: error: cannot use the irc build cache {root}: {problem}; "
                   "set IRC_CACHE_DIR to a writable directory of your own\n")


@pytest.mark.parametrize("error", [PermissionError(13, "Permission denied"), OSError(30, "Read-only file system")])
def test_unwritable_or_read_only_cache_dir_is_an_irc_error(tmp_path, monkeypatch, error):
    from irc.runtime import build, build_library

    # Tests run as root, who can write anywhere: the OS's refusal is stood in for.
    def refuse(path):
        error.filename = str(path)
        raise error

    monkeypatch.setenv("IRC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(build, "_makedirs", refuse)
    with pytest.raises(IrcError, match=rf"cannot use the irc build cache {tmp_path / 'cache'}: {error.strerror}; "):
        build_library('extern "C" int f() { return 1; }\n')


def test_cache_cli_on_unusable_cache_dir(tmp_path, monkeypatch, capsys):
    (tmp_path / "f").write_text("")
    monkeypatch.setenv("IRC_CACHE_DIR", str(tmp_path / "f"))
    assert main(["cache", "info"]) == 1
    assert capsys.readouterr().err == (f"irc cache: error: cannot read the irc build cache {tmp_path / 'f'}: "
                                       "it is a file, not a directory; check IRC_CACHE_DIR\n")
    cache = tmp_path / "cache"
    (cache / "ab").mkdir(parents=True)
    (cache / "ab" / f"ab{'0' * 62}.so").write_bytes(b"")
    monkeypatch.setenv("IRC_CACHE_DIR", str(cache))

    def refuse(self, missing_ok=False):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr("pathlib.Path.unlink", refuse)
    assert main(["cache", "clear"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"irc cache: error: cannot clear the irc build cache {cache}: Permission denied (")
    assert "Traceback" not in err

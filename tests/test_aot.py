"""AOT artifacts: cm.save(dir) and irc.load(dir), which needs neither the compiler nor xDSL."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

import irc
from irc.aot import _content_hash
from irc.runtime.build import check_library


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(12, 8), nn.GELU(), nn.Linear(8, 3)).eval()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """An artifact of _model() for inputs 2x12, and the example input; tests copy it to edit it."""
    path = tmp_path_factory.mktemp("saved") / "art"
    x = torch.randn(2, 12)
    irc.compile(_model(), (x,)).save(path)
    return path, x


def _copy(saved, tmp_path) -> Path:
    import shutil

    return Path(shutil.copytree(saved[0], tmp_path / "art"))


def _manifest(art: Path) -> dict:
    return json.loads((art / "manifest.json").read_text())


def _write_manifest(art: Path, manifest: dict, rehash: bool = True) -> None:
    """Rewrite the manifest; with `rehash`, with a matching content hash (a deliberate edit)."""
    if rehash:
        manifest["content_hash"] = _content_hash(manifest)
    (art / "manifest.json").write_text(json.dumps(manifest))


def _rehash_file(art: Path, name: str) -> None:
    manifest = _manifest(art)
    manifest["files"][name] = hashlib.sha256((art / name).read_bytes()).hexdigest()
    _write_manifest(art, manifest)


def _library(art: Path) -> Path:
    (lib,) = art.glob("model-*.so")
    return lib


def test_save_then_load_in_a_fresh_process_without_xdsl(tmp_path):
    m, x = _model(), torch.randn(2, 12)
    cm = irc.compile(m, (x,))
    cm.save(tmp_path / "art")
    manifest = _manifest(tmp_path / "art")
    assert manifest["irc_version"] == irc.__version__ and manifest["format"] == 3
    assert manifest["versions"][0]["inputs"] == [{"name": "input_1", "shape": [2, 12], "dtype": "float32"}]
    assert "-march=native" in manifest["compiler"]["flags"] and "avx2" in manifest["cpu_features"]
    torch.save((x, m(x).detach()), tmp_path / "io.pt")
    script = textwrap.dedent(
        f"""
        import sys, torch, irc
        loaded = irc.load({str(tmp_path / 'art')!r})
        x, expected = torch.load({str(tmp_path / 'io.pt')!r})
        torch.testing.assert_close(loaded(x), expected)
        assert not any(m == "xdsl" or m.startswith("xdsl.") for m in sys.modules), "xDSL was imported"
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_loading_on_a_cpu_without_a_required_feature_is_refused(saved, tmp_path):
    art = _copy(saved, tmp_path)
    manifest = _manifest(art)
    manifest["cpu_features"].append("avx1024_imaginary")
    _write_manifest(art, manifest)
    with pytest.raises(irc.IrcError, match="avx1024_imaginary, which this CPU lacks"):
        irc.load(art)


def test_loading_a_directory_that_is_not_an_artifact(tmp_path):
    with pytest.raises(irc.IrcError, match="not an irc artifact"):
        irc.load(tmp_path)


def test_embedding_model_round_trips_with_int64_inputs(tmp_path):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Embedding(10, 6), nn.Linear(6, 2)).eval()
    idx = torch.tensor([[1, 9, 0]])
    irc.compile(m, (idx,)).save(tmp_path / "art")
    loaded = irc.load(tmp_path / "art")
    assert loaded.manifest["versions"][0]["inputs"][0]["dtype"] == "int64"
    torch.testing.assert_close(loaded(idx), m(idx).detach())


class _Masks(nn.Module):
    """bool and int64 inputs and outputs, and an int64 parameter (a compile-time table too big to
    print inline)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("offsets", torch.arange(60).reshape(3, 20) % 7)  # an int64 table, not an arange

    def forward(self, x, ids, keep):
        mask = (ids > 1) & keep
        return x.masked_fill(~mask, 0.0), mask, ids * 2 - self.offsets[:, :7]


def test_bool_and_int64_outputs_round_trip(tmp_path):
    m = _Masks().eval()
    x, ids, keep = torch.randn(3, 7), torch.randint(0, 4, (3, 7)), torch.rand(3, 7) > 0.5
    cm = irc.compile(m, (x, ids, keep), fallback=False)
    assert "tensor<3x7xi64>) -> (" in cm.ir("import")  # the table is a parameter (argument) of its own dtype
    cm.save(tmp_path / "art")
    loaded = irc.load(tmp_path / "art")
    version = loaded.manifest["versions"][0]
    assert [o["dtype"] for o in version["outputs"]] == ["float32", "bool", "int64"]
    assert [i["dtype"] for i in version["inputs"]] == ["float32", "int64", "bool"]
    for got, expected in zip(loaded(x, ids, keep), m(x, ids, keep)):
        assert got.dtype == expected.dtype
        torch.testing.assert_close(got, expected)


# --- a tampered artifact is refused, never run out of bounds ------------------------------------


@pytest.mark.parametrize("rows", [1, 8])
def test_an_edited_input_shape_is_caught_by_the_content_hash(saved, tmp_path, rows):
    art = _copy(saved, tmp_path)
    manifest = _manifest(art)
    manifest["versions"][0]["inputs"][0]["shape"] = [rows, 12]
    _write_manifest(art, manifest, rehash=False)
    with pytest.raises(irc.IrcError, match="manifest.json was modified after it was saved"):
        irc.load(art)


@pytest.mark.parametrize("rows", [1, 8])
def test_an_input_shape_edited_with_the_hash_redone_is_caught_by_the_library_signature(saved, tmp_path, rows):
    # Before: 1 row read past the input (garbage such as 4e26), 8 rows returned uninitialized rows.
    art = _copy(saved, tmp_path)
    manifest = _manifest(art)
    manifest["versions"][0]["inputs"][0]["shape"] = [rows, 12]
    _write_manifest(art, manifest)
    message = rf"input 0 \('input_1'\) is float32 \[{rows}, 12\] in the manifest, the library was built for float32 \[2, 12\]"
    with pytest.raises(irc.IrcError, match=message):
        irc.load(art)


def test_an_output_shape_edit_is_caught_by_the_library_signature(saved, tmp_path):
    art = _copy(saved, tmp_path)
    manifest = _manifest(art)
    manifest["versions"][0]["outputs"][0]["shape"] = [1, 3]
    _write_manifest(art, manifest)
    with pytest.raises(irc.IrcError, match=r"output 0 is float32 \[1, 3\] in the manifest"):
        irc.load(art)


def test_a_zero_arena_is_caught_by_the_library_signature(saved, tmp_path):
    # Before: the library wrote its intermediates through a null arena (SIGSEGV).
    art = _copy(saved, tmp_path)
    manifest = _manifest(art)
    assert manifest["versions"][0]["arena_bytes"] > 0
    manifest["versions"][0]["arena_bytes"] = 0
    _write_manifest(art, manifest)
    with pytest.raises(irc.IrcError, match="describes 6 buffers, the library takes 7"):
        irc.load(art)


def test_a_smaller_arena_is_caught_by_the_library_signature(saved, tmp_path):
    art = _copy(saved, tmp_path)
    manifest = _manifest(art)
    arena = manifest["versions"][0]["arena_bytes"]
    manifest["versions"][0]["arena_bytes"] = arena // 2
    _write_manifest(art, manifest)
    with pytest.raises(irc.IrcError, match=rf"the scratch arena is float32 \[{arena // 8}\] in the manifest"):
        irc.load(art)


def _replace_weight(art: Path, shape: tuple[int, ...]) -> None:
    weights = torch.load(art / "weights.pt")
    weights[0] = torch.zeros(shape)
    torch.save(weights, art / "weights.pt")


def test_replaced_weights_are_caught_by_their_hash(saved, tmp_path):
    art = _copy(saved, tmp_path)
    _replace_weight(art, (8,))
    with pytest.raises(irc.IrcError, match="weights.pt changed after the artifact was saved"):
        irc.load(art)


def test_weights_of_another_shape_are_caught_by_the_library_signature(saved, tmp_path):
    art = _copy(saved, tmp_path)
    _replace_weight(art, (2,))  # hash redone: only the signature check stands in the way
    _rehash_file(art, "weights.pt")
    with pytest.raises(irc.IrcError, match=r"weights.pt: tensor 0 \(parameter .*\) is torch.float32 \[2\]"):
        irc.load(art)


def test_a_truncated_library_is_caught_by_its_hash(saved, tmp_path):
    art = _copy(saved, tmp_path)
    lib = _library(art)
    lib.write_bytes(lib.read_bytes()[: lib.stat().st_size // 2])
    with pytest.raises(irc.IrcError, match=r"model-[0-9a-f]+\.so changed after the artifact was saved"):
        irc.load(art)


@pytest.mark.parametrize("keep", [0, 63, 64, 1000, 0.5, 0.99])
def test_a_truncated_library_is_refused_before_dlopen(saved, tmp_path, keep):
    # Before: dlopen mapped it and the first touch past the end of the file died of SIGBUS. Runs
    # in a subprocess so that the old behaviour fails the test rather than killing pytest.
    art = _copy(saved, tmp_path)
    lib = _library(art)
    data = lib.read_bytes()
    lib.write_bytes(data[: int(keep * len(data)) if isinstance(keep, float) else keep])
    _rehash_file(art, lib.name)
    script = f"import irc\ntry:\n    irc.load({str(art)!r})\nexcept irc.IrcError as e:\n    print(e)\n"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "is truncated" in out.stdout or "not a shared library" in out.stdout, out.stdout


def test_check_library_accepts_a_whole_library(saved):
    check_library(_library(saved[0]))


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda art: (art / "manifest.json").write_text("{not json"), "manifest.json is not valid JSON"),
        (lambda art: (art / "manifest.json").write_text("[1, 2]"), "is not an irc manifest"),
        (lambda art: (art / "weights.pt").unlink(), "incomplete: weights.pt is missing"),
        (lambda art: _library(art).unlink(), r"incomplete: model-[0-9a-f]+\.so is missing"),
        (lambda art: _edit(art, lambda m: m.update(format=1)), "artifact format 1 is not 3"),
        (lambda art: _edit(art, lambda m: m.pop("content_hash"), rehash=False), "has no content_hash"),
        (lambda art: _edit(art, lambda m: m["versions"][0].pop("params")), r"versions\[0\].params is missing"),
        (
            lambda art: _edit(art, lambda m: m["versions"][0].update(arena_bytes="9")),
            r"versions\[0\].arena_bytes is \"9\", not an integer",
        ),
        (lambda art: _edit(art, lambda m: m["versions"][0].update(entry_point="nothing")), "has no function nothing"),
        (lambda art: _edit(art, lambda m: m["versions"][0]["params"][0].update(weight=99)), "refers to tensor 99"),
    ],
    ids=["bad-json", "not-an-object", "no-weights", "no-library", "format", "no-hash", "missing-key",
         "wrong-type", "no-entry-point", "weight-index"],
)
def test_every_damage_is_an_irc_error_saying_what_is_wrong(saved, tmp_path, damage, message):
    # Before: raw JSONDecodeError, FileNotFoundError, KeyError, AttributeError, IndexError.
    art = _copy(saved, tmp_path)
    damage(art)
    with pytest.raises(irc.IrcError, match=message):
        irc.load(art)


def _edit(art: Path, change, rehash: bool = True) -> None:
    manifest = _manifest(art)
    change(manifest)
    _write_manifest(art, manifest, rehash)


def test_loading_a_missing_directory(tmp_path):
    with pytest.raises(irc.IrcError, match="no such directory"):
        irc.load(tmp_path / "nowhere")


# --- save is atomic and never rewrites a library in place ---------------------------------------


def test_a_loaded_artifact_keeps_working_when_its_directory_is_saved_again(tmp_path):
    # Before: the second save overwrote the mapped model.so in place and the call died (SIGSEGV).
    torch.manual_seed(0)
    a = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).eval()
    b = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 4)).eval()
    x = torch.randn(3, 8)
    torch.save((a, b, x), tmp_path / "models.pt")
    script = textwrap.dedent(
        f"""
        import torch, irc
        a, b, x = torch.load({str(tmp_path / 'models.pt')!r}, weights_only=False)
        path = {str(tmp_path / 's.irc')!r}
        irc.compile(a, (x,)).save(path)
        la = irc.load(path)
        irc.compile(b, (x,)).save(path)
        with torch.no_grad():
            torch.testing.assert_close(la(x), a(x))
            torch.testing.assert_close(irc.load(path)(x), b(x))
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", (out.returncode, out.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["models.pt", "s.irc"]  # no temporary left


def test_saving_again_writes_new_files(saved, tmp_path):
    art = _copy(saved, tmp_path)
    before = {p.name: p.stat().st_ino for p in art.iterdir()}
    irc.compile(_model(), (saved[1],)).save(art)
    after = {p.name: p.stat().st_ino for p in art.iterdir()}
    assert before.keys() == after.keys()  # the same content: the same names...
    assert not set(before.values()) & set(after.values())  # ...in new files


def test_save_refuses_to_replace_what_is_not_an_artifact(tmp_path):
    cm = irc.compile(_model(), (torch.randn(2, 12),))
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(irc.IrcError, match="not an irc artifact"):
        cm.save(tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    (tmp_path / "file").write_text("")
    with pytest.raises(irc.IrcError, match="it is a file"):
        cm.save(tmp_path / "file")


# --- what is saved: every version, the output structure, current weights ------------------------


def test_every_shape_version_is_saved_and_dispatched_on(tmp_path):
    # Before: only the first version was saved, silently.
    m = _model()
    x2, x5, x7 = torch.randn(2, 12), torch.randn(5, 12), torch.randn(7, 12)
    cm = irc.compile(m, (x2,))
    cm(x5)
    loaded = irc.load(cm.save(tmp_path / "art"))
    assert loaded.input_shapes == [((2, 12),), ((5, 12),)]
    with torch.no_grad():
        for x in (x5, x2, x5):
            torch.testing.assert_close(loaded(x), m(x))
    with pytest.raises(irc.InputError, match=r"takes inputs of shapes \(7x12\); it was saved for \(2x12\); \(5x12\)"):
        loaded(x7)
    with pytest.raises(irc.InputError, match="expected dtype torch.float32"):
        loaded(x5.double())
    assert len(_manifest(tmp_path / "art")["versions"]) == 2
    assert len(torch.load(tmp_path / "art" / "weights.pt")) == len(_manifest(tmp_path / "art")["versions"][0]["params"])


class DictOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 4)

    def forward(self, x):
        h = self.lin(x)
        return {"logits": h, "extra": [torch.relu(h), (torch.sigmoid(x),)]}


def test_a_dict_output_is_native_and_round_trips(tmp_path):
    # Before: the output node ran in eager PyTorch, and save refused the model.
    torch.manual_seed(0)
    m, x = DictOut().eval(), torch.randn(3, 6)
    cm = irc.compile(m, (x,), fallback=False)
    assert cm.eager_nodes == []
    with torch.no_grad():
        expected = m(x)
    y = cm(x)
    assert type(y) is dict and type(y["extra"]) is list and type(y["extra"][1]) is tuple
    torch.testing.assert_close(y, expected)
    loaded = irc.load(cm.save(tmp_path / "art"))
    z = loaded(x)
    assert type(z) is dict and type(z["extra"]) is list
    torch.testing.assert_close(z, expected)


def test_an_output_structure_of_the_wrong_size_is_refused(tmp_path):
    m, x = DictOut().eval(), torch.randn(3, 6)
    art = irc.compile(m, (x,)).save(tmp_path / "art")
    two = torch.utils._pytree.treespec_dumps(torch.utils._pytree.tree_flatten({"a": 0, "b": 0})[1])
    _edit(art, lambda mf: mf["versions"][0].update(output_structure=two))
    with pytest.raises(irc.IrcError, match="the output structure holds 2 tensors, the outputs are 3"):
        irc.load(art)


@torch.fx.wrap
def opaque_cumsum(x):
    return torch.cumsum(x, 1)


class Cumsum(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 6)

    def forward(self, x):
        return opaque_cumsum(self.lin(x))


def test_a_version_with_eager_nodes_is_refused_naming_it(tmp_path):
    cm = irc.compile(Cumsum().eval(), (torch.randn(2, 6),))
    with pytest.raises(irc.IrcError, match=r"input shapes \(2x6\) runs 1 node\(s\) in eager PyTorch \(opaque_cumsum"):
        cm.save(tmp_path / "art")
    assert not (tmp_path / "art").exists()


def test_save_writes_weights_updated_in_place_since_the_last_call(tmp_path):
    # The packed weight panels are folded from the weights; an in-place update is refolded on
    # the next call, and save must not write the stale panels meanwhile.
    m, x = _model(), torch.randn(2, 12)
    cm = irc.compile(m, (x,))
    with torch.no_grad():
        m[0].weight.mul_(2)
    loaded = irc.load(cm.save(tmp_path / "art"))
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), m(x))


def test_save_writes_weights_reassigned_since_the_last_call(tmp_path):
    m, x = _model(), torch.randn(2, 12)
    cm = irc.compile(m, (x,))
    m[2].weight = nn.Parameter(torch.randn(3, 8))
    loaded = irc.load(cm.save(tmp_path / "art"))
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), m(x))


def test_a_dict_output_gets_eager_gradients():
    # Before: the dict came back from the autograd function untracked (grad_fn None).
    torch.manual_seed(0)
    m, x = DictOut(), torch.randn(3, 6)
    out = irc.compile(m, (x,))(x)
    assert out["logits"].grad_fn is not None
    (out["logits"].sum() + out["extra"][0].pow(2).sum()).backward()
    native = m.lin.weight.grad.clone()
    m.zero_grad()
    eager = m(x)
    (eager["logits"].sum() + eager["extra"][0].pow(2).sum()).backward()
    torch.testing.assert_close(native, m.lin.weight.grad)


def test_saving_where_no_directory_can_be_made_is_an_irc_error(tmp_path):
    (tmp_path / "file").write_text("")
    cm = irc.compile(_model(), (torch.randn(2, 12),))
    with pytest.raises(irc.IrcError, match="cannot save to .*file/art"):
        cm.save(tmp_path / "file" / "art")


def test_a_serving_process_survives_another_process_saving_over_its_artifact(saved, tmp_path):
    art = _copy(saved, tmp_path)
    m, x = _model(), saved[1]
    torch.save((x, m(x).detach()), tmp_path / "io.pt")
    script = textwrap.dedent(
        f"""
        import sys, torch, irc
        loaded = irc.load({str(art)!r})
        x, expected = torch.load({str(tmp_path / 'io.pt')!r})
        print("loaded", flush=True)
        sys.stdin.readline()  # the parent saves another model over the artifact meanwhile
        torch.testing.assert_close(loaded(x), expected)
        print("ok", flush=True)
        """
    )
    server = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "loaded", server.stderr.read()
        other = nn.Sequential(nn.Linear(12, 32), nn.Tanh(), nn.Linear(32, 3)).eval()
        irc.compile(other, (x,)).save(art)
        out, err = server.communicate("go\n", timeout=120)
    finally:
        server.kill()
    assert server.returncode == 0 and out.strip() == "ok", (server.returncode, err)
    with torch.no_grad():
        torch.testing.assert_close(irc.load(art)(x), other(x))


def test_a_call_under_autocast_warns_once(saved, caplog):
    """An artifact has no eager graph to run under torch.autocast: it computes in float32, and
    says so once rather than silently."""
    path, x = saved
    loaded = irc.load(path)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        for _ in range(2):
            out = loaded(x)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, _model()(x))
    assert len([r for r in caplog.records if "autocast" in r.getMessage()]) == 1

"""AOT artifacts: cm.save(dir) and irc.load(dir), which needs neither the compiler nor xDSL."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import torch
from torch import nn

import irc


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(12, 8), nn.GELU(), nn.Linear(8, 3)).eval()


def test_save_then_load_in_a_fresh_process_without_xdsl(tmp_path):
    m, x = _model(), torch.randn(2, 12)
    cm = irc.compile(m, (x,))
    cm.save(tmp_path / "art")
    manifest = json.loads((tmp_path / "art" / "manifest.json").read_text())
    assert manifest["irc_version"] == irc.__version__
    assert manifest["inputs"] == [{"name": "input_1", "shape": [2, 12], "dtype": "float32"}]
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


def test_loading_on_a_cpu_without_a_required_feature_is_refused(tmp_path):
    cm = irc.compile(_model(), (torch.randn(2, 12),))
    cm.save(tmp_path / "art")
    path = tmp_path / "art" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["cpu_features"].append("avx1024_imaginary")
    path.write_text(json.dumps(manifest))
    with pytest.raises(irc.IrcError, match="avx1024_imaginary, which this CPU lacks"):
        irc.load(tmp_path / "art")


def test_loading_a_directory_that_is_not_an_artifact(tmp_path):
    with pytest.raises(irc.IrcError, match="not an irc artifact"):
        irc.load(tmp_path)


def test_embedding_model_round_trips_with_int64_inputs(tmp_path):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Embedding(10, 6), nn.Linear(6, 2)).eval()
    idx = torch.tensor([[1, 9, 0]])
    irc.compile(m, (idx,)).save(tmp_path / "art")
    loaded = irc.load(tmp_path / "art")
    assert loaded.manifest["inputs"][0]["dtype"] == "int64"
    torch.testing.assert_close(loaded(idx), m(idx).detach())

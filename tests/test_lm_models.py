"""The tiny language models (irc/models/lm.py) and the harness that measures irc on them
(irc/tools/lm_check.py): the builders give the architectures asked for, and every counter the
harness reports counts what it says. Nothing here asserts that irc compiles the language models."""

from __future__ import annotations

import os

import pytest
import torch
from torch import nn

pytest.importorskip("transformers")

from irc.models import BUILTIN_MODELS  # noqa: E402
from irc.models.lm import INPUT_NAMES, LM_MODELS, VOCAB, build, features, lm_inputs  # noqa: E402
from irc.tools import lm_check  # noqa: E402


@pytest.fixture(scope="module")
def models() -> dict[str, nn.Module]:
    return {name: build(name) for name in LM_MODELS}


def test_builders_are_tiny_eager_float32_eval(models):
    for name, model in models.items():
        f = features(model)
        assert f["attn_implementation"] == "eager", name
        assert f["dtype"] == torch.float32 and not f["training"], name
        assert (f["hidden"], f["layers"], f["heads"], f["vocab"]) == (64, 2, 4, VOCAB), name
        assert f["positions"] >= 128, name
        assert sum(p.numel() for p in model.parameters()) < 200_000, name


def test_architecture_features(models):
    bert, gpt2, llama = (features(models[n]) for n in ("bert", "gpt2", "llama"))
    assert bert["class"] == "BertForMaskedLM" and bert["tied_embeddings"]
    assert gpt2["class"] == "GPT2LMHeadModel" and gpt2["tied_embeddings"] and not gpt2["rope"]
    assert llama["class"] == "LlamaForCausalLM" and llama["rope"] and not llama["tied_embeddings"]
    assert llama["kv_heads"] < llama["heads"]  # grouped-query attention
    k_proj = models["llama"].model.layers[0].self_attn.k_proj
    assert k_proj.out_features == llama["kv_heads"] * llama["hidden"] // llama["heads"]


def test_builds_are_reproducible_and_run(models):
    inputs = lm_inputs(2, 7)
    for name, model in models.items():
        again = build(name)
        assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values()))
        with torch.no_grad():
            assert model(**inputs).logits.shape == (2, 7, VOCAB)
    assert not set(LM_MODELS) & set(BUILTIN_MODELS)  # irc verify / bench do not run them yet
    spec_inputs = LM_MODELS["gpt2"].build()[1]
    assert [t.shape for t in spec_inputs] == [(2, 7)] * len(INPUT_NAMES)


def test_lm_inputs_pad_rows_but_keep_a_token():
    inputs = lm_inputs(3, 4)
    ids, mask = inputs["input_ids"], inputs["attention_mask"]
    assert ids.dtype == mask.dtype == torch.int64 and ids.shape == mask.shape == (3, 4)
    assert 0 <= int(ids.min()) and int(ids.max()) < VOCAB
    assert mask.tolist() == [[1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 0, 0]]
    assert lm_inputs(3, 1)["attention_mask"].tolist() == [[1], [1], [1]]
    assert torch.equal(lm_inputs(3, 4)["input_ids"], ids)


def _mlp() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 16)).eval(), torch.randn(4, 32)


def test_flop_counter_counts_matmul_flops():
    model, x = _mlp()
    with torch.no_grad():
        _, flops = lm_check.profile_matmuls(lambda: model(x))
        _, bmm = lm_check.profile_matmuls(lambda: torch.randn(3, 4, 5) @ torch.randn(3, 5, 6))
    assert flops.flops == 2 * 4 * 32 * 64 + 2 * 4 * 64 * 16 and flops.calls == 2
    assert bmm.flops == 2 * 3 * 4 * 5 * 6
    assert lm_check.native_share(flops, lm_check.Flops()) == 1.0
    assert lm_check.native_share(flops, flops) == 0.0
    assert lm_check.native_share(lm_check.Flops(), flops) is None


def _share(model: nn.Module, x: torch.Tensor, backend: str) -> float | None:
    compiled = torch.compile(model, backend=backend, dynamic=True)
    with torch.no_grad():
        _, eager = lm_check.profile_matmuls(lambda: model(x))
        compiled(x)  # compiles; not counted
        out, ran = lm_check.profile_matmuls(lambda: compiled(x))
    torch.testing.assert_close(out, model(x))
    return lm_check.native_share(eager, ran)


def test_native_share_eager_backend_is_zero_irc_mlp_is_native():
    model, x = _mlp()
    with lm_check.fresh_state() as builds:
        assert _share(model, x, "eager") == 0.0
        assert builds.gxx == 0 and builds.libs == 0
    with lm_check.fresh_state() as builds:
        share = _share(model, x, "irc")
        assert share is not None and share > 0.99  # irc runs an MLP natively today
        assert builds.libs >= 1 and builds.gxx == builds.libs  # a fresh cache: every library is built
        assert lm_check.dynamo_counts()["graphs"] == 1


def test_fresh_state_restores_the_cache_dir():
    before = os.environ.get("IRC_CACHE_DIR")
    with lm_check.fresh_state():
        inside = os.environ["IRC_CACHE_DIR"]
        assert inside != before and os.path.isdir(inside) and not os.listdir(inside)
    assert os.environ.get("IRC_CACHE_DIR") == before and not os.path.exists(inside)


def test_eager_backend_row_on_a_language_model():
    row = lm_check.check_compile("gpt2", [(1, 3), (2, 4)], dynamic=True, backend="eager")
    assert row.status == "PASS", row
    assert row.native == 0.0 and row.max_err == 0.0 and row.shapes == "2/2"
    assert row.gxx == 0 and row.libs == 0 and row.graphs >= 1


def test_compare_pairs_every_output_tensor(models):
    from transformers.cache_utils import DynamicCache

    with torch.no_grad():
        out = models["llama"](**lm_inputs(1, 3))  # a legacy tuple cache (no cache was passed in)
    paths = lm_check.leaves(out)
    assert "logits" in paths and "past_key_values.1.1" in paths and len(paths) == 1 + 2 * 2
    cache = DynamicCache.from_legacy_cache(out.past_key_values)  # what generate passes around
    assert list(lm_check.leaves({"past_key_values": cache})) == [p for p in paths if p != "logits"]
    same = lm_check.compare(out, out)
    assert same.ok and same.max_err == 0.0
    changed = dict(out)
    changed["logits"] = out.logits + 1e-3
    worse = lm_check.compare(changed, out)
    assert not worse.ok and worse.max_err == pytest.approx(1e-3, rel=1e-3)
    assert not lm_check.compare({"logits": out.logits}, out).ok  # a missing cache is a failure


def test_a_failing_or_hanging_cell_is_the_cells_result():
    def fails() -> lm_check.Row:
        raise ValueError("irc could not\nsecond line")

    def hangs() -> lm_check.Row:
        while True:
            pass

    row = lm_check.run_cell(fails, "m", "c", timeout=None)
    assert (row.status, row.note) == ("ERROR", "ValueError: irc could not")
    assert row.details[0].startswith("where: ")
    row = lm_check.run_cell(hangs, "m", "c", timeout=0.5)
    assert row.status == "TIMEOUT" and "timed out" in row.note
    table = lm_check.format_table([row])
    assert table.splitlines()[0].split()[:3] == ["model", "check", "status"] and "TIMEOUT" in table


def test_command_line_rejects_unknown_names(capsys):
    with pytest.raises(SystemExit):
        lm_check.main(["--models", "gpt5"])
    assert "unknown" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        lm_check.main(["--shapes", "2x"])

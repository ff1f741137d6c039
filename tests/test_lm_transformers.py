"""transformers' own tiny BERT, DistilBERT, GPT-2 and Llama (random init, eager attention),
traced by transformers.utils.fx as their fx tracing produces them: every node compiles natively
(no eager partition) and the outputs match eager, with a padded attention_mask. Skipped when
transformers is not installed (`pip install transformers==4.46.3`)."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo  # noqa: F401  (see below)

import irc

# torch._dynamo must be imported before transformers' fx tracer runs: the tracer patches
# torch.finfo with a function while it traces, and a first import of torch._dynamo.utils in that
# window (torch imports it lazily) records the function among Dynamo's constant types, after which
# every Dynamo guard on a constant fails ("isinstance() arg 2 must be a type"). This file alone, in
# one process, hit that; the whole suite usually imports Dynamo earlier.

transformers = pytest.importorskip("transformers")
from transformers.utils.fx import symbolic_trace  # noqa: E402


def _models():
    t = transformers
    return {
        "bert": (t.BertModel, t.BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                           intermediate_size=37, max_position_embeddings=64)),
        "distilbert": (t.DistilBertModel, t.DistilBertConfig(vocab_size=99, dim=32, n_layers=2, n_heads=4, hidden_dim=37,
                                                             max_position_embeddings=64)),
        "gpt2": (t.GPT2LMHeadModel, t.GPT2Config(vocab_size=99, n_embd=32, n_layer=2, n_head=4, n_positions=64)),
        "llama": (t.LlamaForCausalLM, t.LlamaConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                                    num_key_value_heads=2, intermediate_size=48, max_position_embeddings=64)),
    }


@pytest.mark.parametrize("name", ["bert", "distilbert", "gpt2", "llama"])
def test_hf_traced_model_compiles_natively(name):
    torch.manual_seed(0)
    cls, config = _models()[name]
    config._attn_implementation = "eager"
    model = cls(config).eval()
    gm = symbolic_trace(model, input_names=["input_ids", "attention_mask"])
    ids = torch.randint(1, 99, (2, 7))
    mask = torch.ones(2, 7, dtype=torch.long)
    mask[1, :2] = 0  # a padded row: the mask is computed from this input at run time
    cm = irc.compile(gm, (ids, mask), fallback=False)
    assert cm.eager_nodes == []
    with torch.no_grad():
        for ids_, mask_ in ((ids, mask), (torch.randint(1, 99, (2, 7)), torch.ones(2, 7, dtype=torch.long))):
            expected, got = gm(ids_, mask_), cm(ids_, mask_)
            for e, g in zip(torch.utils._pytree.tree_leaves(expected), torch.utils._pytree.tree_leaves(got)):
                torch.testing.assert_close(g, e, atol=1e-4, rtol=1e-4)
    assert len(cm.versions) == 1  # a new padding pattern is no new version


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_hf_model_through_torch_compile_has_no_eager_node(name):
    """Dynamo's graphs of the same models (torch.Size(...) of sizes, in-place `*=` on the causal
    mask, API-usage logging) compile with no eager node either."""
    import irc.backend

    torch.manual_seed(0)
    cls, config = _models()[name]
    config._attn_implementation = "eager"
    model = cls(config).eval()
    graphs = []

    def backend(gm, example_inputs, **kwargs):
        graphs.append(irc.backend.irc_backend(gm, example_inputs, **kwargs))
        return graphs[-1]

    torch._dynamo.reset()
    try:
        compiled = torch.compile(model, backend=backend)
        ids, mask = torch.randint(1, 99, (2, 7)), torch.ones(2, 7, dtype=torch.long)
        mask[1, :3] = 0
        with torch.no_grad():
            torch.testing.assert_close(compiled(input_ids=ids, attention_mask=mask).logits,
                                       model(input_ids=ids, attention_mask=mask).logits, atol=1e-4, rtol=1e-4)
    finally:
        torch._dynamo.reset()
    versions = [v for g in graphs for _, cm in g.compiled.values() if cm is not None for v in cm.versions.values()]
    assert versions and all(v.eager_nodes == [] for v in versions)

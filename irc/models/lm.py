"""Tiny random-init language models from Hugging Face transformers (issue 12: shapes that change).

Three families, each small enough to compile in seconds and each with the feature that makes it
hard for a static-shape compiler:

* `bert`: `BertForMaskedLM`, bidirectional attention over a padding mask, learned absolute
  positions, token types, GELU MLP, the MLM head tied to the word embeddings.
* `gpt2`: `GPT2LMHeadModel`, causal attention, `Conv1D` projections (addmm), NewGELU, lm_head tied
  to `wte`; its decode cache is the legacy tuple of tuples.
* `llama`: `LlamaForCausalLM`, grouped-query attention (2 key/value heads for 4 query heads),
  rotary embeddings (RoPE), RMSNorm, SwiGLU MLP, untied lm_head; its decode cache is a
  `DynamicCache` (an nn.Module whose int attributes Dynamo specializes).

All share hidden 64, 2 layers, 4 heads, vocab 256 and 128 positions; float32, eager attention
(`attn_implementation="eager"`: the attention is written out as matmul / softmax / matmul, not
`scaled_dot_product_attention`), eval mode. Weights come from the models' own initializers under
`torch.manual_seed(spec.seed)`, with `initializer_range` 0.1 instead of 0.02 so logits are far
enough apart that greedy decoding does not hinge on rounding.

`LM_MODELS` maps a name to a `ModelSpec` (irc/models/spec.py) whose example inputs are
`lm_inputs(2, 7)`; `lm_inputs(batch, length)` makes inputs of any shape. These models are not in
`BUILTIN_MODELS` (irc verify / bench) yet; `python -m irc.tools.lm_check` measures them.

transformers is imported when a model is built (it is a `dev` dependency, not a runtime one).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from irc.models.spec import Inputs, ModelSpec

VOCAB = 256
HIDDEN = 64
LAYERS = 2
HEADS = 4
KV_HEADS = 2  # Llama: grouped-query attention, 2 query heads share each key/value head
POSITIONS = 128
INIT_RANGE = 0.1
INPUT_NAMES = ("input_ids", "attention_mask")


def lm_inputs(batch: int, length: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """`input_ids` (int64, uniform over the vocabulary) and `attention_mask` (int64) of shape
    (batch, length). Row b has its last min(b, length - 1) positions padded (mask 0), so a batch
    mixes lengths as a padded batch does and every row keeps at least one real token."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + batch * 1009 + length)
    ids = torch.randint(0, VOCAB, (batch, length), generator=g, dtype=torch.int64)
    mask = torch.ones(batch, length, dtype=torch.int64)
    for b in range(batch):
        pad = min(b, length - 1)
        if pad:
            mask[b, length - pad:] = 0
    return {"input_ids": ids, "attention_mask": mask}


def bert() -> nn.Module:
    from transformers import BertConfig, BertForMaskedLM

    config = BertConfig(
        vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        intermediate_size=4 * HIDDEN, max_position_embeddings=POSITIONS, type_vocab_size=2,
        initializer_range=INIT_RANGE, attn_implementation="eager",
    )
    return BertForMaskedLM(config)


def gpt2() -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS, n_inner=4 * HIDDEN, n_positions=POSITIONS,
        initializer_range=INIT_RANGE, bos_token_id=0, eos_token_id=0, attn_implementation="eager",
    )
    return GPT2LMHeadModel(config)


def llama() -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS, intermediate_size=2 * HIDDEN + HIDDEN // 2, max_position_embeddings=POSITIONS,
        initializer_range=INIT_RANGE, tie_word_embeddings=False, bos_token_id=0, eos_token_id=0, pad_token_id=None,
        attn_implementation="eager",
    )
    return LlamaForCausalLM(config)


def _factory(builder):
    def factory() -> tuple[nn.Module, Inputs]:
        model = builder().to(torch.float32)
        inputs = lm_inputs(2, 7)
        return model, tuple(inputs[name] for name in INPUT_NAMES)

    factory.__name__ = builder.__name__
    return factory


SPECS = (
    ModelSpec("bert", "BertForMaskedLM h64 L2 heads4 ff256 vocab256 (tied MLM head), ids+mask 2x7", _factory(bert)),
    ModelSpec("gpt2", "GPT2LMHeadModel h64 L2 heads4 ff256 vocab256 (tied lm_head), ids+mask 2x7", _factory(gpt2)),
    ModelSpec(
        "llama", "LlamaForCausalLM h64 L2 heads4 kv2 (GQA, RoPE) ff160 vocab256, ids+mask 2x7", _factory(llama)
    ),
)

LM_MODELS: dict[str, ModelSpec] = {s.name: s for s in SPECS}


def build(name: str) -> nn.Module:
    """The model `name` of `LM_MODELS` in eval mode, seeded (the same weights every time)."""
    model, _ = LM_MODELS[name].build()
    return model


def features(model: nn.Module) -> dict[str, Any]:
    """What the architecture is, read from the built model (the tests check the builders with it)."""
    config = model.config
    heads = config.num_attention_heads
    out_emb, in_emb = model.get_output_embeddings(), model.get_input_embeddings()
    return {
        "class": type(model).__name__,
        "attn_implementation": config._attn_implementation,
        "hidden": config.hidden_size,
        "layers": config.num_hidden_layers,
        "heads": heads,
        "kv_heads": getattr(config, "num_key_value_heads", heads),
        "vocab": config.vocab_size,
        "positions": config.max_position_embeddings,
        "tied_embeddings": out_emb is not None and out_emb.weight is in_emb.weight,
        "rope": hasattr(getattr(model, "model", None), "rotary_emb"),
        "dtype": next(model.parameters()).dtype,
        "training": model.training,
    }

"""The tiny Kimi K3 checkpoint's description (vllm_backports/verify/kimi.py), without torch: what
`verify --model` reads of it. Its names and shapes against the releases' model files:
tests/release/test_kimi_checkpoint.py."""

from __future__ import annotations

from fake_checkpoint import fake_checkpoint
from vllm_backports.verify import checkpoint, kimi


def test_verify_model_takes_it_as_kimi_linear_with_ngram_alone(tmp_path):
    ck = checkpoint.inspect(fake_checkpoint(tmp_path / "c", config=kimi.CONFIG))
    assert (ck.architecture, ck.model_type, ck.family) == ("KimiLinearForCausalLM", "kimi_linear", "Kimi Linear")
    assert ck.mtp_layers == 0  # no MTP layer: ngram is its one preset
    assert ck.model_class is None  # no transformers class: no float32 cross-check
    assert ck.eos_token_ids == (1,) and ck.max_positions == 4096


def test_one_kda_layer_then_one_mla_layer_each_with_its_own_tensors():
    assert kimi.layer_kinds() == ["kda", "mla"]
    names = kimi.tensors()
    assert {n.split(".")[4] for n in names if n.startswith("model.layers.0.self_attn.")} >= {"A_log", "q_conv1d"}
    assert {n.split(".")[4] for n in names if n.startswith("model.layers.1.self_attn.")} == {
        "q_proj",
        "kv_a_proj_with_mqa",
        "kv_a_layernorm",
        "kv_b_proj",
        "o_proj",
    }
    # the tokenizer is trained to the config's vocabulary, which the embeddings and lm_head span
    assert names["model.embed_tokens.weight"][0] == names["lm_head.weight"][0] == (kimi.CONFIG["vocab_size"], 512)

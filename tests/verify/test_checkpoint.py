"""Which local checkpoints `verify --model` takes, read from their files alone (no torch)."""

from __future__ import annotations

import json

import pytest

from fake_checkpoint import fake_checkpoint
from vllm_backports.errors import UsageError
from vllm_backports.verify import checkpoint, model


def refused(path) -> str:
    with pytest.raises(UsageError) as err:
        checkpoint.inspect(path)
    return str(err.value)


def test_the_tiny_qwen3_next_config_is_a_hybrid_of_a_known_class(tmp_path):
    ck = checkpoint.inspect(fake_checkpoint(tmp_path / "c"))
    assert (ck.architecture, ck.model_type, ck.family) == ("Qwen3NextForCausalLM", "qwen3_next", "Qwen3-Next")
    assert ck.mtp_layers == 0 and ck.max_positions == 4096 and ck.eos_token_ids == (1,)
    assert ck.model_class == "qwen3_next" and ck.weight_bytes == 0


def test_a_nested_qwen3_5_config_is_read_from_its_text_config(tmp_path):
    text = dict(model.QWEN3_5_TEXT, mtp_num_hidden_layers=1, eos_token_id=[248046, 248044])
    outer = {"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5", "text_config": text}
    ck = checkpoint.inspect(fake_checkpoint(tmp_path / "c", config=outer))
    assert ck.family == "Qwen3.5" and ck.mtp_layers == 1 and ck.eos_token_ids == (248046, 248044)
    assert ck.model_class is None  # a multimodal class: no float32 cross-check


def test_generation_config_names_the_end_tokens_first(tmp_path):
    d = fake_checkpoint(tmp_path / "c")
    (d / "generation_config.json").write_text(json.dumps({"eos_token_id": [1, 7]}))
    assert checkpoint.inspect(d).eos_token_ids == (1, 7)


def test_mtp_layers_of_qwen3_next_are_counted(tmp_path):
    d = fake_checkpoint(tmp_path / "c", config=dict(model.CONFIG, num_nextn_predict_layers=1))
    assert checkpoint.inspect(d).mtp_layers == 1


def test_a_missing_directory_or_config_is_refused(tmp_path):
    needed = "(a local Hugging Face checkpoint is needed)"
    assert refused(tmp_path / "nope") == f"--model {tmp_path / 'nope'}: no such directory {needed}"
    (tmp_path / "empty").mkdir()
    assert refused(tmp_path / "empty") == f"--model {tmp_path / 'empty'}: no config.json {needed}"


def test_a_config_that_is_not_json_is_refused(tmp_path):
    d = fake_checkpoint(tmp_path / "c")
    (d / "config.json").write_text("{not json")
    assert refused(d).startswith(f"--model {d}: config.json does not read as JSON (")
    (d / "config.json").write_text("[1, 2]")
    assert refused(d) == f"--model {d}: config.json is not a JSON object"


@pytest.mark.parametrize("config", [
    {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"},
    {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "layer_types": ["full_attention"] * 4},
    # a known family whose layers are all full attention is no hybrid either
    dict(model.CONFIG, layer_types=["full_attention"] * 8),
])
def test_a_model_without_gated_deltanet_layers_is_refused(tmp_path, config):
    d = fake_checkpoint(tmp_path / "c", config=config)
    assert refused(d) == (f"--model {d}: {config['architectures'][0]} is not a hybrid Gated-DeltaNet model "
                          "(verify --model judges Qwen3-Next, Qwen3.5, Qwen3.6 and Kimi Linear checkpoints)")


def test_a_checkpoint_without_weights_is_refused(tmp_path):
    d = fake_checkpoint(tmp_path / "c")
    (d / "model.safetensors").unlink()
    assert refused(d) == f"--model {d}: no weights (*.safetensors) beside its config.json"

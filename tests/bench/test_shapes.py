"""The dummy-weight model configs: users' sizes, and what vLLM reads from them."""

from __future__ import annotations

import json
import os

import pytest

from vllm_backports.bench.shapes import QWEN3_NEXT_80B_E128, SHAPES, parameters, write


@pytest.mark.parametrize(("name", "billions"), [("qwen3_5-9b", 9.0), ("qwen3_6-27b", 27.0)])
def test_dense_shapes_have_their_models_size(name, billions):
    assert parameters(SHAPES[name].text) == pytest.approx(billions * 1e9, rel=0.05)


def test_the_moe_is_80b_with_all_its_experts_and_fits_one_80_gb_gpu_with_128():
    assert parameters({**QWEN3_NEXT_80B_E128, "num_experts": 512}) == pytest.approx(80e9, rel=0.03)
    shape = SHAPES["qwen3_next-80b-e128"]
    weights_gib = 2 * parameters(shape.text) / 2**30
    assert weights_gib + shape.kv_cache_gib < 0.85 * 80


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_hybrid_layout_and_gdn_heads_of_128(name):
    t = SHAPES[name].text
    assert len(t["layer_types"]) == t["num_hidden_layers"]
    assert t["layer_types"][3::4] == ["full_attention"] * (t["num_hidden_layers"] // 4)
    assert t["linear_key_head_dim"] == t["linear_value_head_dim"] == 128


def test_qwen3_5_configs_nest_the_text_config_with_the_mtp_layer_in_both(tmp_path):
    d = write(tmp_path / "m", SHAPES["qwen3_5-9b"])
    c = json.loads((d / "config.json").read_text())
    assert c["model_type"] == "qwen3_5" and c["architectures"] == ["Qwen3_5ForCausalLM"]
    assert c["text_config"]["model_type"] == "qwen3_5_text" and "architectures" not in c["text_config"]
    assert c["mtp_num_hidden_layers"] == c["text_config"]["mtp_num_hidden_layers"] == 1
    assert not list(d.glob("*.safetensors"))


def test_qwen3_next_is_flat_and_a_given_config_is_written_verbatim(tmp_path):
    c = json.loads((write(tmp_path / "n", SHAPES["qwen3_next-80b-e128"]) / "config.json").read_text())
    assert c["model_type"] == "qwen3_next" and c["num_nextn_predict_layers"] == 1
    own = {"model_type": "qwen3_5", "text_config": {"vocab_size": 5}}
    assert json.loads((write(tmp_path / "o", SHAPES["qwen3_5-9b"], own) / "config.json").read_text()) == own


def test_an_unchanged_config_is_not_rewritten(tmp_path):
    path = write(tmp_path / "m", SHAPES["qwen3_6-27b"]) / "config.json"
    os.utime(path, (1, 1))
    write(tmp_path / "m", SHAPES["qwen3_6-27b"])
    assert path.stat().st_mtime == 1
    write(tmp_path / "m", SHAPES["qwen3_5-9b"])
    assert path.stat().st_mtime != 1


def test_qwen3_5_is_written_as_the_multimodal_class_only_where_the_text_only_one_is_missing(tmp_path):
    from vllm_backports.bench.shapes import architecture_for

    nine = SHAPES["qwen3_5-9b"]
    both = {"Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration"}
    assert architecture_for(nine, both) == "Qwen3_5ForCausalLM"
    assert architecture_for(nine, {"Qwen3_5ForConditionalGeneration"}) == "Qwen3_5ForConditionalGeneration"
    assert architecture_for(nine, set()) == "Qwen3_5ForCausalLM"  # for vLLM to refuse by name
    moe = SHAPES["qwen3_next-80b-e128"]
    assert architecture_for(moe, {"Qwen3_5ForConditionalGeneration"}) == "Qwen3NextForCausalLM"
    text = json.loads((write(tmp_path / "t", nine) / "config.json").read_text())
    multi_dir = write(tmp_path / "m", nine, architecture="Qwen3_5ForConditionalGeneration")
    multi = json.loads((multi_dir / "config.json").read_text())
    assert multi["architectures"] == ["Qwen3_5ForConditionalGeneration"] and "vision_config" not in text
    assert multi["vision_config"]["out_hidden_size"] == 4096
    # the same text model and MTP layer either way
    assert {k: v for k, v in multi.items() if k not in ("architectures", "vision_config")} == {
        k: v for k, v in text.items() if k != "architectures"
    }
    with pytest.raises(ValueError, match="not written as"):
        write(tmp_path / "x", SHAPES["qwen3_next-80b-e128"], architecture="Qwen3_5ForConditionalGeneration")

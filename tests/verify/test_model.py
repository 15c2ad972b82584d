"""The checkpoints verify writes. The table's shape is plain data and is checked everywhere; writing
and reloading a checkpoint needs torch and transformers, so those tests run where they are (the
GPU machine, a dev venv) and are skipped in the slim CI venv.

vLLM cannot run here, so its loader is transcribed below (VLLM_*): the parameters its models
build from the config and how they rename checkpoint tensors. The transcription was checked
against vLLM 0.27.0 and 0.31.0 themselves, instantiated on a CPU from these checkpoints: every
parameter of each target (85 for qwen3_5, 117 for qwen3_next and qwen3_5_moe) and of each MTP
drafter (14 for Qwen3_5MTP, 18 for Qwen3NextMTP and Qwen3_5MoeMTP) loaded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllm_backports.verify import model

CLASSES = sorted(model.MODEL_CLASSES)


@pytest.fixture
def safetensors():
    pytest.importorskip("transformers")
    return pytest.importorskip("safetensors")


MULTIMODAL = [n for n in CLASSES if model.MODEL_CLASSES[n].multimodal_architecture]


@pytest.fixture(scope="module")
def written_multimodal(tmp_path_factory):
    """The Qwen3.5 classes' MTP checkpoints as the multimodal architecture (vLLM before 0.27.0)."""
    pytest.importorskip("transformers")
    pytest.importorskip("safetensors")
    root = tmp_path_factory.mktemp("verify-models-mm")
    return {
        name: model.write_model(
            root / name, mtp=True, model_class=name, architecture=model.MODEL_CLASSES[name].multimodal_architecture
        )
        for name in MULTIMODAL
    }


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """One MTP checkpoint per class, written once for the module."""
    pytest.importorskip("transformers")
    pytest.importorskip("safetensors")
    root = tmp_path_factory.mktemp("verify-models")
    return {name: model.write_model(root / name, mtp=True, model_class=name) for name in CLASSES}


# --------------------------------------------------------------------------------------------
# the table


def test_qwen3_next_is_the_default_and_its_config_is_the_one_earlier_evidence_used():
    assert model.MODEL_CLASS == "qwen3_next"
    assert model.MODEL_CLASSES["qwen3_next"].config is model.CONFIG
    assert model.vocab_size() == model.vocab_size("qwen3_next") == 2048


@pytest.mark.parametrize("name", CLASSES)
def test_table_entries_are_well_formed(name):
    cls = model.MODEL_CLASSES[name]
    c = cls.config
    assert cls.name == name
    assert c["architectures"] == [cls.vllm_architecture] == [cls.transformers_model]
    assert len(c["layer_types"]) == c["num_hidden_layers"]
    assert set(c["layer_types"]) == {"linear_attention", "full_attention"}
    assert c["linear_num_value_heads"] % c["linear_num_key_heads"] == 0
    assert c["num_attention_heads"] % c["num_key_value_heads"] == 0
    assert c["tie_word_embeddings"] is False  # the drafter takes lm_head from the checkpoint
    if cls.mlp == "dense":
        assert "intermediate_size" in c and "num_experts" not in c
    else:
        assert cls.mlp == "moe"
        assert c["num_experts_per_tok"] == c["num_experts"]  # continuous routing (model.py)
    # vLLM's Qwen3_5DecoderLayer picks its MLP from the text config's model_type
    assert c["model_type"] == {"qwen3_next": "qwen3_next", "qwen3_5": "qwen3_5_text",
                               "qwen3_5_moe": "qwen3_5_moe_text"}[name]
    assert (cls.wrapper is None) == (name == "qwen3_next")
    assert cls.mtp_config_key == ("num_nextn_predict_layers" if name == "qwen3_next" else "mtp_num_hidden_layers")


@pytest.mark.parametrize("name", ["qwen3_5", "qwen3_5_moe"])
def test_qwen3_5_shares_qwen3_next_sizes_and_has_gdn_heads_of_128(name):
    c, nxt = model.MODEL_CLASSES[name].config, model.CONFIG
    for key in ("vocab_size", "hidden_size", "num_hidden_layers", "layer_types", "num_attention_heads",
                "num_key_value_heads", "head_dim", "linear_conv_kernel_dim", "linear_num_key_heads",
                "linear_num_value_heads", "rms_norm_eps", "max_position_embeddings"):
        assert c[key] == nxt[key], key
    # vLLM 0.31's fused GDN decode kernels (the ones Qwen3.5 users run) take only K = V = 128
    assert c["linear_key_head_dim"] == c["linear_value_head_dim"] == 128
    # no M-RoPE sections: vLLM builds plain RoPE (0.27's Qwen3_5ForCausalLM takes no M-RoPE positions)
    assert "mrope_section" not in c["rope_parameters"] and c["rope_parameters"]["partial_rotary_factor"] == 0.25


def test_the_multimodal_architecture_is_written_only_where_the_registry_lacks_the_text_only_class():
    # vLLM 0.17.0 .. 0.26.0 register Qwen3_5(Moe)ForConditionalGeneration and the MTP drafters only
    before = {"Qwen3NextForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration",
              "Qwen3_5MTP", "Qwen3_5MoeMTP", "Qwen3NextMTP"}
    since = before | {"Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM"}  # 0.27.0 and later
    assert model.architecture_for("qwen3_5", before) == "Qwen3_5ForConditionalGeneration"
    assert model.architecture_for("qwen3_5_moe", before) == "Qwen3_5MoeForConditionalGeneration"
    for name in CLASSES:
        assert model.architecture_for(name, since) == model.MODEL_CLASSES[name].vllm_architecture
        # a vLLM without either: the text-only class, for vLLM to refuse by name
        assert model.architecture_for(name, set()) == model.MODEL_CLASSES[name].vllm_architecture
    assert model.MODEL_CLASSES["qwen3_next"].multimodal_architecture is None
    assert model.is_multimodal("Qwen3_5ForConditionalGeneration") and model.is_multimodal(
        "Qwen3_5MoeForConditionalGeneration")
    assert not any(model.is_multimodal(model.MODEL_CLASSES[n].vllm_architecture) for n in CLASSES)
    with pytest.raises(ValueError, match="qwen3_next is not written as Qwen3_5ForConditionalGeneration"):
        model.write_model(
            Path("/nonexistent"), model_class="qwen3_next", architecture="Qwen3_5ForConditionalGeneration"
        )


def test_the_vision_config_has_what_vllm_reads_to_build_the_tower_it_drops():
    v = model.VISION_CONFIG
    # Qwen3_VisionTransformer.__init__ (vLLM 0.24.0, 0.26.0) reads these without defaults
    for key in ("hidden_size", "num_heads", "num_position_embeddings", "patch_size", "spatial_merge_size",
                "temporal_patch_size", "in_channels", "out_hidden_size", "depth", "intermediate_size", "hidden_act"):
        assert key in v, key
    assert int(v["num_position_embeddings"] ** 0.5) ** 2 == v["num_position_embeddings"]
    for name in MULTIMODAL:
        assert v["out_hidden_size"] == model.MODEL_CLASSES[name].config["hidden_size"]


# --------------------------------------------------------------------------------------------
# vLLM's loader, transcribed (0.27.0 and 0.31.0 agree on all of it)

# Qwen3NextModel.hf_to_vllm_mapper, and Qwen3_5Model's additions (Qwen3.5 keeps the GDN input
# projections apart): substring -> (vLLM parameter, shard)
VLLM_STACKED = {
    ".q_proj": (".qkv_proj", "q"), ".k_proj": (".qkv_proj", "k"), ".v_proj": (".qkv_proj", "v"),
    ".mlp.gate_proj": (".mlp.gate_up_proj", 0), ".mlp.up_proj": (".mlp.gate_up_proj", 1),
    ".shared_expert.gate_proj": (".shared_expert.gate_up_proj", 0),
    ".shared_expert.up_proj": (".shared_expert.gate_up_proj", 1),
}
VLLM_STACKED_QWEN3_5 = {
    ".in_proj_qkv": (".in_proj_qkvz", "qkv"), ".in_proj_z": (".in_proj_qkvz", "z"),
    ".in_proj_b": (".in_proj_ba", "b"), ".in_proj_a": (".in_proj_ba", "a"),
}
# FusedMoE's expert mapping: experts.{e}.gate_proj/up_proj into w13, down_proj into w2
VLLM_EXPERT = {"gate_proj": ("w13_weight", "w1"), "up_proj": ("w13_weight", "w3"), "down_proj": ("w2_weight", "w2")}


def vllm_layer(prefix: str, layer_type: str, mlp: str, c: dict) -> dict[str, set]:
    """A decoder layer's parameters as vLLM builds them, each with the shards it must receive."""
    out = {prefix + "input_layernorm.weight": {None}, prefix + "post_attention_layernorm.weight": {None}}
    if layer_type == "linear_attention":
        qwen3_5 = c["model_type"].startswith("qwen3_5")
        for p in ("conv1d.weight", "dt_bias", "A_log", "norm.weight", "out_proj.weight"):
            out[prefix + "linear_attn." + p] = {None}
        # Qwen3-Next's checkpoint holds the fused, GQA-interleaved projections as they are
        out[prefix + "linear_attn.in_proj_qkvz.weight"] = {"qkv", "z"} if qwen3_5 else {None}
        out[prefix + "linear_attn.in_proj_ba.weight"] = {"b", "a"} if qwen3_5 else {None}
    else:
        out[prefix + "self_attn.qkv_proj.weight"] = {"q", "k", "v"}
        for p in ("o_proj.weight", "q_norm.weight", "k_norm.weight"):
            out[prefix + "self_attn." + p] = {None}
    if mlp == "dense":
        out[prefix + "mlp.gate_up_proj.weight"] = {0, 1}
        out[prefix + "mlp.down_proj.weight"] = {None}
    else:
        out[prefix + "mlp.gate.weight"] = out[prefix + "mlp.shared_expert_gate.weight"] = {None}
        out[prefix + "mlp.shared_expert.gate_up_proj.weight"] = {0, 1}
        out[prefix + "mlp.shared_expert.down_proj.weight"] = {None}
        experts = range(c["num_experts"])
        out[prefix + "mlp.experts.w13_weight"] = {(e, s) for e in experts for s in ("w1", "w3")}
        out[prefix + "mlp.experts.w2_weight"] = {(e, "w2") for e in experts}
    return out


def vllm_target_params(cls: model.ModelClass) -> dict[str, set]:
    c = cls.config
    out = {"model.embed_tokens.weight": {None}, "model.norm.weight": {None}, "lm_head.weight": {None}}
    for i, kind in enumerate(c["layer_types"]):
        out |= vllm_layer(f"model.layers.{i}.", kind, cls.mlp, c)
    return out


def vllm_mtp_params(cls: model.ModelClass) -> dict[str, set]:
    """Qwen3NextMTP / Qwen3_5MTP / Qwen3_5MoeMTP: the predictor under model.*, one full-attention
    decoder layer built from the same text config, embed_tokens and lm_head of its own."""
    out = {f"model.{p}.weight": {None} for p in ("fc", "pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm",
                                                 "embed_tokens")}
    out["lm_head.weight"] = {None}
    return out | vllm_layer("model.layers.0.", "full_attention", cls.mlp, cls.config)


def vllm_map(cls: model.ModelClass, name: str, drafter: bool) -> tuple[str, object] | None:
    """Where vLLM's target (drafter=False) or MTP drafter loads a checkpoint tensor: (parameter,
    shard), or None when that model skips it."""
    if drafter:  # Qwen3NextMTP/Qwen3_5MTP.load_weights: mtp.* -> model.*, the shared embeddings kept
        if name.startswith("mtp."):
            name = "model." + name.removeprefix("mtp.")
        elif "embed_tokens" not in name and "lm_head" not in name:
            return None
    elif name.startswith("mtp."):  # the target's mapper drops the MTP layer
        return None
    shard = None
    parts = name.split(".")
    if "experts" in parts and parts[parts.index("experts") + 1].isdigit():
        at = parts.index("experts")
        param, shard_name = VLLM_EXPERT[parts[at + 2]]
        return ".".join(parts[: at + 1] + [param]), (int(parts[at + 1]), shard_name)
    stacked = VLLM_STACKED | (VLLM_STACKED_QWEN3_5 if cls.wrapper else {})
    for sub, (new, sid) in stacked.items():  # WeightsMapper._map_name_with_shard
        if sub in name:
            name, shard = name.replace(sub, new, 1), sid
    return name, shard


# Qwen3VLForConditionalGeneration.hf_to_vllm_mapper (vLLM 0.17.0 .. 0.26.0's Qwen3.5 classes derive
# from it): the text model is the release's Qwen3_5(Moe)ForCausalLM under language_model.
VLLM_MULTIMODAL_PREFIXES = {"model.visual.": "visual.", "lm_head.": "language_model.lm_head.",
                            "model.language_model.": "language_model.model."}


def vllm_map_multimodal(name: str, drafter: bool) -> str | None:
    """A multimodal checkpoint's tensor name as the text-only class's loader would see it: the
    target maps it under language_model (whose own parameters are then those of the text-only
    class); Qwen3_5MTP.load_weights drops "language_model." from embed_tokens and skips visual."""
    if drafter:
        if name.startswith("mtp.") or "lm_head" in name:
            return name
        return name.replace("language_model.", "") if "embed_tokens" in name else None
    if name.startswith("mtp."):
        return name
    for old, new in VLLM_MULTIMODAL_PREFIXES.items():
        if name.startswith(old):
            new_name = new + name[len(old):]
            assert new_name.startswith("language_model."), f"{name}: not a text model tensor"
            return new_name.replace("language_model.model.", "model.", 1).replace("language_model.", "", 1)
    raise AssertionError(f"{name}: vLLM's multimodal mapper leaves it where no parameter is")


def check_against_vllm(cls: model.ModelClass, names: set[str], drafter: bool, multimodal: bool = False) -> None:
    wanted = vllm_mtp_params(cls) if drafter else vllm_target_params(cls)
    got: dict[str, set] = {}
    for n in names:
        if multimodal:
            n = vllm_map_multimodal(n, drafter)
            if n is None:
                continue
        hit = vllm_map(cls, n, drafter)
        if hit is not None:
            assert hit[0] in wanted, f"{cls.name}: vLLM has no parameter for {n} (-> {hit[0]})"
            got.setdefault(hit[0], set()).add(hit[1])
    assert got == wanted


def _shapes(directory: Path, safetensors, prefix: str = "") -> dict[str, tuple]:
    out = {}
    for shard in directory.glob("*.safetensors"):
        with safetensors.safe_open(str(shard), "pt") as f:
            out.update({k: tuple(f.get_slice(k).get_shape()) for k in f.keys() if k.startswith(prefix)})  # noqa: SIM118
    return out


def _text_config(directory: Path) -> dict:
    config = json.loads((directory / "config.json").read_text())
    return config.get("text_config", config)


# --------------------------------------------------------------------------------------------
# the checkpoints


@pytest.mark.parametrize("name", CLASSES)
def test_config_json_holds_what_vllm_reads(written, name):
    cls = model.MODEL_CLASSES[name]
    config = json.loads((written[name] / "config.json").read_text())
    assert config["architectures"] == [cls.vllm_architecture]
    # vLLM's SpeculativeConfig turns this model_type into its MTP drafter's (model.py: ModelClass)
    assert config["model_type"] == (cls.wrapper or cls.config["model_type"])
    text = _text_config(written[name])
    assert text["model_type"] == cls.config["model_type"]
    for key in ("vocab_size", "hidden_size", "num_hidden_layers", "layer_types", "num_attention_heads",
                "num_key_value_heads", "head_dim", "linear_conv_kernel_dim", "linear_key_head_dim",
                "linear_value_head_dim", "linear_num_key_heads", "linear_num_value_heads", "tie_word_embeddings"):
        assert text[key] == cls.config[key], key
    assert config[cls.mtp_config_key] == 1 and text[cls.mtp_config_key] == 1
    if cls.wrapper:
        assert text["rope_parameters"]["partial_rotary_factor"] == 0.25
        assert "mrope_section" not in text["rope_parameters"]
        assert "vision_config" not in config


@pytest.mark.parametrize("name", CLASSES)
def test_every_tensor_is_one_vllm_loads_and_vllm_gets_all_it_needs(written, safetensors, name):
    cls = model.MODEL_CLASSES[name]
    names = set(_shapes(written[name], safetensors))
    index = json.loads((written[name] / "model.safetensors.index.json").read_text())
    assert names == set(index["weight_map"])  # vLLM reads only indexed shards
    check_against_vllm(cls, names, drafter=False)
    # the MTP shard alone feeds the drafter's own layer; embed_tokens and lm_head come from the target's
    mtp = set(_shapes(written[name], safetensors, "mtp."))
    assert mtp == set(model.mtp_weights(name))
    with safetensors.safe_open(str(written[name] / "model-mtp.safetensors"), "pt") as f:
        assert set(f.keys()) == mtp
    check_against_vllm(cls, names, drafter=True)


@pytest.mark.parametrize("name", MULTIMODAL)
def test_the_multimodal_checkpoint_holds_the_same_text_model_where_vllm_0_26_reads_it(
    written, written_multimodal, safetensors, name
):
    import torch

    cls = model.MODEL_CLASSES[name]
    text_only, mm = written[name], written_multimodal[name]
    config, plain = (json.loads((d / "config.json").read_text()) for d in (mm, text_only))
    assert config["architectures"] == [cls.multimodal_architecture] and config["model_type"] == cls.wrapper
    assert config["vision_config"] == model.VISION_CONFIG
    assert config["text_config"] == plain["text_config"]
    assert {k: v for k, v in config.items() if k not in ("architectures", "vision_config")} == {
        k: v for k, v in plain.items() if k != "architectures"}
    # no preprocessor or processor files: vLLM started with language_model_only never loads one
    assert not list(mm.glob("*processor*")) and not list(mm.glob("*token*"))
    names = set(_shapes(mm, safetensors))
    assert names == set(json.loads((mm / "model.safetensors.index.json").read_text())["weight_map"])
    assert not any(n.startswith("model.visual.") for n in names)  # the tower vLLM drops loads nothing
    check_against_vllm(cls, names, drafter=False, multimodal=True)
    check_against_vllm(cls, names, drafter=True, multimodal=True)
    # the same tensors as the text-only checkpoint's, bit for bit, under Qwen3.5's own names
    renamed = {model.MULTIMODAL_TEXT_PREFIX + n[len("model."):] if n.startswith("model.") else n
               for n in _shapes(text_only, safetensors)}
    assert renamed == names
    for shard in ("model.safetensors", "model-mtp.safetensors"):
        with safetensors.safe_open(str(text_only / shard), "pt") as f, \
                safetensors.safe_open(str(mm / shard), "pt") as g:
            for k in f.keys():  # noqa: SIM118  (a safe_open handle has keys(), no __iter__)
                mk = model.MULTIMODAL_TEXT_PREFIX + k[len("model."):] if k.startswith("model.") else k
                assert torch.equal(f.get_tensor(k), g.get_tensor(mk)), k


@pytest.mark.parametrize("name", MULTIMODAL)
def test_the_reference_computes_the_same_text_model_from_either_layout(written, written_multimodal, safetensors,
                                                                       name):
    """oracle.Reference loads model.load_text_model: the float32 logits of the multimodal
    checkpoint's text model are those of the text-only checkpoint, exactly."""
    import torch

    ids = torch.randint(2, model.vocab_size(name), (2, 20), generator=torch.Generator().manual_seed(0))
    logits = []
    for d in (written[name], written_multimodal[name]):
        m = model.load_text_model(d, name, dtype=torch.float32).eval()
        assert type(m).__name__ == model.MODEL_CLASSES[name].transformers_model
        assert {p.dtype for p in m.parameters()} == {torch.float32}
        with torch.no_grad():
            logits.append(m(input_ids=ids).logits)
    assert torch.equal(logits[0], logits[1])
    assert logits[0].std() > 1.0  # the trained-looking scale of LOGIT_SCALE, not an all-zero model


def test_the_reference_refuses_a_checkpoint_that_lacks_text_model_tensors(written_multimodal, safetensors, tmp_path):
    import shutil

    from safetensors.torch import load_file, save_file

    d = tmp_path / "partial"
    shutil.copytree(written_multimodal["qwen3_5"], d)
    tensors = load_file(str(d / "model.safetensors"))
    del tensors["model.language_model.norm.weight"]
    save_file(tensors, str(d / "model.safetensors"), metadata={"format": "pt"})
    index = json.loads((d / "model.safetensors.index.json").read_text())
    del index["weight_map"]["model.language_model.norm.weight"]
    (d / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match="missing, e.g. model.norm.weight"):
        model.load_text_model(d, "qwen3_5")


@pytest.mark.parametrize("name", CLASSES)
def test_vllm_fused_projections_get_rows_that_add_up(written, safetensors, name):
    """The stacked parameters' sizes as vLLM allocates them, from the text config."""
    c = model.MODEL_CLASSES[name].config
    shapes = _shapes(written[name], safetensors)
    hidden, key, value = c["hidden_size"], c["linear_num_key_heads"] * c["linear_key_head_dim"], \
        c["linear_num_value_heads"] * c["linear_value_head_dim"]
    gdn = "model.layers.0.linear_attn."
    if model.MODEL_CLASSES[name].wrapper:
        assert shapes[gdn + "in_proj_qkv.weight"][0] + shapes[gdn + "in_proj_z.weight"][0] == 2 * key + 2 * value
        assert (
            shapes[gdn + "in_proj_b.weight"][0] + shapes[gdn + "in_proj_a.weight"][0] == 2 * c["linear_num_value_heads"]
        )
    else:
        assert shapes[gdn + "in_proj_qkvz.weight"][0] == 2 * key + 2 * value
    assert shapes[gdn + "conv1d.weight"] == (2 * key + value, 1, c["linear_conv_kernel_dim"])
    for layer in ("model.layers.3.", "mtp.layers.0."):
        rows = sum(shapes[layer + f"self_attn.{p}_proj.weight"][0] for p in "qkv")
        assert rows == (2 * c["num_attention_heads"] + 2 * c["num_key_value_heads"]) * c["head_dim"]  # with the gate
        assert shapes[layer + "self_attn.o_proj.weight"] == (hidden, c["num_attention_heads"] * c["head_dim"])


@pytest.mark.parametrize("name", CLASSES)
def test_mtp_layer_is_shaped_like_a_full_attention_layer_of_the_target(written, safetensors, name):
    d = written[name]
    target = {k.removeprefix("model.layers.3."): v for k, v in _shapes(d, safetensors, "model.layers.3.").items()}
    drafter = {k.removeprefix("mtp.layers.0."): v for k, v in _shapes(d, safetensors, "mtp.layers.0.").items()}
    assert target and drafter == target
    hidden = model.MODEL_CLASSES[name].config["hidden_size"]
    assert _shapes(d, safetensors, "mtp.fc.")["mtp.fc.weight"] == (hidden, 2 * hidden)


def test_plain_checkpoint_has_no_mtp_and_is_rewritten_when_mtp_is_asked(tmp_path, safetensors):
    d = model.write_model(tmp_path / "m")
    assert not _shapes(d, safetensors, "mtp.")
    model.write_model(tmp_path / "m", mtp=True)
    assert _shapes(d, safetensors, "mtp.")
    model.write_model(tmp_path / "m")
    assert not _shapes(d, safetensors, "mtp.") and not (d / "model.safetensors.index.json").exists()


def test_another_class_rewrites_the_checkpoint(tmp_path, safetensors):
    d = model.write_model(tmp_path / "m", mtp=True)
    assert json.loads((d / "config.json").read_text())["model_type"] == "qwen3_next"
    model.write_model(tmp_path / "m", model_class="qwen3_5")
    config = json.loads((d / "config.json").read_text())
    assert config["architectures"] == ["Qwen3_5ForCausalLM"] and "mtp_num_hidden_layers" not in config
    assert not _shapes(d, safetensors, "mtp.") and "model.layers.0.mlp.gate_proj.weight" in _shapes(d, safetensors)
    assert json.loads((d / "verify-config.json").read_text())["model_class"] == "qwen3_5"


@pytest.mark.parametrize("name", CLASSES)
def test_the_reference_reloads_the_checkpoint_in_float32_with_its_transformers_class(written, safetensors, tmp_path,
                                                                                      name):
    """What oracle.Reference loads: the written config, every target tensor as written (saved
    back in bf16, the float32 model gives the same file: transformers fuses the experts on load
    and splits them on save)."""
    import torch
    import transformers

    cls = model.MODEL_CLASSES[name]
    m = getattr(transformers, cls.transformers_model).from_pretrained(written[name], dtype=torch.float32)
    assert type(m.config).__name__ == cls.transformers_config
    assert m.config.linear_key_head_dim == cls.config["linear_key_head_dim"]
    assert {p.dtype for p in m.parameters()} == {torch.float32}
    m.to(torch.bfloat16).save_pretrained(tmp_path / "again")
    with safetensors.safe_open(str(written[name] / "model.safetensors"), "pt") as f, \
            safetensors.safe_open(str(tmp_path / "again" / "model.safetensors"), "pt") as g:
        assert set(f.keys()) == set(g.keys())
        for k in f.keys():  # noqa: SIM118  (a safe_open handle has keys(), no __iter__)
            assert torch.equal(f.get_tensor(k), g.get_tensor(k)), k


@pytest.mark.parametrize("name", CLASSES)
def test_mtp_checkpoint_makes_the_last_token_predict_most_of_the_next(written, safetensors, name):
    """What lets MTP drafts be accepted: on the MTP checkpoint, in float32, most greedy tokens are
    the one the previous token's embedding alone points to (what the MTP layer drafts), and some
    are not (those still depend on the context, so a stale state can still show)."""
    import torch
    import transformers

    d = written[name]
    with safetensors.safe_open(str(d / "model-mtp.safetensors"), "pt") as f:
        fc = f.get_tensor("mtp.fc.weight").float()
    hidden = model.MODEL_CLASSES[name].config["hidden_size"]
    assert torch.equal(fc[:, :hidden], torch.eye(hidden) * model.MTP_FC_GAIN)
    assert not fc[:, hidden:].any()

    cls = getattr(transformers, model.MODEL_CLASSES[name].transformers_model)
    m = cls.from_pretrained(d, dtype=torch.float32).eval()
    with torch.no_grad():
        points_to = m.lm_head(m.model.norm(m.model.embed_tokens.weight)).argmax(-1)
        gen = torch.Generator().manual_seed(1)
        follows = total = 0
        for _ in range(3):
            ids = torch.randint(2, model.vocab_size(name), (1, 16), generator=gen)
            out = m.generate(ids, max_new_tokens=32, do_sample=False, attention_mask=torch.ones_like(ids))[0]
            follows += int((points_to[out[15:-1]] == out[16:]).sum())
            total += out.numel() - 16
    assert 0.5 <= follows / total <= 0.9, follows / total

"""The tiny hybrid model verify runs: random weights, written by us, read by vLLM and transformers."""

from __future__ import annotations

import json
import shutil
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

# Continuous routing (every expert chosen for every token): with top-2 of 8, near-tied router
# scores flip between bf16 and float32 and the reference disagrees with a correct engine by up to
# 5 nats; with all 4 experts chosen vLLM's plain output stays within 0.6 of the reference.
MODEL_CLASS = "qwen3_next"  # the default class (MODEL_CLASSES); earlier evidence ran on it alone
CONFIG = {
    "architectures": ["Qwen3NextForCausalLM"],
    "model_type": "qwen3_next",
    "vocab_size": 2048,
    "hidden_size": 512,
    "intermediate_size": 1024,
    "num_hidden_layers": 8,
    "full_attention_interval": 4,
    "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 2,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "partial_rotary_factor": 0.25,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 64,
    "linear_value_head_dim": 64,
    "linear_num_key_heads": 4,
    "linear_num_value_heads": 8,
    "num_experts": 4,
    "num_experts_per_tok": 4,
    "norm_topk_prob": True,
    "moe_intermediate_size": 256,
    "shared_expert_intermediate_size": 256,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "max_position_embeddings": 4096,
    "rope_theta": 10000.0,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False,
    "bos_token_id": 0,
    "eos_token_id": 1,
    "torch_dtype": "bfloat16",
}
# Random logits are nearly flat; sharpening them puts most greedy choices far from ties, so a
# corrupted state shows up as a large regret rather than as noise.
LOGIT_SCALE = 4.0
SEED = 0
# A random MTP layer's drafts are never right (0 of 9144 accepted on vLLM 0.20.0), so they leave the
# accept paths untested. With an MTP layer the checkpoint is built so that drafts can be right:
# embeddings scaled so that about 70% of greedy tokens are the ones the last token alone points to
# (measured on the float32 reference: 69% at 30x, 0% at 1x; the rest still depends on the context
# and so on the recurrent state), and an MTP layer that predicts exactly that. On vLLM 0.20.0,
# H100: 63-65% of MTP draft tokens accepted (docs/VERIFICATION.md).
MTP_EMBED_SCALE = 30.0
MTP_FC_GAIN = 4.0

# Qwen3.5 (Qwen3.6 checkpoints use the same classes): the Qwen3-Next sizes, a dense MLP of the
# same intermediate size instead of the experts, and GDN key/value heads of 128 (Qwen3-Next's
# model above has 64). That dimension decides which GDN kernels vLLM runs. vLLM 0.27 and 0.31
# build the same GDN module for both families, QwenGatedDeltaNetAttention
# (layers/mamba/gdn/qwen_gdn_linear_attn.py), Qwen3.5 with gqa_interleaved_layout=False (q, k, v,
# z and b, a as separate checkpoint tensors, fused on load). 0.31 (not 0.27) adds
# VLLM_GDN_DECODE_KERNEL, by default "cuda": for a non-interleaved layout with K = V = 128, bf16,
# on compute capability 8.0+, the whole layer goes through its fused packed path and
# speculative decode steps through the fused CUDA MTP kernel (fused_gdn_decode_post_conv_mtp);
# otherwise (Qwen3-Next, or heads of 64) it falls back to the Triton path and verify would not
# see the kernels Qwen3.5 users run.
# Norms as in Qwen3-Next, in transformers and vLLM alike: decoder, q/k and MTP norms are offsets
# from one (transformers' Qwen3_5RMSNorm, vLLM's GemmaRMSNorm), the GDN output norm is a plain
# scale (Qwen3_5RMSNormGated, RMSNormGated). Rotary: no mrope_section, so vLLM builds plain RoPE
# (0.27's Qwen3_5ForCausalLM does not take M-RoPE positions) and transformers' interleaved M-RoPE,
# with every section at the same text position, computes the same.
QWEN3_5_TEXT = {
    "architectures": ["Qwen3_5ForCausalLM"],
    "model_type": "qwen3_5_text",
    "vocab_size": 2048,
    "hidden_size": 512,
    "intermediate_size": 1024,
    "num_hidden_layers": 8,
    "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 2,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "linear_num_key_heads": 4,
    "linear_num_value_heads": 8,
    "max_position_embeddings": 4096,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25},
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False,
    "bos_token_id": 0,
    "eos_token_id": 1,
    "torch_dtype": "bfloat16",
}
# vLLM 0.17.0 to 0.26.0 register Qwen3.5 only as the multimodal *ForConditionalGeneration (and
# the *MTP drafters); the text-only *ForCausalLM classes came with 0.27.0. On those releases the
# checkpoint is written as Qwen3.5's own checkpoints are (model.language_model.* and lm_head, a
# vision_config) and the engine starts with language_model_only, as text-only deployments of
# Qwen3.5 do: vLLM then builds no vision tower (its parameters stay on the meta device, so the
# checkpoint holds none) and never loads an image processor (so it needs no
# preprocessor_config.json). The text model vLLM builds inside is the release's own
# Qwen3_5ForCausalLM, from the same text config and the same tensors. The vision config is small
# (every field vLLM reads when it builds the tower it then drops) and is never computed with.
VISION_CONFIG = {
    "depth": 1,
    "hidden_size": 64,
    "hidden_act": "gelu_pytorch_tanh",
    "intermediate_size": 128,
    "num_heads": 2,
    "in_channels": 3,
    "patch_size": 16,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "out_hidden_size": 512,  # the text model's hidden_size
    "num_position_embeddings": 64,  # a square: vLLM takes its root as the grid side
    "initializer_range": 0.02,
}
# Where Qwen3.5's multimodal checkpoints keep the text model's tensors (lm_head stays at the top).
MULTIMODAL_TEXT_PREFIX = "model.language_model."

# Routing as Qwen3-Next's model above: all 4 experts for every token.
QWEN3_5_MOE_TEXT = {k: v for k, v in QWEN3_5_TEXT.items() if k != "intermediate_size"} | {
    "architectures": ["Qwen3_5MoeForCausalLM"],
    "model_type": "qwen3_5_moe_text",
    "num_experts": 4,
    "num_experts_per_tok": 4,
    "moe_intermediate_size": 256,
    "shared_expert_intermediate_size": 256,
}


@dataclass(frozen=True)
class ModelClass:
    """One model family verify can write: its config, the classes that read it, its MTP layer.

    `config` is what transformers' config class is built from. With `wrapper` set, config.json
    nests the saved text config under "text_config" of a config of that model_type, as Qwen3.5's
    own checkpoints do: vLLM's MTP drafter is set up from the wrapper. With a bare qwen3_5_text
    config, 0.27 refuses MTP ("Unsupported speculative method: 'mtp'": its draft override matches
    only the wrapper's model_type), and 0.31 matches it but overwrites that one config's
    model_type with qwen3_5_mtp, so its MTP decoder layer refuses to build ("Invalid model_type
    qwen3_5_mtp"). The target class stays the text-only *ForCausalLM in vLLM and transformers,
    which both read the nested text config.
    """

    name: str
    config: dict
    transformers_config: str
    transformers_model: str  # the float32 reference (oracle.Reference)
    vllm_architecture: str
    vllm_mtp_architecture: str  # what vLLM's SpeculativeConfig picks for method "mtp"
    mtp_config_key: str  # the config field that makes vLLM build one MTP layer
    mlp: str  # "moe" or "dense": the decoder layers', and so the MTP layer's
    wrapper: str | None = None  # model_type of the config.json the text config is nested in
    # The multimodal class that also reads this text model, for releases without vllm_architecture
    # (VISION_CONFIG); None: the class has no such alternative.
    multimodal_architecture: str | None = None
    # Embeddings of the MTP checkpoint: as large against the layers' updates as needed for about
    # 70% of greedy tokens to be what the last token points to (float32 reference, 10 random
    # prompts x 48 tokens: Qwen3-Next 76% at 30x, Qwen3.5-MoE 76% at 30x, the dense Qwen3.5 55%
    # at 30x and 71% at 60x).
    mtp_embed_scale: float = MTP_EMBED_SCALE


MODEL_CLASSES: dict[str, ModelClass] = {
    "qwen3_next": ModelClass(
        "qwen3_next",
        CONFIG,
        "Qwen3NextConfig",
        "Qwen3NextForCausalLM",
        "Qwen3NextForCausalLM",
        "Qwen3NextMTP",
        "num_nextn_predict_layers",
        "moe",
    ),
    "qwen3_5": ModelClass(
        "qwen3_5",
        QWEN3_5_TEXT,
        "Qwen3_5TextConfig",
        "Qwen3_5ForCausalLM",
        "Qwen3_5ForCausalLM",
        "Qwen3_5MTP",
        "mtp_num_hidden_layers",
        "dense",
        wrapper="qwen3_5",
        multimodal_architecture="Qwen3_5ForConditionalGeneration",
        mtp_embed_scale=60.0,
    ),
    "qwen3_5_moe": ModelClass(
        "qwen3_5_moe",
        QWEN3_5_MOE_TEXT,
        "Qwen3_5MoeTextConfig",
        "Qwen3_5MoeForCausalLM",
        "Qwen3_5MoeForCausalLM",
        "Qwen3_5MoeMTP",
        "mtp_num_hidden_layers",
        "moe",
        wrapper="qwen3_5_moe",
        multimodal_architecture="Qwen3_5MoeForConditionalGeneration",
    ),
}


# FlashInfer's GDN prefill kernel (the CuTe DSL one of flashinfer 0.6.14 .. 0.6.16) takes this
# head size only; real Qwen3-Next and Qwen3.5 checkpoints have it, the Qwen3-Next tiny model not.
FLASHINFER_GDN_HEAD_DIM = 128


def flashinfer_classes() -> list[str]:
    """The model classes whose GDN heads FlashInfer's prefill kernel takes."""
    return [n for n, c in MODEL_CLASSES.items() if c.config["linear_key_head_dim"] == FLASHINFER_GDN_HEAD_DIM]


def layout_for(text_only: str, multimodal: str | None, supported: Collection[str]) -> str:
    """The architecture to write a text model as, for a vLLM whose model registry holds
    `supported`: its text-only class where it is there, else the multimodal class that wraps the
    same text model where that is, else the text-only class (for vLLM to refuse by name)."""
    if text_only not in supported and multimodal is not None and multimodal in supported:
        return multimodal
    return text_only


def architecture_for(name: str, supported: Collection[str]) -> str:
    """layout_for of model class `name`."""
    cls = MODEL_CLASSES[name]
    return layout_for(cls.vllm_architecture, cls.multimodal_architecture, supported)


def is_multimodal(architecture: str) -> bool:
    """Whether a checkpoint of `architecture` is one of the multimodal layouts written here: vLLM
    must then start it with language_model_only (engine.text_only_kwargs)."""
    return any(architecture == c.multimodal_architecture for c in MODEL_CLASSES.values())


def vocab_size(name: str = MODEL_CLASS) -> int:
    return int(MODEL_CLASSES[name].config["vocab_size"])


def write_model(
    directory: Path, mtp: bool = False, model_class: str = MODEL_CLASS, architecture: str | None = None
) -> Path:
    """Write the checkpoint once; an existing one with the same class and config is reused. With
    `mtp`, it also carries a multi-token-prediction layer for vLLM's MTP drafter (mtp_weights),
    and its embeddings are scaled (ModelClass.mtp_embed_scale) so that the drafts are often right.
    `architecture`: the class's vllm_architecture (the default) or its multimodal_architecture
    (architecture_for), the same weights either way."""
    cls = MODEL_CLASSES[model_class]
    architecture = architecture or cls.vllm_architecture
    if architecture not in (cls.vllm_architecture, cls.multimodal_architecture):
        raise ValueError(f"{cls.name} is not written as {architecture}")
    stamp = directory / "verify-config.json"
    wanted = json.dumps(
        {
            "model_class": cls.name,
            "config": cls.config,
            "logit_scale": LOGIT_SCALE,
            "seed": SEED,
            "mtp": mtp,
            "mtp_embed_scale": cls.mtp_embed_scale if mtp else None,
            "mtp_fc_gain": MTP_FC_GAIN if mtp else None,
            # only where it is not the default, so that earlier checkpoints are reused as they are
            **({"architecture": architecture} if architecture != cls.vllm_architecture else {}),
        },
        sort_keys=True,
    )
    if stamp.exists() and stamp.read_text() == wanted:
        return directory
    # A stale MTP shard or index would still be read by vLLM: start from an empty directory.
    if stamp.exists():
        shutil.rmtree(directory)
    import torch
    import transformers

    torch.manual_seed(SEED)
    fields = {k: v for k, v in cls.config.items() if k not in ("architectures", "model_type", "torch_dtype")}
    config = getattr(transformers, cls.transformers_config)(**fields)
    model = getattr(transformers, cls.transformers_model)(config)
    with torch.no_grad():
        model.lm_head.weight.mul_(LOGIT_SCALE)
        if mtp:
            model.model.embed_tokens.weight.mul_(cls.mtp_embed_scale)
    directory.mkdir(parents=True, exist_ok=True)
    model.to(torch.bfloat16).save_pretrained(directory)
    if cls.wrapper:
        nest_config(directory, cls)
    if architecture == cls.multimodal_architecture:
        as_multimodal(directory, architecture)
    if mtp:
        add_mtp_layer(directory, cls)
    stamp.write_text(wanted)
    return directory


def nest_config(directory: Path, cls: ModelClass) -> None:
    """config.json as Qwen3.5's checkpoints have it: the text config transformers saved, under
    "text_config" of a `cls.wrapper` config whose architecture is still the text-only class."""
    path = directory / "config.json"
    text = json.loads(path.read_text())
    outer = {
        "architectures": text.pop("architectures"),
        "model_type": cls.wrapper,
        "tie_word_embeddings": text["tie_word_embeddings"],
        "text_config": text,
    }
    for key in ("dtype", "transformers_version"):
        if key in text:
            outer[key] = text.pop(key)
    path.write_text(json.dumps(outer, indent=2))


def mtp_weights(model_class: str = MODEL_CLASS, seed: int = SEED + 1) -> dict:
    """Weights for one MTP layer, named as vLLM's MTP drafter of the class loads them
    (Qwen3NextMTP, Qwen3_5MTP, Qwen3_5MoeMTP: all rename `mtp.*` to their `model.*`).

    transformers' *ForCausalLM classes have no MTP module, so these are written by hand. The layer
    is a full-attention decoder layer shaped like the target's (MoE for Qwen3-Next and Qwen3.5-MoE,
    dense for Qwen3.5: vLLM builds it from the same text config), with random weights; the
    drafter takes embed_tokens and lm_head from the target. Its input projection `fc` passes the
    (normalised) embedding of the token through at MTP_FC_GAIN and drops the target's hidden
    state, so that, over the layer's small random updates, the draft is the token that
    embedding points to: on write_model's MTP checkpoint, what the target picks about 70% of the
    time. RMSNorm weights are offsets from one (zero is the identity), as in the target.
    """
    import torch

    c = MODEL_CLASSES[model_class].config
    hidden, heads, kv, head_dim = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    gen = torch.Generator().manual_seed(seed)

    def rand(*shape):
        return (torch.randn(*shape, generator=gen) * c.get("initializer_range", 0.02)).to(torch.bfloat16)

    def zero(*shape):
        return torch.zeros(*shape, dtype=torch.bfloat16)

    layer = "mtp.layers.0."
    out = {
        # from [embedding; hidden state]
        "mtp.fc.weight": torch.cat([torch.eye(hidden) * MTP_FC_GAIN, torch.zeros(hidden, hidden)], 1).to(
            torch.bfloat16
        ),
        "mtp.pre_fc_norm_embedding.weight": zero(hidden),
        "mtp.pre_fc_norm_hidden.weight": zero(hidden),
        "mtp.norm.weight": zero(hidden),
        layer + "input_layernorm.weight": zero(hidden),
        layer + "post_attention_layernorm.weight": zero(hidden),
        layer + "self_attn.q_proj.weight": rand(2 * heads * head_dim, hidden),  # queries and output gate
        layer + "self_attn.k_proj.weight": rand(kv * head_dim, hidden),
        layer + "self_attn.v_proj.weight": rand(kv * head_dim, hidden),
        layer + "self_attn.o_proj.weight": rand(hidden, heads * head_dim),
        layer + "self_attn.q_norm.weight": zero(head_dim),
        layer + "self_attn.k_norm.weight": zero(head_dim),
    }
    if MODEL_CLASSES[model_class].mlp == "dense":
        mlps = [("mlp.", c["intermediate_size"])]
    else:
        out[layer + "mlp.gate.weight"] = rand(c["num_experts"], hidden)
        out[layer + "mlp.shared_expert_gate.weight"] = rand(1, hidden)
        mlps = [("mlp.shared_expert.", c["shared_expert_intermediate_size"])]
        mlps += [(f"mlp.experts.{e}.", c["moe_intermediate_size"]) for e in range(c["num_experts"])]
    for name, inner in mlps:
        out[layer + name + "gate_proj.weight"] = rand(inner, hidden)
        out[layer + name + "up_proj.weight"] = rand(inner, hidden)
        out[layer + name + "down_proj.weight"] = rand(hidden, inner)
    return out


def as_multimodal(directory: Path, architecture: str) -> None:
    """The nested checkpoint in the layout of Qwen3.5's own (multimodal) checkpoints: config.json
    names `architecture` and carries VISION_CONFIG; the text model's tensors move from model.* to
    model.language_model.* (vLLM's Qwen3VL mapper reads them into language_model.model.*, its
    Qwen3_5MTP takes embed_tokens from there); lm_head stays."""
    from safetensors.torch import load_file, save_file

    path = directory / "config.json"
    config = json.loads(path.read_text())
    config["architectures"] = [architecture]
    config["vision_config"] = dict(VISION_CONFIG)
    path.write_text(json.dumps(config, indent=2))
    weights = directory / "model.safetensors"
    tensors = load_file(str(weights))
    renamed = {
        (MULTIMODAL_TEXT_PREFIX + k[len("model.") :] if k.startswith("model.") else k): v for k, v in tensors.items()
    }
    save_file(renamed, str(weights), metadata={"format": "pt"})


def load_text_model(directory: Path | str, model_class: str, **kwargs):
    """The checkpoint's text model in transformers (ModelClass.transformers_model), whichever
    layout write_model gave it: in the multimodal one, its tensors are renamed back from
    model.language_model.* on load. Refused, rather than filled with random weights, if any
    parameter of the text model is missing from the checkpoint."""
    import transformers

    cls = MODEL_CLASSES[model_class]
    config = json.loads((Path(directory) / "config.json").read_text())
    if is_multimodal((config.get("architectures") or [""])[0]):
        kwargs["key_mapping"] = {"^" + MULTIMODAL_TEXT_PREFIX.replace(".", r"\."): "model."}
    loaded, info = getattr(transformers, cls.transformers_model).from_pretrained(
        directory, output_loading_info=True, **kwargs
    )
    if info.get("missing_keys"):
        missing = sorted(info["missing_keys"])
        raise ValueError(
            f"{directory}: {len(missing)} parameters of {cls.transformers_model} missing, e.g. {missing[0]}"
        )
    return loaded


def add_mtp_layer(directory: Path, cls: ModelClass | None = None) -> None:
    """A second shard with the MTP weights, listed in the index (vLLM reads only indexed shards),
    and the config field that has vLLM build the layer: for a nested config at the top, where
    0.27 reads it, and in the text config, where 0.31 also looks."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    cls = cls or MODEL_CLASSES[MODEL_CLASS]
    weights = mtp_weights(cls.name)
    save_file(weights, str(directory / "model-mtp.safetensors"), metadata={"format": "pt"})
    index_path = directory / "model.safetensors.index.json"
    if index_path.exists():
        index = json.loads(index_path.read_text())
    else:
        with safe_open(str(directory / "model.safetensors"), "pt") as f:
            index = {"metadata": {}, "weight_map": dict.fromkeys(f.keys(), "model.safetensors")}
    index["weight_map"].update(dict.fromkeys(weights, "model-mtp.safetensors"))
    index_path.write_text(json.dumps(index, indent=2))
    config = json.loads((directory / "config.json").read_text())
    config[cls.mtp_config_key] = 1
    if "text_config" in config:
        config["text_config"][cls.mtp_config_key] = 1
    (directory / "config.json").write_text(json.dumps(config, indent=2))

"""The tiny hybrid model verify runs: random weights, written by us, read by vLLM and transformers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

# Continuous routing (every expert chosen for every token): with top-2 of 8, near-tied router
# scores flip between bf16 and float32 and the reference disagrees with a correct engine by up to
# 5 nats; with all 4 experts chosen vLLM's plain output stays within 0.6 of the reference.
MODEL_CLASS = "qwen3_next"
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


def vocab_size() -> int:
    return int(CONFIG["vocab_size"])


def write_model(directory: Path, mtp: bool = False) -> Path:
    """Write the checkpoint once; an existing one with the same config is reused. With `mtp`, it
    also carries a multi-token-prediction layer for vLLM's MTP drafter (mtp_weights), and its
    embeddings are scaled by MTP_EMBED_SCALE so that the drafts are often right."""
    stamp = directory / "verify-config.json"
    wanted = json.dumps({"config": CONFIG, "logit_scale": LOGIT_SCALE, "seed": SEED, "mtp": mtp,
                         "mtp_embed_scale": MTP_EMBED_SCALE if mtp else None,
                         "mtp_fc_gain": MTP_FC_GAIN if mtp else None}, sort_keys=True)
    if stamp.exists() and stamp.read_text() == wanted:
        return directory
    # A stale MTP shard or index would still be read by vLLM: start from an empty directory.
    if stamp.exists():
        shutil.rmtree(directory)
    import torch
    from transformers import Qwen3NextConfig, Qwen3NextForCausalLM

    torch.manual_seed(SEED)
    fields = {k: v for k, v in CONFIG.items() if k not in ("architectures", "model_type", "torch_dtype")}
    model = Qwen3NextForCausalLM(Qwen3NextConfig(**fields))
    with torch.no_grad():
        model.lm_head.weight.mul_(LOGIT_SCALE)
        if mtp:
            model.model.embed_tokens.weight.mul_(MTP_EMBED_SCALE)
    directory.mkdir(parents=True, exist_ok=True)
    model.to(torch.bfloat16).save_pretrained(directory)
    if mtp:
        add_mtp_layer(directory)
    stamp.write_text(wanted)
    return directory


def mtp_weights(seed: int = SEED + 1) -> dict:
    """Weights for one Qwen3-Next MTP layer, named as vLLM's Qwen3NextMTP loads them.

    transformers' Qwen3NextForCausalLM has no MTP module, so these are written by hand. The layer
    is a full-attention MoE decoder layer shaped like the target's, with random weights; the
    drafter takes embed_tokens and lm_head from the target. Its input projection `fc` passes the
    (normalised) embedding of the token through at MTP_FC_GAIN and drops the target's hidden
    state, so that, over the layer's small random updates, the draft is the token that
    embedding points to: on write_model's MTP checkpoint, what the target picks about 70% of the
    time. RMSNorm weights are offsets from one (zero is the identity), as in the target.
    """
    import torch

    c = CONFIG
    hidden, heads, kv, head_dim = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    gen = torch.Generator().manual_seed(seed)

    def rand(*shape):
        return (torch.randn(*shape, generator=gen) * c.get("initializer_range", 0.02)).to(torch.bfloat16)

    def zero(*shape):
        return torch.zeros(*shape, dtype=torch.bfloat16)

    layer = "mtp.layers.0."
    out = {
        # from [embedding; hidden state]
        "mtp.fc.weight": torch.cat([torch.eye(hidden) * MTP_FC_GAIN, torch.zeros(hidden, hidden)], 1).to(torch.bfloat16),
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
        layer + "mlp.gate.weight": rand(c["num_experts"], hidden),
        layer + "mlp.shared_expert_gate.weight": rand(1, hidden),
    }
    shared, moe = c["shared_expert_intermediate_size"], c["moe_intermediate_size"]
    for name, inner in [("mlp.shared_expert.", shared)] + [(f"mlp.experts.{e}.", moe) for e in range(c["num_experts"])]:
        out[layer + name + "gate_proj.weight"] = rand(inner, hidden)
        out[layer + name + "up_proj.weight"] = rand(inner, hidden)
        out[layer + name + "down_proj.weight"] = rand(hidden, inner)
    return out


def add_mtp_layer(directory: Path) -> None:
    """A second shard with the MTP weights, listed in the index (vLLM reads only indexed shards)."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    weights = mtp_weights()
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
    config["num_nextn_predict_layers"] = 1
    (directory / "config.json").write_text(json.dumps(config, indent=2))

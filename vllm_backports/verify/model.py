"""The tiny hybrid model verify runs: random weights, written by us, read by vLLM and transformers."""

from __future__ import annotations

import json
from pathlib import Path

# Continuous routing (every expert chosen for every token): with top-2 of 8, near-tied router
# scores flip between bf16 and float32 and the reference disagrees with a correct engine by up to
# 5 nats; with all 4 experts chosen vLLM's plain output stays within 0.6 of the reference.
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


def vocab_size() -> int:
    return int(CONFIG["vocab_size"])


def write_model(directory: Path) -> Path:
    """Write the checkpoint once; an existing one with the same config is reused."""
    stamp = directory / "verify-config.json"
    wanted = json.dumps({"config": CONFIG, "logit_scale": LOGIT_SCALE, "seed": SEED}, sort_keys=True)
    if stamp.exists() and stamp.read_text() == wanted:
        return directory
    import torch
    from transformers import Qwen3NextConfig, Qwen3NextForCausalLM

    torch.manual_seed(SEED)
    fields = {k: v for k, v in CONFIG.items() if k not in ("architectures", "model_type", "torch_dtype")}
    model = Qwen3NextForCausalLM(Qwen3NextConfig(**fields))
    with torch.no_grad():
        model.lm_head.weight.mul_(LOGIT_SCALE)
    directory.mkdir(parents=True, exist_ok=True)
    model.to(torch.bfloat16).save_pretrained(directory)
    stamp.write_text(wanted)
    return directory

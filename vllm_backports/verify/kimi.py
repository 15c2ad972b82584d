"""A tiny Kimi K3 text checkpoint for `verify --model`: one KDA layer, one MLA layer, random weights.

    python -m vllm_backports.verify.kimi DIR

vLLM serves it as KimiLinearForCausalLM (model_type kimi_linear, the text model of Kimi K3): with
`use_full_rank_gate` its KDA layers are KimiK3DeltaAttention (vllm/models/kimi_k3/nvidia/kda.py,
0.27.0 .. 0.33.0), whose metadata builder is KimiK3KDAMetadataBuilder, the builder that
docs/SIBLING-BUGS.md §9 is about. Layer 1 is KDA, layer 2 full attention (MLA, NoPE only, as
Kimi K3's), both with dense MLPs; no MoE, no MTP layer, no attention residuals. The sizes are the
smallest the kernels take: KDA heads of 128 (the fused decode and FlashKDA kernels' only size),
MLA's latent 512 and rope 64 (FlashMLA's), with no gate lower bound, so KDA prefill stays on
Triton. transformers has no Kimi Linear class: verify --model judges it against vLLM's own
teacher-forced reference, never the float32 one.

The tensors carry the checkpoint's own names (those vLLM's KimiLinearModel.load_weights maps
onto its fused parameters: q/k/v/g/b/f_a_proj onto in_proj_qkvgfab, q/k/v_conv1d onto conv1d,
gate/up_proj onto gate_up_proj); tests/verify/test_kimi.py checks names and shapes against the
releases' model files. The tokenizer is tokenizer.py's, trained to the same vocabulary size.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from . import tokenizer

SEED = 1234
LOGIT_SCALE = 4.0  # as model.py's tiny model: logits far from ties, so a corrupt state shows
INIT = 0.02  # the std of every projection, embedding and lm_head (before LOGIT_SCALE)
HIDDEN, KDA_HEADS, KDA_HEAD_DIM, CONV = 512, 4, 128, 4
MLA_HEADS, KV_LORA, NOPE, ROPE, V_HEAD = 16, 512, 128, 64, 128
LINEAR_ATTN = {
    "kda_layers": [1],  # 1-based (KimiLinearConfig.is_kda_layer)
    "full_attn_layers": [2],
    "num_heads": KDA_HEADS,
    "head_dim": KDA_HEAD_DIM,
    "short_conv_kernel_size": CONV,
    "use_full_rank_gate": True,
}
VOCAB = 2048
CONFIG: dict = {
    "architectures": ["KimiLinearForCausalLM"],
    "model_type": "kimi_linear",
    "vocab_size": VOCAB,
    "hidden_size": HIDDEN,
    "intermediate_size": 1024,
    "num_hidden_layers": 2,
    "num_attention_heads": MLA_HEADS,
    "num_key_value_heads": MLA_HEADS,
    "hidden_act": "silu",
    "rms_norm_eps": 1e-6,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": False,
    "bos_token_id": 0,
    "eos_token_id": 1,
    "pad_token_id": 0,
    "q_lora_rank": None,
    "kv_lora_rank": KV_LORA,
    "qk_nope_head_dim": NOPE,
    "qk_rope_head_dim": ROPE,
    "v_head_dim": V_HEAD,
    "mla_use_nope": True,
    "mla_use_output_gate": False,
    "num_experts": None,
    "num_nextn_predict_layers": 0,
    "linear_attn_config": LINEAR_ATTN,
    "torch_dtype": "bfloat16",
}


def layer_kinds(config: dict = CONFIG) -> list[str]:
    kda = set(config["linear_attn_config"]["kda_layers"])
    return ["kda" if i + 1 in kda else "mla" for i in range(config["num_hidden_layers"])]


def tensors(config: dict = CONFIG) -> dict[str, tuple[tuple[int, ...], str, str]]:
    """Every tensor of the checkpoint: name -> (shape, dtype, init), init one of normal (INIT std),
    ones, conv (uniform in +-1/sqrt(kernel)), a_log (log of uniform 1..16) or zeros."""
    h, inter, vocab = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    la = config["linear_attn_config"]
    proj = la["num_heads"] * la["head_dim"]
    heads = config["num_attention_heads"]
    qk = config["qk_nope_head_dim"] + config["qk_rope_head_dim"]
    bf16, f32 = "bfloat16", "float32"
    out: dict[str, tuple[tuple[int, ...], str, str]] = {
        "model.embed_tokens.weight": ((vocab, h), bf16, "normal"),
        "model.norm.weight": ((h,), bf16, "ones"),
        "lm_head.weight": ((vocab, h), bf16, "normal"),
    }
    for i, kind in enumerate(layer_kinds(config)):
        p = f"model.layers.{i}."
        out[p + "input_layernorm.weight"] = ((h,), bf16, "ones")
        out[p + "post_attention_layernorm.weight"] = ((h,), bf16, "ones")
        out[p + "mlp.gate_proj.weight"] = ((inter, h), bf16, "normal")
        out[p + "mlp.up_proj.weight"] = ((inter, h), bf16, "normal")
        out[p + "mlp.down_proj.weight"] = ((h, inter), bf16, "normal")
        a = p + "self_attn."
        if kind == "kda":
            for name in ("q_proj", "k_proj", "v_proj", "g_proj"):
                out[a + name + ".weight"] = ((proj, h), bf16, "normal")
            out[a + "b_proj.weight"] = ((la["num_heads"], h), bf16, "normal")
            out[a + "f_a_proj.weight"] = ((la["head_dim"], h), bf16, "normal")
            out[a + "f_b_proj.weight"] = ((proj, la["head_dim"]), bf16, "normal")
            for name in ("q_conv1d", "k_conv1d", "v_conv1d"):
                out[a + name + ".weight"] = ((proj, 1, la["short_conv_kernel_size"]), f32, "conv")
            out[a + "A_log"] = ((la["num_heads"],), f32, "a_log")
            out[a + "dt_bias"] = ((proj,), f32, "zeros")
            out[a + "o_norm.weight"] = ((la["head_dim"],), bf16, "ones")
            out[a + "o_proj.weight"] = ((h, proj), bf16, "normal")
        else:
            kv = config["kv_lora_rank"]
            out[a + "q_proj.weight"] = ((heads * qk, h), bf16, "normal")
            out[a + "kv_a_proj_with_mqa.weight"] = ((kv + config["qk_rope_head_dim"], h), bf16, "normal")
            out[a + "kv_a_layernorm.weight"] = ((kv,), bf16, "ones")
            out[a + "kv_b_proj.weight"] = (
                (heads * (config["qk_nope_head_dim"] + config["v_head_dim"]), kv),
                bf16,
                "normal",
            )
            out[a + "o_proj.weight"] = ((h, heads * config["v_head_dim"]), bf16, "normal")
    return out


def write_checkpoint(directory: Path) -> Path:
    """config.json, model.safetensors and the tokenizer; an existing checkpoint of the same
    config and seed is reused."""
    stamp = directory / "verify-config.json"
    wanted = json.dumps({"config": CONFIG, "seed": SEED, "logit_scale": LOGIT_SCALE, "init": INIT}, sort_keys=True)
    if stamp.exists() and stamp.read_text() == wanted:
        return directory
    import torch
    from safetensors.torch import save_file

    gen = torch.Generator().manual_seed(SEED)
    weights = {}
    for name, (shape, dtype, init) in tensors().items():
        if init == "normal":
            t = torch.randn(*shape, generator=gen) * INIT
        elif init == "conv":
            bound = shape[-1] ** -0.5
            t = (torch.rand(*shape, generator=gen) * 2 - 1) * bound
        elif init == "a_log":
            t = torch.log(torch.rand(*shape, generator=gen) * 15 + 1)
        elif init == "ones":
            t = torch.ones(*shape)
        else:
            t = torch.zeros(*shape)
        if name == "lm_head.weight":
            t = t * LOGIT_SCALE
        weights[name] = t.to(getattr(torch, dtype)).contiguous()
    directory.mkdir(parents=True, exist_ok=True)
    save_file(weights, str(directory / "model.safetensors"), metadata={"format": "pt"})
    (directory / "config.json").write_text(json.dumps(CONFIG, indent=2))
    generation = {"bos_token_id": CONFIG["bos_token_id"], "eos_token_id": CONFIG["eos_token_id"]}
    (directory / "generation_config.json").write_text(json.dumps(generation, indent=2))
    tokenizer.write_tokenizer(directory, VOCAB)
    stamp.write_text(wanted)
    return directory


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vllm_backports.verify.kimi", description=__doc__)
    parser.add_argument("directory", type=Path)
    args = parser.parse_args(argv)
    print(write_checkpoint(args.directory))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Models of the sizes users run, as configs only: vLLM loads them with load_format="dummy"
(random weights made on the GPU), so nothing is downloaded and no weights are written.

The shapes follow the published configs of Qwen3.5-9B, Qwen3.6-27B (Qwen3.5's architecture) and
Qwen3-Next-80B-A3B as this file gives them: hidden sizes, layer counts and the 3:1 interleave of
Gated-DeltaNet and full-attention layers, GDN heads of 128 (the dimension that picks vLLM's GDN
kernels), attention heads, vocabulary. A run that needs the exact published config can pass the
checkpoint's own config.json instead (write(..., config=)). The 80B MoE keeps its 48 layers, top-10
routing and expert width but has 128 experts instead of 512, so that it fits one 80 GB GPU
(parameters() below): each token does the same work; only the expert weights a step reads at
large batches are fewer.

Rotary: as verify's Qwen3.5 model (verify.model), plain partial RoPE without M-RoPE sections,
which the text-only Qwen3_5ForCausalLM takes in every release that has it. Configs carry one MTP
layer, which vLLM builds only for method "mtp". Releases before 0.27.0 register Qwen3.5 only as
the multimodal Qwen3_5ForConditionalGeneration: there the Qwen3.5 shapes are written as that
class with a small vision config, and the engines start with language_model_only, as verify's
tiny Qwen3.5 is (verify.model.as_multimodal); the text model vLLM builds is the same.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..verify.model import VISION_CONFIG, layout_for

QWEN3_5_VOCAB = 248320
QWEN3_5_MULTIMODAL = "Qwen3_5ForConditionalGeneration"
# The 3:1 interleave, per block of four layers
BLOCK = ["linear_attention", "linear_attention", "linear_attention", "full_attention"]


def _qwen3_5_text(hidden: int, layers: int, intermediate: int, heads: int, v_heads: int) -> dict:
    return {
        "architectures": ["Qwen3_5ForCausalLM"],
        "model_type": "qwen3_5_text",
        "vocab_size": QWEN3_5_VOCAB,
        "hidden_size": hidden,
        "intermediate_size": intermediate,
        "num_hidden_layers": layers,
        "layer_types": BLOCK * (layers // 4),
        "full_attention_interval": 4,
        "num_attention_heads": heads,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "attn_output_gate": True,
        "linear_conv_kernel_dim": 4,
        "linear_key_head_dim": 128,
        "linear_value_head_dim": 128,
        "linear_num_key_heads": 16,
        "linear_num_value_heads": v_heads,
        "max_position_embeddings": 262144,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25},
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": False,
        "bos_token_id": 248044,
        "eos_token_id": 248044,
        "torch_dtype": "bfloat16",
        "mtp_num_hidden_layers": 1,
    }


QWEN3_NEXT_80B_E128 = {
    "architectures": ["Qwen3NextForCausalLM"],
    "model_type": "qwen3_next",
    "vocab_size": 151936,
    "hidden_size": 2048,
    "intermediate_size": 5120,
    "num_hidden_layers": 48,
    "layer_types": BLOCK * 12,
    "full_attention_interval": 4,
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "head_dim": 256,
    "partial_rotary_factor": 0.25,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 32,
    "num_experts": 128,  # 512 in the published model
    "num_experts_per_tok": 10,
    "norm_topk_prob": True,
    "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 512,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "max_position_embeddings": 262144,
    "rope_theta": 10000000.0,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False,
    "bos_token_id": 151643,
    "eos_token_id": 151645,
    "torch_dtype": "bfloat16",
    "num_nextn_predict_layers": 1,
}


@dataclass(frozen=True)
class Shape:
    name: str
    about: str
    text: dict  # the text model's config
    wrapper: str | None  # model_type the text config is nested under (Qwen3.5's checkpoints)
    # The multimodal class that wraps the same text model, for releases without the text-only one
    multimodal_architecture: str | None
    # A fixed KV size, the same for both arms: room for 64 requests of 640+ tokens with their
    # recurrent states, speculative slots included (a GDN layer's state is heads x 128 x 128 per
    # request). Too small, vLLM runs fewer requests at once than asked: its log's "Maximum
    # concurrency" line, which lab.steps bench-ab poll prints, is the check.
    kv_cache_gib: float

    @property
    def vocab(self) -> int:
        return int(self.text["vocab_size"])


SHAPES: dict[str, Shape] = {
    s.name: s
    for s in (
        Shape(
            "qwen3_5-9b",
            "Qwen3.5-9B-like, dense",
            _qwen3_5_text(4096, 32, 12288, 16, 32),
            "qwen3_5",
            QWEN3_5_MULTIMODAL,
            10.0,
        ),
        Shape(
            "qwen3_6-27b",
            "Qwen3.6-27B-like, dense",
            _qwen3_5_text(5120, 64, 17408, 24, 48),
            "qwen3_5",
            QWEN3_5_MULTIMODAL,
            16.0,
        ),
        Shape(
            "qwen3_next-80b-e128",
            "Qwen3-Next-80B-A3B-like MoE, 128 of its 512 experts",
            QWEN3_NEXT_80B_E128,
            None,
            None,
            16.0,
        ),
    )
}


def parameters(text: dict) -> int:
    """The number of weights of a text config (embeddings, decoder layers, one MTP layer left
    out): to check a shape's size, and what fits on a GPU."""
    h, layers, v = text["hidden_size"], text["num_hidden_layers"], text["vocab_size"]
    total = v * h * (1 if text.get("tie_word_embeddings") else 2)
    if "num_experts" in text:
        e, inner, shared = text["num_experts"], text["moe_intermediate_size"], text["shared_expert_intermediate_size"]
        mlp = 3 * h * (e * inner + shared) + e * h + h
    else:
        mlp = 3 * h * text["intermediate_size"]
    qk = text["linear_num_key_heads"] * text["linear_key_head_dim"]
    vd = text["linear_num_value_heads"] * text["linear_value_head_dim"]
    gdn = h * (2 * qk + 2 * vd) + h * 2 * text["linear_num_value_heads"] + vd * h
    gdn += (2 * qk + vd) * text["linear_conv_kernel_dim"]
    hd, heads, kv = text["head_dim"], text["num_attention_heads"], text["num_key_value_heads"]
    attn = h * heads * hd * 2 + 2 * h * kv * hd + heads * hd * h
    kinds = text["layer_types"]
    total += kinds.count("linear_attention") * gdn + kinds.count("full_attention") * attn + layers * mlp
    return total


def architecture_for(shape: Shape, registered: set[str]) -> str:
    """The class to write `shape` as, for a vLLM whose registry holds `registered`."""
    return layout_for(shape.text["architectures"][0], shape.multimodal_architecture, registered)


def write(directory: Path, shape: Shape, config: dict | None = None, architecture: str | None = None) -> Path:
    """config.json for vLLM to build `shape` from (or `config` as given, verbatim), as
    `architecture` (architecture_for; default the text-only class); no weights. Rewritten only
    when it differs, so a directory is shared by every engine of a run."""
    if config is None:
        config = dict(shape.text)
        architecture = architecture or config["architectures"][0]
        # the multimodal layout nests the text config, as the wrapper does
        if architecture not in (config["architectures"][0], shape.wrapper and shape.multimodal_architecture):
            raise ValueError(f"{shape.name} is not written as {architecture}")
        if shape.wrapper:
            # as Qwen3.5's checkpoints (verify.model.nest_config): vLLM sets up MTP from the wrapper
            config = {
                "architectures": [architecture],
                "model_type": shape.wrapper,
                "tie_word_embeddings": config["tie_word_embeddings"],
                "mtp_num_hidden_layers": config["mtp_num_hidden_layers"],
                "text_config": {k: v for k, v in config.items() if k != "architectures"},
            }
            if architecture == shape.multimodal_architecture:
                # never built (language_model_only): only what vLLM reads to set the tower up
                config["vision_config"] = VISION_CONFIG | {"out_hidden_size": shape.text["hidden_size"]}
    text = json.dumps(config, indent=2, sort_keys=True) + "\n"
    path = directory / "config.json"
    if not path.exists() or path.read_text() != text:
        directory.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return directory

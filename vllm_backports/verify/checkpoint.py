"""The local checkpoint `verify --model` judges: is it a hybrid Gated-DeltaNet model, and what it
holds. Read from its files alone (config.json, generation_config.json, the weights' names), with
no torch and no vLLM, so that a wrong path is refused before anything starts."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from .model import MODEL_CLASSES

# model_type -> family. Qwen3.6 checkpoints use Qwen3.5's classes; a multimodal Qwen3.5 config
# nests the text model's config (model_type *_text) under "text_config".
FAMILIES = {
    "qwen3_next": "Qwen3-Next",
    "qwen3_5": "Qwen3.5",
    "qwen3_5_text": "Qwen3.5",
    "qwen3_5_moe": "Qwen3.5 MoE",
    "qwen3_5_moe_text": "Qwen3.5 MoE",
    # Kimi K3's text model: KDA (Kimi Delta Attention, a gated delta rule) beside MLA; kimi.py
    # writes a tiny one
    "kimi_linear": "Kimi Linear",
}
# The config fields that make vLLM build MTP layers (Qwen3-Next; Qwen3.5), at the top or nested.
MTP_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers")
WEIGHT_PATTERNS = ("*.safetensors", "*.bin")


@dataclass(frozen=True)
class Checkpoint:
    path: Path
    architecture: str | None
    model_type: str
    family: str
    mtp_layers: int
    max_positions: int | None
    eos_token_ids: tuple[int, ...]  # generation_config.json's, else config.json's
    weight_bytes: int
    # The tiny model's class whose transformers model reads this checkpoint (the float32
    # cross-check); None for any other architecture.
    model_class: str | None

    def describe(self) -> dict:
        return {
            "path": str(self.path),
            "architecture": self.architecture,
            "model_type": self.model_type,
            "family": self.family,
            "mtp_layers": self.mtp_layers,
            "max_positions": self.max_positions,
            "weight_gib": round(self.weight_bytes / 2**30, 2),
        }


def _json(path: Path, where: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"--model {where}: {path.name} does not read as JSON ({exc})") from None
    if not isinstance(data, dict):
        raise UsageError(f"--model {where}: {path.name} is not a JSON object")
    return data


def _ids(value) -> tuple[int, ...]:
    if isinstance(value, bool):
        return ()
    if isinstance(value, int):
        return (value,)
    if isinstance(value, list):
        return tuple(v for v in value if isinstance(v, int) and not isinstance(v, bool))
    return ()


def _count(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def inspect(path: Path) -> Checkpoint:
    """The checkpoint at `path`, or a one-line UsageError saying why verify cannot judge it."""
    if not path.is_dir():
        raise UsageError(f"--model {path}: no such directory (a local Hugging Face checkpoint is needed)")
    if not (path / "config.json").is_file():
        raise UsageError(f"--model {path}: no config.json (a local Hugging Face checkpoint is needed)")
    config = _json(path / "config.json", path)
    nested = config.get("text_config")
    text = nested if isinstance(nested, dict) else config
    architecture = (config.get("architectures") or [None])[0]
    types = [t for t in (config.get("model_type"), text.get("model_type")) if isinstance(t, str)]
    family = next((FAMILIES[t] for t in types if t in FAMILIES), None)
    layer_types = text.get("layer_types")
    if family is None or (isinstance(layer_types, list) and "linear_attention" not in layer_types):
        what = architecture or (types[0] if types else "a model of no model_type")
        raise UsageError(
            f"--model {path}: {what} is not a hybrid Gated-DeltaNet model "
            "(verify --model judges Qwen3-Next, Qwen3.5, Qwen3.6 and Kimi Linear checkpoints)"
        )
    weights = sorted({p for pattern in WEIGHT_PATTERNS for p in path.glob(pattern)})
    if not weights:
        raise UsageError(f"--model {path}: no weights (*.safetensors) beside its config.json")
    generation = path / "generation_config.json"
    eos = _ids(_json(generation, path).get("eos_token_id")) if generation.is_file() else ()
    eos = eos or _ids(text.get("eos_token_id")) or _ids(config.get("eos_token_id"))
    positions = text.get("max_position_embeddings")
    return Checkpoint(
        path=path,
        architecture=architecture,
        model_type=types[0],
        family=family,
        mtp_layers=max(_count(d.get(k)) for d in (config, text) for k in MTP_KEYS),
        max_positions=positions if isinstance(positions, int) and positions > 0 else None,
        eos_token_ids=eos,
        weight_bytes=sum(p.stat().st_size for p in weights),
        model_class=next((c.name for c in MODEL_CLASSES.values() if c.transformers_model == architecture), None),
    )

"""A checkpoint directory for `verify --model` tests without a GPU: a config, a weights file of
nothing (every check before an engine starts reads only names and sizes) and, optionally, the
tiny model's tokenizer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from vllm_backports.verify import model


def fake_checkpoint(where: Path, tokenizer_dir: Path | None = None, config: dict | None = None) -> Path:
    where.mkdir(parents=True)
    (where / "config.json").write_text(json.dumps(model.CONFIG if config is None else config))
    (where / "model.safetensors").write_bytes(b"")
    for f in tokenizer_dir.iterdir() if tokenizer_dir else ():
        shutil.copy(f, where / f.name)
    return where

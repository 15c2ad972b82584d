"""A checkpoint directory for `verify --model` tests without a GPU: a config, a weights file of
nothing (every check before an engine starts reads only names and sizes) and, optionally, the
tiny model's tokenizer. Its fixtures are shared through tests/conftest.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vllm_backports.verify import model


def fake_checkpoint(where: Path, tokenizer_dir: Path | None = None, config: dict | None = None) -> Path:
    where.mkdir(parents=True)
    (where / "config.json").write_text(json.dumps(model.CONFIG if config is None else config))
    (where / "model.safetensors").write_bytes(b"")
    for f in tokenizer_dir.iterdir() if tokenizer_dir else ():
        shutil.copy(f, where / f.name)
    return where


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory) -> Path:
    """The tiny model's tokenizer, written once a session."""
    pytest.importorskip("tokenizers")
    pytest.importorskip("transformers")
    from vllm_backports.verify import tokenizer

    return tokenizer.write_tokenizer(tmp_path_factory.mktemp("tokenizer"), model.vocab_size())


@pytest.fixture
def checkpoint_dir(tmp_path, tokenizer_dir) -> Path:
    """The tiny Qwen3-Next's config (no MTP layer), no weights to speak of, the tiny tokenizer."""
    return fake_checkpoint(tmp_path / "ckpt", tokenizer_dir)

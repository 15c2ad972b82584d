"""The tiny model's tokenizer, written by code (nothing can be downloaded), and the checkpoint
`python -m vllm_backports.verify.tokenizer DIR` writes for `verify --model` on a GPU."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from vllm_backports.verify import model

pytest.importorskip("tokenizers")
pytest.importorskip("transformers")

from vllm_backports.verify import checkpoint, prompts, tokenizer


def test_the_special_tokens_sit_at_the_ids_the_models_config_names(tokenizer_dir):
    tok, _ = prompts.load_tokenizer(tokenizer_dir)
    assert tok.convert_tokens_to_ids(list(tokenizer.SPECIAL)) == [0, 1, 2]
    assert tok.eos_token_id == model.CONFIG["eos_token_id"] == 1
    assert tok.pad_token_id == model.CONFIG["bos_token_id"] == 0
    assert len(tok) <= model.vocab_size()


def test_training_is_deterministic_and_every_text_encodes_and_decodes(tokenizer_dir):
    again = tokenizer.build(model.vocab_size())
    assert json.loads(again.to_str()) == json.loads((tokenizer_dir / "tokenizer.json").read_text())
    text = "naïve café, 東京 — ```rm -rf``` \t\n"  # byte-level: nothing is unknown
    ids = again.encode(text).ids
    assert again.decode(ids) == text and all(i < model.vocab_size() for i in ids)


def test_the_config_is_one_transformers_4_and_5_both_read(tokenizer_dir):
    config = json.loads((tokenizer_dir / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast" and config["chat_template"] == tokenizer.CHAT_TEMPLATE


def test_the_written_checkpoint_is_the_verify_model_with_a_tokenizer_and_passes_every_check(tmp_path):
    pytest.importorskip("torch")
    out = subprocess.run([sys.executable, "-m", "vllm_backports.verify.tokenizer", str(tmp_path / "t"), "--mtp"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == str(tmp_path / "t")
    ck = checkpoint.inspect(tmp_path / "t")
    assert (ck.family, ck.mtp_layers, ck.model_class, ck.eos_token_ids) == ("Qwen3-Next", 1, "qwen3_next", (1,))
    stamp = json.loads((tmp_path / "t" / "verify-config.json").read_text())
    assert stamp["mtp"] is True and stamp["seed"] == model.SEED  # the weights `apply.py verify --preset mtp` runs
    tok, template = prompts.load_tokenizer(tmp_path / "t")
    _, records = prompts.load(None)
    ids = prompts.render(records, tok, template, "built-in", tmp_path / "t")
    assert max(map(len, ids)) + 256 < ck.max_positions

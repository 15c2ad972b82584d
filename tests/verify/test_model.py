"""The checkpoint verify writes: needs torch and transformers, so it runs where they are (the GPU
machine, a dev venv) and is skipped in the slim CI venv."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers")
safetensors = pytest.importorskip("safetensors")

from vllm_backports.verify import model  # noqa: E402


def _shapes(directory, prefix):
    out = {}
    for shard in directory.glob("*.safetensors"):
        with safetensors.safe_open(str(shard), "pt") as f:
            out.update({k: tuple(f.get_slice(k).get_shape()) for k in f.keys() if k.startswith(prefix)})
    return out


def test_mtp_layer_is_shaped_like_a_full_attention_layer_of_the_target(tmp_path):
    d = model.write_model(tmp_path / "m", mtp=True)
    target = {k.removeprefix("model.layers.3."): v for k, v in _shapes(d, "model.layers.3.").items()}
    drafter = {k.removeprefix("mtp.layers.0."): v for k, v in _shapes(d, "mtp.layers.0.").items()}
    assert target and drafter == target
    hidden = model.CONFIG["hidden_size"]
    assert _shapes(d, "mtp.fc.")["mtp.fc.weight"] == (hidden, 2 * hidden)
    index = json.loads((d / "model.safetensors.index.json").read_text())
    assert set(_shapes(d, "")) == set(index["weight_map"])
    assert json.loads((d / "config.json").read_text())["num_nextn_predict_layers"] == 1


def test_plain_checkpoint_has_no_mtp_and_is_rewritten_when_mtp_is_asked(tmp_path):
    d = model.write_model(tmp_path / "m")
    assert not _shapes(d, "mtp.")
    model.write_model(tmp_path / "m", mtp=True)
    assert _shapes(d, "mtp.")
    model.write_model(tmp_path / "m")
    assert not _shapes(d, "mtp.") and not (d / "model.safetensors.index.json").exists()


def test_mtp_checkpoint_makes_the_last_token_predict_most_of_the_next(tmp_path):
    """What lets MTP drafts be accepted: on the MTP checkpoint, in float32, most greedy tokens are
    the one the previous token's embedding alone points to (what the MTP layer drafts), and some
    are not (those still depend on the context, so a stale state can still show)."""
    import torch
    from transformers import Qwen3NextForCausalLM

    d = model.write_model(tmp_path / "m", mtp=True)
    with safetensors.safe_open(str(d / "model-mtp.safetensors"), "pt") as f:
        fc = f.get_tensor("mtp.fc.weight").float()
    hidden = model.CONFIG["hidden_size"]
    assert torch.equal(fc[:, :hidden], torch.eye(hidden) * model.MTP_FC_GAIN)
    assert not fc[:, hidden:].any()

    m = Qwen3NextForCausalLM.from_pretrained(d, torch_dtype=torch.float32).eval()
    with torch.no_grad():
        points_to = m.lm_head(m.model.norm(m.model.embed_tokens.weight)).argmax(-1)
        gen = torch.Generator().manual_seed(1)
        follows = total = 0
        for _ in range(3):
            ids = torch.randint(2, model.vocab_size(), (1, 16), generator=gen)
            out = m.generate(ids, max_new_tokens=32, do_sample=False, attention_mask=torch.ones_like(ids))[0]
            follows += int((points_to[out[15:-1]] == out[16:]).sum())
            total += out.numel() - 16
    assert 0.5 <= follows / total <= 0.9, follows / total

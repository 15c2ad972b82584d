"""The V2 model runner's hybrid model state (vllm/v1/worker/gpu/model_states/mamba_hybrid.py) of
the installed release, pristine and with its series applied, run on the CPU: which draft counts
`prepare_attn` hands each metadata builder, and where the GDN builder then sends a decode row
that got no drafts. Needs torch and a release `gdn-spec-state-v2-runner` serves (0.29.0 ..
0.31.0; skipped elsewhere). These releases cannot run on our GPU machine (torch 2.13), so this is
the V2 half's only test beyond applying cleanly."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from . import gdn_builder, installed

torch, RELEASE = installed.served("gdn-spec-state-v2-runner")
import numpy as np  # noqa: E402  (after the skip: numpy comes with torch and vLLM)

STATE = "vllm/v1/worker/gpu/model_states/mamba_hybrid.py"
K = gdn_builder.K


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("v2")
    with pytest.MonkeyPatch.context() as mp, gdn_builder.cpu_only(mp):
        yield {
            "pristine": installed.load(tmp, RELEASE, STATE, False),
            "patched": installed.load(tmp, RELEASE, STATE, True),
            "gdn": gdn_builder.modules(tmp, RELEASE)["patched"],
        }


def _prepare(module, query_lens: list[int], drafts: list[int] | None, prefilling: list[bool], accepted: list[int]):
    """MambaHybridModelState.prepare_attn on a stand-in runner and batch; returns the model
    specific metadata it hands build_attn_metadata."""
    from vllm.config.compilation import CUDAGraphMode

    n = len(query_lens)
    q = np.concatenate([[0], np.cumsum(query_lens)]).astype(np.int32)
    seq_lens = torch.tensor([40 + 4 * r + query_lens[r] for r in range(n)], dtype=torch.int32)
    batch = SimpleNamespace(
        num_reqs=n,
        num_reqs_after_padding=n,
        num_tokens=int(q[-1]),
        num_tokens_after_padding=int(q[-1]),
        query_start_loc_np=q,
        query_start_loc=torch.from_numpy(q),
        num_scheduled_tokens=np.array(query_lens, dtype=np.int32),
        max_query_len=max(query_lens),
        seq_lens=seq_lens,
        seq_lens_cpu_upper_bound=seq_lens.clone(),
        is_prefilling_np=np.array(prefilling),
        prefill_runs_as_decode_np=np.zeros(n, dtype=bool),
        idx_mapping=torch.arange(n),
        num_draft_tokens_per_req=None if drafts is None else np.array(drafts, dtype=np.int32),
        dcp_local_seq_lens=None,
        prompt_lens=None,
        positions=None,
    )
    runner = SimpleNamespace(
        vllm_config=SimpleNamespace(num_speculative_tokens=K),
        _align_mode=False,
        max_model_len=512,
        num_accepted_tokens_gpu=torch.tensor(accepted, dtype=torch.int32),
        recoverssm=None,
    )
    captured = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(module, "build_attn_metadata", lambda **kw: captured.update(kw) or {})
        module.MambaHybridModelState.prepare_attn(runner, batch, CUDAGraphMode.NONE, (), torch.empty(0), [], None)
    return captured["model_specific_attn_metadata"]


def _counts(module, meta, builder_class: str, n: int) -> list[int]:
    builder = object.__new__(getattr(module, builder_class))  # only its type is read
    return meta.get_extra_attn_kwargs(builder, n)["num_decode_draft_tokens_cpu"].tolist()


# Row 0 has K drafts; row 1 decodes with none (its last step accepted 4 tokens: its state is in
# slot 3); row 2 is a prompt chunk.
STEP = dict(query_lens=[K + 1, 1, 5], drafts=[K, 0, 0], prefilling=[False, False, True], accepted=[2, 4, 1])


def test_patched_state_hands_the_gdn_builder_the_draft_free_row_as_a_speculative_row(modules):
    meta = _prepare(modules["patched"], **STEP)
    assert _counts(modules["patched"], meta, "GDNAttentionMetadataBuilder", 3) == [K, 0, -1]
    # Mamba2 (and the subclasses of GDN's builder with routing of their own) keep the stock counts.
    assert _counts(modules["patched"], meta, "Mamba2AttentionMetadataBuilder", 3) == [K, -1, -1]


def test_pristine_state_sends_it_down_the_plain_path(modules):
    """The bug on the release's own code: row 1 is not a speculative row, so it reads slot 0."""
    meta = _prepare(modules["pristine"], **STEP)
    assert _counts(modules["pristine"], meta, "GDNAttentionMetadataBuilder", 3) == [K, -1, -1]


def test_a_step_without_any_drafts_keeps_its_decode_rows_speculative(modules):
    for drafts in ([0, 0, 0], None):  # zero counts, or none at all (no draft scheduled this step)
        step = dict(STEP, query_lens=[1, 1, 5], drafts=drafts)
        patched = _counts(modules["patched"], _prepare(modules["patched"], **step), "GDNAttentionMetadataBuilder", 3)
        pristine = _counts(modules["pristine"], _prepare(modules["pristine"], **step), "GDNAttentionMetadataBuilder", 3)
        assert pristine == [-1, -1, -1]
        assert patched == [0, 0, -1], drafts


def test_the_gdn_builder_then_reads_the_slot_the_last_acceptance_left(modules):
    meta = _prepare(modules["patched"], **STEP)
    counts = torch.tensor(_counts(modules["patched"], meta, "GDNAttentionMetadataBuilder", 3), dtype=torch.int32)
    built = gdn_builder.builder(torch, modules["gdn"]).build(
        0, gdn_builder.batch(torch, STEP["query_lens"], [40, 44, 0]),
        num_accepted_tokens=torch.tensor(STEP["accepted"], dtype=torch.int32), num_decode_draft_tokens_cpu=counts)
    assert built.num_spec_decodes == 2 and built.num_prefills == 1
    assert built.num_accepted_tokens.tolist() == [2, 4]  # row 1 goes on from slot 4 - 1 = 3

"""The GDN metadata builder of the installed vLLM release, pristine and with its series applied,
run on the CPU: which rows the speculative path gets and which accepted counts they carry.

Needs torch and the vLLM release that versions.toml serves (its pristine gdn_attn.py, checked
against the sha256 versions.toml pins); skipped elsewhere. Kernels are not run: the builder's
routing is plain tensor work, so this runs in a CPU-only venv with vLLM installed.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
from types import SimpleNamespace

import pytest

from . import installed

torch, RELEASE = installed.served("gdn-spec-state")
BUILDER = "vllm/v1/attention/backends/gdn_attn.py"
K = 3  # num_speculative_tokens


def _load(tmp_path, patched: bool):
    return installed.load(tmp_path, RELEASE, BUILDER, patched)


def _builder(module, speculative: bool = True):
    from vllm.v1.kv_cache_interface import MambaSpec

    config = SimpleNamespace(
        compilation_config=SimpleNamespace(cudagraph_mode=SimpleNamespace(has_full_cudagraphs=lambda: False),
                                           max_cudagraph_capture_size=None),
        speculative_config=SimpleNamespace(num_speculative_tokens=K, method="ngram", parallel_drafting=False)
        if speculative else None,
        scheduler_config=SimpleNamespace(max_num_seqs=8),
        cache_config=SimpleNamespace(mamba_cache_mode="none"),
        parallel_config=SimpleNamespace(decode_context_parallel_size=1),
        # From about 0.26 the builder resolves its prefill backend, which on a CUDA host reads the
        # model's head size; Triton is the backend whose routing these tests describe.
        additional_config={"gdn_prefill_backend": "triton"},
        model_config=SimpleNamespace(hf_text_config=SimpleNamespace(linear_key_head_dim=128)),
        use_v2_model_runner=False,
    )
    spec = object.__new__(MambaSpec)  # the builder only checks its type in "none" cache mode
    return module.GDNAttentionMetadataBuilder(spec, ["layer"], config, torch.device("cpu"))


def _batch(query_lens: list[int], computed: list[int]):
    from vllm.v1.attention.backend import CommonAttentionMetadata

    q = torch.tensor([0, *query_lens]).cumsum(0).to(torch.int32)
    seq_lens = torch.tensor([c + n for c, n in zip(computed, query_lens, strict=True)], dtype=torch.int32)
    rows = len(query_lens)
    # Row r's state slots are 10r .. 10r+K: the builder hands out rows of this table.
    table = torch.tensor([[10 * r + j for j in range(K + 1)] for r in range(rows)], dtype=torch.int32)
    fields = dict(
        query_start_loc=q, query_start_loc_cpu=q.clone(), seq_lens=seq_lens, num_reqs=rows,
        num_actual_tokens=int(q[-1]), max_query_len=max(query_lens), max_seq_len=int(seq_lens.max()),
        block_table_tensor=table, slot_mapping=torch.zeros(int(q[-1]), dtype=torch.int64),
        # Host copies that releases up to about 0.30 carry and later ones derive.
        _seq_lens_cpu=seq_lens.clone(), _num_computed_tokens_cpu=seq_lens - torch.tensor(query_lens, dtype=torch.int32),
        seq_lens_cpu_upper_bound=seq_lens.clone(),
    )
    known = {f.name for f in dataclasses.fields(CommonAttentionMetadata) if f.init}
    return CommonAttentionMetadata(**{k: v for k, v in fields.items() if k in known})


def _build(module, query_lens, computed, drafts, accepted):
    return _builder(module).build(0, _batch(query_lens, computed),
                                  num_accepted_tokens=torch.tensor(accepted, dtype=torch.int32),
                                  num_decode_draft_tokens_cpu=torch.tensor(drafts, dtype=torch.int32))


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    from vllm.triton_utils import triton

    tmp = tmp_path_factory.mktemp("gdn")
    with pytest.MonkeyPatch.context() as mp:
        # Without a GPU driver vLLM swaps Triton for a placeholder; the builder's prompt-chunk
        # bookkeeping only needs its ceiling division.
        if not hasattr(triton, "cdiv"):
            mp.setattr(triton, "cdiv", lambda a, b: -(-a // b), raising=False)
        # Later releases pin host buffers before copying them to the device; there is none here.
        # Modules imported earlier in the session (by other release tests) hold their own copy.
        importlib.import_module("vllm.utils.torch_utils")
        for name, module in list(sys.modules.items()):
            if name.startswith("vllm.") and getattr(module, "PIN_MEMORY", False) is True:
                mp.setattr(module, "PIN_MEMORY", False)
        yield {"pristine": _load(tmp, False), "patched": _load(tmp, True)}


# The step after an acceptance: row 0 has 3 drafts, row 1 got none (it accepted 3 drafts last
# step: its current state is in slot 3), row 2 is a prompt chunk. Each side gets what its runner
# hands the builder: the patched runner marks row 1 as a row with 0 drafts, the pristine runner
# as -1 (no draft row). That marking is the runner's half of the fix; these tests take it as given
# and check the builder's half: what the marked rows become.
MIXED = dict(query_lens=[K + 1, 1, 5], computed=[40, 44, 0], accepted=[2, 4, 1])


def test_patched_builder_routes_a_draft_free_decode_to_the_slot_its_last_acceptance_left(modules):
    meta = _build(modules["patched"], drafts=[K, 0, -1], **MIXED)
    assert meta.num_spec_decodes == 2 and meta.num_prefills == 1
    assert meta.spec_sequence_masks.tolist() == [True, True, False]
    assert meta.num_accepted_tokens.tolist() == [2, 4]  # row 1 starts from slot 4-1 = 3
    assert meta.spec_state_indices_tensor[1].tolist() == [10, 11, 12, 13]
    assert meta.non_spec_state_indices_tensor.tolist() == [20]  # the prompt chunk keeps slot 0
    # Tokens: row 0's four, then row 1's one are speculative; row 2's five are not.
    assert meta.spec_token_indx.tolist() == [0, 1, 2, 3, 4]
    assert meta.non_spec_token_indx.tolist() == [5, 6, 7, 8, 9]


def test_pristine_builder_sends_the_same_row_down_the_plain_path_from_slot_0(modules):
    """The bug the backport fixes, shown on the release's own code: row 1 reads slot 0 (0.17.x
    does not get that far: a plain decode beside a speculative one trips its assert, #38196)."""
    if "gdn-mixed-batch-assert" in RELEASE.backports:
        with pytest.raises(AssertionError, match="num_decodes"):
            _build(modules["pristine"], drafts=[K, -1, -1], **MIXED)
        return
    meta = _build(modules["pristine"], drafts=[K, -1, -1], **MIXED)
    assert meta.spec_sequence_masks.tolist() == [True, False, False]
    assert meta.non_spec_state_indices_tensor.tolist() == [10, 20]


def test_a_step_without_any_drafts_still_reads_the_accepted_slots(modules):
    """The pristine builder drops to the plain path when no row has a draft, even when the rows
    are marked; the patched one keeps them on the speculative path."""
    patched = _build(modules["patched"], query_lens=[1, 1], computed=[50, 60], drafts=[0, 0], accepted=[3, 1])
    assert patched.num_spec_decodes == 2 and patched.num_accepted_tokens.tolist() == [3, 1]
    pristine = _build(modules["pristine"], query_lens=[1, 1], computed=[50, 60], drafts=[0, 0], accepted=[3, 1])
    assert pristine.num_spec_decodes == 0 and pristine.num_accepted_tokens is None


def test_rows_whose_query_is_not_drafts_plus_one_stay_on_the_plain_path(modules):
    """Dummy and profiling batches: query lengths beside a zero-filled draft buffer."""
    meta = _build(modules["patched"], query_lens=[K + 1, 2], computed=[0, 0], drafts=[0, 0], accepted=[1, 1])
    assert meta.num_spec_decodes == 0 and meta.spec_sequence_masks is None


def test_without_speculation_the_patched_builder_builds_what_the_pristine_one_does(modules):
    """The no-speculation speed target (patched / unpatched >= 0.99) rests on this: with no
    speculative config the series changes nothing the builder hands the kernels."""
    batch = dict(query_lens=[1, 1, 5], computed=[40, 44, 0])
    pristine, patched = (_builder(modules[side], speculative=False).build(0, _batch(**batch))
                         for side in ("pristine", "patched"))
    for field in dataclasses.fields(pristine):
        a, b = getattr(pristine, field.name), getattr(patched, field.name)
        assert _same(a, b), field.name


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and torch.equal(a, b)
    if dataclasses.is_dataclass(a) and type(a) is type(b):
        return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b

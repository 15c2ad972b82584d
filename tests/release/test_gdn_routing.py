"""The GDN metadata builder of the installed vLLM release, pristine and with its series applied,
run on the CPU: which rows the speculative path gets and which accepted counts they carry.

Needs torch and the vLLM release that versions.toml serves (its pristine gdn_attn.py, checked
against the sha256 versions.toml pins); skipped elsewhere. Kernels are not run: the builder's
routing is plain tensor work, so this runs in a CPU-only venv with vLLM installed.
"""

from __future__ import annotations

import dataclasses

import pytest

from . import gdn_builder, installed

torch, RELEASE = installed.served("gdn-spec-state")
K = gdn_builder.K


def _builder(module, speculative: bool = True):
    return gdn_builder.builder(torch, module, speculative)


def _batch(query_lens: list[int], computed: list[int]):
    return gdn_builder.batch(torch, query_lens, computed)


def _build(module, query_lens, computed, drafts, accepted):
    return _builder(module).build(0, _batch(query_lens, computed),
                                  num_accepted_tokens=torch.tensor(accepted, dtype=torch.int32),
                                  num_decode_draft_tokens_cpu=torch.tensor(drafts, dtype=torch.int32))


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp, gdn_builder.cpu_only(mp):
        yield gdn_builder.modules(tmp_path_factory.mktemp("gdn"), RELEASE)


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
        assert gdn_builder.same(torch, a, b), field.name
    assert gdn_builder.same(torch, pristine, patched)

"""The align-mode shift count without a GPU: the host's repeat of the fused postprocess's decision
(tests/release/test_verify_hooks.py holds it to each release's own kernel), the summary, and the
hook on a stand-in for the release's mamba_utils."""

from __future__ import annotations

import sys
import types
from array import array
from types import SimpleNamespace

import pytest

from vllm_backports.verify import shifts

# (block size, the state's block, scheduled, computed, drafts, accepted): blocks of 8 tokens
CASES = [
    # running state 7 tokens (5 computed + 3 scheduled - 1 draft); 1 accepted: block 0 not complete
    ((8, 0, 3, 5, 1, 1), ("none", 0)),
    # 2 accepted complete block 0, where the state already is: the window moves 1 row within it
    ((8, 0, 3, 5, 1, 2), ("shift", 1)),
    # the same step with the state in another block: a copy between blocks
    ((8, 1, 3, 5, 1, 2), ("cross", 1)),
    # running 5, 4 accepted: 3 rows past the state
    ((8, 0, 4, 4, 3, 4), ("shift", 3)),
    # running 8: the state is at the block's end already, the copy to itself is skipped
    ((8, 0, 4, 7, 3, 2), ("in-place", 0)),
    # running 9, nothing accepted past it: no block completes
    ((8, 1, 1, 8, 0, 1), ("none", 0)),
]


@pytest.mark.parametrize(("row", "expected"), CASES)
def test_the_decision_follows_the_block_the_accepted_tokens_complete(row, expected):
    assert shifts.decide(*row) == expected


def serving() -> shifts.Record:
    record = shifts.Record()
    record.serving()
    return record


def buffers(widths: list[int] | None = None, **columns: list[int]) -> SimpleNamespace:
    """A stand-in for MambaSpecDecodeGPUContext: each staged input a buffer whose host view is .np;
    `widths`, the conv widths the kernel's first call binds (0 for temporal states)."""
    names = dict(zip(("src", "scheduled", "computed", "drafts"), shifts.INPUTS, strict=True))
    bound = {} if widths is None else {"state_conv_widths": array("i", widths), "is_initialized": True}
    return SimpleNamespace(
        block_size=8, **bound, **{names[k]: SimpleNamespace(np=array("i", v)) for k, v in columns.items()}
    )


def test_a_step_counts_each_request_by_what_the_kernel_does_with_it():
    record = serving()
    rows = list(zip(*(row for row, _ in CASES), strict=True))[1:]
    ctx = buffers(src=list(rows[0]), scheduled=list(rows[1]), computed=list(rows[2]), drafts=list(rows[3]))
    shifts.observe(record, ctx, num_reqs=len(CASES), accepted_gpu=array("i", rows[4]))
    s = shifts.summarise(record)
    assert s["status"] == "counted" and (s["steps"], s["rows"]) == (1, len(CASES))
    assert (s["cross_block_copies"], s["in_place"], s["in_block_shifts"]) == (1, 1, {"1": 1, "3": 1})


def test_only_the_first_num_reqs_rows_are_the_steps():
    record = serving()
    ctx = buffers(src=[0, 0], scheduled=[3, 3], computed=[5, 5], drafts=[1, 1])
    shifts.observe(record, ctx, num_reqs=1, accepted_gpu=array("i", [2, 2]))
    shifts.observe(record, ctx, num_reqs=0, accepted_gpu=array("i", [2, 2]))  # no request: not a step
    assert shifts.summarise(record)["in_block_shifts"] == {"1": 1} and record.requests.steps == 1


def test_start_up_steps_are_kept_apart():
    record = shifts.Record()
    ctx = buffers(src=[0], scheduled=[3], computed=[5], drafts=[1])
    shifts.observe(record, ctx, 1, array("i", [2]))
    s = shifts.summarise(record)
    assert s["status"] == "not seen" and "align postprocess" in s["why"] and s["startup"]["in_block_shifts"] == {"1": 1}
    record.serving()
    shifts.observe(record, ctx, 1, array("i", [1]))
    s = shifts.summarise(record)
    assert s["status"] == "counted" and s["in_block_shifts"] == {} and s["steps"] == 1


def test_a_context_without_the_staged_inputs_says_which_it_lacks():
    record = serving()
    ctx = buffers(src=[0], scheduled=[3], computed=[5])
    shifts.observe(record, ctx, 1, array("i", [2]))
    s = shifts.summarise(record)
    assert s["status"] == "not seen" and s["why"] == "the align context has no num_draft_tokens_buf"


def test_no_hook_is_said_not_left_silent():
    assert shifts.summarise(None, "no such function") == {"status": "unavailable", "why": "no such function"}


@pytest.fixture
def mamba_utils(monkeypatch):
    """A stand-in for vllm.v1.worker.mamba_utils whose postprocess records what it was handed."""
    module = types.ModuleType(shifts.MODULE)
    calls: list[dict] = []

    def postprocess(*, bufs, num_reqs, num_accepted_tokens_gpu, input_batch=None):
        calls.append({"num_reqs": num_reqs, "input_batch": input_batch})

    setattr(module, shifts.FUNCTION, postprocess)
    module.calls = calls
    monkeypatch.setitem(sys.modules, shifts.MODULE, module)
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    return module


def test_the_hook_counts_and_hands_everything_on(mamba_utils):
    record, why = shifts.install()
    assert why is None
    record.serving()
    ctx = buffers(src=[0], scheduled=[3], computed=[5], drafts=[1])
    getattr(mamba_utils, shifts.FUNCTION)(
        bufs=SimpleNamespace(postprocess_align=ctx), num_reqs=1, num_accepted_tokens_gpu=array("i", [2]), input_batch="b"
    )
    assert mamba_utils.calls == [{"num_reqs": 1, "input_batch": "b"}]
    assert shifts.summarise(record)["in_block_shifts"] == {"1": 1}


def test_buffers_without_the_align_context_are_said(mamba_utils):
    record, _ = shifts.install()
    record.serving()
    getattr(mamba_utils, shifts.FUNCTION)(bufs=SimpleNamespace(), num_reqs=1, num_accepted_tokens_gpu=array("i", [2]))
    assert mamba_utils.calls and shifts.summarise(record)["why"] == "the runner's buffers have no postprocess_align"


def test_a_release_without_the_fused_postprocess_says_so(monkeypatch, mamba_utils):
    delattr(mamba_utils, shifts.FUNCTION)
    record, why = shifts.install()
    assert record is None and f"has no {shifts.FUNCTION}" in why
    monkeypatch.setitem(sys.modules, shifts.MODULE, None)
    record, why = shifts.install()
    assert record is None and why.startswith(f"no {shifts.MODULE}")


def test_postprocesses_in_other_processes_are_not_claimed(monkeypatch, mamba_utils):
    assert "TP > 1" in shifts.install(tp=2)[1]
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "1")
    assert "another process" in shifts.install()[1]


def test_a_count_that_fails_is_said_and_the_step_still_runs(mamba_utils):
    record, _ = shifts.install()
    record.serving()
    ctx = buffers(src=[0], scheduled=[3], computed=[5], drafts=[1])
    getattr(mamba_utils, shifts.FUNCTION)(
        bufs=SimpleNamespace(postprocess_align=ctx), num_reqs=2, num_accepted_tokens_gpu=array("i", [2, 2])
    )
    assert mamba_utils.calls and shifts.summarise(record)["why"].startswith("reading the step failed: ValueError")


def test_shifts_of_fewer_rows_than_half_the_window_are_the_overlapping_ones():
    """GDN's window holds conv kernel - 1 + k rows: 6 with k=3. Rows b.. go to rows 0..: a shift of
    1 or 2 rows overlaps its own source, one of 3 does not."""
    record = serving()
    # running 7, 6 and 5 tokens, each completing block 0 (aligned 8) with its state in it
    ctx = buffers(widths=[6, 0, 6, 0], src=[0, 0, 0], scheduled=[3, 4, 4], computed=[5, 5, 4], drafts=[1, 3, 3])
    shifts.observe(record, ctx, num_reqs=3, accepted_gpu=array("i", [2, 3, 4]))
    s = shifts.summarise(record)
    assert s["in_block_shifts"] == {"1": 1, "2": 1, "3": 1}
    assert (s["conv_rows"], s["overlapping"]) == (6, 2)


def test_before_the_kernel_binds_its_widths_overlap_is_not_guessed():
    record = serving()
    shifts.observe(record, buffers(src=[0], scheduled=[3], computed=[5], drafts=[1]), 1, array("i", [2]))
    s = shifts.summarise(record)
    assert s["in_block_shifts"] == {"1": 1} and (s["conv_rows"], s["overlapping"]) == (None, None)


def test_a_step_that_could_not_be_read_is_said_beside_the_counts(mamba_utils):
    record, _ = shifts.install()
    record.serving()
    hook = getattr(mamba_utils, shifts.FUNCTION)
    ctx = buffers(src=[0], scheduled=[3], computed=[5], drafts=[1])
    hook(bufs=SimpleNamespace(postprocess_align=ctx), num_reqs=1, num_accepted_tokens_gpu=array("i", [2]))
    hook(bufs=SimpleNamespace(postprocess_align=ctx), num_reqs=2, num_accepted_tokens_gpu=array("i", [2, 2]))
    s = shifts.summarise(record)
    assert s["status"] == "counted" and s["unreadable"].startswith("reading the step failed")

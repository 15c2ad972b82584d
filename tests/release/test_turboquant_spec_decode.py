"""The TurboQuant metadata builder of the installed vLLM release, pristine and with its series
applied, run on the CPU: which rows count as decodes, and the per-token rows and causal lengths
that let the decode kernel serve speculative verify rows under full CUDA graphs; and the facts
about the release that `apply.py verify` keeps as data (its TurboQuant presets, where it refuses
them on hybrid models).

Needs torch and a vLLM release whose series carries turboquant-spec-decode (its pristine
turboquant_attn.py, checked against versions.toml); skipped elsewhere. Kernels are not run here:
tests/gpu/test_turboquant_spec_decode.py runs them.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from packaging.version import Version

from . import installed

torch, RELEASE = installed.served("turboquant-spec-decode")
import turboquant_case  # noqa: E402  (imports torch: after the skip)

BACKEND = "vllm/v1/attention/backends/turboquant_attn.py"
K = turboquant_case.K  # num_speculative_tokens


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tq")
    return {side: installed.load(tmp, RELEASE, BACKEND, side == "patched")
            for side in ("pristine", "patched")}


def _builder(module):
    return turboquant_case.builder(module, "cpu", max_num_batched_tokens=64, max_num_seqs=8)


def _batch(query_lens: list[int], seq_lens: list[int], padded_tokens: int | None = None):
    """A batch as the model runner hands it over. Padding (full CUDA graphs) appends requests of
    0 tokens and length 0, and tokens past the last request."""
    from vllm.v1.attention.backend import CommonAttentionMetadata

    q = torch.tensor([0, *query_lens]).cumsum(0).to(torch.int32)
    lens = torch.tensor(seq_lens, dtype=torch.int32)
    tokens = padded_tokens or int(q[-1])
    fields = dict(
        query_start_loc=q, query_start_loc_cpu=q.clone(), seq_lens=lens, num_reqs=len(query_lens),
        num_actual_tokens=tokens, max_query_len=max(query_lens), max_seq_len=int(lens.max()),
        block_table_tensor=torch.arange(len(query_lens) * 4, dtype=torch.int32).view(-1, 4),
        slot_mapping=torch.zeros(tokens, dtype=torch.int64),
        _seq_lens_cpu=lens.clone(), seq_lens_cpu_upper_bound=lens.clone(),
    )
    known = {f.name for f in dataclasses.fields(CommonAttentionMetadata) if f.init}
    return CommonAttentionMetadata(**{k: v for k, v in fields.items() if k in known})


def test_verify_rows_count_as_decodes_once_patched(modules):
    assert _builder(modules["pristine"]).reorder_batch_threshold == 1
    assert _builder(modules["patched"]).reorder_batch_threshold == K + 1


def test_a_verify_batch_goes_down_the_decode_path_one_row_per_token(modules):
    """Three requests verifying k=3 drafts, with 41, 8 and 101 tokens before this step's."""
    batch = _batch([K + 1] * 3, [44, 11, 104])
    meta = _builder(modules["patched"]).build(0, batch)
    assert (meta.is_prefill, meta.num_decodes, meta.num_decode_tokens) == (False, 3, 12)
    assert meta.decode_token_rows.tolist() == [0] * 4 + [1] * 4 + [2] * 4
    # Each token sees its request's context, the drafts before it and itself: causal.
    assert meta.decode_token_seq_lens.tolist() == [41, 42, 43, 44, 8, 9, 10, 11, 101, 102, 103, 104]


def test_pristine_sends_the_same_batch_to_the_per_request_prefill_loop(modules):
    """The route that full CUDA graphs cannot replay (vLLM #40880): a Python loop over host-side
    lengths, captured once with the capture batch's."""
    meta = _builder(modules["pristine"]).build(0, _batch([K + 1] * 3, [44, 11, 104]))
    assert meta.is_prefill and meta.num_decodes == 0


def test_mixed_decode_rows_and_a_prompt_chunk(modules):
    """ngram: one row verifies 3 drafts, one got none, one verifies 3; a prompt chunk follows."""
    meta = _builder(modules["patched"]).build(0, _batch([K + 1, 1, K + 1, 9], [20, 31, 7, 9]))
    assert (meta.is_prefill, meta.num_decodes, meta.num_decode_tokens) == (True, 3, 9)
    assert meta.decode_token_rows.tolist() == [0, 0, 0, 0, 1, 2, 2, 2, 2]
    assert meta.decode_token_seq_lens.tolist() == [17, 18, 19, 20, 31, 4, 5, 6, 7]


def test_graph_padding_maps_to_a_real_row_and_attends_to_nothing(modules):
    """A full-graph batch of 4 requests x 4 tokens with two real requests: padded requests have 0
    tokens and length 0, and the 8 tokens past the last request must stay inside the block table."""
    meta = _builder(modules["patched"]).build(0, _batch([K + 1, K + 1, 0, 0], [44, 11, 0, 0], padded_tokens=16))
    assert (meta.is_prefill, meta.num_decodes, meta.num_decode_tokens) == (False, 4, 16)
    assert meta.decode_token_rows.tolist() == [0] * 4 + [1] * 4 + [3] * 8
    assert meta.decode_token_seq_lens.tolist() == [41, 42, 43, 44, 8, 9, 10, 11] + [0] * 8


def test_single_token_decodes_are_left_as_they_were(modules):
    meta = _builder(modules["patched"]).build(0, _batch([1, 1], [50, 60]))
    assert not meta.is_prefill and meta.decode_token_rows is None and meta.decode_token_seq_lens is None


def test_per_token_values_live_in_buffers_a_replayed_graph_reads(modules):
    """A full CUDA graph keeps the addresses it captured: every step must write the same memory."""
    builder = _builder(modules["patched"])
    first = builder.build(0, _batch([K + 1] * 2, [44, 11]))
    second = builder.build(0, _batch([K + 1] * 2, [70, 30]))
    assert first.decode_token_rows.data_ptr() == second.decode_token_rows.data_ptr()
    assert first.decode_token_seq_lens.data_ptr() == second.decode_token_seq_lens.data_ptr()
    assert second.decode_token_seq_lens.tolist() == [67, 68, 69, 70, 27, 28, 29, 30]


def test_capture_metadata_uses_length_1(modules):
    meta = _builder(modules["patched"]).build_for_cudagraph_capture(_batch([K + 1] * 2, [4, 4]))
    assert meta.decode_token_seq_lens.tolist() == [1] * 8 and meta.seq_lens.tolist() == [1, 1]


def test_expanded_rows_get_no_scratch_buffer_sized_for_requests(modules, monkeypatch):
    """The decode path's scratch buffers hold one row per request: the layer's (max_num_seqs, up
    to 0.20) or the shared workspace's (from 0.21, locked after CUDA-graph capture). Expanded
    verify rows are up to 1+k per request, so they must be handed neither; single-token decodes
    keep the release's buffers. Nor is the layer passed as holder: the kernel would keep its
    per-call allocation on the layer (up to 0.20 replacing the layer's buffers from inside a graph
    capture; from 0.21 keeping scratch alive outside the profiler's count)."""
    module = modules["patched"]
    builder = _builder(module)  # before the workspace below exists: from 0.26 a builder reserves in it
    metas = [builder.build(0, _batch(query_lens, [44, 11])) for query_lens in ([K + 1] * 2, [1, 1])]
    calls = []
    monkeypatch.setattr(module, "triton_turboquant_decode_attention", lambda **kw: calls.append(kw) or kw["query"])
    scratch = torch.empty(0)
    shared_workspace = hasattr(module, "is_workspace_manager_initialized")
    if shared_workspace:
        monkeypatch.setattr(module, "is_workspace_manager_initialized", lambda: True)
        manager = SimpleNamespace(get_simultaneous=lambda *specs: [scratch] * len(specs))
        monkeypatch.setattr(module, "current_workspace_manager", lambda: manager)
    layer = SimpleNamespace(_tq_mid_o_buf=scratch, _tq_output_buf=scratch, _tq_lse_buf=scratch)
    impl = turboquant_case.decode_impl(head_size=64, num_heads=2, max_num_kv_splits=4)
    for meta in metas:
        query = torch.zeros(meta.num_actual_tokens, 2, 64)
        module.TurboQuantAttentionImpl._decode_attention(impl, query, None, meta, None, None, None, layer)
    expanded, single = calls
    assert [expanded[k] for k in ("mid_o_buf", "output_buf", "lse_buf")] == [None] * 3
    assert expanded["block_table_rows"] is metas[0].decode_token_rows
    assert all(single[k] is scratch for k in ("mid_o_buf", "output_buf", "lse_buf"))
    assert single["block_table_rows"] is None and single["buf_holder"] is layer
    assert expanded["buf_holder"] is None


def test_what_the_kernel_leaves_on_a_buffer_holder_is_never_read_from_0_21():
    """Why handing expanded rows no holder cannot change an output: from 0.21 the decode kernel
    only stores its scratch on the holder, and no module of the release reads it back, so the
    holder only keeps memory alive. In 0.20 the layer registers those buffers and the backend reads
    them, which is why the 0.20 port gives expanded rows neither those buffers nor a holder."""
    package = Path(importlib.util.find_spec("vllm").submodule_search_locations[0])
    reads = [f"{path.relative_to(package)}:{n}" for path in sorted(package.rglob("*.py"))
             for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
             if re.search(r"_tq_(mid_o|output|lse)_buf", line) and not re.search(r"buf_holder\._tq_\w+ = ", line)]
    if Version(RELEASE.version) < Version("0.21.0"):
        assert any(r.startswith("v1/attention/backends/turboquant_attn.py") for r in reads), reads
    else:
        assert reads == []


def test_verify_offers_exactly_this_release_s_turboquant_presets():
    """`apply.py verify --kv-cache` lists TurboQuant presets as data; they must be the release's."""
    from vllm.model_executor.layers.quantization.turboquant.config import TQ_PRESETS

    from vllm_backports.verify import scenarios

    assert sorted(TQ_PRESETS) == sorted(scenarios.TURBOQUANT)


def test_verify_refuses_turboquant_on_its_hybrid_model_exactly_where_the_release_does():
    """verify stops before any engine starts where vLLM would refuse TurboQuant on a hybrid model
    after loading it (up to 0.20.x); from TURBOQUANT_ON_HYBRIDS_FROM the release's argument
    handling no longer carries that refusal."""
    import inspect

    from packaging.version import Version
    from vllm.engine import arg_utils

    from vllm_backports.verify import scenarios

    refuses = "TurboQuant KV cache is not supported for hybrid" in inspect.getsource(arg_utils)
    assert refuses == (Version(RELEASE.version) < Version(scenarios.TURBOQUANT_ON_HYBRIDS_FROM))

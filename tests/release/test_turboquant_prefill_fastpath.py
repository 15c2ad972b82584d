"""turboquant-prefill-fastpath (vLLM #46460) against the installed vLLM release's real
TurboQuant backend on the CPU: its metadata builder, then its forward() down to the choice the
prefill path makes (kernels stubbed, recording what each row attends to). Three versions of the
backend (tests/patched_side.py): as released, with the release's series less the fix ("series":
what its users ran before it shipped) and with the whole shipped series ("candidate").

The fast path hands the whole prefill part to one flash_attn_varlen call over this step's keys,
with the query offsets as key offsets: a row with tokens already in the cache (a continuation
chunk: chunked prefill, a prefix-cache hit) then attends to its new tokens only. The release takes
it when max_query_len == max_seq_len, which a first chunk at least as long as a continuation's
whole sequence satisfies. turboquant-spec-decode makes verify rows decodes, so their lengths no
longer keep max_seq_len above max_query_len in the prefill part.

Needs torch and a vLLM release whose series carries the fix (its pristine turboquant_attn.py,
checked against versions.toml); skipped elsewhere, like the other builder tests.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from types import SimpleNamespace

import pytest

import patched_side

from . import installed
from .conftest import CATALOGUE

BACKEND = "vllm/v1/attention/backends/turboquant_attn.py"

torch, RELEASE = installed.served(patched_side.FIX)
VERSION = RELEASE.version
import turboquant_case  # noqa: E402  (imports torch: after the skip)

K = turboquant_case.K  # MTP drafts: verify rows carry K + 1 query tokens
HQ, HK, D = 4, 2, 8


def _not_pristine(path: str):
    message = f"the installed {path} is not vLLM {VERSION}'s pristine file"
    if installed.REQUIRED:
        raise AssertionError(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tq_fastpath")
    return {side: patched_side.load(tmp, BACKEND, side, CATALOGUE, RELEASE, _not_pristine)
            for side in patched_side.SIDES}


def _batch(query_lens: list[int], seq_lens: list[int]):
    """A batch as the model runner hands it over: rows with at most K + 1 tokens first."""
    from vllm.v1.attention.backend import CommonAttentionMetadata

    q = torch.tensor([0, *query_lens]).cumsum(0).to(torch.int32)
    lens = torch.tensor(seq_lens, dtype=torch.int32)
    fields = dict(
        query_start_loc=q, query_start_loc_cpu=q.clone(), seq_lens=lens, num_reqs=len(query_lens),
        num_actual_tokens=int(q[-1]), max_query_len=max(query_lens), max_seq_len=int(lens.max()),
        block_table_tensor=torch.arange(len(query_lens) * 4, dtype=torch.int32).view(-1, 4),
        slot_mapping=torch.zeros(int(q[-1]), dtype=torch.int64),
        _seq_lens_cpu=lens.clone(), seq_lens_cpu_upper_bound=lens.clone(),
    )
    known = {f.name for f in dataclasses.fields(CommonAttentionMetadata) if f.init}
    return CommonAttentionMetadata(**{k: v for k, v in fields.items() if k in known})


def _routes(module, query_lens: list[int], seq_lens: list[int], monkeypatch) -> list[tuple]:
    """What the backend's forward() does with the batch, the builder's metadata included:
    ("decode", tokens) for the decode part, ("fast", query offsets) for the one-call fast path,
    ("first", tokens) for a first chunk the per-request loop attends to, ("cached", tokens,
    sequence lengths) for rows the loop serves from the cache."""
    meta = turboquant_case.builder(module, "cpu", max_num_batched_tokens=256, max_num_seqs=16).build(
        0, _batch(query_lens, seq_lens))
    calls: list[tuple] = []

    def flash(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k):
        # Both paths pass the query offsets as key offsets: the keys are this step's only. The
        # loop passes one row's, in a buffer it keeps on the backend (_cu_2; a local of the loop
        # before 0.21.0: two offsets, where every fast-path call here covers two or more rows).
        assert cu_seqlens_k is cu_seqlens_q
        if cu_seqlens_q is getattr(impl, "_cu_2", None) or (
                not hasattr(impl, "_cu_2") and cu_seqlens_q.numel() == 2):
            calls.append(("first", int(cu_seqlens_q[1])))
        else:
            calls.append(("fast", cu_seqlens_q.tolist()))
        return torch.zeros(q.shape[0], HQ, D)

    def from_cache(**kw):
        calls.append(("cached", kw["query"].shape[0], list(map(int, kw["seq_lens"]))))
        return torch.zeros(kw["query"].shape[0], HQ, D)

    def decode(q, *args):
        calls.append(("decode", q.shape[0]))
        return torch.zeros(q.shape[0], HQ, D)

    monkeypatch.setattr(module, "_HAS_FLASH_ATTN", True)  # the GPU's case: the fast path exists
    monkeypatch.setattr(module, "triton_turboquant_decode_attention", from_cache)
    impl = SimpleNamespace(
        num_heads=HQ, num_kv_heads=HK, head_size=D, scale=D ** -0.5, sinks=None, sliding_window=None,
        _soa_store=False, _use_flydsl=False, tq_config=SimpleNamespace(
            key_mse_bits=3, key_packed_size=50, effective_value_quant_bits=4, value_packed_size=64,
            key_fp8=False, norm_correction=False),
        _ensure_on_device=lambda layer, device: None, _decode_attention=decode, _flash_attn_varlen=flash,
        # Continuations over _CONTINUATION_DECODE_THRESHOLD tokens: the cache, dequantized.
        _continuation_prefill=lambda layer, q, k, v, cache, table, cached_len, seq_len, *a: from_cache(
            query=q, seq_lens=list(range(cached_len + 1, seq_len + 1))),
    )
    impl._prefill_attention = partial(module.TurboQuantAttentionImpl._prefill_attention, impl)
    layer = SimpleNamespace(_tq_Pi=None, _tq_PiT=None, _tq_centroids=None, _tq_midpoints=None)
    n = sum(query_lens)
    module.TurboQuantAttentionImpl.forward(impl, layer, torch.zeros(n, HQ, D), torch.zeros(n, HK, D),
                                           torch.zeros(n, HK, D), torch.zeros(1, 1, 1, 1), meta)
    return calls


# Two verify rows (k=3 drafts, 40 and 57 tokens of context), a continuation chunk of 24 tokens
# after 16 cached ones, and a first chunk of 48 tokens: 48 == 48 passes the release's test.
MIXED = ([K + 1, K + 1, 24, 48], [44, 61, 40, 48])


def test_released_backend_sends_verify_rows_to_the_prefill_loop_which_reads_the_cache(modules, monkeypatch):
    """As released, verify rows are prefill rows (reorder threshold 1): their lengths keep
    max_seq_len above max_query_len, so this batch takes the per-request loop."""
    assert _routes(modules["released"], *MIXED, monkeypatch) == [
        ("cached", 4, [41, 42, 43, 44]), ("cached", 4, [58, 59, 60, 61]),
        ("cached", 24, list(range(17, 41))), ("first", 48)]


def test_series_takes_the_fast_path_and_the_continuation_loses_its_cached_kv(modules, monkeypatch):
    """The bug, as users of the series meet it: with verify rows decodes, the prefill part is the
    continuation and the first chunk, max_query_len == max_seq_len == 48, and one call attends
    over this step's keys only: the continuation's 24 queries never see its 16 cached tokens."""
    assert _routes(modules["series"], *MIXED, monkeypatch) == [("decode", 8), ("fast", [0, 24, 72])]


def test_candidate_serves_the_continuation_from_the_cache(modules, monkeypatch):
    assert _routes(modules["candidate"], *MIXED, monkeypatch) == [
        ("decode", 8), ("cached", 24, list(range(17, 41))), ("first", 48)]
    meta = turboquant_case.builder(modules["candidate"], "cpu").build(0, _batch(*MIXED))
    assert (meta.num_decodes, meta.prefill_fast_path) == (2, False)


@pytest.mark.parametrize("side", ["series", "candidate"])
def test_first_chunks_alone_keep_the_fast_path(modules, monkeypatch, side):
    """No speed lost in the common case: a prefill part of first chunks takes the one-call path,
    beside verify rows and alone."""
    assert _routes(modules[side], [K + 1, K + 1, 48, 30], [44, 61, 48, 30], monkeypatch) == [
        ("decode", 8), ("fast", [0, 48, 78])]
    assert _routes(modules[side], [48, 30], [48, 30], monkeypatch) == [("fast", [0, 48, 78])]


def test_a_prefix_cache_hit_beside_a_longer_first_chunk_without_speculation(modules, monkeypatch):
    """The release's own case (vLLM #46460, no verify rows): a 24-token chunk after a 16-token
    prefix-cache hit next to a 48-token prompt. The release and the series take the fast path, the
    candidate reads the hit from the cache."""
    batch = ([24, 48], [40, 48])
    for side in ("released", "series"):
        assert _routes(modules[side], *batch, monkeypatch) == [("fast", [0, 24, 72])], side
    assert _routes(modules["candidate"], *batch, monkeypatch) == [
        ("cached", 24, list(range(17, 41))), ("first", 48)]


def test_candidate_decides_from_host_tensors_alone(modules):
    """The builder decides once per step from the CPU copies of the query offsets and lengths
    (nothing a CUDA graph captures, no GPU sync); without the host lengths it takes the path that
    reads the cache. Rows without tokens (padding) do not count."""
    decide = modules["candidate"]._prefill_fast_path

    def host(query_lens, seq_lens):
        qsl = torch.tensor([0, *query_lens]).cumsum(0).to(torch.int32)
        lens = torch.tensor(seq_lens, dtype=torch.int32)
        return SimpleNamespace(query_start_loc_cpu=qsl, seq_lens_cpu_upper_bound=lens, num_reqs=len(query_lens))

    assert decide(host(*MIXED), 2) is False
    assert decide(host([K + 1, 48, 30, 0], [44, 48, 30, 7]), 1) is True
    assert decide(SimpleNamespace(**{**vars(host([48], [48])), "seq_lens_cpu_upper_bound": None}), 0) is False

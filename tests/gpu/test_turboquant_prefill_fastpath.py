"""vLLM #46460 measured: one mixed batch through the TurboQuant backend's real forward(), as
released ("released"), with the release's series up to turboquant-prefill-fastpath ("series": what
its users ran before the fix shipped) and through it ("candidate": the fix on top), each loaded
from the installed pristine file plus patches (tests/patched_side.py), as
tests/release/test_turboquant_prefill_fastpath.py loads them for its routing checks. Here nothing
is stubbed but the attention layer: the real metadata builder, TurboQuant's store kernel filling
the cache, its decode kernel for verify rows and continuation chunks, and FlashAttention for first
chunks and the one-call fast path.

The batch: verify rows V (k+1 queries, context T), a continuation chunk C (8 new queries after
CACHED tokens already in the cache, sequence S) and a first chunk F (q = s = L, L >= S). The
output of C is compared to float32 attention over its whole sequence (causal) and over its new
tokens alone. Cases: (a) T > L: as released V keep max_seq_len above max_query_len and C is
right; the series makes V decodes and C loses its context. (b) no V (the release's own #46460
case): released and series lose it. (c) T <= L: released loses C's and V's context, the series
C's. The shipped fix must be right everywhere; released and series are asserted wrong where the
bug applies, so the test fails if the bug does not reproduce.

On a GPU (the point of the test): vLLM's flash_attn_varlen_func (FA2 as staged) and the Triton
kernels compiled. Run against the pristine install (lab.steps `fastpath`): each side
is built from it. Without CUDA, with TRITON_INTERPRET=1 CUDA_VISIBLE_DEVICES= set before vLLM is
imported: the same Triton kernels under the interpreter, and a float32 PyTorch attention standing
in for flash_attn_varlen_func (there is no FlashAttention on the CPU), so that mode checks the
backend's routing with real TurboQuant kernels, not FlashAttention. Skipped otherwise, and for
releases whose series does not carry turboquant-prefill-fastpath.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import importlib.util
import inspect
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
if torch.cuda.is_available():
    DEVICE = "cuda"
elif os.environ.get("TRITON_INTERPRET") == "1":
    DEVICE = "cpu"
else:
    pytest.skip("needs a CUDA GPU, or TRITON_INTERPRET=1 CUDA_VISIBLE_DEVICES= for the CPU mode",
                allow_module_level=True)
pytest.importorskip("vllm")

import patched_side  # noqa: E402
from turboquant_case import BLOCK, BOUND, HEAD_DIM, HK, HQ, K, builder, rel  # noqa: E402
from vllm_backports.catalogue import Catalogue  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
CATALOGUE = Catalogue(REPO)
BACKEND = "vllm/v1/attention/backends/turboquant_attn.py"
DECODE = "vllm/v1/attention/ops/triton_turboquant_decode.py"
VERSION = importlib.metadata.version("vllm")
RELEASE = CATALOGUE.releases.get(VERSION)
# lab.steps fastpath sets it: on the staged GPU machine a skip would hide that nothing was measured.
REQUIRED = bool(os.environ.get("VLLM_BACKPORTS_REQUIRE_VLLM"))


def _skip(message: str):
    if REQUIRED:
        raise AssertionError(message)
    pytest.skip(message, allow_module_level=True)


if RELEASE is None or patched_side.FIX not in RELEASE.backports:
    _skip(f"vLLM {VERSION} is not a release {patched_side.FIX} serves")
if DEVICE == "cpu":
    from vllm.triton_utils import HAS_TRITON

    if not HAS_TRITON:
        _skip("vLLM put a placeholder in Triton's place: set CUDA_VISIBLE_DEVICES= with TRITON_INTERPRET=1")

PRESET = "turboquant_k8v4"
SIDES = patched_side.SIDES
L, CACHED, NEW = 48, 32, 8  # F's length; C's tokens in the cache and its new ones (S = 40 <= L)
CASES = {
    "a-verify-longer": [60, 64],  # T > L
    "b-no-verify": [],
    "c-verify-shorter": [36, 44],  # T <= L
}
# Whether C gets its full context, per case and side. The released backend's fast-path test
# fails only when a row's sequence is longer than the longest query: in (a) the verify rows'.
RIGHT = {
    "a-verify-longer": {"released": True, "series": False, "candidate": True},
    "b-no-verify": {"released": False, "series": False, "candidate": True},
    "c-verify-shorter": {"released": False, "series": False, "candidate": True},
}


def _not_pristine(path: str):
    _skip(f"the installed {path} is not vLLM {VERSION}'s pristine file (run against the pristine site)")


def _load(tmp: Path, path: str, side: str):
    return patched_side.load(tmp, path, side, CATALOGUE, RELEASE, _not_pristine)


@pytest.fixture(scope="module")
def backends(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tq_fastpath_gpu")
    out = {}
    for side in SIDES:
        module = _load(tmp, BACKEND, side)
        if side != "released":
            # The series' backend passes the decode kernel a per-token block-table row, which
            # only the series' kernel takes; the installed one is pristine.
            module.triton_turboquant_decode_attention = _load(tmp, DECODE, side).triton_turboquant_decode_attention
        out[side] = module
    return out


def attend(q, k, v, start: int, scale: float):
    """float32 causal attention of queries at positions start.. over keys from position 0."""
    n, s = q.shape[0], k.shape[0]
    q = q.float().transpose(0, 1)
    k = k.float().repeat_interleave(HQ // HK, 1).transpose(0, 1)
    v = v.float().repeat_interleave(HQ // HK, 1).transpose(0, 1)
    scores = q @ k.transpose(1, 2) * scale
    visible = torch.arange(s, device=q.device)[None, :] <= torch.arange(start, start + n, device=q.device)[:, None]
    return (scores.masked_fill(~visible, float("-inf")).softmax(-1) @ v).transpose(0, 1)


def flash_stand_in(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, softmax_scale, causal,
                   **_):
    """CPU mode only: flash_attn_varlen_func's contract in float32 (causal aligned to the end of
    each key range, as FlashAttention aligns it), so the backend's own offsets decide what each
    query sees."""
    assert causal
    cq, ck = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    out = [attend(q[cq[i]:cq[i + 1]], k[ck[i]:ck[i + 1]], v[ck[i]:ck[i + 1]],
                  (ck[i + 1] - ck[i]) - (cq[i + 1] - cq[i]), softmax_scale) for i in range(len(cq) - 1)]
    return torch.cat(out).to(q.dtype)


class Batch:
    """Requests in the model runner's order (verify rows first), their K/V for every position,
    the step's queries, and a cache holding every position before this step in shuffled blocks."""

    def __init__(self, verify: list[int], seed: int = 0):
        g = torch.Generator(device=DEVICE).manual_seed(seed)
        # (query tokens, sequence length) per request: V..., C, F
        self.rows = [(K + 1, t) for t in verify] + [(NEW, CACHED + NEW), (L, L)]
        width = max(-(-s // BLOCK) for _, s in self.rows)
        order = torch.randperm(len(self.rows) * width, generator=g, device=DEVICE).to(torch.int32) + 1
        self.num_blocks = len(self.rows) * width + 1  # block 0 unused, as vLLM's null block
        self.block_table = order.view(len(self.rows), width).contiguous()
        self.k = [torch.randn(s, HK, HEAD_DIM, generator=g, device=DEVICE).bfloat16() for _, s in self.rows]
        self.v = [torch.randn(s, HK, HEAD_DIM, generator=g, device=DEVICE).bfloat16() for _, s in self.rows]
        self.q = [torch.randn(q, HQ, HEAD_DIM, generator=g, device=DEVICE).bfloat16() for q, _ in self.rows]

    def slots(self, r: int, positions: range):
        pos = torch.arange(positions.start, positions.stop, device=DEVICE)
        return self.block_table[r, pos // BLOCK].long() * BLOCK + pos % BLOCK

    def step(self, part: str):
        """K, V and slots of this step's tokens ("new") or of everything stored before it ("old")."""
        ks, vs, slots = [], [], []
        for r, (q, s) in enumerate(self.rows):
            span = range(s - q, s) if part == "new" else range(0, s - q)
            ks.append(self.k[r][span.start:span.stop])
            vs.append(self.v[r][span.start:span.stop])
            slots.append(self.slots(r, span))
        return torch.cat(ks), torch.cat(vs), torch.cat(slots)

    def metadata(self):
        from vllm.v1.attention.backend import CommonAttentionMetadata

        query_lens, seq_lens = [q for q, _ in self.rows], [s for _, s in self.rows]
        qsl = torch.tensor([0, *query_lens]).cumsum(0).to(torch.int32)
        lens = torch.tensor(seq_lens, dtype=torch.int32)
        fields = dict(
            query_start_loc=qsl.to(DEVICE), query_start_loc_cpu=qsl, seq_lens=lens.to(DEVICE),
            num_reqs=len(self.rows), num_actual_tokens=int(qsl[-1]), max_query_len=max(query_lens),
            max_seq_len=max(seq_lens), block_table_tensor=self.block_table, slot_mapping=self.step("new")[2],
            _seq_lens_cpu=lens.clone(), seq_lens_cpu_upper_bound=lens.clone(),
        )
        known = {f.name for f in dataclasses.fields(CommonAttentionMetadata) if f.init}
        return CommonAttentionMetadata(**{k: v for k, v in fields.items() if k in known})

    def reference(self, r: int, full: bool, scale: float):
        """Request r's queries against its whole sequence, or against its new tokens alone."""
        q, s = self.rows[r]
        start = s - q if full else 0
        k, v = self.k[r], self.v[r]
        if not full:
            k, v = k[s - q:], v[s - q:]
        return attend(self.q[r], k, v, start, scale)


def _impl(module, monkeypatch):
    """The side's TurboQuantAttentionImpl, made by its own __init__ under the settings an engine
    would pass (the attention config's defaults)."""
    from vllm.config import AttentionConfig

    config = SimpleNamespace(attention_config=AttentionConfig(), model_config=SimpleNamespace(max_model_len=256))
    monkeypatch.setattr(module, "get_current_vllm_config", lambda: config)
    if DEVICE == "cpu":
        monkeypatch.setattr(module, "_HAS_FLASH_ATTN", True)  # the GPU's routing: the fast path exists
        monkeypatch.setattr(module, "flash_attn_varlen_func", flash_stand_in, raising=False)
    else:
        assert module._HAS_FLASH_ATTN, "vLLM finds no flash_attn_varlen_func: FA2 not staged"
    return module.TurboQuantAttentionImpl(HQ, HEAD_DIM, HEAD_DIM ** -0.5, num_kv_heads=HK, kv_cache_dtype=PRESET)


def _forward(module, batch: Batch, monkeypatch):
    """The step as vLLM runs it: earlier steps' K/V stored, this step's stored
    (do_kv_cache_update), then forward() with the real builder's metadata."""
    impl = _impl(module, monkeypatch)
    layer = SimpleNamespace()
    cfg = impl.tq_config
    # In 0.20 the Attention layer owns the Lloyd-Max centroids (a buffer the backend only reads);
    # from 0.21 the backend puts them on the layer itself.
    ensure = inspect.getsource(module.TurboQuantAttentionImpl._ensure_on_device)
    if "layer._tq_centroids =" not in ensure:
        from vllm.model_executor.layers.quantization.turboquant.centroids import get_centroids

        layer._tq_centroids = get_centroids(HEAD_DIM, cfg.centroid_bits).to(DEVICE)
    cache = torch.zeros(batch.num_blocks, BLOCK, HK, cfg.slot_size_aligned, dtype=torch.uint8, device=DEVICE)
    # From 0.26.0 the engine hands the cache as (blocks, heads, block, slot) and the backend
    # transposes it back; before, as it lies.
    if "kv_cache.transpose(1, 2)" in inspect.getsource(module.TurboQuantAttentionImpl.forward):
        cache = cache.transpose(1, 2)
    for part in ("old", "new"):
        k, v, slots = batch.step(part)
        impl.do_kv_cache_update(layer, k, v, cache, slots)
    meta = builder(module, DEVICE).build(0, batch.metadata())
    k, v, _ = batch.step("new")
    out = impl.forward(layer, torch.cat(batch.q), k, v, cache, meta)
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    return out.view(-1, HQ, HEAD_DIM), impl


def _judge(got, right, wrong) -> tuple[float, float]:
    """As turboquant_case.check_causal judges: within TurboQuant's rounding of `right`, and at
    least twice as far from `wrong`."""
    near, far = rel(got, right), rel(got, wrong)
    assert near < BOUND.get(PRESET, 0.2) and far > 2 * near, (near, far)
    return near, far


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("side", SIDES)
def test_the_continuation_chunk_attends_to_its_cached_tokens(backends, monkeypatch, side, case):
    batch = Batch(CASES[case])
    out, impl = _forward(backends[side], batch, monkeypatch)
    scale = impl.scale
    starts = [0, *torch.tensor([q for q, _ in batch.rows]).cumsum(0).tolist()]
    got = {r: out[starts[r]:starts[r + 1]] for r in range(len(batch.rows))}
    full = {r: batch.reference(r, True, scale) for r in got}
    new = {r: batch.reference(r, False, scale) for r in got}
    c, f = len(batch.rows) - 2, len(batch.rows) - 1
    flash = f"FA{impl.fa_version or ''}" if DEVICE == "cuda" else "float32 stand-in for FA"
    print(f"\n{VERSION} {DEVICE} {side} {case}: C vs full context {rel(got[c], full[c]):.4f}, "
          f"vs new tokens only {rel(got[c], new[c]):.4f} ({flash})")
    # A first chunk's context is its own tokens: every path serves it from this step's K/V.
    assert rel(got[f], full[f]) < BOUND.get(PRESET, 0.2), rel(got[f], full[f])
    if RIGHT[case][side]:
        _judge(got[c], full[c], new[c])
    else:
        _judge(got[c], new[c], full[c])
    # Verify rows: decodes with the series; as released, prefill rows the fast path takes too.
    for r in range(c):
        if side != "released" or RIGHT[case]["released"]:
            _judge(got[r], full[r], new[r])
        else:
            _judge(got[r], new[r], full[r])

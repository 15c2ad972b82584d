"""turboquant-spec-decode's decode path on the GPU, with the installed vLLM patched by its series:
verify rows expanded to one decode row per token must attend causally over their own request's
blocks, as the eager per-request path does, and must replay correctly from a CUDA graph.

Three references: the release's own per-request continuation path (same kernel, so bit-exact), a
float32 PyTorch attention over the unquantized K/V (TurboQuant's rounding allowed, causal masking
must hold), and that reference without the causal mask, which the result must not match.
Skips without CUDA or without the series applied."""

from __future__ import annotations

import inspect
import math
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)
decode_ops = pytest.importorskip("vllm.v1.attention.ops.triton_turboquant_decode")
if "block_table_rows" not in inspect.signature(decode_ops.triton_turboquant_decode_attention).parameters:
    pytest.skip("the installed vLLM does not carry turboquant-spec-decode", allow_module_level=True)

from vllm.model_executor.layers.quantization.turboquant.centroids import get_centroids  # noqa: E402
from vllm.model_executor.layers.quantization.turboquant.config import TurboQuantConfig  # noqa: E402
from vllm.v1.attention.backends import turboquant_attn  # noqa: E402
from vllm.v1.attention.ops.triton_turboquant_store import triton_turboquant_store  # noqa: E402

HEAD_DIM, HQ, HK, BLOCK = 128, 8, 2, 16
K = 3  # drafts per verify row


class Case:
    """A TurboQuant cache holding three requests' K/V in shuffled blocks, and one verify step."""

    def __init__(self, preset: str, context: list[int], seed: int):
        g = torch.Generator(device="cuda").manual_seed(seed)
        self.cfg = TurboQuantConfig.from_cache_dtype(preset, HEAD_DIM)
        self.Pi = turboquant_attn._build_hadamard(HEAD_DIM, "cuda")
        self.centroids = get_centroids(HEAD_DIM, self.cfg.centroid_bits).to("cuda", torch.float32)
        c = self.centroids.sort().values
        midpoints = (c[:-1] + c[1:]) / 2
        self.seq_lens = [n + K + 1 for n in context]
        width = max(math.ceil(n / BLOCK) for n in self.seq_lens)
        num_blocks = len(context) * width + 1
        self.kv_cache = torch.zeros(num_blocks, BLOCK, HK, self.cfg.slot_size_aligned, dtype=torch.uint8, device="cuda")
        order = torch.randperm(num_blocks - 1, generator=g, device="cuda").to(torch.int32) + 1
        self.block_table = order.view(len(context), width).contiguous()
        self.k = [torch.randn(n, HK, HEAD_DIM, generator=g, device="cuda").bfloat16() for n in self.seq_lens]
        self.v = [torch.randn(n, HK, HEAD_DIM, generator=g, device="cuda").bfloat16() for n in self.seq_lens]
        for r, n in enumerate(self.seq_lens):
            pos = torch.arange(n, device="cuda")
            slots = (self.block_table[r, pos // BLOCK] * BLOCK + pos % BLOCK).to(torch.int32)
            triton_turboquant_store(self.k[r], self.v[r], self.kv_cache, slots, self.Pi, midpoints,
                                    mse_bits=self.cfg.key_mse_bits, key_packed_size=self.cfg.key_packed_size,
                                    value_quant_bits=self.cfg.effective_value_quant_bits, key_fp8=self.cfg.key_fp8)
        self.q = torch.randn(len(context) * (K + 1), HQ, HEAD_DIM, generator=g, device="cuda").bfloat16()
        self.scale = HEAD_DIM ** -0.5

    def decode(self, query, block_table, seq_lens, rows=None):
        return decode_ops.triton_turboquant_decode_attention(
            query=query, kv_cache=self.kv_cache, block_table=block_table, seq_lens=seq_lens, Pi=self.Pi,
            centroids=self.centroids, scale=self.scale, mse_bits=self.cfg.key_mse_bits,
            key_packed_size=self.cfg.key_packed_size, value_quant_bits=self.cfg.effective_value_quant_bits,
            key_fp8=self.cfg.key_fp8, norm_correction=self.cfg.norm_correction, PiT=self.Pi,
            block_table_rows=rows)

    def expanded(self, builder, seq_lens):
        """The builder's per-token rows and lengths for this verify step."""
        qsl = torch.arange(0, len(seq_lens) * (K + 1) + 1, K + 1, dtype=torch.int32, device="cuda")
        cam = SimpleNamespace(query_start_loc=qsl, seq_lens=torch.tensor(seq_lens, dtype=torch.int32, device="cuda"))
        return builder._expand_decode_tokens(cam, len(seq_lens), len(seq_lens) * (K + 1))

    def per_request(self):
        """The release's eager continuation path: one decode call per request over its own row."""
        out = []
        for r, n in enumerate(self.seq_lens):
            lens = torch.arange(n - K, n + 1, dtype=torch.int32, device="cuda")
            out.append(self.decode(self.q[r * (K + 1):(r + 1) * (K + 1)],
                                   self.block_table[r:r + 1].expand(K + 1, -1), lens))
        return torch.cat(out)

    def dense(self, causal: bool):
        out = []
        for r, n in enumerate(self.seq_lens):
            q = self.q[r * (K + 1):(r + 1) * (K + 1)].float().transpose(0, 1)
            k = self.k[r].float().repeat_interleave(HQ // HK, 1).transpose(0, 1)
            v = self.v[r].float().repeat_interleave(HQ // HK, 1).transpose(0, 1)
            scores = q @ k.transpose(1, 2) * self.scale
            if causal:
                visible = torch.arange(n, device="cuda")[None, :] <= torch.arange(n - K - 1, n, device="cuda")[:, None]
                scores = scores.masked_fill(~visible, float("-inf"))
            out.append((scores.softmax(-1) @ v).transpose(0, 1))
        return torch.cat(out)


def _builder():
    config = SimpleNamespace(
        speculative_config=SimpleNamespace(num_speculative_tokens=K, method="mtp", parallel_drafting=False),
        scheduler_config=SimpleNamespace(max_num_batched_tokens=256, max_num_seqs=16),
        parallel_config=SimpleNamespace(decode_context_parallel_size=1),
    )
    return turboquant_attn.TurboQuantMetadataBuilder(object(), ["layer"], config, torch.device("cuda"))


def _rel(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


@pytest.mark.parametrize("preset", ["turboquant_k8v4", "turboquant_4bit_nc", "turboquant_3bit_nc"])
def test_expanded_verify_rows_match_the_per_request_path_and_attend_causally(preset):
    case = Case(preset, context=[37, 5, 130], seed=1)
    rows, lens = case.expanded(_builder(), case.seq_lens)
    got = case.decode(case.q, case.block_table, lens, rows)
    torch.cuda.synchronize()
    assert torch.equal(got, case.per_request())
    causal, full = case.dense(causal=True), case.dense(causal=False)
    print(f"{preset}: relative error vs causal {_rel(got, causal):.3f}, vs non-causal {_rel(got, full):.3f}")
    # TurboQuant's rounding against float32 on unquantized K/V, measured on the H100 (2026-11-22):
    # k8v4 0.113, 4bit_nc 0.136, 3bit_nc 0.282; without the causal mask 0.47 to 0.55. 3-bit keys
    # are too coarse to tell the mask apart by this measure: there the exact match above decides.
    bound = {"turboquant_3bit_nc": 0.35}.get(preset, 0.2)
    assert _rel(got, causal) < bound
    if bound <= 0.2:
        assert _rel(got, full) > 2 * _rel(got, causal)


def test_a_captured_graph_replays_later_steps_correctly():
    """Capture the expanded decode once, then replay it for steps with other lengths and
    requests, writing only the builder's persistent buffers, as vLLM's full graphs do."""
    case = Case("turboquant_k8v4", context=[60, 61, 62], seed=2)
    builder = _builder()
    query = case.q.clone()
    block_table = case.block_table.clone()
    seq_lens = torch.tensor(case.seq_lens, dtype=torch.int32, device="cuda")
    rows, lens = case.expanded(builder, [1, 1, 1])
    case.decode(query, block_table, lens, rows)  # compile before capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = case.decode(query, block_table, lens, rows)
    for step in range(3):
        shorter = [n - step for n in case.seq_lens]
        order = torch.tensor([2, 0, 1][step:] + [2, 0, 1][:step], device="cuda")
        block_table.copy_(case.block_table[order])
        want_lens = [shorter[i] for i in order.tolist()]
        seq_lens.copy_(torch.tensor(want_lens, dtype=torch.int32))
        builder._expand_decode_tokens(SimpleNamespace(
            query_start_loc=torch.arange(0, 13, K + 1, dtype=torch.int32, device="cuda"), seq_lens=seq_lens), 3, 12)
        graph.replay()
        rows_now, lens_now = case.expanded(_builder(), want_lens)
        eager = case.decode(query, block_table, lens_now, rows_now)
        torch.cuda.synchronize()
        assert torch.equal(out, eager)

"""turboquant-spec-decode's decode path on the GPU, with the installed vLLM patched by its series:
verify rows expanded to one decode row per token must attend causally over their own request's
blocks, as the eager per-request path does, and must replay correctly from a CUDA graph.

Three references: the release's own per-request continuation path (same kernel, so bit-exact), a
float32 PyTorch attention over the unquantized K/V (TurboQuant's rounding allowed, causal masking
must hold), and that reference without the causal mask, which the result must not match.
Skips without CUDA or without the series applied."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)
decode_ops = pytest.importorskip("vllm.v1.attention.ops.triton_turboquant_decode")
if "block_table_rows" not in inspect.signature(decode_ops.triton_turboquant_decode_attention).parameters:
    pytest.skip("the installed vLLM does not carry turboquant-spec-decode", allow_module_level=True)

from vllm.v1.attention.backends import turboquant_attn  # noqa: E402

from turboquant_case import Case, K, check_causal, rel  # noqa: E402
from turboquant_case import builder as make_builder  # noqa: E402


def _case(preset: str, context: list[int], seed: int) -> Case:
    return Case(decode_ops, turboquant_attn, preset, context, seed)


def _builder():
    return make_builder(turboquant_attn, "cuda")


@pytest.mark.parametrize("preset", ["turboquant_k8v4", "turboquant_4bit_nc", "turboquant_3bit_nc"])
def test_expanded_verify_rows_match_the_per_request_path_and_attend_causally(preset):
    case = _case(preset, context=[37, 5, 130], seed=1)
    rows, lens = case.expanded(_builder(), case.seq_lens)
    got = case.decode(case.q, case.block_table, lens, rows)
    torch.cuda.synchronize()
    assert torch.equal(got, case.per_request())
    causal, full = case.dense(causal=True), case.dense(causal=False)
    print(f"{preset}: relative error vs causal {rel(got, causal):.3f}, vs non-causal {rel(got, full):.3f}")
    check_causal(preset, got, causal, full)


def test_a_captured_graph_replays_later_steps_correctly():
    """Capture the expanded decode once, then replay it for steps with other lengths and
    requests, writing only the builder's persistent buffers, as vLLM's full graphs do."""
    case = _case("turboquant_k8v4", context=[60, 61, 62], seed=2)
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

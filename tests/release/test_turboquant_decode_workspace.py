"""TurboQuant's decode scratch and the shared workspace of the installed vLLM release (0.21.0 ..
0.23.0), run on the CPU with the release's own WorkspaceManager: the series less
turboquant-decode-workspace against the whole series.

The workspace locks once CUDA graphs are captured. A builder made before that, as the model
runner makes it, must leave room for the largest single-token decode that can follow; without the
backport nothing does, and the first such decode after the lock asserts (vLLM #42544). Kernels
are not run: the decode kernel is replaced, only the scratch it is handed is looked at.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from . import installed

torch, RELEASE = installed.served("turboquant-decode-workspace")
import turboquant_case  # noqa: E402  (imports torch: after the skip)

BACKEND = "vllm/v1/attention/backends/turboquant_attn.py"
FIX = "turboquant-decode-workspace"
# Sizes no two of which coincide, and large enough that the workspace's 256-byte rounding of each
# buffer does not hide a buffer of the wrong dtype
HEADS, HEAD_SIZE, SPLITS, SEQS = 12, 64, 5, 8


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tq-workspace")
    return {
        "less": installed.load(tmp, RELEASE, BACKEND, True, skip=FIX),
        "series": installed.load(tmp, RELEASE, BACKEND, True),
    }


@pytest.fixture
def workspace(monkeypatch):
    """The release's workspace manager on the CPU, as the worker makes it before loading."""
    from vllm.v1.worker import workspace

    # a resize hands the old buffer back to the device's allocator first: there is none here
    monkeypatch.setattr(torch.accelerator, "empty_cache", lambda: None)
    workspace.init_workspace_manager(torch.device("cpu"))
    yield workspace
    workspace.reset_workspace_manager()


def _builder(module):
    """A builder of a model of HEADS query heads of HEAD_SIZE, serving up to SEQS sequences, MTP."""
    return turboquant_case.builder(
        module,
        "cpu",
        max_num_batched_tokens=64,
        max_num_seqs=SEQS,
        kv_cache_spec=SimpleNamespace(head_size=HEAD_SIZE),
        model_config=SimpleNamespace(dtype=torch.bfloat16, get_num_attention_heads=lambda parallel: HEADS),
        attention_config=SimpleNamespace(tq_max_kv_splits_for_cuda_graph=SPLITS),
    )


def _decode(module, monkeypatch, rows: int) -> dict:
    """The release's _decode_attention over `rows` single-token decodes; what the kernel got."""
    got = {}
    monkeypatch.setattr(module, "triton_turboquant_decode_attention", lambda **kw: got.update(kw) or kw["query"])
    impl = turboquant_case.decode_impl(head_size=HEAD_SIZE, num_heads=HEADS, max_num_kv_splits=SPLITS)
    meta = SimpleNamespace(
        block_table=torch.zeros(rows, 4, dtype=torch.int32),
        seq_lens=torch.ones(rows, dtype=torch.int32),
        decode_token_rows=None,
        decode_token_seq_lens=None,
    )
    query = torch.zeros(rows, HEADS, HEAD_SIZE, dtype=torch.bfloat16)
    module.TurboQuantAttentionImpl._decode_attention(impl, query, None, meta, None, None, None, SimpleNamespace())
    return got


def test_without_the_fix_the_first_decode_after_the_lock_asserts(modules, workspace, monkeypatch):
    _builder(modules["less"])
    workspace.lock_workspace()  # capture ran no TurboQuant decode: nothing sized the scratch
    with pytest.raises(AssertionError, match="Workspace is locked but allocation from .*_decode_attention"):
        _decode(modules["less"], monkeypatch, 1)


def test_with_the_fix_every_decode_up_to_max_num_seqs_fits_after_the_lock(modules, workspace, monkeypatch):
    _builder(modules["series"])
    workspace.lock_workspace()
    for rows in (1, SEQS // 2, SEQS):
        got = _decode(modules["series"], monkeypatch, rows)
        assert got["mid_o_buf"].shape == (rows, HEADS, SPLITS, HEAD_SIZE + 1)
        assert got["output_buf"].shape == (rows, HEADS, HEAD_SIZE) and got["output_buf"].dtype == torch.bfloat16
        assert got["lse_buf"].shape == (rows, HEADS)
    # the reservation is what the bound is: one sequence more no longer fits
    with pytest.raises(AssertionError, match="Workspace is locked"):
        _decode(modules["series"], monkeypatch, SEQS + 1)


def test_the_fix_reserves_nothing_where_the_worker_made_no_workspace(modules):
    """Builders made outside a worker (tests, tools) find no manager and must not make one."""
    from vllm.v1.worker import workspace

    _builder(modules["series"])
    assert not workspace.is_workspace_manager_initialized()

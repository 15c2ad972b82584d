"""A GDN metadata builder of the installed vLLM release, pristine or patched, built on the CPU with
the configuration it reads, and the batches it is handed: shared by the routing tests and the
builder's host-cost benchmark (benchmarks/bench_gdn_builder_host.py)."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import sys
from pathlib import Path
from types import SimpleNamespace

from . import installed

BUILDER = "vllm/v1/attention/backends/gdn_attn.py"
K = 3  # num_speculative_tokens


@contextlib.contextmanager
def cpu_only(monkeypatch):
    """What the builders need to run without a GPU driver."""
    from vllm.triton_utils import triton

    # Without a driver vLLM swaps Triton for a placeholder; the builder's prompt-chunk
    # bookkeeping only needs its ceiling division.
    if not hasattr(triton, "cdiv"):
        monkeypatch.setattr(triton, "cdiv", lambda a, b: -(-a // b), raising=False)
    # Later releases pin host buffers before copying them to the device; there is none here.
    # Modules imported earlier in the session (by other release tests) hold their own copy.
    importlib.import_module("vllm.utils.torch_utils")
    for name, module in list(sys.modules.items()):
        if name.startswith("vllm.") and getattr(module, "PIN_MEMORY", False) is True:
            monkeypatch.setattr(module, "PIN_MEMORY", False)
    yield


def modules(tmp: Path, release) -> dict:
    return {side: installed.load(tmp, release, BUILDER, side == "patched") for side in ("pristine", "patched")}


def builder(torch, module, speculative: bool = True):
    from vllm.v1.kv_cache_interface import MambaSpec

    config = SimpleNamespace(
        compilation_config=SimpleNamespace(cudagraph_mode=SimpleNamespace(has_full_cudagraphs=lambda: False),
                                           max_cudagraph_capture_size=None),
        speculative_config=SimpleNamespace(num_speculative_tokens=K, method="ngram", parallel_drafting=False)
        if speculative else None,
        scheduler_config=SimpleNamespace(max_num_seqs=64),
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


def batch(torch, query_lens: list[int], computed: list[int]):
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


def same(torch, a, b) -> bool:
    """Equal metadata, tensors compared by value."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and torch.equal(a, b)
    # Each loaded module defines its own metadata class: compare by name and fields.
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b) and type(a).__name__ == type(b).__name__:
        return all(same(torch, getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(torch, x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(torch, a[k], b[k]) for k in a)
    return a == b

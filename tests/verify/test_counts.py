"""The accepted-count range check without a GPU: the summary, and the hook on a stand-in for the
release's GDN builder (same module path, class and metadata field names as 0.20.0 .. 0.33.0)."""

from __future__ import annotations

import sys
import types
from types import SimpleNamespace

import pytest

from vllm_backports.verify import counts


def serving(k: int) -> counts.Record:
    record = counts.Record(k=k)
    record.serving()
    return record


def test_counts_inside_one_to_k_plus_one_are_in_range():
    record = serving(3)
    record.observe(num_rows=4, low=1, high=4, outside=0)
    record.observe(num_rows=2, low=2, high=3, outside=0)
    s = counts.summarise(record)
    assert s["status"] == "checked" and s["in_range"] is True
    assert (s["builds"], s["rows"], s["min"], s["max"], s["outside"], s["range"]) == (2, 6, 1, 4, 0, [1, 4])
    assert s["examples"] == []


def test_a_zero_or_a_count_above_k_plus_one_is_reported_with_the_build_it_came_in():
    record = serving(3)
    record.observe(4, 1, 4, 0)
    record.observe(3, 0, 2, 1)
    record.observe(2, 1, 5, 1)
    s = counts.summarise(record)
    assert s["in_range"] is False and s["outside"] == 2 and (s["min"], s["max"]) == (0, 5)
    assert [e["build"] for e in s["examples"]] == [2, 3] and s["examples"][0]["min"] == 0


def test_examples_stop_at_the_first_few():
    record = serving(1)
    for _ in range(counts.EXAMPLES + 3):
        record.observe(1, 0, 0, 1)
    s = counts.summarise(record)
    assert len(s["examples"]) == counts.EXAMPLES and s["outside"] == counts.EXAMPLES + 3


def test_no_hook_and_no_speculative_build_are_said_not_left_silent():
    s = counts.summarise(None, "no such builder")
    assert s == {"status": "unavailable", "why": "no such builder", "in_range": None}
    s = counts.summarise(counts.Record(k=3))
    assert s["status"] == "not seen" and s["in_range"] is None and "speculative rows" in s["why"]


def test_start_up_builds_are_kept_apart_and_not_judged():
    """The engine's own profiling and warm-up runs build on dummy inputs before any request."""
    record = counts.Record(k=3)
    record.observe(8, 0, 1, 8)
    s = counts.summarise(record)
    assert s["status"] == "not seen" and s["startup"]["outside"] == 8 and s["builds"] == 0
    record.serving()
    record.observe(2, 1, 3, 0)
    s = counts.summarise(record)
    assert s["status"] == "checked" and s["in_range"] is True and (s["builds"], s["outside"]) == (1, 0)
    assert (s["startup"]["builds"], s["startup"]["min"]) == (1, 0)


class Builder:
    """Stands in for GDNAttentionMetadataBuilder: build() returns what it was handed."""

    def build(self, common_prefix_len, metadata, num_accepted_tokens=None, num_decode_draft_tokens_cpu=None):
        return metadata


@pytest.fixture
def gdn_module(monkeypatch):
    module = types.ModuleType(counts.BUILDER_MODULE)
    module.GDNAttentionMetadataBuilder = type("GDNAttentionMetadataBuilder", (Builder,), {})
    monkeypatch.setitem(sys.modules, counts.BUILDER_MODULE, module)
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    return module


def meta(n: int, values: list[int]) -> SimpleNamespace:
    torch = pytest.importorskip("torch")  # the hook reads tensors; the summary above needs none
    return SimpleNamespace(num_spec_decodes=n, num_accepted_tokens=torch.tensor(values, dtype=torch.int32))


def test_the_hook_reads_only_the_speculative_rows_of_each_build(gdn_module):
    record, why = counts.install(k=3)
    assert why is None
    record.serving()
    b = gdn_module.GDNAttentionMetadataBuilder()
    # a graph step pads past num_spec_decodes (with 1 in the release; a 0 there is not a row's)
    assert b.build(0, meta(2, [2, 4, 0, 0])).num_spec_decodes == 2
    b.build(0, meta(0, [1]))  # no speculative row: nothing to read
    b.build(0, SimpleNamespace(num_spec_decodes=0, num_accepted_tokens=None))
    b.build(0, meta(3, [1, 0, 5]))
    s = counts.summarise(record)
    assert (s["builds"], s["rows"], s["min"], s["max"], s["outside"]) == (2, 5, 0, 5, 2)
    assert s["in_range"] is False and s["examples"] == [{"build": 2, "rows": 3, "min": 0, "max": 5, "outside": 2}]


def test_metadata_without_the_fields_says_which_it_lacks(gdn_module):
    record, _ = counts.install(k=3)
    record.serving()
    gdn_module.GDNAttentionMetadataBuilder().build(0, SimpleNamespace(num_spec_decodes=2))
    s = counts.summarise(record)
    assert s["status"] == "not seen" and s["why"] == "SimpleNamespace has no num_accepted_tokens"


def test_a_release_without_the_builder_says_so(monkeypatch, gdn_module):
    del gdn_module.GDNAttentionMetadataBuilder
    record, why = counts.install(k=3)
    assert record is None and "has no GDNAttentionMetadataBuilder.build" in why
    monkeypatch.setitem(sys.modules, counts.BUILDER_MODULE, None)  # import fails
    record, why = counts.install(k=3)
    assert record is None and why.startswith(f"no {counts.BUILDER_MODULE}")
    assert counts.summarise(record, why)["status"] == "unavailable"


def test_builders_in_other_processes_are_not_claimed(monkeypatch, gdn_module):
    record, why = counts.install(k=3, tp=2)
    assert record is None and "TP > 1" in why
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "1")
    record, why = counts.install(k=3)
    assert record is None and "another process" in why

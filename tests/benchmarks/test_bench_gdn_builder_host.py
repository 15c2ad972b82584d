"""The GDN builder host-cost benchmark against the installed release (skipped without torch and
vLLM; .ci/run's CPU vLLM step runs it and may not skip)."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

if not os.environ.get("VLLM_BACKPORTS_REQUIRE_VLLM"):
    pytest.importorskip("torch")
    pytest.importorskip("vllm")

from benchmarks import bench_gdn_builder_host as bench


def test_times_both_builders_in_both_modes_after_checking_they_agree_without_speculation(tmp_path):
    out = tmp_path / "host.json"
    result = CliRunner().invoke(bench.main, ["--decodes", "4", "--prefills", "1", "--calls", "3",
                                             "--samples", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert (data["decodes"], data["prefills"], data["samples"]) == (4, 1, 2)
    for mode in ("none", "ngram", "ngram-plain"):
        row = data["modes"][mode]
        assert row["pristine_ns"] > 0 and row["patched_ns"] > 0
        assert abs(row["patched_minus_pristine_ns"] - (row["patched_ns"] - row["pristine_ns"])) <= 1  # rounding
    # the plain step the candidate builds as the release does, beside the series' build of it
    assert data["modes"]["ngram-plain"]["lean_ns"] > 0 and "lean_ns" not in data["modes"]["ngram"]

"""The alternatives kept for comparison (benchmarks/alternatives) fit the real pristine files of the
release they are written for, on top of the shipped series minus the fix they stand in for: the
GPU runs apply them exactly so."""

from __future__ import annotations

import ast

from benchmarks.alternatives.created import MIGRATE_PATCH
from cli_runner import run
from vllm_backports.hunks import Mismatch, apply_file
from vllm_backports.patchfile import parse


def test_gdn_state_migrate_applies_after_the_0_20_0_series_without_gdn_spec_state(tmp_path):
    site = tmp_path / "site"
    # spec-prefill-decode-graph's hunk sits below gdn-spec-state's in the runner, at the line
    # numbers gdn-spec-state leaves: it goes too
    applied = run("--vllm", "0.20.0", "--fetch", "--target", str(site), "--skip", "gdn-spec-state",
                  "--skip", "spec-prefill-decode-graph", "--json")
    assert applied.code == 0, applied.out + applied.err
    assert [b["id"] for b in applied.json["backports"] if b["state"] == "applied"] == [
        "turboquant-spec-decode", "gdn-mixed-batch-gates", "turboquant-prefill-fastpath"]
    patch = parse(MIGRATE_PATCH.read_bytes(), MIGRATE_PATCH.name)
    assert patch.header["Origin"].startswith("other, https://github.com/vllm-project/vllm/pull/40738")
    for fpatch in patch.files:
        target = site / fpatch.path
        before = target.read_bytes() if target.exists() else None
        assert (before is None) == fpatch.creates, fpatch.path
        after = apply_file(before, fpatch)
        assert not isinstance(after, Mismatch), after
        tree = ast.parse(after)  # the result is valid Python
        if fpatch.path.endswith("gdn_linear_attn.py"):
            assert "migrate_gdn_state" in {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


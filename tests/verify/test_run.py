"""verify's orchestration without a GPU: sites, verdicts of a control and a target."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vllm_backports.errors import UsageError
from vllm_backports.verify.run import PACKAGE_ROOT, Plan, conclude, engine_env, site_version


def row(site: str, scenario: str, errors: int) -> dict:
    return {"site": site, "scenario": scenario, "errors": errors}


def plan(tmp_path: Path, control: Path | None, **kw) -> Plan:
    return Plan(batches=(16,), modes=("graphs",), presets=("ngram",), tp=1, threshold=None, work=tmp_path,
                additional_config={}, control=control, **kw)


def test_a_control_that_fails_and_a_target_that_passes_is_a_proof(tmp_path):
    rows = [row("target", "baseline", 0), row("target", "ngram", 0), row("control", "ngram", 214)]
    r = conclude(rows, 0.2, 1.0, plan(tmp_path, tmp_path), "0.31.0")
    assert r["passed"] and r["control_failed"] and r["proof"] == "control fails, target passes"


def test_a_clean_control_makes_the_scenario_weak_not_a_proof(tmp_path):
    rows = [row("target", "baseline", 0), row("target", "ngram", 0), row("control", "ngram", 0)]
    r = conclude(rows, 0.2, 1.0, plan(tmp_path, tmp_path), "0.31.0")
    assert r["passed"] and r["control_failed"] is False and r["proof"].startswith("weak")


def test_the_control_never_decides_whether_the_target_passes(tmp_path):
    rows = [row("target", "baseline", 0), row("target", "ngram", 3), row("control", "ngram", 200)]
    r = conclude(rows, 0.2, 1.0, plan(tmp_path, tmp_path), "0.31.0")
    assert not r["passed"] and r["proof"] == "target fails"
    assert "proof" not in conclude(rows[:2], 0.2, 1.0, plan(tmp_path, None), "0.31.0")


def test_a_baseline_error_means_no_calibration(tmp_path):
    rows = [row("target", "baseline", 1), row("target", "ngram", 0)]
    assert conclude(rows, 0.2, 1.0, plan(tmp_path, None), "0.31.0")["calibrated"] is False
    assert conclude(rows[1:], 3.5, 1.0, plan(tmp_path, None), "0.31.0")["calibrated"] is False


def test_the_scenario_names_the_model_class_the_plan_ran(tmp_path):
    rows = [row("target", "baseline", 0)]
    assert conclude(rows, 0.2, 1.0, plan(tmp_path, None), "0.31.0")["scenario"]["model_class"] == "qwen3_next"
    r = conclude(rows, 0.2, 1.0, plan(tmp_path, None, model_class="qwen3_5"), "0.31.0")
    assert r["scenario"]["model_class"] == "qwen3_5"


def test_the_control_site_comes_before_this_pythons_vllm(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/opt/site")
    parts = engine_env(None, tmp_path / "ctl")["PYTHONPATH"].split(os.pathsep)
    assert parts == [str(PACKAGE_ROOT), str(tmp_path / "ctl"), "/opt/site"]
    assert engine_env(None)["PYTHONPATH"].split(os.pathsep) == [str(PACKAGE_ROOT), "/opt/site"]


def test_site_version_reads_the_metadata_without_importing(tmp_path):
    info = tmp_path / "vllm-0.31.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.31.0\n")
    assert site_version(tmp_path) == "0.31.0"
    with pytest.raises(UsageError, match="no vLLM installed there"):
        site_version(tmp_path / "empty")

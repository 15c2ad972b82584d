"""Judging regrets and calibrating the threshold (the GPU part, the reference model, is not here)."""

from __future__ import annotations

from vllm_backports.verify.oracle import judge
from vllm_backports.verify.run import CALIBRATION_CAP, CALIBRATION_FLOOR, calibrated_threshold


def test_judge_counts_errors_sequences_and_the_earliest_position():
    v = judge([[0.1, 0.2, 3.0, 0.0], [0.0, 0.0], [0.5, 2.5]], threshold=1.0)
    assert (v.sequences, v.tokens, v.errors, v.bad_sequences) == (3, 8, 2, 2)
    assert v.first_error == 1 and v.worst == 3.0


def test_judge_threshold_is_strict():
    assert judge([[1.0]], threshold=1.0).errors == 0
    assert judge([[1.0001]], threshold=1.0).errors == 1


def test_clean_run_has_no_first_error():
    v = judge([[0.0, 0.3]], threshold=1.0)
    assert v.errors == 0 and v.first_error is None and v.as_dict()["first_error_at"] is None


def test_calibrated_threshold_doubles_the_baseline_noise_with_a_floor():
    assert calibrated_threshold(0.1) == CALIBRATION_FLOOR
    assert calibrated_threshold(0.8) == 1.6
    # the baseline's own worst token always passes the calibrated threshold
    for noise in (0.0, 0.2, 0.59, 1.4, CALIBRATION_CAP):
        assert judge([[noise]], calibrated_threshold(noise)).errors == 0

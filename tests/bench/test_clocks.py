"""Reading nvidia-smi's clock state."""

from __future__ import annotations

import pytest

from vllm_backports.bench import clocks


def test_a_line_is_read_into_numbers_text_and_none():
    line = "NVIDIA H100 80GB HBM3, 1980, 2619, 1980, 2619, [N/A], 2619, Enabled, 312.45, 700.00, 41, 0x0000000000000004"
    got = clocks.parse(clocks.FIELDS, line)
    assert got["name"] == "NVIDIA H100 80GB HBM3"
    assert got["clocks.sm"] == 1980 and got["power.draw"] == pytest.approx(312.45)
    assert got["clocks.applications.graphics"] is None
    assert got["persistence_mode"] == "Enabled"
    assert got["clocks_throttle_reasons.active"] == 4


def test_a_short_line_is_refused():
    with pytest.raises(ValueError, match="12 fields asked"):
        clocks.parse(clocks.FIELDS, "H100, 1980")


def test_without_nvidia_smi_the_record_says_why(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert "error" in clocks.read()
    assert "error" in clocks.lock(1500)

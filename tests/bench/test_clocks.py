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


@pytest.mark.parametrize(
    ("named", "index"),
    [("1", "1"), (" 3 ", "3"), ("", "0"), (None, "0"), ("1,0", "1"), ("GPU-5f0c,GPU-77aa", "GPU-5f0c")],
)
def test_the_gpu_read_is_the_one_cuda_visible_devices_names_alone(named, index):
    environ = {} if named is None else {"CUDA_VISIBLE_DEVICES": named}
    assert clocks.visible_gpu(environ) == index


def test_read_asks_nvidia_smi_for_the_visible_gpu(monkeypatch, tmp_path):
    # a stand-in nvidia-smi that answers with the id it was asked for as the GPU's name
    smi = tmp_path / "nvidia-smi"
    smi.write_text('#!/bin/sh\nfor a; do case $a in --id=*) id=${a#--id=};; esac; done\necho "GPU$id' + ", 1" * 11 + '"\n')
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert clocks.read()["name"] == "GPU1"
    assert clocks.read(0)["name"] == "GPU0"

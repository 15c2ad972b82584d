"""Reading nvidia-smi's clock state."""

from __future__ import annotations

import os
import shutil
import time
from datetime import datetime

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
    smi.write_text(
        '#!/bin/sh\nfor a; do case $a in --id=*) id=${a#--id=};; esac; done\necho "GPU$id' + ", 1" * 11 + '"\n'
    )
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert clocks.read()["name"] == "GPU1"
    assert clocks.read(0)["name"] == "GPU0"


def test_a_throttle_mask_is_named_bit_by_bit():
    assert clocks.reasons(0x5) == ["gpu_idle", "sw_power_cap"]
    assert clocks.reasons(0x40 | 0x1000) == ["hw_thermal_slowdown", "0x1000"]
    assert clocks.reasons(0) == [] and clocks.reasons(None) == []


def sample(t: float, sm: int, mask: int) -> str:
    stamp = datetime.fromtimestamp(t).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]  # nvidia-smi's milliseconds
    return f"{stamp}, {sm}, 650.12, 61, 0x{mask:016x}\n"


def test_a_window_sums_up_only_the_samples_taken_within_it(tmp_path):
    path = tmp_path / "gpu-0.csv"
    t = 1_795_889_000.0
    path.write_text(
        sample(t, 1980, 0x1)
        + sample(t + 1, 1935, 0x4)
        + "Unable to determine the device handle\n"  # nvidia-smi's complaint in place of a reading
        + sample(t + 2, 1890, 0x1 | 0x20)
        + sample(t + 3, 1500, 0x8)
    )
    s = clocks.Sampler(path, gpu=0)
    got = s.window(t + 0.5, t + 2.5)
    assert got == {
        "samples": 2,
        "sm_mhz": [1890, 1935],
        "power_w_max": pytest.approx(650.12),
        "temperature_max": 61,
        "reasons": ["sw_power_cap", "sw_thermal_slowdown"],  # the GPU idle between steps is no reason
    }
    assert s.window(t - 10, t - 5) == {"samples": 0}


def test_a_line_still_being_written_waits_for_its_end(tmp_path):
    path = tmp_path / "gpu-0.csv"
    t = 1_795_889_000.0
    whole = sample(t, 1980, 0)
    path.write_text(whole[:20])
    s = clocks.Sampler(path, gpu=0)
    assert s.window(t - 1, t + 1) == {"samples": 0}
    path.write_text(whole)
    assert s.window(t - 1, t + 1)["sm_mhz"] == [1980, 1980]


def test_the_sampler_runs_nvidia_smis_loop_on_the_gpu_and_stops_it(tmp_path, monkeypatch):
    # a stand-in that, as nvidia-smi -lms does, prints a reading until it is stopped
    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        '#!/bin/sh\necho "$@" > "$(dirname "$0")/args"\n'
        'while :; do echo "$(date "+%Y/%m/%d %H:%M:%S.%3N"), 1965, 300.5, 40, 0x0000000000000004"; sleep 0.05; done\n'
    )
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    s = clocks.Sampler(tmp_path / "gpu-0.csv", every_ms=50)
    t0 = time.time()
    s.start()
    try:
        deadline = time.time() + 20
        while s.window(t0, time.time())["samples"] < 3 and time.time() < deadline:
            time.sleep(0.05)
        got = s.window(t0, time.time())
    finally:
        s.stop()
    assert got["samples"] >= 3 and got["sm_mhz"] == [1965, 1965] and got["reasons"] == ["sw_power_cap"]
    args = (tmp_path / "args").read_text().split()
    assert "--id=1" in args and "--loop-ms=50" in args
    assert any(a.startswith("--query-gpu=timestamp,clocks.sm") for a in args)
    assert s.proc is not None and s.proc.poll() is not None


def test_without_nvidia_smi_the_windows_say_why(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    s = clocks.Sampler(tmp_path / "gpu-0.csv", gpu=0)
    s.start()
    s.stop()
    got = s.window(0, time.time())
    assert got["samples"] == 0 and "nvidia-smi" in got["error"]


@pytest.mark.skipif(shutil.which("stdbuf") is None, reason="no stdbuf here")
def test_a_sampler_whose_nvidia_smi_cannot_start_says_how_it_ended(tmp_path, monkeypatch):
    # stdbuf starts, but finds no nvidia-smi to run
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "stdbuf").symlink_to(shutil.which("stdbuf"))
    monkeypatch.setenv("PATH", str(bin_dir))
    s = clocks.Sampler(tmp_path / "gpu-0.csv", gpu=0)
    s.start()
    assert s.proc is not None
    s.proc.wait(timeout=30)
    assert s.window(0, time.time()) == {"samples": 0, "error": "the sampler exited 127"}

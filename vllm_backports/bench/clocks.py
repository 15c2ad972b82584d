"""The GPU's clock state, read with nvidia-smi, for each A/B run's record: what the SM and memory
clocks were at each start and end and in each round, their limits, whether application clocks
or a lock are set, and why the clocks were held back at that moment (power, thermal); and,
sampled all through a run, what the clock and its limits did while each round was timed."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

FIELDS = (
    "name",
    "clocks.sm",
    "clocks.mem",
    "clocks.max.sm",
    "clocks.max.mem",
    "clocks.applications.graphics",
    "clocks.applications.memory",
    "persistence_mode",
    "power.draw",
    "power.limit",
    "temperature.gpu",
    "clocks_throttle_reasons.active",
)
# What Sampler reads: a reading after a round sees the GPU idle, not what slowed the round
SAMPLED = ("timestamp", "clocks.sm", "power.draw", "temperature.gpu", "clocks_throttle_reasons.active")
# The bits of clocks_throttle_reasons.active, as NVML names them (nvmlClocksThrottleReason*)
REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def parse(fields: tuple[str, ...], line: str) -> dict:
    """One CSV line of `nvidia-smi --query-gpu=... --format=csv,noheader,nounits`: numbers as
    numbers, "[N/A]" and the like as None, anything else as text."""
    values = [v.strip() for v in line.split(",")]
    if len(values) != len(fields):
        raise ValueError(f"{len(fields)} fields asked, {len(values)} read: {line!r}")
    out: dict = {}
    for name, v in zip(fields, values, strict=True):
        if v.startswith("[") or v in ("", "N/A"):
            out[name] = None
            continue
        try:
            out[name] = int(v, 16) if v.startswith("0x") else int(v)
        except ValueError:
            try:
                out[name] = float(v)
            except ValueError:
                out[name] = v
    return out


def reasons(mask: int | None) -> list[str]:
    """The names of the bits set in a clocks_throttle_reasons.active mask (unknown bits by value)."""
    if not mask:
        return []
    named = [name for bit, name in REASONS.items() if mask & bit]
    rest = mask & ~sum(REASONS)
    return named + ([hex(rest)] if rest else [])


def visible_gpu(environ: Mapping[str, str] = os.environ) -> str:
    """The GPU this process computes on, as nvidia-smi's --id takes it: the first one
    CUDA_VISIBLE_DEVICES names (an index, counted in nvidia-smi's order when lab.steps' GPU=N set
    it with CUDA_DEVICE_ORDER=PCI_BUS_ID, or a UUID), else the first GPU."""
    first = environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return first or "0"


def chosen(gpu: int | str | None) -> int | str:
    """`gpu` where one is named, else the one this process computes on (visible_gpu)."""
    return visible_gpu() if gpu is None else gpu


def read(gpu: int | str | None = None) -> dict:
    """The state of GPU `gpu` (default: the visible one) now; {"error": ...} where nvidia-smi
    cannot tell (a record, never a reason to stop a run)."""
    gpu = chosen(gpu)
    try:
        done = subprocess.run(
            ["nvidia-smi", f"--id={gpu}", f"--query-gpu={','.join(FIELDS)}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return {"error": str(exc)}
    if done.returncode != 0:
        return {"error": (done.stderr or done.stdout).strip()[:300]}
    try:
        return parse(FIELDS, done.stdout.strip().splitlines()[0])
    except (ValueError, IndexError) as exc:
        return {"error": str(exc)}


def lock(mhz: int, gpu: int | str | None = None) -> dict:
    """Lock the SM clock at `mhz` (nvidia-smi -lgc; needs root, and is left undone on a machine
    whose settings are not ours to change). The exit status and output are the record."""
    gpu = chosen(gpu)
    return _smi(["-i", str(gpu), "-lgc", f"{mhz},{mhz}"])


def unlock(gpu: int | str | None = None) -> dict:
    """Undo lock (nvidia-smi -rgc)."""
    gpu = chosen(gpu)
    return _smi(["-i", str(gpu), "-rgc"])


def _smi(args: list[str]) -> dict:
    try:
        done = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return {"args": args, "error": str(exc)}
    return {"args": args, "rc": done.returncode, "output": (done.stdout + done.stderr).strip()[:300]}


class Sampler:
    """nvidia-smi's own loop (`-lms`), one process for a run, writing SAMPLED to a CSV file every
    `every_ms`; window() tells what the samples taken between two moments saw. A machine without
    nvidia-smi gets windows that say so, never a stopped run."""

    def __init__(self, path: Path, gpu: int | str | None = None, every_ms: int = 200):
        self.path, self.gpu, self.every_ms = path, chosen(gpu), every_ms
        self.proc: subprocess.Popen | None = None
        self.error: str | None = None
        self._read = 0  # bytes of the file parsed so far
        self._samples: list[dict] = []

    def start(self) -> None:
        query = [f"--id={self.gpu}", f"--query-gpu={','.join(SAMPLED)}", "--format=csv,noheader,nounits"]
        # line-buffered, so that a round's samples are in the file when it ends
        command = (["stdbuf", "-oL"] if shutil.which("stdbuf") else []) + ["nvidia-smi", *query]
        command.append(f"--loop-ms={self.every_ms}")
        try:
            with open(self.path, "w") as out:
                self.proc = subprocess.Popen(command, stdout=out, stderr=subprocess.DEVNULL)
        except OSError as exc:
            self.error = str(exc)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def _update(self) -> None:
        if not self.path.exists():
            return
        with open(self.path, "rb") as f:
            f.seek(self._read)
            data = f.read()
        complete = data[: data.rfind(b"\n") + 1]  # a line still being written waits for the next call
        self._read += len(complete)
        for line in complete.decode(errors="replace").splitlines():
            try:
                got = parse(SAMPLED, line)
                got["t"] = datetime.strptime(str(got["timestamp"]), "%Y/%m/%d %H:%M:%S.%f").timestamp()
            except (ValueError, TypeError):
                continue  # nvidia-smi's own complaints, in place of a reading
            self._samples.append(got)

    def window(self, t0: float, t1: float) -> dict:
        """What the samples from t0 to t1 (time.time()) saw: their number, the SM clock's least
        and most, the most power and temperature, and every throttle reason met but the GPU being
        idle (a round's host-side gaps)."""
        if self.error is not None:
            return {"samples": 0, "error": self.error}
        self._update()
        got = [x for x in self._samples if t0 <= x["t"] <= t1]
        if not got:
            ended = self.proc.poll() if self.proc is not None else None
            return {"samples": 0} if ended is None else {"samples": 0, "error": f"the sampler exited {ended}"}

        def values(name: str) -> list:
            return [x[name] for x in got if isinstance(x[name], int | float)]

        sm, power, temp = values("clocks.sm"), values("power.draw"), values("temperature.gpu")
        mask = 0
        for m in values("clocks_throttle_reasons.active"):
            mask |= int(m)
        return {
            "samples": len(got),
            "sm_mhz": [min(sm), max(sm)] if sm else None,
            "power_w_max": max(power) if power else None,
            "temperature_max": max(temp) if temp else None,
            "reasons": [r for r in reasons(mask) if r != "gpu_idle"],
        }

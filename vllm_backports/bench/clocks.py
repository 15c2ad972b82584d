"""The GPU's clock state, read with nvidia-smi, for each A/B run's record: what the SM and memory
clocks were at each start and end and in each round, their limits, whether application clocks
or a lock are set, and why the clocks were held back at that moment (power, thermal)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping

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


def visible_gpu(environ: Mapping[str, str] = os.environ) -> str:
    """The GPU this process computes on, as nvidia-smi's --id takes it: the first one
    CUDA_VISIBLE_DEVICES names (an index, counted in nvidia-smi's order when steps.sh's GPU=N set
    it with CUDA_DEVICE_ORDER=PCI_BUS_ID, or a UUID), else the first GPU."""
    first = environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return first or "0"


def read(gpu: int | str | None = None) -> dict:
    """The state of GPU `gpu` (default: the visible one) now; {"error": ...} where nvidia-smi
    cannot tell (a record, never a reason to stop a run)."""
    gpu = visible_gpu() if gpu is None else gpu
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
    gpu = visible_gpu() if gpu is None else gpu
    return _smi(["-i", str(gpu), "-lgc", f"{mhz},{mhz}"])


def unlock(gpu: int | str | None = None) -> dict:
    """Undo lock (nvidia-smi -rgc)."""
    gpu = visible_gpu() if gpu is None else gpu
    return _smi(["-i", str(gpu), "-rgc"])


def _smi(args: list[str]) -> dict:
    try:
        done = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return {"args": args, "error": str(exc)}
    return {"args": args, "rc": done.returncode, "output": (done.stdout + done.stderr).strip()[:300]}

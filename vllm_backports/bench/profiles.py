"""The profiles that end an A/B run's engines (worker.profile), set side by side: per op and
kernel, its launches and its own device and host time on each arm, and each arm's totals, so
that where the fix costs time (or saves it) is read off one table.

A profile is kept as `profile-ARM-INSTANCE-cLEVEL.json` (every row of torch's key averages, from
the runs after 2026-11-28's fourth) beside the `.txt` table torch prints (60 rows, long names cut
short); the table is read where the JSON is missing.
"""

from __future__ import annotations

import json
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# the lines under torch's table: "Self CPU time total: 852.471ms", "Self CUDA time total: ..."
_TOTAL = re.compile(r"Self (CPU|CUDA|Device|XPU) time total: (\S+)")
_UNITS = {"us": 1.0, "ms": 1e3, "s": 1e6}


@dataclass(frozen=True)
class Op:
    calls: int
    self_device_us: float
    self_cpu_us: float


_NONE = Op(0, 0.0, 0.0)


def rows(averages: Any) -> list[dict]:
    """torch.profiler's key_averages() as JSON rows, by their own device time, most first. "on":
    where the event ran. An op on the host carries as its own device time that of the kernels it
    launched, which are rows of their own: device totals sum the device's rows alone, as torch's
    table does."""
    out = []
    for e in averages:
        # named self_cuda_time_total before torch 2.4
        device = getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0.0)
        out.append(
            {
                "name": e.key,
                "on": "host" if str(getattr(e, "device_type", "CPU")).endswith("CPU") else "device",
                "calls": int(e.count),
                "self_device_us": float(device or 0.0),
                "self_cpu_us": float(e.self_cpu_time_total),
            }
        )
    return sorted(out, key=lambda r: -r["self_device_us"])


def _us(text: str) -> float:
    """A time as torch's table prints it ("1.238s", "371.791ms", "0.000us")."""
    m = re.fullmatch(r"(-?[\d.]+)(us|ms|s)", text.strip())
    if not m:
        raise ValueError(f"not a time: {text!r}")
    return float(m.group(1)) * _UNITS[m.group(2)]


def parse_table(text: str) -> dict[str, Op]:
    """torch's key_averages table: ops by name (a name cut short keeps its "..."; the first row of
    a name printed twice is kept)."""
    lines = text.splitlines()
    header = next((i for i, line in enumerate(lines) if line.strip().startswith("Name")), None)
    if header is None:
        raise ValueError("no table header (Name ...) in the profile")
    names = re.split(r"\s{2,}", lines[header].strip())
    col = {n: i for i, n in enumerate(names)}
    device = next((c for c in ("Self CUDA", "Self Device", "Self XPU") if c in col), None)
    if device is None or "Self CPU" not in col or "# of Calls" not in col:
        raise ValueError(f"the profile's columns are not torch's: {names}")
    ops: dict[str, Op] = {}
    for line in lines[header + 2 :]:  # rows, their cells parted by runs of 2+ spaces
        if line.startswith("-") or not line.strip():
            continue
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) != len(names):
            continue
        ops.setdefault(
            cells[0],
            Op(int(cells[col["# of Calls"]]), _us(cells[col[device]]), _us(cells[col["Self CPU"]])),
        )
    return ops


def read(stem: Path) -> tuple[dict[str, Op], dict[str, float]]:
    """The ops of one profile (`stem`.json, else `stem`.txt) and its totals, as torch's table
    gives them: the own time of every kernel on the device and of every op on the host."""
    js, txt = stem.with_name(stem.name + ".json"), stem.with_name(stem.name + ".txt")
    if js.exists():
        got = json.loads(js.read_text())
        ops = {r["name"]: Op(r["calls"], r["self_device_us"], r["self_cpu_us"]) for r in got}
        return ops, {
            "self_device_us": sum(r["self_device_us"] for r in got if r["on"] == "device"),
            "self_cpu_us": sum(r["self_cpu_us"] for r in got),
        }
    if not txt.exists():
        raise FileNotFoundError(f"no profile {js.name} or {txt.name} in {stem.parent}")
    text = txt.read_text()
    totals = {}
    for kind, value in _TOTAL.findall(text):
        totals["self_cpu_us" if kind == "CPU" else "self_device_us"] = _us(value)
    return parse_table(text), totals


def compare(a: dict[str, Op], b: dict[str, Op]) -> list[dict]:
    """Every op of either arm, those whose own device and host time differ most between the arms
    first. An op one profile lacks is None there: a table of 60 rows leaves the rest out, so
    missing is not the same as never run."""
    out: list[dict[str, Any]] = []
    for name in sorted(set(a) | set(b)):
        x, y = a.get(name), b.get(name)
        dx, dy = x or _NONE, y or _NONE  # what a missing op adds to the difference
        out.append(
            {
                "name": name,
                "calls": (x and x.calls, y and y.calls),
                "self_device_us": (x and x.self_device_us, y and y.self_device_us),
                "self_cpu_us": (x and x.self_cpu_us, y and y.self_cpu_us),
                "weight": abs(dy.self_device_us - dx.self_device_us) + abs(dy.self_cpu_us - dx.self_cpu_us),
            }
        )
    out.sort(key=lambda r: -r["weight"])
    return out


# ops of less own host time than this on either arm are left out of host_speed: their ratios
# are mostly timer noise
SPEED_MIN_US = 1000.0


def host_speed(rows: list[dict]) -> dict[str, float] | None:
    """How much longer B's process took over the same host work than A's, and B's host total at
    A's speed.

    At 1 request a step is host-bound, and where the OS placed each engine's processes has made
    the ops of one arm's process take, at the median, 1.2x to 1.4x as long as the other's (0.31.0,
    H100, 2026-12-06): a host total measures the process as much as the series. An op both arms launched equally often
    does the same work on each unless the series changed it, so the median of those ops' host
    time B/A is the process's factor: a median, because the ops the series did change (its GDN
    op, whose own time holds its Python) would pull a sum their way. None where fewer than five
    ops qualify."""
    ratios = sorted(
        r["self_cpu_us"][1] / r["self_cpu_us"][0]
        for r in rows
        if r["calls"][0]
        and r["calls"][0] == r["calls"][1]
        and min(r["self_cpu_us"][0] or 0.0, r["self_cpu_us"][1] or 0.0) >= SPEED_MIN_US
    )
    if len(ratios) < 5:
        return None
    speed = statistics.median(ratios)
    total_a = sum(r["self_cpu_us"][0] or 0.0 for r in rows)
    total_b = sum(r["self_cpu_us"][1] or 0.0 for r in rows)
    return {"speed": speed, "ops": len(ratios), "host_a_us": total_a, "host_b_at_a_us": total_b / speed}

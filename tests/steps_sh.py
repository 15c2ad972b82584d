"""lab/runbook/steps.sh's release tables, for the tests that check them against apply.py and the
kept alternatives: SERIES, carries, WRITTEN_ON and `without` (the --skip options that leave a
backport out with what is written on its lines), read by running its own lines; LESS, read from
its one line, which stands above them."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def steps(release: str, command: str) -> list[str]:
    """`command` run after steps.sh's own SERIES, carries, WRITTEN_ON and without, for `release`."""
    text = (REPO / "lab/runbook/steps.sh").read_text()
    start = text.index("SERIES=$(")
    body = text[start : text.index("mapfile -t TQ_SKIP", start)]
    script = f"REL={release}\n{body}\n{command}"
    out = subprocess.run(["bash", "-c", script], cwd=REPO, capture_output=True, text=True, check=True)
    return out.stdout.split()


def less() -> list[str]:
    """LESS: the backports steps.sh builds a less-ID site for, where a series carries them."""
    return re.search(r"^LESS=\((.*)\)", (REPO / "lab/runbook/steps.sh").read_text(), re.M).group(1).split()


def without(release: str, backport: str) -> list[str]:
    return steps(release, f"without {backport}")


def skipped(release: str, backport: str) -> set[str]:
    """The backports `without` leaves out: the one named and what is written on it."""
    return set(without(release, backport)[1::2])

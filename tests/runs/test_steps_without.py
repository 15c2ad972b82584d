"""docs/runs/steps.sh's `without`: the --skip options that leave a backport out of a release's
series together with what is written on its lines (the ctl and less-ID control sites)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def without(release: str, backport: str) -> list[str]:
    """`without BACKPORT` for `release`, with steps.sh's own SERIES, carries and WRITTEN_ON."""
    text = (REPO / "docs/runs/steps.sh").read_text()
    start = text.index("SERIES=$(")
    body = text[start : text.index("mapfile -t TQ_SKIP", start)]
    script = f"REL={release}\n{body}\nwithout {backport}"
    out = subprocess.run(["bash", "-c", script], cwd=REPO, capture_output=True, text=True, check=True)
    return out.stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize(
    "release, backport, skips",
    [
        # 0.20: turboquant-prefill-fastpath is written on turboquant-spec-decode; nothing on it
        ("0.20.0", "turboquant-spec-decode", ["turboquant-spec-decode", "turboquant-prefill-fastpath"]),
        ("0.20.0", "turboquant-prefill-fastpath", ["turboquant-prefill-fastpath"]),
        # 0.21 .. 0.23: turboquant-decode-workspace is written on both
        (
            "0.22.1",
            "turboquant-spec-decode",
            ["turboquant-spec-decode", "turboquant-prefill-fastpath", "turboquant-decode-workspace"],
        ),
        ("0.23.0", "turboquant-prefill-fastpath", ["turboquant-prefill-fastpath", "turboquant-decode-workspace"]),
        ("0.23.0", "turboquant-decode-workspace", ["turboquant-decode-workspace"]),
        # 0.24: the release reserves the scratch itself, so the series does not carry it
        ("0.24.0", "turboquant-prefill-fastpath", ["turboquant-prefill-fastpath"]),
        ("0.26.0", "spec-prefill-decode-graph", ["spec-prefill-decode-graph"]),
    ],
)
def test_a_backport_leaves_with_what_is_written_on_it(release, backport, skips):
    assert without(release, backport) == [x for s in skips for x in ("--skip", s)]

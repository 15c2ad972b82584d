"""benchmarks/bench_apply.py and bench_fetch.py refuse what they cannot time in one line (exit 2),
before any run or download."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def script(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / name), *args], capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("bench_fetch.py", ("--vllm", "9.9.9", "--repeat", "1"), "9.9.9: not a release versions.toml lists"),
        ("bench_fetch.py", ("--repeat", "0"), "'--repeat': 0 is not in the range x>=1"),
        ("bench_apply.py", ("--site", str(REPO), "--repeat", "0"), "'--repeat': 0 is not in the range x>=1"),
    ],
)
def test_bad_options_are_one_line_not_a_traceback(name, args, message):
    r = script(name, *args)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr
    assert r.stdout == ""

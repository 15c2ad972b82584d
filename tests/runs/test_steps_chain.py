"""lab.chain: `put` places each piece where the chain reads it, and `chain ... upstream-gpu` needs
the sdist, shows the release's own tests waiting, and says so when the chain stops before them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "tree"
    shutil.copytree(REPO / "lab", root / "lab", ignore=shutil.ignore_patterns("__pycache__"))
    rel = f"0.0.0-c{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "REL": rel,
        "OUT": str(tmp_path / "out"),
        "CHAINS_DIR": str(tmp_path / "chains"),
    }
    return root, env, tmp_path / "home"


def steps(root: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "lab.steps", *args]
    return subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=60)


def test_put_places_each_piece_where_the_chain_reads_it(tree):
    root, env, home = tree
    rel = env["REL"]
    for folder, name in (
        (f".stage-{rel}/p0", "part.0"),
        (f".stage-fi-{rel}/p1", "fi.tar.1"),
        (f".stage-sdist-{rel}", "sdist.sha256"),
    ):
        (root / folder).mkdir(parents=True)
        (root / folder / name).write_text(name)
    done = steps(root, env, "put", "p0", "fi-p1", "sdist")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (home / "vllm-stage/part.0").read_text() == "part.0"
    assert (home / "fi/fi.tar.1").read_text() == "fi.tar.1"
    assert (home / "sdist/sdist.sha256").read_text() == "sdist.sha256"
    bad = steps(root, env, "put", "px")
    assert bad.returncode == 1 and "put: unknown piece px" in bad.stdout


def test_upstream_gpu_needs_the_sdist_put_first(tree):
    root, env, home = tree
    (root / f".stage-{env['REL']}").mkdir()
    (root / f".stage-{env['REL']}/install.sh").write_text("exit 0\n")
    done = steps(root, env, "chain", "upstream-gpu")
    assert done.returncode == 1 and "needs the sdist put first" in done.stdout
    assert not (Path(env["CHAINS_DIR"])).exists()


def test_a_chain_that_stops_before_upstream_gpu_says_so_in_its_result(tree):
    root, env, home = tree
    (root / f".stage-{env['REL']}").mkdir()
    (root / f".stage-{env['REL']}/install.sh").write_text("exit 5\n")
    (home / "sdist").mkdir(parents=True)
    (home / "sdist/sdist.sha256").write_text("0\n")
    res = home / "verify-results"
    res.mkdir()
    (res / "upstream-gpu-old.json").write_text("{}")  # an earlier chain's: not this one's result
    done = steps(root, env, "chain", "upstream-gpu")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (res / "upstream-gpu-old.json").exists()
    deadline = time.monotonic() + 30
    while not (home / "chain.rc").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (home / "chain.rc").read_text() == "5\n"
    assert (res / "upstream-gpu.rc").read_text() == "5\n"
    err = (res / "upstream-gpu.err").read_text()
    assert err.startswith("upstream-gpu: waiting for the chain's setup\n")
    assert "upstream-gpu not run: the chain stopped before it (exit 5)" in err
    assert not list(Path(env["CHAINS_DIR"]).iterdir())  # the marker goes with the chain

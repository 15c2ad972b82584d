"""The tool as users install it: the wheel built from this checkout, installed into a fresh venv
outside it, run from another directory. Its versions.toml and backports/ come from the package
data the wheel ships (importlib.resources), not from the checkout, and are checked against their
pins like the checkout's."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from vllm_backports.catalogue import Catalogue

REPO = Path(__file__).resolve().parents[2]


def _run(cmd: list, cwd: Path, env: dict, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _ok(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, f"{done.args}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_installed_wheel_runs_from_its_own_package_data(tmp_path):
    assert not tmp_path.is_relative_to(REPO)
    # Nothing may lead the installed tool back to the checkout.
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VLLM_BACKPORTS_HOME", "PYTHONHOME"}}
    env["VLLM_BACKPORTS_CACHE"] = str(tmp_path / "cache")  # empty: --fetch reads PyPI
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"

    _ok(_run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp_path / "dist", REPO], tmp_path, env))
    [wheel] = (tmp_path / "dist").glob("vllm_backports-*.whl")
    venv = tmp_path / "venv"
    _ok(_run([sys.executable, "-m", "venv", "--without-pip", venv], tmp_path, env))
    python, script = venv / "bin" / "python", venv / "bin" / "vllm-backports"
    # The wheel with the dependencies its metadata declares, by this Python's pip.
    _ok(_run([sys.executable, "-m", "pip", "--python", python, "install", "-q", wheel], tmp_path, env))

    work = tmp_path / "elsewhere"
    work.mkdir()
    home = Path(_ok(_run([python, "-c", "from vllm_backports import cli; print(cli.HOME)"], work, env)).strip())
    site = Path(_ok(_run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], work, env)).strip())
    assert home == site / "vllm_backports" / "data", home

    # The shipped data is the checkout's: versions.toml byte for byte, every series file as pinned.
    assert (home / "versions.toml").read_bytes() == (REPO / "versions.toml").read_bytes()
    versions = tomllib.loads((home / "versions.toml").read_text())
    pins = versions["series"]
    assert sorted(p.name for p in (home / "backports").iterdir()) == sorted(pins)
    for name, raw in pins.items():
        shipped = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (home / "backports" / name).iterdir()}
        assert shipped == raw["files"], name

    listed = json.loads(_ok(_run([script, "list", "--json"], work, env)))
    assert [b["id"] for b in listed["backports"]] == list(versions["backports"])

    # The README's main job: vLLM 0.20.0's pristine files from PyPI, the series applied to them.
    applied = json.loads(_ok(_run([script, "--vllm", "0.20.0", "--fetch", "--json"], work, env)))
    assert applied["series"] == "0.20.0" and applied["requests"] > 0 and not applied["from_cache"], applied
    assert applied["summary"]["failed"] == 0, applied
    assert applied["summary"]["applied"] == len(Catalogue(REPO).releases["0.20.0"].backports), applied

    assert "gdn-spec-state" in _ok(_run([python, "-m", "vllm_backports", "list"], work, env))

    # A shipped patch edited after installation is refused, like one edited in the checkout.
    patch = home / "backports" / "0.20.0" / "0002-gdn-spec-state.patch"
    patch.write_bytes(patch.read_bytes() + b"\n")
    refused = _run([script, "--vllm", "0.20.0", "--fetch", "--json"], work, env)
    assert refused.returncode == 1, (refused.stdout, refused.stderr)
    assert "tampered" in json.loads(refused.stdout)["error"], refused.stdout

"""The runbook's bundle: a lab stage as .stage-REL/pN/part.N and an install.sh that joins the
parts, checks them and installs every wheel offline into $HOME/vllm-site."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys

import pytest

import fake_wheel
from lab import bundle, stage


def wheel(tmp_path, name, version):
    """A wheel with enough incompressible bytes that a 1 MiB part cannot hold two of them."""
    return fake_wheel.wheel(tmp_path, name, version, payload=700 << 10)


@pytest.fixture
def fake_stage(tmp_path, monkeypatch):
    """A stage of two tiny wheels (a fake vllm and a dependency) in a lab cache under tmp_path."""
    cache = tmp_path / "cache"
    blobs = []
    for name, version, role in (("vllm", "0.26.0", "vllm"), ("fakedep", "2.0", "wheel")):
        w = wheel(tmp_path, name, version)
        digest = hashlib.sha256(w.read_bytes()).hexdigest()
        (cache / "store").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(w, cache / "store" / digest)
        blobs.append(stage.Blob(w.name, digest, w.stat().st_size, role))
    found = stage.Stage("0.26.0", "2.11.0", tuple(blobs))
    monkeypatch.setattr(stage, "cache", lambda: cache)
    monkeypatch.setattr(stage, "stage", lambda release, home, log=print: found)
    return found


def install(root, home, tmp_path):
    """install.sh run as chain runs it, python3 being this interpreter (with pip)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if not (bin_dir / "python3").exists():
        (bin_dir / "python3").symlink_to(sys.executable)
    env = {**os.environ, "HOME": str(home), "PATH": f"{bin_dir}:{os.environ['PATH']}", "PIP_NO_INDEX": "1"}
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        ["bash", str(root / ".stage-0.26.0" / "install.sh")], env=env, capture_output=True, text=True, timeout=120
    )


def put(root, home):
    """`lab.steps put p0 p1 ...` from the tree's root: every part into $HOME/vllm-stage."""
    from lab import chain, sites
    from lab.steps import Ctx

    pieces = sorted(p.name for p in (root / ".stage-0.26.0").glob("p*"))
    ctx = Ctx("0.26.0", home, home / "out", None, sites.paths("0.26.0", home))
    here = os.getcwd()
    os.chdir(root)
    try:
        assert chain.put(ctx, pieces) == 0
    finally:
        os.chdir(here)


def test_the_bundle_installs_every_wheel_offline_and_names_the_vllm_it_imports(tmp_path, fake_stage):
    root = tmp_path / "repo"
    out = bundle.bundle("0.26.0", root, part_mb=1, log=lambda m: None)
    parts = sorted(out.glob("p*/part.*"))
    assert [p.relative_to(out).as_posix() for p in parts] == ["p0/part.0", "p1/part.1"]
    assert all(p.stat().st_size <= 1 << 20 for p in parts)
    home = tmp_path / "home"
    put(root, home)
    done = install(root, home, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "vllm 0.26.0 from " + str(home / "vllm-site" / "vllm") in done.stdout
    assert (home / "vllm-site" / "fakedep" / "__init__.py").read_text() == "__version__ = VERSION = '2.0'\n"
    assert not list(home.glob("vllm-wheels.*"))  # the joined tar and its wheels are gone


def test_install_refuses_a_missing_part_and_a_part_that_does_not_hash(tmp_path, fake_stage):
    root = tmp_path / "repo"
    bundle.bundle("0.26.0", root, part_mb=1, log=lambda m: None)
    home = tmp_path / "home"
    put(root, home)
    (home / "vllm-stage" / "part.1").unlink()
    done = install(root, home, tmp_path)
    assert done.returncode != 0 and "vllm-stage/part.1 missing: put every part of .stage-0.26.0 first" in done.stderr
    assert not (home / "vllm-site").exists()
    put(root, home)
    with open(home / "vllm-stage" / "part.1", "r+b") as f:
        f.write(b"X")
    done = install(root, home, tmp_path)
    assert done.returncode != 0 and "the joined parts hash to" in done.stderr and "put them again" in done.stderr
    assert not (home / "vllm-site").exists()


def test_a_bundle_replaces_the_last_and_the_store_must_hold_every_wheel(tmp_path, fake_stage):
    root = tmp_path / "repo"
    (root / ".stage-0.26.0" / "p7").mkdir(parents=True)
    out = bundle.bundle("0.26.0", root, log=lambda m: None)
    assert sorted(p.name for p in out.iterdir()) == ["install.sh", "p0"]  # one 50 MiB part holds it
    (stage.cache() / "store" / fake_stage.blobs[1].sha256).unlink()
    with pytest.raises(SystemExit, match="the lab's store lacks fakedep-2.0-py3-none-any.whl"):
        bundle.bundle("0.26.0", root, log=lambda m: None)


def test_the_command_refuses_a_release_versions_toml_lacks():
    from click.testing import CliRunner

    from lab.__main__ import main

    done = CliRunner().invoke(main, ["bundle", "0.0.1"])
    assert done.exit_code == 2 and "vLLM 0.0.1 is not in versions.toml" in done.output

"""The image build's steps (images/build-steps.sh: apply, status, smoke with --import-vllm) on a
copy of the installed vLLM, as the Dockerfile runs them on the image's: the series applied, then
vllm and every module the series patched imported, on a machine without a GPU. Needs torch and a
vLLM release with a series (skipped elsewhere; .ci/run's CPU vLLM step runs it)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
from pathlib import Path

from . import installed
from .conftest import CATALOGUE, build_steps

torch, RELEASE = installed.served("gdn-spec-state")


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)  # hard links: the copy costs nothing, and apply replaces files by rename
    except OSError:
        shutil.copy2(src, dst)


def test_build_steps_import_every_patched_module(tmp_path):
    version = importlib.metadata.version("vllm")
    package = Path(importlib.util.find_spec("vllm").submodule_search_locations[0])
    site = tmp_path / "site"
    shutil.copytree(package, site / "vllm", copy_function=_link_or_copy)
    info = next(package.parent.glob(f"vllm-{version}.dist-info"))
    shutil.copytree(info, site / info.name)
    done = build_steps(version, env={"PYTHONPATH": str(site)}, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert f"smoke: vLLM {version} carries" in done.stdout
    series = CATALOGUE.series(RELEASE.series)
    for path in series.paths:
        if path in series.created:
            continue
        patched = hashlib.sha256((site / path).read_bytes()).hexdigest()
        original = hashlib.sha256((package.parent / path).read_bytes()).hexdigest()
        assert original == RELEASE.files[path] != patched, path  # the copy was patched, the install not

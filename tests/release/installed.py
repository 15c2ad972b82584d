"""One module of the installed vLLM release, pristine or with its series' hunks applied, loaded
from a temporary file so both can live in one process. Its `from vllm...` imports resolve to the
installed release: for builder tests that run on the CPU (no kernels), in a venv with vLLM.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
from pathlib import Path

import pytest

from vllm_backports.catalogue import Release
from vllm_backports.hunks import Mismatch, apply_file

from .conftest import CATALOGUE

# The CI job that installs torch and vLLM for these tests sets this, so they cannot skip there.
REQUIRED = bool(os.environ.get("VLLM_BACKPORTS_REQUIRE_VLLM"))


def served(backport: str):
    """torch and the installed vLLM's release, when `backport` serves that release. Otherwise a
    module-level skip, or an error where the tests may not skip."""
    if REQUIRED:
        import torch
    else:
        torch = pytest.importorskip("torch")
        pytest.importorskip("vllm")
    version = importlib.metadata.version("vllm")
    release = CATALOGUE.releases.get(version)
    if release is None or backport not in release.backports:
        if REQUIRED:
            raise RuntimeError(f"vLLM {version} is not a release {backport} serves")
        pytest.skip(f"vLLM {version} is not a release {backport} serves", allow_module_level=True)
    return torch, release


def load(tmp_path: Path, release: Release, path: str, patched: bool, skip: str | None = None):
    """`path` of the installed release, pristine or patched; `skip`: a backport left out of the
    series, as `apply.py --skip` leaves it (the control of that backport)."""
    import vllm

    package = Path(importlib.util.find_spec("vllm").submodule_search_locations[0])
    content = (package / path.removeprefix("vllm/")).read_bytes()
    if hashlib.sha256(content).hexdigest() != release.files[path]:
        message = f"the installed {path} is not vLLM {vllm.__version__}'s pristine file"
        if REQUIRED:
            raise AssertionError(message)
        pytest.skip(message)
    if patched:
        series = CATALOGUE.series(release.series)
        assert skip is None or skip in {p.backport_id for p in series.patches}, f"{skip} is not in {series.name}"
        for patch in series.patches:
            if patch.backport_id == skip:
                continue
            for fpatch in patch.files:
                if fpatch.path == path:
                    content = apply_file(content, fpatch)
                    assert not isinstance(content, Mismatch), content
    less = f"_less_{skip.replace('-', '_')}" if skip else ""
    stem = f"{Path(path).stem}_{'patched' if patched else 'pristine'}{less}"
    target = tmp_path / f"{stem}.py"
    target.write_bytes(content)
    # Named as a sibling of the original, so its relative imports resolve to the installed release.
    package = ".".join(Path(path).with_suffix("").parts[:-1])
    spec = importlib.util.spec_from_file_location(f"{package}.{stem}", target)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

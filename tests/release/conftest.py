"""Release tests read the real pristine files of every vLLM release from PyPI (range requests,
cached under VLLM_BACKPORTS_CACHE). They are what proves a series fits the releases it claims."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from vllm_backports.catalogue import Catalogue
from vllm_backports.pypi import read_release

REPO = Path(__file__).resolve().parents[2]
CATALOGUE = Catalogue(REPO)


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/release/" in str(item.fspath):
            item.add_marker(pytest.mark.network)
            # CI runs these once per release (`-m per_release -k VERSION`) and the rest once
            # (`-m "not per_release"`), so no test falls between the two.
            callspec = getattr(item, "callspec", None)
            if callspec is not None and any(v in callspec.id for v in CATALOGUE.versions):
                item.add_marker(pytest.mark.per_release)


@pytest.fixture(autouse=True)
def _real_home(monkeypatch):
    monkeypatch.setattr("vllm_backports.cli.HOME", REPO)


def build_steps(
    version: str, *args: str, env: dict | None = None, timeout: int | None = None
) -> subprocess.CompletedProcess:
    """images/build-steps.sh as an image build runs it, with this Python first on PATH."""
    env = {**os.environ, **(env or {}), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    return subprocess.run(["bash", str(REPO / "images/build-steps.sh"), version, *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


def source_reader(paths: list[str]):
    """A function of a release version: the text of those of `paths` it ships, read from its wheel
    once (a module-scoped fixture keeps it, so each release is read once a module)."""
    cache: dict[str, dict[str, str]] = {}

    def read(version: str) -> dict[str, str]:
        if version not in cache:
            cache[version] = {p: data.decode() for p, data in read_release(version, paths).files.items()}
        return cache[version]

    return read

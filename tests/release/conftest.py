"""Release tests read the real pristine files of every vLLM release from PyPI (range requests,
cached under VLLM_BACKPORTS_CACHE). They are what proves a series fits the releases it claims."""

from __future__ import annotations

from pathlib import Path

import pytest

from vllm_backports.catalogue import Catalogue

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

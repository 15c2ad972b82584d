"""Where the catalogue is read from: $VLLM_BACKPORTS_HOME, else the copy an installed wheel ships
in the package, else the checkout (tests/release/test_wheel_install.py runs a real wheel)."""

from __future__ import annotations

import pytest

from vllm_backports import catalogue
from vllm_backports.catalogue import CHECKOUT, Catalogue, data_home
from vllm_backports.errors import CatalogueError


def test_a_checkout_reads_its_top_level_files(monkeypatch):
    monkeypatch.delenv("VLLM_BACKPORTS_HOME", raising=False)
    assert data_home() == CHECKOUT
    assert (CHECKOUT / "versions.toml").is_file() and (CHECKOUT / "backports").is_dir()
    assert not (CHECKOUT / "vllm_backports" / "data").exists(), "the data is never committed twice"


def test_the_environment_overrides(monkeypatch, tmp_path):
    monkeypatch.setenv("VLLM_BACKPORTS_HOME", str(tmp_path))
    assert data_home() == tmp_path


def test_package_data_wins_where_a_wheel_shipped_it(monkeypatch, tmp_path, home):
    monkeypatch.delenv("VLLM_BACKPORTS_HOME", raising=False)
    package = tmp_path / "vllm_backports"
    (package / "data").mkdir(parents=True)
    monkeypatch.setattr(catalogue, "files", lambda name: package if name == "vllm_backports" else None)
    assert data_home() == CHECKOUT  # no versions.toml shipped: the checkout
    (home.root / "versions.toml").rename(package / "data" / "versions.toml")
    (home.root / "backports").rename(package / "data" / "backports")
    assert data_home() == package / "data"
    cat = Catalogue(data_home())
    assert [p.name for p in cat.series("s1").patches] == ["0001-fix-thing.patch", "0002-add-kernel.patch"]
    tampered = package / "data" / "backports" / "s1" / "0001-fix-thing.patch"
    tampered.write_bytes(tampered.read_bytes() + b"\n")
    with pytest.raises(CatalogueError, match="tampered"):
        Catalogue(data_home()).series("s1")

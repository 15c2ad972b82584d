"""Every series against the real pristine files of every release it claims."""

from __future__ import annotations

import ast
import hashlib

import pytest
import requests

from cli_runner import run
from vllm_backports.pypi import read_release, release_files

from .conftest import CATALOGUE

SERVED = [v for v in CATALOGUE.versions if CATALOGUE.releases[v].series]


@pytest.mark.parametrize("version", SERVED)
def test_series_applies_exactly_compiles_and_reverts(version, tmp_path):
    release = CATALOGUE.releases[version]
    site = tmp_path / "site"
    checked = run("check", "--vllm", version, "--fetch", "--target", str(site), "--json")
    assert checked.code == 0, checked.out + checked.err
    assert {b["state"] for b in checked.json["backports"]} == {"clean"}
    assert [b["id"] for b in checked.json["backports"]] == list(release.backports)

    applied = run("--vllm", version, "--target", str(site), "--json")
    assert applied.code == 0, applied.out
    assert applied.json["summary"]["applied"] == len(release.backports)
    for rel in CATALOGUE.series(release.series).paths:
        source = (site / rel).read_bytes()
        compile(source, rel, "exec")  # the patched file is valid Python
        assert hashlib.sha256(source).hexdigest() != release.files.get(rel)

    again = run("--vllm", version, "--target", str(site), "--json")
    assert again.json["changed_files"] == [] and again.json["summary"]["already"] == len(release.backports)

    reverted = run("revert", "--vllm", version, "--target", str(site), "--json")
    assert reverted.code == 0, reverted.out
    record = (site / f"vllm-{version}.dist-info/RECORD").read_text()
    for rel, pristine in release.files.items():
        assert hashlib.sha256((site / rel).read_bytes()).hexdigest() == pristine
        assert rel in record


def test_every_release_on_pypi_from_0_17_is_in_versions_toml():
    index = requests.get("https://pypi.org/pypi/vllm/json", timeout=30).json()["releases"]
    from packaging.version import Version

    published = {v for v, files in index.items() if files and not Version(v).is_prerelease
                 and Version("0.17.0") <= Version(v) <= Version(CATALOGUE.versions[-1])}
    assert published == set(CATALOGUE.versions)


@pytest.mark.parametrize("version", SERVED)
def test_aarch64_wheel_ships_the_same_target_files(version):
    """GH200 images install the aarch64 wheel: its RECORD must pin the same bytes."""
    release = CATALOGUE.releases[version]
    session = requests.Session()
    wheels = [w for w in release_files(session, version) if w.filename.endswith("aarch64.whl")]
    assert wheels, f"no aarch64 wheel for {version}"
    from vllm_backports.pypi import WheelReader
    from vllm_backports.record import parse_record

    reader = WheelReader(session, max(wheels, key=lambda w: w.filename), version)
    record = parse_record(reader.read(f"{reader.dist_info}/RECORD"))
    for rel, pristine in release.files.items():
        assert record[rel] == pristine


def test_every_turboquant_release_gets_one_turboquant_fix_read_back_from_the_patched_class(tmp_path):
    """P65 downgrades the builder's CUDA-graph support; turboquant-spec-decode keeps UNIFORM_BATCH
    and makes verify rows decodes. Every series carries exactly one of them, unless its releases'
    wheels have no TurboQuant backend (before vLLM 0.20.0)."""
    backend = "vllm/v1/attention/backends/turboquant_attn.py"
    expected = {"turboquant-cudagraph": ("AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE", "False"),
                "turboquant-spec-decode": ("AttentionCGSupport.UNIFORM_BATCH", "True")}
    for name in CATALOGUE.series_names():
        series = CATALOGUE.series(name)
        fixes = [p.backport_id for p in series.patches if p.backport_id in expected]
        if not fixes:
            for version in series.releases:
                assert backend not in read_release(version, []).hashes, (name, version)
            continue
        assert len(fixes) == 1, name
        version = series.releases[0]
        site = tmp_path / name
        assert run("--vllm", version, "--fetch", "--target", str(site), "--only", fixes[0]).code == 0
        tree = ast.parse((site / backend).read_text())
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "TurboQuantMetadataBuilder")
        support = [ast.unparse(s.value) for s in cls.body
                   if isinstance(s, ast.AnnAssign) and ast.unparse(s.target) == "_cudagraph_support"]
        spec_as_decode = [ast.unparse(k.value) for n in ast.walk(cls) if isinstance(n, ast.Call)
                          and ast.unparse(n.func) == "self._init_reorder_batch_threshold"
                          for k in n.keywords if k.arg == "supports_spec_as_decode"]
        assert (support, spec_as_decode) == ([expected[fixes[0]][0]], [expected[fixes[0]][1]]), name


@pytest.mark.parametrize("version", SERVED)
def test_versions_toml_pins_match_pypi(version):
    release = CATALOGUE.releases[version]
    info = read_release(version, list(release.files))
    assert info.wheel.filename == release.wheel
    assert info.wheel.sha256 == release.wheel_sha256
    assert info.record_sha256 == release.record_sha256
    assert info.torch == release.torch

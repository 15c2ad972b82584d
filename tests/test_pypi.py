"""--fetch's source: the vLLM index, a wheel's members by range requests, every byte checked
against RECORD and versions.toml, and the cache. Served by an in-memory PyPI (no network)."""

from __future__ import annotations

import pytest

from conftest import MOD, MOD_FIXED, sha
from vllm_backports import pypi
from vllm_backports.catalogue import Release
from vllm_backports.errors import FetchError
from wheel_server import INDEX, FakePyPI, make_wheel

VERSION = "0.20.0"
WHEEL = f"vllm-{VERSION}-cp38-abi3-manylinux_2_31_x86_64.whl"
PATHS = ["vllm/mod.py"]


@pytest.fixture(autouse=True)
def _index(monkeypatch, tmp_path):
    monkeypatch.setattr(pypi, "INDEX", INDEX)
    monkeypatch.setenv("VLLM_BACKPORTS_CACHE", str(tmp_path / "cache"))


def _pypi(**kw) -> tuple[FakePyPI, bytes]:
    wheel = make_wheel(VERSION, {"vllm/mod.py": MOD, "vllm/other.py": b"x = 1\n"}, **kw)
    return FakePyPI({VERSION: {WHEEL: wheel}}), wheel


def _record(wheel: bytes) -> bytes:
    import io
    import zipfile

    return zipfile.ZipFile(io.BytesIO(wheel)).read(f"vllm-{VERSION}.dist-info/RECORD")


def _release(wheel: str, wheel_sha: str, record_sha: str, expected: dict[str, str]) -> Release:
    """What versions.toml pins of the release, as --fetch is handed it."""
    return Release(version=VERSION, torch="2.11.0", cuda=13, wheel=wheel, wheel_sha256=wheel_sha,
                   record_sha256=record_sha, series="s1", backports=(), upstream=(), bugs=(), image="",
                   image_digests={}, files=expected)


def _fetch(host: FakePyPI, wheel: bytes, *, wheel_sha=None, record_sha=None, expected=None, progress=None):
    release = _release(WHEEL, wheel_sha or sha(wheel), record_sha or sha(_record(wheel)),
                       {"vllm/mod.py": sha(MOD)} if expected is None else expected)
    return pypi.fetch(release, PATHS, progress=progress or (lambda _m: None), session=host)


# ---- the index ------------------------------------------------------------------------------


def test_release_files_lists_the_wheels_with_absolute_urls():
    host, wheel = _pypi()
    (info,) = pypi.release_files(host, VERSION)  # the sdist is not a wheel
    assert info == pypi.WheelInfo(WHEEL, f"https://pypi.example/files/{WHEEL}", sha(wheel), len(wheel))


def test_release_files_of_a_release_pypi_lacks():
    host, _ = _pypi()
    with pytest.raises(FetchError, match="PyPI has no vLLM 0.99.0"):
        pypi.release_files(host, "0.99.0")


@pytest.mark.parametrize("status", [404, 500])
def test_an_index_that_fails_is_one_fetch_error(status):
    host, _ = _pypi()
    host.status = status
    with pytest.raises(FetchError, match=f"cannot read the vLLM index {INDEX}: HTTPError"):
        pypi.release_files(host, VERSION)


def test_cache_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("VLLM_BACKPORTS_CACHE", str(tmp_path / "a"))
    assert pypi.cache_root() == tmp_path / "a"
    monkeypatch.delenv("VLLM_BACKPORTS_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert pypi.cache_root() == tmp_path / "xdg" / "vllm-backports"


# ---- fetch ----------------------------------------------------------------------------------


def test_fetch_reads_only_the_members_it_needs_then_serves_them_from_the_cache():
    host, wheel = _pypi()
    said: list[str] = []
    got = _fetch(host, wheel, progress=said.append)
    assert got.files == {"vllm/mod.py": MOD} and not got.from_cache
    assert got.record == _record(wheel) and b"Version: 0.20.0" in got.metadata
    assert got.requests >= 2 and all(r is not None for _, r in host.gets[1:])  # ranges only, after the index
    assert said[0] == "looking up vLLM 0.20.0 on PyPI" and said[-1] == "fetching vllm/mod.py (1/1)"
    host.gets.clear()
    again = _fetch(host, wheel)
    assert again.from_cache and again.files == got.files and host.gets == []


def test_a_damaged_cache_entry_is_fetched_again():
    host, wheel = _pypi()
    _fetch(host, wheel)
    (pypi.cache_root() / "pristine" / VERSION / "vllm/mod.py").write_bytes(MOD_FIXED)
    got = _fetch(host, wheel)
    assert not got.from_cache and got.files == {"vllm/mod.py": MOD}
    assert (pypi.cache_root() / "pristine" / VERSION / "vllm/mod.py").read_bytes() == MOD


def test_a_wheel_pypi_no_longer_lists(monkeypatch):
    host, wheel = _pypi()
    with pytest.raises(FetchError, match="PyPI no longer lists vllm-0.20.0-other.whl"):
        pypi.fetch(_release("vllm-0.20.0-other.whl", sha(wheel), "0", {}), PATHS, session=host)


def test_a_wheel_hash_other_than_the_pin_is_refused_before_reading_it():
    host, wheel = _pypi()
    refusal = f"{WHEEL}: PyPI reports sha256 {sha(wheel)[:12]}, versions.toml pins 000000000000"
    with pytest.raises(FetchError, match=refusal):
        _fetch(host, wheel, wheel_sha="0" * 64)
    assert [url for url, _ in host.gets] == [INDEX]


def test_a_record_other_than_the_pin_is_refused_and_nothing_cached():
    host, wheel = _pypi()
    with pytest.raises(FetchError, match=r"RECORD sha256 \w{12} differs from versions.toml \(111111111111\)"):
        _fetch(host, wheel, record_sha="1" * 64)
    assert not pypi.cache_root().exists()


def test_a_member_that_does_not_match_record_is_refused():
    host, wheel = _pypi(record_extra={"vllm/mod.py": MOD_FIXED})
    with pytest.raises(FetchError, match="vllm/mod.py: sha256 .* does not match the wheel's RECORD"):
        _fetch(host, wheel)
    assert not pypi.cache_root().exists()


def test_a_member_that_does_not_match_versions_toml_is_refused():
    host, wheel = _pypi()
    with pytest.raises(FetchError, match=r"vllm/mod.py: sha256 \w{12} differs from versions.toml \(222222222222\)"):
        _fetch(host, wheel, expected={"vllm/mod.py": "2" * 64})


def test_a_member_the_wheel_lacks():
    host, wheel = _pypi()
    with pytest.raises(FetchError, match="the wheel has no vllm/gone.py"):
        pypi.fetch(_release(WHEEL, sha(wheel), sha(_record(wheel)), {}), ["vllm/gone.py"], session=host)


def test_a_file_that_is_not_a_zip_is_one_fetch_error():
    host = FakePyPI({VERSION: {WHEEL: b"not a zip at all" * 100}})
    with pytest.raises(FetchError, match=f"{WHEEL}: not a zip archive"):
        pypi.WheelReader(host, pypi.release_files(host, VERSION)[0], VERSION)


# ---- what maintainers read: published versions and a release's files, unpinned -------------


def test_published_lists_every_version_with_files_pre_releases_too():
    host, _ = _pypi()
    host.index = lambda: {"releases": {"0.19.0": [], "0.20.0": [{}], "0.21.0rc1": [{}]}}  # 0.19.0: all deleted
    assert pypi.published(host) == ["0.20.0", "0.21.0rc1"]


def test_read_release_takes_the_newest_x86_64_wheel_and_checks_every_member_against_its_record():
    host, wheel = _pypi()
    built = f"vllm-{VERSION}-1-cp38-abi3-manylinux_2_31_x86_64.whl"  # a build tag: pip's pick
    other = make_wheel(VERSION, {"vllm/mod.py": MOD_FIXED})
    host.wheels[built] = other
    host.versions[VERSION].append(built)
    got = pypi.read_release(VERSION, ["vllm/mod.py", "vllm/created.py"], session=host)
    assert got.wheel.filename == built and got.wheel.sha256 == sha(other)
    assert got.files == {"vllm/mod.py": MOD_FIXED}  # a path the release lacks is left out
    assert got.torch == "2.11.0" and got.hashes["vllm/mod.py"] == sha(MOD_FIXED)
    assert got.record_sha256 == sha(_record(other))


def test_read_release_orders_build_tags_with_a_suffix_as_pip_does():
    host, _ = _pypi()
    for tag in ("2", "10", "10b"):
        name = f"vllm-{VERSION}-{tag}-cp38-abi3-manylinux_2_31_x86_64.whl"
        host.wheels[name] = make_wheel(VERSION, {"vllm/mod.py": MOD_FIXED})
        host.versions[VERSION].append(name)
    got = pypi.read_release(VERSION, [], session=host)
    assert got.wheel.filename == f"vllm-{VERSION}-10b-cp38-abi3-manylinux_2_31_x86_64.whl"


def test_read_release_refuses_a_member_its_record_does_not_pin():
    host, _ = _pypi(record_extra={"vllm/mod.py": MOD_FIXED})
    with pytest.raises(FetchError, match="vllm/mod.py: sha256 .* does not match the wheel's RECORD"):
        pypi.read_release(VERSION, ["vllm/mod.py"], session=host)


def test_read_release_of_a_release_without_an_x86_64_wheel():
    host = FakePyPI({VERSION: {f"vllm-{VERSION}-cp38-abi3-manylinux_2_31_aarch64.whl": make_wheel(VERSION, {})}})
    with pytest.raises(FetchError, match="vLLM 0.20.0 has no x86_64 wheel on PyPI"):
        pypi.read_release(VERSION, [], session=host)

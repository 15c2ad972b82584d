"""Fetch a release's pristine files from its PyPI wheel, only the members we need.

Every member is checked against the wheel's RECORD, and RECORD against the hash versions.toml
pins, before anything is cached or written.
"""

from __future__ import annotations

import hashlib
import os
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin

import requests

from .catalogue import Release
from .digest import sha256, sha256_file
from .errors import FetchError
from .record import parse_record
from .remote_zip import RangeFile

INDEX = os.environ.get("VLLM_BACKPORTS_INDEX", "https://pypi.org/pypi/vllm/json")


def cache_root() -> Path:
    if env := os.environ.get("VLLM_BACKPORTS_CACHE"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "vllm-backports"


@dataclass(frozen=True)
class WheelInfo:
    filename: str
    url: str
    sha256: str
    size: int


def _releases(session: requests.Session) -> dict[str, list[dict]]:
    """PyPI's JSON index of vLLM: version -> the files it lists."""
    try:
        response = session.get(INDEX, timeout=30)
        response.raise_for_status()
        releases = response.json()["releases"]
    except (requests.RequestException, ValueError, KeyError) as exc:
        raise FetchError(f"cannot read the vLLM index {INDEX}: {exc.__class__.__name__}") from None
    return releases


def published(session: requests.Session) -> list[str]:
    """Every vLLM version on PyPI with files to install (pre-releases too)."""
    return [version for version, files in _releases(session).items() if files]


def _release_entries(session: requests.Session, version: str) -> list[WheelInfo]:
    """Every file PyPI's JSON lists for `version`, with the sha256 it reports."""
    releases = _releases(session)
    if version not in releases:
        raise FetchError(f"PyPI has no vLLM {version}")
    return [
        WheelInfo(f["filename"], urljoin(INDEX, f["url"]), f["digests"]["sha256"], f["size"]) for f in releases[version]
    ]


def release_files(session: requests.Session, version: str) -> list[WheelInfo]:
    return [w for w in _release_entries(session, version) if w.filename.endswith(".whl")]


def release_sdist(session: requests.Session, version: str) -> WheelInfo:
    """The release's source archive (it carries vLLM's own tests/, which wheels do not)."""
    for entry in _release_entries(session, version):
        if entry.filename.endswith(".tar.gz"):
            return entry
    raise FetchError(f"PyPI has no source archive of vLLM {version}")


def download(session: requests.Session, entry: WheelInfo, dest: Path) -> Path:
    """`entry` at `dest`, its sha256 checked against PyPI's before it is put there; a file already
    there with that hash is reused."""
    if dest.is_file() and sha256_file(dest) == entry.sha256:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + f".{os.getpid()}.tmp")
    digest = hashlib.sha256()
    try:
        with session.get(entry.url, stream=True, timeout=60) as response:
            response.raise_for_status()
            with open(tmp, "wb") as f:
                for chunk in response.iter_content(1 << 20):
                    digest.update(chunk)
                    f.write(chunk)
    except requests.RequestException as exc:
        tmp.unlink(missing_ok=True)
        raise FetchError(f"cannot download {entry.filename}: {exc.__class__.__name__}") from None
    if digest.hexdigest() != entry.sha256:
        tmp.unlink(missing_ok=True)
        raise FetchError(
            f"{entry.filename}: sha256 {digest.hexdigest()[:12]} differs from PyPI's ({entry.sha256[:12]})"
        )
    os.replace(tmp, dest)
    return dest


@dataclass
class Fetched:
    version: str
    record: bytes
    metadata: bytes
    files: dict[str, bytes]
    bytes_fetched: int = 0
    requests: int = 0
    from_cache: bool = False


class WheelReader:
    """Members of one wheel on PyPI, by range requests."""

    def __init__(self, session: requests.Session, wheel: WheelInfo, version: str):
        self.rangefile = RangeFile(wheel.url, session)
        try:
            self.zip = zipfile.ZipFile(self.rangefile)
        except zipfile.BadZipFile as exc:
            raise FetchError(f"{wheel.filename}: not a zip archive ({exc})") from None
        self.dist_info = f"vllm-{version}.dist-info"

    def read(self, name: str) -> bytes:
        try:
            return self.zip.read(name)
        except KeyError:
            raise FetchError(f"the wheel has no {name}") from None


@dataclass(frozen=True)
class ReleaseFiles:
    """What a maintainer reads off a release's wheel to describe, port or watch it."""

    wheel: WheelInfo
    record_sha256: str
    torch: str  # the torch release the wheel pins, "" if none
    hashes: dict[str, str]  # the wheel's RECORD: path -> sha256
    files: dict[str, bytes]  # the asked-for members RECORD lists, each checked against it


def newest_wheel(session: requests.Session, version: str) -> WheelInfo:
    """The x86_64 wheel pip would pick (highest build tag); python files are arch-independent."""
    wheels = [w for w in release_files(session, version) if w.filename.endswith("x86_64.whl")]
    if not wheels:
        raise FetchError(f"vLLM {version} has no x86_64 wheel on PyPI")

    def build(name: str) -> tuple[int, str]:
        # PEP 427: a build tag is digits, then any suffix ("2", "1abc"); sorted as (int, str)
        parts = name[:-4].split("-")
        if len(parts) != 6:
            return (-1, "")
        digits = re.sub(r"\D.*", "", parts[2])
        return (int(digits) if digits else -1, parts[2][len(digits) :])

    return max(wheels, key=lambda w: build(w.filename))


def read_release(version: str, paths: list[str], session: requests.Session | None = None) -> ReleaseFiles:
    """A release's RECORD, torch pin and the members of `paths` it ships, read from its newest
    x86_64 wheel by range requests: nothing pins them yet, so each member is checked against the
    wheel's own RECORD. Paths the release lacks are left out."""
    session = session or requests.Session()
    wheel = newest_wheel(session, version)
    reader = WheelReader(session, wheel, version)
    record = reader.read(f"{reader.dist_info}/RECORD")
    metadata = reader.read(f"{reader.dist_info}/METADATA").decode()
    hashes = parse_record(record)
    torch = re.search(r"^Requires-Dist: torch==([\w.]+)", metadata, re.M)
    files = _members(reader, [p for p in paths if p in hashes], hashes, {})
    return ReleaseFiles(wheel, sha256(record), torch.group(1) if torch else "", hashes, files)


def _members(
    reader: WheelReader,
    paths: list[str],
    record: dict[str, str],
    expected: dict[str, str],
    progress: Callable[[str], None] = lambda _msg: None,
) -> dict[str, bytes]:
    """The members at `paths`, each checked against RECORD and, where it pins one, versions.toml."""
    files: dict[str, bytes] = {}
    for n, path in enumerate(paths, 1):
        progress(f"fetching {path} ({n}/{len(paths)})")
        data = reader.read(path)
        _verify(path, data, record, expected)
        files[path] = data
    return files


def fetch(
    release: Release,
    paths: list[str],
    progress: Callable[[str], None] = lambda _msg: None,
    session: requests.Session | None = None,
) -> Fetched:
    """The pristine bytes of ``paths`` in ``release``, from the cache or from PyPI, each checked
    against the wheel, RECORD and file hashes versions.toml pins for it."""
    version, wheel_name = release.version, release.wheel
    cached = _from_cache(version, release.record_sha256, paths, release.files)
    if cached:
        return cached
    session = session or requests.Session()
    progress(f"looking up vLLM {version} on PyPI")
    wheel = next((w for w in release_files(session, version) if w.filename == wheel_name), None)
    if wheel is None:
        raise FetchError(f"PyPI no longer lists {wheel_name}")
    if wheel.sha256 != release.wheel_sha256:
        raise FetchError(
            f"{wheel_name}: PyPI reports sha256 {wheel.sha256[:12]}, versions.toml pins {release.wheel_sha256[:12]}"
        )
    progress(f"reading the index of {wheel_name} ({wheel.size / 1e6:.0f} MB) by range requests")
    reader = WheelReader(session, wheel, version)
    record = reader.read(f"{reader.dist_info}/RECORD")
    if sha256(record) != release.record_sha256:
        raise FetchError(
            f"{wheel_name}: RECORD sha256 {sha256(record)[:12]} differs from versions.toml "
            f"({release.record_sha256[:12]})"
        )
    metadata = reader.read(f"{reader.dist_info}/METADATA")
    files = _members(reader, paths, parse_record(record), release.files, progress)
    result = Fetched(version, record, metadata, files, reader.rangefile.bytes_fetched, reader.rangefile.requests)
    _to_cache(result)
    return result


def _verify(path: str, data: bytes, record: dict[str, str], expected: dict[str, str]) -> None:
    got = sha256(data)
    if record.get(path) != got:
        raise FetchError(f"{path}: sha256 {got[:12]} does not match the wheel's RECORD")
    if path in expected and expected[path] != got:
        raise FetchError(f"{path}: sha256 {got[:12]} differs from versions.toml ({expected[path][:12]})")


def _cache_dir(version: str) -> Path:
    return cache_root() / "pristine" / version


def _from_cache(version: str, record_sha: str, paths: list[str], expected: dict[str, str]) -> Fetched | None:
    root = _cache_dir(version)
    try:
        record = (root / "RECORD").read_bytes()
        metadata = (root / "METADATA").read_bytes()
        if sha256(record) != record_sha:
            return None
        hashes = parse_record(record)
        files = {p: (root / p).read_bytes() for p in paths}
        for path, data in files.items():
            _verify(path, data, hashes, expected)
    except (OSError, FetchError):
        return None  # a cache miss or a damaged entry: fetch again
    return Fetched(version, record, metadata, files, from_cache=True)


def _to_cache(fetched: Fetched) -> None:
    root = _cache_dir(fetched.version)
    items = {"RECORD": fetched.record, "METADATA": fetched.metadata, **fetched.files}
    try:
        for rel, data in items.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
    except OSError:
        pass  # the cache is an optimisation; the fetched bytes are already verified

"""Which series serves the vLLM in a tree: by release, or for a nightly by exact match."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from .catalogue import Catalogue, Release, Series, Unpublished
from .digest import sha256, sha256_of
from .errors import UsageError
from .hunks import Mismatch, apply_patches
from .manifest import read as read_manifest
from .tree import Tree


@dataclass(frozen=True)
class Resolution:
    version: str  # the installed version
    release: Release | None  # None for a nightly matched by content
    series: Series | None  # None when nothing is backported to this release
    pristine: dict[str, str]  # path -> pristine sha256
    note: str = ""

    def shipped(self, path: str) -> str | None:
        """The sha256 of `path` as the release ships it: None for a file the series creates."""
        if self.series is not None and path in self.series.created:
            return None
        return self.pristine.get(path)


def _known(cat: Catalogue) -> str:
    return f"supported: {cat.versions[0]} .. {cat.versions[-1]}"


def local_build_of(cat: Catalogue, version: str) -> str | None:
    """The release a local build such as 0.20.0+cu129 (a CUDA variant from vLLM's own index) was
    cut from, when versions.toml knows it. Its files are then checked against that release's."""
    try:
        v = Version(version)
    except InvalidVersion:
        return None
    if v.local is None or v.is_devrelease or v.is_prerelease or v.public not in cat.releases:
        return None
    return v.public


@dataclass(frozen=True)
class Requested:
    """A --vllm value, checked against versions.toml once: auto, a release, a local build of one
    (0.20.0+cu129), or a release that was never published (served only to its nightlies)."""

    text: str
    release: Release | None = None  # the release it names, or the one a local build was cut from
    unpublished: Unpublished | None = None

    @property
    def published(self) -> Release | None:
        """The release it names exactly, one PyPI serves (--fetch needs one)."""
        return self.release if self.release is not None and self.release.version == self.text else None


def parse_vllm(cat: Catalogue, text: str) -> Requested:
    """A --vllm value as a Requested; one that names no release we know is refused, before any
    tree is read."""
    if text == "auto":
        return Requested(text)
    base = text if text in cat.releases else local_build_of(cat, text)
    if base is not None:
        return Requested(text, release=cat.releases[base])
    if text in cat.unpublished:
        return Requested(text, unpublished=cat.unpublished[text])
    try:
        typed = Version(text)
    except InvalidVersion:
        raise UsageError(f"--vllm {text!r} is not a version (use e.g. 0.20.0, or auto)") from None
    if text != text.strip() or not text.isprintable():  # packaging reads "0.20.0\n" as 0.20.0
        raise UsageError(f"--vllm {text!r} is not a version (use e.g. 0.20.0, or auto)")
    if typed.is_devrelease or typed.is_prerelease:
        # a nightly or release candidate has no entry: its series is found from its files
        raise UsageError(
            f"vLLM {text} is a pre-release, which versions.toml does not list ({_known(cat)}); "
            "with it installed, --vllm auto finds the series its files match"
        )
    # Only a release of the same major.minor is a likely meaning: a release named short (0.20)
    # means its first patch release, a wrong patch number (0.21.1) the closest one; 0.16.0, 0.2
    # or 1.0 mean none of them, and the supported range says so.
    line = [v for v in cat.versions if Version(v).release[:2] == (typed.release + (0,))[:2]]
    hint = line[:1] if len(typed.release) < 3 else difflib.get_close_matches(text, line, n=1, cutoff=0) or line[:1]
    more = f"; did you mean {hint[0]}?" if hint else ""
    raise UsageError(f"vLLM {text} is not in versions.toml ({_known(cat)}){more}")


def _is_nightly(version: str) -> bool:
    try:
        v = Version(version)
    except InvalidVersion:
        return False
    return v.is_devrelease or v.is_prerelease or v.local is not None


def resolve(cat: Catalogue, tree: Tree, requested: Requested) -> Resolution:
    installed = tree.version
    unpublished = requested.unpublished
    if unpublished and not (installed.startswith(unpublished.dev_prefix) and _is_nightly(installed)):
        raise UsageError(unpublished.message + f" (installed here: {installed})")
    base = installed if installed in cat.releases else local_build_of(cat, installed)
    if requested.text not in ("auto", installed, base) and not unpublished:
        if base is None and not _is_nightly(installed):
            # no advice to give: auto would refuse the release here too
            raise UsageError(f"the vLLM here is {installed}, which versions.toml does not list ({_known(cat)})")
        # a nightly is named by auto alone: --vllm refuses what versions.toml does not list
        named = f"--vllm {base} or --vllm auto" if base is not None else "--vllm auto"
        raise UsageError(f"the vLLM here is {installed}, not {requested.text}; pass {named}")
    if base is not None:
        release = cat.releases[base]
        series = cat.series(release.series) if release.series else None
        note = (
            ""
            if base == installed
            else f"vLLM {installed} is a local build of {base}; its files are checked against {base}'s"
        )
        return Resolution(installed, release, series, dict(release.files), note)
    if not _is_nightly(installed):
        raise UsageError(f"vLLM {installed} is not in versions.toml ({_known(cat)})")
    return _recorded_nightly(cat, tree) or _match_nightly(cat, tree)


def _recorded_nightly(cat: Catalogue, tree: Tree) -> Resolution | None:
    """A nightly we patched before: the manifest names its series, and every file it lists
    is still what we wrote over what RECORD pins."""
    manifest = read_manifest(tree)
    if manifest is None or manifest.series not in cat.series_names():
        return None
    series = cat.series(manifest.series)
    for path in series.paths:
        entry = manifest.files.get(path)
        if entry and (sha256_of(tree.read(path)) != entry.patched or entry.pristine != tree.record.get(path)):
            return None
    pristine = {p: tree.record[p] for p in series.paths if p in tree.record}
    note = f"vLLM {tree.version} is a nightly; series {series.name}, as recorded when it was patched"
    return Resolution(tree.version, None, series, pristine, note)


def _first_release(series: Series) -> Version:
    return min((Version(r) for r in series.releases), default=Version("0"))


def _distance(series: Series, version: Version) -> tuple[int, ...]:
    """How far `series` is from a nightly `version`: from the series' first release, in minor
    then micro releases; of two as far, the one ahead (the release a nightly heads to) first."""
    first = _first_release(series)
    apart = (abs(a - b) for a, b in zip((first.release + (0, 0))[:3], (version.release + (0, 0))[:3], strict=True))
    return (*apart, first < version)


def _match_nightly(cat: Catalogue, tree: Tree) -> Resolution:
    """A nightly has no entry of its own: take the series whose every hunk matches exactly."""
    installed = Version(tree.version)
    matches: list[Series] = []
    nearest: list[tuple[str, Mismatch]] = []
    for name in cat.series_names():
        series = cat.series(name)
        contents = {p: tree.read(p) for p in series.paths}
        # The files as installed, before any hunk: a later patch of the series sees the ones
        # before it applied, which no RECORD pins.
        problem: Mismatch | None = next(
            (
                Mismatch(path, 0, 0, "differs from this install's RECORD")
                for path, data in contents.items()
                if data is not None and sha256(data) != tree.record.get(path)
            ),
            None,
        )
        if problem is None:
            patched = apply_patches(contents, (f for patch in series.patches for f in patch.files))
            problem = patched if isinstance(patched, Mismatch) else None
        if problem:
            nearest.append((name, problem))
        else:
            matches.append(series)
    if not matches:
        # name the series of the releases closest to the nightly: the first in name order are
        # the oldest, the least likely to be near
        nearest.sort(key=lambda item: _distance(cat.series(item[0]), installed))
        detail = "; ".join(f"{n}: {m}" for n, m in nearest[:2])
        raise UsageError(
            f"no series matches the files of vLLM {tree.version} exactly ({detail}); nothing was changed: "
            f"install a published release instead ({_known(cat)}) and run with --vllm auto"
        )

    # Several can match when the hunks' surroundings did not change: prefer the release the
    # nightly was heading to, i.e. the first release at or after it.
    ahead = sorted((s for s in matches if _first_release(s) >= installed), key=_first_release)
    chosen = ahead[0] if ahead else max(matches, key=_first_release)
    pristine = {p: tree.record[p] for p in chosen.paths if p in tree.record}
    others = [s.name for s in matches if s is not chosen]
    also = f" (also matching: {', '.join(others)})" if others else ""
    note = f"vLLM {tree.version} is a nightly; series {chosen.name} matches every hunk exactly{also}"
    return Resolution(tree.version, None, chosen, pristine, note)

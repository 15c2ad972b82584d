"""versions.toml and backports/, parsed once into frozen dataclasses and verified.

A backport file whose sha256 differs from the one versions.toml records is refused: what users
apply is exactly what was reviewed and tested.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from .digest import sha256
from .errors import CatalogueError, PatchError
from .patchfile import Patch, backport_id_of, parse

SCHEMA = 1
RELEASE_KEYS = {
    "torch",
    "cuda",
    "wheel",
    "wheel_sha256",
    "record_sha256",
    "series",
    "bugs",
    "image",
    "image_digests",
    "files",
    "owed",
    "notes",
}
# Keys of an earlier shape of a release's verification, refused with what replaced them.
RETIRED_RELEASE_KEYS = {
    "verified": "owed and notes (docs/MAINTAINING.md)",
    "ran_on_gpu": "docs/evidence/<release>/ (a release ran on a GPU when it has evidence there)",
    "covered_by": "the pinned hashes (a release is covered by one with the same series and pristine files)",
}
# The official image a release's backported images build on, unless versions.toml names another.
DEFAULT_IMAGE = "vllm/vllm-openai:v{version}"
# Derived, never written: a release's backports are what its series applies, its upstream list
# the backports whose upstream_in it has reached.
DERIVED_RELEASE_KEYS = {
    "backports": "its series' patches",
    "upstream": "the backports' upstream_in",
    "known": "the [known] bugs' present",
}
SERIES_KEYS = {"files"}
# Derived, never written: the releases a series serves are those whose `series` names it.
DERIVED_SERIES_KEYS = {"releases": "the releases' series"}
BACKPORT_KEYS = {"title", "bug", "origin", "upstream_in", "releases", "together_with"}
KNOWN_KEYS = {"title", "bug", "present", "status", "evidence", "checked", "when", "workaround", "fixed_by"}
# The serving flags a known bug's `when` may name, each with its type: the images' entrypoint
# (vllm_backports/entrypoint.py) reads them off `vllm serve`'s arguments and warns of the bugs
# whose every condition holds. Lists hold fnmatch patterns ("mtp", "turboquant_*", "*").
WHEN_KEYS: dict[str, type] = {
    "speculative": list,  # the speculative method, as vLLM normalises it (mtp, ngram, eagle3, ...)
    "prefix_caching": bool,
    "async_scheduling": bool,
    "kv_cache_dtype": list,
    "tensor_parallel_size": int,
    "tool_calls": bool,  # --enable-auto-tool-choice or --tool-call-parser
    "prompt_lookup_min_below": int,  # ngram's prompt_lookup_min under this (the default is 5)
}
# What is known of a bug the series leave alone (docs/SIBLING-BUGS.md), a closed list: the GPU made
# an affected release fail; it ran the conditions the report describes and decoded clean; the code
# has it (`present`) but no GPU run has tried it yet; or the code has no path to it.
KNOWN_STATUSES = ("reproduced", "not reproduced", "not yet run", "absent")
ARCH_KEYS = {"platforms", "gpus", "gdn_prefill_backend", "why"}
VARIANT_KEYS = {"tag_suffix", "since", "why"}
# The GPU scenarios a release may owe, each once: the proofs of lab.steps (its `proofs`
# names; a test keeps the two in step).
SCENARIOS = {
    "gdn-ngram": "GDN, ngram, 16 a batch, CUDA graphs",
    "gdn-ngram-prefix": "GDN, ngram, shared prefixes with prefix caching",
    "gdn-ngram-kp1": "GDN, ngram, (k+1)-token prompts",
    "gdn-ngram-b1": "GDN, ngram, 1 a batch",
    "gdn-ngram-v2": "GDN, ngram on the V2 model runner (ngram's default from 0.32.0), scripted drafts",
    "gdn-ngram-eager": "GDN, ngram, eager",
    "tail-ngram-v2": "GDN, ngram on V2, prefix-cache hits that leave one prompt token (run as a decode row)",
    "gdn-ngram-flashinfer": "GDN, ngram, FlashInfer GDN prefill (Qwen3.5: heads of 128)",
    "gdn-ngram-kp1-flashinfer": "GDN, ngram, (k+1)-token prompts, FlashInfer GDN prefill (Qwen3.5)",
    "gdn-ngram-b1-flashinfer": "GDN, ngram, 1 a batch, FlashInfer GDN prefill (Qwen3.5)",
    "kp1-b1-fix-flashinfer": "spec-prefill-decode-graph: (k+1) prompts, 1 a batch, FlashInfer GDN prefill (Qwen3.5)",
    "mtp-flashinfer": "GDN, MTP without TurboQuant, FlashInfer GDN prefill (Qwen3.5)",
    "mtp": "MTP without TurboQuant",
    "tq-mtp": "MTP + turboquant_k8v4, the released TurboQuant backend as control",
    "qwen3_5-tq-mtp": "MTP + turboquant_k8v4, dense Qwen3.5, the series less turboquant-decode-workspace as control",
    "tq-mtp-b1": "MTP + turboquant_k8v4, 1 a batch, the released TurboQuant backend as control",
    "tq-mtp-4bit_nc": "MTP + turboquant_4bit_nc, the released TurboQuant backend as control",
    "tq-mtp-k3v4_nc": "MTP + turboquant_k3v4_nc, the released TurboQuant backend as control",
    "tq-mtp-3bit_nc": "MTP + turboquant_3bit_nc, the released TurboQuant backend as control",
    "tq-continuation": "turboquant-prefill-fastpath alone, the series less it as control (vLLM #46460)",
    "qwen3_5-gdn-ngram": "Qwen3.5 dense, ngram",
    "qwen3_5-mtp": "Qwen3.5 dense, MTP",
    "qwen3_5_moe-gdn-ngram": "Qwen3.5 MoE, ngram",
    "kp1-b1": "(k+1)-token prompts, ngram, 1 a batch, pristine control",
    "kp1-mtp": "(k+1)-token prompts, MTP, pristine control",
    "kp1-b1-fix": "spec-prefill-decode-graph alone, ngram, 1 a batch",
    "kp1-mtp-fix": "spec-prefill-decode-graph alone, MTP",
    "churn-mtp-async": "sibling bug: churn prompts, MTP, async scheduling",
    "churn-mtp-sync": "sibling bug: churn prompts, MTP, async scheduling off",
    "pc-mtp": "sibling bug: producer-consumer prompts, MTP, prefix caching",
    "pc-mtp-lp": "sibling bug: producer-consumer prompts, MTP, prefix caching, output logprobs judged",
    "pc-mtp-lp-kv02": "pc-mtp-lp in a 0.02 GiB KV pool, where freed blocks are handed out again",
    "pc-mtp-lp-kv04": "pc-mtp-lp in a 0.04 GiB KV pool, where freed blocks are handed out again",
    "rounds-mtp-prefix": "sibling bug: 3 rounds on one engine, MTP, producer-consumer prompts, prefix caching",
    "rounds-mtp": "sibling bug: 3 rounds on one engine, MTP, prefix caching off",
    "plogprobs-mtp-b1": "sibling bug: prompt logprobs, MTP, 1 a batch, CUDA graphs",
    "plogprobs-mtp-b1-eager": "sibling bug: prompt logprobs, MTP, 1 a batch, eager (negative control)",
    "counts-mtp-async-churn": "sibling bug: accepted-count range check, churn prompts, MTP, async, prefix caching",
    "tp2": "GDN, ngram at tensor parallel 2 (two GPUs), pristine control",
    "churn-mtp-async-nopc": "sibling bug #53726: churn prompts, MTP, async scheduling, prefix caching off",
    "tq-mtp-long": "sibling bug #52475: MTP + turboquant_k8v4, prompts of 2,000 to 3,936 tokens in chunks, "
    "the released TurboQuant backend as control",
    "tq-mtp-tp2": "sibling bug #53180: MTP + turboquant_k8v4 at tensor parallel 2 (two GPUs), the released "
    "TurboQuant backend as control",
    "one-token-ngram": "sibling bug #51565: one-token prompts into freed rows beside ngram rows, 0.02 GiB KV pool",
    "one-token-ngram-nopc": "one-token-ngram with prefix caching off (Mamba none, not align)",
    "spec-pad-ngram": "spec-pad-new-prompt alone: one-token-ngram against the series less it",
    "spec-pad-mtp": "spec-pad-ngram under MTP",
    "ngram-tool-calls": "sibling bug #40875 / #56077: vLLM's own ngram, tool-call-shaped prompts, lookup 5 and 8",
    "align-shift-ngram": "sibling bug #50729: rows landed one short of each align block end, shifts counted",
    "qwen3_5-mtp-tp2": "sibling bug #41190: Qwen3.5 dense, MTP at tensor parallel 2 (two GPUs), pristine control",
    "kda-ngram": "sibling bug #39273 for Kimi K3's KDA builder: ngram, tiny Kimi K3 (verify --model), pristine control",
}
# A note is one dated fact the verify JSON cannot hold: "YYYY-MM-DD: what".
NOTE_MAX = 120
NOTE_FORM = re.compile(r"(\d{4}-\d{2}-\d{2}): \S.*")
# The docker platforms an arch may build, each with the GitHub runner architecture its GPU smoke
# test runs on.
RUNNER_ARCH = {"linux/amd64": "X64", "linux/arm64": "ARM64"}


# The repository root of a source checkout (or an editable install): versions.toml and backports/
# live there, where maintainers edit them and `maint` writes.
CHECKOUT = Path(__file__).resolve().parent.parent


def data_home() -> Path | Traversable:
    """Where versions.toml and backports/ are read from: $VLLM_BACKPORTS_HOME if set; else the
    copy an installed wheel ships inside the package (vllm_backports/data/, mapped there from the
    checkout's top level at build time, never committed twice); else the checkout's top level."""
    if env := os.environ.get("VLLM_BACKPORTS_HOME"):
        return Path(env)
    shipped = files(__package__) / "data"
    if shipped.joinpath("versions.toml").is_file():
        return shipped  # a Path wherever the package is installed as files (not zipped)
    return CHECKOUT


def series_files(root: Path | Traversable) -> list[str]:
    """The files of a series directory that versions.toml pins (and `maint rehash` pins): regular
    files, dotfiles aside (an editor's swap file is not a backport)."""
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_file() and not p.name.startswith("."))


def series_entry(line: str) -> str:
    """The patch file name a line of a series file lists ("" for none): quilt's format, one a
    line, # comments."""
    return line.split("#", 1)[0].strip()


def series_order(data: bytes) -> list[str]:
    """The patch file names a series file lists, in order."""
    return [name for name in map(series_entry, data.decode().splitlines()) if name]


def _unknown(keys, allowed: set[str], where: str) -> None:
    for key in keys:
        if key not in allowed:
            hint = difflib.get_close_matches(key, allowed, n=1)
            extra = f" (did you mean {hint[0]!r}?)" if hint else ""
            raise CatalogueError(f"versions.toml: unknown key {key!r} in {where}{extra}")


_MISSING = object()


def _field(raw: dict, key: str, kind: type, where: str, default=_MISSING):
    """raw[key], checked against its type: a typo in versions.toml is one line, not a traceback."""
    value = raw.get(key, _MISSING)
    if value is _MISSING:
        if default is _MISSING:
            raise CatalogueError(f"versions.toml: {where} lacks {key!r}")
        return default
    if kind is list:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise CatalogueError(f"versions.toml: {where}: {key} must be a list of strings, not {value!r}")
        return tuple(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise CatalogueError(f"versions.toml: {where}: {key} must be {kind.__name__}, not {value!r}")
    return value


def _version(value: str, where: str) -> str:
    try:
        Version(value)
    except InvalidVersion:
        raise CatalogueError(f"versions.toml: {where}: {value!r} is not a version") from None
    return value


def _owed(names: tuple[str, ...], where: str) -> tuple[str, ...]:
    for name in names:
        if name not in SCENARIOS:
            hint = difflib.get_close_matches(name, SCENARIOS, n=1)
            extra = f" (did you mean {hint[0]!r}?)" if hint else ""
            raise CatalogueError(f"versions.toml: {where}: owed names unknown scenario {name!r}{extra}")
    if len(set(names)) != len(names):
        raise CatalogueError(f"versions.toml: {where}: owed lists a scenario twice")
    return names


def _notes(notes: tuple[str, ...], where: str) -> tuple[str, ...]:
    for note in notes:
        shown = note if len(note) <= 40 else note[:40] + "..."
        match = NOTE_FORM.fullmatch(note)
        if not match or "\n" in note:
            raise CatalogueError(f'versions.toml: {where}: note {shown!r} is not one line "YYYY-MM-DD: what"')
        try:
            date.fromisoformat(match[1])
        except ValueError:
            raise CatalogueError(f"versions.toml: {where}: note {shown!r}: {match[1]} is not a date") from None
        if len(note) > NOTE_MAX:
            raise CatalogueError(f"versions.toml: {where}: note {shown!r} is {len(note)} characters, over {NOTE_MAX}")
    return notes


@dataclass(frozen=True, kw_only=True)
class Backport:
    id: str
    title: str
    bug: str
    origin: str
    upstream_in: str  # first release that carries the fix, or ""
    # Backports that must be applied, checked and reverted with this one wherever a series carries
    # both: one half of a fix without the other is unsafe or does not apply.
    together_with: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Known:
    """A bug in the code paths the series patch that no backport here fixes."""

    id: str
    title: str
    bug: str  # the upstream report
    present: str  # the releases whose code has it, a version specifier ("" where no code path has it)
    status: str  # one of KNOWN_STATUSES
    evidence: str  # the runs, or the reading of the code, the status rests on
    checked: str  # the day the status was last checked, YYYY-MM-DD
    when: dict = field(default_factory=dict)  # the serving flags it needs (WHEN_KEYS); {}: unknown
    workaround: str = ""
    fixed_by: tuple[str, ...] = ()  # backports that fix it where a release's series ships one

    @property
    def number(self) -> str:
        """The upstream report as users quote it: "#51571"."""
        return "#" + self.bug.rstrip("/").rsplit("/", 1)[-1]

    def affects(self, version: str) -> bool:
        return bool(self.present) and Version(version) in SpecifierSet(self.present)

    def unfixed(self, version: str, shipped: tuple[str, ...]) -> bool:
        """Present in this release's code, and fixed by none of the backports its series ships."""
        return self.affects(version) and not set(self.fixed_by) & set(shipped)


@dataclass(frozen=True, kw_only=True)
class Arch:
    name: str
    platforms: tuple[str, ...]  # docker platforms, e.g. linux/amd64
    gpus: str
    gdn_prefill_backend: str  # what vLLM picks there by default; the GPU smoke test must run it
    why: str


@dataclass(frozen=True)
class Variant:
    """An official tag variant besides the plain one (e.g. -cu129), built for every arch."""

    name: str
    tag_suffix: str  # appended to the release's official tag
    since: str  # first release that publishes it
    why: str


@dataclass(frozen=True, kw_only=True)
class Release:
    version: str
    torch: str
    cuda: int
    wheel: str
    wheel_sha256: str
    record_sha256: str
    series: str  # "" when nothing is backported to this release yet
    backports: tuple[str, ...]
    upstream: tuple[str, ...]
    bugs: tuple[str, ...]  # backports this release needs and its series lacks yet
    known: tuple[str, ...] = ()  # derived: the [known] bugs its code has, that no backport fixes
    image: str  # DEFAULT_IMAGE unless versions.toml names another
    image_digests: dict[str, str]
    files: dict[str, str]  # pristine sha256 of every file the series touches
    # How far the series is proven on this release beyond its docs/evidence/ files, for the support
    # matrix and notes: the SCENARIOS not yet run on a GPU here, and dated facts ("YYYY-MM-DD: ...")
    # no verify JSON holds (a kernel test, a benchmark, a run kept elsewhere, a run that could not
    # start and why).
    owed: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Series:
    name: str
    root: Path | Traversable
    releases: tuple[str, ...]  # derived: the releases whose `series` names this one, in version order
    patches: tuple[Patch, ...]
    pinned: dict[str, str]  # file name -> sha256, as verified when the series was loaded

    @property
    def created(self) -> frozenset[str]:
        """Paths the series adds (new kernel files): absent from the wheel and from RECORD."""
        return frozenset(f.path for p in self.patches for f in p.files if f.creates)

    @property
    def paths(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for patch in self.patches:
            for path in patch.paths:
                seen.setdefault(path)
        return tuple(seen)


@dataclass(frozen=True, kw_only=True)
class Unpublished:
    version: str
    message: str
    dev_prefix: str  # installed versions starting with this are nightlies of that line


class Catalogue:
    def __init__(self, home: Path | Traversable):
        self.home = home
        path = home / "versions.toml"
        try:
            self.data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise CatalogueError(f"{path}: not found") from None
        except tomllib.TOMLDecodeError as exc:
            raise CatalogueError(f"{path}: {exc}") from None
        if self.data.get("schema") != SCHEMA:
            raise CatalogueError(f"{path}: schema {self.data.get('schema')!r} is not {SCHEMA}")
        _unknown(
            self.data,
            {"schema", "backports", "known", "releases", "series", "unpublished", "arches", "variants"},
            "the top level",
        )
        self.arches = {k: self._arch(k, v) for k, v in self.data.get("arches", {}).items()}
        self.variants = {k: self._variant(k, v) for k, v in self.data.get("variants", {}).items()}
        # before the releases, whose lists are read from the series
        for name, raw in self.data.get("series", {}).items():
            where = f'[series."{name}"]'
            for derived, source in DERIVED_SERIES_KEYS.items():
                if derived in raw:
                    raise CatalogueError(f"versions.toml: {where}: {derived!r} is derived from {source}; remove it")
            _unknown(raw, SERIES_KEYS, where)
            _field(raw, "files", dict, where)
        self._refuse_identical_series()
        self.backports = {k: self._backport(k, v) for k, v in self.data.get("backports", {}).items()}
        self.known = {k: self._known(k, v) for k, v in self.data.get("known", {}).items()}
        self._order_cache: dict[str, tuple[str, ...]] = {}
        self.releases = {k: self._release(k, v) for k, v in self.data.get("releases", {}).items()}
        self.unpublished = {
            k: Unpublished(
                version=k,
                message=_field(v, "message", str, f'[unpublished."{k}"]'),
                dev_prefix=_field(v, "dev_prefix", str, f'[unpublished."{k}"]'),
            )
            for k, v in self.data.get("unpublished", {}).items()
        }
        self._series_cache: dict[str, Series] = {}

    def _refuse_identical_series(self) -> None:
        """Two series that pin the same files are one series under two names: releases name one."""
        seen: dict[frozenset, str] = {}
        for name, raw in self.data.get("series", {}).items():
            pins = frozenset(raw.get("files", {}).items())
            if not pins:
                continue  # a new series before `maint rehash --write`
            if pins in seen:
                raise CatalogueError(
                    f'versions.toml: [series."{seen[pins]}"] and [series."{name}"] pin identical files: keep one, '
                    "and name it as the series of the other's releases"
                )
            seen[pins] = name

    def _arch(self, key: str, raw: dict) -> Arch:
        where = f"[arches.{key}]"
        _unknown(raw, ARCH_KEYS, where)
        platforms = _field(raw, "platforms", list, where)
        for platform in platforms:
            if platform not in RUNNER_ARCH:
                raise CatalogueError(
                    f"versions.toml: {where}: no GPU runner for platform {platform!r} ({', '.join(RUNNER_ARCH)})"
                )
        return Arch(
            name=key,
            platforms=platforms,
            gpus=_field(raw, "gpus", str, where),
            gdn_prefill_backend=_field(raw, "gdn_prefill_backend", str, where),
            why=_field(raw, "why", str, where),
        )

    def _variant(self, key: str, raw: dict) -> Variant:
        where = f"[variants.{key}]"
        _unknown(raw, VARIANT_KEYS, where)
        return Variant(
            name=key,
            tag_suffix=_field(raw, "tag_suffix", str, where),
            since=_version(_field(raw, "since", str, where), where),
            why=_field(raw, "why", str, where),
        )

    def variants_of(self, version: str) -> list[Variant | None]:
        """The plain image (None) and every variant published for this release."""
        return [None, *(v for v in self.variants.values() if Version(version) >= Version(v.since))]

    def _backport(self, key: str, raw: dict) -> Backport:
        where = f"[backports.{key}]"
        _unknown(raw, BACKPORT_KEYS, where)
        upstream_in = _field(raw, "upstream_in", str, where, "")
        return Backport(
            id=key,
            title=_field(raw, "title", str, where),
            bug=_field(raw, "bug", str, where),
            origin=_field(raw, "origin", str, where, ""),
            upstream_in=upstream_in and _version(upstream_in, where),
            together_with=_field(raw, "together_with", list, where, ()),
        )

    def _known(self, key: str, raw: dict) -> Known:
        where = f"[known.{key}]"
        _unknown(raw, KNOWN_KEYS, where)
        if key in self.backports:
            raise CatalogueError(f"versions.toml: {where}: {key!r} is a backport's id: a known bug has no backport")
        present = _field(raw, "present", str, where, "").strip()
        try:
            SpecifierSet(present)
        except InvalidSpecifier:
            raise CatalogueError(f"versions.toml: {where}: present {present!r} is not a version specifier") from None
        status = _field(raw, "status", str, where)
        if status not in KNOWN_STATUSES:
            raise CatalogueError(f"versions.toml: {where}: status {status!r} is not one of {', '.join(KNOWN_STATUSES)}")
        if status == "absent" and present:
            raise CatalogueError(f"versions.toml: {where}: an absent bug is present in no release; drop present")
        if status in ("reproduced", "not yet run") and not present:
            raise CatalogueError(f"versions.toml: {where}: a {status} bug is present somewhere; say where in present")
        checked = _field(raw, "checked", str, where)
        try:
            if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", checked):
                raise ValueError
            date.fromisoformat(checked)
        except ValueError:
            raise CatalogueError(f"versions.toml: {where}: checked {checked!r} is not a date YYYY-MM-DD") from None
        text = {k: _field(raw, k, str, where) for k in ("title", "bug", "evidence")}
        for k, value in text.items():
            # one cell of a markdown table each (docs/SUPPORT.md)
            if "|" in value or "\n" in value:
                raise CatalogueError(f"versions.toml: {where}: {k} must be one line without '|'")
        when = dict(_field(raw, "when", dict, where, {}))
        for k, value in when.items():
            _unknown([k], set(WHEN_KEYS), f"{where} when")
            kind = WHEN_KEYS[k]
            if kind is list:
                _field(when, k, list, f"{where} when")
            elif not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise CatalogueError(f"versions.toml: {where}: when.{k} must be {kind.__name__}, not {value!r}")
        fixed_by = _field(raw, "fixed_by", list, where, ())
        for bid in fixed_by:
            if bid not in self.backports:
                raise CatalogueError(f"versions.toml: {where}: fixed_by names {bid!r}, which is no backport")
        return Known(
            id=key,
            present=present,
            status=status,
            checked=checked,
            when=when,
            workaround=_field(raw, "workaround", str, where, ""),
            fixed_by=fixed_by,
            **text,
        )

    def _release(self, key: str, raw: dict) -> Release:
        for derived, source in DERIVED_RELEASE_KEYS.items():
            if derived in raw:
                raise CatalogueError(
                    f'versions.toml: [releases."{key}"]: {derived!r} is derived from {source}; remove it'
                )
        for retired, instead in RETIRED_RELEASE_KEYS.items():
            if retired in raw:
                raise CatalogueError(f'versions.toml: [releases."{key}"]: {retired!r} is replaced by {instead}')
        _unknown(raw, RELEASE_KEYS, f'[releases."{key}"]')
        try:
            Version(key)
        except InvalidVersion:
            raise CatalogueError(f"versions.toml: {key!r} is not a version") from None
        where = f'[releases."{key}"]'
        series = _field(raw, "series", str, where, "")
        upstream = tuple(
            bid for bid, bp in self.backports.items() if bp.upstream_in and Version(bp.upstream_in) <= Version(key)
        )
        # A series may still carry a patch the release has upstream (apply then finds it in place).
        shipped = tuple(b for b in self._series_ids(series, where) if b not in upstream) if series else ()
        release = Release(
            version=key,
            torch=_field(raw, "torch", str, where),
            cuda=_field(raw, "cuda", int, where),
            wheel=_field(raw, "wheel", str, where),
            wheel_sha256=_field(raw, "wheel_sha256", str, where),
            record_sha256=_field(raw, "record_sha256", str, where),
            series=series,
            backports=shipped,
            upstream=upstream,
            bugs=_field(raw, "bugs", list, where, ()),
            known=tuple(kid for kid, k in self.known.items() if k.unfixed(key, shipped)),
            image=_field(raw, "image", str, where, DEFAULT_IMAGE.format(version=key)),
            image_digests=dict(_field(raw, "image_digests", dict, where, {})),
            files=dict(_field(raw, "files", dict, where, {})),
            owed=_owed(_field(raw, "owed", list, where, ()), where),
            notes=_notes(_field(raw, "notes", list, where, ()), where),
        )
        for bid in release.backports:
            if bid not in self.backports:
                raise CatalogueError(f"backports/{series}/series: names backport {bid!r}, which versions.toml lacks")
        return release

    def _series_ids(self, name: str, where: str) -> tuple[str, ...]:
        """The backport ids a series applies, in order, from its pinned series file (the patches
        themselves are verified when the series is loaded to be applied)."""
        if name not in self.data.get("series", {}):
            raise CatalogueError(f"versions.toml: {where} names unknown series {name!r}")
        try:
            return tuple(backport_id_of(fname) for fname in self._series_order(name))
        except PatchError as exc:
            raise CatalogueError(f"backports/{name}/series: {exc}") from None

    def _series_order(self, name: str) -> tuple[str, ...]:
        """The patch file names a series file lists, each pinned. Read once a series: several
        releases share one, and loading the series to apply it needs the order again."""
        if name not in self._order_cache:
            order = series_order(self.series_file(name, "series"))
            for fname in order:
                if fname not in self.data["series"][name].get("files", {}):
                    raise CatalogueError(f"backports/{name}/series names {fname}, which is not recorded")
            self._order_cache[name] = tuple(order)
        return self._order_cache[name]

    def series_file(self, name: str, fname: str) -> bytes:
        """A file of backports/NAME/ (its series file or a patch), refused unless its sha256 is the
        one versions.toml pins: what is applied, ported or listed is what was reviewed."""
        want = self.data["series"][name].get("files", {}).get(fname)
        if want is None:
            raise CatalogueError(f"backports/{name}/{fname}: not recorded in versions.toml")
        try:
            data = (self.home / "backports" / name / fname).read_bytes()
        except FileNotFoundError:
            raise CatalogueError(f"backports/{name}/{fname}: missing") from None
        got = sha256(data)
        if got != want:
            raise CatalogueError(
                f"backports/{name}/{fname}: sha256 differs from versions.toml (file {got[:12]}, pinned "
                f"{want[:12]}): the backport was edited or tampered with"
            )
        return data

    def series_file_unpinned(self, name: str, fname: str) -> bytes:
        """A file of backports/NAME/ as it is, pinned or not (FileNotFoundError when absent): for
        `maint lint-headers`, which reads every file as it stands to report all it finds at once."""
        return (self.home / "backports" / name / fname).read_bytes()

    @cached_property
    def versions(self) -> list[str]:
        return sorted(self.releases, key=Version)

    def twins(self, version: str) -> list[str]:
        """The other releases whose patched files are byte-identical to this one's, in version
        order: the same series applied to the same pristine files (versions.toml pins the sha256 of
        every file a series touches; apply is deterministic). GPU evidence of one holds for all."""
        r = self.releases[version]
        if not r.series or not r.files:
            return []
        return [
            v
            for v in self.versions
            if v != version and self.releases[v].series == r.series and self.releases[v].files == r.files
        ]

    def series(self, name: str) -> Series:
        """Load a series, refusing any file whose hash versions.toml does not record."""
        if name in self._series_cache:
            return self._series_cache[name]
        raw = self.data.get("series", {}).get(name)
        if raw is None:
            raise CatalogueError(f"versions.toml: no series {name!r}")
        _unknown(raw, SERIES_KEYS, f'[series."{name}"]')
        root = self.home / "backports" / name
        pinned: dict[str, str] = raw.get("files", {})
        present = set(series_files(root))
        for extra in sorted(present - set(pinned)):
            raise CatalogueError(f"backports/{name}/{extra}: not recorded in versions.toml")
        order = self._series_order(name)
        # Every pinned file is checked, also one the series file does not list.
        contents = {fname: self.series_file(name, fname) for fname in pinned if fname != "series"}
        for fname in {f for f in order if order.count(f) > 1}:
            raise CatalogueError(f"backports/{name}/series lists {fname} twice")
        patches = []
        for fname in order:
            try:
                patches.append(parse(contents[fname], fname))
            except PatchError as exc:
                raise CatalogueError(f"backports/{name}/{exc}") from None
        series = Series(
            name=name, root=root, releases=self.releases_of(name), patches=tuple(patches), pinned=dict(pinned)
        )
        self._series_cache[name] = series
        return series

    def releases_of(self, name: str) -> tuple[str, ...]:
        """The releases series NAME serves, in version order: those whose `series` names it."""
        return tuple(v for v in self.versions if self.releases[v].series == name)

    def series_names(self) -> list[str]:
        return list(self.data.get("series", {}))

"""What the image build and CI matrices are made of, derived from versions.toml only."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from pathlib import Path

from .catalogue import CHECKOUT, RUNNER_ARCH, Catalogue

REGISTRY = "ghcr.io/vllm-backports/vllm-backports"


def backport_revision(cat: Catalogue, series: str) -> str:
    """A short content hash of a series' pinned files: it changes exactly when the backports do."""
    pinned = cat.data["series"][series]["files"]
    blob = "\n".join(f"{name} {digest}" for name, digest in sorted(pinned.items()))
    return hashlib.sha256(blob.encode()).hexdigest()[:8]


DOCKERFILE = "images/Dockerfile"
BAKE_FILE = "images/docker-bake.hcl"  # the build's arguments (GPU_ARCH becomes the image's env) and labels
_COPY = re.compile(r"^COPY\s+(.+)\s+\S+$", re.M)


def tooling_digest(root: Path = CHECKOUT) -> str:
    """A hash of what an image carries of this project besides its series: the files and folders
    images/Dockerfile copies (backports/ left out: each image's own series is its backport
    revision), the Dockerfile and the bake file. A fix to the tool, its known bugs or the image's
    scripts changes it, and with it every image's revision."""
    dockerfile = (root / DOCKERFILE).read_text()
    sources = [src for line in _COPY.findall(dockerfile) for src in line.split() if not src.startswith("--")]
    files = {DOCKERFILE: root / DOCKERFILE, BAKE_FILE: root / BAKE_FILE}
    for src in sources:
        if src == "backports":
            continue
        top = root / src
        found = sorted(top.rglob("*")) if top.is_dir() else [top]
        for f in found:
            if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc":
                files[f.relative_to(root).as_posix()] = f
    blob = "".join(f"{rel} {hashlib.sha256(f.read_bytes()).hexdigest()}\n" for rel, f in sorted(files.items()))
    return hashlib.sha256(blob.encode()).hexdigest()[:8]


def image_revision(series_revision: str, base: str, tooling: str) -> str:
    """An image's revision: its series, its base image (by digest once pinned) and the tooling."""
    return hashlib.sha256(f"{series_revision} {base} {tooling}".encode()).hexdigest()[:8]


def image_targets(cat: Catalogue) -> list[dict]:
    """One target per release that has a series, per arch, per official tag variant. `revision`
    is the image's (image_revision of this checkout's tooling, which its -bp tag names);
    `series_revision` the series' alone, which local bake builds are labelled with
    (images/bake-data.json stays put while the tool changes)."""
    tooling = tooling_digest()
    out = []
    for version in cat.versions:
        release = cat.releases[version]
        if not release.series:
            continue
        series_rev = backport_revision(cat, release.series)
        for variant in cat.variants_of(version):
            suffix = f"-{variant.name}" if variant else ""
            base = release.image + (variant.tag_suffix if variant else "")
            for arch in cat.arches.values():
                # Pin by digest where one is known (`maint digests`); a tag otherwise.
                digest = release.image_digests.get(arch.name + suffix, "")
                pinned_base = f"{base}@{digest}" if digest else base
                rev = image_revision(series_rev, pinned_base, tooling)
                out.append(
                    {
                        "name": f"v{version.replace('.', '-')}-{arch.name}{suffix}",
                        "vllm": version,
                        "arch": arch.name,
                        "variant": variant.name if variant else "",
                        "series": release.series,
                        "revision": rev,
                        "series_revision": series_rev,
                        "base_tag": base,
                        "digest_key": arch.name + suffix,
                        "base": pinned_base,
                        "platforms": list(arch.platforms),
                        "gdn_prefill_backend": arch.gdn_prefill_backend,
                        "tags": [
                            f"{REGISTRY}:v{version}-{arch.name}{suffix}-bp{rev}",
                            f"{REGISTRY}:v{version}-{arch.name}{suffix}",
                        ],
                    }
                )
    return out


BAKE_DATA = "images/bake-data.json"


def bake_data(cat: Catalogue) -> dict:
    """The data images/docker-bake.hcl expands (a bake JSON file): one IMAGES row per release and
    tag variant, crossed there with every arch of ARCHES; groups by arch and by variant."""
    targets = image_targets(cat)
    rows: dict[tuple[str, str], dict] = {}
    for t in targets:
        row = rows.setdefault(
            (t["vllm"], t["variant"]),
            {
                "vllm": t["vllm"],
                "suffix": f"-{t['variant']}" if t["variant"] else "",
                "series": t["series"],
                "revision": t["series_revision"],
                "bases": {},
            },
        )
        row["bases"][t["arch"]] = t["base"]  # by digest where `maint digests` pinned one
    groups = {arch: [t["name"] for t in targets if t["arch"] == arch] for arch in cat.arches}
    groups |= {v: [t["name"] for t in targets if t["variant"] == v] for v in cat.variants}
    return {
        "variable": {
            "REGISTRY": {"default": REGISTRY},
            "ARCHES": {"default": {a.name: list(a.platforms) for a in cat.arches.values()}},
            "IMAGES": {"default": list(rows.values())},
        },
        "group": {"default": {"targets": ["image"]}} | {g: {"targets": names} for g, names in groups.items()},
    }


def render_bake_data(cat: Catalogue) -> str:
    """bake_data as JSON, one image row or group a line: a new release is a few new lines."""
    data = bake_data(cat)

    def line(value) -> str:
        return json.dumps(value, separators=(", ", ": "))

    variables = data["variable"]
    out = ["{", '  "variable": {']
    out.append(f'    "REGISTRY": {line(variables["REGISTRY"])},')
    out.append(f'    "ARCHES": {line(variables["ARCHES"])},')
    out.append('    "IMAGES": {"default": [')
    rows = variables["IMAGES"]["default"]
    out += [f"      {line(r)}" + ("," if i < len(rows) - 1 else "") for i, r in enumerate(rows)]
    out += ["    ]}", "  },", '  "group": {']
    groups = list(data["group"].items())
    out += [f"    {json.dumps(g)}: {line(v)}" + ("," if i < len(groups) - 1 else "") for i, (g, v) in enumerate(groups)]
    out += ["  }", "}"]
    text = "\n".join(out) + "\n"
    assert json.loads(text) == data  # the layout is only a layout
    return text


# GitHub-hosted runners of each CPU arch: arm64 images (GH200) are built natively, not under QEMU.
HOSTED_RUNNER = {"linux/amd64": "ubuntu-24.04", "linux/arm64": "ubuntu-24.04-arm"}


def publish_matrices(cat: Catalogue) -> dict[str, dict]:
    """The publish workflow's matrices: `builds`, one job per image and platform (pushed by
    digest), and `images`, one job per image that joins its platforms under its tags and signs."""
    builds, images = [], []
    for t in image_targets(cat):
        pinned, moving = t["tags"]
        images.append(
            {
                "name": t["name"],
                "vllm": t["vllm"],
                "arch": t["arch"],
                "revision": t["revision"],
                "pinned": pinned,
                "moving": moving,
                "platforms": len(t["platforms"]),
                # "--" is in no image name: v0-20-0-ampere's pattern must not take -ampere-cu129's
                "digests": f"digest-{t['name']}--*",
            }
        )
        for platform in t["platforms"]:
            builds.append(
                {
                    "name": t["name"],
                    "platform": platform,
                    "runner": HOSTED_RUNNER[platform],
                    "job": f"{t['name']}-{platform.split('/')[1]}",
                    "digest": f"digest-{t['name']}--{platform.split('/')[1]}",
                    "pinned": pinned,
                    "vllm": t["vllm"],
                    "revision": t["revision"],  # the bake file's labels carry the series' alone
                }
            )
    return {"builds": {"include": builds}, "images": {"include": images}}


PINNED_TAG = re.compile(r"v\d+\.\d+\.\d+(?:\.\w+)?-[a-z0-9]+(?:-[a-z0-9]+)?-bp[0-9a-f]{8}")


def prune_plan(versions: list[dict], notes: str, current: set[str], cutoff: datetime) -> list[dict]:
    """Which package versions of the registry (GitHub's package API rows) retention deletes: only
    versions every tag of which is a pinned `-bp` tag that no image carries now, that no release
    note names, and that were made before `cutoff`. Untagged versions (the platform images and
    attestations of a multi-platform index) and signatures are never deleted here."""
    plan = []
    for v in versions:
        tags = v.get("metadata", {}).get("container", {}).get("tags", [])
        if not tags or not all(PINNED_TAG.fullmatch(tag) for tag in tags):
            continue
        if any(tag in current or tag in notes for tag in tags):
            continue
        if datetime.fromisoformat(v["created_at"].replace("Z", "+00:00")) >= cutoff:
            continue
        plan.append({"id": v["id"], "tags": tags})
    return plan


# GitHub gives every self-hosted runner its CPU arch as a label; ours add `gpu-<arch>`.


def smoke_targets(cat: Catalogue) -> list[dict]:
    """One GPU smoke job per image and platform: a multi-platform Hopper image is run on an H100
    (amd64) and on a GH200 (arm64), since each platform's image is a different build."""
    out = []
    for t in image_targets(cat):
        for platform in t["platforms"]:
            out.append(
                {
                    "name": f"{t['name']}-{platform.split('/')[1]}",
                    "vllm": t["vllm"],
                    "arch": t["arch"],
                    "platform": platform,
                    "image": t["tags"][0],
                    "revision": t["revision"],
                    "gdn_prefill_backend": t["gdn_prefill_backend"],
                    "runs_on": ["self-hosted", "linux", RUNNER_ARCH[platform], f"gpu-{t['arch']}"],
                }
            )
    return out


def ci_matrix(cat: Catalogue) -> dict:
    """The release-test matrix for GitHub Actions (read with fromJSON)."""
    return {"include": [{"vllm": v, "series": cat.releases[v].series or "none"} for v in cat.versions]}


# The CPU tests of each backport that has them (tests/release/): its builders, and its Triton
# kernel under the interpreter (those need triton in the CPU venv: CPU_TRITON=1).
BUILDER_TESTS = {
    "gdn-spec-state": ("tests/release/test_gdn_routing.py",),
    "gdn-spec-state-v2-runner": ("tests/release/test_gdn_v2_runner.py",),
    "turboquant-spec-decode": (
        "tests/release/test_turboquant_spec_decode.py",
        "tests/release/test_turboquant_interpreted.py",
    ),
    "turboquant-kv-shape": ("tests/release/test_turboquant_kv_shape.py",),
    "turboquant-prefill-fastpath": ("tests/release/test_turboquant_prefill_fastpath.py",),
    "turboquant-decode-workspace": ("tests/release/test_turboquant_decode_workspace.py",),
}


# A release's upstream tests (`maint upstream-tests`) run in its CPU job once their results are
# recorded here and reviewed: any pass-then-fail they show must be explained before CI enforces it.
UPSTREAM_RESULTS = CHECKOUT / "docs" / "upstream-tests"


def gdn_builder_matrix(cat: Catalogue) -> dict:
    """Releases whose metadata builders the CPU tests run against, with the torch each pins, the
    builder tests its backports have, and whether its upstream tests run there too."""
    rows = []
    for v in cat.versions:
        tests = [t for b, files in BUILDER_TESTS.items() if b in cat.releases[v].backports for t in files]
        if tests:
            rows.append(
                {
                    "vllm": v,
                    "torch": cat.releases[v].torch,
                    "tests": " ".join(tests),
                    "upstream_tests": (UPSTREAM_RESULTS / f"{v}.json").is_file(),
                }
            )
    return {"include": rows}

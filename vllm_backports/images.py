"""What the image build and CI matrices are made of, derived from versions.toml only."""

from __future__ import annotations

import hashlib
import json

from .catalogue import CHECKOUT, RUNNER_ARCH, Catalogue

REGISTRY = "ghcr.io/vllm-backports/vllm-backports"


def backport_revision(cat: Catalogue, series: str) -> str:
    """A short content hash of a series' pinned files: it changes exactly when the backports do."""
    pinned = cat.data["series"][series]["files"]
    blob = "\n".join(f"{name} {digest}" for name, digest in sorted(pinned.items()))
    return hashlib.sha256(blob.encode()).hexdigest()[:8]


def image_targets(cat: Catalogue) -> list[dict]:
    """One target per release that has a series, per arch, per official tag variant."""
    out = []
    for version in cat.versions:
        release = cat.releases[version]
        if not release.series:
            continue
        rev = backport_revision(cat, release.series)
        for variant in cat.variants_of(version):
            suffix = f"-{variant.name}" if variant else ""
            base = release.image + (variant.tag_suffix if variant else "")
            for arch in cat.arches.values():
                # Pin by digest where one is known (`maint digests`); a tag otherwise.
                digest = release.image_digests.get(arch.name + suffix, "")
                out.append(
                    {
                        "name": f"v{version.replace('.', '-')}-{arch.name}{suffix}",
                        "vllm": version,
                        "arch": arch.name,
                        "variant": variant.name if variant else "",
                        "series": release.series,
                        "revision": rev,
                        "base_tag": base,
                        "digest_key": arch.name + suffix,
                        "base": f"{base}@{digest}" if digest else base,
                        "platforms": list(arch.platforms),
                        "gdn_prefill_backend": arch.gdn_prefill_backend,
                        "tags": [
                            f"{REGISTRY}:v{version}-{arch.name}{suffix}-bp{rev}",
                            f"{REGISTRY}:v{version}-{arch.name}{suffix}",
                        ],
                    }
                )
    return out


def render_bake(cat: Catalogue) -> str:
    targets = image_targets(cat)
    lines = [
        "# Generated from versions.toml by `python -m vllm_backports.maint bake --write`; do not edit.",
        "# Build one: docker buildx bake -f images/docker-bake.hcl v0-20-0-ampere",
        "",
        'group "default" {',
        "  targets = [" + ", ".join(json.dumps(t["name"]) for t in targets) + "]",
        "}",
    ]
    groups = {arch: [t["name"] for t in targets if t["arch"] == arch] for arch in cat.arches}
    groups |= {v: [t["name"] for t in targets if t["variant"] == v] for v in cat.variants}
    for group, names in groups.items():
        lines += ["", f'group "{group}" {{', "  targets = [" + ", ".join(json.dumps(n) for n in names) + "]", "}"]
    for t in targets:
        lines += [
            "",
            f'target "{t["name"]}" {{',
            '  context = "."',
            '  dockerfile = "images/Dockerfile"',
            f"  platforms = {json.dumps(t['platforms'])}",
            f"  tags = {json.dumps(t['tags'])}",
            "  args = {",
            f"    BASE_IMAGE = {json.dumps(t['base'])}",
            f"    VLLM_VERSION = {json.dumps(t['vllm'])}",
            f"    BACKPORT_REVISION = {json.dumps(t['revision'])}",
            f"    GPU_ARCH = {json.dumps(t['arch'])}",
            "  }",
            "  labels = {",
            f'    "org.opencontainers.image.version" = {json.dumps(t["vllm"] + "-bp" + t["revision"])}',
            f'    "io.vllm-backports.series" = {json.dumps(t["series"])}',
            "  }",
            "}",
        ]
    return "\n".join(lines) + "\n"


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

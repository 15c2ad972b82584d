"""The image matrix derived from versions.toml, the bake file, the Dockerfile's arguments and the
build-time smoke check."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from vllm_backports.catalogue import Catalogue
from vllm_backports.images import backport_revision, image_targets, render_bake

REPO = Path(__file__).resolve().parent.parent
CAT = Catalogue(REPO)


def test_every_served_release_gets_every_arch():
    targets = image_targets(CAT)
    served = [v for v in CAT.versions if CAT.releases[v].series]
    assert {(t["vllm"], t["arch"]) for t in targets} == {(v, a) for v in served for a in CAT.arches}
    hopper = next(t for t in targets if t["arch"] == "hopper")
    assert hopper["platforms"] == ["linux/amd64", "linux/arm64"] and hopper["gdn_prefill_backend"] == "flashinfer"


def test_tags_name_release_arch_and_revision():
    t = next(t for t in image_targets(CAT) if t["vllm"] == "0.20.0" and t["arch"] == "ampere")
    rev = backport_revision(CAT, "0.20.0")
    assert re.fullmatch(r"[0-9a-f]{8}", rev)
    assert t["tags"][0].endswith(f":v0.20.0-ampere-bp{rev}")


def test_revision_changes_with_the_backports(tmp_path):
    before = backport_revision(CAT, "0.20.0")
    data = json.loads(json.dumps(CAT.data))
    data["series"]["0.20.0"]["files"]["series"] = "0" * 64

    class Edited:
        pass

    edited = Edited()
    edited.data = data
    assert backport_revision(edited, "0.20.0") != before
    assert backport_revision(edited, "0.21.0") == backport_revision(CAT, "0.21.0")


def test_committed_bake_file_is_current():
    assert (REPO / "images/docker-bake.hcl").read_text() == render_bake(CAT)


def test_dockerfile_declares_every_bake_arg():
    dockerfile = (REPO / "images/Dockerfile").read_text()
    declared = set(re.findall(r"^ARG (\w+)", dockerfile, re.M))
    blocks = re.findall(r"args = \{\n(.*?)\n  \}", render_bake(CAT), re.S)
    passed = {m for block in blocks for m in re.findall(r"^\s+(\w+) = ", block, re.M)}
    assert passed == {"BASE_IMAGE", "VLLM_VERSION", "BACKPORT_REVISION", "GPU_ARCH"}
    assert passed <= declared


def _smoke(tmp_path, status: dict) -> subprocess.CompletedProcess:
    path = tmp_path / "status.json"
    path.write_text(json.dumps(status))
    return subprocess.run([sys.executable, str(REPO / "images/smoke.py"), "--vllm", "0.20.0", "--status", str(path)],
                          capture_output=True, text=True)


def test_smoke_passes_when_every_backport_is_applied(tmp_path):
    applied = [{"id": b} for b in CAT.releases["0.20.0"].backports]
    ok = _smoke(tmp_path, {"vllm": "0.20.0", "consistent": True, "applied": applied})
    assert ok.returncode == 0, ok.stderr


def test_smoke_takes_a_local_build_of_the_release_but_not_another_release(tmp_path):
    applied = [{"id": b} for b in CAT.releases["0.20.0"].backports]
    local = _smoke(tmp_path, {"vllm": "0.20.0+cu129", "consistent": True, "applied": applied})
    assert local.returncode == 0, local.stderr
    other = _smoke(tmp_path, {"vllm": "0.20.1+cu129", "consistent": True, "applied": applied})
    assert other.returncode == 1 and "status is for vLLM 0.20.1+cu129, not 0.20.0" in other.stderr


def test_smoke_fails_on_a_missing_backport_or_inconsistent_files(tmp_path):
    missing = _smoke(tmp_path, {"vllm": "0.20.0", "consistent": True, "applied": []})
    assert missing.returncode == 1 and "turboquant-spec-decode is not applied" in missing.stderr
    broken = _smoke(tmp_path, {"vllm": "0.20.0", "consistent": False, "applied": [{"id": "turboquant-spec-decode"}]})
    assert broken.returncode == 1 and "not consistent" in broken.stderr


def test_gpu_smoke_runs_each_platform_of_an_image_on_its_own_runner():
    from vllm_backports.images import smoke_targets

    jobs = smoke_targets(CAT)
    hopper = [j for j in jobs if j["vllm"] == "0.20.0" and j["arch"] == "hopper" and "cu129" not in j["name"]]
    assert {j["platform"]: j["runs_on"] for j in hopper} == {
        "linux/amd64": ["self-hosted", "linux", "X64", "gpu-hopper"],
        "linux/arm64": ["self-hosted", "linux", "ARM64", "gpu-hopper"],
    }
    ampere = [j for j in jobs if j["vllm"] == "0.20.0" and j["arch"] == "ampere" and "cu129" not in j["name"]]
    assert [j["runs_on"][-2:] for j in ampere] == [["X64", "gpu-ampere"]]
    # The smoke test runs the pinned build, not the moving tag, and the arch's own prefill path.
    assert all(j["image"].endswith(f"-bp{backport_revision(CAT, CAT.releases['0.20.0'].series)}") for j in hopper)
    assert {j["gdn_prefill_backend"] for j in hopper} == {"flashinfer"}
    assert len({j["name"] for j in jobs}) == len(jobs)


def test_workflow_smoke_job_reads_the_smoke_matrix_and_runs_verify():
    workflow = (REPO / ".github/workflows/images.yml").read_text()
    smoke = workflow[workflow.index("  gpu-smoke:"):]
    assert "fromJSON(needs.matrix.outputs.smoke)" in smoke and "runs-on: ${{ matrix.runs_on }}" in smoke
    assert "apply.py verify" in smoke and "--prefill-backend ${{ matrix.gdn_prefill_backend }}" in smoke
    # A build that failed leaves the tag on an older image: the smoke test checks what it pulled.
    build = workflow[workflow.index("  build:"):workflow.index("  gpu-smoke:")]
    assert "*.labels.org.opencontainers.image.revision=${{ github.sha }}" in build
    assert '"org.opencontainers.image.revision"' in smoke and '!= "${{ github.sha }}"' in smoke


def test_tag_variants_are_built_from_their_first_release_with_their_own_base_and_tags():
    targets = {t["name"]: t for t in image_targets(CAT)}
    since = CAT.variants["cu129"].since
    assert "v0-19-1-ampere-cu129" not in targets and since == "0.20.0"
    t = targets["v0-20-0-ampere-cu129"]
    assert t["base"] == "vllm/vllm-openai:v0.20.0-cu129" and t["variant"] == "cu129"
    assert t["tags"] == [targets["v0-20-0-ampere"]["tags"][0].replace("-ampere-", "-ampere-cu129-"),
                         targets["v0-20-0-ampere"]["tags"][1] + "-cu129"]
    from packaging.version import Version

    plain = {n for n, t in targets.items() if not t["variant"] and Version(t["vllm"]) >= Version(since)}
    assert {n for n, t in targets.items() if t["variant"] == "cu129"} == {n + "-cu129" for n in plain}


def test_builder_matrix_runs_each_release_s_builder_tests_with_its_torch():
    from vllm_backports.images import gdn_builder_matrix

    rows = {r["vllm"]: r for r in gdn_builder_matrix(CAT)["include"]}
    served = {v for v in CAT.versions if {"gdn-spec-state", "turboquant-spec-decode"} & set(CAT.releases[v].backports)}
    assert set(rows) == served
    gdn, tq = "tests/release/test_gdn_routing.py", "tests/release/test_turboquant_spec_decode.py"
    kernel = "tests/release/test_turboquant_interpreted.py"
    shape = "tests/release/test_turboquant_kv_shape.py"
    assert rows["0.20.0"] == {
        "vllm": "0.20.0",
        "torch": "2.11.0",
        "tests": f"{gdn} {tq} {kernel}",
        "upstream_tests": False,  # no results recorded in docs/upstream-tests/ for it
    }
    assert rows["0.26.0"]["upstream_tests"] is True
    assert rows["0.19.0"]["tests"] == gdn  # no TurboQuant backend before 0.20.0
    assert rows["0.21.0"]["tests"].split() == [gdn, tq, kernel]
    assert rows["0.26.0"]["tests"].split() == [gdn, tq, kernel, shape]
    assert rows["0.33.0"]["tests"].split() == [tq, kernel]  # upstream carries the GDN fix from 0.32.0

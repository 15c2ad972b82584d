"""The image matrix derived from versions.toml, the bake file, the Dockerfile's arguments and the
build-time smoke check."""

from __future__ import annotations

import copy
import dataclasses
import fnmatch
import json
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from vllm_backports.catalogue import Catalogue
from vllm_backports.images import (
    BAKE_DATA,
    backport_revision,
    bake_data,
    image_revision,
    image_targets,
    render_bake_data,
    tooling_digest,
)

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
    assert re.fullmatch(r"[0-9a-f]{8}", rev) and t["series_revision"] == rev
    assert t["revision"] == image_revision(rev, t["base"], tooling_digest())
    assert re.fullmatch(r"[0-9a-f]{8}", t["revision"]) and t["revision"] != rev
    assert t["tags"][0].endswith(f":v0.20.0-ampere-bp{t['revision']}")


def test_an_images_revision_changes_with_what_it_carries_of_this_project(tmp_path):
    # what images/Dockerfile copies (less backports/, the series' own revision), and the base
    repo = tmp_path / "repo"
    for rel in ("apply.py", "versions.toml", "pyproject.toml", "images", "vllm_backports", "lab/__init__.py"):
        src, dst = REPO / rel, repo / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(src, dst)
    before = tooling_digest(repo)
    assert before == tooling_digest(REPO)
    (repo / "lab/__init__.py").write_text("# the lab is not in the image\n")
    (repo / "images/README.txt").write_text("not copied\n")
    assert tooling_digest(repo) == before
    files = ("images/entrypoint.py", "vllm_backports/entrypoint.py", "versions.toml", "images/Dockerfile")
    for rel in (*files, "images/docker-bake.hcl", "pyproject.toml"):
        path = repo / rel
        kept = path.read_bytes()
        path.write_bytes(kept + b"\n# changed\n")
        assert tooling_digest(repo) != before, rel
        path.write_bytes(kept)
    assert tooling_digest(repo) == before
    # every input that moves the revision starts the workflow that publishes it
    paths = re.search(r"^    paths: \[(.*)\]$", (REPO / ".github/workflows/images.yml").read_text(), re.M)
    assert paths
    globs = [p.strip().strip('"') for p in paths.group(1).split(",")]
    for rel in (*files, "images/docker-bake.hcl", "pyproject.toml", "apply.py", "backports/0.20.0/series"):
        assert any(fnmatch.fnmatchcase(rel, g.replace("**", "*")) for g in globs), rel
    assert image_revision("0" * 8, "vllm/vllm-openai:v0.20.0", before) != image_revision(
        "0" * 8, "vllm/vllm-openai:v0.20.0@sha256:" + "1" * 64, before
    )


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


def test_committed_bake_data_is_current():
    assert (REPO / BAKE_DATA).read_text() == render_bake_data(CAT)


def _bake_target_block() -> str:
    hcl = (REPO / "images/docker-bake.hcl").read_text()
    blocks = re.findall(r'^target "(\w+)" \{\n(.*?)^\}', hcl, re.M | re.S)
    assert [name for name, _ in blocks] == ["image"]
    return blocks[0][1]


def _hcl_eval(expr: str, scope: dict):
    """The few HCL expressions images/docker-bake.hcl uses: templates, names with .field and
    [name] steps, replace(), lists and maps of those. Anything else raises."""
    expr = expr.strip().rstrip(",")
    if expr.startswith('"') and expr.endswith('"'):
        return re.sub(r"\$\{([^}]*)\}", lambda m: str(_hcl_eval(m.group(1), scope)), expr[1:-1])
    if m := re.fullmatch(r'replace\((.*), "(.*)", "(.*)"\)', expr):
        return _hcl_eval(m.group(1), scope).replace(m.group(2), m.group(3))
    if m := re.fullmatch(r"keys\((\w+)\)", expr):
        return sorted(scope[m.group(1)])
    assert re.fullmatch(r"\w+(\.\w+|\[\w+\])*", expr), f"not understood here: {expr}"
    steps = re.findall(r"(\w+)|\.(\w+)|\[(\w+)\]", expr)
    value = scope[steps[0][0]]
    for _, field, index in steps[1:]:
        value = value[field] if field else value[scope[index]]
    return value


def _expand_bake(data: dict | None = None) -> dict[str, dict]:
    """images/docker-bake.hcl's matrix target over images/bake-data.json (or `data`), expanded as
    bake does."""
    body = _bake_target_block()
    data = data or json.loads((REPO / BAKE_DATA).read_text())
    variables = {k: v["default"] for k, v in data["variable"].items()}
    attrs = dict(re.findall(r"^  (\w+)\s*=\s*(.*?)(?=^  \w+\s*=|\Z)", body, re.M | re.S))
    matrix = re.fullmatch(r"\{ img = (\w+), arch = (.*) \}", attrs.pop("matrix").strip())
    assert matrix, "matrix is { img = ..., arch = ... }"
    out = {}
    for img in _hcl_eval(matrix.group(1), variables):
        for arch in _hcl_eval(matrix.group(2), variables):
            scope = variables | {"img": img, "arch": arch}
            target = {}
            for key, raw in attrs.items():
                raw = raw.strip()
                if raw.startswith("["):
                    target[key] = [_hcl_eval(x, scope) for x in raw[1:-1].split("\n") if x.strip()]
                elif raw.startswith("{"):
                    pairs = re.findall(r"^\s*(\"[^\"]+\"|\w+)\s*=\s*(.+)$", raw[1:-1], re.M)
                    target[key] = {k.strip('"'): _hcl_eval(v, scope) for k, v in pairs}
                else:
                    target[key] = _hcl_eval(raw, scope)
            out[target.pop("name")] = target
    return out


def test_bake_matrix_expands_to_every_image_target():
    expanded = _expand_bake()
    targets = image_targets(CAT)
    assert sorted(expanded) == sorted(t["name"] for t in targets)
    for t in targets:
        got = expanded[t["name"]]
        # built locally, an image is labelled and tagged with its series' revision alone (the
        # publish workflow sets the image's)
        local = [t["tags"][0].replace(f"-bp{t['revision']}", f"-bp{t['series_revision']}"), t["tags"][1]]
        assert got["platforms"] == t["platforms"] and got["tags"] == local
        assert got["args"] == {
            "BASE_IMAGE": t["base"],
            "VLLM_VERSION": t["vllm"],
            "BACKPORT_REVISION": t["series_revision"],
            "GPU_ARCH": t["arch"],
        }
        assert got["labels"]["org.opencontainers.image.version"] == f"{t['vllm']}-bp{t['series_revision']}"
        assert got["labels"]["io.vllm-backports.series"] == t["series"]
        assert got["context"] == "." and got["dockerfile"] == "images/Dockerfile"


def test_bake_groups_name_only_expanded_targets():
    data = bake_data(CAT)
    names = set(_expand_bake())
    groups = data["group"]
    assert groups.pop("default") == {"targets": ["image"]}
    assert set(groups) == set(CAT.arches) | set(CAT.variants)
    assert all(set(g["targets"]) <= names for g in groups.values())
    assert set(groups["hopper"]["targets"]) | set(groups["ampere"]["targets"]) == names


def test_bake_data_pins_a_base_by_digest_where_versions_toml_has_one():
    digest = "sha256:" + "a" * 64
    edited = copy.copy(CAT)
    edited.releases = dict(CAT.releases) | {
        "0.20.0": dataclasses.replace(CAT.releases["0.20.0"], image_digests={"hopper": digest})
    }
    rows = bake_data(edited)["variable"]["IMAGES"]["default"]
    row = next(r for r in rows if r["vllm"] == "0.20.0" and not r["suffix"])
    assert row["bases"] == {"ampere": "vllm/vllm-openai:v0.20.0", "hopper": f"vllm/vllm-openai:v0.20.0@{digest}"}
    expanded = _expand_bake(json.loads(render_bake_data(edited)))
    assert expanded["v0-20-0-hopper"]["args"]["BASE_IMAGE"] == f"vllm/vllm-openai:v0.20.0@{digest}"
    assert expanded["v0-20-0-ampere"]["args"]["BASE_IMAGE"] == "vllm/vllm-openai:v0.20.0"


def test_dockerfile_declares_every_bake_arg():
    dockerfile = (REPO / "images/Dockerfile").read_text()
    declared = set(re.findall(r"^ARG (\w+)", dockerfile, re.M))
    passed = {k for t in _expand_bake().values() for k in t["args"]}
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
    pinned = {t["name"]: t["tags"][0] for t in image_targets(CAT)}
    assert all(j["image"] == pinned["v0-20-0-hopper"] and j["image"].endswith(f"-bp{j['revision']}") for j in hopper)
    assert {j["gdn_prefill_backend"] for j in hopper} == {"flashinfer"}
    assert len({j["name"] for j in jobs}) == len(jobs)


def _workflow_jobs() -> dict[str, str]:
    """images.yml's jobs, each as its text."""
    workflow = (REPO / ".github/workflows/images.yml").read_text()
    jobs = workflow[workflow.index("\njobs:\n") :]
    parts = re.split(r"^  ([a-z-]+):\n", jobs, flags=re.M)[1:]
    return dict(zip(parts[::2], parts[1::2], strict=True))


def _matrix_json(kind: str) -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "vllm_backports.maint", "matrix-json", kind], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["include"]


def test_publish_builds_each_platform_natively_and_joins_them_per_image():
    builds, images = _matrix_json("builds"), _matrix_json("images")
    hopper = [b for b in builds if b["name"] == "v0-28-0-hopper"]
    assert {b["platform"]: b["runner"] for b in hopper} == {
        "linux/amd64": "ubuntu-24.04",
        "linux/arm64": "ubuntu-24.04-arm",
    }
    assert len({b["job"] for b in builds}) == len(builds)
    by_name = {i["name"]: i for i in images}
    assert by_name["v0-28-0-hopper"]["platforms"] == 2 and by_name["v0-28-0-ampere"]["platforms"] == 1
    assert sum(i["platforms"] for i in images) == len(builds)
    # publish downloads the digests its pattern matches: exactly its own platforms' (the plain
    # image's must not take its -cu129 twin's, or a platform missing goes unseen)
    for image in images:
        own = {b["digest"] for b in builds if b["name"] == image["name"]}
        assert {b["digest"] for b in builds if fnmatch.fnmatchcase(b["digest"], image["digests"])} == own
        assert len(own) == image["platforms"]
    jobs = _workflow_jobs()
    assert "name: ${{ matrix.digest }}" in jobs["build"] and "pattern: ${{ matrix.digests }}" in jobs["publish"]
    rev = next(t["revision"] for t in image_targets(CAT) if t["name"] == "v0-28-0-hopper-cu129")
    assert by_name["v0-28-0-hopper-cu129"]["pinned"].endswith(f":v0.28.0-hopper-cu129-bp{rev}")
    assert {b["revision"] for b in builds if b["name"] == "v0-28-0-hopper-cu129"} == {rev}
    assert by_name["v0-28-0-hopper-cu129"]["moving"].endswith(":v0.28.0-hopper-cu129")
    # GitHub refuses a matrix of more than 256 jobs.
    assert max(len(builds), len(images), len(_matrix_json("smoke"))) <= 256


def test_workflow_publishes_attested_signed_images_and_never_moves_a_pinned_tag():
    jobs = _workflow_jobs()
    assert "maint digests\n" in jobs["matrix"] and "maint bake\n" in jobs["matrix"]
    build = jobs["build"]
    assert "docker buildx bake -f images/docker-bake.hcl -f images/bake-data.json" in build
    assert "--provenance=mode=max --sbom=true" in build and "push-by-digest=true" in build
    assert "*.labels.org.opencontainers.image.revision=${{ github.sha }}" in build
    # the image's revision (series, base, tooling) is what its label and -bp tag carry
    assert '"*.args.BACKPORT_REVISION=${{ matrix.revision }}"' in build
    assert '"*.labels.org.opencontainers.image.version=${{ matrix.vllm }}-bp${{ matrix.revision }}"' in build
    # A published -bp tag is neither rebuilt nor re-pointed.
    assert 'imagetools inspect "${{ matrix.pinned }}"' in build and "steps.exists.outputs.skip != 'true'" in build
    publish = jobs["publish"]
    assert "id-token: write" in publish and 'cosign sign --yes "$REPO@$digest"' in publish
    exists = publish.index('if docker buildx imagetools inspect "$PINNED"')
    assert publish.index('imagetools create -t "$MOVING" "$PINNED"') > exists
    assert publish.index('-t "$PINNED" -t "$MOVING"') > publish.index("else", exists)
    assert '${#digests[@]} -ne "${{ matrix.platforms }}"' in publish


def test_workflow_smoke_job_reads_the_smoke_matrix_and_runs_verify():
    smoke = _workflow_jobs()["gpu-smoke"]
    assert "fromJSON(needs.matrix.outputs.smoke)" in smoke and "runs-on: ${{ matrix.runs_on }}" in smoke
    assert "images/smoke.py --vllm ${{ matrix.vllm }}" in smoke and "--verify /tmp/verify" in smoke
    assert "--prefill-backend ${{ matrix.gdn_prefill_backend }}" in smoke
    # What it pulled is signed by this workflow and carries the revision the smoke row expects.
    assert "cosign verify" in smoke and "images.yml@" in smoke
    assert '"io.vllm-backports.revision"' in smoke and '!= "${{ matrix.revision }}"' in smoke


def _version(id: int, tags: list[str], days_old: int) -> dict:
    made = datetime(2026, 11, 1, tzinfo=UTC) - timedelta(days=days_old)
    return {"id": id, "created_at": made.isoformat().replace("+00:00", "Z"),
            "metadata": {"container": {"tags": tags}}}


def test_retention_deletes_only_old_superseded_pinned_builds_no_release_note_names():
    from vllm_backports.images import prune_plan

    cutoff = datetime(2026, 11, 1, tzinfo=UTC) - timedelta(days=180)
    current = {"v0.28.0-hopper-bpd2bfcb40", "v0.28.0-hopper"}
    versions = [
        _version(1, ["v0.28.0-hopper-bp11111111"], 400),  # superseded, old: deleted
        _version(2, ["v0.28.0-hopper-bp22222222"], 400),  # named in a release note: kept
        _version(3, ["v0.28.0-hopper-bpd2bfcb40"], 400),  # what the tag means now: kept
        _version(4, ["v0.28.0-hopper-bp33333333", "v0.28.0-hopper"], 400),  # carries a moving tag
        _version(5, ["v0.28.0-hopper-cu129-bp44444444"], 30),  # too young
        _version(6, [], 400),  # a platform image or attestation of an index
        _version(7, ["sha256-" + "a" * 64 + ".sig"], 400),  # a signature
        _version(8, ["v0.20.0-ampere-cu129-bp55555555"], 400),  # superseded, old: deleted
    ]
    notes = "Fixed in ghcr.io/vllm-backports/vllm-backports:v0.28.0-hopper-bp22222222 (see #12)."
    plan = prune_plan(versions, notes, current, cutoff)
    assert [p["id"] for p in plan] == [1, 8]


def test_prune_plan_command_reads_every_page_and_keeps_current_tags(tmp_path):
    from click.testing import CliRunner

    from vllm_backports.maint import main

    current = next(t for t in image_targets(CAT) if t["name"] == "v0-28-0-hopper")["tags"][0].rsplit(":", 1)[1]
    pages = [[_version(1, ["v0.28.0-hopper-bp11111111"], 4000)], [_version(2, [current], 4000)],
             [_version(3, ["v0.28.0-hopper-bp33333333"], 4000)]]
    (tmp_path / "v.json").write_text("".join(json.dumps(page) + "\n" for page in pages))
    (tmp_path / "notes.txt").write_text("v0.28.0-hopper-bp33333333\n")
    result = CliRunner().invoke(main, ["prune-plan", "--versions", str(tmp_path / "v.json"),
                                       "--notes", str(tmp_path / "notes.txt")])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [{"id": 1, "tags": ["v0.28.0-hopper-bp11111111"]}]
def test_tag_variants_are_built_from_their_first_release_with_their_own_base_and_tags():
    targets = {t["name"]: t for t in image_targets(CAT)}
    since = CAT.variants["cu129"].since
    assert "v0-19-1-ampere-cu129" not in targets and since == "0.20.0"
    t = targets["v0-20-0-ampere-cu129"]
    assert t["base"] == "vllm/vllm-openai:v0.20.0-cu129" and t["variant"] == "cu129"
    plain_tags = targets["v0-20-0-ampere"]["tags"]
    assert t["tags"] == [plain_tags[1] + f"-cu129-bp{t['revision']}", plain_tags[1] + "-cu129"]
    # one series, two bases: two image revisions
    assert t["series_revision"] == targets["v0-20-0-ampere"]["series_revision"]
    assert t["revision"] != targets["v0-20-0-ampere"]["revision"]
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
    fastpath = "tests/release/test_turboquant_prefill_fastpath.py"
    workspace = "tests/release/test_turboquant_decode_workspace.py"
    assert rows["0.20.0"] == {
        "vllm": "0.20.0",
        "torch": "2.11.0",
        "tests": f"{gdn} {tq} {kernel} {fastpath}",
        "upstream_tests": True,  # results recorded in docs/upstream-tests/0.20.0.json
    }
    assert rows["0.26.0"]["upstream_tests"] is True
    assert rows["0.21.0"]["upstream_tests"] is (REPO / "docs/upstream-tests/0.21.0.json").is_file()
    assert rows["0.19.0"]["tests"] == gdn  # no TurboQuant backend before 0.20.0
    assert rows["0.21.0"]["tests"].split() == [gdn, tq, kernel, fastpath, workspace]
    assert rows["0.24.0"]["tests"].split() == [gdn, tq, kernel, fastpath]  # reserves it upstream
    assert rows["0.26.0"]["tests"].split() == [gdn, tq, kernel, shape, fastpath]
    assert rows["0.33.0"]["tests"].split() == [tq, kernel, fastpath]  # upstream carries the GDN fix from 0.32.0


def test_ci_builds_images_for_two_served_releases_one_of_them_0_27_or_newer():
    from packaging.version import Version

    script = (REPO / ".ci/images.sh").read_text()
    default = re.search(r"^\[ \$\{#releases\[@\]\} -gt 0 \] \|\| releases=\(([^)]*)\)$", script, re.M)
    assert default, "images.sh names its default releases"
    releases = default.group(1).split()
    assert len(releases) == 2 and all(CAT.releases[v].series for v in releases)
    assert any(Version(v) >= Version("0.27.0") for v in releases)
    assert "bash .ci/images.sh" in (REPO / ".ci/run").read_text()


def test_smoke_verify_runs_every_smoke_proof_and_names_each_that_did_not_pass(tmp_path, monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("smoke", REPO / "images/smoke.py")
    smoke = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(smoke)
    ran = []

    def fake_run(cmd, stdout):
        name = cmd[cmd.index("--work-dir") + 1].rsplit("/", 1)[-1]
        ran.append(name)
        # kp1-b1 exits 1; mtp exits 0 but did not pass; gdn-ngram-prefix passes with no prefix
        # hit; the rest pass, those with prefix caching on with hits
        hits = 0 if name == "gdn-ngram-prefix" else 320
        rows = [{"scenario": "baseline", "engine": {"prefix_cache": {"hits": 999}}},
                {"scenario": "ngram", "engine": {"prefix_cache": {"hits": hits}}}]
        stdout.write(json.dumps({"passed": name not in ("kp1-b1", "mtp"), "rows": rows}))
        return subprocess.CompletedProcess(cmd, 1 if name == "kp1-b1" else 0)

    problems = smoke.verify_all("0.28.0", "triton", tmp_path, run=fake_run)
    assert ran == list(smoke.smoke_runs("0.28.0", "triton")) and "tq-mtp" in ran
    assert problems == [
        "verify gdn-ngram-prefix passed without a prefix-cache hit: it tested nothing "
        f"({tmp_path}/gdn-ngram-prefix.json)",
        f"verify mtp did not pass (exit 0; {tmp_path}/mtp.json)",
        f"verify kp1-b1 did not pass (exit 1; {tmp_path}/kp1-b1.json)",
    ]
    # a per-request hit length counts as a hit where the counters are missing
    assert smoke.hit({"rows": [{"scenario": "mtp", "prefix_hit_lengths": {"0": 3, "160": 1}}]})
    assert not smoke.hit({"rows": [{"scenario": "mtp", "prefix_hit_lengths": {"0": 4}}]})
    ran.clear()
    assert smoke.verify_all("0.20.0", "triton", tmp_path, run=lambda cmd, stdout: (
        stdout.write("not json"), subprocess.CompletedProcess(cmd, 0))[1]) == [
        f"verify {n} did not pass (exit 0; {tmp_path}/{n}.json)" for n in smoke.smoke_runs("0.20.0", "triton")]


def test_smoke_model_check_wants_verify_model_to_stop_only_at_the_missing_gpu(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("smoke", REPO / "images/smoke.py")
    smoke = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(smoke)
    calls = []
    no_gpu = (2, "error: verify needs a CUDA GPU; none is visible\n")
    too_long = (2, "error: --prompts p line 1: 25 tokens and --max-tokens 32768 do not fit the 4096 positions of x\n")

    def runner(plain, longer=too_long, write_exit=0):
        def run(cmd, **kwargs):
            calls.append((cmd, kwargs))
            if "vllm_backports.verify.tokenizer" in cmd:
                return subprocess.CompletedProcess(cmd, write_exit, "", "ModuleNotFoundError: No module named 'x'\n")
            code, err = longer if "--max-tokens" in cmd else plain
            return subprocess.CompletedProcess(cmd, code, "", err)
        return run

    assert smoke.model_check(tmp_path, run=runner(no_gpu)) == []
    verify = calls[-1][0]
    assert verify[verify.index("--model") + 1] == str(tmp_path / "checkpoint")
    prompts = Path(verify[verify.index("--prompts") + 1])
    assert json.loads(prompts.read_text())["messages"][0]["role"] == "user"
    # no GPU is visible to any of them, on any machine
    assert all(kw["env"]["CUDA_VISIBLE_DEVICES"] == "" for _, kw in calls)
    # a refusal before the GPU (the chat template, say) is the finding, named by its line
    template = (2, "error: --model /x: no chat template\n")
    assert smoke.model_check(tmp_path, run=runner(template)) == [
        "verify --model (as given) did not stop at 'verify needs a CUDA GPU; none is visible' (exit 2): "
        "error: --model /x: no chat template"]
    # so is a run that went on without a GPU, or one that crashed
    assert smoke.model_check(tmp_path, run=runner((0, ""))) == [
        "verify --model (as given) did not stop at 'verify needs a CUDA GPU; none is visible' (exit 0): "
        "(nothing on stderr)"]
    # a --model path that refused the GPU before reading the prompts would not see their length
    assert smoke.model_check(tmp_path, run=runner(no_gpu, longer=no_gpu)) == [
        "verify --model --max-tokens 32768 did not stop at 'and --max-tokens 32768 do not fit the' (exit 2): "
        "error: verify needs a CUDA GPU; none is visible"]
    calls.clear()
    assert smoke.model_check(tmp_path, run=runner(no_gpu, write_exit=1)) == [
        "verify --model: the tiny checkpoint was not written (exit 1): ModuleNotFoundError: No module named 'x'"]
    assert len(calls) == 1  # verify is not run without a checkpoint


def test_images_script_fails_rather_than_skips_where_an_image_is_required(tmp_path):
    # not root and no sudo (a fake `id`, a PATH without sudo): the script cannot build
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "id").write_text("#!/bin/sh\necho 1000\n")
    (bin_dir / "id").chmod(0o755)
    (bin_dir / "dirname").symlink_to(shutil.which("dirname"))
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path)}
    script = [shutil.which("bash"), str(REPO / ".ci/images.sh")]
    skipped = subprocess.run(script, env=env, capture_output=True, text=True, check=False)
    assert skipped.returncode == 0 and "images: SKIPPED: not root and no sudo" in skipped.stderr
    required = subprocess.run(script, env={**env, "IMAGES_REQUIRED": "1"}, capture_output=True, text=True, check=False)
    assert required.returncode == 1 and "images: FAILED: not root and no sudo" in required.stderr
    ci = (REPO / ".github/workflows/ci.yml").read_text()
    assert re.search(r"run: bash \.ci/images\.sh\n\s+env:\n\s+IMAGES_REQUIRED: \"1\"", ci)

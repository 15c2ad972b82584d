"""GPU evidence files: checked, summarised, and the page generated from them."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from evidence_case import FIX, verify_json, write
from vllm_backports import evidence, maint
from vllm_backports.errors import EvidenceError

CHECKOUT = Path(__file__).resolve().parents[1]


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setattr(maint, "HOME", tmp_path)
    # the page tells runs that show an upstream fix by the releases' upstream lists
    shutil.copytree(CHECKOUT / "backports", tmp_path / "backports")
    shutil.copy(CHECKOUT / "versions.toml", tmp_path)
    return tmp_path


def one(home, data, release="0.31.0", name="gdn-ngram") -> evidence.Summary:
    write(home, release, name, data)
    return evidence.load(home)[release][0]


@pytest.mark.parametrize(("case", "verdict"), [
    (dict(), "control wrong"),
    (dict(control_errors=0), "weak"),
    (dict(target_errors=3, control_errors=200), "fails"),
    (dict(control_errors=None), "no control"),
    (dict(noise=3.5), "uncalibrated"),
    (dict(baseline_errors=2), "uncalibrated"),  # the target's baseline strays: not "fails"
])
def test_verdicts(home, case, verdict):
    assert one(home, verify_json(**case)).verdict == verdict


def test_a_control_engine_that_died_is_a_failed_control(home):
    s = one(home, verify_json(control_crashed=True, preset="mtp"))
    assert s.verdict == "control crashed" and s.control_crashed == 1 and s.control_tokens == 0
    assert "1 engine died" in evidence.row(s) and "backports unknown" in evidence.row(s)


def test_a_dead_control_is_named_by_its_sites_manifest(home):
    s = one(home, verify_json(control_crashed=True, preset="mtp", control_backports=["gdn-spec-state"]))
    assert s.control_backports == ("gdn-spec-state",) and "1 engine died; gdn-spec-state" in evidence.row(s)


def test_summary_reads_the_engines_not_the_request(home):
    data = verify_json(prefix_caching=True, hits=1296, prompts="shared-prefix", control_backports=["gdn-spec-state"])
    assert data["scenario"]["prefix_caching"] == "default"  # verify asked for the release's default
    s = one(home, data, name="gdn-ngram-prefix")
    assert (s.release, s.name, s.presets, s.kv_cache, s.prompts) == (
        "0.31.0", "gdn-ngram-prefix", ("ngram",), "auto", "shared-prefix"
    )
    assert s.prefix_caching == (True,) and s.mamba_cache_mode == ("align",)
    assert s.async_scheduling == (False,) and s.model_runner == ("v1",) and s.cudagraph_mode == ("FULL_AND_PIECEWISE",)
    assert s.batches == (16,) and s.modes == ("graphs",)
    assert (s.gpu, s.date) == ("NVIDIA H100 80GB HBM3", "2026-11-25")
    assert (s.target_errors, s.target_tokens, s.control_errors, s.control_tokens) == (0, 3072, 214, 3072)
    assert s.target_backports == tuple(FIX) and s.control_backports == ("gdn-spec-state",)
    assert (s.prefix_hits, s.prefix_queries) == (1296, 5184)  # the target's speculative engine only


def test_a_pristine_control_and_no_control_differ(home):
    assert one(home, verify_json(), name="a").control_backports == ()
    s = one(home, verify_json("0.30.0", control_errors=None), release="0.30.0", name="b")
    assert s.control_backports is None and s.control_errors is None and s.prefix_hits is None


def test_an_engine_that_could_not_describe_itself_is_unknown_not_an_error(home):
    data = verify_json()
    data["rows"][1]["engine"] = {"error": "AttributeError: 'LLM' object has no attribute 'llm_engine'"}
    s = one(home, data)
    assert s.prefix_caching == (None,) and s.target_backports == tuple(FIX)  # the baseline row still says
    assert "| prefix caching ?, async scheduling ?, ? runner, CUDA graphs ? |" in evidence.row(s)


def test_releases_in_version_order_and_empty_directories_ignored(home):
    assert evidence.load(home) == {}
    (home / "docs/evidence/0.29.0").mkdir(parents=True)
    write(home, "0.31.0", "z", verify_json())
    write(home, "0.31.0", "a", verify_json(control_errors=0))
    write(home, "0.9.0", "gdn-ngram", verify_json("0.9.0"))
    (home / "docs/evidence/0.31.0/z.err").write_text("a verify's stderr is not evidence")
    found = evidence.load(home)
    assert list(found) == ["0.9.0", "0.31.0"]
    assert [s.name for s in found["0.31.0"]] == ["a", "z"]
    write(home, "0.31.0", "gdn-ngram-prefix", verify_json())
    write(home, "0.31.0", "gdn-ngram", verify_json())
    assert [s.name for s in evidence.load(home)["0.31.0"]] == ["a", "gdn-ngram", "gdn-ngram-prefix", "z"]


def _drop(data, *keys):
    obj = data
    for k in keys[:-1]:
        obj = obj[k]
    del obj[keys[-1]]
    return data


def _set(data, value, *keys):
    obj = data
    for k in keys[:-1]:
        obj = obj[k]
    obj[keys[-1]] = value
    return data


@pytest.mark.parametrize(("content", "message"), [
    ("{\"vllm\": \"0.31.0\",", "not JSON"),
    ('{"error": "verify needs a CUDA GPU; none is visible", "exit_code": 2}', "verify's error output"),
    (_drop(verify_json(), "machine"), "lacks 'machine'"),
    (_drop(verify_json(), "proof"), "lacks 'proof'"),
    (_drop(verify_json(), "rows", 2, "errors"), "rows[2] lacks 'errors'"),
    (_drop(verify_json(), "rows", 1, "engine", "backports"), "rows[1].engine lacks 'backports'"),
    (_drop(verify_json(), "machine", "date"), "machine lacks 'date'"),
    (_set(verify_json(), "3", "rows", 1, "errors"), "errors is '3'"),
    (verify_json("0.30.0"), "ran vLLM 0.30.0, but is filed under 0.31.0"),
    (_set(verify_json(), "0.30.0", "rows", 2, "engine", "vllm"), "rows[2] (control, ngram) ran vLLM 0.30.0"),
    (_set(verify_json(), True, "passed") | {"rows": verify_json(target_errors=4)["rows"]}, "passed is True"),
    (_set(verify_json(), "yesterday", "machine", "date"), "is not a date"),
])
def test_a_bad_file_is_one_line_naming_it_and_nothing_is_written(home, content, message):
    write(home, "0.31.0", "good", verify_json())
    write(home, "0.31.0", "bad", content)
    with pytest.raises(EvidenceError, match=r"^docs/evidence/0\.31\.0/bad\.json: .*" + re.escape(message)):
        evidence.load(home)
    r = CliRunner().invoke(maint.main, ["evidence", "--write"])
    assert r.exit_code == 1 and isinstance(r.exception, EvidenceError) and "\n" not in str(r.exception)
    assert not (home / "docs/evidence/README.md").exists()


def test_a_local_build_counts_as_its_release(home):
    data = verify_json()
    data["vllm"] = "0.31.0+cu130"
    assert one(home, data).verdict == "control wrong"


def test_page_without_evidence_says_so_and_check_mode_tracks_drift(home):
    r = CliRunner().invoke(maint.main, ["evidence"])
    assert r.exit_code == 1 and "+No GPU evidence is recorded yet" in r.output
    assert not (home / "docs/evidence/README.md").exists()
    assert CliRunner().invoke(maint.main, ["evidence", "--write"]).exit_code == 0
    page = (home / "docs/evidence/README.md").read_text()
    assert "No GPU evidence is recorded yet" in page and f"`{evidence.WRITE_COMMAND}`" in page.splitlines()[2]
    assert (
        CliRunner().invoke(maint.main, ["evidence"]).output.strip()
        == "docs/evidence/README.md: evidence page is current"
    )

    write(home, "0.31.0", "gdn-ngram", verify_json())
    drift = CliRunner().invoke(maint.main, ["evidence"])
    assert drift.exit_code == 1 and "+| [gdn-ngram](0.31.0/gdn-ngram.json) | control wrong | earlier revision |" in drift.output
    assert (home / "docs/evidence/README.md").read_text() == page
    assert CliRunner().invoke(maint.main, ["evidence", "--write"]).exit_code == 0
    assert CliRunner().invoke(maint.main, ["evidence"]).exit_code == 0
    assert "No GPU evidence" not in (home / "docs/evidence/README.md").read_text()


def test_page_has_a_table_per_release_with_each_file(home):
    write(home, "0.31.0", "gdn-ngram", verify_json())
    write(
        home,
        "0.31.0",
        "tq-mtp",
        verify_json(preset="mtp", control_backports=["gdn-spec-state", "gdn-spec-state-v2-runner"]),
    )
    write(
        home,
        "0.30.0",
        "gdn-ngram",
        verify_json("0.30.0", control_errors=0, gpu="NVIDIA H200", date="2026-11-26T01:00:00Z"),
    )
    page = evidence.render_page(evidence.load(home))
    lines = page.splitlines()
    assert [x for x in lines if x.startswith("## ")] == ["## vLLM 0.30.0", "## vLLM 0.31.0"]
    assert lines.count(evidence.HEADER) == 2
    table = [x for x in lines if x.startswith("| [")]
    assert table[0].startswith(
        "| [gdn-ngram](0.30.0/gdn-ngram.json) | weak | earlier revision | qwen3_next, ngram, KV auto, random prompts, 16 a batch, graphs |"
    )
    assert table[0].endswith("| H200, 2026-11-26 |")
    assert table[1] == (
        "| [gdn-ngram](0.31.0/gdn-ngram.json) | control wrong | earlier revision | qwen3_next, ngram, KV auto, random prompts, 16 a batch, graphs "
        "| prefix caching off (Mamba none), async scheduling off, v1 runner, CUDA graphs FULL_AND_PIECEWISE "
        f"| 0 errors in 3072 tokens; {', '.join(FIX)} | 214 errors in 3072 tokens; pristine | - | H100, 2026-11-25 |"
    )
    assert (
        "async scheduling on" in table[2]
        and "| 214 errors in 3072 tokens; gdn-spec-state, gdn-spec-state-v2-runner |" in table[2]
    )
    assert all(x.count("|") == evidence.HEADER.count("|") for x in table)


def _shipped(home, release="0.31.0") -> dict[str, str]:
    from vllm_backports.catalogue import Catalogue
    from vllm_backports.maint.generated import shipped_patches

    return shipped_patches(Catalogue(home), release)


def _current(home, release="0.31.0", **case) -> dict:
    """A run whose target carried the patches `release` ships today, as verify records them."""
    now = _shipped(home, release)
    return verify_json(release, target_backports=list(now), target_patches=now, **case)


def _digests(home, release="0.31.0") -> tuple[evidence.Summary, ...]:
    return evidence.with_digests(evidence.load(home), {release: _shipped(home, release)})[release]


def test_matrix_status_counts_current_proofs_and_links_to_the_release_heading(home):
    stale = {**_shipped(home), "gdn-spec-state": "0" * 64}  # gdn-spec-state's patch changed since
    write(home, "0.31.0", "a", _current(home))
    write(home, "0.31.0", "b", _current(home, preset="mtp", control_crashed=True, date="2026-11-27T00:00:00Z"))
    write(home, "0.31.0", "c", verify_json())  # written before verify recorded the patches
    write(home, "0.31.0", "c2", verify_json(target_patches=stale))
    write(home, "0.31.0", "d", _current(home, control_errors=0, gpu="NVIDIA H200"))
    write(home, "0.31.0", "d2", _current(home, control_errors=0, exercised={"accepted_drafts": 400,
                                                                           "accepted_then_no_drafts": 0}))
    write(home, "0.31.0", "e", _current(home, target_errors=5))
    write(home, "0.31.0", "f", _current(home, control_errors=None))
    status = evidence.matrix_status(_digests(home))
    assert status == ("GPU (H100/H200, 2026-11-25 .. 2026-11-27): 2 proofs (1 control crashed), 2 earlier revision, "
                      "1 weak, 1 not exercised, 1 failing, 1 without a control "
                      "([evidence](docs/evidence/README.md#vllm-0310))")


def test_a_release_without_a_current_proof_does_not_read_as_proven_on_a_gpu(home):
    write(home, "0.31.0", "gdn-ngram", verify_json())
    write(home, "0.31.0", "tq-mtp", verify_json(preset="mtp", control_crashed=True))
    status = evidence.matrix_status(_digests(home))
    assert status == ("no proof of today's series: 2 earlier revision, 0 weak, 0 failing "
                      "(H100, 2026-11-25; [evidence](docs/evidence/README.md#vllm-0310))")
    assert "GPU" not in status and "proof (" not in status


def test_a_target_that_failed_before_its_fix_shipped_is_not_counted_as_failing_today(home):
    stale = {**_shipped(home), "gdn-spec-state": "0" * 64}
    write(home, "0.31.0", "a", _current(home))
    write(home, "0.31.0", "old", verify_json(target_patches=stale, target_errors=5))
    status = evidence.matrix_status(_digests(home))
    assert status == ("GPU (H100, 2026-11-25): 1 proof, 0 weak, 0 failing, 1 failing on an earlier revision "
                      "([evidence](docs/evidence/README.md#vllm-0310))")
    write(home, "0.31.0", "now", _current(home, target_errors=5))
    assert ", 1 failing, 1 failing on an earlier revision" in evidence.matrix_status(_digests(home))


@pytest.mark.parametrize(("patches", "digest"), [
    ("shipped", "current"),
    ("changed", "earlier revision"),  # a patch rewritten since the run
    ("reordered", "current"),  # verify's --json sorts keys: a file keeps no order to compare
    ("fewer", "earlier revision"),  # a candidate: the series less a backport, or before one joined
    ("absent", "earlier revision"),  # verify before it recorded the patches: today's files
    ("unreadable", "unknown"),  # the target's manifest could not be read
])
def test_a_proof_counts_only_for_the_patches_shipped_today(home, patches, digest):
    now = _shipped(home)
    recorded = {
        "shipped": now,
        "changed": {b: "f" * 64 if b == "gdn-spec-state" else sha for b, sha in now.items()},
        "reordered": dict(reversed(now.items())),
        "fewer": {b: sha for b, sha in now.items() if b != "gdn-spec-state-v2-runner"},
        "absent": None,
        "unreadable": None,
    }[patches]
    data = verify_json(target_backports=list(now), target_patches=recorded)
    if patches == "absent":
        data = verify_json(target_backports=list(now))
    write(home, "0.31.0", "gdn-ngram", data)
    (s,) = _digests(home)
    assert (s.verdict, s.digest) == ("control wrong", digest)
    proven = evidence.matrix_status((s,)).startswith("GPU (H100, 2026-11-25): 1 proof,")
    assert proven == (digest == "current")
    assert f"| control wrong | {digest} |" in evidence.row(s)


def test_the_digest_is_the_targets_not_the_controls(home):
    """A less-ID control records the series less one patch: the file is judged by its target."""
    now = _shipped(home)
    data = _current(home, control_backports=[b for b in now if b != "spec-prefill-decode-graph"])
    data["rows"][2]["engine"]["patches"] = {b: sha for b, sha in now.items() if b != "spec-prefill-decode-graph"}
    write(home, "0.31.0", "kp1-b1-fix", data)
    assert _digests(home)[0].digest == "current"


@pytest.mark.parametrize(("heading", "anchor"), [
    ("vLLM 0.31.0", "vllm-0310"),
    ("Set-up: two commands", "set-up-two-commands"),  # README.md's own, as GitHub links it
    ("How to add a vLLM release", "how-to-add-a-vllm-release"),
])
def test_slug_is_githubs(heading, anchor):
    assert evidence.slug(heading) == anchor


@pytest.mark.parametrize(("name", "short"), [
    ("NVIDIA H100 80GB HBM3", "H100"), ("NVIDIA H200", "H200"), ("NVIDIA A100-SXM4-80GB", "A100"),
    ("NVIDIA H100 NVL", "H100"), ("NVIDIA GeForce RTX 4090", "RTX 4090"),
])
def test_short_gpu(name, short):
    assert evidence.short_gpu(name) == short


def test_the_fixture_is_what_verify_writes():
    """Every key verify's --json payload has, and only those (a fixture with invented keys would
    let the reader depend on them)."""
    data = verify_json()
    assert set(data) == {"command", "vllm", "kv_cache", "threshold", "baseline_worst_regret", "calibrated_on", "tp",
                         "calibrated", "passed", "scenario", "rows", "control", "control_failed", "proof", "machine"}
    json.dumps(data)  # plain JSON


def test_a_bf16_calibrated_turboquant_run_counts_its_no_spec_rows_as_judged(home):
    """tq-continuation on TurboQuant KV: the bf16 baseline calibrates, the plain TurboQuant engine
    is judged on both sites (scenario no-spec), and a control whose no-spec run is clean keeps
    the proof weak. Both sites report the same backports: the candidate fix is patched in by
    the runbook's setup (lab.sites), not recorded in the manifest."""
    from evidence_case import engine, row
    from vllm_backports.verify.run import Plan, conclude

    plan = Plan(batches=(16,), modes=("graphs",), presets=("ngram",), tp=1, threshold=None, work=home,
                additional_config={}, kv_cache="turboquant_k8v4", prompt_set="tq-continuation",
                prefix_caching="on", control=home)
    on = dict(prefix_caching=True, hits=400)

    def verdict(control_no_spec_errors: int) -> evidence.Summary:
        rows = [row("baseline", "target", 0, engine("0.22.0", FIX, None, **on)),
                row("no-spec", "target", 0, engine("0.22.0", FIX, None, **on)),
                row("no-spec", "control", control_no_spec_errors, engine("0.22.0", FIX, None, **on)),
                row("ngram", "target", 0, engine("0.22.0", FIX, "ngram", **on)),
                row("ngram", "control", 50, engine("0.22.0", FIX, "ngram", **on))]
        data = {"command": "verify", **conclude(rows, 0.3, 1.0, plan, "0.22.0"),
                "machine": {"gpu": "NVIDIA H100 80GB HBM3", "gpus": 1, "date": "2026-11-26T00:00:00Z"}}
        assert data["calibrated_on"] == "auto"
        return one(home, data, release="0.22.0", name="tq-continuation")

    s = verdict(30)
    assert s.verdict == "control wrong" and s.presets == ("no-spec", "ngram") and s.prompts == "tq-continuation"
    assert (s.control_errors, s.prefix_hits) == (80, 800)
    assert verdict(0).verdict == "weak"


def judged_json(key: str, errors: tuple[int, int], judged, plan_options: dict, calibrations: tuple, claims) -> dict:
    """A run whose tokens are clean everywhere, with a judged logprob field (`key`, from
    `judged(errors)` per row) whose `errors` are the target's and the control's speculative row's;
    `calibrations`: conclude's prompt and output logprob calibrations. `claims` overwrite verdicts."""
    from evidence_case import engine, row
    from vllm_backports.verify.run import Plan, conclude

    plan = Plan(modes=("graphs",), presets=("mtp",), tp=1, threshold=None, work=Path("/tmp/v"),
                additional_config={}, control=Path("/tmp/raw"), **plan_options)
    rows = [row("baseline", "target", 0, engine("0.20.0", [], None)),
            row("mtp", "target", 0, engine("0.20.0", FIX, "mtp")),
            row("mtp", "control", 0, engine("0.20.0", [], "mtp"))]
    for r, n in zip(rows, (0, *errors), strict=True):
        r[key] = judged(n)
    data = {"command": "verify", **conclude(rows, 0.2, 1.0, plan, "0.20.0", *calibrations),
            "machine": {"gpu": "NVIDIA H100 80GB HBM3", "gpus": 1, "date": "2026-11-26T00:00:00Z"}}
    return {**data, **claims}


def prompt_logprob_json(target: int, control: int, **claims) -> dict:
    """A --prompt-logprobs run; `target` and `control`: the prompt-logprob errors of each site's
    speculative row."""
    def judged(errors):
        return {"sequences": 12, "positions": 468, "errors": errors, "bad_sequences": min(errors, 12),
                "first_error_at": 2 if errors else None, "worst_difference": 4.0 if errors else 0.3,
                "missing": 0, "threshold": 1.0}
    logprobs = {"threshold": 1.0, "baseline_worst_difference": 0.3, "calibrated": True}
    return judged_json("prompt_logprobs", (target, control), judged, {"batches": (1,), "prompt_logprobs": True},
                       (logprobs,), claims)


def output_logprob_json(target: int, control: int, **claims) -> dict:
    """An --output-logprobs run; `target` and `control`: the drifting sequences of each site's
    speculative row."""
    def judged(errors):
        return {"sequences": 24, "tokens": 3072, "errors": errors, "bad_sequences": errors,
                "worst_mean_difference": 0.05 if errors else 0.003, "worst_difference": 0.4,
                "missing": 0, "threshold": 0.01}
    outputs = {"threshold": 0.01, "baseline_worst_mean_difference": 0.003, "calibrated": True}
    return judged_json("output_logprobs", (target, control), judged, {"batches": (16,), "output_logprobs": True},
                       (None, outputs), claims)


def test_output_logprob_drifts_count_as_the_rows_errors(home):
    s = one(home, output_logprob_json(0, 23), release="0.20.0", name="pc-mtp-lp")
    assert s.verdict == "control wrong" and s.control_errors == 23 and s.target_errors == 0
    s = one(home, output_logprob_json(2, 23), release="0.20.0", name="pc-mtp-lp")
    assert s.verdict == "fails" and s.target_errors == 2
    with pytest.raises(EvidenceError, match="passed is True, but its target rows say otherwise"):
        write(home, "0.20.0", "pc-mtp-lp", output_logprob_json(2, 23, passed=True))
        evidence.load(home)


def test_prompt_logprob_errors_count_as_the_rows_errors(home):
    s = one(home, prompt_logprob_json(0, 12), release="0.20.0", name="plogprobs-mtp-b1")
    assert s.verdict == "control wrong" and s.control_errors == 12 and s.target_errors == 0
    s = one(home, prompt_logprob_json(5, 12), release="0.20.0", name="plogprobs-mtp-b1")
    assert s.verdict == "fails" and s.target_errors == 5


@pytest.mark.parametrize(("target", "control", "claims", "message"), [
    (5, 12, {"passed": True}, "passed is True, but its target rows say otherwise"),
    (0, 12, {"control_failed": False, "proof": "weak: the control passes too"},
     "control_failed is False, but its control rows say otherwise"),
])
def test_verdicts_that_ignore_prompt_logprob_errors_are_refused(home, target, control, claims, message):
    write(home, "0.20.0", "plogprobs-mtp-b1", prompt_logprob_json(target, control, **claims))
    with pytest.raises(EvidenceError, match=message):
        evidence.load(home)


def test_rounds_and_count_reports_leave_the_summary_as_it_was(home):
    """Fields verify adds with --rounds and --check-accepted-counts are the rows' own: the summary
    of a file reads the same without them."""
    data = verify_json(preset="mtp")
    plain = one(home, data)
    for r in data["rows"]:
        r["rounds"] = [{"round": 1, "errors": r["errors"]}, {"round": 2, "errors": 0}]
        r["accepted_counts"] = {"status": "checked", "in_range": True}
    assert one(home, data) == plain


def _judged(home, upstream, fixes=None):
    return evidence.with_upstream_fixes(evidence.load(home), upstream, fixes or {"gdn-ngram": "gdn-spec-state"})


def test_a_clean_pristine_run_where_the_fix_is_upstream_and_the_proof_failed_pristine_before(home):
    write(home, "0.28.0", "gdn-ngram", verify_json("0.28.0"))
    write(home, "0.31.0", "gdn-ngram", verify_json())  # the newest pristine failure is the one named
    write(home, "0.33.0", "gdn-ngram", verify_json("0.33.0", control_errors=0))
    judged = _judged(home, {"0.33.0": ("gdn-spec-state",)})
    s = judged["0.33.0"][0]
    assert (s.verdict, s.failed_pristine_on) == ("upstream-fixed", "0.31.0")
    assert "| upstream-fixed (pristine 0.31.0 fails) |" in evidence.row(s)
    assert [x.verdict for x in judged["0.31.0"]] == ["control wrong"] and judged["0.31.0"][0].failed_pristine_on is None
    status = evidence.matrix_status(judged["0.33.0"])
    assert status.startswith("no proof of today's series: 0 earlier revision, 1 upstream-fixed, 0 weak")


@pytest.mark.parametrize("why", ["fix not upstream", "no pristine failure", "control not pristine", "proof for no fix"])
def test_a_weak_run_stays_weak_unless_it_shows_an_upstream_fix(home, why):
    upstream = {"0.33.0": () if why == "fix not upstream" else ("gdn-spec-state",)}
    earlier = ["gdn-spec-state"] if why == "no pristine failure" else None
    later = ["turboquant-spec-decode"] if why == "control not pristine" else None
    write(home, "0.31.0", "gdn-ngram", verify_json(control_backports=earlier))
    write(home, "0.33.0", "gdn-ngram", verify_json("0.33.0", control_errors=0, control_backports=later))
    fixes = {"gdn-ngram": None} if why == "proof for no fix" else None
    s = _judged(home, upstream, fixes)["0.33.0"][0]
    assert (s.verdict, s.failed_pristine_on) == ("weak", None)
    assert evidence.matrix_status((s,)).startswith("no proof of today's series: 0 earlier revision, 1 weak")


@pytest.mark.parametrize("case", ["a later release", "a release with the fix upstream", "a control that only died"])
def test_only_an_earlier_release_without_the_fix_whose_pristine_control_erred_counts(home, case):
    if case == "a later release":
        write(home, "0.34.0", "gdn-ngram", verify_json("0.34.0"))
    elif case == "a release with the fix upstream":
        write(home, "0.32.0", "gdn-ngram", verify_json("0.32.0"))
    else:
        write(home, "0.31.0", "gdn-ngram", verify_json(control_crashed=True))
    write(home, "0.33.0", "gdn-ngram", verify_json("0.33.0", control_errors=0))
    upstream = {v: ("gdn-spec-state",) for v in ("0.32.0", "0.33.0", "0.34.0")}
    assert _judged(home, upstream)["0.33.0"][0].verdict == "weak"


SCRIPTED = {"accepted_drafts": 425, "accepted_then_no_drafts": 0, "partial_acceptance": 104, "steps": 1316}
COUNTED = {"num_accepted_tokens": 0, "num_draft_tokens": 0, "num_drafts": 0}  # vLLM's own, MTP


@pytest.mark.parametrize(("name", "case", "verdict", "why"), [
    # V2 verifies k drafts every step: no accepted draft is followed by a step without drafts
    ("gdn-ngram-v2", dict(exercised=SCRIPTED), "not exercised", "no accepted draft followed by a step without drafts"),
    ("gdn-ngram-b1-v2", dict(exercised=SCRIPTED), "not exercised", "no accepted draft followed by a step"),  # variant
    # names no fix, against the pristine release: judged by the GDN transition as well
    ("tail-ngram-v2", dict(exercised=SCRIPTED, prompts="prompt-tail", prefix_caching=True, hits=7360),
     "not exercised", "no accepted draft followed by a step"),
    # the same counts against a control less another fix: that fix's path needs no such step
    ("kp1-b1-fix", dict(exercised=SCRIPTED, control_backports=["gdn-spec-state"]), "weak", None),
    ("gdn-ngram", dict(), "weak", None),  # 57 such steps on each site
    ("mtp", dict(preset="mtp", exercised=COUNTED), "not exercised", "no draft accepted"),
    ("mtp", dict(preset="mtp", exercised={**COUNTED, "num_accepted_tokens": 2028}), "weak", None),
    ("gdn-ngram-prefix", dict(prompts="shared-prefix", prefix_caching=True, hits=0), "not exercised",
     "no prefix-cache hit"),
    ("gdn-ngram-prefix", dict(prompts="shared-prefix", prefix_caching=True, hits=3680), "weak", None),
    # churn asks for prefix caching for Mamba's align mode; its bug needs no hit
    ("churn-mtp-async", dict(preset="mtp", prompts="churn", prefix_caching=True, hits=0,
                             exercised={**COUNTED, "num_accepted_tokens": 986}), "weak", None),
    ("gdn-ngram", dict(exercised=None), "weak", None),  # nothing counted: cannot tell, stays weak
])
def test_a_passing_control_that_never_reached_the_bugs_path_is_not_exercised(home, name, case, verdict, why):
    s = one(home, verify_json("0.33.0", control_errors=0, **case), release="0.33.0", name=name)
    assert s.verdict == verdict and (why is None) == (s.unexercised is None)
    if why:
        assert s.unexercised.startswith(why) and f"| not exercised ({s.unexercised}) |" in evidence.row(s)


def test_a_run_not_exercised_is_neither_a_proof_nor_counted_weak_nor_failing(home):
    write(home, "0.33.0", "gdn-ngram-v2", _current(home, "0.33.0", control_errors=0, exercised=SCRIPTED))
    (s,) = _digests(home, "0.33.0")
    assert evidence.matrix_status((s,)).startswith("no proof of today's series: 0 earlier revision, 0 weak, "
                                                   "1 not exercised, 0 failing")


def test_a_run_not_exercised_does_not_become_upstream_fixed(home):
    """The same proof failed a pristine release without the fix, and the fix is upstream: a clean
    run that reached the transition shows it holding; one that never reached it shows nothing."""
    write(home, "0.31.0", "gdn-ngram", verify_json())
    write(home, "0.33.0", "gdn-ngram", verify_json("0.33.0", control_errors=0, exercised=SCRIPTED))
    assert _judged(home, {"0.33.0": ("gdn-spec-state",)})["0.33.0"][0].verdict == "not exercised"
    write(home, "0.33.0", "gdn-ngram", verify_json("0.33.0", control_errors=0))
    assert _judged(home, {"0.33.0": ("gdn-spec-state",)})["0.33.0"][0].verdict == "upstream-fixed"


def test_a_crashed_control_still_names_a_proof_for_upstream_fixed_only_when_it_erred(home):
    """control crashed with one erring row among the dead: errors on a pristine release count."""
    data = verify_json(control_crashed=True)
    data["rows"].append(verify_json()["rows"][2])  # a second control engine, that returned wrong tokens
    write(home, "0.31.0", "gdn-ngram", data)
    write(home, "0.33.0", "gdn-ngram", verify_json("0.33.0", control_errors=0))
    judged = _judged(home, {"0.33.0": ("gdn-spec-state",)})
    assert judged["0.31.0"][0].verdict == "control crashed" and judged["0.33.0"][0].verdict == "upstream-fixed"


@pytest.mark.parametrize(("name", "proof"), [
    ("gdn-ngram", "gdn-ngram"), ("gdn-ngram-b1-v2", "gdn-ngram-b1"), ("gdn-ngram-kp1-b1", "gdn-ngram-kp1"),
    ("qwen3_5-mtp-eager", "qwen3_5-mtp"), ("tq-mtp-b1", "tq-mtp-b1"), ("pc-hit-candidate", None),
])
def test_a_file_runs_the_proof_its_name_extends(name, proof):
    assert evidence.proof_of(name) == proof

"""Server proofs (lab/serve.py) end to end on CPU: each site carries a stand-in `vllm` whose
`vllm serve` is the fake OpenAI server of tests/verify/test_server.py, so the legs start it,
wait for /health, run `apply.py verify --server`, stop it, and the pairing writes evidence."""

from __future__ import annotations

import json
import os
import tarfile
import textwrap
from pathlib import Path

import pytest
from test_machine import FakeRunner, staged

from lab import machine, records, serve
from vllm_backports import evidence

ROOT = Path(__file__).resolve().parents[2]
RELEASE = "0.22.0"
PATCHES = {"gdn-spec-state": "ab" * 32}

# `vllm serve CKPT --port P ...` as the fake does it: as its site's fake_serve.json says, serve
# the test fake (right, or wrong from output token 5), die at start-up, or never answer. Like
# vLLM 0.24.0 in a stage without FlashInfer, it dies at start-up unless the sampler is torch's.
MAIN = textwrap.dedent("""\
    import json, os, sys, time
    from pathlib import Path

    def main():
        how = json.loads((Path(__file__).parents[3] / "fake_serve.json").read_text())
        argv = sys.argv[1:]
        assert argv[0] == "serve", argv
        port = int(argv[argv.index("--port") + 1])
        print("fake vllm serve", " ".join(argv), flush=True)
        if os.environ.get("VLLM_USE_FLASHINFER_SAMPLER") != "0":  # as a stage without FlashInfer
            print("ModuleNotFoundError: No module named 'flashinfer'", file=sys.stderr, flush=True)
            sys.exit(1)
        if how["mode"] == "die":
            print("RuntimeError: CUDA out of memory (the fake's)", file=sys.stderr, flush=True)
            sys.exit(1)
        if how["mode"] == "hang":
            time.sleep(600)
        sys.path[:0] = [how["tests"], how["tests"] + "/verify"]
        import test_server
        wrong = 5 if how["mode"] == "wrong" else None
        test_server.serve(test_server.Fake(wrong_at=wrong, version=how["version"]), port)
        time.sleep(600)
""")


def fake_site(site: Path, mode: str, patches: dict | None = None) -> Path:
    pkg = site / "vllm" / "entrypoints" / "cli"
    pkg.mkdir(parents=True, exist_ok=True)
    for d in (site / "vllm", site / "vllm" / "entrypoints", pkg):
        (d / "__init__.py").write_text("")
    (pkg / "main.py").write_text(MAIN)
    how = {"mode": mode, "version": RELEASE, "tests": str(ROOT / "tests")}
    (site / "fake_serve.json").write_text(json.dumps(how))
    if patches:
        (site / "vllm" / ".backports").mkdir(exist_ok=True)
        applied = [{"id": k, "sha256": v} for k, v in patches.items()]
        (site / "vllm" / ".backports" / "manifest.json").write_text(json.dumps({"applied": applied}))
    return site


class ServeRunner(FakeRunner):
    """Sites carry the fake vllm (raw and fix in the modes given); the checkpoint is a folder."""

    modes = {"raw": "wrong", "fix": "ok"}

    def site(self, release, name, pristine):
        site = super().site(release, name, pristine)
        return fake_site(site, self.modes[name], PATCHES if name == "fix" else None)

    def checkpoint(self, release, site):
        (self.home / release / "server-model").mkdir(parents=True, exist_ok=True)
        return self.home / release / "server-model"

    def machine_facts(self):
        return {"gpu": "NVIDIA H200", "gpus": 1, "date": "2026-11-29T08:00:00Z"}


def run(tmp_path, monkeypatch, modes=None, health_timeout=60.0):
    monkeypatch.chdir(ROOT)  # the legs run the tool from here, as from the lab's copy
    home = staged(tmp_path)
    runner = ServeRunner(home, [{"release": RELEASE, "proofs": ["server-ngram"]}], slots=3, watch_mib=0)
    runner.modes = modes or ServeRunner.modes
    runner.health_timeout = health_timeout
    assert runner.run() == 0
    return home, home / "results" / RELEASE


def leg(res: Path, name: str) -> dict:
    return json.loads((res / "server-ngram" / name / "leg.json").read_text())


def gone(res: Path, name: str, wait: float = 10.0) -> bool:
    """No process left in the leg's server group (a killed orphan takes init a moment to reap)."""
    import time

    pgid = int((res / "server-ngram" / name / "server.pgid").read_text())
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


def test_the_pristine_server_fails_the_series_passes_and_the_pair_is_evidence(tmp_path, monkeypatch):
    home, res = run(tmp_path, monkeypatch)
    assert (res / "server-ngram.rc").read_text() == "0\n"
    data = json.loads((res / "server-ngram.json").read_text())
    assert data["proof"] == "control fails, target passes" and data["calibrated"] and data["vllm"] == RELEASE
    rows = {r["leg"]: r for r in data["rows"]}
    assert rows["raw"]["site"] == "control" and rows["raw"]["errors"] > 0
    assert rows["fix"]["errors"] == 0 and rows["plain"]["scenario"] == "baseline"
    assert rows["fix"]["engine"]["patches"] == PATCHES and rows["raw"]["engine"]["patches"] == {}
    # the server's flags: ngram on raw and fix, none on the plain leg; KV fixed; prompt logprobs allowed
    spec = json.dumps(serve.NGRAM)
    assert rows["raw"]["serve"][rows["raw"]["serve"].index("--speculative-config") + 1] == spec
    assert "--speculative-config" not in rows["plain"]["serve"]
    assert {"--kv-cache-memory-bytes", "--max-logprobs"} <= set(rows["fix"]["serve"])
    assert data["scenario"]["groups"] == {"tool-calls": 24, "random": 64}
    # every leg's server is stopped, its whole group
    assert all(gone(res, name) for name in serve.LEGS)
    # what evidence.py makes of it: the pristine control wrong, the target the series today
    s = evidence.summarise(data, RELEASE, "server-ngram", "x.json")
    assert s.verdict == evidence.CONTROL_WRONG and s.control_backports == ()
    assert s.target_patches == tuple(PATCHES.items())
    shipped = evidence.with_digests({RELEASE: (s,)}, {RELEASE: PATCHES})[RELEASE][0]
    assert shipped.digest == evidence.CURRENT
    # and what the lab's records read back of the collected results
    machine.collect(home, 0, tmp_path / "out")
    found = records.read_results(tmp_path / "out" / "results.tgz", tmp_path)
    assert [(p.name, p.verdict) for p in found.proofs] == [("server-ngram", evidence.CONTROL_WRONG)]
    with tarfile.open(tmp_path / "out" / "results.tgz") as tar:
        assert f"results/{RELEASE}/server-ngram/raw/server.log" in tar.getnames()


def test_a_pristine_server_that_passes_too_is_weak(tmp_path, monkeypatch):
    _, res = run(tmp_path, monkeypatch, modes={"raw": "ok", "fix": "ok"})
    data = json.loads((res / "server-ngram.json").read_text())
    assert data["proof"] == "weak: the control passes too" and not data["control_failed"]


def test_a_server_that_dies_at_start_up_is_named_with_its_log_tail(tmp_path, monkeypatch):
    _, res = run(tmp_path, monkeypatch, modes={"raw": "wrong", "fix": "die"})
    for name in ("fix", "plain"):
        got = leg(res, name)
        assert got["rc"] == serve.DIED and got["status"] == "the server exited 1 before /health answered"
        assert "CUDA out of memory (the fake's)" in got["log_tail"]
    assert leg(res, "raw")["status"] == "judged"
    assert (res / "server-ngram.rc").read_text() == "2\n" and (res / "server-ngram.json").read_text() == ""
    said = (res / "server-ngram.err").read_text()
    assert "fix: exit 3, the server exited 1" in said and "CUDA out of memory (the fake's)" in said
    found = machine.status_lines(res.parents[1])
    assert any(line.startswith(f"{RELEASE}/server-ngram: exit 2, no verdict") for line in found)


def test_a_server_that_never_answers_is_stopped_at_the_timeout(tmp_path, monkeypatch):
    _, res = run(tmp_path, monkeypatch, modes={"raw": "hang", "fix": "ok"}, health_timeout=2.0)
    got = leg(res, "raw")
    assert got["rc"] == serve.UNHEALTHY and got["status"] == "/health did not answer within 2 s"
    assert gone(res, "raw")
    assert (res / "server-ngram.rc").read_text() == "2\n"


def test_a_leg_killed_by_the_watchdog_leaves_no_server(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    home = staged(tmp_path)
    runner = ServeRunner(home, [], watch_mib=0)
    site = runner.site(RELEASE, "raw", None)
    runner.modes = {"raw": "hang"}
    fake_site(site, "hang")
    (home / "results").mkdir()

    class Killed(ServeRunner):
        def _attempts(self, release, name, cmd, site, stem, tries=2):
            import subprocess
            import time

            proc = subprocess.Popen(cmd, env={**os.environ, "PYTHONPATH": str(site)}, start_new_session=True)
            pgid = stem.parent / "server.pgid"
            while not pgid.exists():
                time.sleep(0.1)
            os.killpg(proc.pid, 9)  # the leg dies; its server, in a group of its own, does not
            proc.wait()
            return -9

    killed = Killed(home, [], watch_mib=0)
    assert killed.serve_leg(RELEASE, "server-ngram", "raw", site, site) == -9
    assert gone(home / "results" / RELEASE, "raw")


def test_prompts_are_token_ids_verify_server_reads(tmp_path):
    from vllm_backports.verify import prompts

    path = serve.write_prompts(tmp_path / "p.jsonl", {"tool-calls": 3, "random": 2})
    _, recs = prompts.load(path)
    assert [r.group for r in recs] == ["tool-calls"] * 3 + ["random"] * 2
    assert all(r.token_ids for r in recs)


@pytest.mark.parametrize("name", ["server-ngram"])
def test_a_server_proof_is_no_local_proof(name):
    from vllm_backports.verify.proofs import PROOFS

    assert serve.is_server_proof(name) and name not in PROOFS
    assert machine._sites_of("0.28.0", name) == ("raw", "fix")


def test_a_kimi_proof_on_a_release_whose_model_needs_the_cute_dsl_runs_with_the_flashinfer_site():
    assert machine._sites_of("0.31.0", "kda-ngram") == ("fix", "raw", machine.FI)
    assert machine._sites_of("0.29.0", "kda-ngram") == ("fix", "raw")

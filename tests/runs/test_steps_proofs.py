"""lab/runbook/steps.sh's `proofs`: each name a verify of the fix site against its control, and
SITE@NAME the same verify of another site, tagged SITE-NAME. `bash` is shimmed for the inner
`bash steps.sh bg ...` call, which records what it was asked instead of starting a verify."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

SHIM = """\
#!{bash}
# steps.sh's own `bash "$0" bg TAG ...`: recorded, with the site it would verify; anything else runs
if [ "${{2:-}}" = bg ]; then echo "TARGET=${{TARGET:-}} ${{*:3}}" >> "$BG_LOG"; exit 0; fi
exec {bash} "$@"
"""


@pytest.fixture
def machine(tmp_path):
    """A release name of its own (its /tmp/site-*-REL sites are this test's), a HOME and the shim."""
    rel = f"0.0.0-p{uuid.uuid4().hex[:8]}"
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "bash").write_text(SHIM.format(bash=shutil.which("bash")))
    (shim / "bash").chmod(0o755)
    env = {
        **os.environ,
        "REL": rel,
        "HOME": str(tmp_path / "home"),
        "OUT": str(tmp_path / "out"),
        "BG_LOG": str(tmp_path / "bg.log"),
        "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}",
    }
    made = []

    def site(name: str) -> None:
        path = Path(env["HOME"]) / "vllm-site" if name == "fix" else Path(f"/tmp/site-{name}-{rel}")
        path.mkdir(parents=True)
        made.append(path)

    yield env, site, tmp_path / "bg.log"
    for path in made:
        shutil.rmtree(path, ignore_errors=True)


def proofs(env: dict, *names: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "lab/runbook/steps.sh", "proofs", *names],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_site_at_proof_verifies_that_site_against_the_proofs_own_control(machine):
    env, site, log = machine
    for name in ("fix", "raw", "pc-hit"):
        site(name)
    done = proofs(env, "gdn-ngram-b1", "pc-hit@gdn-ngram-b1")
    assert done.returncode == 0, done.stderr
    fix, other = log.read_text().splitlines()
    control = f"--control /tmp/site-raw-{env['REL']}"
    assert fix.startswith("TARGET=fix gdn-ngram-b1 --preset ngram --batch 1 ") and control in fix
    # the same options and control; its own tag, so that the fix site's result is not overwritten
    assert other == fix.replace("TARGET=fix gdn-ngram-b1 ", "TARGET=pc-hit pc-hit-gdn-ngram-b1 ")


def test_a_site_this_release_lacks_or_an_unknown_one_starts_nothing_and_says_so(machine):
    env, site, log = machine
    for name in ("fix", "raw"):
        site(name)
    done = proofs(env, "pc-hit@gdn-ngram", "nosuch@gdn-ngram")
    assert done.returncode == 0, done.stderr
    assert f"pc-hit-gdn-ngram: no pc-hit site for {env['REL']}" in done.stdout
    assert f"nosuch-gdn-ngram: no nosuch site for {env['REL']}" in done.stdout
    assert not log.exists()

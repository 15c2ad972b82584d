"""lab.verifies.proofs, `python3 -m lab.steps proofs`: each name a verify of the fix site against its
control, and SITE@NAME the same verify of another site, tagged SITE-NAME. `bg` is a stand-in that
records what it was asked instead of starting a verify."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from lab import sites, verifies
from lab.steps import Ctx


@pytest.fixture
def machine(tmp_path):
    """A release name of its own (its /tmp/site-*-REL sites are this test's), a HOME and the log
    of what `bg` was asked to start."""
    rel = f"0.0.0-p{uuid.uuid4().hex[:8]}"
    home = tmp_path / "home"
    env = {"REL": rel, "HOME": str(home), "OUT": str(tmp_path / "out"), "BG_LOG": str(tmp_path / "bg.log")}
    made = []

    def site(name: str) -> None:
        path = home / "vllm-site" if name == "fix" else Path(f"/tmp/site-{name}-{rel}")
        path.mkdir(parents=True)
        made.append(path)

    yield env, site, tmp_path / "bg.log"
    for path in made:
        shutil.rmtree(path, ignore_errors=True)


class Done:
    def __init__(self, returncode: int, stdout: str):
        self.returncode, self.stdout, self.stderr = returncode, stdout, ""


def proofs(env: dict, *names: str, capsys=None) -> Done:
    home = Path(env["HOME"])
    ctx = Ctx(env["REL"], home, Path(env["OUT"]), None, sites.paths(env["REL"], home))

    def bg(_ctx, args, target):
        with open(env["BG_LOG"], "a") as log:
            log.write(f"TARGET={target} {' '.join(args)}\n")
        return 0

    rc = verifies.proofs(ctx, list(names), start=bg)
    return Done(rc, capsys.readouterr().out)


def test_site_at_proof_verifies_that_site_against_the_proofs_own_control(machine, capsys):
    env, site, log = machine
    for name in ("fix", "raw", "pc-hit"):
        site(name)
    done = proofs(env, "gdn-ngram-b1", "pc-hit@gdn-ngram-b1", capsys=capsys)
    assert done.returncode == 0, done.stderr
    fix, other = log.read_text().splitlines()
    control = f"--control /tmp/site-raw-{env['REL']}"
    assert fix.startswith("TARGET=fix gdn-ngram-b1 --preset ngram --batch 1 ") and control in fix
    # the same options and control; its own tag, so that the fix site's result is not overwritten
    assert other == fix.replace("TARGET=fix gdn-ngram-b1 ", "TARGET=pc-hit pc-hit-gdn-ngram-b1 ")


def test_a_site_this_release_lacks_or_an_unknown_one_starts_nothing_and_says_so(machine, capsys):
    env, site, log = machine
    for name in ("fix", "raw"):
        site(name)
    done = proofs(env, "pc-hit@gdn-ngram", "nosuch@gdn-ngram", capsys=capsys)
    assert done.returncode == 0, done.stderr
    assert f"pc-hit-gdn-ngram: no pc-hit site for {env['REL']}" in done.stdout
    assert f"nosuch-gdn-ngram: no nosuch site for {env['REL']}" in done.stdout
    assert not log.exists()

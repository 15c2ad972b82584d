"""spec-pad-new-prompt fits the real scheduler of every release whose series carries it (each
release, twins included: the scheduler is read from each one's wheel), after the patches before
it, and stops the scheduler padding a fresh one-token prompt into a verify row while it still
pads a one-token remainder with computed tokens behind it.

The padding condition is evaluated as each file defines it, on plain stand-ins for the names it
reads; the rest of the scheduler is not run, so this needs neither torch nor vLLM.
"""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest
from packaging.version import Version

from vllm_backports.catalogue import Catalogue
from vllm_backports.hunks import Mismatch, apply_file

ROOT = Path(__file__).resolve().parents[2]
BACKPORT = "spec-pad-new-prompt"
SCHEDULER = "vllm/v1/core/sched/scheduler.py"
CATALOGUE = Catalogue(ROOT)
RELEASES = [v for v, r in CATALOGUE.releases.items() if BACKPORT in r.backports]


def test_every_release_whose_scheduler_pads_one_token_requests_carries_it():
    # the padding arrived in 0.25.0 (vLLM #45237) and every later release keeps it
    assert RELEASES == [v for v in CATALOGUE.releases if CATALOGUE.known["spec-pad-one-token-prompt"].affects(v)]
    assert RELEASES[0] == "0.25.0" and RELEASES[-1] == list(CATALOGUE.releases)[-1]


@pytest.fixture(scope="module", params=RELEASES)
def scheduler(request) -> dict:
    from vllm_backports.pypi import fetch

    release = CATALOGUE.releases[request.param]
    patches = CATALOGUE.series(release.series).patches
    touching = [p for p in patches if any(f.path == SCHEDULER for f in p.files)]
    # nothing else in the series edits the scheduler, so the pristine file is what it patches
    assert [p.backport_id for p in touching] == [BACKPORT]
    assert [f.path for f in touching[0].files] == [SCHEDULER]
    assert touching[0].header["Bug"] == "https://github.com/vllm-project/vllm/issues/51562"
    pristine = fetch(release, [SCHEDULER]).files[SCHEDULER]
    patched = apply_file(pristine, touching[0].files[0])
    assert not isinstance(patched, Mismatch), patched
    return {"release": request.param, "pristine": pristine, "patched": patched}


def padding_condition(source: bytes):
    """The test of the `if` that pads a one-token request to 1 + k tokens, as a function of the
    names it reads."""
    tests = [
        node.test
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.If)
        and "num_new_tokens == 1" in ast.unparse(node.test)
        and "num_spec_tokens" in ast.unparse(node.test)
    ]
    assert len(tests) == 1, len(tests)
    code = compile(ast.Expression(tests[0]), "<padding>", "eval")
    return lambda **names: bool(eval(code, {}, names))  # the release's own expression, nothing else


def pads(condition, num_new_tokens: int, num_computed_tokens: int, running: bool = True) -> bool:
    engine = SimpleNamespace(num_spec_tokens=3, dynamic_sd_lookup=None, num_sampled_tokens_per_step=1)
    return condition(
        self=engine,
        num_new_tokens=num_new_tokens,
        num_computed_tokens=num_computed_tokens,
        scheduled_running_reqs=["running"] if running else [],
        prefill_scheduled=False,
    )


def test_a_fresh_one_token_prompt_is_padded_by_the_release_and_not_with_the_fix(scheduler):
    release, fixed = padding_condition(scheduler["pristine"]), padding_condition(scheduler["patched"])
    assert pads(release, num_new_tokens=1, num_computed_tokens=0)  # the bug: a prompt becomes a verify row
    assert not pads(fixed, num_new_tokens=1, num_computed_tokens=0)


def test_a_one_token_remainder_with_computed_tokens_is_padded_as_before(scheduler):
    # (num_computed_tokens is assigned on every path to this `if` in each release: read by hand,
    # 2026-12-06; evaluated here on stand-ins, the test cannot show it)
    release, fixed = padding_condition(scheduler["pristine"]), padding_condition(scheduler["patched"])
    for computed in (1, 40):
        for running in (True, False):
            assert pads(fixed, 1, computed, running) == pads(release, 1, computed, running)
    assert pads(fixed, 1, 1) and not pads(fixed, 40, 0)


# from 0.30.0 the release's condition reads this clause, which the guard would leave always true
DEAD_CLAUSE = "and (scheduled_running_reqs or num_computed_tokens > 0)"


def test_the_fix_adds_its_guard_and_changes_no_other_line(scheduler):
    before = scheduler["pristine"].decode().splitlines()
    after = scheduler["patched"].decode().splitlines()
    added = [line for line in after if line not in before]
    removed = [line for line in before if line not in after]
    assert len(added) == 5 and added[-1].strip() == "and num_computed_tokens > 0"
    assert [line.strip() for line in removed] == ([DEAD_CLAUSE] if Version(scheduler["release"]) >= Version("0.30.0") else [])
    assert [line for line in after if line not in added] == [line for line in before if line not in removed]

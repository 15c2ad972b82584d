"""lab.cpus: which CPUs slow each other down, from timings."""

from __future__ import annotations

import json
import os
import time

import pytest

from lab import cpus

pins = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="pins processes to CPUs")


def test_cpus_that_slow_each_other_make_a_group_and_the_rest_stand_alone():
    alone = {0: 1.0, 1: 1.0, 2: 2.0, 3: 1.0, 4: 1.0, 5: 1.0}
    pairs = {
        (0, 1): [{0: 1.9, 1: 1.8}, {0: 1.7, 1: 1.6}],  # a physical core's two threads
        (1, 2): [{1: 1.1, 2: 2.1}],  # 2 is slow alone, not slowed by 1
        (0, 3): [{0: 1.5, 3: 1.0}, {0: 1.0, 3: 1.0}],  # slowed in one run only: not shared
        (3, 4): [{3: 1.35, 4: 1.31}],
        (2, 4): [{2: 2.0, 4: 1.0}],
        # run one after the other by the host: one side slowed in each run, never both
        (4, 5): [{4: 2.0, 5: 1.0}, {4: 1.0, 5: 2.0}],
    }
    got = cpus.shares(alone, pairs, slow=1.3)
    assert got == {"slow_pairs": [[0, 1], [3, 4], [4, 5]], "groups": [[0, 1], [2], [3, 4, 5]]}


def test_groups_join_through_a_cpu_two_pairs_share():
    alone = dict.fromkeys(range(4), 1.0)
    pairs = {(0, 2): [{0: 2.0, 2: 2.0}], (2, 3): [{2: 2.0, 3: 2.0}]}
    assert cpus.shares(alone, pairs, 1.3)["groups"] == [[0, 2, 3], [1]]


def test_every_pair_is_timed_up_to_16_cpus_and_likely_siblings_above():
    assert len(cpus.candidate_pairs(range(16), {})) == 120
    got = cpus.candidate_pairs(range(64), {5: [5, 40], 40: [5, 40], 7: [7, 99]})
    assert (0, 1) in got and (62, 63) in got  # neighbours
    assert (0, 32) in got and (31, 63) in got  # half the count apart
    assert (5, 40) in got and not any(99 in p for p in got)  # sysfs's, among those given
    assert len(got) == 63 + 32 + 1 and all(x < y for x, y in got)


@pins
def test_the_probe_runs_here_and_reports_every_cpu_and_pair(capsys):
    assert cpus.main(["--loop", "20000", "--repeats", "1"]) == 0
    got = json.loads(capsys.readouterr().out)
    here = sorted(os.sched_getaffinity(0))
    assert sorted(map(int, got["alone_ms"])) == here and all(t > 0 for t in got["alone_ms"].values())
    assert len(got["pair_slowdown"]) == len(cpus.candidate_pairs(here, {}))
    assert sorted(c for g in got["groups"] for c in g) == here
    assert sorted(map(int, got["sysfs_siblings"])) == here


@pins
def test_a_cpu_that_cannot_be_pinned_fails_the_run_in_one_line_instead_of_hanging(capsys, monkeypatch):
    monkeypatch.setattr(cpus, "WAIT_S", 10)
    here = min(os.sched_getaffinity(0))
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"CPU 4095: OSError") as e:
        cpus.timed([here, 4095], 20000)
    assert time.monotonic() - t0 < 9 and "\n" not in str(e.value)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {here, 4095})
    assert cpus.main(["--loop", "2000", "--repeats", "1"]) == 1
    assert capsys.readouterr().err.startswith("lab.cpus: CPU 4095: OSError")

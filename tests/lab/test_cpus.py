"""lab.cpus: which CPUs slow each other down, from timings."""

from __future__ import annotations

import json
import os

import pytest

from lab import cpus


def test_cpus_that_slow_each_other_make_a_group_and_the_rest_stand_alone():
    alone = {0: 1.0, 1: 1.0, 2: 2.0, 3: 1.0, 4: 1.0}
    pairs = {
        (0, 1): {0: 1.9, 1: 1.8},  # a physical core's two threads
        (1, 2): {1: 1.1, 2: 2.1},  # 2 is slow alone, not slowed by 1
        (0, 3): {0: 1.5, 3: 1.0},  # only one side slowed: not a shared core
        (3, 4): {3: 1.35, 4: 1.31},
        (2, 4): {2: 2.0, 4: 1.0},
    }
    got = cpus.shares(alone, pairs, slow=1.3)
    assert got == {"slow_pairs": [[0, 1], [3, 4]], "groups": [[0, 1], [2], [3, 4]]}


def test_groups_join_through_a_cpu_two_pairs_share():
    alone = dict.fromkeys(range(4), 1.0)
    pairs = {(0, 2): {0: 2.0, 2: 2.0}, (2, 3): {2: 2.0, 3: 2.0}}
    assert cpus.shares(alone, pairs, 1.3)["groups"] == [[0, 2, 3], [1]]


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="pins processes to CPUs")
def test_the_probe_runs_here_and_reports_every_cpu_and_pair(capsys):
    assert cpus.main(["--loop", "20000", "--repeats", "1"]) == 0
    got = json.loads(capsys.readouterr().out)
    here = sorted(os.sched_getaffinity(0))
    assert sorted(map(int, got["alone_ms"])) == here and all(t > 0 for t in got["alone_ms"].values())
    assert len(got["pair_slowdown"]) == len(here) * (len(here) - 1) // 2
    assert sorted(c for g in got["groups"] for c in g) == here
    assert sorted(map(int, got["sysfs_siblings"])) == here

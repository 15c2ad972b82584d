"""The order of engine operations in an A/B run, per layout."""

from __future__ import annotations

import pytest

from vllm_backports.bench.schedule import LAYOUTS, order, steps


def test_abab_puts_a_first_and_abba_alternates():
    assert order(2) == [(0, "a"), (0, "b"), (1, "a"), (1, "b")]
    assert order(3, "abba") == [(0, "a"), (0, "b"), (1, "b"), (1, "a"), (2, "a"), (2, "b")]
    assert order(1, first=5) == [(5, "a"), (5, "b")]
    with pytest.raises(ValueError):
        order(1, "aabb")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("kind", ["abab", "abba"])
def test_every_layout_runs_each_pair_once_on_started_engines_and_stops_them(layout, kind):
    ops = steps(layout, 3, warmup=2, kind=kind, first=4, profile=True)
    live, awake = set(), set()
    timed = []
    for op, arm, i in ops:
        if op == "start":
            assert arm not in live
            live.add(arm)
            awake.add(arm)
        elif op == "stop":
            live.remove(arm)
            awake.discard(arm)
        elif op == "sleep":
            awake.remove(arm)
        elif op == "wake":
            assert arm in live and arm not in awake
            awake.add(arm)
        else:
            assert arm in live and arm in awake, (op, arm)
            if op == "round":
                timed.append((i, arm))
        if layout == "sleep":
            assert len(awake) <= 1  # one copy of the weights on the GPU at a time
    assert not live
    assert sorted(timed) == [(i, arm) for i in (4, 5, 6) for arm in "ab"]
    assert [op for op, arm, _ in ops if arm == "a"].count("warmup") == 2
    # warm-up comes before any timed round of the engine, the profile after all of them
    for arm in "ab":
        mine = [op for op, x, _ in ops if x == arm and op in ("warmup", "round", "profile")]
        assert mine == ["warmup"] * 2 + ["round"] * 3 + ["profile"]


def test_sleep_wakes_for_every_round_even_twice_in_a_row():
    ops = steps("sleep", 2, warmup=1, kind="abba")
    for n, (op, arm, _) in enumerate(ops):
        if op == "round":
            assert ops[n - 1] == ("wake", arm, None) and ops[n + 1] == ("sleep", arm, None)


def test_resident_starts_both_before_measuring_and_sequential_runs_one_engine_after_the_other():
    res = steps("resident", 2)
    assert res[:2] == [("start", "a", None), ("start", "b", None)]
    seq = steps("sequential", 2)
    a_stop = seq.index(("stop", "a", None))
    assert seq.index(("start", "b", None)) == a_stop + 1
    assert all(arm == "a" for _, arm, _ in seq[: a_stop + 1])
    assert "profile" not in [op for op, _, _ in seq]
    with pytest.raises(ValueError):
        steps("shared", 1)

"""The pace of the step loop: steps timed while inside, the engine left as it was, and the
figures that tell a stall from a whole round run slower."""

from __future__ import annotations

import pytest

from vllm_backports.bench import pace


class Clock:
    now = 0.0

    def __call__(self):
        return self.now


class Engine:
    """Steps that each advance the clock by the next of `durations`."""

    def __init__(self, clock, durations):
        self.clock, self.durations = clock, list(durations)

    def step(self):
        self.clock.now += self.durations.pop(0)
        return []


class LLM:
    def __init__(self, engine):
        self.llm_engine = engine


def test_every_step_inside_is_timed_and_the_engine_is_restored():
    clock = Clock()
    engine = Engine(clock, [0.01, 0.01, 0.05, 0.01])
    with pace.Pace(LLM(engine), clock) as p:
        for _ in range(3):
            engine.step()
    engine.step()  # outside: not timed
    assert p.steps == pytest.approx([0.01, 0.01, 0.05])
    assert "step" not in vars(engine)  # the class's own method again
    assert engine.step.__func__ is Engine.step


class Ticking:
    """A clock that advances by each of `gaps` in turn as it is read."""

    def __init__(self, gaps):
        self.now, self.gaps = 0.0, list(gaps)

    def __call__(self):
        self.now += self.gaps.pop(0) if self.gaps else 0.0
        return self.now


def test_the_probe_is_the_median_of_its_runs_in_microseconds():
    # five runs read as 2, 1, 9, 1, 3 ms: each run reads the clock twice, the gap before the
    # second read being its time
    clock = Ticking([0, 0.002, 0, 0.001, 0, 0.009, 0, 0.001, 0, 0.003])
    assert pace.probe(clock) == pytest.approx(2000.0)


def test_a_round_that_steps_is_probed_on_entry_and_one_that_does_not_is_not():
    clock = Ticking([0, 0.001] * 5)
    engine = Engine(clock, [0.008, 0.008])
    with pace.Pace(LLM(engine), clock) as p:
        engine.step()
        engine.step()
    assert p.probe_us == pytest.approx(1000.0)
    assert p.summary()["probe_us"] == pytest.approx(1000.0)
    with pace.Pace(object(), clock) as q:
        pass
    assert q.probe_us is None


def test_steps_begun_before_a_time_are_left_out_of_the_summary():
    clock = Clock()
    clock.now = 100.0  # starts count from entry
    engine = Engine(clock, [0.04, 0.008, 0.008, 0.008])
    with pace.Pace(LLM(engine), clock) as p:
        for _ in range(4):
            engine.step()
    assert p.starts == pytest.approx([0.0, 0.04, 0.048, 0.056])
    assert p.summary()["long"] == 1  # the prefill's step, kept when no time is given
    decode = p.summary(after=0.04)
    assert (decode["steps"], decode["prefill_steps"], decode["long"]) == (3, 1, 0)
    assert decode["max_ms"] == pytest.approx(8.0)
    assert p.summary(after=1.0) is None  # none begun that late


def test_a_step_the_engine_held_itself_is_put_back():
    clock = Clock()
    engine = Engine(clock, [0.02])
    own = engine.step
    engine.step = own
    with pace.Pace(LLM(engine), clock) as p:
        engine.step()
    assert engine.step is own
    assert p.steps == pytest.approx([0.02])


def test_a_step_that_raises_is_timed_and_the_engine_restored():
    clock = Clock()

    class Failing:
        def step(self):
            clock.now += 0.03
            raise RuntimeError("engine died")

    engine = Failing()
    with pytest.raises(RuntimeError), pace.Pace(LLM(engine), clock) as p:
        engine.step()
    assert p.steps == pytest.approx([0.03])
    assert "step" not in vars(engine)


def test_an_engine_whose_step_cannot_be_replaced_runs_untimed():
    clock = Clock()

    class Slotted:
        __slots__ = ()

        def step(self):
            clock.now += 0.01
            return []

    engine = Slotted()
    with pace.Pace(LLM(engine), clock) as p:
        assert engine.step() == []
    assert p.steps == [] and p.summary() is None


def test_collections_meanwhile_are_timed_and_the_callback_removed():
    clock = Clock()
    with pace.Pace(LLM(None), clock) as p:
        p._collected("start", {})
        clock.now += 0.004
        p._collected("stop", {})
        assert p._collected in pace.gc.callbacks
    assert p._collected not in pace.gc.callbacks
    assert p.pauses == pytest.approx([0.004])


def test_a_stand_in_without_an_engine_gives_no_summary():
    with pace.Pace(object(), Clock()) as p:
        pass
    assert p.steps == [] and p.summary() is None


def test_summary_counts_long_steps_and_their_time_past_the_median():
    s = pace.summary([0.008] * 9 + [0.016, 0.4], [0.002, 0.001])
    assert s["steps"] == 11
    assert s["median_ms"] == pytest.approx(8.0)
    assert s["max_ms"] == pytest.approx(400.0)
    assert s["long"] == 2  # 2x the median counts
    assert s["long_excess_ms"] == pytest.approx(8.0 + 392.0)
    assert s["gc"] == 2 and s["gc_ms"] == pytest.approx(3.0)


def round_of(decode_s, median_ms, long_excess_ms, long=1, gc_ms=0.0, probe_us=None):
    seen = {"median_ms": median_ms, "long": long, "long_excess_ms": long_excess_ms, "gc_ms": gc_ms}
    return decode_s, seen if probe_us is None else {**seen, "probe_us": probe_us}


def test_the_probe_over_rounds_is_its_median_least_and_most_where_recorded():
    rounds = [round_of(1.0, 8.0, 0.0, probe_us=900.0), round_of(1.0, 8.0, 0.0, probe_us=1800.0)]
    rounds.append(round_of(1.0, 8.0, 0.0, probe_us=1000.0))
    assert pace.over_rounds(rounds)["probe_us"] == {"median": 1000.0, "min": 900.0, "max": 1800.0}
    assert pace.over_rounds([round_of(1.0, 8.0, 0.0)])["probe_us"] is None  # a record from before it


def test_a_spread_made_of_stalls_is_held_by_long_steps():
    rounds = [round_of(1.0, 8.0, 0.0, long=0), round_of(1.0, 8.0, 0.0, long=0), round_of(1.4, 8.0, 400.0)]
    got = pace.over_rounds(rounds)
    assert got["long_share"] == pytest.approx(1.0)
    assert got["step_median_ms"] == {"median": 8.0, "min": 8.0, "max": 8.0}
    assert got["long_per_round"] == pytest.approx(1 / 3)
    assert got["long_excess_ms_per_round"] == pytest.approx(400 / 3)


def test_a_spread_of_whole_slower_rounds_is_not():
    rounds = [round_of(1.0, 8.0, 0.0, long=0), round_of(1.0, 8.0, 0.0, long=0), round_of(1.4, 11.2, 0.0, long=0)]
    got = pace.over_rounds(rounds)
    assert got["long_share"] == pytest.approx(0.0)
    assert got["step_median_ms"]["max"] == pytest.approx(11.2)


def test_a_long_step_every_round_has_alike_holds_none_of_the_spread():
    # a prefill step of 40 ms past the median in each round (as records before prefill steps
    # were left out): the slow round's 0.4 s come from its slower steps
    rounds = [round_of(1.0, 8.0, 40.0), round_of(1.0, 8.0, 40.0), round_of(1.4, 11.2, 40.0)]
    assert pace.over_rounds(rounds)["long_share"] == pytest.approx(0.0)
    # one stall of 200 ms beyond them: half of the 0.4 s
    rounds[2] = round_of(1.4, 8.0, 240.0, long=2)
    assert pace.over_rounds(rounds)["long_share"] == pytest.approx(0.5)


def test_without_a_slow_round_there_is_no_share_and_without_rounds_nothing():
    assert pace.over_rounds([round_of(1.0, 8.0, 0.0), round_of(1.0, 8.0, 0.0)])["long_share"] is None
    assert pace.over_rounds([]) is None

"""The paired bootstrap of a ratio: pairs are resampled together, engine instances as groups."""

from __future__ import annotations

import random

import pytest

from vllm_backports.bench.stats import bootstrap_ratio, percentile, ratio


def test_ratio_of_means_and_of_medians():
    a, b = [1.0, 2.0, 6.0], [2.0, 2.0, 8.0]
    assert ratio(a, b) == pytest.approx(12 / 9)
    assert ratio(a, b, "median") == 1.0


def test_percentile_interpolates_between_order_statistics():
    v = [10.0, 20.0, 30.0, 40.0, 50.0]
    assert percentile(v, 0.0) == 10.0 and percentile(v, 1.0) == 50.0
    assert percentile(v, 0.5) == 30.0
    assert percentile(v, 0.125) == pytest.approx(15.0)
    with pytest.raises(ValueError):
        percentile([], 0.5)


def test_pairs_are_resampled_together_so_drift_shared_by_a_pair_cancels():
    # The machine drifts by 30% over the run; within each pair B is exactly 2% faster.
    rng = random.Random(3)
    a = [100.0 * (1 + 0.3 * i / 30) * (1 + rng.uniform(-0.05, 0.05)) for i in range(30)]
    b = [1.02 * x for x in a]
    ci = bootstrap_ratio(a, b)
    assert ci.ratio == pytest.approx(1.02)
    # Resampling A and B apart would give an interval of several percent here.
    assert ci.low == pytest.approx(1.02) and ci.high == pytest.approx(1.02)
    assert ci.half_width == pytest.approx(0.0, abs=1e-12)


def test_noisy_pairs_give_an_interval_around_the_ratio_that_narrows_with_more_pairs():
    rng = random.Random(7)

    def run(n):
        a = [100 + rng.gauss(0, 1) for _ in range(n)]
        b = [101 + rng.gauss(0, 1) for _ in range(n)]
        return bootstrap_ratio(a, b)

    small, large = run(10), run(200)
    for ci in (small, large):
        assert ci.low < ci.ratio < ci.high
        assert ci.low < 1.01 < ci.high  # the true ratio, for these seeds
    assert large.half_width < small.half_width / 2


def test_a_difference_between_engine_instances_widens_the_interval():
    rng = random.Random(11)
    a = [100 + rng.gauss(0, 0.2) for _ in range(20)]
    # B's first engine start ran 4% faster than its second: an effect of the start, not of B.
    b = [x * (1.04 if i < 10 else 1.0) for i, x in enumerate(a)]
    flat = bootstrap_ratio(a, b)
    grouped = bootstrap_ratio(a, b, groups=[0] * 10 + [1] * 10)
    assert grouped.groups == 2 and flat.groups == 1
    assert grouped.high - grouped.low > 1.5 * (flat.high - flat.low)


def test_same_seed_same_interval_and_bad_input_is_refused():
    a, b = [1.0, 1.1, 0.9, 1.05], [1.1, 1.0, 1.0, 1.2]
    assert bootstrap_ratio(a, b, seed=5) == bootstrap_ratio(a, b, seed=5)
    with pytest.raises(ValueError, match="paired"):
        bootstrap_ratio(a, b[:3])
    with pytest.raises(ValueError, match="two pairs"):
        bootstrap_ratio([1.0], [1.0])
    with pytest.raises(ValueError, match="positive"):
        bootstrap_ratio([1.0, 0.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="group"):
        bootstrap_ratio(a, b, groups=[0, 1])

"""The steady rate `benchmarks/pimsim_compare.py` reads from pimsim-nn's sample counts."""

import numpy as np
import pytest

from benchmarks.pimsim_compare import MARGIN, rate_bounds


def samples(sim_time: float, latency: float, period: float) -> int:
    """pimsim-nn's output count: the first image leaves at the latency, then one every period."""
    return 0 if sim_time < latency else 1 + int((sim_time - latency) // period)


@pytest.mark.parametrize("seed", range(5))
def test_bounds_hold_the_true_rate_and_two_runs_bracket_it_closely(seed: int):
    rng = np.random.default_rng(seed)
    straddled = 0
    for _ in range(200):
        latency, period = rng.uniform(1, 50), rng.uniform(1, 20)
        estimate = period * rng.uniform(0.97, 1.03)  # the estimate's period, a little off
        images = int(rng.integers(3, 12))
        times = [latency + (images + m) * estimate for m in (-MARGIN, MARGIN)]
        counts = [samples(t, latency, period) for t in times]
        low, high = rate_bounds(counts, times, latency)
        rate = 1e3 / period
        assert low <= rate < high
        if counts == [images, images + 1]:  # the runs straddle the last sample: a tight bracket
            straddled += 1
            assert high / low - 1 < 2 * MARGIN / (images - MARGIN) + 1e-12
    assert straddled > 20  # the tight case is exercised, not skipped


def test_one_run_gives_the_one_sample_interval():
    low, high = rate_bounds([6], [90.0], 40.0)
    assert (low, high) == pytest.approx((100.0, 120.0))


def test_runs_before_the_first_sample_bound_nothing():
    assert rate_bounds([0], [10.0], 40.0) == (0.0, float("inf"))

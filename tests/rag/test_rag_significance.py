"""Significance at small n: the expanded percentile interval, the minimum n for a star, Holm's
correction across the comparison table, and the null simulation (n = 40: the share of
intervals excluding 0 when the two variants do not differ must be within Monte Carlo error of
the nominal 5%)."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from conformance.rag import bootstrap


def test_the_t_quantile_matches_scipy():
    import scipy.stats as stats  # scipy comes with the peers (scikit-learn); missing, the test fails
    for df in (1, 2, 3, 4, 5, 9, 19, 39, 200):
        assert bootstrap.t_quantile(df) == pytest.approx(stats.t.ppf(0.975, df), abs=3e-4)


def test_the_expansion_factor_at_n_40():
    # sqrt(40/39) * t_39 / z = 1.012739 * 2.022691 / 1.959964 = 1.045154
    assert bootstrap.expansion(40) == pytest.approx(1.045154, abs=1e-5)


def test_two_queries_never_earn_a_star():
    # differences +1, +1 on two queries: every resample gives +1, the interval [1, 1] excludes
    # 0, but n = 2 < 10 is below the minimum: no star (before: starred)
    iv = bootstrap.paired_intervals(np.array([[1.0], [1.0]]), np.zeros((2, 1)), 200, 0)[0]
    bootstrap.holm([iv])
    assert iv.excludes_zero() and iv.n == 2 and not iv.starred()


def test_holm_adjusts_step_down():
    # p = 0.01, 0.02, 0.04 over m = 3: 3 * 0.01 = 0.03; max(0.03, 2 * 0.02) = 0.04;
    # max(0.04, 1 * 0.04) = 0.04
    ivs = [bootstrap.Interval(0.1, 0.01, 0.2, 50, 0.99, p) for p in (0.04, 0.01, 0.02)]
    bootstrap.holm(ivs)
    assert [iv.p_holm for iv in ivs] == pytest.approx([0.04, 0.03, 0.04])
    ivs = [bootstrap.Interval(0.1, 0.01, 0.2, 50, 0.99, p) for p in (0.03, 0.02, 0.025)]
    bootstrap.holm(ivs)  # 3 * 0.02 = 0.06 > 0.05: none starred, though each excludes 0
    assert not any(iv.starred() for iv in ivs) and all(iv.excludes_zero() for iv in ivs)


def test_the_null_simulation_at_n_40_is_within_monte_carlo_error_of_5_percent():
    """Two variants whose per-query scores come from one distribution, the reciprocal rank of a
    first relevant document uniform on ranks 1..10: the share of 95% intervals of their
    difference that exclude 0 must be within 3 Monte Carlo standard errors of 0.05 (2,000
    replications: 0.0146). Before (the plain percentile interval): 0.075."""
    reps = int(os.environ.get("CONFORMANCE_LONG_NULL", "2000"))
    rng = np.random.default_rng(20261201)
    a = 1.0 / rng.integers(1, 11, (40, reps))
    b = 1.0 / rng.integers(1, 11, (40, reps))
    ivs = bootstrap.paired_intervals(a, b, 1000, 0)
    rate = sum(iv.excludes_zero() for iv in ivs) / reps
    se = math.sqrt(0.05 * 0.95 / reps)
    assert abs(rate - 0.05) <= 3 * se, rate

"""Bootstrap intervals of means and of paired differences between variants.

The unit resampled is the query. For one metric, variants A and B and the n queries on which
both have a value (``paired``), the difference of means d = mean(a_i - b_i) is resampled B
times: each resample draws n queries with replacement (``correlation.bootstrap_weights``, the
same draws for every metric and pair, so their intervals are computed on one set of
resamples), its difference is sum w_i (a_i - b_i) / n; the interval is the 2.5th to 97.5th
percentile of the resampled differences (numpy's linear interpolation), and ``p_above`` the
fraction of resamples with d > 0. The interval of one variant's mean is the same with b = 0.
Each metric costs one product of the (B x n) weight matrix (drawn once per n and seed) with
its n values. With no query in common there is no interval (None); with one, every resample gives
the same value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from conformance.rag.correlation import bootstrap_weights

LEVEL = 0.95


@dataclass
class Interval:
    estimate: float | None
    low: float | None
    high: float | None
    n: int
    p_above: float | None = None  # fraction of resamples above 0 (differences)

    def excludes_zero(self) -> bool:
        return self.low is not None and (self.low > 0 or self.high < 0)

    def to_dict(self) -> dict:
        out = {"estimate": self.estimate, "low": self.low, "high": self.high, "n": self.n}
        if self.p_above is not None:
            out["p_above_zero"] = self.p_above
        return out


def mean_intervals(values: np.ndarray, resamples: int, seed: int) -> list[Interval]:
    """Per column of ``values`` (queries x metrics, NaN where a query has no value): the mean
    over its queries with a value, and its bootstrap interval."""
    return [_interval(col, resamples, seed, difference=False) for col in np.asarray(values, np.float64).T]


def paired_intervals(a: np.ndarray, b: np.ndarray, resamples: int, seed: int) -> list[Interval]:
    """Per column: mean(a - b) over the queries where both have a value, with its interval."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return [_interval(ca - cb, resamples, seed, difference=True) for ca, cb in zip(a.T, b.T)]


_WEIGHTS: dict[tuple[int, int, int], np.ndarray] = {}


def _weights(n: int, resamples: int, seed: int) -> np.ndarray:
    """The (resamples x n) draws for n queries: one set per (n, resamples, seed), shared."""
    key = (n, resamples, seed)
    if key not in _WEIGHTS:
        if len(_WEIGHTS) > 16:
            _WEIGHTS.clear()
        _WEIGHTS[key] = bootstrap_weights(n, resamples, np.random.default_rng(seed))
    return _WEIGHTS[key]


def _interval(values: np.ndarray, resamples: int, seed: int, difference: bool) -> Interval:
    v = values[~np.isnan(values)]
    n = int(v.size)
    if n == 0:
        return Interval(None, None, None, 0, None)
    estimate = float(v.mean())
    means = _weights(n, resamples, seed) @ v / n
    lo, hi = np.quantile(means, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return Interval(estimate, float(lo), float(hi), n, float((means > 0).mean()) if difference else None)

"""Correlation coefficients with bootstrap intervals, in numpy, and Cohen's kappa.

Coefficients of x and y (n paired observations):

- Pearson r = sum (x - mx)(y - my) / sqrt(sum (x - mx)^2 sum (y - my)^2);
- Spearman rho = Pearson r of the ranks, tied values sharing their average rank;
- Kendall tau-b = (C - D) / sqrt((n0 - n1)(n0 - n2)), C and D the concordant and discordant
  pairs, n0 = n(n - 1)/2, n1 and n2 the pairs tied in x and in y (scipy.stats.kendalltau's
  default variant).

Each is undefined (None; NaN in arrays) when x or y is constant (0/0), and for fewer than two
observations.

Bootstrap. The coefficients are computed for a batch of resamples at once, each resample given
as integer weights w_i (how many times observation i was drawn; ``bootstrap_weights``). A
weighted coefficient equals the coefficient of the expanded sample, in which observation i
appears w_i times: means and sums are weighted; a rank is (weight of smaller values) +
(weight of equal values + 1) / 2; Kendall's pair counts are sums over distinct (x, y) cells of
products of cell weights, C - D = (1/2) c^T S c with c the cell weights and S_ab =
sign(x_a - x_b) sign(y_a - y_b). So no resample is materialised, and the cost is O(B n) for
Pearson and Spearman; for Kendall O(B u m) when one side takes at most ``FEW_LEVELS`` (16)
values, m of them (0/1 correctness, a Likert score, P@k: cumulative weights,
``_concordance_few``), else O(B u^2), with u the number of distinct (x, y) pairs.
Resamples draw *clusters* (queries) with replacement, each cluster bringing all its
observations (the answers of every variant to that query); the seed makes them reproducible.
Intervals are percentile intervals (2.5th and 97.5th percentiles for 95%, numpy's linear
interpolation) over the resamples where the coefficient is defined; the resamples where it is
not are counted.
"""

from __future__ import annotations

import numpy as np

COEFFICIENTS = ("spearman", "pearson", "kendall")
BLOCK = 256  # resamples per block (bounds memory: a block holds BLOCK x n floats per array)


def bootstrap_weights(n_clusters: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(n_resamples, n_clusters) counts of each cluster in each resample (rows sum to n)."""
    draws = rng.integers(0, n_clusters, size=(n_resamples, n_clusters))
    flat = draws + (np.arange(n_resamples)[:, None] * n_clusters)
    return np.bincount(flat.ravel(), minlength=n_resamples * n_clusters).reshape(
        n_resamples, n_clusters).astype(np.float64)


def _weighted_pearson(X: np.ndarray, Y: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Per row: Pearson r of X and Y (arrays (B, n) or (n,)) under weights W (B, n).

    With X and Y vectors (the same values in every resample) the weighted sums are five
    matrix-vector products, and the centred sums come from them
    (S_xy - S_x S_y / N); with per-resample arrays (Spearman's ranks) they are computed
    centred, row by row."""
    N = W.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        if X.ndim == 1 or X.shape[0] == 1:
            x = X.ravel() - X.mean()
            y = Y.ravel() - Y.mean()  # shifting first keeps the differences of sums exact enough
            sx, sy = W @ x, W @ y
            sxy = W @ (x * y) - sx * sy / N
            sxx = W @ (x * x) - sx * sx / N
            syy = W @ (y * y) - sy * sy / N
        else:
            mx = (W * X).sum(axis=1) / N
            my = (W * Y).sum(axis=1) / N
            dx = X - mx[:, None]
            dy = Y - my[:, None]
            sxy = (W * dx * dy).sum(axis=1)
            sxx = (W * dx * dx).sum(axis=1)
            syy = (W * dy * dy).sum(axis=1)
        r = sxy / np.sqrt(sxx * syy)
    return np.clip(r, -1.0, 1.0)


def _constant(x: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Per row: whether x is the same for every observation of positive weight (at most one
    group of equal values has weight)."""
    order = np.argsort(x, kind="stable")
    xs = x[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    if starts.size == 1:
        return np.ones(W.shape[0], bool)
    totals = np.add.reduceat(W[:, order], starts, axis=1)
    return (totals > 0).sum(axis=1) <= 1


def _weighted_ranks(x: np.ndarray, W: np.ndarray) -> np.ndarray:
    """(B, n) average ranks of x in each resample (ranks of observations of weight 0 are
    computed too; they carry no weight)."""
    order = np.argsort(x, kind="stable")
    xs = x[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    group = np.cumsum(np.r_[True, xs[1:] != xs[:-1]]) - 1  # per sorted position
    totals = np.add.reduceat(W[:, order], starts, axis=1)  # (B, groups)
    before = np.cumsum(totals, axis=1) - totals
    rank_of_group = before + (totals + 1.0) / 2.0
    ranks = np.empty_like(W)
    ranks[:, order] = rank_of_group[:, group]
    return ranks


def _weighted_kendall(x: np.ndarray, y: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Per row: Kendall tau-b of the expanded resample."""
    # the distinct (x, y) cells from integer codes (np.unique over rows sorts structured data,
    # several times slower)
    ux, ix = np.unique(x, return_inverse=True)
    uy, iy = np.unique(y, return_inverse=True)
    ny = np.int64(uy.size)
    codes, cell_of = np.unique(ix.ravel().astype(np.int64) * ny + iy.ravel(), return_inverse=True)
    cell_of = cell_of.ravel()
    order = np.argsort(cell_of, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(cell_of[order]) != 0])
    C = np.add.reduceat(W[:, order], starts, axis=1)  # (B, u) weight per cell
    gx, gy = codes // ny, codes % ny
    cx, cy = ux[gx], uy[gy]
    u = codes.size
    few = min(gx.max(), gy.max()) + 1
    if few <= FEW_LEVELS:
        # one side takes few values (0/1 correctness, a Likert score, P@k): C - D from cumulative
        # weights, O(B u m) with m the number of its values
        if gy.max() + 1 > few:
            gx, gy = gy, gx
        s = _concordance_few(C, gx, gy, int(gx.max()) + 1, few)
    else:
        S_sum = np.zeros(W.shape[0])
        for a in range(0, u, 2048):  # S in blocks of rows (u x u would not fit for large u)
            block = np.sign(cx[a:a + 2048, None] - cx[None, :]) * np.sign(cy[a:a + 2048, None] - cy[None, :])
            S_sum += ((C[:, a:a + 2048] @ block) * C).sum(axis=1)
        s = S_sum / 2.0  # C - D over unordered pairs
    N = W.sum(axis=1)
    n0 = N * (N - 1) / 2

    def tied_pairs(values: np.ndarray) -> np.ndarray:
        _, g = np.unique(values, return_inverse=True)
        g = g.ravel()
        o = np.argsort(g, kind="stable")
        st = np.flatnonzero(np.r_[True, np.diff(g[o]) != 0])
        T = np.add.reduceat(C[:, o], st, axis=1)
        return (T * (T - 1) / 2).sum(axis=1)

    with np.errstate(invalid="ignore", divide="ignore"):
        tau = s / np.sqrt((n0 - tied_pairs(cx)) * (n0 - tied_pairs(cy)))
    return np.clip(tau, -1.0, 1.0)


FEW_LEVELS = 16  # a side with at most this many distinct values takes the cumulative route


def _concordance_few(C: np.ndarray, gx: np.ndarray, gy: np.ndarray, n_x: int, n_y: int) -> np.ndarray:
    """C - D over unordered pairs of the expanded sample, per row of the cell weights C (B, u),
    with cell a at x level gx[a] and y level gy[a] (n_y small). Each pair is counted from its
    member with the larger x: T[g, j] the weight at (x level g, y level j), E the weight at
    smaller x levels (exclusive cumulative sum over g), and C - D = sum T[g, j] (E[g, < j] -
    E[g, > j])."""
    B = C.shape[0]
    T = np.zeros((B, n_x * n_y))
    T[:, gx * n_y + gy] = C  # the cells are distinct (x, y) pairs: one code each
    T = T.reshape(B, n_x, n_y)
    E = np.cumsum(T, axis=1) - T  # weight at strictly smaller x, per y level
    below = np.cumsum(E, axis=2) - E  # ... and strictly smaller y
    above = E.sum(axis=2, keepdims=True) - np.cumsum(E, axis=2)  # ... and strictly larger y
    return (T * (below - above)).sum(axis=(1, 2))


def coefficients(x: np.ndarray, y: np.ndarray, W: np.ndarray, which=COEFFICIENTS,
                 shared: dict | None = None) -> dict[str, np.ndarray]:
    """Each coefficient of x and y per resample (rows of W); NaN where undefined.

    ``shared``: a dict the caller keeps for calls with the same ``y`` and ``W`` (every candidate
    of a subset is correlated with the same answers' quality): what depends on ``y`` alone,
    its constancy and its ranks per block of resamples, is computed once into it."""
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    W = np.atleast_2d(np.asarray(W, np.float64))
    out: dict[str, np.ndarray] = {}
    if x.size < 2:
        return {c: np.full(W.shape[0], np.nan) for c in which}
    memo = {} if shared is None else shared

    def of_y(key, compute):
        if key not in memo:
            memo[key] = compute()
        return memo[key]

    undefined = _constant(x, W) | of_y("constant", lambda: _constant(y, W)) | (W.sum(axis=1) < 2)
    for c in which:
        parts = []
        for b in range(0, W.shape[0], BLOCK):
            Wb = W[b:b + BLOCK]
            if c == "pearson":
                v = _weighted_pearson(x[None, :], y[None, :], Wb)
            elif c == "spearman":
                v = _weighted_pearson(_weighted_ranks(x, Wb),
                                      of_y(("ranks", b), lambda: _weighted_ranks(y, Wb)), Wb)
            else:
                v = _weighted_kendall(x, y, Wb)
            parts.append(v)
        values = np.concatenate(parts)
        values[undefined] = np.nan
        out[c] = values
    return out


def _one(x, y, c: str) -> float | None:
    x = np.asarray(x, np.float64)
    v = coefficients(x, y, np.ones((1, x.size)), (c,))[c][0]
    return None if np.isnan(v) else float(v)


def pearson(x, y) -> float | None:
    return _one(x, y, "pearson")


def spearman(x, y) -> float | None:
    return _one(x, y, "spearman")


def kendall(x, y) -> float | None:
    return _one(x, y, "kendall")


def interval(samples: np.ndarray, level: float = 0.95) -> tuple[float | None, float | None, int]:
    """Percentile interval over the defined resamples, and how many were undefined."""
    ok = samples[~np.isnan(samples)]
    undefined = int(samples.size - ok.size)
    if not ok.size:
        return None, None, undefined
    lo, hi = np.quantile(ok, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi), undefined


def kappa(a: np.ndarray, b: np.ndarray) -> float | None:
    """Cohen's kappa = (p_o - p_e) / (1 - p_e) of two raters' category labels (integers);
    undefined (None) with no item, or when p_e = 1 (both raters always gave one same category)."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.size == 0:
        return None
    cats, inv = np.unique(np.concatenate([a, b]), return_inverse=True)
    ia, ib = inv[:a.size], inv[a.size:]
    p_o = float((ia == ib).mean())
    pa = np.bincount(ia, minlength=cats.size) / a.size
    pb = np.bincount(ib, minlength=cats.size) / b.size
    p_e = float((pa * pb).sum())
    if p_e >= 1.0:
        return None
    return (p_o - p_e) / (1.0 - p_e)

"""A pytest helper that keeps a team's own metric code honest in CI:
:func:`assert_conforms` calls the function on every case of ``conformance infer``'s pool and
fails, on the smallest case where it disagrees with the named profile, with what it gave, what
the profile gives, and the axis values under which that case would agree (the convention it
breaks).

>>> def precision_at_k(ranked, rel, k):
...     return sum(1 for d in ranked[:k] if rel.get(d, 0) >= 1) / k
>>> assert_conforms(precision_at_k, "P@10", profile="trec_eval", label_type="float",
...                 negative_labels="unjudged")
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from conformance.conventions import format_value


def assert_conforms(fn: Callable | str, measure: str, profile: str = "trec_eval", *,
                    calling: str = "ranked", seed: int = 0, tolerance: float | None = None,
                    **overrides: Any) -> None:
    """Raise AssertionError unless ``fn`` agrees with profile ``profile`` (with ``overrides``,
    axis=value) on ``measure`` on every case of the pool; ``calling`` as ``conformance.infer``.
    Only the axes the calling convention shows are held to the profile."""
    from conformance.infer.callers import caller
    from conformance.infer.search import TOLERANCE, matches, pool_tables
    from conformance.infer.space import space_for
    from conformance.measures import parse_measure
    from conformance.profiles import profile as profile_of

    m = parse_measure(measure)
    space = space_for(m, calling)
    conv = m.conventions(profile_of(profile, m).replace(**overrides))
    cell = space.cell(conv)
    if cell is None:
        raise ValueError(f"{profile}'s {m.text} has values infer does not try: "
                         f"{', '.join(space.outside(conv))}; override them")
    target = space.unravel(np.array([cell]))
    call = caller(fn, calling)
    tol = TOLERANCE if tolerance is None else tolerance
    tables = sorted(pool_tables(m, calling, seed), key=lambda t: (t.case.size, t.case.number))
    for t in tables:  # smallest first: the first disagreement is the smallest
        obs = call(t.case, m.cutoff)
        if matches(t, obs, target, tol)[0]:
            continue
        lo, hi, err = t.values(target)
        expected = ("fails" if err[0] else "NaN" if np.isnan(lo[0]) else
                    f"{lo[0]:.6g}" if lo[0] == hi[0] else f"{lo[0]:.6g}..{hi[0]:.6g}")
        raise AssertionError(
            f"{getattr(fn, '__qualname__', fn)} is not {profile}'s {m.text}"
            + (f" with {', '.join(f'{a}={format_value(v)}' for a, v in overrides.items())}" if overrides else "")
            + f": on case {t.case.number} ({t.case.kind}) it gives {obs.shown()}, the profile gives "
            f"{expected}; {_broken(t, obs, space, target[0], tol)}\n{t.case.text()}")


def _broken(table, obs, space, cell: np.ndarray, tol: float) -> str:
    """The single-axis changes of ``cell`` under which the case would agree."""
    from conformance.infer.search import matches

    agree = []
    for col, axis in enumerate(space.axes):
        for i, v in enumerate(space.values[axis]):
            if i == cell[col]:
                continue
            other = cell.copy()
            other[col] = i
            if matches(table, obs, other[None, :], tol)[0]:
                agree.append(f"{axis}={format_value(v)} (not {format_value(space.values[axis][cell[col]])})")
    if not agree:
        return "no change of one axis explains it"
    return "it would agree with " + " or ".join(agree)

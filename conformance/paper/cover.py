"""Covering the consistent combinations of a sweep with a few rows, in which an axis whose every
value works reads ``any``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from conformance.conventions import TREC_EVAL10, format_value


def distance_to_default(idx: Sequence[int], axes: list[str], domains: list[tuple]) -> int:
    return sum(1 for a, d, i in zip(axes, domains, idx) if d[i] != getattr(TREC_EVAL10, a))


def cover(ok: np.ndarray, axes: list[str], domains: list[tuple], limit: int = 1000) -> tuple[list[dict], bool]:
    """A few rows (axis -> set of value indices) whose union is the True cells of ``ok``.

    Axes along which ``ok`` does not change are ``any`` in every row. The rest is covered
    greedily: from the uncovered cell nearest the trec_eval defaults, a row grows one value at a
    time, axis by axis, while every cell it spans is True. Returns (rows, truncated).
    """
    if not ok.any():
        return [], False
    if ok.ndim == 0:
        return [{}], False
    free = [i for i in range(ok.ndim) if (ok == np.take(ok, [0], axis=i)).all()]
    reduced = ok[tuple(slice(0, 1) if i in free else slice(None) for i in range(ok.ndim))]
    cells = np.argwhere(reduced)
    keyed = sorted(map(tuple, cells.tolist()),
                   key=lambda c: (distance_to_default(c, axes, domains), c))
    covered = np.zeros(reduced.shape, bool)
    rows: list[dict] = []
    truncated = False
    for c in keyed:
        if covered[c]:
            continue
        if len(rows) >= limit:
            truncated = True
            break
        sets = [[i] for i in c]
        changed = True
        while changed:
            changed = False
            for ax in range(reduced.ndim):
                if ax in free:
                    continue
                for v in range(reduced.shape[ax]):
                    if v in sets[ax]:
                        continue
                    trial = [s if j != ax else s + [v] for j, s in enumerate(sets)]
                    if reduced[np.ix_(*trial)].all():
                        sets[ax] = sorted(trial[ax])
                        changed = True
        covered[np.ix_(*sets)] = True
        row = {}
        for ax, a in enumerate(axes):
            if ax in free or len(sets[ax]) == len(domains[ax]):
                row[a] = None  # any
            else:
                row[a] = sets[ax]
        rows.append(row)
    return rows, truncated


def row_text(row: dict, axes: list[str], domains: list[tuple]) -> dict[str, Any]:
    """A covering row as public text: ``any``, one value, or a list of values."""
    out: dict[str, Any] = {}
    for ax, a in enumerate(axes):
        s = row[a]
        if s is None:
            out[a] = "any"
        elif len(s) == 1:
            out[a] = format_value(domains[ax][s[0]])
        else:
            out[a] = [format_value(domains[ax][i]) for i in s]
    return out


def table_columns(table: list[dict[str, Any]], axes: Sequence[str]) -> tuple[list[str], list[str], list[list[str]]]:
    """The columns a cover's rows (``row_text``'s) are shown in: the axes some row restricts,
    the axes every value of which works (``any`` in every row), and each row's cells."""
    shown = [a for a in axes if any(row[a] != "any" for row in table)]
    anys = [a for a in axes if a not in shown]
    cells = [[", ".join(v) if isinstance(v, list) else v for v in (row[a] for a in shown)]
             for row in table]
    return shown, anys, cells


def table_lines(table: list[dict[str, Any]], axes: Sequence[str], max_rows: int) -> list[str]:
    """The rows of a cover (``row_text``'s) as aligned text: a column for each axis some row
    restricts, then the axes every value of which works (``any`` in every row)."""
    shown, anys, cells = table_columns(table, axes)
    cells = cells[:max_rows]
    lines = []
    if shown:
        widths = [max(len(a), *(len(c[i]) for c in cells)) for i, a in enumerate(shown)]
        lines.append("  " + "  ".join(a.ljust(w) for a, w in zip(shown, widths)).rstrip())
        for c in cells:
            lines.append("  " + "  ".join(x.ljust(w) for x, w in zip(c, widths)).rstrip())
        if len(table) > max_rows:
            lines.append(f"  ... {len(table) - max_rows} more rows (see --json)")
    if anys:
        lines.append(f"  any value works for: {', '.join(anys)}")
    return lines

"""The value table of a run: per case, every entry's value of every measure, in agreement classes.

``value_tables(result)`` gives, for each case (subject) of a ``conformance.runner.RunResult``,
one row per entry and one column per measure. A cell holds the entry's value (its error's text
when it failed, nothing when it does not compute the measure) and the letter of its agreement
class: per case and measure, class A holds trec_eval (the first class when trec_eval did not
compute the measure), the others follow in the comparison's class order. Each class other than
A is labelled by the conventions that set it apart from A: the switched axes of the
explanation between a member of A and a member of the class, with the class's own values
(``gain=exponential``); a class no explanation links to A is labelled "not explained against A".
Everything is in a fixed order, so the same result gives the same tables.
"""

from __future__ import annotations

import math
from typing import Any

from conformance.errors import stable_error

REFERENCE_ENTRY = "trec_eval"
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _text(v: Any) -> str:
    if v is None:
        return "error"
    v = float(v)
    return "NaN" if math.isnan(v) else f"{v:.4f}"


def _letter(i: int) -> str:
    return LETTERS[i] if i < len(LETTERS) else f"Z{i - len(LETTERS) + 1}"


def _apart(c, ref: list[str], cls: list[str]) -> list[str]:
    """``axis=value`` (the class's own value) for the axes of an explanation between ``ref``
    and ``cls``; [] when no explanation links them."""
    for e in c.explanations:
        if e.axes is None:
            continue
        a, b = e.between
        if a in ref and b in cls:
            return [f"{ax}={e.switched[ax][1]}" for ax in e.axes]
        if b in ref and a in cls:
            return [f"{ax}={e.switched[ax][0]}" for ax in e.axes]
    return []


def _classes(c) -> list[dict[str, Any]]:
    classes = [list(cls) for cls in c.classes]
    ref_at = next((i for i, cls in enumerate(classes) if REFERENCE_ENTRY in cls), 0)
    order = [ref_at] + [i for i in range(len(classes)) if i != ref_at]
    out = []
    for n, i in enumerate(order):
        cls = classes[i]
        apart = [] if n == 0 else _apart(c, classes[ref_at], cls)
        out.append({
            "letter": _letter(n),
            "index": n,
            "entries": cls,
            "value": _text(c.values.get(cls[0])),
            "apart": apart,
            "linked": n == 0 or bool(apart),
        })
    return out


def value_tables(result, metric_key=None) -> list[dict[str, Any]]:
    """Per case: {case, description, metrics, rows: [{entry, cells}], classes: {metric: [...]}}.
    ``metric_key`` orders the measures (their order in the comparisons otherwise)."""
    by_case: dict[str, list] = {}
    for c in result.comparisons:
        by_case.setdefault(c.case, []).append(c)
    descriptions = {s.name: getattr(s, "description", "") or ""
                    for s in getattr(result, "subjects", []) or []}
    names = [e.name for e in result.entries]
    tables = []
    for case, comps in by_case.items():
        if metric_key is not None:
            comps = sorted(comps, key=lambda c: metric_key(c.metric))
        classes = {c.metric: _classes(c) for c in comps}
        rows = []
        for name in names:
            cells = []
            for c in comps:
                if name in c.errors:
                    cells.append({"metric": c.metric, "text": "error", "letter": None, "index": None,
                                  "title": stable_error(c.errors[name])})
                    continue
                if name not in c.values:
                    cells.append({"metric": c.metric, "text": "", "letter": None, "index": None,
                                  "title": "not computed"})
                    continue
                cls = next((k for k in classes[c.metric] if name in k["entries"]), None)
                v = c.values[name]
                cells.append({"metric": c.metric, "text": _text(v),
                              "letter": cls["letter"] if cls else None,
                              "index": cls["index"] if cls else None,
                              "title": repr(float(v)) if v is not None else "error"})
            if any(cell["text"] for cell in cells):
                rows.append({"entry": name, "cells": cells})
        tables.append({"case": case, "description": descriptions.get(case, ""),
                       "metrics": [c.metric for c in comps], "rows": rows, "classes": classes})
    return tables

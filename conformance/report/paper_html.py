"""The single-file HTML report of ``conformance check-paper``.

``render_paper(result)`` returns the page and ``write_paper(result, path)`` writes it, for a
``conformance.paper.PaperResult``. Like the run report, the page holds its styles, scripts and
data inline, makes no network request, and the same result gives the same bytes.

Sections:

- Verdict: the one-sentence answer, the reported values with the rounding interval each printed
  number stands for, and how many of the swept convention combinations reproduce them all.
- Conventions: the rows that cover every reproducing combination (``PaperResult.rows``), one
  column per swept axis, ``any`` where every swept value works; the count per measure; for a
  value nothing reproduces, the nearest miss and its conventions.
- Libraries: per entry and reported measure, its value (live when the library ran, else its
  declared profile's), the distance from the reported interval, and whether it reproduces; the
  entry's declared values on the swept axes, those no reproducing combination uses marked: they
  are why the entry misses.
- Explorer: the run report's explorer, for the entries checked.

Reads only ``PaperResult``'s public fields and ``to_dict()``; ``conformance.paper`` is not
imported here.
"""

from __future__ import annotations

import math
from typing import Any

from conformance.conventions import AXES, format_value
from conformance.paper.evidence import TIE_ORDER

# Axes shown first in the conventions table, in this order (the rest follow in AXES order).
_FIRST = ("gain", "discount", "ideal", "ties", "relevance_threshold")


def paper_context(result, entries_by_name: dict[str, Any], colours_of) -> dict[str, Any]:
    """The page model. ``entries_by_name``: library entries by name (for declared profiles);
    ``colours_of(entries)``: axis -> value -> colour, as the run report colours values."""
    doc = result.to_dict()
    details = doc["details"]
    swept: dict[str, list[str]] = details["axes"]
    axes = sorted(swept, key=lambda a: (a not in _FIRST, _FIRST.index(a) if a in _FIRST else 0,
                                        list(AXES).index(a)))
    rows = doc["consistent_conventions"]
    # per axis, the values some reproducing combination uses
    allowed: dict[str, set[str]] = {a: set() for a in axes}
    for row in rows:
        for a in axes:
            v = row.get(a, "any")
            if v == "any":
                allowed[a].update(swept[a])
            elif isinstance(v, list):
                allowed[a].update(v)
            else:
                allowed[a].add(v)
    checked = [entries_by_name[n] for n in details["libraries"] if n in entries_by_name]
    colours = colours_of(checked) if checked else {}

    def colour(axis: str, value: str) -> str:
        return colours.get(axis, {}).get(value, "#eef1f4")

    reported = []
    for r in result.aggregates:
        interval = [float(r.low), float(r.high)]
        reported.append({
            "metric": r.metric,
            "printed": r.printed + ("%" if r.percent and not r.printed.endswith("%") else ""),
            "low": _dec(interval[0], r.digits + 1),
            "high": _dec(interval[1], r.digits + 1),
            "consistent": details["per_metric_consistent_combinations"].get(r.metric, 0),
        })
    metrics = [r["metric"] for r in reported]
    if not metrics:  # per-query values only: the measures of the libraries' answers
        metrics = sorted({m for lib in details["libraries"].values() for m in lib["metrics"]})

    table_rows = []
    for row in rows:
        cells = []
        for a in axes:
            v = row.get(a, "any")
            values = swept[a] if v == "any" else (v if isinstance(v, list) else [v])
            cells.append({"axis": a, "any": v == "any",
                          "values": [{"text": x, "colour": colour(a, x)} for x in values]})
        table_rows.append(cells)

    libs = []
    for name, lib in details["libraries"].items():
        e = entries_by_name.get(name)
        values = []
        first_profile = None
        for metric in metrics:
            m = lib["metrics"].get(metric)
            rep = next((r for r in result.aggregates if r.metric == metric), None)
            values.append(_entry_value(m, lib["decided_by"], rep, metric))
            if first_profile is None and e is not None and m is not None and m["supported"]:
                first_profile = _declared(e, metric)
        profile_cells = []
        if first_profile is not None:
            for a in axes:
                v = first_profile.get(a)
                # struck out: a swept value no reproducing combination uses (a value outside
                # the sweep, such as ties=unspecified, is neither confirmed nor excluded)
                profile_cells.append({"axis": a, "value": v, "colour": colour(a, v),
                                      "excluded": v in swept[a] and v not in allowed[a],
                                      "swept": v in swept[a]})
        libs.append({
            "name": name,
            "library": getattr(e, "library", name),
            "available": lib["available"],
            "decided_by": lib["decided_by"],
            "consistent": lib["consistent"],
            "not_run": lib.get("not_run"),
            # some order of tied documents reproduces the values; only the library's run can tell
            "undecided": lib.get("not_run") == TIE_ORDER,
            "values": values,
            "profile": profile_cells,
            "findings": [v["metric"] for v in values if v.get("finding")],
        })
    # reproducing entries first, then by name as the run listed them
    libs.sort(key=lambda x: not x["consistent"])

    misses = [{
        "metric": x["metric"],
        "value": _fmt(x["value"]),
        "gap": None if x["gap"] is None else f"{x['gap']:+.4f}",
        "conventions": [{"axis": a, "value": v, "colour": colour(a, v)}
                        for a, v in x["conventions"].items()],
        "per_query": (f"{x['matched_queries']} of {x['queries']} per-query values match"
                      if "queries" in x else None),
    } for x in details["nearest_misses"]]

    return {
        "verdict": doc["verdict"],
        "reported": reported,
        "per_query": details.get("per_query"),
        "combinations": details["combinations"],
        "consistent_combinations": details["consistent_combinations"],
        "queries": details["queries"],
        "axes": [{"name": a, "meaning": AXES[a].meaning, "values": swept[a]} for a in axes],
        "rows": table_rows,
        "rows_truncated": details["rows_truncated"],
        "metrics": metrics,
        "libs": libs,
        "consistent_libraries": doc["consistent_libraries"],
        "misses": misses,
        "unswept": [a for a in ("gain", "discount", "ideal", "ties", "relevance_threshold", "depth")
                    if a not in swept],
    }


def _declared(entry, metric: str) -> dict[str, str] | None:
    from conformance.measures import parse_measure

    try:
        m = parse_measure(metric)
        if not entry.supports(m):
            return None
        return {a: format_value(getattr(m.conventions(entry.profile(m)), a)) for a in AXES}
    except Exception:  # a display detail: an entry that cannot say shows no profile
        return None


def _entry_value(m: dict | None, decided_by: str, rep, metric: str) -> dict[str, Any]:
    out: dict[str, Any] = {"metric": metric, "text": "not computed", "cls": "na", "reproduces": None,
                           "value": None, "full": None, "title": None, "gap": None, "notes": [],
                           "finding": False}
    if m is None or not m["supported"]:
        return out
    live, prof = m["live"], m["profile"]
    err = m["live_error"] if decided_by == "live" else m["profile_error"]
    if decided_by == "live":
        v = live
    else:
        v = None if prof is None else prof[0]
    out.update(reproduces=bool(m["reproduces"]), value=v)
    if v is None:
        out.update(text="error", cls="err", title=err or "no value")
        return out
    if decided_by == "profile" and prof is not None and prof[0] != prof[1]:
        text = f"{_fmt(prof[0])}..{_fmt(prof[1])}"
    else:
        text = _fmt(v)
    out["text"] = text
    out["full"] = repr(float(v))
    out["cls"] = "yes" if m["reproduces"] else "no"
    if rep is not None and not m["reproduces"]:
        out["gap"] = f"{rep.gap(v):+.4f}"
    notes = []
    if m["agrees_with_profile"] is False:
        out["finding"] = True
        notes.append("the live value differs from the declared profile: a finding")
    if m["tie_range_covers"]:
        notes.append("another order of its tied documents would reproduce it")
    out["notes"] = notes
    return out


def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "NaN"
    return f"{float(v):.4f}"


def _dec(v: float, digits: int) -> str:
    return f"{v:.{digits}f}"

"""The single-file HTML report of a ``conformance run``.

``render(result)`` returns the page as text and ``write(result, path)`` writes it. The page holds
everything inline (styles, scripts, data): it opens from disk and makes no network request. The
same ``RunResult`` gives the same bytes (no timestamps, every collection in a fixed order).
One idea at about 780 lines: one page, each section's data built from the result by a function
of its own; the position tables and the value tables are modules apart.

Sections, each colour and symbol with its legend:

- Summary: ``result.summary``'s counts.
- Values: per case (a picker when there are several), each entry's value of each measure with
  its agreement class (``conformance.report.values``): the first screen.
- Conventions: the convention matrix, entry x axis from each entry's ``default_profile()``;
  a cell's colour stands for its value, the same colour for the same value of an axis.
- Entries: the entries with their versions and availability.
- Agreement: per measure, on how many cases each pair of entries agrees.
- Disagreements: one card per disagreeing pair of entries on a case and measure (and one per
  entry that does not match its own profile), unexplained ones first, grouped by measure and
  then by the axes that explain them, each measure and group one closed line until opened
  (the bundled corpus' page stays under 15,000 px at 1400 px wide). A card shows every entry's
  value, the axes that explain the difference with both values, and, per query where the two
  part, the position-by-position table under each of the two conventions
  (``conformance.report.positions``). Tables are built in Python and embedded as data; the page
  draws a card's tables when the reader opens it.
- Explorer: a ranked list the reader edits, with P@k, R@k, RR, RR@k, AP, AP@k, nDCG@k, nDCG and
  DCG@k as each entry's profile computes them. The reader's lists are arbitrary, so no table
  the reference computes ahead covers them: ``static/explorer.js`` computes the values, for a
  list that holds every judged document (no ties, no unjudged documents), and is tested value
  for value against ``conformance.reference`` over every value of every axis it offers
  (``tests/report/test_explorer_browser.py``). Only the axes of :data:`EXPLORER_AXES` matter
  there; :data:`EXPLORER_IDLE` (the axis records) says why each other axis cannot change a
  value.
  :data:`EXPLORER_COMPUTES` states once which values of the offered axes the script computes;
  an entry whose profile sets another value (a value added to an axis since), or sets an axis
  neither offered nor idle off its default, is shown as not computed, with the reason, never
  computed as something else. Its picker opens the input's own queries
  (``conformance.report.picker``).

Requires RunResult.subjects (kept by ``run_entries``) for the position tables; a result without
them still renders, with the tables left out.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
from markupsafe import Markup, escape

from conformance.conventions import AXES, EXPLORER_AXES, Conventions, format_value
from conformance.errors import stable_error as library_error
from conformance.measures import FAMILIES, Measure, parse_measure
from conformance.report.positions import PositionTable, position_table, shown
from conformance.report.picker import picker_queries
from conformance.report.values import value_tables
from conformance.reference.prepare import Prepared

# (id shown in the explorer, family, takes the explorer's k)
EXPLORER_MEASURES = (
    ("P@k", "P", True),
    ("R@k", "R", True),
    ("RR", "RR", False),
    ("RR@k", "RR", True),
    ("AP", "AP", False),
    ("AP@k", "AP", True),
    ("nDCG@k", "nDCG", True),
    ("nDCG", "nDCG", False),
    ("DCG@k", "DCG", True),
)

# Support and profiles do not depend on the cutoff for any entry (tested); this one stands in.
REPRESENTATIVE_K = 10

DEFAULT_LIST = (3, 2, 0, 2, 0, 3, 0, 1, 0, 1)

# Soft colours for the values of an axis, in the axis' vocabulary order; the same value of an
# axis has the same colour everywhere in the page.
PALETTE = ("#dbeafe", "#fde68a", "#bbf7d0", "#fecaca", "#e9d5ff", "#fed7aa", "#a5f3fc",
           "#f5d0fe", "#d9f99d", "#e2e8f0", "#fbcfe8", "#c7d2fe")

# Colours of the value table's agreement classes (report.css .c0 ... .c11), one per class; later
# classes (.cx) have no colour, only their letter, and the legend says so: a colour never
# repeats, so it never suggests an agreement that is not there.
CLASS_COLOURS = 12

# Queries shown per disagreement card (the ones where the two entries part first).
MAX_QUERIES = 3


def _write_text(text: str, path) -> None:
    path = Path(path)
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="\n")


def write(result, path) -> None:
    """Write the report of ``result`` (a ``conformance.runner.RunResult``) to ``path``."""
    _write_text(render(result), path)


def render(result) -> str:
    """The report of ``result`` as one self-contained HTML document."""
    return _render_page("report.html.j2", build_context(result))


def write_paper(result, path) -> None:
    """Write the check-paper report of ``result`` (a ``conformance.paper.PaperResult``)."""
    _write_text(render_paper(result), path)


def render_paper(result) -> str:
    """The check-paper report of ``result`` as one self-contained HTML document: the verdict,
    the reproducing convention sets, every library entry's values, and the explorer for the
    entries checked (``conformance.report.paper_html``)."""
    from conformance.libs import all_entries
    from conformance.report.paper_html import paper_context

    names = [e.name for e in result.entries]
    known = {e.name: e for e in all_entries()}
    checked = [known[n] for n in names if n in known]
    ctx = paper_context(result, known, _value_colours)
    ctx["json_data"] = _script_json({"explorer": explorer_data(checked)})
    return _render_page("paper.html.j2", ctx)


def _render_page(template: str, ctx: dict[str, Any]) -> str:
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(_template_source),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["num"] = _fmt
    env.filters["full"] = _full
    env.filters["breakable"] = _breakable
    ctx = dict(ctx)
    ctx["css"] = _static("report.css")
    ctx["js"] = _static("explorer.js") + "\n" + _static("report.js")
    return env.get_template(template).render(**ctx)


# --------------------------------------------------------------------------------------------
# the page model
# --------------------------------------------------------------------------------------------


def build_context(result) -> dict[str, Any]:
    entries = list(result.entries)
    colours = _value_colours(entries)
    cards, tables = _cards(result)
    values = value_tables(result, _metric_key)
    most = max((len(cl) for t in values for cl in t["classes"].values()), default=1)
    return {
        "value_tables": values,
        "legend_classes": min(most, CLASS_COLOURS),
        "class_colours": CLASS_COLOURS,
        "more_classes": most > CLASS_COLOURS,
        "summary": result.summary,
        "entries": [_entry_row(result, e) for e in entries],
        "matrix": _matrix(entries, colours),
        "agreement": _agreement(result),
        "cards": cards,
        "card_counts": {
            "total": len(cards),
            "unexplained": sum(1 for c in cards if c["unexplained"]),
        },
        "card_groups": _card_groups(cards),
        "axis_meanings": {a: AXES[a].meaning for a in AXES},
        "card_metrics": sorted({c["metric"] for c in cards}, key=_metric_key),
        "card_axes": [a for a in AXES if any(a in c["axes_list"] for c in cards)],
        "json_data": _script_json({
            "tables": tables,
            "explorer": explorer_data(entries, colours,
                                      picker_queries(getattr(result, "subjects", None))),
            "agreement": _agreement_data(result),
        }),
    }


def _entry_row(result, e) -> dict[str, Any]:
    return {
        "name": e.name,
        "library": e.library,
        "available": bool(result.available.get(e.name)),
        "version": result.versions.get(e.name),
        "description": e.description,
        "tolerance": e.tolerance,
    }


def _axis_values_order(axis: str, seen: set[str]) -> list[str]:
    named = list(AXES[axis].values)
    return named + sorted(v for v in seen if v not in named)


def _value_colours(entries) -> dict[str, dict[str, str]]:
    """axis -> value text -> colour, for every value any entry's profiles use."""
    seen: dict[str, set[str]] = defaultdict(set)
    for e in entries:
        for profile in _entry_profiles(e):
            for axis, value in profile.to_dict().items():
                seen[axis].add(value)
    out: dict[str, dict[str, str]] = {}
    for axis in AXES:
        order = _axis_values_order(axis, seen[axis])
        used = [v for v in order if v in seen[axis]]
        out[axis] = {v: PALETTE[i % len(PALETTE)] for i, v in enumerate(used)}
    return out


def _entry_profiles(e) -> list[Conventions]:
    out = [e.default_profile()]
    for _, family, at in EXPLORER_MEASURES:
        m = Measure(family, REPRESENTATIVE_K if at else None)
        if e.supports(m):
            out.append(m.conventions(e.profile(m)))
    return out


def _matrix(entries, colours) -> dict[str, Any]:
    profiles = {e.name: e.default_profile().to_dict() for e in entries}
    varying = [a for a in AXES if len({p[a] for p in profiles.values()}) > 1]
    common = [(a, next(iter(profiles.values()))[a]) for a in AXES if a not in varying] if profiles else []
    rows = []
    for e in entries:
        p = profiles[e.name]
        rows.append({
            "entry": e.name,
            "cells": [{"axis": a, "value": p[a], "colour": colours[a].get(p[a], "#ffffff"),
                       "meaning": _value_meaning(a, p[a])} for a in varying],
        })
    return {
        "axes": [{"name": a, "meaning": AXES[a].meaning} for a in varying],
        "rows": rows,
        "common": [{"axis": a, "value": v, "meaning": _value_meaning(a, v)} for a, v in common],
    }


def _value_meaning(axis: str, value: str) -> str:
    ax = AXES[axis]
    return ax.values.get(value) or ax.open_meaning or ""


# --- agreement --------------------------------------------------------------------------------


def _metric_key(text: str) -> tuple:
    try:
        m = parse_measure(text)
    except Exception:  # a name the run accepted always parses; keep any other last
        return (len(FAMILIES), 0, text)
    order = list(FAMILIES)
    return (order.index(m.family), m.cutoff if m.cutoff is not None else 10**9, text)


def _agreement(result) -> list[dict[str, Any]]:
    """Per measure: cases, cases on which every entry agrees, and the largest split."""
    by_metric: dict[str, list] = defaultdict(list)
    for c in result.comparisons:
        by_metric[c.metric].append(c)
    out = []
    for metric in sorted(by_metric, key=_metric_key):
        comps = by_metric[metric]
        names = [e.name for e in result.entries if any(e.name in c.values for c in comps)]
        out.append({
            "metric": metric,
            "cases": len(comps),
            "entries": len(names),
            "all_agree": sum(1 for c in comps if len(c.classes) == 1),
            "max_groups": max(len(c.classes) for c in comps),
            "disagreements": sum(c.disagreements for c in comps),
            "unexplained": sum(len(c.unexplained) for c in comps),
        })
    return out


def _agreement_data(result) -> dict[str, Any]:
    """For the agreement heatmap: per measure (and over all), for each pair of entries, the
    cases both computed and the cases on which they agree."""
    names = [e.name for e in result.entries if result.available.get(e.name)]
    index = {n: i for i, n in enumerate(names)}
    metrics = sorted({c.metric for c in result.comparisons}, key=_metric_key)

    def empty():
        return [[0] * len(names) for _ in names]

    both = {m: empty() for m in ["*"] + metrics}
    agree = {m: empty() for m in ["*"] + metrics}
    for c in result.comparisons:
        cls_of = {n: i for i, cls in enumerate(c.classes) for n in cls}
        present = [n for n in names if n in cls_of]
        for a in present:
            for b in present:
                ia, ib = index[a], index[b]
                for key in ("*", c.metric):
                    both[key][ia][ib] += 1
                    if cls_of[a] == cls_of[b]:
                        agree[key][ia][ib] += 1
    return {"entries": names, "metrics": metrics, "both": both, "agree": agree}


# --- disagreement cards -----------------------------------------------------------------------


class _Tables:
    """Position tables, built once per (subject, measure, profile owner, query)."""

    def __init__(self, result) -> None:
        self.subjects = {s.name: s for s in getattr(result, "subjects", []) or []}
        self.entries = {e.name: e for e in result.entries}
        self.preps: dict[str, Prepared] = {}
        self.index: dict[tuple, int] = {}
        self.tables: list[dict] = []

    def measure(self, case: str, metric: str) -> Measure | None:
        s = self.subjects.get(case)
        if s is None:
            return None
        for m in s.measures:
            if m.text == metric:
                return m
        try:
            return parse_measure(metric)
        except Exception:
            return None

    def queries(self, case: str) -> list[str]:
        s = self.subjects.get(case)
        if s is None:
            return []
        return sorted(set(s.qrels.qids[np.unique(s.qrels.qcode)].tolist())
                      | set(s.run.qids[np.unique(s.run.qcode)].tolist()))

    def get(self, case: str, metric: str, entry: str, query: str) -> int | None:
        key = (case, metric, entry, query)
        if key in self.index:
            return self.index[key]
        s = self.subjects.get(case)
        m = self.measure(case, metric)
        e = self.entries.get(entry)
        if s is None or m is None or e is None:
            return None
        try:
            if case not in self.preps:
                self.preps[case] = Prepared(s.qrels, s.run)
            table = _table_json(position_table(self.preps[case], query, m, e.profile(m), entry))
        except Exception as exc:  # a display table must never cost the user the whole report
            table = {"query": query, "entry": entry, "measure": metric,
                     "error": f"the report could not build this table ({type(exc).__name__}: {exc})"}
        self.index[key] = len(self.tables)
        self.tables.append(table)
        return self.index[key]


def _table_json(t: PositionTable) -> dict[str, Any]:
    rows, hidden = shown(t.rows, t.cutoff, lambda r: r.rel != 0 or r.gain != 0)
    out: dict[str, Any] = {
        "query": t.query,
        "entry": t.profile_name,
        "measure": t.measure,
        "graded": t.graded,
        "family": t.measure_family,
        "k": t.cutoff,
        "n": t.n,
        "R": t.relevant,
        "hidden": hidden,
        "ref": None if t.reference is None else [_jnum(t.reference[0]), _jnum(t.reference[1])],
        "counted": t.counted,
        "note": t.note,
        "how": t.how,
        "refused": t.refused,
        "error": t.error,
    }
    if t.graded:
        out["rows"] = [None if r is None else
                       [r.rank, r.doc, _jnum(r.label), _jnum(r.raw), _jnum(r.gain),
                        _jnum(r.discount), _jnum(r.discounted), _jnum(r.running),
                        r.tie_group, r.inside] for r in rows]
        irows, ihidden = shown(t.ideal, t.cutoff, lambda r: r.gain != 0)
        out["ideal"] = [None if r is None else
                        [r.rank, r.doc, _jnum(r.label), _jnum(r.gain), _jnum(r.discount),
                         _jnum(r.running), r.inside] for r in irows]
        out["ideal_hidden"] = ihidden
        out["dcg"], out["idcg"] = _jnum(t.dcg), _jnum(t.idcg)
        out["value"] = _jnum(t.table_value)
    else:
        out["rows"] = [None if r is None else
                       [r.rank, r.doc, _jnum(r.label), _jnum(r.raw), _jnum(r.rel),
                        _jnum(r.rel_so_far), _jnum(r.running), _jnum(r.ap_term),
                        r.tie_group, r.inside] for r in rows]
    return out


def _differing_queries(c, a: str, b: str, queries: list[str]) -> list[str]:
    """Queries on which entries a and b part (all the case's queries when one failed)."""
    if a in c.errors or b in c.errors:
        qa = c.per_query.get(a, {}) if a not in c.errors else {}
        qb = c.per_query.get(b, {}) if b not in c.errors else {}
        return sorted(set(qa) | set(qb)) or queries
    pa, pb = c.per_query.get(a, {}), c.per_query.get(b, {})
    out = []
    for q in sorted(set(pa) | set(pb)):
        if q not in pa or q not in pb:
            out.append(q)
            continue
        va, vb = pa[q], pb[q]
        if math.isnan(va) or math.isnan(vb):
            if math.isnan(va) != math.isnan(vb):
                out.append(q)
        elif abs(va - vb) > c.tolerance:
            out.append(q)
    return out or queries


def _self_queries(u: dict, queries: list[str]) -> list[str]:
    lib, ref = u.get("library", {}), u.get("reference", {})
    if "per_query" not in lib or "per_query" not in ref:
        return sorted(set(lib.get("per_query", {})) | set(ref.get("per_query", {}))) or queries
    out = []
    lp, rp = lib["per_query"], ref["per_query"]
    for q in sorted(set(lp) | set(rp)):
        if q not in lp or q not in rp:
            out.append(q)
            continue
        v, (lo, hi) = lp[q], rp[q]
        if v is None or lo is None:
            if (v is None) != (lo is None):
                out.append(q)
        elif not (lo - 1e-12 <= v <= hi + 1e-12):
            out.append(q)
    return out or queries


def _cards(result) -> tuple[list[dict], list[dict]]:
    tables = _Tables(result)
    unexplained: list[dict] = []
    explained: list[dict] = []
    for ci, c in enumerate(result.comparisons):
        if not c.explanations and not c.unexplained:
            continue
        cls_of = {n: i for i, cls in enumerate(c.classes) for n in cls}
        values = [{
            "entry": n,
            "text": _fmt(c.values.get(n)) if n not in c.errors else "error",
            "full": _full(c.values.get(n)) if n not in c.errors else library_error(c.errors[n]),
            "group": cls_of.get(n, 0),
            "error": library_error(c.errors[n]) if n in c.errors else None,
        } for n in c.values]
        queries = tables.queries(c.case)
        has_data = c.case in tables.subjects
        for pi, e in enumerate(c.explanations):
            a, b = e.between
            qs = _differing_queries(c, a, b, queries) if has_data else []
            card = {
                "id": f"c{ci}-p{pi}",
                "kind": "pair",
                "case": c.case,
                "description": _description(result, c.case),
                "metric": c.metric,
                "a": a,
                "b": b,
                "unexplained": e.axes is None,
                "axes": [{"axis": ax, "a": e.switched[ax][0], "b": e.switched[ax][1],
                          "meaning": AXES[ax].meaning} for ax in (e.axes or [])],
                "axes_list": list(e.axes or e.differing),
                "differing": [{"axis": ax, "meaning": AXES[ax].meaning} for ax in e.differing],
                "values": values,
                "group_a": cls_of.get(a, 0),
                "group_b": cls_of.get(b, 0),
                "queries": qs[:MAX_QUERIES],
                "more_queries": max(0, len(qs) - MAX_QUERIES),
                "tables": [[tables.get(c.case, c.metric, a, q), tables.get(c.case, c.metric, b, q)]
                           for q in qs[:MAX_QUERIES]],
            }
            card["values_a"] = _class_value(values, card["group_a"])
            card["values_b"] = _class_value(values, card["group_b"])
            (unexplained if card["unexplained"] else explained).append(card)
        for ui, u in enumerate(u for u in c.unexplained if "entry" in u):
            n = u["entry"]
            qs = _self_queries(u, queries) if has_data else []
            unexplained.append({
                "id": f"c{ci}-s{ui}",
                "kind": "self",
                "case": c.case,
                "description": _description(result, c.case),
                "metric": c.metric,
                "a": n,
                "b": None,
                "unexplained": True,
                "axes": [],
                "axes_list": [],
                "differing": [],
                "values": values,
                "group_a": cls_of.get(n, 0),
                "group_b": None,
                "library": _describe_values(u.get("library", {})),
                "reference": _describe_values(u.get("reference", {})),
                "queries": qs[:MAX_QUERIES],
                "more_queries": max(0, len(qs) - MAX_QUERIES),
                "tables": [[tables.get(c.case, c.metric, n, q)] for q in qs[:MAX_QUERIES]],
                "values_a": _class_value(values, cls_of.get(n, 0)),
                "values_b": None,
            })
    return unexplained + explained, tables.tables


def _card_groups(cards: list[dict]) -> list[dict]:
    """The cards grouped by (measure, the axes that explain them; unexplained ones by measure
    alone), unexplained groups first, then in measure order; each group's cards keep their
    order. Per measure (in that order): its groups. A measure, and each of its groups, is one
    line on the page until opened."""
    groups: dict[tuple, dict] = {}
    for c in cards:
        axes = tuple(x["axis"] for x in c["axes"])
        key = (not c["unexplained"], _metric_key(c["metric"]), c["unexplained"] or axes)
        if key not in groups:
            groups[key] = {"metric": c["metric"], "unexplained": c["unexplained"], "axes": list(axes),
                           "cards": [], "pairs": set(), "cases": set()}
        g = groups[key]
        g["cards"].append(c)
        g["pairs"].add((c["a"], c["b"]))
        g["cases"].add(c["case"])
    flat = []
    for i, key in enumerate(sorted(groups, key=lambda k: (k[0], k[1], str(k[2])))):
        g = groups[key]
        flat.append({"id": f"g{i}", "metric": g["metric"], "unexplained": g["unexplained"],
                     "axes": g["axes"], "cards": g["cards"], "n_pairs": len(g["pairs"]),
                     "n_cases": len(g["cases"]),
                     "axes_list": sorted({a for c in g["cards"] for a in c["axes_list"]})})
    # one line per measure, naming its groups with their counts; a measure with unexplained
    # cards comes first and open
    by_metric: dict[str, list[dict]] = {}
    for g in flat:
        by_metric.setdefault(g["metric"], []).append(g)
    out = [{"id": f"m{i}", "metric": metric, "groups": gs,
            "unexplained": any(g["unexplained"] for g in gs),
            "n_cards": sum(len(g["cards"]) for g in gs)}
           for i, (metric, gs) in enumerate(by_metric.items())]
    return out


def _class_value(values: list[dict], group: int) -> str:
    for v in values:
        if v["group"] == group:
            return v["text"]
    return ""


def _description(result, case: str) -> str:
    for s in getattr(result, "subjects", []) or []:
        if s.name == case:
            return getattr(s, "description", "") or ""
    return ""


def _describe_values(d: dict) -> str:
    if "error" in d:
        return library_error(d["error"])
    def one(x):  # None stands for NaN in the comparison's JSON
        return "NaN" if x is None else _fmt(x)

    parts = []
    for q, v in sorted(d.get("per_query", {}).items()):
        if isinstance(v, list):
            lo, hi = v
            text = one(lo) if lo == hi else f"{one(lo)}..{one(hi)}"
        else:
            text = one(v)
        parts.append(f"{q}: {text}")
    return ", ".join(parts) if parts else "no query"


# --- explorer -----------------------------------------------------------------------------


def _axis_json(axis: str, value: Any) -> Any:
    return value if axis == "relevance_threshold" else format_value(value)


def explorer_profile(conv: Conventions) -> dict[str, Any]:
    """The explorer's view of a convention set: its values on :data:`EXPLORER_AXES`."""
    return {a: _axis_json(a, getattr(conv, a)) for a in EXPLORER_AXES}


# Why each axis the explorer does not offer cannot change a value on its list (one query, every
# judged document ranked once in a given order, grades 0..3), from the axis records
# (``Axis.explorer_idle``). An axis neither offered nor idle is not modelled: an entry whose
# profile sets it off its default is shown as not computed there (``not_here``), never computed
# as if it did not.
EXPLORER_IDLE: dict[str, str] = {a.name: a.explorer_idle for a in AXES.values() if a.explorer_idle}

# A number in a value's public text (``conventions.format_value``: an integer, or Python's repr
# of a float such as 0.5 or 1e-05).
_NUMBER = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?"

# The values static/explorer.js computes on each axis the explorer offers, stated once: per
# axis, its named values and the pattern of the parameterised values' public text it parses
# ("" when it parses none). Any other value (one added to the axis since, a parameter form the
# script cannot parse, an axis newly offered) is shown as not computed (``explorer_not_here``),
# never computed as another value; the script throws rather than compute a value it does not
# know, and tests/report/test_explorer_browser.py holds every value of every offered axis to
# the reference, or to "not computed" where this says so.
EXPLORER_COMPUTES: dict[str, tuple[tuple[str, ...], str]] = {
    "gain": (("linear", "exponential", "binary"), rf"{_NUMBER}:{_NUMBER}(?:,{_NUMBER}:{_NUMBER})*"),
    "discount": (("log2", "jarvelin", "reciprocal"), rf"(?:jarvelin|log):{_NUMBER}"),
    # the list holds every judged document: the judged ideal, the retrieved one and the judged
    # one cut at the list's length are one ideal there
    "ideal": (("judged", "retrieved", "judged_to_list", "k_slots"), ""),
    "k_beyond_list": (("k", "min_k_n", "rows_in_top"), ""),
    "ap_denominator": (("relevant", "retrieved_relevant", "min_k_relevant", "k",
                        "min_k_n_relevant"), ""),
    "empty_query": (("zero", "one", "nan", "raise", "skip"), ""),
    "relevance_threshold": ((), r"-?\d+"),
    "threshold_scope": (("binary", "graded"), ""),
    "rr_cutoff": (("honour", "ignore"), ""),
    "single_document": (("score", "raise"), ""),
    "rounding": (("none",), r"\d+"),
}


def explorer_computes(axis: str, value: Any, computes=EXPLORER_COMPUTES) -> bool:
    """Whether explorer.js computes ``value`` (a stored value) of the offered ``axis``, as
    ``computes`` (:data:`EXPLORER_COMPUTES`) declares."""
    named, pattern = computes.get(axis, ((), ""))
    text = format_value(value)
    return text in named or bool(pattern and re.fullmatch(pattern, text))


def _reads(family: str | None, at: bool) -> list[str]:
    """The axes one explorer measure reads: its family's (the records; every axis when None),
    less those that change a measure only at a cutoff when it has none."""
    if family is None:
        return list(AXES)
    f = FAMILIES[family]
    return [a for a in AXES if a in f.axes and (at or not AXES[a].with_cutoff_only)]


def explorer_not_here(conv: Conventions, family: str | None = None, at: bool = True,
                      computes=EXPLORER_COMPUTES) -> list[str]:
    """``axis=value`` for each axis the explorer measure of ``family`` (with a cutoff or not;
    every axis when ``family`` is None) reads on which the explorer cannot compute ``conv``'s
    value: an offered axis whose value explorer.js does not compute (``computes``), or an axis
    neither offered nor idle (:data:`EXPLORER_IDLE`) off its default. An axis the family does
    not read cannot change its value (trec_eval's rbp_gain and P@k)."""
    out = []
    for a in _reads(family, at):
        value = getattr(conv, a)
        if a in EXPLORER_AXES:
            missing = not explorer_computes(a, value, computes)
        else:
            missing = a not in EXPLORER_IDLE and value != AXES[a].default
        if missing:
            out.append(f"{a}={format_value(value)}")
    return out


def explorer_measure_profile(conv: Conventions, family: str, at: bool,
                             computes=EXPLORER_COMPUTES) -> dict[str, Any]:
    """What the page holds for one entry's explorer measure: its profile on
    :data:`EXPLORER_AXES` (an axis the measure does not read at its default, which cannot change
    its value: the script evaluates every measure under the profile it is given, and a value it
    does not compute on an axis only another measure reads must not stop this one), and under
    ``not_here`` what keeps the explorer from computing it (:func:`explorer_not_here`; the key
    is absent when nothing does)."""
    reads = _reads(family, at)
    out = {a: (v if a in reads else _axis_json(a, AXES[a].default))
           for a, v in explorer_profile(conv).items()}
    missing = explorer_not_here(conv, family, at, computes)
    if missing:
        out["not_here"] = missing
    return out


def explorer_uses(family: str, at: bool) -> list[str]:
    """The explorer axes one explorer measure reads (its family's, from the records): entries
    whose profiles agree on them for every measure share a row of the explorer's table. The
    ideal is among them: judged, retrieved and judged_to_list are one ideal on the explorer's
    list, k_slots is another."""
    reads = _reads(family, at)
    return [a for a in EXPLORER_AXES if a in reads]


def explorer_data(entries, colours=None, queries=None) -> dict[str, Any]:
    """What the explorer embeds: per entry, per explorer measure, its profile with what keeps
    the explorer from computing it (:func:`explorer_measure_profile`; None when the entry does
    not compute the measure); the default list; the measures' ids, the axes each
    reads and its formula (from the family records); the input's queries for the picker
    (``conformance.report.picker``; none: no picker)."""
    colours = colours or _value_colours(entries)
    out = []
    for e in entries:
        measures: dict[str, Any] = {}
        for mid, family, at in EXPLORER_MEASURES:
            m = Measure(family, REPRESENTATIVE_K if at else None)
            if not e.supports(m):
                measures[mid] = None
                continue
            measures[mid] = explorer_measure_profile(m.conventions(e.profile(m)), family, at)
        out.append({"entry": e.name, "library": e.library, "measures": measures})
    return {
        "entries": out,
        "measures": [mid for mid, _, _ in EXPLORER_MEASURES],
        "uses": {mid: explorer_uses(family, at) for mid, family, at in EXPLORER_MEASURES},
        "formulas": {mid: FAMILIES[family].formula for mid, family, _ in EXPLORER_MEASURES},
        "axes": list(EXPLORER_AXES),
        "default_list": list(DEFAULT_LIST),
        "colours": {a: colours.get(a, {}) for a in EXPLORER_AXES},
        "meanings": {a: AXES[a].meaning for a in EXPLORER_AXES},
        "idle": EXPLORER_IDLE,
        "queries": list(queries or []),
    }


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------




def _template_source(name: str) -> str:
    return resources.files("conformance.report").joinpath("templates", name).read_text("utf-8")


def _static(name: str) -> str:
    text = resources.files("conformance.report").joinpath("static", name).read_text("utf-8")
    if re.search(r"</(script|style)", text, re.IGNORECASE):
        raise ValueError(f"static/{name} holds a closing tag that would end its inline element")
    return text


def _script_json(data: Any) -> str:
    """JSON for a <script type="application/json"> element: '<' escaped so no text in the data
    can close the element."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _breakable(text: str) -> Markup:
    """Escaped text with a line-break opportunity after each underscore (long axis names and
    values wrap there instead of widening their column)."""
    return Markup(str(escape(text)).replace("_", "_<wbr>"))


def _jnum(v: float | None) -> float | None:
    if v is None:
        return None
    v = float(v)
    return None if math.isnan(v) or math.isinf(v) else v


def _fmt(v: Any) -> str:
    if v is None:
        return "error"
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, (int, float)):
        return f"{float(v):.4f}"
    return str(v)


def _full(v: Any) -> str:
    if v is None:
        return "error"
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, (int, float)):
        return repr(float(v))
    return str(v)

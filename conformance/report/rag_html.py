"""The single-file HTML report of ``conformance rag``.

``render(result)`` returns the page for a ``conformance.rag.RagResult`` and ``write(result,
path)`` writes it. It reads only the result's JSON data (``conformance.rag.report_data``) and
computes nothing new. Like the run report it holds its styles, scripts and data inline, makes
no network request, and the same result gives the same bytes; it shares the run report's
stylesheet, top bar, section layout and footer.

Sections:

- Summary: the gold file, the variants, the profile, the judge(s), the bootstrap, warnings.
- Variants: each metric's mean per variant with its 95% bootstrap interval and count; beside a
  retrieval mean, the range of means across the library entries' conventions (the entries at
  each end in the cell's title, and in the Conventions section).
- Comparisons: every pair of variants, per metric, the paired difference with its interval,
  drawn as an interval plot around 0 (green: above 0, red: below, grey: includes 0).
- Slices: the variant table of each slice of ``--by``, one at a time (a selector).
- Diagnoses: per variant the count of each diagnosis as a stacked bar (legend beside), and one
  row per (variant, query) with its diagnosis, flags, detail, metrics and answer, filterable by
  variant, diagnosis, slice and text.
- Conventions: per variant and retrieval metric, every entry's mean, the ends and the entries
  at each, the entries whose conventions refuse the input.
- Correlation (with ``--correlate``): the verdict sentence, the ranked candidates as interval
  plots of the chosen coefficient, all three coefficients in a table, and each bucket's and
  slice's sentence and leaders.
- Answer length: per variant, the mean faithfulness of its answers in each length bin with the
  bin's count (``conformance.rag.length``), as a table and as a line plot over the bins, and
  Spearman's correlation of length with faithfulness.
- Judges: each judge's settings, and their agreement with ``--compare-judge``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from conformance.rag import report_data
from conformance.rag.diagnosis import DIAGNOSES, MEANINGS
from conformance.report.html import _render_page, _script_json, _static, _write_text

# One colour per diagnosis, the same in the bars, the legend and the table.
DIAGNOSIS_COLOURS = {
    "missing": "#9aa5b1", "not_retrieved": "#d64545", "ranked_low": "#f0a202", "no_answer": "#7c5cbf",
    "unsupported": "#c2185b", "off_topic": "#5c8ed6", "incorrect": "#8d6e63", "ok": "#2f8f5b",
    "abstained": "#b08900", "answered_unanswerable": "#6b2d2d", "error": "#333333",
}
TOP_PLOTTED = 20  # candidates drawn in the correlation plot (all are in its table)
PAGE_ROWS = 100  # per-query rows drawn at a time (all are in the page's data)
PLOT_WIDTH = 260
# The answer-length plot: one line per variant, one column per length bin, faithfulness 0..1 up.
LENGTH_PLOT = {"w": 420, "h": 180, "left": 46, "right": 12, "top": 10, "bottom": 30}
VARIANT_COLOURS = ("#2563eb", "#d97706", "#059669", "#db2777", "#7c3aed", "#0891b2", "#65a30d", "#dc2626")


def write(result, path) -> None:
    _write_text(render(result), Path(path))


def render(result) -> str:
    doc = report_data.to_dict(result)
    ctx = context(doc)
    ctx["rag_css"], ctx["rag_js"] = _static("rag.css"), _static("rag.js")
    return _render_page("rag.html.j2", ctx)


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.{digits}f}"


def _signed(v: Any) -> str:
    return "-" if v is None else f"{v:+.3f}"


def _interval_svg(low, high, estimate, lo_axis: float, hi_axis: float, width: int = 140) -> dict:
    """Positions (in px) of an interval and its estimate on an axis [lo_axis, hi_axis], and of 0."""
    span = (hi_axis - lo_axis) or 1.0

    def x(v):
        return round((min(max(v, lo_axis), hi_axis) - lo_axis) / span * (width - 8) + 4, 1)

    out = {"w": width, "zero": x(0.0) if lo_axis <= 0 <= hi_axis else None}
    if low is None or estimate is None:
        return out
    out.update(x1=x(low), x2=x(high), xe=x(estimate),
               cls="up" if low > 0 else ("down" if high < 0 else "flat"))
    return out


def context(doc: dict) -> dict[str, Any]:
    variants = [v["name"] for v in doc["variants"]]
    metrics = doc["metrics"]
    spreads = doc["spreads"]

    def table_rows(label: str) -> list[dict]:
        t = doc["table"][label]["variants"]
        rows = []
        for m in metrics:
            cells = []
            for v in variants:
                c = t[v][m["name"]]
                sp = spreads.get(v, {}).get(m["name"]) if label == "all" else None
                spread_text = None
                title = None
                if sp is not None and sp["low"] is not None and round(sp["low"], 3) != round(sp["high"], 3):
                    spread_text = f"{_fmt(sp['low'])}..{_fmt(sp['high'])}"
                    title = (f"lowest {_fmt(sp['low'], 4)}: {', '.join(sp['low_entries'])}; highest "
                             f"{_fmt(sp['high'], 4)}: {', '.join(sp['high_entries'])}")
                cells.append({"variant": v, "estimate": c["estimate"], "text": _fmt(c["estimate"]),
                              "ci": f"[{_fmt(c['low'])}, {_fmt(c['high'])}]" if c["low"] is not None else "",
                              "n": c["n"], "spread": spread_text, "title": title})
            rows.append({"metric": m["name"], "kind": m["kind"], "cells": cells})
        return rows

    comparisons = []
    for comp in doc["comparisons"]:
        values = [x for m in comp["metrics"].values() for x in (m["low"], m["high"]) if x is not None]
        bound = max([abs(x) for x in values] + [0.05])
        rows = []
        for m in metrics:
            iv = comp["metrics"][m["name"]]
            rows.append({"metric": m["name"], "text": _signed(iv["estimate"]),
                         "ci": (f"[{_signed(iv['low'])}, {_signed(iv['high'])}] n={iv['n']}"
                                + ("*" if iv.get("starred") else "")) if iv["low"] is not None else "",
                         "estimate": iv["estimate"], "p": iv.get("p_above_zero"), "n": iv["n"],
                         "svg": _interval_svg(iv["low"], iv["high"], iv["estimate"], -bound, bound)})
        comparisons.append({"a": comp["a"], "b": comp["b"], "rows": rows, "bound": _fmt(bound, 2)})

    counts = {v: {d: 0 for d in DIAGNOSES} for v in variants}
    for r in doc["per_query"]:
        counts[r["variant"]][r["diagnosis"]] += 1
    n_queries = doc["gold"]["queries"]
    bars = []
    for v in variants:
        x = 0.0
        parts = []
        for d in DIAGNOSES:
            if counts[v][d]:
                w = counts[v][d] / max(n_queries, 1) * 100
                parts.append({"d": d, "n": counts[v][d], "x": round(x, 3), "w": round(w, 3),
                              "colour": DIAGNOSIS_COLOURS[d]})
                x += w
        bars.append({"variant": v, "parts": parts})
    per_query = []
    for r in doc["per_query"]:
        gen = r["generation"]
        per_query.append({**r, "colour": DIAGNOSIS_COLOURS[r["diagnosis"]],
                          "gen_text": {k: _fmt(v, 2) for k, v in gen.items()},
                          "key_metrics": {k: _fmt(r["metrics"].get(k), 2) for k in _key_metrics(doc)}})

    spread_rows = []
    for v in variants:
        for m in metrics:
            sp = spreads.get(v, {}).get(m["name"])
            if sp is None:
                continue
            spread_rows.append({"variant": v, "metric": m["name"], "low": _fmt(sp["low"], 4),
                                "high": _fmt(sp["high"], 4), "low_entries": sp["low_entries"],
                                "high_entries": sp["high_entries"],
                                "differs": sp["low"] is not None and round(sp["low"], 12) != round(sp["high"], 12),
                                "entries": [{"name": e, "value": _fmt(lo, 4) if lo == hi else f"{_fmt(lo, 4)}..{_fmt(hi, 4)}"}
                                            for e, (lo, hi) in sp["entries"].items()],
                                "refused": sp["refused"], "borrowed": sp["borrowed"]})

    corr = doc["correlation"]
    correlation = None
    if corr is not None:
        names = corr["candidate_names"]
        cand_info = {i: c for i, c in enumerate(doc["candidates"])}

        def ranking(r: dict, limit: int | None = None) -> dict:
            rank_by = corr["rank_by"]
            rows = []
            for row in r["rows"][:limit]:
                c = row[rank_by]
                rows.append({"name": names[row["candidate"]], "n": row["n"], "ranked": row["ranked"],
                             "members": cand_info[row["candidate"]]["conventions"],
                             "same_as": cand_info[row["candidate"]]["same_as"],
                             "axes_label": cand_info[row["candidate"]]["axes_label"],
                             "coef": {k: {"text": _fmt(row[k]["estimate"]),
                                          "ci": f"[{_fmt(row[k]['low'], 2)}, {_fmt(row[k]['high'], 2)}]"
                                          if row[k]["low"] is not None else ""}
                                      for k in ("spearman", "pearson", "kendall")},
                             "estimate": c["estimate"],
                             "svg": _interval_svg(c["low"], c["high"], c["estimate"], -1.0, 1.0, PLOT_WIDTH)})
            return {"subset": r["subset"], "sentence": r["sentence"], "rows": rows}

        correlation = {
            "quality": corr["quality"], "rank_by": corr["rank_by"], "resamples": corr["resamples"],
            "observations": corr["observations"], "clusters": corr["clusters"],
            "overall": ranking(corr["overall"]),
            "plotted": ranking(corr["overall"], TOP_PLOTTED)["rows"],
            "subsets": [ranking(r, 5) for r in corr["buckets"] + corr["slices"]],
            "plot_width": PLOT_WIDTH,
        }
    slices = [label for label in doc["table"] if label != "all"]
    return {
        "doc": doc,
        "variants": variants,
        "table": table_rows("all"),
        "slices": [{"label": s, "queries": doc["table"][s]["queries"], "rows": table_rows(s)} for s in slices],
        "by": doc["settings"]["by"],
        "comparisons": comparisons,
        "bars": bars,
        "diagnoses": [{"name": d, "meaning": MEANINGS[d], "colour": DIAGNOSIS_COLOURS[d]} for d in DIAGNOSES],
        "per_query": per_query,
        "key_metrics": _key_metrics(doc),
        "spreads": spread_rows,
        "correlation": correlation,
        "settings": doc["settings"],
        "judge_agreement": doc["judge_agreement"],
        "answer_length": _length_plot(doc["answer_length"]) if doc["answer_length"] else None,
        "json_data": _script_json(_per_query_data(per_query, variants, _key_metrics(doc))),
        "page_rows": PAGE_ROWS,
    }


def _per_query_data(per_query: list[dict], variants: list[str], key_metrics: list[str]) -> dict:
    """The per-query rows as compact arrays for rag.js, which draws one page of the rows the
    filters match: queries once (id, text, slice), then per (variant, query) row the indexes of
    the variant, the query and the diagnosis, the other flags, the one-line reason (with the
    judge's errors), the key retrieval metrics, the generation metrics and the answer."""
    queries: dict[str, int] = {}
    qrows = []
    rows = []
    diag_index = {d: i for i, d in enumerate(DIAGNOSES)}
    var_index = {v: i for i, v in enumerate(variants)}
    for r in per_query:
        qi = queries.get(r["qid"])
        if qi is None:
            qi = queries[r["qid"]] = len(qrows)
            qrows.append([r["qid"], r.get("query") or "", r.get("slice") or ""])
        why = r["detail"] + "".join(f"\njudge: {e}" for e in (r.get("support_error"), r.get("relevance_error")) if e)
        rows.append([var_index[r["variant"]], qi, diag_index[r["diagnosis"]], " ".join(r["flags"][1:]), why,
                     [r["key_metrics"][k] for k in key_metrics], list(r["gen_text"].values()), r.get("answer") or ""])
    return {"rows": rows, "queries": qrows, "variants": variants, "page": PAGE_ROWS,
            "diagnoses": [[d, DIAGNOSIS_COLOURS[d]] for d in DIAGNOSES], "has_slices": any(q[2] for q in qrows)}


def _length_plot(table: dict) -> dict:
    """The answer-length table (``conformance.rag.length``) as rows of text cells and as the
    positions (px) of each variant's points on the plot: x by bin, y by mean faithfulness (0 at
    the bottom, 1 at the top); a bin without answers has no point and breaks the line."""
    g = LENGTH_PLOT
    bins = table["bins"]
    inner_w, inner_h = g["w"] - g["left"] - g["right"], g["h"] - g["top"] - g["bottom"]
    xs = [round(g["left"] + (i + 0.5) * inner_w / len(bins), 1) for i in range(len(bins))]

    def y(v: float) -> float:
        return round(g["top"] + (1.0 - v) * inner_h, 1)

    rows, lines = [], []
    n_variants = len(table["variants"])
    for i, (name, row) in enumerate(table["variants"].items()):
        # variants side by side within a bin, so that equal means do not hide one another
        dodge = (i - (n_variants - 1) / 2) * min(6.0, inner_w / len(bins) / max(n_variants, 1) / 2)
        colour = VARIANT_COLOURS[i % len(VARIANT_COLOURS)]
        rows.append({"variant": name, "colour": colour, "n": row["n"],
                     "spearman": _signed(row["spearman"]),
                     "cells": [{"text": _fmt(b["faithfulness"]), "n": b["n"]} for b in row["bins"]]})
        points, segments, run = [], [], []
        for x0, label, b in zip(xs, bins, row["bins"]):
            x = round(x0 + dodge, 1)
            if b["faithfulness"] is None:
                if run:
                    segments.append(run)
                run = []
                continue
            pt = {"x": x, "y": y(b["faithfulness"]), "bin": label, "n": b["n"], "text": _fmt(b["faithfulness"])}
            points.append(pt)
            run.append(f"{pt['x']},{pt['y']}")
        if run:
            segments.append(run)
        lines.append({"variant": name, "colour": colour, "points": points,
                      "segments": [" ".join(r) for r in segments if len(r) > 1]})
    return {"metric": table["metric"], "bins": bins, "rows": rows, "lines": lines,
            "ticks": [{"x": x, "label": label} for x, label in zip(xs, bins)],
            "grid": [{"y": y(v), "label": f"{v:.1f}"} for v in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)],
            **g, "x_end": g["w"] - g["right"], "y_end": g["h"] - g["bottom"]}


def _key_metrics(doc: dict) -> list[str]:
    k = max(doc["settings"]["ks"])
    return [f"hit_rate@{k}", f"nDCG@{k}", "MRR"]

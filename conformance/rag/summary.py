"""The plain-text summary ``conformance rag`` prints: the variant table, the slices, the paired
comparisons, the diagnoses, the judges' agreement and the correlation study.

Values have three decimals. A retrieval value is followed by ``lo..hi`` when its mean differs
across the library entries' conventions (the spread; the JSON and the report name the entries at
each end). A comparison ``+0.120 [+0.050, +0.190]`` is the first variant minus the second with
its 95% paired bootstrap interval and its n, marked ``*`` when the interval excludes 0, n is at
least ``bootstrap.MIN_STARRED_N`` and the difference survives Holm's correction over every
cell of the comparison table (``conformance.rag.bootstrap``). Diagnoses list at
most ``MAX_LISTED`` failing queries; the JSON and the report hold every one.
"""

from __future__ import annotations

from conformance.rag import diagnosis as diag
from conformance.rag.bootstrap import MIN_STARRED_N

MAX_LISTED = 25
TOP_CANDIDATES = 8
NAME_WIDTH = 20


def _f(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def _signed(v) -> str:
    return "-" if v is None else f"{v:+.3f}"


def _cell(cell, with_spread: bool) -> str:
    iv = cell.interval
    text = _f(iv.estimate)
    sp = cell.spread
    if with_spread and sp is not None and sp.low == sp.low and round(sp.low, 3) != round(sp.high, 3):
        text += f" {sp.low:.3f}..{sp.high:.3f}"
    return text


def _count(cell, rule: str) -> str:
    """Beside a generation mean: how the queries without output entered it."""
    if not cell.missing:
        return ""
    if rule == "skip":
        return f" over {cell.of - cell.missing} of {cell.of} queries"
    return f" ({cell.missing} missing as 0)"


def _table(result, label: str, with_spread: bool) -> list[str]:
    cells = result.table[label]
    names = [v.name for v in result.variants]
    generation = set(result.metric_names[len(result.measures):])
    counts = [_count(cells[v][m], result.missing) for v in names for m in generation]
    width = max([14] + [len(n) + 2 for n in names] + [8 + len(c) for c in counts]) + (12 if with_spread else 0)
    lines = ["metric".ljust(NAME_WIDTH) + "".join(n.ljust(width) for n in names) + "n"]
    for metric in result.metric_names:
        row = [cells[v][metric] for v in names]
        ns = sorted({c.interval.n for c in row})
        texts = [_cell(c, with_spread) + (_count(c, result.missing) if metric in generation else "") for c in row]
        lines.append(metric.ljust(NAME_WIDTH) + "".join(t.ljust(width) for t in texts)
                     + "/".join(str(n) for n in ns))
    return lines


def render(result) -> str:
    out: list[str] = []
    names = [v.name for v in result.variants]
    judge = result.judge["name"] + (f" (compared with {result.compare_judge['name']})" if result.compare_judge else "")
    out.append(f"conformance rag: {len(result.qids)} gold queries ({result.gold.source}), "
               f"{len(names)} variant(s), profile {result.profile_name}, judge {judge}")
    out.append("")
    out.append("variant table (mean; lo..hi: the mean under the library entries' conventions where it differs)")
    out += _table(result, "all", True)
    for label in result.table:
        if label == "all":
            continue
        out.append("")
        out.append(f"{result.by} = {label} ({int(result.slices[label].sum())} queries)")
        out += _table(result, label, False)
    if result.comparisons:
        out.append("")
        cells = [iv for d in result.comparisons.values() for iv in d.values()]
        raw = sum(1 for iv in cells if iv.excludes_zero())
        starred = sum(1 for iv in cells if iv.starred())
        out.append("paired bootstrap, 95% interval of each difference (t with the bootstrap's standard error) and its n; "
                   f"* : excludes 0, n >= {MIN_STARRED_N}, and survives Holm's correction over the "
                   f"{len(cells)} cells (family-wise error 5%): {starred} starred, {raw} exclude 0 uncorrected")
        pairs = list(result.comparisons)
        width = 40
        out.append("metric".ljust(NAME_WIDTH) + "".join(f"{a} - {b}".ljust(width) for a, b in pairs))
        for metric in result.metric_names:
            cells = []
            for p in pairs:
                iv = result.comparisons[p][metric]
                text = _signed(iv.estimate)
                if iv.low is not None:
                    text += f" [{_signed(iv.low)}, {_signed(iv.high)}] n={iv.n}" + ("*" if iv.starred() else "")
                cells.append(text.ljust(width))
            out.append(metric.ljust(NAME_WIDTH) + "".join(cells))
    out.append("")
    out.append(f"diagnoses (top {max(result.ks)}; the first stage that failed)")
    width = max([12] + [len(n) + 2 for n in names])
    counts = {v.name: v.diagnoses.counts() for v in result.variants}
    shown = [d for d in diag.DIAGNOSES if any(counts[n][d] for n in names)]
    label = max([16] + [len(d) + 2 for d in shown])  # answered_unanswerable ran into its count
    out.append("diagnosis".ljust(label) + "".join(n.ljust(width) for n in names))
    for d in shown:
        out.append(d.ljust(label) + "".join(str(counts[n][d]).ljust(width) for n in names))
    failing = [(v, qi) for v in result.variants for qi in range(len(result.qids)) if v.diagnoses.diagnosis[qi] != "ok"]
    for v, qi in failing[:MAX_LISTED]:
        out.append(f"  {v.name} {result.qids[qi]}: {v.diagnoses.diagnosis[qi]}: "
                   f"{diag.detail(v.diagnoses, v.generation, qi)}")
    if len(failing) > MAX_LISTED:
        out.append(f"  ... {len(failing) - MAX_LISTED} more failing (variant, query) pairs in --json and --html")
    if result.judge_agreement is not None:
        a = result.judge_agreement
        out.append("")
        out.append(f"judges: {result.judge['name']} and {result.compare_judge['name']}")
        kappa = "undefined" if a["kappa"] is None else f"{a['kappa']:.3f}"
        agree = "-" if a["verdict_agreement"] is None else f"{a['verdict_agreement']:.1%}"
        out.append(f"  claim verdicts ({a['categories']}): {a['claims']} claims, agreement {agree}, "
                   f"Cohen's kappa {kappa}")
        out.append(f"  answer relevance: {a['relevance_pairs']} answers, Pearson {_f(a['relevance_pearson'])}, "
                   f"Spearman {_f(a['relevance_spearman'])}, mean difference {_signed(a['relevance_mean_difference'])}")
    if result.length_table is not None:
        from conformance.rag.length import render as render_length

        out.append("")
        out += render_length(result.length_table)
    if result.study is not None:
        out += _study(result.study)
    if result.notes:
        out.append("")
        out += [f"note: {n}" for n in result.notes]
    return "\n".join(out) + "\n"


def _study(s) -> list[str]:
    out = ["", f"which retrieval metric tracks answer quality ({s.quality}; {s.observations} answers over "
               f"{s.clusters} queries; {s.resamples:,} bootstrap resamples of queries; ranked by {s.rank_by})"]
    out.append("  " + "candidate".ljust(58) + "spearman            pearson  kendall  n")
    for row in s.overall.rows[:TOP_CANDIDATES]:
        c = s.candidates[row.candidate]
        sp = _f(row.estimate["spearman"])
        if row.low["spearman"] is not None:
            sp += f" [{row.low['spearman']:.2f}, {row.high['spearman']:.2f}]"
        out.append("  " + c.name[:56].ljust(58) + sp.ljust(20) + _f(row.estimate["pearson"]).ljust(9)
                   + _f(row.estimate["kendall"]).ljust(9) + str(row.n))
    if len(s.overall.rows) > TOP_CANDIDATES:
        out.append(f"  ... {len(s.overall.rows) - TOP_CANDIDATES} more candidates in --json and --html")
    out.append(s.overall.sentence)
    for r in s.buckets + s.slices:
        out.append(r.sentence)
    return out

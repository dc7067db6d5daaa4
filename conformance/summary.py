"""The terminal summary of ``conformance run``: unexplained findings first, then, per measure,
which entries agree and which conventions separate the others. :func:`explanations` is the
part ``run --details`` prints after the answer (``conformance.run_text``): every explained pair
of classes, grouped by the axes that explain them, with a few example cases."""

from __future__ import annotations

from collections import defaultdict

from conformance.runner import RunResult


def _fmt(v) -> str:
    return "error" if v is None else f"{v:.4f}"


def render(result: RunResult, max_examples: int = 3) -> str:
    lines: list[str] = []
    out = lines.append
    avail = [e for e in result.entries if result.available[e.name]]
    missing = [e.name for e in result.entries if not result.available[e.name]]
    out(f"entries: {len(avail)} available"
        + (f", {len(missing)} unavailable ({', '.join(missing)})" if missing else ""))
    for e in avail:
        out(f"  {e.name:<24} {result.versions[e.name] or '?'}")
    for name in missing:
        status = result.status.get(name)
        out(f"  {name:<24} {status.describe() if status is not None else 'unavailable'}")

    unexplained = [(c, u) for c in result.comparisons for u in c.unexplained]
    if unexplained:
        out("")
        out(f"UNEXPLAINED ({len(unexplained)}):")
        for c, u in unexplained:
            who = u.get("entry") or " vs ".join(u.get("between", []))
            out(f"  ! {c.case} / {c.metric}: {who}: {u['reason']}")
            if "entry" in u:
                out(f"      library:   {u['library']}")
                out(f"      reference: {u['reference']}")
            else:
                vals = ", ".join(f"{n}={_fmt(c.values.get(n))}" for n in u["between"])
                out(f"      values: {vals}; profiles differ on: {', '.join(u['differing_axes'])}")

    out("")
    lines += explanations(result, max_examples).split("\n")
    s = result.summary
    out("")
    out(f"{s['comparisons']} case x measure comparisons; {s['disagreements']} disagreeing "
        f"pairs examined, {s['explained']} of them explained by conventions; "
        f"{s['unexplained']} unexplained findings")
    return "\n".join(lines)


def explanations(result: RunResult, max_examples: int = 3) -> str:
    """Per measure, the entry pairs that disagree, grouped by the axes that explain them."""
    lines: list[str] = []
    out = lines.append
    by_metric: dict[str, list] = defaultdict(list)
    for c in result.comparisons:
        by_metric[c.metric].append(c)
    for metric in sorted(by_metric):
        comps = by_metric[metric]
        agree_all = sum(1 for c in comps if len(c.classes) == 1)
        out(f"{metric}: every entry that ran agrees on {agree_all} of {len(comps)} "
            f"{'case' if len(comps) == 1 else 'cases'}")
        groups: dict[tuple, list] = defaultdict(list)
        for c in comps:
            for e in c.explanations:
                if e.axes is not None:
                    groups[(e.between, tuple(e.axes))].append((c, e))
        for (between, axes), items in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            switched = items[0][1].switched
            detail = "; ".join(f"{a}: {switched[a][0]} -> {switched[a][1]}" for a in axes)
            out(f"  {between[0]} vs {between[1]}: {len(items)} case(s), explained by {detail}")
            for c, _ in items[:max_examples]:
                out(f"      {c.case}: {between[0]}={_fmt(c.values.get(between[0]))} "
                    f"{between[1]}={_fmt(c.values.get(between[1]))}")
    return "\n".join(lines)

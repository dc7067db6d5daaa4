"""Answer length against faithfulness: does a longer answer say more that its context does not?

Per variant, over the answered queries whose faithfulness is defined: the answers are put in
bins by their number of content tokens (``conformance.rag.text.tokens``), :data:`BINS`
(1-10, 11-20, 21-40, 41-80, 81 and more), and each bin gets its count and mean faithfulness
(graded with ``--graded``); beside them, Spearman's correlation of length with faithfulness over
the same answers (``conformance.rag.correlation.spearman``; None with fewer than three answers
or a constant side).
"""

from __future__ import annotations

import numpy as np

from conformance.rag.correlation import spearman

BINS = ((1, 10), (11, 20), (21, 40), (41, 80), (81, None))


def bin_label(lo: int, hi: int | None) -> str:
    return f"{lo}+" if hi is None else f"{lo}-{hi}"


def length_table(variants, graded: bool) -> dict:
    """{"bins": labels, "variants": {name: {"bins": [{"n", "faithfulness"}], "spearman", "n"}}}."""
    metric = "faithfulness_graded" if graded else "faithfulness"
    out = {"metric": metric, "bins": [bin_label(lo, hi) for lo, hi in BINS], "variants": {}}
    for v in variants:
        g = v.generation
        f = g.metric(metric)
        keep = g.answered & ~np.isnan(f)
        length, faith = g.answer_tokens[keep].astype(np.float64), f[keep]
        rows = []
        for lo, hi in BINS:
            m = (length >= lo) & (length <= (np.inf if hi is None else hi))
            rows.append({"n": int(m.sum()), "faithfulness": float(faith[m].mean()) if m.any() else None})
        rho = spearman(length, faith) if length.size >= 3 else None
        out["variants"][v.name] = {"bins": rows, "spearman": rho, "n": int(keep.sum())}
    return out


def render(table: dict) -> list[str]:
    lines = [f"answer length (content tokens) against {table['metric']}: mean per bin (n)"]
    lines.append("variant".ljust(20) + "".join(b.ljust(14) for b in table["bins"]) + "spearman")
    for name, row in table["variants"].items():
        cells = ["-" if b["faithfulness"] is None else f"{b['faithfulness']:.3f} ({b['n']})" for b in row["bins"]]
        rho = "-" if row["spearman"] is None else f"{row['spearman']:+.3f}"
        lines.append(name[:19].ljust(20) + "".join(c.ljust(14) for c in cells) + f"{rho} over {row['n']}")
    return lines

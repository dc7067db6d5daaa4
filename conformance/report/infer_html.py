"""The HTML page of ``conformance infer``: the answer, the consistent convention sets, the
library entries that share them, and every case called with the candidates left after it, in
check-paper's page style (``report.css``). It reads an ``Inferred`` and computes nothing new."""

from __future__ import annotations

from typing import Any


def render_infer(result) -> str:
    """The page of ``result`` (a ``conformance.infer.Inferred``), one self-contained document."""
    from conformance.paper.cover import table_columns
    from conformance.report.html import _render_page

    shown, anys, rows = table_columns(result.table(), result.space.axes)
    ctx: dict[str, Any] = {
        "function": result.function, "measure": result.measure, "calling": result.space.signature,
        "calls": result.calls, "stopped": result.stopped, "candidates": result.space.size,
        "consistent": int(result.consistent.size), "axes": shown, "any_axes": anys, "rows": rows,
        "hidden": result.space.hidden,
        # an entry whose profile holds a value the space does not sweep is not compared
        "entries": [(name, v if v in ("yes", "no") else f"not comparable: outside the space ({v})")
                    for name, v in sorted(result.entries.items())],
        "steps": [{"n": i, "case": s.case.number, "kind": s.case.kind, "size": s.case.size,
                   "observed": s.observed.shown(), "remaining": s.remaining, "purpose": s.purpose,
                   "text": s.case.text()} for i, s in enumerate(result.steps, 1)],
        "finding": None if result.finding is None else {
            "observed": result.finding.observed.shown(), "text": result.finding.case.text()},
    }
    return _render_page("infer.html.j2", ctx)

"""The convention statement: one citation-ready sentence per measure saying which tool computed
it and every convention that changes its value on this input.

For a measure evaluated under conventions C (:class:`conformance.pipeline.Result`), each axis
the measure's family reads is varied alone: every other value the axis names (and the values
the paper sweep tries, and for ``relevance_threshold`` each label of the qrels) is put in C's
place and the measure evaluated again on the same joined input. An axis changes the value on
this input when some alternative gives another aggregate (compared exactly); the sentence names
those axes with C's value of each, in the words a verdict uses, and says how many read axes it
leaves out because no alternative changed the value. Alternatives that refuse the input (a
``raise`` value on input that has the condition) or that only say how the input is read (the
``duplicates`` rule: the run was read once) are not tried.

Ties: the number of queries whose value differs between the best and the worst order of their
tied documents (``ties=unspecified``'s range), with C's other axes. When it is not zero, the
sentence ends with it and :attr:`Statement.tie_warning` holds the warning ``eval`` prints.

Cost: one evaluation per alternative (about 40 for nDCG); made only when asked for. The tied
queries come from the evaluation's own tie check when it made one (``tied_queries``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from conformance.conventions import AXES, ConventionError, format_value
from conformance.measures import FAMILIES, Measure

READ_ONLY = ("duplicates",)  # said how the run was read; the read is not repeated


@dataclass
class Statement:
    measure: str
    tool: str
    changing: dict[str, str]  # axis -> the value in force (formatted), for axes that change it
    unchanged: list[str]  # axes the measure reads that no alternative changed here
    tied_queries: int
    scored: int
    phrases: list[str] = field(default_factory=list)

    @property
    def sentence(self) -> str:
        if self.phrases:
            said = ", ".join(self.phrases)
        else:
            said = "no convention changes its value on this input"
        left = (f" ({len(self.unchanged)} other {'convention' if len(self.unchanged) == 1 else 'conventions'} "
                f"it reads cannot change the value on this input and {'is' if len(self.unchanged) == 1 else 'are'} "
                "left out)") if self.unchanged else ""
        text = f"{self.measure} as computed by {self.tool}: {said}{left}"
        if self.tied_queries:
            text += (f"; {self.tied_queries} of {self.scored} queries have tied scores that change "
                     "the value")
        return text + "."

    @property
    def tie_warning(self) -> str | None:
        if not self.tied_queries:
            return None
        return (f"{self.measure}: {self.tied_queries} of {self.scored} queries have tied scores "
                f"whose order changes the value (ties={self.changing.get('ties', 'as in force')}); "
                "--set ties=unspecified shows each range")

    def to_dict(self) -> dict[str, Any]:
        return {"sentence": self.sentence, "tool": self.tool, "changing": dict(self.changing),
                "unchanged": list(self.unchanged), "tied_queries": self.tied_queries}


def _alternatives(axis: str, current: Any, qrels) -> list[Any]:
    spec = AXES[axis]
    values = [spec.stored.get(v, v) for v in spec.values]
    if isinstance(spec.swept, tuple):
        values += list(spec.swept)
    if axis == "relevance_threshold":
        labels = np.unique(np.asarray(qrels.label, dtype=np.float64))
        values += [float(v) for v in labels if v >= 1]
    out = []
    for v in values:
        if v in ("raise", "error") or v == current or v in out:
            continue
        out.append(v)
    return out


def _tool(profile_name: str) -> str:
    from conformance.profiles import entry_named

    e = entry_named(profile_name) if isinstance(profile_name, str) else None
    if e is None:
        return f"conformance's reference under the {profile_name} profile"
    version = e.version()
    return f"{e.name} ({e.distribution} {version})" if version else f"{e.name} ({e.distribution}, not installed)"


def statement(result, m: Measure, profile_name: str) -> Statement:
    """The statement of measure ``m`` of ``result`` (see the module docstring)."""
    from conformance.reference import evaluate

    prep = result.inputs.prep
    conv = result.conventions[m]
    base_lo, base_hi = result.mean(m)
    read = [a for a in FAMILIES[m.family].axes if a in AXES and a not in READ_ONLY
            and not (AXES[a].with_cutoff_only and m.cutoff is None)]
    changing: dict[str, str] = {}
    unchanged: list[str] = []
    for axis in read:
        current = getattr(conv, axis)
        changes = False
        for alt in _alternatives(axis, current, result.qrels):
            try:
                ev = evaluate(prep, None, [m], conv.replace(**{axis: alt}))
                lo, hi = ev.aggregate(m), ev.aggregate(m, upper=True)
            except ConventionError:
                continue
            if not (np.array_equal([lo, hi], [base_lo, base_hi], equal_nan=True)):
                changes = True
                break
        if changes:
            changing[axis] = format_value(current)
        else:
            unchanged.append(axis)
    own = result.evaluations[m]
    if own.tie_changed.get(m) is not None:  # the evaluation's own tie check decided it
        keep = own.counted[m]
        tied = int(np.count_nonzero(own.tie_changed[m][keep]))
    else:
        ranged = evaluate(prep, None, [m], conv.replace(ties="unspecified"))
        keep = ranged.counted[m]
        tied = _differ(ranged.per_query[m][keep], ranged.upper[m][keep])
    phrases = [AXES[a].phrase(getattr(conv, a)) for a in changing]
    return Statement(m.text, _tool(profile_name), changing, unchanged, tied, int(keep.sum()), phrases)


def statements(result, profile_name: str) -> list[Statement]:
    return [statement(result, m, profile_name) for m in result.measures]


def tied_queries(result) -> dict[Measure, int]:
    """Per measure, the counted queries whose value the order of their tied documents changes
    (the best and worst orders differ), with every other axis as evaluated.

    From the evaluation itself when it was made with ``tie_check`` (``reference.tiecheck``:
    one pass over the tie groups of the ranking already made); a measure the check cannot
    decide, or a result evaluated without it, is evaluated again under ``ties=unspecified``
    (one evaluation per distinct convention set)."""
    from conformance.pipeline import evaluate_inputs

    out: dict[Measure, int] = {}
    again = []
    for m in result.measures:
        ev = result.evaluations[m]
        keep = ev.counted[m]
        if result.ranged(m):
            out[m] = _differ(ev.per_query[m][keep], ev.upper[m][keep])
        elif ev.tie_changed.get(m) is not None:
            out[m] = int(np.count_nonzero(ev.tie_changed[m][keep]))
        else:
            again.append(m)
    if again:
        convs = {m: result.conventions[m].replace(ties="unspecified") for m in again}
        ranged = evaluate_inputs(result.inputs, again, convs)
        for m in again:
            ev = ranged.evaluations[m]
            keep = ev.counted[m]
            out[m] = _differ(ev.per_query[m][keep], ev.upper[m][keep])
    return {m: out[m] for m in result.measures}


def _differ(lo: np.ndarray, hi: np.ndarray) -> int:
    return int(np.sum(~((lo == hi) | (np.isnan(lo) & np.isnan(hi)))))

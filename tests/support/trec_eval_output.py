"""Reading trec_eval's printed output, and naming its measures in our vocabulary.

trec_eval prints one row per value: ``measure<TAB>qid-or-all<TAB>value``, the measure name padded
with spaces to 22 characters, doubles as ``%6.4f`` and counts (num_*) as ``%ld``. A value is kept
as the text trec_eval printed, so a comparison can be made to exactly the printed precision.

:func:`measure_for` maps a printed trec_eval name to a :class:`conformance.measures.Measure`, or
None for what is not a number the reference computes (``runid``, ``relstring``). The mapping
follows ``notes/trec_eval_semantics.md``:

- ``map`` -> AP, ``map_cut_k`` -> AP@k (denominator R, fixed by the profile), ``P_k`` -> P@k,
  ``recall_k`` -> R@k, ``recip_rank`` -> RR, ``Rprec`` -> Rprec, ``success_k`` -> Success@k,
  ``ndcg`` -> nDCG, ``ndcg_cut_k`` -> nDCG@k, ``num_q/num_ret/num_rel/num_rel_ret`` -> NumQ,
  NumRet, NumRel, NumRelRet.
- ``ndcg_<level>=<gain>,...`` (the printed name of ``-m ndcg.1=3,2=9``) -> nDCG with a custom gain
  map; unlisted levels keep gain = level in trec_eval and in our ``gain`` axis alike.
- Cutoffs are read from the printed name, which already holds trec_eval's integer cutoff
  (``-m ndcg_cut.23.4`` prints ``ndcg_cut_23``, because trec_eval reads cutoffs with ``atol``).
- Every other printed name is read by ``conformance.measures.parse_measure``, which knows
  trec_eval's spellings (``bpref``, ``gm_map``, ``iprec_at_recall_0.10``, ``Rprec_mult_0.20``,
  ``relative_P_5``, ``set_F``, ``rbp``, ``unj_5``, ...), except the two whose printed parameter
  list holds commas: ``11pt_avg_.25,.5,.75`` (the levels) and ``utility_2,-1,0,0`` (the
  coefficients), read here as the ``-m`` options that printed them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from conformance.measures import Measure, MeasureError, parse_measure

_CUTOFF_FAMILIES = {
    "P": "P",
    "recall": "R",
    "map_cut": "AP",
    "ndcg_cut": "nDCG",
    "success": "Success",
}
_PLAIN = {
    "map": Measure("AP"),
    "ndcg": Measure("nDCG"),
    "recip_rank": Measure("RR"),
    "Rprec": Measure("Rprec"),
    "num_q": Measure("NumQ"),
    "num_ret": Measure("NumRet"),
    "num_rel": Measure("NumRel"),
    "num_rel_ret": Measure("NumRelRet"),
}
_CUTOFF_RE = re.compile(r"(?P<name>P|recall|map_cut|ndcg_cut|success)_(?P<k>[1-9][0-9]*)")
# Pairs as trec_eval prints them after "ndcg_": integer level '=' a number, comma-separated.
_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_GAIN_PAIRS_RE = re.compile(rf"ndcg_((?:[+-]?[0-9]+={_NUMBER})(?:,[+-]?[0-9]+={_NUMBER})*)")

# The measures whose values trec_eval prints with %ld.
COUNT_MEASURES = frozenset({"num_q", "num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"})
# Printed rows that are not numbers: the run's name and the labels of the top ranks as text.
NOT_NUMBERS = frozenset({"runid", "relstring"})
# A printed name whose parameter list holds commas: the -m option that printed it.
_LISTED_PARAMS = re.compile(r"(?P<name>11pt_avg|utility)_(?P<params>[-+.,0-9]+)")


class TrecEvalOutputError(ValueError):
    """A line of a trec_eval output file that is not ``measure<TAB>qid<TAB>value``."""


@dataclass(frozen=True)
class Row:
    """One printed value: ``text`` exactly as printed, ``line`` its 1-based line number."""

    measure: str
    qid: str
    text: str
    line: int

    @property
    def value(self) -> float:
        return float(self.text)


def read_output(path: str | Path) -> dict[tuple[str, str], Row]:
    """All rows of one trec_eval output file, keyed by (measure name, qid or 'all').

    Raises TrecEvalOutputError naming the file and line for a malformed row or a (measure, qid)
    printed twice; the run id row (``runid all STANDARD``) is kept like any other row.
    """
    path = Path(path)
    rows: dict[tuple[str, str], Row] = {}
    for n, raw in enumerate(path.read_text().splitlines(), start=1):
        if not raw.strip():
            continue
        fields = raw.split("\t")
        if len(fields) != 3 or not fields[0].strip() or not fields[1].strip():
            raise TrecEvalOutputError(f"{path}:{n}: expected 'measure<TAB>qid<TAB>value', got {raw!r}")
        measure, qid, text = fields[0].strip(), fields[1].strip(), fields[2].strip()
        if (measure, qid) in rows:
            raise TrecEvalOutputError(f"{path}:{n}: {measure} for {qid} printed twice")
        rows[(measure, qid)] = Row(measure, qid, text, n)
    return rows


def measure_for(name: str) -> Measure | None:
    """Our Measure for a printed trec_eval measure name, or None if the reference lacks it."""
    if name in _PLAIN:
        return Measure(_PLAIN[name].family, text=name)
    m = _CUTOFF_RE.fullmatch(name)
    if m:
        return Measure(_CUTOFF_FAMILIES[m["name"]], int(m["k"]), text=name)
    m = _GAIN_PAIRS_RE.fullmatch(name)
    if m:
        gain = ",".join(pair.replace("=", ":") for pair in m[1].split(","))
        return Measure("nDCG", overrides=(("gain", gain),), text=name)
    if name.split("_")[0] in NOT_NUMBERS:  # relstring_20 too
        return None
    m = _LISTED_PARAMS.fullmatch(name)
    if m:
        return Measure(**{**vars_of(parse_measure(f"{m['name']}.{m['params']}")), "text": name})
    try:
        return Measure(**{**vars_of(parse_measure(name)), "text": name})
    except MeasureError:
        return None


def vars_of(m: Measure) -> dict:
    return {"family": m.family, "cutoff": m.cutoff, "overrides": m.overrides, "params": m.params}


def pytrec_eval_request(name: str) -> str | None:
    """The measure string pytrec_eval needs for a printed trec_eval name, or None if it has none.

    ``P_5`` -> ``P.5``; plain names pass through. The custom-gain ``ndcg_1=3,...`` has no
    pytrec_eval spelling (its measure parser cannot take ``name=value`` parameters).
    """
    if name in _PLAIN:
        return name
    m = _CUTOFF_RE.fullmatch(name)
    if m:
        return f"{m['name']}.{m['k']}"
    return None

"""ir_measures: its default pipeline, ``ir_measures.iter_calc(measures, qrels, run)``.

Translation (``conformance.libs._nested``): qrels ``{qid: {docid: int label}}`` (a fractional
label is passed as the float it is) and run ``{qid: {docid: float score}}``, the dict-of-dict
form every provider accepts; measures are ir_measures objects read with
``ir_measures.parse_measure``. Per-query values are the ``Metric`` rows ``iter_calc`` yields;
the mean is ``ir_measures.calc_aggregate`` over the same input (the library's own aggregate).

==============================  ======================================  ==================
measure                         ir_measures measure                     provider (0.4.3)
==============================  ======================================  ==================
nDCG, nDCG@k                    ``nDCG``, ``nDCG@k``                    pytrec_eval
nDCG with a custom gain map     ``nDCG(gains={0:0,1:1,2:3})@k``         pytrec_eval
nDCG(gain=exponential)@k        ``nDCG(dcg='exp-log2')@k``              gdeval (perl)
nDCG(gain=exponential)          ``nDCG(dcg='exp-log2')``                ranx
AP, AP@k, RR, P@k, R@k          ``AP``, ``AP@k``, ``RR``, ``P@k``,      pytrec_eval
Success@k, Rprec                ``R@k``, ``Success@k``, ``Rprec``
RR@k                            ``RR@k``                                msmarco
NumQ, NumRet, NumRel            ``NumQ``, ``NumRet``, ``NumRel``        pytrec_eval
NumRelRet                       ``NumRet(rel=1)``                       pytrec_eval
Bpref, infAP, IPrec@x           ``Bpref``, ``infAP``, ``IPrec@x``       pytrec_eval
P, R, F, SetAP, RelP (no @k)    ``SetP``, ``SetR``, ``SetF(beta=b)``,   pytrec_eval
                                ``SetAP``, ``SetRelP``
Judged, Judged@k                ``Judged``, ``Judged@k``                judged
ERR@k                           ``ERR@k``                               gdeval (perl)
RBP(p)                          ``RBP(p=p,rel=L)`` (rel required)       cwl_eval
SDCG, NERR8, NERR9, BPM (@k)    ``SDCG(min_rel=,max_rel=)@k``, ...      cwl_eval
NERR10, NERR11, INST, INSQ      ``INST(T=,min_rel=,max_rel=)``, ...     cwl_eval
==============================  ======================================  ==================

A relevance threshold L is ``rel=L`` (P, AP, RR, Success, Rprec, NumRet(rel=L)); ir_measures
offers no ``rel`` for R, nDCG or NumRel (only ``NumRel(rel=1)`` has a provider), and no DCG, F1,
R or Success without a cutoff. The provider of each measure is the first in
``ir_measures.DefaultPipeline.providers`` that is available and supports it (the pipeline's own
rule, ``FallbackProvider._evaluator``); the adapter asks the pipeline, records the answer in
``LibraryValues.provider``, and the profile is that provider's. ``DECLARED_PROVIDERS`` is the
routing of ir_measures 0.4.3 with perl installed, used when ir_measures is not importable;
the tests check it against the live routing.

Facts behind the profiles (ir_measures 0.4.3; each confirmed live by
``tests/libs/test_ir_measures.py``):

- every provider: ``Evaluator.iter_calc`` yields, after the provider's rows, the measure's
  DEFAULT (0) for every qrels query the provider did not score, so a qrels query missing from
  the run scores 0 and run queries without qrels are not scored: ``query_set=qrels``. This
  holds for the counts too: NumQ and NumRel of a qrels query missing from the run are 0 (live),
  where trec_eval -c gives num_q 1 and the real num_rel; no axis describes that yet;
- pytrec_eval provider: trec_eval 9 through pytrec_eval, so the trec_eval entry's profile
  (``conformance.libs.trec_eval.PROFILE``) with the query set above. On the input that makes
  pytrec_eval unsafe in-process (``conformance.libs.trec_eval.needs_isolation``) the ir_measures
  call runs alone in a one-shot child process, as the trec_eval adapter's does. ``nDCG(gains=...)`` maps the
  qrels labels through the gains before pytrec_eval sees them (``_build_invokers``), so a
  fractional gain is refused like a fractional label (live: TypeError "Expected relevance to be
  integer.");
- msmarco provider (``RR@k``): its own sort ``sorted(run[q].items(), key=lambda x: (-x[1], x[0]))``,
  score descending then doc id ascending (Python str order = byte order of UTF-8), in float64;
  relevant iff ``qrel.relevance >= rel`` on the label as given (1.5 counts, 0.5 does not:
  ``label_type=float``); only the top k is searched; a query with no relevant document is not
  in its relevance table and gets the DEFAULT 0;
- gdeval provider (``nDCG(dcg='exp-log2')@k``): the perl script ``bin/gdeval.pl`` on temporary
  TREC files: gain 2^rel - 1, discount 1/ln(rank + 1) (the base cancels in nDCG), ideal from
  judged labels > 0 cut at k, ties by score then docno descending (``runOrder``), values printed
  with 5 decimals; it dies on a query id that is not a number once everything up to its last
  '-' is removed (live: 'q1' -> CalledProcessError, exit 25), on a non-integer label and on a
  label above 4 (``$MAX_JUDGMENT``); topics with no label > 0 are not printed (DEFAULT 0);
- gdeval provider, ERR@k (``bin/gdeval.pl`` sub err): stopping probability (2^g - 1) / 2^4
  for a judged label g > 0 ($MAX_JUDGMENT = 4: ``err_max_grade=4``), the product over ranks in
  list order, ties as for its nDCG, values printed with 5 decimals (``tolerance_for``: 5e-6);
  it dies on a label above 4 and on a non-numeric query id (refused by the adapter,
  ``known_failure``);
- judged provider (``Judged@k``): run sorted by ``(-score, doc_id)`` (``ties=docid_asc``),
  judged = the document has a qrels entry, whatever its label (``negative_labels=keep``),
  divided by min(k, list length) (``k_beyond_list=min_k_n``); without a cutoff the whole list;
- cwl_eval provider (RBP and the C/W/L measures; installed with the ``ir_measures`` extra):
  the run's items stably sorted by score (``ties=input_order``), 1000 ranks read and the
  weights renormalised over them (``RankingMaker(max_n=1000)``: ``weights_horizon=1000``), an
  unjudged document gain 0 (the worst case), negative labels clipped to 0; RBP's ``rel=``
  binarises the labels (``rbp_gain=binary``), the others scale clip(label, min_rel, max_rel)
  to [0, 1];
- the pytrec_eval provider names an interpolated precision level with two decimals
  (``iprec_at_recall_{recall:.2f}``), so IPrec@0.125 is computed at 0.12 (live): only levels
  of at most two decimals are supported; ``SetF(beta=b)`` is trec_eval's ``set_F.b``, whose b
  weighs recall linearly ((1 + b) P R / (b P + R));
- ranx provider (``nDCG(dcg='exp-log2')`` without a cutoff): ranx ``Qrels.from_df`` /
  ``Run.from_df`` then ``ranx.evaluate`` without ``make_comparable``. Under pandas 3 it always
  fails (live: AssertionError "DataFrame Query IDs column dtype must be `object` (string)",
  because ir_measures builds the DataFrame with pandas 3's string dtype); were it to run, ranx's
  profile with ``query_set=raise`` applies.
"""

from __future__ import annotations

import math
import re

from conformance import isolation
from conformance.conventions import Conventions, gain_map
from conformance.io.data import Qrels, Run
from conformance.libs import ranx as _ranx
from conformance.libs import trec_eval as _trec_eval
from conformance.libs import _pytrec_eval
from conformance.libs._nested import qrels_dict, run_dict
from conformance.libs.base import Entry, LibraryValues, Support, error_text
from conformance.measures import Measure

PYTREC_EVAL_PROFILE = _trec_eval.PROFILE.replace(
    query_set="qrels",  # providers/base.py Evaluator.iter_calc: DEFAULT for unscored qrels queries
    duplicates="last",  # a dict keeps the last listing (so does read_trec_run -> as_dict_of_dict)
)
MSMARCO_PROFILE = PYTREC_EVAL_PROFILE.replace(
    ties="docid_asc",  # msmarco_provider.py: sorted(..., key=lambda x: (-x[1], x[0]))
    score_precision="float64",  # Python floats, compared as they are
    label_type="float",  # msmarco_provider.py: `qrel.relevance >= rel` on the label as given
    rr_cutoff="honour",  # bin/msmarco_eval.py compute_metrics: candidate_pid[:max_rank]
)
GDEVAL_PROFILE = PYTREC_EVAL_PROFILE.replace(
    gain="exponential",  # bin/gdeval.pl dcg: (2**gain - 1) / log(i + 2)
    discount="log2",  # natural log in both DCG and ideal: the base cancels out of nDCG
    ties="docid_desc",  # bin/gdeval.pl runOrder: score desc, then `$docnoA lt $docnoB` -> after
    score_precision="float64",  # scores written with Python's repr, read as perl doubles
    label_type="raise",  # bin/gdeval.pl: dies unless the judgment matches /^-?[0-9]+$/
    negative_labels="unjudged",  # bin/gdeval.pl: only `$judgment > 0` enters the qrels
)
JUDGED_PROFILE = PYTREC_EVAL_PROFILE.replace(
    ties="docid_asc",  # judged_provider.py: sorted(run[q].items(), key=lambda x: (-x[1], x[0]))
    score_precision="float64",  # Python floats
    k_beyond_list="min_k_n",  # judged_provider.py: cutoff = len(cutoff_run) when the list is shorter
    negative_labels="keep",  # judged_provider.py: `did in qid_qrels`: any label, negative too
    label_type="float",  # the labels themselves are never read
)
CWL_PROFILE = PYTREC_EVAL_PROFILE.replace(
    ties="input_order",  # util.py as_sorted_namedtuple_iter: sorted(items, key=score, reverse=True),
    # a stable sort of the run dict's order
    score_precision="float64",  # Python floats
    label_type="float",  # cwl_eval.py IrmQrelHandler.put_value: the label as given, clipped
    # negative_labels=unjudged (the pytrec_eval profile's): CwlEvaluator clips negative labels to
    # 0, the gain of an unjudged document (cwl's worst case), so the two read alike
    weights_horizon=1000,  # cwl_eval.py: RankingMaker(..., max_n=1000): 1000 ranks, padded
    rbp_gain="binary",  # IrmQrelHandler(bin_rel_cutoff=rel): 1 if relevance >= rel else 0
    # duplicates=last holds because _nested.run_dict puts a repeated document at its last
    # listing's place; ir_measures' own read_trec_run assigns into a dict, which keeps the first
    # listing's place with the last score (among tied scores no duplicates value says that)
)
RANX_PROFILE = _ranx.PROFILE  # providers/ranx_provider.py: ranx.evaluate, no make_comparable
# (ranx's profile: query_set=raise, ties unspecified, labels truncated; the route fails under
# pandas 3 before ranx computes anything)

PROFILES = {
    "pytrec_eval": PYTREC_EVAL_PROFILE,
    "msmarco": MSMARCO_PROFILE,
    "gdeval": GDEVAL_PROFILE,
    "ranx": RANX_PROFILE,
    "judged": JUDGED_PROFILE,
    "cwl_eval": CWL_PROFILE,
}

# Tolerance by provider: gdeval prints %.5f, so its values carry up to 5e-6 of rounding.
PRINTED_DECIMALS = {"gdeval": 5}

# ir_measures' names that take rel= (their SUPPORTED_PARAMS), by spelling
_WITH_REL = {"P", "AP", "RR", "Success", "Rprec", "NumRet", "Bpref", "infAP", "SetP", "SetR",
             "SetF", "SetAP", "SetRelP", "IPrec", "RBP"}
# ... and the one that needs it (cwl_eval's RBP: rel=Any(required=True))
_REL_REQUIRED = {"RBP"}
_GDEVAL_TOPIC = re.compile(r"[0-9]+")
_GDEVAL_MAX_JUDGMENT = 4  # bin/gdeval.pl: dies unless every judgment is at most this
_CWL_FAMILIES = {"RBP", "SDCG", "NERR8", "NERR9", "NERR10", "NERR11", "INST", "INSQ", "BPM"}


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def measure_text(m: Measure) -> str | None:
    """The ir_measures name for ``m`` (None when ir_measures has no such measure): the family
    records' ir_measures spelling, its parameters (ir_measures' own names, the same as ours),
    the threshold as rel= and a gain as dcg= or gains=."""
    f, k = m.family, m.cutoff
    overrides = dict(m.overrides)
    rel = overrides.pop("relevance_threshold", None)
    gain = overrides.pop("gain", None)
    if overrides:
        return None  # no other axis is a parameter of an ir_measures measure
    name = m.record.name_in("ir_measures", k)  # the family records' ir_measures spelling
    if name is None:
        return None
    text = name.text
    if f == "NumRelRet":  # ir_measures computes it as NumRet(rel=L)
        text = "NumRet"
        if rel is None:
            rel = 1
    # ir_measures checks each parameter's type: floats as floats (T=1.0), integers as integers
    params: list[str] = [
        f"{key}={int(value) if m.record.parameter(key).kind == 'integer' else float(value)!r}"
        for key, value in m.params if key != m.record.at]
    if text in _REL_REQUIRED and rel is None:
        rel = PYTREC_EVAL_PROFILE.relevance_threshold  # the default level of every provider
    if rel is not None:
        if text not in _WITH_REL or rel < 1:
            return None
        params.append(f"rel={rel}")
    if gain is not None and gain != "linear":
        if f != "nDCG":
            return None
        if gain == "exponential":
            params.append("dcg='exp-log2'")
        elif gain == "binary":
            return None  # gains= maps labels, not a threshold: no binary gain to name
        else:
            table = gain_map(gain)
            if not all(math.isfinite(lab) and lab.is_integer() for lab in table):
                return None  # qrels labels are ints: a fractional key could never match
            params.append("gains={" + ",".join(f"{_num(a)}:{_num(b)}" for a, b in table.items()) + "}")
    if m.record.at is not None:
        level = m.param(m.record.at)
        if round(level, 2) != level:
            # the pytrec_eval provider names the level iprec_at_recall_{recall:.2f}, so
            # IPrec@0.125 would be computed at 0.12 (live)
            return None
        # a float's text: the runtime provider refuses recall=0 or 1 read as an integer
        # (AssertionError "invalid param recall=0", live) where the others accept it
        at = f"@{float(level)!r}"
    else:
        at = f"@{k}" if k is not None else ""
    text += f"({','.join(params)})" if params else ""
    return text + at


def declared_provider(m: Measure) -> str | None:
    """The provider ir_measures 0.4.3 (perl and cwl-eval installed) routes ``m`` to; None: no
    provider."""
    text = measure_text(m)
    if text is None:
        return None
    gain = dict(m.overrides).get("gain")
    if m.family == "RR" and m.cutoff is not None:
        return "msmarco"
    if m.family == "nDCG" and gain == "exponential":
        return "gdeval" if m.cutoff is not None else "ranx"
    if m.family == "ERR":
        return "gdeval" if m.cutoff is not None else None
    if m.family == "Judged":
        return "judged"
    if m.family in _CWL_FAMILIES:
        return "cwl_eval"
    return "pytrec_eval"


def live_provider(m: Measure) -> str | None:
    """The provider the installed ir_measures pipeline routes ``m`` to (its own rule: the first
    available provider that supports the measure); None when no provider supports it."""
    import ir_measures

    text = measure_text(m)
    if text is None:
        return None
    im = ir_measures.parse_measure(text)
    for provider in ir_measures.DefaultPipeline.providers:
        if provider.supports(im) and provider.is_available():
            return provider.NAME
    return None


def calc(text: str, qrels: dict, run: dict) -> tuple[dict[str, float], float]:
    """The call: (per-query values, the library's mean) of one measure (a module-level function,
    so that a child process can be given it)."""
    import ir_measures

    im = ir_measures.parse_measure(text)
    rows = {str(r.query_id): float(r.value) for r in ir_measures.iter_calc([im], qrels, run)}
    return rows, float(ir_measures.calc_aggregate([im], qrels, run)[im])


class IrMeasuresEntry(Entry):
    name = "ir_measures"
    library = "ir_measures"
    module = "ir_measures"
    distribution = "ir-measures"
    tolerance = 1e-12  # pytrec_eval, msmarco and ranx compute in double; see PRINTED_DECIMALS
    description = "ir_measures.iter_calc with the default provider pipeline"

    def tolerance_for(self, measure: Measure, longest: int = 0) -> float:
        """Half a unit of the last digit a provider prints (gdeval: %.5f) plus the float64
        tolerance, else 1e-12. The float64 part is not slack: a value exactly halfway
        (0.234375, printed 0.23438) lies half a unit away in decimal, a hair more in binary."""
        decimals = PRINTED_DECIMALS.get(self._provider(measure) or "")
        return 0.5 * 10.0 ** -decimals + self.tolerance if decimals is not None else self.tolerance

    def _provider(self, measure: Measure) -> str | None:
        if self.available():
            return live_provider(measure)
        return declared_provider(measure)

    # the library routes each measure to a provider: supported where one computes it, with the
    # parameters it takes
    support = Support(conventions=False, parameters=None)

    def names(self, measure: Measure) -> bool:
        return self._provider(measure) in PROFILES

    def profile(self, measure: Measure) -> Conventions:
        provider = self._provider(measure)
        if provider not in PROFILES:
            raise KeyError(f"{self.name} does not compute {measure.text}")
        return PROFILES[provider]

    def default_profile(self) -> Conventions:
        return PYTREC_EVAL_PROFILE

    # pytrec_eval's failure (conformance.libs._pytrec_eval); gdeval's: it exits with an error
    # status (CalledProcessError, "raises") on a query id that is not a number, which half of the
    # long fuzz's cases have (the default run's ERR groups draw numeric ids only)
    known_failure_shows = _pytrec_eval.SHOWS | {"raises"}
    known_failure_ceiling = {**_pytrec_eval.CEILING, "ERR": 0.8, "nDCG": 0.8}

    def known_failure(self, qrels: Qrels, run: Run, measure: Measure | None = None) -> str | None:
        """pytrec_eval's failure on a query whose judgments are all negative (see the trec_eval
        adapter), for the measures routed to it; gdeval's on a query id that is not a number
        (its format check, bin/gdeval.pl: ``$topic =~ /^[0-9]+$/`` once everything up to the
        last '-' is removed; live: 'q1' ends in CalledProcessError, exit status 25)."""
        provider = self._provider(measure) if measure is not None and self.supports(measure) else None
        if provider == "gdeval":
            if len(qrels) and float(qrels.label.max()) > _GDEVAL_MAX_JUDGMENT:
                return (f"refused by the adapter: gdeval (the provider) dies on a label above "
                        f"{_GDEVAL_MAX_JUDGMENT} ($MAX_JUDGMENT), here "
                        f"{float(qrels.label.max()):g}")
            for ids in (qrels.qids, run.qids):
                bad = [str(q) for q in ids if not _GDEVAL_TOPIC.fullmatch(str(q).rsplit("-", 1)[-1])]
                if bad:
                    return (f"refused by the adapter: gdeval (the provider) dies on the query id "
                            f"{bad[0]!r}, which is not a number")
            return None
        if measure is not None and provider != "pytrec_eval":
            return None
        return _pytrec_eval.refusal(qrels, run, "the provider")

    def failure_evidence(self, qrels: Qrels, run: Run, measure: Measure | None = None) -> str | None:
        provider = self._provider(measure) if measure is not None and self.supports(measure) else None
        return _pytrec_eval.evidence(qrels, run) if provider in (None, "pytrec_eval") else None

    def evaluate(self, qrels: Qrels, run: Run, measures: list[Measure]) -> dict[Measure, LibraryValues]:
        """Measures are computed one at a time: in one call, a provider that fails (gdeval on a
        non-numeric query id) would take the other measures down with it."""
        out: dict[Measure, LibraryValues] = {}
        try:
            q, r = qrels_dict(qrels), run_dict(run)
        except Exception as exc:
            return {m: LibraryValues(error=error_text(exc)) for m in measures}
        for m in measures:
            provider = self._provider(m) if self.supports(m) else None
            if provider is None:
                out[m] = LibraryValues(error=f"{self.name} does not compute {m.text}")
                continue
            failure = self.refusal(qrels, run, m)
            if failure is not None:
                out[m] = LibraryValues(error=failure, provider=provider)
                continue
            # pytrec_eval is unsafe in-process on some input (see the trec_eval adapter)
            alone = provider == "pytrec_eval" and _trec_eval.needs_isolation(qrels)
            try:
                per_query, mean = isolation.call(calc, measure_text(m), q, r, alone=alone,
                                                 timeout=_trec_eval.ISOLATED_TIMEOUT)
            except isolation.Fault as fault:  # the library's death is the result
                out[m] = LibraryValues(error=f"ir_measures {fault}", provider=provider)
                continue
            except Exception as exc:  # the library's refusal is the result
                out[m] = LibraryValues(error=error_text(exc), provider=provider)
                continue
            out[m] = LibraryValues(per_query=per_query, mean=mean, provider=provider)
        return out

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        return self.evaluate(qrels, run, [measure])[measure]


ENTRIES: list[Entry] = [IrMeasuresEntry()]

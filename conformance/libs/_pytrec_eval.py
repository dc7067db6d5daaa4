"""pytrec_eval's known failure, declared once for every adapter whose library calls it:
trec_eval (the binding itself), BEIR and MTEB (which call it inside), and ir_measures (its
pytrec_eval provider).

On a query that the run lists and all of whose judgments are negative, trec_eval 9's C code
works past the end of its per-level tables. Live (pytrec_eval-terrier 0.5.11): qrels {q9: {d11:
-1, d13: -2}} with two documents retrieved gives ``num_ret`` 0 (not 2), and so on every such
query tried; the same call repeated in one process hangs within a few hundred iterations; qrels
{q1: {d1: -2}, q2: {d1: 0}} with run {q2: {d1: 0.0}, q1: {d1: 0.0}} and ``recip_rank`` dies of
SIGSEGV in a fresh process, every time. The values that come back, when any do, are not the
library's arithmetic but reads past the end of its tables, so the adapters refuse such a case
(their ``known_failure``).

A query whose judgments are all negative but that the run does not list is never evaluated
(trec_eval scores the run's queries only) and does no harm: live, 2,000 calls in one process on
qrels {q1: {d1: -1, d3: -2}, q2: {d2: 1, d4: 0}} and a run of q2 alone give the same, right
values each time. It is not refused.

What the differential tests ask of the library on a refused case (``SHOWS``, ``evidence``):
that it dies, or that it miscounts the query's retrieved documents.
"""

from __future__ import annotations

import numpy as np

from conformance import isolation
from conformance.io.data import Qrels, Run
from conformance.libs._nested import int_qrels_dict, qrels_dict, run_dict

# What the library does on such a query (Entry.known_failure_shows): it dies, or returns values
# read past its tables (seen for certain in num_ret: ``evidence``).
SHOWS = frozenset({"dies", "wrong_values"})
# The largest share of one family's generated cases refused so (Entry.known_failure_ceiling).
# The differential tests' negative-or-fractional cases draw -1 and -2 among nine labels and make
# every label of a query below 1 one time in two; measured, up to 30% of those cases (and none
# of the clean ones) have a listed query whose labels are all negative. Twice that is the ceiling.
CEILING = {"*": 0.6}
# how long the evidence call may take before its hang counts as the failure
EVIDENCE_TIMEOUT = 60.0


def all_negative_query(qrels: Qrels, run: Run | None = None, truncate: bool = False) -> str | None:
    """The first query all of whose labels are negative (``truncate``: once truncated towards
    zero, as ``int()`` does before BEIR and MTEB hand them to pytrec_eval, so -0.5 is 0), among
    the queries ``run`` lists when it is given; or None."""
    if not len(qrels):
        return None
    top = np.full(qrels.qids.size, -np.inf)
    np.maximum.at(top, qrels.qcode, np.trunc(qrels.label) if truncate else qrels.label)
    bad = np.unique(qrels.qcode)
    bad = bad[top[bad] < 0]
    names = [str(q) for q in qrels.qids[bad]]
    if run is not None:
        listed = set(np.unique(run.query_ids()).tolist()) if len(run) else set()
        names = [q for q in names if q in listed]
    return names[0] if names else None


def refusal(qrels: Qrels, run: Run, inside: str = "", truncate: bool = False) -> str | None:
    """The adapter's refusal of a case with such a query (``inside``: the library that calls
    pytrec_eval, named in the reason), or None."""
    q = all_negative_query(qrels, run, truncate)
    if q is None:
        return None
    where = f" ({inside})" if inside else ""
    return (f"refused by the adapter: every judgment of query {q!r} is negative, on which "
            f"pytrec_eval{where} reads past its tables (crash, hang or wrong counts; see "
            "conformance.libs._pytrec_eval)")


def _num_ret(qrels: dict, run: dict) -> dict:
    import pytrec_eval

    return pytrec_eval.RelevanceEvaluator(qrels, ["num_ret"], relevance_level=1).evaluate(run)


def evidence(qrels: Qrels, run: Run, truncate: bool = False) -> str | None:
    """The failure seen: pytrec_eval, asked in a process of its own for the number of
    documents the refused query retrieves, dies, hangs or miscounts. None: it counted right."""
    q = all_negative_query(qrels, run, truncate)
    if q is None:
        return None
    listed = int((run.query_ids() == q).sum())
    judged = int_qrels_dict(qrels) if truncate else qrels_dict(qrels)
    try:
        got = isolation.one_shot(_num_ret, judged, run_dict(run), timeout=EVIDENCE_TIMEOUT)
    except isolation.Fault as fault:
        return f"pytrec_eval {fault}"
    except isolation.Raised as exc:
        return f"pytrec_eval raised {exc.text}"
    counted = got.get(q, {}).get("num_ret")
    if counted != listed:
        return f"pytrec_eval's num_ret for {q!r} is {counted!r}; the run lists {listed}"
    return None

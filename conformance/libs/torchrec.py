"""TorchRec (side environment ``torchrec``): ``torchrec.metrics.ndcg.NDCGMetric``, the
session-wise NDCG of TorchRec's metric module, and its session precision and recall,
``PrecisionSessionMetric`` and ``RecallSessionMetric``.

TorchRec 1.9.2, the newest release, pins ``torchmetrics==1.0.3`` (the other entries' is 1.9)
and requires fbgemm-gpu, whose CPU build 1.8.0 is the one that loads on torch 2.13.0: it lives
in an environment of its own (``conformance env create torchrec``; ``conformance.environments``)
and every call below runs in its worker there (``Entry.environment``).

Translation: a TorchRec model hands the metric, per batch, one task's predictions, labels,
weights and the session id of each example; a session is a ranked list::

    metric = NDCGMetric(world_size=1, my_rank=0, batch_size=n, tasks=[DefaultTaskInfo],
                        window_size=n, exponential_gain=..., k=k or -1)
    metric.update(predictions={task: scores}, labels={task: labels},
                  weights={task: ones}, required_inputs={"session_id": session ids})
    metric.compute()["ndcg-DefaultTask|lifetime_ndcg"]

The adapter makes one session per run query (its rows: each listed document, its score as the
prediction, its label, 0 when unjudged), every weight 1. The metric reports 1 - NDCG, "so that
TensorBoard can capture a decreasing loss" (its docstring), averaged over the sessions: the
adapter reads back 1 - the value. A query's value is the call on its session alone; the mean is
the call on all of them.

The session precision and recall take the same sessions through a task whose
``session_metric_def`` is ``SessionMetricDef(session_var_name="session", top_threshold=k)``
(``run_ranking_of_labels=False``, the default); without a cutoff ``top_threshold`` is the
longest session, so every row is in the top. Their values are read as reported
(``lifetime_precision_session_level``, ``lifetime_recall_session_level``), the mean being the
call on every session, a query's value the call on its session alone.

==========  =====================================================  ====================
measure     call                                                   entry
==========  =====================================================  ====================
nDCG(@k)    ``NDCGMetric(exponential_gain=False, k=k or -1)``      ``torchrec``
nDCG(@k)    ``NDCGMetric(exponential_gain=True, k=k or -1)``       ``torchrec:exp``
P(@k)       ``PrecisionSessionMetric``, ``top_threshold=k``        ``torchrec:session``
R(@k)       ``RecallSessionMetric``, ``top_threshold=k``           ``torchrec:session``
==========  =====================================================  ====================

Not offered, and why: TorchRec's other metrics (AUC, NE, calibration, ...) are not ranking
measures; ``run_ranking_of_labels=True`` replaces each label by whether the label itself ranks
in its session's top k, a relevance no threshold or gain expresses.

Facts behind the profile (torchrec 1.9.2, ``torchrec/metrics/ndcg.py`` ``_get_ndcg_states``;
each confirmed live by ``tests/libs/test_torchrec.py``):

- the ideal is the session's own labels sorted descending (``sorted_labels_by_labels``),
  cut at k as the observed list is (``ideal=retrieved``): a relevant document the run does not
  list is in no session; gain the label (``gain=linear``), or ``exp2(label) - 1`` with
  ``exponential_gain=True`` (``gain=exponential``); discount ``1 / log2(rank + 1)``
  (``discount=log2``); live: labels 0, 1, 0 in score order: NDCG = 1 / log2 3;
- the discounts are float32: ``log2`` of the integer ranks (a ``cumsum`` of a long mask) is in
  torch's default dtype; live: that session gives 0.63092977 where 1 / log2 3 = 0.63092975
  (``float32_sums``: the tolerance is float32's over the list);
- order: ``predictions.sort(descending=True)``, torch's unstable sort: equal scores in an order
  torch does not state, not the input's (live: 300 equal scores, the first listed, relevant,
  lands near rank 292) (``ties=unspecified``);
- a session whose ideal DCG is 0 without a negative label has no gain at all: its DCG / 1e-6
  is 0 (``empty_query=zero``); every session counts in the mean, so
  every run query does, one without judgments as one without relevant documents, and a judged
  query the run does not list is in no session (``query_set=run_all``);
- negative labels are negative gains, in the list and in the ideal (``negative_labels=keep``),
  and a negative ideal DCG divides like any other (``negative_ideal=divide``; live: labels -1,
  0, 0 in score order: NDCG = -1 / (-1/2) = 2.0, the metric reporting -1.0);
- finding, refused by the adapter (``known_failure``): an ideal DCG of exactly 0 is replaced by
  1e-6 (``ideal_dcg[ideal_dcg == 0] = 1e-6``), so a session whose negative labels reach the top
  k while its ideal is 0 gets DCG / 1e-6 (live: labels -1 and 0 tied, at k = 1: -1e6 when the
  -1 ranks first), where an ideal of 0 makes the query empty; and a session whose negative
  and positive gains cancel in the ideal to less than half their absolute sum is refused as
  decided by rounding: the float32 discounts' error grows by that cancellation (live, fuzz:
  gains 2, -1, -1, -2 give an ideal of 0.0077 and NDCG -267.1487 against the exact
  -267.1468);
- a document listed twice is two examples of its session, each with its label
  (``duplicates=keep``); scores reach it as float64 (the adapter's tensors; ``update`` casts to
  double: ``score_precision=float64``).

Facts behind the session precision and recall's profiles (torchrec 1.9.2,
``torchrec/metrics/recall_session.py`` and ``precision_session.py``; each confirmed live by
``tests/libs/test_torchrec.py``):

- rank: ``ranking_within_session`` (recall_session.py lines 45-64) gives a row the session's
  row count minus the rows whose prediction it is at least (``>=``), so its 0-based rank is the
  count of its session's rows with a strictly higher prediction: every row of a tie group takes
  the group's first rank, and ``rank < top_threshold`` (precision_session.py line 171, recall
  alike) puts a group whose first rank is below k in the top whole, more than k rows
  (``ties=group_first``); live: predictions 2, 1, 1, 0 at k = 2: three rows in the top. The
  function's own comment (lines 51-54) gives distinct ranks to tied rows, as an order would:
  live, its example gives ``[0, 5, 3, 2, 0, 5, 3, 1, 0, 4, 3, 1]`` where the comment says
  ``[0, 5, 3, 2, 1, 6, 4, 1, 0, 4, 3, 2]``: the comment is wrong, the code ranks by the rule;
- precision: ``num_true_pos = sum(w * label * top)`` (recall_session.py line 71) and
  ``num_false_pos = sum(w * (1 - label) * top)`` (precision_session.py lines 40-42), so
  tp / (tp + fp) is the labels in the top summed over the rows in the top: each row counts its
  label, graded, fractional or negative (``hit_weight=label``, ``negative_labels=keep``:
  ``labels.double()``, line 130, nothing else), over the rows of the top
  (``k_beyond_list=rows_in_top``); live: labels 2 and 0.5 in the top 2: 1.25;
- recall: ``num_false_neg = sum(w * label * (1 - top))`` (recall_session.py line 79), so
  tp + fn is the sum of the session's own labels: the listed documents only, a relevant
  document the run does not list being in no session (``ideal=retrieved``);
- both states are sums over every example of every ``update`` (``state += state_value``) and
  divided once in ``compute`` (``_calc_precision``, ``_calc_recall``): the sessions' parts are
  summed before one division (``mean=micro``); live: sessions with precisions 1/1 and 0.5/2
  give (1 + 0.5) / (1 + 2);
- a zero denominator gives NaN (``torch.tensor([float("nan")])``, precision_session.py line 50,
  recall_session.py line 87): a session has a row, so its precision's is never 0, and one
  without a label other than 0 scores 0 (``empty_query=zero`` for P); its recall's is 0 when
  its labels sum to 0, NaN, and adds nothing to the sum (``empty_query=skip`` for R); every
  run query is a session (``query_set=run_all``);
- a document listed twice is two examples, each counting its label, in the top and in the
  recall's sum (``duplicates=keep``); scores are read as float64 (``predictions.double()``);
- finding, refused by the adapter (``known_failure``): with negative labels a session's labels
  can sum to 0 while some are not 0; its recall is then NaN, yet its hits still count in the
  lifetime sum, which can exceed 1 (live: sessions with labels 1, -1 (the 1 ranked first) and
  1, at k = 1: each session alone NaN and 1, both together (1 + 1) / (0 + 1) = 2.0); and the
  sessions' sums can cancel to 0 in total, where the lifetime recall is NaN though a session's
  is not. No convention gives a query NaN and still sums its parts.
"""

from __future__ import annotations

import math


from conformance.conventions import Conventions
from conformance.io.data import Qrels, Run
from conformance.libs.base import Entry, LibraryValues, Support
from conformance.measures import Measure

PROFILE = Conventions(
    # gain=linear (the default): ndcg.py: ideal_gains / observed_gains are the labels
    # discount=log2 (the default): ndcg.py: torch.reciprocal(torch.log2(ranks + 1))
    ideal="retrieved",  # ndcg.py: sorted_labels_by_labels, the session's own labels, cut at k
    ties="unspecified",  # ndcg.py: predictions.sort(descending=True), torch's unstable sort
    # empty_query=zero (the default): ndcg.py: ideal_dcg[ideal_dcg == 0] = 1e-6, NDCG 0
    query_set="run_all",  # every session counts: the run's queries, unjudged rows label 0
    negative_labels="keep",  # ndcg.py: a negative label is a negative gain, list and ideal alike
    negative_ideal="divide",  # ndcg.py: ndcg = observed_dcg / ideal_dcg, a negative ideal too
    duplicates="keep",  # each listing is an example of the session, with its label
    # score_precision=float64 (the default): the adapter's float64 tensors; update() casts to double
)
EXP_PROFILE = PROFILE.replace(gain="exponential")  # ndcg.py: torch.exp2(gains) - 1.0

SESSION_P = Conventions(
    ties="group_first",  # recall_session.py ranking_within_session: rows strictly higher; rank < k
    k_beyond_list="rows_in_top",  # precision_session.py: tp + fp = sum(w * top), the rows in the top
    hit_weight="label",  # recall_session.py _calc_num_true_pos: sum(w * label * top)
    ideal="retrieved",  # recall_session.py: tp + fn = the session's own labels summed
    mean="micro",  # rec_metric states summed over the examples, divided once in compute()
    # empty_query=zero (the default): a session whose labels are all 0 has precision 0
    query_set="run_all",  # every run query is a session, unjudged rows label 0
    negative_labels="keep",  # labels.double(), used as they are
    duplicates="keep",  # each listing is an example of the session, with its label
    # score_precision=float64 (the default): predictions.double()
)
SESSION_R = SESSION_P.replace(empty_query="skip")  # recall_session.py _calc_recall: NaN when tp + fn == 0

_KEY = "ndcg-DefaultTask|lifetime_ndcg"


def sessions_input(qrels: Qrels, run: Run) -> dict[str, tuple[list[float], list[float]]]:
    """{query: (scores, labels)} in the run's order: the sessions the adapter hands TorchRec,
    a document's label 0 when the qrels do not judge it."""
    judged = {(q, d): float(label) for q, d, label in zip(
        qrels.query_ids().tolist(), qrels.doc_ids().tolist(), qrels.label.tolist())}
    out: dict[str, tuple[list[float], list[float]]] = {}
    for q, d, s in zip(run.query_ids().tolist(), run.doc_ids().tolist(), run.score.tolist()):
        scores, labels = out.setdefault(q, ([], []))
        scores.append(float(s))
        labels.append(judged.get((q, d), 0.0))
    return out


def ndcg_metric(sessions: list[tuple[list[float], list[float]]], exponential_gain: bool,
                k: int) -> float:
    """``NDCGMetric``'s lifetime value on these sessions (scores, labels), every weight 1: what
    TorchRec reports (1 - NDCG, averaged). Module-level, so the worker and the tests call it."""
    import torch
    from torchrec.metrics.metrics_config import DefaultTaskInfo
    from torchrec.metrics.ndcg import SESSION_KEY, NDCGMetric

    scores = [s for ss, _ in sessions for s in ss]
    labels = [lab for _, ls in sessions for lab in ls]
    ids = [i for i, (ss, _) in enumerate(sessions) for _ in ss]
    n = len(scores)
    metric = NDCGMetric(world_size=1, my_rank=0, batch_size=n, tasks=[DefaultTaskInfo],
                        window_size=max(100, n), exponential_gain=exponential_gain,
                        session_key=SESSION_KEY, k=k)
    task = DefaultTaskInfo.name
    metric.update(predictions={task: torch.tensor([scores], dtype=torch.float64)},
                  labels={task: torch.tensor([labels], dtype=torch.float64)},
                  weights={task: torch.ones((1, n), dtype=torch.float64)},
                  required_inputs={SESSION_KEY: torch.tensor([ids])})
    return float(metric.compute()[_KEY])


def by_session(qrels: Qrels, run: Run, call) -> LibraryValues:
    """A query's value is ``call`` on its session alone, the mean ``call`` on every session;
    a session ``call`` gives NaN for (TorchRec divided by 0 there) has no value."""
    sessions = sessions_input(qrels, run)
    if not sessions:
        return LibraryValues(per_query={}, mean=None)
    per_query = {q: call([s]) for q, s in sessions.items()}
    return LibraryValues(per_query={q: v for q, v in per_query.items() if not math.isnan(v)},
                         mean=call(list(sessions.values())))


_SESSION_KEYS = {"P": "precision_session_level", "R": "recall_session_level"}


def session_metric(sessions: list[tuple[list[float], list[float]]], family: str, k: int) -> float:
    """``PrecisionSessionMetric`` (``family`` "P") or ``RecallSessionMetric`` ("R"): its
    lifetime value on these sessions (scores, labels) with ``top_threshold=k``, every weight 1,
    ``run_ranking_of_labels=False`` (NaN where TorchRec divides by 0). Module-level, so the
    worker and the tests call it."""
    import torch
    from torchrec.metrics.metrics_config import DefaultTaskInfo, RecTaskInfo, SessionMetricDef
    from torchrec.metrics.precision_session import PrecisionSessionMetric
    from torchrec.metrics.recall_session import RecallSessionMetric

    scores = [s for ss, _ in sessions for s in ss]
    labels = [lab for _, ls in sessions for lab in ls]
    ids = [i for i, (ss, _) in enumerate(sessions) for _ in ss]
    n = len(scores)
    name = DefaultTaskInfo.name
    task = RecTaskInfo(name=name, label_name="label", prediction_name="prediction",
                       weight_name="weight", session_metric_def=SessionMetricDef(
                           session_var_name="session", top_threshold=k))
    cls = PrecisionSessionMetric if family == "P" else RecallSessionMetric
    metric = cls(world_size=1, my_rank=0, batch_size=n, tasks=[task], window_size=max(100, n))
    metric.update(predictions={name: torch.tensor([scores], dtype=torch.float64)},
                  labels={name: torch.tensor([labels], dtype=torch.float64)},
                  weights={name: torch.ones((1, n), dtype=torch.float64)},
                  required_inputs={"session": torch.tensor([ids])})
    key = _SESSION_KEYS[family]
    return float(metric.compute()[f"{key}-{name}|lifetime_{key}"])


def session_ranks(predictions: list[float], sessions: list[int]) -> list[int]:
    """TorchRec's ``ranking_within_session`` of one task's predictions and session ids."""
    import torch
    from torchrec.metrics.recall_session import ranking_within_session

    return ranking_within_session(torch.tensor([predictions]), torch.tensor([sessions])).tolist()


class TorchrecEntry(Entry):
    library = "torchrec"
    module = "torchrec.metrics.ndcg"
    distribution = "torchrec"
    environment = "torchrec"
    float32_sums = True  # ndcg.py: the discounts are log2 of integer ranks, torch's float32
    support = Support(families=frozenset({"nDCG"}))

    def __init__(self, name: str, description: str, exponential: bool = False) -> None:
        self.name, self.description = name, description
        self.exponential = exponential
        self._profile = EXP_PROFILE if exponential else PROFILE

    def names(self, measure: Measure) -> bool:
        return not measure.params and (measure.cutoff is None or measure.cutoff >= 1)

    def profile(self, measure: Measure) -> Conventions:
        return self._profile

    def default_profile(self) -> Conventions:
        return self._profile

    # known_failure is checked, not trusted (Entry): the differential asks the library anyway
    known_failure_shows = frozenset({"wrong_values", "rounding"})
    known_failure_ceiling = {"*": 0.25}  # sessions mixing negative and positive gains

    def known_failure(self, qrels: Qrels, run: Run, measure: Measure | None = None) -> str | None:
        """A session with negative labels whose ideal DCG (cut at k) is 0 while a document of
        non-zero gain can rank in the top k: TorchRec divides by 1e-6 for that 0 (see the
        module docstring; smallest case: qrels {q1: {a: -1}}, run {q1: a 0, b 0} at k = 1:
        -1e6 when a ranks first, where an ideal of 0 makes the query empty). Or one whose
        ideal mixes negative and positive gains that cancel to less than half their absolute
        sum: the float32 discounts' rounding is then magnified past float32's tolerance
        (relative to the ideal, by the sum over what is left), a value decided by rounding."""
        if measure is None or not self.supports(measure):
            return None
        k = measure.cutoff
        for q, (scores, labels) in sessions_input(qrels, run).items():
            if min(labels, default=0.0) >= 0:
                continue
            gains = [2.0 ** g - 1.0 if self.exponential else g for g in labels]
            top = sorted(gains, reverse=True)[:k]
            ideal = sum(g / math.log2(i + 2) for i, g in enumerate(top))
            scale = sum(abs(g) / math.log2(i + 2) for i, g in enumerate(top))
            if abs(ideal) <= 1e-9 * scale:
                kth = sorted(scores, reverse=True)[:k][-1]  # a score this high can rank in the top k
                if any(g != 0 and sc >= kth for g, sc in zip(gains, scores)):
                    return (f"refused by the adapter: query {q!r} has negative labels and an "
                            "ideal DCG of 0, which TorchRec's NDCGMetric replaces by 1e-6 and "
                            "divides by")
            elif max(top) > 0 and abs(ideal) < scale / 2:
                return (f"refused by the adapter: query {q!r}'s negative and positive gains "
                        "cancel in its ideal DCG, where TorchRec's float32 discounts decide the "
                        "digits compared")
        return None

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        declined = self.declined(qrels, run, measure)
        if declined is not None:
            return declined
        k = measure.cutoff or -1
        return by_session(qrels, run, lambda s: 1.0 - ndcg_metric(s, self.exponential, k))


class TorchrecSessionEntry(Entry):
    """``PrecisionSessionMetric`` and ``RecallSessionMetric``: P(@k) and R(@k)."""

    name = "torchrec:session"
    description = ("torchrec.metrics PrecisionSessionMetric and RecallSessionMetric, "
                   "top_threshold=k, one session per query")
    library = "torchrec"
    module = "torchrec.metrics.precision_session"
    distribution = "torchrec"
    environment = "torchrec"
    support = Support(families=frozenset({"P", "R"}))

    def names(self, measure: Measure) -> bool:
        return not measure.params and (measure.cutoff is None or measure.cutoff >= 1)

    def profile(self, measure: Measure) -> Conventions:
        return SESSION_R if measure.family == "R" else SESSION_P

    def default_profile(self) -> Conventions:
        return SESSION_P

    # known_failure is checked, not trusted (Entry): the differential asks the library anyway
    known_failure_shows = frozenset({"wrong_values", "rounding"})
    known_failure_ceiling = {"R": 0.2}  # negative labels whose sums cancel

    def known_failure(self, qrels: Qrels, run: Run, measure: Measure | None = None) -> str | None:
        """Recall only: a session whose labels (some not 0) sum to 0 among several sessions,
        whose recall is NaN while its hits still count in the lifetime sum, or sessions whose
        sums cancel to 0 in total, where the lifetime recall is NaN (see the module docstring;
        smallest case: sessions with labels 1, -1 (the 1 first) and 1 at k = 1: 2.0). A sum
        within rounding of 0 is refused too: TorchRec's division by it is decided by rounding."""
        if measure is None or measure.family != "R" or not self.supports(measure):
            return None
        sessions = sessions_input(qrels, run)
        sums = [(math.fsum(labels), math.fsum(abs(x) for x in labels))
                for _, labels in sessions.values()]

        def cancels(total: float, scale: float) -> bool:
            return scale > 0 and abs(total) <= 1e-9 * scale

        if len(sessions) > 1 and any(cancels(t, a) for t, a in sums):
            q = next(q for q, (t, a) in zip(sessions, sums) if cancels(t, a))
            return (f"refused by the adapter: query {q!r}'s labels sum to 0, so TorchRec's "
                    "RecallSessionMetric gives it NaN yet sums its hits with the other sessions'")
        if cancels(math.fsum(t for t, _ in sums), math.fsum(a for _, a in sums)):
            return ("refused by the adapter: the sessions' label sums cancel to 0, which "
                    "TorchRec's RecallSessionMetric divides by")
        return None

    def _evaluate(self, qrels: Qrels, run: Run, measure: Measure) -> LibraryValues:
        declined = self.declined(qrels, run, measure)
        if declined is not None:
            return declined
        # without a cutoff, k past every session's length: every row in the top
        k = min(measure.cutoff or max(len(run), 1), 2**62)
        return by_session(qrels, run, lambda s: session_metric(s, measure.family, k))


ENTRIES: list[Entry] = [
    TorchrecEntry("torchrec", "torchrec.metrics NDCGMetric (linear gain), one session per query, "
                  "read back as 1 - its reported value"),
    TorchrecEntry("torchrec:exp", "torchrec.metrics NDCGMetric(exponential_gain=True)",
                  exponential=True),
    TorchrecSessionEntry(),
]

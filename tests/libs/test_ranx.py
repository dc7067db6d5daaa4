"""ranx through its adapters, live: published numbers and every profile fact.

Expected values are numbers the libraries publish
(documentation examples, cited where used) or hand computation (written
out below), never the reference implementation. Each quirk the profiles in
``conformance/libs/ranx.py`` rely on has a test here, so a ranx release that changes it fails.
"""

from __future__ import annotations

import math
import warnings

import pytest

from conformance.io.data import Qrels, Run
from conformance.libs import entry
from conformance.libs.base import LibraryValues
from conformance.libs.ranx import MAKE_COMPARABLE_PROFILE, PROFILE, metric_string
from conformance.measures import Measure, parse_measure
from libcall import call, only_value, one_list as _one_list

L2_3 = math.log2(3)

pytestmark = [
    pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaTypeSafetyWarning"),
    pytest.mark.requires_library("ranx"),
]


def run_entry(m: Measure | str, qrels: list, run: list, name: str = "ranx") -> LibraryValues:
    return call(name, m, qrels, run)


def one_list(labels, scores, qid="q1"):
    return _one_list(labels, scores, qid, pad=2)  # d00, d01: byte order = list order


def value(m, labels, scores, name="ranx") -> float:
    return only_value(run_entry(m, *one_list(labels, scores), name=name))


# ---- published numbers (CONVENTIONS.md "External numbers") ------------------------------------

GRADED = [3, 2, 0, 2, 0, 3, 0, 1, 0, 1]
SCORES_10_TO_1 = [float(10 - i) for i in range(10)]


@pytest.mark.parametrize(
    "name,expected",
    [("P@5", 0.600), ("R@5", 0.500), ("RR", 1.000), ("nDCG@5", 0.717), ("nDCG", 0.907),
     ("ndcg_burges@5", 0.698), ("nDCG(gain=exponential)@5", 0.698)],
)
def test_published_graded_list(name, expected):
    assert round(value(name, GRADED, SCORES_10_TO_1), 3) == expected


def test_published_exponential_exact():
    # by hand: (2^rel - 1) gains 7, 3, 0, 3, 0 against the ideal 7, 7, 3, 3, 1
    d = [1 / math.log2(i + 2) for i in range(5)]
    dcg = 7 * d[0] + 3 * d[1] + 3 * d[3]
    idcg = 7 * d[0] + 7 * d[1] + 3 * d[2] + 3 * d[3] + 1 * d[4]
    assert value("ndcg_burges@5", GRADED, SCORES_10_TO_1) == pytest.approx(dcg / idcg, abs=1e-12)
    assert value("dcg_burges@5", GRADED, SCORES_10_TO_1) == pytest.approx(dcg, abs=1e-12)


def test_ties_at_the_top_first_listed_first():
    # qrels {a:0, b:1}, both scored 1.0: ranx puts a first (input order, 2 documents) -> P@1 = 0
    lv = run_entry("P@1", [("q", "a", 0), ("q", "b", 1)], [("q", "a", 1.0), ("q", "b", 1.0)])
    assert lv.per_query == {"q": 0.0}
    lv = run_entry("P@1", [("q", "a", 0), ("q", "b", 1)], [("q", "b", 1.0), ("q", "a", 1.0)])
    assert lv.per_query == {"q": 1.0}


def test_relevant_document_not_retrieved_judged_ideal():
    lv = run_entry(
        "nDCG@3",
        [("q", "a", 1), ("q", "b", 0), ("q", "c", 2), ("q", "z", 3)],
        [("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)],
    )
    assert round(lv.per_query["q"], 4) == 0.4200
    assert lv.per_query["q"] == pytest.approx(2.0 / (3 + 2 / L2_3 + 0.5), abs=1e-12)


# ---- the profile, fact by fact --------------------------------------------------------------


def _tied_ranks(n: int) -> list[int]:
    """The rank ranx gives each of n tied documents, by input position (RR of a lone relevant one)."""
    ranks = []
    for j in range(n):
        labels = [1 if i == j else 0 for i in range(n)]
        ranks.append(round(1 / value("RR", labels, [1.0] * n)))
    return ranks


def test_tie_order_is_input_order_up_to_15_documents():
    assert _tied_ranks(15) == list(range(1, 16))


def test_tie_order_is_scrambled_from_16_documents():
    # numba's quicksort stops being an insertion sort above 15 elements
    assert _tied_ranks(16) == list(range(15, 0, -1)) + [16]
    assert PROFILE.ties == "unspecified"


def test_plain_dicts_reverse_ties_and_match_queries_by_position():
    import ranx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # plain dicts: argsort ascending then reversed, so ties come out in reverse input order
        out = ranx.evaluate({"q": {"a": 0, "b": 1}}, {"q": {"a": 1.0, "b": 1.0}}, ["precision@1", "mrr"],
                            return_mean=False)
        assert list(out["precision@1"]) == [1.0]
        # same query ids in another order: ranx pairs the first qrels query with the first run
        # query, so q1's run is scored against q2's judgments
        qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
        run = {"q2": {"b": 1.0}, "q1": {"a": 1.0}}
        out = ranx.evaluate(qrels, run, ["precision@1", "mrr"], return_mean=False)
        assert list(out["precision@1"]) == [0.0, 0.0]


def test_evaluate_return_shape_depends_on_the_metric_count():
    # why the adapter reads run.scores instead of the return value
    import ranx

    q, r = ranx.Qrels(), ranx.Run()
    q.add_multi(["q"], [["a"]], [[1]])
    r.add_multi(["q"], [["a"]], [[1.0]])
    out = ranx.evaluate(q, r, ["precision@1"], return_mean=False)
    assert not isinstance(out, dict) and list(out) == [1.0]
    assert dict(r.scores["precision@1"]) == {"q": 1.0}
    with pytest.raises(KeyError):  # a single metric with plain dicts and per-query values
        ranx.evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, "precision@1", return_mean=False)


def test_empty_run_needs_the_empty_constructor():
    import ranx

    with pytest.raises(ValueError):
        ranx.Run({})
    lv = entry("ranx:make_comparable").evaluate(Qrels.from_records([("q", "a", 1)]), Run.from_records([]),
                                                [Measure("P", 1)])
    assert lv[Measure("P", 1)].per_query == {"q": 0.0}


def test_numba_functions_are_cached_on_disk():
    # ranx's njit(cache=True): compiled code is reused across processes, not rebuilt per case
    import importlib

    from numba.core.caching import NullCache

    ndcg = importlib.import_module("ranx.metrics.ndcg")
    precision = importlib.import_module("ranx.metrics.precision")

    for f in (ndcg._ndcg_parallel, ndcg._dcg, precision._precision_parallel):
        assert not isinstance(f._cache, NullCache), f


def test_scores_are_float64():
    lv = run_entry("P@1", [("q", "a", 1), ("q", "b", 0)], [("q", "b", 1.0), ("q", "a", 1.0 + 1e-12)])
    assert lv.per_query == {"q": 1.0}
    assert PROFILE.score_precision == "float64"


def test_labels_truncated_to_int():
    import ranx

    q = ranx.Qrels()
    q.add_multi(["q"], [["a", "b", "c", "d"]], [[1.7, -1.5, -0.5, 0.9]])
    assert dict(q.qrels["q"]) == {"a": 1, "b": -1, "c": 0, "d": 0}
    # 0.9 is not relevant, 1.7 is with gain 1: d (0.9) first, a (1.7) second
    assert value("RR", [0.9, 1.7], [2.0, 1.0]) == 0.5
    assert value("DCG", [0.9, 1.7], [2.0, 1.0]) == pytest.approx(1 / L2_3, abs=1e-12)
    assert PROFILE.label_type == "int_truncate"


def test_negative_labels_never_relevant_gain_zero():
    labels, scores = [-1, 2, -3], [3.0, 2.0, 1.0]
    assert value("nDCG", labels, scores) == pytest.approx(1 / L2_3, abs=1e-12)
    assert value("DCG", labels, scores) == pytest.approx(2 / L2_3, abs=1e-12)
    assert value("Rprec", labels, scores) == 0.0
    assert PROFILE.negative_labels == "unjudged"


def test_level_suffix_applies_to_gains_too():
    labels, scores = [1, 2, 3], [3.0, 2.0, 1.0]
    # -l2: label 1 has gain 0 in DCG and ideal; labels 2, 3 keep their value as gain
    assert value("ndcg-l2", labels, scores) == pytest.approx(
        (2 / L2_3 + 3 / 2) / (3 + 2 / L2_3), abs=1e-12)
    assert value("dcg-l2", labels, scores) == pytest.approx(2 / L2_3 + 3 / 2, abs=1e-12)
    assert value("P(rel=2)@2", labels, scores) == 0.5
    assert metric_string(parse_measure("ndcg_burges@10-l2")) == "ndcg_burges@10-l2"
    assert PROFILE.threshold_scope == "graded"
    # a threshold that leaves nDCG's gains alone has no ranx spelling
    binary = Measure("nDCG", 5, (("relevance_threshold", 2), ("threshold_scope", "binary")))
    assert not entry("ranx").supports(binary)


def test_thresholds_below_one_not_offered():
    assert not entry("ranx").supports(parse_measure("P(rel=0)@5"))


def test_precision_divides_by_k_beyond_the_list():
    assert value("P@5", [1, 1], [2.0, 1.0]) == pytest.approx(2 / 5, abs=1e-15)
    assert value("F1@5", [1, 1], [2.0, 1.0]) == pytest.approx(2 * 0.4 * 1.0 / 1.4, abs=1e-15)


def test_ap_divides_by_all_relevant_and_rr_honours_k():
    # relevant at ranks 1 and 3 of the list, 4 relevant judged
    qrels, run = one_list([1, 0, 1, 1, 1], [5.0, 4.0, 3.0])
    assert run_entry("AP@2", qrels, run).per_query["q1"] == pytest.approx(1 / 4, abs=1e-15)
    assert run_entry("AP", qrels, run).per_query["q1"] == pytest.approx((1 + 2 / 3) / 4, abs=1e-15)
    assert value("RR@1", [0, 1], [2.0, 1.0]) == 0.0
    assert value("RR@2", [0, 1], [2.0, 1.0]) == 0.5
    assert PROFILE.rr_cutoff == "honour" and PROFILE.ap_denominator == "relevant"


def test_empty_query_scores_zero_and_counts():
    qrels = [("q1", "a", 0), ("q1", "b", 0), ("q2", "a", 1)]
    run = [("q1", "a", 2.0), ("q1", "b", 1.0), ("q2", "a", 1.0)]
    for name in ("nDCG", "AP", "RR", "P@1", "R@1", "Rprec", "Success@1", "F1@1", "nDCG@1"):
        lv = run_entry(name, qrels, run)
        assert lv.per_query == {"q1": 0.0, "q2": 1.0}, name
        assert lv.mean == 0.5, name


def test_query_sets_must_match_unless_made_comparable():
    qrels = [("both", "a", 1), ("qrels_only", "a", 1)]
    run = [("both", "a", 1.0), ("run_only", "a", 1.0)]
    lv = run_entry("P@1", qrels, run)
    assert lv.error is not None and lv.error.startswith("AssertionError: Qrels and Run query ids do not match")
    assert PROFILE.query_set == "raise"
    lv = run_entry("P@1", qrels, run, name="ranx:make_comparable")
    assert lv.per_query == {"both": 1.0, "qrels_only": 0.0} and lv.mean == 0.5
    assert MAKE_COMPARABLE_PROFILE.query_set == "qrels"


def test_duplicate_listing_last_wins():
    lv = run_entry("P@1", [("q", "a", 1), ("q", "b", 0)],
                   [("q", "a", 3.0), ("q", "b", 2.0), ("q", "a", 1.0)])
    assert lv.per_query == {"q": 0.0}
    assert PROFILE.duplicates == "last"


def test_ranx_file_readers_keep_the_last_listing(tmp_path):
    import ranx

    (tmp_path / "run.trec").write_text("q Q0 a 1 3.0 r\nq Q0 b 2 2.0 r\nq Q0 a 3 1.0 r\n")
    (tmp_path / "qrels.trec").write_text("q 0 a 1\nq 0 a 0\nq 0 b 2\n")
    assert dict(ranx.Run.from_file(str(tmp_path / "run.trec")).run["q"]) == {"b": 2.0, "a": 1.0}
    assert dict(ranx.Qrels.from_file(str(tmp_path / "qrels.trec")).qrels["q"]) == {"b": 2, "a": 0}


def test_set_relevance_level_subtracts_from_every_label():
    # a third behaviour beside -lN and trec_eval's -l; the adapter never calls it
    import ranx

    q = ranx.Qrels()
    q.add_multi(["q"], [["a", "b", "c"]], [[1, 2, 3]])
    q.set_relevance_level(2)
    assert dict(q.qrels["q"]) == {"a": 0, "b": 1, "c": 2}


def test_hits_is_relevant_retrieved():
    # ranx's hits: the relevant documents retrieved, a count averaged over queries (Hits, not
    # NumRelRet, which sums)
    assert value("Hits", [1, 0, 2, 1], [4.0, 3.0, 2.0]) == 2.0
    assert value("hits@1", [1, 0, 2, 1], [4.0, 3.0, 2.0]) == 1.0


def test_bpref_reads_negative_labels_as_judged_non_relevant():
    # qrels {a: 1, n: -1}, n ranked above a: n is a judged non-relevant document above a, so
    # bpref = 1 - min(1, R=1) / min(R=1, N=1) = 0 (trec_eval, where -1 is unjudged, gives 1)
    lv = run_entry("bpref", [("q", "a", 1), ("q", "n", -1)], [("q", "n", 2.0), ("q", "a", 1.0)])
    assert lv.per_query == {"q": 0.0}


def test_bpref_failures_are_refused_with_their_smallest_case():
    lv = run_entry("bpref", [("q1", "a", 0), ("q2", "b", 1), ("q2", "c", 0)],
                   [("q1", "a", 1.0), ("q2", "b", 0.5), ("q2", "c", 0.1)])
    assert lv.error.startswith("refused by the adapter: query 'q1' has no relevant judged")
    lv = run_entry("bpref", [("q1", "a", 1)], [("q1", "a", 1.0), ("q1", "b", 0.5)])
    assert lv.error.startswith("refused by the adapter: query 'q1' has no judged non-relevant")


def test_the_failures_behind_the_refusals_live():
    """What the refusals rest on, called on ranx itself: with q1 (no relevant judgment) beside
    it, q2's bpref is 0.0, alone 1.0; with no judged non-relevant document, NaN."""
    import math
    import warnings

    import ranx

    def bpref(qrels, run):
        q, r = ranx.Qrels(), ranx.Run()
        q.add_multi(list(qrels), [list(d) for d in qrels.values()], [list(d.values()) for d in qrels.values()])
        r.add_multi(list(run), [list(d) for d in run.values()], [list(d.values()) for d in run.values()])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ranx.evaluate(q, r, ["bpref"], return_mean=False)
        return dict(r.scores["bpref"])

    both = bpref({"q1": {"a": 0}, "q2": {"b": 1, "c": 0}}, {"q1": {"a": 1.0}, "q2": {"b": 0.5, "c": 0.1}})
    assert both["q2"] == 0.0
    assert bpref({"q2": {"b": 1, "c": 0}}, {"q2": {"b": 0.5, "c": 0.1}})["q2"] == 1.0
    assert math.isnan(bpref({"q1": {"a": 1}}, {"q1": {"a": 1.0, "b": 0.5}})["q1"])


def test_rbp_gains_are_the_labels():
    # labels 2, 1, 3 ranked in that order: rbp.8 = 0.2 (2 + 0.8 x 1 + 0.64 x 3) = 0.944
    lv = run_entry("rbp.8", [("q", "a", 2), ("q", "b", 1), ("q", "c", 3)],
                   [("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)])
    assert lv.per_query["q"] == pytest.approx(0.2 * (2 + 0.8 * 1 + 0.64 * 3), abs=1e-12)


def test_supports():
    e = entry("ranx")
    yes = ["nDCG", "nDCG@10", "ndcg_burges@10", "DCG", "dcg_burges@3", "AP", "map@10", "RR",
           "mrr@10", "P@5", "F1@5", "R", "R@5", "Success", "hit_rate@5", "Rprec",
           "precision@5-l2", "ndcg@10-l2", "precision", "f1", "hits@5", "hits", "bpref",
           "rbp.95", "RBP(p=0.8)"]
    no = ["NumQ", "NumRel", "NumRet", "nDCG(gain='0:0,1:1,2:3')@5", "P(k_beyond_list=min_k_n)@5",
          "T(alpha=0.5)@5", "nDCG(discount=jarvelin)@5", "NumRelRet", "SetF(beta=0.5)",
          "RBP(p=1e-05)", "infAP", "ERR@10"]
    assert [n for n in yes if not e.supports(parse_measure(n))] == []
    assert [n for n in no if e.supports(parse_measure(n))] == []

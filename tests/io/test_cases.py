"""The edge-case corpus (``conformance/cases_data/``) and its loader (``conformance.io.cases``).

What is checked:

- the bundled corpus loads, names are unique, there are at least 60 small curated cases plus the
  deep one, and every case the corpus promises is present by name;
- every ``single_axis`` claim: for each of the case's metrics, switching that axis alone (the
  rest held at the trec_eval profile updated by the case's ``base``) between two of its compared
  values changes the reference's mean. Claims are checked, not assumed;
- every pair of values, on every axis where library entries differ, is told apart by some
  single-axis case;
- a few cases encode published or hand-computed examples, and the reference gives those numbers
  on them (so a typo in the data shows up);
- every case evaluates under the trec_eval profile, refusing only what trec_eval refuses;
- bad case files raise InputError naming the file and the case;
- ``deep.json`` is what ``tests/support/make_deep_case.py`` generates.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

import conformance
from conformance.io import cases as cases_mod
from conformance.io.cases import DEFAULT_METRICS, Case, load_cases, load_file
from conformance.conventions import AXES, TREC_EVAL, format_value
from conformance.errors import EvaluationError, InputError
from conformance.measures import parse_measures
from conformance.reference import evaluate

from make_deep_case import generate as generate_deep

CORPUS = load_cases()
BY_NAME = {c.name: c for c in CORPUS}
SINGLE = [c for c in CORPUS if c.single_axis is not None]

# Cases allowed beyond the "small" bound (1-3 queries, at most 12 documents per query).
LARGE = {"deep-three-queries-1000-docs", "depth-forty-docs-relevant-below-32"}

# Promised cases, by what they must show.
REQUIRED = {
    "ten results graded [3,2,0,2,0,3,0,1,0,1], scores 10..1": "graded-ten",
    "... in ideal order": "graded-ten-ideal-order",
    "... one relevant at rank 1, the rest buried at ranks 7-10": "graded-ten-one-top-rest-buried",
    "... non-relevant at rank 5, grade 3 at rank 6 (before the swap)": "graded-ten",
    "... after swapping ranks 5 and 6": "graded-ten-swap-5-6",
    "... five grade-1 on top, two grade-3 just below k=5": "graded-ten-grade1-top-grade3-below-5",
    "... no relevant document at all": "graded-ten-no-relevant",
    "... all documents equally graded": "graded-ten-all-equal",
    "ties at the top": "ties-top-two",
    "ties across the cutoff": "ties-across-cutoff",
    "a relevant document never retrieved": "relevant-never-retrieved",
    "fewer results than k": "fewer-results-than-k",
    "negative labels": "negative-labels",
    "fractional labels": "fractional-labels",
    "a one-document list": "one-document-list",
    "a query missing from the run": "query-missing-from-run",
    "a query missing from the qrels": "query-missing-from-qrels",
    "1.0 vs 1.0+1e-9 tie in float32": "scores-float32-near-one",
    "1e8 vs 1e8+1 tie in float32": "scores-float32-1e8",
    "d9 vs d10 (byte order vs numeric)": "ties-docid-numeric-vs-byte-order",
    "a deep multi-query case": "deep-three-queries-1000-docs",
    "40 documents, relevant below rank 32 (XGBoost's top-32 ndcg)": "depth-forty-docs-relevant-below-32",
}

# Axis -> values on which library entries differ. Every pair must be told apart by a
# single-axis case (an outcome is the mean and, under ties=unspecified, the range's upper end;
# a refusal is an outcome of its own).
DIFFERING_VALUES = {
    "gain": ["linear", "exponential", "1:3,2:9,4:4.5"],
    "discount": ["log2", "jarvelin"],
    "ideal": ["judged", "retrieved"],
    "k_beyond_list": ["k", "min_k_n"],
    "ap_denominator": ["relevant", "retrieved_relevant", "min_k_relevant"],
    "empty_query": ["zero", "one", "nan", "skip", "raise"],
    "ties": ["docid_desc", "docid_asc", "input_order", "reverse_input", "average", "unspecified"],
    "relevance_threshold": [1, 2],
    "threshold_scope": ["binary", "graded"],
    "negative_labels": ["unjudged", "keep", "raise"],
    "label_type": ["float", "int_truncate", "raise"],
    "query_set": ["run", "qrels", "raise"],
    "depth": [None, 32],
    "score_precision": ["float64", "float32"],
    "rr_cutoff": ["honour", "ignore"],
    "rank_source": ["score", "rank_column"],
    "duplicates": ["error", "first", "last"],
    "identical_ids": ["keep", "drop"],
    "rounding": [None, 5],
}

# Two outcomes differ when a value differs by more than this: a claimed convention effect must
# be a real change of the number, not float noise.
DIFFERENCE = 1e-9


def outcome(case: Case, measure, conventions):
    """(mean, upper end of the mean) under the reference, or ("refused", error type)."""
    try:
        ev = evaluate(case.qrels, case.run, [measure], conventions)
    except EvaluationError:
        return ("refused", "EvaluationError")
    return (ev.aggregate(measure), ev.aggregate(measure, upper=True))


def differ(a, b) -> bool:
    if a[0] == "refused" or b[0] == "refused":
        return a != b
    for x, y in zip(a, b):
        if math.isnan(x) != math.isnan(y):
            return True
        if not math.isnan(x) and abs(x - y) > DIFFERENCE:
            return True
    return False


def switched(case: Case, measure) -> dict:
    """Compared axis value (public text) -> outcome, everything else held at the case's base."""
    base = case.conventions()
    return {format_value(v): outcome(case, measure, base.replace(**{case.single_axis: v}))
            for v in case.compared_values()}


# ------------------------------------------------------------------------------------------
# The corpus
# ------------------------------------------------------------------------------------------


def test_corpus_loads_with_unique_names_and_enough_cases():
    names = [c.name for c in CORPUS]
    assert len(names) == len(set(names))
    curated = [c for c in CORPUS if c.name not in LARGE]
    assert len(curated) >= 60, len(curated)
    assert all(isinstance(c, Case) for c in CORPUS)


def test_corpus_is_bundled_inside_the_package():
    root = cases_mod.default_directory()
    assert root.parent == Path(conformance.__file__).resolve().parent
    assert sorted(p.stem for p in root.glob("*.json")) == sorted({c.family for c in CORPUS})


@pytest.mark.parametrize("what", sorted(REQUIRED))
def test_required_case_present(what):
    assert REQUIRED[what] in BY_NAME, f"missing case for {what}: {REQUIRED[what]}"


def test_small_cases_are_small():
    for c in CORPUS:
        if c.name in LARGE:
            continue
        nq = len(set(c.qrels.present_qids()) | set(c.run.present_qids()))
        per_query = max(
            max((int((c.run.qcode == i).sum()) for i in range(len(c.run.qids))), default=0),
            max((int((c.qrels.qcode == i).sum()) for i in range(len(c.qrels.qids))), default=0),
        )
        assert 1 <= nq <= 3 and per_query <= 12, (c.name, nq, per_query)


def test_deep_case_is_deep():
    deep = BY_NAME["deep-three-queries-1000-docs"]
    assert len(deep.run.present_qids()) == 3
    assert len(deep.run) == 3000
    forty = BY_NAME["depth-forty-docs-relevant-below-32"]
    ranked = forty.run.to_dict()["q1"]
    labels = forty.qrels.to_dict()["q1"]
    below = [d for d, s in ranked.items() if sorted(ranked.values(), reverse=True).index(s) >= 32]
    assert len(ranked) == 40 and any(labels.get(d, 0) > 0 for d in below)


def test_default_metrics_apply_when_a_case_names_none():
    graded = BY_NAME["graded-ten"]
    assert graded.metrics == list(DEFAULT_METRICS)
    assert [m.text for m in graded.measures] == list(DEFAULT_METRICS)


def test_listing_order_is_kept():
    c = BY_NAME["ties-three-way"]
    assert c.run.doc_ids().tolist() == ["c", "a", "b"]
    assert c.run.source == "ties.json#ties-three-way"


# ------------------------------------------------------------------------------------------
# Single-axis claims
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", SINGLE, ids=[c.name for c in SINGLE])
def test_single_axis_claim_holds(case):
    for measure in case.measures:
        results = switched(case, measure)
        pairs = [(a, b) for a, b in itertools.combinations(results, 2)
                 if differ(results[a], results[b])]
        assert pairs, (
            f"{case.name}: switching {case.single_axis} alone over {list(results)} does not change "
            f"{measure.text}: {results}"
        )


def test_every_differing_value_pair_is_covered():
    covered: dict[str, set[frozenset]] = {a: set() for a in DIFFERING_VALUES}
    for case in SINGLE:
        for measure in case.measures:
            results = switched(case, measure)
            for a, b in itertools.combinations(results, 2):
                if differ(results[a], results[b]):
                    covered[case.single_axis].add(frozenset((a, b)))
    missing = []
    for axis, values in DIFFERING_VALUES.items():
        texts = [format_value(AXES[axis].parse(format_value(v))) for v in values]
        for pair in itertools.combinations(texts, 2):
            if frozenset(pair) not in covered[axis]:
                missing.append(f"{axis}: {pair[0]} vs {pair[1]}")
    assert not missing, "no single-axis case tells apart: " + "; ".join(missing)


def test_single_axis_cases_exist_for_every_differing_axis():
    assert {c.single_axis for c in SINGLE} >= set(DIFFERING_VALUES)


# ------------------------------------------------------------------------------------------
# Published and hand-computed numbers on corpus cases (they guard the data's encoding)
# ------------------------------------------------------------------------------------------


def mean(case_name: str, metric: str, **axes) -> float:
    c = BY_NAME[case_name]
    m = parse_measures(metric)[0]
    return evaluate(c.qrels, c.run, [m], c.conventions().replace(**axes)).aggregate(m)


def test_graded_ten_hand_values():
    # Grades [3,2,0,2,0,3,0,1,0,1]; discounts 1/log2(r+1), r = 1..10: 1, .63093, .5, .43068,
    # .38685, .35621, .33333, .31546, .30103, .28906. Linear DCG@5 = 3 + 2(.63093) + 2(.43068)
    # = 5.12321 over the ideal [3,3,2,2,1]: 3 + 1.89279 + 1 + .86135 + .38685 = 7.14099 -> .71743.
    # Exponential (7,3,0,3,0): 7 + 1.89279 + 1.29204 = 10.18483 over (7,7,3,3,1): 7 + 4.41651
    # + 1.5 + 1.29204 + .38685 = 14.5954 -> .69781. Whole list: 5.12321 + 3(.35621) + .31546
    # + .28906 = 6.79636 over the judged ideal 7.14099 + .35621 = 7.4972 -> .90652.
    assert mean("graded-ten", "P@5") == pytest.approx(0.6, abs=5e-4)
    assert mean("graded-ten", "R@5") == pytest.approx(0.5, abs=5e-4)
    assert mean("graded-ten", "RR") == pytest.approx(1.0, abs=5e-4)
    assert mean("graded-ten", "nDCG@5") == pytest.approx(0.717, abs=5e-4)
    assert mean("graded-ten", "nDCG@5", gain="exponential") == pytest.approx(0.698, abs=5e-4)
    assert mean("graded-ten", "nDCG") == pytest.approx(0.907, abs=5e-4)


def test_conventions_md_examples():
    # Ties at the top: {a:0, b:1}, both 1.0 -> P@1 1 (docid desc), 0 (input order), 0.5 (average).
    assert mean("ties-top-two", "P@1") == 1.0
    assert mean("ties-top-two", "P@1", ties="input_order") == 0.0
    assert mean("ties-top-two", "nDCG@1", ties="average") == 0.5
    # Relevant doc not retrieved: nDCG@3 0.4200 (judged ideal) and 0.7602 (retrieved ideal).
    assert mean("relevant-never-retrieved", "nDCG@3") == pytest.approx(0.4200, abs=5e-5)
    assert mean("relevant-never-retrieved", "nDCG@3", ideal="retrieved") == pytest.approx(0.7602, abs=5e-5)


def test_sklearn_docstring_values():
    # scikit-learn's ndcg_score docstring (printed to 2 digits) and CONVENTIONS.md (6 digits).
    assert mean("sklearn-docstring", "nDCG") == pytest.approx(0.695694, abs=5e-7)
    assert mean("sklearn-docstring-second-scores", "nDCG") == pytest.approx(0.49, abs=0.01)
    assert mean("sklearn-docstring-second-scores", "nDCG@4") == pytest.approx(0.35, abs=0.01)
    assert mean("sklearn-docstring-ties-k1", "nDCG@1", ties="average") == pytest.approx(0.75)
    assert mean("sklearn-docstring-ties-k1", "nDCG@1", ties="reverse_input") == pytest.approx(0.5)
    assert mean("sklearn-docstring-all-tied", "nDCG", ties="average") == pytest.approx(0.690979, abs=5e-7)


def test_hand_values_of_single_axis_cases():
    # Three results, two relevant: P@5 = 2/5 by k, 2/3 by list length.
    assert mean("fewer-results-than-k", "P@5") == pytest.approx(0.4)
    assert mean("fewer-results-than-k", "P@5", k_beyond_list="min_k_n") == pytest.approx(2 / 3)
    # First relevant at rank 7: RR@5 = 0 honoured, 1/7 ignored (trec_eval).
    assert mean("rr-cutoff-first-relevant-at-7", "RR@5") == pytest.approx(1 / 7)
    assert mean("rr-cutoff-first-relevant-at-7", "RR@5", rr_cutoff="honour") == 0.0
    # AP@5: precisions 1 (rank 1) and 2/4 (rank 4) sum to 1.5; / 6, / 2, / 5.
    assert mean("ap-denominator-three-ways", "AP@5") == pytest.approx(0.25)
    assert mean("ap-denominator-three-ways", "AP@5", ap_denominator="retrieved_relevant") == pytest.approx(0.75)
    assert mean("ap-denominator-three-ways", "AP@5", ap_denominator="min_k_relevant") == pytest.approx(0.3)
    # Three tied, listed c, a, b, labels a=1 b=2 c=3; DCG@2 = g1 + g2/log2(3).
    d = 1 / math.log2(3)
    assert mean("ties-three-way", "DCG@2") == pytest.approx(3 + 2 * d)  # c, b
    assert mean("ties-three-way", "DCG@2", ties="docid_asc") == pytest.approx(1 + 2 * d)  # a, b
    assert mean("ties-three-way", "DCG@2", ties="input_order") == pytest.approx(3 + 1 * d)  # c, a
    assert mean("ties-three-way", "DCG@2", ties="reverse_input") == pytest.approx(2 + 1 * d)  # b, a
    assert mean("ties-three-way", "DCG@2", ties="average") == pytest.approx(2 + 2 * d)
    # Float32 ties: x (1+1e-9, non-relevant) and y (1.0, relevant) tie; docid desc puts y first.
    assert mean("scores-float32-near-one", "P@1") == 1.0
    assert mean("scores-float32-near-one", "P@1", score_precision="float64") == 0.0
    # Query missing from the run: q1 perfect; the qrels query set halves every mean.
    assert mean("query-missing-from-run", "AP") == 1.0
    assert mean("query-missing-from-run", "AP", query_set="qrels") == 0.5
    # Empty q1 beside q2 with its relevant document at rank 2 (RR 0.5).
    assert mean("query-empty-mixed", "RR") == pytest.approx(0.25)
    assert mean("query-empty-mixed", "RR", empty_query="one") == pytest.approx(0.75)
    assert mean("query-empty-mixed", "RR", empty_query="skip") == pytest.approx(0.5)
    assert math.isnan(mean("query-empty-mixed", "RR", empty_query="nan"))


# Control cases: the description says the axis does NOT matter here.
CONTROLS = {
    "binary-labels-gain-irrelevant": ("gain", ["linear", "exponential"], DEFAULT_METRICS),
    "ap-all-relevant-retrieved": ("ap_denominator", ["relevant", "retrieved_relevant", "min_k_relevant"], ["AP", "AP@5"]),
    "negative-labels-binary-unaffected": ("negative_labels", ["unjudged", "keep"], ["P@5", "R@5", "AP", "RR"]),
    "relevance-threshold-ndcg-unaffected": ("relevance_threshold", [1, 2], ["nDCG@5", "nDCG", "DCG@5"]),
    "graded-ten-all-equal": ("gain", ["linear", "exponential"], ["nDCG@5", "nDCG@10", "nDCG"]),
    "graded-ten-ideal-order": ("gain", ["linear", "exponential"], ["nDCG@5", "nDCG@10", "nDCG"]),
}


@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_control_case_axis_does_not_matter(name):
    axis, values, metrics = CONTROLS[name]
    c = BY_NAME[name]
    assert c.single_axis is None and axis in c.tags
    for metric in metrics:
        m = parse_measures(metric)[0]
        results = [outcome(c, m, c.conventions().replace(**{axis: v})) for v in values]
        assert not any(differ(results[0], r) for r in results[1:]), (metric, results)


def test_relevance_threshold_control_still_moves_binary_measures():
    assert mean("relevance-threshold-ndcg-unaffected", "P@5") != mean(
        "relevance-threshold-ndcg-unaffected", "P@5", relevance_threshold=2)


def test_no_scored_query_gives_nan_for_every_measure():
    # queries-disjoint: run answers q2, only q1 judged; query_set=run scores no query at all, so
    # every mean is over nothing (NaN), as it already is for P@5 and AP.
    for metric in ("P@5", "AP", "nDCG@5", "DCG@5"):
        assert math.isnan(mean("queries-disjoint", metric)), metric


# ------------------------------------------------------------------------------------------
# Every case evaluates under the trec_eval profile
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CORPUS, ids=[c.name for c in CORPUS])
def test_case_evaluates_under_trec_eval(case):
    """Under the trec_eval profile (``TREC_EVAL``, not the case's own conventions) every case
    gives each of its measures, or is refused only where trec_eval refuses (a run listing a
    document twice); every value lies in its family's range ([0, 1] for a bounded family, a
    sum of gains at least 0 when no label is negative: trec_eval reads a negative label as
    judged non-relevant, gain 0)."""
    if "duplicates" in case.tags:  # trec_eval refuses a run listing a document twice
        with pytest.raises(EvaluationError):
            evaluate(case.qrels, case.run, case.measures, TREC_EVAL)
        return
    ev = evaluate(case.qrels, case.run, case.measures, TREC_EVAL)
    for m in case.measures:
        values = ev.per_query[m][ev.counted[m]]
        values = values[~np.isnan(values)]
        assert (values >= -1e-12).all(), (m.text, values)
        if m.record.bounded:
            assert (values <= 1 + 1e-12).all(), (m.text, values)


# ------------------------------------------------------------------------------------------
# The deep case is reproducible
# ------------------------------------------------------------------------------------------


def test_deep_json_is_what_the_generator_makes():
    path = cases_mod.default_directory() / "deep.json"
    assert json.loads(path.read_text(encoding="utf-8")) == generate_deep()


# ------------------------------------------------------------------------------------------
# Bad case files
# ------------------------------------------------------------------------------------------

GOOD = {"name": "ok-case", "description": "A fine case.", "tags": [],
        "qrels": {"q1": {"a": 1}}, "run": {"q1": [["a", 1.0]]}}


def write(tmp_path: Path, cases, family="fam", name=None, raw: str | None = None) -> Path:
    path = tmp_path / f"{name or family}.json"
    path.write_text(raw if raw is not None else json.dumps({"family": family, "cases": cases}),
                    encoding="utf-8")
    return path


def bad(**changes):
    c = dict(GOOD, name="bad-case")
    for k, v in changes.items():
        if v is _DROP:
            c.pop(k)
        else:
            c[k] = v
    return c


_DROP = object()

BAD_CASES = {
    "missing description": bad(description=_DROP),
    "empty description": bad(description=" "),
    "unknown key": bad(metric=["P@5"]),
    "tag not an axis": bad(tags=["tie"]),
    "single axis not tagged": bad(single_axis="ties"),
    "single axis unknown": bad(tags=["ties"], single_axis="tie"),
    "open axis without values": bad(tags=["depth"], single_axis="depth"),
    "one axis value": bad(tags=["ties"], single_axis="ties", axis_values=["average"]),
    "bad axis value": bad(tags=["ties"], single_axis="ties", axis_values=["average", "random"]),
    "axis values without single axis": bad(axis_values=["a", "b"]),
    "unknown metric": bad(metrics=["nDGC@5"]),
    "empty metrics": bad(metrics=[]),
    "bad base axis": bad(base={"tie": "average"}),
    "bad base value": bad(base={"ties": "random"}),
    "base sets the single axis": bad(tags=["ties"], single_axis="ties", base={"ties": "average"}),
    "qrels not an object": bad(qrels=[["q1", "a", 1]]),
    "empty qrels query": bad(qrels={"q1": {}}),
    "label not a number": bad(qrels={"q1": {"a": "1"}}),
    "boolean label": bad(qrels={"q1": {"a": True}}),
    "empty run query": bad(run={"q1": []}),
    "short run row": bad(run={"q1": [["a"]]}),
    "score not a number": bad(run={"q1": [["a", "high"]]}),
    "docid with a space": bad(run={"q1": [["a b", 1.0]]}),
    "mixed rank columns": bad(run={"q1": [["a", 1.0, 1], ["b", 0.5]]}),
    "qid with a space": bad(run={"q 1": [["a", 1.0]]}),
}


@pytest.mark.parametrize("what", sorted(BAD_CASES))
def test_bad_case_names_file_and_case(tmp_path, what):
    path = write(tmp_path, [GOOD, BAD_CASES[what]])
    with pytest.raises(InputError) as err:
        load_file(path)
    assert str(path) in str(err.value) and "bad-case" in str(err.value), str(err.value)


@pytest.mark.parametrize("name", ["Bad_Name", "", "bad--name", 7])
def test_bad_case_name_names_the_case_by_position(tmp_path, name):
    path = write(tmp_path, [GOOD, dict(GOOD, name=name)])
    with pytest.raises(InputError) as err:
        load_file(path)
    assert str(path) in str(err.value) and "case 2" in str(err.value)


def test_duplicate_name_in_one_file(tmp_path):
    path = write(tmp_path, [GOOD, GOOD])
    with pytest.raises(InputError, match="ok-case.*twice"):
        load_file(path)


def test_duplicate_name_across_files(tmp_path):
    write(tmp_path, [GOOD], family="one")
    write(tmp_path, [GOOD], family="two")
    with pytest.raises(InputError) as err:
        load_cases(tmp_path)
    assert "two.json#ok-case" in str(err.value) and "one.json" in str(err.value)


def test_duplicate_qrels_key_is_refused(tmp_path):
    raw = ('{"family": "fam", "cases": [{"name": "dup", "description": "d", "tags": [], '
           '"qrels": {"q1": {"a": 1, "a": 0}}, "run": {"q1": [["a", 1.0]]}}]}')
    with pytest.raises(InputError, match="'a' appears twice") as err:
        load_file(write(tmp_path, None, raw=raw))
    assert "fam.json" in str(err.value)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers_are_refused(tmp_path, constant):
    raw = json.dumps({"family": "fam", "cases": [GOOD]}).replace("1.0", constant)
    with pytest.raises(InputError, match="finite"):
        load_file(write(tmp_path, None, raw=raw))


def test_invalid_json_gives_the_line(tmp_path):
    path = write(tmp_path, None, raw='{"family": "fam",\n "cases": [,]}')
    with pytest.raises(InputError) as err:
        load_file(path)
    assert err.value.line == 2 and str(path) in str(err.value)


def test_family_must_match_file_name(tmp_path):
    with pytest.raises(InputError, match="must match"):
        load_file(write(tmp_path, [GOOD], family="fam", name="other"))


def test_empty_or_missing_directory(tmp_path):
    with pytest.raises(InputError, match="no \\*.json"):
        load_cases(tmp_path)
    with pytest.raises(InputError, match="not a directory"):
        load_cases(tmp_path / "absent")


def test_valid_optional_fields_are_read(tmp_path):
    c = dict(GOOD, tags=["depth", "ties"], single_axis="depth", axis_values=[None, 5],
             base={"ties": "average", "relevance_threshold": 2}, metrics=["nDCG@5", "P(rel=2)@5"],
             run={"q1": [["a", 1.0, 1]]})
    (case,) = load_file(write(tmp_path, [c]))
    assert case.axis_values == (None, 5)
    assert case.base == {"ties": "average", "relevance_threshold": 2}
    assert case.conventions() == TREC_EVAL.replace(ties="average", relevance_threshold=2)
    assert case.run.rank.tolist() == [1.0]
    assert case.family == "fam" and case.source == str(tmp_path / "fam.json")
    assert case.qrels.source == "fam.json#ok-case"

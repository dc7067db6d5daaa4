"""The reference under the trec_eval 10 profile reproduces trec_eval's own published test outputs.

Expected values are trec_eval's quicktest outputs in ``tests/data/trec_eval/`` (see its
README for the commands), compared to the 4 decimals trec_eval prints: a value matches when our
float formatted with ``%.4f`` is the printed text (exactly what the quicktest's ``diff`` checks);
counts (num_*) must be the printed integer. Every (output file, measure, query) pair is its own
test item, so a failure names exactly what differs.

| output file | trec_eval options | our conventions (base ``TREC_EVAL10``) |
|---|---|---|
| out.test | official measures | - |
| out.test.aq | ``-m all_trec -q`` | - |
| out.test.aqc | ``-c`` on results.trunc (topic 302 missing) | ``query_set=qrels`` |
| out.test.aqcM | ``-c -M100`` | ``query_set=qrels, depth=100`` |
| out.test.aql | ``-l2`` on qrels.rel_level (labels -1..4) | ``relevance_threshold=2`` |
| out.test.meas_params | ``P.5,7,3 recall.20,2000 ndcg.1=3,2=9,4=4.5`` | - |
| | ``ndcg_cut.10,20,23.4 success.2,5,20`` | |

Measure names map to our Measures as ``notes/trec_eval_semantics.md`` describes
(``tests/support/trec_eval_output.py``). Every printed number of these files is compared (``runid`` and
``relstring`` are text). The outputs that need an input file beside the qrels and the run are
left out: ``out.test.prefs`` and ``out.test.qrels_prefs`` (preference files, ``-R prefs``),
``out.test.qrels_jg`` (judgment groups, ``-R qrels_jg``) and ``out.test.aqZ`` (``-Z``, a
z-score file); ``out.test.a`` holds the 'all' rows of out.test.aq, which are compared there.

The v9 outputs (``v9_de6a29f/``) differ from the v10 ones only in iprec_at_recall and 11pt_avg,
where trec_eval 9 asks for floor(x R + 0.9) relevant documents at recall level x and trec_eval
10 for lround(x R) (axis ``iprec_rank``), and in v10's new measures (rbp, rbp_resid, unj) and its
per-query rows for the topic ``-c`` fills in: those v9 values are reproduced too, under the
trec_eval 9 conventions (``TREC_EVAL``: ``iprec_rank=floor_plus_0.9``, float32 scores).

Two further checks guard the harness itself: pytrec_eval (trec_eval 9 code, float32 scores) run
live on the same files must reproduce the same printed values (the v9 ones), and the v9 expected
outputs must agree with the v10 ones on every other value.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import pytest

from conformance.conventions import TREC_EVAL, TREC_EVAL10, Conventions
from conformance.measures import Measure

from trec_eval_output import (COUNT_MEASURES, NOT_NUMBERS, Row, measure_for, pytrec_eval_request,
                              read_output)

PEER_DIR = Path(__file__).resolve().parents[1] / "data" / "trec_eval"
V9_DIR = PEER_DIR / "v9_de6a29f"


@dataclass(frozen=True)
class PeerCase:
    output: str
    qrels: str
    run: str
    conventions: Conventions
    complete: bool = False  # trec_eval -c
    depth: int | None = None  # trec_eval -M
    relevance_level: int = 1  # trec_eval -l


CASES = {
    c.output: c
    for c in [
        PeerCase("out.test", "qrels.test", "results.test", TREC_EVAL10),
        PeerCase("out.test.aq", "qrels.test", "results.test", TREC_EVAL10),
        PeerCase(
            "out.test.aqc", "qrels.test", "results.trunc",
            TREC_EVAL10.replace(query_set="qrels"), complete=True,
        ),
        PeerCase(
            "out.test.aqcM", "qrels.test", "results.trunc",
            TREC_EVAL10.replace(query_set="qrels", depth=100), complete=True, depth=100,
        ),
        PeerCase(
            "out.test.aql", "qrels.rel_level", "results.test",
            TREC_EVAL10.replace(relevance_threshold=2), relevance_level=2,
        ),
        PeerCase("out.test.meas_params", "qrels.test", "results.test", TREC_EVAL10),
    ]
}

# How many printed values each file holds. Pinned so that a change in the name mapping cannot
# silently shrink the comparison: every printed number but runid and relstring.
EXPECTED_ITEM_COUNTS = {
    # 'all' only: num_q, num_ret, num_rel, num_rel_ret, map, gm_map, Rprec, bpref, recip_rank,
    # 11 iprec_at_recall, 9 P_k
    "out.test": 29,
    # 95 per query x 3 + 98 'all' (num_q, gm_map and gm_bpref are printed for 'all' only)
    "out.test.aq": 383,
    "out.test.aqc": 383,  # -c: topic 302 printed too
    "out.test.aqcM": 383,
    "out.test.aql": 383,
    "out.test.meas_params": 88,  # 22 per query x 3 + 22 'all'
}
# The measures whose printed values differ between trec_eval 9 and 10 (iprec_rank), and the
# measures trec_eval 9 lacks.
V9_DIFFERS = ("iprec_at_recall_", "11pt_avg")
V10_ONLY = ("rbp", "rbp_resid", "unj_")


def _peer_file(name: str) -> Path:
    if name.startswith("v9_de6a29f/") and not (PEER_DIR / name).is_file():
        name = name.split("/", 1)[1]  # the inputs are the same files in both versions
    path = PEER_DIR / name
    if not path.is_file():
        raise FileNotFoundError(
            f"trec_eval peer data missing: {path} (see tests/data/trec_eval/README.md)"
        )
    return path


@functools.cache
def _rows(output: str) -> dict[tuple[str, str], Row]:
    return read_output(_peer_file(output))


def _items(output: str) -> list[tuple[Row, Measure]]:
    out = []
    for row in _rows(output).values():
        measure = measure_for(row.measure)
        if measure is not None:
            out.append((row, measure))
        else:
            assert row.measure.split("_")[0] in NOT_NUMBERS, f"{output}: {row.measure} is not read"
    return out


ITEMS = [(output, row, measure) for output in CASES for row, measure in _items(output)]

# trec_eval 9's own values where they differ from 10's, reproduced under its conventions
V9 = "v9_de6a29f/"
for _output in list(CASES):
    CASES[V9 + _output] = PeerCase(
        V9 + _output, CASES[_output].qrels, CASES[_output].run,
        TREC_EVAL.replace(label_type=CASES[_output].conventions.label_type,
                          query_set=CASES[_output].conventions.query_set,
                          depth=CASES[_output].conventions.depth,
                          relevance_threshold=CASES[_output].conventions.relevance_threshold),
        complete=CASES[_output].complete, depth=CASES[_output].depth,
        relevance_level=CASES[_output].relevance_level)
V9_ITEMS = [(V9 + output, row, measure) for output in list(CASES) if not output.startswith(V9)
            for row, measure in _items(V9 + output) if row.measure.startswith(V9_DIFFERS)]
ITEMS += V9_ITEMS


def _item_id(item) -> str:
    output, row, _ = item
    return f"{output}:{row.measure}:{row.qid}"


def _mismatch(row: Row, value: float, who: str) -> str | None:
    """None if ``value`` prints as trec_eval printed ``row``, else a message saying how it differs."""
    if row.measure in COUNT_MEASURES:
        if float(value).is_integer() and int(value) == int(row.text):
            return None
        return f"{who} gives {value!r}, trec_eval printed {row.text}"
    ours = f"{value:.4f}"
    if ours == row.text:
        return None
    return (
        f"{who} gives {value!r} (prints {ours}), trec_eval printed {row.text} "
        f"(difference {value - row.value:+.6f})"
    )


# ------------------------------------------------------------------ the reference


@functools.cache
def _reference(output: str):
    from conformance.io import read_qrels, read_run
    from conformance.reference import evaluate

    case = CASES[output]
    measures = list(dict.fromkeys(m for _, m in _items(output)))
    qrels = read_qrels(str(_peer_file(case.qrels)))
    run = read_run(str(_peer_file(case.run)))
    return evaluate(qrels, run, measures, case.conventions)


@pytest.mark.parametrize("item", ITEMS, ids=_item_id)
def test_reference_reproduces_trec_eval(item):
    output, row, measure = item
    evaluation = _reference(output)
    if row.qid == "all":
        value = float(evaluation.aggregate(measure))
    else:
        qids = [str(q) for q in evaluation.qids]
        assert row.qid in qids, f"{output}: the reference did not score {row.qid} (scored: {qids})"
        value = float(evaluation.per_query[measure][qids.index(row.qid)])
    problem = _mismatch(row, value, f"reference ({measure.canonical} under {output}'s conventions)")
    assert problem is None, f"{output} {row.measure} {row.qid} (line {row.line}): {problem}"


@pytest.mark.parametrize("output", [o for o in EXPECTED_ITEM_COUNTS if o != "out.test"])
def test_reference_scores_the_printed_queries(output):
    """The reference scores exactly the queries trec_eval printed (with -c: also the missing 302)."""
    printed = sorted({q for (_, q) in _rows(output) if q != "all"})
    assert sorted(str(q) for q in _reference(output).qids) == printed


# ------------------------------------------------------------------ the harness itself


def test_every_comparable_value_is_collected():
    counts = {output: sum(1 for o, _, _ in ITEMS if o == output) for output in CASES
              if not output.startswith(V9)}
    assert counts == EXPECTED_ITEM_COUNTS
    # the v9 values that differ: 11 iprec_at_recall and 11pt_avg per query and 'all' in the
    # all_trec files, 5 iprec_at_recall and 11pt_avg in meas_params, 2 in out.test
    v9 = {o: sum(1 for x, _, _ in V9_ITEMS if x == V9 + o) for o in EXPECTED_ITEM_COUNTS}
    # (v9's -c prints no row for the missing topic 302)
    assert v9 == {"out.test": 11, "out.test.aq": 48, "out.test.aqc": 36, "out.test.aqcM": 36,
                  "out.test.aql": 48, "out.test.meas_params": 24}


def test_custom_gain_name_is_read():
    m = measure_for("ndcg_1=3,2=9,4=4.5")
    assert (m.family, m.cutoff) == ("nDCG", None)
    assert m.conventions(TREC_EVAL10).gain == "1:3,2:9,4:4.5"
    # trec_eval reads ndcg_cut.23.4 with atol and prints the cutoff it used
    assert measure_for("ndcg_cut_23") == Measure("nDCG", 23)
    assert measure_for("relative_P_10") == Measure("RelP", 10)
    assert measure_for("gm_map") == Measure("AP", overrides=(("mean", "geometric"),))
    assert measure_for("iprec_at_recall_0.10") == Measure("IPrec", params=(("recall", 0.1),))
    assert measure_for("11pt_avg_.25,.5,.75") == Measure(
        "IPrecAvg", params=(("recall_levels", (0.25, 0.5, 0.75)),))
    assert measure_for("utility_2,-1,0,0").params[0] == ("coefficients", (2.0, -1.0, 0.0, 0.0))
    for other in ("runid", "relstring"):
        assert measure_for(other) is None, other


PRINTED_NAMES = sorted({row.measure for _, row, _ in ITEMS})


@pytest.mark.parametrize("name", [n for n in PRINTED_NAMES if "=" not in n and "," not in n])
def test_measure_parser_reads_printed_names_as_this_mapping(name):
    from conformance.measures import parse_measure

    assert parse_measure(name) == measure_for(name)


def test_measure_parser_reads_the_custom_gain_option_as_this_mapping():
    # trec_eval prints "ndcg_1=3,2=9,4=4.5" for the option "-m ndcg.1=3,2=9,4=4.5"
    from conformance.measures import parse_measures

    assert parse_measures("ndcg.1=3,2=9,4=4.5") == [measure_for("ndcg_1=3,2=9,4=4.5")]


@pytest.mark.parametrize("output", list(EXPECTED_ITEM_COUNTS))
def test_v9_outputs_agree_on_our_measures(output):
    """v9 (de6a29f) and v10 print the same text for every value outside iprec_at_recall and
    11pt_avg (the iprec_rank axis); the only rows v10 adds are its new measures and the
    per-query rows of topic 302, which v10's -c evaluates against a stand-in ranking."""
    v10 = {k: r for k, r in _rows(output).items() if measure_for(r.measure) is not None}
    v9 = {k: r for k, r in read_output(V9_DIR / output).items() if measure_for(r.measure) is not None}
    differing = sorted(
        f"{k}: v9 {v9[k].text} v10 {v10[k].text}"
        for k in v9.keys() & v10.keys()
        if v9[k].text != v10[k].text and not k[0].startswith(V9_DIFFERS)
    )
    assert differing == []
    assert sorted(v9.keys() - v10.keys()) == []
    only_v10 = sorted(k for k in v10.keys() - v9.keys() if not k[0].startswith(V10_ONLY))
    if CASES[output].complete:
        assert only_v10 and all(qid == "302" for _, qid in only_v10)
    else:
        assert only_v10 == []


def _read_pairs(path: Path, value_field: int, cast) -> dict[str, dict[str, object]]:
    # pytrec_eval's own parse_run refuses results.trunc (extra trailing fields), so read the
    # whitespace-separated columns here: qid, docno and the label or score field.
    table: dict[str, dict[str, object]] = {}
    for line in path.read_text().splitlines():
        fields = line.split()
        if fields:
            table.setdefault(fields[0], {})[fields[2]] = cast(fields[value_field])
    return table


@functools.cache
def _pytrec_eval(output: str) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    import pytrec_eval

    case = CASES[output]
    qrels = _read_pairs(_peer_file(case.qrels), 3, int)
    run = _read_pairs(_peer_file(case.run), 4, float)
    if case.depth is not None:
        # pytrec_eval has no -M: keep the depth best documents in trec_eval 10's order
        # (score descending, then docno descending).
        run = {
            q: dict(sorted(docs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[: case.depth])
            for q, docs in run.items()
        }
    requests = {pytrec_eval_request(m.measure) for m, _ in _items(output)} - {None}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, requests, relevance_level=case.relevance_level)
    return evaluator.evaluate(run), qrels


def _pytrec_value(output: str, row: Row) -> float:
    """pytrec_eval's per-query value, or its 'all' formed by trec_eval's rule (meas_avg.c):
    mean over the evaluated queries, or with -c over every qrels query (missing ones add 0);
    num_* summed; with -c, num_q counts qrels queries and num_rel counts qrels labels > 0."""
    per_query, qrels = _pytrec_eval(output)
    if row.qid != "all":
        return per_query[row.qid][row.measure]
    values = [per_query[q][row.measure] for q in per_query]
    if CASES[output].complete:
        if row.measure == "num_q":
            return len(qrels)
        if row.measure == "num_rel":
            return sum(1 for docs in qrels.values() for label in docs.values() if label > 0)
        if row.measure in COUNT_MEASURES:
            return sum(values)
        return sum(values) / len(qrels)
    if row.measure in COUNT_MEASURES:
        return sum(values)
    return sum(values) / len(values)


# pytrec_eval cannot express the custom ndcg gains, and with -c it does not evaluate the topic
# missing from the run.
PYTREC_ITEMS = [
    (output, row, measure)
    for output, row, measure in ITEMS
    if pytrec_eval_request(row.measure) is not None and not (CASES[output].complete and row.qid == "302")
]


@pytest.mark.parametrize("item", PYTREC_ITEMS, ids=_item_id)
def test_pytrec_eval_reproduces_trec_eval(item):
    output, row, _ = item
    per_query, _ = _pytrec_eval(output)
    if row.qid != "all":
        assert row.qid in per_query, f"pytrec_eval did not score {row.qid} on {output}"
    problem = _mismatch(row, _pytrec_value(output, row), "pytrec_eval")
    assert problem is None, f"{output} {row.measure} {row.qid} (line {row.line}): {problem}"

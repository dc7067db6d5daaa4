"""The rag extra's libraries, live, through their adapters: each profile fact on a small case.

Expected values are hand computation (arithmetic in the comments), never the reference.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import pytest

from conformance import environments
from conformance.libs import all_entries, entry
from libcall import call, only_value

L3 = math.log2(3)
ROOT = Path(__file__).resolve().parents[2]


def _distributions(requirements) -> set[str]:
    """The distribution names of pip requirement texts ('numpy>=1.24' -> 'numpy')."""
    return {r.split(">")[0].split("=")[0].split("<")[0].strip().lower() for r in requirements}


def test_every_entry_names_an_extra_that_installs_it():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for e in all_entries():
        command = e.install_command()
        if e.environment is not None:
            # a side environment's entry names the command that makes it, whose requirements
            # hold the entry's distribution
            env = environments.environment(e.environment)
            assert command == env.create_command(), (e.name, command)
            pins = _distributions(env.requirements + env.no_deps)
            assert e.distribution.lower() in pins, (e.name, pins)
            continue
        # pip normalises extra names (trec_eval and trec-eval are one extra)
        extra = command.split("[", 1)[1].split("]", 1)[0].replace("-", "_")
        extra = next((x for x in extras if x.replace("-", "_") == extra), None)
        assert extra in extras, (e.name, command)
        names = _distributions(extras[extra])
        assert e.distribution.lower() in names, (e.name, extras[extra])
    assert entry("beir").install_command() == 'pip install -e ".[rag]"'  # from this checkout
    # the rag extra needs torch: it stays out of the torch-free `all`
    assert not set(extras["rag"]) & set(extras["all"])


@pytest.mark.requires_library("beir")
def test_beir_drops_identical_ids_and_rounds_to_five_places():
    # q1 judges q1 and d1 relevant and retrieves only q1; q2 retrieves d2 (relevant) and d3
    qrels = [("q1", "q1", 1), ("q1", "d1", 1), ("q2", "d2", 1)]
    run = [("q1", "q1", 2.0), ("q2", "d2", 1.0), ("q2", "d3", 1.0)]
    dropped = call("beir", "R@3", qrels, run)
    kept = call("beir:keep_identical_ids", "R@3", qrels, run)
    # dropped: q1's list is empty but q1 still counts, R = 2: 0; q2 1/1 -> mean 0.5
    assert dropped.per_query == {"q1": 0.0, "q2": 1.0} and dropped.mean == 0.5
    # kept: q1 finds q1, 1 of 2 -> 0.5; mean 0.75
    assert kept.per_query == {"q1": 0.5, "q2": 1.0} and kept.mean == 0.75
    # P@3 of q2 is 1/3, reported as 0.33333; mean (0 + 1/3) / 2 = 0.16667
    p = call("beir", "P@3", qrels, run)
    assert p.per_query["q2"] == 0.33333 and p.mean == 0.16667


@pytest.mark.requires_library("beir")
def test_beir_custom_ties_in_insertion_order_and_mean_over_every_judged_query():
    # a and b tied, listed a then b, b relevant: MRR@1 0 in insertion order (trec_eval's docid
    # descending order would put b first); q2 is judged but not retrieved and counts 0
    qrels = [("q1", "a", 0), ("q1", "b", 1), ("q2", "c", 1)]
    run = [("q1", "a", 1.0), ("q1", "b", 1.0)]
    assert call("beir:custom", "RR@1", qrels, run).per_query == {"q1": 0.0, "q2": 0.0}
    rr2 = call("beir:custom", "RR@2", qrels, run)
    assert rr2.per_query == {"q1": 0.5, "q2": 0.0} and rr2.mean == 0.25  # (1/2 + 0) / 2


@pytest.mark.requires_library("sentence_transformers")
def test_sentence_transformers_skips_queries_without_relevant_documents():
    # q2 judges nothing relevant: left out of the mean; q1 has a relevant at rank 2
    qrels = [("q1", "a", 0), ("q1", "b", 1), ("q2", "c", 0)]
    run = [("q1", "a", 2.0), ("q1", "b", 1.0), ("q2", "c", 1.0)]
    lv = call("sentence_transformers", "RR@10", qrels, run)
    assert lv.per_query == {"q1": 0.5} and lv.mean == 0.5


@pytest.mark.requires_library("sentence_transformers")
def test_sentence_transformers_binary_ndcg_docid_ascending_ties_and_map_denominator():
    # labels 2 and 1 both relevant; a (2) and b (1) tied: docid ascending puts a first.
    # NDCG@2 binary = (1 + 1/log2 3) / (1 + 1/log2 3) = 1 whatever the labels' grades
    qrels = [("q1", "a", 2), ("q1", "b", 1), ("q1", "z", 1)]
    run = [("q1", "b", 1.0), ("q1", "a", 1.0), ("q1", "c", 0.5)]
    assert only_value(call("sentence_transformers", "nDCG@2", qrels, run)) == pytest.approx(1.0, abs=1e-12)
    # MAP@2: precisions 1/1, 2/2 over min(2, |rel| = 3) = 2 -> 1.0 (trec_eval: / 3)
    assert only_value(call("sentence_transformers", "AP@2", qrels, run)) == pytest.approx(1.0, abs=1e-12)
    # a relevant document listed twice is two hits: recall 2 / 1
    dup = call("sentence_transformers", "R@2", [("q1", "a", 1)], [("q1", "a", 1.0), ("q1", "a", 0.9)])
    assert only_value(dup) == 2.0


@pytest.mark.requires_library("llama_index")
def test_llama_index_facts():
    qrels = [("q1", "a", 1), ("q1", "b", 0), ("q1", "c", 1), ("q1", "z", 1)]
    run = [("q1", "b", 3.0), ("q1", "a", 2.0), ("q1", "c", 1.0)]
    # NDCG: hits at ranks 2, 3; ideal 3 ones (z never retrieved): every expected id
    ideal = 1 + 1 / L3 + 1 / 2
    assert only_value(call("llama_index", "nDCG", qrels, run)) == pytest.approx((1 / L3 + 1 / 2) / ideal, abs=1e-12)
    assert only_value(call("llama_index:exponential", "nDCG", qrels, run)) == pytest.approx((1 / L3 + 1 / 2) / ideal, abs=1e-12)
    # granular MRR: (1/2 + 1/3) / 2; precision over the top 5 of 3 listed: 2 / 3
    assert only_value(call("llama_index:granular", "GranularRR", qrels, run)) == pytest.approx((1 / 2 + 1 / 3) / 2, abs=1e-12)
    assert only_value(call("llama_index", "P@5", qrels, run)) == pytest.approx(2 / 3, abs=1e-12)
    # a listed twice: AP = (1/1 + 2/2) / 1 = 2.0, above 1
    assert only_value(call("llama_index", "AP", [("q1", "a", 1)], [("q1", "a", 2.0), ("q1", "a", 1.0)])) == 2.0
    # no relevant document: the library raises ValueError
    assert "ValueError" in call("llama_index", "RR", [("q1", "a", 0)], [("q1", "a", 1.0)]).error


@pytest.mark.requires_library("llama_index")
def test_llama_index_counts_repeats_once_for_set_metrics_in_a_worker_too():
    # entries are pickled to their worker process: the entry must not hang on object identity
    import pickle

    e = pickle.loads(pickle.dumps(entry("llama_index")))
    from conformance.io.data import Qrels, Run
    from conformance.measures import parse_measure

    m = parse_measure("P@5")
    lv = e.evaluate(Qrels.from_records([("q1", "a", 1)]),
                    Run.from_records([("q1", "a", 2.0), ("q1", "a", 1.0)]), [m])[m]
    # set(["a", "a"]) = {a}: 1 hit / 1 distinct document (duplicates=set)
    assert lv.error is None and lv.per_query == {"q1": 1.0}


# One name per family added after these entries were written (issue 17); none of the three
# libraries computes any of them: BEIR's EvaluateRetrieval reports NDCG, MAP, Recall and P at k
# (and MRR, R_cap, top-k accuracy through evaluate_custom), sentence-transformers'
# InformationRetrievalEvaluator accuracy, precision, recall, MRR, nDCG and MAP at k, LlamaIndex's
# retrieval metrics hit rate, MRR, precision, recall, AP and nDCG.
NEWER_FAMILIES = (
    "bpref infAP Judged@10 unj_10 IPrec@0.5 11pt_avg Rprec_mult_0.20 utility.1,-1,0,0 G binG "
    "ndcg_rel Rndcg num_nonrel_judged_ret ERR@20 RBP(p=0.8) rbp_resid SDCG(max_rel=4)@10 "
    "NERR8(max_rel=4)@10 NERR9(max_rel=4)@10 NERR10(p=0.9,max_rel=4) NERR11(T=1,max_rel=4) "
    "INST(T=1,max_rel=4) INSQ(T=1,max_rel=4) BPM(T=1,max_rel=4)@10 FallOut@10 AUROC "
    "RecallAtPrecision(min_precision=0.5)@10 relative_P_10 SetAP Hits@10"
).split()


@pytest.mark.parametrize("name", ["beir", "beir:keep_identical_ids", "beir:custom",
                                  "sentence_transformers", "llama_index", "llama_index:granular",
                                  "llama_index:exponential"])
def test_rag_entries_do_not_claim_the_newer_families(name):
    from conformance.measures import parse_measures
    from conformance.profiles import computes

    e = entry(name)
    claimed = [m.text for m in parse_measures(NEWER_FAMILIES) if e.supports(m)]
    assert claimed == [], f"{name} claims {claimed}"
    # the profile lookup keeps a measure's parameters when it looks past the name's axes
    assert [t for t in NEWER_FAMILIES if computes(name, t)] == []


@pytest.mark.requires_library("beir")
def test_beir_recall_cap_divides_by_min_k_and_relevant_and_raises_on_none_relevant():
    # q1: relevant a, b, c; top 2 = x, a -> R_cap@2 = 1 / min(3, 2) = 0.5
    qrels = [("q1", "a", 1), ("q1", "b", 1), ("q1", "c", 1)]
    run = [("q1", "x", 2.0), ("q1", "a", 1.0)]
    assert call("beir:custom", "Rcap@2", qrels, run).mean == 0.5
    lv = call("beir:custom", "Rcap@2", qrels + [("q2", "d", 0)], run + [("q2", "d", 1.0)])
    assert lv.error is not None and "ZeroDivisionError" in lv.error


@pytest.mark.requires_library("beir")
def test_beir_custom_one_measures_refusal_is_its_own():
    """recall_cap divides by zero when no query has a relevant document; asked beside it, mrr,
    top_k_accuracy and hole still give their values, as they do alone (found by the long fuzz:
    the adapter gave every measure of the call recall_cap's error). By hand: no relevant
    document, so RR and Success are 0; q1's top 20 holds c, which no judgment names: Hole@20
    1/20 (one unjudged document over k), q2 nothing retrieved: 0; over the 2 judged queries 1/40."""
    from conformance.io.data import Qrels, Run
    from conformance.measures import parse_measure

    qrels = Qrels.from_records([("q1", "a", 0), ("q2", "b", 0)])
    run = Run.from_records([("q1", "a", 1.0), ("q1", "c", 0.5)])
    ms = [parse_measure(t) for t in ("RR@20", "Success@20", "Rcap@20", "Hole@20")]
    together = entry("beir:custom").evaluate(qrels, run, ms)
    assert "ZeroDivisionError" in together[ms[2]].error
    for m, mean in ((ms[0], 0.0), (ms[1], 0.0), (ms[3], 1 / 40)):
        alone = entry("beir:custom").evaluate(qrels, run, [m])[m]
        assert together[m] == alone and alone.error is None and alone.mean == mean, m.text


@pytest.mark.requires_library("beir")
def test_beir_hole_bug_is_refused_with_its_smallest_case():
    from beir.retrieval.evaluation import EvaluateRetrieval
    # the library itself: two run queries whose top document no judgment names, one judged
    # query: (1 + 1) / len(qrels) = 2.0, where each query's share is 1
    got = EvaluateRetrieval.evaluate_custom({"q1": {"d1": 1}}, {"q1": {"d2": 1.0}, "q2": {"d3": 1.0}},
                                            [1], "hole")
    assert got == {"Hole@1": 2.0}
    lv = call("beir:custom", "Hole@1", [("q1", "d1", 1)], [("q1", "d2", 1.0), ("q2", "d3", 1.0)])
    assert lv.error is not None and "library bug" in lv.error and "Hole@1 = 2.0" in lv.error
    # equal query sets: q1's top 2 = d2 (named by no judgment), d1 -> 1/2; q2's d3 -> 1 / 2
    lv = call("beir:custom", "Hole@2", [("q1", "d1", 1), ("q2", "d3", 0)],
              [("q1", "d2", 2.0), ("q1", "d1", 1.0), ("q2", "d3", 1.0)])
    assert lv.per_query == {"q1": 0.5, "q2": 0.0} and lv.mean == 0.25

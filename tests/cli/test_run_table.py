"""``conformance run``'s value tables (issue 16.1): every entry's value per measure, grouped in
agreement classes labelled by what sets each apart from trec_eval's class; agreeing entries
shown; ``--quiet`` and ``--format json``; ``--profile`` / ``--set``: the reference under the
user's own conventions beside the entries, and the run read under their duplicates rule.

Live libraries (trec_eval through pytrec_eval, LightGBM, XGBoost) on the bundled example.
"""

from __future__ import annotations

import json
import pytest
from click.testing import CliRunner

from conformance.cli import main
from bundled_example import QRELS, RUN, trec_eval_mean

# a missing library fails these tests (conftest.py), unless CONFORMANCE_ALLOW_MISSING names it
pytestmark = [pytest.mark.requires_library(name) for name in ("trec_eval", "lightgbm", "xgboost")]

LIBS = "trec_eval,lightgbm,xgboost"


def _run(*extra):
    result = CliRunner().invoke(main, ["run", "--libs", LIBS, "--qrels", QRELS, "--run", RUN,
                                       "-m", "nDCG@10", *extra])
    assert result.exit_code == 0, result.stderr
    return result.stdout


def _trec_eval_ndcg10() -> float:
    """nDCG@10 by pytrec_eval itself, on the same files."""
    return trec_eval_mean("ndcg_cut_10")


@pytest.fixture(scope="module")
def document():
    return json.loads(_run("--format", "json", "--quiet"))


def test_json_keeps_the_keys_of_json_and_adds_the_table(document, tmp_path):
    out = tmp_path / "r.json"
    _run("--json", str(out), "--quiet")
    written = json.loads(out.read_text())
    assert set(document) == set(written) | {"table"}
    assert {k: document[k] for k in written} == written


def test_every_entry_appears_once_in_its_agreement_class(document):
    [row] = document["table"]
    assert row["metric"] == "nDCG@10" and row["case"] == "run.txt"
    [comparison] = document["comparisons"]
    assert [[e["entry"] for e in cls["entries"]] for cls in row["classes"]] == comparison["agreement"]
    entries = [e["entry"] for cls in row["classes"] for e in cls["entries"]]
    assert sorted(entries) == sorted(set(entries))
    # xgboost agrees with lightgbm: shown beside it, not dropped
    assert {"lightgbm", "xgboost"} <= set(entries)
    for cls in row["classes"]:
        for e in cls["entries"]:
            assert e["mean"] == comparison["values"][e["entry"]] and e["queries"] == 3 and e["error"] is None


def test_the_base_class_holds_trec_eval_with_its_own_value(document):
    [row] = document["table"]
    base = [cls for cls in row["classes"] if cls["base"]]
    assert len(base) == 1 and base[0]["apart"] == {}
    [te] = [e for e in base[0]["entries"] if e["entry"] == "trec_eval"]
    assert te["mean"] == pytest.approx(_trec_eval_ndcg10(), abs=1e-12)


def test_every_other_class_is_labelled_by_its_explaining_conventions(document):
    [row] = document["table"]
    [comparison] = document["comparisons"]
    others = [cls for cls in row["classes"] if not cls["base"]]
    assert others, "LightGBM's nDCG@10 differs from trec_eval's on the example"
    for cls in others:
        names = {e["entry"] for e in cls["entries"]}
        # the first: through the class's representative (pairs named follow)
        expl = next(x for x in comparison["explanations"]
                    if "trec_eval" in x["between"] and names & set(x["between"]))
        side = 1 if expl["between"][1] in names else 0
        assert cls["explained"] and cls["apart"] == {a: expl["values"][a][side] for a in expl["axes"]}
    lgb = next(cls for cls in others if "lightgbm" in {e["entry"] for e in cls["entries"]})
    assert lgb["apart"].get("gain") == "exponential"  # LightGBM's nDCG: 2^label - 1


def test_text_shows_the_class_tables_first_and_the_explanations_only_with_details():
    """Issue 25.2: the answer first. One line per class (value, label, entries), then the
    entries, then the summary line; the explanation of every pair behind --details."""
    full = _run()
    details = _run("--details")
    quiet = _run("--quiet")
    head = full.splitlines()
    # 7 entries of the three libraries ran; xgboost:plain_ndcg has no nDCG@10
    assert head[0] == "nDCG@10 on run.txt: 3 classes among 6 entries"
    assert head[1].startswith("  0.6380  3 queries    [trec_eval's class] trec_eval")
    assert "[apart by " in head[2] and "gain=exponential" in head[2] and "lightgbm" in head[2]
    assert "xgboost" in full
    assert full.rstrip().rsplit("\n", 1)[-1].startswith("1 case x measure comparisons by 7 entries; ")
    assert "explained by gain: linear -> exponential" not in full
    assert "explained by gain: linear -> exponential" in details
    assert details.startswith(full.split("\n--details")[0].split("\nentries")[0])
    assert quiet == full  # --quiet silences stderr only
    assert len(full.splitlines()) <= 12


def test_a_class_whose_mean_prints_equal_names_the_queries_that_differ():
    """Issue 25.2: torchmetrics' AP and torchmetrics:skip's both print 0.5388 on the example,
    yet differ query by query; the table says on which queries and by how much, with the
    values the libraries themselves give (called here, in this process)."""
    from conformance.io import load_qrels, load_run
    from conformance.libs import entry
    from conformance.measures import parse_measure

    args = ["run", "--libs", "trec_eval,torchmetrics,torchmetrics:skip", "--qrels", QRELS,
            "--run", RUN, "-m", "AP"]
    text = CliRunner().invoke(main, args)
    assert text.exit_code == 0, text.stderr
    m = parse_measure("AP")
    got = {n: entry(n).evaluate(load_qrels(QRELS), load_run(RUN), [m])[m] for n in
           ("torchmetrics", "torchmetrics:skip")}
    a, b = (got[n].per_query for n in ("torchmetrics", "torchmetrics:skip"))
    mean = {n: v.mean if v.mean is not None else sum(v.per_query.values()) / len(v.per_query)
            for n, v in got.items()}
    assert f"{mean['torchmetrics']:.4f}" == f"{mean['torchmetrics:skip']:.4f}"
    differ = sorted(q for q in set(a) | set(b) if q not in a or q not in b or abs(a[q] - b[q]) > 1e-6)
    assert differ, "the two entries differ on some query of the example"
    out = " ".join(text.stdout.split())
    assert "the mean prints as torchmetrics's" in out
    note = out[out.index("the mean prints as"):]
    assert f"apart on {len(differ)} quer" in note
    for q in differ:
        if q in a and q in b:
            assert f"{q} {b[q]:.4f} vs {a[q]:.4f} ({b[q] - a[q]:+.4f})" in note
        elif q in a:
            assert f"{q} not scored (torchmetrics: {a[q]:.4f})" in note


def _explained_pairs(libs: str) -> dict[frozenset, dict]:
    result = CliRunner().invoke(main, ["run", "--libs", libs, "--qrels", QRELS, "--run", RUN, "-m", "nDCG@10",
                                       "--format", "json", "--quiet"])
    assert result.exit_code == 0, result.stderr
    [c] = json.loads(result.stdout)["comparisons"]
    return {frozenset(e["between"]): e for e in c["explanations"]}, c["agreement"]


def test_each_pair_of_entries_named_is_explained_directly():
    """Issue 16.2. xgboost:ndcg- agrees with lightgbm, which stands for their class; named by
    the user, it is explained against trec_eval itself. Selected through its library
    ('xgboost' picks xgboost's entries), it is explained only through lightgbm."""
    pairs, classes = _explained_pairs("lightgbm,xgboost:ndcg-,trec_eval")
    assert ["lightgbm", "xgboost:ndcg-"] in classes  # the representative is lightgbm
    direct = pairs[frozenset(("xgboost:ndcg-", "trec_eval"))]
    via = pairs[frozenset(("lightgbm", "trec_eval"))]
    # XGBoost's rank:ndcg nDCG: 2^label - 1 gains, as LightGBM's
    assert direct["values"]["gain"] == ["exponential", "linear"] and direct["axes"]
    assert set(direct["axes"]) == set(via["axes"])
    pairs, classes = _explained_pairs("lightgbm,xgboost,trec_eval")
    assert ["lightgbm", "xgboost", "xgboost:ndcg-"] in classes
    assert frozenset(("xgboost", "trec_eval")) in pairs  # the entry named xgboost
    assert frozenset(("xgboost:ndcg-", "trec_eval")) not in pairs


# --- your own conventions: run --profile / --set (issue 16.4) --------------------------------

def _lightgbm_ndcg10() -> float:
    """nDCG@10 by LightGBM itself: LGBMRanker's ndcg@10 eval on the same files (exponential
    gain), as the reference's row under --profile lightgbm must give."""
    from conformance.io import load_qrels, load_run
    from conformance.libs import entry
    from conformance.measures import parse_measure

    m = parse_measure("nDCG@10")
    return entry("lightgbm").evaluate(load_qrels(QRELS), load_run(RUN), [m])[m].mean


def test_profile_shows_the_reference_under_it_and_labels_classes_against_its_entry():
    doc = json.loads(_run("--profile", "lightgbm", "--format", "json", "--quiet"))
    row = doc["table"][0]
    ref = row["reference"]
    assert ref["profile"] == "lightgbm" and ref["set"] == {} and ref["error"] is None
    assert ref["mean"] == pytest.approx(_lightgbm_ndcg10(), abs=1e-12)
    base = next(c for c in row["classes"] if c["base"])
    assert "lightgbm" in [e["entry"] for e in base["entries"]]
    assert ref["class"] == row["classes"].index(base)
    # trec_eval's class is now the one set apart, by the gain lightgbm does not use
    te = next(c for c in row["classes"] if "trec_eval" in [e["entry"] for e in c["entries"]])
    assert te["apart"].get("gain") == "linear"
    text = _run("--profile", "lightgbm", "--quiet")
    assert "reference under lightgbm: " in text and "as [lightgbm's class]" in text
    assert text.index("[lightgbm's class]") < text.index("[apart by")


def test_set_duplicates_first_reads_a_run_listing_a_docid_twice(tmp_path):
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 2\n")
    run = tmp_path / "run"
    run.write_text("q1 Q0 d1 1 3.0 r\nq1 Q0 d2 2 2.0 r\nq1 Q0 d1 3 1.0 r\nq1 Q0 d3 4 0.5 r\n")
    args = ["run", "--libs", "trec_eval", "--qrels", str(qrels), "--run", str(run), "-m", "AP"]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2 and "listed twice" in refused.stderr
    read = CliRunner().invoke(main, args + ["--set", "duplicates=first", "--format", "json"])
    assert read.exit_code == 0, read.stderr
    row = json.loads(read.stdout)["table"][0]
    # by hand, d1 (rel) at 1, d2 at 2, d3 (rel) at 3: AP = (1/1 + 2/3) / 2
    assert row["reference"]["mean"] == pytest.approx(5 / 6, abs=1e-12)
    values = {e["entry"]: e["mean"] for c in row["classes"] for e in c["entries"]}
    assert values["trec_eval"] == pytest.approx(5 / 6, abs=1e-12)  # given the first listing


def test_profile_and_set_errors_name_the_option():
    bad = CliRunner().invoke(main, ["run", "--libs", "trec_eval", "--profile", "nope"])
    assert bad.exit_code == 2 and "--profile: unknown profile 'nope'" in bad.stderr
    bad = CliRunner().invoke(main, ["run", "--libs", "trec_eval", "--set", "gain=bogus"])
    assert bad.exit_code == 2 and "--set gain=bogus" in bad.stderr


def test_queries_that_differ_print_with_the_decimals_that_tell_them_apart():
    """By hand: beir's rounding=5 against full precision differs past the fourth decimal; the
    note prints as many decimals as it takes, and the gap itself."""
    from conformance.run_text import differing_queries

    got = differing_queries({"q1": 0.5, "q2": 0.52353, "q3": 0.1, "q4": 0.25},
                            {"q1": 0.6309, "q2": 0.5235312, "q3": 0.1, "q5": 1.0}, 1e-12, "trec_eval")
    assert got == [("q1", "0.5000 vs 0.6309 (-0.1309)"),
                   ("q2", "0.523530 vs 0.523531 (-1.2e-06)"),
                   ("q4", "0.2500, not scored by trec_eval"),
                   ("q5", "not scored (trec_eval: 1.0000)")]


def test_class_letters_go_on_past_z():
    """A family with more than 26 classes gets two-letter marks, never an index error."""
    from conformance.run_text import _letter

    assert [_letter(i) for i in (0, 1, 25, 26, 27, 51, 52, 701, 702)] == [
        "a", "b", "z", "aa", "ab", "az", "ba", "zz", "aaa"]

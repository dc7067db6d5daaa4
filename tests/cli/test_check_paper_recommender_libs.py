"""``conformance check-paper --no-live`` on the recommender libraries' own test examples: the
values their test suites assert are reproduced, and the verdict names the entry whose declared
profile gives them (no library is run: the entries are judged by their profiles).
"""

from __future__ import annotations

import re

from click.testing import CliRunner

from conformance.cli import main


def _check(tmp_path, qrels: list, run: list, reported: dict[str, str]) -> str:
    q, r = tmp_path / "qrels.txt", tmp_path / "run.txt"
    q.write_text("".join(f"{u} 0 {d} {label}\n" for u, d, label in qrels))
    r.write_text("".join(f"{u} Q0 {d} 0 {s} lib\n" for u, d, s in run))
    args = [a for name, v in reported.items() for a in ("--reported", f"{name}={v}")]
    out = CliRunner().invoke(main, ["check-paper", "--qrels", str(q), "--run", str(r), "--quiet",
                                    "--no-live", "--digits", "4", *args])
    assert out.exit_code == 0, out.output
    return out.stdout


def _verdict_names(stdout: str, name: str) -> bool:
    """Whether the verdict line names entry ``name`` among those that reproduce the values."""
    verdict = next(line for line in stdout.splitlines() if line.startswith("verdict:"))
    return re.search(rf"(?<![\w:]){re.escape(name)}(?![\w:])", verdict) is not None


# Recommenders' tests/unit/recommenders/evaluation/test_python_evaluation.py (1.2.x) on its
# rating_true / rating_pred fixtures, k=10: ndcg_at_k 0.38172, precision_at_k 0.26666,
# recall_at_k 0.37777, map_at_k 0.23613, each asserted with pytest.approx(value, TOL = 0.0001);
# given here to four decimals. Every rating_true row is relevant to the library (labels 1-5 here:
# the sweep must find the binary gain).
_REC_TRUE = list(zip(
    [1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 1, 1],
    [3, 1, 4, 5, 6, 7, 2, 5, 6, 8, 9, 10, 11, 12, 13, 14, 1, 2],
    [3, 5, 5, 3, 3, 1, 5, 5, 5, 4, 4, 3, 3, 3, 2, 1, 5, 4]))
_REC_PRED = list(zip(
    [1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 1, 1],
    [12, 10, 3, 5, 11, 13, 4, 10, 7, 13, 1, 3, 5, 2, 11, 14, 3, 10],
    [12, 14, 13, 12, 11, 10, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 14, 13]))


def test_recommenders_python_evaluation_suite_is_reproduced_by_its_entry(tmp_path):
    qrels = [(f"u{u}", f"i{i}", r) for u, i, r in _REC_TRUE]
    run = [(f"u{u}", f"i{i}", p) for u, i, p in _REC_PRED]
    stdout = _check(tmp_path, qrels, run, {"nDCG@10": "0.3817", "P@10": "0.2667",
                                           "R@10": "0.3778", "AP@10": "0.2361"})
    assert _verdict_names(stdout, "recommenders")
    assert not _verdict_names(stdout, "lenskit")  # P@10 over the list: user 1 lists 3 items


# LensKit's tests/eval/test_rank_ndcg.py (2025.x), test_ndcg_shorter_not_best: recs [1, 2],
# truth ratings {1: 3, 2: 5, 3: 4}; NDCG = fixed_dcg(2) / fixed_dcg(3) = 2 / (2 + 1/log2 3) =
# 0.7602 (ranks 1 and 2 weigh 1), NDCG(n=2) = 1.0, and with gain="rating" array_dcg([3, 5]) /
# array_dcg([5, 4, 3]) = 8 / (9 + 3/log2 3) = 0.7344.
_LK_TRUTH = [("u1", "i1", 3), ("u1", "i2", 5), ("u1", "i3", 4)]
_LK_RECS = [("u1", "i1", 2.0), ("u1", "i2", 1.0)]


def test_lenskit_ndcg_suite_is_reproduced_by_its_default_weight(tmp_path):
    stdout = _check(tmp_path, _LK_TRUTH, _LK_RECS, {"nDCG": "0.7602", "nDCG@2": "1.0000"})
    assert _verdict_names(stdout, "lenskit")
    assert not _verdict_names(stdout, "lenskit:offset")  # log2(rank + 1) gives 0.7654
    assert "Jarvelin" in stdout or "jarvelin" in stdout


def test_lenskit_graded_ndcg_suite_is_reproduced_by_the_graded_entry(tmp_path):
    stdout = _check(tmp_path, _LK_TRUTH, _LK_RECS, {"nDCG": "0.7344"})
    assert _verdict_names(stdout, "lenskit:graded")


# RecBole's tests/metrics/test_topk_metrics.py (1.2.x): pos_idx [[0, 0, 0], [1, 1, 1],
# [1, 0, 1], [0, 0, 1]] with pos_len [1, 3, 4, 2], each metric_info row asserted at ranks 1-3.
# As a run and qrels: four users listing three items each, the unlisted relevant items judged
# only. Their means at k = 3, from the asserted rows: NDCG (0 + 1 + (1 + 1/log2 4) / (1 +
# 1/log2 3 + 1/log2 4) + (1/log2 4) / (1 + 1/log2 3)) / 4 = 0.5026, MAP (0 + 1 + (1/3)(1 +
# 2/3) + (1/3)(1/2)) / 4 = 0.4306, Recall (0 + 1 + 2/4 + 1/2) / 4 = 0.5, Precision
# (0 + 1 + 2/3 + 1/3) / 4 = 0.5, MRR (0 + 1 + 1 + 1/3) / 4 = 0.5833.
_RB_HITS = [[0, 0, 0], [1, 1, 1], [1, 0, 1], [0, 0, 1]]
_RB_LEN = [1, 3, 4, 2]


def test_recbole_topk_suite_is_reproduced_by_its_entry(tmp_path):
    qrels, run = [], []
    for u, (hits, r) in enumerate(zip(_RB_HITS, _RB_LEN)):
        for j, hit in enumerate(hits):
            run.append((f"u{u}", f"i{u}_{j}", 3.0 - j))
            if hit:
                qrels.append((f"u{u}", f"i{u}_{j}", 1))
        qrels += [(f"u{u}", f"unlisted{u}_{j}", 1) for j in range(r - sum(hits))]
    stdout = _check(tmp_path, qrels, run, {"nDCG@3": "0.5026", "AP@3": "0.4306", "R@3": "0.5000",
                                           "P@3": "0.5000", "RR@3": "0.5833"})
    assert _verdict_names(stdout, "recbole")
    assert not _verdict_names(stdout, "rectools")  # its NDCG's ideal fills all k ranks


# TorchRec's torchrec/metrics/tests/test_ndcg.py (1.9.x), its fixture of two ranked lists (two
# session ids): predictions [0.1, 0.2, 0.3, 0.4, 0.5 | 0.1, 0.2, 0.3], labels
# [0, 1, 0, 0, 2 | 2, 1, 0], weights [1, 1, 1, 1, 2 | 1, 1, 3], asserting 0.6463 (and 0.1522
# for the first list alone). The metric reports each list's 1 - NDCG times its largest weight,
# averaged: 2 (1 - 0.92389) = 0.1522, and (0.1522 + 3 (1 - 0.61991)) / 2 = 0.6463. Weights are
# no part of a run, so the number reported from it is the lists' NDCG: (0.92389 + 0.61991) / 2
# = 0.7719, where list 1 is (2 + 1/log2 5) / (2 + 1/log2 3) and list 2 (1/log2 3 + 2/2) /
# (2 + 1/log2 3).
def test_torchrec_ndcg_suite_is_reproduced_by_its_entry(tmp_path):
    lists = {"s1": ([0.1, 0.2, 0.3, 0.4, 0.5], [0, 1, 0, 0, 2]), "s2": ([0.1, 0.2, 0.3], [2, 1, 0])}
    qrels = [(q, f"{q}d{i}", lab) for q, (_, labels) in lists.items() for i, lab in enumerate(labels)]
    run = [(q, f"{q}d{i}", p) for q, (preds, _) in lists.items() for i, p in enumerate(preds)]
    stdout = _check(tmp_path, qrels, run, {"nDCG": "0.7719"})
    assert _verdict_names(stdout, "torchrec")
    assert not _verdict_names(stdout, "torchrec:exp")

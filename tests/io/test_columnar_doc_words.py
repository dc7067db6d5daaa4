"""The word-form docid path (io.columnar.DocWords, Prepared's join by one sort) against the exact path.

TREC files read by ``conformance.io`` carry their docids as padded words and skip the docid
vocabulary; ``Run.from_records`` / ``Qrels.from_records`` build the vocabulary and take the
exact path. Both must give the same labels, the same tie order and the same values. Expected
orders come from Python's own ``sorted`` on the UTF-8 bytes.
"""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from conformance import io
from conformance.io.columnar import DocWords
from conformance.io.data import Qrels, Run
from conformance.profiles import profile
from conformance.measures import parse_measures
from conformance.reference import evaluate
from conformance.reference.prepare import Prepared, _merge_labels

# prefixes of each other, lengths across the 8-byte word boundary, a '#' inside
DOCIDS = ["d", "d1", "d10", "d1a", "d2", "doc-00000001", "doc-000000010", "doc-0000001",
          "abcdefgh", "abcdefghi", "abcdefg", "x#1", "zz" * 9, "Z", "a", "é", "ée", "文書-1", "e\u0301"]


def _files(tmp_path, rng: random.Random, queries: int = 6):
    run_lines, qrels_lines, run_rows, qrels_rows = [], [], [], []
    for qi in range(queries):
        q = f"q{qi}"
        docs = rng.sample(DOCIDS, rng.randint(2, len(DOCIDS)))
        for r, d in enumerate(docs, 1):
            score = float(rng.choice([1, 2, 3]))  # many ties: the docid decides
            run_lines.append(f"{q} Q0 {d} {r} {score} t")
            run_rows.append((q, d, score))
        for d in rng.sample(DOCIDS, rng.randint(1, 8)):
            lab = rng.choice([0, 1, 2, -1])
            qrels_lines.append(f"{q} 0 {d} {lab}")
            qrels_rows.append((q, d, float(lab)))
    rp, qp = tmp_path / "run.txt", tmp_path / "qrels.txt"
    rp.write_text("\n".join(run_lines) + "\n")
    qp.write_text("\n".join(qrels_lines) + "\n")
    return rp, qp, run_rows, qrels_rows


@pytest.mark.parametrize("seed", range(6))
def test_word_path_equals_exact_path(tmp_path, seed):
    rng = random.Random(seed)
    rp, qp, run_rows, qrels_rows = _files(tmp_path, rng)
    run, qrels = io.read_run(rp), io.read_qrels(qp)
    assert run.doc_words is not None and qrels.doc_words is not None
    exact_run, exact_qrels = Run.from_records(run_rows), Qrels.from_records(qrels_rows)
    assert exact_run.doc_words is None
    fast, exact = Prepared(qrels, run), Prepared(exact_qrels, exact_run)
    assert fast._merged is not None and exact._merged is None
    np.testing.assert_array_equal(fast.run_label, exact.run_label)
    measures = parse_measures("nDCG@5,nDCG,AP,RR,P@3,R@5")
    for ties in ("docid_desc", "docid_asc", "average", "unspecified"):
        conv = profile("trec_eval", "nDCG@10").with_settings([f"ties={ties}"])
        a, b = evaluate(fast, None, measures, conv), evaluate(exact, None, measures, conv)
        assert a.qids.tolist() == b.qids.tolist()
        for m in measures:
            np.testing.assert_array_equal(a.per_query[m], b.per_query[m])
            np.testing.assert_array_equal(a.upper[m], b.upper[m])
    # the docid vocabulary, built on demand, is the readers' first-appearance coding
    assert run.docids.tolist() == list(dict.fromkeys(d for _, d, _ in run_rows))
    assert run.doc_ids().tolist() == [d for _, d, _ in run_rows]


@pytest.mark.parametrize("block", [None, 1, 3])
@pytest.mark.parametrize("bits", [1, 2, 3, 5, 8])
def test_join_with_forced_hash_collisions(tmp_path, monkeypatch, bits, block):
    """With only a few hash bits kept, most rows collide: matches must still be exact. The
    hashes and the join work in blocks of rows: tiny blocks put every group across one."""
    from conformance.io import columnar

    if block is not None:
        monkeypatch.setattr(columnar, "BLOCK_ROWS", block)
    rp, qp, run_rows, qrels_rows = _files(tmp_path, random.Random(bits), queries=10)
    run, qrels = io.read_run(rp), io.read_qrels(qp)
    prep = Prepared(qrels, run)
    expected = Prepared(Qrels.from_records(qrels_rows), Run.from_records(run_rows)).run_label
    got = _merge_labels(prep.run_q, run.doc_words, prep.qrels_q, qrels.doc_words,
                        prep.qrels_label, hash_bits=bits)
    assert got is not None
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("bits", [2, 8, 64])
def test_join_in_two_threads_equals_one(tmp_path, monkeypatch, bits):
    """The join split by halves of the queries (forced on a small run) gives the same labels."""
    from conformance import parallel
    from conformance.reference.prepare import _merge_in_halves

    rp, qp, run_rows, qrels_rows = _files(tmp_path, random.Random(100 + bits), queries=10)
    run, qrels = io.read_run(rp), io.read_qrels(qp)
    prep = Prepared(qrels, run)
    expected = Prepared(Qrels.from_records(qrels_rows), Run.from_records(run_rows)).run_label
    monkeypatch.setattr(parallel, "MIN_ROWS", 2)
    monkeypatch.setattr(parallel, "two_cores", lambda: True)
    assert len(parallel.query_halves(prep.run_q, prep.n_queries)) == 2
    got = _merge_in_halves(prep.run_q, run.doc_words, prep.qrels_q, qrels.doc_words,
                           prep.qrels_label, prep.n_queries, hash_bits=bits)
    np.testing.assert_array_equal(got, expected)
    # a pair judged twice (in one half) still sends the join to the exact path
    twice = Qrels.from_records(qrels_rows + [qrels_rows[-1]])
    words = DocWords.of(pa.array([d for _, d, _ in qrels_rows + [qrels_rows[-1]]]))
    q_of = {q: i for i, q in enumerate(prep.qids)}
    tq = np.array([q_of[q] for q, _, _ in qrels_rows + [qrels_rows[-1]]])
    assert _merge_in_halves(prep.run_q, run.doc_words, tq, words, twice.label, prep.n_queries) is None


def test_repeated_pairs_go_to_the_exact_join():
    run = Run.from_records([("q", "a", 1.0), ("q", "a", 2.0)])
    words = DocWords.of(pa.array(["a", "a"]))
    q = np.zeros(2, np.int64)
    assert _merge_labels(q, words, q[:1], DocWords.of(pa.array(["a"])), np.ones(1)) is None
    assert len(run) == 2


def test_sort_keys_order_bytes():
    # multi-byte characters are padded by bytes like the others: byte order, as strcmp
    ids = list(dict.fromkeys(DOCIDS + ["é", "e", "ée", "\u00a0x", "a" * 20, "a" * 19 + "b"]))
    words = DocWords.of(pa.array(ids))
    expected = sorted(range(len(ids)), key=lambda i: ids[i].encode())
    assert np.lexsort(words.sort_keys()).tolist() == expected
    assert np.lexsort(words.sort_keys(descending=True)).tolist() == expected[::-1]
    codes = words.order_codes()
    assert [ids[i] for i in np.argsort(codes, kind="stable")] == sorted(ids, key=str.encode)
    assert words.strings().to_pylist() == ids


def test_non_ascii_docids_take_the_word_path(tmp_path):
    rp = tmp_path / "run.txt"
    rp.write_text("q1 Q0 文書-1 1 2.0 t\nq1 Q0 doc 2 2.0 t\nq1 Q0 é 3 1.0 t\n")
    run = io.read_run(rp)
    assert run.doc_words is not None
    assert run.docids.tolist() == ["文書-1", "doc", "é"]

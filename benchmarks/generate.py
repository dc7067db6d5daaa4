"""Write synthetic TREC run and qrels files for the benchmarks, deterministically.

A run of Q queries x D documents (six whitespace-separated columns ``qid Q0 docid rank score
tag``, listed by score descending, rank 1..D) and qrels with J graded judgments (0..3) per query
(``qid 0 docid label``). Same seed, same sizes -> same bytes.

Shape of the data, chosen so the benchmark exercises what real runs have:

- scores are decreasing sums of exponential gaps rounded to 3 decimals, so about 5% of adjacent
  pairs tie; the values have at most 7 significant digits and stay distinct in float32, so
  narrowing to float32 (pytrec_eval) creates no extra ties;
- each query retrieves D distinct documents ``doc<N>`` from a collection of ~1M; the j-th
  candidate of query q is ``shuffle[(a_q * j + b_q) mod P]`` with P prime, so candidates are distinct
  per query without a per-query Python loop;
- about 70% of the judgments are on retrieved documents (drawn towards the top ranks), the rest
  on candidates beyond the list (never retrieved); labels depend on the rank, so relevant
  documents sit near the top; about 1% of queries have no relevant judgment at all.

Usage::

    python benchmarks/generate.py                       # small, medium and large into benchmarks/data/
    python benchmarks/generate.py --sizes small,medium
    python benchmarks/generate.py --queries 2000 --docs 1000 --judged 100

Formatting is done by Arrow compute (number -> string casts, element-wise joins) and the CSV
writer, not by a Python loop per line: the 20M-row run takes well under a minute.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

DATA = Path(__file__).resolve().parent / "data"
PRIME = 1_000_003  # collection size: docids are doc0 .. doc1000002
SIZES = {  # name -> (queries, docs per query, judgments per query)
    "small": (200, 1000, 100),
    "medium": (2000, 1000, 100),
    "large": (20000, 1000, 100),
}


def paths(queries: int, docs: int, judged: int, out: Path = DATA,
          numeric_qids: bool = False) -> tuple[Path, Path]:
    """(qrels path, run path) for a size (``numeric_qids``: the query ids without their "q",
    which gdeval, ir_measures' ERR, requires)."""
    tail = "-numeric" if numeric_qids else ""
    return (out / f"qrels-{queries}x{judged}{tail}.txt", out / f"run-{queries}x{docs}{tail}.txt")


def _candidates(rng: np.random.Generator, queries: int, j: np.ndarray) -> np.ndarray:
    """Doc numbers of candidates ``j`` (shape (queries, m)): distinct per query for distinct j."""
    a = rng.integers(1, PRIME, size=(queries, 1), dtype=np.int64)
    b = rng.integers(0, PRIME, size=(queries, 1), dtype=np.int64)
    # a fixed shuffle of the collection hides the arithmetic progression, so docid order is
    # unrelated to rank (it breaks ties under trec_eval's convention)
    shuffle = rng.permutation(PRIME)
    return shuffle[(a * j + b) % PRIME]


def _top_k_weighted(rng: np.random.Generator, weights: np.ndarray, k: int) -> np.ndarray:
    """Per row, k distinct column indices drawn without replacement with prob. ~ weights
    (Gumbel/exponential-key trick: the k smallest of Exp(1)/w)."""
    keys = rng.exponential(size=weights.shape) / weights
    return np.argpartition(keys, k - 1, axis=1)[:, :k]


def _write_lines(columns: list[pa.Array], path: Path) -> None:
    """Join string columns with single spaces and write one line per row."""
    line = pc.binary_join_element_wise(*columns, " ")
    with open(path, "wb") as f:
        # chunks bound the memory of the joined text (20M lines are ~700 MB at once)
        step = 2_000_000
        for i in range(0, len(line), step):
            part = line.slice(i, step)
            text = pc.binary_join(pa.array([part], type=pa.list_(pa.string())), "\n")[0].as_buffer()
            f.write(text)
            f.write(b"\n")


def _str(values: np.ndarray) -> pa.Array:
    return pc.cast(pa.array(values), pa.string())


def _const(text: str, n: int) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([text])).cast(pa.string())


def generate(queries: int, docs: int, judged: int, seed: int = 0, out: Path = DATA,
             numeric_qids: bool = False) -> tuple[Path, Path]:
    """Write (qrels, run) for ``queries`` x ``docs`` with ``judged`` judgments per query
    (``numeric_qids``: the same data with query ids 1, 2, ... instead of q1, q2, ...)."""
    if judged > 2 * docs:
        raise SystemExit("--judged must be at most twice --docs")
    rng = np.random.default_rng([seed, queries, docs, judged])
    out.mkdir(parents=True, exist_ok=True)
    qrels_path, run_path = paths(queries, docs, judged, out, numeric_qids)

    qid_text = pc.binary_join_element_wise("" if numeric_qids else "q",
                                           _str(np.arange(1, queries + 1)), "")
    # candidates 0..docs-1 are retrieved (in rank order); docs..2*docs-1 are never retrieved
    cand = _candidates(rng, queries, np.arange(2 * docs, dtype=np.int64)[None, :])

    # ---- run ----------------------------------------------------------------------------
    gaps = rng.exponential(0.01, size=(queries, docs))
    top = rng.uniform(15.0, 30.0, size=(queries, 1))
    score = np.round(top - np.cumsum(gaps, axis=1), 3)
    n = queries * docs
    q_rows = np.repeat(np.arange(queries), docs)
    run_cols = [
        qid_text.take(pa.array(q_rows)),
        _const("Q0", n),
        pc.binary_join_element_wise("doc", _str(cand[:, :docs].ravel()), ""),
        _str(np.tile(np.arange(1, docs + 1), queries)),
        _str(score.ravel()),
        _const("synthetic", n),
    ]
    _write_lines(run_cols, run_path)
    del run_cols, gaps, score

    # ---- qrels --------------------------------------------------------------------------
    n_ret = min(int(round(judged * 0.7)), docs)
    n_unret = judged - n_ret
    ranks = np.arange(docs)
    pick_ret = _top_k_weighted(rng, np.broadcast_to(1.0 / (1.0 + ranks / 50.0), (queries, docs)), n_ret)
    pick_ret.sort(axis=1)
    pick_unret = docs + np.argpartition(rng.random((queries, docs)), n_unret - 1, axis=1)[:, :n_unret] \
        if n_unret else np.zeros((queries, 0), np.int64)
    picks = np.concatenate([pick_ret, pick_unret], axis=1)
    docnum = np.take_along_axis(cand, picks, axis=1)
    # relevance falls with rank; unretrieved judged documents are mostly non-relevant
    p_rel = np.where(picks < docs, 0.6 / (1.0 + picks / 100.0), 0.08)
    u = rng.random(picks.shape)
    label = np.where(u < p_rel * 0.25, 3, np.where(u < p_rel * 0.5, 2, np.where(u < p_rel, 1, 0)))
    no_rel = rng.random(queries) < 0.01
    label[no_rel] = 0
    # shuffle judgments within each query so the qrels are not listed in rank order
    perm = np.argsort(rng.random(picks.shape), axis=1)
    docnum = np.take_along_axis(docnum, perm, axis=1)
    label = np.take_along_axis(label, perm, axis=1)
    m = queries * judged
    qrels_cols = [
        qid_text.take(pa.array(np.repeat(np.arange(queries), judged))),
        _const("0", m),
        pc.binary_join_element_wise("doc", _str(docnum.ravel()), ""),
        _str(label.ravel()),
    ]
    _write_lines(qrels_cols, qrels_path)
    return qrels_path, run_path


def ensure(queries: int, docs: int, judged: int, numeric_qids: bool = False) -> tuple[Path, Path]:
    """(qrels, run) of this size, written first when missing, by a child process: a benchmark
    that wrote them itself would grow to the size of the data, and the children it then starts
    to time would report that size as their own peak (Linux keeps ``ru_maxrss`` across the
    vfork and exec that start them)."""
    qrels, run = paths(queries, docs, judged, numeric_qids=numeric_qids)
    if not (qrels.exists() and run.exists()):
        cmd = [sys.executable, str(Path(__file__).resolve()), "--queries", str(queries), "--docs",
               str(docs), "--judged", str(judged)] + (["--numeric-qids"] if numeric_qids else [])
        subprocess.run(cmd, check=True)
    return qrels, run


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default=None,
                   help="comma list of " + ", ".join(f"{k} ({v[0]}x{v[1]})" for k, v in SIZES.items())
                        + "; default: all three unless --queries is given")
    p.add_argument("--queries", type=int, help="custom size: number of queries")
    p.add_argument("--docs", type=int, default=1000, help="custom size: documents per query")
    p.add_argument("--judged", type=int, default=100, help="custom size: judgments per query")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=DATA)
    p.add_argument("--force", action="store_true", help="rewrite files that already exist")
    p.add_argument("--numeric-qids", action="store_true",
                   help="query ids 1, 2, ... (gdeval reads no other) instead of q1, q2, ...")
    args = p.parse_args(argv)
    if args.queries is not None:
        todo = [(args.queries, args.docs, args.judged)]
    else:
        names = (args.sizes or "small,medium,large").split(",")
        unknown = [s for s in names if s not in SIZES]
        if unknown:
            p.error(f"unknown size {unknown[0]!r}: choose from {', '.join(SIZES)}")
        todo = [SIZES[s] for s in names]
    for q, d, j in todo:
        qp, rp = paths(q, d, j, args.out, args.numeric_qids)
        if qp.exists() and rp.exists() and not args.force:
            print(f"exists: {rp} ({q * d:,} rows), {qp}  (--force to rewrite)")
            continue
        t0 = time.perf_counter()
        generate(q, d, j, args.seed, args.out, args.numeric_qids)
        dt = time.perf_counter() - t0
        print(f"wrote {rp} ({q * d:,} rows, {rp.stat().st_size / 1e6:.0f} MB) and {qp} "
              f"({q * j:,} rows) in {dt:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Joining a run to its qrels once, so every convention set evaluates from the same arrays.

``Prepared`` puts queries and documents of both inputs into one vocabulary each, gives every run
row its raw qrels label (NaN when unjudged), and caches what later convention sets can share:
label transforms and query selections. Queries are coded by their byte-wise sorted order.
Documents get one joint code for the join (no sort); their byte-wise order, which the
``docid_asc``/``docid_desc`` tie rules need, is a :class:`DocKey` computed only for the rows a
sort asks about (the rows in tied groups), since sorting every docid string costs more than the
rest of an evaluation.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from conformance.conventions import Conventions
from conformance.data import Qrels, Run
from conformance.errors import EvaluationError


def _sorted_union_codes(a: np.ndarray, b: np.ndarray) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """Unique strings of ``a`` and ``b`` sorted byte-wise; and each one's position in that order.

    Arrow compares strings as bytes, which for UTF-8 is also code point order: the same order
    trec_eval's strcmp gives on the raw docnos.
    """
    both = pa.array(np.concatenate([a, b]), type=pa.string())
    uniq = pc.unique(both)
    uniq = uniq.take(pc.sort_indices(uniq))
    a_pos = pc.index_in(pa.array(a, type=pa.string()), value_set=uniq).to_numpy(zero_copy_only=False)
    b_pos = pc.index_in(pa.array(b, type=pa.string()), value_set=uniq).to_numpy(zero_copy_only=False)
    return (
        uniq,
        a_pos.astype(np.int64),
        b_pos.astype(np.int64),
    )


def _arrow_strings(values: np.ndarray) -> pa.Array:
    return pa.array(values, type=pa.string()) if len(values) else pa.array([], type=pa.string())


def _joint_codes(a: pa.Array, b: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """One coding of two vocabularies of distinct strings, without sorting: (joint vocabulary,
    code of each string of ``a``, code of each string of ``b``). The smaller vocabulary is
    hashed and the larger looked up in it; the strings only the larger has are coded after it.
    """
    swap = len(b) > len(a)
    small, large = (a, b) if swap else (b, a)
    found = pc.index_in(large, value_set=small)
    missing = found.is_null().to_numpy(zero_copy_only=False)
    large_codes = pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    large_codes[missing] = len(small) + np.arange(int(missing.sum()), dtype=np.int64)
    vocab = pa.concat_arrays([small, large.filter(pa.array(missing))]) if missing.any() else small
    small_codes = np.arange(len(small), dtype=np.int64)
    return (vocab, small_codes, large_codes) if swap else (vocab, large_codes, small_codes)


class _ByteOrder:
    """Byte-wise order of a vocabulary of distinct strings."""

    def __init__(self, vocab: pa.Array) -> None:
        self.vocab = vocab
        self._rank: np.ndarray | None = None

    def all(self) -> np.ndarray:
        """Every string's rank in byte order (computed once)."""
        if self._rank is None:
            self._rank = self._ranks(self.vocab)
        return self._rank

    def of(self, codes: np.ndarray) -> np.ndarray:
        """Integers ordered as the strings ``codes`` (equal for equal codes): their ranks among
        these strings only when they are few (their order is all a tie break needs)."""
        if self._rank is not None or codes.size > len(self.vocab) // 4:
            return self.all()[codes]
        distinct, inverse = np.unique(codes, return_inverse=True)
        return self._ranks(self.vocab.take(pa.array(distinct)))[inverse]

    @staticmethod
    def _ranks(strings: pa.Array) -> np.ndarray:
        # Arrow compares strings as bytes, which for UTF-8 is also code point order: the same
        # order trec_eval's strcmp gives on the raw docnos.
        order = pc.sort_indices(strings).to_numpy(zero_copy_only=False)
        rank = np.empty(order.size, np.int64)
        rank[order] = np.arange(order.size, dtype=np.int64)
        return rank


class DocKey:
    """The tie key of rows by docid: integers in the byte-wise order of the rows' docids.

    Lazy, because sorting every docid string is the costliest step of a large evaluation while
    only tied rows need it. ``key[rows]`` selects rows (nothing is computed); ``codes(rows)``
    gives, for those rows (all when None), integers ordered as their docids byte-wise and equal
    for equal docids; ``np.asarray(key)`` gives every row's byte-order rank among all docids of
    the run and the qrels.
    """

    def __init__(self, order: _ByteOrder, codes: np.ndarray) -> None:
        self._order, self._codes = order, codes

    def __getitem__(self, rows) -> "DocKey":
        return DocKey(self._order, self._codes[rows])

    def __len__(self) -> int:
        return int(self._codes.size)

    def codes(self, rows: np.ndarray | None = None) -> np.ndarray:
        return self._order.of(self._codes if rows is None else self._codes[rows])

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = self._order.all()[self._codes]
        return out if dtype is None else out.astype(dtype)


class Prepared:
    """Qrels and run in one coding. Arrays are per run row (``run_*``) or per qrels row (``qrels_*``).

    ``qids``: every query id of either input, sorted. ``run_q``/``qrels_q``: index into ``qids``.
    ``run_doc``/``qrels_doc``: the docid's byte order among all docids (tie key), as a lazy
    :class:`DocKey`. ``run_doc_code``/``qrels_doc_code``: the docid's joint code (equal codes,
    equal docids; no order). ``run_label``: the raw qrels label of the row's (query, doc), NaN
    when the pair is not judged. ``run_order``: the row's position in the run as listed (for
    input-order tie rules).
    """

    def __init__(self, qrels: Qrels, run: Run) -> None:
        self.qrels_source, self.run_source = qrels.source, run.source
        qvocab, rq, qq = _sorted_union_codes(run.qids, qrels.qids)
        self.qids = np.asarray(qvocab.to_pylist(), dtype=object)
        self._doc_vocab, rd, qd = _joint_codes(_arrow_strings(run.docids), _arrow_strings(qrels.docids))
        self.n_queries = int(self.qids.size)
        self.run_q = rq[run.qcode] if len(run) else np.zeros(0, np.int64)
        self.run_doc_code = rd[run.dcode] if len(run) else np.zeros(0, np.int64)
        byte_order = _ByteOrder(self._doc_vocab)
        self.run_doc = DocKey(byte_order, self.run_doc_code)
        self.run_score = np.asarray(run.score, dtype=np.float64)
        self.run_rank = np.asarray(run.rank, dtype=np.float64)
        self.run_line = np.asarray(run.line, dtype=np.int64)
        self.run_order = np.arange(len(run), dtype=np.int64)
        self.qrels_q = qq[qrels.qcode] if len(qrels) else np.zeros(0, np.int64)
        self.qrels_doc_code = qd[qrels.dcode] if len(qrels) else np.zeros(0, np.int64)
        self.qrels_doc = DocKey(byte_order, self.qrels_doc_code)
        self.qrels_label = np.asarray(qrels.label, dtype=np.float64)
        self.qrels_line = np.asarray(qrels.line, dtype=np.int64)  # for refusals naming a line
        self._n_docs = max(len(self._doc_vocab), 1)
        self._judged_doc = np.zeros(self._n_docs, bool)  # per joint code: some qrels row has it
        self._judged_doc[self.qrels_doc_code] = True
        self.in_run = np.zeros(self.n_queries, bool)
        self.in_run[self.run_q] = True
        self.in_qrels = np.zeros(self.n_queries, bool)
        self.in_qrels[self.qrels_q] = True
        self._dedup: dict[str, np.ndarray] = {}

    @cached_property
    def run_label(self) -> np.ndarray:
        """Raw qrels label of each run row, NaN where (query, doc) is not judged."""
        qkey = self.qrels_q * self._n_docs + self.qrels_doc_code
        order = np.argsort(qkey, kind="stable")
        skey = qkey[order]
        label = np.full(self.run_q.size, np.nan)
        # only rows whose docid the qrels judge for some query can match
        rows = np.flatnonzero(self._judged_doc[self.run_doc_code])
        rkey = self.run_q[rows] * self._n_docs + self.run_doc_code[rows]
        at = np.searchsorted(skey, rkey)
        at_c = np.minimum(at, max(skey.size - 1, 0))
        hit = (at < skey.size) & (skey[at_c] == rkey) if skey.size else np.zeros(rkey.size, bool)
        label[rows[hit]] = self.qrels_label[order[at_c[hit]]]
        return label

    def kept_rows(self, policy: str) -> np.ndarray:
        """Indices of the run rows kept under the ``duplicates`` policy (all, when none repeat)."""
        if policy not in self._dedup:
            key = self.run_q * self._n_docs + self.run_doc_code
            plain = np.sort(key)  # a fast sort answers the usual question: no repeats at all
            if not (plain[1:] == plain[:-1]).any():
                self._dedup[policy] = self.run_order
                return self.run_order
            # (query, docid in byte order): the error names the first repeat in that order
            key = self.run_q * self._n_docs + np.asarray(self.run_doc)
            order = np.argsort(key, kind="stable")
            skey = key[order]
            same = skey[1:] == skey[:-1]
            if not same.any():  # pragma: no cover - the fast check above saw a repeat
                kept = self.run_order
            elif policy == "error":
                i = int(np.flatnonzero(same)[0])
                a, b = sorted((int(order[i]), int(order[i + 1])))
                raise EvaluationError(
                    f"{self.run_source}: document {self._doc_name(b)!r} is listed twice for "
                    f"query {self.qids[self.run_q[b]]!r} (lines {self.run_line[a]} and "
                    f"{self.run_line[b]}); set duplicates=first or duplicates=last to keep one"
                )
            else:
                # groups of equal keys are runs in skey; keep the first or last row of each
                starts = np.concatenate([[True], ~same])
                ends = np.concatenate([~same, [True]])
                pick = starts if policy == "first" else ends
                kept = np.sort(order[pick])
            self._dedup[policy] = kept
        return self._dedup[policy]

    def _doc_name(self, row: int) -> str:
        return self._doc_vocab[int(self.run_doc_code[row])].as_py()


def transform_labels(labels: np.ndarray, conv: Conventions, where: str,
                     seen: np.ndarray | None = None, lines: np.ndarray | None = None,
                     origin: str = "") -> np.ndarray:
    """Apply ``label_type`` then ``negative_labels`` to raw labels (NaN = unjudged, kept NaN).

    Truncation comes first because trec_eval reads labels with ``atol``: -0.5 becomes 0, which
    is not negative. Negative labels under ``unjudged`` become NaN (not judged). The ``raise``
    values refuse only labels in ``seen`` (all when None): a library that is given only the
    ranked lists never sees the label of an unretrieved document.
    """
    out = labels
    judged = ~np.isnan(out)
    seen_mask = judged if seen is None else judged & seen
    if conv.label_type != "float":
        fractional = judged & (out != np.trunc(np.where(judged, out, 0)))
        if fractional.any():
            if conv.label_type == "raise" and (fractional & seen_mask).any():
                fractional = fractional & seen_mask
                raise EvaluationError(_refusal(where, lines, fractional, out, origin + "is not an integer (label_type=raise)"))
            out = np.trunc(out)
    negative = judged & (out < 0)
    if negative.any():
        if conv.negative_labels == "raise" and (negative & seen_mask).any():
            negative = negative & seen_mask
            raise EvaluationError(_refusal(where, lines, negative, out, origin + "is negative (negative_labels=raise)"))
        if conv.negative_labels == "unjudged":
            out = np.where(negative, np.nan, out)
    return out


def scored_queries(prep: Prepared, conv: Conventions) -> np.ndarray:
    """Boolean mask over ``prep.qids``: the queries scored under ``query_set``."""
    if conv.query_set == "run":
        return prep.in_run & prep.in_qrels
    if conv.query_set == "qrels":
        return prep.in_qrels.copy()
    # raise: the sets must be equal
    only_run = prep.in_run & ~prep.in_qrels
    only_qrels = prep.in_qrels & ~prep.in_run
    if only_run.any() or only_qrels.any():
        parts = []
        if only_run.any():
            parts.append(f"{int(only_run.sum())} run queries are not in the qrels "
                         f"(first: {prep.qids[only_run][0]!r})")
        if only_qrels.any():
            parts.append(f"{int(only_qrels.sum())} qrels queries are not in the run "
                         f"(first: {prep.qids[only_qrels][0]!r})")
        raise EvaluationError("query sets differ (query_set=raise): " + "; ".join(parts))
    return prep.in_qrels.copy()


def _refusal(where: str, lines: np.ndarray | None, bad: np.ndarray, labels: np.ndarray, problem: str) -> str:
    """``file:line: label L problem`` for the first refused label (its line when known)."""
    i = int(np.argmax(bad))
    value = float(labels[i])
    text = str(int(value)) if value.is_integer() else repr(value)
    at = f"{where}:{int(lines[i])}" if lines is not None else where
    return f"{at}: label {text} {problem}"

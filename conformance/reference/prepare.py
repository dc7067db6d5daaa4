"""Joining a run to its qrels once, so every convention set evaluates from the same arrays.

``Prepared`` puts queries and documents of both inputs into one vocabulary each, gives every run
row its raw qrels label (NaN when unjudged), and caches what later convention sets can share:
label transforms and query selections. Queries are coded by their byte-wise sorted order.
Documents get one joint code for the join (no sort); their byte-wise order, which the
``docid_asc``/``docid_desc`` tie rules need, is a :class:`DocKey` computed only for the rows a
sort asks about (the rows in tied groups), since sorting every docid string costs more than the
rest of an evaluation. A run read from a dict keyed by strings needs no join at all: its rows'
labels are looked up in the qrels' own dicts (:func:`looked_up_labels`), and its docids are
read only for the rows a tie rule orders. One idea at about 640 lines: the join and the caches
its arrays feed cannot be read apart.
"""

from __future__ import annotations

import weakref
from functools import cached_property
from itertools import chain, compress, repeat
from typing import Callable, Mapping

import numpy as np
import pyarrow as pa

from conformance.conventions import Conventions
from conformance.errors import EvaluationError
from conformance.io import kernels as ac
from conformance.io.columnar import (DocWords, LazyRange, arrow_numpy, arrow_strings, line_numbers, numpy_arrow,
                                     pair_hash, row_blocks)
from conformance.io.data import Qrels, Run
from conformance.parallel import each, query_halves, query_pieces, row_halves


def _strings(table) -> pa.Array:
    """A table's query vocabulary as Arrow strings: the readers' own copy when there is one."""
    if table.qid_strings is not None:
        return table.qid_strings
    return arrow_strings(table.qids)


def _sorted_union_codes(a: pa.Array, b: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """Unique strings of ``a`` and ``b`` sorted byte-wise; and each one's position in that order.

    Arrow compares strings as bytes, which for UTF-8 is also code point order: the same order
    trec_eval's strcmp gives on the raw docnos.
    """
    a_arr, b_arr = a, b
    uniq = ac.unique(pa.concat_arrays([a_arr, b_arr]))
    uniq = ac.take(uniq, ac.sort_indices(uniq))
    a_pos = arrow_numpy(ac.index_in(a_arr, value_set=uniq))
    b_pos = arrow_numpy(ac.index_in(b_arr, value_set=uniq))
    return (
        uniq,
        a_pos.astype(np.int64),
        b_pos.astype(np.int64),
    )


def _query_index(joint: np.ndarray, qcode: np.ndarray, n_queries: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the joint query index (``joint[qcode]``), and which queries have a row; on a
    large input in two threads, half of the rows each."""
    out = np.empty(qcode.size, np.int64)

    def part(rows: slice) -> np.ndarray:
        np.take(joint, qcode[rows], out=out[rows])
        present = np.zeros(n_queries, bool)
        present[out[rows]] = True
        return present

    return out, np.logical_or.reduce(each(part, row_halves(qcode.size)))


def _doc_strings(table) -> pa.Array:
    """A table's docid vocabulary as Arrow strings: the readers' own copy when there is one."""
    docids = table.docids  # builds the vocabulary (and its Arrow copy) if not built yet
    return table.docid_strings if table.docid_strings is not None else arrow_strings(docids)


def _joint_codes(a: pa.Array, b: pa.Array) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """One coding of two vocabularies of distinct strings, without sorting: (joint vocabulary,
    code of each string of ``a``, code of each string of ``b``). The smaller vocabulary is
    hashed and the larger looked up in it; the strings only the larger has are coded after it.
    """
    swap = len(b) > len(a)
    small, large = (a, b) if swap else (b, a)
    found = ac.index_in(large, value_set=small)
    missing = arrow_numpy(ac.is_null(found))
    large_codes = arrow_numpy(found, fill=-1).astype(np.int64)
    large_codes[missing] = len(small) + np.arange(int(missing.sum()), dtype=np.int64)
    vocab = pa.concat_arrays([small, ac.filter(large, numpy_arrow(missing))]) if missing.any() else small
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
        return self._ranks(ac.take(self.vocab, numpy_arrow(distinct)))[inverse]

    @staticmethod
    def _ranks(strings: pa.Array) -> np.ndarray:
        # Arrow compares strings as bytes, which for UTF-8 is also code point order: the same
        # order trec_eval's strcmp gives on the raw docnos.
        order = arrow_numpy(ac.sort_indices(strings))
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


def _exact_key_of(prep: "Prepared") -> Callable[[], DocKey]:
    """() -> ``prep``'s exact docid key of the run, for the word-form key ``prep`` holds: a
    weak reference, since a strong one would make a cycle that only the garbage collector
    frees, keeping the whole join (and the sweep's ranked rows beside it) alive until it runs."""
    owner = weakref.ref(prep)

    def exact() -> DocKey:
        held = owner()
        if held is None:
            raise RuntimeError("a docid key was read after the join it came from was freed")
        return held._exact_run_doc
    return exact


class _WordsKey:
    """A :class:`DocKey` read from the docids' word form (``data.DocWords``): ``codes(rows)``
    orders only the rows asked about, from their padded bytes, with no string sort and no
    vocabulary. ``np.asarray(key)`` is the exact key of :class:`Prepared` (built on demand)."""

    def __init__(self, words, rows: np.ndarray | slice | None, full) -> None:
        # rows: which rows of ``words`` this key holds: all (None), a contiguous range (a
        # slice with step 1, kept as a view: the evaluation's halves), or an index array
        self._words, self._rows, self._full = words, rows, full

    def __getitem__(self, rows) -> "_WordsKey":
        if self._rows is None and isinstance(rows, slice) and rows.step in (None, 1):
            start, stop, _ = rows.indices(len(self._words))
            return _WordsKey(self._words, slice(start, max(start, stop)), self._full)
        held = self._rows
        if held is None:
            held = np.arange(len(self._words))
        elif isinstance(held, slice):
            held = np.arange(held.start, held.stop)
        return _WordsKey(self._words, held[rows], self._full)

    def __len__(self) -> int:
        if self._rows is None:
            return len(self._words)
        if isinstance(self._rows, slice):
            return self._rows.stop - self._rows.start
        return int(self._rows.size)

    def _at(self, rows: np.ndarray | None):
        """Rows of ``words`` for this key's rows ``rows`` (all when None)."""
        if rows is None or self._rows is None:
            return self._rows if rows is None else rows
        if isinstance(self._rows, slice):
            return rows + self._rows.start
        return self._rows[rows]

    def codes(self, rows: np.ndarray | None = None) -> np.ndarray:
        return self._words.order_codes(self._at(rows))

    def sort_keys(self, rows: np.ndarray | None = None, descending: bool = False) -> list[np.ndarray]:
        """``np.lexsort`` keys ordering the rows by docid bytes (see ``DocWords.sort_keys``)."""
        return self._words.sort_keys(self._at(rows), descending)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = np.asarray(self._full())
        out = out if self._rows is None else out[self._rows]
        return out if dtype is None else out.astype(dtype)


class Prepared:
    """Qrels and run in one coding. Arrays are per run row (``run_*``) or per qrels row (``qrels_*``).

    ``qids``: every query id of either input, sorted. ``run_q``/``qrels_q``: index into ``qids``.
    ``run_doc``/``qrels_doc``: the docid's byte order among all docids (tie key), as a lazy
    :class:`DocKey`. ``run_doc_code``/``qrels_doc_code``: the docid's joint code (equal codes,
    equal docids; no order). ``run_label``: the raw qrels label of the row's (query, doc), NaN
    when the pair is not judged. ``run_order``: the row's position in the run as listed (for
    input-order tie rules).

    When both inputs carry their docids in word form (``data.DocWords``, as the TREC readers
    give them), the join, the duplicate check and the docid tie key use the words, and the
    joint docid coding (``run_doc_code``, ``qrels_doc_code``) is built only if asked for.

    ``run_label``: each run row's raw label, already found (:func:`looked_up_labels`, for a run
    read from a dict keyed by strings, whose pairs are distinct): no join is made, and the tie
    key reads the run's docid strings for the rows it orders. ``shared``: a store that joins of
    these same qrels with other runs share (``api.Evaluator``'s), where the evaluation keeps
    what depends on the qrels alone (``evaluate._judged_side``).
    """

    def __init__(self, qrels: Qrels, run: Run, run_label: np.ndarray | None = None,
                 shared: dict | None = None) -> None:
        self.qrels_source, self.run_source = qrels.source, run.source
        self.shared = shared
        self._qrels_in, self._run_in = qrels, run
        qvocab, rq, qq = _sorted_union_codes(_strings(run), _strings(qrels))
        self.qids = np.empty(len(qvocab), dtype=object)
        self.qids[:] = qvocab.to_pylist()
        self.n_queries = int(self.qids.size)
        self.run_q, self.in_run = _query_index(rq, run.qcode, self.n_queries)
        self.run_score = np.asarray(run.score, dtype=np.float64)
        self.run_line = line_numbers(run.line)
        self.run_order = LazyRange(0, len(run))
        self.qrels_q, self.in_qrels = _query_index(qq, qrels.qcode, self.n_queries)
        self.qrels_label = np.asarray(qrels.label, dtype=np.float64)
        self.qrels_line = line_numbers(qrels.line)  # for refusals naming a line
        # two row ranges of disjoint queries for work in two threads, or one range (parallel)
        self.run_halves = query_halves(self.run_q, self.n_queries)
        self._dedup: dict[str, np.ndarray] = {}
        self._merged: np.ndarray | None = None  # run_label from the word-form join, or given
        self._by_words = False
        if run_label is not None:
            if not (run.doc_list is not None and run.distinct_pairs and len(run_label) == len(run)):
                raise ValueError("run_label is for a run read from a dict (doc_list, distinct pairs)")
            self._merged = run_label
            self.run_doc = _WordsKey(run.doc_list, None, _exact_key_of(self))
            self._run_distinct = True
            return
        if run.doc_words is not None and qrels.doc_words is not None and len(run) and len(qrels):
            self._merged = _merge_in_halves(self.run_q, run.doc_words, self.qrels_q, qrels.doc_words,
                                            self.qrels_label, self.n_queries, self.run_halves)
            run.doc_words.forget_hashes()  # 8 bytes a row, not needed again (peak memory)
            qrels.doc_words.forget_hashes()
            self._by_words = self._merged is not None
        if self._merged is not None:
            self.run_doc = _WordsKey(run.doc_words, None, _exact_key_of(self))
            self._run_distinct = True  # the join saw every repeated (query, docid) pair
        else:
            self.run_doc = self._exact_run_doc
            self._run_distinct = False

    @property
    def inputs(self) -> tuple[Qrels, Run]:
        """The qrels and the run this join was made of."""
        return self._qrels_in, self._run_in

    @property
    def joined_by_words(self) -> bool:
        """Whether the run and the qrels were joined on the docid words, which also proves that
        no (query, docid) pair repeats in either."""
        return self._by_words

    @cached_property
    def run_rank(self) -> np.ndarray:
        """The run's rank column (read only under ``rank_source=rank_column``)."""
        return np.asarray(self._run_in.rank, dtype=np.float64)

    @cached_property
    def _coding(self):
        """The exact joint docid coding (vocabulary, run codes, qrels codes, byte order)."""
        qrels, run = self._qrels_in, self._run_in
        vocab, rd, qd = _joint_codes(_doc_strings(run), _doc_strings(qrels))
        run_code = rd[run.dcode] if len(run) else np.zeros(0, np.int64)
        qrels_code = qd[qrels.dcode] if len(qrels) else np.zeros(0, np.int64)
        return vocab, run_code, qrels_code, _ByteOrder(vocab)

    @property
    def _doc_vocab(self) -> pa.Array:
        return self._coding[0]

    @property
    def run_doc_code(self) -> np.ndarray:
        return self._coding[1]

    @property
    def qrels_doc_code(self) -> np.ndarray:
        return self._coding[2]

    @cached_property
    def _exact_run_doc(self) -> DocKey:
        return DocKey(self._coding[3], self.run_doc_code)

    @cached_property
    def qrels_doc(self) -> DocKey:
        return DocKey(self._coding[3], self.qrels_doc_code)

    @property
    def _n_docs(self) -> int:
        return max(len(self._doc_vocab), 1)

    @cached_property
    def _judged_doc(self) -> np.ndarray:
        judged = np.zeros(self._n_docs, bool)  # per joint code: some qrels row has it
        judged[self.qrels_doc_code] = True
        return judged

    @cached_property
    def run_label(self) -> np.ndarray:
        """Raw qrels label of each run row, NaN where (query, doc) is not judged."""
        if self._merged is not None:
            return self._merged
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

    @cached_property
    def identical_rows(self) -> np.ndarray:
        """Per run row: whether its docid equals its query id (``identical_ids=drop``). On a run
        joined by its docid words, the query ids are put in word form and compared row by row
        (the docid vocabulary, most of the cost of building the exact coding, is not made)."""
        if self._by_words:
            found = _identical_by_words(self._run_in.doc_words, self.qids, self.run_q)
            if found is not None:
                return found
        vocab = self._doc_vocab
        qids = arrow_strings(self.qids).cast(vocab.type)
        query_of_doc = arrow_numpy(ac.index_in(vocab, value_set=qids), fill=-1).astype(np.int64)
        return query_of_doc[self.run_doc_code] == self.run_q

    @cached_property
    def annotated_rows(self) -> np.ndarray:
        """Per run row: whether some qrels row, of any query and with any label, names its
        docid (the annotated corpus of BEIR's and MTEB's Hole@k)."""
        return self._judged_doc[self.run_doc_code]

    def kept_rows(self, policy: str) -> np.ndarray:
        """Indices of the run rows kept under the ``duplicates`` policy (all, when none repeat;
        all under ``set``, which counts a document once where the rows are ranked, and under
        ``keep_counted``, which counts its later listings among the judgments too)."""
        if policy in ("keep", "set", "keep_counted"):
            return self.run_order
        if policy not in self._dedup and self._run_distinct:
            self._dedup[policy] = self.run_order
        if policy not in self._dedup:
            key = self.run_q * self._n_docs + self.run_doc_code
            plain = np.sort(key)  # a fast sort answers the usual question: no repeats at all
            if not (plain[1:] == plain[:-1]).any():
                self._dedup[policy] = self.run_order
                return self.run_order
            # (query, docid in byte order): the error names the first repeat in that order
            key = self.run_q * self._n_docs + np.asarray(self._exact_run_doc)
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


_NOT_JUDGED: dict = {}


def judgments(qrels: Qrels) -> dict[str, dict[str, float]] | None:
    """``{qid: {docid: label}}`` of read qrels (every judgment once, as read), for
    :func:`looked_up_labels`: made once by a caller that joins many runs to these qrels. None
    when a docid is not text (it could not be a dict's key as the run's docids are)."""
    if not len(qrels):
        return {}
    order = np.argsort(qrels.qcode, kind="stable")  # the rows of each query together
    counts = np.bincount(qrels.qcode, minlength=len(qrels.qids))
    if qrels.doc_list is not None:  # read from a dict: already query by query
        docs = qrels.doc_list.ids
    else:
        try:
            docs = qrels.doc_ids()[order].tolist()
        except UnicodeDecodeError:  # pragma: no cover - the readers give text
            return None
    labels = qrels.label[order].tolist() if qrels.doc_list is None else qrels.label.tolist()
    ends = np.cumsum(counts).tolist()
    starts = [0] + ends[:-1]
    present = counts > 0
    # one dict per query (a loop over queries, each dict built in C)
    return {q: dict(zip(docs[a:b], labels[a:b]))
            for q, a, b in compress(zip(qrels.qids.tolist(), starts, ends), present.tolist())}


def looked_up_labels(judged: Mapping[str, Mapping[str, object]], run: Run) -> np.ndarray | None:
    """Each run row's raw label in ``judged`` (``{qid: {docid: label}}``, every id a ``str``:
    the user's qrels dict when it was read as :class:`Prepared` would read it, or
    :func:`judgments`), NaN where the pair is not judged; None unless the run was read from a
    dict keyed by strings (``doc_list``: its rows query by query, its pairs distinct).

    One dictionary lookup per row, at C speed: each row's query's judgments (the query's dict,
    repeated over its rows) and docid go through ``map(dict.get, ...)``; the labels are the
    qrels' own numbers made float64, as the readers make them. This is the join a plain dict
    allows, and it is exact: a dict compares keys as strings, which is what the join on bytes
    compares (UTF-8 is one-to-one).
    """
    if run.doc_list is None or not run.distinct_pairs or not len(run):
        return None
    lengths = np.bincount(run.qcode, minlength=len(run.qids)).tolist()
    per_query = map(judged.get, run.qids.tolist(), repeat(_NOT_JUDGED))
    per_row = chain.from_iterable(map(repeat, per_query, lengths))
    return np.fromiter(map(dict.get, per_row, run.doc_list.ids, repeat(np.nan)), np.float64, len(run))


def _identical_by_words(words: DocWords, qids: np.ndarray, run_q: np.ndarray) -> np.ndarray | None:
    """Per row of ``words``: whether the id equals ``qids[run_q]``, compared in word form
    (:class:`DocWords`: equal ids have equal lengths and equal words at any common width);
    None when some query id has no word form (over 128 bytes: the exact coding answers)."""
    if not len(words):
        return np.zeros(0, bool)
    qwords = DocWords.of(arrow_strings(qids))
    if qwords is None:
        return None
    width = words.width
    q_lens = qwords.lens.astype(np.int64)
    q_mat = qwords.words[:, :width]
    q_lens[q_lens > width * 8] = -1  # longer than every docid: equal to none
    if q_mat.shape[1] < width:
        q_mat = np.pad(q_mat, ((0, 0), (0, width - q_mat.shape[1])))
    same = words.lens == q_lens[run_q]
    for col in range(width):  # one column at a time: no row-by-width copy of the run
        same &= words.words[:, col] == q_mat[run_q, col]
    return same


def _merge_in_halves(run_q: np.ndarray, run_words, qrels_q: np.ndarray, qrels_words,
                     qrels_label: np.ndarray, n_queries: int, halves: list[slice] | None = None,
                     hash_bits: int = 64) -> np.ndarray | None:
    """:func:`_merge_labels`, in two threads when the run is large and listed query by query:
    each joins the run rows of half of the queries with those queries' judgments, in pieces of
    whole queries one after the other (``parallel.query_pieces``: the join's arrays are held
    for a piece at a time). A judgment can only match a run row of its own query, so the
    labels are those of one join; the judgments of queries the run does not list go with the
    first piece."""
    if halves is None:
        halves = query_halves(run_q, n_queries)
    if len(halves) < 2:
        return _merge_labels(run_q, run_words, qrels_q, qrels_words, qrels_label, hash_bits)
    width = max(run_words.width, qrels_words.width)
    run_hash, qrels_hash = run_words.hash(width), qrels_words.hash(width)
    numbered: dict[int, list[tuple[int, slice]]] = {}  # half's first row -> its (piece number, rows)
    owner = np.zeros(n_queries, np.int64)  # each query's piece
    k = 0
    for h in halves:
        numbered[h.start] = []
        for rows in query_pieces(run_q, h):
            owner[run_q[rows]] = k
            numbered[h.start].append((k, rows))
            k += 1
    piece_of = owner[qrels_q]
    judged = np.argsort(piece_of, kind="stable")  # the judgments piece by piece, in row order
    bounds = np.searchsorted(piece_of[judged], np.arange(k + 1))
    del owner, piece_of

    label = np.empty(run_q.size)

    def piece(i: int, rows: slice) -> bool:
        sel = judged[bounds[i]:bounds[i + 1]]
        return _merge_labels(
            run_q[rows], DocWords(run_words.words[rows], run_words.lens[rows]),
            qrels_q[sel], DocWords(qrels_words.words[sel], qrels_words.lens[sel]), qrels_label[sel],
            hash_bits, run_hash=run_hash[rows], qrels_hash=qrels_hash[sel], out=label[rows]) is not None

    return label if all(each(lambda h: all(piece(i, rows) for i, rows in numbered[h.start]), halves)) else None


def _merge_labels(run_q: np.ndarray, run_words, qrels_q: np.ndarray, qrels_words,
                  qrels_label: np.ndarray, hash_bits: int = 64, *, run_hash: np.ndarray | None = None,
                  qrels_hash: np.ndarray | None = None, out: np.ndarray | None = None) -> np.ndarray | None:
    """Each run row's qrels label (NaN when not judged), joined by one sort; None when the
    exact join must decide (a (query, docid) pair repeated in the run or in the qrels).

    Every row of both inputs gets a 64-bit hash of (query, docid); the high bits of the hash
    and the row's index share one uint64, and one ``np.sort`` brings rows of equal hash
    together. Equal (query, docid) pairs have equal hashes, so a run row's judgment is in its
    group; each candidate pair is verified on the query and the docid words, so a hash
    collision can neither make nor hide a match. Groups of two are handled in bulk, the few
    larger ones (collisions of the shortened hash) one by one. ``hash_bits`` keeps only that
    many bits of the hash (tests use it to force collisions). ``run_hash`` / ``qrels_hash``:
    the docids' ``DocWords.hash`` at the wider of the two widths, when already computed;
    ``out``: where to write the labels (a float64 array of the run's length).
    """
    width = max(run_words.width, qrels_words.width)
    nq, nr = qrels_q.size, run_q.size
    n = nq + nr
    bits = max(1, (n - 1).bit_length())
    low = np.uint64((1 << bits) - 1)
    packed = np.empty(n, np.uint64)
    pair_hash(qrels_q, qrels_words.hash(width) if qrels_hash is None else qrels_hash, out=packed[:nq])
    pair_hash(run_q, run_words.hash(width) if run_hash is None else run_hash, out=packed[nq:])
    packed >>= np.uint64(max(bits, 64 - hash_bits))
    packed <<= np.uint64(max(bits, 64 - hash_bits))
    # block by block, so that the row numbers and the high bits need no array of n each
    for b in row_blocks(0, n):
        packed[b] |= np.arange(b.start, b.stop, dtype=np.uint64)
    packed.sort()
    eq_parts = []  # i where rows i and i + 1 (sorted) share the high bits
    for b in row_blocks(0, n - 1):
        high = packed[b.start:b.stop + 1] >> np.uint64(bits)
        eq_parts.append(np.flatnonzero(high[1:] == high[:-1]) + b.start)
    eq = np.concatenate(eq_parts) if eq_parts else np.zeros(0, np.int64)
    label = np.full(nr, np.nan) if out is None else out
    label.fill(np.nan)
    if eq.size == 0:
        return label
    # groups of equal high bits: pairs (i, i + 1); a pair that touches another is in a larger group
    in_big = np.zeros(eq.size, bool)
    if eq.size > 1:
        touch = eq[1:] == eq[:-1] + 1
        in_big[1:] |= touch
        in_big[:-1] |= touch
    pairs = eq[~in_big]
    a = (packed[pairs] & low).astype(np.int64)  # the smaller index: qrels rows come first
    b = (packed[pairs + 1] & low).astype(np.int64)

    def same(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Whether combined rows x and y hold the same (query, docid)."""
        def side(i):
            is_q = i < nq
            return is_q, np.where(is_q, i, i - nq)
        xq, xi = side(x)
        yq, yi = side(y)
        out = np.zeros(x.size, bool)
        for xs, ys in ((True, False), (False, False), (True, True)):
            m = (xq == xs) & (yq == ys)
            if m.any():
                xw, xqq = (qrels_words, qrels_q) if xs else (run_words, run_q)
                yw, yqq = (qrels_words, qrels_q) if ys else (run_words, run_q)
                out[m] = (xqq[xi[m]] == yqq[yi[m]]) & xw.same(xi[m], yw, yi[m])
        return out

    match = same(a, b)
    if (match & ((a >= nq) | (b < nq))).any():
        return None  # a run pair or a qrels pair repeated: the exact join settles it
    hit = match & (a < nq)
    label[b[hit] - nq] = qrels_label[a[hit]]
    big = eq[in_big]
    if big.size:
        if big.size > 100_000:  # pragma: no cover - a hash this weak: let the exact join work
            return None
        starts = big[np.concatenate([[True], big[1:] != big[:-1] + 1])]
        for s in starts.tolist():
            e = s + 1
            while e < packed.size and (packed[e] >> np.uint64(bits)) == (packed[s] >> np.uint64(bits)):
                e += 1
            members = (packed[s:e] & low).astype(np.int64)
            x, y = np.triu_indices(members.size, 1)
            m = same(members[x], members[y])
            mx, my = members[x][m], members[y][m]
            if ((mx >= nq) | (my < nq)).any():
                return None
            label[my - nq] = qrels_label[mx]
    return label


def transform_labels(labels: np.ndarray, conv: Conventions, where: str,
                     seen: np.ndarray | None = None, lines: np.ndarray | None = None,
                     origin: str = "") -> np.ndarray:
    """Apply ``label_type`` then ``negative_labels`` to raw labels (NaN = unjudged, kept NaN).

    Truncation comes first because trec_eval reads labels with ``atol``: -0.5 becomes 0, which
    is not negative. Negative labels under ``unjudged`` become NaN (not judged). The ``raise``
    values refuse only labels in ``seen`` (all when None): a library that is given only the
    ranked lists never sees the label of an unretrieved document.
    """
    # Only judged rows can change: work on them alone (a run row is rarely judged), and
    # return ``labels`` itself when nothing changes.
    idx = np.flatnonzero(~np.isnan(labels))
    vals = labels[idx]
    seen_v = None if seen is None else seen[idx]
    changed = False
    if conv.label_type == "float32":
        narrowed = vals.astype(np.float32).astype(np.float64)
        changed = bool((narrowed != vals).any())
        vals = narrowed
    elif conv.label_type != "float":
        fractional = vals != np.trunc(vals)
        if fractional.any():
            if conv.label_type == "raise":
                bad_mask = fractional if seen_v is None else fractional & seen_v
                if bad_mask.any():
                    raise EvaluationError(_refusal(where, None if lines is None else lines[idx], bad_mask,
                                                   vals, origin + "is not an integer (label_type=raise; label_type=int_truncate "
                                                   "truncates it, as the trec_eval command line does; label_type=float "
                                                   "uses it as it is)"))
            vals = np.trunc(vals)
            changed = True
    negative = vals < 0
    if negative.any():
        if conv.negative_labels == "raise":
            bad_mask = negative if seen_v is None else negative & seen_v
            if bad_mask.any():
                raise EvaluationError(_refusal(where, None if lines is None else lines[idx], bad_mask,
                                               vals, origin + "is negative (negative_labels=raise)"))
        if conv.negative_labels == "unjudged":
            vals = np.where(negative, np.nan, vals)
            changed = True
    if not changed:
        return labels
    out = labels.copy()
    out[idx] = vals
    return out


def scored_queries(prep: Prepared, conv: Conventions) -> np.ndarray:
    """Boolean mask over ``prep.qids``: the queries scored under ``query_set``."""
    if conv.query_set == "run":
        return prep.in_run & prep.in_qrels
    if conv.query_set == "qrels":
        return prep.in_qrels.copy()
    if conv.query_set == "run_all":
        return prep.in_run.copy()
    # raise: the sets must be equal; qrels_strict: no run query may lack judgments
    only_run = prep.in_run & ~prep.in_qrels
    only_qrels = prep.in_qrels & ~prep.in_run
    if conv.query_set in ("qrels_strict", "run_strict"):
        if only_run.any():
            raise EvaluationError(
                f"{int(only_run.sum())} run queries are not in the qrels (first: "
                f"{prep.qids[only_run][0]!r}; query_set={conv.query_set})")
        return prep.in_qrels.copy() if conv.query_set == "qrels_strict" else prep.in_run.copy()
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

"""Dictionary encoding of id columns, and the check that (query, docid) pairs are distinct.

An id column (Arrow strings) becomes per-row int64 codes into a vocabulary of its distinct ids,
in order of first appearance (:func:`factorize_arrow`): the same codes and vocabulary as Arrow's
hash-table ``dictionary_encode``, by whichever of three exact methods is fastest for the column
(see there).

For the pairs: :func:`encode_pairs` codes both columns and says whether a (query, docid) pair
repeats, exactly; :func:`encode_words` is the fast coding that keeps docids as
:class:`~conformance.io.columnar.DocWords` (no docid vocabulary), with
:func:`pairs_may_repeat` proving the pairs distinct by one sort of hashed pairs. On large
inputs the work is split over two threads (``conformance.parallel``); the result does not
depend on it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from conformance.io import kernels as ac
from conformance.io.columnar import DocWords, arrow_numpy, arrow_offsets, arrow_strings, numpy_arrow, pair_hash
from conformance.parallel import both, each, query_halves, worth_splitting

_SORT_MIN_ROWS = 1 << 16
_MAX_WORDS = 8  # ids up to 64 bytes take the sort path; longer ones the hash table
_SAMPLE = 4096


def as_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        try:
            values = values.combine_chunks()
        except pa.ArrowInvalid:  # over 2 GiB of id bytes
            values = ac.cast(values, pa.large_string()).combine_chunks()
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    return values


def to_object(strings: pa.Array) -> np.ndarray:
    # to_pylist, not to_numpy: Arrow's to_numpy of strings imports pandas (~0.5 s)
    out = np.empty(len(strings), dtype=object)
    out[:] = strings.to_pylist()
    return out


def factorize(values: pa.Array | pa.ChunkedArray, *, method: str | None = None,
              hash_bits: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-row int64 codes and the object array of unique ids, in order of first appearance."""
    codes, vocab = factorize_arrow(values, method=method, hash_bits=hash_bits)
    return codes, to_object(vocab)


def factorize_arrow(values: pa.Array | pa.ChunkedArray, *, method: str | None = None,
                    hash_bits: int | None = None) -> tuple[np.ndarray, pa.Array]:
    """Per-row int64 codes and the Arrow array of unique ids, in order of first appearance.

    Three exact methods. "table": Arrow's hash-table dictionary_encode, fastest when few
    distinct ids or few rows. "runs" (:func:`factorize_runs`): few distinct ids on a large
    input (qids), listed in groups; it falls back to "table" when they are not grouped. "sort":
    for many distinct short ids (docids) on large inputs, where a hash table far bigger than
    the CPU caches spends its time on cache misses. Each id is read as
    up to 8 little-endian 64-bit words (zero padded), hashed, and the (hash, row) pairs are sorted
    in one SIMD ``np.sort``; equal hashes form a group. Each row is then compared word by word
    (and by length) with the row before it in its group, so a hash collision cannot merge two
    ids: groups that hold more than one id are split exactly. ``hash_bits`` keeps only that many
    hash bits (tests use it to force collisions).
    """
    n = len(values)
    if n == 0:
        return np.zeros(0, np.int64), arrow_strings([])
    if method is None:
        method = "table" if n < _SORT_MIN_ROWS else "sort"
        if method == "sort":
            sample = ac.count_distinct(values.slice(0, _SAMPLE)).as_py()
            if sample * 2 < min(n, _SAMPLE):
                method = "runs"
    if method == "runs":
        out = factorize_runs(values)
        if out is not None:
            return out
        method = "table"
    arr = as_array(values)
    if method == "sort":
        out = _factorize_sort(arr, hash_bits)
        if out is not None:
            return out
    enc = ac.dictionary_encode(arr)
    return arrow_numpy(enc.indices).astype(np.int64), enc.dictionary


def factorize_runs(values: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, pa.Array] | None:
    """The "runs" method: ids listed in groups of equal neighbours (a run's qids, query by
    query) are coded by coding only the first row of each group and spreading its code over the
    group. The same codes and vocabulary as the hash table (first appearance among the group
    heads is first appearance among the rows), with one comparison of neighbours instead of a
    hash lookup per row: on a 2M-row run ~0.03 s against ~0.07 s. None when the ids are not
    grouped (more than one group in 16 rows), or are dictionary-encoded."""
    if pa.types.is_dictionary(values.type):
        return None
    n = len(values)
    starts, base, groups = [], 0, 0
    for chunk in values.chunks if isinstance(values, pa.ChunkedArray) else [values]:
        m = len(chunk)
        if m == 0:
            continue
        starts.append(np.array([base], np.int64))  # a chunk's first row always starts a group
        if m > 1:
            changed = ac.indices_nonzero(ac.not_equal(chunk.slice(1), chunk.slice(0, m - 1)))
            at = arrow_numpy(changed).astype(np.int64)
            at += base + 1
            starts.append(at)
        base += m
        groups += 1 + (at.size if m > 1 else 0)
        if groups * 16 > n:
            return None
    first = np.concatenate(starts)
    enc = ac.dictionary_encode(as_array(ac.take(values, numpy_arrow(first))))
    sizes = np.diff(first, append=n)
    return np.repeat(arrow_numpy(enc.indices).astype(np.int64), sizes), enc.dictionary


def _factorize_sort(arr: pa.Array, hash_bits: int | None) -> tuple[np.ndarray, pa.Array] | None:
    n = len(arr)
    bufs = arr.buffers()
    off = arrow_offsets(arr).astype(np.int64)
    lens = np.diff(off)
    width = (int(lens.max()) + 7) // 8
    if width > _MAX_WORDS:
        return None
    total = int(off[-1] - off[0])
    padded = np.zeros(total + 8, np.uint8)
    if total:
        padded[:total] = np.frombuffer(bufs[2], np.uint8, total, int(off[0]))
    starts = off[:-1] - off[0]
    # element i of this view is the 8 bytes from byte i on (little endian, unaligned)
    view = np.ndarray((total + 1,), dtype="<u8", buffer=padded, strides=(1,))
    words = []
    for j in range(max(width, 1)):
        w = view[starts if j == 0 else np.minimum(starts + 8 * j, total)]
        rem = lens - 8 * j
        short = rem < 8  # ids that end inside this word: clear the bytes after their end
        if short.any():
            shift = np.clip(rem[short], 0, 7).astype(np.uint64) * np.uint64(8)
            w[short] &= (np.uint64(1) << shift) - np.uint64(1)
        words.append(w)
    h = lens.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    for w in words:
        h ^= w
        h *= np.uint64(0xFF51AFD7ED558CCD)
        h ^= h >> np.uint64(29)
    for c in (np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53)):
        h ^= h >> np.uint64(33)
        h *= c
    h ^= h >> np.uint64(33)
    bits = max(1, (n - 1).bit_length())
    keep = 64 - bits if hash_bits is None else min(hash_bits, 64 - bits)
    packed = ((h >> np.uint64(64 - keep)) << np.uint64(bits)) if keep > 0 else np.zeros(n, np.uint64)
    del h
    packed |= np.arange(n, dtype=np.uint64)
    packed.sort()
    rows = (packed & np.uint64((1 << bits) - 1)).astype(np.int64)  # sorted by (hash, row)
    key = packed >> np.uint64(bits)
    first = np.empty(n, bool)
    first[0] = True
    np.not_equal(key[1:], key[:-1], out=first[1:])
    del packed, key
    group = np.cumsum(first) - 1  # per sorted position
    reps = rows[first]  # the first row (first appearance) of each hash group
    # Verify: a row whose hash equals that of the row before it (in sorted order) must equal
    # that row, byte for byte; by transitivity every hash group then holds one id.
    later = np.flatnonzero(~first)
    if later.size:
        if later.size * 4 > n:  # many repeats: put every word in sorted order once, compare neighbours
            in_order = lens[rows]
            neighbours = in_order[1:] == in_order[:-1]
            for w in words:
                in_order = w[rows]
                neighbours &= in_order[1:] == in_order[:-1]
            same = neighbours[later - 1]
            del in_order, neighbours
        else:  # few repeats: compare just those rows with their predecessors
            a, b = rows[later], rows[later - 1]
            same = lens[a] == lens[b]
            for w in words:
                same &= w[a] == w[b]
        if not same.all():
            mixed = np.unique(group[later[~same]])
            positions = np.flatnonzero(np.isin(group, mixed))
            if positions.size > 65536 and hash_bits is None:
                return None  # something defeats the hash: let the hash table do it
            extra: dict[tuple[int, bytes], int] = {}
            new_reps: list[int] = []
            for p in positions.tolist():  # a group's rows in ascending row order
                r, g = int(rows[p]), int(group[p])
                text = padded[starts[r] : starts[r] + lens[r]].tobytes()
                rep = int(reps[g])
                if text == padded[starts[rep] : starts[rep] + lens[rep]].tobytes():
                    continue
                k = (g, text)
                if k not in extra:
                    extra[k] = reps.size + len(extra)
                    new_reps.append(r)
                group[p] = extra[k]
            reps = np.concatenate([reps, np.asarray(new_reps, np.int64)])
    # renumber groups in order of first appearance, then scatter codes back to rows
    marker = np.zeros(n, bool)
    marker[reps] = True
    renumber = (np.cumsum(marker) - 1)[reps]
    codes = np.empty(n, np.int64)
    codes[rows] = renumber[group]
    vocab_rows = np.flatnonzero(marker)
    return codes, (arr if vocab_rows.size == n else ac.take(arr, numpy_arrow(vocab_rows)))


# --------------------------------------------------------------------------------------------
# (query, docid) pairs


def _pair_keys(qcode: np.ndarray, dcode: np.ndarray, ndocs: int) -> np.ndarray:
    return qcode * max(ndocs, 1) + dcode


def _has_repeats(key: np.ndarray) -> bool:
    s = np.sort(key)
    return bool((s[1:] == s[:-1]).any())


def encode_pairs(qid, docid) -> tuple[np.ndarray, Any, np.ndarray, np.ndarray, Any, np.ndarray, bool]:
    """Codes and vocabularies of both id columns (qid codes, qid vocabulary in Arrow, docid
    codes, docid vocabulary as Python strings and in Arrow), the (query, doc) pair keys, and
    whether any repeats.

    On large inputs the Python strings of the docid vocabulary (which hold the GIL) are made in a
    second thread while this one encodes the qids and looks for repeated pairs (Arrow and
    numpy release the GIL there).
    """
    dcode, dvocab = factorize_arrow(docid)

    def encode_qids():
        qcode, qvocab = factorize_arrow(qid)
        key = _pair_keys(qcode, dcode, len(dvocab))
        return qcode, qvocab, key, key.size > 1 and _has_repeats(key)

    if len(dvocab) < _SORT_MIN_ROWS:
        (qcode, qvocab, key, repeats), docids = encode_qids(), to_object(dvocab)
    else:
        (qcode, qvocab, key, repeats), docids = both(encode_qids, lambda: to_object(dvocab))
    return qcode, qvocab, dcode, docids, dvocab, key, repeats


def encode_words(qid, docid, check_pairs: bool = True) -> tuple[np.ndarray, np.ndarray, Any, DocWords] | None:
    """The fast coding: query codes and vocabulary, and the docids as per-row strings and words
    (no docid vocabulary: the data types build it from the words if asked; the strings are
    not kept, 13 bytes a row on the usual docids). None when the docids have no
    word form, or (``check_pairs``) when two rows may hold the same (query, docid) pair (then
    the exact coding settles, and names, the repeats)."""
    if not isinstance(docid, (pa.Array, pa.ChunkedArray)) or len(docid) < 2:
        return None
    # the docid words and the query coding are independent: on large inputs, two threads
    words, (qcode, qvocab) = both(lambda: DocWords.of(docid), lambda: factorize_arrow(qid)) if (
        worth_splitting(len(docid))) else (DocWords.of(docid), factorize_arrow(qid))
    if words is None or (check_pairs and pairs_may_repeat(qcode, len(qvocab), words)):
        return None
    return qcode, qvocab, docid, words


def pairs_may_repeat(qcode: np.ndarray, n_queries: int, words: DocWords) -> bool:
    """Whether two rows may hold the same (query, docid): True for a repeat, or (rarely) two
    pairs of one hash; False proves every pair distinct."""
    h = words.hash()

    def repeats(part: slice) -> bool:
        key = pair_hash(qcode[part], h[part])
        key.sort()
        return bool((key[1:] == key[:-1]).any())

    # a pair can repeat only within its query: a run listed query by query is checked in
    # two halves of its queries at once
    return any(each(repeats, query_halves(qcode, n_queries)))

"""Columnar plumbing under every reader and data type: Arrow <-> numpy, row numbers, hashing.

Nothing here knows what a run or a qrels is. It holds:

* conversions between numpy and Arrow that never import pandas (``pa.array`` on numpy or on a
  list imports it, about half a second): :func:`numpy_arrow`, :func:`arrow_numpy`,
  :func:`arrow_offsets`, :func:`arrow_strings`; and :func:`read_csv`, Arrow's threaded CSV
  reader returning only once its threads have let go of the input;
* :class:`LazyRange`, row numbers held as their two ends, and :func:`line_numbers`;
* 64-bit hashing of (query, docid) pairs in cache-sized blocks (:func:`pair_hash`,
  :func:`row_blocks`), and :class:`DocWords`, docids as fixed-width words, for equality and
  byte order without a vocabulary; :class:`DocList`, docids as a dict's Python strings, turned
  into Arrow strings or words only where asked.

pyarrow is imported inside the functions that need it: ``conformance.io.data`` imports this
module, and the library adapters import the data types without ever reading a file.
"""

from __future__ import annotations

import numpy as np

from conformance.parallel import each, row_halves, worth_splitting

_NP_TYPES = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
             "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
             "float": np.float32, "double": np.float64}


def numpy_arrow(values: np.ndarray):
    """A numpy integer or float array as an Arrow array over the same memory (``pa.array`` on
    numpy, or on a list, imports pandas: about half a second)."""
    import pyarrow as pa

    values = np.ascontiguousarray(values)
    if values.dtype == np.bool_:
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), values.size, [None, pa.py_buffer(bits)])
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), values.size, [None, pa.py_buffer(values)])


def arrow_numpy(arr, fill=None) -> np.ndarray:
    """A numeric Arrow array or chunked array as numpy, zero-copy where it can be.

    Arrow's own ``to_numpy`` imports pandas on first use (about half a second), which the
    evaluation path never needs; numbers and booleans without nulls are read from the buffer
    instead (booleans unpacked from their bits); ``fill`` replaces nulls (of numbers). Anything
    else goes through ``to_numpy``.
    """
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        if arr.num_chunks == 1:
            return arrow_numpy(arr.chunk(0), fill)
        dtype = np.bool_ if pa.types.is_boolean(arr.type) else _NP_TYPES.get(str(arr.type))
        if dtype is None or (arr.null_count and fill is None):
            return arr.to_numpy()
        out = np.empty(len(arr), dtype)
        ends = np.cumsum([len(c) for c in arr.chunks])
        chunks = arr.chunks

        def copy(part: slice) -> None:  # chunk by chunk into place (a large one: two threads)
            for k in range(*part.indices(len(chunks))):
                out[ends[k] - len(chunks[k]):ends[k]] = arrow_numpy(chunks[k], fill)

        m = len(chunks)
        each(copy, [slice(0, m // 2), slice(m // 2, m)] if m > 1 and worth_splitting(len(arr)) else [slice(0, m)])
        return out
    if pa.types.is_boolean(arr.type) and not arr.null_count:
        return _bits(arr.buffers()[1], arr.offset, len(arr))
    dtype = _NP_TYPES.get(str(arr.type))
    if dtype is None or (arr.null_count and fill is None):
        return arr.to_numpy(zero_copy_only=False)
    if len(arr) == 0:
        return np.zeros(0, dtype)
    values = np.frombuffer(arr.buffers()[1], dtype, len(arr), arr.offset * np.dtype(dtype).itemsize)
    if arr.null_count:  # the slots of nulls hold anything: overwritten
        values = values.copy()
        values[~_bits(arr.buffers()[0], arr.offset, len(arr))] = fill
    return values


def _bits(buffer, offset: int, n: int) -> np.ndarray:
    """n booleans from an Arrow bitmap (least significant bit first) starting at bit ``offset``."""
    raw = np.frombuffer(buffer, np.uint8) if n else np.zeros(0, np.uint8)
    return np.unpackbits(raw, count=offset + n, bitorder="little")[offset:].view(np.bool_)


def read_csv(data, start: int = 0, **options):
    """``pyarrow.csv.read_csv`` over ``data[start:]`` (bytes, a bytearray or an mmap), returned
    only once Arrow's threads have let go of ``data``.

    Arrow's multi-threaded CSV reader runs its last callback on a worker thread of Arrow's pool,
    which may still hold the reader, and so the buffer over ``data``, after ``read_csv`` has
    returned. Dropping that buffer releases a Python object and needs the GIL: when the
    interpreter is exiting by then (an error found right after the read, exit status 2), the
    worker is ended inside C++ code that may not be unwound, and the process aborts
    ("terminate called without an active exception", SIGABRT; about 1 run in 300 of
    ``conformance eval`` on a bad qrels file, seen in a core dump: ``PyBuffer::~PyBuffer`` in
    ``AsyncThreadedTableReader``'s disposal). A buffer exported by ``data`` holds a reference to
    it, so waiting until ``data``'s reference count is back to what it was is waiting for that
    worker (microseconds; at most a second, then the read goes on regardless)."""
    import sys
    import time

    import pyarrow as pa
    import pyarrow.csv as pcsv

    before = sys.getrefcount(data)
    buffer = pa.py_buffer(data)
    try:
        table = pcsv.read_csv(pa.BufferReader(buffer[start:] if start else buffer), **options)
    finally:
        del buffer
        deadline = time.monotonic() + 1.0
        while sys.getrefcount(data) > before and time.monotonic() < deadline:
            time.sleep(0.0001)  # releases the GIL, which the worker needs to let go
    return table


def arrow_offsets(strings) -> np.ndarray:
    """The value offsets of a string or binary Arrow array (large or not), as numpy, no copy."""
    import pyarrow as pa

    large = pa.types.is_large_string(strings.type) or pa.types.is_large_binary(strings.type)
    size = 8 if large else 4
    return np.frombuffer(strings.buffers()[1], np.int64 if large else np.int32, len(strings) + 1,
                         strings.offset * size)


def arrow_strings(values) -> "pa.Array":
    """Python strings (a list or object array) as an Arrow string array, built from their UTF-8
    bytes (``pa.array`` would import pandas, ~0.6 s)."""
    import pyarrow as pa

    values = list(values)
    text = "".join(values)
    data = text.encode("utf-8")
    if len(data) == len(text):  # ASCII: a string's length in characters is its length in bytes
        lengths = np.fromiter(map(len, values), np.int64, len(values))
    else:
        lengths = np.fromiter((len(v.encode("utf-8")) for v in values), np.int64, len(values))
    offsets = np.zeros(len(values) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    large = offsets[-1] >= 2**31
    return pa.Array.from_buffers(
        pa.large_string() if large else pa.string(), len(values),
        [None, pa.py_buffer(offsets if large else offsets.astype(np.int32)), pa.py_buffer(data)])


_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_MAX_WORD_BYTES = 128  # longer ids: no word form (readers fall back to exact string coding)


class LazyRange:
    """``np.arange(start, stop)`` (int64) held as its two ends.

    Row numbers (1, 2, ... of a file whose every line is a data row) and listing positions of
    large inputs are such ranges; as arrays they cost 8 bytes a row (16 MB each on 2M rows),
    at the peak of an evaluation. Indexing gives what the array would give: a ``LazyRange`` for
    a slice with step 1, an ``np.int64`` for an integer, an array for anything else.
    ``np.asarray`` makes the array.
    """

    dtype = np.dtype(np.int64)
    ndim = 1

    def __init__(self, start: int, stop: int) -> None:
        self.start, self.stop = int(start), max(int(start), int(stop))

    def __len__(self) -> int:
        return self.stop - self.start

    @property
    def size(self) -> int:
        return len(self)

    @property
    def shape(self) -> tuple[int]:
        return (len(self),)

    def __getitem__(self, idx):
        n = len(self)
        if isinstance(idx, slice):
            a, b, step = idx.indices(n)
            if step == 1:
                return LazyRange(self.start + a, self.start + max(a, b))
            return np.arange(n, dtype=np.int64)[idx] + self.start
        if isinstance(idx, (int, np.integer)):
            i = int(idx) + (n if idx < 0 else 0)
            if not 0 <= i < n:
                raise IndexError(f"index {int(idx)} is out of bounds for size {n}")
            return np.int64(self.start + i)
        idx = np.asarray(idx)
        if idx.dtype == bool:
            if idx.shape != (n,):
                raise IndexError(f"boolean index of shape {idx.shape} for size {n}")
            return np.flatnonzero(idx) + self.start
        idx = idx.astype(np.int64, copy=False)
        if idx.size and (int(idx.min()) < -n or int(idx.max()) >= n):
            raise IndexError(f"index out of bounds for size {n}")
        return np.where(idx < 0, idx + n, idx) + self.start

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = np.arange(self.start, self.stop, dtype=np.int64)
        return out if dtype is None else out.astype(dtype)

    def __iter__(self):
        return iter(range(self.start, self.stop))

    def tolist(self) -> list[int]:
        return list(range(self.start, self.stop))

    def min(self) -> np.int64:
        if not len(self):
            raise ValueError("zero-size range has no minimum")
        return np.int64(self.start)

    def max(self) -> np.int64:
        if not len(self):
            raise ValueError("zero-size range has no maximum")
        return np.int64(self.stop - 1)

    def __repr__(self) -> str:
        return f"LazyRange({self.start}, {self.stop})"


def line_numbers(line) -> "np.ndarray | LazyRange":
    """Row numbers as a table keeps them: a LazyRange as it is, anything else as int64."""
    return line if isinstance(line, LazyRange) else np.asarray(line, dtype=np.int64)


# Hashes are computed block by block: each block's chain of operations runs in the CPU cache
# with block-sized temporaries, where whole-array steps (``x ^= x >> 29``) would each write
# and read back a temporary as large as the input (16 MB a step on a 2M-row run, and fresh
# memory costs more than the arithmetic).
BLOCK_ROWS = 1 << 15


def row_blocks(start: int, stop: int):
    """[start, stop) as slices of at most BLOCK_ROWS rows."""
    for a in range(start, stop, BLOCK_ROWS):
        yield slice(a, min(a + BLOCK_ROWS, stop))


def pair_hash(qcode: np.ndarray, doc_hash: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """A uint64 per row, equal for rows with equal (query code, docid): ``doc_hash`` is the
    docids' :meth:`DocWords.hash`. Unequal pairs may share it; every use verifies. ``out``: a
    uint64 array of the same length to write into."""
    key = np.empty(qcode.size, np.uint64) if out is None else out
    with np.errstate(over="ignore"):
        for b in row_blocks(0, qcode.size):
            k = key[b]
            np.copyto(k, qcode[b], casting="unsafe")  # query codes are >= 0
            k *= np.uint64(0x9E3779B97F4A7C15)
            k ^= doc_hash[b]
            k *= _M1
            k ^= k >> np.uint64(31)
    return key


class DocWords:
    """Per-row document ids as fixed-width words, for equality and byte order without a vocabulary.

    Each id is padded with NUL bytes to ``width`` bytes (a multiple of 8, the longest id rounded
    up) and read as ``width / 8`` little-endian uint64 words; ``lens`` keeps the byte lengths.
    Two ids are equal exactly when their lengths and words are; their byte-wise (strcmp, code
    point) order is that of the big-endian words, then the length (NUL padding sorts first, so a
    proper prefix comes first, as in bytes order). ``hash(width)`` is a 64-bit hash that equal ids
    share whatever the width of the matrix they sit in (zero words beyond it are hashed alike);
    unequal ids may share it, so every use verifies a match on the words.

    This replaces dictionary-encoding millions of docid strings, which is most of the cost of
    reading a large run, on the paths that only need equality and order (the reference's join,
    duplicate check and docid tie rules). Build with :meth:`of`, which returns None for ids
    over 128 bytes. Padding counts bytes, so ids in any script have a word form.
    """

    def __init__(self, words: np.ndarray, lens: np.ndarray) -> None:
        self.words, self.lens = words, lens
        self._hash: dict[int, np.ndarray] = {}

    @classmethod
    def of(cls, strings) -> "DocWords | None":
        import pyarrow as pa

        from conformance.io import kernels as ac

        if isinstance(strings, pa.ChunkedArray):
            chunks = [c for c in strings.chunks if len(c)]
        else:
            chunks = [strings] if len(strings) else []
        if not chunks:
            return cls(np.zeros((0, 1), np.uint64), np.zeros(0, np.int32))
        if not all(pa.types.is_string(c.type) for c in chunks):
            return None
        lens = [ac.binary_length(c) for c in chunks]
        longest = max(ac.max(x).as_py() for x in lens)
        width = max(8, (longest + 7) // 8 * 8)
        if width > _MAX_WORD_BYTES:
            return None
        first = np.concatenate([[0], np.cumsum([len(c) for c in chunks])])
        n = int(first[-1])
        words = np.empty((n, width // 8), np.uint64)
        lens_np = np.empty(n, np.int32)

        def fill(part: slice) -> bool:
            """Pad the chunks in ``part`` into their rows of ``words``; False if one cannot be."""
            for k in range(*part.indices(len(chunks))):
                # ascii_rpad pads to a width in bytes, whatever the characters (utf8_rpad counts
                # code points, and takes ~3x as long)
                padded = ac.ascii_rpad(chunks[k], width, padding="\x00")
                if padded.buffers()[2] is None:  # pragma: no cover - width >= 8 gives bytes
                    return False
                off = arrow_offsets(padded)
                if int(off[-1] - off[0]) != width * len(padded):  # pragma: no cover - bytes
                    return False
                rows = slice(int(first[k]), int(first[k + 1]))
                words[rows] = np.frombuffer(padded.buffers()[2], np.uint64, len(padded) * width // 8,
                                            int(off[0])).reshape(-1, width // 8)
                lens_np[rows] = arrow_numpy(lens[k])
            return True

        m = len(chunks)
        # chunk by chunk straight into one matrix (no concatenation of padded copies); a large
        # input's chunks in two threads, half of them each
        parts = [slice(0, m // 2), slice(m // 2, m)] if m > 1 and worth_splitting(n) else [slice(0, m)]
        if not all(each(fill, parts)):
            return None
        return cls(words, lens_np)

    def __len__(self) -> int:
        return int(self.lens.size)

    @property
    def width(self) -> int:
        return int(self.words.shape[1])

    def hash(self, width: int | None = None) -> np.ndarray:
        """uint64 per row, the same for equal ids in matrices of any width up to ``width``."""
        width = self.width if width is None else max(width, self.width)
        if width not in self._hash:
            h = np.empty(len(self), np.uint64)

            def rows(part: slice) -> None:  # each row's hash depends on that row alone
                with np.errstate(over="ignore"):
                    for b in row_blocks(part.start, part.stop):
                        x = h[b]
                        x[:] = self.lens[b]
                        x *= np.uint64(0x9E3779B97F4A7C15)
                        for j in range(self.width):
                            x ^= self.words[b, j]
                            x *= _M1
                            x ^= x >> np.uint64(29)
                        for _ in range(self.width, width):  # zero words: the same steps as above
                            x *= _M1
                            x ^= x >> np.uint64(29)
                        x ^= x >> np.uint64(33)
                        x *= _M2
                        x ^= x >> np.uint64(33)

            each(rows, row_halves(len(self)))
            self._hash[width] = h
        return self._hash[width]

    def strings(self):
        """The ids as an Arrow string array, rebuilt from the words and byte lengths (exact: the
        bytes of every id are in its words)."""
        import pyarrow as pa

        n, width = len(self), self.width * 8
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(self.lens, out=offsets[1:])
        chars = self.words.view(np.uint8).reshape(n, width)
        data = chars[np.arange(width) < self.lens[:, None]]  # row by row: each id's bytes
        large = offsets[-1] >= 2**31
        return pa.Array.from_buffers(
            pa.large_string() if large else pa.string(), n,
            [None, pa.py_buffer(offsets if large else offsets.astype(np.int32)), pa.py_buffer(data)])

    def forget_hashes(self) -> None:
        self._hash.clear()

    def same(self, a: np.ndarray, other: "DocWords", b: np.ndarray) -> np.ndarray:
        """Whether id ``a[i]`` of self equals id ``b[i]`` of ``other``, exactly."""
        eq = self.lens[a] == other.lens[b]
        common = min(self.width, other.width)
        for j in range(common):
            eq &= self.words[a, j] == other.words[b, j]
        # equal lengths fit in the common width: the wider matrix's extra words are zero there
        return eq

    def sort_keys(self, rows: np.ndarray | None = None, descending: bool = False) -> list[np.ndarray]:
        """``np.lexsort`` keys (least significant first) that order rows (of ``rows``, all when
        None) as their ids byte-wise, ascending or descending; equal ids tie."""
        words = self.words if rows is None else self.words[rows]
        lens = self.lens if rows is None else self.lens[rows]
        be = words.byteswap()  # big-endian value order is byte order
        if descending:
            np.invert(be, out=be)  # reverses the order of uint64 values
            lens = -lens.astype(np.int64)
        return [lens] + [be[:, j] for j in range(be.shape[1] - 1, -1, -1)]

    def order_codes(self, rows: np.ndarray | None = None) -> np.ndarray:
        """int64 per row (of ``rows``, all when None): ordered as the ids byte-wise, equal for
        equal ids (dense ranks among these rows)."""
        words = self.words if rows is None else self.words[rows]
        lens = self.lens if rows is None else self.lens[rows]
        n = lens.size
        if n == 0:
            return np.zeros(0, np.int64)
        be = words.byteswap()  # big-endian value order is byte order
        order = np.lexsort([lens] + [be[:, j] for j in range(be.shape[1] - 1, -1, -1)])
        ls, ws = lens[order], be[order]
        new = np.empty(n, bool)
        new[0] = True
        new[1:] = ls[1:] != ls[:-1]
        for j in range(ws.shape[1]):
            new[1:] |= ws[1:, j] != ws[:-1, j]
        codes = np.empty(n, np.int64)
        codes[order] = np.cumsum(new) - 1
        return codes



class DocList:
    """Per-row document ids as the validated Python strings of a dict of dicts
    (``records.Plain``), with their Arrow strings and word form made only when first asked for.

    An evaluation whose run is joined to its qrels by dictionary lookups (``prepare.Prepared``
    with ``run_label``) reads docids only to order tied rows: :meth:`order_codes` and
    :meth:`sort_keys` (the interface of :class:`DocWords` that ``prepare._WordsKey`` uses) take
    only the rows asked about into words, so a run with few ties never turns its docids into
    bytes at all.
    """

    def __init__(self, ids: list[str]) -> None:
        self.ids = ids
        self._strings = None
        self._words: DocWords | None | bool = False  # False: not made yet

    def __len__(self) -> int:
        return len(self.ids)

    def strings(self):
        """The ids as an Arrow string array (made once)."""
        if self._strings is None:
            self._strings = arrow_strings(self.ids)
        return self._strings

    def words(self) -> "DocWords | None":
        """The word form of every id (made once); None for ids over 128 bytes."""
        if self._words is False:
            self._words = DocWords.of(self.strings())
        return self._words

    def _pick(self, rows) -> list[str]:
        if rows is None:
            return self.ids
        if isinstance(rows, slice):
            return self.ids[rows]
        return list(map(self.ids.__getitem__, np.asarray(rows).tolist()))  # a C-level gather

    def _words_of(self, rows) -> tuple["DocWords | None", object]:
        """(words, the rows of them meant): the whole word form when made or when every row is
        asked about, else the word form of the selected ids alone."""
        if rows is None or self._words is not False:
            return self.words(), rows
        return DocWords.of(arrow_strings(self._pick(rows))), None

    def order_codes(self, rows=None) -> np.ndarray:
        """:meth:`DocWords.order_codes` of the rows (all when None)."""
        words, at = self._words_of(rows)
        if words is not None:
            return words.order_codes(at)
        # ids too long for words: Python orders str by code point, as their UTF-8 bytes are
        held = np.empty(len(self._pick(rows)), dtype=object)
        held[:] = self._pick(rows)
        _, codes = np.unique(held, return_inverse=True)
        return codes.astype(np.int64).reshape(-1)

    def sort_keys(self, rows=None, descending: bool = False) -> list[np.ndarray]:
        """:meth:`DocWords.sort_keys` of the rows (all when None)."""
        words, at = self._words_of(rows)
        if words is not None:
            return words.sort_keys(at, descending)
        codes = self.order_codes(rows)
        return [-codes if descending else codes]


# --------------------------------------------------------------------------------------------
# Numbers from strings

# What Arrow's cast of a string to float64 reads (tests/io/test_io.py checks it against the cast): an optional sign, digits with an optional decimal point and exponent, or a nan / inf
# spelling.
NUMBER = r"^[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?i:nan|inf|infinity))$"


def first_bad_cast(strings, target=None) -> int:
    """Index of the first element Arrow cannot cast to ``target`` (float64), by bisection
    (O(n) work in all)."""
    import pyarrow as pa

    from conformance.io import kernels as ac

    target = pa.float64() if target is None else target
    lo, hi = 0, len(strings)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            ac.cast(strings.slice(lo, mid - lo), target)
        except pa.ArrowInvalid:
            hi = mid
        else:
            lo = mid
    return lo


def lenient_float(strings) -> np.ndarray:
    """Numbers where Arrow can read them, NaN elsewhere (the rank column: trec_eval never
    reads it, so a rank that is not a number is not an error). numpy input is converted; an
    Arrow float64 column (the fast TREC path) is kept as it is, converted when first used."""
    import pyarrow as pa

    from conformance.io import kernels as ac

    if isinstance(strings, np.ndarray):
        return strings.astype(np.float64, copy=False)
    if strings.type == pa.float64():
        return strings
    try:
        return arrow_numpy(ac.cast(strings, pa.float64()))
    except pa.ArrowInvalid:
        pass
    # NUMBER accepts exactly what Arrow's cast reads, so the second cast cannot fail.
    ok = arrow_numpy(ac.match_substring_regex(strings, NUMBER))
    values = np.full(len(strings), np.nan)
    values[ok] = arrow_numpy(ac.cast(ac.filter(strings, numpy_arrow(ok)), pa.float64()))
    return values

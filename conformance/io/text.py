"""The bytes of a text input: read once, decompressed, bounded, with its lines for the error path.

:func:`read_bytes` returns a file's bytes without a UTF-8 byte order mark, gunzipped when the
name ends in ``.gz`` or the data starts with the gzip magic bytes (several gzip members are read
one after the other, as ``gzip -d`` does). Before any parsing it applies the limits of
:mod:`conformance.io.limits`: binary content is refused from the first bytes, an input larger
than ``max_input_bytes`` is refused by its size (a regular file) or as soon as that many bytes
have been read or decompressed (a gzip file, a pipe, a device such as ``/dev/zero``), and, for
line-oriented formats, a line longer than ``max_line_bytes`` as soon as it is seen.

A regular uncompressed file is memory-mapped, not copied (see :func:`_map`). Every problem is an
:class:`~conformance.errors.InputError` naming the file (and the line where there is one).

:class:`Text` gives the readers physical lines by number, for the messages that quote one.
"""

from __future__ import annotations

import mmap
import os
import re
import stat
import zlib

import numpy as np

from conformance.errors import InputError
from conformance.io.limits import SNIFF_BYTES, Limits, note_input, sniff_binary

WS = " \t\n\v\f\r"
WS_SPLIT = re.compile(r"[ \t\n\v\f\r]+")


class FileProblem(InputError):
    """A problem with the file as a whole (it cannot be read, is binary, is too large), which
    reading it as another format cannot cure."""


_PIECE = 1 << 24  # bytes read, or decompressed, at a time from a stream or a gzip file
_FIRST_PIECE = 1 << 16  # the first piece is small: binary content is refused from it
_GZIP = b"\x1f\x8b"


def _map(f) -> "mmap.mmap | None":
    """The open file's pages mapped read-only and faulted in at once, or None where that is not
    possible (not POSIX, not a regular file, empty).

    Reading a large run into a ``bytes`` object costs a fresh page of memory per 4 KiB, each a
    page fault, plus a copy; mapping the file's cached pages in one ``MAP_POPULATE`` call
    costs neither (~0.08 s of a 2M-row run). The text is only read: Arrow's parser copies
    what it keeps. A file truncated by another process while it is being read would end the
    process with SIGBUS; a file being rewritten is not a consistent input anyway.
    """
    if os.name != "posix":
        return None
    try:
        return mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE | getattr(mmap, "MAP_POPULATE", 0),
                         prot=mmap.PROT_READ)
    except (OSError, ValueError, OverflowError):
        return None


class _Pieces:
    """Bytes gathered piece by piece from a stream, under the limits: the input's size, its
    first line (until the first piece tells whether it is binary), and the longest line."""

    def __init__(self, name: str, limits: Limits, lines: bool, what: str) -> None:
        self.name, self.limits, self.lines, self.what = name, limits, lines, what
        self.out = bytearray()  # grown in place: no join of the pieces at the end
        self.line_start = 0  # offset in ``out`` where the current line began
        self.line_no = 1  # its number
        self.sniffed = False

    def add(self, piece: bytes) -> None:
        start = len(self.out)
        self.out += piece
        if not self.sniffed and (len(self.out) >= SNIFF_BYTES or not piece):
            self._sniff()
        size_limit = self.limits.max_input_bytes
        if size_limit is not None and len(self.out) > size_limit:
            raise FileProblem(self.name, self.limits.input_too_large(len(self.out), self.what))
        line_limit = self.limits.max_line_bytes
        if not self.lines or line_limit is None:
            return
        # every line that ends inside this piece, and the one still open, is checked; a line
        # longer than a piece spans piece boundaries, which is why ``line_start`` is kept
        last = self.out.rfind(b"\n", start)
        if last < 0:
            if len(self.out) - self.line_start > line_limit:
                raise InputError(self.name, self.limits.line_too_long(line_limit, exact=False), self.line_no)
            return
        first = self.out.find(b"\n", start)
        if first - self.line_start > line_limit:
            raise InputError(self.name, self.limits.line_too_long(first - self.line_start), self.line_no)
        if last - first > line_limit:  # a long line may end inside this piece: find it
            ends = np.flatnonzero(np.frombuffer(self.out, np.uint8, last - first + 1, first) == 10) + first
            gaps = np.diff(ends) - 1
            if gaps.size and int(gaps.max()) > line_limit:
                k = int(np.argmax(gaps > line_limit))
                before = self.out.count(b"\n", 0, int(ends[k])) + 1
                raise InputError(self.name, self.limits.line_too_long(int(gaps[k])), before + 1)
        self.line_no += self.out.count(b"\n", start)
        self.line_start = last + 1

    def _sniff(self) -> None:
        self.sniffed = True
        head = bytes(self.out[:SNIFF_BYTES + 3])
        if head[:3] == b"\xef\xbb\xbf":
            head = head[3:]
        found = sniff_binary(head)
        if found is not None:
            raise FileProblem(self.name, found[0], found[1])

    def finish(self) -> bytearray:
        if not self.sniffed:
            self._sniff()
        if self.lines and self.limits.max_line_bytes is not None:
            open_line = len(self.out) - self.line_start
            if open_line > self.limits.max_line_bytes:
                raise InputError(self.name, self.limits.line_too_long(open_line), self.line_no)
        return self.out


def _gunzip(source, pieces: _Pieces) -> None:
    """Decompress every gzip member of ``source`` (bytes, an mmap or a file object) into
    ``pieces``, at most ``_PIECE`` bytes of output at a time."""
    read = source.read if hasattr(source, "read") else None
    view = None if read else memoryview(source)
    pos = 0

    def more() -> bytes:
        nonlocal pos
        if read is not None:
            return read(_PIECE)
        chunk = view[pos:pos + _PIECE]
        pos += len(chunk)
        return chunk

    data = more()
    if not data:  # an empty file: no data rows, as the readers then say
        return
    member = zlib.decompressobj(16 + zlib.MAX_WBITS)
    size = _FIRST_PIECE
    while True:
        piece = member.decompress(data, size)
        size = _PIECE
        pieces.add(piece)
        while member.unconsumed_tail:  # the input held more than one piece of output
            pieces.add(member.decompress(member.unconsumed_tail, _PIECE))
        if member.eof:
            rest = member.unused_data or more()
            while rest and not rest.strip(b"\x00"):  # zero padding after the last member
                rest = more()
            if not rest:
                return
            if rest[:2] != _GZIP:
                raise zlib.error("trailing data after the last gzip member is not gzip data")
            member = zlib.decompressobj(16 + zlib.MAX_WBITS)
            data = rest
            continue
        data = more()
        if not data:
            raise EOFError("compressed file ended before the end-of-stream marker was reached")


WAIT_NOTICE_SECONDS = 3.0  # a FIFO with no writer this long is said to be waiting


def _open_saying_when_it_waits(name: str):
    """``open(name, "rb")``; a FIFO's open waits for a writer, and when none has come after
    :data:`WAIT_NOTICE_SECONDS` a :class:`~conformance.errors.Notice` says so (once), rather
    than the command hanging without a word."""
    try:
        fifo = stat.S_ISFIFO(os.stat(name).st_mode)
    except OSError:
        fifo = False
    if not fifo:
        return open(name, "rb")
    import threading
    import warnings

    from conformance.errors import Notice

    def notice() -> None:
        warnings.warn(f"{name}: a FIFO with no writer yet; waiting for one to open it "
                      "(Ctrl-C stops)", Notice, stacklevel=1)

    timer = threading.Timer(WAIT_NOTICE_SECONDS, notice)
    timer.daemon = True
    timer.start()
    try:
        return open(name, "rb")
    finally:
        timer.cancel()


def read_bytes(path: str | os.PathLike, limits: Limits | None = None, *, lines: bool = True,
               mapped: bool = False) -> tuple["bytes | bytearray | mmap.mmap", str]:
    """The file's bytes, gunzipped, without a UTF-8 byte order mark, checked against ``limits``
    (default: :meth:`Limits.from_env`); ``lines``: the format is line-oriented, so the line
    length is bounded too. With ``mapped``, a regular uncompressed file without a byte order
    mark may come back as a read-only ``mmap`` (it has ``find``, slicing and the buffer
    protocol, not the ``bytes`` methods; its ``in`` works but compares byte by byte in Python).
    """
    limits = Limits.from_env() if limits is None else limits
    name = os.fsdecode(path)
    if os.path.isdir(name):
        raise FileProblem(name, "is a directory: expected a file")
    try:
        f = _open_saying_when_it_waits(name)
    except FileNotFoundError:
        raise FileProblem(name, "no such file") from None
    except PermissionError:
        raise FileProblem(name, "cannot read the file: permission denied") from None
    except OSError as e:
        raise FileProblem(name, f"cannot read the file: {e.strerror or e}") from None
    with f:
        try:
            data = _read_open(f, name, limits, lines, mapped)
        except OSError as e:
            raise FileProblem(name, f"cannot read the file: {e.strerror or e}") from None
        except (EOFError, zlib.error) as e:
            raise FileProblem(
                name, f"cannot decompress: expected gzip-compressed text, but the gzip data is damaged ({e})"
            ) from None
    if data[:3] == b"\xef\xbb\xbf":
        data = data[3:] if isinstance(data, bytearray) else bytes(data[3:])
    note_input(len(data))
    return data, name


def _read_open(f, name: str, limits: Limits, lines: bool, mapped: bool):
    st = os.fstat(f.fileno())
    regular = stat.S_ISREG(st.st_mode)
    head = os.pread(f.fileno(), SNIFF_BYTES + 3, 0) if regular else b""
    gz = name.lower().endswith(".gz") or (head[:2] == _GZIP)
    if not regular:  # a pipe or a device: read in pieces, bounded (it may never end)
        pieces = _Pieces(name, limits, lines, "the input")
        first = f.read(_FIRST_PIECE)
        if first[:2] == _GZIP or (gz and first):
            pieces = _Pieces(name, limits, lines, "the decompressed input")
            _gunzip(_Prepend(first, f), pieces)
            return pieces.finish()
        while first:
            pieces.add(first)
            first = f.read(_PIECE)
        return pieces.finish()
    if gz:
        pieces = _Pieces(name, limits, lines, "the decompressed input")
        source = (_map(f) if st.st_size else None) or f.read()
        _gunzip(source, pieces)
        return pieces.finish()
    size_limit = limits.max_input_bytes
    if size_limit is not None and st.st_size > size_limit:
        raise FileProblem(name, limits.input_too_large(st.st_size, f"the file ({st.st_size:,} bytes)"))
    sniff = head[3:] if head[:3] == b"\xef\xbb\xbf" else head
    found = sniff_binary(sniff)
    if found is not None:
        raise FileProblem(name, found[0], found[1])
    if lines and limits.max_line_bytes is not None and st.st_size > limits.max_line_bytes:
        # a first line over the limit is refused before the file is read (a single-line file
        # of garbage); later lines are measured where the readers find the line ends
        pos = 0
        while True:  # in pieces: the first line is usually found in the first one
            piece = os.pread(f.fileno(), _FIRST_PIECE, pos)
            if not piece or piece.find(b"\n") >= 0:
                break
            pos += len(piece)
            if pos > limits.max_line_bytes:
                raise InputError(name, limits.line_too_long(limits.max_line_bytes, exact=False), 1)
    data = (_map(f) if mapped and st.st_size else None) or f.read()
    return data


class _Prepend:
    """A file object that first gives ``head``, then the rest of ``f``."""

    def __init__(self, head: bytes, f) -> None:
        self.head, self.f = head, f

    def read(self, n: int) -> bytes:
        if self.head:
            out, self.head = self.head[:n], self.head[n:]
            return out
        return self.f.read(n)


def check_line_lengths(ends: np.ndarray, name: str, limits: Limits | None) -> None:
    """Refuse a line longer than ``limits.max_line_bytes``, given every line's end offset (the
    offset just past its last byte, ``\\n`` included, as the TREC and JSONL readers compute)."""
    line_limit = (Limits.from_env() if limits is None else limits).max_line_bytes
    if line_limit is None or ends.size == 0:
        return
    lengths = np.diff(ends, prepend=0) - 1  # without the \n (the last line may have none)
    if int(lengths.max()) > line_limit:
        k = int(np.argmax(lengths > line_limit))
        raise InputError(name, (limits or Limits.from_env()).line_too_long(int(lengths[k])), k + 1)


class Text:
    """A text file's bytes, with what the error path needs: physical lines by number."""

    def __init__(self, name: str, data: bytes, limits: Limits | None = None) -> None:
        self.name, self.data, self.limits = name, data, limits
        self._ends: np.ndarray | None = None

    @classmethod
    def open(cls, path: str | os.PathLike, limits: Limits | None = None) -> "Text":
        limits = Limits.from_env() if limits is None else limits
        data, name = read_bytes(path, limits, mapped=True)
        return cls(name, data, limits)

    def release(self) -> None:
        """Drop the bytes once every check that quotes a line is done (peak memory)."""
        self.data, self._ends = b"", None

    def line(self, k: int) -> str:
        """Physical line ``k`` (1-based), without its line end, decoded leniently."""
        if self._ends is None:
            self._ends = np.flatnonzero(np.frombuffer(self.data, np.uint8) == 10)
        start = 0 if k == 1 else int(self._ends[k - 2]) + 1
        end = int(self._ends[k - 1]) if k - 1 < self._ends.size else len(self.data)
        return bytes(self.data[start:end]).decode("utf-8", "replace")

    def fields(self, k: int) -> list[str]:
        text = self.line(k).strip(WS)
        return WS_SPLIT.split(text) if text else []

    def check_utf8(self) -> None:
        check_utf8(self.data, self.name)


def check_utf8(data, name: str) -> None:
    """Raise the InputError naming the line and column of the first byte that is not UTF-8."""
    data = bytes(data)  # an error path: a copy of a mapped file is affordable
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        bad = data[e.start : e.end].hex(" ")
        raise InputError(
            name,
            f"byte(s) {bad} at column {column} are not valid UTF-8: expected a UTF-8 text file",
            line,
        ) from None


def decode(data, name: str) -> str:
    """``data`` as text (UTF-8), or the InputError naming the first bad byte."""
    try:
        return bytes(data).decode("utf-8") if not isinstance(data, bytes) else data.decode("utf-8")
    except UnicodeDecodeError:
        check_utf8(data, name)
        raise


def clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."

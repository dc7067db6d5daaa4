"""Bounds on what one input may cost, so hostile or mistaken input is refused early and clearly.

A reader keeps a whole input in memory (Arrow parses it at once), so an input that is huge,
endless or not text at all would otherwise run the machine out of memory before any line could
be judged. Three checks come first, before any parsing:

* **Binary content**, from the first bytes (:func:`sniff_binary`): a known binary signature
  (Parquet, Arrow IPC, zip, bzip2, xz, zstd, 7z, an executable, an image, a PDF, a pickle, a
  numpy array), a UTF-16 or UTF-32 byte order mark, or NUL and other control bytes making up at
  least an eighth of the first 4 KiB. Text with a stray NUL inside an id is still text.
* **The size of the input after decompression** (``max_input_bytes``, default 4 GiB, about five
  times the largest benchmark run of 20M rows): a gzip file is decompressed in pieces and
  refused as soon as it passes the limit; a stream (a pipe, ``/dev/zero``) is read in pieces
  the same way; a regular file is refused by its size before it is read.
* **The length of a line** (``max_line_bytes``, default 64 MiB) in line-oriented text (TREC,
  JSONL, CSV, TSV; not JSON, whose document may be one line): refused as soon as the longest
  line known so far passes the limit.

Both limits are raised (or lowered) by the environment (``CONFORMANCE_MAX_INPUT_BYTES``,
``CONFORMANCE_MAX_LINE_BYTES``) or by the commands' ``--max-input-bytes`` and
``--max-line-bytes`` options, which win over the environment. Sizes are bytes, optionally with a
binary suffix: ``512K``, ``64M``, ``4G``, ``1.5T``; ``0`` or ``none`` means no limit.

When memory runs out anyway, :func:`not_enough_memory` words it for the user ("not enough memory
for this input (about N GB needed ...)"), from the sizes of the inputs read in this process
(:func:`note_input`) and the allocation that failed.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

from conformance.errors import ConformanceError

GiB = 1 << 30
MiB = 1 << 20
DEFAULT_MAX_INPUT_BYTES = 4 * GiB
DEFAULT_MAX_LINE_BYTES = 64 * MiB
INPUT_ENV = "CONFORMANCE_MAX_INPUT_BYTES"
LINE_ENV = "CONFORMANCE_MAX_LINE_BYTES"
INPUT_OPTION = "--max-input-bytes"
LINE_OPTION = "--max-line-bytes"

SNIFF_BYTES = 4096  # how much of the start of an input the binary check reads
# Peak memory of reading and evaluating, per byte of a TREC run (benchmarks/README.md: 2.6 GB
# for the 801 MB run of 20M rows, 362 MB for the 78 MB one): the estimate "about N GB needed".
PEAK_PER_INPUT_BYTE = 4

_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]?)(?:i?b)?\s*", re.IGNORECASE)
_SUFFIX = {"": 1, "k": 1 << 10, "m": MiB, "g": GiB, "t": 1 << 40}


class LimitError(ConformanceError, ValueError):
    """A limit given in the environment or an option that is not a size."""


def parse_size(text: str, where: str) -> int | None:
    """``"64M"`` -> 67108864; ``"0"`` / ``"none"`` -> None (no limit). ``where`` names the
    option or variable in the error."""
    if text.strip().lower() in ("0", "none", "unlimited"):
        return None
    m = _SIZE.fullmatch(text)
    if not m:
        raise LimitError(f"{where}={text!r}: expected a size in bytes such as 65536, 64M or 4G "
                         "(0 or none: no limit)")
    value = float(m.group(1)) * _SUFFIX[m.group(2).lower()]
    if not math.isfinite(value) or value < 1:
        raise LimitError(f"{where}={text!r}: expected a size of at least 1 byte (0 or none: no limit)")
    return int(value)


def format_size(n: int | float) -> str:
    """Bytes for a message: ``64 MiB``, ``4 GiB``, ``1.5 GiB``, ``812 bytes``."""
    for unit, size in (("TiB", 1 << 40), ("GiB", GiB), ("MiB", MiB), ("KiB", 1 << 10)):
        if n >= size:
            x = n / size
            return f"{x:.0f} {unit}" if x == int(x) or x >= 100 else f"{x:.1f} {unit}"
    return f"{int(n)} bytes"


@dataclass(frozen=True)
class Limits:
    """What one input may cost; None: no limit."""

    max_input_bytes: int | None = DEFAULT_MAX_INPUT_BYTES
    max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES

    @classmethod
    def from_env(cls, environ=None, *, max_input_bytes: str | None = None,
                 max_line_bytes: str | None = None) -> "Limits":
        """The defaults, overridden by the environment, overridden by option texts (given when
        not None)."""
        env = os.environ if environ is None else environ
        size, line = DEFAULT_MAX_INPUT_BYTES, DEFAULT_MAX_LINE_BYTES
        if env.get(INPUT_ENV, "").strip():
            size = parse_size(env[INPUT_ENV], INPUT_ENV)
        if env.get(LINE_ENV, "").strip():
            line = parse_size(env[LINE_ENV], LINE_ENV)
        if max_input_bytes is not None:
            size = parse_size(max_input_bytes, INPUT_OPTION)
        if max_line_bytes is not None:
            line = parse_size(max_line_bytes, LINE_OPTION)
        return cls(size, line)

    def input_too_large(self, n: int, what: str) -> str:
        """The problem text for an input of more than ``max_input_bytes`` (``n`` read so far)."""
        return (f"{what} is larger than {format_size(self.max_input_bytes)} "
                f"(more than {n:,} bytes read), the limit on one input: a larger input needs "
                f"{INPUT_OPTION} or {INPUT_ENV} (such as 16G; 0: no limit)")

    def line_too_long(self, n: int, exact: bool = True) -> str:
        length = f"{n:,} bytes long" if exact else f"longer than {n:,} bytes"
        return (f"the line is {length}, over the limit of {format_size(self.max_line_bytes)} a "
                f"line (is this the right file?): a longer line needs {LINE_OPTION} or {LINE_ENV}")


# signature -> what the file is (and, for compressed data, what to do)
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"PAR1", "a Parquet file"),
    (b"ARROW1", "an Arrow IPC file"),
    (b"\xff\xff\xff\xff", "an Arrow IPC stream"),
    (b"PK\x03\x04", "a zip archive (unzip it first)"),
    (b"BZh", "bzip2-compressed data (decompress it with bunzip2, or gzip it instead)"),
    (b"\xfd7zXZ\x00", "xz-compressed data (decompress it with unxz, or gzip it instead)"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed data (decompress it with unzstd, or gzip it instead)"),
    (b"7z\xbc\xaf\x27\x1c", "a 7z archive"),
    (b"\x7fELF", "an executable (ELF)"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"%PDF-", "a PDF document"),
    (b"\x93NUMPY", "a numpy .npy array"),
    (b"\x80\x04\x95", "a Python pickle"),
    (b"\x80\x05\x95", "a Python pickle"),
    (b"SQLite format 3\x00", "an SQLite database"),
)
_BOMS: tuple[tuple[bytes, str], ...] = (  # UTF-32 first: its little-endian mark starts as UTF-16's
    (b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"),
)
# bytes that text does not hold: NUL and the C0 controls other than \t \n \v \f \r and ESC
_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 11, 12, 13, 27))


def sniff_binary(head: bytes) -> tuple[str, int | None] | None:
    """Why ``head`` (the first bytes of an input, after decompression) is not UTF-8 text, and the
    line to name (1 for a byte order mark, else None); None when it may be text."""
    for mark, encoding in _BOMS:
        if head.startswith(mark):
            return (f"not valid UTF-8: the file starts with a {encoding} byte order mark "
                    f"({mark.hex(' ')}): expected a UTF-8 text file "
                    f"(iconv -f {encoding} -t UTF-8 converts it)"), 1
    for signature, what in _SIGNATURES:
        if head.startswith(signature):
            return f"this is {what}, not text: expected a UTF-8 text file", None
    sample = head[:SNIFF_BYTES]
    if sample:
        control = len(sample) - len(sample.translate(None, _CONTROL))
        if control * 8 >= len(sample):
            nul = sample.count(0)
            what = f"{nul:,} NUL bytes" if nul == control else f"{control:,} NUL or control bytes"
            return (f"a binary file, not text: {what} in its first {len(sample):,} bytes: "
                    "expected a UTF-8 text file"), None
    return None


def binary_format(head: bytes) -> str | None:
    """``"parquet"`` / ``"arrow"`` when the first bytes are that format's signature."""
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"ARROW1") or head.startswith(b"\xff\xff\xff\xff"):
        return "arrow"
    return None


# --------------------------------------------------------------------------------------------
# Running out of memory

_seen_input_bytes = 0


def note_input(nbytes: int) -> None:
    """Count an input of ``nbytes`` (after decompression) read by this process."""
    global _seen_input_bytes
    _seen_input_bytes += int(nbytes)


_ALLOCATION = re.compile(r"(\d+(?:\.\d+)?)\s*(KiB|MiB|GiB|TiB|PiB|EiB|bytes)", re.IGNORECASE)
_UNIT = {"bytes": 1, "kib": 1 << 10, "mib": MiB, "gib": GiB, "tib": 1 << 40, "pib": 1 << 50, "eib": 1 << 60}


def _available() -> int | None:
    """Free memory: the system's available memory, or the process's address-space limit when
    that is lower (``ulimit -v``)."""
    free = _system_available()
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY and (free is None or soft < free):
            return soft
    except (ImportError, OSError, ValueError):
        pass
    return free


def _system_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def not_enough_memory(exc: BaseException | None = None, input_bytes: int | None = None) -> str:
    """The one-line problem for a MemoryError: the memory an input of ``input_bytes`` (default:
    every input this process read) needs, about, and what the system has free."""
    inputs = _seen_input_bytes if input_bytes is None else input_bytes
    need = PEAK_PER_INPUT_BYTE * inputs
    m = _ALLOCATION.search(str(exc) if exc is not None else "")
    if m:  # numpy says how much one allocation asked for: at least that much was needed
        need = max(need, float(m.group(1)) * _UNIT[m.group(2).lower()])
    free = _available()
    parts = []
    if need:
        parts.append(f"about {max(need / 1e9, 0.1):.1f} GB needed")
    if free is not None:
        parts.append(f"{free / 1e9:.1f} GB available")
    return "not enough memory for this input" + (f" ({', '.join(parts)})" if parts else "")

"""Which reader a file goes to, and what a user hears when no reader takes it.

The format of a path is decided in this order:

1. ``format=`` when given: ``trec``, ``json``, ``jsonl``, ``csv``, ``tsv``, ``parquet``,
   ``arrow``.
2. The first bytes, for binary formats: Parquet (``PAR1``) and Arrow IPC (``ARROW1``, or a
   stream's ``0xFFFFFFFF``) whatever the name says.
3. The name, after an optional ``.gz``: ``.json``; ``.jsonl`` / ``.ndjson``; ``.csv``; ``.tsv``
   / ``.tab``; ``.parquet`` / ``.pq``; ``.arrow`` / ``.feather`` / ``.ipc``; and ``.run``,
   ``.qrels``, ``.txt``, ``.trec``, ``.res`` for TREC. A ``.csv`` or ``.tsv`` file whose first
   line holds a number (a data row, not a header) is tried as TREC too (a TREC run saved under
   a spreadsheet's name), when no ``columns`` were given.
4. Any other name (or none): the content. Text whose first line is a JSON object with a query
   id key is tried as JSONL, then JSON; other text starting with ``{`` or ``[`` as JSON, then
   JSONL; a first line holding a tab or a comma and naming a known column is
   tried as TSV / CSV first; everything else as TREC first. The other text formats are tried
   after the first.

A file read in its one known format reports that reader's error as it is (``run.txt:3: expected
at least 6 whitespace-separated fields ...``). A file tried in several formats that none takes
gets one error listing each format tried and why it failed.
"""

from __future__ import annotations

import json
import os
import re
from typing import Callable, Mapping

from conformance.errors import InputError
from conformance.io import jsonio, tables, trec
from conformance.io.jsonio import QID_KEYS
from conformance.io.roles import ALIASES, normal
from conformance.io.limits import Limits, binary_format
from conformance.io.parsed import Parsed
from conformance.io.text import FileProblem, Text, clip

FORMATS = ("trec", "json", "jsonl", "csv", "tsv", "parquet", "arrow")
EXTENSIONS = {
    ".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv", ".tab": "tsv",
    ".parquet": "parquet", ".pq": "parquet", ".arrow": "arrow", ".feather": "arrow", ".ipc": "arrow",
    ".run": "trec", ".qrels": "trec", ".txt": "trec", ".trec": "trec", ".res": "trec",
}
_NAMES = {"trec": "TREC", "json": "JSON", "jsonl": "JSONL", "csv": "CSV", "tsv": "TSV",
          "parquet": "Parquet", "arrow": "Arrow IPC"}


def check_format(format: str | None) -> str | None:
    if format is not None and format not in FORMATS:
        raise ValueError(f"format {format!r}: expected one of {', '.join(FORMATS)}")
    return format


def _extension(name: str) -> str | None:
    lower = name.lower()
    if lower.endswith(".gz"):
        lower = lower[:-3]
    return EXTENSIONS.get(os.path.splitext(lower)[1])


def _head(name: str) -> bytes:
    try:
        with open(name, "rb") as f:
            return f.read(4096)
    except OSError:
        return b""  # the reader names the problem (no such file, a directory, permission)


def _text_head(name: str) -> bytes:
    """The first bytes of the text, decompressed if gzip (for guessing only)."""
    head = _head(name)
    if head[:2] == b"\x1f\x8b":
        import zlib

        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 4096)
        except zlib.error:
            return b""
    return head[3:] if head[:3] == b"\xef\xbb\xbf" else head


def _names_a_column(first_line: str, delimiter: str) -> bool:
    known = {a for usual, looser in ALIASES.values() for a in usual + looser}
    return any(normal(c.strip().strip('"')) in known for c in first_line.split(delimiter))


def candidates(name: str, format: str | None = None, columns: Mapping[str, str] | None = None) -> list[str]:
    """The formats to try for the file ``name``, in order; one when the format is known."""
    if check_format(format) is not None:
        return [format]
    found = binary_format(_head(name))
    if found is not None:
        return [found]
    ext = _extension(name)
    if ext in ("csv", "tsv"):
        first = _first_line(name)
        if columns or first is None or not _holds_a_number(first):
            return [ext]
        return [ext, "trec"]  # a first line holding a number is no header: perhaps TREC
    if ext is not None:
        return [ext]
    text = _text_head(name).lstrip()
    if text[:1] == b"{" and _a_record(text):
        return ["jsonl", "json", "trec", "tsv", "csv"]
    if text[:1] == b"{":
        return ["json", "jsonl", "trec", "tsv", "csv"]
    if text[:1] == b"[":
        return ["json", "jsonl", "trec", "tsv", "csv"]
    first = _first_line(name) or ""
    if "\t" in first and _names_a_column(first, "\t"):
        return ["tsv", "trec", "csv", "jsonl", "json"]
    if "," in first and _names_a_column(first, ","):
        return ["csv", "trec", "tsv", "jsonl", "json"]
    return ["trec", "tsv", "csv", "jsonl", "json"]


def _holds_a_number(line: str) -> bool:
    """Whether a field of ``line`` (split on any separator) is a number: a data row, not a header."""
    for field in re.split(r"[\s,;]+", line.strip()):
        try:
            float(field)
            return True
        except ValueError:
            continue
    return False


def _a_record(head: bytes) -> bool:
    """Whether the first line of ``head`` is a whole JSONL record (an object with a query id
    key), rather than the start of one JSON document."""
    line, nl, _ = head.partition(b"\n")
    if not nl:
        return False
    try:
        obj = json.loads(line)
    except ValueError:
        return False
    return isinstance(obj, dict) and any(isinstance(k, str) and k.lower() in QID_KEYS for k in obj)


def _first_line(name: str) -> str | None:
    text = _text_head(name).lstrip(b"\r\n")
    if not text:
        return None
    return text.split(b"\n", 1)[0].rstrip(b"\r").decode("utf-8", "replace")


def _reader(fmt: str, kind: str, columns, limits: Limits) -> Callable[[str], Parsed]:
    if fmt == "trec":
        return lambda p: (trec.parse_run if kind == "run" else trec.parse_qrels)(Text.open(p, limits))
    if fmt == "json":
        return lambda p: (jsonio.parse_run_json if kind == "run" else jsonio.parse_qrels_json)(p, limits)
    if fmt == "jsonl":
        return lambda p: (jsonio.parse_run_jsonl if kind == "run" else jsonio.parse_qrels_jsonl)(p, limits)
    if fmt in ("csv", "tsv"):
        return lambda p: tables.parse_csv(p, kind, fmt, columns, limits)
    if fmt == "parquet":
        return lambda p: tables.parse_parquet(p, kind, columns, limits)
    return lambda p: tables.parse_arrow(p, kind, columns, limits)


def parse_file(path: str | os.PathLike, kind: str, format: str | None = None,
               columns: Mapping[str, str] | None = None, limits: Limits | None = None) -> Parsed:
    """The columns of the run (``kind="run"``) or qrels in the file ``path``, in the format
    the module docstring says; InputError when no format takes it."""
    limits = Limits.from_env() if limits is None else limits
    name = os.fsdecode(path)
    tried = candidates(name, format, columns)
    failures: list[tuple[str, InputError]] = []
    for fmt in tried:
        try:
            return _reader(fmt, kind, columns, limits)(name)
        except FileProblem:  # unreadable, binary, too large: no other format cures it
            raise
        except InputError as e:
            if len(tried) == 1:
                raise
            failures.append((fmt, e))
    parts = []
    for fmt, e in failures:
        where = f"line {e.line}: " if e.line is not None else ""
        parts.append(f"as {_NAMES[fmt]}, {where}{clip(e.problem, 200)}")
    raise InputError(name, f"not a {kind} in any format conformance reads; tried " + "; ".join(parts)
                     + " (name the format by the file's extension: .run, .json, .jsonl, .csv, .tsv, "
                       ".parquet, .arrow)")

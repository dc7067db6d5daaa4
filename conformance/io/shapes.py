"""What a file that a reader refused looks like, said beside the reader's own error.

A reader names the first line it cannot read; when the whole file has another shape than the
one expected, that line says little ("docid 'Q0' is listed twice" for a run whose columns are
swapped). :func:`hint` looks at the start of the file (its first :data:`HEAD_BYTES`, never
more, so a huge or endless input costs nothing) and names the shape it has and the one
expected:

- a TREC run with 4 fields a line: "4 columns where TREC runs have 6 (qid Q0 docid rank score
  tag); is this a qrels file?", and qrels with 6: "... is this a run file?";
- a TREC run whose third field is ``Q0`` in most rows: "the third column holds 'Q0' in N rows,
  where TREC runs have the docid: columns swapped?";
- a header row naming known columns, with tabs or commas, in a file read as TREC (its name
  says so: ``.txt``): "a header row and tabs: a TSV file; name it .tsv (or give
  format='tsv')";
- a ``.csv`` whose header holds ``;`` (or tabs) and no comma: "the header is split by ';', not
  ','; save the file comma-separated (or tab-separated as .tsv)".

Only the diagnosis path calls this (after a reader raised): reading valid files costs nothing.
"""

from __future__ import annotations

import os

from conformance.io.roles import ALIASES, normal

HEAD_BYTES = 1 << 16  # the start of the file looked at
RUN_FIELDS, QRELS_FIELDS = 6, 4


def _head_lines(name: str) -> list[str]:
    try:
        if not os.path.isfile(name):
            return []
        with open(name, "rb") as f:
            head = f.read(HEAD_BYTES)
    except OSError:
        return []
    if head[:2] == b"\x1f\x8b":
        import gzip
        import zlib

        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, HEAD_BYTES)
        except (zlib.error, gzip.BadGzipFile):
            return []
    text = head.decode("utf-8", "replace").lstrip("\ufeff")
    lines = text.split("\n")
    if len(head) == HEAD_BYTES:
        lines = lines[:-1]  # the last may be cut
    return [ln.rstrip("\r") for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]


def _known_columns(line: str, delimiter: str) -> int:
    known = {a for usual, looser in ALIASES.values() for a in usual + looser}
    return sum(normal(c.strip().strip('"')) in known for c in line.split(delimiter))


def _count(n: int, one: str) -> str:
    return f"{n:,} {one}{'' if n == 1 else 's'}"


def hint(name: str, kind: str, fmt: str | None) -> str | None:
    """What the start of ``name`` (a ``kind`` file read as ``fmt``) looks like, when that is
    not the shape expected; None when it looks as expected or cannot be read."""
    lines = _head_lines(name)
    if not lines:
        return None
    first = lines[0]
    if fmt in (None, "trec"):
        for sep, what, ext in (("\t", "tabs", "tsv"), (",", "commas", "csv")):
            if sep in first and _known_columns(first, sep) >= 2:
                return (f"a header row and {what}: this looks like {ext.upper()}; name the file "
                        f".{ext} to read it so (or give format='{ext}')")
        widths = [len(ln.split()) for ln in lines]
        common = max(set(widths), key=widths.count)
        if kind == "run" and common == QRELS_FIELDS:
            return (f"{QRELS_FIELDS} columns where TREC runs have {RUN_FIELDS} (qid Q0 docid rank "
                    "score tag); is this a qrels file?")
        if kind == "qrels" and common >= RUN_FIELDS:
            return (f"{common} columns where TREC qrels have {QRELS_FIELDS} (qid iter docid "
                    "label); is this a run file?")
        if kind == "run" and common >= RUN_FIELDS:
            q0 = sum(1 for ln in lines if ln.split()[2:3] == ["Q0"])
            if q0 * 2 > len(lines):
                return (f"the third column holds 'Q0' in {_count(q0, 'row')} of the first "
                        f"{len(lines):,}, where TREC runs have the docid (qid Q0 docid rank score "
                        "tag): columns swapped?")
    if fmt == "csv" and "," not in first:
        for sep, what in ((";", "';'"), ("\t", "tabs"), ("|", "'|'")):
            if sep in first:
                return (f"the header is split by {what}, not ','; a .csv is read comma-separated: "
                        "save it with commas (or tab-separated, as .tsv)")
    return None


def with_hint(exc, name: str, kind: str, fmt: str | None):
    """``exc`` (an InputError) with the hint added, or ``exc`` itself when there is none."""
    text = hint(name, kind, fmt)
    if text is None or text in exc.problem:
        return exc
    return type(exc)(exc.source, f"{exc.problem}; {text}", exc.line)

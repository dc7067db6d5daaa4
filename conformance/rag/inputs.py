"""The inputs of ``conformance rag``: the gold file, one pipeline-output file per variant, a corpus.

Gold (``read_gold``)
--------------------
JSONL, one query a line, in the RAG shape ``conformance.io.read_qrels_jsonl`` reads::

    {"qid": "q1", "query": "what is the abort threshold for multipart uploads",
     "gold_doc_ids": ["d1", "d3"], "graded_relevance": {"d1": 3, "d3": 2},
     "gold_answer_substring": "three failed parts", "query_class": "literal"}

The judgments (labels) are read by ``conformance.io`` and follow its rules (a gold id without a
grade has label 1, a grade takes precedence). This module reads the rest of each record:
``query`` (a string; without it answer relevance is not computed for the query, and that is
counted), ``gold_answer_substring`` (a string, a list of acceptable answers (aliases: the
answer is correct when it holds any of them), or null; without it answer correctness is not
computed), ``query_class`` and every other key, kept as metadata (values that are strings,
numbers, booleans or null; the slices of ``--by`` read them). One record per query holds its
gold documents: a second record with ``gold_doc_ids`` or ``graded_relevance`` for the same query
is refused, naming both lines. A query no document is relevant to (an empty ``gold_doc_ids``)
is kept as unanswerable (``GoldQuery.answerable``). Flat qrels records
(``{"qid", "docid", "relevance"}``) may stand in the same file; several records of one query
must not disagree on a metadata value.

Pipeline outputs (``read_outputs``)
-----------------------------------
JSONL, one query a line::

    {"qid": "q1", "retrieved": [{"doc_id": "d3", "score": 2.5, "text": "..."}, ...],
     "answer": "Uploads abort after three failed parts."}

- ``qid`` (or ``query_id`` / ``q_id``, as ``conformance.io`` reads them): a string or an integer.
- ``retrieved``: a list (it may be empty) of objects with ``doc_id`` (or ``docid``), an
  optional finite ``score`` and an optional ``text``. Scores are given for every document of a
  record or for none: without them the list order is the ranking (the document at position i
  of n scores n - i + 1, as ``conformance.io`` does). A document listed twice in one record is
  an error. ``text`` may be left out when a corpus gives the document's text; a record's own
  text wins over the corpus (it is what the generator saw).
- ``answer``: a string (it may be empty: then nothing is claimed).
- ``abstained`` (optional): true when the pipeline declined to answer, false when it did not;
  without it, an answer abstains when ``conformance.rag.text.abstains`` says so.
- other keys are ignored. Two records of one query are an error naming both lines.

Corpus (``read_corpus``)
------------------------
JSONL ``{"doc_id": "d1", "text": "..."}`` a line (``docid`` also read), or a JSON object
``{doc_id: text}``.

Every problem is one :class:`~conformance.errors.InputError` naming the file, the 1-based line
and the field, with what was expected and what was found. Files are read through
``conformance.io.text.read_bytes``, the one input boundary of the tool: they may be
gzip-compressed, a UTF-8 byte order mark is skipped, and the limits of ``conformance.io.limits``
(``CONFORMANCE_MAX_INPUT_BYTES``, ``CONFORMANCE_MAX_LINE_BYTES``; binary content) apply as they
do to qrels and runs. Blank lines are skipped and counted.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping

import numpy as np

from conformance import io as cio
from conformance.io.data import Qrels, Run
from conformance.io.parsed import ReadCounts
from conformance.io.text import decode, read_bytes
from conformance.errors import InputError

# The query id keys ``conformance.io`` reads in JSONL records, in the order it tries them.
QID_KEYS = ("qid", "query_id", "q_id")
DOCID_KEYS = ("doc_id", "docid")
# Gold keys that are judgments, not metadata.
_GOLD_LIST_KEYS = ("gold_doc_ids", "graded_relevance", "relevant_doc_ids", "positive_doc_ids", "gold_ids")
_JUDGMENT_KEYS = _GOLD_LIST_KEYS[2:] + ("gold_doc_ids", "graded_relevance", "docid", "doc_id", "relevance", "label", "rel")


# --------------------------------------------------------------------------------------------
# reading JSON lines


class _Duplicate(ValueError):
    pass


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _Duplicate(k)
        out[k] = v
    return out


def _file_text(path: str | os.PathLike, lines: bool = True) -> tuple[str, str]:
    """The file's text through the one input boundary, ``conformance.io.text``: gunzipped,
    without a byte order mark, within the size (and, for line formats, line length) limits of
    ``conformance.io.limits``, UTF-8 decoded; every problem is its InputError."""
    data, name = read_bytes(path, lines=lines)
    return decode(data, name), name


def jsonl_records(path: str | os.PathLike, counts: ReadCounts | None = None) -> Iterator[tuple[str, int, dict]]:
    """(file name, line, object) for every non-blank line; a line that is not a JSON object, or
    an object with a key twice, is an InputError."""
    text, name = _file_text(path)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    seen = False
    for k, raw in enumerate(lines, 1):
        if not raw.strip():
            if counts is not None:
                counts.blank += 1
            continue
        try:
            obj = json.loads(raw, object_pairs_hook=_no_repeats)
        except _Duplicate as d:
            raise InputError(name, f"the key {d.args[0]!r} appears twice in the record: expected each key once", k) from None
        except json.JSONDecodeError as e:
            raise InputError(name, f"not valid JSON: {e.msg} (column {e.colno})", k) from None
        except (ValueError, RecursionError) as e:
            raise InputError(name, f"not valid JSON: {e}", k) from None
        if not isinstance(obj, dict):
            raise InputError(name, f"the record is {_kind(obj)}: expected a JSON object", k)
        seen = True
        if counts is not None:
            counts.read += 1
        yield name, k, obj
    if not seen:
        raise InputError(name, "no data rows: the file holds no JSON record")


def _kind(v: Any) -> str:
    if isinstance(v, dict):
        return "an object"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, str):
        return f"the string {v[:40]!r}" + ("..." if len(v) > 40 else "")
    if isinstance(v, bool):
        return f"the boolean {'true' if v else 'false'}"
    if v is None:
        return "null"
    return f"{type(v).__name__} {v!r}"


def _key(rec: Mapping[str, Any], names: tuple[str, ...]) -> tuple[str | None, Any]:
    for k in rec:
        if isinstance(k, str) and k.lower() in names:
            return k, rec[k]
    return None, None


def _id(v: Any, what: str, fail: Callable[[str], InputError]) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    raise fail(f"{what} is {_kind(v)}: expected a string or an integer")


def _qid(rec: Mapping[str, Any], fail: Callable[[str], InputError]) -> str:
    key, value = _key(rec, QID_KEYS)
    if key is None:
        found = ", ".join(repr(k) for k in list(rec)[:8]) or "no keys"
        raise fail(f"no query id: expected a key {' / '.join(QID_KEYS)}, found {found}")
    return _id(value, f"the query id ({key})", fail)


# --------------------------------------------------------------------------------------------
# the gold file


@dataclass
class GoldQuery:
    """One gold query's text and metadata (its judgments are in :attr:`Gold.qrels`)."""

    qid: str
    query: str | None = None
    gold_answer: str | tuple[str, ...] | None = None  # one acceptable answer, or its aliases
    metadata: dict[str, Any] = field(default_factory=dict)  # query_class and every other key
    line: int = 0
    answerable: bool = True  # the gold file judges at least one document relevant (label > 0)


@dataclass
class Gold:
    """The gold file: judgments as validated Qrels, and per query its text and metadata."""

    qrels: Qrels
    queries: dict[str, GoldQuery]
    source: str

    @property
    def qids(self) -> list[str]:
        return sorted(self.queries)

    @property
    def answerable_qids(self) -> list[str]:
        return sorted(q for q, g in self.queries.items() if g.answerable)

    def field_values(self, name: str) -> dict[str, Any]:
        """qid -> the value of metadata field ``name`` (queries without it are absent)."""
        return {q: g.metadata[name] for q, g in self.queries.items() if name in g.metadata}


_META_TYPES = (str, int, float, bool, type(None))


def read_gold(path: str | os.PathLike) -> Gold:
    """Read the gold JSONL file (see the module docstring)."""
    qrels = cio.read_qrels_jsonl(path)  # judgments first: its errors are the readers' own
    queries: dict[str, GoldQuery] = {}
    judged_on: dict[str, int] = {}  # the line of each query's gold_doc_ids / graded_relevance record
    for name, line, rec in jsonl_records(path):
        def fail(p: str, _line=line) -> InputError:
            return InputError(name, p, _line)

        q = _qid(rec, fail)
        g = queries.get(q)
        if g is None:
            g = queries[q] = GoldQuery(q, line=line)
        qkey = next((k for k in QID_KEYS if k in rec), None)
        if any(k in rec for k in _GOLD_LIST_KEYS):
            if q in judged_on:
                raise fail(f"query {q!r} has gold documents on lines {judged_on[q]} and {line}: expected one "
                           "gold record per query (two would be merged silently)")
            judged_on[q] = line
        for k, v in rec.items():
            if k == qkey or k.lower() in _JUDGMENT_KEYS:
                continue
            if k == "query":
                if not isinstance(v, str):
                    raise fail(f"query {q!r}: 'query' is {_kind(v)}: expected the question as a string")
                _agree(g, "query", g.query, v, fail)
                g.query = v
            elif k == "gold_answer_substring":
                if isinstance(v, list):
                    if not v or not all(isinstance(a, str) for a in v):
                        raise fail(f"query {q!r}: 'gold_answer_substring' is {_kind(v)}: expected a string, a "
                                   "non-empty list of acceptable answers (strings), or null")
                    v = tuple(v)
                elif v is not None and not isinstance(v, str):
                    raise fail(f"query {q!r}: 'gold_answer_substring' is {_kind(v)}: expected a string, a list "
                               "of acceptable answers or null")
                if v is not None:
                    _agree(g, k, g.gold_answer, v, fail)
                    g.gold_answer = v
            else:
                if not isinstance(v, _META_TYPES) or (isinstance(v, float) and not math.isfinite(v)):
                    raise fail(f"query {q!r}: metadata field {k!r} is {_kind(v)}: expected a string, "
                               "a number, a boolean or null")
                if k in g.metadata:
                    _agree(g, k, g.metadata[k], v, fail, present=True)
                g.metadata[k] = v
    positive = set(np.asarray(qrels.query_ids())[np.asarray(qrels.label, np.float64) > 0].astype(str).tolist())
    for q, g in queries.items():
        # a query with no relevant document (an empty gold_doc_ids, or only grades of 0) is
        # unanswerable from the corpus: kept, and scored by the abstention rule
        g.answerable = q in positive
    return Gold(qrels, queries, os.fsdecode(path))


def _agree(g: GoldQuery, key: str, old: Any, new: Any, fail, present: bool | None = None) -> None:
    if present is None:
        present = old is not None
    if present and old != new:
        raise fail(f"query {g.qid!r}: {key!r} is {new!r} here but {old!r} on line {g.line}: "
                   "expected one value per query")


def read_corpus(path: str | os.PathLike) -> dict[str, str]:
    """doc_id -> text, from JSONL records or one JSON object (see the module docstring)."""
    name = os.fsdecode(path)
    if name.lower().endswith(".json") or name.lower().endswith(".json.gz"):
        text, name = _file_text(path, lines=False)
        try:
            obj = json.loads(text, object_pairs_hook=_no_repeats)
        except _Duplicate as d:
            raise InputError(name, f"doc_id {d.args[0]!r} appears twice: expected each document once") from None
        except (json.JSONDecodeError, ValueError, RecursionError) as e:
            raise InputError(name, f"not valid JSON: {e}") from None
        if not isinstance(obj, dict):
            raise InputError(name, f"the JSON value is {_kind(obj)}: expected an object {{doc_id: text}}")
        for d, t in obj.items():
            if not isinstance(t, str):
                raise InputError(name, f"the text of doc_id {d!r} is {_kind(t)}: expected a string")
        return dict(obj)
    out: dict[str, str] = {}
    where: dict[str, int] = {}
    for name, line, rec in jsonl_records(path):
        def fail(p: str, _line=line) -> InputError:
            return InputError(name, p, _line)

        key, d_raw = _key(rec, DOCID_KEYS)
        if key is None:
            raise fail(f"no document id: expected a key {' / '.join(DOCID_KEYS)}")
        d = _id(d_raw, f"the document id ({key})", fail)
        text = rec.get("text")
        if not isinstance(text, str):
            raise fail(f"doc_id {d!r}: 'text' is {_kind(text)}: expected the passage as a string")
        if d in out:
            raise fail(f"doc_id {d!r} is listed twice, on lines {where[d]} and {line}: expected each document once")
        out[d], where[d] = text, line
    return out


# --------------------------------------------------------------------------------------------
# pipeline outputs


@dataclass
class Output:
    """One query's pipeline output: the retrieved documents in list order, and the answer."""

    qid: str
    doc_ids: list[str]
    scores: np.ndarray  # float64, one per document (list order n..1 when the record had none)
    texts: list[str]
    answer: str
    line: int
    scored: bool = True  # whether the record gave scores
    abstained: bool | None = None  # the record's own "abstained" (None: read from the answer)


@dataclass
class Outputs:
    """One variant's outputs: per query an :class:`Output`, and the retrieved lists as a Run."""

    name: str
    source: str
    records: dict[str, Output]
    run: Run
    counts: ReadCounts
    unsorted: int = 0  # records whose scores are not in non-increasing list order
    errors: dict[str, str] = field(default_factory=dict)  # qid -> why a pipeline gave no output


def read_outputs(path: str | os.PathLike, name: str, corpus: Mapping[str, str] | None = None) -> Outputs:
    """Read one variant's pipeline-output JSONL (see the module docstring)."""
    counts = ReadCounts()
    records = jsonl_records(path, counts)
    return outputs_from_records(((n, line, rec) for n, line, rec in records), name, corpus, counts,
                                source=os.fsdecode(path))


def outputs_from_records(records: Iterable[tuple[str, int | None, Mapping[str, Any]]], name: str,
                         corpus: Mapping[str, str] | None = None, counts: ReadCounts | None = None,
                         source: str | None = None) -> Outputs:
    """Validated :class:`Outputs` from (file name, line, record) triples (``line`` None for a
    record that did not come from a file: then the error names the query)."""
    counts = counts if counts is not None else ReadCounts()
    out: dict[str, Output] = {}
    src = source
    for fname, line, rec in records:
        src = src or fname
        o = _output(fname, line, rec, corpus)
        if o.qid in out:
            first = out[o.qid].line
            raise InputError(fname, f"query {o.qid!r} has two records, on lines {first} and {line}: "
                                    "expected one record per query", line)
        out[o.qid] = o
    if src is None:
        src = f"<{name}>"
    if counts.read == 0:
        counts.read = len(out)
    counts.used = counts.read
    run = run_of(out, src)
    unsorted = sum(1 for o in out.values() if o.scored and o.scores.size > 1 and bool((np.diff(o.scores) > 0).any()))
    return Outputs(name, src, out, run, counts, unsorted)


def run_of(records: Mapping[str, Output], source: str, qids: Iterable[str] | None = None) -> Run:
    """The retrieved lists of ``records`` (only the queries ``qids`` when given) as a Run whose
    rows are in list order within each query."""
    keep = None if qids is None else set(qids)
    rows = [(q, d, s, float(i + 1)) for q, o in records.items() if keep is None or q in keep
            for i, (d, s) in enumerate(zip(o.doc_ids, o.scores.tolist()))]
    run = Run.from_records(rows, source)
    run.line = np.array([records[q].line or 0 for q, _, _, _ in rows], dtype=np.int64)
    run.counts = ReadCounts(read=len(rows), used=len(rows))
    return run


def output_record(fname: str, line: int | None, rec: Mapping[str, Any], corpus: Mapping[str, str] | None) -> Output:
    """One validated output record (an InputError names what is wrong with it)."""
    return _output(fname, line, rec, corpus)


def _output(fname: str, line: int | None, rec: Mapping[str, Any], corpus: Mapping[str, str] | None) -> Output:
    def fail(p: str) -> InputError:
        return InputError(fname, p, line)

    if not isinstance(rec, Mapping):
        raise fail(f"the record is {_kind(rec)}: expected a JSON object with 'qid', 'retrieved' and 'answer'")
    q = _qid(rec, fail)
    if "retrieved" not in rec:
        raise fail(f"query {q!r}: no 'retrieved': expected a list of {{\"doc_id\", \"score\", \"text\"}} objects")
    docs = rec["retrieved"]
    if not isinstance(docs, list):
        raise fail(f"query {q!r}: 'retrieved' is {_kind(docs)}: expected a list of documents")
    if "answer" not in rec:
        raise fail(f"query {q!r}: no 'answer': expected the generated answer as a string (it may be empty)")
    answer = rec["answer"]
    if not isinstance(answer, str):
        raise fail(f"query {q!r}: 'answer' is {_kind(answer)}: expected a string")
    abstained = rec.get("abstained")
    if abstained is not None and not isinstance(abstained, bool):
        raise fail(f"query {q!r}: 'abstained' is {_kind(abstained)}: expected true, false or null")
    doc_ids: list[str] = []
    scores: list[float] = []
    texts: list[str] = []
    position: dict[str, int] = {}
    with_score = None
    for i, d in enumerate(docs):
        at = f"query {q!r}: retrieved[{i}]"
        if not isinstance(d, Mapping):
            raise fail(f"{at} is {_kind(d)}: expected an object with 'doc_id'")
        key, d_raw = _key(d, DOCID_KEYS)
        if key is None:
            raise fail(f"{at}: no 'doc_id': expected a key {' / '.join(DOCID_KEYS)}")
        doc = _id(d_raw, f"{at}: {key}", fail)
        if doc in position:
            raise fail(f"{at}: doc_id {doc!r} is also retrieved[{position[doc]}]: expected each document once per list")
        position[doc] = i
        has = "score" in d
        if with_score is None:
            with_score = has
        elif has != with_score:
            raise fail(f"{at}: {'a score' if has else 'no score'}, but retrieved[0] has "
                       f"{'one' if with_score else 'none'}: give a score to every document of a list or to none")
        if has:
            s = d["score"]
            if isinstance(s, bool) or not isinstance(s, (int, float)):
                raise fail(f"{at}: score is {_kind(s)}: expected a number")
            s = float(s)
            if not math.isfinite(s):
                raise fail(f"{at}: score {d['score']!r} is not a finite number: expected a finite number")
            scores.append(s)
        if "text" in d:
            t = d["text"]
            if not isinstance(t, str):
                raise fail(f"{at}: text is {_kind(t)}: expected a string")
        elif corpus is not None and doc in corpus:
            t = corpus[doc]
        else:
            why = "the corpus has no such document" if corpus is not None else "and no --corpus was given"
            raise fail(f"{at}: doc_id {doc!r} has no 'text' ({why}): give the passage's text in the "
                       "record or in a corpus file")
        doc_ids.append(doc)
        texts.append(t)
    n = len(doc_ids)
    values = np.array(scores, dtype=np.float64) if with_score else np.arange(n, 0, -1, dtype=np.float64)
    return Output(q, doc_ids, values, texts, answer, line or 0, bool(with_score), abstained)


# --------------------------------------------------------------------------------------------
# answer quality scores (the correlation study)


@dataclass
class Quality:
    """Per answer, a quality score: keyed by (variant, qid), variant None when the file names
    none (then the score is every variant's answer to that query)."""

    scores: dict[tuple[str | None, str], float]
    source: str

    def lookup(self, variant: str, qid: str) -> float:
        v = self.scores.get((variant, qid))
        if v is None:
            v = self.scores.get((None, qid))
        return float("nan") if v is None else v


def read_quality(path: str | os.PathLike) -> Quality:
    """Per-answer quality scores: JSONL ``{"qid", "quality", "variant"?}`` (``.jsonl``), or
    text lines ``qid score`` / ``variant qid score`` separated by whitespace (``#`` comments
    and blank lines skipped). Scores are finite numbers (a 1-5 Likert judgment, a 0/1
    correctness...); one score per (variant, qid)."""
    name = os.fsdecode(path)
    scores: dict[tuple[str | None, str], float] = {}
    where: dict[tuple[str | None, str], int] = {}

    def put(key, value, line):
        if key in scores:
            what = f"query {key[1]!r}" + (f" of variant {key[0]!r}" if key[0] is not None else "")
            raise InputError(name, f"{what} has two scores, on lines {where[key]} and {line}: expected one", line)
        scores[key], where[key] = value, line

    if name.lower().endswith((".jsonl", ".jsonl.gz", ".ndjson")):
        for name, line, rec in jsonl_records(path):
            def fail(p: str, _line=line) -> InputError:
                return InputError(name, p, _line)

            q = _qid(rec, fail)
            v = rec.get("quality")
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
                raise fail(f"query {q!r}: 'quality' is {_kind(v)}: expected a finite number")
            variant = rec.get("variant")
            if variant is not None and not isinstance(variant, str):
                raise fail(f"query {q!r}: 'variant' is {_kind(variant)}: expected a variant name")
            put((variant, q), float(v), line)
    else:
        text, name = _file_text(path)
        for line, raw in enumerate(text.split("\n"), 1):
            body = raw.strip()
            if not body or body.startswith("#"):
                continue
            fields = body.split()
            if len(fields) not in (2, 3):
                raise InputError(name, f"{len(fields)} fields: expected 'qid score' or 'variant qid score'", line)
            try:
                value = float(fields[-1])
            except ValueError:
                raise InputError(name, f"the score {fields[-1]!r} is not a number", line) from None
            if not math.isfinite(value):
                raise InputError(name, f"the score {fields[-1]!r} is not a finite number", line)
            put((fields[0] if len(fields) == 3 else None, fields[-2]), value, line)
    if not scores:
        raise InputError(name, "no quality scores in the file")
    has_variant = {k[0] is not None for k in scores}
    if len(has_variant) == 2:
        raise InputError(name, "some scores name a variant and some do not: expected one layout for the whole file")
    return Quality(scores, name)

"""JSON and JSONL runs and qrels -> columns (:class:`~conformance.io.parsed.Parsed`), or one InputError.

JSON (``.json``): a dict of dicts ``{qid: {docid: score}}`` / ``{qid: {docid: label}}``, kept in
listing order, or a list of the records below. A key repeated inside one JSON object is a
duplicate as in every other input (the JSON module alone would silently keep the last). A query
with an empty object has no rows: it is counted as one row read and ignored ("query with no
documents"). The "line" of a problem is the record number: the 1-based position of the (qid,
docid) pair in listing order, or, for a list of records, the position of the record.

JSONL (``.jsonl``, ``.ndjson``): one JSON object per line, in the shapes retrieval and RAG code
writes; blank lines are counted and skipped; the line number is the physical line. The limits of
:mod:`conformance.io.limits` apply (binary content, size, line length; JSON's one document is
not bounded by the line length). Keys are matched case-insensitively; each role accepts the
names listed (the first is the usual one):

* query id (both): ``qid``, ``query_id``, ``q_id``, ``queryid``, ``question_id``, ``topic_id``.
  ``query`` is not one: in RAG records it holds the question's text. Other keys are ignored.
* **run, ranked list**: ``{"qid": "q1", "doc_ids": ["d3", "d1"], "scores": [2.5, 1.0]}``; the
  list under ``doc_ids``, ``docids``, ``retrieved_doc_ids``, ``retrieved_ids``,
  ``ranked_doc_ids``, ``pids`` or ``passage_ids``; the scores (optional, one per id) under
  ``scores``, ``doc_scores``, ``retrieved_scores`` or ``similarities``.
* **run, list of hits**: ``{"qid": "q1", "retrieved": [{"doc_id": "d3", "score": 2.5}, ...]}``;
  the list under ``retrieved``, ``results``, ``hits`` or ``ctxs`` (DPR's output); in each hit
  (an object) the id under ``doc_id``, ``docid``, ``id``, ``_id``, ``pid``, ``passage_id``,
  ``document_id``, ``docno`` or ``corpus_id``, the score (optional:
  every hit or none) under ``score`` or ``similarity``, the rank (optional) under ``rank``.
  Other keys of a hit (``text``, ``title``...) are ignored.
* In both list shapes the rank is the position in the list (1-based) unless a hit gives one,
  and without scores the list order is the ranking: position i (1-based) of n scores n - i + 1.
  An empty list is counted as one row read and ignored ("query with no documents").
* **run, flat**: ``{"qid": "q1", "docid": "d1", "score": 2.5, "rank": 1}`` (rank optional); the
  docid under ``docid``, ``doc_id``, ``docno``, ``document_id``, ``pid`` or ``passage_id``; the
  score under ``score`` or ``similarity``.
* **qrels, RAG shape**: ``{"qid": "q1", "query": "...", "gold_doc_ids": ["d1", "d3"],
  "graded_relevance": {"d1": 3, "d3": 2}}``; gold ids under ``gold_doc_ids``,
  ``relevant_doc_ids``, ``positive_doc_ids`` or ``gold_ids``. A gold id without a grade gets
  label 1; a grade in ``graded_relevance`` takes precedence over gold membership (so a gold id
  graded 0 has label 0); graded ids that are not gold are judged with their grade. Rows follow
  the gold order, then the remaining graded ids. A record with neither gold nor graded ids is
  counted as one row read and ignored ("record with no judged documents").
* **qrels, flat**: ``{"qid": "q1", "docid": "d1", "relevance": 2}``; the label under
  ``relevance``, ``label``, ``rel``, ``grade`` or ``judgment``.

A record that gives one role twice (``qid`` and ``query_id``, or one key repeated) is read when
the values agree and refused when they differ; a record that holds two shapes at once (a flat
``docid`` beside a ``doc_ids`` list, or ``doc_ids`` beside ``retrieved``) is refused. Ids,
scores and labels are checked as :mod:`conformance.io.records` says (strings or integers;
finite numbers, integers only where a double holds them exactly; no lone surrogates).
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Mapping

import numpy as np

from conformance.errors import InputError
from conformance.io.limits import Limits
from conformance.io.parsed import DUPLICATE_JUDGMENT, EMPTY_QUERY, EMPTY_RECORD, Parsed
from conformance.io.records import (Obj, Rows, from_nested, identifier, identifiers, kind, lenient_number,
                                    number, numbers)
from conformance.io.text import WS, check_line_lengths, decode, read_bytes

QID_KEYS = ("qid", "query_id", "q_id", "queryid", "question_id", "topic_id")
DOCID_KEYS = ("docid", "doc_id", "docno", "document_id", "pid", "passage_id")
SCORE_KEYS = ("score", "similarity")
RANK_KEYS = ("rank",)
LABEL_KEYS = ("relevance", "label", "rel", "grade", "judgment")
LIST_KEYS = ("doc_ids", "docids", "retrieved_doc_ids", "retrieved_ids", "ranked_doc_ids", "pids", "passage_ids")
SCORES_KEYS = ("scores", "doc_scores", "retrieved_scores", "similarities")
HITS_KEYS = ("retrieved", "results", "hits", "ctxs")
HIT_ID_KEYS = ("doc_id", "docid", "id", "_id", "pid", "passage_id", "document_id", "docno", "corpus_id")
GOLD_KEYS = ("gold_doc_ids", "relevant_doc_ids", "positive_doc_ids", "gold_ids")
GRADED_KEYS = ("graded_relevance",)


def _json_loads(text: str, name: str, line: int | None = None) -> Any:
    try:
        return json.loads(text, object_pairs_hook=Obj)
    except json.JSONDecodeError as e:
        raise InputError(name, f"not valid JSON: {e.msg} (column {e.colno})",
                         e.lineno if line is None else line) from None
    except RecursionError:
        raise InputError(name, "not valid JSON here: nested too deeply", line) from None
    except ValueError as e:
        if "digits" in str(e):  # Python's limit on the digits of an integer it converts
            raise InputError(name, "not valid JSON here: a number has more than 4300 digits: expected a "
                                   "number a double can hold", line) from None
        raise InputError(name, f"not valid JSON: {e}", line) from None


def _names(names: tuple[str, ...]) -> str:
    return " / ".join(names)


def _keys(rec: Obj) -> str:
    names = [k for k, _ in rec]
    return ", ".join(repr(k) for k in names[:8]) + (" ..." if len(names) > 8 else "") if names else "no keys"


def _show(v: Any) -> str:
    text = json.dumps(v, ensure_ascii=False) if not isinstance(v, Obj) else "{...}"
    return text if len(text) <= 40 else text[:37] + "..."


def record_key(rec: Obj, names: tuple[str, ...], role: str, fail: Callable[[str], InputError]) -> tuple[str | None, Any]:
    """The key of ``rec`` that gives ``role`` (one of ``names``, any case) and its value; (None,
    None) when there is none. Two such keys are read when their values agree, else refused."""
    found = [(k, v) for k, v in rec if isinstance(k, str) and k.lower() in names]
    if not found:
        return None, None
    key, value = found[0]
    for other, v in found[1:]:
        if v != value or type(v) is not type(value):
            both = f"the key {key!r} twice" if other == key else f"both {key!r} and {other!r}"
            raise fail(f"the record holds {both} ({role}) with different values, {_show(value)} and "
                       f"{_show(v)}: expected one {role}")
    return key, value


def _query_id(rec: Any, fail: Callable[[str], InputError], what: str) -> str:
    if not isinstance(rec, Obj):
        raise fail(f"the record is {kind(rec)}: expected a JSON object with a query id and {what}")
    key, q_raw = record_key(rec, QID_KEYS, "query id", fail)
    if key is None:
        raise fail(f"no query id: expected a key {_names(QID_KEYS)}, found {_keys(rec)}")
    return identifier(q_raw, f"the query id ({key})", fail)


def _number_text(x: float) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else repr(x)


def _qrels_record(rec: Any, rows: Rows, name: str, line: int) -> None:
    def fail(p: str) -> InputError:
        return InputError(name, p, line)

    q = _query_id(rec, fail, "judged documents")

    def qfail(p: str) -> InputError:
        return fail(f"query {q!r}: {p}")

    dkey, d_raw = record_key(rec, DOCID_KEYS, "docid", qfail)
    gkey, gold = record_key(rec, GOLD_KEYS, "list of gold docids", qfail)
    rkey, graded = record_key(rec, GRADED_KEYS, "graded relevance", qfail)
    if dkey is not None:
        if gkey is not None or rkey is not None:
            raise qfail(f"the record holds a docid ({dkey!r}) and a list of judged documents "
                        f"({gkey or rkey!r}): expected one shape, a flat judgment or a RAG record")
        lkey, lab = record_key(rec, LABEL_KEYS, "label", qfail)
        if lkey is None:
            raise qfail(f"no label: expected a key {_names(LABEL_KEYS)} beside {dkey!r}")
        d = identifier(d_raw, f"the docid ({dkey})", fail)
        rows.add(q, d, number(lab, f"the label of docid {d!r}", fail), line)
        return
    if gkey is None and rkey is None:
        raise qfail(f"no judged documents: expected {_names(GOLD_KEYS)} and/or "
                    f"{_names(GRADED_KEYS)}, or a docid with a label; found {_keys(rec)}")
    grades: dict[str, float] = {}
    graded_order: list[str] = []
    repeats = 0
    if rkey is not None:
        if not isinstance(graded, Obj):
            raise qfail(f"{rkey} is {kind(graded)}: expected an object {{docid: grade}}")
        for d_raw, v in graded:
            d = identifier(d_raw, f"a docid in {rkey}", fail)
            x = number(v, f"the grade of docid {d!r}", fail)
            if d in grades:
                if grades[d] != x:
                    raise qfail(f"{rkey} grades docid {d!r} twice, {_number_text(grades[d])} and "
                                f"{_number_text(x)}: expected one grade per docid")
                repeats += 1
            else:
                graded_order.append(d)
                grades[d] = x
    golds: list[str] = []
    if gkey is not None:
        if not isinstance(gold, list) or isinstance(gold, Obj):
            raise qfail(f"{gkey} is {kind(gold)}: expected a list of docids")
        golds = [identifier(d, f"an id in {gkey}", fail) for d in gold]
    if not golds and not graded_order:
        rows.empty(EMPTY_RECORD)
        return
    gold_set = set(golds)
    for d in golds:
        rows.add(q, d, grades.get(d, 1.0), line)
    for d in graded_order:
        if d not in gold_set:
            rows.add(q, d, grades[d], line)
    for _ in range(repeats):  # a docid graded twice alike: read, then ignored as a duplicate judgment
        rows.counts.read += 1
        rows.counts.used += 1
        rows.counts.ignore(DUPLICATE_JUDGMENT, 1)


def _run_record(rec: Any, rows: Rows, name: str, line: int) -> None:
    def fail(p: str) -> InputError:
        return InputError(name, p, line)

    q = _query_id(rec, fail, "documents")

    def qfail(p: str) -> InputError:
        return fail(f"query {q!r}: {p}")

    dkey, d_raw = record_key(rec, DOCID_KEYS, "docid", qfail)
    lkey, docs = record_key(rec, LIST_KEYS, "ranked list of docids", qfail)
    hkey, hits = record_key(rec, HITS_KEYS, "list of retrieved documents", qfail)
    shapes = [k for k in (dkey, lkey, hkey) if k is not None]
    if len(shapes) > 1:
        raise qfail(f"the record holds {' and '.join(map(repr, shapes))}, two shapes of a run record: "
                    "expected one (a docid with a score, a list of docids, or a list of hits)")
    if dkey is not None:
        skey, s = record_key(rec, SCORE_KEYS, "score", qfail)
        if skey is None:
            raise qfail(f"no score: expected a key {_names(SCORE_KEYS)} beside {dkey!r}")
        d = identifier(d_raw, f"the docid ({dkey})", fail)
        x = number(s, f"the score of docid {d!r}", fail)
        _, r = record_key(rec, RANK_KEYS, "rank", qfail)
        rows.add(q, d, x, line, lenient_number(r))
        return
    if lkey is not None:
        _ranked_ids(rec, q, lkey, docs, rows, line, qfail)
    elif hkey is not None:
        _hits(q, hkey, hits, rows, line, qfail)
    else:
        raise qfail(f"no documents: expected a list under {_names(LIST_KEYS)} or {_names(HITS_KEYS)}, "
                    f"or a docid with a score; found {_keys(rec)}")


def _ranked_ids(rec: Obj, q: str, lkey: str, docs: Any, rows: Rows, line: int, qfail) -> None:
    if not isinstance(docs, list) or isinstance(docs, Obj):
        raise qfail(f"{lkey} is {kind(docs)}: expected a list of docids")
    skey, scores = record_key(rec, SCORES_KEYS, "list of scores", qfail)
    if skey is not None:
        if not isinstance(scores, list) or isinstance(scores, Obj):
            raise qfail(f"{skey} is {kind(scores)}: expected a list of numbers")
        if len(scores) != len(docs):
            raise qfail(f"{len(docs)} docids but {len(scores)} scores: expected one score per docid")
    if not docs:
        rows.empty(EMPTY_QUERY)
        return
    n = len(docs)

    def fail_at(i: int, problem: str) -> InputError:
        return qfail(problem)

    docids = identifiers(docs, lambda i: f"the docid at position {i + 1} of {lkey}", fail_at)
    if skey is not None:
        values = numbers(scores, lambda i: f"the score of docid {docids[i]!r}", fail_at)
    else:
        values = np.arange(n, 0, -1, dtype=np.float64)
    rows.extend(q, docids, values, np.full(n, line), np.arange(1, n + 1, dtype=np.float64))


def _hits(q: str, hkey: str, hits: Any, rows: Rows, line: int, qfail) -> None:
    if not isinstance(hits, list) or isinstance(hits, Obj):
        raise qfail(f"{hkey} is {kind(hits)}: expected a list of objects such as "
                    '{"doc_id": "d1", "score": 2.5}')
    if not hits:
        rows.empty(EMPTY_QUERY)
        return
    n = len(hits)
    docids: list[str] = []
    scores: list[Any] = []
    ranks = np.arange(1, n + 1, dtype=np.float64)
    for i, hit in enumerate(hits):
        where = f"{hkey}[{i}]"
        if not isinstance(hit, Obj):
            also = f" (a list of docids goes under {LIST_KEYS[0]!r})" if isinstance(hit, (str, int)) else ""
            raise qfail(f"{where} is {kind(hit)}: expected an object with a docid such as "
                        f'{{"doc_id": "d1", "score": 2.5}}{also}')

        def hfail(p: str, _where=where) -> InputError:
            return qfail(f"{_where}: {p}")

        ikey, d_raw = record_key(hit, HIT_ID_KEYS, "docid", hfail)
        if ikey is None:
            raise hfail(f"no docid: expected a key {_names(HIT_ID_KEYS)}, found {_keys(hit)}")
        docids.append(identifier(d_raw, f"the docid ({ikey})", hfail))
        skey, s = record_key(hit, SCORE_KEYS, "score", hfail)
        if (skey is None) != (not scores) and i:
            raise hfail(f"{'no' if skey is None else 'a'} score where the hits before "
                        f"{'have one' if skey is None else 'have none'}: expected a score on every hit or on none")
        if skey is not None:
            scores.append(s)
        _, r = record_key(hit, RANK_KEYS, "rank", hfail)
        if r is not None:
            ranks[i] = lenient_number(r)
    if scores:
        values = numbers(scores, lambda i: f"the score of docid {docids[i]!r}", lambda i, p: qfail(p))
    else:
        values = np.arange(n, 0, -1, dtype=np.float64)
    rows.extend(q, docids, values, np.full(n, line), ranks)


def _read_json_rows(path, record: Callable, what: str, limits: Limits | None) -> Rows:
    data, name = read_bytes(path, limits, lines=False)
    text = decode(data, name)
    del data
    if not text.strip():
        raise InputError(name, "no data rows: the file is empty")
    obj = _json_loads(text, name)
    del text
    if isinstance(obj, Obj):
        key = next((k for k, _ in obj if isinstance(k, str) and k.lower() in QID_KEYS), None)
        value = next((v for k, v in obj if k == key), None)
        if key is not None and not isinstance(value, Obj):
            raise InputError(name, f"the JSON object has a {key!r} key, so it looks like one record: expected "
                                   f"{{qid: {{docid: {what}}}}}, a list of records, or one record per line "
                                   "in a .jsonl file", 1)
        return from_nested(obj, name, what)
    if isinstance(obj, list):
        rows = Rows(name)
        for i, rec in enumerate(obj, 1):
            record(rec, rows, name, i)
        return rows
    raise InputError(name, f"the JSON value is {kind(obj)}: expected an object {{qid: {{docid: {what}}}}} "
                           "or a list of records")


def _read_jsonl_rows(path, record: Callable, limits: Limits | None) -> Rows:
    data, name = read_bytes(path, limits, lines=True)
    ends = np.flatnonzero(np.frombuffer(data, np.uint8) == 10) + 1 if len(data) else np.zeros(0, np.int64)
    if len(data) and data[-1:] != b"\n":
        ends = np.append(ends, len(data))
    check_line_lengths(ends, name, limits)
    text = decode(data, name)
    del data
    rows = Rows(name)
    lines = text.split("\n")
    if lines[-1] == "":  # the empty tail after a final newline is not a line
        lines.pop()
    for k, raw in enumerate(lines, 1):
        if not raw.strip(WS):
            rows.counts.blank += 1
            continue
        record(_json_loads(raw, name, k), rows, name, k)
    return rows


def parse_run_json(path: str | os.PathLike, limits: Limits | None = None) -> Parsed:
    """A JSON run ``{qid: {docid: score}}`` (or a list of run records) as columns."""
    return _read_json_rows(path, _run_record, "score", limits).parsed("record")


def parse_qrels_json(path: str | os.PathLike, limits: Limits | None = None) -> Parsed:
    """JSON qrels ``{qid: {docid: label}}`` (or a list of qrels records) as columns."""
    return _read_json_rows(path, _qrels_record, "label", limits).parsed("record")


def parse_run_jsonl(path: str | os.PathLike, limits: Limits | None = None) -> Parsed:
    """A JSONL run (ranked lists, lists of hits or flat records) as columns."""
    return _read_jsonl_rows(path, _run_record, limits).parsed("line")


def parse_qrels_jsonl(path: str | os.PathLike, limits: Limits | None = None) -> Parsed:
    """JSONL qrels (RAG records or flat records) as columns."""
    return _read_jsonl_rows(path, _qrels_record, limits).parsed("line")


def parse_mapping(obj: Mapping[Any, Mapping[Any, Any]], source: str, what: str) -> Parsed:
    """``{qid: {docid: score or label}}`` (Python mappings) as columns; ``what``: "score" or
    "label". The "line" of a problem is the record number."""
    if not isinstance(obj, Mapping):
        raise InputError(source, f"got {type(obj).__name__}: expected a mapping {{qid: {{docid: {what}}}}}")
    return from_nested(obj, source, what).parsed("record")

"""The input boundary: every file, table, mapping or array a user hands the tool becomes validated
columnar :class:`Qrels` / :class:`Run`, or one :class:`~conformance.errors.InputError` naming the
file, the line (the record for JSON, the row for tables) and the problem, with what was
expected and what was found.

One job per module, imports running one way (each imports only those above it here):

* ``kernels``: the Arrow compute kernels, called without importing ``pyarrow.compute``;
* ``columnar``: Arrow <-> numpy without pandas, row numbers (``LazyRange``), hashing, docid words;
* ``encode``: dictionary encoding of id columns, the check that (query, docid) pairs are distinct;
* ``parsed``: what a reader hands the data types (``Parsed``) and the row counts (``ReadCounts``);
* ``limits``: what one input may cost (size, line length, binary content), out-of-memory words;
* ``text``: a text file's bytes, decompressed and bounded, and its lines for messages;
* ``records``: rows from Python values (decoded JSON, dicts), checked one by one;
* ``listed``: a recommender's top k as one row per user, a column of item lists, exploded;
* ``trec``, ``jsonio``, ``frames`` (DataFrames, Arrow tables, list-wise arrays), ``tables``
  (CSV, TSV, Parquet, Arrow IPC): one reader per shape of input, each ending in ``Parsed``;
* ``formats``: which reader a file goes to, and the error when none takes it;
* ``data``: ``Qrels`` and ``Run``, their public constructors (``from_dict``, ``from_frame``,
  ``from_file``, ``from_lists``) and the coding every input shares;
* ``readers``: the readers as functions (``read_run``, ``load_run``...);
* ``seen``: a training table's (user, item) pairs, removed from a run (``exclude_seen``);
* ``cases``: the bundled edge-case corpus.

The names below are imported on first use (``conformance.io.read_run``), so importing the data
types alone does not import pyarrow.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "Qrels": "data", "Run": "data", "settle_pairs": "data",
    "ReadCounts": "parsed", "Parsed": "parsed",
    "LazyRange": "columnar", "DocWords": "columnar",
    "Limits": "limits",
    "read_run": "readers", "read_qrels": "readers", "read_run_json": "readers", "read_qrels_json": "readers",
    "read_run_jsonl": "readers", "read_qrels_jsonl": "readers", "read_run_table": "readers",
    "read_qrels_table": "readers", "run_from_dict": "readers", "qrels_from_dict": "readers",
    "run_from_frame": "readers", "qrels_from_frame": "readers", "load_run": "readers", "load_qrels": "readers",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'conformance.io' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"conformance.io.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))

"""The library entries: one module per library, each holding its adapters and declared profiles.

``ENTRIES`` lists every entry in a fixed order; an entry whose library is not installed is still
listed and reports itself unavailable (``Entry.import_status``).

An adapter module never imports its library when it is imported (the adapter does, when called),
so a module listed here that cannot be imported is a fault of the package, whatever the
reason: a misspelt name, a syntax error, a missing import. ``all_entries`` then raises
``AdapterImportError`` naming the module, rather than leave a library out without a word.
"""

from __future__ import annotations

import difflib
import importlib

from conformance.libs.base import Entry, LibraryValues

# Modules holding entries; each defines ENTRIES: list[Entry]. Importing one must not import
# its library (that happens inside the adapter), so listing entries stays cheap.
_MODULES = ["trec_eval", "ranx", "sklearn", "lightgbm", "xgboost", "ir_measures", "torchmetrics",
            # the rag extra
            "beir", "sentence_transformers", "llama_index",
            # their own extras
            "trectools", "mteb", "ragas", "spark",
            # recommender-system libraries, each its own extra
            "cornac", "keras_rs", "implicit", "rectools", "lenskit", "recommenders",
            "catboost", "recbole", "torchrec"]


class AdapterImportError(ImportError):
    """A module listed in ``_MODULES`` could not be imported (a fault of the package)."""


def all_entries() -> list[Entry]:
    entries: list[Entry] = []
    for name in _MODULES:
        module = f"conformance.libs.{name}"
        try:
            mod = importlib.import_module(module)
        except Exception as exc:
            raise AdapterImportError(
                f"the adapter module {module} (listed in conformance.libs._MODULES) cannot be "
                f"imported: {type(exc).__name__}: {exc}") from exc
        entries.extend(mod.ENTRIES)
    return entries


def entry(name: str) -> Entry:
    entries = {e.name: e for e in all_entries()}
    if name in entries:
        return entries[name]
    close = difflib.get_close_matches(name, list(entries), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise KeyError(f"unknown library entry {name!r}{hint}")


__all__ = ["AdapterImportError", "Entry", "LibraryValues", "all_entries", "entry"]

"""The library entries: one module per library, each holding its adapters and declared profiles.

``ENTRIES`` lists every entry in a fixed order; an entry whose library is not installed is still
listed and reports itself unavailable.
"""

from __future__ import annotations

import difflib
import importlib

from conformance.libs.base import Entry, LibraryValues

# Modules holding entries; each defines ENTRIES: list[Entry]. Importing one must not import
# its library (that happens inside the adapter), so listing entries stays cheap.
_MODULES = ["trec_eval", "ranx", "sklearn", "lightgbm", "xgboost", "ir_measures", "torchmetrics",
            # the rag extra
            "beir", "sentence_transformers", "llama_index"]


def all_entries() -> list[Entry]:
    entries: list[Entry] = []
    for name in _MODULES:
        try:
            mod = importlib.import_module(f"conformance.libs.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"conformance.libs.{name}":
                continue  # adapter module not written yet
            raise
        entries.extend(mod.ENTRIES)
    return entries


def entry(name: str) -> Entry:
    entries = {e.name: e for e in all_entries()}
    if name in entries:
        return entries[name]
    close = difflib.get_close_matches(name, list(entries), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise KeyError(f"unknown library entry {name!r}{hint}")


def install_command(e: Entry) -> str:
    """The pip command that adds entry ``e``'s library: its extra of the package (an entry
    names it in ``extra``; otherwise the extra is named after the library)."""
    inner = getattr(e, "inner", e)  # an isolated entry wraps the entry that declares it
    extra = getattr(inner, "extra", "") or inner.library
    return f"pip install 'conformance[{extra}]'"


__all__ = ["Entry", "LibraryValues", "all_entries", "entry", "install_command"]

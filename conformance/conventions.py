"""The vocabulary of conventions: every choice that changes a ranking metric's value.

Each axis is defined once here, with its public name (used by ``--set axis=value``, in JSON and
in reports), its values and a one-line meaning for each. A :class:`Conventions` is a frozen
choice of one value on every axis; a profile is a named ``Conventions``. Library profiles live
beside their adapters in ``conformance.libs``; this module holds only the vocabulary and the
profiles of the reference tool trec_eval itself.

Values are plain Python values: strings for named choices, ``int`` for the relevance threshold
and the depth (``None`` for no depth), and for custom gains the canonical text ``"0:0,1:1,2:3"``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping


class ConventionError(ValueError):
    """An axis name or value that the vocabulary does not know."""


def _close_matches(word: str, possibilities: list[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """The known names closest to an unknown one (``difflib``, imported only then: a few ms
    of every command otherwise)."""
    import difflib

    return difflib.get_close_matches(word, possibilities, n=n, cutoff=cutoff)


@dataclass(frozen=True)
class Axis:
    name: str
    meaning: str
    values: Mapping[str, str]  # named value -> one-line meaning
    # For axes whose values are not a closed set (integers, gain maps, log bases): turns the
    # public text into the stored value, raising ConventionError on bad text.
    parse_open: Callable[[str], Any] | None = None
    open_meaning: str = ""

    def parse(self, text: Any) -> Any:
        if not isinstance(text, str):
            text = format_value(text)
        text = text.strip()
        if text in self.values:
            return _NAMED_TO_STORED.get((self.name, text), text)
        if self.parse_open is not None:
            return self.parse_open(text)
        close = _close_matches(text, list(self.values), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ConventionError(
            f"axis {self.name!r} has no value {text!r}: expected one of "
            f"{', '.join(self.values)}{(' or ' + self.open_meaning) if self.open_meaning else ''}{hint}"
        )


def _parse_gain_map(text: str) -> str:
    """``"0:0,1:1,2:3"`` -> canonical text with labels sorted; gains may be fractional."""
    pairs = {}
    for part in text.split(","):
        label, sep, gain = part.partition(":")
        if not sep:
            label, sep, gain = part.partition("=")
        try:
            if not sep:
                raise ValueError
            lab, g = float(label), float(gain)
        except ValueError:
            raise ConventionError(
                f"gain {text!r}: expected 'linear', 'exponential' or a map such as '0:0,1:1,2:3'"
            ) from None
        if not (math.isfinite(lab) and math.isfinite(g)):
            raise ConventionError(f"gain {text!r}: labels and gains must be finite numbers")
        pairs[lab] = g
    return ",".join(f"{_num(k)}:{_num(v)}" for k, v in sorted(pairs.items()))


def gain_map(value: str) -> dict[float, float] | None:
    """The label -> gain map of a custom ``gain`` value, or None for a named gain."""
    if value in ("linear", "exponential", "binary"):
        return None
    return {float(k): float(v) for k, v in (p.split(":") for p in value.split(","))}


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _parse_discount(text: str) -> str:
    kind, sep, base = text.partition(":")
    if kind in ("jarvelin", "log") and sep:
        try:
            b = float(base)
        except ValueError:
            b = float("nan")
        if not (b > 1 and math.isfinite(b)):
            raise ConventionError(f"discount {text!r}: the base must be a number above 1")
        if kind == "log" and b == 2:
            return "log2"
        if kind == "jarvelin" and b == 2:
            return "jarvelin"
        return f"{kind}:{_num(b)}"
    raise ConventionError(
        f"discount {text!r}: expected 'log2', 'jarvelin', 'jarvelin:b' or 'log:b' (b > 1)"
    )


def discount_base(value: str) -> tuple[str, float]:
    """``"jarvelin:3"`` -> ("jarvelin", 3.0); ``"log2"`` -> ("log", 2.0)."""
    if value == "log2":
        return "log", 2.0
    if value == "jarvelin":
        return "jarvelin", 2.0
    kind, _, base = value.partition(":")
    return kind, float(base)


def _parse_int(axis: str, minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ConventionError(f"axis {axis!r}: expected an integer, got {text!r}") from None
        if value < minimum:
            raise ConventionError(f"axis {axis!r}: expected an integer >= {minimum}, got {value}")
        return value

    return parse


# Named values stored as something other than their text.
_NAMED_TO_STORED = {("depth", "none"): None, ("rounding", "none"): None}

AXES: dict[str, Axis] = {
    a.name: a
    for a in [
        Axis(
            "gain",
            "the gain of a document with label rel, in DCG and nDCG",
            {
                "linear": "gain = rel",
                "exponential": "gain = 2^rel - 1",
                "binary": "gain = 1 for a relevant document (label >= relevance_threshold), else 0 "
                          "(sentence-transformers' NDCG@k, which sees sets of relevant ids)",
            },
            parse_open=_parse_gain_map,
            open_meaning="a label:gain map such as '0:0,1:1,2:3' (unlisted labels keep gain = label)",
        ),
        Axis(
            "discount",
            "the discount applied to the gain at a 1-based rank, in DCG and nDCG",
            {
                "log2": "gain / log2(rank + 1)",
                "jarvelin": "no discount before rank 2, then gain / log2(rank) (Jarvelin & Kekalainen 2002)",
            },
            parse_open=_parse_discount,
            open_meaning="'jarvelin:b' (no discount before rank b, then gain / log_b(rank)) or 'log:b' (gain / log_b(rank + 1))",
        ),
        Axis(
            "ideal",
            "where the ideal DCG (the nDCG denominator) takes its labels from",
            {
                "judged": "every judged document of the query, retrieved or not",
                "retrieved": "only the labels of the ranked list itself",
            },
        ),
        Axis(
            "k_beyond_list",
            "the denominator of P@k (and F1@k, T@k) when fewer than k documents were retrieved",
            {
                "k": "divide by k even when the list is shorter",
                "min_k_n": "divide by min(k, list length)",
            },
        ),
        Axis(
            "ap_denominator",
            "what the sum of precisions at relevant ranks is divided by in AP and AP@k",
            {
                "relevant": "R, every relevant judged document, retrieved or not",
                "retrieved_relevant": "the relevant documents found in the (cut) list",
                "min_k_relevant": "min(k, R)",
            },
        ),
        Axis(
            "empty_query",
            "what a query with no relevant document scores (the 0/0 case)",
            {
                "zero": "it scores 0 and counts in the mean",
                "one": "it scores 1 and counts in the mean",
                "nan": "it scores NaN, and so does the mean",
                "raise": "evaluation fails",
                "skip": "it is left out of the mean",
            },
        ),
        Axis(
            "ties",
            "the order of documents with equal scores",
            {
                "docid_desc": "by document id, byte-wise descending (trec_eval)",
                "docid_asc": "by document id, byte-wise ascending",
                "input_order": "in the order the run lists them (stable sort)",
                "reverse_input": "in the reverse of the order the run lists them",
                "average": "the expected value over all orders of each tied group (McSherry & Najork)",
                "unspecified": "any order: the value is the range from the worst to the best order",
            },
        ),
        Axis(
            "relevance_threshold",
            "the label L from which a document counts as relevant in binary measures (label >= L)",
            {},
            parse_open=_parse_int("relevance_threshold", -(2**31)),
            open_meaning="an integer L",
        ),
        Axis(
            "threshold_scope",
            "whether the relevance threshold also applies to graded gains (DCG, nDCG)",
            {
                "binary": "only binary measures use it; DCG and nDCG use every positive label",
                "graded": "labels below the threshold also get gain 0 in DCG and nDCG",
            },
        ),
        Axis(
            "negative_labels",
            "what a negative relevance label means",
            {
                "unjudged": "gain 0, never relevant, not in the ideal",
                "keep": "a negative gain, in the list and in the ideal",
                "raise": "evaluation fails",
            },
        ),
        Axis(
            "label_type",
            "what happens to a non-integer relevance label",
            {
                "float": "used as it is",
                "int_truncate": "truncated towards zero (1.7 -> 1)",
                "raise": "evaluation fails",
            },
        ),
        Axis(
            "query_set",
            "which queries are scored and averaged",
            {
                "run": "queries present in both the run and the qrels",
                "qrels": "every judged query; one missing from the run scores 0",
                "raise": "evaluation fails when the run's and the qrels' query sets differ",
            },
        ),
        Axis(
            "depth",
            "the run is cut to this many documents per query before anything is scored",
            {"none": "no cut"},
            parse_open=_parse_int("depth", 1),
            open_meaning="a positive integer N",
        ),
        Axis(
            "score_precision",
            "the precision of scores when documents are sorted",
            {
                "float64": "scores sorted as double precision",
                "float32": "scores narrowed to single precision first, so near-equal scores tie",
            },
        ),
        Axis(
            "rr_cutoff",
            "whether RR@k looks only at the top k",
            {
                "honour": "RR@k is 0 when the first relevant document is below rank k",
                "ignore": "RR@k is RR: the cutoff is accepted and ignored",
            },
        ),
        Axis(
            "rank_source",
            "what orders a query's documents",
            {
                "score": "the score column, descending (the rank column is ignored)",
                "rank_column": "the rank column, ascending (the score is ignored)",
            },
        ),
        Axis(
            "nonpositive_scores",
            "whether a retrieved document whose score is <= 0 can count as relevant where it is ranked",
            {
                "rank": "it is ranked and counts like any other document",
                "not_relevant": "it keeps its rank but never counts as relevant there in binary "
                "measures (P, R, F1, AP, RR, Success, Rprec); R and the ideal still count it; "
                "DCG and nDCG are unaffected (torchmetrics' AP, RR, P, R)",
            },
        ),
        Axis(
            "single_document",
            "a query whose ranked list holds exactly one document",
            {
                "score": "it is scored like any other list",
                "raise": "evaluation fails (scikit-learn refuses one-document rows)",
            },
        ),
        Axis(
            "duplicates",
            "a document listed twice for one query in a run",
            {
                "error": "the input is refused",
                "first": "the first listing is kept",
                "last": "the last listing is kept",
                "keep": "every listing is kept, each a document of its own with the document's "
                        "label (a library given bare score lists has no docid to repeat)",
            },
        ),
        # identical_ids: read in reference/evaluate.py (_evaluate_group, the kept rows) from
        # Prepared.identical_rows; every measure family sees the shorter list.
        Axis(
            "identical_ids",
            "a retrieved document whose id equals the query id",
            {
                "keep": "it is ranked like any other document",
                "drop": "it is removed from the run before anything is scored (BEIR's "
                        "ignore_identical_ids=True); its judgment still counts in R and the "
                        "ideal, and a query left with no document is scored on an empty list",
            },
        ),
        # rounding: read in reference/evaluate.py (Evaluation.aggregate and _round); every
        # mean-aggregated family.
        Axis(
            "rounding",
            "the decimal places a library reports its values to",
            {"none": "full precision"},
            parse_open=_parse_int("rounding", 0),
            open_meaning="an integer N >= 0: each query's value and the mean are rounded to N "
                         "places (Python's round, half to even on the exact binary value), the "
                         "mean from the unrounded values (BEIR and MTEB: 5)",
        ),
    ]
}


def format_value(value: Any) -> str:
    """The public text of a stored value (inverse of Axis.parse)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        raise TypeError("boolean axis values do not exist")
    if isinstance(value, (int, float)):
        return _num(value) if isinstance(value, float) else str(value)
    return str(value)


@dataclass(frozen=True)
class Conventions:
    """One value on every axis. Build with :func:`profile` or ``Conventions().replace(...)``.

    The defaults are the trec_eval 10 command line's (float64 scores); the ``trec_eval``
    profile is the one pytrec_eval-terrier shows.
    """

    gain: str = "linear"
    discount: str = "log2"
    ideal: str = "judged"
    k_beyond_list: str = "k"
    ap_denominator: str = "relevant"
    empty_query: str = "zero"
    ties: str = "docid_desc"
    relevance_threshold: int = 1
    threshold_scope: str = "binary"
    negative_labels: str = "unjudged"
    label_type: str = "float"
    query_set: str = "run"
    depth: int | None = None
    score_precision: str = "float64"
    rr_cutoff: str = "honour"
    rank_source: str = "score"
    nonpositive_scores: str = "rank"
    single_document: str = "score"
    duplicates: str = "error"
    identical_ids: str = "keep"
    rounding: int | None = None

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            stored = AXES[f.name].parse(value)
            if stored != value:
                object.__setattr__(self, f.name, stored)

    def replace(self, **changes: Any) -> "Conventions":
        unknown = [k for k in changes if k not in AXES]
        if unknown:
            raise ConventionError(_unknown_axis_message(unknown[0]))
        return dataclasses.replace(self, **changes)

    def with_settings(self, settings: list[str] | tuple[str, ...]) -> "Conventions":
        """Apply ``["gain=exponential", "ties=input_order"]`` (the CLI's ``--set``)."""
        return self.replace(**dict(parse_setting(s) for s in settings))

    def to_dict(self) -> dict[str, str]:
        """Axis -> public text, in the axis order of :data:`AXES`."""
        return {name: format_value(getattr(self, name)) for name in AXES}

    def differing_axes(self, other: "Conventions") -> list[str]:
        return [name for name in AXES if getattr(self, name) != getattr(other, name)]


def _unknown_axis_message(name: str) -> str:
    close = _close_matches(name, list(AXES), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return f"unknown axis {name!r}: known axes are {', '.join(AXES)}{hint}"


def parse_setting(text: str) -> tuple[str, Any]:
    """``"gain=exponential"`` -> ("gain", "exponential"), validated."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not value.strip():
        raise ConventionError(f"setting {text!r}: expected axis=value, such as gain=exponential")
    if name not in AXES:
        raise ConventionError(_unknown_axis_message(name))
    return name, AXES[name].parse(value)


# The profiles of trec_eval itself. pytrec_eval-terrier (the Python binding) is trec_eval 9 code:
# scores are narrowed to float32 before sorting; the trec_eval 10 command line keeps doubles.
TREC_EVAL = Conventions(
    gain="linear",
    discount="log2",
    ideal="judged",
    k_beyond_list="k",
    ap_denominator="relevant",
    empty_query="zero",
    ties="docid_desc",
    relevance_threshold=1,
    threshold_scope="binary",
    negative_labels="unjudged",
    label_type="int_truncate",
    query_set="run",
    depth=None,
    score_precision="float32",
    rr_cutoff="ignore",
    rank_source="score",
    nonpositive_scores="rank",
    single_document="score",
    duplicates="error",
)
TREC_EVAL10 = TREC_EVAL.replace(score_precision="float64")

PROFILES: dict[str, Conventions] = {
    "trec_eval": TREC_EVAL,
    "trec_eval10": TREC_EVAL10,
}


def profile(name: str) -> Conventions:
    """A named profile: the built-in ones here, or a library entry's (``conformance.libs``)."""
    if name in PROFILES:
        return PROFILES[name]
    try:  # library entries register their default profiles when their module is imported
        from conformance import libs

        found = libs.default_profile(name)
    except (ImportError, AttributeError, KeyError):
        found = None
    if found is not None:
        return found
    close = _close_matches(name, list(PROFILES), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise ConventionError(f"unknown profile {name!r}: known profiles are {', '.join(PROFILES)}{hint}")

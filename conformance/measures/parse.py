"""Reading measure names: :func:`parse_measure` reads one name, :func:`parse_measures` a list
(a comma list, a Python list, trec_eval's ``-m`` sets), in ir_measures syntax (``nDCG@10``,
``P(rel=2)@5``), trec_eval syntax (``ndcg_cut_10``, ``P_5``) and ranx syntax
(``ndcg_burges@10``, ``map@100-l2``), into :class:`~conformance.measures.measure.Measure`
records. What each spelling allows comes from ``conformance.measures.names``; a name that
cannot be read raises :class:`~conformance.measures.families.MeasureError` naming what was
expected and the nearest known names.
"""

from __future__ import annotations

import re as _re
from typing import Any

from conformance.conventions import AXES as _AXES
from conformance.conventions import ConventionError as _ConventionError
from conformance.conventions import _close_matches
from conformance.measures.families import FAMILIES, MeasureError, _INT, _unquote, format_param
from conformance.measures.measure import Measure
from conformance.measures.names import _NAMES, _REL_FAMILIES, _UNSUPPORTED, KNOWN_NAMES, _Name
# Parameters accepted in parentheses besides the axis names of conventions.AXES.
_PARAMS = ("rel", "dcg", "gains", "cutoff")

_HEAD = _re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-]*")


def _cutoff(text: str, measure: str) -> int:
    """A cutoff: a positive integer of any size."""
    t = text.strip()
    if not t:
        raise MeasureError(f"measure {measure!r}: empty cutoff; expected a positive integer, such as @10")
    if not _INT.fullmatch(t):
        raise MeasureError(f"measure {measure!r}: cutoff {t!r} is not an integer; expected a positive integer")
    k = int(t)
    if k <= 0:
        raise MeasureError(f"measure {measure!r}: cutoff must be a positive integer, got {k}")
    return k


_ATOL = _re.compile(r"([+-]?\d+)(?:\.\d*)?")


def _trec_cutoff(text: str, measure: str) -> int:
    """A cutoff of a trec_eval list (``ndcg_cut.10,20,23.4``): read as trec_eval reads it, with
    C's ``atol``, so a fractional part is dropped (23.4 is 23, and prints as ndcg_cut_23)."""
    t = text.strip()
    m = _ATOL.fullmatch(t)
    return _cutoff(m.group(1) if m else t, measure)


def _head_of(text: str) -> str:
    h = _HEAD.match(text)
    return h.group(0) if h else ""


def _unknown(head: str, measure: str) -> MeasureError:
    if head in _UNSUPPORTED:
        return MeasureError(
            f"measure {measure!r}: {_UNSUPPORTED[head]} (known names: {', '.join(KNOWN_NAMES)})"
        )
    pool: dict[str, list[str]] = {}
    for n in _NAMES:
        pool.setdefault(n.lower(), []).append(n)
    # Match case-insensitively, so 'Ndcg' still finds nDCG and ndcg.
    close = _close_matches(head.lower(), list(pool), n=3, cutoff=0.6)
    names = [n for c in close for n in pool[c]]
    hint = f"; did you mean {', '.join(names)}?" if names else ""
    return MeasureError(
        f"unknown measure {measure!r}{hint} (known names: {', '.join(KNOWN_NAMES)})"
    )


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split at ``sep`` outside parentheses, braces, brackets and quotes."""
    parts, depth, quote, cur = [], 0, "", []
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return parts


def _matching_paren(text: str, start: int, measure: str) -> int:
    """Index of the ``)`` that closes the ``(`` at ``start``."""
    depth, quote = 0, ""
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                if ch != ")":
                    break
                return i
    raise MeasureError(f"measure {measure!r}: unbalanced parentheses or quotes")


def _parse_params(inner: str, measure: str) -> list[tuple[str, str]]:
    out = []
    if not inner.strip():
        return out
    for part in _split_top(inner):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key or not value.strip():
            raise MeasureError(
                f"measure {measure!r}: parameter {part.strip()!r} is not key=value, such as rel=2 "
                "(quote a value that holds commas: gain='0:0,1:1,2:3')"
            )
        out.append((key, value.strip()))
    return out


def _gains_dict(text: str, measure: str) -> str:
    """ir_measures' ``gains={0:0,1:1,2:3}`` -> the gain axis' canonical map."""
    t = text.strip()
    if not (t.startswith("{") and t.endswith("}")):
        raise MeasureError(f"measure {measure!r}: gains must be a map such as {{0:0,1:1,2:3}}, got {t!r}")
    try:
        return _AXES["gain"].parse(t[1:-1].replace(" ", ""))
    except _ConventionError as exc:
        raise MeasureError(f"measure {measure!r}: {exc}") from None


class _Builder:
    """Collects what a name, its parameters and its suffixes say, and refuses contradictions."""

    def __init__(self, measure: str, family: str) -> None:
        self.measure, self.family = measure, family
        self.cutoff: int | None = None
        self.overrides: dict[str, Any] = {}
        self.params: dict[str, Any] = {}

    def set_cutoff(self, k: int) -> None:
        if self.cutoff is not None and self.cutoff != k:
            raise MeasureError(f"measure {self.measure!r}: cutoff given twice ({self.cutoff} and {k})")
        self.cutoff = k

    def set_param(self, key: str, raw: str) -> None:
        spec = FAMILIES[self.family].parameter(key)
        value = spec.parse(raw, self.measure)
        if key in self.params and self.params[key] != value:
            raise MeasureError(f"measure {self.measure!r}: {key} given twice "
                               f"({format_param(self.params[key])} and {format_param(value)})")
        self.params[key] = value

    def override(self, axis: str, value: Any, via: str) -> None:
        old = self.overrides.get(axis, value)
        if old != value:
            raise MeasureError(
                f"measure {self.measure!r}: {via} sets {axis}={value} but {axis}={old} is also given"
            )
        self.overrides[axis] = value

    def param(self, key: str, raw: str) -> None:
        value = _unquote(raw)
        fam, m = self.family, self.measure
        if key == "judged_only":
            raise MeasureError(
                f"measure {m!r}: judged_only is not supported: conformance has no convention that "
                "drops unjudged retrieved documents from the ranking"
            )
        if key == "rel":
            if fam == "NumRet":  # ir_measures: NumRelRet is NumRet(rel=1)
                self.family = fam = "NumRelRet"
            if fam not in _REL_FAMILIES:
                raise MeasureError(
                    f"measure {m!r}: rel= applies to binary measures; for {fam} write "
                    "relevance_threshold=N,threshold_scope=graded to drop lower labels from the gains"
                )
            self.override("relevance_threshold", self._axis("relevance_threshold", value), "rel=")
        elif key == "dcg" and fam == "SDCG":
            if value != "log2":  # cwl_eval's scaled DCG has the log2 discount only
                raise MeasureError(f"measure {m!r}: SDCG takes dcg='log2' only, got {value!r}")
        elif key == "dcg":
            if "gain" not in FAMILIES[fam].axes:
                raise MeasureError(f"measure {m!r}: dcg= applies to nDCG and DCG only")
            if value == "exp-log2":
                self.override("gain", "exponential", "dcg='exp-log2'")
            elif value != "log2":
                raise MeasureError(f"measure {m!r}: dcg={value!r}: expected 'log2' or 'exp-log2'")
        elif key == "gains":
            if "gain" not in FAMILIES[fam].axes:
                raise MeasureError(f"measure {m!r}: gains= applies to nDCG and DCG only")
            self.override("gain", _gains_dict(value, m), "gains=")
        elif key == "cutoff":
            self.set_cutoff(_cutoff(value, m))
        elif key == "relative" and fam in ("P", "RelP"):
            # ir_measures' SetP(relative=True) is SetRelP: relevant retrieved / min(n, R)
            if value.lower() not in ("true", "false", "1", "0"):
                raise MeasureError(f"measure {m!r}: relative must be True or False, got {value!r}")
            if value.lower() in ("true", "1"):
                self.family = "RelP"
        elif FAMILIES[fam].parameter(key) is not None:
            self.set_param(key, value)
        elif key in _AXES:
            if key == "duplicates":
                raise MeasureError(
                    f"measure {m!r}: duplicates is settled when the run is read, for every measure "
                    "at once; set it for the whole evaluation (--set duplicates=...)"
                )
            self.override(key, self._axis(key, value), f"{key}=")
        else:
            close = _close_matches(key, list(_PARAMS) + list(_AXES)
                                   + [p.name for p in FAMILIES[fam].parameters], n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            own = [p.name for p in FAMILIES[fam].parameters]
            raise MeasureError(
                f"measure {m!r}: unknown parameter {key!r}{hint} (parameters: "
                f"{', '.join(own + list(_PARAMS))}, judged_only (refused), or any axis: "
                f"{', '.join(_AXES)})"
            )

    def _axis(self, axis: str, value: str) -> Any:
        try:
            return _AXES[axis].parse(value)
        except _ConventionError as exc:
            raise MeasureError(f"measure {self.measure!r}: {exc}") from None

    def build(self, spec: _Name, text: str) -> Measure:
        fam, m = self.family, self.measure
        takes, needs = FAMILIES[fam].takes_cutoff, FAMILIES[fam].needs_cutoff
        if self.cutoff is not None and not takes:
            raise MeasureError(f"measure {m!r}: {fam} takes no cutoff")
        if self.cutoff is None and needs:
            raise MeasureError(
                f"measure {m!r}: {spec.bare_error or fam + ' needs a cutoff, such as ' + fam + '@10'}"
            )
        params = {**dict(spec.defaults if spec.family == fam else ()), **self.params}
        for p in FAMILIES[fam].parameters:
            if p.default is None and p.name not in params:
                form = (f"{fam}@{p.example}" if FAMILIES[fam].at == p.name
                        else f"{fam}({p.name}={p.example})")
                raise MeasureError(f"measure {m!r}: {fam} needs {p.name} ({p.meaning}), such as {form}")
        order = list(_AXES)
        overrides = tuple(sorted(self.overrides.items(), key=lambda kv: order.index(kv[0])))
        return Measure(fam, self.cutoff, overrides, text, tuple(params.items()))


def _parse_one(text: str) -> list[Measure]:
    """One comma-separated item (a trec_eval dotted item may still name several measures)."""
    measure = text
    s = text.strip()
    if not s:
        raise MeasureError("empty measure name")
    level: int | None = None
    pos = s.rfind("-l")
    if pos > 0 and ")" not in s[pos:]:
        raw = s[pos + 2:].strip()
        if _INT.fullmatch(raw):
            level = int(raw)
            s = s[:pos].rstrip()
        elif _head_of(s[:pos]) in _NAMES:
            raise MeasureError(f"measure {measure!r}: ranx's -l suffix needs an integer level, such as -l2")
    head_m = _HEAD.match(s)
    if not head_m or not (s[0].isalpha() or head_m.group(0) in _NAMES):
        raise MeasureError(f"measure {measure!r}: a measure name starts with a letter, such as nDCG@10")
    head, rest = head_m.group(0), s[head_m.end():]
    under_k: str | None = None
    if head in _NAMES:
        spec = _NAMES[head]
    else:
        mu = _re.fullmatch(r"(.+?)_([+-]?\d+)", head)
        base = mu.group(1) if mu else ""
        if base in _NAMES and _NAMES[base].under:
            head, under_k = base, mu.group(2)
            spec = _NAMES[head]
            if spec.dot == "each":  # Rprec_mult_0.20: the number goes on past the head
                frac = _re.match(r"\.\d*", rest)
                if frac:
                    under_k += frac.group(0)
                    rest = rest[frac.end():]
        elif base == "recip_rank":
            raise MeasureError(
                f"measure {measure!r}: trec_eval's recip_rank has no cutoff; write RR@{mu.group(2)} "
                "for the reciprocal rank within the top k"
            )
        elif base in _NAMES:
            fam = _NAMES[base].family
            raise MeasureError(
                f"measure {measure!r}: {base} takes no _k cutoff; "
                + (f"write {base if _NAMES[base].at else fam}@{mu.group(2)}" if FAMILIES[fam].takes_cutoff else f"{fam} has no cutoff")
            )
        else:
            raise _unknown(head, measure)
    b = _Builder(measure, spec.family)
    for axis, value in spec.fixed:
        b.override(axis, value, head)
    if under_k is not None:
        if spec.dot == "each":
            b.set_param(spec.param, under_k)
        else:
            b.set_cutoff(_cutoff(under_k, measure))
    if rest.startswith("."):
        if spec.dot is None or under_k is not None:
            if head == "recip_rank":
                raise MeasureError(
                    f"measure {measure!r}: trec_eval accepts recip_rank.k but ignores k; write "
                    "recip_rank (no cutoff) or RR@k (reciprocal rank within the top k)"
                )
            raise MeasureError(f"measure {measure!r}: {head} takes no trec_eval .parameters")
        if level is not None and spec.dot not in ("ranx", "pairs_or_ranx"):
            raise MeasureError(f"measure {measure!r}: ranx's -l suffix does not combine with trec_eval .parameters")
        body = rest[1:]
        dot = spec.dot
        if dot == "pairs_or_ranx":
            dot = "pairs" if "=" in body else "ranx"
        if dot == "gains":
            b.override("gain", b._axis("gain", body), f"{head}.")
            return [b.build(spec, text.strip())]
        if dot == "whole":
            b.set_param(spec.param, body)
            return [b.build(spec, text.strip())]
        if dot == "pairs":
            for part in body.split(","):
                key, sep, value = part.partition("=")
                if not sep or FAMILIES[spec.family].parameter(key.strip()) is None:
                    own = ", ".join(p.name for p in FAMILIES[spec.family].parameters)
                    raise MeasureError(f"measure {measure!r}: expected {head}.NAME=VALUE with NAME "
                                       f"one of {own}, such as {head}.p=0.8; got {part!r}")
                b.set_param(key.strip(), value)
            return [b.build(spec, text.strip())]
        if dot == "ranx":  # ranx: rbp.95 is p = 0.95
            if not _re.fullmatch(r"\d+", body):
                raise MeasureError(f"measure {measure!r}: ranx reads {head}.DIGITS as 0.DIGITS, "
                                   f"such as {head}.95 for 0.95; got {body!r}")
            b.set_param(spec.param, "0." + body)
            rest = ""
        else:
            out = []
            values = body.split(",")
            if spec.dot == "each":
                parsed = [FAMILIES[spec.family].parameter(spec.param).parse(v, measure) for v in values]
                names = [f"{head}.{v.strip()}" for v in values]
            else:
                parsed = [_trec_cutoff(k, measure) for k in values]
                names = [f"{head}.{k}" for k in parsed]
            for value, name in zip(parsed, names):
                bk = _Builder(measure, spec.family)
                if spec.dot == "each":
                    bk.params[spec.param] = value
                else:
                    bk.set_cutoff(value)
                out.append(bk.build(spec, name if len(values) > 1 else text.strip()))
            return out
    if rest.startswith("("):
        if not spec.params:
            raise MeasureError(
                f"measure {measure!r}: {head} takes no (parameters); parameters go with the "
                "ir_measures names, such as nDCG(gain=exponential)@10"
            )
        if under_k is not None:
            raise MeasureError(f"measure {measure!r}: (parameters) do not combine with trec_eval's _k form")
        close = _matching_paren(rest, 0, measure)
        for key, value in _parse_params(rest[1:close], measure):
            b.param(key, value)
        rest = rest[close + 1:]
    if rest.startswith("@"):
        if under_k is not None:
            raise MeasureError(f"measure {measure!r}: cutoff given twice")
        at_param = FAMILIES[b.family].at
        if not spec.at:
            takes = FAMILIES[spec.family].takes_cutoff
            if not takes:
                raise MeasureError(f"measure {measure!r}: {spec.family} takes no cutoff")
            k = rest[1:].strip()
            alt = f"{head}_{k} or " if spec.under else ""
            raise MeasureError(f"measure {measure!r}: {head} takes no @k; write {alt}{spec.family}@{k}")
        if at_param is not None:  # IPrec@0.5: the recall level
            b.set_param(at_param, rest[1:])
        else:
            b.set_cutoff(_cutoff(rest[1:], measure))
        rest = ""
    if rest:
        raise MeasureError(
            f"measure {measure!r}: cannot read {rest!r} after {head!r}; expected @k, (key=value,...), "
            "_k or .k,k"
        )
    if level is not None:
        if not spec.level or under_k is not None or "(" in s:
            raise MeasureError(
                f"measure {measure!r}: the -lN suffix is ranx syntax and goes with ranx names "
                "(such as ndcg@10-l2); elsewhere write rel=N, such as P(rel=2)@5"
            )
        b.override("relevance_threshold", b._axis("relevance_threshold", str(level)), "-l")
        if FAMILIES[spec.family].kind == "graded":
            # ranx's -lN removes judgments below N before computing gains and the ideal too.
            b.override("threshold_scope", "graded", "-l")
    if not spec.bare and b.cutoff is None and not (spec.dot == "each" and b.params):
        raise MeasureError(f"measure {measure!r}: {spec.bare_error}")
    return [b.build(spec, text.strip())]


def parse_measure(text: str) -> Measure:
    """Read one measure name (ir_measures, trec_eval or ranx syntax); see :func:`parse_measures`.

    A trec_eval item that names several measures (``P.5,10``) is refused here: it is not one.
    """
    if not isinstance(text, str):
        raise MeasureError(f"a measure name must be text, got {type(text).__name__}")
    try:
        items = _group_items(text)
    except MeasureError:
        items = [text]  # let _parse_one say what is wrong with it
    if len(items) > 1:
        raise MeasureError(
            f"{text.strip()!r} is a list of {len(items)} measures; read it with parse_measures"
        )
    out = _parse_one(text)
    if len(out) != 1:
        raise MeasureError(
            f"measure {text.strip()!r} names {len(out)} measures; read it with parse_measures"
        )
    return out[0]


def _group_items(text: str) -> list[str]:
    """Top-level comma pieces, with trec_eval's parameter lists put back together.

    A piece that does not start with a letter cannot be a name: it continues the trec_eval
    ``.params`` item before it (``ndcg_cut.5,10``, ``ndcg.1=3,2=9``).
    """
    items: list[str] = []
    for piece in _split_top(text):
        p = piece.strip()
        if not p:
            raise MeasureError(f"empty measure name in {text.strip()!r}")
        if p[0].isalpha() or _head_of(p) in _NAMES:  # 11pt_avg starts with a digit
            items.append(p)
            continue
        prev = items[-1] if items else ""
        h = _HEAD.match(prev)
        if h and prev[h.end():].startswith("."):
            items[-1] = prev + "," + p
            continue
        raise MeasureError(
            f"{p!r} in {text.strip()!r} is not a measure name; a bare number only continues a "
            "trec_eval parameter list, such as ndcg_cut.5,10"
        )
    return items


def parse_measures(text: str | list[str] | tuple[str, ...]) -> list[Measure]:
    """Read a comma-separated list of measure names, in any mix of three syntaxes.

    - ir_measures: ``nDCG@10``, ``P(rel=2)@5``, ``nDCG(dcg='exp-log2')@10``, ``RBP(p=0.8)``,
      and any convention axis as a parameter: ``nDCG(gain=exponential,discount=jarvelin)@10``
      (quote values that hold commas: ``nDCG(gain='0:0,1:1,2:3')``).
    - trec_eval: ``ndcg_cut_10``, ``ndcg_cut.10``, ``P_5``, ``map``, ``recip_rank``,
      ``ndcg.1=3,2=9`` (a custom gain map), ``num_rel_ret``...
    - ranx: ``ndcg@10``, ``ndcg_burges@10``, ``mrr@10``, ``hit_rate@5``, ``r-precision``, and
      the ``-lN`` suffix (``ndcg@10-l2``).

    Commas inside parentheses, braces or quotes belong to the parameters. A comma-separated piece
    that does not start with a letter continues the trec_eval ``.params`` item before it, as in
    ``trec_eval -m``: ``"ndcg_cut.5,10,map"`` is nDCG@5, nDCG@10 and AP, spelled ``ndcg_cut.5``,
    ``ndcg_cut.10`` and ``map``; ``"ndcg.1=3,2=9,P_5"`` is one nDCG with gains 1:3,2:9 and P@5.
    ``text`` may also be a list of such strings. The same spelling twice is an error (output is
    keyed by spelling).

    What the names fix (``Measure.overrides``): ``rel=N`` and ranx's ``-lN`` fix
    ``relevance_threshold``; ranx's ``-lN`` on ``ndcg``/``dcg`` also fixes
    ``threshold_scope=graded``, because ranx drops judgments below N before computing gains and
    the ideal (checked live on ranx 0.3.21); ``dcg='exp-log2'``, ``_burges`` fix
    ``gain=exponential``; ``dcg='log2'`` is ir_measures' default and fixes nothing; ``gains={..}``
    and trec_eval's ``ndcg.1=3,2=9`` fix a custom gain map. Everything else is left to the profile.

    Parameters of a family (``Family.parameters``) are read as ``NAME(p=0.8)``, after ``@`` for
    a family's ``at`` parameter (``IPrec@0.5``), in trec_eval's forms (``Rprec_mult.0.2,0.4``
    one measure each, ``Rprec_mult_0.20``, ``11pt_avg.0.2,0.8`` one list, ``rbp.p=0.95``) and
    ranx's ``rbp.95``; a spelling may stand for its library's defaults (trec_eval's ``rbp`` is
    p = 0.9, ir_measures' ``RBP`` p = 0.8). trec_eval's cutoff lists are read as trec_eval
    reads them, with C's ``atol``: ``ndcg_cut.23.4`` is nDCG@23. A cutoff may be any positive
    integer (``P@99999999999999999999``). Bare ranx ``precision`` and ``f1`` are P and F1 over
    the whole list (the set measures: trec_eval's set_P, set_F); ``hits@k`` is the family Hits.

    Refused on purpose, each with a message saying why and what to write instead:

    - a bare trec_eval cutoff name (``P``, ``ndcg_cut``, ``map_cut``, ``success``,
      ``iprec_at_recall``, ``Rprec_mult``): trec_eval reads it as its default cutoffs or levels;
      name them. Bare ``recall`` is also ambiguous (ranx: the whole list, trec_eval: nine
      cutoffs; write ``R`` or ``SetR`` for the former). ``recip_rank.10``: trec_eval accepts and
      ignores the 10.
    - ``judged_only=``: no convention drops unjudged documents from a ranking.
    - ``duplicates=`` inside a name: it is settled once when the run is read.
    - a parameter without a default left out (``IPrec`` needs its level, ``RBP`` its p, ``T``
      its weight of a non-relevant document, the C/W/L measures ``max_rel``).
    - ``rel=`` on nDCG/DCG (ir_measures has none; write the two axes explicitly).
    - a cutoff that is not a positive integer.
    - the names of measures that need more than a run and qrels (diversity measures, trec_eval's
      preference and judgment-group measures): ``_UNSUPPORTED`` says why.
    """
    texts = [text] if isinstance(text, str) else list(text)
    out: list[Measure] = []
    seen: set[str] = set()
    for t in texts:
        if not isinstance(t, str):
            raise MeasureError(f"a measure name must be text, got {type(t).__name__}")
        if not t.strip():
            raise MeasureError("no measure given")
        for item in _group_items(t):
            for m in _parse_one(item):
                if m.text in seen:
                    raise MeasureError(f"measure {m.text!r} is listed twice")
                seen.add(m.text)
                out.append(m)
    return out


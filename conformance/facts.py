"""The facts behind a library entry's profile, read from where they are stated once: its adapter.

An adapter declares each profile value beside the evidence for it, as a comment on the line
that sets it or on the comment lines above it::

    ideal="retrieved",  # _ndcg_sample_scores: normalizing_gain = _dcg_sample_scores(y_true, y_true)
    # gain=linear (the default): _dcg_sample_scores: discount.dot(y_true ranked): gain = label

(an axis set to a value, ``axis="value"`` in a call, with its comment; or a comment line
``# axis=value: fact``, which states why an axis keeps a value the code does not set). This module
finds those statements in the entry's module and in the modules its profiles build on
(``conventions.TREC_EVAL`` and the other adapters it imports from), so ``conformance libs
--profile NAME`` can print each value with its evidence without a second table that could fall
out of step. A value with no statement is reported as such, never invented; the guard test
(``tests/libs/test_facts.py``) fails when an entry sets an axis a family reads to a value other
than the vocabulary's default without a stated fact.

    >>> from conformance.facts import facts
    >>> rows = {r.axis: r for r in facts("sklearn", "nDCG@10")}
    >>> rows["ideal"].value, rows["ideal"].default
    ('retrieved', False)
    >>> "_ndcg_sample_scores" in rows["ideal"].fact
    True
"""

from __future__ import annotations

import importlib
import inspect
import io
import re
import sys
import tokenize
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from conformance.conventions import AXES, Conventions
from conformance.measures import FAMILIES, Measure, parse_measure
from conformance.profiles import COMMAND_LINE, entry_named, profile

_DEFAULT = Conventions()
# "# axis=value: fact" or "# axis=value (the default): fact"
_SETS_AXIS = re.compile(r"\b(" + "|".join(AXES) + r")\s*=")
_COMMENT_FACT = re.compile(r"#\s*([a-z_]+)=([^\s:(),]+)\s*(?:\(the default\))?\s*:\s*(.+)")


_LAYOUT = {tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT}


@dataclass(frozen=True)
class Fact:
    """One axis of a profile: its value, whether it is the vocabulary's default, and the stated
    evidence (``fact``: the comment's text, ``where``: ``module:line``; both None when the source
    states none)."""

    axis: str
    value: str
    default: bool
    read: bool
    fact: str | None
    where: str | None


@dataclass(frozen=True)
class _Statement:
    axis: str
    value: str | None  # None: set by an expression, not a literal
    text: str
    where: str


def _comment_text(token: str) -> str:
    return token.lstrip("#").strip()


@lru_cache(maxsize=None)
def _statements(path: str, module: str) -> tuple[_Statement, ...]:
    """Every axis statement in one source file, in file order."""
    source = Path(path).read_text(encoding="utf-8")
    lines = source.splitlines()
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    out: list[_Statement] = []
    # comment-only lines, by line number: the blocks a statement above or below can use
    comment_only = {i + 1: line.strip() for i, line in enumerate(lines) if line.strip().startswith("#")}

    def block_after(line: int) -> list[str]:
        more = []
        n = line + 1
        while n in comment_only and not _COMMENT_FACT.match(comment_only[n]):
            more.append(_comment_text(comment_only[n]))
            n += 1
        # a block that ends on a line setting an axis with no comment of its own is that
        # line's statement, not the continuation of this one
        if more and n <= len(lines) and _SETS_AXIS.search(lines[n - 1]) and "#" not in lines[n - 1]:
            return []
        return more

    def block_before(line: int) -> list[str]:
        above = []
        n = line - 1
        while n in comment_only and not _COMMENT_FACT.match(comment_only[n]):
            above.append(_comment_text(comment_only[n]))
            n -= 1
        return above[::-1]

    for n, text in comment_only.items():
        m = _COMMENT_FACT.match(text)
        if m and m.group(1) in AXES:
            body = " ".join([m.group(3).strip(), *block_after(n)])
            out.append(_Statement(m.group(1), m.group(2).strip("'\""), body, f"{module}:{n}"))

    # the first line of each logical line: a statement with no comment of its own can rest on
    # the block above the whole statement (TREC_EVAL = Conventions(..., on several lines)
    starts: dict[int, int] = {}
    first = None
    for tok in tokens:
        if first is None and tok.type not in _LAYOUT:
            first = tok.start[0]
        if first is not None:
            for n in range(tok.start[0], tok.end[0] + 1):
                starts.setdefault(n, first)
        if tok.type == tokenize.NEWLINE:
            first = None

    for i, tok in enumerate(tokens[:-2]):
        eq, val = tokens[i + 1], tokens[i + 2]
        if tok.type == tokenize.NAME and tok.string in AXES and eq.string == "=":
            axis = tok.string
        elif (tok.type == tokenize.STRING and tok.string.strip("'\"") in AXES
              and eq.string == ":"):
            axis = tok.string.strip("'\"")  # {"negative_labels": "keep"}: a dict of overrides
        else:
            continue
        if eq.type != tokenize.OP:
            continue
        j = i - 1
        while j >= 0 and tokens[j].type in _LAYOUT:
            j -= 1
        prev = tokens[j] if j >= 0 else None
        if prev is None or prev.type != tokenize.OP or prev.string not in "(,{":
            continue  # an assignment or a comparison, not a keyword argument
        line = tok.start[0]
        value = None
        if val.type == tokenize.STRING and val.string[:1] in "'\"":
            value = val.string.strip("'\"")
        elif val.type == tokenize.NAME and val.string == "None":
            value = "None"
        trailing = [t for t in tokens if t.type == tokenize.COMMENT and t.start[0] == line]
        if trailing:
            parts = [_comment_text(trailing[0].string), *block_after(line)]
        else:
            parts = block_before(line) or block_before(starts.get(line, line))
        if parts:
            out.append(_Statement(axis, value, " ".join(parts), f"{module}:{line}"))
    return tuple(out)


def _sources(entry) -> list[tuple[str, str]]:
    """(path, module) of the entry's adapter, then of the adapters and vocabulary its profiles
    build on (what the module imports from ``conformance.libs`` and ``conformance.conventions``)."""
    first = sys.modules[type(entry).__module__]
    seen = [first]
    for name in re.findall(r"^from (conformance\.libs\.\w+|conformance\.conventions) import",
                           inspect.getsource(first), flags=re.M):
        mod = importlib.import_module(name)
        if mod not in seen:
            seen.append(mod)
    return [(inspect.getsourcefile(m), m.__name__) for m in seen]


def _best(statements: list[_Statement], axis: str, value: str) -> _Statement | None:
    # None is spelt "none" in the comments, as on the command line
    exact = [s for s in statements if s.axis == axis and s.value is not None
             and (s.value == value or s.value.lower() == value.lower() == "none")]
    if exact:
        return exact[0]
    computed = [s for s in statements if s.axis == axis and s.value is None]
    return computed[0] if computed else None


def facts(name: str, measure: Measure | str) -> list[Fact]:
    """Each axis of profile ``name`` for ``measure`` (every axis, in axis order) with the fact
    stated for its value. A command-line profile (``trec_eval10``) states its facts in its
    description: each axis where it differs from trec_eval's entry points there."""
    conv = profile(name, measure)
    m = measure if isinstance(measure, Measure) else parse_measure(measure)
    read = set(FAMILIES[m.family].axes)
    if name in COMMAND_LINE:
        # where the command line differs from trec_eval's entry, its description says why;
        # elsewhere the entry's facts hold for it
        cl = COMMAND_LINE[name]
        rows = []
        for entry_row in facts("trec_eval", m):
            value = str(getattr(conv, entry_row.axis))
            if value == entry_row.value:
                rows.append(entry_row)
            else:
                rows.append(Fact(entry_row.axis, value, value == str(getattr(_DEFAULT, entry_row.axis)),
                                 entry_row.read, cl.description, "conformance.profiles"))
        return rows
    entry = entry_named(name)
    statements = [s for path, mod in _sources(entry) for s in _statements(path, mod)]
    rows = []
    for axis in AXES:
        value = str(getattr(conv, axis))
        found = _best(statements, axis, value)
        rows.append(Fact(axis, value, value == str(getattr(_DEFAULT, axis)), axis in read,
                         found.text if found else None, found.where if found else None))
    return rows

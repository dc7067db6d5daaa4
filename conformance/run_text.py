"""The answer of ``conformance run`` as text: the agreement classes first, then the counts.

What :func:`render` prints, and ``str(result)`` of :func:`conformance.compare` gives:

1. One table per measure. On one case (the user's files) each case x measure is a table: one
   line per agreement class, its value (the mean of its first entry and the queries it
   scored, or ``error``), its label and its entries. On several cases (the corpus, whose cases
   spell 37 measures) one table per measure family, every cutoff together: one line per group
   of entries that are set apart from the base class by the same conventions over the cases
   (with the number of case x measure rows each convention explains), values per case being
   the ``details`` tables'. The base class is trec_eval's, or that of the entry ``--profile``
   names (``RunResult.anchor``); a label names what sets a class apart from it. On several
   cases the tables open with the class matrix, one line per entry and one column per family
   (``=`` the base class on every row, a letter the family's group of that letter, ``.`` no
   value): every entry's standing on every measure on one screen (35 entries: 39 lines).
2. A class whose mean prints as an earlier class's (``0.5640`` beside ``0.5640``) while its
   values differ names the queries that differ and by how much (the first three, then how many
   more), against the first such class.
3. The entries that ran and any that could not (with why), the unexplained findings in full
   (an entry that does not match its own profile gives the library's and the reference's
   per-query values), every library error that is not a documented failure (one line each,
   cut at the line's length; whole with ``details``), and last the summary line, which says
   when entries asked for could not run.

``details``: the per case x measure tables on the corpus too. The explanations between pairs
of non-base classes are ``conformance.summary``'s (the command line prints them after these
with ``--details``); the JSON document and the HTML report hold everything.
"""

from __future__ import annotations

import textwrap
from collections import defaultdict

from conformance.measures import parse_measure

WIDTH = 100  # a line's length: entry lists wrap under their label
SHOWN_QUERIES = 3  # queries named when a class's mean prints equal to the base class's


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _mean_text(mean) -> str:
    return "nan" if mean is None or mean != mean else f"{mean:.4f}"


def _apart_text(apart: dict) -> str:
    return ", ".join(f"{a}={v}" for a, v in apart.items())


def class_label(cls: dict, anchor: str = "trec_eval") -> str:
    """What sets a class of ``RunResult.table()`` apart from the base class."""
    if cls["known"]:
        return "failed as the library documents"
    if cls["base"]:
        for name in (anchor, "trec_eval"):
            if any(e["entry"] == name for e in cls["entries"]):
                return f"{name}'s class"
        return "first class"
    if not cls["explained"]:
        return "apart, by no convention found (unexplained)"
    return "apart by " + _apart_text(cls["apart"])


def _wrapped(head: str, names: list[str], indent: int) -> list[str]:
    return textwrap.wrap(head + ", ".join(names), WIDTH, subsequent_indent=" " * indent,
                         break_on_hyphens=False, break_long_words=False)


def differing_queries(ours: dict, base: dict, tol: float, other: str = "the other") -> list[tuple[str, str]]:
    """(query, how it differs) for every query on which two per-query maps differ beyond
    ``tol``: ``0.5000 vs 0.6309 (-0.1309)``, or in which one only (``other`` names the
    second map's entry)."""
    out = []
    for q in sorted(set(ours) | set(base)):
        if q not in base:
            out.append((q, f"{ours[q]:.4f}, not scored by {other}"))
        elif q not in ours:
            out.append((q, f"not scored ({other}: {base[q]:.4f})"))
        else:
            a, b = ours[q], base[q]
            if (a != a) != (b != b) or (a == a and b == b and abs(a - b) > tol):
                if a != a or b != b:
                    out.append((q, f"{a:.4f} vs {b:.4f}"))
                    continue
                # as many decimals as it takes for the two to print apart (rounding=5 against
                # full precision differs past the fourth)
                d = next((d for d in range(4, 18) if f"{a:.{d}f}" != f"{b:.{d}f}"), 17)
                gap = a - b
                out.append((q, f"{a:.{d}f} vs {b:.{d}f} ({gap:+.4f})" if abs(gap) >= 5e-5
                            else f"{a:.{d}f} vs {b:.{d}f} ({gap:+.1e})"))
    return out


def _equal_means_note(cls: dict, shown: list[dict], comparison, anchor: str) -> str | None:
    """For a class whose mean prints as an earlier class's, the queries on which they differ."""
    mine = cls["entries"][0]
    if mine["error"] is not None:
        return None
    for other in shown:
        theirs = other["entries"][0]
        if theirs["error"] is not None or _mean_text(mine["mean"]) != _mean_text(theirs["mean"]):
            continue
        diffs = differing_queries(comparison.per_query.get(mine["entry"]) or {},
                                  comparison.per_query.get(theirs["entry"]) or {},
                                  comparison.tolerance, theirs["entry"])
        if not diffs:
            continue
        listed = "; ".join(f"{q} {how}" for q, how in diffs[:SHOWN_QUERIES])
        more = f"; and {len(diffs) - SHOWN_QUERIES} more" if len(diffs) > SHOWN_QUERIES else ""
        return (f"the mean prints as {theirs['entry']}'s ({class_label(other, anchor)}); apart on "
                f"{_plural(len(diffs), 'query', 'queries')}: {listed}{more}")
    return None


def case_tables(result, rows: list[dict] | None = None) -> list[str]:
    """One table per case x measure: a line per class (value, label, entries)."""
    rows = result.table() if rows is None else rows
    by_key = {(c.case, c.metric): c for c in result.comparisons}
    lines: list[str] = []
    for row in rows:
        comparison = by_key[(row["case"], row["metric"])]
        n = sum(len(cls["entries"]) for cls in row["classes"])
        lines.append(f"{row['metric']} on {row['case']}: "
                     f"{_plural(len(row['classes']), 'class', 'classes')} among "
                     f"{_plural(n, 'entry', 'entries')}")
        if "reference" in row:
            lines.append(_reference_line(row["reference"], row, result.anchor))
        shown: list[dict] = []
        for cls in sorted(row["classes"], key=lambda cls: not cls["base"]):
            first = cls["entries"][0]
            if first["error"] is not None:
                value = "error".ljust(6 + 2 + 11)
            else:
                value = f"{_mean_text(first['mean']):>6}  {_plural(first['queries'], 'query', 'queries'):<11}"
            head = f"  {value}  [{class_label(cls, result.anchor)}] "
            lines += _wrapped(head, [e["entry"] for e in cls["entries"]], 6)
            note = _equal_means_note(cls, shown, comparison, result.anchor)
            shown.append(cls)
            if note:
                lines += textwrap.wrap(note, WIDTH, initial_indent=" " * 6, subsequent_indent=" " * 8)
        lines.append("")
    return lines


def _reference_line(ref: dict, row: dict, anchor: str) -> str:
    """The reference under the user's conventions, and the class it agrees with."""
    own = _apart_text(ref["set"])
    under = ref["profile"] + (f" with {own}" if own else "")
    if ref["error"] is not None:
        return f"  reference under {under}: error: {' '.join(ref['error'].split())}"
    lo, hi = ref["mean"], ref["high"]
    value = "nan" if lo != lo else (f"{lo:.4f}" if lo == hi else f"{lo:.4f} to {hi:.4f}")
    where = ("in no class: no entry computes this under these conventions" if ref["class"] is None
             else f"as [{class_label(row['classes'][ref['class']], anchor)}]")
    return (f"  reference under {under}: {value}  ({_plural(ref['queries'], 'query', 'queries')}), "
            f"{where}")


def family_of(metric: str) -> str:
    try:
        return parse_measure(metric).family
    except Exception:  # a name only a library spells: its own table
        return metric


def _family_groups(result, rows: list[dict]) -> list[dict]:
    """Per measure family over every case: the entries grouped by what sets them apart from the
    base class, with the case x measure rows each reason covers. Each group: its ``mark`` (the
    reasons that cover as many rows as an entry's most frequent one; empty for the base class
    on every row), its ``names``, its ``label`` and its ``letter`` (``=`` for the base)."""
    by_family: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_family[family_of(row["metric"])].append(row)
    out = []
    for family, frows in by_family.items():
        # entry -> reason -> rows it covers; reasons: "axis=value", "unexplained", "error", ...
        why: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        seen: list[str] = []
        for r in frows:
            for cls in r["classes"]:
                for e in cls["entries"]:
                    name = e["entry"]
                    if name not in seen:
                        seen.append(name)
                    if cls["base"]:
                        continue
                    if cls["known"]:
                        why[name]["failed as the library documents"] += 1
                    elif not cls["explained"]:
                        why[name]["unexplained"] += 1
                    else:
                        for a, v in cls["apart"].items():
                            why[name][f"{a}={v}"] += 1
        # an entry's mark: the reasons that cover as many rows as its most frequent one (its
        # other, rarer reasons are counted; --details shows them case by case); entries that
        # share a mark share a group, with the range of rows each reason covers among them
        marks: dict[tuple, list[str]] = defaultdict(list)
        for name in seen:
            top = max(why[name].values(), default=0)
            marks[tuple(sorted(r for r, n in why[name].items() if n == top))].append(name)
        groups = []
        for mark, names in sorted(marks.items(), key=lambda kv: (bool(kv[0]), -len(kv[1]), kv[0])):
            if not mark:
                who = (f"{result.anchor}'s class" if result.anchor in seen else
                       f"the first class (no {result.anchor} here)")
                label = f"{who} on every row"
            else:
                spans = []
                for r in sorted(mark, key=lambda r: -max(why[n][r] for n in names)):
                    lo, hi = min(why[n][r] for n in names), max(why[n][r] for n in names)
                    spans.append(f"{r} ({lo}{'' if lo == hi else f'-{hi}'})")
                rest = sum(1 for n in names for r in why[n] if r not in mark)
                label = ("apart by " + ", ".join(spans)
                         + (f"; {rest} rarer reason{'s' if rest != 1 else ''}" if rest else ""))
            letter = "=" if not mark else _letter(sum(1 for g in groups if g["mark"]))
            groups.append({"mark": mark, "names": names, "label": label, "letter": letter})
        spellings = list(dict.fromkeys(r["metric"] for r in frows))
        out.append({"family": family, "spellings": spellings, "rows": len(frows),
                    "cases": len({r["case"] for r in frows}),
                    "agree": sum(1 for r in frows if len(r["classes"]) == 1), "groups": groups})
    return out


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _letter(i: int) -> str:
    """The i-th class's mark: a-z, then aa, ab, ... (a family can have more than 26 classes)."""
    return _LETTERS[i] if i < len(_LETTERS) else _letter(i // len(_LETTERS) - 1) + _LETTERS[i % len(_LETTERS)]


def _family_head(f: dict) -> str:
    sp = f["spellings"]
    shown = ", ".join(sp[:4]) + (f", ... ({len(sp)} spellings)" if len(sp) > 4 else "")
    return (f"{f['family']} ({shown}) on {_plural(f['cases'], 'case')}, {f['rows']} rows: every "
            f"entry that ran agrees on {f['agree']}")


def class_matrix(result, families: list[dict]) -> list[str]:
    """One line per entry that gave a value of some family shown, one column per measure family:
    the entry's class over the family's case x measure rows (``=`` the base class on every row,
    a letter the family's group of that letter below, ``.`` no value of that family); entries
    next to each other with the same classes share a line (``xgboost, xgboost:ndcg-``) while
    their names fit beside the columns within :data:`WIDTH`; the entries that ran and gave none
    are named in one line after the key."""
    ran = [e.name for e in result.entries if result.available[e.name]]
    cell: dict[tuple[str, str], str] = {}
    for f in families:
        for g in f["groups"]:
            for n in g["names"]:
                cell[(n, f["family"])] = g["letter"]
    names = [n for n in ran if any((n, f["family"]) in cell for f in families)]
    title = "agreement classes:"
    columns = "  ".join(f["family"] for f in families)
    room = max([WIDTH - len(columns) - 2, len(title)] + [len(n) for n in names])
    rows: list[tuple[list[str], tuple[str, ...]]] = []
    for n in names:
        marks = tuple(cell.get((n, f["family"]), ".") for f in families)
        if rows and rows[-1][1] == marks and len(", ".join(rows[-1][0] + [n])) <= room:
            rows[-1][0].append(n)
        else:
            rows.append(([n], marks))
    width = max([len(", ".join(ns)) for ns, _ in rows] + [len(title)]) + 2
    # the title heads the families' column, and the key follows the rows, so that the summary,
    # the header and the entries' lines are all the first screen holds before them
    # (tests/cli/test_run_corpus.py: 50 lines)
    lines = [title.ljust(width) + columns]
    for ns, marks in rows:
        lines.append(", ".join(ns).ljust(width) + "  ".join(m.ljust(len(f["family"]))
                                                           for m, f in zip(marks, families)).rstrip())
    lines += [f"('=': {result.anchor}'s class on every row, or the first class where {result.anchor} "
              "has none;",
              "'a', 'b', ...: the family's classes below; '.': no value)"]
    silent = [n for n in ran if n not in names]
    if silent:
        lines += textwrap.wrap("ran without a value of these families: " + ", ".join(silent), WIDTH,
                               break_on_hyphens=False, break_long_words=False)
    return lines + [""]


def family_tables(result, rows: list[dict] | None = None) -> list[str]:
    """The class matrix, then one table per measure family over every case: a line per group of
    entries set apart from the base class by the same conventions, with its letter and the case
    x measure rows each reason covers (the matrix names the entries of each letter)."""
    rows = result.table() if rows is None else rows
    families = _family_groups(result, rows)
    lines = class_matrix(result, families)
    for f in families:
        lines.append(_family_head(f))
        for g in f["groups"]:
            if g["mark"]:
                lines += textwrap.wrap(f"  {g['letter']}  {g['label']}", WIDTH, subsequent_indent=" " * 5,
                                       break_on_hyphens=False, break_long_words=False)
        lines.append("")
    return lines


def _unexplained(result) -> list[str]:
    lines = []
    found = [(c, u) for c in result.comparisons for u in c.unexplained]
    if not found:
        return lines
    lines.append(f"UNEXPLAINED ({len(found)}):")
    for c, u in found:
        who = u.get("entry") or " vs ".join(u.get("between", []))
        lines.append(f"  ! {c.case} / {c.metric}: {who}: {u['reason']}")
        if "entry" in u:
            lines.append(f"      library:   {u['library']}")
            lines.append(f"      reference: {u['reference']}")
        else:
            vals = ", ".join(f"{n}={_mean_text(c.values.get(n)) if c.values.get(n) is not None else 'error'}"
                             for n in u["between"])
            lines.append(f"      values: {vals}; profiles differ on: {', '.join(u['differing_axes'])}")
    lines.append("")
    return lines


def _errors(result, details: bool = False) -> list[str]:
    """Every library error that is not a documented failure, whole: once per text, with the
    entries that raised it and where (the first few places; every place with ``details``)."""
    where: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for c in result.comparisons:
        for name, text in c.errors.items():
            if name not in c.known_failures:
                where[" ".join(text.split())][name].append(f"{c.case}/{c.metric}")
    if not where:
        return []
    lines = [f"library errors ({len(where)} distinct" + (
        ", every entry's error whole in --json):" if details else
        ", one line each; whole with --details and in --json):")]
    for text, by in where.items():
        places = list(dict.fromkeys(p for at in by.values() for p in at))
        at = (", ".join(places) if details else
              places[0] + (f" and {len(places) - 1} more" if len(places) > 1 else ""))
        if details:
            lines += textwrap.wrap(f"  {text} -- {', '.join(by)} on {at}", WIDTH,
                                   subsequent_indent="      ", break_on_hyphens=False)
        else:  # who and where first: the cut takes the end of the message
            line = f"  {', '.join(by)} on {at}: {text}"
            lines.append(line if len(line) <= WIDTH else line[:WIDTH - 3] + "...")
    lines.append("")
    return lines


def missing(result) -> list[tuple[str, str]]:
    """(entry, why) for every entry of the run that could not be used."""
    out = []
    for e in result.entries:
        if not result.available[e.name]:
            st = result.status.get(e.name)
            out.append((e.name, st.describe() if st is not None else "unavailable"))
    return out


def summary_line(result, named: list[str] = ()) -> str:
    s = result.summary
    ran = sum(1 for e in result.entries if result.available[e.name])
    text = (f"{s['comparisons']} case x measure comparisons by {_plural(ran, 'entry', 'entries')}; "
            f"{s['disagreements']} disagreeing pairs examined, {s['explained']} of them explained "
            f"by conventions; {s['unexplained']} unexplained findings")
    gone = [n for n, _ in missing(result)]
    if gone:
        asked = [n for n in gone if n in set(named)]
        text += (f"; {len(gone)} of {len(result.entries)} entries could not run"
                 + (f", {len(asked)} of them named in --libs" if asked else ""))
    return text


def render(result, details: bool = False, named: list[str] = ()) -> str:
    """The text ``conformance run`` prints (module docstring)."""
    rows = result.table()
    single = len({r["case"] for r in rows}) <= 1
    # the answer in one line first, the class matrix right under it: with 52 entries the
    # summary, the header, the entries' lines and the key fill the first screen's 50 lines
    lines = [] if single else [summary_line(result, named)]
    if single:
        lines += case_tables(result, rows)
    elif details:  # the matrix first, then every case's table
        lines += class_matrix(result, _family_groups(result, rows)) + case_tables(result, rows)
    else:
        lines += family_tables(result, rows)
    ran = [e.name for e in result.entries if result.available[e.name]]
    if details or len(ran) < len(result.entries):
        lines += _wrapped(f"entries that ran ({len(ran)}): ", ran, 2)
    else:
        lines.append(f"entries: all {len(ran)} selected ran (--details lists them)")
    for name, why in missing(result):
        lines += textwrap.wrap(f"  could not run: {name}: {why}", WIDTH, subsequent_indent="    ")
    lines.append("")
    lines += _unexplained(result)
    lines += _errors(result, details)
    if not details:
        lines.append("--details: the explanations between every pair of classes"
                     + ("" if single else " and every case's table")
                     + "; --json, --html: everything")
    lines.append(summary_line(result, named))
    return "\n".join(lines)

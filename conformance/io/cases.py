"""The edge-case corpus: small ranked lists on which ranking-metric conventions part, as data.

The corpus ships inside the package, in ``conformance/cases_data/``: one JSON file per *family*
of cases (``ties.json``, ``labels.json``, ...). :func:`load_cases` reads every ``*.json`` file of
a directory (the bundled corpus by default) and returns validated :class:`Case` values whose
``qrels`` and ``run`` are the columnar :class:`~conformance.io.data.Qrels` and
:class:`~conformance.io.data.Run` every other module consumes.

File format
-----------

::

    {"family": "ties",                       # must equal the file name without .json
     "cases": [
       {"name": "ties-top-two",              # unique in the whole corpus, kebab-case [a-z0-9-]
        "description": "One sentence on what the case shows.",
        "tags": ["ties"],                    # the convention axes it exercises (may be empty)
        "single_axis": "ties",               # or null / absent, see below
        "metrics": ["P@1", "RR"],            # optional: measure names (any syntax parse_measures
                                             #   reads); DEFAULT_METRICS when absent
        "base": {"ideal": "retrieved"},      # optional: axis -> value over the trec_eval profile
        "axis_values": ["docid_desc", "docid_asc"],   # optional, only with single_axis
        "qrels": {"q1": {"a": 0, "b": 1}},   # qid -> {docid: label}; labels are finite numbers
        "run": {"q1": [["a", 1.0], ["b", 1.0]]}       # qid -> [[docid, score], ...] in listing
                                                      #   order, or [[docid, score, rank], ...]
       }]}

- Listing order is input order: the order of a query's rows in ``run`` (and of the queries in the
  ``run`` object) is the order the run lists them, which is what the ``input_order`` and
  ``reverse_input`` tie rules see. A case's rows either all carry a rank or none does.
- A query may appear in the run and not in the qrels or the other way round (that is what the
  ``query_set`` cases are about), but a query listed with no rows (``"q1": {}`` or ``"q1": []``)
  is refused: the columnar types cannot hold it, and dropping it silently would change the query
  set. A docid may appear twice in one query of the run (the ``duplicates`` cases), never twice
  in one query of the qrels (a JSON object with a repeated key is refused, not read last-wins).
- ``single_axis`` claims that switching that axis alone changes the value of every metric in
  ``metrics``: with every other axis held at :data:`conformance.conventions.TREC_EVAL` updated
  by ``base``, at least two of the compared values of the axis give different mean values under
  the reference (``tests/io/test_cases.py`` checks every claim). The compared values are
  ``axis_values`` when given, else every named value of the axis; axes with open values
  (``relevance_threshold``, ``depth``) need ``axis_values``. ``single_axis`` must also be in
  ``tags``.
- ``base`` and ``axis_values`` use the public value texts of ``conformance.conventions.AXES``
  (``depth`` may be ``null`` for ``none``; integers may be JSON numbers).
- Unknown keys are refused, so a misspelt field cannot silently fall back to a default.

Every problem raises :class:`~conformance.errors.InputError` naming the file and the case.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from conformance.conventions import AXES, TREC_EVAL, ConventionError, Conventions, format_value
from conformance.io.data import Qrels, Run
from conformance.errors import InputError
from conformance.measures import Measure, MeasureError, parse_measures

DEFAULT_METRICS: tuple[str, ...] = (
    "nDCG@5", "nDCG@10", "nDCG", "DCG@5", "AP", "AP@5", "RR", "RR@5",
    "P@5", "P@10", "R@5", "R@10", "Success@1", "Rprec",
)

# The package directory holding the bundled corpus (shipped as package data).
DATA_PACKAGE_DIR = "cases_data"

_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_FAMILY = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)*")
_REQUIRED = ("name", "description", "tags", "qrels", "run")
_OPTIONAL = ("single_axis", "metrics", "base", "axis_values")
_KEY_ORDER = ("name", "description", "tags", "single_axis", "metrics", "base", "axis_values",
              "qrels", "run")


@dataclass(eq=False)
class Case:
    """One case of the corpus. ``base`` and ``axis_values`` hold stored axis values (as
    :class:`~conformance.conventions.Conventions` holds them: ``None`` for depth ``none``)."""

    name: str
    description: str
    tags: tuple[str, ...]
    single_axis: str | None
    metrics: list[str]
    qrels: Qrels
    run: Run
    family: str
    source: str  # path of the file the case was read from
    base: dict[str, Any] = field(default_factory=dict)
    axis_values: tuple[Any, ...] | None = None

    @property
    def measures(self) -> list[Measure]:
        """``metrics`` read as :class:`~conformance.measures.Measure` values."""
        return parse_measures(list(self.metrics))

    def conventions(self, profile: Conventions = TREC_EVAL) -> Conventions:
        """``profile`` (the trec_eval profile by default) with the case's ``base`` applied."""
        return profile.replace(**self.base) if self.base else profile

    def compared_values(self) -> tuple[Any, ...]:
        """The values of ``single_axis`` between which the case claims the metrics change."""
        if self.single_axis is None:
            return ()
        if self.axis_values is not None:
            return self.axis_values
        return tuple(AXES[self.single_axis].parse(v) for v in AXES[self.single_axis].values)


def default_directory() -> Path:
    """The bundled corpus: ``conformance/cases_data`` of the installed package."""
    return Path(str(resources.files("conformance").joinpath(DATA_PACKAGE_DIR)))


def load_cases(directory: str | Path | None = None) -> list[Case]:
    """Every case of every ``*.json`` family file in ``directory`` (default: the bundled
    corpus), files in name order and cases in file order.

    Raises InputError (naming the file and the case) on any malformed file or case, and when two
    cases anywhere in the directory share a name.
    """
    root = default_directory() if directory is None else Path(directory)
    if not root.is_dir():
        raise InputError(str(root), "not a directory of case files")
    files = sorted(root.glob("*.json"))
    if not files:
        raise InputError(str(root), "holds no *.json case files")
    out: list[Case] = []
    seen: dict[str, str] = {}
    for path in files:
        for case in load_file(path):
            if case.name in seen:
                raise InputError(
                    f"{path}#{case.name}",
                    f"case name {case.name!r} is already used in {seen[case.name]}",
                )
            seen[case.name] = str(path)
            out.append(case)
    return out


def case(name: str, directory: str | Path | None = None) -> Case:
    """The case called ``name`` (KeyError when there is none)."""
    for c in load_cases(directory):
        if c.name == name:
            return c
    raise KeyError(f"no case named {name!r}")


def load_file(path: str | Path) -> list[Case]:
    """The cases of one family file; InputError names the file and the case on any problem."""
    from conformance.io.text import read_bytes

    path = Path(path)
    where = str(path)
    # bounded as every input is (a case file that is /dev/zero fails at once, named)
    data_bytes = bytes(read_bytes(path, lines=False)[0])
    try:
        text = data_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(where, f"cannot read the file: {exc}") from None
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise InputError(where, f"not valid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None
    except _Refused as exc:
        raise InputError(where, str(exc)) from None
    if not isinstance(data, dict):
        raise InputError(where, 'expected an object {"family": ..., "cases": [...]}')
    extra = sorted(set(data) - {"family", "cases"})
    if extra:
        raise InputError(where, f"unknown top-level key {extra[0]!r}; expected 'family' and 'cases'")
    family = data.get("family")
    if not isinstance(family, str) or not _FAMILY.fullmatch(family):
        raise InputError(where, f"'family' must be a snake_case name, got {family!r}")
    if family != path.stem:
        raise InputError(where, f"'family' is {family!r} but the file is named {path.name!r}; "
                                f"they must match")
    cases = data.get("cases")
    if not isinstance(cases, list) or not cases:
        raise InputError(where, "'cases' must be a non-empty list")
    out: list[Case] = []
    names: set[str] = set()
    for i, raw in enumerate(cases, 1):
        c = _read_case(raw, i, family, path)
        if c.name in names:
            raise InputError(f"{where}#{c.name}", f"case name {c.name!r} appears twice in this file")
        names.add(c.name)
        out.append(c)
    return out


class _Refused(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Refused(f"key {key!r} appears twice in one JSON object (a qrels query may "
                           f"judge a document once)")
        out[key] = value
    return out


def _no_constant(text: str) -> Any:
    raise _Refused(f"{text} is not a finite number; JSON numbers only")


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _read_case(raw: Any, index: int, family: str, path: Path) -> Case:
    where = f"{path}#case {index}"
    if not isinstance(raw, dict):
        raise InputError(where, "a case must be a JSON object")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InputError(where, f"'name' must be a kebab-case name such as 'ties-top-two', got {name!r}")
    where = f"{path}#{name}"

    def fail(problem: str) -> InputError:
        return InputError(where, problem)

    unknown = sorted(set(raw) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise fail(f"unknown key {unknown[0]!r}; keys are {', '.join(_KEY_ORDER)}")
    missing = [k for k in _REQUIRED if k not in raw]
    if missing:
        raise fail(f"missing required key {missing[0]!r}")
    description = raw["description"]
    if not isinstance(description, str) or not description.strip():
        raise fail("'description' must be a non-empty sentence")
    tags = raw["tags"]
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise fail("'tags' must be a list of axis names")
    for t in tags:
        if t not in AXES:
            raise fail(f"tag {t!r} is not an axis; axes are {', '.join(AXES)}")
    if len(set(tags)) != len(tags):
        raise fail("'tags' lists an axis twice")
    single = raw.get("single_axis")
    if single is not None:
        if not isinstance(single, str) or single not in AXES:
            raise fail(f"'single_axis' must be an axis name or null, got {single!r}")
        if single not in tags:
            raise fail(f"'single_axis' {single!r} must also be in 'tags'")

    metrics = raw.get("metrics", list(DEFAULT_METRICS))
    if not isinstance(metrics, list) or not metrics or not all(isinstance(m, str) for m in metrics):
        raise fail("'metrics' must be a non-empty list of measure names")
    try:
        parse_measures(metrics)
    except MeasureError as exc:
        raise fail(f"'metrics': {exc}") from None

    base = raw.get("base", {})
    if not isinstance(base, dict):
        raise fail("'base' must be an object {axis: value}")
    parsed_base: dict[str, Any] = {}
    for axis, value in base.items():
        if axis not in AXES:
            raise fail(f"'base' names {axis!r}, which is not an axis; axes are {', '.join(AXES)}")
        if axis == single:
            raise fail(f"'base' sets {axis!r}, the case's single_axis; list values in 'axis_values'")
        parsed_base[axis] = _axis_value(axis, value, fail)

    axis_values = raw.get("axis_values")
    parsed_values: tuple[Any, ...] | None = None
    if axis_values is not None:
        if single is None:
            raise fail("'axis_values' needs a 'single_axis'")
        if not isinstance(axis_values, list) or len(axis_values) < 2:
            raise fail("'axis_values' must list at least two values of the single axis")
        parsed_values = tuple(_axis_value(single, v, fail) for v in axis_values)
        if len(set(map(format_value, parsed_values))) != len(parsed_values):
            raise fail("'axis_values' lists a value twice")
    elif single is not None and len(AXES[single].values) < 2:
        raise fail(f"'single_axis' {single!r} has open values: list the compared ones in 'axis_values'")

    qrels_rows = _read_qrels(raw["qrels"], fail)
    run_rows = _read_run(raw["run"], fail)
    if not qrels_rows and not run_rows:
        raise fail("the case has neither qrels nor run rows")
    src = f"{path.name}#{name}"
    return Case(
        name=name,
        description=description.strip(),
        tags=tuple(tags),
        single_axis=single,
        metrics=list(metrics),
        qrels=Qrels.from_records(qrels_rows, source=src),
        run=Run.from_records(run_rows, source=src),
        family=family,
        source=str(path),
        base=parsed_base,
        axis_values=parsed_values,
    )


def _axis_value(axis: str, value: Any, fail) -> Any:
    """A public value text (or a JSON number, or null for depth) -> the stored value."""
    ok = isinstance(value, (str, int, float)) and not isinstance(value, bool)
    if not (ok or (value is None and axis == "depth")):
        raise fail(f"{axis}={value!r}: expected a value such as "
                   f"{', '.join(AXES[axis].values) or AXES[axis].open_meaning}")
    try:
        stored = AXES[axis].parse(format_value(value))
        Conventions().replace(**{axis: stored})  # the same check a profile makes
    except ConventionError as exc:
        raise fail(str(exc)) from None
    return stored


def _read_qrels(qrels: Any, fail) -> list[tuple[str, str, float]]:
    if not isinstance(qrels, dict):
        raise fail("'qrels' must be an object {qid: {docid: label}}")
    rows: list[tuple[str, str, float]] = []
    for qid, docs in qrels.items():
        if not qid.strip() or qid != qid.strip() or any(c.isspace() for c in qid):
            raise fail(f"qrels query id {qid!r} is empty or holds whitespace")
        if not isinstance(docs, dict) or not docs:
            raise fail(f"qrels of query {qid!r} must be a non-empty object {{docid: label}}")
        for docid, label in docs.items():
            _check_docid(docid, f"qrels of query {qid!r}", fail)
            if not _is_number(label):
                raise fail(f"qrels of query {qid!r}: label of {docid!r} must be a finite number, "
                           f"got {label!r}")
            rows.append((qid, docid, float(label)))
    return rows


def _read_run(run: Any, fail) -> list[tuple]:
    if not isinstance(run, dict):
        raise fail("'run' must be an object {qid: [[docid, score], ...]}")
    rows: list[tuple] = []
    widths: set[int] = set()
    for qid, ranked in run.items():
        if not qid.strip() or qid != qid.strip() or any(c.isspace() for c in qid):
            raise fail(f"run query id {qid!r} is empty or holds whitespace")
        if not isinstance(ranked, list) or not ranked:
            raise fail(f"run of query {qid!r} must be a non-empty list of [docid, score] rows")
        for j, row in enumerate(ranked, 1):
            what = f"run of query {qid!r}, row {j}"
            if not isinstance(row, list) or len(row) not in (2, 3):
                raise fail(f"{what}: expected [docid, score] or [docid, score, rank], got {row!r}")
            _check_docid(row[0], what, fail)
            if not _is_number(row[1]):
                raise fail(f"{what}: score must be a finite number, got {row[1]!r}")
            if len(row) == 3 and not _is_number(row[2]):
                raise fail(f"{what}: rank must be a finite number, got {row[2]!r}")
            widths.add(len(row))
            rows.append((qid, row[0], float(row[1]), *(float(r) for r in row[2:])))
    if len(widths) > 1:
        raise fail("some run rows carry a rank and others do not; give a rank on every row or none")
    return rows


def _check_docid(docid: Any, what: str, fail) -> None:
    if not isinstance(docid, str) or not docid or any(c.isspace() for c in docid):
        raise fail(f"{what}: document id {docid!r} must be a non-empty string without whitespace")


# --------------------------------------------------------------------------------------------
# Writing family files (for generators and hand edits that want the house layout)
# --------------------------------------------------------------------------------------------


def format_family(family: str, cases: list[dict[str, Any]], row_wrap: int = 12) -> str:
    """The canonical text of a family file: one key per line, each query's qrels on one line,
    each query's run on one line (``row_wrap`` rows per line when longer)."""
    lines = ["{", f'  "family": {json.dumps(family)},', '  "cases": [']
    for ci, c in enumerate(cases):
        lines.append("    {")
        keys = [k for k in _KEY_ORDER if k in c]
        for ki, key in enumerate(keys):
            comma = "," if ki < len(keys) - 1 else ""
            value = c[key]
            if key == "qrels":
                lines.append('      "qrels": {')
                items = list(value.items())
                for qi, (q, docs) in enumerate(items):
                    qcomma = "," if qi < len(items) - 1 else ""
                    lines.append(f"        {json.dumps(q)}: {_dumps(docs)}{qcomma}")
                lines.append("      }" + comma)
            elif key == "run":
                lines.append('      "run": {')
                items = list(value.items())
                for qi, (q, ranked) in enumerate(items):
                    qcomma = "," if qi < len(items) - 1 else ""
                    if len(ranked) <= row_wrap:
                        lines.append(f"        {json.dumps(q)}: {_dumps(ranked)}{qcomma}")
                    else:
                        lines.append(f"        {json.dumps(q)}: [")
                        for s in range(0, len(ranked), row_wrap):
                            chunk = ", ".join(_dumps(r) for r in ranked[s:s + row_wrap])
                            more = "," if s + row_wrap < len(ranked) else ""
                            lines.append(f"          {chunk}{more}")
                        lines.append("        ]" + qcomma)
                lines.append("      }" + comma)
            else:
                lines.append(f"      {json.dumps(key)}: {_dumps(value)}{comma}")
        lines.append("    }" + ("," if ci < len(cases) - 1 else ""))
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(", ", ": "))

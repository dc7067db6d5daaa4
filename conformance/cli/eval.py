"""``conformance eval``: measures of a run against qrels under a named profile.

The evaluation is :func:`conformance.api.evaluate`'s (the pipeline of ``conformance.pipeline``,
with its tie check);
this module reads the options, gives the process its memory policy, and prints.

Unusual but valid input is evaluated, and each oddity gets a ``conformance: warning:`` line on
stderr (``--quiet`` silences them): rows ignored (duplicates, empty queries), rows with fields
past the layout's, queries found in only one of the two files, negative or fractional labels (and
what the conventions in force do with them), non-numeric ranks, a cutoff of 10,000 or more
that is longer than every ranked list (a shorter one is common and ``k_beyond_list`` says what
it gives), a query named ``all``, and each measure whose value the order of tied scores changes
(with how many queries; ``conformance.statement.tied_queries``, decided from the tie groups of
the evaluation's own ranking, ``conformance.reference.tiecheck``; computed under ``--quiet``
too, which only silences the lines).

``--statement``: after the rows, one sentence per measure (``conformance.statement``): the
tool and its version, every convention that changes the value on this input, how many read
axes cannot and are left out, and the queries whose tied scores change it; in JSON, the key
``statements`` (measure -> sentence, tool, changing, unchanged, tied_queries), present only
with ``--statement``.

Output formats:

- ``table`` (default): trec_eval's layout, ``measure<TAB>qid<TAB>value`` with the measure name
  padded to 22 characters, values with 4 decimals and the Num* counts as integers; per-query rows
  (``--per-query``) first, by query id, then the ``all`` rows. A query id that holds a control
  character, starts with a quote or is ``all`` is printed quoted, escaped
  (``conformance.cli.common.shown``). Rows read, used and ignored go to stderr (``--quiet``
  silences them).
- ``csv``: header ``measure,qid,value``, the same rows (ids shown the same way), values at full
  precision.
- ``json``: one object with sorted keys: ``profile``, ``conventions`` (axis -> value, after
  ``--set``), ``overrides`` (measure -> the axes its name fixes, for measures whose name fixes
  any), ``metrics`` (measure -> aggregate), ``per_query`` (query -> measure -> value, only with
  ``--per-query``) and ``counts`` (``qrels`` and ``run``: rows read/used/ignored;
  ``queries``: scored, run_only, qrels_only; with ``--exclude-seen``, ``run.seen``: the
  training table, its pairs and users, the rows removed and the users they came from). Full
  float precision; NaN is ``null``.

``--exclude-seen TRAIN``: the items each user interacted with in the training table TRAIN are
removed from that user's recommendations before any measure (``conformance.io.seen``); the
removed rows are counted as ignored ("seen in training") and one stderr line says how many.

Measures are keyed by the spelling the user gave (``ndcg_cut_10`` stays ``ndcg_cut_10``). A
query that does not enter a measure's aggregate (``empty_query=skip``) has no per-query value for
it. Row counts go to stderr in table and CSV mode.
Under ``ties=unspecified`` a value is the range from the worst to the best order of the tied
documents: ``[lo, hi]`` in JSON (always a pair for such a measure, so the type does not depend
on the data), ``lo..hi`` in the table and CSV when the ends differ, one number when they agree.
"""

from __future__ import annotations

import csv
import io as _stdio
import json
import math
from contextlib import ExitStack
from typing import Any

import click

from conformance.cli.common import (DEFAULT_METRICS, State, about, describe, exclude_seen_option, fail,
                                    input_options, input_warnings, overrides_of, profile_help, reading,
                                    reports_errors, seen_line, set_option, shown, warn)
from conformance.conventions import AXES, format_value
from conformance.measures import parse_measures


@click.command("eval")
@click.option("--qrels", "qrels_path", metavar="FILE",
              help="Relevance judgments: TREC qrels, JSON, JSONL, CSV/TSV with a header, Parquet or Arrow.")
@click.option("--run", "run_path", metavar="FILE",
              help="The ranked lists: TREC run, JSON, JSONL, CSV/TSV with a header, Parquet or Arrow.")
@click.option(
    "--example", is_flag=True,
    help="Evaluate the bundled example (3 queries, graded labels, a tie) instead of --qrels/--run.",
)
@click.option(
    "--metrics", "-m", "metrics", multiple=True, metavar="LIST",
    help="Comma-separated measure names in ir_measures (nDCG@10, P(rel=2)@5), trec_eval "
    "(ndcg_cut_10, ndcg_cut.5,10) or ranx (ndcg_burges@10, map@100-l2) syntax; repeatable. "
    "'conformance measures' lists every family and its names. "
    f"[default: {DEFAULT_METRICS}]",
)
@click.option("--profile", "profile_name", default="trec_eval", show_default=True, metavar="NAME",
              help=profile_help())
@set_option("Override one axis of the profile, e.g. --set gain=exponential; repeatable.")
@click.option("--per-query", "-q", is_flag=True, help="Also give each query's value.")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table",
    show_default=True, help="Output format.",
)
@click.option("--statement", is_flag=True,
              help="Also print a citation-ready sentence per measure: the tool and version, and "
                   "every convention that changes its value on this input (found by evaluating "
                   "each alternative).")
@click.option("--quiet", is_flag=True, help="No row counts or warnings on stderr.")
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              help="spark: the same values, to the last bit, computed by Spark on inputs partitioned "
                   "by query (TREC text, CSV, TSV or Parquet files; needs the spark extra and Java 17+).")
@click.option("--spark-master", metavar="URL", default=None,
              help="The Spark master for --engine spark [default: $CONFORMANCE_SPARK_MASTER, else "
                   "local[*]].")
@exclude_seen_option
@input_options
@reports_errors
def command(qrels_path, run_path, example, metrics, profile_name, settings, per_query, fmt, statement,
            quiet, engine, spark_master, exclude_seen, columns, max_input_bytes, max_line_bytes) -> None:
    """Evaluate a run against qrels, like trec_eval, under a named profile.

    Measure names fix the axes they name (P(rel=2)@5 fixes the relevance threshold,
    ndcg_burges@10 the exponential gain) whatever the profile says; --set changes the profile
    for every measure.
    """
    from conformance import pipeline

    pipeline.no_blas_threads()  # before anything imports numpy (the profile lookup below does)
    with about("--metrics"):
        measures = parse_measures(list(metrics) if metrics else DEFAULT_METRICS)
    from conformance import api
    from conformance.profiles import computes

    overrides = overrides_of(settings)
    with about("--profile"):
        base = api.profile(profile_name, measures[0])
    base = base.replace(**overrides)
    uncovered = [m.text for m in measures if not computes(profile_name, m)]
    if uncovered and not quiet:
        warn(f"{profile_name} does not compute {', '.join(uncovered)}; computed under "
             f"{profile_name}'s conventions for the measures it has")
    how = reading(columns, max_input_bytes, max_line_bytes)
    if example and (qrels_path or run_path):
        fail("--example evaluates the bundled files; give either --example or --qrels and --run")
    if not example and not (qrels_path and run_path):
        missing = " and ".join(n for n, p in (("--qrels", qrels_path), ("--run", run_path)) if not p)
        fail(f"missing {missing}: give --qrels FILE --run FILE, or --example to try the bundled example")

    if engine == "spark" and exclude_seen:
        fail("--exclude-seen is the local engine's: --engine spark reads its inputs in Spark")
    if engine == "spark":
        _spark(qrels_path, run_path, example, measures, profile_name, overrides, base, per_query,
               fmt, statement, quiet, spark_master, columns)
        return
    pipeline.own_process()
    with ExitStack() as stack:
        if example:
            from importlib import resources  # ~18 ms to import: only for the example

            files = resources.files("conformance") / "examples"
            qrels_path = str(stack.enter_context(resources.as_file(files / "qrels.txt")))
            run_path = str(stack.enter_context(resources.as_file(files / "run.txt")))
        # api.evaluate's pipeline, with the tie check made from the evaluation's own ranking
        distinct = list({(m, m.text): m for m in measures}.values())  # as api.evaluate keys them
        result = pipeline.evaluate(qrels_path, run_path, distinct, profile_name, overrides,
                                   tie_check=True, exclude_seen=exclude_seen, **how)
    from conformance import statement as said

    sentences = said.statements(result, profile_name) if statement else None
    # computed whatever --quiet says: it silences the warnings, it does not change the work
    tied = {m.text: n for m, n in said.tied_queries(result).items()}

    State.evaluated = True  # the output is complete from here on (see ``process.console``)
    if fmt == "json":
        click.echo(_json(result, profile_name, base, measures, per_query, sentences))
        if not quiet:
            _warnings(result, tied)
        return
    if not quiet:
        _report_counts(result)
        _warnings(result, tied)
    _print_rows(_rows(result, measures, per_query), fmt)
    if sentences is not None:
        click.echo("")
        for s in sentences:
            click.echo(s.sentence)


def _spark(qrels_path, run_path, example, measures, profile_name, overrides, base, per_query, fmt,
           statement, quiet, spark_master, columns) -> None:
    """``--engine spark``: the measures from Spark (``conformance.spark_engine``), printed as the
    local engine prints them; the rows stay in Spark, so no row counts, input warnings or
    statements (those read the whole input)."""
    from conformance import spark_engine

    if example or statement or columns:
        fail("--engine spark takes --qrels and --run files; --example, --statement and --columns "
             "are the local engine's")
    if spark_master:
        import os

        os.environ[spark_engine.ENV_MASTER] = spark_master
    if not quiet:
        warn("--engine spark: row counts and input warnings are not given (the rows stay in Spark)")
    result = spark_engine.run(qrels_path, run_path, measures, profile_name, overrides)
    State.evaluated = True
    if fmt == "json":
        click.echo(_json(result, profile_name, base, measures, per_query))
        return
    _print_rows(_rows(result, measures, per_query), fmt)


def _print_rows(rows: list[tuple], fmt: str) -> None:
    """The value rows as CSV (every digit) or as the text table (four decimals)."""
    if fmt == "csv":
        buf = _stdio.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(["measure", "qid", "value"])
        for text, qid, lo, hi, count, ranged in rows:
            writer.writerow([text, qid, _text_value(lo, hi, count, ranged, _full)])
        click.echo(buf.getvalue(), nl=False)
    else:
        for text, qid, lo, hi, count, ranged in rows:
            click.echo(f"{text:<22}\t{qid}\t{_text_value(lo, hi, count, ranged, _four)}")


def _rows(result, measures, per_query: bool) -> list[tuple]:
    rows = []
    if per_query:
        by_measure = {m.text: result.per_query(m) for m in measures}
        qids = sorted({q for values in by_measure.values() for q in values})
        for q in qids:
            for m in measures:
                if q in by_measure[m.text]:
                    lo, hi = by_measure[m.text][q]
                    rows.append((m.text, shown(q), lo, hi, m.aggregate == "sum", result.ranged(m)))
    for m in measures:
        lo, hi = result.mean(m)
        rows.append((m.text, "all", lo, hi, m.aggregate == "sum", result.ranged(m)))
    return rows


def _same(lo: float, hi: float) -> bool:
    return lo == hi or (math.isnan(lo) and math.isnan(hi))


def _four(v: float, count: bool) -> str:
    if math.isnan(v):
        return "nan"
    return str(int(v)) if count and float(v).is_integer() else f"{v:.4f}"


def _full(v: float, count: bool) -> str:
    if math.isnan(v):
        return "nan"
    return str(int(v)) if count and float(v).is_integer() else repr(float(v))


def _text_value(lo: float, hi: float, count: bool, ranged: bool, one) -> str:
    if ranged and not _same(lo, hi):
        return f"{one(lo, count)}..{one(hi, count)}"
    return one(lo, count)


def _json_number(v: float, count: bool) -> Any:
    if math.isnan(v):
        return None
    return int(v) if count and float(v).is_integer() else float(v)


def _json_value(lo: float, hi: float, count: bool, ranged: bool) -> Any:
    if ranged:
        return [_json_number(lo, count), _json_number(hi, count)]
    return _json_number(lo, count)


def _json(result, profile_name: str, base, measures, per_query: bool, sentences=None) -> str:
    # "overrides": per measure, the axes on which its conventions differ from "conventions"
    # (fixed by its name, or the profile's own for that measure)
    used = {m: result.evaluations[m].conventions[m] for m in measures}
    doc: dict[str, Any] = {
        "profile": profile_name,
        "conventions": base.to_dict(),
        "overrides": {
            m.text: {axis: format_value(getattr(used[m], axis)) for axis in AXES
                     if axis in dict(m.overrides) or getattr(used[m], axis) != getattr(base, axis)}
            for m in measures if m.overrides or used[m] != base
        },
        "metrics": {
            m.text: _json_value(*result.mean(m), m.aggregate == "sum", result.ranged(m))
            for m in measures
        },
        "counts": {
            "qrels": result.qrels.counts.to_dict(),
            "run": result.run.counts.to_dict(),
            "queries": dict(result.queries),
        } if result.qrels is not None else {"queries": dict(result.queries)},  # --engine spark
    }
    if per_query:
        table: dict[str, dict[str, Any]] = {}
        for m in measures:
            for q, (lo, hi) in result.per_query(m).items():
                table.setdefault(q, {})[m.text] = _json_value(lo, hi, m.aggregate == "sum", result.ranged(m))
        doc["per_query"] = table
    if sentences is not None:  # only with --statement: the document is otherwise unchanged
        doc["statements"] = {s.measure: s.to_dict() for s in sentences}
    return json.dumps(doc, sort_keys=True, indent=2, allow_nan=False)


def _report_counts(result) -> None:
    q = result.queries
    click.echo(f"conformance: {describe('qrels', result.qrels)}", err=True)
    click.echo(f"conformance: {describe('run', result.run)}", err=True)
    seen = seen_line(result.run)
    if seen is not None:
        click.echo(f"conformance: {seen}", err=True)
    click.echo(
        f"conformance: queries: {q['scored']} scored, {q['run_only']} only in the run, "
        f"{q['qrels_only']} only in the qrels",
        err=True,
    )


def _warnings(result, tied: dict[str, int] | None) -> None:
    base = result.conventions[result.measures[0]]
    for text in input_warnings(result.qrels, result.run, base, result.measures):
        warn(text)
    if result.queries["scored"] == 0:
        warn("no query was scored (the run and the qrels share no query under the query_set in "
             "force), so every mean is nan")
    for m in result.measures:
        n = (tied or {}).get(m.text, 0)
        if n and not result.ranged(m):
            warn(f"{m.text}: {n} of {result.queries['scored']} queries have tied scores whose order "
                 f"changes the value (ties={result.conventions[m].ties} decides it; --set "
                 "ties=unspecified gives each range)")

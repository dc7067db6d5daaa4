"""The command line: ``conformance eval`` computes measures under a named profile.

Every error a user can cause (bad input, unknown measure, axis, value or profile, a convention
that refuses the input, a file that cannot be read, an input too large for the machine's memory)
ends as one line on stderr,
``conformance: error: <message>``, and exit status 2. Click's own usage errors (an unknown
option, a bad ``--format``) keep Click's format and also exit 2. Anything else is a bug in
conformance: it ends as one line, ``conformance: internal error: <type>: <message>``, with a
request to report it, and exit status 3 (distinct from 2, so a script can tell its own bad input
from our bug). The traceback is printed only when the environment sets ``CONFORMANCE_DEBUG=1``.
No traceback reaches a user otherwise.

Signals and closed outputs (the console entry point, :func:`console`): SIGINT (Ctrl-C), SIGTERM
and SIGHUP stop any command the same way: the work unwinds (library workers are killed, an
output file being written is left as it was), one line ``conformance: stopped by SIGTERM`` goes
to stderr, and the exit status is 128 + the signal's number (130 for Ctrl-C, 143 for SIGTERM,
129 for SIGHUP), never 1, which ``run`` gives for an unexplained disagreement. A signal the
process inherited as ignored (``nohup``, a background job of a non-interactive shell) stays
ignored. When stdout's reader goes away (``| head -1``) the command ends quietly with exit
status 141 (128 + SIGPIPE, what a program killed by SIGPIPE reports); with stdout closed
(``>&-``) what it would print is discarded, as with ``>/dev/null``.

Unusual but valid input is evaluated, and each oddity gets a ``conformance: warning:`` line on
stderr (``--quiet`` silences them): rows ignored (duplicates, empty queries), rows with fields
past the layout's, queries found in only one of the two files, negative or fractional labels (and
what the conventions in force do with them), non-numeric ranks, a cutoff of 10,000 or more
that is longer than every ranked list (a shorter one is common and ``k_beyond_list`` says what
it gives).

``conformance eval`` output formats:

- ``table`` (default): trec_eval's layout, ``measure<TAB>qid<TAB>value`` with the measure name
  padded to 22 characters, values with 4 decimals and the Num* counts as integers; per-query rows
  (``--per-query``) first, by query id, then the ``all`` rows. Rows read, used and ignored go
  to stderr (``--quiet`` silences them).
- ``csv``: header ``measure,qid,value``, the same rows, values at full precision.
- ``json``: one object with sorted keys: ``profile``, ``conventions`` (axis -> value, after
  ``--set``), ``overrides`` (measure -> the axes its name fixes, for measures whose name fixes
  any), ``metrics`` (measure -> aggregate), ``per_query`` (query -> measure -> value, only with
  ``--per-query``) and ``counts`` (``qrels`` and ``run``: rows read/used/ignored;
  ``queries``: scored, run_only, qrels_only). Full float precision; NaN is ``null``.

Measures are keyed by the spelling the user gave (``ndcg_cut_10`` stays ``ndcg_cut_10``). A
query that does not enter a measure's aggregate (``empty_query=skip``) has no per-query value for
it. Row counts go to stderr in table and CSV mode.
Under ``ties=unspecified`` a value is the range from the worst to the best order of the tied
documents: ``[lo, hi]`` in JSON (always a pair for such a measure, so the type does not depend
on the data), ``lo..hi`` in the table and CSV when the ends differ, one number when they agree.
"""

from __future__ import annotations

import csv
import functools
import io as _stdio
import json
import math
import os
import signal
import sys
import threading
import time
from contextlib import ExitStack
from typing import Any, NoReturn

import click

from conformance import __version__
from conformance.conventions import AXES, ConventionError, Conventions, format_value
from conformance.errors import ConformanceError, Stopped
from conformance.measures import Measure, MeasureError, parse_measures

DEFAULT_METRICS = "nDCG@10,AP,RR,P@10"
USER_ERRORS = (ConformanceError, ConventionError, MeasureError)
HUGE_CUTOFF = 10_000  # a cutoff at least this large and past every ranked list is warned about
INTERNAL_ERROR = 3  # exit status of a bug in conformance (2 is the user's bad input)
BROKEN_PIPE = 128 + 13  # stdout's reader went away: the status of a process killed by SIGPIPE


def _fail(message: str) -> NoReturn:
    one_line = " ".join(str(message).split())
    click.echo(f"conformance: error: {one_line}", err=True)
    raise click.exceptions.Exit(2)


def _os_message(exc: OSError) -> str:
    if exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    return str(exc)


def reports_errors(func):
    """Turn the errors a user can cause into one line on stderr and exit status 2."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except BrokenPipeError:
            # The reader stopped reading (``| head``): stop quietly, as Unix tools do.
            _discard_stdout()
            raise click.exceptions.Exit(BROKEN_PIPE) from None
        except USER_ERRORS as exc:
            _fail(str(exc))
        except OSError as exc:
            _fail(_os_message(exc))
        except MemoryError as exc:  # the input is too large for this machine: not a bug
            _fail(_no_memory(exc))

    return wrapper


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so that what is still buffered for a reader that went away
    is not written again at exit (with "Exception ignored ... BrokenPipeError")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError, _stdio.UnsupportedOperation):
        pass


_told: list[bool] = []  # the "stopped by" line was printed


def _stopped(exc: KeyboardInterrupt) -> int:
    """One line for a stop signal; its exit status (a bare KeyboardInterrupt is SIGINT's)."""
    signum = exc.signum if isinstance(exc, Stopped) else signal.SIGINT
    if not _told:
        _told.append(True)
        click.echo(f"conformance: stopped by {signal.Signals(signum).name}", err=True)
    return 128 + signum


def _no_memory(exc: MemoryError) -> str:
    from conformance.io.limits import not_enough_memory

    return not_enough_memory(exc)


def _internal_error(exc: BaseException) -> NoReturn:
    if os.environ.get("CONFORMANCE_DEBUG") == "1":
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    if isinstance(exc, MemoryError):
        _fail(_no_memory(exc))
    text = " ".join(str(exc).split())
    text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    click.echo(
        f"conformance: internal error: {text[:500]} (a bug in conformance, not in your input; "
        "please report it with the command you ran; CONFORMANCE_DEBUG=1 shows the traceback)",
        err=True,
    )
    raise click.exceptions.Exit(INTERNAL_ERROR)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    text = " ".join(str(message).split())
    click.echo(f"conformance: warning: {category.__name__}: {text[:300]}", err=True)


class _Guarded(click.Group):
    """The exception boundary: a user's error is one line and exit 2 (``reports_errors``), an
    unexpected exception one line and exit 3 (``_internal_error``); never a traceback."""

    def invoke(self, ctx: click.Context):
        import warnings

        try:
            with warnings.catch_warnings():
                # A Python warning the code did not silence where it arose (a bug of ours or a
                # library's) is one warning line without a path: never a raw warning on stderr.
                warnings.showwarning = _show_warning
                return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except KeyboardInterrupt as exc:  # Ctrl-C or a stop signal (see ``console``)
            raise click.exceptions.Exit(_stopped(exc)) from None
        except USER_ERRORS as exc:  # raised outside a command's own handler
            _fail(str(exc))
        except Exception as exc:
            _internal_error(exc)


def input_options(func):
    """The options that say how the input files are read (eval, run and check-paper)."""
    from conformance.io.limits import DEFAULT_MAX_INPUT_BYTES, DEFAULT_MAX_LINE_BYTES, INPUT_ENV, LINE_ENV, format_size

    func = click.option(
        "--max-line-bytes", "max_line_bytes", metavar="SIZE", default=None,
        help=f"Refuse a line longer than this (64M, 1G; 0: no limit). [default: {LINE_ENV} or "
             f"{format_size(DEFAULT_MAX_LINE_BYTES)}]")(func)
    func = click.option(
        "--max-input-bytes", "max_input_bytes", metavar="SIZE", default=None,
        help=f"Refuse an input larger than this once decompressed (16G; 0: no limit). [default: "
             f"{INPUT_ENV} or {format_size(DEFAULT_MAX_INPUT_BYTES)}]")(func)
    return click.option(
        "--columns", "columns", metavar="ROLE=COLUMN,...", default=None,
        help="The column of each role in CSV, TSV, Parquet or Arrow input, when its name is not "
             "one conformance knows: qid=,docid=,score=,rank=,label= (e.g. --columns "
             "qid=query,docid=passage,score=sim).")(func)


def reading(columns: str | None, max_input_bytes: str | None, max_line_bytes: str | None) -> dict:
    """The keyword arguments of ``load_qrels`` / ``load_run`` that :func:`input_options` give."""
    from conformance.io.limits import Limits
    from conformance.io.roles import parse_roles

    return {"columns": parse_roles(columns) if columns is not None else None,
            "limits": Limits.from_env(max_input_bytes=max_input_bytes, max_line_bytes=max_line_bytes)}


@click.group(cls=_Guarded, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="conformance")
def main() -> None:
    """Ranking metrics (nDCG, AP, RR, P@k...) under named conventions, beside the libraries
    that compute them.

    Try: conformance eval --example
    """


@main.command("eval")
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
@click.option(
    "--profile", "profile_name", default="trec_eval", show_default=True, metavar="NAME",
    help="The named conventions to evaluate under.",
)
@click.option(
    "--set", "settings", multiple=True, metavar="AXIS=VALUE",
    help="Override one axis of the profile, e.g. --set gain=exponential; repeatable.",
)
@click.option("--per-query", "-q", is_flag=True, help="Also give each query's value.")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table",
    show_default=True, help="Output format.",
)
@click.option("--quiet", is_flag=True, help="No row counts or warnings on stderr.")
@input_options
@reports_errors
def eval_command(
    qrels_path: str | None,
    run_path: str | None,
    example: bool,
    metrics: tuple[str, ...],
    profile_name: str,
    settings: tuple[str, ...],
    per_query: bool,
    fmt: str,
    quiet: bool,
    columns: str | None,
    max_input_bytes: str | None,
    max_line_bytes: str | None,
) -> None:
    """Evaluate a run against qrels, like trec_eval, under a named profile.

    Measure names fix the axes they name (P(rel=2)@5 fixes the relevance threshold,
    ndcg_burges@10 the exponential gain) whatever the profile says; --set changes the profile
    for every measure.
    """
    _no_blas_threads()  # before anything imports numpy (the profile lookup below does)
    measures = parse_measures(list(metrics) if metrics else DEFAULT_METRICS)
    from conformance.profiles import computes, profile  # the library entries are read only here

    bases = {m: profile(profile_name, m).with_settings(list(settings)) for m in measures}
    base = bases[measures[0]]
    uncovered = [m.text for m in measures if not computes(profile_name, m)]
    if uncovered and not quiet:
        click.echo(f"conformance: warning: {profile_name} does not compute {', '.join(uncovered)}; "
                   f"computed under {profile_name}'s conventions for the measures it has", err=True)
    how = reading(columns, max_input_bytes, max_line_bytes)
    if example and (qrels_path or run_path):
        _fail("--example evaluates the bundled files; give either --example or --qrels and --run")
    if not example and not (qrels_path and run_path):
        missing = " and ".join(n for n, p in (("--qrels", qrels_path), ("--run", run_path)) if not p)
        _fail(f"missing {missing}: give --qrels FILE --run FILE, or --example to try the bundled example")

    with ExitStack() as stack:
        if example:
            from importlib import resources  # ~18 ms to import: only for the example

            files = resources.files("conformance") / "examples"
            qrels_path = str(stack.enter_context(resources.as_file(files / "qrels.txt")))
            run_path = str(stack.enter_context(resources.as_file(files / "run.txt")))
        result = _evaluate(qrels_path, run_path, measures, bases, **how)

    global _evaluated
    _evaluated = True  # the output is complete from here on (see ``console``)
    if fmt == "json":
        click.echo(_json(result, profile_name, base, measures, per_query))
        if not quiet:
            _warnings(result)
        return
    if not quiet:
        _report_counts(result)
        _warnings(result)
    rows = _rows(result, measures, per_query)
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


class _Result:
    """Everything evaluated for one invocation."""

    def __init__(self, qrels, run, evaluations, scored: int, base=None, measures=()) -> None:
        self.qrels, self.run = qrels, run
        self.base, self.measures = base, list(measures)
        self.evaluations = evaluations  # Measure -> Evaluation holding it
        qrels_q = set(qrels.present_qids().tolist())
        run_q = set(run.present_qids().tolist())
        self.queries = {
            "scored": scored,
            "run_only": len(run_q - qrels_q),
            "qrels_only": len(qrels_q - run_q),
        }

    def mean(self, m: Measure) -> tuple[float, float]:
        ev = self.evaluations[m]
        return ev.aggregate(m), ev.aggregate(m, upper=True)

    def per_query(self, m: Measure) -> dict[str, tuple[float, float]]:
        return self.evaluations[m].ranges(m)

    def ranged(self, m: Measure) -> bool:
        return self.evaluations[m].conventions[m].ties == "unspecified"


ARROW_DECAY_MS = 100


def _release_freed_memory() -> None:
    """Set the process's memory policy: freed Arrow memory goes back to the system within
    ``ARROW_DECAY_MS`` and at the end of each reader's parse; one malloc arena for numpy.

    The command owns its process, so it may set the process-wide Arrow pool (the library API
    leaves it alone). Arrow's default pool (mimalloc) keeps freed blocks for reuse: on a
    2M-row run it held ~100 MB that no array used after the parse, which added to the peak.
    jemalloc returns freed pages after its decay time. With no delay (0 ms) every block the
    CSV parser frees was given back and faulted in again for the next block: ~66,000 page
    faults in the parse of a 2M-row run, ~0.25 s of system time. With 100 ms, blocks are
    reused while the parse runs (~43,000 faults), and the readers return what is left once
    parsed (``io.trec._fast_parse``, and ``_evaluate`` after both files are read), so the peak
    stays that of the evaluation (401-402 MB either way, in 8 runs each; the whole command
    ~0.2 s faster). A 1 s decay kept too much between the purges (peak 589 MB). Skipped
    where Arrow has no jemalloc.
    """
    import pyarrow as pa

    _one_malloc_arena()
    try:
        pool = pa.jemalloc_memory_pool()
        pa.jemalloc_set_decay_ms(ARROW_DECAY_MS)
        pa.set_memory_pool(pool)
    except (NotImplementedError, pa.ArrowException, AttributeError):
        pass


def _no_blas_threads() -> None:
    """No OpenBLAS worker threads in this process, unless the user asked for them.

    Importing numpy starts OpenBLAS's worker threads, which spin waiting for work for about
    0.1 s of CPU: on a 2-core machine, a core taken from the command, whose evaluation never
    calls BLAS. (12 interleaved runs of ``conformance eval`` on a 2M-row run: median CPU time
    2.23 s with the threads, 2.04 s without.) Only before numpy's first import, which is when
    OpenBLAS reads the variable; the command runs no other program that could inherit it.
    """
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _one_malloc_arena() -> None:
    """Have every thread take memory from glibc's main malloc arena (numpy's arrays come from
    malloc).

    glibc gives each thread that allocates while another does an arena of its own; memory
    freed in an arena stays there for that arena's next allocations. With the readers' and
    the evaluation's threads each keeping some, ~20 MB more was held at the peak of a 2M-row
    run. One arena (``mallopt(M_ARENA_MAX, 1)``, set before any of those threads exists) lets
    every thread reuse what any other freed. (Fixing the mmap threshold instead, so large
    blocks go back to the system at once, lowered the peak more but cost ~35,000 more page
    faults, ~0.15 s.) Skipped where the C library has no ``mallopt`` (not glibc).
    """
    import ctypes

    M_ARENA_MAX = -8
    try:
        ctypes.CDLL(None).mallopt(M_ARENA_MAX, 1)
    except (OSError, AttributeError):
        pass


def _evaluate(qrels_path: str, run_path: str, measures: list[Measure],
              bases: dict[Measure, Conventions], **how) -> _Result:
    """Read both files and evaluate each measure under its own conventions ``bases[m]`` (the
    profile's for that measure, with --set applied; the measure's name may fix more); ``how``:
    the readers' options (--columns and the input limits)."""
    base = bases[measures[0]]
    _no_blas_threads()
    import pyarrow as pa

    from conformance import io as cio
    from conformance.parallel import in_thread
    from conformance.reference import evaluate
    from conformance.reference.prepare import Prepared

    _release_freed_memory()
    # The qrels are read in a second thread while the run is read (~0.08 s on a 2M-row run;
    # the readers spend most of their time in Arrow and numpy, outside the GIL). Their
    # transient arrays add to the run reader's (on 2M rows the command's peak was 360-396 MB
    # in 14 runs, against pytrec_eval's 421 MB; reading one file after the other, 378-394).
    qrels_read = in_thread(lambda: cio.load_qrels(qrels_path, **how))
    try:
        # The reader's check for a docid listed twice in a query sorts every (query, docid)
        # pair (~0.04 s on a 2M-row run); the join below sorts them with the judgments and
        # sees every repeat too, so the check is made only when the join did not run or
        # found one (then the reader's error, or its duplicates policy, as if made at read).
        run = cio.load_run(run_path, duplicates=base.duplicates, check_pairs=False, **how)
    except BaseException:
        qrels_read()  # a bad qrels file is reported first, as if it had been read first
        raise
    qrels = qrels_read()
    pa.default_memory_pool().release_unused()  # what the readers freed, before the evaluation
    prep = Prepared(qrels, run)  # joined once, shared by every convention set below
    if run.distinct_pairs is None:
        if prep.joined_by_words:
            run.distinct_pairs = True  # the join compared every pair of equal hash: no repeat
        else:
            settled = cio.settle_pairs(run, base.duplicates)
            if settled is not run:  # listings dropped: join again (else the join stands)
                run, prep = settled, Prepared(qrels, settled)
    groups: dict[Conventions, list[Measure]] = {}
    for m in measures:
        group = groups.setdefault(m.conventions(bases[m]), [])
        if m not in group:  # ndcg_cut_10 and nDCG@10 are one measure: computed once
            group.append(m)
    evaluations = {}
    for conv, group in groups.items():
        ev = evaluate(prep, None, group, conv)
        for m in group:
            evaluations[m] = ev
    scored = int(evaluate(prep, None, [], base).qids.size)
    return _Result(qrels, run, evaluations, scored, base, measures)


def _rows(result: _Result, measures: list[Measure], per_query: bool) -> list[tuple]:
    rows = []
    if per_query:
        by_measure = {m.text: result.per_query(m) for m in measures}
        qids = sorted({q for values in by_measure.values() for q in values})
        for q in qids:
            for m in measures:
                if q in by_measure[m.text]:
                    lo, hi = by_measure[m.text][q]
                    rows.append((m.text, q, lo, hi, m.aggregate == "sum", result.ranged(m)))
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


def _json(result: _Result, profile_name: str, base: Conventions, measures: list[Measure], per_query: bool) -> str:
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
        },
    }
    if per_query:
        table: dict[str, dict[str, Any]] = {}
        for m in measures:
            for q, (lo, hi) in result.per_query(m).items():
                table.setdefault(q, {})[m.text] = _json_value(lo, hi, m.aggregate == "sum", result.ranged(m))
        doc["per_query"] = table
    return json.dumps(doc, sort_keys=True, indent=2, allow_nan=False)


def _describe(what: str, table) -> str:
    c = table.counts
    text = f"{what} {table.source}: {c.read} rows read, {c.used} used, {c.ignored} ignored"
    if c.reasons:
        text += " (" + ", ".join(f"{reason}: {n}" for reason, n in sorted(c.reasons.items())) + ")"
    extra = [f"{n} {kind} lines" for kind, n in (("comment", c.comments), ("blank", c.blank)) if n]
    if extra:
        text += "; " + ", ".join(extra) + " skipped"
    return text


def _report_counts(result: _Result) -> None:
    q = result.queries
    click.echo(f"conformance: {_describe('qrels', result.qrels)}", err=True)
    click.echo(f"conformance: {_describe('run', result.run)}", err=True)
    click.echo(
        f"conformance: queries: {q['scored']} scored, {q['run_only']} only in the run, "
        f"{q['qrels_only']} only in the qrels",
        err=True,
    )


def _warnings(result: _Result) -> None:
    for text in input_warnings(result.qrels, result.run, result.base, result.measures):
        click.echo(f"conformance: warning: {text}", err=True)
    if result.queries["scored"] == 0:
        click.echo(
            "conformance: warning: no query was scored (the run and the qrels share no query "
            "under the query_set in force), so every mean is nan",
            err=True,
        )


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def input_warnings(qrels, run, conv: Conventions | None, measures: list[Measure]) -> list[str]:
    """One sentence per oddity of valid input that changes what is evaluated; nothing that is
    dropped or reinterpreted goes unsaid. ``conv`` None: no single profile (``conformance run``)."""
    import numpy as np

    out = []
    for what, table in (("qrels", qrels), ("run", run)):
        c = table.counts
        if c.ignored:
            why = ", ".join(f"{reason}: {n}" for reason, n in sorted(c.reasons.items()))
            out.append(f"{what} {table.source}: {_plural(c.ignored, 'row')} of {c.read} ignored ({why})")
        if getattr(c, "extra_fields", 0):
            out.append(
                f"{what} {table.source}: {_plural(c.extra_fields, 'row has', 'rows have')} more than "
                "6 fields; the fields after the sixth were ignored, as trec_eval does (a trailing "
                "'# comment' is such fields; a file whose lines end in a bare CR is read as one line)")
    qrels_q = set(qrels.present_qids().tolist())
    run_q = set(run.present_qids().tolist())
    run_only, qrels_only = len(run_q - qrels_q), len(qrels_q - run_q)
    rule = conv.query_set if conv is not None else None
    if run_only:
        out.append(f"{_plural(run_only, 'query', 'queries')} of the run {'has' if run_only == 1 else 'have'} "
                   "no judgments in the qrels and {} not scored".format("is" if run_only == 1 else "are"))
    if qrels_only:
        effect = {"qrels": "scored 0 (query_set=qrels)", "run": "not scored (query_set=run)"}.get(
            rule, "scored as each library's profile says")
        out.append(f"{_plural(qrels_only, 'judged query', 'judged queries')} of the qrels "
                   f"{'is' if qrels_only == 1 else 'are'} not in the run: {effect}")
    label = np.asarray(qrels.label, dtype=np.float64)
    negative = int((label < 0).sum())
    if negative:
        effect = {"unjudged": "read as not relevant, gain 0, not in the ideal (negative_labels=unjudged)",
                  "keep": "kept as negative gains (negative_labels=keep)"}.get(
            conv.negative_labels if conv is not None else None, "each library's profile decides")
        out.append(f"qrels {qrels.source}: {_plural(negative, 'negative label')}: {effect}")
    fractional = int((label != np.trunc(label)).sum())
    if fractional:
        effect = {"int_truncate": "truncated toward zero (label_type=int_truncate)",
                  "float": "used as they are (label_type=float)"}.get(
            conv.label_type if conv is not None else None, "each library's profile decides")
        out.append(f"qrels {qrels.source}: {_plural(fractional, 'fractional label')}: {effect}")
    no_rank = int(np.isnan(np.asarray(run.rank, dtype=np.float64)).sum())
    if 0 < no_rank < len(run):  # all NaN: the input has no rank column (JSON), nothing to say
        out.append(f"run {run.source}: {_plural(no_rank, 'rank')} (field 4) not a number: "
                   "unused unless rank_source=rank_column")
    if len(run):
        longest = int(np.bincount(np.asarray(run.qcode)).max())
        for m in measures:
            # P@10 over short lists is common and k_beyond_list says what it gives; a cutoff
            # past every list and this large is more likely a slip of the keyboard
            if m.cutoff is not None and m.cutoff > longest and m.cutoff >= HUGE_CUTOFF:
                out.append(f"{m.text}: the cutoff {m.cutoff} is longer than every ranked list "
                           f"(the longest has {_plural(longest, 'document')})")
    return out


# ---------------------------------------------------------------------------------------------
# conformance run: every library entry beside the reference, every disagreement explained
# ---------------------------------------------------------------------------------------------


def _select_entries(libs: str):
    from conformance.profiles import select_entries

    try:
        return select_entries(libs)
    except ConventionError as exc:
        raise ConformanceError(f"--libs: {exc}") from None


@main.command("run")
@click.option("--libs", default="all", show_default=True, metavar="all|NAME,NAME",
              help="Library entries to run: 'all', entry names (lightgbm:linear_gain) or "
                   "library names (every entry of that library).")
@click.option("--cases", "cases_dir", metavar="DIR",
              help="A directory of case files (default: the bundled edge-case corpus).")
@click.option("--qrels", "qrels_path", metavar="FILE", help="Your own qrels (with --run).")
@click.option("--run", "run_path", metavar="FILE", help="Your own run (with --qrels).")
@click.option("-m", "--metrics", "metric_lists", multiple=True, metavar="LIST",
              help="Measures to compare (default: each case's own list; for --qrels/--run "
                   "nDCG@10,nDCG,AP,RR,P@10,R@100).")
@click.option("--json", "json_path", metavar="OUT", help="Write the full comparison as JSON.")
@click.option("--html", "html_path", metavar="OUT", help="Write the HTML report.")
@click.option("--tol", type=float, default=None, metavar="X",
              help="One tolerance for every comparison (default: each entry's own, 1e-12 for "
                   "float64 libraries and 1e-6 for float32 ones).")
@click.option("--lib-timeout", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="Stop a library that has not answered one case after this long, and record "
                   "that as its error for the case; 0: no limit.  [default: 300]")
@click.option("--quiet", is_flag=True, help="No progress bar and no warnings.")
@input_options
@reports_errors
def run_command(libs, cases_dir, qrels_path, run_path, metric_lists, json_path, html_path, tol,
                lib_timeout, quiet, columns, max_input_bytes, max_line_bytes):
    """Run library entries beside the reference over the edge-case corpus (or your files) and
    explain every disagreement by the conventions that cause it.

    Each library runs in its own worker process: one that raises, aborts, segfaults or hangs
    (past --lib-timeout) gets that recorded as its error for the case, and the run goes on.

    Exit status: 0 when every disagreement is explained, 1 when any is unexplained, 2 on bad
    input, 3 on an internal error, 128 + N when stopped by signal N (130 for Ctrl-C).
    """
    from conformance import outputs, summary
    from conformance.runner import DEFAULT_TIMEOUT, Subject, isolate, run_entries, statuses

    entries = isolate(_select_entries(libs), DEFAULT_TIMEOUT if lib_timeout is None else lib_timeout)
    metrics = parse_measures(",".join(metric_lists)) if metric_lists else None
    if (qrels_path is None) != (run_path is None):
        raise ConformanceError("--qrels and --run go together")
    if qrels_path is not None:
        if cases_dir is not None:
            raise ConformanceError("give either --cases or --qrels/--run, not both")
        from conformance import io as cio

        how = reading(columns, max_input_bytes, max_line_bytes)
        qrels = cio.load_qrels(qrels_path, **how)
        run = cio.load_run(run_path, duplicates="error", **how)
        subjects = [Subject(os.path.basename(run_path), qrels, run,
                            metrics or parse_measures("nDCG@10,nDCG,AP,RR,P@10,R@100"))]
        if not quiet:
            click.echo(f"conformance: {_describe('qrels', qrels)}", err=True)
            click.echo(f"conformance: {_describe('run', run)}", err=True)
            for text in input_warnings(qrels, run, None, subjects[0].measures):
                click.echo(f"conformance: warning: {text}", err=True)
    else:
        from conformance.cases import load_cases

        cases = load_cases(cases_dir)
        subjects = [Subject(c.name, c.qrels, c.run, metrics or c.measures, c.description)
                    for c in cases]

    status = statuses(entries)  # every worker imports its library, at the same time
    for e in entries:
        if not status[e.name].available:
            slow = status[e.name].state == "import_timed_out"
            hint = "; raise --lib-timeout to wait longer" if slow else ""
            click.echo(f"conformance: warning: {e.name} {status[e.name].describe()}{hint}; it is "
                       "reported as unavailable", err=True)
    result = _run_with_progress(run_entries, entries, subjects, tol, quiet)
    # the files first, whole or not at all: a reader of stdout that goes away (| head) or a
    # stop signal during the summary cannot cost them
    if json_path:
        outputs.write_text(json_path, result.dumps())
    if html_path:
        from conformance.report import html as report_html

        outputs.write_text(html_path, report_html.render(result), make_parents=True)
    click.echo(summary.render(result))
    raise click.exceptions.Exit(1 if result.summary["unexplained"] else 0)


def _run_with_progress(run_entries, entries, subjects, tol, quiet):
    if quiet or not sys.stderr.isatty():
        return run_entries(entries, subjects, tol)
    from rich.console import Console
    from rich.progress import Progress

    # stderr: stdout carries the summary, which may be piped or compared
    with Progress(transient=True, console=Console(stderr=True)) as progress:
        task = progress.add_task("cases", total=len(subjects))
        return run_entries(entries, subjects, tol,
                           progress=lambda name: progress.update(task, advance=1, description=name))


@main.command("libs")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
@click.option("--lib-timeout", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="Give up on a library whose import has not finished after this long; 0: no "
                   "limit.  [default: 300]")
@reports_errors
def libs_command(fmt, lib_timeout):
    """List the library entries, their installed versions (or why one cannot be used), and each
    entry's profile across the convention axes."""
    from conformance import libs as L
    from conformance.conventions import AXES
    from conformance.runner import DEFAULT_TIMEOUT, isolate, statuses

    entries = L.all_entries()
    # each library imported in its worker, all at once: one that crashes or hangs on import
    # is reported as such, and costs neither this process nor the others' time
    status = statuses(isolate(entries, DEFAULT_TIMEOUT if lib_timeout is None else lib_timeout))
    rows = []
    for e in entries:
        available = status[e.name].available
        prof = e.default_profile().to_dict()
        rows.append({"entry": e.name, "library": e.library, "available": available,
                     "status": status[e.name].state,
                     "problem": None if available else status[e.name].describe(),
                     "version": e.version() if available else None,
                     "install": None if available else e.install_command(),
                     "description": e.description, "tolerance": e.tolerance, "profile": prof})
    if fmt == "json":
        click.echo(json.dumps({"entries": rows}, sort_keys=True, indent=1))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(120, Console().width))
    t = Table(title="library entries")
    for col in ("entry", "version", "description"):
        t.add_column(col)
    for r in rows:
        t.add_row(r["entry"], r["version"] or f"unavailable ({r['install']})", r["description"])
    console.print(t)
    for r in rows:
        if r["problem"] is not None:
            click.echo(f"{r['entry']}: {r['problem']}")
    # profiles as plain columns in blocks that fit the terminal, so no value is cut short
    width = console.width
    axis_w = max(len(a) for a in AXES) + 2
    col_w = {r["entry"]: max(len(r["entry"]), *(len(v) for v in r["profile"].values())) + 2
             for r in rows}
    block: list[dict] = []
    blocks = [block]
    used = axis_w
    for r in rows:
        if block and used + col_w[r["entry"]] > width:
            block = []
            blocks.append(block)
            used = axis_w
        block.append(r)
        used += col_w[r["entry"]]
    click.echo("\nprofiles (each entry's main measure; measure names can fix some axes):")
    for block in blocks:
        click.echo("")
        click.echo("axis".ljust(axis_w) + "".join(r["entry"].ljust(col_w[r["entry"]]) for r in block))
        for axis in AXES:
            click.echo(axis.ljust(axis_w)
                       + "".join(r["profile"][axis].ljust(col_w[r["entry"]]) for r in block))


@main.command("measures")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
@reports_errors
def measures_command(fmt):
    """List the measure families, their parameters and their names in ir_measures, trec_eval
    and ranx syntax (a name in brackets is conformance's own spelling: that library lacks it)."""
    from conformance.measures import format_param, listing

    rows = listing()
    if fmt == "json":
        click.echo(json.dumps({"families": rows}, sort_keys=True, indent=1,
                              default=lambda v: list(v) if isinstance(v, tuple) else str(v)))
        return
    from rich.console import Console
    from rich.table import Table

    def names(r, syntax):
        return ", ".join(n["name"] if n["native"] else f"[{n['name']}]"
                         for n in r["names"][syntax])

    def params(r):
        return ", ".join(k if v is None else f"{k}={format_param(v)}"
                         for k, v in r["parameters"].items())

    t = Table(title="measure families", show_lines=False)
    for col in ("family", "@k", "parameters", "ir_measures", "trec_eval", "ranx", "meaning"):
        t.add_column(col, overflow="fold")
    for r in rows:
        t.add_row(r["family"], {"none": "-", "optional": "opt", "required": "req"}[r["cutoff"]],
                  params(r), names(r, "ir_measures"), names(r, "trec_eval"), names(r, "ranx"),
                  r["meaning"])
    Console(width=max(140, Console().width)).print(t, markup=False)


from conformance import cli_paper as _cli_paper  # noqa: E402,F401
from conformance import cli_rag as _cli_rag  # noqa: E402,F401

_evaluated = False  # set by ``eval`` once its result is computed


_signalled: list[int] = []  # the stop signal received, if any (see ``_stop_on_signals``)
STOP_DEADLINE = 1.5  # seconds the orderly stop may take before the process leaves at once


def _stop_on_signals() -> None:
    """SIGINT, SIGTERM and SIGHUP raise ``Stopped`` in the main thread, so that each unwinds
    the work as Ctrl-C does (the runner kills its workers, an output being written is removed).
    A signal inherited as ignored stays ignored; one that comes while the first is handled is
    ignored, so the stopping itself is not cut short.

    Python runs a handler only between bytecodes of the main thread, so a signal that comes
    while the main thread sits in a long native call would wait for that call. So the signal is
    also written, at once, to a wakeup pipe (``signal.set_wakeup_fd``) that a watchdog thread
    reads: if the process is still here ``STOP_DEADLINE`` seconds after the first stop signal,
    the watchdog kills the library workers, removes the output being written and leaves with
    the same status."""

    def stop(signum, frame):
        if _signalled:
            return
        _signalled.append(signum)
        raise Stopped(signum)

    handled = set()

    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)  # no SIGHUP on Windows
        if sig is not None and signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, stop)
            handled.add(int(sig))
    if handled:
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_write, False)
        signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
        threading.Thread(target=_leave_after_deadline, args=(wake_read, handled),
                         name="stop-deadline", daemon=True).start()


def _leave_after_deadline(wake_read: int, handled: set[int]) -> None:
    while True:
        signum = os.read(wake_read, 1)[0]
        if signum in handled:
            break
    time.sleep(STOP_DEADLINE)
    for name, cleanup in (("conformance.isolation", "kill_all"),
                          ("conformance.outputs", "discard_partial")):
        module = sys.modules.get(name)  # only what this command imported has work to undo
        if module is not None:
            getattr(module, cleanup)()
    if not _told:
        os.write(2, f"conformance: stopped by {signal.Signals(signum).name}\n".encode())
    os._exit(128 + signum)


def _open_std_streams() -> None:
    """A closed stdin, stdout or stderr (``>&-``) becomes /dev/null: what would be printed is
    discarded, and no pipe the command opens can take the descriptor's number."""
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(fd)
        except OSError:
            devnull = os.open(os.devnull, os.O_RDWR)
            if devnull != fd:
                os.dup2(devnull, fd)
                os.close(devnull)
            setattr(sys, name, open(fd, mode, closefd=False))
        if getattr(sys, name) is None:  # closed at start, its number since taken by a file
            setattr(sys, name, open(os.devnull, mode))


def console() -> None:
    """The ``conformance`` console script: :func:`main` with the signal and closed-output
    handling of the module docstring, and after a successful ``eval``, an exit that skips the
    interpreter's teardown.

    At exit Python frees every object and module one by one; after ``eval`` on a 2M-row run
    that took ~0.1 s of a ~2 s command, spent releasing arrays the process is about to give
    back whole. ``eval`` starts no process or thread that outlives it and holds no file open for
    writing, so after flushing stdout and stderr nothing is lost by leaving at once. Every other
    command, and every error, closes the library workers (together, cleanly) and exits the
    usual way.
    """
    _open_std_streams()  # first: the signals' wakeup pipe must not take a closed stream's number
    _stop_on_signals()
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code
    except KeyboardInterrupt as exc:  # a stop signal outside any command
        code = _stopped(exc)
    if _signalled and code != 128 + _signalled[0]:  # Click took it for an Abort ("Aborted!")
        code = _stopped(Stopped(_signalled[0]))
    try:
        sys.stdout.flush()
    except (OSError, ValueError):  # the reader went away at the last write
        _discard_stdout()
        if code in (0, 1, None):
            code = BROKEN_PIPE
    if _evaluated and code in (0, None):
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os._exit(0)
    isolation = sys.modules.get("conformance.isolation")  # imported only where workers ran
    if isolation is not None:
        try:
            # idle workers end cleanly (in parallel, as long as a worker's own exit takes,
            # under a second); when stopping, they are killed at once
            isolation.close_all(grace=0 if _signalled else isolation.CLOSE_GRACE)
        except KeyboardInterrupt as exc:  # a stop signal while closing: the rest were killed
            code = _stopped(exc)
    if _signalled:  # everything is undone: leave without the interpreter's slow teardown
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    # Under `python -m conformance.cli` this file runs as __main__, while other modules (such
    # as cli_paper) register their commands on the importable conformance.cli.main: run the
    # console entry point of that module.
    from conformance.cli import console as _package_console

    _package_console()

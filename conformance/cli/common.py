"""What every command shares: the error policy, exit codes, option types, the output guard and
printing helpers. Each command is a module of its own (``conformance/cli/<command>.py``) that
imports this one; the package's ``__init__`` adds them to :data:`main`.

Error policy. Every error a user can cause (bad input, unknown measure, axis, value or profile,
a convention that refuses the input, a file that cannot be read, an input too large for the
machine's memory, an option value out of its range, an output that would overwrite an input)
ends as one line on stderr, ``conformance: error: <message>``, and exit status 2. Click's own
usage errors (an unknown option, a bad ``--format``) keep Click's format and also exit 2.
Anything else is a bug in conformance: it ends as one line, ``conformance: internal error:
<type>: <message>``, with a request to report it, and exit status 3 (distinct from 2, so a
script can tell its own bad input from our bug). The traceback is printed only when the
environment sets ``CONFORMANCE_DEBUG=1``. No traceback reaches a user otherwise.

Exit codes (:data:`EXIT`): 0 done; 1 ``run`` found a disagreement no convention explains; 2
bad input (``run``: also every entry ``--libs`` selects unavailable); 3 an internal error; 4
``run``: an entry selected by name could not run; 128 + N stopped by signal N (see ``conformance.cli.process``); 141 stdout's
reader went away.

Outputs (:func:`check_outputs`): before any work, every output path is resolved (its real path,
and its device and inode when it exists, so a symbolic or hard link is seen through) and refused
when it names an input or another output.

Text that reaches a terminal (:func:`shown`): an id holding a control character, a quote at its
start, or equal to ``all`` (the aggregate rows' id) is printed as a quoted string literal with
its control characters escaped, so no id can start a line of its own, move the cursor, or pass
for an aggregate row.
"""

from __future__ import annotations

import functools
import io as _stdio
import math
import os
import signal
import sys
import unicodedata
from contextlib import contextmanager
from typing import Iterable, NoReturn

import click

from conformance.conventions import ConventionError
from conformance.errors import ConformanceError, Stopped
from conformance.measures import Measure, MeasureError

DEFAULT_METRICS = "nDCG@10,AP,RR,P@10"
USER_ERRORS = (ConformanceError, ConventionError, MeasureError)
HUGE_CUTOFF = 10_000  # a cutoff at least this large and past every ranked list is warned about
INTERNAL_ERROR = 3  # exit status of a bug in conformance (2 is the user's bad input)
BROKEN_PIPE = 128 + 13  # stdout's reader went away: the status of a process killed by SIGPIPE
SOME_NAMED_MISSING = 4  # run: an entry selected by name in --libs could not run
EXIT = {
    0: "done (run: every disagreement explained; check-paper: the check ran, whatever the verdict)",
    1: "run: a disagreement no convention explains",
    2: "bad input or a bad option value (one line naming file, line and problem)",
    3: "an internal error of conformance (one line; CONFORMANCE_DEBUG=1 shows the traceback)",
    4: "run: nothing unexplained, but an entry selected by name in --libs could not run",
    130: "stopped by Ctrl-C (128 + N for signal N: 143 SIGTERM, 129 SIGHUP)",
    141: "stdout's reader went away (| head)",
}


class State:
    """What the process-level code (``conformance.cli.process``) needs to know of a command."""

    evaluated = False  # ``eval``'s output is complete (the console may leave at once)
    told: list[bool] = []  # the "stopped by" line was printed


def fail(message: str) -> NoReturn:
    one_line = " ".join(str(message).split())
    click.echo(f"conformance: error: {one_line}", err=True)
    raise click.exceptions.Exit(2)


def os_message(exc: OSError) -> str:
    if exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    return str(exc)


def discard_stdout() -> None:
    """Point stdout at /dev/null, so that what is still buffered for a reader that went away
    is not written again at exit (with "Exception ignored ... BrokenPipeError")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError, _stdio.UnsupportedOperation):
        pass


def no_memory(exc: MemoryError) -> str:
    from conformance.io.limits import not_enough_memory

    return not_enough_memory(exc)


def reports_errors(func):
    """Turn the errors a user can cause into one line on stderr and exit status 2."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except BrokenPipeError:
            # The reader stopped reading (``| head``): stop quietly, as Unix tools do.
            discard_stdout()
            raise click.exceptions.Exit(BROKEN_PIPE) from None
        except USER_ERRORS as exc:
            fail(str(exc))
        except OSError as exc:
            fail(os_message(exc))
        except MemoryError as exc:  # the input is too large for this machine: not a bug
            fail(no_memory(exc))

    return wrapper


def stopped(exc: KeyboardInterrupt) -> int:
    """One line for a stop signal; its exit status (a bare KeyboardInterrupt is SIGINT's)."""
    signum = exc.signum if isinstance(exc, Stopped) else signal.SIGINT
    if not State.told:
        State.told.append(True)
        click.echo(f"conformance: stopped by {signal.Signals(signum).name}", err=True)
    return 128 + signum


def internal_error(exc: BaseException) -> NoReturn:
    if os.environ.get("CONFORMANCE_DEBUG") == "1":
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    if isinstance(exc, MemoryError):
        fail(no_memory(exc))
    text = " ".join(str(exc).split())
    text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    click.echo(
        f"conformance: internal error: {text[:500]} (a bug in conformance, not in your input; "
        "please report it with the command you ran; CONFORMANCE_DEBUG=1 shows the traceback)",
        err=True,
    )
    raise click.exceptions.Exit(INTERNAL_ERROR)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    from conformance.errors import Notice

    text = " ".join(str(message).split())
    kind = "" if issubclass(category, Notice) else f"{category.__name__}: "
    click.echo(f"conformance: warning: {kind}{text[:300]}", err=True)


class Guarded(click.Group):
    """The exception boundary: a user's error is one line and exit 2 (``reports_errors``), an
    unexpected exception one line and exit 3 (``internal_error``); never a traceback."""

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
        except KeyboardInterrupt as exc:  # Ctrl-C or a stop signal (see ``process.console``)
            raise click.exceptions.Exit(stopped(exc)) from None
        except USER_ERRORS as exc:  # raised outside a command's own handler
            fail(str(exc))
        except Exception as exc:
            internal_error(exc)


def _print_version(ctx: click.Context, _param, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        from conformance.distribution import version_text

        click.echo(version_text())
        ctx.exit()


@click.group(cls=Guarded, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Print the version (and, from a git checkout, its commit) and exit.")
def main() -> None:
    """Ranking metrics (nDCG, AP, RR, P@k...) under named conventions, beside the libraries
    that compute them.

    Try: conformance eval --example
    """


# --- option values ------------------------------------------------------------------------------


class Tolerance(click.ParamType):
    """A finite number >= 0."""

    name = "X"

    def convert(self, value, param, ctx):
        if isinstance(value, float):
            return value
        try:
            x = float(str(value).replace("_", "!"))  # Python reads 1_0 as 10: a slip, not a number
        except ValueError:
            x = None
        if x is None or not math.isfinite(x) or x < 0:
            self.fail(f"expected a finite number >= 0 such as 1e-9, got {value!r}", param, ctx)
        return x


class Seconds(click.ParamType):
    """A time limit: a finite number of seconds > 0, or ``none`` (no limit, stored as 0)."""

    name = "SECONDS"

    def convert(self, value, param, ctx):
        if isinstance(value, float):
            return value
        text = str(value).strip()
        if text.lower() == "none":
            return 0.0
        try:
            x = float(text.replace("_", "!"))
        except ValueError:
            x = None
        if x is None or not math.isfinite(x) or x <= 0:
            self.fail(f"expected a number of seconds > 0 such as 30, or 'none' for no limit, "
                      f"got {value!r}", param, ctx)
        return x


@contextmanager
def about(option: str, value: str | None = None):
    """A user's error raised while ``option``'s value is read names the option (and the value
    as given): ``--set gain=bogus: gain 'bogus': expected 'linear', ...``."""
    try:
        yield
    except USER_ERRORS as exc:
        head = option if value is None else f"{option} {value}"
        raise ConformanceError(f"{head}: {exc}") from None


def libs_option(help_text: str):
    return click.option("--libs", default="all", show_default=True, metavar="all|NAME,NAME", help=help_text)


def lib_timeout_option(help_text: str):
    return click.option("--lib-timeout", type=Seconds(), default=None, metavar="SECONDS",
                        help=help_text + " [default: 300]")


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


def exclude_seen_option(func):
    """--exclude-seen TRAIN (eval and run): the training table whose pairs leave the run."""
    return click.option(
        "--exclude-seen", "exclude_seen", metavar="TRAIN", default=None,
        help="A training table (CSV/TSV/Parquet/Arrow with user and item columns, or TREC qrels): "
             "the items each user interacted with there are removed from that user's "
             "recommendations before measuring, as recommender libraries mask them; the rows "
             "removed are counted on stderr and in JSON output.")(func)


def seen_line(run) -> str | None:
    """One line: what --exclude-seen removed from ``run`` (None when it was not given)."""
    seen = getattr(run.counts, "seen", None)
    if seen is None:
        return None
    return (f"--exclude-seen {seen['source']}: {plural(seen['pairs'], 'training pair')} of "
            f"{plural(seen['users'], 'user')}; {plural(seen['removed'], 'recommended item')} removed "
            f"from {plural(seen['users_with_removed'], 'user')} of the run")


def reading(columns: str | None, max_input_bytes: str | None, max_line_bytes: str | None) -> dict:
    """The keyword arguments of ``load_qrels`` / ``load_run`` that :func:`input_options` give."""
    from conformance.io.limits import Limits
    from conformance.io.roles import parse_roles

    return {"columns": parse_roles(columns) if columns is not None else None,
            "limits": Limits.from_env(max_input_bytes=max_input_bytes, max_line_bytes=max_line_bytes)}


def profile_help(what: str = "The named conventions to evaluate under") -> str:
    """--profile's help: what a name may be (the list is long and changes as libraries are
    added, so it is given by ``conformance libs``)."""
    return (f"{what}: any library entry's name (trec_eval, "
            "sklearn, lightgbm, ir_measures, ranx, torchmetrics, xgboost, ... and configurations "
            "such as lightgbm:linear_gain) or trec_eval10 (the trec_eval 10 command line: scores "
            "kept as doubles, fractional labels truncated); 'conformance libs' lists them, "
            "'conformance libs --profile NAME' shows one with the facts behind each value.")


def set_option(help_text: str):
    return click.option("--set", "settings", multiple=True, metavar="AXIS=VALUE", help=help_text)


def overrides_of(settings) -> dict:
    """The axes ``--set`` overrides, parsed one at a time so an error names the one at fault."""
    from conformance import pipeline

    overrides: dict = {}
    for setting in settings:
        with about("--set", setting):
            overrides.update(pipeline.overrides_from_settings([setting]))
    return overrides


def select_entries(libs: str):
    from conformance.api import select_entries as select

    try:
        return select(libs)
    except ConventionError as exc:
        raise ConformanceError(f"--libs: {exc}") from None


# --- outputs never overwrite inputs -------------------------------------------------------------


def _identity(path: str) -> tuple[str, tuple[int, int] | None]:
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        return real, None
    return real, (st.st_dev, st.st_ino)


def check_outputs(outputs: dict[str, str | None], inputs: Iterable[str | os.PathLike | None]) -> None:
    """Refuse, before any work, an output (option -> path) that names an input or another
    output: by real path (symbolic links resolved) and by device and inode (hard links), and
    one whose folder does not exist. Raises ConformanceError naming the option and the path."""
    seen_inputs = []
    for p in inputs:
        if p is None or not isinstance(p, (str, os.PathLike)):
            continue
        p = os.fspath(p)
        seen_inputs.append((p, *_identity(p)))
    taken: list[tuple[str, str, tuple[int, int] | None]] = []
    for option, path in outputs.items():
        if not path:
            continue
        real, ident = _identity(path)
        for given, in_real, in_ident in seen_inputs:
            if real == in_real or (ident is not None and ident == in_ident):
                raise ConformanceError(f"{option} {path}: that is the input {given}; an output never "
                                       "overwrites an input: choose another file")
        for other, out_real, out_ident in taken:
            if real == out_real or (ident is not None and ident == out_ident):
                raise ConformanceError(f"{option} {path}: {other} names the same file; give each "
                                       "output a file of its own")
        if os.path.isdir(real):
            raise ConformanceError(f"{option} {path}: that is a directory; expected a file name")
        taken.append((f"{option} {path}", real, ident))


def check_folder(option: str, path: str | None) -> None:
    """An output whose folder must exist already (no ``make_parents``): say so before any work."""
    if path and not os.path.isdir(os.path.dirname(os.path.realpath(path))):
        raise ConformanceError(f"{option} {path}: the directory does not exist")


# --- printing -----------------------------------------------------------------------------------


def _plain(text: str) -> bool:
    return (text != "all" and not text.startswith(("'", '"'))
            and not any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs") for ch in text))


def shown(text: str) -> str:
    """``text`` as it may reach a terminal or a table: itself when plain, else a quoted literal
    with every control or format character escaped (``'q\\n1'``, ``'\\x1b[2J'``), and ``all``
    quoted (``'all'``) so that a query of that name is not the aggregate row."""
    if _plain(text):
        return text
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == "'":
            out.append("\\'")
        elif unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs"):
            code = ord(ch)
            named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch)
            out.append(named or (f"\\x{code:02x}" if code < 0x100 else
                                 f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"))
        else:
            out.append(ch)
    return "'" + "".join(out) + "'"


def plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def warn(text: str) -> None:
    click.echo(f"conformance: warning: {text}", err=True)


def describe(what: str, table) -> str:
    """One line: an input's rows read, used and ignored (with why), and lines skipped."""
    c = table.counts
    text = f"{what} {table.source}: {c.read} rows read, {c.used} used, {c.ignored} ignored"
    if c.reasons:
        text += " (" + ", ".join(f"{reason}: {n}" for reason, n in sorted(c.reasons.items())) + ")"
    extra = [f"{n} {kind} lines" for kind, n in (("comment", c.comments), ("blank", c.blank)) if n]
    if extra:
        text += "; " + ", ".join(extra) + " skipped"
    return text


def input_warnings(qrels, run, conv, measures: list[Measure]) -> list[str]:
    """One sentence per oddity of valid input that changes what is evaluated; nothing that is
    dropped or reinterpreted goes unsaid. ``conv`` None: no single profile (``conformance run``)."""
    import numpy as np

    out = []
    for what, table in (("qrels", qrels), ("run", run)):
        c = table.counts
        # rows removed by --exclude-seen were asked for: its own line says how many (seen_line)
        unasked = {r: n for r, n in c.reasons.items() if r != "seen in training"}
        if unasked:
            why = ", ".join(f"{reason}: {n}" for reason, n in sorted(unasked.items()))
            out.append(f"{what} {table.source}: {plural(sum(unasked.values()), 'row')} of {c.read} "
                       f"ignored ({why})")
        if getattr(c, "extra_fields", 0):
            out.append(
                f"{what} {table.source}: {plural(c.extra_fields, 'row has', 'rows have')} more than "
                "6 fields; the fields after the sixth were ignored, as trec_eval does (a trailing "
                "'# comment' is such fields; a file whose lines end in a bare CR is read as one line)")
    listed = getattr(run.counts, "ranked_lists", None)
    if listed:
        out.append(f"run {run.source}: the list column {listed!r} holds each user's ranking: its order "
                   "is the order (first item rank 1; each library is given the rank negated as its score)")
    ranked_by = getattr(run.counts, "score_from_rank", None)
    if ranked_by:
        out.append(f"run {run.source}: no score column: the rank column {ranked_by!r} is the order "
                   "(rank 1 first; each library is given the rank negated as its score)")
    qrels_q = set(qrels.present_qids().tolist())
    run_q = set(run.present_qids().tolist())
    run_only, qrels_only = len(run_q - qrels_q), len(qrels_q - run_q)
    rule = conv.query_set if conv is not None else None
    if run_only:
        out.append(f"{plural(run_only, 'query', 'queries')} of the run {'has' if run_only == 1 else 'have'} "
                   "no judgments in the qrels and {} not scored".format("is" if run_only == 1 else "are"))
    if qrels_only:
        effect = {"qrels": "scored 0 (query_set=qrels)", "run": "not scored (query_set=run)"}.get(
            rule, "scored as each library's profile says")
        out.append(f"{plural(qrels_only, 'judged query', 'judged queries')} of the qrels "
                   f"{'is' if qrels_only == 1 else 'are'} not in the run: {effect}")
    if "all" in run_q or "all" in qrels_q:
        out.append("a query is named 'all': its per-query rows show it quoted ('all'); the rows "
                   "of the unquoted all are the aggregates")
    label = np.asarray(qrels.label, dtype=np.float64)
    negative = int((label < 0).sum())
    if negative:
        effect = {"unjudged": "read as not relevant, gain 0, not in the ideal (negative_labels=unjudged)",
                  "keep": "kept as negative gains (negative_labels=keep)"}.get(
            conv.negative_labels if conv is not None else None, "each library's profile decides")
        out.append(f"qrels {qrels.source}: {plural(negative, 'negative label')}: {effect}")
    fractional = int((label != np.trunc(label)).sum())
    if fractional:
        effect = {"int_truncate": "truncated toward zero (label_type=int_truncate)",
                  "float": "used as they are (label_type=float)",
                  "float32": "used as the nearest float32 numbers (label_type=float32)"}.get(
            conv.label_type if conv is not None else None, "each library's profile decides")
        out.append(f"qrels {qrels.source}: {plural(fractional, 'fractional label')}: {effect}")
    no_rank = int(np.isnan(np.asarray(run.rank, dtype=np.float64)).sum())
    if 0 < no_rank < len(run):  # all NaN: the input has no rank column (JSON), nothing to say
        out.append(f"run {run.source}: {plural(no_rank, 'rank')} (field 4) not a number: "
                   "unused unless rank_source=rank_column")
    if len(run):
        longest = int(np.bincount(np.asarray(run.qcode)).max())
        for m in measures:
            # P@10 over short lists is common and k_beyond_list says what it gives; a cutoff
            # past every list and this large is more likely a slip of the keyboard
            if m.cutoff is not None and m.cutoff > longest and m.cutoff >= HUGE_CUTOFF:
                out.append(f"{m.text}: the cutoff {m.cutoff} is longer than every ranked list "
                           f"(the longest has {plural(longest, 'document')})")
    return out


def with_progress(work, quiet: bool, label: str, total: int | None = None):
    """``work(progress)`` with a transient progress bar on stderr when it is a terminal (stdout
    carries the answer, which may be piped or compared); ``progress`` None otherwise.
    ``progress`` takes (stage, done, total), or a name per finished item when ``total`` is
    given."""
    if quiet or not sys.stderr.isatty():
        return work(None)
    from rich.console import Console
    from rich.progress import Progress

    with Progress(transient=True, console=Console(stderr=True)) as bar:
        task = bar.add_task(label, total=total)
        if total is not None:
            return work(lambda name: bar.update(task, advance=1, description=name))

        def progress(stage: str, done: int, of: int) -> None:
            bar.update(task, description=stage, completed=done, total=max(of, 1))

        return work(progress)

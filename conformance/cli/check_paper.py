"""``conformance check-paper``: which conventions and libraries reproduce the values a paper reports.

Added to ``conformance.cli.main`` by the package. The engine is
``conformance.paper``; this module reads the options, loads the inputs, shows progress and
writes the answer: the plain-text summary on stdout, ``--json OUT`` the full answer with sorted
keys (identical input, identical bytes), ``--html OUT`` the HTML report.

Every entry is judged by its declared profile first; the libraries the verdict rests on (the
entries whose profile reproduces the values, trec_eval, and the entries ``--libs`` names) are
then run live, all at once, each in a worker process of its own (``api.check_paper``).

Exit status: 0 when some convention set reproduces every reported value, 1 when none does, 2 on
bad input (an unreadable file, a reported value that is not ``MEASURE=NUMBER``, an unknown
measure, a percentage above 100%), 3 on an internal error, 128 + N when stopped by signal N.
"""

from __future__ import annotations

import sys

import click

from conformance import outputs
from conformance.cli.common import (about, check_folder, check_outputs, describe, exclude_seen_option,
                                    input_options, lib_timeout_option, overrides_of, profile_help,
                                    reading, reports_errors, seen_line, select_entries, set_option)
from conformance.errors import ConformanceError


def _html_writer():
    """A writer of the check-paper HTML report (``conformance.report.html.render_paper``, written
    whole or not at all), or a clear error while the report does not exist yet."""
    try:
        from conformance.report import html as report_html
    except ModuleNotFoundError as exc:
        if exc.name not in ("conformance.report", "conformance.report.html"):
            raise
        report_html = None
    render = getattr(report_html, "render_paper", None)
    if render is None:
        # TODO: remove once conformance.report.html.render_paper(result) exists.
        raise ConformanceError(
            "--html: the check-paper HTML report is not yet available "
            "(conformance.report.html.render_paper does not exist yet); use --json for now"
        )
    return lambda result, path: outputs.write_text(path, render(result), make_parents=True)


@click.command("check-paper")
@click.option("--qrels", "qrels_path", required=True, metavar="FILE", help="Relevance judgments.")
@click.option("--run", "run_path", required=True, metavar="FILE", help="The run the paper evaluated.")
@click.option(
    "--reported", "reported_texts", multiple=True, metavar="MEASURE=VALUE",
    help="A value the paper reports, as printed: nDCG@10=0.4312, AP=27.10 (a percentage), "
    "'P(rel=2)@5=0.31'; repeatable. The printed decimals set the rounding interval.",
)
@click.option(
    "--reported-per-query", "per_query_path", metavar="FILE",
    help="Per-query values in trec_eval -q format (measure qid value), matched query by query; "
    "'all' lines are aggregates.",
)
@click.option("--digits", type=int, default=None, metavar="N",
              help="Decimals the paper printed, overriding what each value shows.")
@click.option("--no-percent", is_flag=True,
              help="Read values above 1 as they are, not as percentages.")
@click.option("--libs", default="all", show_default=True, metavar="all|NAME,NAME",
              help="Library entries to run live besides those the verdict rests on: 'all' (none "
                   "more), entry names or library names. Every entry is judged by its profile "
                   "whatever --libs says.")
@click.option("--no-live", is_flag=True,
              help="Do not run the installed libraries; judge entries by their declared profiles.")
@click.option("--json", "json_path", metavar="OUT", help="Write the full answer as JSON.")
@click.option("--html", "html_path", metavar="OUT", help="Write the HTML report.")
@click.option("--quiet", is_flag=True, help="No progress, row counts or warnings on stderr.")
@click.option("--profile", "profile_name", default=None, metavar="NAME",
              help=profile_help("Your own conventions, judged against the reported values "
                                "beside the library entries"))
@set_option("Override one axis of your conventions (of --profile, else trec_eval's), e.g. "
            "--set duplicates=first to read a run that lists a docid twice; repeatable.")
@lib_timeout_option("Stop a library that has not answered after this many seconds (> 0); "
                    "'none': no limit.")
@exclude_seen_option
@input_options
@reports_errors
def command(qrels_path, run_path, reported_texts, per_query_path, digits, no_percent,
            libs, no_live, json_path, html_path, quiet, profile_name, settings, lib_timeout,
            exclude_seen, columns, max_input_bytes, max_line_bytes):
    """Which convention sets and library entries reproduce the values a paper reports?

    Sweeps every combination of the conventions that can change the reported measures (gain,
    discount, ideal, tie rule, score precision, relevance threshold, depth, empty queries, query
    set, ...), keeps those that give every reported value within its rounding interval, and
    judges each library entry: by its declared profile, and live (the installed library run)
    for the entries the verdict rests on.

    Exit status: 0 when some convention set reproduces every reported value, 1 when none does,
    2 on bad input.

    Example: conformance check-paper --qrels qrels.txt --run run.txt --reported nDCG@10=0.4312
    --reported AP=27.10
    """
    from conformance import api, paper
    from conformance.paper.evidence import NOT_NEEDED

    percent = not no_percent
    if digits is not None and not 0 <= digits <= paper.MAX_DIGITS:
        raise ConformanceError(f"--digits must be between 0 and {paper.MAX_DIGITS}, got {digits}")
    # before the sweep, not after it: no output may name an input or another output
    check_outputs({"--json": json_path, "--html": html_path},
                  [qrels_path, run_path, per_query_path, exclude_seen])
    check_folder("--json", json_path)
    reported = [paper.parse_reported(t, digits=digits, percent=percent) for t in reported_texts]
    if not reported and not per_query_path:
        raise ConformanceError(
            "nothing to check: give --reported MEASURE=VALUE (such as nDCG@10=0.4312) or "
            "--reported-per-query FILE"
        )
    write_html = _html_writer() if html_path else None
    select_entries(libs)  # an unknown name is refused before any file is read
    overrides = overrides_of(settings)
    if profile_name is not None:
        with about("--profile"):
            api.profile(profile_name, reported[0].measure if reported else "nDCG@10")
    how = reading(columns, max_input_bytes, max_line_bytes)

    def ready(qrels, run, per_query) -> None:
        if quiet:
            return
        click.echo(f"conformance: {describe('qrels', qrels)}", err=True)
        click.echo(f"conformance: {describe('run', run)}", err=True)
        seen = seen_line(run)
        if seen is not None:
            click.echo(f"conformance: {seen}", err=True)
        if per_query is not None and per_query.unknown_measures:
            shown = ", ".join(per_query.unknown_measures[:8])
            more = len(per_query.unknown_measures) - 8
            click.echo(
                f"conformance: {per_query.source}: skipped measures conformance does not compute: "
                f"{shown}{f' and {more} more' if more > 0 else ''}", err=True)

    result = _with_progress(
        lambda progress: api.check_paper(
            qrels_path, run_path, list(reported_texts), libs=libs, live=not no_live,
            digits=digits, percent=percent, per_query_file=per_query_path, progress=progress,
            on_ready=ready, profile=profile_name, overrides=overrides or None,
            timeout=lib_timeout, exclude_seen=exclude_seen, **how),
        quiet,
    )
    if not quiet:
        for e in result.entries:  # a library the verdict rests on that could not be run
            if e.not_run is not None and e.not_run != NOT_NEEDED:
                click.echo(f"conformance: warning: {e.name} {e.not_run.removeprefix('not run: ')}; "
                           "judged by its declared profile only", err=True)
    if not quiet and result.sweep.facts.scored_queries == 0:
        click.echo("conformance: warning: the run and the qrels share no query", err=True)
    # the files first, whole or not at all (see ``conformance.outputs``): a reader of stdout
    # that goes away (| head) or a stop signal during the summary cannot cost them
    if json_path:
        outputs.write_text(json_path, result.dumps())
    if write_html is not None:
        write_html(result, html_path)
    click.echo(result.render(), nl=False)
    raise click.exceptions.Exit(0 if result.reproducible else 1)


def _with_progress(work, quiet: bool):
    if quiet or not sys.stderr.isatty():
        return work(None)
    from rich.console import Console
    from rich.progress import Progress

    with Progress(transient=True, console=Console(stderr=True)) as bar:
        task = bar.add_task("check-paper", total=None)

        def progress(stage: str, done: int, total: int) -> None:
            bar.update(task, description=stage, completed=done, total=max(total, 1))

        return work(progress)

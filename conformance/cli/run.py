"""``conformance run``: every library entry beside the reference, every disagreement explained.

The engine is :func:`conformance.api.compare` (``conformance.runner``); this module reads the
options, reports the inputs and the libraries that cannot be used on stderr, writes ``--json``
(``RunResult.dumps``) and ``--html`` (``conformance.report.html``) whole before printing, and
prints the text answer or, with ``--format json``, the JSON document on stdout.

The text answer comes first (``conformance.run_text``): one table per measure, the entries
grouped into agreement classes with their values, each class labelled by the conventions that
set it apart from trec_eval's class (or the ``--profile`` entry's); on the corpus one table per
measure family over every case. Then the entries that ran and any that could not, every
unexplained finding and library error in full, and the summary line. ``--details`` adds the
per case x measure tables on the corpus and the explanations of every pair of classes
(``conformance.summary``); ``--json`` and ``--html`` hold everything. ``--quiet`` only silences
stderr's progress and input warnings. ``--exclude-seen TRAIN`` (with ``--qrels``/``--run``):
the training table's pairs are removed from the run before any entry or the reference sees it
(``conformance.io.seen``), and one stderr line says how many. ``--format json``: the document of ``--json`` (same keys)
with ``table`` added.

Exit status: 0 when every disagreement is explained, 1 when any is unexplained, 4 when no
disagreement is unexplained but some entry selected by name in ``--libs`` (an entry or a
library name, not ``all``) could not run (the summary line says how many), 2 on bad input and
when every entry ``--libs`` selects is unavailable, 3 on an internal error, 128 + N when
stopped by signal N (130 for Ctrl-C).
"""

from __future__ import annotations

import os

import click

from conformance.cli.common import (Tolerance, about, check_outputs, describe, exclude_seen_option,
                                    input_options, input_warnings, lib_timeout_option, libs_option,
                                    overrides_of, profile_help, reading, reports_errors,
                                    seen_line, select_entries, set_option, shown, warn, with_progress)
from conformance.errors import ConformanceError
from conformance.cli.common import SOME_NAMED_MISSING
from conformance.measures import parse_measures


@click.command("run")
@libs_option("Library entries to run: 'all', entry names (lightgbm:linear_gain) or library names "
             "(every entry of that library). Each pair of entries named is explained directly.")
@click.option("--cases", "cases_dir", metavar="DIR",
              help="A directory of case files (default: the bundled edge-case corpus).")
@click.option("--qrels", "qrels_path", metavar="FILE", help="Your own qrels (with --run).")
@click.option("--run", "run_path", metavar="FILE", help="Your own run (with --qrels).")
@click.option("-m", "--metrics", "metric_lists", multiple=True, metavar="LIST",
              help="Measures to compare (default: each case's own list; for --qrels/--run "
                   "nDCG@10,nDCG,AP,RR,P@10,R@100).")
@click.option("--json", "json_path", metavar="OUT", help="Write the full comparison as JSON.")
@click.option("--html", "html_path", metavar="OUT", help="Write the HTML report.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="What stdout gets: the text answer, or the JSON document of --json.")
@click.option("--tol", type=Tolerance(), default=None, metavar="X",
              help="One tolerance for every comparison, a number >= 0 (default: each entry's own, "
                   "1e-12 for float64 libraries and 1e-6 for float32 ones).")
@lib_timeout_option("Stop a library that has not answered one case after this many seconds (> 0), "
                    "and record that as its error for the case; 'none': no limit.")
@click.option("--quiet", is_flag=True, help="No progress bar and no warnings about the input.")
@click.option("--details", is_flag=True,
              help="Also every case's own table (on the corpus) and the explanation of every "
                   "pair of disagreeing classes, not only each class against the base class.")
@click.option("--profile", "profile_name", default=None, metavar="NAME",
              help=profile_help("Your own conventions, shown beside the entries as the "
                                "reference's value under them, with the classes labelled "
                                "against that entry's class (default: trec_eval's, not shown)"))
@set_option("Override one axis of your conventions (of --profile, else trec_eval's), e.g. "
            "--set duplicates=first to read a run that lists a docid twice (every library is "
            "then given its first listing); repeatable.")
@exclude_seen_option
@input_options
@reports_errors
def command(libs, cases_dir, qrels_path, run_path, metric_lists, json_path, html_path, fmt, tol,
            lib_timeout, quiet, details, profile_name, settings, exclude_seen, columns, max_input_bytes,
            max_line_bytes):
    """Run library entries beside the reference over the edge-case corpus (or your files) and
    explain every disagreement by the conventions that cause it.

    Each library runs in its own worker process: one that raises, aborts, segfaults or hangs
    (past --lib-timeout) gets that recorded as its error for the case, and the run goes on.

    Exit status: 0 when every disagreement is explained, 1 when any is unexplained, 4 when
    some entry named in --libs could not run, 2 on bad input or when no entry --libs selects
    can run, 3 on an internal error, 128 + N when stopped by signal N (130 for Ctrl-C).
    """
    from conformance import api, outputs, run_text, summary

    chosen = select_entries(libs)  # an unknown name is refused before any file is read
    metrics = parse_measures(",".join(metric_lists)) if metric_lists else None
    overrides = overrides_of(settings)
    if profile_name is not None:
        with about("--profile"):
            api.profile(profile_name, metrics[0] if metrics else "nDCG@10")
    if (qrels_path is None) != (run_path is None):
        raise ConformanceError("--qrels and --run go together")
    if qrels_path is not None and cases_dir is not None:
        raise ConformanceError("give either --cases or --qrels/--run, not both")
    if exclude_seen is not None and qrels_path is None:
        raise ConformanceError("--exclude-seen masks your own run: give it with --qrels and --run")
    # the entries selected by name (an entry's or a library's), whose absence the exit says
    asked = [] if libs.strip() == "all" else [e.name for e in chosen]
    check_outputs({"--json": json_path, "--html": html_path}, [qrels_path, run_path, cases_dir, exclude_seen])
    how = reading(columns, max_input_bytes, max_line_bytes) if qrels_path is not None else {}

    def ready(subjects, status):
        if qrels_path is not None and not quiet:
            s = subjects[0]
            click.echo(f"conformance: {describe('qrels', s.qrels)}", err=True)
            click.echo(f"conformance: {describe('run', s.run)}", err=True)
            if seen_line(s.run) is not None:
                click.echo(f"conformance: {seen_line(s.run)}", err=True)
            for text in input_warnings(s.qrels, s.run, None, s.measures):
                warn(text)
        for name, st in status.items():  # even with --quiet: a library missing from the answer
            if not st.available:
                slow = st.state == "import_timed_out"
                hint = "; raise --lib-timeout to wait longer" if slow else ""
                warn(f"{name} {st.describe()}{hint}; it is reported as unavailable")
        if status and not any(st.available for st in status.values()):
            raise ConformanceError(
                f"--libs {libs}: no entry it selects can run here ("
                + "; ".join(f"{n}: {st.describe()}" for n, st in status.items()) + ")")

    total = None
    if qrels_path is None:
        from conformance.io.cases import load_cases

        total = len(load_cases(cases_dir))
    result = with_progress(
        lambda progress: api.compare(qrels_path, run_path, metrics, libs, tolerance=tol,
                                     timeout=lib_timeout, cases=cases_dir,
                                     name=shown(os.path.basename(run_path)) if run_path else "input",
                                     progress=progress, on_ready=ready, profile=profile_name,
                                     overrides=overrides or None, exclude_seen=exclude_seen, **how),
        quiet, "cases", total=total if total is not None else 1)
    # the files first, whole or not at all: a reader of stdout that goes away (| head) or a
    # stop signal during the summary cannot cost them
    if json_path:
        outputs.write_text(json_path, result.dumps())
    if html_path:
        from conformance.report import html as report_html

        outputs.write_text(html_path, report_html.render(result), make_parents=True)
    if fmt == "json":
        click.echo(_json_with_table(result))
    else:
        text = run_text.render(result, details=details, named=asked)
        if details:  # the explanations of every pair before the summary line, which stays last
            body, last = text.rsplit("\n", 1)
            text = f"{body}\n{summary.explanations(result)}\n\n{last}"
        click.echo(text)
    raise click.exceptions.Exit(exit_status(result, asked))


def exit_status(result, asked: list[str]) -> int:
    """1: an unexplained disagreement; else 4: an entry selected by name could not run."""
    if result.summary["unexplained"]:
        return 1
    return SOME_NAMED_MISSING if any(not result.available.get(n, True) for n in asked) else 0


def _json_with_table(result) -> str:
    """The document of --json with the value tables added under ``table`` (NaN as null)."""
    import json
    import math

    table = result.table()
    for row in table:
        for cls in row["classes"]:
            for e in cls["entries"]:
                if isinstance(e["mean"], float) and math.isnan(e["mean"]):
                    e["mean"] = None
    return json.dumps({**result.to_json(), "table": table}, sort_keys=True, indent=1, allow_nan=False)

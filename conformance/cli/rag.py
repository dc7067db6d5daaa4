"""``conformance rag`` and ``conformance correlate``: RAG pipeline variants, from retrieval
conventions to answer quality.

Added to ``conformance.cli.main`` by the package. The engine
is ``conformance.rag``; this module reads the options, calls it, prints the summary
(``conformance.rag.summary``) on stdout and writes ``--json`` (``conformance.rag.report_data``)
and ``--html`` (``conformance.report.rag_html``). Warnings go to stderr (``--quiet`` silences
them).

Exit status (``conformance rag``):

- 0: the evaluation ran (and every ``--fail-under`` threshold was met); also after ``--dry-run``;
- 2: bad input (a file, line and field named), an unknown option value, or a judge or the
  example needs the ``rag`` extra and it is not installed (the message gives the pip command);
- 3: an internal error;
- 4: a ``--fail-under METRIC=VALUE`` threshold was not met: some variant's mean of METRIC over
  all gold queries is below VALUE (each miss is one line on stderr; the outputs are written);
- 5: the judge failed on more than ``--max-judge-failures`` (default 0.1) of the verdicts asked
  (unreadable replies, failed requests, exceptions in a user's judge); checked before 4.

Before an HTTP judge (``--judge-url``) is called, the number of requests and an estimate of the
tokens sent are printed on stderr; ``--dry-run`` stops there.
"""

from __future__ import annotations

import click

from conformance import outputs
from conformance.cli.common import check_folder, check_outputs, reports_errors
from conformance.errors import ConformanceError


def _check_outputs(outputs: dict[str, str | None], inputs: list) -> None:
    """Before any work: no output names an input or another output, and each one's folder
    exists (the writes make no folders)."""
    check_outputs(outputs, inputs)
    for option, path in outputs.items():
        check_folder(option, path)


def _warn(result, quiet: bool) -> None:
    if quiet:
        return
    for w in result.warnings:
        click.echo(f"conformance: warning: {w}", err=True)


def _emit(result, json_path: str | None, html_path: str | None) -> None:
    from conformance.rag import dumps, render

    click.echo(render(result), nl=False)
    if json_path:
        outputs.write_text(json_path, dumps(result))
    if html_path:
        from conformance.report.rag_html import render as render_html

        outputs.write_text(html_path, render_html(result))


@click.command("rag")
@click.option("--qrels", "gold_path", metavar="GOLD", help="The gold file (RAG JSONL: qid, query, gold_doc_ids, ...).")
@click.option("--variant", "variants", multiple=True, metavar="NAME=FILE",
              help="A pipeline variant's output JSONL (qid, retrieved, answer); repeatable.")
@click.option("--corpus", "corpus_path", metavar="FILE", help="doc_id -> text (JSONL), for outputs without texts.")
@click.option("--k", "ks", default="1,3,5,10", show_default=True, metavar="LIST", help="Cutoffs.")
@click.option("--profile", "profile_name", default="trec_eval", show_default=True, metavar="NAME",
              help="The conventions of the retrieval values (a profile or a library entry).")
@click.option("--judge", default="overlap", show_default=True, metavar="NAME|module:name",
              help="overlap (deterministic), embedding (the rag extra) or your own module:name.")
@click.option("--judge-url", metavar="URL", help="A chat-completions endpoint to judge with instead.")
@click.option("--judge-model", metavar="NAME", help="The model name sent to --judge-url.")
@click.option("--judge-timeout", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True,
              metavar="SECONDS", help="Seconds to wait for one --judge-url reply.")
@click.option("--judge-workers", type=click.IntRange(min=1), default=4, show_default=True, metavar="N",
              help="Concurrent --judge-url requests.")
@click.option("--stopwords", type=click.Choice(["en", "de", "fr", "es", "none"]), default="en", show_default=True,
              help="The function words the overlap judge ignores.")
@click.option("--compare-judge", metavar="NAME|module:name", help="A second judge; their agreement is reported.")
@click.option("--graded", is_flag=True, help="Faithfulness from graded verdicts 0 / 1 / 2.")
@click.option("--by", "by", default="query_class", show_default=True, metavar="FIELD",
              help="Slice by this gold field ('none': no slices).")
@click.option("--context-k", type=click.IntRange(min=1), metavar="N", help="The generator saw the first N retrieved passages (default: all).")
@click.option("--correlate", is_flag=True, help="Rank every retrieval metric and convention by how well it tracks answer quality.")
@click.option("--quality", default="correctness", show_default=True, metavar="SOURCE|FILE",
              help="Answer quality for --correlate: correctness, faithfulness, relevance or a file of scores.")
@click.option("--rank-by", type=click.Choice(["spearman", "pearson", "kendall"]), default="spearman", show_default=True)
@click.option("--bootstrap", "resamples", type=click.IntRange(min=1), default=1000, show_default=True, metavar="N", help="Resamples.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap resamples.")
@click.option("--example", is_flag=True, help="Evaluate the bundled example (three variants, 40 queries).")
@click.option("--precomputed", is_flag=True,
              help="With --example: use the committed variant outputs even when the rag extra could rebuild them.")
@click.option("--json", "json_path", metavar="OUT", help="Write everything as JSON.")
@click.option("--html", "html_path", metavar="OUT", help="Write the HTML report.")
@click.option("--missing", type=click.Choice(["fail", "skip"]), default="fail", show_default=True,
              help="A gold query a variant has no output for: a failure (generation scores 0) or left out.")
@click.option("--fail-under", "fail_under", multiple=True, metavar="METRIC=VALUE",
              help="Exit 4 when a variant's mean METRIC (as named in the table) is below VALUE; repeatable.")
@click.option("--max-judge-failures", type=click.FloatRange(0, 1), default=0.1, show_default=True, metavar="SHARE",
              help="Exit 5 when more than this share of the judge's verdicts failed.")
@click.option("--judge-repeat", type=click.IntRange(1, 2), default=1, show_default=True, metavar="N",
              help="2: ask the judge twice and report its self-consistency (without --compare-judge).")
@click.option("--dry-run", is_flag=True, help="Read the inputs, print the judge's cost estimate, judge nothing.")
@click.option("--quiet", is_flag=True, help="No warnings on stderr.")
@reports_errors
def command(gold_path, variants, corpus_path, ks, profile_name, judge, judge_url, judge_model, judge_timeout,
            judge_workers, stopwords, compare_judge,
                graded, by, context_k, correlate, quality, rank_by, resamples, seed, example, precomputed,
                json_path, html_path, missing, fail_under, max_judge_failures, judge_repeat, dry_run, quiet):
    """Evaluate RAG pipeline variants over one gold file: retrieval under named conventions with
    their spread across libraries, faithfulness, answer relevance and correctness, per-query
    diagnoses, paired bootstrap comparisons, per-slice tables and, with --correlate, which
    retrieval metric tracks answer quality.

    Example: conformance rag --qrels gold.jsonl --variant base=out_base.jsonl --variant hybrid=out_hybrid.jsonl
    """
    from conformance.rag import harness

    cutoffs = harness.parse_ks(ks)  # before the example is prepared or any file is read
    thresholds = _parse_fail_under(fail_under, cutoffs, graded)
    by = None if by in ("none", "") else by
    if example:
        if gold_path or variants or corpus_path:
            raise ConformanceError("--example evaluates the bundled files; give either --example or --qrels and --variant")
        from conformance.rag.example import run as example_run

        gold_path, variant_paths, context_k_example, note = example_run.prepare(live=not precomputed, quiet=quiet)
        if not quiet:
            click.echo(f"conformance: {note}", err=True)
        context_k = context_k if context_k is not None else context_k_example
        correlate = True
        html_path = html_path or "rag-example.html"
    else:
        if not gold_path or not variants:
            missing = " and ".join(n for n, v in (("--qrels", gold_path), ("--variant", variants)) if not v)
            raise ConformanceError(f"missing {missing}: give --qrels GOLD --variant NAME=FILE, or --example")
        variant_paths = harness.parse_variants(variants)
    inputs = [gold_path, corpus_path, *variant_paths.values()]
    quality_source = quality
    if quality not in harness.QUALITY_SOURCES:
        from conformance.rag.inputs import read_quality

        inputs.append(quality)
        quality_source = read_quality(quality)
    _check_outputs({"--json": json_path, "--html": html_path}, inputs)
    result = harness.evaluate_variants(
        gold_path, variant_paths, cutoffs, profile=profile_name, judge=judge, judge_url=judge_url,
        judge_model=judge_model, compare_judge=compare_judge, graded=graded, by=by, corpus=corpus_path,
        context_k=context_k, correlate=correlate, quality=quality_source, rank_by=rank_by, resamples=resamples,
        seed=seed, missing=missing, judge_timeout=judge_timeout, judge_workers=judge_workers, stopwords=stopwords,
        judge_repeat=judge_repeat, before_judging=_before_judging(dry_run, quiet))
    if example:
        example_run.relabel(result, variant_paths)
    _warn(result, quiet)
    _emit(result, json_path, html_path)
    if example and not quiet:
        click.echo(f"conformance: wrote {html_path}", err=True)
    failures = result.judge_failures or {"asked": 0, "failed": 0}
    if failures["asked"] and failures["failed"] / failures["asked"] > max_judge_failures:
        click.echo(f"conformance: error: {failures['failed']} of {failures['asked']} judge verdicts failed "
                   f"(more than --max-judge-failures {max_judge_failures:g}): see the warnings", err=True)
        raise click.exceptions.Exit(5)
    missed = _missed(result, thresholds)
    for line in missed:
        click.echo(f"conformance: fail-under: {line}", err=True)
    if missed:
        raise click.exceptions.Exit(4)


def _parse_fail_under(texts, ks, graded) -> list[tuple[str, float]]:
    from conformance.rag.harness import generation_names
    from conformance.rag.retrieval import table_measures

    known = [m.text for m in table_measures(ks)] + generation_names(graded)
    out = []
    for t in texts:
        name, sep, value = t.rpartition("=")
        name = name.strip()
        try:
            v = float(value)
        except ValueError:
            v = None
        if not sep or not name or v is None:
            raise ConformanceError(f"--fail-under {t!r}: expected METRIC=VALUE, such as correctness=0.8")
        if name not in known:
            raise ConformanceError(f"--fail-under {t!r}: no metric {name!r} in the table: expected one of "
                                   + ", ".join(known))
        out.append((name, v))
    return out


def _missed(result, thresholds) -> list[str]:
    lines = []
    for name, value in thresholds:
        for variant, row in result.table["all"].items():
            est = row[name].interval.estimate
            if est is None or est < value:
                shown = "no value" if est is None else f"{est:.4f}"
                lines.append(f"variant {variant}: {name} {shown} < {value:g}")
    return lines


def _before_judging(dry_run: bool, quiet: bool):
    def show(estimate: dict) -> None:
        for est in estimate.get("http", []):
            click.echo(f"conformance: judge: {est['requests']} requests ({est['support_requests']} support, "
                       f"{est['relevance_requests']} relevance), {est['characters']:,} characters, about "
                       f"{est['tokens_estimate']:,} tokens sent", err=True)
        if dry_run:
            if not estimate.get("http"):
                click.echo(f"conformance: judge: {estimate['support_items']} support and "
                           f"{estimate['relevance_items']} relevance items for {', '.join(estimate['judges'])}",
                           err=True)
            click.echo("conformance: --dry-run: nothing judged", err=True)
            raise click.exceptions.Exit(0)

    return show


@click.command("correlate")
@click.option("--metrics-from", "sources", multiple=True, required=True, metavar="RUN_OR_RAG_JSON",
              help="A conformance rag --json output, or a run (TREC or JSONL) with --qrels; repeatable for runs.")
@click.option("--qrels", "qrels_path", metavar="FILE", help="Judgments, for --metrics-from RUN.")
@click.option("--quality", "quality_path", required=True, metavar="FILE",
              help="Per-query quality scores: 'qid score' or 'variant qid score' lines, or JSONL.")
@click.option("--k", "ks", default="1,3,5,10", show_default=True, metavar="LIST", help="Cutoffs (runs only).")
@click.option("--profile", "profile_name", default="trec_eval", show_default=True, metavar="NAME")
@click.option("--by", "by", default="query_class", show_default=True, metavar="FIELD",
              help="Slice by this gold field when --qrels is a RAG JSONL file ('none': no slices).")
@click.option("--rank-by", type=click.Choice(["spearman", "pearson", "kendall"]), default="spearman", show_default=True)
@click.option("--bootstrap", "resamples", type=click.IntRange(min=1), default=1000, show_default=True, metavar="N")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "json_path", metavar="OUT", help="Write the study as JSON.")
@click.option("--quiet", is_flag=True, help="No warnings on stderr.")
@reports_errors
def correlate_command(sources, qrels_path, quality_path, ks, profile_name, by, rank_by, resamples, seed,
                      json_path, quiet):
    """Which retrieval metric, under which conventions, tracks answer quality: Spearman, Pearson
    and Kendall of every measure (F1, Fe, T at a grid of alpha, nDCG, P, R, AP, RR, hit rate)
    under every library entry's conventions, with bootstrap intervals, overall, per K/N_p
    bucket and per slice.

    Example: conformance correlate --metrics-from rag.json --quality likert.txt
    """
    from conformance.rag import correlate as engine
    from conformance.rag.harness import parse_ks
    from conformance.rag.inputs import read_quality

    cutoffs = parse_ks(ks)
    _check_outputs({"--json": json_path}, [*sources, qrels_path, quality_path])
    quality = read_quality(quality_path)
    study, warnings = engine.correlate(list(sources), quality, qrels_path=qrels_path, ks=cutoffs,
                                       profile=profile_name, by=None if by in ("none", "") else by,
                                       rank_by=rank_by, resamples=resamples, seed=seed)
    if not quiet:
        for w in warnings:
            click.echo(f"conformance: warning: {w}", err=True)
    click.echo(engine.render(study), nl=False)
    if json_path:
        outputs.write_text(json_path, engine.dumps(study))

"""``conformance infer``: which convention sets a user's own metric function follows.

Added to ``conformance.cli.main`` by the package. The engine is ``conformance.infer``; this
module reads the options, loads the function (``MODULE:FUNCTION``, or the command itself under
``--calling shell``), and writes the answer: the text on stdout, ``--json OUT`` the full answer
with sorted keys (the same function, the same bytes), ``--html OUT`` the page.

Exit status: 0 when some convention set is consistent with every case, 1 when none is (the
smallest disagreeing case is printed), 2 on bad input (a target that does not import, a
function that cannot take three arguments or returns no number, a command that fails on the
plain first case, an unknown measure).
"""

from __future__ import annotations

import click

from conformance import outputs
from conformance.cli.common import check_folder, check_outputs, reports_errors


@click.command("infer")
@click.argument("target", metavar="MODULE:FUNCTION")
@click.option("--measure", "measure_text", required=True, metavar="MEASURE",
              help="The measure the function computes: nDCG@10, AP, P@10, RR, R@100, ...")
@click.option("--calling", type=click.Choice(["ranked", "arrays", "run", "shell"]), default="ranked",
              show_default=True,
              help="How the function is called: ranked = fn(ranked_doc_ids, relevance_dict, k); "
                   "arrays = fn(scores, labels, k); run = fn(qrels_dict, run_dict, k) returning the "
                   "mean or {qid: value}; shell = TARGET is a command with {qrels}, {run} and {k}, "
                   "printing the mean.")
@click.option("--budget", type=click.IntRange(1, 1000), default=100, show_default=True,
              help="Calls of the function at most.")
@click.option("--seed", type=int, default=0, show_default=True, help="The seed of the generated cases.")
@click.option("--tolerance", type=click.FloatRange(0, 1), default=1e-9, show_default=True,
              help="Relative difference within which a value matches (1e-6 for float32 code).")
@click.option("--json", "json_path", metavar="OUT", help="Write the full answer as JSON.")
@click.option("--html", "html_path", metavar="OUT", help="Write the HTML page.")
@reports_errors
def command(target, measure_text, calling, budget, seed, tolerance, json_path, html_path):
    """Which conventions does my own metric function follow?

    Calls the function on generated cases, each chosen to split the convention sets still
    consistent with its answers, and reports the sets consistent with every case, the library
    entries that share them, and the number of calls; where none is consistent, the smallest
    case on which the function disagrees with every one.

    Example: conformance infer mymetrics:ndcg_at_k --measure nDCG@10
    """
    from conformance.infer import infer, load
    from conformance.measures import parse_measure

    check_outputs({"--json": json_path, "--html": html_path}, [])
    check_folder("--json", json_path)
    measure = parse_measure(measure_text)
    fn = target if calling == "shell" else load(target)
    result = infer(fn, measure, calling, budget=budget, seed=seed, tolerance=tolerance)
    if calling != "shell":
        result.function = target
    if json_path:
        outputs.write_text(json_path, result.dumps())
    if html_path:
        from conformance.report.infer_html import render_infer

        outputs.write_text(html_path, render_infer(result), make_parents=True)
    click.echo(result.render(), nl=False)
    raise click.exceptions.Exit(0 if result.consistent.size else 1)

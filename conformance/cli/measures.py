"""``conformance measures``: the measure families, their parameters and their names.

Read from the family records of ``conformance.measures`` (``listing``): the table gives each
family's cutoff (``-`` none, ``opt`` optional, ``req`` required), parameters with their
defaults, its names in ir_measures, trec_eval and ranx syntax (a name in brackets is
conformance's own spelling: that library lacks the measure) and its meaning. ``--format
json``: one object, ``families``, the records as ``listing`` gives them (sorted keys).
"""

from __future__ import annotations

import json

import click

from conformance.cli.common import reports_errors


@click.command("measures")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
@reports_errors
def command(fmt):
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

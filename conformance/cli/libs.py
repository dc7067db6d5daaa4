"""``conformance libs``: the library entries, whether each can be used (and why not), their
versions and profiles.

Each library is imported in a worker process of its own, all at once, so one that crashes or
hangs while importing is reported as such (``--lib-timeout``) and costs neither this process
nor the others' time. ``--format json``: one object, ``entries``, a list with one record per
entry (sorted keys).
"""

from __future__ import annotations

import json

import click

from conformance.cli.common import lib_timeout_option, reports_errors


@click.command("libs")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
@lib_timeout_option("Give up on a library whose import has not finished after this many seconds "
                    "(> 0); 'none': no limit.")
@reports_errors
def command(fmt, lib_timeout):
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

"""``conformance libs``: the library entries, whether each can be used (and why not), their
versions and profiles.

Each library is imported in a worker process of its own, all at once, so one that crashes or
hangs while importing is reported as such (``--lib-timeout``) and costs neither this process
nor the others' time. ``--format json``: one object, ``entries``, a list with one record per
entry (sorted keys).

``--profile NAME`` prints one profile instead: for one measure (``-m``; default: the entry's
main measure), each axis the measure's family reads, its value, whether that is the
vocabulary's default, and the fact behind it as the adapter states it, with where
(``conformance.facts``); then the other measures the entry computes. No library is imported.
"""

from __future__ import annotations

import json

import click

from conformance.cli.common import lib_timeout_option, reports_errors
from conformance.errors import ConformanceError


@click.command("libs")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
@lib_timeout_option("Give up on a library whose import has not finished after this many seconds "
                    "(> 0); 'none': no limit.")
@click.option("--profile", "profile_name", metavar="NAME",
              help="Show one profile (an entry's name, or trec_eval10) with the fact behind "
                   "each value, for the measure given by -m.")
@click.option("-m", "--measure", "measure_text", metavar="MEASURE",
              help="With --profile: the measure whose profile to show (default: the entry's "
                   "main measure); profiles differ by measure in several libraries.")
@reports_errors
def command(fmt, lib_timeout, profile_name, measure_text):
    """List the library entries, their installed versions (or why one cannot be used), and each
    entry's profile across the convention axes.

    With --profile NAME: that profile alone, each value with the fact behind it.
    """
    if profile_name is None:
        if measure_text is not None:
            raise ConformanceError("-m/--measure goes with --profile")
        return _all_entries(fmt, lib_timeout)
    return _one_profile(fmt, profile_name, measure_text)


def _one_profile(fmt: str, name: str, measure_text: str | None) -> None:
    from conformance.cli.common import about
    from conformance.facts import facts
    from conformance.measures import parse_measure
    from conformance.profiles import COMMAND_LINE, describe, entry_named, names
    from conformance.profiles import computed as computed_by

    if name not in COMMAND_LINE and entry_named(name) is None:
        raise ConformanceError(f"unknown profile {name!r}: expected one of {', '.join(names())}")
    computed = computed_by(name)
    if measure_text is not None:
        with about("-m/--measure", measure_text):
            measure = parse_measure(measure_text)
    elif name in COMMAND_LINE:
        measure = parse_measure("nDCG@10")
    else:
        main = entry_named(name).default_profile()
        from conformance.profiles import profile
        measure = next((m for m in computed if profile(name, m) == main), computed[0])
    rows = facts(name, measure)
    if fmt == "json":
        click.echo(json.dumps({
            "profile": name, "description": describe(name), "measure": measure.text,
            "computes": [m.text for m in computed],
            "axes": [{"axis": r.axis, "value": r.value, "default": r.default,
                      "read_by_measure": r.read, "fact": r.fact, "where": r.where}
                     for r in rows]}, sort_keys=True, indent=1))
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(width=max(100, Console().width))
    click.echo(f"{name}: {describe(name)}")
    t = Table(title=f"profile of {name} for {measure.text}", title_justify="left")
    for col in ("axis", "value", "fact behind it (where it is stated)"):
        t.add_column(col, overflow="fold")
    quiet = []
    for r in rows:
        if not r.read:
            continue
        if r.fact is None and r.default:
            quiet.append(f"{r.axis}={r.value}")
            continue
        value = r.value + (" (default)" if r.default else "")
        # "not stated" cannot appear for a value the entry sets: tests/libs/test_facts.py
        # Text: a fact quotes code (run[query_id]) that rich would read as markup
        t.add_row(Text(r.axis), Text(value), Text(f"{r.fact} ({r.where})" if r.fact is not None else "not stated"))
    console.print(t)
    if quiet:
        click.echo(f"at the vocabulary's default, nothing more stated: {', '.join(quiet)}")
    unread = [r.axis for r in rows if not r.read]
    if unread:
        click.echo(f"axes {measure.family} does not read (they cannot change its value): "
                   f"{', '.join(unread)}")
    others = [m.text for m in computed if m.family != measure.family]
    if others and name not in COMMAND_LINE:  # a command line's conventions apply to every measure
        click.echo(f"{name} also computes: {', '.join(others)} "
                   f"('conformance libs --profile {name} -m MEASURE' for one of them)")


def _all_entries(fmt, lib_timeout):
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
    from rich.text import Text

    console = Console(width=max(120, Console().width))
    t = Table(title="library entries")
    for col in ("entry", "version", "description"):
        t.add_column(col)
    for r in rows:
        # Text, never markup: rich reads the extra of 'pip install "...[mteb]"' as a style tag
        # and drops it, and a description may quote code
        t.add_row(Text(r["entry"]), Text(r["version"] or f"unavailable ({r['install']})"),
                  Text(r["description"]))
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

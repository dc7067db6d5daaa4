"""``conformance env``: the side environments of libraries that cannot be installed beside the
others (``conformance.environments``).

- ``conformance env create NAME ...`` / ``--all``: make each one ready, one line per environment
  saying what was done (created, made anew because its pins changed, or nothing to do) and how
  long it took; an unknown name is one line and exit status 2, before anything is made;
- ``conformance env list``: each declared environment, its place, its state (missing, ready,
  stale, broken) and what it installs; ``--format json``: one object, ``environments``.
"""

from __future__ import annotations

import json

import click

from conformance.cli.common import reports_errors
from conformance.errors import ConformanceError


@click.group("env")
def command() -> None:
    """Side environments: libraries whose pins clash with the others', installed apart and
    run in a worker process of their own."""


@command.command("create")
@click.argument("names", nargs=-1, metavar="NAME...")
@click.option("--all", "everything", is_flag=True, help="Every declared environment.")
@reports_errors
def create(names, everything):
    """Make each named environment ready (idempotent: a ready one is left alone; one whose
    declared pins changed is made anew)."""
    from conformance import environments as E

    if everything == bool(names):
        raise ConformanceError("give environment names or --all (one of them): "
                               f"{', '.join(E.ENVIRONMENTS)}")
    chosen = list(E.ENVIRONMENTS.values()) if everything else [E.environment(n) for n in names]
    for env in chosen:
        if env.state() != "ready":
            pins = ", ".join(env.requirements + env.core_pins)
            click.echo(f"{env.name}: installing {pins} into {env.path} ...", err=True)
        click.echo(E.create(env))


@command.command("list")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
@reports_errors
def list_(fmt):
    """The declared environments: where each lives, its state and what it installs."""
    from conformance import environments as E

    rows = [{"name": e.name, "path": str(e.path), "state": e.state(),
             "requirements": list(e.requirements), "torch_first": e.torch,
             "core_pins": list(e.core_pins), "no_deps": list(e.no_deps), "why": e.why,
             "create": e.create_command()} for e in E.ENVIRONMENTS.values()]
    if fmt == "json":
        click.echo(json.dumps({"environments": rows}, sort_keys=True, indent=1))
        return
    for r in rows:
        pins = ", ".join(r["requirements"] + [f"{p} (in place of the package's own)"
                                              for p in r["core_pins"]])
        pins += " (CPU torch first)" if r["torch_first"] else ""
        pins += "".join(f", then {d} without its dependencies" for d in r["no_deps"])
        todo = "" if r["state"] == "ready" else f"; {r['create']} makes it"
        click.echo(f"{r['name']}: {r['state']}{todo}\n  path: {r['path']}\n  installs: {pins}"
                   f"\n  why apart: {r['why']}")

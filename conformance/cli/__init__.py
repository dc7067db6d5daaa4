"""The command line: one module per command, on one Click group.

- ``common``: the error policy and exit codes, option types, the output guard (an output never
  names an input or another output), the printing helpers and the group :data:`main`;
- ``eval``, ``run``, ``libs``, ``measures``, ``check_paper``, ``infer``, ``rag`` (``rag`` and ``correlate``), ``env``: a command
  each, which reads its options, calls the public API (``conformance.api``) or an engine, and
  prints;
- ``process``: the process around a command (signals, closed outputs, the exit): the
  ``conformance`` console script is :func:`console`.

The commands are added to :data:`main` here, so importing the package gives the whole command
line (``python -m conformance.cli`` runs :func:`console`, see ``__main__``).
"""

from __future__ import annotations

from conformance.cli import check_paper, env, eval, infer, libs, measures, rag, run
from conformance.cli.common import main
from conformance.cli.process import STOP_DEADLINE, console

for _command in (eval.command, run.command, libs.command, measures.command, check_paper.command, infer.command,
                 rag.command, env.command,
                 rag.correlate_command):
    main.add_command(_command)

__all__ = ["STOP_DEADLINE", "console", "main"]

"""``python -m conformance.cli``: the ``conformance`` console script."""

from conformance.cli import console

console()

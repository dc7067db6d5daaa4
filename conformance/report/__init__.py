"""Reports of a ``conformance run``: the single-file HTML report (``conformance.report.html``).

The JSON report is ``RunResult.dumps()`` (``conformance.runner``).
"""

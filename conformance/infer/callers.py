"""Calling a user's metric on a case, under one of the calling conventions of
``conformance.infer.space.SIGNATURES``, and reading what it did as an :class:`Observation`:
a number, NaN, a failure (its exception, or a command's non-zero exit) or, for a whole-run
function, a value per query.

A failure on a case is the function's behaviour there (``empty_query=raise`` is one), not an
error of the tool; a function that cannot be called at all (no such module, the wrong number of
parameters, a result that is not a number) is a :class:`~conformance.errors.ConformanceError`, as is
one that fails on the plain first case every convention set scores (``conformance.infer.search``
calls it there first).

>>> call = caller(lambda ranked, rel, k: len(ranked), "ranked")
>>> from conformance.infer.cases import Case, Query
>>> call(Case("x", (Query("q1", (("a", 2.0), ("b", 1.0)), (("a", 1.0),)),)), 10)
Observation(kind='value', value=2.0, text='2', per_query=None)
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import math
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from conformance.errors import ConformanceError
from conformance.infer.cases import Case

SHELL_TIMEOUT = 60.0  # seconds a command may take on one case


@dataclass(frozen=True)
class Observation:
    """What the function did on a case: ``kind`` value / nan / error / per_query; ``value`` the
    number; ``text`` what it printed, returned or raised; ``per_query`` {qid: value}.
    ``digits``: decimals a command printed (its number stands for an interval)."""

    kind: str
    value: float | None = None
    text: str = ""
    per_query: dict[str, float] | None = None
    digits: int | None = None

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"kind": self.kind, "text": self.text}
        if self.kind == "value":
            out["value"] = self.value
        if self.per_query is not None:
            out["per_query"] = {q: (None if math.isnan(v) else v) for q, v in sorted(self.per_query.items())}
        return out

    def shown(self) -> str:
        """How a verdict prints what the function did: the number as printed (or to six
        significant digits), the per-query values, NaN, or the failure."""
        if self.kind == "value":
            return self.text if self.digits is not None else f"{self.value:.6g}"
        if self.kind == "per_query":
            return "{" + ", ".join(f"{q}: {v:.6g}" for q, v in sorted(self.per_query.items())) + "}"
        return "NaN" if self.kind == "nan" else f"fails ({self.text})"

    def __repr__(self) -> str:  # the digits only when printed
        extra = f", digits={self.digits}" if self.digits is not None else ""
        return (f"Observation(kind={self.kind!r}, value={self.value!r}, text={self.text!r}, "
                f"per_query={self.per_query!r}{extra})")


def load(target: str) -> Callable:
    """The function ``MODULE:FUNCTION`` names (a module importable from the current directory
    too, as ``python -m`` would find it; or ``path/to/file.py:FUNCTION``)."""
    module, sep, name = target.rpartition(":")
    if not sep or not module or not name:
        raise ConformanceError(f"{target!r}: expected MODULE:FUNCTION, such as mymetrics:ndcg_at_k")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        if module.endswith(".py"):
            if not os.path.isfile(module):
                raise ConformanceError(f"cannot import {module!r}: no such file")
            spec = importlib.util.spec_from_file_location(os.path.basename(module)[:-3], module)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        else:
            mod = importlib.import_module(module)
    except ConformanceError:
        raise
    except Exception as exc:  # the user's module: any failure to import is theirs
        raise ConformanceError(f"cannot import {module!r}: {type(exc).__name__}: {exc}") from None
    fn = mod
    for part in name.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise ConformanceError(f"module {module!r} has no {name!r}")
    if not callable(fn):
        raise ConformanceError(f"{target!r} is not a function")
    return fn


def _check_arity(fn: Callable, what: str) -> None:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # a builtin without a signature: its first call tells
    try:
        sig.bind(None, None, None)
    except TypeError:
        raise ConformanceError(f"{what} cannot be called with three arguments {sig}: the calling "
                         "convention passes (ranked_doc_ids, relevance_dict, k), (scores, labels, k) "
                         "or (qrels_dict, run_dict, k)") from None


def _label(v: float) -> float | int:
    return int(v) if float(v).is_integer() else float(v)


def _number(result: Any, what: str) -> Observation:
    try:
        v = float(result)
    except (TypeError, ValueError):
        raise ConformanceError(f"{what} returned {type(result).__name__} {result!r:.60}, not a number") from None
    if math.isnan(v):
        return Observation("nan", None, "nan")
    return Observation("value", v, repr(v) if not v.is_integer() else str(int(v)))


def caller(fn: Callable | str, signature: str) -> Callable[[Case, int | None], Observation]:
    """A function of (case, k) calling ``fn`` under ``signature`` (for ``shell``, ``fn`` is the
    command, with ``{qrels}``, ``{run}`` and ``{k}`` where the file names and the cutoff go)."""
    if signature == "shell":
        if not isinstance(fn, str) or "{qrels}" not in fn or "{run}" not in fn:
            raise ConformanceError("a shell command needs {qrels} and {run} where the TREC files go, "
                             "such as 'trec_eval -m ndcg_cut.10 {qrels} {run}'")
        return lambda case, k: _shell(fn, case, k)
    what = getattr(fn, "__qualname__", None) or repr(fn)
    _check_arity(fn, what)

    def call(case: Case, k: int | None) -> Observation:
        if signature == "ranked":
            q = case.queries[0]
            args = ([d for d, _ in q.docs], {d: _label(v) for d, v in q.labels}, k)
        elif signature == "arrays":
            q = case.queries[0]
            lab = dict(q.labels)
            args = (np.array([s for _, s in q.docs], np.float64),
                    np.array([lab[d] for d, _ in q.docs], np.float64), k)
        else:
            args = ({q: {d: _label(v) for d, v in docs.items()} for q, docs in case.qrels().items()},
                    case.run(), k)
        try:
            result = fn(*args)
        except Exception as exc:  # the function's behaviour on this case
            return Observation("error", None, f"{type(exc).__name__}: {exc}"[:200])
        if signature == "run" and isinstance(result, dict):
            values = {}
            for q, v in result.items():
                one = _number(v, what)
                values[str(q)] = one.value if one.kind == "value" else math.nan
            return Observation("per_query", None, f"{len(values)} per-query values", values)
        return _number(result, what)

    return call


_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|NaN", re.ASCII)


def _shell(command: str, case: Case, k: int | None) -> Observation:
    with tempfile.TemporaryDirectory(prefix="conformance-infer-") as tmp:
        qrels, run = os.path.join(tmp, "qrels.txt"), os.path.join(tmp, "run.txt")
        with open(qrels, "w") as f:
            for qid, docs in case.qrels().items():
                for d, v in docs.items():
                    f.write(f"{qid} 0 {d} {_label(v)}\n")
        with open(run, "w") as f:
            for qid, docs in case.run().items():
                for r, (d, s) in enumerate(docs.items()):
                    f.write(f"{qid} Q0 {d} {r + 1} {s!r} infer\n")
        cmd = command.replace("{qrels}", qrels).replace("{run}", run).replace("{k}", str(k if k is not None else ""))
        try:
            done = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=SHELL_TIMEOUT)
        except subprocess.TimeoutExpired:
            return Observation("error", None, f"no answer after {SHELL_TIMEOUT:g} s")
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()
        return Observation("error", None, f"exit status {done.returncode}: {tail[-1] if tail else ''}"[:200])
    found = _NUMBER.findall(done.stdout)
    if not found:
        return Observation("error", None, f"printed no number: {done.stdout.strip()[:80]!r}")
    text = found[-1]
    if text.lower() == "nan":
        return Observation("nan", None, text)
    digits = len(text.split(".")[1]) if "." in text and "e" not in text.lower() else None
    return Observation("value", float(text), text, None, digits)

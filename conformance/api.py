"""The public Python API: what ``import conformance`` offers, and what the command line calls.

Inputs are taken as a user holds them: :class:`~conformance.io.Qrels` / :class:`Run` values,
``{qid: {docid: value}}`` dicts, DataFrames, or paths of any format the readers take. Every
input is validated once, here at the boundary; what is wrong is one
:class:`~conformance.errors.ConformanceError` naming where and what.

- :func:`evaluate`: measures under a named profile, with any axis overridden;
- :class:`Evaluator`: the same for many runs against one qrels, read once (a training loop);
- :func:`profile`, :func:`entries`: the conventions of every library entry, per measure;
- :func:`compare`: the library entries beside the reference, every disagreement explained
  (what ``conformance run`` reports);
- :func:`check_paper`: which conventions and entries reproduce reported values (what
  ``conformance check-paper`` reports).

>>> import conformance
>>> qrels = {"q1": {"a": 2, "b": 0, "c": 1}}
>>> run = {"q1": {"a": 0.9, "b": 0.8, "c": 0.1}}
>>> result = conformance.evaluate(qrels, run, "P@2,nDCG@3")
>>> result.mean["P@2"]
0.5
>>> round(result.mean["nDCG@3"], 4)
0.9502
>>> conformance.evaluate(qrels, run, "nDCG@3", gain="exponential").mean["nDCG@3"] > 0.95
True
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from conformance.conventions import Conventions
from conformance.errors import ConformanceError
from conformance.libs.base import Entry
from conformance.measures import Measure, parse_measures
from conformance.profiles import entries, profile, select_entries

__all__ = ["Evaluated", "check_paper", "compare", "entries", "evaluate", "profile"]

# The measures compared when none are named (the command line's default for a user's files).
DEFAULT_COMPARE = "nDCG@10,nDCG,AP,RR,P@10,R@100"


def _measures(measures: str | Measure | Sequence[str | Measure]) -> list[Measure]:
    if isinstance(measures, Measure):
        return [measures]
    if isinstance(measures, str):
        return parse_measures(measures)
    out: list[Measure] = []
    for m in measures:
        out.extend([m] if isinstance(m, Measure) else parse_measures(m))
    return out


class Evaluated:
    """The result of :func:`evaluate`: per measure (keyed by the name as given) its mean and
    its per-query values over the scored queries.

    Under ``ties=unspecified`` a measure's value is the range from the worst to the best order
    of the tied documents: ``low`` and ``high`` hold its ends, and ``mean`` / ``per_query``
    refuse that measure rather than give one end silently. Elsewhere ``low == high`` and
    ``mean`` / ``per_query`` are the values. ``conventions`` are the ones each measure was
    computed under (its profile's, the overrides, and what its name fixes). ``qrels`` and
    ``run`` are the inputs as read (their ``counts`` say how many rows were read, used and
    ignored); ``counts`` the queries scored and those in only one input.

    The tables are made on first use from the evaluation (``result``, a
    :class:`conformance.pipeline.Result`), so a caller that reads only the means does not pay
    for dicts of every query's value.
    """

    def __init__(self, result: Any, texts: Sequence[str] | None = None) -> None:
        self.result = result
        self.measures: list[Measure] = list(result.measures)
        self.conventions: dict[str, Conventions] = {m.text: result.conventions[m] for m in self.measures}
        self.qrels, self.run = result.qrels, result.run
        self.counts: dict[str, int] = dict(result.queries)
        self._tables: dict[str, Any] = {}

    def _table(self, key: str) -> Any:
        # the aggregates alone when only they are read: a per-query dict of every measure
        # (2,000 queries x 5 measures: ~10 ms) is made only for a caller that reads one
        if key not in self._tables:
            t = self._tables
            if key in ("low", "high"):
                t["low"], t["high"] = {}, {}
                for m in self.measures:
                    t["low"][m.text], t["high"][m.text] = self.result.mean(m)
            elif key == "queries":
                queries: set = set()
                for m in self.measures:
                    queries.update(np.asarray(self.result.evaluations[m].qids).tolist())
                t["queries"] = sorted(queries)
            else:
                t["per_query_low"], t["per_query_high"] = {}, {}
                for m in self.measures:
                    ranges = self.result.per_query(m)
                    t["per_query_low"][m.text] = {q: lo for q, (lo, _) in ranges.items()}
                    t["per_query_high"][m.text] = {q: hi for q, (_, hi) in ranges.items()}
        return self._tables[key]

    low = property(lambda self: self._table("low"), doc="measure -> the aggregate's lower end")
    high = property(lambda self: self._table("high"), doc="measure -> the aggregate's upper end")
    per_query_low = property(lambda self: self._table("per_query_low"),
                             doc="measure -> qid -> the lower end")
    per_query_high = property(lambda self: self._table("per_query_high"),
                              doc="measure -> qid -> the upper end")
    queries = property(lambda self: self._table("queries"), doc="the scored queries, sorted")

    def ranged(self, name: str) -> bool:
        """Whether the measure's value is a range (ties=unspecified)."""
        return self.conventions[name].ties == "unspecified"

    def _single(self, table: dict[str, Any]) -> dict[str, Any]:
        ranged = [m.text for m in self.measures if self.ranged(m.text)]
        if ranged:
            raise ConformanceError(
                f"{', '.join(ranged)}: under ties=unspecified the value is a range; read "
                ".low and .high (or .per_query_low and .per_query_high)")
        return table

    @property
    def mean(self) -> dict[str, float]:
        return self._single(self.low)

    @property
    def per_query(self) -> dict[str, dict[str, float]]:
        return self._single(self.per_query_low)

    def __str__(self) -> str:
        """One line per measure: its value (``low to high`` under ties=unspecified) and the
        queries it scored, as ``conformance eval`` prints the aggregates."""
        width = max([len(m.text) for m in self.measures] + [7])
        lines = [f"{'measure':<{width}}  {'value':>16}  queries"]
        for m in self.measures:
            lo, hi = self.low[m.text], self.high[m.text]
            value = f"{lo:.4f}" if lo == hi or (lo != lo and hi != hi) else f"{lo:.4f} to {hi:.4f}"
            lines.append(f"{m.text:<{width}}  {value:>16}  {len(self.per_query_low[m.text])}")
        return "\n".join(lines)

    __repr__ = __str__  # in a console too: the values, not the fields

    def to_frame(self):
        """A long pandas DataFrame: one row per (measure, query) and one per measure with qid
        ``None`` for the aggregate; columns ``measure, qid, value`` (``low, high`` instead of
        ``value`` when some measure is a range)."""
        import pandas as pd

        ranged = any(self.ranged(m.text) for m in self.measures)
        rows = []
        for m in self.measures:
            t = m.text
            for q, lo in self.per_query_low[t].items():
                rows.append((t, q, lo, self.per_query_high[t][q]))
            rows.append((t, None, self.low[t], self.high[t]))
        frame = pd.DataFrame(rows, columns=["measure", "qid", "low", "high"])
        if not ranged:
            frame = frame.drop(columns="high").rename(columns={"low": "value"})
        return frame


def evaluate(qrels: Any, run: Any, measures: str | Measure | Sequence[str | Measure],
             profile: str | Conventions = "trec_eval", *, columns: Mapping[str, str] | None = None,
             limits: Any = None, engine: str = "local", spark_master: str | None = None,
             exclude_seen: Any = None, **overrides: Any) -> Evaluated:
    """Measures of ``run`` against ``qrels`` under ``profile``, with axes overridden.

    ``profile``: a profile name (any library entry, or ``trec_eval10``: see
    :func:`conformance.profiles.names`) or a :class:`Conventions`. Each measure is computed
    under that profile's conventions for it, then ``overrides`` (``gain="exponential"``,
    ``ties="input_order"``), then the axes its own name fixes (``P(rel=2)@5``). Measures that
    share conventions share one ranking of the run. ``columns`` and ``limits``: how files are
    read (:func:`conformance.io.load_run`). The whole path is :mod:`conformance.pipeline`'s,
    which ``conformance eval`` takes too.

    ``exclude_seen``: a training table (a path in any format the readers take, a DataFrame,
    ``{user: [items]}``, Qrels) whose (user, item) pairs are removed from the run before
    measuring, as recommender libraries mask the items a user has seen
    (:mod:`conformance.io.seen`); what was removed is in ``result.run.counts`` (``ignored``,
    reason "seen in training", and ``seen``):

    >>> import conformance
    >>> r = conformance.evaluate({"u1": {"b": 1}}, {"u1": {"a": 2.0, "b": 1.0}}, "P@1",
    ...                          exclude_seen={"u1": ["a"]})
    >>> r.mean["P@1"], r.run.counts.seen["removed"]
    (1.0, 1)

    ``engine="spark"``: the same values, to the last bit, computed by Spark
    (:mod:`conformance.spark_engine`) from paths (TREC text, Parquet) or Spark DataFrames, on
    ``spark_master`` (default: the active session, else ``$CONFORMANCE_SPARK_MASTER``, else
    ``local[*]``); the result then holds no input tables (``qrels`` and ``run`` are None).

    A relevant and a non-relevant document tied at the top: RR is 1 or 1/2 by the tie order,
    and under ``ties=unspecified`` the result says so instead of picking one:

    >>> import conformance
    >>> r = conformance.evaluate({"q1": {"a": 1, "b": 0}}, {"q1": {"a": 1.0, "b": 1.0}}, "RR",
    ...                          ties="unspecified")
    >>> r.low["RR"], r.high["RR"]
    (0.5, 1.0)

    trec_eval's own rule (document ids descending) puts b first:

    >>> conformance.evaluate({"q1": {"a": 1, "b": 0}}, {"q1": {"a": 1.0, "b": 1.0}}, "RR").mean
    {'RR': 0.5}
    """
    from conformance import pipeline

    # one per spelling: ndcg_cut_10 and nDCG@10 are one measure (computed once), two keys
    ms = list({(m, m.text): m for m in _measures(measures)}.values())
    if not ms:
        raise ConformanceError("no measure given")
    if engine == "spark":
        from conformance import spark_engine

        if columns is not None or limits is not None or exclude_seen is not None:
            raise ConformanceError("the Spark engine reads its inputs itself: columns=, limits= "
                                   "and exclude_seen= are the local readers' options")
        result = spark_engine.run(qrels, run, list(dict.fromkeys(ms)), profile, overrides,
                                  master=spark_master)
        return Evaluated(result)
    if engine != "local":
        raise ConformanceError(f"engine {engine!r}: expected 'local' or 'spark'")
    return Evaluated(pipeline.evaluate(qrels, run, ms, profile, overrides, columns=columns,
                                       limits=limits, exclude_seen=exclude_seen))


class Evaluator:
    """Measures of many runs against one qrels: the qrels read and validated, the measures
    parsed and their conventions resolved once, here; each :meth:`evaluate` reads one run and
    gives what :func:`evaluate` gives for it (pytrec_eval's ``RelevanceEvaluator``, for a
    training loop that evaluates every epoch).

    What depends on the qrels alone is prepared once too: each query's judgments as a dict, so
    that a run given as a dict keyed by strings is joined by one lookup a row, and, per
    convention set, the judged side (relevant counts, gains, the ideal's sorted judgments),
    kept for the next run over the same queries.

    >>> import conformance
    >>> ev = conformance.Evaluator({"q1": {"a": 1, "b": 0}}, "P@1,RR", profile="trec_eval")
    >>> ev.evaluate({"q1": {"a": 2.0, "b": 1.0}}).mean
    {'P@1': 1.0, 'RR': 1.0}
    >>> ev.evaluate({"q1": {"a": 1.0, "b": 2.0}}).mean
    {'P@1': 0.0, 'RR': 0.5}

    ``profile``, ``columns``, ``limits``, ``exclude_seen`` (the training table, read once here)
    and the axis ``overrides`` are :func:`evaluate`'s.
    """

    def __init__(self, qrels: Any, measures: str | Measure | Sequence[str | Measure],
                 profile: str | Conventions = "trec_eval", *, columns: Mapping[str, str] | None = None,
                 limits: Any = None, exclude_seen: Any = None, **overrides: Any) -> None:
        from conformance import io as cio
        from conformance import pipeline
        from conformance.reference.prepare import judgments

        self.measures = list({(m, m.text): m for m in _measures(measures)}.values())
        if not self.measures:
            raise ConformanceError("no measure given")
        self.profile = profile
        self._convs = pipeline.conventions_for(profile, self.measures, overrides)
        self._duplicates = pipeline.one_duplicates_rule(self._convs)
        self._how = {"columns": columns, "limits": limits}
        self.qrels = cio.load_qrels(qrels, **self._how)
        self._seen = None
        if exclude_seen is not None:
            from conformance.io.seen import read_seen

            self._seen = read_seen(exclude_seen, columns, limits)
        # each query's judgments as a dict, so that each run read from a dict is joined by
        # one lookup per row (C-level), not by coding and sorting its docids with the qrels'
        self._judged = judgments(self.qrels)
        # what each evaluation computes from the qrels alone (the ideal's sort of the
        # judgments), kept for the next run over the same queries
        self._shared: dict = {}
        self._prepare_judged_side()

    def _prepare_judged_side(self) -> None:
        """Fill ``_shared`` here, as pytrec_eval's constructor prepares its qrels, so that the
        first run of a loop over the qrels' queries pays no more than the next: the qrels'
        own pairs are evaluated as a run (distinct scores, no ties). Kept only when it
        succeeds: whatever these conventions refuse is said by the real run's evaluation."""
        from conformance import pipeline

        if not self._judged:
            return
        warm = {q: dict(zip(docs, range(len(docs), 0, -1))) for q, docs in self._judged.items()}
        try:
            inputs = pipeline.join(self.qrels, warm, self._duplicates, judged=self._judged,
                                   shared=self._shared, **self._how)
            pipeline.evaluate_inputs(inputs, self.measures, self._convs)
        except ConformanceError:
            self._shared.clear()

    def evaluate(self, run: Any) -> Evaluated:
        """The measures of ``run`` (anything :func:`evaluate` takes) against the qrels."""
        from conformance import pipeline

        inputs = pipeline.join(self.qrels, run, self._duplicates, judged=self._judged,
                               shared=self._shared, exclude_seen=self._seen, **self._how)
        return Evaluated(pipeline.evaluate_inputs(inputs, self.measures, self._convs))


def compare(qrels: Any = None, run: Any = None, measures: str | Sequence[str | Measure] | None = None,
            libs: str | Sequence[str] = "all", *, tolerance: float | None = None,
            timeout: float | None = None, name: str = "input", cases: Any = None,
            columns: Mapping[str, str] | None = None, limits: Any = None,
            progress: Callable[[str], None] | None = None,
            on_ready: Callable[[list, dict], None] | None = None,
            profile: str | None = None, overrides: Mapping[str, Any] | None = None,
            exclude_seen: Any = None):
    """Every library entry in ``libs`` beside the reference on ``run``, every disagreement
    explained: a :class:`~conformance.runner.RunResult` (values per entry, comparisons with
    their explanations, ``summary``), what ``conformance run --qrels --run``
    reports. Without ``qrels`` and ``run``: over the edge-case corpus (``cases``: a directory of
    case files; default the bundled corpus), each case's own measures unless ``measures``.

    Each library runs in a worker process of its own (a library that crashes or hangs past
    ``timeout`` seconds is recorded as that entry's error; 0: no limit); a library that cannot
    be used is listed as unavailable, with what happened in ``result.status``. Every pair of
    entries named in ``libs`` by their own name (not through a library name or ``all``) that
    disagrees is explained directly. ``on_ready(subjects, status)`` is called once the inputs are read and
    every library asked whether it can be used, before any is run; ``progress(case name)``
    after each case.

    ``profile`` and ``overrides`` (``conformance run --profile / --set``): the user's own
    conventions, as :func:`evaluate` takes them. The run is read under their ``duplicates``
    rule (``duplicates="first"`` reads a run that lists a docid twice, keeping its first
    listing, and every library is given that), the reference's value under them is shown
    beside the entries' (``result.table()[i]["reference"]``), and the classes are labelled
    against the class of the entry ``profile`` names. Without either, trec_eval's.
    ``exclude_seen`` (with ``qrels`` and ``run``): the training table whose pairs are removed
    from the run before anything is measured, so every library is given the masked lists
    (:func:`evaluate`).
    """
    from conformance import pipeline
    from conformance.profiles import named_entries
    from conformance.runner import DEFAULT_TIMEOUT, Subject, isolate, run_entries, statuses

    chosen = isolate(select_entries(libs), DEFAULT_TIMEOUT if timeout is None else timeout)
    if (qrels is None) != (run is None):
        raise ConformanceError("qrels and run go together (--qrels and --run)")
    own = profile is not None or bool(overrides)
    mine = profile or "trec_eval"
    if qrels is not None:
        if cases is not None:
            raise ConformanceError("give either cases or qrels and run (--cases or --qrels/--run), not both")
        wanted = _measures(measures or DEFAULT_COMPARE)
        rule = pipeline.one_duplicates_rule(pipeline.conventions_for(mine, wanted, overrides))
        inputs = pipeline.read(qrels, run, rule, columns=columns, limits=limits, exclude_seen=exclude_seen)
        subjects = [Subject(name, inputs.qrels, inputs.run, wanted)]
    else:
        from conformance.io.cases import load_cases

        if exclude_seen is not None:
            raise ConformanceError("exclude_seen (--exclude-seen) masks a run of your own: give qrels and run")
        wanted = _measures(measures) if measures else None
        subjects = [Subject(c.name, c.qrels, c.run, wanted or c.measures, c.description)
                    for c in load_cases(cases)]
        if own:
            pipeline.conventions_for(mine, [m for s in subjects for m in s.measures], overrides)
    status = statuses(chosen)  # every worker imports its library, at the same time
    if on_ready is not None:
        on_ready(subjects, status)
    result = run_entries(chosen, subjects, tolerance, progress, named=named_entries(libs))
    if own:
        result.anchor = mine
        shown_set = {a: str(v) for a, v in (overrides or {}).items()}
        for s in subjects:
            convs = pipeline.conventions_for(mine, s.measures, overrides)
            # one read and join per case; each measure alone, so one refusal stays its own
            inputs = pipeline.read(s.qrels, s.run, pipeline.one_duplicates_rule(convs))
            for m in s.measures:
                ref = {"profile": mine, "set": shown_set, "mean": None, "high": None,
                       "per_query": {}, "error": None}
                try:
                    ours = pipeline.evaluate_inputs(inputs, [m], convs)
                except ConformanceError as exc:  # a convention that refuses this input (raise)
                    ref["error"] = str(exc)
                else:
                    ref["mean"], ref["high"] = ours.mean(m)
                    ref["per_query"] = {q: v[0] for q, v in ours.per_query(m).items()}
                result.reference[(s.name, m.text)] = ref
    return result


def check_paper(qrels: Any, run: Any, reported: str | Sequence[str], *,
                libs: str | Sequence[str] = "all", live: bool = True, digits: int | None = None,
                percent: bool = True, per_query_file: Any = None,
                columns: Mapping[str, str] | None = None, limits: Any = None,
                progress: Callable[[str, int, int], None] | None = None,
                on_ready: Callable[[Any, Any], None] | None = None,
                profile: str | None = None, overrides: Mapping[str, Any] | None = None,
                timeout: float | None = None, exclude_seen: Any = None):
    """Which convention sets and library entries reproduce the values a paper reported for
    ``run``: a :class:`~conformance.paper.PaperResult` (``verdict``, ``consistent_conventions``,
    the entries' values and gaps, the nearest miss), what ``conformance
    check-paper`` reports.

    ``reported``: ``"nDCG@10=0.4312"`` texts (their printed digits set the rounding interval;
    ``digits`` overrides them; values above 1 are percentages unless ``percent=False``).
    ``live``: call the installed libraries (else each entry's declared profile decides).
    ``per_query_file``: a trec_eval ``-q`` output
    (``measure qid value``) matched query by query. ``on_ready(qrels, run, per_query_file)`` is
    called once the inputs are read.

    Every entry is judged by its declared profile, whatever ``libs`` says; ``live`` then runs,
    all at once, the libraries the verdict rests on: the entries whose profile reproduces the
    values, trec_eval, and every entry ``libs`` selects (by its own name or its library's; none
    for ``"all"``) (``timeout``: seconds per library).
    ``profile`` / ``overrides`` (``--profile`` / ``--set``): the user's own conventions; the run
    is read under their ``duplicates`` rule and the reference's value under them is judged
    beside the entries (``result.own``). ``exclude_seen``: :func:`evaluate`'s.
    """
    from conformance import pipeline
    from conformance.paper import check_paper as _check
    from conformance.paper import parse_reported, read_reported_per_query
    from conformance.profiles import named_entries

    texts = [reported] if isinstance(reported, str) else list(reported)
    values = [parse_reported(t, digits=digits, percent=percent) for t in texts]
    # every entry is judged (by its profile); ``libs`` names those run live besides the ones
    # the verdict rests on, so following the answer's own hint never narrows the verdict
    named = [e.name for e in select_entries(libs)] if _spec_text(libs) != "all" else []
    chosen: list[Entry] = select_entries("all")
    per_query = None if per_query_file is None else read_reported_per_query(
        per_query_file, digits=digits, percent=percent, limits=limits)
    own = profile is not None or bool(overrides)
    mine = profile or "trec_eval"
    asked = list(dict.fromkeys([r.measure for r in values]
                               + ([r.measure for r in per_query.values] if per_query else [])))
    convs = pipeline.conventions_for(mine, asked, overrides)
    inputs = pipeline.read(qrels, run, pipeline.one_duplicates_rule(convs), columns=columns,
                           limits=limits, exclude_seen=exclude_seen)
    if on_ready is not None:
        on_ready(inputs.qrels, inputs.run, per_query)
    result = _check(inputs.qrels, inputs.run, values, entries=chosen, live=live,
                    per_query_file=per_query, progress=progress, prep=inputs.prep,
                    confirm=list(dict.fromkeys(["trec_eval", *named_entries(libs), *named])),
                    timeout=timeout)
    if own:
        result.own = _own_conventions(inputs, result, mine, overrides, convs)
    return result


def _spec_text(libs: str | Sequence[str]) -> str:
    return libs.strip() if isinstance(libs, str) else ",".join(libs).strip()


def _own_conventions(inputs, result, profile: str, overrides, convs) -> dict:
    """The reference under the user's conventions, judged against each reported aggregate."""
    from conformance import pipeline

    metrics = {}
    for m in dict.fromkeys(r.measure for r in result.aggregates):
        rs = [r for r in result.aggregates if r.measure == m]
        try:
            ev = pipeline.evaluate_inputs(inputs, [m], {m: convs[m]})
        except ConformanceError as exc:
            metrics[m.text] = {"low": None, "high": None, "error": str(exc), "reproduces": False}
            continue
        lo, hi = ev.mean(m)
        metrics[m.text] = {"low": lo, "high": hi, "error": None,
                           "reproduces": all(r.meets(lo, hi) for r in rs)}
    return {"profile": profile, "set": {a: str(v) for a, v in (overrides or {}).items()},
            "metrics": metrics}

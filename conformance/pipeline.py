"""One evaluation: read a qrels and a run, group the measures by their conventions, evaluate.

The path every evaluation of a user's input takes: :func:`conformance.api.evaluate` (and so
``conformance eval``), and the reading of ``conformance run`` and ``check-paper``. Inputs are
whatever the readers take (a path in any format, a DataFrame, a ``{qid: {docid: value}}``
mapping, a :class:`~conformance.io.Qrels` / :class:`~conformance.io.Run`).

- :func:`read` reads both inputs. Two paths are read at the same time, the qrels in a second
  thread (the readers spend most of their time in Arrow and numpy, outside the GIL: ~0.08 s of a
  2M-row run saved). A bad qrels is reported before a bad run, as if read first. The run's check
  for a docid listed twice in a query is left to the join (:func:`read` says when it ran). Two
  dicts keyed by strings are joined by looking each run pair up in the qrels dict (one C-level
  lookup a row; ``prepare.looked_up_labels``), and :func:`join` does the same for many runs
  against one qrels through its judgments made once. ``exclude_seen`` (both): a training
  table whose (user, item) pairs leave the run before the join (``conformance.io.seen``), so
  every measure and every library sees the masked lists.
- :func:`conventions_for` gives each measure its conventions: the profile's for that measure
  (profiles differ by measure: torchmetrics' AP is not its nDCG), the overrides, then the axes
  the measure's name fixes (``P(rel=2)@5``).
- :func:`evaluate` evaluates every measure under its own conventions, once per distinct
  convention set (measures that share one share the ranking of the run); ``ndcg_cut_10`` and
  ``nDCG@10`` are one measure, computed once and reported under each spelling.

One rule for duplicates: a run is read once, so every measure must read a repeated docid the
same way; measures whose conventions disagree on ``duplicates`` are refused (ConventionError).

Process-wide tuning (:func:`own_process`): the memory policy and thread settings of a command
that owns its process. The library never applies it on its own: a user's program keeps its
allocator and its BLAS threads.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from conformance.conventions import AXES, ConventionError, Conventions
from conformance.measures import Measure

ARROW_DECAY_MS = 0


def no_blas_threads() -> None:
    """No OpenBLAS worker threads in this process, unless the user asked for them.

    Importing numpy starts OpenBLAS's worker threads, which spin waiting for work for about
    0.1 s of CPU: on a 2-core machine, a core taken from the command, whose evaluation never
    calls BLAS. (12 interleaved runs of ``conformance eval`` on a 2M-row run: median CPU time
    2.23 s with the threads, 2.04 s without.) Only before numpy's first import, which is when
    OpenBLAS reads the variable; the command runs no other program that could inherit it.
    """
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _one_malloc_arena() -> None:
    """Have every thread take memory from glibc's main malloc arena (numpy's arrays come from
    malloc).

    glibc gives each thread that allocates while another does an arena of its own; memory
    freed in an arena stays there for that arena's next allocations. With the readers' and
    the evaluation's threads each keeping some, ~20 MB more was held at the peak of a 2M-row
    run. One arena (``mallopt(M_ARENA_MAX, 1)``, set before any of those threads exists) lets
    every thread reuse what any other freed. (Fixing the mmap threshold instead, so large
    blocks go back to the system at once, lowered the peak more but cost ~35,000 more page
    faults, ~0.15 s.) Skipped where the C library has no ``mallopt`` (not glibc).
    """
    import ctypes

    M_ARENA_MAX = -8
    try:
        ctypes.CDLL(None).mallopt(M_ARENA_MAX, 1)
    except (OSError, AttributeError):
        pass


def own_process() -> None:
    """Set the process's memory policy: freed Arrow memory goes back to the system at once
    (``ARROW_DECAY_MS``); one malloc arena for numpy.

    For a command that owns its process (``conformance eval``): it sets the process-wide Arrow
    pool, which the library API leaves alone. Arrow's default pool (mimalloc) keeps freed
    blocks for reuse: on a 2M-row run it held ~100 MB that no array used after the parse,
    which added to the peak. Under jemalloc the decay time decides when freed pages go back.
    With 100 ms, the CSV parser reuses its blocks (about 74,000 page faults for a 2M-row run
    against 104,000 with 0 ms), but at the start of the join about 150 MB of the parser's freed
    pages were still held (jemalloc purges on its background thread's schedule, not at the
    decay time), and the join's arrays, which numpy takes from malloc and not from that pool,
    came on top: peaks of 337-396 MB, above pytrec_eval's ~386 MB in some runs. With 0 ms the
    peak is 287-299 MB in every run, for about 5% more time (8 alternated pairs at b4c1ffa:
    wall median 0.885 s against 0.84 s, CPU 1.27 s against 1.22 s). A 1 s decay kept more
    (peak 589 MB); 10 ms and 30 ms gave 100 ms's peaks. Under this pool Arrow's
    ``release_unused`` returns nothing: pyarrow 26 asks jemalloc for the control named
    ``arena.MALLCTL_ARENAS_ALL.purge`` (the macro's name, not its value, as ``strings`` on
    ``libarrow.so`` shows), which jemalloc does not know. The readers' calls
    (``io.trec._fast_parse``, :func:`read`) are for the library API's pool, where mimalloc's
    falls from 358 MB to 112 MB after a 2M-row parse. Skipped where Arrow has no jemalloc.
    """
    no_blas_threads()
    import pyarrow as pa

    _one_malloc_arena()
    try:
        pool = pa.jemalloc_memory_pool()
        pa.jemalloc_set_decay_ms(ARROW_DECAY_MS)
        pa.set_memory_pool(pool)
    except (NotImplementedError, pa.ArrowException, AttributeError):
        pass


def _is_path(source: Any) -> bool:
    return isinstance(source, (str, bytes, os.PathLike))


@dataclass
class Inputs:
    """Both inputs, read and joined once (``prep``, shared by every convention set)."""

    qrels: Any  # conformance.io.Qrels
    run: Any  # conformance.io.Run
    prep: Any  # conformance.reference.prepare.Prepared


def read(qrels: Any, run: Any, duplicates: str = "error", *, columns: Mapping[str, str] | None = None,
         limits: Any = None, exclude_seen: Any = None) -> Inputs:
    """Read ``qrels`` and ``run`` (paths, frames, mappings or read values) and join them.

    ``duplicates``: what a docid listed twice in one query of the run means (the axis of that
    name); ``columns`` and ``limits``: the readers' options for files (``--columns``, the input
    limits). Raises the readers' ConformanceError (file, line, problem) for bad input, the
    qrels' first when both are bad.
    """
    import pyarrow as pa

    from conformance import io as cio
    from conformance.parallel import in_thread

    how = {"columns": columns, "limits": limits}
    if _is_path(qrels) and _is_path(run):
        # Their transient arrays add to the run reader's (on 2M rows the command's peak was
        # 360-396 MB in 14 runs, against pytrec_eval's 421 MB; reading one file after the
        # other, 378-394).
        qrels_read = in_thread(lambda: cio.load_qrels(qrels, **how))
        try:
            # The reader's check for a docid listed twice in a query sorts every (query,
            # docid) pair (~0.04 s on a 2M-row run); the join below sorts them with the
            # judgments and sees every repeat too, so the check is made only when the join
            # did not run or found one (then the reader's error, or its duplicates policy, as
            # if made at read).
            read_run = cio.load_run(run, duplicates=duplicates, check_pairs=False, **how)
        except BaseException:
            qrels_read()  # a bad qrels file is reported first, as if it had been read first
            raise
        read_qrels = qrels_read()
        # what the readers freed, before the evaluation (a no-op under the command's jemalloc,
        # which has returned it as it was freed: see own_process)
        pa.default_memory_pool().release_unused()
    else:
        read_qrels = cio.load_qrels(qrels, **how)
        read_run = cio.load_run(run, duplicates=duplicates, check_pairs=False, **how)
        # qrels read from a dict keyed by strings (``doc_list``) are that dict's judgments:
        # a run read from such a dict too is joined by looking its pairs up in it
        if type(qrels) is dict and read_qrels.doc_list is not None and exclude_seen is None:
            return _joined(read_qrels, read_run, duplicates, qrels)
    read_run = _unseen(read_run, exclude_seen, columns, limits)
    return _joined(read_qrels, read_run, duplicates)


def _unseen(read_run: Any, exclude_seen: Any, columns, limits) -> Any:
    """The run without the pairs of the training table ``exclude_seen`` (None: the run)."""
    if exclude_seen is None:
        return read_run
    from conformance.io.seen import exclude_seen as exclude, read_seen

    return exclude(read_run, read_seen(exclude_seen, columns, limits))


def join(read_qrels: Any, run: Any, duplicates: str = "error", *, columns: Mapping[str, str] | None = None,
         limits: Any = None, judged: Mapping[str, Mapping[str, Any]] | None = None,
         shared: dict | None = None, exclude_seen: Any = None) -> Inputs:
    """``run`` read (as :func:`read` reads it) and joined with qrels already read
    (``conformance.io.Qrels``): many runs against one qrels read once (``api.Evaluator``).
    ``judged``: those qrels' ``prepare.judgments``, made once, through which a run read from
    a dict keyed by strings is joined (dictionary lookups, no sort); ``shared``: the store
    where evaluations of these qrels keep what depends on them alone (``Prepared``);
    ``exclude_seen``: as :func:`read` takes it (read once already, a
    ``conformance.io.seen.Seen``, for a loop over runs)."""
    from conformance import io as cio

    read_run = cio.load_run(run, duplicates=duplicates, check_pairs=False, columns=columns, limits=limits)
    read_run = _unseen(read_run, exclude_seen, columns, limits)
    return _joined(read_qrels, read_run, duplicates, judged, shared)


def _joined(read_qrels: Any, read_run: Any, duplicates: str, judged: Mapping | None = None,
            shared: dict | None = None) -> Inputs:
    from conformance import io as cio
    from conformance.reference.prepare import Prepared, looked_up_labels

    labels = None if judged is None else looked_up_labels(judged, read_run)
    if labels is not None:  # the run's pairs are distinct (a dict's keys): nothing to settle
        return Inputs(read_qrels, read_run, Prepared(read_qrels, read_run, labels, shared))
    prep = Prepared(read_qrels, read_run, shared=shared)
    if read_run.distinct_pairs is None:
        if prep.joined_by_words:
            read_run.distinct_pairs = True  # the join compared every pair of equal hash: no repeat
        else:
            settled = cio.settle_pairs(read_run, duplicates)
            if settled is not read_run:  # listings dropped: join again (else the join stands)
                read_run, prep = settled, Prepared(read_qrels, settled, shared=shared)
    return Inputs(read_qrels, read_run, prep)


def overrides_from_settings(settings: Sequence[str]) -> dict[str, Any]:
    """``["gain=exponential", "ties=input_order"]`` (``--set``) as axis -> parsed value; a later
    setting of one axis replaces an earlier one."""
    from conformance.conventions import parse_setting

    return dict(parse_setting(s) for s in settings)


def conventions_for(profile: str | Conventions, measures: Sequence[Measure],
                    overrides: Mapping[str, Any] | None = None) -> dict[Measure, Conventions]:
    """Each measure's effective conventions: ``profile``'s for it (a name, see
    :func:`conformance.profiles.profile`, or one :class:`Conventions` for all), ``overrides``
    (axis -> value, parsed here when given as text), then the axes its name fixes."""
    overrides = dict(overrides or {})
    unknown = [a for a in overrides if a not in AXES]
    if unknown:
        Conventions().replace(**{unknown[0]: None})  # raises ConventionError naming the axis
    parsed = {a: AXES[a].parse(v) for a, v in overrides.items()}
    out: dict[Measure, Conventions] = {}
    for m in measures:
        if isinstance(profile, Conventions):
            base = profile
        else:
            from conformance.profiles import profile as profile_of

            base = profile_of(profile, m)
        out[m] = m.conventions(base.replace(**parsed))
    return out


def one_duplicates_rule(convs: Mapping[Measure, Conventions]) -> str:
    """The ``duplicates`` rule every measure reads the run under (one read for all)."""
    rules = {c.duplicates for c in convs.values()}
    if len(rules) > 1:
        raise ConventionError("the measures read a run with duplicates under different rules ("
                              + ", ".join(sorted(rules)) + "); set duplicates= for the whole evaluation")
    return rules.pop() if rules else "error"


@dataclass
class Result:
    """Every measure evaluated on one pair of inputs.

    ``evaluations[m]``: the :class:`~conformance.reference.evaluate.Evaluation` holding measure
    ``m`` (measures sharing conventions share one); ``conventions[m]`` what ``m`` was computed
    under; ``queries``: how many were scored, and how many appear in only one input.
    """

    inputs: Inputs
    measures: list[Measure]
    conventions: dict[Measure, Conventions]
    evaluations: dict[Measure, Any]
    queries: dict[str, int] = field(default_factory=dict)

    @property
    def qrels(self):
        return self.inputs.qrels

    @property
    def run(self):
        return self.inputs.run

    def mean(self, m: Measure) -> tuple[float, float]:
        """(low, high) of the aggregate; equal unless ``ties=unspecified``."""
        ev = self.evaluations[m]
        return ev.aggregate(m), ev.aggregate(m, upper=True)

    def per_query(self, m: Measure) -> dict[str, tuple[float, float]]:
        """qid -> (low, high) over the queries that enter ``m``'s aggregate."""
        return self.evaluations[m].ranges(m)

    def ranged(self, m: Measure) -> bool:
        return self.conventions[m].ties == "unspecified"


def evaluate_inputs(inputs: Inputs, measures: Sequence[Measure],
                    convs: Mapping[Measure, Conventions], tie_check: bool = False) -> Result:
    """Evaluate every measure of ``measures`` under ``convs[m]``, one reference call per
    distinct convention set; ``tie_check``: each also says which queries the order of tied
    documents changes (``Evaluation.tie_changed``, read by ``statement.tied_queries``)."""
    from conformance.reference import evaluate

    measures = list(measures)
    groups: dict[Conventions, list[Measure]] = {}
    for m in measures:
        group = groups.setdefault(convs[m], [])
        if m not in group:  # ndcg_cut_10 and nDCG@10 are one measure: computed once
            group.append(m)
    evaluations = {}
    for conv, group in groups.items():
        ev = evaluate(inputs.prep, None, group, conv, tie_check=tie_check)
        for m in group:
            evaluations[m] = ev
    first = convs[measures[0]] if measures else Conventions()
    scored = int(evaluate(inputs.prep, None, [], first).qids.size)
    # the join's masks over all query ids say which queries have rows in each input
    in_run, in_qrels = inputs.prep.in_run, inputs.prep.in_qrels
    queries = {"scored": scored, "run_only": int((in_run & ~in_qrels).sum()),
               "qrels_only": int((in_qrels & ~in_run).sum())}
    return Result(inputs, measures, {m: convs[m] for m in measures}, evaluations, queries)


def evaluate(qrels: Any, run: Any, measures: Sequence[Measure], profile: str | Conventions = "trec_eval",
             overrides: Mapping[str, Any] | None = None, *, columns: Mapping[str, str] | None = None,
             limits: Any = None, tie_check: bool = False, exclude_seen: Any = None) -> Result:
    """Read both inputs and evaluate ``measures`` under ``profile`` with ``overrides``: the
    whole pipeline (see the module docstring); ``tie_check`` as in :func:`evaluate_inputs`,
    ``exclude_seen`` as in :func:`read`."""
    convs = conventions_for(profile, measures, overrides)
    inputs = read(qrels, run, one_duplicates_rule(convs), columns=columns, limits=limits,
                  exclude_seen=exclude_seen)
    return evaluate_inputs(inputs, measures, convs, tie_check)

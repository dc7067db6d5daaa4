"""Cost of ``check-paper``'s sweep against one evaluation, on the same files in one process.

Times, on a run of Q queries x D documents (``generate.py``'s synthetic TREC files, written to a
temporary directory unless ``--data`` names one):

- ``single``: one ``conformance.reference.evaluate(qrels, run, [nDCG@10], TREC_EVAL)`` from the
  loaded ``Qrels``/``Run`` (the join into ``Prepared`` included);
- ``sweep``: ``conformance.reference.sweep.Sweep(Prepared(qrels, run), [nDCG@10])``: every combination of
  the conventions nDCG@10 reads (gain, discount, ideal, tie rule, score precision, relevance
  threshold and scope, depth, empty queries, query set), the join included.

Each is run ``--repeat`` times, interleaved; the fastest of each is kept and the ratio sweep /
single printed, in wall time and in CPU time (user + sys of this process: the honest figure on
a shared machine, where wall time carries other processes' load). The budget the README once
stated for nDCG@10, about 2.2, was measured on a sweep of a few of each axis's values; the
README states the latest measurement of the sweep of every value. Peak RSS (``getrusage``) is
printed after loading, after the single evaluation and after the sweep. Live libraries and
library profiles are not part of the sweep and are not timed. File reading is not timed either.

With ``--check N`` the script also evaluates N combinations drawn at random with ``evaluate()``
and requires each to equal the sweep's value exactly (the tests do the same on small inputs).

Usage::

    python benchmarks/bench_paper.py                      # 1000 queries x 1000 documents
    python benchmarks/bench_paper.py --queries 2000 --repeat 5 --check 20
    python benchmarks/bench_paper.py --measures nDCG@10,AP   # the whole sweep of several measures

Not run by the tests.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import generate  # noqa: E402  (benchmarks/ is not a package)


def _peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--judged", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", type=Path, default=None,
                    help="directory for the generated files (default: a temporary one)")
    ap.add_argument("--measures", default="nDCG@10")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--check", type=int, default=0, metavar="N",
                    help="check N random combinations against evaluate()")
    args = ap.parse_args(argv)

    from conformance import io as cio
    from conformance.conventions import TREC_EVAL
    from conformance.errors import EvaluationError
    from conformance.measures import parse_measures
    from conformance.reference.sweep import BASE, Sweep
    from conformance.reference import evaluate
    from conformance.reference.prepare import Prepared

    with tempfile.TemporaryDirectory() as tmp:
        out = args.data or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        qrels_path, run_path = generate.paths(args.queries, args.docs, args.judged, out)
        if not (qrels_path.exists() and run_path.exists()):
            generate.generate(args.queries, args.docs, args.judged, seed=args.seed, out=out)
        qrels = cio.load_qrels(qrels_path)
        run = cio.load_run(run_path)
    measures = parse_measures(args.measures)
    single_measure = measures[:1]

    singles, sweeps, singles_cpu, sweeps_cpu = [], [], [], []
    sweep = None
    rss_loaded = _peak_rss_mb()
    rss_single = None
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        evaluate(qrels, run, single_measure, TREC_EVAL)
        t1, c1 = time.perf_counter(), time.process_time()
        if rss_single is None:  # before any sweep has run
            rss_single = _peak_rss_mb()
        sweep = None  # let the previous sweep go before the next one is built
        sweep = Sweep(Prepared(qrels, run), measures)
        t2, c2 = time.perf_counter(), time.process_time()
        singles.append(t1 - t0)
        sweeps.append(t2 - t1)
        singles_cpu.append(c1 - c0)
        sweeps_cpu.append(c2 - c1)
    single, whole = min(singles), min(sweeps)
    single_cpu, whole_cpu = min(singles_cpu), min(sweeps_cpu)

    print(f"input: {args.queries} queries x {args.docs} documents ({len(run):,} run rows, "
          f"{len(qrels):,} qrels rows)")
    for m in measures:
        g = sweep.grids[m]
        dims = " x ".join(f"{a}({len(d)})" for a, d in zip(g.axes, g.domains))
        print(f"{m.text}: {g.lo.size:,} combinations = {dims}")
    eng = sweep.engine
    print(f"shared work: {eng.rank_calls} rank() calls ({len(eng.distinct_rankings)} distinct "
          f"orderings x pieces; at most {eng.ranked_cache_size} kept), {sweep.formula_calls} "
          f"formula calls; float32 merges scores: {eng.merges32}; ties under float64: {eng.ties64}")
    print(f"single evaluate ({single_measure[0].text}, trec_eval profile): wall {single:.3f} s, "
          f"cpu {single_cpu:.3f} s (fastest of {args.repeat})")
    print(f"whole sweep ({args.measures}): wall {whole:.3f} s, cpu {whole_cpu:.3f} s "
          f"(fastest of {args.repeat})")
    print(f"ratio sweep / single: wall {whole / single:.2f}, cpu {whole_cpu / single_cpu:.2f}")
    print(f"peak RSS: {rss_loaded:.0f} MB after loading, {rss_single:.0f} MB after the single "
          f"evaluation, {_peak_rss_mb():.0f} MB after the sweep; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    if args.check:
        prep = Prepared(qrels, run)
        rng = random.Random(args.seed)
        bad = 0
        for m in measures:
            g = sweep.grids[m]
            cells = list(itertools.product(*[range(len(d)) for d in g.domains]))
            for c in rng.sample(cells, min(args.check, len(cells))):
                conv = BASE.replace(**g.conventions(c))
                try:
                    want = evaluate(prep, None, [m], conv).aggregate(m)
                except EvaluationError as e:  # a refusal: the sweep's cell must be one too
                    want = f"refused ({e})"
                got = "refused" if g.error[c] else float(g.lo[c])
                if isinstance(want, str) or isinstance(got, str):
                    same = isinstance(want, str) and isinstance(got, str)
                else:
                    same = want == got or (math.isnan(want) and math.isnan(got))
                if not same:
                    bad += 1
                    print(f"MISMATCH {m.text} {g.conventions(c)}: evaluate {want!r}, sweep {got!r}")
        print(f"checked {args.check} combinations per measure against evaluate(): "
              f"{'all equal' if not bad else f'{bad} differ'}")
        if bad:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""In-process timing of the Python API on dicts, beside pytrec_eval and ranx on the same dicts.

What RAG, LTR and recommender code does: it holds ``{qid: {docid: label}}`` and
``{qid: {docid: score}}`` and calls an evaluation, often in a training loop. Five measures
(nDCG@10, AP, RR, P@10, R@100); synthetic dicts of Q queries x 100 documents, 50 graded
judgments (0..3) a query, scores with six decimals (seeded, the same dicts for every tool):

- ``conformance.evaluate(qrels_dict, run_dict)``, and on prebuilt ``Qrels`` / ``Run``;
- ``Qrels.from_dict`` / ``Run.from_dict``, and ``Run.from_frame`` on a DataFrame of the rows;
- pytrec_eval: ``RelevanceEvaluator(qrels, ...)`` + ``evaluate(run)``, and ``evaluate`` alone;
- ranx: ``evaluate`` on prebuilt ``Qrels`` / ``Run`` (after one call that compiles its numba
  code, not timed), and from the dicts (``Qrels(dict)``, ``Run(dict)`` + ``evaluate``);
- the loop: one qrels, 20 runs (each the base run's scores perturbed): ``conformance.Evaluator``
  built once and ``evaluate(run)`` per run, against pytrec_eval's ``RelevanceEvaluator`` built
  once and ``evaluate(run)`` per run, the two alternating run by run.

Each row is timed ``--repeat`` times, the rows alternating round by round; the table gives the
min and the median. The machine these numbers come from may be shared (see the load average
printed): compare the rows of one run of this script, not times across runs.

Values are checked after the timing: conformance (trec_eval profile) against pytrec_eval
query by query to 1e-6, and the Evaluator's against ``conformance.evaluate``'s.

Usage::

    python benchmarks/bench_api.py                 # 200k rows (2,000 queries) and 2M (20,000)
    python benchmarks/bench_api.py --queries 2000 --repeat 5

Not run by the tests.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import time
from pathlib import Path

import numpy as np

MEASURES = "nDCG@10,AP,RR,P@10,R@100"
PYTREC = {"nDCG@10": "ndcg_cut_10", "AP": "map", "RR": "recip_rank", "P@10": "P_10", "R@100": "recall_100"}
PYTREC_REQUEST = {"ndcg_cut.10", "map", "recip_rank", "P.10", "recall.100"}
RANX = ["ndcg@10", "map", "mrr", "precision@10", "recall@100"]


def make(queries: int, docs: int = 100, judged: int = 50, seed: int = 0):
    """(qrels dict, run dict, the run's rows as columns) of the given shape, deterministically."""
    rng = np.random.default_rng(seed)
    doc_ids = rng.integers(0, 10**7, size=(queries, docs))
    scores = np.round(rng.random((queries, docs)), 6)
    labels = rng.integers(0, 4, size=(queries, judged))
    qids = [f"q{i}" for i in range(queries)]
    names = np.char.add("d", doc_ids.astype(str)).tolist()
    run = {q: dict(zip(n, s)) for q, n, s in zip(qids, names, scores.tolist())}
    qrels = {q: dict(zip(n[:judged], lab)) for q, n, lab in zip(qids, names, labels.tolist())}
    return qrels, run


def perturbed(run: dict, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {q: dict(zip(d, (np.fromiter(d.values(), float, len(d)) + rng.normal(0, 0.05, len(d))).tolist()))
            for q, d in run.items()}


def _timed(fn):
    """(wall seconds, CPU seconds of the process: every thread), fn's result."""
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    return (time.perf_counter() - t, time.process_time() - c), out


def bench_size(queries: int, repeat: int, log) -> list[tuple[str, list[float]]]:
    import pandas as pd
    import pytrec_eval
    import ranx

    import conformance
    from conformance import Qrels, Run

    qrels_d, run_d = make(queries)
    rows = sum(map(len, run_d.values()))
    log(f"\n== {rows:,} run rows ({queries:,} queries x 100), {sum(map(len, qrels_d.values())):,} judgments")
    frame = pd.DataFrame([(q, d, s) for q, ds in run_d.items() for d, s in ds.items()],
                         columns=["query_id", "doc_id", "score"])
    qrels_b, run_b = Qrels.from_dict(qrels_d), Run.from_dict(run_d)
    rq, rr = ranx.Qrels(qrels_d), ranx.Run(run_d)
    ranx.evaluate(rq, rr, RANX)  # compiles ranx's numba code (not timed)
    pytrec_ev = pytrec_eval.RelevanceEvaluator(qrels_d, PYTREC_REQUEST)
    cases = {
        "conformance.evaluate(qrels_dict, run_dict)": lambda: conformance.evaluate(qrels_d, run_d, MEASURES).mean,
        "conformance.evaluate on prebuilt Qrels / Run": lambda: conformance.evaluate(qrels_b, run_b, MEASURES).mean,
        "Qrels.from_dict": lambda: Qrels.from_dict(qrels_d),
        "Run.from_dict": lambda: Run.from_dict(run_d),
        "Run.from_frame (DataFrame of the same rows)": lambda: Run.from_frame(frame),
        "pytrec_eval RelevanceEvaluator(qrels) + evaluate(run)":
            lambda: pytrec_eval.RelevanceEvaluator(qrels_d, PYTREC_REQUEST).evaluate(run_d),
        "pytrec_eval evaluate(run) alone": lambda: pytrec_ev.evaluate(run_d),
        "ranx evaluate on prebuilt, compiled Qrels / Run": lambda: ranx.evaluate(rq, rr, RANX),
        "ranx from the dicts (Qrels(dict), Run(dict), evaluate)":
            lambda: ranx.evaluate(ranx.Qrels(qrels_d), ranx.Run(run_d), RANX),
    }
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
    for r in range(repeat):
        for name in (list(cases) if r % 2 == 0 else list(cases)[::-1]):
            times[name].append(_timed(cases[name])[0])
    log(f"  {'call':<58} wall min / median s   CPU min / median s")
    for name, ts in times.items():
        wall, cpu = [w for w, _ in ts], [c for _, c in ts]
        log(f"  {name:<58} {min(wall):.3f} / {float(np.median(wall)):.3f}        "
            f"{min(cpu):.3f} / {float(np.median(cpu)):.3f}")

    # values: conformance against pytrec_eval, per query
    ours = conformance.evaluate(qrels_d, run_d, MEASURES).per_query
    theirs = pytrec_ev.evaluate(run_d)
    worst = max(abs(ours[m][q] - theirs[q][PYTREC[m]]) for m in PYTREC for q in ours[m])
    log(f"  values: conformance (trec_eval profile) vs pytrec_eval, largest |diff| {worst:.1e} "
        f"({'ok' if worst <= 1e-6 else 'MISMATCH'})")
    return [(name, ts) for name, ts in times.items()]


def bench_loop(queries: int, runs: int, log) -> dict:
    import pytrec_eval

    import conformance

    qrels_d, base = make(queries)
    loop = [perturbed(base, s) for s in range(runs)]
    (t_build_c, _), ev = _timed(lambda: conformance.Evaluator(qrels_d, MEASURES, profile="trec_eval"))
    (t_build_p, _), pe = _timed(lambda: pytrec_eval.RelevanceEvaluator(qrels_d, PYTREC_REQUEST))
    ours, theirs = [], []
    for i, run in enumerate(loop):
        pair = [("c", lambda: ev.evaluate(run).mean), ("p", lambda: pe.evaluate(run))]
        for who, fn in (pair if i % 2 == 0 else pair[::-1]):
            (ours if who == "c" else theirs).append(_timed(fn)[0])
    ours_cpu, theirs_cpu = [c for _, c in ours], [c for _, c in theirs]
    ours, theirs = [w for w, _ in ours], [w for w, _ in theirs]
    ratio = [p / c for c, p in zip(ours, theirs)]
    ratio_cpu = [p / c for c, p in zip(ours_cpu, theirs_cpu)]
    same = all(ev.evaluate(r).mean == conformance.evaluate(qrels_d, r, MEASURES).mean for r in loop[:3])
    log(f"\n== loop: one qrels ({queries:,} queries), {runs} runs of {queries * 100:,} rows")
    log(f"  build once: conformance.Evaluator {t_build_c:.3f} s, pytrec_eval RelevanceEvaluator {t_build_p:.3f} s")
    log(f"  per run: Evaluator.evaluate min {min(ours):.3f} / median {float(np.median(ours)):.3f} / max {max(ours):.3f} s; "
        f"pytrec_eval evaluate min {min(theirs):.3f} / median {float(np.median(theirs)):.3f} / max {max(theirs):.3f} s")
    log(f"  pytrec_eval / Evaluator, run by run: min {min(ratio):.2f} / median {float(np.median(ratio)):.2f} / "
        f"max {max(ratio):.2f}; Evaluator faster on {sum(x > 1 for x in ratio)} of {runs} runs")
    log(f"  the same in CPU seconds: min {min(ratio_cpu):.2f} / median {float(np.median(ratio_cpu)):.2f} / "
        f"max {max(ratio_cpu):.2f}; Evaluator faster on {sum(x > 1 for x in ratio_cpu)} of {runs} runs")
    log(f"  Evaluator means equal conformance.evaluate's on the first runs: {same}")
    return {"ours": ours, "theirs": theirs}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--queries", default="2000,20000", help="comma list of query counts (x 100 rows) [2000,20000]")
    p.add_argument("--repeat", type=int, default=5, help="rounds per row [5]")
    p.add_argument("--loop-runs", type=int, default=20, help="runs of the loop case [20]")
    args = p.parse_args(argv)

    def log(msg: str) -> None:
        print(msg, flush=True)

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).parent,
                                capture_output=True, text=True).stdout.strip() or "unknown"
    except OSError:
        commit = "unknown"
    log(f"{platform.node()}; {os.cpu_count()} cores; Python {platform.python_version()}; commit {commit}; "
        f"load average before: {os.getloadavg()[0]:.2f}")
    for q in [int(x) for x in args.queries.split(",") if x]:
        bench_size(q, args.repeat, log)
    bench_loop(2000, args.loop_runs, log)
    log(f"\nload average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

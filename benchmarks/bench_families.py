"""End-to-end timing of the measure families beyond today's six: conformance against pytrec_eval
and ir_measures on the same files.

The measures: the six of ``bench_eval.py`` (nDCG@10, nDCG, AP, RR, P@10, R@100) and bpref,
ERR@20, RBP(p=0.8), Judged@10 and infAP. Each tool computes every one it can, in one process of
its own, timed inside the child around the library calls (imports excluded, "parse+eval") and as
a whole ("process"), interleaved run by run:

- ``conformance``: ``conformance.io.load_qrels`` / ``load_run`` + one
  ``conformance.reference.evaluate`` of the eleven under the ``trec_eval`` profile;
- ``pytrec_eval``: ``parse_qrel`` / ``parse_run`` + ``RelevanceEvaluator`` with the eight trec_eval
  9 has (``ndcg_cut.10``, ``ndcg``, ``map``, ``recip_rank``, ``P.10``, ``recall.100``, ``bpref``,
  ``infAP``; no ERR, RBP or Judged);
- ``ir_measures``: ``read_trec_qrels`` / ``read_trec_run`` into lists + ``iter_calc`` of the
  eleven (pytrec_eval for eight, gdeval for ERR@20, cwl_eval for RBP(rel=1,p=0.8), its judged
  provider for Judged@10).

The files are those of ``generate.py`` with numeric query ids (``--numeric-qids``: gdeval reads
no other), generated when missing. After the timed runs the values are checked, query by query:
conformance (trec_eval profile) against pytrec_eval on their eight, to 1e-6; conformance under
ir_measures' declared profile of each measure (``conformance.libs.ir_measures``) against
ir_measures, to 1e-6 (ERR: gdeval prints 5 decimals, so 5e-6).

Usage::

    python benchmarks/bench_families.py --sizes medium --repeat 3

Not run by the tests. See benchmarks/README.md for the latest table.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_eval  # noqa: E402  (benchmarks/ is not a package)
import generate  # noqa: E402

CLASSIC = ["nDCG@10", "nDCG", "AP", "RR", "P@10", "R@100"]
NEW = ["bpref", "ERR@20", "RBP(p=0.8)", "Judged@10", "infAP"]
MEASURES = CLASSIC + NEW
PYTREC = {"nDCG@10": "ndcg_cut_10", "nDCG": "ndcg", "AP": "map", "RR": "recip_rank",
          "P@10": "P_10", "R@100": "recall_100", "bpref": "bpref", "infAP": "infAP"}
PYTREC_REQUEST = {"ndcg_cut.10", "ndcg", "map", "recip_rank", "P.10", "recall.100", "bpref", "infAP"}
IR_MEASURES = {"nDCG@10": "nDCG@10", "nDCG": "nDCG", "AP": "AP", "RR": "RR", "P@10": "P@10",
               "R@100": "R@100", "bpref": "Bpref", "ERR@20": "ERR@20",
               "RBP(p=0.8)": "RBP(rel=1,p=0.8)", "Judged@10": "Judged@10", "infAP": "infAP"}
TOOLS = ["conformance", "pytrec_eval", "ir_measures"]
TOLERANCE = 1e-6


def _worker(tool: str, qrels_path: str, run_path: str, values_path: str) -> dict:
    import resource

    t0 = time.perf_counter()
    if tool in ("conformance", "conformance-irm"):
        from conformance import io as cio
        from conformance.conventions import TREC_EVAL
        from conformance.libs.ir_measures import PROFILES, declared_provider
        from conformance.measures import parse_measures
        from conformance.reference import evaluate

        measures = parse_measures(MEASURES)
        t1 = time.perf_counter()
        base_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        qrels = cio.load_qrels(qrels_path)
        run = cio.load_run(run_path)
        t2 = time.perf_counter()
        if tool == "conformance":
            ev = evaluate(qrels, run, measures, TREC_EVAL)
            t3 = time.perf_counter()
            bench_eval._save(values_path, ev.qids, {m.text: ev.per_query[m] for m in measures})
        else:  # untimed: each measure under ir_measures' declared profile for it
            values, qids = {}, None
            for m in measures:
                ev = evaluate(qrels, run, [m], PROFILES[declared_provider(m)])
                qids = ev.qids
                values[m.text] = ev.per_query[m]
            t3 = time.perf_counter()
            bench_eval._save(values_path, qids, values)
    elif tool == "pytrec_eval":
        import pytrec_eval

        t1 = time.perf_counter()
        base_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        with open(qrels_path) as f:
            qrels = pytrec_eval.parse_qrel(f)
        with open(run_path) as f:
            run = pytrec_eval.parse_run(f)
        t2 = time.perf_counter()
        res = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_REQUEST).evaluate(run)
        t3 = time.perf_counter()
        qids = sorted(res)
        bench_eval._save(values_path, qids, {m: [res[q][PYTREC[m]] for q in qids] for m in PYTREC})
    elif tool == "ir_measures":
        import warnings

        warnings.simplefilter("ignore")
        import ir_measures

        measures = [ir_measures.parse_measure(IR_MEASURES[m]) for m in MEASURES]
        t1 = time.perf_counter()
        base_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        qrels = list(ir_measures.read_trec_qrels(qrels_path))
        run = list(ir_measures.read_trec_run(run_path))
        t2 = time.perf_counter()
        rows = list(ir_measures.iter_calc(measures, qrels, run))
        t3 = time.perf_counter()
        by = {m: {} for m in MEASURES}
        name = {str(im): m for m, im in zip(MEASURES, measures)}
        for r in rows:
            by[name[str(r.measure)]][r.query_id] = r.value
        qids = sorted(by[MEASURES[0]])
        bench_eval._save(values_path, qids, {m: [by[m].get(q, np.nan) for q in qids] for m in MEASURES})
    else:
        raise SystemExit(f"unknown worker {tool!r}")
    return dict(imports_s=t1 - t0, parse_s=t2 - t1, eval_s=t3 - t2, after_imports_mb=base_mb,
                maxrss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def measure(tool: str, qrels: Path, run: Path, work: Path) -> dict:
    values = str(work / f"{tool}.npz")
    stdout = str(work / f"{tool}.out")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", tool, "--qrels", str(qrels),
           "--run", str(run), "--values", values]
    res = bench_eval._child(cmd, stdout)
    res.update(json.loads(Path(stdout).read_text().strip().splitlines()[-1]))
    res["parse_eval_s"] = res["parse_s"] + res["eval_s"]
    res["values"] = values
    return res


def check(conf: str, other: str, measures: list[str], who: str, tolerance_of) -> list[str]:
    q, qa, qb, a, b = bench_eval._aligned(conf, other)
    lines = []
    if q.size != qa.size or q.size != qb.size:
        lines.append(f"  MISMATCH query sets: conformance {qa.size}, {who} {qb.size}, common {q.size}")
    total = 0
    for m in measures:
        d = np.abs(a[m] - b[m])
        tol = tolerance_of(m)
        bad = np.flatnonzero(~(d <= tol))
        total += bad.size
        lines.append(f"  {m:<11} max |diff| {d.max(initial=0):.2e} over {q.size} queries "
                     f"(tolerance {tol:g}): " + ("ok" if not bad.size else f"MISMATCH in {bad.size}"))
        for i in bad[:5]:
            lines.append(f"      {q[i]}: conformance {a[m][i]!r}, {who} {b[m][i]!r}")
    return [f"conformance vs {who}, per query: " + (f"{total} MISMATCHES" if total else "all agree")] + lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Time the new measure families: conformance, pytrec_eval, ir_measures.")
    p.add_argument("--sizes", default="medium", help="comma list of small, medium, large [medium]")
    p.add_argument("--tools", default=",".join(TOOLS))
    p.add_argument("--repeat", type=int, default=3, help="interleaved runs per tool and size [3]")
    p.add_argument("--json", type=Path, help="also write every measurement to this JSON file")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--qrels", help=argparse.SUPPRESS)
    p.add_argument("--run", help=argparse.SUPPRESS)
    p.add_argument("--values", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(_worker(args.worker, args.qrels, args.run, args.values)))
        return 0
    tools = [t for t in args.tools.split(",") if t]

    def log(msg: str) -> None:
        print(msg, flush=True)

    started = _dt.datetime.now().astimezone()
    load0 = os.getloadavg()
    log(f"{started:%Y-%m-%d %H:%M %Z}; {platform.node()}; {os.cpu_count()} cores; "
        f"Python {platform.python_version()}; load average before: {load0[0]:.2f}")
    log("; ".join(f"{k} {v}" for k, v in bench_eval._versions().items()))
    log(bench_eval._compile_bytecode())
    report = []
    with tempfile.TemporaryDirectory(prefix="bench_families-") as tmp:
        for name in [s for s in args.sizes.split(",") if s]:
            q, d, j = generate.SIZES[name]
            qrels, run = generate.ensure(q, d, j, numeric_qids=True)
            log(f"\n== {name}: {q * d:,} run rows, {q * j:,} judgments  [{run.name}, {qrels.name}]")
            results: dict[str, list[dict]] = {t: [] for t in tools}
            for r in range(args.repeat):
                for tool in tools:
                    sub = Path(tmp) / f"{name}-{r}"
                    sub.mkdir(exist_ok=True)
                    res = measure(tool, qrels, run, sub)
                    results[tool].append(res)
                    log(f"  [{r + 1}] {tool:<12} parse {res['parse_s']:.2f} s  eval {res['eval_s']:.2f} s  "
                        f"parse+eval {res['parse_eval_s']:.2f} s  process {res['process_s']:.2f} s  "
                        f"peak {res['peak_mb']:.0f} MB")
            # interleaved ratios: run r of each tool against run r of conformance
            log("\nratios of interleaved runs (other tool's time / conformance's), run by run:")
            for tool in tools:
                if tool == "conformance" or "conformance" not in results:
                    continue
                for key in ("parse_eval_s", "eval_s", "process_s"):
                    ratios = [o[key] / c[key] for o, c in zip(results[tool], results["conformance"])]
                    log(f"  {tool:<12} {key:<13} " + ", ".join(f"{x:.2f}x" for x in ratios)
                        + f"  (median {float(np.median(ratios)):.2f}x)")
            checks = []
            last = {t: results[t][-1]["values"] for t in tools}
            if "conformance" in last and "pytrec_eval" in last:
                checks += check(last["conformance"], last["pytrec_eval"], list(PYTREC), "pytrec_eval",
                                lambda m: TOLERANCE)
            if "ir_measures" in last:
                irm = measure("conformance-irm", qrels, run, Path(tmp))
                checks += check(irm["values"], last["ir_measures"], MEASURES, "ir_measures",
                                lambda m: 5e-6 if m == "ERR@20" else TOLERANCE)
            for line in checks:
                log(line)
            report.append({"name": name, "runs": {t: [{k: v for k, v in x.items() if k != "values"}
                                                      for x in rs] for t, rs in results.items()},
                           "checks": checks})
    load1 = os.getloadavg()
    log(f"\nload average after: {load1[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"started": started.isoformat(), "load": [load0, load1],
                                         "command": " ".join(sys.argv), "sizes": report},
                                        indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())

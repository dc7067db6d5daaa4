"""End-to-end timing (parse + evaluate) of conformance, pytrec_eval and ranx on the same files.

Measures nDCG@10, nDCG, AP, RR, P@10 and R@100 on the synthetic TREC files of ``generate.py``
(generated on the fly when missing). Each tool runs in a child process of its own, so its peak
memory (the child's ``ru_maxrss``, read with ``os.wait4``) is its own:

- ``conformance``: ``conformance.io.load_qrels`` / ``load_run`` + ``conformance.reference.evaluate``
  under the ``trec_eval`` profile (float32 scores, as pytrec_eval);
- ``conformance eval``: the command line as a user runs it, ``--profile trec_eval --format
  json`` with the default flags (the row counts and the tie warnings on stderr, not
  ``--quiet``), timed as a whole process (interpreter start and imports included);
- ``pytrec_eval``: ``pytrec_eval.parse_qrel`` / ``parse_run`` on the open files +
  ``RelevanceEvaluator(qrels, {ndcg_cut.10, ndcg, map, recip_rank, P.10, recall.100}).evaluate``;
- ``ir_measures``: ``read_trec_qrels`` / ``read_trec_run`` + ``iter_calc`` (nDCG@10, nDCG, AP,
  RR, P@10, R@100; ir_measures hands these to pytrec_eval);
- ``ranx``: ``Qrels.from_file`` / ``Run.from_file`` + ``evaluate`` (ndcg@10, ndcg, map, mrr,
  precision@10, recall@100; numba threads = all cores). A separate process first makes one
  small call, which warms numba's on-disk cache; its time is reported as the warm time. ranx
  still compiles part of its code in every new process, so the timed child also makes one small
  call before timing (reported as "jit"): parse+eval is ranx's steady state, and "process"
  includes the compilation a user pays once per process.

"parse+eval" is timed inside the child around the library calls (imports excluded); "process"
is the child's whole wall time, as a user running a script would see it. Each round runs
every tool once, the order reversed every other round (so ``conformance eval`` and
pytrec_eval alternate as pairs); ``--repeat`` rounds. The table gives min / median / max of
the process time and the peak, and the median over the rounds of pytrec_eval's time divided
by the tool's in the same round: on a machine shared with other jobs, that ratio of
alternating pairs is the number to quote, not a single time.

Values are checked after the timed runs: conformance (trec_eval profile) against pytrec_eval
query by query, to 1e-6, every mismatch printed; against ranx, the largest difference, and
whether every ranx value lies in the range conformance gives under ranx's own profile
(``ties=unspecified``: the best and worst order of tied documents), which shows a difference to
be the tie convention. The ``conformance eval`` means must equal the API's.

Usage::

    python benchmarks/bench_eval.py --sizes small,medium
    python benchmarks/bench_eval.py --sizes small,medium,large --skip-ranx large --repeat 3

Not run by the tests. See benchmarks/README.md for the latest table.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# numpy and generate (pyarrow) are imported by the parent only (main): a child imports what its
# tool needs and nothing more, so that its peak memory is the tool's own (pytrec_eval's child
# would otherwise carry numpy's and pyarrow's ~40 MB)
np = generate = None

MEASURES = ["nDCG@10", "nDCG", "AP", "RR", "P@10", "R@100"]
PYTREC = {"nDCG@10": "ndcg_cut_10", "nDCG": "ndcg", "AP": "map", "RR": "recip_rank",
          "P@10": "P_10", "R@100": "recall_100"}
PYTREC_REQUEST = {"ndcg_cut.10", "ndcg", "map", "recip_rank", "P.10", "recall.100"}
RANX = {"nDCG@10": "ndcg@10", "nDCG": "ndcg", "AP": "map", "RR": "mrr", "P@10": "precision@10",
        "R@100": "recall@100"}
TOOLS = ["conformance eval", "pytrec_eval", "conformance", "ir_measures", "ranx"]
IR_MEASURES = {"nDCG@10": "nDCG@10", "nDCG": "nDCG", "AP": "AP", "RR": "RR", "P@10": "P@10",
               "R@100": "R@100"}
TOLERANCE = 1e-6


# --------------------------------------------------------------------------------------------
# Children: each times its own work and writes per-query values (after timing) to --values


def _save(path: str, qids, values: dict, **extra) -> None:
    def plain(v):
        return [float(x) for x in (v.tolist() if hasattr(v, "tolist") else v)]

    doc = {"qids": [str(q) for q in (qids.tolist() if hasattr(qids, "tolist") else qids)]}
    doc.update({m: plain(v) for m, v in values.items()})
    doc.update({k: plain(v) for k, v in extra.items()})
    with open(path, "w") as f:
        json.dump(doc, f)


def _worker(tool: str, qrels_path: str, run_path: str, values_path: str) -> dict:
    import resource

    t0 = time.perf_counter()
    out: dict = {}
    if tool == "conformance":
        from conformance import io as cio
        from conformance.conventions import TREC_EVAL
        from conformance.measures import parse_measures
        from conformance.reference import evaluate

        measures = parse_measures(MEASURES)
        t1 = time.perf_counter()
        base_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        qrels = cio.load_qrels(qrels_path)
        run = cio.load_run(run_path)
        t2 = time.perf_counter()
        ev = evaluate(qrels, run, measures, TREC_EVAL)
        t3 = time.perf_counter()
        _save(values_path, ev.qids, {m.text: ev.per_query[m] for m in measures})
    elif tool == "conformance-check":
        # untimed: conformance under ranx's own profile (ties unspecified: a [worst, best] range)
        from conformance import io as cio
        from conformance.libs.ranx import PROFILE
        from conformance.measures import parse_measures
        from conformance.reference import evaluate

        measures = parse_measures(MEASURES)
        t1 = time.perf_counter()
        base_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        qrels = cio.load_qrels(qrels_path)
        run = cio.load_run(run_path, duplicates=PROFILE.duplicates)
        t2 = time.perf_counter()
        ev = evaluate(qrels, run, measures, PROFILE.replace(query_set="run"))
        t3 = time.perf_counter()
        _save(values_path, ev.qids, {m.text: ev.per_query[m] for m in measures},
              **{"upper:" + m.text: ev.upper[m] for m in measures})
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
        _save(values_path, qids, {m: [res[q][PYTREC[m]] for q in qids] for m in MEASURES})
    elif tool == "ir_measures":
        import ir_measures

        ms = [ir_measures.parse_measure(IR_MEASURES[m]) for m in MEASURES]
        t1 = time.perf_counter()
        base_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        qrels = list(ir_measures.read_trec_qrels(qrels_path))
        run = list(ir_measures.read_trec_run(run_path))
        t2 = time.perf_counter()
        got: dict = {}
        for r in ir_measures.iter_calc(ms, qrels, run):
            got.setdefault(str(r.measure), {})[r.query_id] = r.value
        t3 = time.perf_counter()
        qids = sorted(got[str(ms[0])])
        _save(values_path, qids, {m: [got[str(x)].get(q, float("nan")) for q in qids] for m, x in zip(MEASURES, ms)})
    elif tool in ("ranx", "ranx-warm"):
        from ranx import Qrels, Run, evaluate

        def tiny():
            qrels = Qrels({"q1": {"d1": 1, "d2": 2}, "q2": {"d3": 1}})
            run = Run({"q1": {"d1": 0.5, "d2": 0.7, "d9": 0.1}, "q2": {"d3": 0.2, "d4": 0.3}})
            evaluate(qrels, run, list(RANX.values()))

        t1 = time.perf_counter()
        base_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        if tool == "ranx-warm":
            t2 = time.perf_counter()
            tiny()
            t3 = time.perf_counter()
        else:
            # numba compiles (or loads from its cache) in every new process: done here on a
            # tiny input first, so that parse and eval below are the steady-state costs
            tiny()
            out["jit_s"] = time.perf_counter() - t1
            t1 = time.perf_counter()
            qrels = Qrels.from_file(qrels_path, kind="trec")
            run = Run.from_file(run_path, kind="trec")
            t2 = time.perf_counter()
            evaluate(qrels, run, list(RANX.values()))
            t3 = time.perf_counter()
        if tool == "ranx":
            qids = sorted(run.scores[RANX[MEASURES[0]]])
            _save(values_path, qids, {m: [run.scores[RANX[m]][q] for q in qids] for m in MEASURES})
    else:
        raise SystemExit(f"unknown worker {tool!r}")
    out.update(imports_s=t1 - t0 - out.get("jit_s", 0.0), parse_s=t2 - t1, eval_s=t3 - t2, after_imports_mb=base_mb,
               maxrss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return out


# --------------------------------------------------------------------------------------------
# The parent: one child per measurement


def _child(cmd: list[str], stdout_path: str) -> dict:
    """Run ``cmd``; return its wall time, CPU time and peak RSS (its own ru_maxrss)."""
    with open(stdout_path, "wb") as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{stderr[-3000:]}")
    return {"process_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "peak_mb": ru.ru_maxrss / 1024}


def _cli_command() -> list[str]:
    # The console script installed beside this interpreter, as pytrec_eval's worker runs on
    # this interpreter directly: a version manager's shim found first on PATH (pyenv's is a
    # shell script that starts pyenv) would add its own start-up to the timed process.
    beside = Path(sys.executable).parent / "conformance"
    exe = str(beside) if beside.exists() else shutil.which("conformance")
    return [exe] if exe else [sys.executable, "-c", "from conformance.cli import main; main()"]


def measure(tool: str, qrels: Path, run: Path, work: Path) -> dict:
    values = str(work / f"{tool.replace(' ', '_')}.json")
    stdout = str(work / f"{tool.replace(' ', '_')}.out")
    if tool == "conformance eval":
        # the default command: row counts and the tie warnings on stderr (not --quiet)
        cmd = _cli_command() + ["eval", "--qrels", str(qrels), "--run", str(run), "--metrics",
                                ",".join(MEASURES), "--profile", "trec_eval", "--format", "json"]
        res = _child(cmd, stdout)
        res["means"] = _cli_means(json.loads(Path(stdout).read_text()))
        return res
    worker = "ranx-warm" if tool == "ranx warm" else tool
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", worker, "--qrels", str(qrels),
           "--run", str(run), "--values", values]
    res = _child(cmd, stdout)
    res.update(json.loads(Path(stdout).read_text().strip().splitlines()[-1]))
    res["parse_eval_s"] = res["parse_s"] + res["eval_s"]
    res["values"] = values
    return res


def _cli_means(doc: dict) -> dict[str, float]:
    """measure -> mean from ``conformance eval --format json`` (its "metrics" object)."""
    return {m: float(v) for m, v in doc.get("metrics", {}).items() if isinstance(v, (int, float))}


# --------------------------------------------------------------------------------------------
# Checking values


def _load(path: str):
    with open(path) as f:
        z = json.load(f)
    return np.asarray(z.pop("qids"), dtype=str), {k: np.asarray(v, np.float64) for k, v in z.items()}


def _aligned(a_path: str, b_path: str):
    qa, va = _load(a_path)
    qb, vb = _load(b_path)
    common, ia, ib = np.intersect1d(qa, qb, return_indices=True)
    return common, qa, qb, {k: v[ia] for k, v in va.items()}, {k: v[ib] for k, v in vb.items()}


def check_pytrec(conf: str, pytrec: str, name: str = "pytrec_eval") -> list[str]:
    q, qa, qb, a, b = _aligned(conf, pytrec)
    lines = []
    if q.size != qa.size or q.size != qb.size:
        lines.append(f"  MISMATCH query sets: conformance {qa.size}, {name} {qb.size}, common {q.size}")
    total = 0
    for m in MEASURES:
        d = np.abs(a[m] - b[m])
        bad = np.flatnonzero(~(d <= TOLERANCE))
        total += bad.size
        status = "ok" if not bad.size else f"MISMATCH in {bad.size} queries"
        lines.append(f"  {m:<8} max |diff| {d.max(initial=0):.2e} over {q.size} queries: {status}")
        for i in bad[:5]:
            lines.append(f"      {q[i]}: conformance {a[m][i]!r}, {name} {b[m][i]!r}")
    verdict = f"{total} MISMATCHES" if total else "all agree"
    return [f"conformance (trec_eval profile) vs {name}, per query, tolerance 1e-6: {verdict}"] + lines


def check_ranx(conf: str, ranx: str, conf_ranx_profile: str | None) -> list[str]:
    q, qa, qb, a, b = _aligned(conf, ranx)
    lines = ["conformance (trec_eval profile) vs ranx, per query:"]
    if q.size != qa.size or q.size != qb.size:
        lines.append(f"  query sets differ: conformance {qa.size}, ranx {qb.size}, common {q.size}")
    rng = None
    if conf_ranx_profile:
        qr, _, _, lohi, bb = _aligned(conf_ranx_profile, ranx)
        rng = (qr, lohi, bb)
    for m in MEASURES:
        d = np.abs(a[m] - b[m])
        n_diff = int((d > TOLERANCE).sum())
        line = f"  {m:<8} max |diff| {d.max(initial=0):.2e}, {n_diff} of {q.size} queries differ by > 1e-6"
        if rng is not None:
            _, lohi, bb = rng
            lo, hi, got = lohi[m], lohi["upper:" + m], bb[m]
            outside = int(((got < lo - TOLERANCE) | (got > hi + TOLERANCE)).sum())
            line += ("; every ranx value lies in the tie range [worst, best] of ranx's profile: "
                     "the tie convention" if outside == 0 and n_diff else
                     "" if outside == 0 else f"; {outside} ranx values OUTSIDE the tie range (not ties)")
        lines.append(line)
    return lines


# --------------------------------------------------------------------------------------------
# The run


def _fmt(x, spec=".2f"):
    return "-" if x is None else format(x, spec)


def run_size(name: str, tools: list[str], repeat: int, ranx_repeat: int, work: Path, log) -> dict:
    q, d, j = generate.SIZES[name]
    qrels, run = generate.ensure(q, d, j)
    rows = q * d
    log(f"\n== {name}: {rows:,} run rows ({q} queries x {d}), {q * j:,} judgments  [{run.name}, {qrels.name}]")
    results: dict[str, list[dict]] = {t: [] for t in tools}
    warm = None
    if "ranx" in tools:
        warm = measure("ranx warm", qrels, run, work)
        log(f"ranx numba warm-up (separate process, tiny input): evaluate {warm['eval_s']:.2f} s, "
            f"imports {warm['imports_s']:.2f} s")
    for r in range(max(repeat, ranx_repeat)):
        for tool in (tools if r % 2 == 0 else tools[::-1]):  # pairs alternate
            if r >= (ranx_repeat if tool == "ranx" else repeat):
                continue
            sub = work / f"{name}-{r}"
            sub.mkdir(exist_ok=True)
            res = measure(tool, qrels, run, sub)
            results[tool].append(res)
            pe = res.get("parse_eval_s")
            jit = f"  (jit {res['jit_s']:.2f} s)" if "jit_s" in res else ""
            log(f"  [{r + 1}] {tool:<17} parse+eval {_fmt(pe)} s  process {res['process_s']:.2f} s  "
                f"cpu {res['cpu_s']:.2f} s  peak {res['peak_mb']:.0f} MB{jit}")
    best = {}
    for tool, rs in results.items():
        if not rs:
            continue
        pick = min(rs, key=lambda x: x.get("parse_eval_s", x["process_s"]))
        best[tool] = dict(pick, peak_mb=max(x["peak_mb"] for x in rs),
                          process_s=min(x["process_s"] for x in rs), cpu_s=min(x["cpu_s"] for x in rs))
        walls = [x["process_s"] for x in rs]
        peaks = [x["peak_mb"] for x in rs]
        best[tool]["spread"] = {"process_s": [min(walls), float(np.median(walls)), max(walls)],
                                "peak_mb": [min(peaks), float(np.median(peaks)), max(peaks)]}
        ref = results.get("pytrec_eval") or []
        pairs = [p["process_s"] / x["process_s"] for p, x in zip(ref, rs)]
        if pairs:  # pytrec_eval's time over the tool's, round by round
            best[tool]["pair_ratio"] = [min(pairs), float(np.median(pairs)), max(pairs)]
    checks: list[str] = []
    if "conformance" in best and "pytrec_eval" in best:
        checks += check_pytrec(best["conformance"]["values"], best["pytrec_eval"]["values"])
    if "conformance" in best and "ir_measures" in best:
        checks += check_pytrec(best["conformance"]["values"], best["ir_measures"]["values"], "ir_measures")
    if "conformance" in best and "ranx" in best:
        chk = measure("conformance-check", qrels, run, work)
        checks += check_ranx(best["conformance"]["values"], best["ranx"]["values"], chk["values"])
    if "conformance" in best and "conformance eval" in best:
        _, api = _load(best["conformance"]["values"])
        cli = best["conformance eval"]["means"]
        diffs = {m: abs(cli[m] - float(api[m].mean())) for m in MEASURES if m in cli}
        missing = [m for m in MEASURES if m not in cli]
        worst = max(diffs.values(), default=0.0)
        checks.append(f"conformance eval means vs the API's: max |diff| {worst:.1e}"
                      + (f"; MISSING from the CLI output: {missing}" if missing else "")
                      + (" (MISMATCH)" if worst > 1e-12 else ""))
    for line in checks:
        log(line)
    return {"name": name, "rows": rows, "queries": q, "best": best, "warm": warm, "checks": checks,
            "runs": results}


def table(size: dict) -> list[str]:
    best = size["best"]
    ref = best.get("pytrec_eval")
    out = [f"{size['name']} ({size['rows']:,} rows)",
           "| tool | parse s | eval s | parse+eval s | process s | CPU s | peak MB | vs pytrec_eval (parse+eval) | vs pytrec_eval (process) | vs pytrec_eval (process CPU) |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for tool in TOOLS:
        if tool not in best:
            continue
        b = best[tool]
        pe = b.get("parse_eval_s")
        r1 = f"{ref['parse_eval_s'] / pe:.2f}x faster" if ref and pe else "-"
        r2 = f"{ref['process_s'] / b['process_s']:.2f}x faster" if ref else "-"
        # CPU seconds (user + system, all threads) are less disturbed than wall time when
        # other jobs share the machine
        r3 = f"{ref['cpu_s'] / b['cpu_s']:.2f}x less" if ref else "-"
        if tool == "pytrec_eval":
            r1 = r2 = r3 = "1 (baseline)"
        out.append(f"| {tool} | {_fmt(b.get('parse_s'))} | {_fmt(b.get('eval_s'))} | {_fmt(pe)} | "
                   f"{b['process_s']:.2f} | {b['cpu_s']:.2f} | {b['peak_mb']:.0f} | {r1} | {r2} | {r3} |")
    notes = []
    if size.get("warm"):
        notes.append(f"ranx numba warm-up (separate process, tiny input): {size['warm']['eval_s']:.2f} s")
    if best.get("ranx", {}).get("jit_s") is not None:
        notes.append(f"ranx compilation in the timed process (in its process time, not in parse+eval): "
                     f"{best['ranx']['jit_s']:.2f} s")
    base = ", ".join(f"{t} {best[t]['after_imports_mb']:.0f} MB" for t in TOOLS
                     if best.get(t, {}).get("after_imports_mb") is not None)
    if base:
        notes.append(f"peak before reading anything (interpreter + imports): {base}")
    return out + [f"- {n}" for n in notes]


def spread_table(size: dict) -> list[str]:
    """min / median / max per tool, and the ratio of alternating pairs (pytrec_eval / tool)."""
    out = [f"{size['name']} ({size['rows']:,} rows), {len(next(iter(size['runs'].values())))} rounds",
           "| tool | process s min / median / max | peak MB min / median / max | pytrec_eval / tool, per round: min / median / max |",
           "|---|---:|---:|---:|"]
    for tool in TOOLS:
        b = size["best"].get(tool)
        if not b:
            continue
        w, pk = b["spread"]["process_s"], b["spread"]["peak_mb"]
        pr = b.get("pair_ratio")
        ratio = "1 (baseline)" if tool == "pytrec_eval" else (
            f"{pr[0]:.2f} / **{pr[1]:.2f}x** / {pr[2]:.2f}" if pr else "-")
        out.append(f"| {tool} | {w[0]:.2f} / {w[1]:.2f} / {w[2]:.2f} | {pk[0]:.0f} / {pk[1]:.0f} / {pk[2]:.0f} | {ratio} |")
    return out


def scaling(sizes: list[dict]) -> list[str]:
    """Median process time and peak per size, per row, and the growth from the previous size
    (time ratio / row ratio: 1.0 is linear)."""
    shown = [t for t in ("conformance eval", "pytrec_eval", "ir_measures", "ranx")
             if any(t in s["best"] for s in sizes)]
    out = ["| size | rows | " + " | ".join(f"{t} median s | ns per row | peak MB | growth" for t in shown) + " |",
           "|---|---:|" + "---:|---:|---:|---:|" * len(shown)]
    prev: dict = {}
    for s in sizes:
        cells = []
        for tool in shown:
            b = s["best"].get(tool)
            if not b:
                cells += ["-"] * 4
                continue
            t, peak = b["spread"]["process_s"][1], b["peak_mb"]
            grow = "-"
            if tool in prev:
                grow = f"{(t / prev[tool][0]) / (s['rows'] / prev[tool][1]):.2f}"
            prev[tool] = (t, s["rows"])
            cells += [f"{t:.2f}", f"{t / s['rows'] * 1e9:.0f}", f"{peak:.0f}", grow]
        out.append(f"| {s['name']} | {s['rows']:,} | " + " | ".join(cells) + " |")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Time conformance, pytrec_eval and ranx end to end on the same files.")
    p.add_argument("--sizes", default="small,medium", help="comma list of small, medium, large [small,medium]")
    p.add_argument("--tools", default=",".join(TOOLS), help=f"comma list of {', '.join(TOOLS)}")
    p.add_argument("--skip-ranx", nargs="?", const="large", default="",
                   help="sizes to run without ranx (given alone: large)")
    p.add_argument("--skip-pytrec-eval", default="", metavar="SIZES", help="sizes to run without pytrec_eval")
    p.add_argument("--repeat", type=int, default=5, help="rounds per size (every tool once a round) [5]")
    p.add_argument("--ranx-repeat", type=int, default=1, help="runs of ranx per size (it is slow) [1]")
    p.add_argument("--json", type=Path, help="also write every measurement to this JSON file")
    # child mode
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--qrels", help=argparse.SUPPRESS)
    p.add_argument("--run", help=argparse.SUPPRESS)
    p.add_argument("--values", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(_worker(args.worker, args.qrels, args.run, args.values)))
        return 0
    global np, generate
    import generate
    import numpy as np

    sizes = [s for s in args.sizes.split(",") if s]
    tools = [t for t in args.tools.split(",") if t]
    for s in sizes:
        if s not in generate.SIZES:
            p.error(f"unknown size {s!r}")
    for t in tools:
        if t not in TOOLS:
            p.error(f"unknown tool {t!r}: expected one of {', '.join(TOOLS)}")
    skip_ranx = set(filter(None, args.skip_ranx.split(",")))
    skip_pytrec = set(filter(None, args.skip_pytrec_eval.split(",")))

    def log(msg: str) -> None:
        print(msg, flush=True)

    load0 = os.getloadavg()
    started = _dt.datetime.now().astimezone()
    log(f"{started:%Y-%m-%d %H:%M %Z}; {platform.node()}; {os.cpu_count()} cores; Python {platform.python_version()}; "
        f"load average before: {load0[0]:.2f}")
    versions = _versions()
    log("; ".join(f"{k} {v}" for k, v in versions.items()) + f"; commit {_commit()}")
    log(_compile_bytecode())
    done = []
    with tempfile.TemporaryDirectory(prefix="bench_eval-") as tmp:
        for s in sizes:
            use = [t for t in tools if not (t == "ranx" and s in skip_ranx)
                   and not (t == "pytrec_eval" and s in skip_pytrec)]
            done.append(run_size(s, use, args.repeat, args.ranx_repeat, Path(tmp), log))
    load1 = os.getloadavg()
    log(f"\nload average after: {load1[0]:.2f} (cores: {os.cpu_count()}); commit {_commit()}")
    for s in done:
        log("")
        for line in spread_table(s):
            log(line)
    log(f"\nFastest of {args.repeat} runs ({args.ranx_repeat} for ranx), largest peak:")
    for s in done:
        log("")
        for line in table(s):
            log(line)
    log("\nScaling (median process time per size; growth: time ratio over row ratio from the size before, 1.00 = linear):")
    for line in scaling(done):
        log(line)
    if args.json:
        for s in done:
            for rs in s["runs"].values():
                for r in rs:
                    r.pop("values", None)
            for b in s["best"].values():
                b.pop("values", None)
        args.json.write_text(json.dumps({"started": started.isoformat(), "load_before": load0, "load_after": load1,
                                         "versions": versions, "command": " ".join(sys.argv), "sizes": done},
                                        indent=1, default=float))
    return 0


def _commit() -> str:
    """The commit measured (with ``+changes`` when the work tree differs from it)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=HERE,
                               capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return head + (" +changes" if dirty else "")


def _compile_bytecode() -> str:
    """Give conformance's modules the bytecode every installed package has.

    ``pip install`` compiles an installed package's modules to ``.pyc``; numpy, pyarrow and
    pytrec_eval come that way. An editable install has none until Python writes it at the
    first import, and never when ``PYTHONDONTWRITEBYTECODE`` is set (as on the machine these
    benchmarks were first run on): then every timed ``conformance eval`` process would compile
    all of conformance from source (~0.07 s) and the other tools would not. Compiling once
    here measures the tools alike.
    """
    import compileall

    import conformance

    package = Path(conformance.__file__).parent
    ok = compileall.compile_dir(str(package), quiet=1)
    return f"bytecode for {package}: {'compiled' if ok else 'NOT compiled (see above)'}"


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("ranking-conformance", "numpy", "pyarrow", "pytrec-eval-terrier", "ir-measures", "ranx", "numba"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    return out


if __name__ == "__main__":
    sys.exit(main())

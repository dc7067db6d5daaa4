"""The Spark engine beside the single-machine eval: time, peak memory, and how time grows.

Each measurement is a fresh child process (so its peak memory is its own), on the files
``benchmarks/generate.py`` writes (TREC run of Q queries x 1,000 documents, 100 judgments per
query), six measures (the eval command's default):

- ``local``: ``conformance eval --qrels Q --run R`` (the single-machine path);
- ``spark``: the same through ``conformance.spark_engine.run(..., partitions=P)`` on
  ``--master`` (default ``local[2]``), timed twice in one process: ``first`` includes the
  session's start (the JVM, the Python workers' imports), ``again`` is a second evaluation in
  the same session (what a cluster job that is already up pays);
- both print their means; the script checks they are equal to every digit (``repr``).

Peak memory is the child's ``ru_maxrss`` from ``wait4``: the largest single process of its
tree (the driver, the JVM, the Python workers), not their sum. Usage::

    python benchmarks/bench_spark.py                         # 200k and 2M rows, 2 and 8 partitions
    python benchmarks/bench_spark.py --queries 200,2000,20000 --partitions 2,4,8
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generate  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MEASURES = "nDCG@10,nDCG,AP,RR,P@10,R@100"

SPARK_CHILD = r"""
import json, sys, time
from conformance import spark_engine
from conformance.measures import parse_measures
qrels, run, master, parts, measures = sys.argv[1:6]
ms = parse_measures(measures)
times = []
for _ in range(2):
    t = time.perf_counter()
    result = spark_engine.run(qrels, run, ms, master=master, partitions=int(parts))
    times.append(time.perf_counter() - t)
print(json.dumps({"times": times, "means": {m.text: repr(result.mean(m)[0]) for m in ms}}))
"""

LOCAL_CHILD = r"""
import json, sys, time
from conformance import pipeline
from conformance.measures import parse_measures
qrels, run, measures = sys.argv[1:4]
ms = parse_measures(measures)
t = time.perf_counter()
result = pipeline.evaluate(qrels, run, ms)
took = time.perf_counter() - t
print(json.dumps({"times": [took], "means": {m.text: repr(result.mean(m)[0]) for m in ms}}))
"""


def child(code: str, *args: str) -> tuple[dict, float, float]:
    """(the child's JSON, wall seconds, peak RSS in MB of the largest process of its tree):
    ``wait4`` gives the child's own rusage, whose ``ru_maxrss`` is the largest of it and the
    descendants it waited for (the JVM, the Python workers)."""
    t = time.perf_counter()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env, cwd=ROOT)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"the child failed (exit status {proc.returncode})")
    return json.loads(out.strip().splitlines()[-1]), wall, usage.ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--queries", default="200,2000", help="comma list: queries (x 1,000 documents)")
    p.add_argument("--partitions", default="2,8", help="comma list of query partitions")
    p.add_argument("--master", default="local[2]")
    args = p.parse_args(argv)
    print(f"{'rows':>11} {'engine':<16} {'first s':>8} {'again s':>8} {'peak MB':>8}  means equal")
    for q in map(int, args.queries.split(",")):
        qrels, run = generate.ensure(q, 1000, 100)
        local, wall, peak = child(LOCAL_CHILD, str(qrels), str(run), MEASURES)
        print(f"{q * 1000:>11,} {'local':<16} {wall:>8.1f} {'':>8} {peak:>8.0f}", flush=True)
        for parts in map(int, args.partitions.split(",")):
            got, wall, peak = child(SPARK_CHILD, str(qrels), str(run), args.master, str(parts),
                                    MEASURES)
            first, again = got["times"]
            same = got["means"] == local["means"]
            print(f"{q * 1000:>11,} {'spark P=' + str(parts):<16} {first:>8.1f} {again:>8.1f} "
                  f"{peak:>8.0f}  {same}", flush=True)
            if not same:
                print(f"  local {local['means']}\n  spark {got['means']}")
                return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

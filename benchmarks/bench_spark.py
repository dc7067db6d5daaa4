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

Peak memory is read from ``/proc`` every 0.1 s over the child's whole process tree, by role:
the driver (the child itself, whose exact peak ``wait4`` gives), the JVM, the largest Python
worker, and the largest sum of the tree at one moment. (``wait4``'s ``ru_maxrss`` alone is
the driver's: the JVM and its workers are not descendants the driver waits for.) Usage::

    python benchmarks/bench_spark.py                         # 200k and 2M rows, 2 and 8 partitions
    python benchmarks/bench_spark.py --queries 200,2000,20000 --partitions 2,4,8
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
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


def _tree_rss(root: int) -> dict[str, int]:
    """Resident kB of ``root``'s process tree now, by role: ``driver`` (root), ``jvm``,
    ``worker`` (the largest other process) and ``sum``."""
    parent, rss, name = {}, {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/status") as f:
                kb = next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
        except OSError:  # the process ended while read
            continue
        pid = int(entry)
        parent[pid] = int(stat[stat.rindex(")") + 2:].split()[1])
        rss[pid], name[pid] = kb, stat[stat.index("(") + 1:stat.rindex(")")]
    tree, grew = {root}, True
    while grew:
        more = {p for p, pp in parent.items() if pp in tree} - tree
        tree |= more
        grew = bool(more)
    out = {"driver": rss.get(root, 0), "jvm": 0, "worker": 0, "sum": 0}
    for pid in tree:
        out["sum"] += rss.get(pid, 0)
        if pid != root:
            role = "jvm" if name.get(pid) == "java" else "worker"
            out[role] = max(out[role], rss.get(pid, 0))
    return out


def child(code: str, *args: str) -> tuple[dict, float, dict[str, float]]:
    """(the child's JSON, wall seconds, peak MB by role: driver, jvm, worker, sum)."""
    t = time.perf_counter()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env, cwd=ROOT)
    peaks = {"driver": 0, "jvm": 0, "worker": 0, "sum": 0}
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.1):
            for role, kb in _tree_rss(proc.pid).items():
                peaks[role] = max(peaks[role], kb)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out = proc.stdout.read()
    done.set()
    sampler.join()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"the child failed (exit status {proc.returncode})")
    peaks["driver"] = max(peaks["driver"], usage.ru_maxrss)
    peaks["sum"] = max(peaks["sum"], peaks["driver"])
    return json.loads(out.strip().splitlines()[-1]), wall, {r: kb / 1024 for r, kb in peaks.items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--queries", default="200,2000", help="comma list: queries (x 1,000 documents)")
    p.add_argument("--partitions", default="2,8", help="comma list of query partitions")
    p.add_argument("--master", default="local[2]")
    args = p.parse_args(argv)
    print(f"{'rows':>11} {'engine':<12} {'first s':>8} {'again s':>8}  peak MB: {'driver':>6} "
          f"{'JVM':>6} {'worker':>6} {'sum':>6}  means equal")

    def peaks(mb: dict[str, float]) -> str:
        return " ".join(f"{mb[r]:>6.0f}" for r in ("driver", "jvm", "worker", "sum"))

    for q in map(int, args.queries.split(",")):
        qrels, run = generate.ensure(q, 1000, 100)
        local, wall, mb = child(LOCAL_CHILD, str(qrels), str(run), MEASURES)
        print(f"{q * 1000:>11,} {'local':<12} {wall:>8.1f} {'':>8}           {peaks(mb)}", flush=True)
        for parts in map(int, args.partitions.split(",")):
            got, wall, mb = child(SPARK_CHILD, str(qrels), str(run), args.master, str(parts),
                                  MEASURES)
            first, again = got["times"]
            same = got["means"] == local["means"]
            print(f"{q * 1000:>11,} {'spark P=' + str(parts):<12} {first:>8.1f} {again:>8.1f}"
                  f"           {peaks(mb)}  {same}", flush=True)
            if not same:
                print(f"  local {local['means']}\n  spark {got['means']}")
                return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

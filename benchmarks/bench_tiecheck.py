"""The cost of the tie check: ``conformance eval``'s evaluation with and without it, in one process.

The default command says, per measure, how many queries the order of tied scores changes
(``reference/tiecheck.py``, from the evaluation's own ranking). This script reads the qrels and
the run once (``pipeline.read``, as the command does), then times the evaluation of the six
measures of ``bench_eval.py`` under the trec_eval profile (``pipeline.evaluate_inputs``) with
``tie_check`` off and on, ``--repeat`` times each, the two alternating (on first in even rounds,
off first in odd ones). It prints min and median of wall and process CPU time of each, and the
difference of the medians, and the median of each round's difference, as a share of the
evaluation without the check. Both evaluations'
values are compared (they must be equal: the check computes nothing a value reads).

The command's own time (imports, reading, joining, writing) is ``bench_eval.py``'s; this share
is of the evaluation step alone, the stricter reading of "below 5% of the evaluation".

Usage::

    python benchmarks/generate.py --sizes medium        # the 2M-row files, once
    python benchmarks/bench_tiecheck.py                 # 2M rows, 40 rounds
    python benchmarks/bench_tiecheck.py --size small --repeat 100

Not run by the tests.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SIZES = {"small": "200x", "medium": "2000x", "large": "20000x"}
MEASURES = "ndcg_cut_10,ndcg,map,recip_rank,P_10,recall_100"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="medium", choices=list(SIZES))
    p.add_argument("--data", default=str(HERE / "data"), help="where generate.py wrote the files")
    p.add_argument("--repeat", type=int, default=40)
    args = p.parse_args()

    from conformance import pipeline
    from conformance.measures import parse_measures

    data = Path(args.data)
    qrels = data / f"qrels-{SIZES[args.size]}100.txt"
    run = data / f"run-{SIZES[args.size]}1000.txt"
    if not qrels.exists() or not run.exists():
        sys.exit(f"{qrels} or {run} is missing: run python benchmarks/generate.py --sizes {args.size}")
    pipeline.own_process()  # the command's memory policy and threads
    measures = parse_measures(MEASURES)
    convs = pipeline.conventions_for("trec_eval", measures, {})
    inputs = pipeline.read(str(qrels), str(run), pipeline.one_duplicates_rule(convs))

    times: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    values: dict[bool, dict] = {}
    for r in range(args.repeat):
        for check in ((True, False) if r % 2 == 0 else (False, True)):
            wall, cpu = time.perf_counter(), time.process_time()
            result = pipeline.evaluate_inputs(inputs, measures, convs, tie_check=check)
            times[check].append((time.perf_counter() - wall, time.process_time() - cpu))
            values[check] = {m.text: result.mean(m) for m in measures}
    same = values[False] == values[True]

    print(f"{run.name}: {args.repeat} evaluations each of {MEASURES}, alternating; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    med = {}
    for check in (False, True):
        wall = [w for w, _ in times[check]]
        cpu = [c for _, c in times[check]]
        med[check] = (statistics.median(wall), statistics.median(cpu))
        print(f"  tie check {'on ' if check else 'off'}: wall min {min(wall):.4f} median {med[check][0]:.4f} s; "
              f"CPU min {min(cpu):.4f} median {med[check][1]:.4f} s")
    print(f"  the check's cost, medians: wall +{med[True][0] - med[False][0]:.4f} s "
          f"({(med[True][0] / med[False][0] - 1) * 100:+.1f}%), CPU +{med[True][1] - med[False][1]:.4f} s "
          f"({(med[True][1] / med[False][1] - 1) * 100:+.1f}%)")
    # each round's two evaluations ran back to back: their difference is read off the same
    # state of the machine, so its median moves less with a busy neighbour than the medians do
    paired = [[on[i] - off[i] for on, off in zip(times[True], times[False])] for i in (0, 1)]
    share = [statistics.median(d) / med[False][i] * 100 for i, d in enumerate(paired)]
    print(f"  the check's cost, median of each round's difference: wall {statistics.median(paired[0]):+.4f} s "
          f"({share[0]:+.1f}%), CPU {statistics.median(paired[1]):+.4f} s ({share[1]:+.1f}%)")
    print(f"  values with and without the check: {'equal' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    main()

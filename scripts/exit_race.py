"""Run the error path of ``conformance eval`` on a bad JSONL qrels file many times and count how
each run ended: every one must exit 2 with the one-line error.

Before the readers waited for Arrow's CSV threads to let go of the input, about 1 run in 300
died after printing the right error, with "terminate called without an active exception"
(SIGABRT, exit status 134): a worker of Arrow's thread pool dropped the last reference to a
Python buffer while the interpreter was exiting (see ``conformance.io.columnar.read_csv``).
The race is too rare for a test; this script is the evidence. Not run by the tests.

    python scripts/exit_race.py            # 2,000 runs of the console script (a few minutes)
    python scripts/exit_race.py --runs 300 --command "python -m conformance.cli"
"""

from __future__ import annotations

import argparse
import collections
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

RUN = "".join(f"q{q} Q0 d{d} {d} {10 - d}.5 tag\n" for q in (1, 2) for d in range(1, 6))
BAD_QRELS = '{"qid": "q1", "gold_doc_ids": ["d1"]}\n{"qid": "q2", "gold_doc_ids": [\n'


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=2000)
    p.add_argument("--command", default=None, help="how to start conformance [the console script beside python]")
    args = p.parse_args()
    beside = Path(sys.executable).parent / "conformance"
    command = shlex.split(args.command) if args.command else (
        [str(beside)] if beside.exists() else [shutil.which("conformance") or "conformance"])
    with tempfile.TemporaryDirectory() as tmp:
        qrels, run = Path(tmp, "bad.jsonl"), Path(tmp, "run.txt")
        qrels.write_text(BAD_QRELS)
        run.write_text(RUN)
        ends: collections.Counter = collections.Counter()
        other: list[str] = []
        for i in range(args.runs):
            done = subprocess.run([*command, "eval", "--qrels", str(qrels), "--run", str(run)],
                                  capture_output=True, text=True)
            lines = done.stderr.splitlines()
            ok = done.returncode == 2 and len(lines) == 1 and "not valid JSON" in lines[0]
            ends["exit 2, one line" if ok else f"exit {done.returncode}"] += 1
            if not ok and len(other) < 3:
                other.append(f"run {i + 1}: exit {done.returncode}: {done.stderr.strip()[:300]}")
            if (i + 1) % 500 == 0:
                print(f"{i + 1} runs: {dict(ends)}", flush=True)
    print(f"{args.runs} runs: {dict(ends)}")
    for text in other:
        print(text)
    return 0 if ends["exit 2, one line"] == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())

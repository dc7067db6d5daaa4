"""The RAG inputs are read through the tool's one input boundary (``conformance.io.text``):
its size and line limits, its binary-content refusal and its gzip reading apply to the gold
file, the outputs, the corpus and the quality scores as they do to qrels and runs."""

from __future__ import annotations

import gzip
import json

import pytest

from conformance.errors import InputError
from conformance.rag.inputs import read_corpus, read_gold, read_outputs, read_quality

GOLD = {"qid": "q1", "query": "abort", "gold_doc_ids": ["d1"], "gold_answer_substring": "three"}
OUT = {"qid": "q1", "retrieved": [{"doc_id": "d1", "text": "Uploads abort after three failed parts."}],
       "answer": "Three."}


def test_the_size_limit_applies_to_the_outputs(tmp_path, monkeypatch):
    path = tmp_path / "out.jsonl"
    path.write_text(json.dumps(OUT) + "\n")
    monkeypatch.setenv("CONFORMANCE_MAX_INPUT_BYTES", "20")
    with pytest.raises(InputError, match="out.jsonl"):
        read_outputs(path, "v")


def test_the_line_limit_applies_to_the_gold_file(tmp_path, monkeypatch):
    path = tmp_path / "gold.jsonl"
    path.write_text(json.dumps(GOLD) + "\n")
    monkeypatch.setenv("CONFORMANCE_MAX_LINE_BYTES", "30")
    with pytest.raises(InputError, match="gold.jsonl"):
        read_gold(path)


def test_binary_content_is_refused_before_parsing(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b"\x00\x01\x02\x03" * 64)
    with pytest.raises(InputError, match="corpus.jsonl"):
        read_corpus(path)


def test_gzip_inputs_and_a_byte_order_mark_are_read(tmp_path):
    gold = tmp_path / "gold.jsonl.gz"
    gold.write_bytes(gzip.compress(("\ufeff" + json.dumps(GOLD) + "\n").encode("utf-8")))
    assert read_gold(gold).qids == ["q1"]
    quality = tmp_path / "q.txt.gz"
    quality.write_bytes(gzip.compress(b"q1 4\n"))
    assert read_quality(quality).scores == {(None, "q1"): 4.0}


def test_damaged_gzip_and_bad_utf8_name_the_file(tmp_path):
    bad = tmp_path / "out.jsonl.gz"
    bad.write_bytes(gzip.compress(json.dumps(OUT).encode())[:-12])
    with pytest.raises(InputError, match="out.jsonl.gz"):
        read_outputs(bad, "v")
    latin = tmp_path / "gold.jsonl"
    latin.write_bytes(b'{"qid": "q1", "query": "caf\xe9", "gold_doc_ids": ["d1"]}\n')
    with pytest.raises(InputError, match=r"gold.jsonl:1: .*not valid UTF-8"):
        read_gold(latin)

"""The chat-completions judge against a local server the test starts (127.0.0.1, a free port,
bounded: it answers only the requests the test makes and stops with the test).

The server plays a model: it reads the prompt it was sent, and answers support prompts by
counting, for each numbered claim, whether the word 'parts' occurs in it (2) or not (0), and
relevance prompts with 0.75. Its JSON inside prose or a code fence, or with an extra key, must
be read; a wrong count, two objects that disagree, a non-JSON body or an HTTP error that
persists must be recorded as that item's error and never counted; 429 and 5xx replies that
stop are retried; a slow reply meets the time-out.
"""

from __future__ import annotations

import json
import math
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conformance.rag.harness import evaluate_variants
from conformance.rag.judge_http import HTTPJudge
from conformance.rag.judges import RelevanceTask, SupportTask


class _Model(BaseHTTPRequestHandler):
    mode = "good"
    seen: list[dict] = []
    failures_left = 0  # "flaky": this many 503 (or 429) replies before good ones

    def log_message(self, *args):  # quiet
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        prompt = body["messages"][-1]["content"]
        if "Claims:" in prompt:
            claims = re.findall(r"^\d+\. (.*)$", prompt.split("Claims:")[1], re.M)
            reply = json.dumps({"verdicts": [2 if "parts" in c else 0 for c in claims]})
        else:
            reply = json.dumps({"relevance": 0.75})
        mode = type(self).mode
        if mode == "prose":
            reply = "Sure! " + reply
        elif mode == "fence":
            reply = "```json\n" + reply + "\n```"
        elif mode == "extra_key":
            d = json.loads(reply)
            d["reason"] = "because"
            reply = json.dumps(d)
        elif mode == "ambiguous":
            reply = reply + " or maybe " + reply.replace("2", "1").replace("0.75", "0.25")
        elif mode == "wrong_count":
            reply = json.dumps({"verdicts": [2]}) if "Claims:" in prompt else json.dumps({"relevance": 7})
        if mode == "slow":
            import time

            time.sleep(1.5)
        if mode in ("flaky", "rate_limited") and type(self).failures_left > 0:
            type(self).failures_left -= 1
            self.send_response(503 if mode == "flaky" else 429)
            if mode == "rate_limited":
                self.send_header("Retry-After", "0")
            self.end_headers()
            self.wfile.write(b"busy")
            return
        if mode == "http_error":
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b"overloaded")
            return
        payload = b"not json" if mode == "not_json" else json.dumps(
            {"choices": [{"message": {"role": "assistant", "content": reply}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture()
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Model)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    _Model.mode, _Model.seen, _Model.failures_left = "good", [], 0
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


TASKS = [SupportTask(("Uploads abort after three failed parts.", "The moon is cheese."), ("ctx one", "ctx two"))]


def test_good_replies_are_read(server, monkeypatch):
    monkeypatch.setenv("CONFORMANCE_JUDGE_API_KEY", "test-key")
    judge = HTTPJudge(server, model="judge-model", workers=2)
    res = judge.support_many(TASKS * 3)
    assert [r.grades for r in res] == [[2, 0]] * 3 and all(r.error is None for r in res)
    rel = judge.relevance_many([RelevanceTask("q?", "a.")])
    assert rel[0].score == 0.75
    first = _Model.seen[0]
    assert first["path"] == "/v1/chat/completions"
    assert first["body"]["model"] == "judge-model" and first["body"]["temperature"] == 0
    assert first["auth"] == "Bearer test-key"
    assert "[1] ctx one\n[2] ctx two" in first["body"]["messages"][-1]["content"]


@pytest.mark.parametrize("mode", ["prose", "fence", "extra_key"])
def test_json_in_prose_or_fences_or_with_extra_keys_is_read(server, mode):
    _Model.mode = mode
    judge = HTTPJudge(server, workers=1)
    res = judge.support_many(TASKS)
    assert res[0].grades == [2, 0] and res[0].error is None
    assert judge.relevance_many([RelevanceTask("q?", "a.")])[0].score == 0.75


@pytest.mark.parametrize("mode, fragment", [
    ("ambiguous", "ambiguous reply"),
    ("wrong_count", "1 verdicts for 2 claims"),
    ("not_json", "unparseable response"),
    ("http_error", "HTTP 500 from"),
])
def test_replies_that_cannot_be_read_are_recorded(server, mode, fragment):
    _Model.mode = mode
    judge = HTTPJudge(server, workers=1, retries=2, backoff=0.01)
    res = judge.support_many(TASKS)
    assert res[0].grades is None and fragment in res[0].error
    rel = judge.relevance_many([RelevanceTask("q?", "a.")])
    assert rel[0].score is None and rel[0].error


def test_a_persistent_5xx_is_retried_a_bounded_number_of_times(server):
    _Model.mode = "http_error"
    judge = HTTPJudge(server, workers=1, retries=2, backoff=0.01)
    res = judge.support_many(TASKS)
    assert "after 3 attempts" in res[0].error
    assert len(_Model.seen) == 3  # one try and two retries


@pytest.mark.parametrize("mode", ["flaky", "rate_limited"])
def test_429_and_5xx_that_stop_are_retried(server, mode):
    _Model.mode, _Model.failures_left = mode, 2
    judge = HTTPJudge(server, workers=1, retries=3, backoff=0.01)
    res = judge.support_many(TASKS)
    assert res[0].grades == [2, 0]
    assert len(_Model.seen) == 3


def test_the_timeout_is_applied(server):
    _Model.mode = "slow"
    judge = HTTPJudge(server, workers=1, timeout=0.3, retries=0)
    res = judge.support_many(TASKS)
    assert res[0].grades is None and "failed" in res[0].error


def test_the_estimate_counts_requests_and_characters_before_any_is_sent(server):
    judge = HTTPJudge(server)
    est = judge.estimate(TASKS, [RelevanceTask("q?", "a.")])
    assert est["requests"] == 2 and est["support_requests"] == 1 and est["relevance_requests"] == 1
    assert est["tokens_estimate"] == -(-est["characters"] // 4)
    assert _Model.seen == []


def test_a_refused_connection_is_recorded():
    judge = HTTPJudge("http://127.0.0.1:9/v1", timeout=2, workers=1)  # port 9 (discard): nothing listens
    res = judge.support_many(TASKS)
    assert res[0].grades is None and "request to" in res[0].error


def test_the_harness_over_http_never_counts_an_unreadable_answer(server, tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"qid": "q1", "query": "abort", "gold_doc_ids": ["d1"]}) + "\n"
                    + json.dumps({"qid": "q2", "query": "abort", "gold_doc_ids": ["d1"]}) + "\n")
    out = tmp_path / "out.jsonl"
    rec = {"retrieved": [{"doc_id": "d1", "text": "Three failed parts."}],
           "answer": "Uploads abort after three failed parts. The moon is cheese."}
    out.write_text(json.dumps({"qid": "q1", **rec}) + "\n" + json.dumps({"qid": "q2", **rec}) + "\n")
    r = evaluate_variants(str(gold), {"v": str(out)}, [1], judge_url=server, resamples=20)
    g = r.variants[0].generation
    assert g.faithfulness.tolist() == [0.5, 0.5] and g.relevance.tolist() == [0.75, 0.75]
    assert r.judge["name"] == "http" and r.judge["settings"]["url"].endswith("/v1/chat/completions")
    _Model.mode = "not_json"
    r = evaluate_variants(str(gold), {"v": str(out)}, [1], judge_url=server, resamples=20)
    g = r.variants[0].generation
    assert all(math.isnan(x) for x in g.faithfulness) and r.table["all"]["v"]["faithfulness"].interval.n == 0
    assert any("could not give 2 support" in w for w in r.warnings)


def _cli(*args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "conformance.cli", "rag", *args], capture_output=True, text=True,
                          timeout=300)


def _files(tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"qid": "q1", "query": "abort", "gold_doc_ids": ["d1"]}) + "\n")
    out = tmp_path / "out.jsonl"
    out.write_text(json.dumps({"qid": "q1", "retrieved": [{"doc_id": "d1", "text": "Three failed parts."}],
                               "answer": "Uploads abort after three failed parts."}) + "\n")
    return str(gold), str(out)


def test_the_command_exits_5_when_the_judge_failed_on_too_many_verdicts(tmp_path):
    gold, out = _files(tmp_path)
    r = _cli("--qrels", gold, "--variant", f"v={out}", "--judge-url", "http://127.0.0.1:9/v1",
             "--judge-timeout", "2", "--judge-workers", "1", "--bootstrap", "20")
    assert r.returncode == 5, r.stderr
    assert "2 of 2 judge verdicts failed" in r.stderr


def test_dry_run_prints_the_estimate_and_sends_nothing(server, tmp_path):
    gold, out = _files(tmp_path)
    r = _cli("--qrels", gold, "--variant", f"v={out}", "--judge-url", server, "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "2 requests" in r.stderr and "tokens" in r.stderr
    assert _Model.seen == []


def test_a_plain_object_or_function_judge_works_through_the_api(tmp_path):
    gold, out = _files(tmp_path)

    class Strict:
        def support(self, claims, context):
            return [False for _ in claims]

        def relevance(self, question, answer):
            return 0.25

    r = evaluate_variants(gold, {"v": out}, [1], judge=Strict(), resamples=20)
    g = r.variants[0].generation
    assert g.faithfulness.tolist() == [0.0] and g.relevance.tolist() == [0.25]

    def lenient(claims, context):
        return [2 for _ in claims]

    r = evaluate_variants(gold, {"v": out}, [1], judge=lenient, resamples=20)
    assert r.variants[0].generation.faithfulness.tolist() == [1.0]

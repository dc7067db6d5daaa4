"""A judge behind an HTTP endpoint that speaks the chat-completions protocol.

``--judge-url URL`` (``URL`` ending in ``/chat/completions``, or a base such as
``http://localhost:8000/v1`` to which ``/chat/completions`` is added). Each item is one POST of
``{"model": MODEL, "temperature": 0, "messages": [{"role": "system", ...}, {"role": "user",
...}]}`` with ``Content-Type: application/json`` (and ``Authorization: Bearer KEY`` when the
environment sets ``CONFORMANCE_JUDGE_API_KEY``). Items are sent by ``workers`` threads at once.

Prompts (the texts are :data:`SUPPORT_PROMPT` and :data:`RELEVANCE_PROMPT`; ``{context}`` is the
passages numbered [1], [2], ...; ``{claims}`` the claims numbered 1., 2., ...)::

    system: You are a strict evaluator of retrieval-augmented answers. Reply with JSON only.
    user (support):   Context: ... Claims: ... For each claim, say whether the context alone
                      supports it: 0 (not supported), 1 (partly supported), 2 (fully
                      supported). Reply with exactly {"verdicts": [...]}, one integer per claim,
                      in order.
    user (relevance): Question: ... Answer: ... How well does the answer address the question,
                      whether or not it is correct? Reply with exactly {"relevance": x}, x a
                      number from 0 (off-topic) to 1 (fully addresses it).

Replies are parsed strictly: the response body must be JSON with
``choices[0].message.content`` a string, and that content, stripped of surrounding whitespace,
one JSON object with exactly the one key asked for (``verdicts``: a list of one integer 0, 1
or 2 per claim; ``relevance``: a number in [0, 1]). No code fence, prose or extra key is
accepted. An item whose reply cannot be read, or whose request fails (HTTP status, connection,
time-out), is recorded with the reason and a clip of what came back, and is not counted.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

from conformance.rag.judges import (Judge, RelevanceResult, RelevanceTask, SupportResult, SupportTask,
                                    read_relevance, read_verdicts)

SYSTEM_PROMPT = "You are a strict evaluator of retrieval-augmented answers. Reply with JSON only."
SUPPORT_PROMPT = (
    "Context:\n{context}\n\nClaims:\n{claims}\n\n"
    "For each claim, say whether the context alone supports it: 0 (not supported), "
    "1 (partly supported), 2 (fully supported). Reply with exactly "
    '{{"verdicts": [...]}}, one integer per claim, in order.'
)
RELEVANCE_PROMPT = (
    "Question: {question}\n\nAnswer: {answer}\n\n"
    "How well does the answer address the question, whether or not it is correct? Reply with "
    'exactly {{"relevance": x}}, x a number from 0 (off-topic) to 1 (fully addresses it).'
)
API_KEY_VARIABLE = "CONFORMANCE_JUDGE_API_KEY"


def endpoint(url: str) -> str:
    url = url.rstrip("/")
    return url if url.endswith("/chat/completions") else url + "/chat/completions"


def _clip(text: str, n: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n] + "..."


class HTTPJudge(Judge):
    name = "http"

    def __init__(self, url: str, model: str = "default", timeout: float = 60.0, workers: int = 4) -> None:
        self.url = endpoint(url)
        self.model, self.timeout, self.workers = model, float(timeout), max(1, int(workers))

    def settings(self) -> dict[str, Any]:
        return {"url": self.url, "model": self.model, "temperature": 0, "timeout_s": self.timeout,
                "system_prompt": SYSTEM_PROMPT, "support_prompt": SUPPORT_PROMPT,
                "relevance_prompt": RELEVANCE_PROMPT}

    def support_many(self, tasks: Sequence[SupportTask]) -> list[SupportResult]:
        return self._map(self._support_one, tasks)

    def relevance_many(self, tasks: Sequence[RelevanceTask]) -> list[RelevanceResult]:
        return self._map(self._relevance_one, tasks)

    def _map(self, fn, tasks):
        if self.workers == 1 or len(tasks) < 2:
            return [fn(t) for t in tasks]
        with ThreadPoolExecutor(self.workers) as pool:
            return list(pool.map(fn, tasks))  # results in task order

    def _support_one(self, task: SupportTask) -> SupportResult:
        if not task.claims:
            return SupportResult([])
        prompt = SUPPORT_PROMPT.format(
            context="\n".join(f"[{i}] {p}" for i, p in enumerate(task.context, 1)) or "(no passage)",
            claims="\n".join(f"{i}. {c}" for i, c in enumerate(task.claims, 1)))
        value, error = self._ask(prompt, "verdicts")
        if error is not None:
            return SupportResult(None, error)
        grades, error = read_verdicts(value, len(task.claims))
        if error is None and any(isinstance(v, bool) for v in value):
            grades, error = None, "a verdict is a boolean: expected integers 0, 1 or 2"
        return SupportResult(grades, error)

    def _relevance_one(self, task: RelevanceTask) -> RelevanceResult:
        value, error = self._ask(RELEVANCE_PROMPT.format(question=task.question, answer=task.answer), "relevance")
        if error is not None:
            return RelevanceResult(None, error)
        return RelevanceResult(*read_relevance(value))

    def _ask(self, prompt: str, key: str) -> tuple[Any, str | None]:
        """The value under ``key`` in the model's JSON reply, or (None, why not)."""
        body = json.dumps({"model": self.model, "temperature": 0, "messages": [
            {"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}]}).encode()
        headers = {"Content-Type": "application/json"}
        key_value = os.environ.get(API_KEY_VARIABLE)
        if key_value:
            headers["Authorization"] = f"Bearer {key_value}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as e:
            return None, f"HTTP {e.code} from {self.url}: {_clip(e.read().decode('utf-8', 'replace'))}"
        except (urllib.error.URLError, OSError, ValueError) as e:
            return None, f"request to {self.url} failed: {_clip(getattr(e, 'reason', e))}"
        try:
            doc = json.loads(raw.decode("utf-8"))
            content = doc["choices"][0]["message"]["content"]
        except (UnicodeDecodeError, ValueError, KeyError, IndexError, TypeError):
            return None, f"unparseable response: expected choices[0].message.content, got {_clip(raw.decode('utf-8', 'replace'))}"
        if not isinstance(content, str):
            return None, f"unparseable response: the message content is {type(content).__name__}, expected text"
        try:
            reply = json.loads(content.strip())
        except ValueError:
            return None, f"unparseable reply: expected a JSON object {{\"{key}\": ...}}, got {_clip(content)!r}"
        if not isinstance(reply, dict) or list(reply) != [key]:
            return None, f"unparseable reply: expected exactly {{\"{key}\": ...}}, got {_clip(content)!r}"
        return reply[key], None

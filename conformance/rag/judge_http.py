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

Replies: the response body must be JSON with ``choices[0].message.content`` a string. In that
content the judge looks for the JSON object holding the key asked for (``verdicts``: a list of
one integer 0, 1 or 2 per claim; ``relevance``: a number in [0, 1]): the whole content, else the
inside of a code fence (```json ... ```), else the JSON objects found in surrounding prose.
Other keys of that object (a "reason", say) are ignored. Two objects holding the key with
different values are refused as ambiguous.

Failures: HTTP 429 and 5xx replies are retried up to ``retries`` (3) more times, waiting
``backoff`` (0.5 s) times 1, 2, 4, ... between attempts, or the server's ``Retry-After`` when it
gives one (at most :data:`MAX_WAIT` seconds). An item whose reply cannot be read, or whose
request still fails (HTTP status, connection, time-out after ``timeout`` seconds), is recorded
with the reason and a clip of what came back, and is not counted; ``conformance rag`` exits
with status 5 when more than ``--max-judge-failures`` of the verdicts failed.

Cost: :meth:`HTTPJudge.estimate` gives the number of requests and the characters (and about a
quarter as many tokens) a batch would send, before any is sent (``--dry-run``).
"""

from __future__ import annotations

import json
import os
import re
import time
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
RETRIED = frozenset({429, 500, 502, 503, 504})
MAX_WAIT = 30.0  # seconds: the longest wait between attempts, whatever Retry-After says
CHARS_PER_TOKEN = 4  # the estimate's rule of thumb for English text
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)


def find_reply(content: str, key: str) -> tuple[Any, str | None]:
    """The value under ``key`` in the JSON object the model's ``content`` holds (see the module
    docstring), or (None, why not)."""
    text = content.strip()
    candidates = [text] + [m.group(1).strip() for m in _FENCE.finditer(text)]
    for c in candidates:
        try:
            obj = json.loads(c)
        except ValueError:
            continue
        if isinstance(obj, dict) and key in obj:
            return obj[key], None
    decoder = json.JSONDecoder()
    found = []
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except ValueError:
            continue
        if isinstance(obj, dict) and key in obj:
            found.append(obj[key])
    if not found:
        return None, f"unparseable reply: expected a JSON object with {key!r}, got {_clip(content)!r}"
    if any(json.dumps(v, sort_keys=True) != json.dumps(found[0], sort_keys=True) for v in found[1:]):
        return None, f"ambiguous reply: {len(found)} JSON objects give different {key!r}, got {_clip(content)!r}"
    return found[0], None


def endpoint(url: str) -> str:
    url = url.rstrip("/")
    return url if url.endswith("/chat/completions") else url + "/chat/completions"


def _clip(text: str, n: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n] + "..."


class HTTPJudge(Judge):
    name = "http"

    def __init__(self, url: str, model: str = "default", timeout: float = 60.0, workers: int = 4,
                 retries: int = 3, backoff: float = 0.5) -> None:
        self.url = endpoint(url)
        self.model, self.timeout, self.workers = model, float(timeout), max(1, int(workers))
        self.retries, self.backoff = max(0, int(retries)), float(backoff)

    def settings(self) -> dict[str, Any]:
        return {"url": self.url, "model": self.model, "temperature": 0, "timeout_s": self.timeout,
                "workers": self.workers, "retries": self.retries, "backoff_s": self.backoff,
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

    @staticmethod
    def _support_prompt(task: SupportTask) -> str:
        return SUPPORT_PROMPT.format(
            context="\n".join(f"[{i}] {p}" for i, p in enumerate(task.context, 1)) or "(no passage)",
            claims="\n".join(f"{i}. {c}" for i, c in enumerate(task.claims, 1)))

    def estimate(self, support: Sequence[SupportTask], relevance: Sequence[RelevanceTask]) -> dict[str, int]:
        """What judging these items would send: requests, characters, tokens (characters / 4)."""
        prompts = [self._support_prompt(t) for t in support if t.claims]
        prompts += [RELEVANCE_PROMPT.format(question=t.question, answer=t.answer) for t in relevance]
        chars = sum(len(SYSTEM_PROMPT) + len(p) for p in prompts)
        return {"requests": len(prompts), "support_requests": sum(1 for t in support if t.claims),
                "relevance_requests": len(relevance), "characters": chars,
                "tokens_estimate": -(-chars // CHARS_PER_TOKEN)}

    def _support_one(self, task: SupportTask) -> SupportResult:
        if not task.claims:
            return SupportResult([])
        value, error = self._ask(self._support_prompt(task), "verdicts")
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
        raw, error = self._post(body, headers)
        if error is not None:
            return None, error
        try:
            doc = json.loads(raw.decode("utf-8"))
            content = doc["choices"][0]["message"]["content"]
        except (UnicodeDecodeError, ValueError, KeyError, IndexError, TypeError):
            return None, f"unparseable response: expected choices[0].message.content, got {_clip(raw.decode('utf-8', 'replace'))}"
        if not isinstance(content, str):
            return None, f"unparseable response: the message content is {type(content).__name__}, expected text"
        return find_reply(content, key)

    def _post(self, body: bytes, headers: dict[str, str]) -> tuple[bytes | None, str | None]:
        """The response body, retrying 429 and 5xx (see the module docstring), or (None, why)."""
        for attempt in range(self.retries + 1):
            request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return response.read(), None
            except urllib.error.HTTPError as e:
                text = _clip(e.read().decode("utf-8", "replace"))
                if e.code not in RETRIED or attempt == self.retries:
                    tried = f" after {attempt + 1} attempts" if attempt else ""
                    return None, f"HTTP {e.code} from {self.url}{tried}: {text}"
                wait = self.backoff * 2 ** attempt
                after = e.headers.get("Retry-After") if e.headers else None
                if after is not None:
                    try:
                        wait = float(after)
                    except ValueError:
                        pass
                time.sleep(min(max(wait, 0.0), MAX_WAIT))
            except (urllib.error.URLError, OSError, ValueError) as e:
                return None, f"request to {self.url} failed: {_clip(getattr(e, 'reason', e))}"
        return None, f"request to {self.url} failed"  # not reached: the last attempt returns

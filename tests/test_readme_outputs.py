"""The README's example outputs are what the commands print today, so they cannot go stale.

Every fenced block of README.md whose first line is ``$ conformance ...`` (a command, continued
over lines ending in ``\\``) holds that command's stdout. The command is run here as a real
process from the repository root, with every library live, and its stdout must match the block:
line by line (trailing spaces aside), where a line ``...`` stands for any number of lines, so a
block may shorten a long output. On a mismatch the test prints the real output; run it with
``CONFORMANCE_README_WRITE=1`` to write each stale block from the command's output (whole, with
no ``...``: shorten it again by hand where it is long).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BLOCK = re.compile(r"```[a-z]*\n(\$ conformance .*?)```", re.S)


def _examples(text: str) -> list[tuple[str, list[str], tuple[int, int]]]:
    """(command, expected lines, span of the block's body) for every example block."""
    out = []
    for m in BLOCK.finditer(text):
        lines = m.group(1).split("\n")
        command = lines[0][2:]
        i = 1
        while command.endswith("\\"):
            command = command[:-1] + " " + lines[i].strip()
            i += 1
        out.append((command, [ln.rstrip() for ln in lines[i:]], m.span(1)))
    return out


def matches(expected: list[str], got: list[str]) -> bool:
    """Whether ``got`` is ``expected`` with each ``...`` line standing for any lines."""
    while expected and expected[-1] == "":
        expected = expected[:-1]
    while got and got[-1] == "":
        got = got[:-1]
    if not expected:
        return not got
    if expected[0].strip() == "...":
        return any(matches(expected[1:], got[k:]) for k in range(len(got) + 1))
    return bool(got) and got[0] == expected[0] and matches(expected[1:], got[1:])


def _run(command: str, where: Path) -> str:
    """The command's stdout, run in the folder ``where`` (what it writes by default, such as
    rag's rag-example.html, lands there, not in the repository), its relative paths read from
    the repository root as the README means them."""
    args = shlex.split(command)
    assert args[0] == "conformance"
    args = [str(ROOT / a) if not a.startswith("-") and (ROOT / a).exists() and "/" in a else a
            for a in args[1:]]
    done = subprocess.run([sys.executable, "-m", "conformance.cli", *args], cwd=str(where),
                          capture_output=True, text=True, timeout=1800,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout


EXAMPLES = _examples(README.read_text(encoding="utf-8"))


def test_the_readme_has_its_example_outputs():
    commands = [c.split()[1] for c, _, _ in EXAMPLES]
    assert {"run", "check-paper", "eval", "rag"} <= set(commands), commands


@pytest.mark.parametrize("command", [c for c, _, _ in EXAMPLES])
def test_an_example_output_is_what_the_command_prints(command, tmp_path):
    expected = next(e for c, e, _ in EXAMPLES if c == command)
    got = [ln.rstrip() for ln in _run(command, tmp_path).split("\n")]
    if matches(expected, got):
        return
    if os.environ.get("CONFORMANCE_README_WRITE") == "1":
        text = README.read_text(encoding="utf-8")
        for c, _, (start, end) in _examples(text):
            if c == command:
                head = text[start:end].split("\n")
                n = 1
                while head[n - 1].endswith("\\"):
                    n += 1
                body = "\n".join(head[:n]) + "\n" + "\n".join(got).rstrip("\n") + "\n"
                README.write_text(text[:start] + body + text[end:], encoding="utf-8")
                break
        pytest.fail(f"README block of `{command}` was stale and is now written; review the diff")
    pytest.fail(f"README block of `{command}` is not what the command prints (set "
                f"CONFORMANCE_README_WRITE=1 to write it); the command printed:\n" + "\n".join(got))

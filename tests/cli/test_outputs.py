"""An output never overwrites an input, and two outputs never name one file (issue 15.2).

For every command that writes files (run, check-paper, rag, correlate) and each of its output
options, the output is given as one of its inputs in every way a path can name a file: the same
text, a relative path against an absolute one, a symbolic link, a hard link; and two outputs are
given one file. Each must be refused before any work: exit 2, one line naming the option and
the path, nothing on stdout, and the input's bytes unchanged.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from conformance.cli import main

CORPUS = Path(__file__).resolve().parents[1] / "adversarial"
QRELS = (CORPUS / "good.qrels").read_bytes()
RUN = (CORPUS / "good.run").read_bytes()


def _inputs(tmp: Path) -> dict[str, Path]:
    files = {"qrels": tmp / "q.qrels", "run": tmp / "r.run", "per_query": tmp / "pq.txt",
             "gold": tmp / "gold.jsonl", "variant": tmp / "v.jsonl", "quality": tmp / "quality.txt",
             "metrics": tmp / "m.json"}
    for name, path in files.items():
        path.write_bytes(QRELS if name in ("qrels", "gold") else RUN)
    (tmp / "pq.txt").write_text("P_1\tq1\t1.0\n")
    return files


# command -> (arguments with {input} placeholders, the input option each output is tried against)
COMMANDS = {
    "run": (["run", "--libs", "trec_eval", "--qrels", "{qrels}", "--run", "{run}", "-m", "P@1"],
            ["--json", "--html"], ["qrels", "run"]),
    "check-paper": (["check-paper", "--qrels", "{qrels}", "--run", "{run}", "--reported", "P@1=0.5",
                     "--reported-per-query", "{per_query}", "--no-live", "--libs", "trec_eval"],
                    ["--json", "--html"], ["qrels", "run", "per_query"]),
    "rag": (["rag", "--qrels", "{gold}", "--variant", "a={variant}"], ["--json", "--html"],
            ["gold", "variant"]),
    "correlate": (["correlate", "--metrics-from", "{metrics}", "--quality", "{quality}"], ["--json"],
                  ["metrics", "quality"]),
}


def _invoke(args: list[str]):
    result = CliRunner(catch_exceptions=False).invoke(main, args)
    return result.exit_code, result.stdout, result.stderr


def _args(template: list[str], files: dict[str, Path], rename: dict[str, str] | None = None) -> list[str]:
    rename = rename or {}
    out = []
    for a in template:
        for name, path in files.items():
            a = a.replace("{" + name + "}", rename.get(name, str(path)))
        out.append(a)
    return out


def _refused(code: int, stdout: str, stderr: str, option: str, path: str, files) -> None:
    assert code == 2, (code, stderr)
    assert stdout == ""
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"conformance: error: {option} {path}: "), lines[0]
    for name, p in files.items():  # nothing was overwritten
        want = QRELS if name in ("qrels", "gold") else RUN
        if name == "per_query":
            want = b"P_1\tq1\t1.0\n"
        assert p.read_bytes() == want, name


CASES = [(cmd, option, target) for cmd, (_, options, targets) in COMMANDS.items()
         for option in options for target in targets]


@pytest.mark.parametrize("cmd,option,target", CASES)
def test_an_output_given_as_an_input_is_refused(tmp_path, cmd, option, target):
    files = _inputs(tmp_path)
    template, _, _ = COMMANDS[cmd]
    out = str(files[target])
    _refused(*_invoke([*_args(template, files), option, out]), option, out, files)


@pytest.mark.parametrize("cmd,option,target", CASES)
def test_an_output_given_relative_to_an_absolute_input_is_refused(tmp_path, monkeypatch, cmd, option, target):
    files = _inputs(tmp_path)
    template, _, _ = COMMANDS[cmd]
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    out = os.path.join("..", files[target].name)  # ../r.run against /tmp/.../r.run
    _refused(*_invoke([*_args(template, files), option, out]), option, out, files)


@pytest.mark.parametrize("cmd,option,target", CASES)
def test_an_output_through_a_symbolic_link_to_an_input_is_refused(tmp_path, cmd, option, target):
    files = _inputs(tmp_path)
    template, _, _ = COMMANDS[cmd]
    link = tmp_path / "link.out"
    link.symlink_to(files[target])
    _refused(*_invoke([*_args(template, files), option, str(link)]), option, str(link), files)


@pytest.mark.parametrize("cmd,option,target", CASES)
def test_an_output_that_is_a_hard_link_to_an_input_is_refused(tmp_path, cmd, option, target):
    files = _inputs(tmp_path)
    template, _, _ = COMMANDS[cmd]
    link = tmp_path / "hard.out"
    os.link(files[target], link)
    assert os.path.realpath(link) != os.path.realpath(files[target])  # only the inode is shared
    _refused(*_invoke([*_args(template, files), option, str(link)]), option, str(link), files)


@pytest.mark.parametrize("cmd,option,target", CASES)
def test_an_input_given_through_a_link_is_still_an_input(tmp_path, cmd, option, target):
    """The link on the input side: the input is read through a symbolic link, the output is the
    file itself."""
    files = _inputs(tmp_path)
    template, _, _ = COMMANDS[cmd]
    link = tmp_path / ("link-" + files[target].name)
    link.symlink_to(files[target])
    out = str(files[target])
    code, stdout, stderr = _invoke([*_args(template, files, {target: str(link)}), option, out])
    _refused(code, stdout, stderr, option, out, files)


@pytest.mark.parametrize("cmd", [c for c, (_, options, _) in COMMANDS.items() if len(options) > 1])
@pytest.mark.parametrize("how", ["same", "symlink", "hardlink"])
def test_two_outputs_naming_one_file_are_refused(tmp_path, cmd, how):
    files = _inputs(tmp_path)
    template, options, _ = COMMANDS[cmd]
    first = tmp_path / "out.txt"
    second = first
    if how != "same":
        first.write_text("previous\n")
        second = tmp_path / "other.txt"
        second.symlink_to(first) if how == "symlink" else os.link(first, second)
    code, stdout, stderr = _invoke([*_args(template, files), options[0], str(first), options[1], str(second)])
    assert code == 2, stderr
    assert stdout == "" and len(stderr.splitlines()) == 1, stderr
    assert stderr.startswith(f"conformance: error: {options[1]} {second}: {options[0]} {first} names the "
                             "same file"), stderr
    assert not first.exists() or first.read_text() == "previous\n"


def test_an_output_that_is_a_directory_is_refused(tmp_path):
    files = _inputs(tmp_path)
    template, _, _ = COMMANDS["run"]
    code, stdout, stderr = _invoke([*_args(template, files), "--json", str(tmp_path)])
    assert code == 2 and stdout == ""
    assert stderr == f"conformance: error: --json {tmp_path}: that is a directory; expected a file name\n"


def test_a_distinct_output_is_written(tmp_path):
    """The control: the same command with an output of its own runs and writes it."""
    files = _inputs(tmp_path)
    template, _, _ = COMMANDS["check-paper"]
    out = tmp_path / "answer.json"
    code, stdout, stderr = _invoke([*_args(template, files), "--json", str(out), "--quiet"])
    assert code in (0, 1), stderr
    assert out.read_text().startswith("{")

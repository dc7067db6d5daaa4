"""The check-paper HTML report as text: self-contained, deterministic, and its numbers.

The result is a real check (``conformance.paper.check_paper``) of the bundled example run, with
trec_eval, LightGBM and scikit-learn called live. Expected numbers: the reported values and
their printed intervals are the question itself; the libraries' values come from the libraries
(``PaperResult.entries``); which gains reproduce the value is known by hand from the example
(its README: nDCG@10 is 0.6380 under trec_eval's linear gain and judged ideal). The page in a
browser is tests/report/test_browser.py::test_paper_page_in_the_browser.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from importlib import resources

import pytest

from conformance import io as cio
from conformance import paper
from conformance.libs import all_entries
from conformance.report import html as report_html

ENTRIES = ["trec_eval", "lightgbm", "sklearn"]
REPORTED = ["nDCG@10=0.6380", "AP=54.08"]


def example_files():
    base = resources.files("conformance").joinpath("examples")
    return str(base.joinpath("qrels.txt")), str(base.joinpath("run.txt"))


@pytest.fixture(scope="module")
def result():
    qrels_path, run_path = example_files()
    entries = [e for e in all_entries() if e.name in ENTRIES]
    assert sorted(e.name for e in entries) == sorted(ENTRIES)
    for e in entries:
        assert e.available(), f"{e.name} is not installed"
    return paper.check_paper(cio.load_qrels(qrels_path), cio.load_run(run_path, duplicates="error"),
                             [paper.parse_reported(t) for t in REPORTED], entries=entries, live=True)


@pytest.fixture(scope="module")
def page(result):
    return report_html.render_paper(result)


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def tags(text: str) -> list[tuple[str, dict]]:
    p = Tags()
    p.feed(text)
    return p.tags


def test_deterministic_and_written(result, page, tmp_path):
    assert report_html.render_paper(result) == page
    out = tmp_path / "sub" / "paper.html"
    report_html.write_paper(result, out)
    assert out.read_bytes() == page.encode("utf-8")


def test_self_contained(page):
    for tag, a in tags(page):
        assert tag not in ("link", "iframe", "img", "object", "embed"), tag
        for attr in ("src", "href", "action"):
            if attr in a:
                assert a[attr].startswith("#"), (tag, a[attr])
    assert not re.search(r"https?://", page)
    assert "default-src 'none'" in page


def test_verdict_and_reported_intervals(result, page):
    assert result.verdict and result.verdict.replace("'", "&#39;") in page
    # 0.6380 printed with 4 decimals stands for [0.63795, 0.63805]; 54.08 is a percentage
    assert "[0.63795, 0.63805]" in page
    assert "[0.54075, 0.54085]" in page and "54.08%" in page
    n = int(result.joint_ok.sum())
    assert n > 0
    m = re.search(r'data-stat="consistent"><span class="n">([\d,]+)</span><span class="l">of ([\d,]+)', page)
    assert m and m.group(1) == f"{n:,}" and m.group(2) == f"{result.joint_ok.size:,}"


def test_every_entry_row_shows_its_values(result, page):
    rows = {a["data-entry"]: a for t, a in tags(page) if t == "tr" and "data-entry" in a}
    assert sorted(rows) == sorted(ENTRIES)
    for e in result.entries:
        assert rows[e.name]["data-consistent"] == ("1" if e.consistent else "0")
    by_name = {e.name: e for e in result.entries}
    # trec_eval computes 0.6380 and the example's AP: it reproduces both; LightGBM (exponential
    # gain) does not, and computes no AP; sklearn (retrieved ideal) does not
    assert by_name["trec_eval"].consistent
    assert not by_name["lightgbm"].consistent and not by_name["sklearn"].consistent
    for e in result.entries:
        for metric, m in e.metrics.items():
            if m.supported and m.live is not None:
                pattern = (rf'<td class="val (yes|no)" data-metric="{re.escape(metric)}" '
                           rf'data-value="{re.escape(repr(float(m.live)))}"')
                found = re.search(pattern, page[page.index(f'data-entry="{e.name}"'):])
                assert found, (e.name, metric)
                assert found.group(1) == ("yes" if m.reproduces else "no")


def test_struck_out_values_explain_the_misses(result, page):
    """LightGBM's declared exponential gain is used by no reproducing combination (the value is
    linear gain's), and trec_eval's declared values are all used."""
    segment = page[page.index('data-entry="lightgbm"'):]
    segment = segment[:segment.index("</tr>")]
    assert re.search(r'class="pv excluded" data-axis="gain"[^>]*>exponential<', segment)
    segment = page[page.index('data-entry="trec_eval"'):]
    segment = segment[:segment.index("</tr>")]
    assert 'class="pv excluded"' not in segment


def test_rows_and_explorer_data(result, page):
    rows = result.consistent_conventions
    table = page[page.index('id="paper-rows"'):]
    table = table[:table.index("</table>")]
    assert table.count("<tr data-row=") == len(rows)
    # each row names, per axis, the values the result lists (or any)
    for i, row in enumerate(rows, 1):
        body = table[table.index(f"data-row=\"{i}\""):]
        body = body[:body.index("</tr>")]
        for axis, v in row.items():
            cell = re.search(rf'data-axis="{axis}"( class="any")?>(.*?)</td>', body).group(2)
            if v == "any":
                assert cell == "any"
            else:
                assert re.findall(r">([^<]+)</span>", cell) == (v if isinstance(v, list) else [v])
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', page, re.S).group(1))
    assert [e["entry"] for e in data["explorer"]["entries"]] == [e.name for e in result.entries]


def test_cli_check_paper_html(tmp_path):
    from click.testing import CliRunner

    from conformance.cli import main

    qrels_path, run_path = example_files()
    out = tmp_path / "paper.html"
    res = CliRunner().invoke(main, ["check-paper", "--qrels", qrels_path, "--run", run_path,
                                    "--reported", "nDCG@10=0.6380", "--libs", "trec_eval",
                                    "--quiet", "--html", str(out)])
    assert res.exit_code == 0, res.output
    text = out.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and 'id="verdict-text"' in text
    assert 'data-entry="trec_eval" data-consistent="1"' in text

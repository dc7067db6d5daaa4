"""The conformance rag HTML report in a real headless Chromium, opened from disk.

The page of the bundled example (its committed outputs, the deterministic judge) is checked as
a reader would use it: every section is there, every number of the variant table is the
result's own, the diagnosis filters show exactly the rows of the chosen variant and
diagnosis, the slice selector switches tables, the correlation plot draws the ranked
candidates. No page error, no console warning, no request but the file itself. Screenshots go
to tests/artifacts/ (see tests/report/test_browser.py; the same Chromium requirement holds).
"""

from __future__ import annotations

import contextlib

import pytest

from conformance.rag import evaluate_variants, to_dict
from conformance.rag.example.run import prepare
from conformance.report import rag_html
from tests.report.test_browser import ARTIFACTS, CHROMIUM_ARGS, NO_TOPBAR, browser, _need_browser  # noqa: F401

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def result():
    gold, variants, context_k, _ = prepare(live=False)
    return evaluate_variants(gold, variants, [1, 3, 5, 10], context_k=context_k, correlate=True, resamples=200)


@pytest.fixture(scope="module")
def page_file(result, tmp_path_factory):
    path = tmp_path_factory.mktemp("rag") / "rag.html"
    rag_html.write(result, path)
    return path


@contextlib.contextmanager
def opened(browser, path):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    problems, requests = [], []
    pg.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    pg.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
    pg.on("request", lambda r: requests.append(r.url))
    pg.goto(path.as_uri())
    pg.wait_for_selector("#diagnosis-count:not(:empty)")
    yield pg
    assert problems == [], problems
    assert requests == [path.as_uri()], requests
    context.close()


def test_the_rag_report_in_the_browser(browser, result, page_file):
    doc = to_dict(result)
    with opened(browser, page_file) as pg:
        for section in ("summary", "variants", "comparisons", "slices", "diagnoses", "spread", "correlation",
                        "answer-length", "judges"):
            assert pg.locator(f"section#{section}").is_visible(), section
        # every cell of the variant table is the result's mean
        for m in result.metric_names:
            for v in result.variants:
                cell = pg.locator(f'#variant-table tr[data-metric="{m}"] td[data-variant="{v.name}"]')
                want = result.table["all"][v.name][m].interval.estimate
                assert cell.locator("b").inner_text() == f"{want:.3f}", (m, v.name)
        # the diagnosis filters: a variant and a diagnosis show exactly its rows
        pg.select_option("#filter-diagnosis", "")
        total = len(doc["per_query"])
        page = rag_html.PAGE_ROWS
        assert pg.locator("#diagnosis-count").inner_text() == f"{total} of {total} shown"
        # at most one page of rows is drawn; the next page draws the rest
        rows = pg.locator("#diagnosis-table tbody tr")
        assert rows.count() == min(total, page)
        assert pg.locator("#diagnosis-page").inner_text().startswith(f"rows 1-{min(total, page)} ")
        if total > page:
            pg.click("#page-next")
            assert rows.count() == min(total - page, page)
            assert pg.locator("#diagnosis-page").inner_text().startswith(f"rows {page + 1}-")
        for v in result.variants:
            for d in ("ok", "ranked_low"):
                pg.select_option("#filter-variant", v.name)
                pg.select_option("#filter-diagnosis", d)
                want = v.diagnoses.diagnosis.count(d)
                assert rows.count() == want
                assert all(r.get_attribute("data-variant") == v.name and r.get_attribute("data-diagnosis") == d
                           for r in rows.all())
                assert pg.locator("#diagnosis-count").inner_text() == f"{want} of {total} shown"
        pg.select_option("#filter-variant", "")
        pg.select_option("#filter-diagnosis", "")
        pg.select_option("#filter-slice", "paraphrased")
        want = sum(1 for r in doc["per_query"] if r["slice"] == "paraphrased")
        assert rows.count() == min(want, page)
        # the text search runs over every row, drawn or not
        pg.select_option("#filter-slice", "")
        last = doc["per_query"][-1]
        pg.fill("#filter-text", last["qid"])
        want = sum(1 for r in doc["per_query"] if last["qid"] in " ".join(
            str(x) for x in (r["variant"], r["qid"], r.get("query") or "", r.get("slice") or "", r["diagnosis"],
                             r["detail"], r.get("answer") or "")).lower())
        assert rows.count() == min(want, page) and want >= 1
        pg.fill("#filter-text", "")
        # the stacked bars carry the counts
        for v in result.variants:
            for rect in pg.locator(f'#diagnosis-bars .barrow[data-variant="{v.name}"] rect').all():
                assert int(rect.get_attribute("data-n")) == v.diagnoses.diagnosis.count(rect.get_attribute("data-diagnosis"))
        # the slice selector shows one slice's table at a time
        pg.select_option("#slice-select", "multi_topic")
        shown = pg.locator("#slices .slice:not([hidden])")
        assert shown.count() == 1 and shown.get_attribute("data-slice") == "multi_topic"
        cell = shown.locator(f'tr[data-metric="hit_rate@1"] td[data-variant="bm25"] b').inner_text()
        assert cell == f'{result.table["multi_topic"]["bm25"]["hit_rate@1"].interval.estimate:.3f}'
        # the correlation plot: one interval per plotted candidate, the verdict sentence
        assert pg.locator("#correlation-verdict").inner_text() == result.study.overall.sentence
        rows = pg.locator("#correlation-plot tbody tr")
        assert rows.count() == min(rag_html.TOP_PLOTTED, len(result.study.overall.rows))
        assert rows.first.locator("svg.iv line.bar").count() == 1
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(ARTIFACTS / "rag-page.png"), full_page=True, style=NO_TOPBAR)
        assert (ARTIFACTS / "rag-page.png").stat().st_size > 10_000

"""The HTML report in a real headless Chromium (Python playwright, sync API).

The page is generated from a real run (library entries called live over corpus cases), opened
from disk (file://), and driven as a reader would: clicks, drags, keys, the k slider, the gain
switch, the presets. Every number the explorer shows is compared with the Python reference
(conformance.reference.evaluate) under each entry's declared profile, to 1e-12, or reads "not
computed" where the page's data says the explorer cannot compute the profile
(report.html.EXPLORER_COMPUTES), and only there. The explorer's arithmetic on hundreds of random
lists and profiles is tests/report/test_explorer_browser.py's, with this module's page.

Chromium and playwright are required: without them these tests FAIL, unless
CONFORMANCE_ALLOW_NO_BROWSER=1 is set (then they are skipped, and say so). Install with
scripts/install-test.sh (apt-get install chromium; pip install playwright; no browser download).
Screenshots (the explorer after the edits, and the whole page) are saved as test artifacts in
tests/artifacts/ (git-ignored), or in the directory CONFORMANCE_ARTIFACTS names.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
from pathlib import Path

import pytest

from conformance.io.cases import load_cases
from conformance.conventions import TREC_EVAL10, Conventions
from conformance.io.data import Qrels, Run
from conformance.errors import EvaluationError
from conformance.libs import all_entries
from conformance.measures import Measure, parse_measures
from conformance.reference import evaluate
from conformance.reference.prepare import Prepared
from conformance.report import html as report_html
from conformance.runner import Subject, run_entries

# the corpus tests share the session's corpus run with tests/cli/test_run_corpus.py: one worker
# computes it once (pytest -n 2 --dist loadgroup)
pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("corpus")]

CHROMIUM = os.environ.get("CONFORMANCE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

CASES = ["graded-ten", "relevant-at-k-and-k-plus-one", "rr-cutoff-first-relevant-at-7",
         "ties-two-groups", "query-empty-mixed", "one-document-list", "fewer-results-than-k",
         "depth-forty-docs-relevant-below-32", "ap-denominator-three-ways"]
ENTRIES = ["trec_eval", "ir_measures", "sklearn", "sklearn:ignore_ties", "xgboost", "xgboost:ndcg-"]

# The explorer's measure ids -> (family, takes the explorer's k)
MEASURES = {mid: (family, at) for mid, family, at in report_html.EXPLORER_MEASURES}
TOL = 1e-12


# Screenshots are test artifacts: written on every run to tests/artifacts/ (git-ignored; CI
# may upload it), or to the directory CONFORMANCE_ARTIFACTS names.
ARTIFACTS = Path(os.environ.get("CONFORMANCE_ARTIFACTS")
                 or Path(__file__).resolve().parents[1] / "artifacts")
# The sticky top bar would cover the top of an element scrolled under it.
NO_TOPBAR = ".topbar { visibility: hidden !important; }"


def save_screenshots(pg, name: str) -> list[Path]:
    """The explorer box and the whole page, as PNG files; their paths are printed."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    explorer = ARTIFACTS / f"{name}-explorer.png"
    whole = ARTIFACTS / f"{name}-page.png"
    pg.locator("#ex").screenshot(path=str(explorer), style=NO_TOPBAR)
    pg.screenshot(path=str(whole), full_page=True, style=NO_TOPBAR)
    for p in (explorer, whole):
        assert p.stat().st_size > 10_000, f"{p} looks empty"
        print(f"\nscreenshot: {p}")
    return [explorer, whole]


def _need_browser():
    allow = os.environ.get("CONFORMANCE_ALLOW_NO_BROWSER") == "1"
    problem = None
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        problem = "playwright is not installed (pip install playwright)"
    if problem is None and not os.path.exists(CHROMIUM):
        problem = f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    if problem:
        if allow:
            pytest.skip(f"browser tests skipped (CONFORMANCE_ALLOW_NO_BROWSER=1): {problem}")
        pytest.fail(f"browser tests need Chromium and playwright: {problem}; "
                    "set CONFORMANCE_ALLOW_NO_BROWSER=1 to skip them")


@pytest.fixture(scope="module")
def browser():
    _need_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def run_result():
    by_name = {c.name: c for c in load_cases()}
    subjects = [Subject(n, by_name[n].qrels, by_name[n].run, by_name[n].measures,
                        by_name[n].description) for n in CASES]
    entries = [e for e in all_entries() if e.name in ENTRIES]
    assert sorted(e.name for e in entries) == sorted(ENTRIES)
    for e in entries:
        assert e.available(), f"{e.name} is not installed"
    return run_entries(entries, subjects)


@pytest.fixture(scope="module")
def report_file(run_result, tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "conventions.html"
    report_html.write(run_result, path)
    return path


@contextlib.contextmanager
def opened(browser, path: Path):
    """The page at ``path`` (file://); on leaving, no page error or console error/warning was
    seen and the page requested nothing but its own file."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    problems: list[str] = []
    requests: list[str] = []
    pg.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    pg.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}")
          if msg.type in ("error", "warning") else None)
    pg.on("request", lambda req: requests.append(req.url))
    pg.goto(path.as_uri())
    pg.wait_for_selector("#ex-table tbody tr")
    yield pg
    assert problems == [], problems
    assert requests == [path.as_uri()], f"the page made a request: {requests}"
    context.close()


@pytest.fixture()
def page(browser, report_file):
    with opened(browser, report_file) as pg:
        yield pg


# --------------------------------------------------------------------------------------------
# the Python side of every comparison
# --------------------------------------------------------------------------------------------


def list_subject(grades: list[int]) -> Prepared:
    """One query whose judged documents are exactly the list, ranked by descending score."""
    n = len(grades)
    qrels = Qrels.from_records([("q", f"d{i:02d}", float(g)) for i, g in enumerate(grades)])
    run = Run.from_records([("q", f"d{i:02d}", float(n - i)) for i in range(n)])
    return Prepared(qrels, run)


def reference_value(prep: Prepared, measure: Measure, conv: Conventions):
    """What the explorer must show: a float (NaN allowed), "raise" or "skip"."""
    try:
        ev = evaluate(prep, None, [measure], conv)
    except EvaluationError:
        return "raise"
    if not ev.counted[measure].any():
        return "skip"
    return ev.aggregate(measure)


def reference_values(prep: Prepared, measures: list[Measure], conv: Conventions) -> dict:
    """reference_value for several measures at once: one evaluation, or one per measure when a
    measure makes the evaluation raise (empty_query=raise raises for the whole call)."""
    try:
        ev = evaluate(prep, None, measures, conv)
    except EvaluationError:
        return {m: reference_value(prep, m, conv) for m in measures}
    return {m: (ev.aggregate(m) if ev.counted[m].any() else "skip") for m in measures}


def same(got, want) -> bool:
    if isinstance(want, str) or isinstance(got, str):
        return got == want
    if math.isnan(want) or math.isnan(got):
        return math.isnan(want) and math.isnan(got)
    return abs(got - want) <= TOL


def measure_at(mid: str, k: int) -> Measure:
    family, at = MEASURES[mid]
    return Measure(family, k if at else None)


def displayed(pg) -> dict:
    return pg.evaluate("""() => {
      const cols = [...document.querySelectorAll('#ex-table th[data-entries]')]
        .map(th => th.dataset.entries.split(' '));
      const cells = [...document.querySelectorAll('#ex-table td.v[data-measure]')].map(td => ({
        col: +td.dataset.col, measure: td.dataset.measure,
        value: td.dataset.value === undefined ? null : td.dataset.value,
        text: td.firstChild ? td.firstChild.textContent : ''}));
      const rows = [...document.querySelectorAll('#ex-list .ex-row')];
      return {cols, cells, grades: rows.map(r => +r.dataset.grade), docs: rows.map(r => r.dataset.doc),
              k: +document.getElementById('ex-k').value,
              kmax: +document.getElementById('ex-k').max,
              gain: document.querySelector('input[name="ex-gain"]:checked').value,
              notes: [...document.querySelectorAll('#ex-notes li')].map(li => li.textContent)};
    }""")


def check_displayed(pg, entries, computes=report_html.EXPLORER_COMPUTES) -> dict:
    """Every value cell equals the reference under the profile of every entry of its column
    (with the gain switch applied), or reads "not computed" where the page's data says the
    explorer cannot compute that profile (``computes``: the values explorer.js is declared to
    compute), and every entry is in exactly one column."""
    d = displayed(pg)
    by_name = {e.name: e for e in entries}
    # an entry that computes none of the explorer's measures has no column (and a note)
    computing = [n for n, e in by_name.items()
                 if any(e.supports(measure_at(mid, d["k"])) for mid in MEASURES)]
    assert sorted(n for col in d["cols"] for n in col) == sorted(computing)
    prep = list_subject(d["grades"])
    checked = 0
    for cell in d["cells"]:
        for name in d["cols"][cell["col"]]:
            e = by_name[name]
            m = measure_at(cell["measure"], d["k"])
            if not e.supports(m):
                assert cell["value"] is None, (name, cell)
                continue
            conv = m.conventions(e.profile(m))
            if report_html.explorer_not_here(conv, *MEASURES[cell["measure"]], computes):
                # the declared profile's not_here stays under the gain switch
                assert cell["value"] == "not_here" and cell["text"] == "not here", (name, cell)
                checked += 1
                continue
            if d["gain"] != "declared":
                conv = conv.replace(gain=d["gain"])
            want = reference_value(prep, m, conv)
            got = cell["value"] if cell["value"] in ("raise", "skip") else float(cell["value"])
            assert same(got, want), (name, cell["measure"], d["grades"], d["k"], d["gain"], got, want)
            if not isinstance(want, str) and not math.isnan(want):
                # four decimals, rounded (a printed half may round either way)
                assert re.fullmatch(r"-?\d+\.\d{4}", cell["text"]), cell
                assert abs(float(cell["text"]) - want) <= 0.5e-4 + 1e-12, (cell, want)
            checked += 1
    assert checked > 0
    return d


# --------------------------------------------------------------------------------------------
# the report's sections
# --------------------------------------------------------------------------------------------


def test_sections_and_summary(page, run_result):
    for section in ("summary", "conventions", "agreement", "disagreements", "explorer"):
        assert page.locator(f"section#{section}").is_visible()
    for key, value in run_result.summary.items():
        assert page.locator(f'[data-stat="{key}"] .n').inner_text() == str(value)
    for e in run_result.entries:
        row = page.locator(f'#entries-table tr[data-entry="{e.name}"]')
        assert run_result.versions[e.name] in row.inner_text()
    for e in run_result.entries:
        prof = e.default_profile().to_dict()
        cells = page.locator(f'#convention-matrix tr[data-entry="{e.name}"] td')
        for i in range(cells.count()):
            c = cells.nth(i)
            assert c.inner_text() == prof[c.get_attribute("data-axis")]


def test_agreement_grid_counts_pairs(page, run_result):
    names = [e.name for e in run_result.entries]
    page.select_option("#agreement-metric", "nDCG@5")
    comps = [c for c in run_result.comparisons if c.metric == "nDCG@5"]
    assert comps
    for a in names:
        for b in names:
            if a == b:
                continue
            both = [c for c in comps if a in c.values and b in c.values]
            if not both:
                continue
            agree = sum(1 for c in both if any(a in cls and b in cls for cls in c.classes))
            cell = page.locator(f'#agreement-grid td[data-a="{a}"][data-b="{b}"]')
            assert cell.get_attribute("data-both") == str(len(both))
            assert cell.get_attribute("data-agree") == str(agree)


def test_cards_filters_and_position_tables(page, run_result):
    cards = page.locator("#cards .card")
    total = cards.count()
    unexplained = run_result.summary["unexplained"]
    assert page.locator("#cards .card.unexplained").count() == unexplained
    if unexplained:
        assert "unexplained" in cards.first.get_attribute("class")
        assert cards.first.locator(".flag").inner_text() == "UNEXPLAINED"
    page.check("#filter-unexplained")
    assert page.locator("#cards .card:not([hidden])").count() == unexplained
    page.uncheck("#filter-unexplained")
    page.select_option("#filter-axis", "gain")
    visible = page.locator("#cards .card:not([hidden])")
    assert visible.count() >= 1
    for i in range(visible.count()):
        assert "gain" in visible.nth(i).get_attribute("data-axes").split()
    page.select_option("#filter-axis", "")
    assert page.locator("#filter-count").inner_text() == f"{total} of {total} shown"

    # open the explained card of the graded-ten case for nDCG@5 (linear vs exponential gain)
    chosen = '.card[data-case="relevant-at-k-and-k-plus-one"][data-metric="nDCG@5"][data-unexplained="0"]'
    card = page.locator("#cards " + chosen).first
    card_id = card.get_attribute("id")
    # its measure's line and its group (nDCG@5 explained by gain) are closed until opened
    line = page.locator("#cards details.mgroup", has=page.locator(f"#{card_id}"))
    group = page.locator("#cards details.cgroup", has=page.locator(f"#{card_id}"))
    assert not card.is_visible() and line.get_attribute("open") is None
    line.locator(":scope > summary").click()
    assert group.is_visible() and not card.is_visible()
    group.locator(":scope > summary").click()
    card.locator("details.positions > summary").click()
    tables = card.locator(".pt")
    assert tables.count() == 2
    entries = {e.name: e for e in run_result.entries}
    subject = next(s for s in run_result.subjects if s.name == "relevant-at-k-and-k-plus-one")
    prep = Prepared(subject.qrels, subject.run)
    m = next(x for x in subject.measures if x.text == "nDCG@5")
    for i in range(2):
        t = tables.nth(i)
        entry = entries[t.get_attribute("data-entry")]
        ref = evaluate(prep, None, [m], entry.profile(m)).ranges(m)[t.get_attribute("data-query")]
        shown = float(t.locator(".refv").get_attribute("data-ref"))
        assert abs(shown - ref[0]) <= TOL
        # the running DCG at the cutoff row, over the running IDCG there, is that value
        cut = t.locator("tr.cutrow td.run")
        dcg, idcg = float(cut.nth(0).inner_text()), float(cut.nth(1).inner_text())
        assert abs(dcg / idcg - ref[0]) < 1e-3  # four printed decimals each
        header = t.locator("thead th")
        assert [header.nth(j).inner_text() for j in range(header.count())] == [
            "rank", "doc", "grade", "gain", "disc.", "gain×disc.", "DCG", "ideal doc", "grade",
            "gain", "IDCG"]


# --------------------------------------------------------------------------------------------
# the explorer
# --------------------------------------------------------------------------------------------


def test_explorer_initial_state_matches_the_reference(page, run_result):
    d = check_displayed(page, run_result.entries)
    assert d["grades"] == [3, 2, 0, 2, 0, 3, 0, 1, 0, 1]
    assert d["k"] == 5 and d["kmax"] == 12 and d["gain"] == "declared"


def test_explorer_edits(page, run_result):
    entries = run_result.entries
    # click a grade badge: d3 goes 0 -> 1 -> 2
    badge = page.locator('.ex-row[data-doc="d3"] .ex-grade')
    badge.click()
    assert page.locator('.ex-row[data-doc="d3"]').get_attribute("data-grade") == "1"
    badge = page.locator('.ex-row[data-doc="d3"] .ex-grade')
    badge.click()
    d = check_displayed(page, entries)
    assert d["grades"][2] == 2

    # drag d6 (grade 3, rank 6) onto the top half of d1: it becomes rank 1
    src = page.locator('.ex-row[data-doc="d6"] .ex-doc')
    dst = page.locator('.ex-row[data-doc="d1"]')
    box = dst.bounding_box()
    src.drag_to(dst, target_position={"x": box["width"] / 2, "y": 3})
    d = check_displayed(page, entries)
    assert d["docs"][:3] == ["d6", "d1", "d2"], d["docs"]

    # drag d1 below d4
    box = page.locator('.ex-row[data-doc="d4"]').bounding_box()
    page.locator('.ex-row[data-doc="d1"] .ex-doc').drag_to(
        page.locator('.ex-row[data-doc="d4"]'), target_position={"x": box["width"] / 2, "y": box["height"] - 3})
    d = check_displayed(page, entries)
    assert d["docs"][:5] == ["d6", "d2", "d3", "d4", "d1"], d["docs"]

    # keyboard: focus d10 (last) and move it up twice with Alt+ArrowUp; set its grade with 3
    row = page.locator('.ex-row[data-doc="d10"]')
    row.focus()
    page.keyboard.press("Alt+ArrowUp")
    page.keyboard.press("Alt+ArrowUp")
    page.keyboard.press("3")
    d = check_displayed(page, entries)
    assert d["docs"][7] == "d10" and d["grades"][7] == 3

    # the up and down buttons
    page.locator('.ex-row[data-doc="d2"] .ex-up').click()
    d = check_displayed(page, entries)
    assert d["docs"][0] == "d2"
    page.locator('.ex-row[data-doc="d2"] .ex-down').click()
    assert displayed(page)["docs"][1] == "d2"

    # k: every value from 1 to list length + 2, by keyboard on the slider
    slider = page.locator("#ex-k")
    slider.focus()
    page.keyboard.press("Home")
    for k in range(1, 13):
        d = check_displayed(page, entries)
        assert d["k"] == k
        if k > 10:
            assert any("passes the end of the list" in n for n in d["notes"])
        else:
            assert not any("passes the end of the list" in n for n in d["notes"])
        page.keyboard.press("ArrowRight")
    assert displayed(page)["k"] == 12  # the slider stops at length + 2

    # the gain switch, at a k inside the list
    slider.fill("4")
    for gain in ("exponential", "linear", "declared"):
        page.check(f'input[name="ex-gain"][value="{gain}"]')
        d = check_displayed(page, entries)
        assert d["gain"] == gain

    # add and remove documents: the slider's end follows the length
    page.click("#ex-add")
    d = check_displayed(page, entries)
    assert len(d["grades"]) == 11 and d["kmax"] == 13
    page.locator('.ex-row[data-doc="d5"] .ex-remove').click()
    d = check_displayed(page, entries)
    assert len(d["grades"]) == 10 and "d5" not in d["docs"]

    save_screenshots(page, "report")


def test_explorer_presets(page, run_result):
    entries = run_result.entries
    expect = {
        "default": [3, 2, 0, 2, 0, 3, 0, 1, 0, 1],
        "buried": [3, 0, 0, 0, 0, 3, 2, 2, 1, 1],
        "swap": [3, 2, 0, 2, 3, 0, 0, 1, 0, 1],
    }
    shown = {}
    for preset, grades in expect.items():
        page.click(f'[data-preset="{preset}"]')
        d = check_displayed(page, entries)
        assert d["grades"] == grades and d["k"] == 5, preset
        assert page.locator("#ex-preset-note").inner_text(), preset
        shown[preset] = {(c["col"], c["measure"]): float(c["value"]) for c in d["cells"]
                         if c["value"] not in (None, "raise", "skip")}
    # what the swap's note says: the @5 measures rise, RR and RR@5 stay, nDCG over the whole
    # list moves much less
    assert "RR and RR@5 stay" in page.locator("#ex-preset-note").inner_text()
    before, after = shown["default"], shown["swap"]
    for (col, mid), v in after.items():
        if mid in ("P@k", "R@k", "nDCG@k", "DCG@k"):
            assert v > before[(col, mid)], (col, mid)
        elif mid in ("RR", "RR@k"):
            assert v == before[(col, mid)], (col, mid)
    for col in {c for c, _ in after}:
        if (col, "nDCG") in after and (col, "nDCG@k") in after:
            whole = after[(col, "nDCG")] - before[(col, "nDCG")]
            assert 0 < whole < (after[(col, "nDCG@k")] - before[(col, "nDCG@k")]) / 3
    # the buried preset: RR is 1, P@5, R@5 and AP@5 are low
    for (col, mid), v in shown["buried"].items():
        if mid == "RR":
            assert v == 1.0
        elif mid in ("P@k", "R@k", "AP@k"):
            assert v <= 0.2, (col, mid, v)
    page.click('[data-preset="ideal"]')
    d = check_displayed(page, entries)
    assert d["grades"] == [3, 3, 2, 2, 1, 1, 0, 0, 0, 0]
    ndcg = [c for c in d["cells"] if c["measure"] == "nDCG" and c["value"] is not None]
    assert ndcg and all(float(c["value"]) == 1.0 for c in ndcg)
    page.click('[data-preset="none"]')
    d = check_displayed(page, entries)
    assert d["grades"] == [0] * 10
    assert any("0/0" in n and "empty_query=zero" in n for n in d["notes"])
    assert any("empty_query=one" in n for n in d["notes"])  # xgboost scores an empty query 1
    page.click('[data-preset="equal"]')
    d = check_displayed(page, entries)
    assert len(set(d["grades"])) == 1 and d["grades"][0] > 0


def test_a_value_the_explorer_does_not_compute_reads_not_computed(page, run_result):
    """Were ideal=retrieved a value the explorer is not declared to compute (as a value added to
    the axis later is), the page's data would hold the profiles that set it with not_here: the
    entries that set it (scikit-learn's and XGBoost's nDCG) read "not here" on every measure
    whose family reads the ideal, on a row of their own, a note names the value and the
    entries, and every other value is still the reference's."""
    named, pattern = report_html.EXPLORER_COMPUTES["ideal"]
    computes = {**report_html.EXPLORER_COMPUTES,
                "ideal": (tuple(v for v in named if v != "retrieved"), pattern)}
    held = {}
    for e in run_result.entries:
        held[e.name] = {}
        for mid, (family, at) in MEASURES.items():
            m = measure_at(mid, report_html.REPRESENTATIVE_K)
            held[e.name][mid] = (report_html.explorer_measure_profile(
                m.conventions(e.profile(m)), family, at, computes) if e.supports(m) else None)
    page.evaluate("""(held) => {
      const api = window.conformanceExplorer;
      api.data.entries.forEach(e => { e.measures = held[e.entry]; });
      api.setList(api.data.default_list, 5);
    }""", held)
    d = check_displayed(page, run_result.entries, computes)
    off = {n for c in d["cells"] if c["value"] == "not_here" for n in d["cols"][c["col"]]}
    assert off == {"sklearn", "sklearn:ignore_ties", "xgboost", "xgboost:ndcg-"}
    assert any(c["value"] not in (None, "not_here") for c in d["cells"])
    note = [n for n in d["notes"] if n.startswith("Not computed here: ideal=retrieved (")]
    assert len(note) == 1 and all(name in note[0] for name in off), d["notes"]
    title = page.locator('#ex-table td.v[data-value="not_here"]').first.get_attribute("title")
    assert "not computed here: the explorer does not compute ideal=retrieved" in title


def test_gains_diverge_most_is_the_maximum(page, run_result):
    """On a list of 5 documents the preset searches all 4^5 lists; the reference, over the same
    1024 lists as one run, finds the same largest gap between linear and exponential nDCG@k."""
    page.click('[data-preset="default"]')
    for doc in ("d6", "d7", "d8", "d9", "d10"):
        page.locator(f'.ex-row[data-doc="{doc}"] .ex-remove').click()
    page.locator("#ex-k").fill("3")
    page.click('[data-preset="diverge"]')
    d = check_displayed(page, run_result.entries)
    assert len(d["grades"]) == 5 and d["k"] == 3
    assert "Of all 1024 lists of 5 documents" in page.locator("#ex-preset-note").inner_text()
    lists = [[(x >> (2 * p)) & 3 for p in range(5)] for x in range(4 ** 5)]
    qrels = Qrels.from_records([(f"q{i:04d}", f"d{p}", float(g)) for i, gs in enumerate(lists)
                                for p, g in enumerate(gs)])
    run = Run.from_records([(f"q{i:04d}", f"d{p}", float(5 - p)) for i in range(len(lists))
                            for p in range(5)])
    prep = Prepared(qrels, run)
    m = Measure("nDCG", 3)
    lin = evaluate(prep, None, [m], TREC_EVAL10).values(m)
    exp = evaluate(prep, None, [m], TREC_EVAL10.replace(gain="exponential")).values(m)
    gaps = {q: abs(lin[q] - exp[q]) for q in lin if any(lists[int(q[1:])])}
    best = max(gaps.values())
    found = f"q{lists.index(d['grades']):04d}"
    assert abs(gaps[found] - best) <= TOL
    assert best > 0.05


def test_paper_page_in_the_browser(browser, tmp_path):
    """The check-paper page (every entry, judged by its declared profile: --no-live): its
    verdict and tables are there, and its explorer shows every entry's reference values."""
    from importlib import resources

    from conformance import io as cio
    from conformance import paper

    base = resources.files("conformance").joinpath("examples")
    qrels = cio.load_qrels(str(base.joinpath("qrels.txt")))
    run = cio.load_run(str(base.joinpath("run.txt")), duplicates="error")
    entries = all_entries()
    result = paper.check_paper(qrels, run, [paper.parse_reported("nDCG@10=0.6380")],
                               entries=entries, live=False)
    path = tmp_path / "paper.html"
    report_html.write_paper(result, path)
    with opened(browser, path) as pg:
        for section in ("verdict", "paper-conventions", "paper-libraries", "explorer"):
            assert pg.locator(f"section#{section}").is_visible()
        assert pg.locator("#verdict-text").inner_text() == result.verdict
        rows = pg.locator("#paper-libs tbody tr")
        assert rows.count() == len(result.entries)
        yes = {e.name for e in result.entries if e.consistent}
        assert yes and {rows.nth(i).get_attribute("data-entry") for i in range(len(yes))} == yes
        check_displayed(pg, entries)
        pg.locator('.ex-row[data-doc="d2"] .ex-grade').click()
        pg.locator("#ex-k").fill("9")
        d = check_displayed(pg, entries)
        assert d["grades"][1] == 3 and d["k"] == 9
        save_screenshots(pg, "paper")


# --------------------------------------------------------------------------------------------
# the page at a glance (issue 16.7): the bundled corpus with every entry, as `conformance run`
# writes it
# --------------------------------------------------------------------------------------------

MAX_HEIGHT = 15_000  # px at 1400 px wide, nothing opened


# corpus_result (tests/conftest.py): every entry over the whole bundled corpus, computed once


@pytest.fixture(scope="module")
def corpus_report(corpus_result, tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "conventions.html"
    report_html.write(corpus_result, path)
    return path


def test_corpus_page_height_and_first_screen(browser, corpus_report, corpus_result):
    with opened(browser, corpus_report) as pg:
        height = pg.evaluate("document.body.scrollHeight")
        print(f"\nbundled corpus page: {height} px tall at 1400 px wide")
        assert height <= MAX_HEIGHT
        # the value table is on the first screen, the convention matrix next
        order = pg.evaluate("() => [...document.querySelectorAll('main > section')].map(s => s.id)")
        assert order[:3] == ["summary", "values", "conventions"], order
        table = pg.locator("#values .vtable:not([hidden]) table")
        assert table.count() == 1
        assert table.bounding_box()["y"] < 1000  # its top inside the first 1000 px viewport
        # nothing of the cards shows until its measure's line and group are opened
        assert pg.locator("#cards .card:visible").count() == 0
        save = pg.locator("#cards details.mgroup").count()
        assert save == len({c.metric for c in corpus_result.comparisons if c.explanations})


def test_disagreements_grouped_by_measure_and_axes(browser, corpus_report, corpus_result):
    """Groups and their counts, from the comparisons themselves: per (measure, explaining axes)
    the number of explained pair cards."""
    want: dict[tuple, int] = {}
    for c in corpus_result.comparisons:
        for e in c.explanations:
            key = (c.metric, "unexplained" if e.axes is None else " + ".join(e.axes))
            want[key] = want.get(key, 0) + 1
    with opened(browser, corpus_report) as pg:
        got = pg.evaluate("""() => [...document.querySelectorAll('#cards .mpart')].map(p => [
            p.closest('details.mgroup').dataset.metric, p.textContent.trim()])""")
        shown = {}
        for metric, text in got:
            axes, count = text.rsplit(" \u00d7", 1)
            shown[(metric, axes)] = int(count)
        pairs = {k: v for k, v in want.items() if k[1] != "unexplained"}
        assert {k: v for k, v in shown.items() if k[1] != "unexplained"} == pairs
        # open one measure's line, then one of its groups: exactly that group's cards show
        line = pg.locator("#cards details.mgroup").first
        line.locator(":scope > summary").click()
        group = line.locator("details.cgroup").first
        assert group.is_visible()
        assert line.locator(".card:visible").count() == 0
        group.locator(":scope > summary").click()
        n = int(group.get_attribute("data-total"))
        assert group.locator(".card:visible").count() == n >= 1


OVERFLOW_JS = """() => { const out = [];
  const vw = document.documentElement.clientWidth;
  for (const e of document.querySelectorAll('main table, main .card, main section, main details, main .pt, main .ex')) {
    if (e.offsetParent === null) continue;
    let box = e, scrolls = false;  // inside a box that scrolls sideways, nothing is clipped
    while (box && box !== document.body) {
      const ox = getComputedStyle(box).overflowX;
      if (ox === 'auto' || ox === 'scroll') { scrolls = true; break; }
      box = box.parentElement;
    }
    const r = e.getBoundingClientRect();
    if (!scrolls && (e.scrollWidth > e.clientWidth + 1 || r.right > vw + 0.5))
      out.push([e.tagName, e.className, e.id, e.scrollWidth, e.clientWidth, Math.round(r.right)]);
  }
  return {page: document.documentElement.scrollWidth, width: vw, over: out.slice(0, 10)}; }"""


def test_nothing_overflows_at_1280(browser, corpus_report):
    """At 1280 px wide no table, card, section or position table is wider than its box unless it
    sits in a box that scrolls sideways, and the page itself does not scroll sideways: with
    everything closed, and with every group, card and table opened."""
    with opened(browser, corpus_report) as pg:
        pg.set_viewport_size({"width": 1280, "height": 1000})
        closed = pg.evaluate(OVERFLOW_JS)
        assert closed["over"] == [] and closed["page"] <= closed["width"], closed
        pg.evaluate("""() => {
          document.querySelectorAll('#cards details').forEach(d => { d.open = true; });
          document.querySelectorAll('#cards .card').forEach(c => window.conformanceReport.drawTables(c));
        }""")
        assert pg.locator("#cards .pt").count() > 0
        opened_all = pg.evaluate(OVERFLOW_JS)
        assert opened_all["over"] == [] and opened_all["page"] <= opened_all["width"], opened_all


def test_every_coloured_section_has_a_legend(page):
    for section in ("values", "conventions", "agreement", "disagreements", "explorer"):
        legend = page.locator(f"section#{section} .legend")
        assert legend.count() >= 1 and legend.first.is_visible(), section
        assert "legend" in legend.first.inner_text().lower() or section == "agreement", section


def test_value_table_is_the_comparisons(page, run_result):
    """Each case's table: every entry's value as the comparison holds it (4 decimals), and two
    cells of a column share a letter exactly when the comparison puts their entries in one
    class, trec_eval's class lettered A."""
    by_case: dict[str, list] = {}
    for c in run_result.comparisons:
        by_case.setdefault(c.case, []).append(c)
    options = page.locator("#values-case option")
    assert options.count() == len(by_case)
    for i in range(options.count()):
        case = options.nth(i).inner_text()
        page.select_option("#values-case", str(i))
        box = page.locator(f'#values .vtable[data-case="{case}"]')
        assert box.is_visible() and page.locator("#values .vtable:visible").count() == 1
        for c in by_case[case]:
            cells = {}
            for name in c.values:
                td = box.locator(f'tr[data-entry="{name}"] td[data-metric="{c.metric}"]')
                text = td.inner_text().strip()
                if name in c.errors:
                    assert text.startswith("error"), (case, c.metric, name, text)
                    continue
                v = c.values[name]
                assert text.startswith("NaN" if math.isnan(v) else f"{v:.4f}"), (case, c.metric, name, text)
                cells[name] = td.get_attribute("data-class")
            for cls in c.classes:
                assert len({cells[n] for n in cls if n in cells}) <= 1, (case, c.metric, cls, cells)
            letters = [{cells[n] for n in cls if n in cells} for cls in c.classes]
            flat = [next(iter(s)) for s in letters if s]
            assert len(flat) == len(set(flat)), (case, c.metric, letters)  # one letter per class
            if "trec_eval" in cells:
                assert cells["trec_eval"] == "A"


def ranked_by_trec_eval(case, qid: str) -> list[str]:
    """The query's documents in trec_eval's order: score descending, ties by docid descending
    (byte-wise), written out with Python sorts, not the report's code."""
    rows = [(d, s) for q, d, s in zip(case.run.query_ids().tolist(), case.run.doc_ids().tolist(),
                                       case.run.score.tolist()) if q == qid]
    rows.sort(key=lambda r: r[0].encode(), reverse=True)
    rows.sort(key=lambda r: -r[1])  # stable: equal scores keep the docid order
    return [d for d, _ in rows]


def test_query_picker_opens_the_inputs_own_queries(page, run_result):
    by_name = {c.name: c for c in load_cases()}
    options = page.locator("#ex-query option")
    labels = [options.nth(i).inner_text() for i in range(options.count())]
    assert labels[0] == "the built-in example"
    want_labels = []
    for name in CASES:
        case = by_name[name]
        both = sorted(set(case.run.query_ids().tolist()) & set(case.qrels.query_ids().tolist()))
        want_labels += [f"{name} / {q}" for q in both]
    assert labels[1:] == want_labels
    tried = 0
    for text in labels[1:]:
        name, qid = text.split(" / ")
        if name not in ("ties-two-groups", "graded-ten", "depth-forty-docs-relevant-below-32"):
            continue
        page.select_option("#ex-query", label=text)
        case = by_name[name]
        judged = {d: g for q, d, g in zip(case.qrels.query_ids().tolist(), case.qrels.doc_ids().tolist(),
                                          case.qrels.label.tolist()) if q == qid}
        ranked = [d for d in ranked_by_trec_eval(case, qid) if d != qid]
        top = ranked[:30]
        extra = sorted((d for d, g in judged.items() if g >= 1 and d not in top),
                       key=lambda d: (ranked.index(d) if d in ranked else len(ranked), d))
        d = check_displayed(page, run_result.entries)
        assert d["docs"] == top + extra, (text, d["docs"])
        assert d["grades"] == [max(0, int(math.floor(judged.get(x, 0)))) for x in top + extra]
        note = page.locator("#ex-preset-note").inner_text()
        assert f"Query {qid} of {name}" in note and "trec_eval's rule" in note
        if extra:
            assert "appended" in note
            assert page.locator("#ex-list .ex-row.extra").count() == len(extra)
        tried += 1
    assert tried >= 3
    page.select_option("#ex-query", "")
    assert displayed(page)["grades"] == list(report_html.DEFAULT_LIST)


# --------------------------------------------------------------------------------------------
# wide tables and long ids (issue 25.3)
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def every_entry_report(tmp_path_factory):
    """Every installed entry on one small case: the convention matrix holds all of them."""
    case = next(c for c in load_cases() if c.name == "graded-ten")
    result = run_entries([e for e in all_entries() if e.available()],
                         [Subject(case.name, case.qrels, case.run, case.measures)])
    path = tmp_path_factory.mktemp("every") / "every.html"
    report_html.write(result, path)
    return path


def test_the_wide_convention_matrix_shows_it_continues_and_keeps_its_entry_column(browser, every_entry_report):
    with opened(browser, every_entry_report) as page:
        _wide_matrix(page)


def _wide_matrix(page):
    page.set_viewport_size({"width": 1280, "height": 1000})
    box = page.locator("#matrix-scroll")
    wide = page.evaluate("() => { const b = document.getElementById('matrix-scroll');"
                         " return [b.scrollWidth, b.clientWidth]; }")
    assert wide[0] > wide[1], "the matrix is wider than its box at 1280 px"
    cue = page.locator("#matrix-cue")
    assert cue.is_visible() and "scrolls sideways" in cue.inner_text()
    wrap = page.locator("#conventions .wide-wrap")
    shade = "() => getComputedStyle(document.querySelector('#conventions .wide-wrap'), '::after').opacity"
    assert "at-end" not in (wrap.get_attribute("class") or "") and page.evaluate(shade) == "1"
    first = page.locator("#convention-matrix tbody tr").first.locator("th.sticky")
    before = first.bounding_box()["x"]
    box.evaluate("b => { b.scrollLeft = b.scrollWidth; b.dispatchEvent(new Event('scroll')); }")
    page.wait_for_function("() => document.querySelector('#conventions .wide-wrap').classList.contains('at-end')")
    assert abs(first.bounding_box()["x"] - before) <= 1  # the entry column stays in place
    page.wait_for_function("() => getComputedStyle(document.querySelector('#conventions .wide-wrap'),"
                           " '::after').opacity === '0'")  # and the shade is gone at the end


LONG_IDS = ["clueweb12-0000tw-05-12114-passage-0003", "msmarco_v2.1_doc_29_677149#3_1466591",
            "d1", "a-very-long-document-identifier-that-never-ends-0000000000000000001"]


def test_long_document_ids_stay_on_one_line_beside_the_grade_badge(browser, tmp_path):
    qrels = Qrels.from_records([("q1", d, float(i % 3)) for i, d in enumerate(LONG_IDS)])
    run = Run.from_records([("q1", d, float(len(LONG_IDS) - i)) for i, d in enumerate(LONG_IDS)])
    entries = [e for e in all_entries() if e.name == "trec_eval"]
    result = run_entries(entries, [Subject("long-ids", qrels, run,
                                           parse_measures("nDCG@10"))])
    path = tmp_path / "long.html"
    report_html.write(result, path)
    with opened(browser, path) as pg:
        pg.select_option("#ex-query", label="long-ids / q1")
        rows = pg.evaluate("""() => [...document.querySelectorAll('#ex-list .ex-row')].map(r => {
            const doc = r.querySelector('.ex-doc').getBoundingClientRect();
            const badge = r.querySelector('.ex-grade').getBoundingClientRect();
            const line = parseFloat(getComputedStyle(r.querySelector('.ex-doc')).lineHeight);
            return {doc: r.dataset.doc, title: r.querySelector('.ex-doc').title,
                    height: doc.height, line: line, overlap: doc.right - badge.left}; })""")
        assert [r["doc"] for r in rows] == LONG_IDS
        for r in rows:
            assert r["height"] <= r["line"] + 1, r  # one line, not four
            assert r["overlap"] <= 0.5, r  # the id ends before the badge begins
            assert r["title"] == r["doc"]  # the whole id on hover

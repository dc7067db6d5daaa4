"""The HTML report as text: self-contained, deterministic, and its numbers.

The page is rendered from a real run (library entries called live over corpus cases). Expected
numbers come from the run's own result (counts, profiles, explanations), from the reference
implementation (conformance.reference.evaluate) and, for the position tables, from hand
computation. The page's behaviour in a browser is tests/report/test_browser.py.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from html.parser import HTMLParser

import pytest

from conformance.io.cases import load_cases
from conformance.cli import main
from conformance.conventions import AXES, TREC_EVAL10, Conventions, format_value
from conformance.io.data import Qrels, Run
from conformance.libs import all_entries
from conformance.measures import FAMILIES, Measure, parse_measure
from conformance.reference.prepare import Prepared
from conformance.report import html as report_html
from conformance.report.positions import position_table
from conformance.runner import Subject, run_entries

CASES = ["graded-ten", "relevant-at-k-and-k-plus-one", "rr-cutoff-first-relevant-at-7",
         "ties-two-groups", "query-empty-mixed", "one-document-list", "fewer-results-than-k",
         "depth-forty-docs-relevant-below-32"]
ENTRIES = ["trec_eval", "ir_measures", "sklearn", "sklearn:ignore_ties"]


def subjects(names=CASES):
    by_name = {c.name: c for c in load_cases()}
    return [Subject(n, by_name[n].qrels, by_name[n].run, by_name[n].measures,
                    by_name[n].description) for n in names]


@pytest.fixture(scope="module")
def result():
    entries = [e for e in all_entries() if e.name in ENTRIES]
    assert sorted(e.name for e in entries) == sorted(ENTRIES), "an entry of the test is missing"
    for e in entries:
        assert e.available(), f"{e.name} is not installed: the report tests need it"
    return run_entries(entries, subjects())


@pytest.fixture(scope="module")
def page(result):
    return report_html.render(result)


def report_data(text: str) -> dict:
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', text, re.S)
    assert m, "the page embeds no report data"
    return json.loads(m.group(1))


class Elements(HTMLParser):
    """Every start tag with its attributes, in page order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def parse(text: str) -> Elements:
    p = Elements()
    p.feed(text)
    return p


def with_attr(p: Elements, tag: str, **attrs) -> list[dict]:
    out = []
    for t, a in p.tags:
        if t == tag and all((a.get(k.replace("_", "-")) == v if v is not True else k.replace("_", "-") in a)
                            for k, v in attrs.items()):
            out.append(a)
    return out


# --------------------------------------------------------------------------------------------


def test_render_is_deterministic(result, page, tmp_path):
    assert report_html.render(result) == page
    a, b = tmp_path / "a.html", tmp_path / "b.html"
    report_html.write(result, a)
    report_html.write(result, b)
    assert a.read_bytes() == b.read_bytes() == page.encode("utf-8")


def test_page_is_self_contained(page):
    p = parse(page)
    for tag, a in p.tags:
        for attr in ("src", "href", "action", "poster", "data"):
            if attr in a:
                assert a[attr].startswith("#"), f"<{tag} {attr}={a[attr]!r}> leaves the page"
        assert tag not in ("link", "iframe", "img", "object", "embed"), f"<{tag}> in the page"
    assert [a for t, a in p.tags if t == "script" and "src" in a] == []
    assert "@import" not in page and "url(" not in page
    assert not re.search(r"https?://", page), "the page names a web address"
    csp = [a for t, a in p.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0]["content"]


def test_summary_shows_the_counts(result, page):
    s = result.summary
    assert s["disagreements"] > 0 and s["explained"] > 0  # the cases were chosen to part
    for key in ("comparisons", "disagreements", "explained", "unexplained"):
        m = re.search(rf'data-stat="{key}"><span class="n">(\d+)</span>', page)
        assert m and m.group(1) == str(s[key]), key


def test_entries_are_listed_with_versions(result, page):
    p = parse(page)
    rows = {a["data-entry"] for a in with_attr(p, "tr", data_entry=True)}
    for e in result.entries:
        assert e.name in rows
        assert result.versions[e.name] and f"<td>{result.versions[e.name]}</td>" in page


def test_convention_matrix_shows_each_default_profile(result, page):
    p = parse(page)
    cells = [a for a in with_attr(p, "td", data_axis=True) if "data-value" in a and "style" in a]
    profiles = {e.name: e.default_profile().to_dict() for e in result.entries}
    varying = [ax for ax in AXES if len({pr[ax] for pr in profiles.values()}) > 1]
    assert len(cells) == len(result.entries) * len(varying)
    i = 0
    colour_of: dict[tuple[str, str], str] = {}
    for e in result.entries:
        for ax in varying:
            c = cells[i]
            i += 1
            assert (c["data-axis"], c["data-value"]) == (ax, profiles[e.name][ax])
            colour = re.fullmatch(r"background:(#[0-9a-f]{6})", c["style"]).group(1)
            assert colour_of.setdefault((ax, c["data-value"]), colour) == colour
    # within an axis, different values have different colours
    for ax in varying:
        colours = [c for (a, _), c in colour_of.items() if a == ax]
        assert len(colours) == len(set(colours)), ax


def test_one_card_per_disagreement_unexplained_first(result, page):
    p = parse(page)
    cards = with_attr(p, "article")
    pairs = [c for c in cards if c["data-kind"] == "pair"]
    selfs = [c for c in cards if c["data-kind"] == "self"]
    assert len(pairs) == result.summary["disagreements"]
    unexplained = [c for c in cards if c["data-unexplained"] == "1"]
    assert len(unexplained) == result.summary["unexplained"]
    flags = [c["data-unexplained"] for c in cards]
    assert flags == sorted(flags, reverse=True), "an unexplained card comes after an explained one"
    assert all("unexplained" in c["class"] for c in unexplained)
    assert len(selfs) == sum(1 for c in result.comparisons for u in c.unexplained if "entry" in u)


def test_cards_name_the_explaining_axes_with_both_values(result, page):
    explained = [(c, e) for c in result.comparisons for e in c.explanations if e.axes]
    assert explained
    for c, e in explained:
        pattern = (rf'data-case="{re.escape(c.case)}" data-metric="{re.escape(c.metric)}" '
                   rf'data-axes="{re.escape(" ".join(e.axes))}"')
        assert re.search(pattern, page), (c.case, c.metric, e.between)
        for axis in e.axes:
            a, b = e.switched[axis]
            assert (f'<span class="va">{a}</span><span class="arrow">→</span>'
                    f'<span class="vb">{b}</span>') in page


def test_card_values_are_the_entries_values(result, page):
    p = parse(page)
    shown = {}
    for a in with_attr(p, "code", data_entry=True):
        if "ge" in a.get("class", ""):
            shown.setdefault(a["data-entry"], []).append(a["data-value"])
    for c in result.comparisons:
        if not c.explanations:
            continue
        for n, v in c.values.items():
            text = c.errors[n] if n in c.errors else ("NaN" if v is not None and math.isnan(v) else repr(float(v)))
            assert text in shown[n], (c.case, c.metric, n)


def test_position_tables_end_at_the_reference_value(result, page):
    """Every graded table's sums (DCG@k, or DCG@k / IDCG@k) equal the reference's per-query
    value under the table's profile, where the query is not 0/0: the tables the page embeds,
    and the table of every case, graded measure, entry and query of the run."""
    data = report_data(page)
    tables = data["tables"]
    assert tables
    assert not [t for t in tables if (t["error"] or "").startswith("the report could not")]
    embedded = 0
    for t in tables:
        if t["error"] or t["refused"]:
            continue
        if t["graded"] and t["counted"] and t["idcg"] and t["idcg"] > 0:
            assert t["ref"] is not None
            assert abs(t["value"] - t["ref"][0]) <= 1e-12, (t["entry"], t["measure"], t["query"])
            embedded += 1
    assert embedded >= 1
    checked = 0
    for s in result.subjects:
        prep = Prepared(s.qrels, s.run)
        queries = sorted(set(s.qrels.to_dict()) | set(s.run.to_dict()))
        for m in s.measures:
            if m.family not in ("DCG", "nDCG"):
                continue
            for e in result.entries:
                if not e.supports(m):
                    continue
                for q in queries:
                    t = position_table(prep, q, m, e.profile(m), e.name)
                    if t.error or t.refused or not t.counted or not t.idcg or t.idcg <= 0:
                        continue
                    assert abs(t.table_value - t.reference[0]) <= 1e-12, (s.name, m.text, e.name, q)
                    checked += 1
    assert checked >= 40


def _hand_subject():
    qrels = Qrels.from_dict({"q": {"a": 3, "b": 2, "c": 0, "d": 1}})
    run = Run.from_dict({"q": {"a": 4.0, "c": 3.0, "b": 2.0, "d": 1.0}})
    return Prepared(qrels, run)


def test_position_table_by_hand_linear_and_exponential():
    prep = _hand_subject()
    m = parse_measure("nDCG@3")
    lin = position_table(prep, "q", m, TREC_EVAL10, "linear")
    assert [r.doc for r in lin.rows] == ["a", "c", "b", "d"]
    assert [r.gain for r in lin.rows] == [3.0, 0.0, 2.0, 1.0]
    assert [r.discount for r in lin.rows[:3]] == [1.0, 1 / math.log2(3), 0.5]
    # running DCG: 3, 3, 3 + 2/2 = 4, then 4 + 1/log2(5) beyond the cutoff
    assert lin.rows[2].running == pytest.approx(4.0, abs=1e-15)
    assert lin.rows[3].running == pytest.approx(4.0 + 1 / math.log2(5), abs=1e-12)
    assert [r.inside for r in lin.rows] == [True, True, True, False]
    assert [r.doc for r in lin.ideal] == ["a", "b", "d", "c"]
    idcg = 3 + 2 / math.log2(3) + 0.5
    assert lin.idcg == pytest.approx(idcg, abs=1e-12)
    assert lin.table_value == pytest.approx(4.0 / idcg, abs=1e-12)
    assert lin.reference[0] == pytest.approx(4.0 / idcg, abs=1e-12)

    exp = position_table(prep, "q", m, TREC_EVAL10.replace(gain="exponential"), "exp")
    assert [r.gain for r in exp.rows] == [7.0, 0.0, 3.0, 1.0]
    assert exp.dcg == pytest.approx(7 + 3 / 2, abs=1e-12)
    assert exp.idcg == pytest.approx(7 + 3 / math.log2(3) + 0.5, abs=1e-12)


def test_binary_table_by_hand():
    prep = _hand_subject()  # relevant (label >= 1): a at 1, b at 3, d at 4; R = 3
    ap = position_table(prep, "q", parse_measure("AP"), TREC_EVAL10, "t")
    assert [r.rel for r in ap.rows] == [1.0, 0.0, 1.0, 1.0]
    assert [r.running for r in ap.rows] == [1.0, 0.5, 2 / 3, 0.75]
    assert [r.ap_term for r in ap.rows] == [1.0, 0.0, 2 / 3, 0.75]
    assert "/ R = 3" in ap.how
    p6 = position_table(prep, "q", parse_measure("P@6"), TREC_EVAL10, "t")
    assert "relevant documents over the top 4 rows = 3, / k = 6" in p6.how
    assert p6.table_value == 0.5
    p6n = position_table(prep, "q", parse_measure("P@6"),
                         TREC_EVAL10.replace(k_beyond_list="min_k_n"), "t")
    assert "relevant documents over the top 4 rows = 3, / min(k, n) = 4" in p6n.how
    assert p6n.table_value == 0.75
    rr = position_table(prep, "q", parse_measure("RR@1"), TREC_EVAL10.replace(rr_cutoff="honour"), "t")
    assert "1 / rank of the first relevant document over the top 1 rows = 1" in rr.how
    assert ap.table_value == pytest.approx((1 + 2 / 3 + 0.75) / 3, abs=1e-15)


def test_position_table_under_average_ties_matches_the_reference():
    qrels = Qrels.from_dict({"q": {"a": 2, "b": 0, "c": 1, "d": 0}})
    run = Run.from_dict({"q": {"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.5}})
    prep = Prepared(qrels, run)
    conv = TREC_EVAL10.replace(ties="average")
    for name in ("nDCG@2", "DCG@2", "AP", "P@2"):
        t = position_table(prep, "q", parse_measure(name), conv, "avg")
        assert [r.tie_group is not None for r in t.rows] == [True, True, True, False]
        if t.graded:
            # the tied group's mean gain (2 + 0 + 1) / 3 on each of its rows
            assert [r.gain for r in t.rows[:3]] == [1.0, 1.0, 1.0]
            assert t.table_value == pytest.approx(t.reference[0], abs=1e-12)
        if name == "AP":
            assert sum(r.ap_term for r in t.rows) / t.relevant == pytest.approx(t.reference[0], abs=1e-12)


def test_explorer_embeds_each_entry_profile(result, page):
    data = report_data(page)["explorer"]
    assert [e["entry"] for e in data["entries"]] == [e.name for e in result.entries]
    for e, d in zip(result.entries, data["entries"]):
        for mid, family, at in report_html.EXPLORER_MEASURES:
            m = Measure(family, 7 if at else None)
            if e.supports(m):
                want = m.conventions(e.profile(m))
                got = d["measures"][mid]
                # an axis the family does not read (the records; a cutoff-only axis without a
                # cutoff) stands at its default: it cannot change this measure's value
                read = {a for a in FAMILIES[family].axes if at or not AXES[a].with_cutoff_only}
                value = {a: getattr(want, a) if a in read else AXES[a].default
                         for a in report_html.EXPLORER_AXES}
                assert got == {a: (v if a == "relevance_threshold" else format_value(v))
                               for a, v in value.items()}, (e.name, mid)
            else:
                assert d["measures"][mid] is None
    assert data["default_list"] == [3, 2, 0, 2, 0, 3, 0, 1, 0, 1]


def test_explorer_profiles_do_not_depend_on_the_cutoff():
    """The explorer embeds one profile per measure (taken at k = 10) and applies it at every k
    from 1 to 14: true only while no entry's support or profile changes with the cutoff."""
    for e in all_entries():
        for _, family, at in report_html.EXPLORER_MEASURES:
            if not at:
                continue
            ref = Measure(family, report_html.REPRESENTATIVE_K)
            for k in range(1, 15):
                m = Measure(family, k)
                assert e.supports(m) == e.supports(ref), (e.name, family, k)
                if e.supports(m):
                    assert m.conventions(e.profile(m)) == ref.conventions(e.profile(ref)), (e.name, family, k)


def test_data_cannot_close_its_script_element():
    nasty = "x</script><script>alert(1)</script>"
    # d3 is judged and not retrieved: the judged and the retrieved ideal part
    qrels = Qrels.from_dict({"q</script>": {"d1": 1, "d2": 0, "d3": 2}})
    run = Run.from_dict({"q</script>": {"d1": 1.0, "d2": 2.0}})
    entries = [e for e in all_entries() if e.name in ("trec_eval", "sklearn")]
    res = run_entries(entries, [Subject(nasty, qrels, run, [parse_measure("nDCG@2")], nasty)])
    assert res.summary["disagreements"] >= 1  # the name reaches a card and the table data
    text = report_html.render(res)
    p = parse(text)
    assert len([t for t, _ in p.tags if t == "script"]) == 2
    assert nasty not in text
    assert report_data(text)["tables"][0]["query"] == "q</script>"


def test_result_without_subjects_renders_without_tables(result):
    bare = dataclasses.replace(result, subjects=[])
    text = report_html.render(bare)
    assert report_data(text)["tables"] == []
    assert "<details class=\"positions\"" not in text
    assert len(with_attr(parse(text), "article")) == len(with_attr(parse(report_html.render(result)), "article"))


def test_write_creates_the_directory(result, tmp_path):
    out = tmp_path / "deeper" / "report.html"
    report_html.write(result, out)
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_cli_run_writes_the_report(tmp_path):
    from click.testing import CliRunner

    case_dir = tmp_path / "cases"
    case_dir.mkdir()
    (case_dir / "mine.json").write_text(json.dumps({"family": "mine", "cases": [{
        "name": "rr-below-k", "description": "The first relevant document is at rank 3.",
        "tags": ["rr_cutoff"], "metrics": ["RR@2", "P@2"],
        "qrels": {"q1": {"a": 0, "b": 0, "c": 1}},
        "run": {"q1": [["a", 3.0], ["b", 2.0], ["c", 1.0]]}}]}), encoding="utf-8")
    out = tmp_path / "r.html"
    res = CliRunner(catch_exceptions=False).invoke(main, [
        "run", "--libs", "trec_eval,ir_measures", "--cases", str(case_dir), "--quiet",
        "--html", str(out)])
    assert res.exit_code in (0, 1), res.output
    text = out.read_text(encoding="utf-8")
    assert 'data-case="rr-below-k" data-metric="RR@2" data-axes="rr_cutoff"' in text
    assert report_data(text)["tables"], "the cards have no position tables"


def test_same_input_same_bytes_across_processes(tmp_path):
    """Two `conformance run --html` processes with different string hash seeds (so any set or
    hash order that reached the page would differ) write identical files."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    case_dir = tmp_path / "cases"
    case_dir.mkdir()
    (case_dir / "mine.json").write_text(json.dumps({"family": "mine", "cases": [
        {"name": "ties-and-grades", "description": "Tied scores over graded labels.",
         "tags": ["ties"], "metrics": ["nDCG@3", "P@2", "AP", "RR"],
         "qrels": {"q1": {"a": 2, "b": 0, "c": 1, "z": 3}, "q2": {"x": 1, "y": 0}},
         "run": {"q1": [["a", 1.0], ["b", 1.0], ["c", 1.0], ["d", 0.5]],
                 "q2": [["y", 2.0], ["x", 1.0]]}},
        {"name": "one-list", "description": "One document.", "tags": [], "metrics": ["nDCG@5"],
         "qrels": {"q": {"a": 1, "b": 2}}, "run": {"q": [["a", 1.0]]}}]}), encoding="utf-8")
    root = Path(__file__).resolve().parents[2]
    outs = []
    for seed in ("1", "2"):
        out = tmp_path / f"r{seed}.html"
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(root))
        proc = subprocess.run([sys.executable, "-m", "conformance.cli", "run", "--libs",
                               "trec_eval,sklearn", "--cases", str(case_dir), "--quiet",
                               "--html", str(out)], env=env, capture_output=True, text=True)
        assert proc.returncode in (0, 1), proc.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    assert b'data-case="ties-and-grades"' in outs[0]


def test_library_errors_do_not_make_pages_differ():
    """XGBoost's error for a fractional label carries the clock time and a native stack trace:
    two runs a second apart raise different texts, and their pages are still identical."""
    import time

    qrels = Qrels.from_dict({"q": {"a": 1.5, "b": 0, "c": 2}})
    run = Run.from_dict({"q": {"a": 3.0, "b": 2.0, "c": 1.0}})
    entries = [e for e in all_entries() if e.name in ("xgboost", "trec_eval")]
    assert len(entries) == 2 and all(e.available() for e in entries)
    xgb = next(e for e in entries if e.name == "xgboost")
    m = parse_measure("nDCG@3")
    subject = [Subject("fractional", qrels, run, [m], "")]
    raw1 = xgb.evaluate(qrels, run, [m])[m].error
    first = run_entries(entries, subject)
    time.sleep(1.2)
    raw2 = xgb.evaluate(qrels, run, [m])[m].error
    second = run_entries(entries, subject)
    assert raw1 != raw2 and "XGBoostError" in raw1  # the clock moved on
    e1 = first.comparisons[0].errors["xgboost"]
    assert report_html.render(first) == report_html.render(second)
    assert report_html.library_error(e1).startswith("XGBoostError: ")
    assert "[bt]" not in report_html.library_error(e1)


# A value off the default for each axis whose named and swept values hold none (open values only)
OPEN_SAMPLES = {"depth": 3, "err_max_grade": 5}


def off_default_values(axis: str) -> list:
    """Every named and swept value of ``axis`` off its default, stored, or its open sample."""
    a = AXES[axis]
    values = [a.parse(v) for v in a.values] + list(a.swept or ())
    values += [a.parse(OPEN_SAMPLES[axis])] if axis in OPEN_SAMPLES else []
    return list(dict.fromkeys(v for v in values if v != a.default))


def test_every_axis_the_explorer_does_not_offer_is_idle_there_or_said_not_computed():
    """An axis is offered (and computed by explorer.js), idle on the explorer's list for a
    stated reason (its record's ``explorer_idle``), or every value of it off its default makes
    the entry's value there "not computed": never silently ignored."""
    offered, idle = set(report_html.EXPLORER_AXES), set(report_html.EXPLORER_IDLE)
    assert not offered & idle
    assert all(report_html.EXPLORER_IDLE.values())  # each idle axis says why
    for axis in set(AXES) - offered - idle:
        values = off_default_values(axis)
        assert values, f"{axis}: neither offered, idle nor given a value off its default to test"
        for value in values:
            conv = Conventions().replace(**{axis: value})
            assert report_html.explorer_not_here(conv) == [f"{axis}={format_value(value)}"]
    # trec_eval 10's rbp_gain and iprec_rank are read by no family the explorer shows
    assert all(report_html.explorer_not_here(TREC_EVAL10, f) == []
               for _, f, _ in report_html.EXPLORER_MEASURES)
    # an axis the measure's family does not read cannot change its value there
    assert report_html.explorer_not_here(TREC_EVAL10.replace(rbp_gain="label"), "P") == []
    assert report_html.explorer_not_here(TREC_EVAL10.replace(mean="geometric"), "P") == ["mean=geometric"]
    # idle axes off their default compute as usual (BEIR's identical_ids=drop, ranx's ties)
    assert report_html.explorer_not_here(Conventions().replace(identical_ids="drop", ties="average")) == []


def test_a_value_the_explorer_does_not_compute_is_said_not_computed():
    """EXPLORER_COMPUTES states, for each axis the explorer offers, the values explorer.js
    computes (tests/report/test_explorer_browser.py holds each to the reference). A value it
    does not state, as one added to the axis later is, makes the entry's value "not computed"
    for the measures that read the axis: no edit in report/, never a wrong number."""
    computes = report_html.EXPLORER_COMPUTES
    assert set(computes) == set(report_html.EXPLORER_AXES)
    for axis, (named, _) in computes.items():
        for text in named:  # a value stated is a value of the axis, in its public text
            assert format_value(AXES[axis].parse(text)) == text, (axis, text)

    def without(axis: str, value: str) -> dict:
        named, pattern = computes[axis]
        return {**computes, axis: (tuple(v for v in named if v != value), pattern)}

    # as if ideal=k_slots were new: nDCG@k reads the ideal, so it is not computed
    k_slots = Conventions(ideal="k_slots")
    assert report_html.explorer_not_here(k_slots, "nDCG", True) == []
    assert report_html.explorer_not_here(k_slots, "nDCG", True, without("ideal", "k_slots")) == ["ideal=k_slots"]
    page_profile = report_html.explorer_measure_profile(k_slots, "nDCG", True, without("ideal", "k_slots"))
    assert page_profile["not_here"] == ["ideal=k_slots"] and page_profile["ideal"] == "k_slots"
    assert "not_here" not in report_html.explorer_measure_profile(k_slots, "nDCG", True)
    # as if rr_cutoff=ignore were new: RR@k reads it, RR without a cutoff does not
    ignore = Conventions(rr_cutoff="ignore")
    assert report_html.explorer_not_here(ignore, "RR", True, without("rr_cutoff", "ignore")) == ["rr_cutoff=ignore"]
    assert report_html.explorer_not_here(ignore, "RR", False, without("rr_cutoff", "ignore")) == []
    # an axis newly offered with no values stated: not even its default is computed
    unstated = {a: v for a, v in computes.items() if a != "single_document"}
    assert report_html.explorer_not_here(Conventions(), "P", True, unstated) == ["single_document=score"]
    # parameterised values: the forms the script parses, in the public text the axes make
    for axis, text in [("gain", "0:0,1:1,2:3"), ("gain", "1:0.5,3:2"), ("gain", "-1:-2.5,2:0.00001"),
                       ("discount", "jarvelin:3"), ("discount", "log:10"), ("discount", "log:2.5"),
                       ("relevance_threshold", "-2147483648"), ("relevance_threshold", "2"),
                       ("rounding", "5"), ("rounding", "none")]:
        assert report_html.explorer_computes(axis, AXES[axis].parse(text)), (axis, text)
    assert format_value(AXES["gain"].parse("-1:-2.5,2:0.00001")) == "-1:-2.5,2:1e-05"
    # and texts the script would not parse, were an axis to accept them
    for axis, text in [("gain", "sigmoid"), ("gain", "1:x"), ("discount", "zipf:2"),
                       ("discount", "log"), ("rounding", "-1"), ("relevance_threshold", "1.5")]:
        assert not report_html.explorer_computes(axis, text), (axis, text)


def test_picker_lists_a_query_as_the_explorer_holds_it():
    """One query: scores tie (docid descending breaks them), a document named like the query,
    a negative and a fractional label, a relevant document below the cut and one never
    retrieved. Expected lists written out by hand."""
    from conformance.report.picker import picker_queries

    qrels = Qrels.from_records([("q", "a", 2.0), ("q", "b", -1.0), ("q", "c", 1.5), ("q", "q", 3.0),
                                ("q", "e", 1.0), ("q", "z", 2.0), ("only_judged", "a", 1.0)])
    run = Run.from_records([("q", "a", 1.0), ("q", "b", 3.0), ("q", "c", 3.0), ("q", "q", 5.0),
                            ("q", "d", 0.5), ("q", "e", 0.1), ("only_ranked", "a", 1.0)])
    subject = Subject("mine", qrels, run, [Measure("nDCG", 10)])
    [q] = picker_queries([subject], max_docs=3)
    # ranked without "q": c and b tie at 3.0 (docid descending: c first), then a (1.0), d, e
    assert q["docs"] == [["c", 1, None], ["b", 0, None], ["a", 2, None],
                         ["e", 1, 6],     # relevant, at run rank 6 below the cut of 3
                         ["z", 2, None]]  # relevant, never retrieved
    assert (q["retrieved"], q["cut"], q["appended"]) == (5, True, 2)
    assert q["changed"] == 2  # b's -1 read as 0, c's 1.5 truncated to 1
    assert q["named_like_query"] == 1
    assert [x["qid"] for x in picker_queries([subject])] == ["q"]  # judged and ranked only


def test_every_agreement_class_shown_has_a_colour_of_its_own_or_none():
    """Issue 25.3: on a case where every installed entry splits nDCG@100 into ten classes, no
    two classes of the column share a colour (the ninth used to take trec_eval's blue), and a
    class past the palette has no colour, only its letter, which the legend says."""
    by_name = {c.name: c for c in load_cases()}
    case = by_name["deep-three-queries-1000-docs"]
    m = parse_measure("nDCG@100")
    result = run_entries([e for e in all_entries() if e.available()],
                         [Subject(case.name, case.qrels, case.run, [m])])
    [c] = result.comparisons
    assert len(c.classes) > 8, "more classes than the old palette of eight"
    page = report_html.render(result)
    cells = re.findall(r'<td class="vcell([^"]*)" data-metric="nDCG@100" data-class="([^"]+)"', page)
    colour_of: dict[str, set] = {}
    for classes, letter in cells:
        colour = [k for k in classes.split() if re.fullmatch(r"c\d+|cx", k)]
        colour_of.setdefault(letter, set()).update(colour)
    assert len(colour_of) == len(c.classes)
    for letter, colours in colour_of.items():
        assert len(colours) == 1, (letter, colours)
    coloured = [next(iter(v)) for v in colour_of.values() if v != {"cx"}]
    assert len(coloured) == len(set(coloured))  # distinct
    if len(c.classes) > report_html.CLASS_COLOURS:
        assert "no colour, only their letter" in page
    css = page[page.index("<style"):page.index("</style>")]
    for k in coloured:
        assert re.search(rf"\.{k} {{ background: #[0-9a-f]{{6}}; }}", css), k

"""The facts behind each profile value, as ``conformance libs --profile NAME`` prints them.

The guard: every value an entry sets, on an axis a family it computes reads, away from the
vocabulary's default, has its fact stated beside it in the adapter (``conformance.facts`` finds
it). Then what the command prints, for a value set by a keyword, one set by a comment, one set
in code, a command-line profile, and the errors.
"""

from __future__ import annotations

import json
import textwrap

import pytest
from click.testing import CliRunner

from conformance.cli import main
from conformance.facts import _statements, facts
from conformance.profiles import computed, names


def _unstated(name: str) -> list[str]:
    out = []
    for m in computed(name):
        for r in facts(name, m):
            if r.read and not r.default and r.fact is None:
                out.append(f"{m.text}: {r.axis}={r.value}")
    return out


@pytest.mark.parametrize("name", names())
def test_every_value_an_entry_sets_has_its_fact_stated(name):
    assert computed(name), f"{name} computes no family"
    assert _unstated(name) == [], (
        f"{name} sets these axes without a fact beside them in its adapter (write it as a "
        f"comment on the line that sets the value, or '# axis=value: fact')")


def test_a_value_set_without_a_comment_is_found_unstated(tmp_path):
    """The guard can fail: a keyword with no comment is no statement; one with a comment is."""
    src = tmp_path / "adapter.py"
    src.write_text(textwrap.dedent('''\
        P = Conventions(
            ideal="retrieved",
            ties="average",  # the library averages tied gains
        )
        # gain=exponential: 2 ** label - 1 in the library's dcg
    '''))
    found = {(s.axis, s.value): s.text for s in _statements(str(src), "adapter")}
    assert ("ideal", "retrieved") not in found
    assert found[("ties", "average")] == "the library averages tied gains"
    assert found[("gain", "exponential")] == "2 ** label - 1 in the library's dcg"


def test_facts_point_at_the_adapter_line():
    rows = {r.axis: r for r in facts("sklearn", "nDCG@10")}
    assert rows["ideal"].value == "retrieved" and not rows["ideal"].default
    assert "_ndcg_sample_scores" in rows["ideal"].fact
    assert rows["ideal"].where.startswith("conformance.libs.sklearn:")
    # a value computed in code (empty_target_action -> empty_query) rests on the comment above it
    pos = {r.axis: r for r in facts("torchmetrics:pos", "AP")}
    assert pos["empty_query"].value == "one" and "tensor(1.0)" in pos["empty_query"].fact
    # a profile built on another (beir on conventions.TREC_EVAL) finds the facts there
    beir = {r.axis: r for r in facts("beir", "nDCG@10")}
    assert beir["score_precision"].value == "float32"
    assert beir["score_precision"].fact is not None


def test_a_command_line_profile_points_at_its_description():
    rows = {r.axis: r for r in facts("trec_eval10", "P@10")}
    entry = {r.axis: r for r in facts("trec_eval", "P@10")}
    assert rows["score_precision"].value == "float64" != entry["score_precision"].value
    assert "doubles" in rows["score_precision"].fact
    assert rows["ties"].fact == entry["ties"].fact  # the same value rests on the entry's fact


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_libs_profile_prints_each_value_with_its_fact():
    r = invoke("libs", "--profile", "trec_eval", "-m", "RR")
    assert r.exit_code == 0, r.output
    assert "profile of trec_eval for RR" in r.output
    assert "recip_rank.k accepted and ignored" in r.output  # rr_cutoff=ignore
    # quoted code survives: rich would read run[query_id] as markup
    assert "run[query_id]" in r.output.replace("\n", "").replace("│", "").replace(" ", "") \
        or "run[query_id]" in r.output
    assert "axes RR does not read" in r.output and "gain" in r.output.split("does not read")[1]
    assert "trec_eval also computes:" in r.output


def test_libs_profile_json():
    r = invoke("libs", "--profile", "lightgbm", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["profile"] == "lightgbm" and doc["measure"] == "nDCG@10"
    gain = next(a for a in doc["axes"] if a["axis"] == "gain")
    assert gain["value"] == "exponential" and gain["default"] is False and gain["fact"]
    assert gain["where"].startswith("conformance.libs.lightgbm:")


@pytest.mark.parametrize("args, fragment", [
    (("libs", "--profile", "nope"), "unknown profile 'nope': expected one of trec_eval"),
    (("libs", "-m", "AP"), "-m/--measure goes with --profile"),
    (("libs", "--profile", "ranx", "-m", "bogus@"), "-m/--measure bogus@"),
])
def test_libs_profile_errors(args, fragment):
    r = CliRunner().invoke(main, list(args))
    assert r.exit_code == 2
    assert fragment in r.output
    assert "Traceback" not in r.output

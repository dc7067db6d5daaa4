"""The vocabulary's records and every table derived from them stay in step.

Each axis is one record (``conventions.AXES``) and each measure family one record
(``measures.FAMILIES``); these guards fail when something that should be derived from them is
written out again, or when a record is incomplete.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from conformance.conventions import AXES, EXPLORER_AXES, GROUPS, Conventions, readme_table
from conformance.errors import EvaluationError
from conformance.io.data import Qrels, Run
from conformance.measures import FAMILIES, SYNTAXES, Measure, families_reading, parse_measure
from conformance.reference.evaluate import evaluate
from conformance.reference.formulas import CURVES, FORMULAS

ROOT = Path(__file__).resolve().parents[2]


def test_readme_axis_table_is_made_from_the_records():
    assert readme_table() in (ROOT / "README.md").read_text(encoding="utf-8"), (
        "README.md's axis table differs from conventions.readme_table(): paste its output")


def test_conventions_fields_are_the_axes_with_their_defaults():
    fields = dataclasses.fields(Conventions)
    assert [f.name for f in fields] == list(AXES)
    default = Conventions()
    for name, axis in AXES.items():
        assert getattr(default, name) == axis.default
        assert axis.parse(axis.default) == axis.default  # the default is a value of the axis


def test_replace_reads_a_value_as_the_constructor_does():
    # replace parses only the changed axes: it must equal a set built whole, for every named
    # value of every axis, from the default and from a set whose every axis is changed
    changed = Conventions(gain="exponential", ties="input_order", depth="100", relevance_threshold="2")
    for base in (Conventions(), changed):
        for name, axis in AXES.items():
            for text in axis.values:
                whole = Conventions(**{**{a: getattr(base, a) for a in AXES}, name: text})
                got = base.replace(**{name: text})
                assert got == whole and hash(got) == hash(whole), (name, text)
                assert getattr(got, name) == axis.parse(text) and type(got) is Conventions
    assert changed.replace() == changed and changed.replace() is not changed


def test_axis_records_are_complete():
    for axis in AXES.values():
        assert axis.group in GROUPS, axis.name
        assert axis.meaning and (axis.values or axis.parse_open), axis.name
        for value in axis.swept or ():
            assert axis.parse(value) == value, (axis.name, value)
            assert value in axis.phrases, (axis.name, value)  # a verdict can name it
        # an axis the explorer offers is read by some family the explorer shows; one it does
        # not offer may say why it is idle there, one it offers cannot be
        if axis.explorer:
            assert families_reading(axis.name), axis.name
            assert not axis.explorer_idle, axis.name
    assert EXPLORER_AXES == tuple(a for a in AXES if AXES[a].explorer)


def test_family_records_are_complete():
    assert set(FORMULAS) == set(FAMILIES), "every family has its formula in reference.formulas"
    for f in FAMILIES.values():
        assert f.kind in ("graded", "binary", "count"), f.name
        assert f.cutoff in ("none", "optional", "required"), f.name
        assert f.aggregate in ("mean", "sum", "curve") and f.reach in ("cutoff", "twice_cutoff", "whole")
        assert f.ends in ("label", "gain", "judged", "none"), f.name
        assert (f.aggregate == "curve") == (f.name in CURVES), f.name
        assert f.at is None or f.parameter(f.at) is not None, f.name
        assert set(f.groups) <= set(GROUPS) and "named" not in f.groups, f.name
        assert all(AXES[a].group == "named" for a in f.axes_named), f.name
        assert f.formula and f.meaning
        for n in f.names:
            assert n.syntax in SYNTAXES, (f.name, n.text)


def test_row_data_flags_are_the_families_that_read_it():
    # The sets the reference kept beside the formulas before they became record fields,
    # written out: a family gains or loses a flag here on purpose, never by accident.
    reads_labels = {"NumNonRelJudgedRet", "Bpref", "infAP", "Judged", "Unjudged", "ERR", "RBP",
                    "RBPResid", "FallOut", "AUROC", "binG", "SDCG", "INSQ", "NERR8", "NERR9",
                    "NERR10", "NERR11", "INST", "BPM"}
    assert {f.name for f in FAMILIES.values() if f.reads_labels} == reads_labels
    assert {f.name for f in FAMILIES.values() if f.reads_pool} == {"infAP"}
    assert ({f.name for f in FAMILIES.values() if f.gains_read_threshold}
            == {"nDCG", "DCG", "G", "nDCGRel"})
    # a family reading the threshold only through its gains is graded
    assert all(f.kind == "graded" for f in FAMILIES.values() if f.gains_read_threshold)


def _measure_of(f) -> Measure:
    """``f``'s measure at cutoff 2 where it takes one, each parameter without a default at its
    example value."""
    given = [f"{p.name}={p.example}" for p in f.parameters if p.default is None]
    return parse_measure(f.name + (f"({','.join(given)})" if given else "")
                         + ("@2" if f.takes_cutoff else ""))


def _values(measures: list[Measure], m: Measure, conv: Conventions, qrels: Qrels, run: Run):
    """``m``'s lower and upper values (NaN written as text, so that equal values compare
    equal) evaluated with ``measures``, or the refusal's text."""
    try:
        r = evaluate(qrels, run, measures, conv)
    except EvaluationError as exc:
        return str(exc)
    return [["nan" if v != v else v for v in a.tolist()] for a in (r.per_query[m], r.upper[m])]


def test_a_familys_values_do_not_depend_on_the_row_data_others_read():
    """A family whose formula reads labels or the pool without its record's flag finds none
    when evaluated alone: its values (or its refusal) alone must be those it has beside a
    family that makes the reference keep the labels and one that makes it keep the pool."""
    qrels = Qrels.from_dict({"q1": {"a": 2, "b": 0, "c": 1, "d": -1, "e": 3, "f": 0},
                             "q2": {"a": 1, "x": -2, "y": 0}})
    # unjudged documents (u, v), negatively judged ones (d, x), tie groups: one of equal labels
    # (b, f) that depth=2 cuts, which AUROC and binG compute only from the labels
    run = Run.from_dict({"q1": {"a": 3.0, "b": 2.0, "f": 2.0, "u": 1.5, "d": 1.5, "c": 1.0,
                                "e": 0.5},
                         "q2": {"y": 1.0, "a": 0.9, "x": 0.5, "v": 0.5}})
    conventions = [Conventions(), Conventions(ties="average", depth=2),
                   Conventions(ties="average", negative_labels="keep", threshold_scope="graded",
                               relevance_threshold=2)]
    for conv in conventions:
        # the company: the first flagged family of each kind that computes on this case
        # (infAP, the one that reads the pool, refuses the tie groups of ties=average)
        company = []
        for flag in ("reads_labels", "reads_pool"):
            flagged = [_measure_of(f) for f in FAMILIES.values() if getattr(f, flag)]
            computing = [c for c in flagged if not isinstance(_values([c], c, conv, qrels, run), str)]
            assert computing or (flag == "reads_pool" and conv.ties == "average"), (flag, conv)
            company += computing[:1]
        for f in FAMILIES.values():
            m = _measure_of(f)
            alone = _values([m], m, conv, qrels, run)
            beside = _values([m] + [c for c in company if c != m], m, conv, qrels, run)
            assert alone == beside, (f.name, conv)


def test_every_readable_spelling_reads_back_to_its_family():
    for f in FAMILIES.values():
        k = 5 if f.takes_cutoff else None
        # every parameter without a default, given a value it accepts
        given = [f"{p.name}={p.example}" for p in f.parameters if p.default is None and p.name != f.at]
        alpha = f"({','.join(given)})" if given else ""
        for n in f.names:
            if not n.read:
                continue
            if n.syntax == "trec_eval":
                text = f"{n.text}_{k}" if n.cut else (f"{n.text}_0.5" if n.each else n.text)
                if not n.cut and n.rule(f) == "required":
                    continue
            elif k is not None and n.rule(f) != "none":
                text = f"{n.text}{alpha}@{k}" if n.syntax == "ir_measures" else f"{n.text}@{k}"
            elif f.at is not None and n.syntax == "ir_measures":
                text = f"{n.text}@0.5"
            elif n.each:
                text = f"{n.text}_0.5"
            elif n.ranx_dot:
                text = f"{n.text}.5"
            else:
                text = n.text + (alpha if n.syntax == "ir_measures" else "")
            m = parse_measure(text)
            assert m.family == f.name, (text, m)
            assert dict(n.fixed).items() <= dict(m.overrides).items(), text


def test_binary_and_graded_families_read_the_axes_their_kind_implies():
    assert set(families_reading("gain")) <= {f for f in FAMILIES if FAMILIES[f].kind == "graded"}
    assert {"nDCG", "DCG", "G", "nDCGRel", "RnDCG"} <= set(families_reading("gain"))
    assert "nonpositive_scores" not in Measure("nDCG", 10).record.axes
    assert "k_beyond_list" in Measure("P", 10).record.axes
    assert "ap_denominator" in Measure("AP").record.axes and "ap_denominator" not in Measure("RR").record.axes

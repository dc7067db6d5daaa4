"""The vocabulary's records and every table derived from them stay in step.

Each axis is one record (``conventions.AXES``) and each measure family one record
(``measures.FAMILIES``); these guards fail when something that should be derived from them is
written out again, or when a record is incomplete.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from conformance.conventions import AXES, EXPLORER_AXES, GROUPS, Conventions, readme_table
from conformance.measures import FAMILIES, SYNTAXES, Measure, families_reading, parse_measure
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

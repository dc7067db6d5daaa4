"""The reference's one sort of a run (``ranking.sort_order``) against ``np.lexsort`` on the same
keys: rows by query, then primary key, then the tie keys, equal rows in input order.

``sort_order`` packs (query, primary) into one integer and sorts only the tied rows by their tie
keys, and those within their groups by one packed stable sort (``_sort_within_groups``). The
oracle is numpy's lexsort of every key at once, which is neither.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.reference.ranking import _sort_within_groups, sort_order

# few distinct values, so that ties on every key are common; -0.0 beside 0.0, and NaN
floats = st.sampled_from([0.0, -0.0, 1.0, -1.5, 2.25, 1e300, -np.inf, np.inf, float("nan")])
small = st.integers(0, 3)
words = st.sampled_from([0, 1, 2**63, 2**64 - 1, 12345])


@st.composite
def keyed_rows(draw):
    n = draw(st.integers(0, 60))
    kinds = draw(st.lists(st.sampled_from(["int", "float", "word"]), min_size=1, max_size=4))
    keys = []
    for kind in kinds:
        if kind == "int":
            keys.append(np.array(draw(st.lists(small, min_size=n, max_size=n)), np.int64))
        elif kind == "float":
            keys.append(np.array(draw(st.lists(floats, min_size=n, max_size=n)), np.float64))
        else:
            keys.append(np.array(draw(st.lists(words, min_size=n, max_size=n)), np.uint64))
    return n, keys


@settings(max_examples=300, deadline=None)
@given(case=keyed_rows(), groups=st.lists(st.integers(1, 5), min_size=1, max_size=30))
def test_sort_within_groups_is_lexsort(case, groups):
    n, keys = case
    sizes = np.array(groups, np.int64)
    group = np.repeat(np.arange(sizes.size) * 7, sizes)[:n]  # non-decreasing, not dense
    if group.size < n:
        group = np.concatenate([group, np.full(n - group.size, group[-1] if group.size else 0)])
    assert _sort_within_groups(keys, group).tolist() == np.lexsort(keys + [group]).tolist()


@settings(max_examples=300, deadline=None)
@given(case=keyed_rows(), data=st.data())
def test_sort_order_is_lexsort(case, data):
    n, keys = case
    q = np.array(data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), np.int64)
    primary = np.array(data.draw(st.lists(st.sampled_from([0.5, 0.25, -1.0, 3.0, 1e-9, 1e-9 + 1e-18]),
                                          min_size=n, max_size=n)), np.float64)
    ties = [lambda rows, k=k: k if rows is None else k[rows] for k in keys if k.dtype != np.float64
            or not np.isnan(k).any()]  # a NaN tie key is not a reference input (labels are filled)
    expected = np.lexsort([t(None) for t in ties] + [primary, q])
    assert sort_order(q, primary, ties, 5).tolist() == expected.tolist()


def test_sort_within_groups_on_many_tied_docids():
    """The shape of a large run: ~2 rows a group, docid words that tie on the first word."""
    rng = np.random.default_rng(7)
    n = 50_000
    group = np.sort(rng.integers(0, n // 2, n))
    first = rng.integers(0, 50, n).astype(np.uint64)  # shared prefixes: ties on the top key
    second = rng.integers(0, 2**63, n).astype(np.uint64)
    lens = rng.integers(1, 17, n)
    keys = [lens, second, first]
    assert np.array_equal(_sort_within_groups(keys, group), np.lexsort(keys + [group]))


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_rule_sorts_alike_under_every_convention_of_equal_readings(data):
    """``tie_keys_read`` is what lets the sweep sort once for many combinations
    (``rank(..., sorted_as=tie_order(...))``): a permutation made under one convention set is
    the one ``rank`` makes itself under any other whose reading is equal, on the same rows with
    the same labels (a rule of ``LABEL_FREE_RULES``: under two unrelated label arrays too),
    field for field of the Ranked, under any threshold, threshold scope, gain and depth."""
    from conformance.conventions import AXES, Conventions
    from conformance.reference.ranking import GAIN_RULES, rank, tie_keys_read, tie_order

    n = data.draw(st.integers(1, 40))
    q = np.sort(np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), np.int64))
    primary = np.array(data.draw(st.lists(st.sampled_from([0.5, 0.25, -1.0, 3.0]), min_size=n,
                                          max_size=n)), np.float64)
    doc = np.array(data.draw(st.lists(st.integers(0, 9), min_size=n, max_size=n)), np.int64)
    order_in_run = np.arange(n, dtype=np.int64)
    # every rule rank orders by: the vocabulary's (unspecified is a range of two of these) and
    # the ones only the reference asks for
    rule = data.draw(st.sampled_from([v for v in AXES["ties"].values if v != "unspecified"]
                                     + ["unjudged_first", "judged_first", *GAIN_RULES]))

    def draw_labels():
        return np.array(data.draw(st.lists(st.sampled_from([0.0, 1.0, 2.0, 0.5, -1.0, float("nan")]),
                                           min_size=n, max_size=n)), np.float64)

    def draw_conv():
        return Conventions(relevance_threshold=data.draw(st.sampled_from([0, 1, 2])),
                           threshold_scope=data.draw(st.sampled_from(["binary", "graded"])),
                           gain=data.draw(st.sampled_from(["linear", "exponential", "binary"])),
                           depth=data.draw(st.sampled_from([None, 2, 5])))

    labels, first = draw_labels(), draw_conv()
    perm = tie_order(q, primary, doc, order_in_run, 4, rule, labels, first)
    for _ in range(2):
        conv = draw_conv()
        if tie_keys_read(rule, conv) != tie_keys_read(rule, first):
            continue
        if tie_keys_read(rule, conv) is None:
            labels = draw_labels()
        own = rank(q, primary, doc, order_in_run, labels, 4, conv, rule, keep_labels=True)
        handed = rank(q, primary, doc, order_in_run, labels, 4, conv, rule, keep_labels=True,
                      sorted_as=perm)
        for name in own.__dataclass_fields__:
            a, b = getattr(own, name), getattr(handed, name)
            if isinstance(a, np.ndarray):
                assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), (rule, name)
            else:
                assert a == b, (rule, name)


def test_the_kept_sums_of_a_ranking_are_its_fields_own_and_each_call_gets_a_copy():
    """``Ranked.upto`` keeps the sums of the Ranked's own fields: a later call gives the same
    sums even when the caller wrote over what an earlier call returned, and an array that is
    not one of its fields (equal or not), or a field given a new array, is summed afresh; the
    fields whose sums it keeps cannot be written in place."""
    from conformance.conventions import Conventions
    from conformance.reference.ranking import rank
    from conformance.reference.segments import range_sums

    rng = np.random.default_rng(3)
    q = np.sort(rng.integers(0, 5, 60))
    r = rank(q, -rng.random(60), rng.integers(0, 40, 60), np.arange(60), rng.choice([0.0, 1.0, 2.0], 60),
             5, Conventions(), "docid_desc")
    for k in (None, 3):
        first = r.upto(r.ap_term, k)
        expected = range_sums(r.ap_term, r.start, r.cut(k))
        np.testing.assert_array_equal(first, expected)
        first[:] = -7.0
        np.testing.assert_array_equal(r.upto(r.ap_term, k), expected)
        other = r.ap_term * 2.0
        np.testing.assert_array_equal(r.upto(other, k), range_sums(other, r.start, r.cut(k)))
    for name in ("rel", "ap_term", "e_rel", "e_gain", "gain", "p_first"):  # what upto keeps sums of
        with pytest.raises(ValueError, match="read-only"):
            getattr(r, name)[0] = 5.0
    r.ap_term = r.ap_term * 3.0  # a new array for a field whose sums are kept: summed afresh
    np.testing.assert_array_equal(r.upto(r.ap_term, 3), range_sums(r.ap_term, r.start, r.cut(3)))


def test_a_rankings_kept_cuts_and_discounts_follow_its_rows_and_each_call_gets_a_copy():
    """``Ranked.cut``, ``upto`` of an array not its own and ``discounts`` keep what they
    compute per k and per discount: each equals the plain computation, a caller writing over a
    returned cut does not change the next, the discounts cannot be written, and rows given new
    places (a new ``pos``) are computed afresh; ``start``, ``n`` and ``pos`` cannot be written in
    place."""
    from conformance.conventions import Conventions
    from conformance.reference.ranking import rank
    from conformance.reference.segments import range_sums

    rng = np.random.default_rng(5)
    q = np.sort(rng.integers(0, 6, 80))
    r = rank(q, -rng.random(80), rng.integers(0, 50, 80), np.arange(80), rng.choice([0.0, 1.0, 2.0], 80),
             6, Conventions(), "docid_desc")
    x = rng.random(80)
    for k in (1, 3, 50):
        want = np.minimum(np.bincount(q, minlength=6), k)  # every row its own rank
        got = r.cut(k)
        np.testing.assert_array_equal(got, want)
        got[:] = -1
        np.testing.assert_array_equal(r.cut(k), want)
        np.testing.assert_array_equal(r.upto(x, k), range_sums(x, r.start, want))
    for disc, plain in (("log2", lambda p: 1.0 / np.log2(p + 1.0)), ("reciprocal", lambda p: 1.0 / p)):
        conv = Conventions().replace(discount=disc)
        np.testing.assert_array_equal(r.discounts(conv), plain(r.pos.astype(np.float64)))
        with pytest.raises(ValueError, match="read-only"):
            r.discounts(conv)[0] = 5.0
    for name in ("start", "n", "pos"):
        with pytest.raises(ValueError, match="read-only"):
            getattr(r, name)[0] = 5
    r.pos = r.pos * 2  # new places: discounts computed afresh
    np.testing.assert_array_equal(r.discounts(Conventions()), 1.0 / np.log2(r.pos.astype(np.float64) + 1.0))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([None, 1, 2, 4]),
       st.sampled_from(["docid_desc", "input_order", "average", "group_last", "group_first"]))
def test_a_rows_tie_group_size_is_the_rows_of_its_query_scored_alike(seed, depth, rule):
    """``Ranked.group_size``: per ranked row, the number of rows of its query with its score
    (rows a depth cut leaves out included), under ``ties=average`` and under the rules whose
    groups share one rank; under a rule that orders every tie each row is its own group."""
    from conformance.conventions import Conventions
    from conformance.reference.ranking import rank

    rng = np.random.default_rng(seed)
    rows = int(rng.integers(1, 30))
    q = np.sort(rng.integers(0, 4, rows))
    score = rng.integers(0, 4, rows).astype(np.float64)  # few values: many ties
    labels = rng.choice([np.nan, 0.0, 1.0, 2.0], rows)
    r = rank(q, -score, rng.permutation(rows), np.arange(rows), labels, 4, Conventions().replace(depth=depth),
             rule, keep_order=True)
    alike = np.array([int(((q == q[i]) & (score == score[i])).sum()) for i in r.order])
    want = alike if rule in ("average", "group_last", "group_first") else np.ones(r.order.size, np.int64)
    np.testing.assert_array_equal(r.group_size(), want.astype(np.float64))

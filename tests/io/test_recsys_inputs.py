"""Recommender inputs at the boundary: a top k held as one row per user with an array column
(conformance.io.listed), the items a user saw in training removed from the run
(conformance.io.seen), and a ratings table's relevance threshold. Expected values are worked
out by hand in the comments."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

import conformance
from conformance.errors import InputError
from conformance.io import load_qrels, load_run
from conformance.io.data import Qrels, Run
from conformance.io.seen import SEEN, exclude_seen, read_seen

EXAMPLES = Path(conformance.__file__).parent / "examples"
TRAIN, TEST = EXAMPLES / "recsys_train.csv", EXAMPLES / "recsys_test.csv"
RECS, TOP_K = EXAMPLES / "recsys_recommendations.csv", EXAMPLES / "recsys_top_k.parquet"


def ranked(run: Run) -> dict[str, list[str]]:
    """user -> items, best first (by score: a list's rank 1 is score -1)."""
    out: dict[str, list[tuple[float, str]]] = {}
    for q, d, s in zip(run.query_ids(), run.doc_ids(), run.score.tolist()):
        out.setdefault(q, []).append((-s, d))
    return {q: [d for _, d in sorted(v)] for q, v in out.items()}


# --- array columns: the list's order is the ranking ---------------------------------------


def test_a_pandas_column_of_lists_and_arrays_is_each_users_ranking():
    df = pd.DataFrame({"user_id": [7, 8], "prediction": [[30, 10, 20], np.array([5, 6])]})
    run = Run.from_frame(df)
    assert ranked(run) == {"7": ["30", "10", "20"], "8": ["5", "6"]}
    assert run.rank.tolist() == [1, 2, 3, 1, 2]  # positions in each list
    assert run.line.tolist() == [1, 1, 1, 2, 2]  # errors name the frame's row
    assert run.counts.ranked_lists == "prediction" and run.counts.score_from_rank is None


def test_an_empty_list_is_a_user_counted_not_dropped():
    run = Run.from_frame(pd.DataFrame({"user": ["a", "b"], "items": [["x"], []]}))
    assert ranked(run) == {"a": ["x"]}
    c = run.counts
    assert (c.read, c.used, c.ignored, c.reasons) == (2, 1, 1, {"query with no documents": 1})


def test_spark_shapes_arrays_of_doubles_and_als_structs():
    # RankingEvaluator: prediction and label are array<double>; 12.0 is the item "12"
    t = pa.table({"user_id": [1], "prediction": pa.array([[12.0, 3.0]]), "label": pa.array([[3.0]])})
    assert ranked(Run.from_frame(t)) == {"1": ["12", "3"]}
    assert Qrels.from_frame(t).to_dict() == {"1": {"3": 1.0}}  # every listed item relevant
    # ALS recommendForAllUsers: array<struct<itemId, rating>>, listed by rating descending
    als = pa.table({"userId": [4], "recommendations": [[{"itemId": 9, "rating": 4.5},
                                                         {"itemId": 2, "rating": 4.0}]]})
    assert ranked(Run.from_frame(als)) == {"4": ["9", "2"]}


@pytest.mark.parametrize("shape", ["list", "large_list", "fixed_size_list"])
def test_parquet_and_arrow_files_with_a_list_column(tmp_path, shape):
    typ = {"list": pa.list_(pa.string()), "large_list": pa.large_list(pa.string()),
           "fixed_size_list": pa.list_(pa.string(), 2)}[shape]
    t = pa.table({"user_id": ["u1", "u2"], "recommendations": pa.array([["a", "b"], ["c", "a"]], typ)})
    pq.write_table(t, tmp_path / "recs.parquet")
    feather.write_feather(t, tmp_path / "recs.arrow")
    for name in ("recs.parquet", "recs.arrow"):
        assert ranked(load_run(str(tmp_path / name))) == {"u1": ["a", "b"], "u2": ["c", "a"]}


def test_the_shipped_array_table_is_the_shipped_rank_table():
    a, b = load_run(str(RECS)), load_run(str(TOP_K))
    assert ranked(a) == ranked(b)
    assert ranked(b)["1"] == ["101", "104", "107", "105", "106"]


def test_a_list_column_given_by_name():
    t = pa.table({"user_id": [1], "mine": pa.array([[5, 4]])})
    with pytest.raises(InputError, match="no docid column"):
        Run.from_frame(t)  # 'mine' is no name a list of items goes by
    assert ranked(Run.from_frame(t, docid="mine")) == {"1": ["5", "4"]}


# --- bad array columns: one line naming the row -------------------------------------------


@pytest.mark.parametrize("frame, fragments", [
    (pd.DataFrame({"user_id": [1, 2], "items": [[1, 2], ["a", 3]]}),
     ["<DataFrame>:2:", "row 2, column 'items'", "a string where row 1 holds a number"]),
    (pd.DataFrame({"user_id": [1, 2], "items": [[1, 2], None]}),
     ["<DataFrame>:2:", "the list of items is missing"]),
    (pa.table({"user_id": [1, 2], "prediction": pa.array([[1, 2], [3, None]])}),
     ["<DataFrame>:2:", "row 2", "missing"]),
    (pa.table({"user_id": [1, 2], "prediction": pa.array([[1.0], [2.5]])}),
     ["<DataFrame>:2:", "the item 2.5 is not a whole number"]),
    (pa.table({"user_id": [1], "prediction": pa.array([[1]]), "items": pa.array([[2]])}),
     ["'prediction', 'items' all hold lists", "--columns docid=COLUMN"]),
    (pa.table({"who": [1], "prediction": pa.array([[1]])}), ["no query id column"]),
    (pa.table({"user_id": [1], "prediction": pa.array([[]], pa.list_(pa.int64()))}),
     ["every list of items is empty"]),
])
def test_bad_list_columns_are_named(frame, fragments):
    with pytest.raises(InputError) as e:
        Run.from_frame(frame)
    for f in fragments:
        assert f in str(e.value), str(e.value)


# --- exclude_seen --------------------------------------------------------------------------

# u1 is recommended a, b, c, d; it saw b and d in training (b twice): a, c remain, ranked 1, 2.
# u2 is recommended x, y and saw nothing.
RUN = {"u1": {"a": 4.0, "b": 3.0, "c": 2.0, "d": 1.0}, "u2": {"x": 2.0, "y": 1.0}}
QRELS = {"u1": {"c": 1}, "u2": {"y": 1}}


def _train_csv(tmp_path) -> str:
    p = tmp_path / "train.csv"
    p.write_text("user_id,item_id,timestamp\nu1,b,1\nu1,d,2\nu1,b,3\nu3,x,4\n")
    return str(p)


def test_seen_items_leave_the_run_and_are_counted(tmp_path):
    run = load_run(RUN)
    out = exclude_seen(run, read_seen(_train_csv(tmp_path)))
    assert ranked(out) == {"u1": ["a", "c"], "u2": ["x", "y"]}
    assert (out.counts.read, out.counts.used, out.counts.ignored) == (6, 4, 2)
    assert out.counts.reasons == {SEEN: 2}
    # 3 distinct pairs (u1 b, u1 d, u3 x) of 2 users; 2 rows removed, all of u1
    assert out.counts.seen == {"source": _train_csv(tmp_path), "pairs": 3, "users": 2, "removed": 2,
                               "users_with_removed": 1}
    assert run.counts.ignored == 0 and run.counts.seen is None  # the caller's run is its own


def test_measures_after_exclusion(tmp_path):
    # u1 after exclusion: a, c -> c (relevant) at rank 2: RR 1/2, P@2 1/2; before: c at rank 3, RR 1/3
    # u2: x, y -> y at rank 2: RR 1/2, P@2 1/2
    train = _train_csv(tmp_path)
    masked = conformance.evaluate(QRELS, RUN, "RR,P@2", exclude_seen=train)
    assert masked.per_query["RR"] == {"u1": 0.5, "u2": 0.5}
    assert masked.mean["P@2"] == 0.5
    raw = conformance.evaluate(QRELS, RUN, "RR,P@2")
    assert raw.per_query["RR"] == {"u1": 1 / 3, "u2": 0.5}
    assert raw.mean["P@2"] == 0.25  # u1: a, b hold nothing relevant


def test_the_training_table_in_every_shape(tmp_path):
    want = {"u1": ["a", "c"], "u2": ["x", "y"]}
    (tmp_path / "train.tsv").write_text("user\titem\nu1\tb\nu1\td\n")
    (tmp_path / "train.qrels").write_text("u1 0 b 1\nu1 0 d 0\n")
    pq.write_table(pa.table({"userId": ["u1", "u1"], "itemId": ["b", "d"]}), tmp_path / "train.parquet")
    frame = pd.DataFrame({"user_id": ["u1", "u1"], "item_id": ["b", "d"], "rating": [5, 1]})
    for seen in (str(tmp_path / "train.tsv"), str(tmp_path / "train.qrels"), str(tmp_path / "train.parquet"),
                 frame, {"u1": ["b", "d"]}, {"u1": {"b": 1, "d": 0}}, load_qrels({"u1": {"b": 1, "d": 0}})):
        assert ranked(exclude_seen(load_run(RUN), read_seen(seen))) == want, seen


def test_integer_ids_match_across_files(tmp_path):
    # the training file's integer ids and a run's string ids are the same text
    (tmp_path / "train.csv").write_text("user_id,item_id\n1,10\n")
    run = Run.from_frame(pd.DataFrame({"user_id": ["1", "1"], "item_id": ["10", "11"], "rank": [1, 2]}))
    assert ranked(exclude_seen(run, read_seen(str(tmp_path / "train.csv")))) == {"1": ["11"]}


def test_nothing_seen_leaves_the_run_whole_and_says_so(tmp_path):
    (tmp_path / "train.csv").write_text("user_id,item_id\nu9,zz\n")
    out = exclude_seen(load_run(RUN), read_seen(str(tmp_path / "train.csv")))
    assert ranked(out) == ranked(load_run(RUN))
    assert out.counts.seen["removed"] == 0 and out.counts.ignored == 0


@pytest.mark.parametrize("text, fragments", [
    ("item_id,rating\n101,5\n", ["train.csv", "no query id column"]),
    ("user_id,rating\n1,5\n", ["train.csv", "no docid column"]),
    ("user_id,item_id\n1,101\n2\n", ["train.csv:3:", "expected 2 comma-separated fields"]),
    ("user_id,item_id\n1,\n", ["train.csv:2:", "the docid is empty"]),
])
def test_a_bad_training_table_is_named(tmp_path, text, fragments):
    (tmp_path / "train.csv").write_text(text)
    with pytest.raises(InputError) as e:
        read_seen(str(tmp_path / "train.csv"))
    for f in fragments:
        assert f in str(e.value), str(e.value)


def test_the_evaluator_reads_the_training_table_once(tmp_path):
    ev = conformance.Evaluator(QRELS, "RR", exclude_seen=_train_csv(tmp_path))
    assert ev.evaluate(RUN).per_query["RR"] == {"u1": 0.5, "u2": 0.5}
    assert ev.evaluate(RUN).run.counts.seen["removed"] == 2  # each run counted on its own


# --- relevance from a rating threshold -----------------------------------------------------


def test_a_rating_threshold_reaches_the_ratings_table():
    # the shipped test ratings: user 1 has 104 (5), 105 (2), 106 (4); its recommendations,
    # with 101 (seen in training) removed: 104, 107, 105, 106.
    # threshold 1 (default): 104, 105, 106 relevant: P@5 = 3/5
    # threshold 4: 104 and 106 relevant: P@5 = 2/5, AP@5 = (1/1 + 2/4) / 2 = 0.75
    default = conformance.evaluate(str(TEST), str(RECS), "P@5,AP@5", exclude_seen=str(TRAIN))
    assert default.per_query["P@5"]["1"] == pytest.approx(3 / 5)
    four = conformance.evaluate(str(TEST), str(RECS), "P@5,AP@5", exclude_seen=str(TRAIN),
                                relevance_threshold=4)
    assert four.per_query["P@5"]["1"] == pytest.approx(2 / 5)
    assert four.per_query["AP@5"]["1"] == pytest.approx(0.75)

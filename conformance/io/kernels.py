"""The Arrow compute kernels conformance calls, called through ``pyarrow._compute`` directly.

Importing ``pyarrow.compute`` builds a Python wrapper, with signature and documentation, for
each of Arrow's ~300 compute functions: 40-70 ms of every ``conformance eval`` here, more than
reading the qrels. These are the same kernels with the same options (each function below
passes what its ``pyarrow.compute`` namesake passes by default), and nothing else. Arrow's own
methods that go through ``pyarrow.compute`` (``Array.cast``, ``take``, ``filter``) are
replaced here too. ``tests/io/test_kernels.py`` checks each against ``pyarrow.compute`` and
that evaluating TREC files imports neither ``pyarrow.compute`` nor pandas.
"""

from __future__ import annotations

import pyarrow as pa
from pyarrow import _compute as _c


def _call(name: str, args: list, options=None):
    return _c.call_function(name, args, options)


def _scalar(value, like) -> pa.Scalar:
    """``value`` as a scalar of ``like``'s type, as ``pyarrow.compute`` converts fill values."""
    return value if isinstance(value, pa.Scalar) else pa.scalar(value, type=like.type)


# element-wise
def binary_length(x):
    return _call("binary_length", [x])


def equal(x, y):
    return _call("equal", [x, y])


def not_equal(x, y):
    return _call("not_equal", [x, y])


def starts_with(x, pattern: str):
    return _call("starts_with", [x], _c.MatchSubstringOptions(pattern))


def match_substring_regex(x, pattern: str):
    return _call("match_substring_regex", [x], _c.MatchSubstringOptions(pattern))


def ascii_rpad(x, width: int, padding: str = " "):
    return _call("ascii_rpad", [x], _c.PadOptions(width, padding))


def ascii_trim_whitespace(x):
    return _call("ascii_trim_whitespace", [x])


def ascii_split_whitespace(x):
    return _call("ascii_split_whitespace", [x], _c.SplitOptions())


def list_value_length(x):
    return _call("list_value_length", [x])


def if_else(condition, left, right):
    return _call("if_else", [condition, left, right])


def cast(x, target_type):
    return _call("cast", [x], _c.CastOptions.safe(target_type))


def fill_null(x, value):
    return _call("coalesce", [x, _scalar(value, x)])


def is_null(x):
    return _call("is_null", [x])


# aggregates
def min(x):  # noqa: A001 - the kernel's name
    return _call("min", [x])


def max(x):  # noqa: A001
    return _call("max", [x])


def any(x):  # noqa: A001
    return _call("any", [x])


def count_distinct(x):
    return _call("count_distinct", [x], _c.CountOptions("only_valid"))


# vector
def unique(x):
    return _call("unique", [x])


def indices_nonzero(x):
    return _call("indices_nonzero", [x])


def dictionary_encode(x):
    return _call("dictionary_encode", [x], _c.DictionaryEncodeOptions())


def sort_indices(x):
    """Indices that sort an array ascending, nulls last (``pc.sort_indices`` on one array)."""
    return _call("array_sort_indices", [x], _c.ArraySortOptions())


def index_in(x, value_set):
    return _call("index_in", [x], _c.SetLookupOptions(value_set))


def take(x, indices):
    return _call("take", [x, indices], _c.TakeOptions())


def filter(x, mask):  # noqa: A001
    return _call("filter", [x, mask], _c.FilterOptions())

"""Kept so existing imports work; to be removed: the kernels live in ``conformance.io.kernels``."""

from conformance.io.kernels import (any, ascii_rpad, ascii_split_whitespace, ascii_trim_whitespace,  # noqa: F401,A004
                                    binary_length, cast, count_distinct, dictionary_encode, equal, fill_null,
                                    filter, if_else, index_in, indices_nonzero, is_null, list_value_length,
                                    match_substring_regex, max, min, not_equal, sort_indices, starts_with, take,
                                    unique)

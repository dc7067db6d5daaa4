"""Kept so existing imports work; to be removed: the edge-case corpus loader lives in
``conformance.io.cases``."""

from conformance.io.cases import (DATA_PACKAGE_DIR, DEFAULT_METRICS, Case, case, default_directory,  # noqa: F401
                                  format_family, load_cases, load_file)

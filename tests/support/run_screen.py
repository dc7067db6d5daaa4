"""Reading the first screen of ``conformance run``'s answer: the class matrix and what follows
its key, for the tests of the answer's layout."""

from __future__ import annotations


def silent_entries(lines: list[str], key: int) -> list[str]:
    """The entries named after the class matrix's key as having given no value (its two lines
    start at ``key``)."""
    after = "\n".join(lines[key + 2:]).split("\n\n", 1)[0]
    head = "ran without a value of these families: "
    if not after.startswith(head):
        return []
    return [n.strip() for n in after[len(head):].replace("\n", " ").split(",")]

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


def matrix_rows(lines: list[str], head: int, key: int) -> list[tuple[list[str], list[str]]]:
    """The class matrix's lines between its header (``head``) and its key (``key``), each as
    (entry names, one mark per family): entries with the same marks may share a line, their
    names joined by ", " in the column the header's title heads."""
    header = lines[head]
    width = len(header) - len(header[len("agreement classes:"):].lstrip())
    return [([n.strip() for n in r[:width].split(",")], r[width:].split())
            for r in lines[head + 1:key]]

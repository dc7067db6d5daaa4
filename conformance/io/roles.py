"""The columns of a table, by role: query id, docid, score, rank, label.

A table (a DataFrame, an Arrow table, a CSV / TSV / Parquet / Arrow file) gives each role one
column, found by :func:`find_columns`:

* **Given** (``qid="Query"``, on the command line ``--columns qid=Query``, read by
  :func:`parse_roles`): that column, which must exist (exact name, or the one name equal to it
  ignoring case, spaces and dashes).
* **Otherwise by alias**, ignoring case and treating spaces and dashes as underscores. Each
  role has usual names and looser ones; a looser name is used only when no usual one is there
  (so a frame with ``qid`` and ``query`` takes ``qid``, the other being the question's text):

  ============  ===========================================================  ====================
  role          usual names                                                  looser names
  ============  ===========================================================  ====================
  query id      qid, query_id, q_id, queryid, qno, topic_id, topicid,        query, topic, user,
                question_id, user_id, userid, session_id                     question, session
  docid         docid, doc_id, docno, document_id, passage_id, pid, item_id, doc, document,
                itemid, corpus_id                                            passage, item
  score         score, prediction, pred, predicted, similarity               sim
  rank          rank                                                         position, pos
  label         relevance, label, rel, rating, grade, judgment, qrel         target, y
  ============  ===========================================================  ====================

  Two usual names of one role (``label`` and ``relevance``) are ambiguous: refused, naming the
  columns seen and the parameter (or ``--columns`` entry) that settles it. A role with no
  column is refused the same way ("no query id column: expected one named ...; the columns are
  ..."). A run needs query id, docid and score (rank optional), or a rank and no score (a
  recommender's top-k table): then the rank is the order (rank 1 first) and the score the rank
  negated, whatever ``rank_source`` says, since both give that order; qrels need query id, docid
  and label; a training table's pairs (``exclude_seen``) query id and docid alone. Other columns are ignored, so one table holding both labels and scores gives both.

Pure Python (no numpy), so the command line can read ``--columns`` before numpy is imported.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from conformance.errors import ConformanceError, InputError

ROLE_NAMES = {"qid": "query id", "docid": "docid", "score": "score", "rank": "rank", "label": "relevance label"}
ALIASES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "qid": (("qid", "query_id", "q_id", "queryid", "qno", "topic_id", "topicid", "question_id", "user_id",
             "userid", "session_id"), ("query", "topic", "user", "question", "session")),
    "docid": (("docid", "doc_id", "docno", "document_id", "passage_id", "pid", "item_id", "itemid",
               "corpus_id"), ("doc", "document", "passage", "item")),
    "score": (("score", "prediction", "pred", "predicted", "similarity"), ("sim",)),
    "rank": (("rank",), ("position", "pos")),
    "label": (("relevance", "label", "rel", "rating", "grade", "judgment", "qrel"), ("target", "y")),
}
RUN_ROLES = ("qid", "docid", "score", "rank")
QRELS_ROLES = ("qid", "docid", "label")
PAIRS_ROLES = ("qid", "docid")  # a training table's (user, item) interactions: no label needed
_OPTIONAL = {"rank"}


def normal(name: str) -> str:
    """A column name as aliases are matched: lower case, spaces and dashes as underscores."""
    return "_".join(name.strip().lower().replace("-", " ").split())


def _listed(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")


def find_columns(names: Sequence[str], roles: Sequence[str], given: Mapping[str, str] | None,
                 source: str) -> dict[str, str | None]:
    """The column of each role among ``names`` (see the module docstring); None for an optional
    role without one. ``given``: role -> column name, from the caller."""
    given = {k: v for k, v in (given or {}).items() if v is not None}
    unknown = sorted(set(given) - set(ALIASES))
    if unknown:
        raise InputError(source, f"column role {unknown[0]!r}: expected one of {', '.join(ALIASES)}")
    names = [str(n) for n in names]
    found: dict[str, str | None] = {}
    for role in roles:
        what = ROLE_NAMES[role]
        if role in given:
            want = str(given[role])
            exact = [n for n in names if n == want] or [n for n in names if normal(n) == normal(want)]
            if len(exact) != 1:
                problem = "is not a column" if not exact else "matches several columns"
                raise InputError(source, f"column {want!r} (given for the {what}) {problem}: "
                                         f"the columns are {_listed(names)}")
            found[role] = exact[0]
            continue
        usual, looser = ALIASES[role]
        for aliases in (usual, looser):
            matches = [n for n in names if normal(n) in aliases]
            if len(matches) > 1:
                raise InputError(source, f"columns {_listed(matches)} all name the {what}: name the "
                                         f"one to use with {role}='COLUMN' (on the command line, "
                                         f"--columns {role}=COLUMN)")
            if matches:
                found[role] = matches[0]
                break
        else:
            if role in _OPTIONAL or (role == "score" and "rank" in roles):
                found[role] = None  # a run without scores is ranked by its rank column, if any
                continue
            raise InputError(source, f"no {what} column: expected one named {' / '.join(usual + looser)}; "
                                     f"the columns are {_listed(names) or 'none'}: name it with "
                                     f"{role}='COLUMN' (on the command line, --columns {role}=COLUMN)")
    if "score" in found and found["score"] is None and found.get("rank") is None:
        usual, looser = ALIASES["score"]
        raise InputError(source, f"no score column: expected one named {' / '.join(usual + looser)} (or a "
                                 f"rank column, read as the order); the columns are {_listed(names) or 'none'}: "
                                 "name it with score='COLUMN' (on the command line, --columns score=COLUMN)")
    used = [c for c in found.values() if c is not None]
    for c in set(used):
        if used.count(c) > 1:
            roles_of = [ROLE_NAMES[r] for r, col in found.items() if col == c]
            raise InputError(source, f"column {c!r} is given as both the {' and the '.join(roles_of)}: "
                                     "expected one column per role")
    return found


class ColumnsError(ConformanceError, ValueError):
    """A ``--columns`` text that is not ``ROLE=COLUMN,...``."""


def parse_roles(text: str, where: str = "--columns") -> dict[str, str]:
    """``"qid=Query,docid=Doc"`` -> ``{"qid": "Query", "docid": "Doc"}``; roles are qid, docid,
    score, rank and label (a run reads the first four, qrels the ids and the label)."""
    out: dict[str, str] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        role, eq, column = part.partition("=")
        role, column = role.strip(), column.strip()
        if not eq or not column:
            raise ColumnsError(f"{where} {text!r}: expected ROLE=COLUMN entries separated by commas, such as "
                               "qid=query_id,docid=passage,score=sim")
        if role not in ALIASES:
            raise ColumnsError(f"{where}: unknown role {role!r}: expected one of {', '.join(ALIASES)}")
        if role in out and out[role] != column:
            raise ColumnsError(f"{where}: the {ROLE_NAMES[role]} is given twice, {out[role]!r} and {column!r}")
        out[role] = column
    if not out:
        raise ColumnsError(f"{where} is empty: expected ROLE=COLUMN entries such as qid=query_id,score=sim")
    return out

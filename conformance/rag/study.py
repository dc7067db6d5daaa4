"""Which retrieval metric, under which conventions, tracks answer quality: the correlation study.

An observation is one answer: a (variant, query) pair, with its answer quality q (correctness,
faithfulness, relevance, or a score from the user's file, such as a 1-5 Likert judgment) and
the value of every candidate metric for that variant's list for that query.

Candidates. Each measure of ``retrieval.study_measures`` (P, R, hit rate, nDCG, F1, Fe, T at
each alpha of the grid, at every cutoff; MRR and AP) is evaluated under the chosen profile and
under every library entry's conventions (``retrieval.under_entries``); the convention sets
that give the same per-observation values on this input are one candidate, named by its
measure, the entries whose conventions give it, and the axes on which they differ from the
measure's other candidates. A measure every entry computes alike is one candidate. An entry
under ``ties=unspecified`` whose worst and best orders of tied documents differ gives two
candidates (worst, best order). Candidates of different measures with identical values (T at
alpha 0 is P, F1 and Fe coincide when nothing relevant lies below 2K...) are one candidate,
the others listed as ``same_as``.

Subsets. Overall; per K/N_p bucket (N_p the query's relevant gold documents, K the cutoff of a
measure with one: ``K < N_p``, ``N_p <= K < 2 N_p``, ``K >= 2 N_p``; measures without a cutoff
are left out of buckets); per slice (``--by``). A candidate's observations in a subset are
those where it and q both have a value. A candidate is ranked when it has a value on as many
answers of the subset as any candidate of its cutoff and, in a bucket or a slice, on at least
:data:`MIN_ANSWERS` (10; the overall study ranks whatever the user has); the others are listed
after them. In a K/N_p bucket each cutoff K holds different answers (the
bucket is decided by K), so every (metric, cutoff) with enough answers there is ranked, with
the same intervals as overall; MRR and AP, which have no K, are not in the buckets.

Each candidate's Spearman, Pearson and Kendall coefficients come with bootstrap intervals
(``correlation``: resampling queries, each with all its answers; the same resamples for every
candidate and subset), computed for the :data:`BOOTSTRAPPED` (20) leading candidates of each
subset by point estimate (the others keep their point estimates and no interval). Candidates
are ranked by ``rank_by`` (Spearman by default); the best is named with how sure that is: the
fraction of resamples in which it ranks first among those 20, and the interval of its lead over
the runner-up, both on the same resamples.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from conformance.conventions import AXES, Conventions
from conformance.rag.correlation import COEFFICIENTS, bootstrap_weights, coefficients, interval

BUCKETS = ("K < N_p", "N_p <= K < 2 N_p", "K >= 2 N_p")
BOOTSTRAPPED = 20  # per subset, the leading candidates that get bootstrap intervals
MIN_ANSWERS = 10  # fewer answers than this in a subset: a candidate is listed, not ranked
MAX_AXES_NAMED = 3


@dataclass
class Candidate:
    measure: str
    cutoff: int | None
    members: list[str]
    axes: dict[str, str]
    values: np.ndarray
    same_as: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The measure and whose conventions give it: ``nDCG@10 [lightgbm, xgboost +1]``;
        ``[every convention]`` when all entries agree on it."""
        if not self.axes:
            return f"{self.measure} [every convention]"
        shown = ", ".join(self.members[:MAX_AXES_NAMED])
        more = len(self.members) - MAX_AXES_NAMED
        return f"{self.measure} [{shown}{f' +{more}' if more > 0 else ''}]"

    @property
    def convention_label(self) -> str:
        if self.axes:
            shown = list(self.axes.items())[:MAX_AXES_NAMED]
            text = ", ".join(f"{a}={v}" for a, v in shown)
            return text + (", ..." if len(self.axes) > MAX_AXES_NAMED else "")
        return "every convention"

    def to_dict(self) -> dict:
        return {"name": self.name, "measure": self.measure, "cutoff": self.cutoff,
                "conventions": self.members, "axes": self.axes, "axes_label": self.convention_label,
                "same_as": self.same_as}


def build_candidates(measures: Sequence, sources: dict[str, list], conventions: dict[str, dict]) -> list[Candidate]:
    """``sources[measure.text]``: (member name, per-observation values) pairs; ``conventions
    [measure.text][member]``: the member's Conventions (for naming the axes). Identical value
    vectors are merged, within a measure and across measures."""
    out: list[Candidate] = []
    by_vector: dict[bytes, Candidate] = {}
    for m in measures:
        groups: dict[bytes, tuple[np.ndarray, list[str]]] = {}
        for member, values in sources.get(m.text, []):
            key = _vector_key(values)
            groups.setdefault(key, (values, []))[1].append(member)
        convs = conventions.get(m.text, {})
        for key, (values, members) in groups.items():
            axes = _distinguishing(m, members, [g[1] for k, g in groups.items() if k != key], convs)
            if key in by_vector:
                by_vector[key].same_as.append(f"{m.text} [{', '.join(sorted(members))}]")
                continue
            c = Candidate(m.text, m.cutoff, sorted(members), axes, values)
            by_vector[key] = c
            out.append(c)
    return out


def _vector_key(values: np.ndarray) -> bytes:
    v = np.where(np.isnan(values), np.nan, np.round(values, 12)) + 0.0  # -0.0 -> 0.0
    return v.tobytes()


def _distinguishing(m, members: list[str], others: list[list[str]], convs: dict[str, Conventions]) -> dict[str, str]:
    """Axes that ``m`` reads on which every member agrees and some member of another group
    differs (the axes ``conformance.reference.sweep.reads`` names for the measure)."""
    from conformance.reference.sweep import reads

    mine = [convs[x].to_dict() for x in members if x in convs]
    theirs = [convs[x].to_dict() for g in others for x in g if x in convs]
    if not mine or not theirs:
        return {}
    read = reads(m) | {"nonpositive_scores"}
    out = {}
    for axis in (a for a in AXES if a in read):
        values = {c[axis] for c in mine}
        if len(values) == 1:
            v = next(iter(values))
            if any(c[axis] != v for c in theirs):
                out[axis] = v
    return out


@dataclass
class Row:
    candidate: int
    n: int
    estimate: dict[str, float | None]
    low: dict[str, float | None]
    high: dict[str, float | None]
    undefined: dict[str, int]
    ranked: bool = False  # as many answers as any candidate of its cutoff, and at least MIN_ANSWERS


@dataclass
class Ranking:
    subset: str
    rank_by: str
    rows: list[Row]  # in rank order
    sentence: str
    p_first: float | None = None
    lead: tuple[float | None, float | None, float | None] | None = None  # estimate, low, high
    full: int = 0  # the answers a ranked candidate covers (candidates with fewer are not ranked)


@dataclass
class Study:
    quality: str
    rank_by: str
    resamples: int
    seed: int
    candidates: list[Candidate]
    observations: int
    clusters: int
    overall: Ranking
    buckets: list[Ranking]
    slices: list[Ranking]


def run_study(candidates: list[Candidate], quality: np.ndarray, cluster: np.ndarray, n_relevant: np.ndarray,
              slices: dict[str, np.ndarray], quality_name: str, rank_by: str = "spearman",
              resamples: int = 1000, seed: int = 0) -> Study:
    """``quality``, ``cluster`` (the query index of each observation), ``n_relevant`` (its N_p)
    and every candidate's values are per observation; ``slices`` maps a slice label to its
    observations' mask."""
    n_clusters = int(cluster.max()) + 1 if cluster.size else 0
    Wq = bootstrap_weights(n_clusters, resamples, np.random.default_rng(seed)) if n_clusters else np.zeros((resamples, 0))
    W = Wq[:, cluster]
    has_q = ~np.isnan(quality)

    def rank(label: str, masks: list[np.ndarray | None], least: int = MIN_ANSWERS) -> Ranking:
        return _rank(label, candidates, masks, quality, W, rank_by, least)

    overall = rank("overall", [has_q] * len(candidates), least=0)
    buckets = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for b, name in enumerate(BUCKETS):
            masks = []
            for c in candidates:
                if c.cutoff is None:
                    masks.append(None)
                    continue
                ratio = c.cutoff / n_relevant
                which = np.where(ratio < 1, 0, np.where(ratio < 2, 1, 2))
                masks.append(has_q & (n_relevant > 0) & (which == b))
            buckets.append(rank(name, masks))
    by_slice = [rank(label, [has_q & mask] * len(candidates)) for label, mask in slices.items()]
    return Study(quality_name, rank_by, resamples, seed, candidates, int(has_q.sum()), n_clusters,
                 overall, buckets, by_slice)


def _rank(label: str, candidates: list[Candidate], masks: list[np.ndarray | None], quality: np.ndarray,
          W: np.ndarray, rank_by: str, least: int = MIN_ANSWERS) -> Ranking:
    rows: list[Row] = []
    keeps: dict[int, np.ndarray] = {}
    for i, (c, mask) in enumerate(zip(candidates, masks)):
        if mask is None:
            continue
        keep = mask & ~np.isnan(c.values)
        keeps[i] = keep
        point = coefficients(c.values[keep], quality[keep], np.ones((1, int(keep.sum()))))
        est = {coef: (None if np.isnan(point[coef][0]) else float(point[coef][0])) for coef in COEFFICIENTS}
        none = {coef: None for coef in COEFFICIENTS}
        rows.append(Row(i, int(keep.sum()), est, dict(none), dict(none), {coef: 0 for coef in COEFFICIENTS}))
    # A candidate with fewer answers than the most any candidate of the same cutoff has (its
    # conventions refuse part of the input, or skip its empty queries) is listed after the
    # others and not ranked: a correlation over part of the answers is not comparable with
    # one over all of them. The comparison is per cutoff because a K/N_p bucket holds
    # different answers at each K; every cutoff with MIN_ANSWERS answers there is ranked.
    full_of: dict = {}
    for r in rows:
        k = candidates[r.candidate].cutoff
        full_of[k] = max(full_of.get(k, 0), r.n)
    for r in rows:
        r.ranked = r.n == full_of[candidates[r.candidate].cutoff] and r.n >= least
    full = max((r.n for r in rows), default=0)
    rows.sort(key=lambda r: (not r.ranked, r.estimate[rank_by] is None, -(r.estimate[rank_by] or 0.0), r.candidate))
    ranking = Ranking(label, rank_by, rows, "", full=full)
    defined = [r for r in rows if r.estimate[rank_by] is not None and r.ranked]
    # Intervals for the leading candidates only (the cost is resamples x answers per
    # candidate and coefficient); the others keep their point estimates.
    samples: dict[int, np.ndarray] = {}
    # candidates that keep the same answers share the quality's side of the work (and W's columns)
    by_keep: dict[bytes, tuple[np.ndarray, np.ndarray, dict]] = {}
    for r in defined[:BOOTSTRAPPED]:
        keep = keeps[r.candidate]
        key = keep.tobytes()
        if key not in by_keep:
            by_keep[key] = (quality[keep], W[:, keep], {})
        qk, Wk, shared = by_keep[key]
        boot = coefficients(candidates[r.candidate].values[keep], qk, Wk, shared=shared)
        for coef in COEFFICIENTS:
            r.low[coef], r.high[coef], r.undefined[coef] = interval(boot[coef])
        samples[r.candidate] = boot[rank_by]
    defined = defined[:BOOTSTRAPPED]
    if not defined:
        ranking.sentence = (f"{label}: no candidate has a defined {rank_by} correlation "
                            "(too few answers, or the quality or every metric is constant)")
        return ranking
    best = defined[0]
    # candidates tied with the best (the same coefficient: a monotone transform of the same
    # ranking gives the same Spearman) rank first together
    tied = [r for r in defined if r.estimate[rank_by] == best.estimate[rank_by]]
    stack = np.stack([np.where(np.isnan(samples[r.candidate]), -np.inf, samples[r.candidate]) for r in defined])
    top = np.argmax(stack, axis=0)
    ranking.p_first = float((top < len(tied)).mean())
    c_best = candidates[best.candidate]
    coef_text = f"{rank_by} {best.estimate[rank_by]:.2f}"
    if best.low[rank_by] is not None:
        coef_text += f" [{best.low[rank_by]:.2f}, {best.high[rank_by]:.2f}]"
    text = f"{label}: {c_best.name} tracks answer quality best ({coef_text}, {best.n} answers)"
    if len(tied) > 1:
        text += (f", tied with {candidates[tied[1].candidate].name}"
                 + (f" and {len(tied) - 2} other candidate(s)" if len(tied) > 2 else ""))
    rest = defined[len(tied):]
    if rest:
        second = rest[0]
        diff = samples[best.candidate] - samples[second.candidate]
        lo, hi, _ = interval(diff)
        lead = best.estimate[rank_by] - second.estimate[rank_by]
        ranking.lead = (lead, lo, hi)
        sure = ("a lead the resamples confirm" if lo is not None and lo > 0 else
                "a lead within the noise: more queries would be needed to tell them apart")
        text += (f"; {'they rank' if len(tied) > 1 else 'it ranks'} first in {ranking.p_first:.0%} of "
                 f"{W.shape[0]:,} bootstrap resamples, {lead:+.3f} ahead of {candidates[second.candidate].name}"
                 + (f" [{lo:+.3f}, {hi:+.3f}]" if lo is not None else "") + f": {sure}")
    if best.low[rank_by] is not None and best.low[rank_by] <= 0 <= best.high[rank_by]:
        text += "; its own correlation is not distinguishable from none"
    ranking.sentence = text + "."
    return ranking


# --------------------------------------------------------------------------------------------
# building a study from evaluated variants


def candidate_sources(variants: Sequence[tuple[str, object, dict]], measures: Sequence, profile_name: str,
                      n_queries: int) -> tuple[dict[str, list], dict[str, dict]]:
    """Per measure: (member, values over every observation) from each variant's EntryValues and
    the profile's own values, and each member's Conventions. ``variants``: (name, EntryValues,
    {Measure: Values}) in order; the observations are each variant's queries in turn. A member
    that has no value on a variant (its conventions refuse that input) has NaN there."""
    sources: dict[str, list] = {}
    convs: dict[str, dict] = {}
    profile_member = f"profile {profile_name}"
    n_variants = len(variants)
    for m in measures:
        lows: dict[str, list[np.ndarray]] = {}
        highs: dict[str, list[np.ndarray]] = {}
        from conformance.rag.retrieval import profile_conventions

        conv_of: dict[str, Conventions] = {profile_member: m.conventions(profile_conventions(profile_name, m))}
        for vi, (_, ev, own) in enumerate(variants):
            found = dict(ev.values.get(m, {}))
            if m in own:
                found[profile_member] = own[m]
            conv_of.update(ev.conventions.get(m, {}))
            for member, v in found.items():
                lows.setdefault(member, [np.full(n_queries, np.nan)] * n_variants)[vi] = v.lower
                highs.setdefault(member, [np.full(n_queries, np.nan)] * n_variants)[vi] = v.upper
        out = []
        for member in sorted(lows):
            lo, hi = np.concatenate(lows[member]), np.concatenate(highs[member])
            if np.isnan(lo).all():
                continue  # refused on every variant: nothing to correlate
            if np.array_equal(lo, hi, equal_nan=True):
                out.append((member, lo))
            else:
                for end, values in (("worst", lo), ("best", hi)):
                    label = f"{member} ({end} tie order)"
                    out.append((label, values))
                    conv_of[label] = conv_of[member]
        sources[m.text] = out
        convs[m.text] = conv_of
    return sources, convs


def quality_values(result, quality) -> tuple[np.ndarray, str]:
    """Per observation of ``result`` (a ``harness.RagResult``): the answer quality, and its name."""
    from conformance.rag.inputs import Quality

    if isinstance(quality, Quality):
        values = np.array([quality.lookup(v.name, q) for v in result.variants for q in result.qids])
        return values, f"scores from {quality.source}"
    if quality not in ("correctness", "faithfulness", "relevance"):
        raise ValueError(f"unknown quality source {quality!r}")
    name = "faithfulness_graded" if quality == "faithfulness" and result.graded else quality
    values = np.concatenate([v.generation.metric(name) for v in result.variants]) if result.variants else np.zeros(0)
    return values, name


def candidates_from_result(result) -> list[Candidate]:
    """The study's candidates over every (variant, query) of ``result`` (a ``harness.RagResult``)."""
    n = len(result.qids)
    sources, convs = candidate_sources([(v.name, v.entries, v.retrieval) for v in result.variants],
                                       result.study_measures, result.profile_name, n)
    return build_candidates(result.study_measures, sources, convs)


def study_from_result(result, quality, rank_by: str = "spearman") -> Study:
    n = len(result.qids)
    q, qname = quality_values(result, quality)
    cluster = np.tile(np.arange(n), len(result.variants))
    n_relevant = np.tile(_relevant_counts(result.gold.qrels, result.qids, result.conventions.relevance_threshold),
                         len(result.variants))
    slices = {label: np.tile(mask, len(result.variants)) for label, mask in result.slices.items() if label != "all"}
    return run_study(result.candidates, q, cluster, n_relevant, slices, qname, rank_by, result.resamples, result.seed)


def _relevant_counts(qrels, qids: Sequence[str], threshold: float) -> np.ndarray:
    """N_p per query: its judged documents with label >= threshold."""
    q = qrels.query_ids().astype(str)
    rel = np.asarray(qrels.label, np.float64) >= threshold
    arr = np.asarray(qids, dtype=str)
    pos = np.searchsorted(arr, q)
    pos = np.minimum(pos, max(arr.size - 1, 0))
    ok = rel & (arr[pos] == q) if arr.size else np.zeros(q.size, bool)
    return np.bincount(pos[ok], minlength=arr.size).astype(np.float64)

"""The vocabulary of conventions: every choice that changes a ranking metric's value.

Each axis is one :class:`Axis` record in :data:`AXES`, and every other table of axes is derived
from those records: the fields of :class:`Conventions` and their defaults, the values the paper
sweep tries (``Axis.swept``), the phrases a verdict uses (``Axis.phrases``), the measure families
that read the axis (``Axis.group``, matched against each family's groups in ``measures``), the
explorer's switches and idle axes (``Axis.explorer``, ``explorer_idle``), and the README's axis
table (:func:`readme_table`, held equal to the README by a test).

A :class:`Conventions` is a frozen choice of one value on every axis; a profile is a named
``Conventions``. Values are plain Python values: strings for named choices, ``int`` for the
relevance threshold and the depth (``None`` for no depth), and for custom gains the canonical
text ``"0:0,1:1,2:3"``. Library profiles live beside their adapters in ``conformance.libs``;
this module holds the vocabulary and the conventions of the trec_eval command line, which the
edge-case corpus uses as its base (:data:`TREC_EVAL`, :data:`TREC_EVAL10`).

Adding an axis: its record below (with its group), its arithmetic in ``conformance.reference``
and its tests; nothing else lists axes. One idea at about 700 lines: the records are most of it,
one per axis (what a record is made of is ``conformance.axis``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any

from conformance.axis import (GROUPS, Axis, ConventionError, _close_matches, _parse_discount,
                              _parse_gain_map, _parse_geometric, _parse_int, format_value)


def gain_map(value: str) -> dict[float, float] | None:
    """The label -> gain map of a custom ``gain`` value, or None for a named gain."""
    if value in AXES["gain"].values:
        return None
    return {float(k): float(v) for k, v in (p.split(":") for p in value.split(","))}


AXES: dict[str, Axis] = {
    a.name: a
    for a in [
        Axis(
            "gain",
            "the gain of a document with label rel, in DCG and nDCG",
            {
                "linear": "gain = rel",
                "exponential": "gain = 2^rel - 1",
                "binary": "gain = 1 for a relevant document (label >= relevance_threshold), else 0 "
                          "(sentence-transformers' NDCG@k, which sees sets of relevant ids)",
            },
            default="linear",
            group="graded",
            stage="gains",
            parse_open=_parse_gain_map,
            open_meaning="a label:gain map such as '0:0,1:1,2:3' (unlisted labels keep gain = label)",
            swept=("linear", "exponential", "binary"),
            phrases={"linear": "linear gain", "exponential": "exponential gain (2^rel - 1)",
                     "binary": "binary gain (1 per relevant document)"},
            explorer=True,
        ),
        Axis(
            "discount",
            "the discount applied to the gain at a 1-based rank, in DCG and nDCG",
            {
                "log2": "gain / log2(rank + 1)",
                "jarvelin": "no discount before rank 2, then gain / log2(rank) (Jarvelin & Kekalainen 2002)",
                "reciprocal": "gain / rank (CatBoost's NDCG and DCG with denominator=Position)",
            },
            default="log2",
            group="graded",
            stage="discount",
            parse_open=_parse_discount,
            open_meaning="'jarvelin:b' (no discount before rank b, then gain / log_b(rank)) or 'log:b' (gain / log_b(rank + 1))",
            swept=("log2", "jarvelin", "log:10", "reciprocal"),
            phrases={"log2": "the 1/log2(rank+1) discount",
                     "jarvelin": "Jarvelin's discount (none before rank 2)",
                     "log:10": "the 1/log10(rank+1) discount",
                     "reciprocal": "the 1/rank discount"},
            explorer=True,
        ),
        Axis(
            "ideal",
            "where the ideal DCG (the nDCG denominator) takes its labels from",
            {
                "judged": "every judged document of the query, retrieved or not",
                "retrieved": "only the labels of the ranked list itself",
                "judged_to_list": "every judged document of the query, the ideal cut at the "
                                  "list's length n as well as at k (min(k, n) positions)",
                "k_slots": "every one of the k positions could hold a relevant document, whatever "
                           "the query's judgments: the ideal is k documents of the query's largest "
                           "judged gain (n of them without a cutoff; RecTools' NDCG)",
            },
            default="judged",
            group="normalisation",
            stage="ideal",
            swept=("judged", "retrieved", "judged_to_list", "k_slots"),
            phrases={"judged": "the judged ideal", "retrieved": "the ideal of the retrieved list",
                     "judged_to_list": "the judged ideal cut at the list's length",
                     "k_slots": "the ideal of k slots of the best gain"},
            explorer=True,
        ),
        Axis(
            "k_beyond_list",
            "the denominator of P@k (and F1@k, T@k) when fewer than k documents were retrieved",
            {
                "k": "divide by k even when the list is shorter",
                "min_k_n": "divide by min(k, list length)",
                "rows_in_top": "divide by the documents in the top k: min(k, list length) under "
                               "an order; under a rank rule the documents it ranks at k or "
                               "above, more than k when ties=group_first puts a tied group "
                               "that starts by k in whole, fewer when ties=group_last leaves "
                               "out one that ends past k (TorchRec's PrecisionSessionMetric)",
            },
            default="k",
            group="named",
            stage="denominator",
            swept=("k", "min_k_n", "rows_in_top"),
            phrases={"k": "P@k over k", "min_k_n": "P@k over min(k, list length)",
                     "rows_in_top": "P@k over the documents in the top k"},
            explorer=True,
        ),
        Axis(
            "hit_weight",
            "what a document counts for in P and R: where it is ranked (the numerator) and in R",
            {
                "binary": "1 when it is relevant (label >= relevance_threshold), else 0; R "
                          "counts the relevant documents",
                "label": "its label as read (after label_type and negative_labels), whatever "
                         "the threshold, 0 when unjudged: a graded label weighs more, a "
                         "fractional one less, a negative one (negative_labels=keep) takes "
                         "away; R is the sum of the labels of the relevance universe (the "
                         "judged documents, or the list's under ideal=retrieved). P is empty "
                         "when no document of that universe has a label other than 0, R when "
                         "R is 0 (TorchRec's session metrics: weight x label summed)",
            },
            default="binary",
            group="named",
            stage="formula",
            swept=("binary", "label"),
            phrases={"binary": "each relevant document counting 1",
                     "label": "each document counting its label"},
        ),
        Axis(
            "ap_denominator",
            "what the sum of precisions at relevant ranks is divided by in AP and AP@k",
            {
                "relevant": "R, every relevant judged document, retrieved or not",
                "retrieved_relevant": "the relevant documents found in the (cut) list",
                "min_k_relevant": "min(k, R)",
                "k": "k, whatever R and the list's length (RecTools' MAP(divide_by_k=True)); "
                     "without a cutoff the list's length n, the k every rank of the list fills "
                     "(as P without a cutoff divides by n), so an empty list scores 0",
                "min_k_n_relevant": "min(R, the length of the list cut at k), min(k, n, R); "
                                    "without a cutoff min(n, R) (LensKit's AveragePrecision); "
                                    "an empty list scores 0",
            },
            default="relevant",
            group="named",
            stage="denominator",
            swept=("relevant", "retrieved_relevant", "min_k_relevant", "k", "min_k_n_relevant"),
            phrases={"relevant": "AP over all relevant documents",
                     "retrieved_relevant": "AP over the relevant documents retrieved",
                     "min_k_relevant": "AP over min(k, R)", "k": "AP over k",
                     "min_k_n_relevant": "AP over min(k, list length, R)"},
            explorer=True,
        ),
        Axis(
            "empty_query",
            "what a query with no relevant document scores (the 0/0 case)",
            {
                "zero": "it scores 0 and counts in the mean",
                "one": "it scores 1 and counts in the mean",
                "nan": "it scores NaN, and so does the mean",
                "raise": "evaluation fails",
                "skip": "it is left out of the mean",
            },
            default="zero",
            group="normalisation",
            stage="aggregate",
            swept=("zero", "one", "skip"),
            phrases={"zero": "queries without relevant documents scoring 0",
                     "one": "queries without relevant documents scoring 1",
                     "skip": "queries without relevant documents left out"},
            explorer=True,
        ),
        Axis(
            "ties",
            "the order of documents with equal scores",
            {
                "docid_desc": "by document id, byte-wise descending (trec_eval)",
                "docid_asc": "by document id, byte-wise ascending",
                "input_order": "in the order the run lists them (stable sort)",
                "reverse_input": "in the reverse of the order the run lists them",
                "average": "the expected value over all orders of each tied group (McSherry & Najork)",
                "unspecified": "any order: the value is the range from the worst to the best order",
                "pessimistic": "lower labels first, so relevant documents last (CatBoost, LightFM, "
                               "Cornac's AUC); the label is read after label_type and "
                               "negative_labels, an unjudged document as label 0 (so it ties "
                               "with label 0), and equal labels by document id, byte-wise "
                               "descending; every family reads this one order (for a gain that "
                               "falls as the label rises, a custom gain map, it is not the "
                               "lowest value); it is the low end of unspecified for the "
                               "families ordered by relevance",
                "optimistic": "higher labels first, so relevant documents first; unjudged as "
                              "label 0, equal labels by document id, byte-wise descending (the "
                              "high end of unspecified for the families ordered by relevance)",
                "group_last": "a rank rule, not an order: every document of a tied group takes "
                              "the group's last rank and counts the group's relevant documents "
                              "through it (Cornac's MAP, scipy's rankdata(method='max')); a "
                              "group is in the top k only if its last rank is at most k (so "
                              "is it within a depth), and P@k's k and min(k, n) stay as they "
                              "are; the families that read ranks only through the per-row "
                              "pieces take it (formulas.RANK_RULE_FAMILIES), the others "
                              "refuse a list with a tied group",
                "group_first": "a rank rule, not an order: every document of a tied group takes "
                               "the group's first rank, the count of the query's documents "
                               "scored strictly higher plus 1, and counts the group's relevant "
                               "documents through it (TorchRec's session metrics, scipy's "
                               "rankdata(method='min')); a group is in the top k whole when its "
                               "first rank is at most k, so the top k can hold more than k "
                               "documents (and so is it within a depth); P@k's k and min(k, n) "
                               "stay as they are (k_beyond_list=rows_in_top counts the rows in "
                               "the top); the families of formulas.RANK_RULE_FAMILIES take it, "
                               "the others refuse a list with a tied group",
            },
            default="docid_desc",
            group="ordering",
            stage="ordering",
            swept=("docid_desc", "docid_asc", "input_order", "reverse_input", "average",
                   "pessimistic", "optimistic", "group_last", "group_first"),
            phrases={"docid_desc": "ties by docid descending", "docid_asc": "ties by docid ascending",
                     "input_order": "ties in input order", "reverse_input": "ties in reverse input order",
                     "average": "tied documents averaged",
                     "pessimistic": "tied documents with the lower label first",
                     "optimistic": "tied documents with the higher label first",
                     "group_last": "tied documents all at the group's last rank",
                     "group_first": "tied documents all at the group's first rank"},
            explorer_idle="the list is an order: no two documents tie",
        ),
        Axis(
            "relevance_threshold",
            "the label L from which a document counts as relevant in binary measures (label >= L)",
            {},
            default=1,
            group="threshold",
            stage="relevance",
            parse_open=_parse_int("relevance_threshold", -(2**31)),
            open_meaning="an integer L",
            swept=None,  # the sweep takes the thresholds from the labels of the input
            open_phrase="relevance from label {}",
            explorer=True,
        ),
        Axis(
            "threshold_scope",
            "whether the relevance threshold also applies to graded gains (DCG, nDCG)",
            {
                "binary": "only binary measures use it; DCG and nDCG use every positive label",
                "graded": "labels below the threshold also get gain 0 in DCG and nDCG",
            },
            default="binary",
            group="graded",
            stage="gains",
            swept=("binary", "graded"),
            phrases={"binary": "every positive label in the gains",
                     "graded": "labels below the threshold dropped from the gains"},
            explorer=True,
        ),
        Axis(
            "negative_labels",
            "what a negative relevance label means",
            {
                "unjudged": "gain 0, never relevant, not in the ideal",
                "keep": "a negative gain, in the list and in the ideal",
                "raise": "evaluation fails",
            },
            default="unjudged",
            group="labels",
            stage="labels",
            swept=("unjudged", "keep"),
            phrases={"unjudged": "negative labels as unjudged", "keep": "negative labels kept as gains"},
            explorer_idle="grades are 0..3: no negative label",
        ),
        Axis(
            "label_type",
            "what happens to a non-integer relevance label",
            {
                "float": "used as it is",
                "float32": "used as the nearest float32 number (0.3 -> 0.30000001192092896), as a "
                           "library that stores labels as float32 reads it",
                "int_truncate": "truncated towards zero (1.7 -> 1)",
                "raise": "evaluation fails",
            },
            default="float",
            group="labels",
            stage="labels",
            swept=("float", "float32", "int_truncate"),
            phrases={"float": "fractional labels as they are", "float32": "labels read as float32",
                     "int_truncate": "labels truncated to integers"},
            explorer_idle="grades are integers",
        ),
        Axis(
            "query_set",
            "which queries are scored and averaged",
            {
                "run": "queries present in both the run and the qrels (for recommendations: "
                       "the users with both truth and recommendations, as Recommenders' "
                       "precision_at_k counts them)",
                "qrels": "every judged query; one missing from the run scores 0 (every user "
                         "with truth, one without recommendations scoring 0: Recommenders' "
                         "ndcg_at_k)",
                "qrels_strict": "every judged query, one missing from the run scoring 0 whatever "
                                "its judgments; evaluation fails on a run query with no judgment "
                                "(BEIR's evaluate_custom: qrels[query_id])",
                "run_all": "every run query, one with no judgment scored as a query without "
                           "relevant documents (trectools: the mean divides by the run's topics; "
                           "every user of the recommendations: Spark's RankingMetrics)",
                "run_strict": "every run query; evaluation fails on a run query with no "
                              "judgment, and judged queries missing from the run are left out "
                              "(MTEB's own metrics: qrels[query_id] for every run query)",
                "raise": "evaluation fails when the run's and the qrels' query sets differ",
            },
            default="run",
            group="aggregation",
            stage="aggregate",
            swept=("run", "qrels", "run_all"),
            phrases={"run": "only the run's queries averaged", "qrels": "every judged query averaged",
                     "run_all": "every run query averaged, one without judgments as 0/0",
                     "qrels_strict": "every judged query averaged, one missing from the run as 0"},
            explorer_idle="one query, both judged and ranked",
        ),
        Axis(
            "depth",
            "the run is cut to this many documents per query before anything is scored",
            {"none": "no cut"},
            default=None,
            group="depth",
            stage="cut",
            parse_open=_parse_int("depth", 1),
            open_meaning="a positive integer N",
            swept=None,  # the sweep tries no cut and the usual depths the lists reach
            phrases={None: "the whole run"},
            open_phrase="the run cut to {}",
            stored={"none": None},
        ),
        Axis(
            "score_precision",
            "the precision of scores when documents are sorted",
            {
                "float64": "scores sorted as double precision",
                "float32": "scores narrowed to single precision first, so near-equal scores tie",
            },
            default="float64",
            group="ordering",
            stage="ordering",
            swept=("float64", "float32"),
            phrases={"float64": "float64 scores", "float32": "scores narrowed to float32"},
            explorer_idle="the list is an order: no scores to narrow",
        ),
        Axis(
            "rr_cutoff",
            "whether RR@k looks only at the top k",
            {
                "honour": "RR@k is 0 when the first relevant document is below rank k",
                "ignore": "RR@k is RR: the cutoff is accepted and ignored",
            },
            default="honour",
            group="named",
            stage="cut",
            swept=("honour", "ignore"),
            phrases={"honour": "RR@k honouring k", "ignore": "RR@k ignoring k"},
            explorer=True,
            with_cutoff_only=True,
        ),
        Axis(
            "rank_source",
            "what orders a query's documents",
            {
                "score": "the score column, descending (the rank column is ignored)",
                "rank_column": "the rank column, ascending (the score is ignored)",
            },
            default="score",
            group="input",
            stage="ordering",  # the rank column refuses a run without ranks, whatever the measure
            explorer_idle="the list is an order: scores and ranks agree",
        ),
        Axis(
            "nonpositive_scores",
            "whether a retrieved document whose score is <= 0 can count as relevant where it is ranked",
            {
                "rank": "it is ranked and counts like any other document",
                "not_relevant": "it keeps its rank but never counts as relevant there in binary "
                "measures (P, R, F1, AP, RR, Success, Rprec); R and the ideal still count it; "
                "DCG and nDCG are unaffected (torchmetrics' AP, RR, P, R)",
            },
            default="rank",
            group="ranked_relevance",
            stage="relevance",
            swept=("rank", "not_relevant"),
            phrases={"rank": "documents scored <= 0 ranked like any other",
                     "not_relevant": "documents scored <= 0 never relevant where ranked"},
            explorer_idle="the list's documents count as scored above 0",
        ),
        Axis(
            "single_document",
            "a query whose ranked list holds exactly one document",
            {
                "score": "it is scored like any other list",
                "raise": "evaluation fails (scikit-learn refuses one-document rows)",
            },
            default="score",
            group="input",
            stage="input",
            explorer=True,
        ),
        Axis(
            "duplicates",
            "a document listed twice for one query in a run",
            {
                "error": "the input is refused",
                "first": "the first listing is kept",
                "last": "the last listing is kept",
                "keep": "every listing is kept, each a document of its own with the document's "
                        "label (a library given bare score lists has no docid to repeat)",
                "set": "every listing keeps its rank, but a document counts once, at its "
                       "highest-ranked listing: a later listing is neither relevant nor a gain, "
                       "and P@k's min(k, n) counts distinct documents (LlamaIndex's Precision "
                       "and Recall: set(retrieved_ids))",
                "keep_counted": "every listing is kept, as under keep, and each later listing of "
                                "a relevant document also counts as a relevant document of its "
                                "own where the judgments are counted: in R and in the judged "
                                "ideal, with the document's label (RecTools' MAP, Recall and "
                                "divide_by_achievable count the rows of its merge)",
            },
            default="error",
            group="input",
            stage="input",
            explorer_idle="each document is listed once",
        ),
        Axis(
            "identical_ids",
            "a retrieved document whose id equals the query id",
            {
                "keep": "it is ranked like any other document",
                "drop": "it is removed from the run before anything is scored (BEIR's "
                        "ignore_identical_ids=True); its judgment still counts in R and the "
                        "ideal, and a query left with no document is scored on an empty list",
            },
            default="keep",
            group="input",
            stage="input",  # every family sees the shorter list (reference.evaluate's kept rows)
            # swept only when some retrieved document is named like its query (sweep.Facts)
            swept=("keep", "drop"),
            phrases={"keep": "documents named like their query kept",
                     "drop": "documents named like their query dropped"},
            explorer_idle="no document is named like the query",
        ),
        Axis(
            "rounding",
            "the decimal places a library reports its values to",
            {"none": "full precision"},
            default=None,
            group="aggregation",
            stage="aggregate",  # Evaluation.aggregate: mean-aggregated families
            parse_open=_parse_int("rounding", 0),
            open_meaning="an integer N >= 0: each query's value and the mean are rounded to N "
                         "places (Python's round, half to even on the exact binary value), the "
                         "mean from the unrounded values (BEIR and MTEB: 5)",
            # BEIR and MTEB print 5 places; fewer places are what a paper's own printed
            # interval already holds
            swept=(None, 5),
            phrases={None: "values at full precision", 5: "values rounded to 5 places"},
            open_phrase="values rounded to {} places",
            stored={"none": None},
            explorer=True,  # a one-query list: its value rounded, as the mean of one value is
        ),
        Axis(
            "mean",
            "how the per-query values of a measure are averaged over the queries",
            {
                "arithmetic": "the arithmetic mean",
                "geometric": "the geometric mean, exp(mean(log(max(v, 0.00001)))), trec_eval's "
                             "gm_map and gm_bpref (MIN_GEO_MEAN = 0.00001)",
                "micro": "the micro average: each counted query's numerator and denominator "
                         "summed, then divided once (0 when the denominators sum to 0), for "
                         "the families that are one ratio per query: P (relevant in the top k "
                         "over k, or min(k, n)), R (over R) and Rcap (over min(k, R): implicit's "
                         "ranking_metrics_at_k 'precision'); every other family refuses it. "
                         "empty_query=zero sums an empty query's parts as they are (P adds its "
                         "k to the denominator, R and Rcap add nothing), skip leaves them out, "
                         "nan makes the result NaN, one is refused (no parts give a query 1)",
            },
            default="arithmetic",
            group="averaging",
            stage="aggregate",
            parse_open=_parse_geometric,
            open_meaning="'geometric:EPS': the geometric mean with every value raised to EPS first",
            swept=("arithmetic", "geometric", "micro"),
            phrases={"arithmetic": "the arithmetic mean over queries",
                     "geometric": "the geometric mean over queries (trec_eval's gm_)",
                     "micro": "numerators and denominators summed over queries (micro average)"},
        ),
        Axis(
            "bpref_denominator",
            "what bpref divides the count of judged non-relevant documents above a relevant one by",
            {
                "min_r_n": "min(R, N), R relevant and N judged non-relevant documents (trec_eval "
                           "8 and later, ranx)",
                "r": "R, the formula of Buckley & Voorhees 2004 (and of ranx's docstring)",
            },
            default="min_r_n",
            group="named",
            stage="formula",
            swept=("min_r_n", "r"),
            phrases={"min_r_n": "bpref over min(R, N)", "r": "bpref over R"},
        ),
        Axis(
            "iprec_rank",
            "how many relevant documents a recall level x asks for, out of R, in interpolated precision",
            {
                "round": "round(x R), halves away from zero (trec_eval 10: lround)",
                "floor_plus_0.9": "floor(x R + 0.9) (trec_eval 9 and pytrec_eval)",
            },
            default="round",
            group="named",
            stage="formula",
            swept=("round", "floor_plus_0.9"),
            phrases={"round": "recall levels rounded (trec_eval 10)",
                     "floor_plus_0.9": "recall levels as floor(x R + 0.9) (trec_eval 9)"},
        ),
        Axis(
            "err_max_grade",
            "the grade g_max that ERR's stopping probability (2^g - 1) / 2^g_max divides by",
            {},
            default=4,
            group="named",
            stage="formula",
            parse_open=_parse_int("err_max_grade", 1),
            open_meaning="a positive integer g_max (gdeval: 4); a label above it is refused",
            swept=(4,),
            phrases={4: "ERR over grade 4 (gdeval)"},
            open_phrase="ERR over grade {}",
        ),
        Axis(
            "rbp_gain",
            "what a document at rank i contributes to rank-biased precision",
            {
                "binary": "1 for a relevant document (label >= L), else 0 (Moffat & Zobel; "
                          "cwl_eval through ir_measures' rel=)",
                "label": "its label when the label is L or above, else 0 (ranx)",
                "label_over_max": "every positive label divided by the largest label of the "
                                  "query when that exceeds 1; the threshold is not read "
                                  "(trec_eval 10's rbp)",
            },
            default="binary",
            group="named",
            stage="formula",
            swept=("binary", "label", "label_over_max"),
            phrases={"binary": "binary RBP gains", "label": "RBP gains = labels",
                     "label_over_max": "RBP gains = label / the largest label"},
        ),
        Axis(
            "weights_horizon",
            "how many ranks a user model (RBP and the C/W/L measures) reads, its weights "
            "renormalised to sum to 1 over them",
            {"none": "every rank of an endless list: RBP's weights (1 - p) p^(i-1)"},
            default=None,
            group="named",
            stage="formula",
            parse_open=_parse_int("weights_horizon", 1),
            open_meaning="a positive integer N: ranks 1..N only, gains past the list 0 (cwl_eval: 1000)",
            swept=(None, 1000),
            phrases={None: "an endless user model", 1000: "a user model over 1000 ranks (cwl_eval)"},
            open_phrase="a user model over {} ranks",
            stored={"none": None},
        ),
        Axis(
            "residual_tail",
            "whether the RBP residual holds the weight of the ranks past the end of the list",
            {
                "unjudged_only": "only when some retrieved document is unjudged; 0 otherwise "
                                 "(trec_eval 10's rbp_resid)",
                "always": "always (Moffat & Zobel 2008: the residual is the weight of every "
                          "unjudged or unranked position)",
            },
            default="unjudged_only",
            group="named",
            stage="formula",
            swept=("unjudged_only", "always"),
            phrases={"unjudged_only": "the residual without the tail unless something is unjudged",
                     "always": "the residual with the tail"},
        ),
        Axis(
            "negative_ideal",
            "what nDCG does with a query whose ideal DCG is negative (negative gains kept)",
            {
                "empty": "an ideal DCG <= 0 makes the query empty (0/0: empty_query decides)",
                "divide": "a negative ideal DCG divides the DCG like any other, so the value "
                          "may exceed 1 or be negative; only an ideal of exactly 0 is empty "
                          "(torchmetrics' functional retrieval_normalized_dcg; scikit-learn's "
                          "ndcg_score before it refused negative labels)",
            },
            default="empty",
            group="named",
            stage="denominator",
            # without a negative label every gain is >= 0, so no ideal is below 0 and the two
            # agree: the sweep tries divide only on inputs with one (reference.sweep)
            swept=("empty", "divide"),
            phrases={"empty": "negative ideals as empty queries",
                     "divide": "negative ideals divided through"},
            explorer_idle="grades are 0..3: no ideal DCG below 0",
        ),
        Axis(
            "unretrieved",
            "judged documents of a run query that the run did not retrieve",
            {
                "absent": "they are not in the ranked list (they count in R and the ideal only)",
                "appended": "each is added to its query's list with score 0, after the run's "
                            "own documents, before anything is scored (code that builds "
                            "scikit-learn's y_true / y_score from qrels and a run)",
            },
            default="absent",
            group="input",
            stage="input",
            phrases={"absent": "unretrieved judged documents left out of the lists",
                     "appended": "unretrieved judged documents appended with score 0"},
            explorer_idle="the list holds every judged document: none is left to append",
        ),
        Axis(
            "batch",
            "how the queries' lists are handed to a metric",
            {
                "per_query": "each query's list is ranked and scored on its own",
                "flattened": "every scored query's documents form one ranking, scored as one "
                             "query holding all their judgments (a 2-D batch handed to a "
                             "per-list function, as torchmetrics' functional retrieval_* "
                             "flatten it): one value, named by the first query id",
            },
            default="per_query",
            group="input",
            stage="input",
            phrases={"per_query": "each query ranked on its own",
                     "flattened": "the queries flattened into one ranking"},
            explorer_idle="one query: flattening the queries changes nothing",
        ),
    ]
}
assert all(a.group in GROUPS for a in AXES.values())

EXPLORER_AXES: tuple[str, ...] = tuple(a.name for a in AXES.values() if a.explorer)


class _ConventionsMethods:
    """The behaviour of :class:`Conventions`; its fields are made from :data:`AXES`."""

    def __post_init__(self) -> None:
        for name, axis in AXES.items():
            value = getattr(self, name)
            stored = axis.parse(value)
            if stored != value:
                object.__setattr__(self, name, stored)

    def replace(self, **changes: Any) -> "Conventions":
        """A copy with ``changes``, each read by its axis as the constructor reads it. The
        other axes hold stored values already (an axis reads its stored value as itself), so
        only the changed ones are read: the sweep builds thousands of convention sets."""
        unknown = [k for k in changes if k not in AXES]
        if unknown:
            raise ConventionError(_unknown_axis_message(unknown[0]))
        stored = {name: AXES[name].parse(value) for name, value in changes.items()}
        conv = object.__new__(type(self))
        conv.__dict__.update(self.__dict__)
        conv.__dict__.update(stored)
        return conv

    def with_settings(self, settings: list[str] | tuple[str, ...]) -> "Conventions":
        """Apply ``["gain=exponential", "ties=input_order"]`` (the CLI's ``--set``)."""
        return self.replace(**dict(parse_setting(s) for s in settings))

    def to_dict(self) -> dict[str, str]:
        """Axis -> public text, in the axis order of :data:`AXES`."""
        return {name: format_value(getattr(self, name)) for name in AXES}

    def differing_axes(self, other: "Conventions") -> list[str]:
        return [name for name in AXES if getattr(self, name) != getattr(other, name)]


def _field(axis: Axis):
    # A mutable default is impossible here: every stored value is a str, an int or None.
    return (axis.name, Any, field(default=axis.default))


Conventions = dataclasses.make_dataclass(
    "Conventions",
    [_field(a) for a in AXES.values()],
    bases=(_ConventionsMethods,),
    frozen=True,
    namespace={"__module__": __name__},
)
Conventions.__doc__ = (
    "One value on every axis of :data:`AXES` (one field per axis, defaulting to the axis'"
    " ``default``). Build with ``Conventions(gain='exponential')``, ``base.replace(...)`` or"
    " ``base.with_settings(['gain=exponential'])``."
)


def _unknown_axis_message(name: str) -> str:
    close = _close_matches(name, list(AXES), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return f"unknown axis {name!r}: known axes are {', '.join(AXES)}{hint}"


def parse_setting(text: str) -> tuple[str, Any]:
    """``"gain=exponential"`` -> ("gain", "exponential"), validated."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not value.strip():
        raise ConventionError(f"setting {text!r}: expected axis=value, such as gain=exponential")
    if name not in AXES:
        raise ConventionError(_unknown_axis_message(name))
    return name, AXES[name].parse(value)


def readme_table() -> str:
    """The README's axis table, made from the records (a test holds the README to it): each
    axis with what it decides and its values with their meanings, the default in bold."""
    rows = ["| axis | what it decides | values (default in bold) |", "|---|---|---|"]
    for a in AXES.values():
        default = format_value(a.default)
        values = [f"**`{v}`**: {m}" if v == default else f"`{v}`: {m}" for v, m in a.values.items()]
        if a.open_meaning:
            open_default = default not in a.values
            values.append(f"**{a.open_meaning}** (default {default})" if open_default else a.open_meaning)
        rows.append(f"| `{a.name}` | {a.meaning} | {'; '.join(values)} |")
    return "\n".join(rows)


# The trec_eval command line, which the edge-case corpus takes as its base. trec_eval 9 (whose C
# code the Python binding pytrec_eval-terrier carries: see conformance.libs.trec_eval) stores
# scores as C float, so they are narrowed to float32 before sorting; trec_eval 10 keeps doubles.
# The command line reads labels with atol (truncation) and ignores recip_rank's cutoff.
# Interpolated precision's recall levels: trec_eval 9 asks for floor(x R + 0.9) relevant
# documents, trec_eval 10 for lround(x R) (m_iprec_at_recall.c, m_11pt_avg.c; the published
# outputs of both versions differ there and only there among the measures of both). rbp exists
# in trec_eval 10 only: its gains are the labels scaled by the query's largest (m_rbp.c).
TREC_EVAL = Conventions(label_type="int_truncate", score_precision="float32", rr_cutoff="ignore",
                        iprec_rank="floor_plus_0.9", rbp_gain="label_over_max")
TREC_EVAL10 = TREC_EVAL.replace(score_precision="float64", iprec_rank="round")

"""The deterministic judge on hand cases (negation, swapped numbers and names, facts recombined
from two sentences, repetition, padding) and the text rules it shares with correctness
(Unicode normalisation, case folding, scripts without spaces, stopwords per language). Each
expectation is worked out by hand in the comments."""

from __future__ import annotations

import random

import pytest

from conformance.rag import text
from conformance.rag.judges import OverlapJudge, RelevanceTask, SupportTask

CONTEXT = ("Quindal is a market town on the river Brisk. Quindal is twinned with Vardried.",
           "About 11,900 people live in Stadquin. The museum of Stadquin opens at nine.")


def grade(claim, context=CONTEXT, **kw):
    return OverlapJudge(**kw).support_many([SupportTask((claim,), context)])[0].grades[0]


def relevance(question, answer, context=CONTEXT):
    return OverlapJudge().relevance_many([RelevanceTask(question, answer, context)])[0].score


def test_a_supported_claim_is_fully_supported():
    # every content token (quindal, twinned, vardried) is in sentence 2 of passage 1
    assert grade("Quindal is twinned with Vardried.") == 2


@pytest.mark.parametrize("claim", [
    "Quindal has not been twinned with Vardried.",  # the claim negates, the sentence does not
    "Quindal isn't twinned with Vardried.",
    "Quindal is never twinned with Vardried.",
])
def test_a_negated_claim_is_not_supported_by_the_positive_sentence(claim):
    # before: "not" was a stopword, so the claim's tokens were all in the context: grade 2
    assert grade(claim) == 0


def test_a_claim_is_not_supported_by_a_negated_sentence():
    assert grade("Quindal is twinned with Vardried.", ("Quindal is not twinned with Vardried.",)) == 0
    assert grade("Quindal is not twinned with Vardried.", ("Quindal is not twinned with Vardried.",)) == 2


def test_a_swapped_number_is_not_supported():
    # "12" is not in the sentence that holds people, live, stadquin: the number is required
    assert grade("About 12,900 people live in Stadquin.") == 0
    assert grade("About 11,900 people live in Stadquin.") == 2


def test_a_swapped_name_is_not_supported():
    # Ostrand (a name after the first word) is in no sentence
    assert grade("Quindal is twinned with Ostrand.") == 0
    # a name that opens the claim is required when the context writes it as a name
    assert grade("Stadquin is twinned with Vardried.") == 0


def test_facts_recombined_from_two_sentences_are_not_supported():
    # quindal, 11, 900, people, live are all in the context, but no one sentence holds
    # both Quindal and 11,900: before, the bag of words over the whole context said 2
    assert grade("About 11,900 people live in Quindal.") == 0
    # the market town sentence and the twinning sentence together: no one sentence holds
    # market, brisk and vardried -> best is sentence 1 (quindal, market, town, brisk: 4 of 5)
    # but Vardried, a required name, is not in it, nor Brisk in sentence 2 -> 0
    assert grade("Quindal, a market town on the Brisk, is twinned with Vardried.") == 0


def test_partial_support_is_graded_one():
    # claim tokens: quindal, market, town, brisk, old (5); sentence 1 holds 4: 0.8 -> grade 2
    assert grade("Quindal is an old market town on the Brisk.") == 2
    # tokens quindal, market, town, brisk, old, busy (6): 4/6 = 0.67 -> grade 1
    assert grade("Quindal is an old busy market town on the Brisk.") == 1


def test_padding_an_answer_lowers_its_faithfulness_and_relevance():
    j = OverlapJudge()
    supported = "Quindal is twinned with Vardried."
    padding = "The harbour of Quindal freezes every winter."  # harbour, freezes, winter: in no sentence
    grades = j.support_many([SupportTask((supported, padding), CONTEXT)])[0].grades
    assert grades == [2, 0]  # faithfulness 1/2
    q = "Which town is Quindal twinned with?"
    # N = answer tokens not in the question: vardried (1) -> in passage 1 -> 1.0
    assert relevance(q, "Vardried.") == 1.0
    # N = vardried, museum, opens, nine, sundays: the passage that best matches the question
    # (passage 1: quindal, twinned, town = 3 of 3) holds vardried only -> 1/5
    assert relevance(q, "Vardried. The museum opens at nine on Sundays.") == pytest.approx(0.2)


def test_relevance_does_not_reward_repetition_or_echo():
    q = "Which town is Quindal twinned with?"
    # before: every question term present -> 1.0, however often repeated; now nothing new -> 0
    assert relevance(q, "Quindal Quindal twinned twinned town town") == 0.0
    assert relevance(q, "Quindal is twinned with a town.") == 0.0
    # a correct short answer (before: 0.0, no question term in it) and the same answer
    # restating the question score the same
    assert relevance(q, "Vardried.") == relevance(q, "Quindal is twinned with Vardried.") == 1.0
    # repeating the answer's new word does not raise it either
    assert relevance(q, "Vardried Vardried Vardried.") == 1.0
    # an off-topic answer taken from another passage: museum, stadquin, opens, nine not in passage 1
    assert relevance(q, "The museum of Stadquin opens at nine.") == 0.0


def test_random_fifteen_word_answers_over_twenty_long_passages_score_near_zero():
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(5000)]
    judge = OverlapJudge()
    tasks, rel = [], []
    for _ in range(200):
        passages = tuple(" ".join(rng.choice(vocab) for _ in range(40)) + "." for _ in range(20))
        answer = " ".join(rng.choice(vocab) for _ in range(15)) + "."
        question = " ".join(rng.choice(vocab) for _ in range(6)) + "?"
        tasks.append(SupportTask((answer,), passages))
        rel.append(RelevanceTask(question, answer, passages))
    grades = [r.grades[0] for r in judge.support_many(tasks)]
    # a 15-word claim against a 40-word sentence of a 5,000-word vocabulary: about 0.12
    # words in common; 0.5 of them (8 words) is far out of reach. Before: 1.000.
    assert sum(g >= 1 for g in grades) / len(grades) <= 0.01
    scores = [r.score for r in judge.relevance_many(rel)]
    assert sum(scores) / len(scores) <= 0.05


# --------------------------------------------------------------------------------------------
# text rules


def test_decomposed_and_composed_text_are_the_same():
    decomposed = "Cafe\u0301 Zorbel sells coffee."
    assert text.contains(decomposed, "café")
    assert grade("Café Zorbel sells coffee.", (decomposed,)) == 2


def test_sharp_s_is_one_rule_for_the_judge_and_correctness():
    # casefold: ß -> ss, so STRASSE and Straße are one word for both
    assert text.tokens("Straße") == text.tokens("STRASSE") == ["strasse"]
    assert text.contains("Die lange Straße.", "STRASSE")
    assert grade("Die Straße ist lang.", ("Die STRASSE ist lang.",), stopwords="de") == 2


def test_full_width_digits_are_digits():
    assert text.contains("人口は１１９００人", "11900")


def test_japanese_and_chinese_split_into_characters():
    assert text.words("東京は首都") == ["東", "京", "は", "首", "都"]
    # correctness finds the gold answer inside a sentence with no spaces
    assert text.contains("日本の首都は東京です。", "東京")
    assert not text.contains("日本の首都は京都です。", "東京")
    # claims end at 。 without a following space
    assert text.claims("東京は首都です。大阪は大きい。") == ["東京は首都です。", "大阪は大きい。"]
    # a claim is supported by its sentence, and a negated one (不) is not
    ctx = ("北京是中国的首都。",)
    assert grade("北京是中国的首都。", ctx, stopwords="none") == 2
    assert grade("北京不是中国的首都。", ctx, stopwords="none") == 0


def test_stopwords_per_language_or_none():
    assert text.tokens("the bucket", stopwords="none") == ["the", "bucket"]
    assert text.tokens("der Eimer ist voll", stopwords="de") == ["eimer", "voll"]
    assert text.tokens("le seau est plein", stopwords="fr") == ["seau", "plein"]
    from conformance.errors import ConformanceError

    with pytest.raises(ConformanceError, match="stopwords 'xx'"):
        text.tokens("a", stopwords="xx")


def test_negation_in_other_languages():
    assert text.negated("Quindal ist nicht verschwistert.")
    assert text.negated("Quindal n'est pas jumelée.")
    assert not text.negated("Quindal ist verschwistert.")

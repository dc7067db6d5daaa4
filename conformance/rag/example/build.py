"""The example's corpus (300 passages) and gold file (40 queries), generated from templates.

A fictional province of 30 towns. Each town has eight passages, one per fact (an overview, its
founding, its population, its trade, its festival, its river, its market day, its twin town),
and the province has 60 passages that name no town (distractors about districts, trades and
customs). Every passage is a fact sentence and a second sentence about the same town.

Queries, in three classes:

- ``literal``: the question reuses the fact sentence's words ("In which year was Brenvik
  founded?");
- ``paraphrased``: the same facts asked in other words ("When did the first settlers make
  their homes in Brenvik?"): a lexical retriever finds the town, not the fact;
- ``multi_topic``: a comparison of two towns, which needs both towns' passages ("Which was
  founded earlier, Brenvik or Tollmere?").

Gold: the fact passage has grade 2, the town's overview grade 1 (it names the town's trade and
river, so it is related to every question about the town); a comparison's two fact passages
have grade 2. ``gold_answer_substring`` is the fact's value (a year, a number, a name); for a
comparison, the value that decides it. Everything is drawn from one seeded ``random.Random``:
``python -m conformance.rag.example.build`` writes the same files every time.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 19

_SYLLABLES = ["bren", "vik", "tol", "mere", "ost", "mark", "hal", "vard", "kel", "dun", "ar", "wyn", "lor",
              "stad", "fen", "holm", "ried", "gar", "sel", "by", "mor", "ton", "ash", "ley", "quin", "rath",
              "ul", "ven", "dal", "cor", "pen", "wick"]
_RIVERS = ["Aldwater", "Brisk", "Corran", "Dunmoor", "Elsey", "Farrow", "Glenna", "Harl", "Isken", "Jorra"]
_REGIONS = ["Northmarch", "Saltcoast", "Greywold", "Lowfen", "Highcairn", "Emberdale"]
_TRADES = [("glassmaking", "glass furnaces"), ("shipbuilding", "slipways"), ("salt panning", "salt pans"),
           ("wool weaving", "weaving sheds"), ("copper mining", "copper pits"), ("timber milling", "sawmills"),
           ("cheese making", "dairies"), ("rope making", "ropewalks"), ("brewing", "breweries"),
           ("pottery", "kilns")]
_FESTIVALS = [("Lantern Fair", "paper lanterns"), ("Harvest Walk", "sheaves of barley"),
              ("Tide Feast", "strings of shells"), ("Bell Night", "ringing handbells"),
              ("Apple Moot", "baskets of apples"), ("Ember Parade", "torches")]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
_LANDMARKS = ["old mill", "chapel", "town hall", "stone well", "harbour wall", "clock tower"]
_FOUNDERS = ["fishing families", "a band of drovers", "monks from the coast", "miners from the hills",
             "traders from the south", "shepherds of the high pastures"]


def _towns(rng: random.Random, n: int = 30) -> list[str]:
    names: list[str] = []
    while len(names) < n:
        a, b = rng.sample(_SYLLABLES, 2)
        name = (a + b).capitalize()
        if name not in names and 6 <= len(name) <= 9:
            names.append(name)
    return names


def _facts(rng: random.Random, towns: list[str]) -> dict[str, dict]:
    years = rng.sample(range(1480, 1890), len(towns))
    pops = rng.sample(range(1200, 48000, 100), len(towns))
    twins = towns[1:] + towns[:1]
    out = {}
    for t, year, pop, twin in zip(towns, years, pops, twins):
        trade, works = rng.choice(_TRADES)
        fest, things = rng.choice(_FESTIVALS)
        out[t] = {
            "year": year, "pop": f"{pop:,}", "pop_n": pop, "trade": trade, "works": works,
            "festival": fest, "things": things, "month": rng.choice(_MONTHS), "river": rng.choice(_RIVERS),
            "region": rng.choice(_REGIONS), "day": rng.choice(_DAYS), "landmark": rng.choice(_LANDMARKS),
            "founders": rng.choice(_FOUNDERS), "twin": twin, "twin_year": rng.randrange(1950, 2011),
        }
    return out


def _passages(t: str, f: dict) -> dict[str, str]:
    return {
        "overview": f"{t} is a town of the {f['region']} district on the banks of the {f['river']}. "
                    f"It is known across the province for {f['trade']}.",
        "founded": f"{t} was founded in {f['year']} by {f['founders']}. "
                   f"The oldest street of {t} still follows the line of the first wooden fence.",
        "population": f"About {f['pop']} people live in {t} today. "
                      f"Most households of {t} sit in the old quarter near the {f['landmark']}.",
        "trade": f"The economy of {t} rests on {f['trade']}. "
                 f"The {f['works']} of {t} employ a third of its workers.",
        "festival": f"Every {f['month']}, {t} holds the {f['festival']}. "
                    f"During the celebration the lanes of {t} are hung with {f['things']}.",
        "river": f"{t} draws its water from the {f['river']}. "
                 f"A stone bridge carries the main road of {t} over the water.",
        "market": f"The weekly market of {t} is held on {f['day']} beside the {f['landmark']}. "
                  f"Farmers bring cheese, eggs and vegetables to {t} from the villages around.",
        "twin": f"{t} has been twinned with {f['twin']} since {f['twin_year']}. "
                f"Each summer a choir from {t} travels to sing there.",
    }


# (attribute, literal question, paraphrased question, gold value key)
_QUESTIONS = [
    ("founded", "In which year was {t} founded?", "When did the first settlers make their homes in {t}?", "year"),
    ("population", "How many people live in {t}?", "What is the number of residents of {t}?", "pop"),
    ("trade", "What does the economy of {t} rest on?", "Which craft earns most workers in {t} their wages?", "trade"),
    ("festival", "In which month does {t} hold its festival?", "At what time of year do crowds celebrate in {t}?", "month"),
    ("river", "Which river does {t} draw its water from?", "What stream supplies {t} with drinking supplies?", "river"),
    ("market", "On which day is the weekly market of {t} held?", "When can shoppers buy produce at the stalls in {t}?", "day"),
    ("twin", "Which town is {t} twinned with?", "What is the sister city of {t}?", "twin"),
]


def _distractors(rng: random.Random) -> list[str]:
    out = []
    for region in _REGIONS:
        trade, works = rng.choice(_TRADES)
        out.append(f"The {region} district counts eleven parishes and two ferry crossings. "
                   f"Its hill farms are older than any of its towns.")
        out.append(f"In the {region} district, {trade} began in small family {works}. "
                   f"Records of the trade go back to the first charters of the province.")
    for trade, works in _TRADES:
        out.append(f"Across the province, {trade} needs steady supplies of fuel and water. "
                   f"Guilds inspected the {works} twice a year.")
        out.append(f"Apprentices in {trade} served seven years before they could open their own {works}. "
                   f"Many settled far from where they trained.")
    for fest, things in _FESTIVALS:
        out.append(f"The {fest} is celebrated in several towns of the province. "
                   f"Each town decorates its streets with {things} in its own way.")
        out.append(f"Travellers planning to see a {fest} should book lodging early. "
                   f"Inns fill quickly in the week of the celebration.")
    for day in _DAYS:
        out.append(f"Markets held on {day} draw buyers from the surrounding farms. "
                   f"Stall keepers pay a small fee to the town council.")
    for river in _RIVERS:
        out.append(f"The {river} rises in the high moors and floods most springs. "
                   f"Mills along the {river} were rebuilt after the great flood.")
        out.append(f"Fishing on the {river} is allowed from April to September. "
                   f"Anglers need a licence from the river board.")
    out.append("Most towns of the province were founded between the fifteenth and nineteenth centuries. "
               "Their charters are kept in the provincial archive.")
    out.append("Town twinning links in the province began after the war. "
               "Choirs, schools and sports clubs exchange visits every year.")
    out.append("The provincial census counts residents every ten years. "
               "Its figures are rounded to the nearest hundred people.")
    out.append("Drinking water in the province comes from rivers, wells and reservoirs. "
               "Inspectors test it each month.")
    rng.shuffle(out)
    return out[:60]


def build() -> tuple[list[dict], list[dict]]:
    rng = random.Random(SEED)
    towns = _towns(rng)
    facts = _facts(rng, towns)
    texts: list[tuple[tuple[str, str] | None, str]] = []
    for t in towns:
        texts += [((t, attr), text) for attr, text in _passages(t, facts[t]).items()]
    texts += [(None, text) for text in _distractors(rng)]
    rng.shuffle(texts)  # the ids do not follow the towns
    corpus = [{"doc_id": f"d{i:03d}", "text": text} for i, (_, text) in enumerate(texts, 1)]
    doc_of = {key: c["doc_id"] for (key, _), c in zip(texts, corpus) if key is not None}

    gold: list[dict] = []
    picks = rng.sample([(t, q) for t in towns for q in range(len(_QUESTIONS))], 27)
    for i, (t, qi) in enumerate(picks):
        attr, literal, para, key = _QUESTIONS[qi]
        cls = "literal" if i < 14 else "paraphrased"
        main, overview = doc_of[t, attr], doc_of[t, "overview"]
        gold.append({"qid": "", "query": (literal if cls == "literal" else para).format(t=t),
                     "gold_doc_ids": [main], "graded_relevance": {main: 2, overview: 1},
                     "gold_answer_substring": str(facts[t][key]), "query_class": cls})
    pairs = rng.sample([(a, b) for a in towns for b in towns if a < b], 13)
    for j, (a, b) in enumerate(pairs):
        fa, fb = facts[a], facts[b]
        if j % 2 == 0:
            q = f"Which was founded earlier, {a} or {b}?"
            attr, answer = "founded", str(min(fa["year"], fb["year"]))
        else:
            q = f"Which has more people, {a} or {b}?"
            attr, answer = "population", fa["pop"] if fa["pop_n"] > fb["pop_n"] else fb["pop"]
        da, db = doc_of[a, attr], doc_of[b, attr]
        gold.append({"qid": "", "query": q, "gold_doc_ids": [da, db], "graded_relevance": {da: 2, db: 2},
                     "gold_answer_substring": answer, "query_class": "multi_topic"})
    for n, g in enumerate(gold, 1):
        g["qid"] = f"q{n:02d}"
    return corpus, gold


def write_jsonl(path: Path, records: list[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


def main() -> None:
    corpus, gold = build()
    write_jsonl(HERE / "corpus.jsonl", corpus)
    write_jsonl(HERE / "gold.jsonl", gold)
    print(f"wrote {len(corpus)} passages and {len(gold)} queries to {HERE}")


if __name__ == "__main__":
    main()

"""The house style of the simulated world: hidden rules, the concepts a skill can convey, and record rendering.

A record has fields (date, weight, code, price, name). Every rendering decision belongs to one *topic*:

| topic | the student's natural rendering | the house rendering when the topic's rule is hidden-active |
| --- | --- | --- |
| preamble | `Answer: <record>` for imperative requests ("Normalise …") | the bare record |
| separator | fields joined with `, ` | fields joined with ` | ` |
| date | as written (`3/5/2024`, month first) | ISO `2024-03-05` |
| weight | as written (`12.5 lb`) | metric `5.67 kg` (two decimals) |
| code | as written (`ab-12`) | upper case `AB-12` |
| decimals | amount as written (`4.2`) | two decimals `4.20` |
| currency | code after (`4.20 USD`) | symbol first (`$4.20`) |
| name | `Ada Lovelace` | `Lovelace, Ada` |

`pick_rules(seed, num_rules)` (via `tasks.hidden_rules(cfg)`) picks `num_rules` of the eight rules with the world
seed. Topics whose rule was not picked keep the student's natural rendering in the expected answers, so
conveying such a rule *hurts*.

What a skill conveys is decided by *concepts*, matched loosely: a concept is a set of alternative matchers, and
a matcher matches when one sentence of the skill contains all of its terms (case-insensitive; single words are
compared after light stemming, so "capitalised"/"capitals"/"capitalize" agree; terms with spaces or symbols are
substring phrases). Three kinds of concept exist per topic:
- the *rule* concept: render the topic in house style;
- the *plain* concept (the opposite: "keep weights in pounds"): force the natural rendering, overriding the rule;
- *harm* concepts that are wrong for every house ("write dates as DD/MM/YYYY", "explain your reasoning").
Plain and harm concepts are ignored in a sentence that negates ("not", "never", "instead", ...): "Never explain
your reasoning" does not make the student explain. Rule concepts are read even in contrastive sentences
("AB-12, not ab-12"). The reading is intentionally naive; it stands for a model that follows clear instructions.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache

TOPICS = ("preamble", "separator", "date", "weight", "code", "decimals", "currency", "name")
FIELD_OF_TOPIC = {"date": "date", "weight": "weight", "code": "code", "decimals": "price", "currency": "price",
                  "name": "name"}
SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£"}
LB_TO_KG = Decimal("0.45359237")


@dataclass(frozen=True)
class Concept:
    """Something a skill can tell the student. `kind`: rule | plain | harm. `matchers`: alternative term sets."""

    id: str
    topic: str
    kind: str
    summary: str
    matchers: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Rule:
    """A hidden house rule (= a topic's rule concept) with a before/after example for humans."""

    id: str
    topic: str
    summary: str
    natural: str
    house: str


RULES: tuple[Rule, ...] = (
    Rule("bare_record", "preamble", "reply with the bare record, no 'Answer:' label", "Answer: AB-12", "AB-12"),
    Rule("pipe_separator", "separator", "separate fields with ' | '", "3/5/2024, ab-12", "3/5/2024 | ab-12"),
    Rule("iso_date", "date", "dates in ISO 8601 (YYYY-MM-DD)", "3/5/2024", "2024-03-05"),
    Rule("metric_weight", "weight", "weights in kilograms, two decimals", "12.5 lb", "5.67 kg"),
    Rule("upper_code", "code", "codes in upper case", "ab-12", "AB-12"),
    Rule("two_decimals", "decimals", "amounts with exactly two decimals", "4.2 USD", "4.20 USD"),
    Rule("currency_symbol", "currency", "currency symbol before the amount", "4.2 USD", "$4.2"),
    Rule("last_first", "name", "names as 'Last, First'", "Ada Lovelace", "Lovelace, Ada"),
)
RULE_BY_TOPIC = {r.topic: r for r in RULES}

CONCEPTS: tuple[Concept, ...] = (
    # -- rule concepts: one per topic, several paraphrase matchers each
    Concept("bare_record", "preamble", "rule", "no preamble", (
        ("preamble",), ("only", "record"), ("just", "record"), ("record", "alone"), ("answer:", "not"),
        ("answer:", "never"), ("answer:", "without"), ("answer:", "no"), ("no", "label"))),
    Concept("pipe_separator", "separator", "rule", "pipe separator", (
        ("pipe",), ("vertical bar",), ("|", "field"), ("|", "separate"), ("|", "between"), ("|", "join"))),
    Concept("iso_date", "date", "rule", "ISO dates", (
        ("iso",), ("yyyy-mm-dd",), ("year-month-day",), ("year", "first", "date"))),
    Concept("metric_weight", "weight", "rule", "kilograms", (("kilogram",), ("kg",), ("metric",))),
    Concept("upper_code", "code", "rule", "upper-case codes", (
        ("uppercase", "code"), ("upper case", "code"), ("upper-case", "code"), ("capital", "code"),
        ("caps", "code"))),
    Concept("two_decimals", "decimals", "rule", "two decimals", (
        ("two", "decimal"), ("2", "decimal"), ("0.00",))),
    Concept("currency_symbol", "currency", "rule", "symbol first", (
        ("currency", "symbol"), ("symbol", "before"), ("symbol", "front"), ("symbol", "first"), ("$", "before"),
        ("$", "front"))),
    Concept("last_first", "name", "rule", "Last, First", (
        ("last, first",), ("surname", "first"), ("family name", "first"), ("last name", "first"),
        ("surname", "comma"))),
    # -- plain concepts: keep the natural rendering (the right thing when the topic's rule is not hidden-active)
    Concept("answer_label", "preamble", "plain", "start with 'Answer:'", (
        ("begin", "answer:"), ("start", "answer:"), ("prefix", "answer:"), ("label", "answer:"))),
    Concept("comma_separator", "separator", "plain", "comma separator", (
        ("comma", "separate"), ("comma", "between"), ("comma", "join"), ("comma-separated",))),
    Concept("date_as_written", "date", "plain", "dates as written", (
        ("date", "as written"), ("date", "as given"), ("date", "unchanged"), ("m/d/yyyy",))),
    Concept("keep_pounds", "weight", "plain", "weights in pounds", (
        ("keep", "pound"), ("leave", "pound"), ("imperial",))),
    Concept("lower_code", "code", "plain", "lower-case codes", (("lowercase",), ("lower case",), ("lower-case",))),
    Concept("amount_as_written", "decimals", "plain", "amounts as written", (
        ("amount", "as written"), ("price", "as written"), ("amount", "unchanged"), ("price", "unchanged"))),
    Concept("code_after", "currency", "plain", "currency code after the amount", (
        ("currency code", "after"), ("code", "after", "amount"))),
    Concept("first_last", "name", "plain", "First Last", (
        ("first last",), ("given name first",), ("first name first",))),
    # -- harm concepts: wrong for every house style
    Concept("explain", "preamble", "harm", "adds an explanation line", (
        ("explain",), ("explanation",), ("reasoning",), ("show", "work"), ("step by step",), ("justify",))),
    Concept("semicolon_separator", "separator", "harm", "semicolon separator", (("semicolon",),)),
    Concept("day_first", "date", "harm", "dates as DD/MM/YYYY", (
        ("dd/mm/yyyy",), ("day first",), ("day", "before", "month"))),
    Concept("whole_numbers", "decimals", "harm", "numbers rounded to whole numbers", (
        ("whole number",), ("round", "integer"), ("nearest integer",))),
)

_NEGATION = re.compile(r"\b(not|never|no|avoid|without|instead|rather|nor)\b|n't\b")
_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(`*])")


def stem(word: str) -> str:
    """Light stemming so inflections and British/American spellings agree (capitalised ~ capitalize ~ capitals)."""
    w = word.lower()
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("ing") and len(w) > 5:
        w = w[:-3]
    elif w.endswith("ed") and len(w) > 4:
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss") and len(w) > 3:
        w = w[:-1]
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    if w.endswith(("is", "iz")) and len(w) > 6:
        w = w[:-2]
    return w


def _is_word(term: str) -> bool:
    return _WORD.fullmatch(term) is not None


def sentences(text: str) -> list[str]:
    """Lines, split further at sentence ends; markdown bullets and headers are just text here."""
    out: list[str] = []
    for line in (text or "").splitlines():
        line = line.strip()
        if line:
            out.extend(s for s in _SENTENCE_END.split(line) if s.strip())
    return out


def _compile(matcher: tuple[str, ...]) -> tuple[frozenset[str], tuple[str, ...]]:
    """(stemmed words, substring phrases) of a matcher."""
    return (frozenset(stem(t) for t in matcher if _is_word(t)), tuple(t for t in matcher if not _is_word(t)))


_COMPILED: tuple[tuple[Concept, tuple[tuple[frozenset[str], tuple[str, ...]], ...]], ...] = tuple(
    (c, tuple(_compile(m) for m in c.matchers)) for c in CONCEPTS)


@dataclass(frozen=True)
class SkillReading:
    """What the simulated student takes from a skill: concepts by kind, and its length in non-empty lines."""

    rules: frozenset[str]  # topics whose rule concept is conveyed
    plain: frozenset[str]  # topics whose plain concept is conveyed (overrides the rule)
    harms: frozenset[str]  # harm concept ids
    lines: int

    @property
    def concepts(self) -> frozenset[str]:
        ids = {RULE_BY_TOPIC[t].id for t in self.rules}
        ids |= {c.id for c in CONCEPTS if c.kind == "plain" and c.topic in self.plain}
        return frozenset(ids | self.harms)


@lru_cache(maxsize=256)  # (the texts of a few steps: each entry holds a whole skill text, and a run makes new ones
def read_skill(text: str) -> SkillReading:  # every step, so 4,096 of them grew a long run's memory by megabytes)
    """The concepts `text` conveys (see the module docstring). Pure and cached: the loop reuses skills a lot."""
    rules, plain, harms = set(), set(), set()
    for sentence in sentences(text):
        norm = " ".join(sentence.lower().split())
        stems = frozenset(stem(w) for w in _WORD.findall(norm))
        negated = _NEGATION.search(norm) is not None
        for c, matchers in _COMPILED:
            if c.kind != "rule" and negated:
                continue  # "never explain", "not DD/MM/YYYY": a negated instruction is not followed as stated
            if any(words <= stems and all(p in norm for p in phrases) for words, phrases in matchers):
                if c.kind == "rule":
                    rules.add(c.topic)
                elif c.kind == "plain":
                    plain.add(c.topic)
                else:
                    harms.add(c.id)
    lines = sum(1 for line in (text or "").splitlines() if line.strip())
    return SkillReading(frozenset(rules), frozenset(plain), frozenset(harms), lines)


def pick_rules(seed: int, num_rules: int) -> tuple[Rule, ...]:
    """The `num_rules` rules of the house (in TOPICS order), chosen by `seed`. Never shown to the teacher."""
    if not 0 <= num_rules <= len(RULES):
        raise ValueError(f"num_rules must be between 0 and {len(RULES)}, got {num_rules}")
    chosen = set(random.Random(f"skillgit-world:{seed}:rules").sample(range(len(RULES)), num_rules))
    return tuple(r for i, r in enumerate(RULES) if i in chosen)


# ---------------------------------------------------------------------------------------------- rendering
def _q(value: Decimal, places: int) -> str:
    return str(value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))


def _render_field(kind: str, raw: str, styled: frozenset[str], harms: frozenset[str]) -> str:
    whole = "whole_numbers" in harms
    if kind == "date":
        m, d, y = (int(x) for x in raw.split("/"))
        if "day_first" in harms:
            return f"{d:02d}/{m:02d}/{y:04d}"
        return f"{y:04d}-{m:02d}-{d:02d}" if "date" in styled else raw
    if kind == "weight":
        number, unit = raw.split()
        if "weight" in styled:
            kg = Decimal(number) * LB_TO_KG
            return f"{_q(kg, 0 if whole else 2)} kg"
        return f"{_q(Decimal(number), 0) if whole else number} {unit}"
    if kind == "code":
        return raw.upper() if "code" in styled else raw
    if kind == "price":
        amount, cur = raw.split()
        if whole:
            amount = _q(Decimal(amount), 0)
        elif "decimals" in styled:
            amount = _q(Decimal(amount), 2)
        return f"{SYMBOLS[cur]}{amount}" if "currency" in styled else f"{amount} {cur}"
    if kind == "name":
        first, last = raw.split(" ", 1)
        return f"{last}, {first}" if "name" in styled else raw
    return raw


def render_record(fields: list[tuple[str, str]], styled: frozenset[str] | set[str],
                  harms: frozenset[str] | set[str] = frozenset(), explanation: str = "", label: bool = True) -> str:
    """Render `fields` ((kind, raw value) pairs) with the topics in `styled` in house style and `harms` applied.
    `label`: whether the natural rendering starts with "Answer: " (the student labels answers to imperative
    requests, see tasks.labels_answer); the house style of the preamble topic never does.

    The expected answer of an item is `render_record(fields, hidden topics, label=...)`; the student renders with
    what it took from the skill (plus slips). One function for both, so they can only differ by the topics, the
    label and the harms.
    """
    styled, harms = frozenset(styled), frozenset(harms)
    parts = [_render_field(kind, raw, styled, harms) for kind, raw in fields]
    sep = "; " if "semicolon_separator" in harms else (" | " if "separator" in styled else ", ")
    text = sep.join(parts)
    if label and "preamble" not in styled:
        text = "Answer: " + text
    if "explain" in harms:
        text += "\n" + (explanation or "Explanation: I rewrote each field in the house style.")
    return text


def relevant_topics(fields: list[tuple[str, str]], label: bool = True) -> list[str]:
    """Topics whose rendering can change this record's answer (a slip on any other topic has no effect)."""
    kinds = {k for k, _ in fields}
    out = ["preamble"] if label else []
    if len(fields) > 1:
        out.append("separator")
    out += [t for t in TOPICS[2:] if FIELD_OF_TOPIC[t] in kinds]
    return out

"""The simulated teacher's repertoire: candidate fixes per symptom, as an imperfect human teacher would have.

For every symptom `(topic, want)` (see diagnose.py) the teacher knows
- `good` ideas: clear instructions towards what the expected text shows, in several paraphrases (some of them
  too vague or idiomatic for the student to pick up: a real teacher's wording does not always land);
- `vague` ideas: well-meant but useless ("Double-check dates.");
- `harmful` ideas: plausible-sounding but wrong ("Write dates as DD/MM/YYYY.", "Explain your reasoning ...");
- `causes`: regexes for skill lines that probably produce the symptom (what the teacher would delete or
  rewrite), e.g. a line mentioning DD/MM when the expected dates are ISO.
The texts are fixed so that a rejected idea can be recognised when it comes back. Which idea is *actually* good
depends on the hidden rules, which the teacher never sees; it only follows the direction of the expected text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Ideas:
    good: tuple[str, ...]
    vague: tuple[str, ...]
    harmful: tuple[str, ...]
    causes: tuple[str, ...] = ()  # regexes (case-insensitive) for skill lines that likely cause the symptom
    topic_words: tuple[str, ...] = ()  # words that locate related lines (insert_after targets)


_EXPLAIN_CAUSES = (r"\bexplain", r"\breasoning\b", r"step by step", r"show (your|the) work", r"\bjustif")

LEXICON: dict[tuple[str, str], Ideas] = {
    ("preamble", "none"): Ideas(
        good=("Reply with only the normalised record, without any preamble.",
              "Do not start the reply with 'Answer:'; output the record alone.",
              "Output just the record itself, with no label in front.",
              "Give the bare record as the whole reply."),
        vague=("Keep the reply short.", "Be concise."),
        harmful=("Explain your reasoning briefly, then give the record.",
                 "Begin the reply with 'Answer:' so the record is clearly marked."),
        causes=(r"(begin|start|prefix|label).*answer:", *_EXPLAIN_CAUSES),
        topic_words=("reply", "answer", "output")),
    ("preamble", "label"): Ideas(
        good=("Begin the reply with 'Answer: ' followed by the record.",
              "Start every reply with the label 'Answer:'."),
        vague=("Mark the answer clearly.",),
        harmful=("Reply with only the normalised record, without any preamble.",),
        causes=(r"only the (normalised )?record", r"preamble", r"record (alone|itself)", r"just the record",
                r"no label", r"bare record"),
        topic_words=("reply", "answer", "output")),
    ("extra_text", "none"): Ideas(
        good=("Do not add explanations or notes after the record.",
              "Never explain your reasoning; the reply is the record only.",
              "Stop after the record: no extra lines."),
        vague=("Keep answers tidy.",),
        harmful=("Show your work so the answer can be checked.",),
        causes=_EXPLAIN_CAUSES,
        topic_words=("reply", "answer", "output")),
    ("separator", "pipe"): Ideas(
        good=("Separate fields with ' | ' (space, pipe, space).",
              "Put a pipe character between fields, e.g. 2024-03-05 | AB-12.",
              "Join the fields with ' | ' instead of commas.",
              "Use a vertical bar to divide the fields.",
              "Fields are delimited the house way, not with commas."),
        vague=("Make the fields easy to tell apart.", "Use a consistent separator."),
        harmful=("Separate fields with commas.", "Separate fields with semicolons."),
        causes=(r"\bcomma", r"semicolon"),
        topic_words=("field", "separat")),
    ("separator", "comma"): Ideas(
        good=("Separate fields with a comma and a space.", "Use commas between fields, not pipes."),
        vague=("Use a consistent separator.",),
        harmful=("Separate fields with ' | ' (space, pipe, space).",),
        causes=(r"\|", r"\bpipe", r"vertical bar", r"semicolon"),
        topic_words=("field", "separat")),
    ("separator", "semicolon"): Ideas(
        good=("Separate fields with semicolons.",),
        vague=("Use a consistent separator.",),
        harmful=("Separate fields with commas.",),
        causes=(r"\|", r"\bpipe", r"\bcomma"),
        topic_words=("field", "separat")),
    ("date", "iso"): Ideas(
        good=("Write every date in ISO format (YYYY-MM-DD).",
              "Dates: put the year first, as in 2024-03-05.",
              "Use yyyy-mm-dd for all dates.",
              "Format dates the international way."),
        vague=("Double-check dates.", "Make sure dates are valid."),
        harmful=("Write dates as DD/MM/YYYY.", "Keep dates exactly as written in the input (e.g. 3/5/2024)."),
        causes=(r"dd/mm", r"day first", r"m/d/y", r"dates?.*(as written|as given|unchanged)"),
        topic_words=("date",)),
    ("date", "as_written"): Ideas(
        good=("Keep dates exactly as written in the input (e.g. 3/5/2024).",),
        vague=("Double-check dates.",),
        harmful=("Write every date in ISO format (YYYY-MM-DD).", "Write dates as DD/MM/YYYY."),
        causes=(r"\biso\b", r"yyyy-mm-dd", r"year first", r"dd/mm", r"day first"),
        topic_words=("date",)),
    ("weight", "kg"): Ideas(
        good=("Convert weights from pounds to kilograms (1 lb = 0.4536 kg), e.g. 5.67 kg.",
              "Use metric units: weights in kg with two decimals.",
              "Give weights in kilograms.",
              "Weights should not be in pounds."),
        vague=("Check the units.",),
        harmful=("Keep weights in pounds.",),
        causes=(r"(keep|leave).*pound", r"imperial"),
        topic_words=("weight", "unit")),
    ("weight", "lb"): Ideas(
        good=("Keep weights in pounds, as written in the input.",),
        vague=("Check the units.",),
        harmful=("Give weights in kilograms.",),
        causes=(r"kilogram", r"\bkg\b", r"metric"),
        topic_words=("weight", "unit")),
    ("code", "upper"): Ideas(
        good=("Write codes in uppercase letters (AB-12).",
              "Codes must be capitalised, e.g. AB-12 rather than ab-12.",
              "Uppercase all product codes.",
              "Make codes shout."),
        vague=("Copy codes carefully.",),
        harmful=("Write codes in lowercase.",),
        causes=(r"lower[ -]?case",),
        topic_words=("code",)),
    ("code", "lower"): Ideas(
        good=("Keep codes in lowercase, as written.",),
        vague=("Copy codes carefully.",),
        harmful=("Write codes in uppercase letters (AB-12).",),
        causes=(r"upper[ -]?case", r"capital", r"\bcaps\b"),
        topic_words=("code",)),
    ("decimals", "two"): Ideas(
        good=("Show every amount with exactly two decimals (4.20).",
              "Always give prices with 2 decimal places.",
              "Pad amounts to two decimal places, e.g. 12.50.",
              "Write amounts to the cent."),
        vague=("Be precise with numbers.",),
        harmful=("Round numbers to whole numbers.", "Keep amounts exactly as written in the input."),
        causes=(r"whole number", r"integer", r"(amount|price)s?.*(as written|unchanged)"),
        topic_words=("amount", "price", "decimal")),
    ("decimals", "as_written"): Ideas(
        good=("Keep amounts exactly as written in the input.",),
        vague=("Be precise with numbers.",),
        harmful=("Show every amount with exactly two decimals (4.20).", "Round numbers to whole numbers."),
        causes=(r"decimal", r"whole number", r"integer"),
        topic_words=("amount", "price")),
    ("currency", "symbol_first"): Ideas(
        good=("Put the currency symbol before the amount ($4.20, not 4.20 USD).",
              "Use currency symbols ($, €, £) in front of prices instead of currency codes.",
              "Prices start with their symbol: $4.20, €3.10, £7.00."),
        vague=("Mention the currency.",),
        harmful=("Write the currency code after the amount (4.20 USD).",),
        causes=(r"code after", r"after the amount"),
        topic_words=("price", "currency", "amount")),
    ("currency", "code_after"): Ideas(
        good=("Write the currency code after the amount (4.20 USD).",),
        vague=("Mention the currency.",),
        harmful=("Put the currency symbol before the amount ($4.20, not 4.20 USD).",),
        causes=(r"symbol",),
        topic_words=("price", "currency", "amount")),
    ("name", "last_first"): Ideas(
        good=("Write names as 'Last, First' (Lovelace, Ada).",
              "Put the surname first, then a comma and the given name.",
              "Names: family name first, e.g. Lovelace, Ada.",
              "Names go in directory order."),
        vague=("Spell names correctly.",),
        harmful=("Write names as First Last.",),
        causes=(r"first last", r"given name first", r"first name first"),
        topic_words=("name",)),
    ("name", "first_last"): Ideas(
        good=("Keep names in the order given: first name first.",),
        vague=("Spell names correctly.",),
        harmful=("Write names as 'Last, First' (Lovelace, Ada).",),
        causes=(r"last, first", r"surname", r"family name", r"last name"),
        topic_words=("name",)),
    ("fields", "all"): Ideas(
        good=("Keep every field of the record in the output.",),
        vague=("Do not drop anything.",),
        harmful=(),
        topic_words=("field",)),
}

# Ideas off any symptom: what a teacher says when it has nothing specific (some harmless, some harmful).
OFF_TARGET = ("Read the whole record before answering.",
              "Think step by step before answering.",
              "Follow the house style exactly.",
              "Keep the fields in the same order as in the input.",
              "Explain your reasoning before the answer.",
              "Take care with every field.")

# What a teacher may say about successes: reinforcement, mostly harmless padding.
REINFORCE = ("Keep the whole record on one line.",
             "Keep the fields in the same order as in the input.",
             "Keep doing what works: one line, every field, nothing else.")


def ideas_for(topic: str, want: str) -> Ideas | None:
    return LEXICON.get((topic, want))


def norm(text: str) -> str:
    """Identity of an idea's text: case, spacing and trailing punctuation do not matter."""
    return " ".join(re.sub(r"[\s]+", " ", text or "").lower().split()).strip(" .;:!")


def quality_of(text: str) -> str:
    """The simulation's own label of an idea text: good | vague | harmful | off_target | reinforce | unknown.
    (For tests and reports; which idea helps in a given world still depends on its hidden rules.)"""
    key = norm(text)
    for ideas in LEXICON.values():
        for label in ("good", "vague", "harmful"):
            if key in {norm(t) for t in getattr(ideas, label)}:
                return label
    if key in {norm(t) for t in OFF_TARGET}:
        return "off_target"
    if key in {norm(t) for t in REINFORCE}:
        return "reinforce"
    return "unknown"


def topic_of_text(text: str) -> tuple[str, str] | None:
    """The (topic, want) whose idea list contains `text` — lets the teacher recognise its own past ideas."""
    key = norm(text)
    for sym, ideas in LEXICON.items():
        if key in {norm(t) for t in ideas.good + ideas.vague + ideas.harmful}:
            return sym
    return None

"""Task generation, the seed skill, a reference scorer and the honest description of the simulated world.

Contracts:
- `generate_tasks(cfg, n)` is deterministic in (cfg.seed, cfg.num_rules, cfg.min_fields, cfg.max_fields) and
  prefix-stable: item i depends only on the seed and i, so asking for more items keeps the first ones.
  Items carry `metadata = {"world": "simulated"}` and nothing about the rules.
- `write_tasks(path, cfg, n)` writes those items as a JSONL task file; `SIMULATED_MODEL` is the `model:` section
  of a project on this world that the demos' skillgit.yaml name (a `str.format` template of `{seed}`, without a
  final newline).
- `default_skill()` conveys none of the rules (a weak, generic starter with Claude-Code-style front matter).
- `describe(cfg)` is for humans and docs; it is the only place that lists the hidden rules in prose.
- `reference_score(item, output)` mirrors the project's `exact` scorer (hard 0/1 after stripping, soft = token
  F1, its neutral feedback: where the output departs from the expected answer, never the answer) so the world can
  be exercised without the rest of skillgit's loop.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

from skillgit.errors import ConfigError
from skillgit.types import Item, Score
from skillgit.world.common import param
from skillgit.world.rules import RULES, TOPICS, Rule, pick_rules, read_skill, render_record

FIRST_NAMES = ("Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Margaret", "Dennis", "Frances", "Ken",
               "Radia", "John", "Hedy", "Claude", "Karen", "Niklaus", "Sophie", "Tim", "Anita", "Linus")
LAST_NAMES = ("Lovelace", "Turing", "Hopper", "Dijkstra", "Liskov", "Knuth", "Hamilton", "Ritchie", "Allen",
              "Thompson", "Perlman", "Backus", "Lamarr", "Shannon", "Jones", "Wirth", "Wilson", "Berners", "Borg",
              "Torvalds")
CURRENCIES = ("USD", "EUR", "GBP")
# The student labels its answer ("Answer: …") when the request is an imperative "Normalise …" — a habit, like
# the inconsistent habits of real models; it makes the preamble rule matter for about half of the items.
LEADS = ("Normalise this record:", "Please normalise this record:", "Record to normalise:",
         "Record for the house style:")

_FIELD_VALUE = {
    "date": re.compile(r"\d{1,2}/\d{1,2}/\d{4}"),
    "weight": re.compile(r"\d+(?:\.\d)? lb"),
    "code": re.compile(r"[a-z]{2}-\d{2,3}"),
    "price": re.compile(r"\d+(?:\.\d{1,2})? (?:USD|EUR|GBP)"),
    "name": re.compile(r"[A-Z][a-z]+ [A-Z][a-z]+"),
}
_FIELD_IN_INPUT = re.compile(r"\b(date|weight|code|price|name)\s+([^;\n]+)")


def _random_value(rng: random.Random, kind: str) -> str:
    if kind == "date":
        return f"{rng.randint(1, 12)}/{rng.randint(1, 28)}/{rng.randint(1990, 2030)}"
    if kind == "weight":
        tenths = rng.randint(5, 2500)
        return f"{tenths // 10} lb" if rng.random() < 0.4 else f"{tenths // 10}.{tenths % 10} lb"
    if kind == "code":
        letters = "".join(rng.choice("abcdefghjkmnpqrstuvwxyz") for _ in range(2))
        return f"{letters}-{rng.randint(10, 999)}"
    if kind == "price":
        cents = rng.randint(50, 50000)
        shape = rng.random()
        if shape < 0.3:
            amount = str(cents // 100)
        elif shape < 0.7:
            amount = f"{cents // 100}.{(cents // 10) % 10}"
        else:
            amount = f"{cents // 100}.{cents % 100:02d}"
        return f"{amount} {rng.choice(CURRENCIES)}"
    return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"


def parse_record(text: str) -> list[tuple[str, str]]:
    """The (kind, raw value) fields of a task input, in order; values that do not look right are skipped.
    This is how the student reads its task: from the input text alone."""
    out = []
    for kind, value in _FIELD_IN_INPUT.findall(text or ""):
        value = value.strip().rstrip(".")
        if _FIELD_VALUE[kind].fullmatch(value):
            out.append((kind, value))
    return out


def labels_answer(text: str) -> bool:
    """Does the student naturally start its answer with "Answer: " for this input? (Imperative requests.)"""
    return bool(re.match(r"\s*(please\s+)?normalise\b", text or "", re.I))


def hidden_rules(cfg: Any) -> tuple[Rule, ...]:
    """The house rules of the world `cfg` (a SimulatedCfg). For tests and docs only — never for the teacher."""
    try:
        return pick_rules(int(cfg.seed), int(cfg.num_rules))
    except ValueError as exc:
        raise ConfigError(f"model.simulated.num_rules: {exc}", f"use 0..{len(RULES)}") from None


def house_topics(cfg: Any) -> frozenset[str]:
    return frozenset(r.topic for r in hidden_rules(cfg))


def hurtful_concepts(cfg: Any, skill: str) -> frozenset[str]:
    """Concepts `skill` conveys that make answers worse *in this world*: harms, plain concepts of house topics,
    and rule concepts of topics the house keeps natural. (An evaluator's view, for tests and benchmarks.)"""
    reading, house = read_skill(skill), house_topics(cfg)
    hurt = set(reading.harms)
    hurt |= {f"plain:{t}" for t in reading.plain if t in house}
    hurt |= {f"rule:{t}" for t in reading.rules if t not in house and t not in reading.plain}
    return frozenset(hurt)


def _field_bounds(cfg: Any) -> tuple[int, int]:
    lo, hi = int(param(cfg, "min_fields")), int(param(cfg, "max_fields"))
    if not 1 <= lo <= hi <= 5:
        raise ConfigError(f"model.simulated.min_fields/max_fields: need 1 <= min_fields <= max_fields <= 5, "
                          f"got {lo}..{hi}", "records have at most five fields")
    return lo, hi


def make_item(cfg: Any, index: int) -> Item:
    rng = random.Random(f"skillgit-world:{cfg.seed}:item:{index}")
    lo, hi = _field_bounds(cfg)
    # Fewer fields are likelier (weights hi-k+1): short records make single rules pay off, so that learning
    # shows step by step under a strict exact-match gate instead of only once every rule is known.
    count = rng.choices(range(lo, hi + 1), [hi - k + 1 for k in range(lo, hi + 1)])[0]
    kinds = rng.sample(("date", "weight", "code", "price", "name"), count)
    fields = [(k, _random_value(rng, k)) for k in kinds]
    text = f"{rng.choice(LEADS)} " + "; ".join(f"{k} {v}" for k, v in fields)
    expected = render_record(fields, house_topics(cfg), label=labels_answer(text))
    return Item(f"rec-{index:04d}", text, expected, {"world": "simulated"})


def generate_tasks(cfg: Any, n: int) -> list[Item]:
    """`n` record-normalisation items of the world `cfg`; see the module docstring for the contract."""
    return [make_item(cfg, i) for i in range(n)]


def write_tasks(path: Path, cfg: Any, n: int) -> None:
    """`generate_tasks(cfg, n)` as a JSONL task file at `path` (what `env.tasks` reads)."""
    path.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in generate_tasks(cfg, n)), encoding="utf-8")


SIMULATED_MODEL = """\
model:
  teacher_backend: simulated
  teacher_model: sim-teacher
  student_backend: simulated
  student_model: sim-student
  simulated:
    seed: {seed}
    num_rules: 6
    noise: 0.05"""


def default_skill() -> str:
    """A weak starter skill: generic advice that conveys none of the house rules."""
    return ("---\n"
            "name: record-normaliser\n"
            "description: Normalise short records (dates, weights, codes, prices, names) into the house style.\n"
            "---\n"
            "# Record normaliser\n"
            "\n"
            "Read the record and rewrite each field in the house style.\n"
            "Keep every field of the record.\n")


def all_rules_skill(cfg: Any) -> str:
    """The seed skill plus one clear sentence per hidden rule: the ceiling a perfect teacher could reach."""
    lines = {
        "preamble": "Reply with only the normalised record, without any preamble.",
        "separator": "Separate fields with ' | ' (space, pipe, space).",
        "date": "Write every date in ISO format (YYYY-MM-DD).",
        "weight": "Give weights in kilograms.",
        "code": "Write codes in uppercase letters (AB-12).",
        "decimals": "Show every amount with exactly two decimals (4.20).",
        "currency": "Put the currency symbol before the amount ($4.20, not 4.20 USD).",
        "name": "Write names as 'Last, First' (Lovelace, Ada).",
    }
    house = house_topics(cfg)
    return default_skill() + "".join(lines[t] + "\n" for t in TOPICS if t in house)


def reference_score(item: Item, output: str) -> Score:
    """Exact match (hard), token F1 (soft) and the neutral feedback of the project's exact scorer."""
    from skillgit.scorers import diff_feedback

    want, got = str(item.expected).strip(), (output or "").strip()
    if want == got:
        return Score(1.0, 1.0, "correct: matches the expected answer exactly")
    a, b = re.findall(r"\w+", got.lower()), re.findall(r"\w+", want.lower())
    overlap = sum((Counter(a) & Counter(b)).values())
    soft = 0.0 if not overlap else 2 * overlap / (len(a) + len(b))
    return Score(0.0, round(soft, 4), diff_feedback(want, got))


def describe(cfg: Any) -> str:
    """What this world is, including its hidden rules — for humans (`skillgit demo`, docs), never for the teacher."""
    rules = hidden_rules(cfg)
    picked = {r.topic for r in rules}
    lines = [
        "Simulated world: house-style record normalisation (an offline simulation, not a model).",
        f"  seed={cfg.seed} num_rules={cfg.num_rules} noise={cfg.noise} malformed_rate={cfg.malformed_rate}",
        "  Each task is a short record (date, weight, code, price, name; "
        f"{_field_bounds(cfg)[0]}-{_field_bounds(cfg)[1]} fields, fewer likelier) to rewrite in a hidden house style.",
        "  The student labels answers to imperative requests ('Normalise ...') with 'Answer: '.",
        "  Hidden house rules (the teacher never sees these; it sees outputs, train answers and neutral feedback):",
    ]
    lines += [f"    - {r.summary}: {r.natural!r} -> {r.house!r}" for r in rules]
    kept = [r.topic for r in RULES if r.topic not in picked]
    if kept:
        lines.append("  Topics kept as the student writes them naturally (conveying their rule hurts): "
                     + ", ".join(kept))
    lines += [
        "  Student: follows the concepts its skill conveys, matched loosely (paraphrases work); harmful phrases",
        "  (explain your reasoning, DD/MM/YYYY, whole numbers, ...) break answers; per answer it slips with",
        "  probability `noise` and gets lucky with `lucky_rate`; very long skills slip more.",
        "  Teacher: diagnoses failures by comparing output and expected text; proposes good, vague and harmful",
        "  fixes; avoids ideas listed in <rejected_edits>; a fraction of its replies is malformed.",
    ]
    return "\n".join(lines)

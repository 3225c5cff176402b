"""`skillgit tasks suggest --skill NAME`: draft trigger cases and body tasks for a skill that has none.

Contract:
- A suggester drafts from the skill's text (its description and body) and the other skills' listings:
  - **should fire**: the skill's own phrases (description sentences, its "Use when …" terms, the body's headings and
    instructions) as a user would ask;
  - **should not fire**: near-miss decoys — the other skills' phrases as requests, nearest to this skill's words
    first (the prompts a too-greedy description would steal);
  - **body tasks**: one per instruction of the body, the instruction as the task's `rubric`, with no `expected`
    answer (a person adds it, or keeps the rubric for a judge).
  Trigger cases alternate train / val so the activation gate has held-out cases of both kinds.
- Every row is a draft: `"skillgit_draft": "<who wrote it>"` and `"reviewed": false`. Nothing trains on it until a
  person has read it: `load_cases` and task loading refuse unreviewed drafts (`model.is_unreviewed_draft`), and
  `skillgit tasks approve FILE` marks a file the person has read.
- Files are created new (`x` mode): an existing file is never overwritten.
- The text drafted from (the skill, the other skills) and the text written (a model's reply) is redacted
  (`skillgit.redact`) before it is sent or written.
- `SimulatedSuggester` is offline and deterministic (the no-key path; it never claims to be a model);
  `LLMSuggester` asks the configured teacher for the same three lists as JSON (a malformed reply is an error).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Protocol, Sequence

from skillgit.errors import SkillgitError
from skillgit.library.activation import words
from skillgit.library.model import DRAFT_KEY, Listing, TriggerCase, front_matter, listing_of
from skillgit.redact import redact

TEMPLATES = ("Can you {p}?", "Please {p}.", "I need help with this: {p}.", "Quick one: {p}?")


@dataclass(frozen=True)
class Drafts:
    should_fire: tuple[str, ...]
    should_not_fire: tuple[str, ...]
    tasks: tuple[tuple[str, str], ...]  # (input, rubric)
    author: str


class Suggester(Protocol):
    """`others`: the other skills' texts (name → SKILL.md text)."""

    def draft(self, skill: str, text: str, others: Mapping[str, str], count: int) -> Drafts: ...


# ---------------------------------------------------------------------------------------------- phrases
def _clean(line: str) -> str:
    line = re.sub(r"^\s*(?:[-*+]|\d+[.)]|#+)\s*", "", line)
    line = re.sub(r"[`*_]+", "", line).strip().rstrip(".:;")
    return " ".join(line.split())


def _lower_first(p: str) -> str:
    return p[:1].lower() + p[1:] if p[:2] != p[:2].upper() else p


def listing_phrases(listing: Listing) -> list[str]:
    """A description's sentences and its "Use when … a, b, c" terms."""
    head, _, terms = listing.description.partition("Use when")
    out = [_clean(s) for s in re.split(r"(?<=[.!?])\s+", head) if len(_clean(s)) > 3]
    if terms:
        listed = terms.split("mentions", 1)[-1]
        out += [_clean(t) for t in re.split(r",|\bor\b", listed) if len(_clean(t)) > 2]
    return list(dict.fromkeys(out))


def body_instructions(text: str) -> list[str]:
    """The body's instructions: bullet and numbered lines, `##` headings, then its prose sentences (code blocks
    left out), cleaned, each once."""
    _, block = front_matter(text)
    body = re.sub(r"```.*?```", " ", text[len(block):], flags=re.S)
    out, prose = [], []
    for line in body.splitlines():
        if re.match(r"^\s*(?:[-*+]|\d+[.)])\s+\S", line) or re.match(r"^#{2,}\s+\S", line):
            out.append(_clean(line))
        elif line.strip() and not line.lstrip().startswith(("#", "|", ">")):
            prose.append(line.strip())
    out += [_clean(s) for s in re.split(r"(?<=[.!?])\s+", " ".join(prose))]
    return list(dict.fromkeys(p for p in out if len(p.split()) >= 3))


@dataclass(frozen=True)
class SimulatedSuggester:
    """Offline drafts from the skill's own words (see the module contract); deterministic."""

    author: str = "simulated teacher (offline; skillgit tasks suggest)"

    def draft(self, skill: str, text: str, others: Mapping[str, str], count: int) -> Drafts:
        own = listing_of(text)
        mine = words(f"{skill.replace('-', ' ')} {own.description}")
        positives = listing_phrases(own) + body_instructions(text)
        fire = [TEMPLATES[i % len(TEMPLATES)].format(p=_lower_first(p)) for i, p in enumerate(positives)][:count]
        decoys: list[tuple[int, int, str]] = []
        for rank, (name, other) in enumerate(sorted(others.items())):
            if name == skill:
                continue
            for p in _phrases_of(other):
                decoys.append((-len(words(p) & mine), rank, p))  # near misses (shared words) first
        decoys.sort()
        spread = list(dict.fromkeys(p for _, _, p in decoys))
        not_fire = [TEMPLATES[(i + 1) % len(TEMPLATES)].format(p=_lower_first(p))
                    for i, p in enumerate(spread)][:count]
        instructions = body_instructions(text)[:count]
        task_lead = listing_phrases(own)[0] if listing_phrases(own) else skill
        tasks = tuple((f"{task_lead}. In particular: {_lower_first(i)}.",
                       f"The answer follows this instruction of the {skill} skill: {i}.") for i in instructions)
        return Drafts(tuple(fire), tuple(not_fire), tasks, self.author)


def _phrases_of(text: str) -> list[str]:
    try:
        return listing_phrases(listing_of(text)) + body_instructions(text)
    except SkillgitError:
        return []  # a skill without a readable listing offers no decoys


SUGGEST_SYSTEM = """You draft test cases for an agent skill, for a person to review. Given the skill (its \
front matter and body) and the other skills of the library, answer with only a JSON object: \
{"should_fire": [user requests this skill should be loaded for], "should_not_fire": [realistic near-miss requests \
that belong to another skill or to none, and must NOT load this skill], "tasks": [{"input": a request the skill's \
body should help answer, "rubric": what a good answer must do}]}. At most {count} of each, written as users write."""


@dataclass
class LLMSuggester:
    """The configured teacher drafts the same three lists (JSON); the prompt and the reply are redacted."""

    llm: Any
    author: str = "teacher model (skillgit tasks suggest)"

    def draft(self, skill: str, text: str, others: Mapping[str, str], count: int) -> Drafts:
        from skillgit.llm.base import Request
        from skillgit.llm.jsonout import complete_json
        from skillgit.types import Message

        lines = [f"Skill {skill}:", text, "", "Other skills of the library:"]
        listed = [x for x in (_listing(t) for n, t in sorted(others.items()) if n != skill) if x is not None]
        lines += [f"- {x.name}: {x.description}" for x in listed] or ["- (none)"]
        request = Request((Message("system", SUGGEST_SYSTEM.replace("{count}", str(count))),
                           Message("user", redact("\n".join(lines)))), stage="suggest",
                          json_schema={"type": "object", "required": ["should_fire", "should_not_fire", "tasks"],
                                       "properties": {"should_fire": {"type": "array", "items": {"type": "string"}},
                                                      "should_not_fire": {"type": "array",
                                                                          "items": {"type": "string"}},
                                                      "tasks": {"type": "array", "items": {"type": "object"}}}})

        def valid(obj: dict) -> str | None:
            for key in ("should_fire", "should_not_fire", "tasks"):
                if not isinstance(obj.get(key), list):
                    return f"`{key}` must be a list"
            if not all(isinstance(t, dict) and isinstance(t.get("input"), str) for t in obj["tasks"]):
                return "each task needs an `input` string"
            return None

        result = complete_json(self.llm, request, validate=valid)
        if result.obj is None:
            raise SkillgitError(f"the teacher's drafts were not usable: {result.error}"[:300],
                                "try again, or use model.teacher_backend: simulated for offline drafts")
        obj = result.obj

        def texts(values: Iterable[Any]) -> tuple[str, ...]:
            return tuple(redact(" ".join(str(v).split())) for v in values if str(v).strip())[:count]

        tasks = tuple((redact(str(t["input"])), redact(str(t.get("rubric") or ""))) for t in obj["tasks"]
                      if str(t["input"]).strip())[:count]
        return Drafts(texts(obj["should_fire"]), texts(obj["should_not_fire"]), tasks, self.author)


def _listing(text: str) -> Listing | None:
    try:
        return listing_of(text)
    except SkillgitError:
        return None


# ---------------------------------------------------------------------------------------------- files
def trigger_rows(skill: str, drafts: Drafts) -> list[dict[str, Any]]:
    rows = []
    for kind, prompts, should in (("fire", drafts.should_fire, True), ("decoy", drafts.should_not_fire, False)):
        for i, prompt in enumerate(prompts, 1):
            case = TriggerCase(f"{skill}-draft-{kind}-{i:02d}", skill, prompt, should, "val" if i % 2 == 0 else "train")
            rows.append({**case.to_dict(), DRAFT_KEY: drafts.author, "reviewed": False})
    return rows


def task_rows(skill: str, drafts: Drafts) -> list[dict[str, Any]]:
    return [{"id": f"{skill}-draft-task-{i:02d}", "input": prompt,
             "metadata": {"rubric": rubric, "skill": skill}, DRAFT_KEY: drafts.author, "reviewed": False}
            for i, (prompt, rubric) in enumerate(drafts.tasks, 1)]


def write_new(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """Create `path` with one JSON row a line; an existing file is never overwritten (SkillgitError)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(path, "x", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    except FileExistsError:
        raise SkillgitError(f"{path} exists; drafts never overwrite a file",
                            "review and move (or delete) it first, or pass --out another folder") from None


def approve(path: Path) -> int:
    """Mark every draft row of `path` reviewed (the person has read them); returns how many. Other lines stay."""
    lines = Path(path).read_text(encoding="utf-8").splitlines(keepends=True)
    count = 0
    out = []
    for line in lines:
        try:
            row = json.loads(line) if line.strip() else None
        except ValueError:
            row = None
        if isinstance(row, dict) and row.get(DRAFT_KEY) and row.get("reviewed") is not True:
            row["reviewed"] = True
            count += 1
            line = json.dumps(row, ensure_ascii=False) + "\n"
        out.append(line)
    Path(path).write_text("".join(out), encoding="utf-8")
    return count

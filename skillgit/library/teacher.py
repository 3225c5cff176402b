"""Description teachers: they rewrite one skill's description from its train trigger cases.

`SimulatedDescriptionTeacher` (offline, deterministic) and `LLMDescriptionTeacher` (a model, through the backends)
share one interface: `propose(skill, description, train results, listings, rejected) -> description | None`.

The simulated one:

It reads only train cases' results (prompt, whether it should have fired, whether it did): the words of the
prompts the skill missed are added ("Use when …"), most frequent first, `words_per_step` of them, each seen in at
least `min_count` missed prompts, skipping words
of prompts it fired on wrongly (decoys). It learns from its rejected candidates (the negative buffer): after a
rejection for interference it no longer adds words that another skill's description holds (the words that made it
steal that skill's prompts). A real teacher would be a model asked the same; this one is deterministic.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from skillgit.library.activation import CaseResult, words
from skillgit.library.model import DESCRIPTION_LIMIT, Listing
from skillgit.llm.base import LLM

LEAD = " Use when the user mentions "


@dataclass(frozen=True)
class SimulatedDescriptionTeacher:
    words_per_step: int = 8
    min_count: int = 2  # a word from one missed prompt alone is an anecdote, not a pattern

    def propose(self, skill: str, description: str, results: Sequence[CaseResult], listings: Sequence[Listing],
                rejected: Sequence[tuple[str, str]]) -> str | None:
        misses = [r.case.prompt for r in results if r.case.should_trigger and not r.fired]
        alarms = [r.case.prompt for r in results if not r.case.should_trigger and r.fired]
        have = words(description) | words(skill.replace("-", " "))
        avoid: set[str] = set()
        for prompt in alarms:
            avoid |= words(prompt)
        if any(reason.startswith("interference") for _, reason in rejected):
            for x in listings:
                if x.name != skill:
                    avoid |= words(f"{x.name.replace('-', ' ')} {x.description}")
        counts: Counter[str] = Counter()
        surface: dict[str, str] = {}
        for prompt in misses:
            for token in re.findall(r"[A-Za-z0-9]+", prompt):
                stem = words(token)
                if len(stem) != 1:
                    continue
                (w,) = stem
                if w in have or w in avoid:
                    continue
                counts[w] += 1
                surface.setdefault(w, token.lower())
        tried = {d for d, _ in rejected}
        picked = [w for w, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if n >= self.min_count]
        picked = picked[: self.words_per_step]
        if not picked:
            return None
        head, _, listed = description.partition(LEAD.strip())
        already = [x.strip() for x in listed.rstrip(".").split(",") if x.strip()] if listed else []
        terms = already + [surface[w] for w in picked]
        new = f"{head.strip()}{LEAD}{', '.join(terms)}."
        if len(new) > DESCRIPTION_LIMIT:
            new = new[: DESCRIPTION_LIMIT - 1].rsplit(",", 1)[0] + "."
        return None if new in tried else new


DESCRIBE_SYSTEM = """You write the `description` of an agent skill: the one text an agent reads to decide whether to \
load the skill for a user's request. Say what the skill does and when to use it, in the words users actually use. \
Do not claim requests that belong to the other skills listed. At most {limit} characters. Answer with only a JSON \
object: {{"description": "...", "why": "one sentence"}}."""


@dataclass
class LLMDescriptionTeacher:
    """A model rewrites the description from the same evidence the simulated teacher reads: the train prompts the
    skill missed and those it fired on wrongly, the other skills' listings (so it does not steal their triggers)
    and the negative buffer (its rejected descriptions with the gate's reasons). A malformed reply, or one over
    the length limit, is recorded in `skipped` and gives no candidate (the step ends)."""

    llm: LLM
    limit: int = DESCRIPTION_LIMIT
    skipped: list[str] | None = None

    def prompt(self, skill: str, description: str, results: Sequence[CaseResult], listings: Sequence[Listing],
               rejected: Sequence[tuple[str, str]]) -> str:
        misses = [r.case.prompt for r in results if r.case.should_trigger and not r.fired]
        alarms = [r.case.prompt for r in results if not r.case.should_trigger and r.fired]
        lines = [f"Skill: {skill}", f"Current description: {description}", "",
                 "Requests it should have been loaded for, but was not:"]
        lines += [f"- {p}" for p in misses] or ["- (none)"]
        lines += ["", "Requests it was loaded for, but should not have been:"]
        lines += [f"- {p}" for p in alarms] or ["- (none)"]
        lines += ["", "The other skills in the library (do not take their requests):"]
        lines += [f"- {x.name}: {x.description}" for x in listings if x.name != skill]
        if rejected:
            lines += ["", "Descriptions already tried and rejected (do not repeat them):"]
            lines += [f"- {d}\n  rejected because: {why[:300]}" for d, why in rejected[-5:]]
        return "\n".join(lines)

    def propose(self, skill: str, description: str, results: Sequence[CaseResult], listings: Sequence[Listing],
                rejected: Sequence[tuple[str, str]]) -> str | None:
        from skillgit.llm.base import Request
        from skillgit.llm.jsonout import complete_json
        from skillgit.types import Message

        if not any(r.correct is False for r in results):
            return None  # nothing to learn from on train
        from skillgit.redact import redact

        ask = redact(self.prompt(skill, description, results, listings, rejected))  # never a secret to a model
        request = Request((Message("system", DESCRIBE_SYSTEM.format(limit=self.limit)), Message("user", ask)),
                          stage="describe", json_schema={"type": "object", "required": ["description"],
                                                         "properties": {"description": {"type": "string"},
                                                                        "why": {"type": "string"}}})

        def valid(obj: dict) -> str | None:
            d = obj.get("description")
            if not isinstance(d, str) or not d.strip():
                return "`description` must be a non-empty string"
            if len(d) > self.limit:
                return f"the description is {len(d)} characters; the limit is {self.limit}"
            return None

        result = complete_json(self.llm, request, validate=valid)
        if result.obj is None:
            if self.skipped is not None:
                self.skipped.append(f"malformed teacher reply: {result.error}")
            return None
        new = redact(" ".join(str(result.obj["description"]).split()))
        return None if new == description or new in {d for d, _ in rejected} else new

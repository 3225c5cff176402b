"""The simulated description teacher (offline): it rewrites a skill's description from its train trigger cases.

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

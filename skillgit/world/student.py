"""The simulated student: a frozen "model" that follows the concepts its skill conveys.

Use it as a chat model behind `ChatStudent`: the system message is the skill, the last user message the task
input. It never sees an item's expected answer (the request does not carry one): it parses the record out of the
input text and renders it (rules.render_record) with

- each topic in house style iff the skill conveys that topic's rule concept and not its plain concept (the
  natural "Answer: " label appears only for imperative requests, unless the skill asks for it everywhere);
- harm concepts applied ("explain your reasoning" appends an explanation line, "DD/MM/YYYY" breaks dates, ...);
- per answer, with probability `noise` (+ dilution for skills longer than `dilution_lines` non-empty lines,
  `dilution_per_line` per extra line, at most 0.5), one instruction that matters for this record is ignored;
  with probability `lucky_rate`, one relevant topic the skill does not cover is rendered in house style anyway.

A deep-reflect probe (loop/deep_reflect.py) is read by world/probing.py: a re-run with a hint reads the hint as one
more instruction; a follow-up question is answered from the skill and the student's own earlier answer.

All randomness is seeded by (world seed, the full request incl. its `seed` field): identical requests give
identical answers; another skill or another sample number gives fresh noise (validation scores wobble).
"""

from __future__ import annotations

import time

from skillgit.llm.base import Reply, Request
from skillgit.world import probing
from skillgit.world.common import digest, param, seeded_rng, usage
from skillgit.world.rules import read_skill, relevant_topics, render_record
from skillgit.world.tasks import labels_answer, parse_record

EXPLANATIONS = (
    "Explanation: I rewrote each field in the house style.",
    "Explanation: I normalised the fields one by one and kept their order.",
    "Reasoning: each field was checked against the style before writing it.",
)


class SimulatedStudentLLM:
    """An `LLM` (see skillgit/llm/base.py) simulating the student; thread-safe (no shared mutable state)."""

    def __init__(self, cfg=None, model: str = "sim-student"):
        self.cfg = cfg
        self.model = model
        self.seed = int(param(cfg, "seed"))
        self.noise = float(param(cfg, "noise"))
        self.lucky_rate = float(param(cfg, "lucky_rate"))
        self.dilution_lines = int(param(cfg, "dilution_lines"))
        self.dilution_per_line = float(param(cfg, "dilution_per_line"))
        self.latency_s = float(param(cfg, "latency_s"))
        self._id = f"simulated:{model}#" + digest(self.seed, self.noise, self.lucky_rate, self.dilution_lines,
                                                   self.dilution_per_line)

    @property
    def id(self) -> str:
        return self._id

    def slip_rate(self, skill: str) -> float:
        extra = max(0, read_skill(skill).lines - self.dilution_lines)
        return min(0.5, self.noise + self.dilution_per_line * extra)

    def answer(self, skill: str, task_input: str, material: str) -> str:
        """The answer text for `task_input` under `skill`; `material` seeds the noise."""
        fields = parse_record(task_input)
        if not fields:
            return "I could not find a record to normalise in the request."
        reading = read_skill(skill)
        rng = seeded_rng(self.seed, "student", material)
        # "Begin the reply with 'Answer:'" (the preamble's plain concept) makes every answer labelled.
        label = labels_answer(task_input) or "preamble" in reading.plain
        relevant = relevant_topics(fields, label)
        styled = {t for t in relevant if t in reading.rules and t not in reading.plain}
        harms = {h for h in reading.harms}
        # Draw both coins every time, in a fixed order, so the stream does not depend on which branch runs.
        slip, lucky = rng.random(), rng.random()
        if slip < self.slip_rate(skill):
            # One instruction that matters for this record is not followed: a house-style topic falls back to the
            # natural rendering, or a harm is (luckily) not acted on.
            followed = sorted(styled) + sorted(h for h in harms if _harm_matters(h, relevant))
            if followed:
                dropped = rng.choice(followed)
                styled.discard(dropped)
                harms.discard(dropped)
        if lucky < self.lucky_rate:
            uncovered = [t for t in relevant if t not in reading.rules and t not in reading.plain]
            if uncovered:
                styled.add(rng.choice(uncovered))
        return render_record(fields, styled, harms, explanation=rng.choice(EXPLANATIONS), label=label)

    def complete(self, request: Request) -> Reply:
        started = time.monotonic()
        skill = "\n".join(m.content for m in request.messages if m.role == "system")
        users = [m.content for m in request.messages if m.role == "user"]
        task_input = users[-1] if users else ""
        task, hint, earlier = probing.split_probe(task_input)  # deep reflect's probes (world/probing.py)
        if earlier is not None:
            text = probing.explain(skill, task, earlier)
        else:
            text = self.answer(skill + ("\n\n" + hint if hint else ""), task, request.cache_key_material())
        if request.max_tokens:
            text = text[: max(1, request.max_tokens) * 4]
        if self.latency_s > 0:
            time.sleep(self.latency_s)
        prompt_text = "".join(m.content for m in request.messages)
        return Reply(text=text, usage=usage(prompt_text, text), model=self.model,
                     latency_s=round(time.monotonic() - started, 6))


def _harm_matters(harm: str, relevant: list[str]) -> bool:
    topic = {"explain": "preamble", "semicolon_separator": "separator", "day_first": "date",
             "whole_numbers": "decimals"}[harm]
    if harm == "whole_numbers":
        return "decimals" in relevant or "weight" in relevant
    return topic in relevant

"""The simulated judge: scores one output against a rubric from the judge prompt's text alone.

It answers the `judge` requests of `skillgit.rubric.RubricScorer` (blocks `<task>`, `<rubric>`, optional
`<reference>`, `<output>`, optional `<trace>`) the way an honest judge without the world's hidden rules can:

- with a `<reference>` (the answer a person accepted): pass when the output says exactly what the reference says
  (stripped; hard 1), else fail; soft is the token F1 against the reference; the feedback names, in its own
  words, the differences it sees (`diagnose`: "date should be iso") and never quotes the reference or the rubric
  (judge isolation: the teacher reads a train item's reference as its `<expected>`, never through the judge);
- without one, it cannot tell a right answer from a wrong one: it says so in prose — not the JSON asked for —
  which the scorer turns into an *unknown* trajectory, never a failure;
- with probability `malformed_rate` its reply is malformed (prose), like the simulated teacher's.

It sees nothing but the request; randomness is seeded by (world seed, the whole request), so the same prompt always
gets the same answer. Not (yet) a stage of `SimulatedTeacher`: callers that judge offline build it themselves.
"""

from __future__ import annotations

import json
from typing import Any

from skillgit.llm.base import LLMError, Reply, Request
from skillgit.world import tags
from skillgit.world.common import digest, param, seeded_rng, usage
from skillgit.world.diagnose import Symptom, diagnose

STAGE = "judge"


class SimulatedJudge:
    """An `LLM` answering `judge` requests (see the module docstring); thread-safe (no shared mutable state)."""

    def __init__(self, cfg: Any = None, model: str = "sim-judge"):
        self.model = model
        self.seed = int(param(cfg, "seed"))
        self.malformed_rate = float(param(cfg, "malformed_rate"))
        self._id = f"simulated:{model}#" + digest(self.seed, self.malformed_rate)

    @property
    def id(self) -> str:
        return self._id

    @property
    def cache_identity(self) -> str:
        return self._id

    def complete(self, request: Request) -> Reply:
        users = [m.content for m in request.messages if m.role == "user"]
        text = users[-1] if users else ""
        if tags.stage_of(text) != STAGE:
            raise LLMError(f"simulated judge: expected a <stage>{STAGE}</stage> prompt (got {text[:40]!r})",
                           "build judge prompts with skillgit.rubric.judge_request", kind="bad_request")
        rng = seeded_rng(self.seed, "judge", request.cache_key_material())
        out = self.answer(text) if rng.random() >= self.malformed_rate else "Looks mostly fine to me, I think."
        return Reply(out, usage("".join(m.content for m in request.messages), out), model=self.model)

    @staticmethod
    def answer(text: str) -> str:
        output = (tags.first(text, "output") or "").strip()
        reference = (tags.first(text, "reference") or "").strip()
        if not reference:
            return ("I cannot judge this: the rubric describes the goal, but without a reference answer I cannot "
                    "tell whether this output meets it.")
        if output == reference:
            return json.dumps({"hard": 1, "soft": 1.0, "feedback": "correct: says what the accepted answer says"})
        symptoms = "; ".join(dict.fromkeys(_said(s) for s in diagnose(output, reference)[:4]))
        feedback = "the output does not say what the accepted answer says" + (f": {symptoms}" if symptoms else "")
        return json.dumps({"hard": 0, "soft": round(_f1(output, reference), 4), "feedback": feedback})


def _said(symptom: Symptom) -> str:
    """A difference in a reviewer's words, without the reference's text ("date should be iso")."""
    if symptom.topic == "fields":
        return "a field is missing"
    if symptom.topic == "other":
        return "a field differs" if symptom.want == "other" else f"the {symptom.want} differs"
    return f"{symptom.topic} should be {symptom.want.replace('_', ' ')}"


def _f1(a: str, b: str) -> float:
    from skillgit.scorers import token_f1

    return token_f1(a, b)

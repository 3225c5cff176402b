"""The rubric scorer: a teacher judging an item against its rubric, and what of that judgement a teacher may read.

`RubricScorer(judge, fallback)` (built by callers that have a teacher, e.g. `skillgit sleep`; not an
`env.scorer.type`): an item whose metadata has a `rubric` and that has no `expected` is judged by the teacher
(`judge`, an `LLM`): one request of stage `judge` with the task's input, the rubric, the reference answer a person
accepted (`metadata.judge_reference`, when there is one), the student's output and, when the caller passes it, the
trace (an agent's tool calls and workspace diff). The reply must be a JSON object `{hard, soft, feedback}` with
hard and soft in [0, 1]; anything else (prose, a wrong shape, a failed call) is a ScorerError: the trajectory is
unknown, never a failure. Every other item goes to `fallback` (the configured scorer).

Judge isolation (`skillgit.judging`): the judge is asked for feedback in its own words, and whatever of the rubric
or the reference it copies anyway (a line, or `judging.MASK_WORDS` consecutive words) is masked before the
feedback reaches a teacher. A teacher reads a judged train item's reference answer as its `<expected>` (the answer
a person accepted is a label, like an expected answer) and never its rubric; rubrics and references are judge
texts the leak guard keeps out of the skill.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable, Mapping

from skillgit.judging import JudgeText, judge_texts, mask_copies, teacher_reference
from skillgit.scorers import ScorerError, clip, extract_json, to_score
from skillgit.types import Item, Score

if TYPE_CHECKING:
    from skillgit.llm.base import LLM, Request

JUDGE_STAGE = "judge"
JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["hard", "soft", "feedback"],
    "properties": {"hard": {"type": "number", "minimum": 0, "maximum": 1},
                   "soft": {"type": "number", "minimum": 0, "maximum": 1},
                   "feedback": {"type": "string"}}}
JUDGE_SYSTEM = ("You are a strict, fair judge of an AI assistant's work. Judge only what is in front of you against "
                "the rubric (and the reference answer, when one is given: a person accepted it, so an answer "
                "that says the same in other words passes). Reply with ONE JSON object "
                '{"hard": 0 or 1 (pass/fail), "soft": a number from 0 to 1 (partial credit), "feedback": one or two '
                'sentences for whoever improves the assistant: what is wrong or missing, in your own words}. The '
                "feedback must not quote the rubric or the reference answer: whoever reads it must never see them.")
_JUDGE_TEXT_LIMIT = 12000  # characters of output and of trace shown to the judge


_TAG_LINE = re.compile(r"^([ \t]*)((?:&amp;)*&lt;|<)(?=/?[A-Za-z_])", re.M)


def _block(tag: str, text: str) -> str:
    """A protocol block (docs/ARCHITECTURE.md) whose content cannot open or close a block: a line-initial `<tag`
    becomes `&lt;tag` and an escaped one gains one `&amp;` (prompts.py's scheme, for any tag name)."""
    body = _TAG_LINE.sub(lambda m: m.group(1) + ("&lt;" if m.group(2) == "<" else "&amp;" + m.group(2)),
                         str(text).rstrip("\n"))
    return f"<{tag}>\n{body}\n</{tag}>"


def judge_request(item: Item, output: str, trace: str = "") -> "Request":
    """The judge's one request for `item` (see the module contract); deterministic, so the call journal replays it."""
    from skillgit.llm.base import Message, Request

    meta = item.metadata or {}
    parts = [f"<stage>{JUDGE_STAGE}</stage>", _block("task", item.input), _block("rubric", str(meta.get("rubric")))]
    reference = _reference(item)
    if reference is not None:
        parts.append(_block("reference", reference))
    parts.append(_block("output", clip(output or "", _JUDGE_TEXT_LIMIT)))
    if trace and trace.strip():
        parts.append(_block("trace", clip(trace, _JUDGE_TEXT_LIMIT)))
    return Request((Message("system", JUDGE_SYSTEM), Message("user", "\n\n".join(parts))), stage=JUDGE_STAGE,
                   json_schema=JUDGE_SCHEMA, temperature=0.0, max_tokens=512)


def parse_judgement(text: str, who: str = "the judge") -> Score:
    """The judge's reply → Score; ScorerError (unknown) when it is not a `{hard, soft, feedback}` object."""
    value = extract_json(text)
    if not isinstance(value, Mapping) or "hard" not in value:
        raise ScorerError(f"{who} gave no {{hard, soft, feedback}} object: {clip(str(text).strip(), 120)!r}",
                          "the trajectory counts as unknown; the judge's model may need a JSON mode")
    return to_score(value, who)


def _reference(item: Item) -> str | None:
    value = (item.metadata or {}).get("judge_reference")
    return value if isinstance(value, str) and value.strip() else None


class RubricScorer:
    """See the module docstring. Thread-safe when `judge` and `fallback` are."""

    kind = "rubric"

    def __init__(self, judge: "LLM", fallback: Callable[[Item, str], Score] | None = None):
        self.judge = judge
        self.fallback = fallback

    @staticmethod
    def judges(item: Item) -> bool:
        rubric = (item.metadata or {}).get("rubric")
        return item.expected is None and isinstance(rubric, str) and bool(rubric.strip())

    def __call__(self, item: Item, output: str, trace: str = "") -> Score:
        if not self.judges(item):
            if self.fallback is None:
                raise ScorerError(f"item '{item.id}' has neither a rubric nor an expected answer",
                                  "give the item `expected`, or a `rubric` in its metadata")
            return self.fallback(item, output)
        from skillgit.llm.base import LLMError

        try:
            reply = self.judge.complete(judge_request(item, "" if output is None else str(output), trace))
        except LLMError as exc:
            raise ScorerError(f"the judge could not answer on item '{item.id}': {exc.message}",
                              "the trajectory counts as unknown") from None
        score = parse_judgement(reply.text, f"the judge ({getattr(self.judge, 'id', 'teacher')})")
        internals = [str(item.metadata.get("rubric")), _reference(item) or ""]
        return Score(score.hard, score.soft, clip(mask_copies(score.feedback, internals)))

    def teacher_reference(self, item: Item) -> Any:
        """A judged item's accepted answer (never its rubric); the fallback's view of every other item."""
        return _reference(item) if self.judges(item) else teacher_reference(self.fallback, item)

    def judge_texts(self, items: list[Item]) -> list[JudgeText]:
        own, rest = [i for i in items if self.judges(i)], [i for i in items if not self.judges(i)]
        texts = [JudgeText("rubric", f"the rubric of item '{i.id}'", str(i.metadata["rubric"])) for i in own]
        texts += [JudgeText("reference", f"the reference answer of item '{i.id}'", ref) for i in own
                  if (ref := _reference(i)) is not None]
        return texts + judge_texts(self.fallback, rest)

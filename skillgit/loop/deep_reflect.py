"""Deep reflect (`optimizer.deep_reflect`, SkillOpt's `gradient.use_deep_reflect`): before the teacher reflects on
a minibatch it probes the student about a few of its trajectories, over several turns, and reflect reads the
transcripts.

Contract:
- `prober(ctx, teacher, skill)` → a `Probe` for `stages.reflect`, or None when deep reflect is off.
  `Probe(outcome, trajectories)` → (text to append to the minibatch's `trajectories` block, a record for the
  patch's note). It probes the first `failures` (a failure minibatch) or `successes` (a success minibatch)
  trajectories that are TRAIN items of the run (`ctx.train`): a trajectory of any other item is never probed.
- Per turn (at most `turns`): one `probe` teacher call (templates/prompts/probe.md) shows the skill, the probed
  trajectories (`prompts.block_trajectories`: the same judge isolation as reflect's: `<expected>` is what the
  scorer lets a teacher read) and the transcript so far; the answer lists at most one probe per trajectory:
  `ask` (a follow-up question: the student sees the task, its own answer and the question) or `rerun` (the task
  again with the teacher's hint appended; the reply is scored by the run's scorer as a rollout is). The student
  never sees an expected answer: a probe item carries the train item's input and metadata, never `expected`.
  An empty list ends the probing. A malformed answer (or a teacher call that failed) is recorded and ends the
  probing of that minibatch (the same prompt would get the same answer); a malformed probe entry (unknown id,
  unknown action, empty text, a second probe for one trajectory) is recorded and skipped.
- Every call is a normal model call: the teacher's under stage `probe`, the student's under `probe_student` (as
  `train --dry-run` counts them), so the ledger, the budget and the call journal see them: the probe items are a pure
  function of the journaled teacher answers, so a resumed run replays finished probes from the journal and
  pays none twice. A student error other than a fatal one is recorded in the transcript as the answer's error.
- The text appended to the trajectories is `PROBES_INTRO` and a `<probes>` block (one `<probe id turn action
  [hard]>` with its `<question>` or `<hint>` and the student's `<answer>`), so a project's own reflect template
  receives it too; with deep reflect off nothing is appended and reflect's prompt is unchanged.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable

from skillgit import prompts
from skillgit.errors import BudgetReached, SkillgitError
from skillgit.llm.base import LLMError
from skillgit.loop import stages
from skillgit.loop.context import StepContext
from skillgit.tagcodec import container, leaf
from skillgit.types import Item, Trajectory

ACTIONS = ("ask", "rerun")
MAX_PROBE_CHARS = 2000  # a question or hint longer than this is recorded and skipped
PROBES_INTRO = ("The teacher probed some of these trajectories before this reflection (deep reflect): follow-up "
                "questions to the student (`ask`) and re-runs of the same task with a hint appended (`rerun`, "
                "scored). Weigh them as evidence: a hint that fixed a failure supports that rule; a student that "
                "says its skill already asks for something slipped; an instruction it names as its reason may be "
                "the cause.")
# What the student reads in a probe (a chat student: its user message; any student: its task input)
ASK_FORMAT = ("Earlier you were given this task:\n{input}\n\nYour answer was:\n{output}\n\n"
              "A follow-up question about your answer: {text}\n"
              "Answer the question briefly, from your instructions and your answer; do not solve the task again.")
RERUN_FORMAT = "{input}\n\nA hint for this task: {text}"

Probe = Callable[[str, list[Trajectory]], tuple[str, dict[str, Any]]]


@dataclass(frozen=True)
class Turn:
    """One probe and the student's answer."""

    item_id: str
    turn: int
    action: str  # ask | rerun
    text: str  # the question or the hint
    answer: str = ""
    hard: float | None = None  # a rerun's score
    error: str | None = None  # the student run failed

    def to_dict(self) -> dict[str, Any]:
        return {"item_id": self.item_id, "turn": self.turn, "action": self.action, "text": self.text,
                "answer": self.answer, "hard": self.hard, "error": self.error}


@dataclass
class _Minibatch:
    """The probing of one minibatch: its probed trajectories and what happened."""

    outcome: str
    chosen: list[Trajectory]
    turns: list[Turn] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        return {"probed": [t.item_id for t in self.chosen], "turns": [t.to_dict() for t in self.turns],
                "problems": self.problems}


def block_probes(turns: list[Turn]) -> str:
    """`<probes>`: one `<probe id turn action [hard]>` per probe with its `<question>`/`<hint>` and `<answer>`."""
    children = []
    for t in turns:
        asked = leaf("question" if t.action == "ask" else "hint", prompts._truncate(t.text, MAX_PROBE_CHARS), 2)
        said = t.answer if t.error is None else f"(the student could not answer: {t.error})"
        answer = leaf("answer", prompts._truncate(said, prompts.DEFAULT_MAX_FIELD_CHARS), 2)
        pairs = [("id", t.item_id), ("turn", t.turn), ("action", t.action),
                 ("hard", None if t.hard is None else f"{t.hard:.2f}")]
        children.append(container("probe", [asked, answer], pairs))
    return container("probes", children)


def probe_item(item: Item, trajectory: Trajectory, action: str, text: str) -> Item:
    """The item a probe runs: the train item's input with the question or hint, never its expected answer."""
    fmt = ASK_FORMAT if action == "ask" else RERUN_FORMAT
    body = fmt.format(input=item.input, output=trajectory.output, text=text)
    return Item(f"{item.id}#probe-{action}", body, None, dict(item.metadata))


def prober(ctx: StepContext, teacher: stages.Teacher, skill: str) -> Probe | None:
    """The step's `Probe` (see the module contract), or None when `optimizer.deep_reflect` is off."""
    cfg = ctx.cfg.optimizer.deep_reflect
    if not cfg.enabled:
        return None
    train = {item.id: item for item in ctx.train}
    student = ctx.student_for("probe_student")

    def run(batch: _Minibatch, turn: int, entry: tuple[Trajectory, str, str]) -> Turn:
        trajectory, action, text = entry
        item = train[trajectory.item_id]
        try:
            reply = student.run(skill, probe_item(item, trajectory, action, text), 0)
        except LLMError as exc:
            if exc.kind in stages.FATAL_KINDS:
                raise
            return Turn(item.id, turn, action, text, error=f"student: {exc.message}")
        hard = None
        if action == "rerun":
            try:
                score = reply.score if reply.score is not None else ctx.scorer(item, reply.text)
                hard = score.hard
            except BudgetReached:
                raise
            except SkillgitError as exc:
                batch.problems.append(f"turn {turn}: {item.id}: the rerun could not be scored: {exc.message}")
        return Turn(item.id, turn, action, text, reply.text, hard)

    def probe(outcome: str, trajectories: list[Trajectory]) -> tuple[str, dict[str, Any]]:
        limit = cfg.failures if outcome == "failure" else cfg.successes
        chosen = [t for t in trajectories if t.item_id in train and t.ok][:limit]
        if not chosen:
            return "", {}
        batch = _Minibatch(outcome, chosen)
        shown = prompts.block_trajectories(chosen, outcome)
        for turn in range(1, cfg.turns + 1):
            obj, error = teacher.ask("probe", {"skill": prompts.block_skill(skill), "trajectories": shown,
                                               "probes": block_probes(batch.turns),
                                               "turn": f'<turn n="{turn}" of="{cfg.turns}"></turn>'})
            if obj is None:
                batch.problems.append(f"turn {turn}: {error}")
                break
            entries = _entries(obj, {t.item_id: t for t in chosen}, turn, batch.problems)
            if not entries:
                break
            batch.turns += teacher.map(functools.partial(run, batch, turn), entries)
        text = f"\n\n{PROBES_INTRO}\n{block_probes(batch.turns)}" if batch.turns else ""
        return text, batch.record()

    return probe


def _entries(obj: dict[str, Any], chosen: dict[str, Trajectory], turn: int,
             problems: list[str]) -> list[tuple[Trajectory, str, str]]:
    """The usable probes of one teacher answer; every unusable one is recorded in `problems`."""
    out: list[tuple[Trajectory, str, str]] = []
    seen: set[str] = set()
    for i, raw in enumerate(obj.get("probes") or []):
        where = f"turn {turn}: probe {i + 1}"
        if not isinstance(raw, dict):
            problems.append(f"{where}: not an object")
            continue
        item_id, action, text = str(raw.get("id", "")), raw.get("action"), raw.get("text")
        if item_id not in chosen:
            problems.append(f"{where}: {item_id[:60]!r} is not a probed trajectory")
        elif item_id in seen:
            problems.append(f"{where}: a second probe of {item_id!r} in one turn")
        elif action not in ACTIONS:
            problems.append(f"{where}: action {str(action)[:20]!r} is not one of {', '.join(ACTIONS)}")
        elif not isinstance(text, str) or not text.strip():
            problems.append(f"{where}: no question or hint")
        elif len(text) > MAX_PROBE_CHARS:
            problems.append(f"{where}: {len(text)} characters, over {MAX_PROBE_CHARS}")
        else:
            seen.add(item_id)
            out.append((chosen[item_id], action, text.strip()))
    return out

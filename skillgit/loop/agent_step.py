"""One step's candidate from the agent teacher (`model.teacher_backend: agent`, skillgit/teacher), built for the gate
like any other. It lives in `loop/` (it is a step's stages) so that `teacher/` never imports the loop.

`propose(ctx, teacher, skill, trajs, budget, step)` is what `loop.modes.propose_update` returns for an agent
teacher: (the candidate text, its `UpdateRecord`, mode `agent`). Contract:
1. The evidence (`evidence.Evidence`: train trajectories with judge-isolated feedback, the negative buffer, the meta
   skill, the limits) becomes one teacher call of stage `agent` — journaled and metered like every teacher call, so
   a resumed step replays it and pays nothing twice. While it runs, `skillgit-try` serves the agent's tries with
   `TrainTrier`: train items only, through the run's own (journaled, metered: stage `try`) student.
2. The agent's package becomes edits per file (`diff.package_edits`); a change no edit can express (a removed file)
   is recorded as refused.
3. The edits go through `stages.select` as a chat teacher's do: edits rejected before without a gain are dropped,
   an edit that cannot apply is dropped with why, and over the step's budget the teacher ranks them (the agent
   teacher's chat side answers the `rank` question) and the budget is filled in that order; the rest is recorded
   `skipped_over_budget`. `stages.update` applies them (front matter, protected regions and `skill.new_files` keep
   their rules); the gate, the guards and the commit follow as for any candidate.
4. The record's `details.agent` carries the transcript summary (the agent's final message, turns, tries, usage,
   its transcript cut to size) for the candidate note; `reasoning` is the agent's final message.
5. Caps: before the call `agent_caps` stops the run (`BudgetReached`) when `budget.max_agent_turns` /
   `max_agent_seconds` is reached or the call could cross it (`over_budget`: as much as the largest call so far),
   and hands the call what is left (`teacher.agent.capped`); a call that ran books its turns and wall seconds in
   the ledger (`Ledger.record_agent`; a replayed one costs nothing).
An agent teacher that cannot run at all (credentials, configuration) stops the run; a call that failed after its
retries stops it resumably (as when every chat teacher call of a stage failed); a refused call makes the candidate
invalid with that reason.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from typing import Any

from skillgit import prompts
from skillgit.agents.trace import cut
from skillgit.config import BudgetCfg
from skillgit.errors import BudgetReached, ExitCode, SkillgitError
from skillgit.llm.base import LLMError
from skillgit.loop import stages
from skillgit.loop.context import StepContext
from skillgit.records import AgentSpend, UpdateRecord
from skillgit.teacher.agent import Caps, capped
from skillgit.teacher.diff import package_edits
from skillgit.teacher.evidence import STAGE, Evidence
from skillgit.teacher.trying import trying
from skillgit.types import Edit, EditResult, Item, Trajectory, is_failure

MODE = "agent"
MAX_TRIES = 24  # per step: tries beyond are refused (each one is a student run)
SUMMARY_CHARS = 1500
NOTE_TRANSCRIPT_CHARS = 4000


class TrainTrier:
    """`skillgit-try` for one step: runs a package on one train item with the run's student (see trying.py)."""

    def __init__(self, ctx: StepContext, step: int | str, *, limit: int = MAX_TRIES):
        self.ctx = ctx
        self.step = step
        self.limit = limit
        self.train: dict[str, Item] = {i.id: i for i in ctx.train}
        self.val = {i.id for i in ctx.evaluator.splits.get("val", [])}
        self.used = 0
        self._lock = threading.Lock()

    def __call__(self, item_id: str, skill: str) -> tuple[int, str]:
        item = self.train.get(item_id)
        if item is None:
            where = "a validation task" if item_id in self.val else "not a training task"
            return 2, (f"refused: {item_id!r} is {where}. skillgit-try runs training tasks only (the ids in "
                       "evidence/trajectories/); validation and test tasks stay unseen by the teacher.")
        with self._lock:
            if self.used >= self.limit:
                return 2, f"refused: this step's {self.limit} tries are spent"
            self.used += 1
        traj = stages.rollout(self.ctx.student_for("try"), skill, [item], self.ctx.scorer, workers=1)[0]
        if not traj.ok:
            return 2, f"the try could not be scored (not a verdict): {traj.error}"
        verdict = "FAILED" if is_failure(traj.score) else "PASSED"
        return (1 if verdict == "FAILED" else 0), f"{verdict}\n{prompts.block_trajectories([traj], 'auto')}"


def propose(ctx: StepContext, teacher: stages.Teacher, skill: str, trajs: list[Trajectory], budget: int,
            step: int | str, variant: int = 0) -> tuple[str, UpdateRecord]:
    """The agent teacher's candidate for `step` (see the module docstring). `variant` k > 0 is the step's (k+1)-th
    agent proposal (`optimizer.proposals`): its limits say so, which makes it a call of its own."""
    cfg = ctx.cfg
    allow_fm = cfg.skill.allow_front_matter_edits
    evidence = Evidence.build(skill, trajs, negative=teacher.negative, meta_skill=teacher.meta_skill, budget=budget,
                              max_tokens=cfg.skill.max_tokens, new_files=cfg.skill.new_files,
                              allow_front_matter=allow_fm)
    if variant:
        evidence = dataclasses.replace(evidence, limits={**evidence.limits, "variant": variant})
    ctx.stage(step, STAGE)
    caps = agent_caps(cfg.budget, ctx.ledger.agent_total())
    try:
        with ctx.ledger.timed(STAGE), trying(TrainTrier(ctx, step)), capped(caps):
            reply = teacher.llm.complete(evidence.request())
    except BudgetReached:
        if caps.seconds is not None:  # stopped at the wall cap: that time was spent
            ctx.ledger.record_agent(0, caps.seconds)
        raise
    except LLMError as exc:
        if exc.kind in stages.FATAL_KINDS:
            raise
        if exc.retryable:
            raise SkillgitError(f"step {step}: the agent teacher failed ({exc.message})",
                                "check it with `skillgit doctor`; the run resumes where it stopped",
                                ExitCode.BACKEND) from None
        return skill, UpdateRecord(MODE, (), invalid=f"agent teacher call refused: {exc.message}",
                                   details={"budget": budget})
    try:
        body = json.loads(reply.text)
        after = str(body["skill"])
    except (ValueError, KeyError, TypeError) as exc:
        return skill, UpdateRecord(MODE, (), invalid=f"malformed agent teacher reply: {exc}",
                                   details={"budget": budget})
    if not reply.cached:
        ctx.ledger.record_agent(_count(body.get("turns")), float(_count(body.get("seconds"), float)))
    edits, refused = package_edits(skill, after)
    ctx.stage(step, "select")
    with ctx.ledger.timed("select"):
        sel = stages.select(teacher, skill, edits, budget, allow_front_matter=allow_fm, new_files=cfg.skill.new_files)
    with ctx.ledger.timed("update"):
        text, results = stages.update(skill, sel.selected, allow_front_matter=allow_fm, new_files=cfg.skill.new_files)
    final = str(body.get("final") or "")
    agent: dict[str, Any] = {
        "summary": cut(final, SUMMARY_CHARS), "turns": body.get("turns"), "error": body.get("error"),
        "tries": list(body.get("tries") or []), "ignored": list(body.get("ignored") or []),
        "seconds": body.get("seconds"), "usage": reply.usage.to_dict(), "replayed": reply.cached,
        "proposed": len(edits), "refused": [r.to_dict() for r in refused],
        "transcript": cut(reply.trace, NOTE_TRANSCRIPT_CHARS)}
    refusals = [EditResult(Edit("delete", target="(the whole file)", file=r.file, source_type=MODE), "error",
                           r.reason) for r in refused]
    details: dict[str, Any] = {"budget": budget, "agent": agent, "proposed": [e.to_dict() for e in edits],
                               "select": sel.record}
    return text, UpdateRecord(MODE, tuple([*refusals, *sel.dropped, *results]), reasoning=cut(final, SUMMARY_CHARS),
                              details=details)


def over_budget(budget: BudgetCfg, spent: AgentSpend) -> str | None:
    """Why the next agent teacher call must not start (None: it may): a cap of `budget.max_agent_turns` /
    `max_agent_seconds` is reached, or the next call could cross it (as much as the largest call so far)."""
    for key, used, most, cap, unit in (("max_agent_turns", spent.turns, spent.max_turns, budget.max_agent_turns, ""),
                                       ("max_agent_seconds", spent.seconds, spent.max_seconds,
                                        budget.max_agent_seconds, " s")):
        if cap is None:
            continue
        if used >= cap:
            return f"budget.{key} reached ({used:g}{unit} ≥ {cap:g}{unit})"
        if spent.calls and used + most > cap:
            return (f"budget.{key}: the next agent teacher call could cross it ({used:g}{unit} used + up to "
                    f"{most:g}{unit} a call > {cap:g}{unit})")
    return None


def agent_caps(budget: BudgetCfg, spent: AgentSpend) -> Caps:
    """The next agent teacher call's caps (what is left of the budget); `BudgetReached` when it must not start."""
    why = over_budget(budget, spent)
    if why:
        raise BudgetReached(why, "raise budget.max_agent_turns / max_agent_seconds and run `skillgit train` again to "
                                 "resume")
    turns = budget.max_agent_turns - spent.turns if budget.max_agent_turns is not None else None
    seconds = budget.max_agent_seconds - spent.seconds if budget.max_agent_seconds is not None else None
    return Caps(turns, seconds)


def _count(value: Any, kind: type = int) -> Any:
    """A count the agent's reply reported (turns, seconds); 0 when it reported none."""
    return kind(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else kind(0)

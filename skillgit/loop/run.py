"""A training run: epochs of steps on the store, resumable from what git holds.

Contract of `Trainer.train()`:
- every step ends in exactly one decided candidate (accepted → the skill branch fast-forwards; rejected → a
  `rejected/<run>/<step>` tag) through the one gated-commit path (`decide.gated_commit`), or raises before
  deciding anything;
- a step's candidate is built on the tip its skill text was read from; if the branch moved meanwhile (a user's
  commit, revert or pull) the run stops with `BranchMoved` (exit 3) and a later `skillgit train` continues from the
  new tip — a user's change is never built over;
- progress (`RunProgress` in `progress.json`, the resolved config, the meta skill, `evidence.json`: the run's
  journal salt and tasks digest, `evidence.py`) is saved on `refs/skillgit/runs/<run>` at its start, before its
  first model call, and after every decided step, so a killed run resumes at the first undecided step; a
  step that git shows as decided is never redone;
- the batches of step k are a pure function of (train split, seed, k), every random choice is seeded by the
  config's seed and the step (never the run id or the clock), and every model call goes through the call journal,
  so a resumed run makes exactly the calls an uninterrupted one would have made, and the same project, seed and
  replies give the same run;
- it never prints: it emits typed `Event`s.

Beside it: `resume.py` (which run to continue, what git already decided), `background.py` (decisions and progress
saves written off the step's critical path), `field.py` (a step's P > 1 proposals gated together), `final.py`
(the closing scores: the only reader of the test split), `teaching.py` (what each step's teacher is given: the
negative buffer and blocked set, read once and kept up to date by the run's decisions, the meta skill, recall),
`epoch_end.py` (an epoch's end: slow update, meta skill, meta reflect; a part of `Trainer`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from skillgit import redact, textsafe
from skillgit.config import RUNTIME_ONLY_KEYS, Config
from skillgit.config_output import config_digest, dump_config
from skillgit.errors import BudgetReached, ExitCode, Interrupted, SkillgitError, raise_if_stop_requested
from skillgit.executor import Executor
from skillgit.llm.base import LLM, Student
from skillgit.loop import agent_step, guards, modes, proposing, recall, spending, stages
from skillgit.loop import evidence as evidence_mod
from skillgit.loop import gate as gate_mod
from skillgit.loop import resume as resume_mod
from skillgit.loop.background import Pending, Planned, Saves, in_background, write_later
from skillgit.loop.batch import require_usable, train_record
from skillgit.loop.context import StepContext
from skillgit.loop.decide import BranchMoved, Proposal, commit, gated_commit, judge
from skillgit.loop.epoch_end import EpochEnds
from skillgit.loop.events import (
    EventSink,
    Heartbeat,
    OrderedSink,
    RunEnded,
    RunStarted,
    StepDecided,
    StepStarted,
    Warning,
    ignore,
)
from skillgit.loop.field import plan_field
from skillgit.loop.final import Closing, final_scores
from skillgit.loop.ledger import Ledger, budget_spent
from skillgit.loop.schedule import is_autonomous, scheduled_budget
from skillgit.loop.teaching import Teaching
from skillgit.records import EpochStep, StepKind, StepOutcome, UpdateRecord
from skillgit.store import Store
from skillgit.store.read import warm_caches
from skillgit.tasks import Splits, epoch_batches
from skillgit.types import Edit


@dataclass
class RunResult:
    run: str
    status: str  # finished | stopped
    reason: str
    steps: int
    accepted: int
    rejected: int
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)  # seed/best/final → {rev, val, test}
    usage: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


MAINTAIN_EVERY = 100  # steps between housekeeping checks within an epoch (epoch and run ends always check)


class Trainer(EpochEnds):
    def __init__(self, cfg: Config, store: Store, splits: Splits, student: Student, teacher: LLM,
                 scorer: stages.Scorer, *, ledger: Ledger, run_id: str | None = None, resume: bool = True,
                 on_event: EventSink = ignore, prompts_dir: Path | None = None, executor: Executor | None = None):
        self.cfg = cfg
        self.store = store
        self.splits = splits
        self.ledger = ledger
        self._events = OrderedSink(on_event)
        self.emit: EventSink = self._events
        self.digest = config_digest(cfg, ignore=RUNTIME_ONLY_KEYS)
        self.config_yaml = dump_config(cfg, mask_secrets=True)  # frozen: dumped once, not at every save
        # The test split is sealed: the evaluator that chooses candidates cannot read it (it has no "test" split);
        # only `final.final_scores` reads it, through its own evaluator, and every read is counted in the progress.
        repeats, deterministic = gate_mod.planned_repeats(cfg)  # temperature 0: one sample per item
        self.evaluator = gate_mod.Evaluator(student, scorer, {"train": list(splits.train), "val": list(splits.val)},
                                            workers=cfg.env.workers, repeats=repeats,
                                            retries=cfg.evaluation.unscored_retries, executor=executor,
                                            deterministic=deterministic)
        self._sealed_test = gate_mod.Evaluator(student, scorer, {"test": list(splits.test)}, workers=cfg.env.workers,
                                               retries=cfg.evaluation.unscored_retries,
                                               executor=executor)  # reported: one sample
        self.ctx = StepContext(cfg, student, scorer, self.evaluator, ledger, self.emit, tuple(splits.train),
                               executor)
        self._pending: Pending | None = None  # a step's decision being written (`_decide_later`)
        self._epoch_to_close: tuple[int, gate_mod.SplitScore] | None = None  # the last epoch's end (`_wind_up`)
        self._said_identical = False  # the evaluator found the student's repeats to be copies, and the run said so
        tasks = evidence_mod.tasks_digest(splits)
        self.run_id, self.progress = resume_mod.open_run(store, cfg.skill.branch, self.digest, run_id, resume,
                                                         tasks=tasks)
        # its journal salt, after refusing a saved run whose config or tasks changed (`evidence.opened`)
        self.evidence, self._resume_notes = evidence_mod.opened(store, self.run_id, self.progress, digest=self.digest,
                                                                tasks=tasks, config_yaml=self.config_yaml)
        self.ctx = dataclasses.replace(self.ctx, own_samples=bool(self.evidence.salt),
                                       spending=spending.Tracker(cfg.evaluation, store, lambda: self.progress))
        self.field_size = proposing.field_size(cfg)  # the most candidates a step makes (optimizer.proposers)
        self._decided = resume_mod.Decided(store, self.run_id, self.field_size)  # see `_already_decided`
        # the teacher's negative buffer, blocked set and recall memory, read once and kept up to date
        self.teaching = Teaching(cfg, store, self.run_id, teacher, prompts_dir=prompts_dir, field_size=self.field_size,
                                 decided=self._decided, splits=splits, scorer=scorer, on_wait=self._waiting)
        self._saves = Saves(store, self.run_id)
        self._prior = self.progress  # what earlier processes spent on this run
        ledger.agent_before = self.progress.agent  # the agent teacher's turns and seconds so far (its budget caps)

    # ------------------------------------------------------------------------------------------ run state
    def _usage(self) -> resume_mod.Totals:
        """(total, by stage, by role, errors by stage) over this run's every process."""
        return resume_mod.totals(self._prior, self.ledger.snapshot(), self.ledger.total())

    def _save(self, message: str, *, background: bool = False, maintain: bool = False,
              usage: tuple | None = None) -> None:
        """Commit the progress to the run ref. With `background` the commit is written while the caller goes on
        (after a step: during the next step's rollout), so its git calls are not on the step's critical path.
        Saves land in order (each waits for the one before), a failed one raises at the next save, and a run
        killed before one lands resumes a step earlier, where git shows the step as decided (`_already_decided`).
        `maintain`: then let git pack loose objects if there are many (`Store.maintain`; not with `background`).
        `usage`: the `_usage()` to record (default: now)."""
        total, by_stage, by_role, errors = usage or self._usage()
        self.progress = self.progress.replace(
            updated=time.time(), usage=total, usage_by_stage=by_stage, usage_by_role=by_role, errors=errors,
            retries=self._prior.retries + self.ledger.retries + self.evaluator.retried, agent=self.ledger.agent_total())
        files = {"progress.json": json.dumps(self.progress.to_dict(), indent=2, sort_keys=True, ensure_ascii=False),
                 "config.yaml": self.config_yaml, "meta_skill.md": self.progress.meta_skill,
                 evidence_mod.FILE: self.evidence.to_json()}
        self._saves.save(files, message, background=background, maintain=maintain)

    def _settle_save(self, *, quiet: bool = False) -> None:
        """Wait for a background save; its error is raised unless `quiet` (another error is on its way)."""
        self._saves.settle(quiet=quiet)

    # ------------------------------------------------------------------------------------------ plan
    @property
    def batches_per_epoch(self) -> int:
        return max(1, math.ceil(len(self.splits.train) / self.cfg.train.batch_size))

    @property
    def total_steps(self) -> int:
        total = self.cfg.train.num_epochs * self.batches_per_epoch
        if self.cfg.train.max_steps is not None:
            total = min(total, self.cfg.train.max_steps)
        return total

    def batch_for(self, step: int) -> tuple[int, list]:
        epoch, index = divmod(step - 1, self.batches_per_epoch)
        return epoch, epoch_batches(self.splits.train, self.cfg.train.batch_size, self.cfg.train.seed, epoch)[index]

    # ------------------------------------------------------------------------------------------ the run
    def train(self) -> RunResult:
        with self.store.lock(self.cfg.skill.branch):
            resume_mod.check_unmoved(self.store, self.run_id, self._prior)  # read before the lock: still true?
            self.ledger.budget_check = self._budget_exceeded  # the seed's and the incumbent's scoring included
            try:
                seed_score, current = self._start()
            except BudgetReached as exc:
                return self._stopped_before_steps(exc)
            try:
                status, reason = self._steps(current)
            except BaseException as exc:
                self._settle_decision(quiet=True)  # nothing may still write once the run lock is released
                self._settle_save(quiet=True)
                if not isinstance(exc, BudgetReached):
                    self._record_stop(exc)
                    raise
                status, reason = "stopped", exc.message  # mid-step: undecided; its finished calls are journaled
            try:
                closing = self._closing_scores(seed_score)
            except BaseException:
                self._settle_decision(quiet=True)  # as above: the lock must outlive every write
                self._settle_save(quiet=True)
                raise
            if closing.warning:
                self.emit(Warning(closing.warning))
            self._book_seconds()
            # (the status only now: a step save that lands after the last step must not say the run finished)
            self.progress = self.progress.replace(status=status, stop_reason=reason, final_scores=closing.scores,
                                                  test_reads=self.progress.test_reads + closing.test_reads)
            self._save(f"run {status}: {reason}", maintain=True)
            warm_caches(self.store, self.progress)  # the first `log`/`status` after the run reads no history
        score_dicts = {k: v.to_dict() for k, v in closing.scores.items()}
        result = RunResult(self.run_id, status, reason, self.progress.steps_done, self.progress.accepted,
                           self.progress.rejected, score_dicts, self.ledger.snapshot())
        self.emit(RunEnded(self.run_id, status, reason, result.accepted, result.rejected, score_dicts,
                           self.progress.usage.to_dict()))
        return result

    def _stopped_before_steps(self, exc: BudgetReached) -> RunResult:
        """A budget reached while the seed (or the incumbent) was scored: no step can be judged yet. The run is
        stopped with no scores; its finished calls are journaled, and a larger budget resumes it."""
        self._settle_save(quiet=True)
        val, repeats = len(self.evaluator.splits["val"]), self.cfg.evaluation.gate_repeats
        reason = f"{exc.message} before the first step: the skill is scored on val first ({val} items × {repeats})"
        self.progress = self.progress.replace(status="stopped", stop_reason=reason, total_steps=self.total_steps)
        self._save(f"run stopped: {reason}")
        self.emit(RunEnded(self.run_id, "stopped", reason, self.progress.accepted, self.progress.rejected, {},
                           self.progress.usage.to_dict()))
        return RunResult(self.run_id, "stopped", reason, self.progress.steps_done, self.progress.accepted,
                         self.progress.rejected, {}, self.ledger.snapshot())

    def _start(self) -> tuple[gate_mod.SplitScore, gate_mod.SplitScore]:
        """Worktrees ready, the seed and the incumbent scored, the start said and saved: (seed, incumbent)."""
        self.store.prepare_worktrees()  # before any model call: an accept could not land in a dirty worktree
        resumed = self.progress.next_step > 1
        self.progress = self.progress.replace(status="running", stop_reason="")
        for note in self._resume_notes:
            self.emit(Warning(note))
        if self.progress.started is None:  # the salt is on the run ref before the first call: a kill replays it
            self._save("run start: evidence")
        self.ctx.stage(0, "gate")
        if self.progress.seed_rev is None:
            self.progress = self.progress.replace(seed_rev=self.store.tip())
        seed_score = self.evaluator.score(self.store.read_skill(self.progress.seed_rev or ""), "val",
                                          self.ctx.progress(0, "seed"))
        # resumed: the tip's score as the round that measured it did (the journal answers: nothing is paid twice,
        # and the run goes on as it would have); it is the next step's earlier null control either way
        current = self.evaluator.score(self.store.read_skill(), "val", round=self._incumbent_round())
        metric, weight = self.cfg.evaluation.gate_metric, self.cfg.evaluation.mixed_weight
        self.progress = self.progress.replace(
            total_steps=self.total_steps, started=self.progress.started or time.time(),
            seed_score=round(seed_score.mean(metric, weight), 4), current_score=round(current.mean(metric, weight), 4))
        self.emit(RunStarted(self.run_id, resumed, self.total_steps, seed_score.mean(metric, weight),
                             current.mean(metric, weight)))
        self._save("run start" if not resumed else "resume")
        small = gate_mod.small_val_warning(self.cfg.evaluation, len(self.evaluator.splits["val"]), self.field_size)
        if small:
            self.emit(Warning(small))
        for line in guards.over_budget(self.store.read_skill(), self.cfg.skill.max_tokens,
                                       self.cfg.skill.max_description_chars):
            self.emit(Warning(line))  # said once here, not as every candidate's rejection
        return seed_score, current

    def _steps(self, current: gate_mod.SplitScore) -> tuple[str, str]:
        """Every remaining step (and epoch end) in order; (status, reason) when they are done or a budget stops."""
        metric, weight = self.cfg.evaluation.gate_metric, self.cfg.evaluation.mixed_weight
        for step in range(self.progress.next_step, self.total_steps + 1):
            raise_if_stop_requested()  # a safe point (see errors.request_stop)
            stop = self._budget_exceeded() or agent_step.over_budget(self.cfg.budget, self.ledger.agent_total())
            if stop:
                self._settle_decision()
                return "stopped", stop
            epoch, batch = self.batch_for(step)
            if step > 1 and (step - 1) % self.batches_per_epoch == 0 and not self.progress.epoch(epoch - 1).ended:
                current = self._end_epoch(epoch - 1, current)
            current = self._step(step, epoch, batch, current)
            if self.evaluator.identical_seen and not self._said_identical:  # measured: said once
                self._said_identical = True
                self.emit(Warning(self.evaluator.identical_seen))
            if self._pending is None:  # a step git already held: counted, saved here
                self.progress = self.progress.replace(next_step=step + 1,
                                                      current_score=round(current.mean(metric, weight), 4))
                self._save(f"step {step}", background=True)
        last_epoch = (self.total_steps - 1) // self.batches_per_epoch
        if self.total_steps % self.batches_per_epoch == 0 and self.total_steps > 0 \
                and not self.progress.epoch(last_epoch).ended:
            if self._epoch_has_work():
                self._end_epoch(last_epoch, current)  # (it waits for the last step's decision first)
            else:
                self._epoch_to_close = (last_epoch, current)  # closed by `_wind_up`, once the decision landed
        return "finished", "finished all steps"  # the last decision may still be landing: see `_wind_up`

    def _closing_scores(self, seed_score: gate_mod.SplitScore) -> Closing:
        """The run's closing scores (`final.final_scores`). The run's last decision may still be landing (`_steps`):
        the final skill's test scoring overlaps it, and `_wind_up` waits for it before anything reads the branch."""
        return final_scores(self.ctx, self.store, self.run_id, self.progress.seed_rev, seed_score, self.evaluator,
                            self._sealed_test, self._budget_exceeded,
                            final_text=self._pending.text if self._pending is not None else None,
                            wind_up=self._wind_up)

    def _wind_up(self) -> None:
        """After the last step: wait for its decision and close the last epoch when its end has no work (the
        closing test scoring of the final skill runs while they land, `final.final_scores`)."""
        self._settle_decision()
        if self._epoch_to_close is not None:
            (epoch, current), self._epoch_to_close = self._epoch_to_close, None
            self._end_epoch(epoch, current)

    def _record_stop(self, exc: BaseException) -> None:
        """What a run stopped by `exc` (other than a budget) leaves in its progress: interrupted, stopped because
        the skill branch moved, or failed with the exit code `status` shows — stopped for exit 5 (handoff questions
        wait) — (a bare BaseException: nothing)."""
        if isinstance(exc, (KeyboardInterrupt, Interrupted)):
            how = exc.message if isinstance(exc, Interrupted) else "interrupted"  # e.g. "stopped by SIGTERM"
            self.progress = self.progress.replace(status="interrupted", stop_reason=how)
            self._save("interrupted")
        elif isinstance(exc, BranchMoved):
            self.progress = self.progress.replace(status="stopped", stop_reason=exc.message)
            self._save("stopped: the skill branch moved")
        elif isinstance(exc, Exception):  # e.g. a backend that kept failing (exit 4): `status` says so, not "killed?"
            code = int(exc.code) if isinstance(exc, SkillgitError) else int(ExitCode.INTERNAL)
            what = exc.message if isinstance(exc, SkillgitError) else f"crashed: {type(exc).__name__}: {exc}"
            ended = "stopped" if code == ExitCode.BUDGET else "failed"  # exit 5: handoff questions wait
            self.progress = self.progress.replace(status=ended, stop_reason=redact.redact(
                f"{textsafe.clean(what, multiline=False)[:500]} (exit {code}); `skillgit train` resumes it"))
            try:
                self._save(f"{ended} (exit {code})")
            except Exception:
                pass  # the run's own error is the one to report

    def _book_seconds(self, train: Mapping[str, float] | None = None) -> None:
        """Add the agentic phase seconds of the rollouts made since the last call (train batch, val and test
        scoring) to the run's totals (`status`: rollout seconds)."""
        seconds = gate_mod.add_seconds(gate_mod.add_seconds(train or {}, self.evaluator.take_seconds()),
                                       self._sealed_test.take_seconds())
        if seconds:
            self.progress = self.progress.replace(
                rollout_seconds=gate_mod.add_seconds(self.progress.rollout_seconds, seconds))

    def _budget_exceeded(self) -> str | None:
        b = self.cfg.budget  # (asked before every model call: no limit set, no totals summed)
        if b.max_calls is None and b.max_tokens is None and b.max_cost_usd is None:
            return None
        flying = self.ledger.in_flight  # read first: a call that returns in between then counts twice, never zero times
        return budget_spent(b, self._usage()[0], flying)

    def teacher(self, step: int | None = None) -> stages.Teacher:
        """The teacher for `step` (None: an epoch's end): `Teaching.teacher`, with the run's meta skill."""
        return self.teaching.teacher(step, self.progress.meta_skill)

    def _waiting(self, stage: str, elapsed: float) -> None:
        self.emit(Heartbeat(stage, 1, round(elapsed, 1)))

    def _incumbent_round(self) -> str:
        """The round that measured the tip's current val score (`resume.incumbent_round`)."""
        return resume_mod.incumbent_round(self.store, self.run_id, self.progress.last)

    # ------------------------------------------------------------------------------------------ one step
    def _step(self, step: int, epoch: int, batch: list, current: gate_mod.SplitScore) -> gate_mod.SplitScore:
        """rollout → (autonomous budget) → reflect … update (per update mode) → gate → the decision, which is
        written in the background (`_decide_later`): returns the val score of the skill the branch will hold."""
        if self._already_decided(step, epoch):  # its score as that decision measured it (the journal answers)
            return self.evaluator.score(self.store.read_skill(), "val", round=self._incumbent_round())
        usage_before = self.ledger.snapshot()
        pending = self._pending
        # The previous step's decision may still be being written: its skill text is known, and the students need
        # nothing else. The teacher (its negative buffer includes that decision) is built once the decision has
        # landed, while the students run.
        base = self.store.tip() if pending is None else None
        skill = pending.text if pending is not None else self.store.read_skill(base)
        pending_teacher = in_background(functools.partial(self._teacher_after, pending, step))
        budget = scheduled_budget(self.cfg.optimizer, step - 1, self.total_steps)
        lr_record: dict[str, Any] = {"mode": "scheduled", "budget": budget}
        self.emit(StepStarted(str(step), epoch, budget))
        self.ctx.stage(step, "rollout")
        with self.ledger.timed("rollout"):
            trajs = stages.rollout(self.ctx.student_for("rollout"), skill, batch, self.ctx.scorer,
                                   workers=self.ctx.workers, on_progress=self.ctx.progress(step, "rollout"),
                                   executor=self.ctx.executor)
        teacher = pending_teacher.result()
        # the commit the candidate is built on: the one the previous decision left (never whatever the branch
        # points to now: a user's commit that landed meanwhile must make this step's decision fail, not be built
        # over)
        if pending is not None:
            base = self._settle_decision()
        assert base is not None
        require_usable(step, batch, trajs)
        if is_autonomous(self.cfg.optimizer):
            budget, lr_record = modes.choose_budget(teacher, skill, trajs, self.cfg.optimizer, budget)
        names, self.progress, switched = proposing.at_step(self.cfg, self.progress, step)
        if switched:
            self.emit(Warning(switched))
        # P proposals per proposer; their teacher calls run side by side: one wave per stage, as for one proposal
        built = proposing.build(self.ctx, teacher, skill, trajs, budget, step, names)
        train = train_record(trajs)
        self._book_seconds(train["seconds"])
        train_before = gate_mod.SplitScore.from_trajectories("train", gate_mod.blob_id(skill), trajs)
        remembered = recall.remember(self.teaching.memory, self.cfg, trajs, self.run_id, step)  # optimizer.recall_k
        proposals = [Proposal(step, epoch, StepKind.STEP, base, skill, text, record.with_details(lr=lr_record,
                                                                                                  train=train,
                                                                                                  **remembered),
                              batch=tuple(batch), train_before=train_before) for text, record in built]
        if len(proposals) == 1:
            judged = judge(self.ctx, proposals[0], current)
            plan = [Planned(proposals[0], judged, self.ledger.diff_since(usage_before))]
            return self._decide_later(step, plan, current)
        field = plan_field(self.ctx, step, proposals, current, usage_before,
                           functools.partial(self._decided.rival, step))
        return self._decide_later(step, field, current)

    def _teacher_after(self, pending: Pending | None, step: int) -> stages.Teacher:
        if pending is not None:
            pending.future.result()  # the negative buffer must include what that decision wrote (or: its error)
        return self.teacher(step)

    def _commit(self, proposal: Proposal, current: gate_mod.SplitScore, usage_before: dict) -> gate_mod.SplitScore:
        """Gate and decide `proposal` inline (an epoch's candidates)."""
        self._settle_decision()
        outcome, score = gated_commit(self.ctx, self.store, self.run_id, self.progress.seq + 1, proposal, current,
                                      usage_before, negative=self.teaching.negative)
        self.teaching.block([r.edit for r in proposal.record.applied], outcome, proposal.step)
        self._record(proposal.epoch, outcome, _edit_dicts(proposal))
        self.emit(StepDecided(outcome, self._usage()[0].to_dict()))
        return score

    def _decide_later(self, step: int, plan: list[Planned], current: gate_mod.SplitScore) -> gate_mod.SplitScore:
        """Write the step's decisions (`plan`; the step's own last) in the background (`background.write_later`)
        and return the val score of the skill the branch will hold. The next step's students start meanwhile: they
        need only that skill's text. `_settle_decision` (after the next rollout, or before anything else reads the
        store) waits for it, counts it and saves the progress. Contract kept: the decisions land in order, each in
        one ref transaction; the progress says a step is done only after its decision landed; its events come
        before the next step's (`OrderedSink`); a failure (e.g. `BranchMoved`) is raised by the next wait."""
        main = plan[-1]
        accepted = main.judgement.result.accept
        seq0 = self.progress.seq

        def decide(n: int, item: Planned) -> tuple[StepOutcome, StepDecided | None]:
            if item.found is not None:
                outcome = resume_mod.found_outcome(self.run_id, item.proposal.step, item.proposal.epoch, seq0 + n,
                                                   item.found)
                # blocked as when this process decided it: the blocked set must not depend on a restart
                self.teaching.block(self._found_edits(item.found), outcome, item.proposal.step)
                return outcome, None
            outcome = commit(self.ctx, self.store, self.run_id, seq0 + n, item.proposal, item.judgement, current,
                             item.usage, negative=self.teaching.negative)
            self.teaching.block([r.edit for r in item.proposal.record.applied], outcome, item.proposal.step)
            return outcome, StepDecided(outcome, self._usage()[0].to_dict())

        self._pending = Pending(step, main.proposal.after if accepted else main.proposal.before, main.proposal.base,
                                main.judgement.score if accepted else main.judgement.incumbent(current),
                                write_later(self._events, plan, decide), self._usage())
        return self._pending.score

    def _settle_decision(self, *, quiet: bool = False) -> str | None:
        """Wait for the step decision being written (if any), count it, and save the progress (in the background).
        Returns the commit the branch holds after it (None when nothing was pending). `quiet`: an error is on its
        way; a decision that failed is dropped (the step stays undecided) and nothing is saved."""
        pending = self._pending
        if pending is None:
            return None
        try:
            decided = pending.future.result()
        except BaseException:
            if not pending.future.done():  # a wait cut short (Ctrl-C): the writes go on, and stay pending (as saves)
                raise
            self._pending = None
            if quiet:
                return None
            raise
        self._pending = None
        for proposal, outcome in decided:
            self._record(proposal.epoch, outcome, _edit_dicts(proposal), proposal.record)
        metric, weight = self.cfg.evaluation.gate_metric, self.cfg.evaluation.mixed_weight
        self.progress = self.progress.replace(next_step=pending.step + 1,
                                              current_score=round(pending.score.mean(metric, weight), 4))
        if not quiet:
            # every MAINTAIN_EVERY steps the save is waited for and followed by housekeeping (never while other git
            # writes run: packing refs then could make their transactions fail)
            housekeeping = pending.step % MAINTAIN_EVERY == 0
            self._save(f"step {pending.step}", background=not housekeeping, maintain=housekeeping,
                       usage=pending.usage)
        main = decided[-1][1]
        return main.sha if main.accepted and main.sha else pending.base

    def _record(self, epoch: int, outcome: StepOutcome, edits: list[dict], record: UpdateRecord | None = None
                ) -> None:
        """Count a decided step and add it to the running epoch's log (what meta reflect reads); `record`: how it
        was built (its proposer's counts and the schedule's streak, `proposing.count`)."""
        info = self.progress.epoch(epoch)
        info = dataclasses.replace(info, steps=(*info.steps, EpochStep(outcome.step, outcome.kind, outcome.verdict,
                                                                      outcome.delta, tuple(edits))))
        unscored = (outcome.coverage.total - outcome.coverage.scored) if outcome.coverage else self.progress.unscored
        self.progress = self.progress.with_epoch(epoch, info).replace(
            accepted=self.progress.accepted + outcome.accepted,
            rejected=self.progress.rejected + (not outcome.accepted), seq=outcome.seq, last=outcome, unscored=unscored)
        self.progress = proposing.count(self.progress, outcome, record)

    def _already_decided(self, step: int | str, epoch: int) -> bool:
        """True when git already holds the decision for `step` (a run killed after deciding but before saving
        its progress): the step — and a numbered step's other proposals, decided before it — is counted, not
        redone (`resume.Decided`)."""
        found = self._decided.step(step)
        for name, record in found or ():
            self._count_found(name, epoch, record)
        return found is not None

    def _count_found(self, step: int | str, epoch: int, found: StepOutcome) -> None:
        """Count a decision git already holds (made before a restart) as if this process had made it."""
        outcome = resume_mod.found_outcome(self.run_id, step, epoch, self.progress.seq + 1, found)
        candidate = self.store.step_notes(found.sha).candidate
        self._record(epoch, outcome, [e.to_dict() for e in candidate.edits] if candidate else [],
                     candidate.update if candidate else None)

    def _found_edits(self, found: StepOutcome) -> list[Edit]:
        """The edits a decision git already holds applied (its candidate note's)."""
        candidate = self.store.step_notes(found.sha).candidate
        return list(candidate.edits) if candidate else []



def _edit_dicts(proposal: Proposal) -> list[dict]:
    return [r.edit.to_dict() for r in proposal.record.applied]


__all__ = ["Trainer", "RunResult"]

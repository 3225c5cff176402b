"""A training run: epochs of steps on the store, resumable from what git holds.

Contract of `Trainer.train()`:
- every step ends in exactly one decided candidate (accepted → the skill branch fast-forwards; rejected → a
  `rejected/<run>/<step>` tag) or raises before proposing anything;
- progress (`progress.json`, the resolved config) is saved on `refs/skillgit/runs/<run>` after every decided
  step, so a killed run resumes at the first undecided step; a step that git shows as decided is never redone;
- the batches of step k are a pure function of (train split, seed, k), and every model call goes through the
  call cache, so a resumed run makes exactly the calls an uninterrupted one would have made;
- it never prints: it emits `Event`s.
"""

from __future__ import annotations

import json
import math
import random
import time
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from skillgit import redact
from skillgit.config import RUNTIME_ONLY_KEYS, Config, config_digest, dump_config
from skillgit.errors import ExitCode, SkillgitError
from skillgit.llm.base import LLM, Student
from skillgit.loop import epoch as epoch_mod
from skillgit.loop import modes
from skillgit.loop import gate as gate_mod
from skillgit.loop import stages
from skillgit.loop.events import Event, EventSink, ignore
from skillgit.loop.ledger import Ledger
from skillgit.loop.schedule import is_autonomous, scheduled_budget
from skillgit.store import Store
from skillgit.tasks import Splits, epoch_batches
from skillgit.types import Edit, RejectedEdit, Usage


@dataclass
class RunResult:
    run: str
    status: str  # finished | stopped
    reason: str
    steps: int
    accepted: int
    rejected: int
    scores: dict[str, dict[str, float | None]] = field(default_factory=dict)  # seed/best/final → val/test
    usage: dict[str, Any] = field(default_factory=dict)


def new_run_id(now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now or time.time()))
    return f"{stamp}-{random.Random().randrange(16 ** 4):04x}"


class Trainer:
    def __init__(self, cfg: Config, store: Store, splits: Splits, student: Student, teacher: LLM,
                 scorer: stages.Scorer, *, ledger: Ledger, run_id: str | None = None, resume: bool = True,
                 on_event: EventSink = ignore, prompts_dir: Path | None = None):
        self.cfg = cfg
        self.store = store
        self.splits = splits
        self.student = student
        self.teacher_llm = teacher
        self.scorer = scorer
        self.ledger = ledger
        self.emit = on_event
        self.prompts_dir = prompts_dir
        self.digest = config_digest(cfg, ignore=RUNTIME_ONLY_KEYS)
        self._blocked_edits: dict | None = None
        self.config_yaml = dump_config(cfg, mask_secrets=True)  # frozen: dumped once, not at every save
        self._pending_save: Future | None = None
        self._caught_up = False  # see already_decided
        self.run_id, self.state = self._open_run(run_id, resume)
        self.evaluator = gate_mod.Evaluator(student, scorer, {"train": splits.train, "val": splits.val,
                                                              "test": splits.test},
                                            workers=cfg.env.workers, repeats=cfg.evaluation.gate_repeats)

    # ------------------------------------------------------------------------------------------ run state
    def _open_run(self, run_id: str | None, resume: bool) -> tuple[str, dict[str, Any]]:
        """Continue `run_id`, or (with `resume`) the newest run if it is unfinished and has the same config
        digest and branch; otherwise start a new run."""
        if run_id is None and resume:
            runs = self.store.list_runs()
            progress = self._progress_of(runs[0]) if runs else None
            if progress and progress.get("status") != "finished" and progress.get("config_digest") == self.digest \
                    and progress.get("branch") == self.cfg.skill.branch:
                return runs[0], progress
        if run_id is not None:
            progress = self._progress_of(run_id)
            if progress is not None:
                return run_id, progress
        run_id = run_id or new_run_id()
        return run_id, {"run": run_id, "config_digest": self.digest, "branch": self.cfg.skill.branch,
                        "status": "running", "next_step": 1, "accepted": 0, "rejected": 0,
                        "usage": {}, "meta_skill": "", "epochs": {}}

    def _progress_of(self, run_id: str) -> dict[str, Any] | None:
        files = self.store.load_run(run_id) or {}
        return json.loads(files["progress.json"]) if "progress.json" in files else None

    def _save(self, message: str, *, background: bool = False, maintain: bool = False) -> None:
        """Commit the progress to the run ref. With `background` the commit is written while the caller goes on
        (after a step: during the next step's rollout), so its git calls are not on the step's critical path.
        Saves land in order (each waits for the one before), a failed one raises at the next save, and a run
        killed before one lands resumes a step earlier, where git shows the step as decided (`already_decided`).
        `maintain`: then let git pack loose objects if there are many (`Store.maintain`; not with `background`)."""
        self.state["usage"] = self._usage_total().to_dict()
        self.state["updated"] = time.time()
        files = {"progress.json": json.dumps(self.state, indent=2, sort_keys=True, ensure_ascii=False),
                 "config.yaml": self.config_yaml,
                 "meta_skill.md": self.state.get("meta_skill", "")}
        self._settle_save()

        def write() -> None:
            self.store.save_run(self.run_id, files, message)
            if maintain:
                self.store.maintain()

        if background:
            self._pending_save = _in_background(write)
        else:
            write()

    def _settle_save(self, *, quiet: bool = False) -> None:
        """Wait for a background save; its error is raised unless `quiet` (another error is on its way)."""
        pending, self._pending_save = self._pending_save, None
        if pending is not None:
            try:
                pending.result()
            except Exception:
                if not quiet:
                    raise

    def _usage_total(self) -> Usage:
        prior = Usage.from_dict(self.state.get("usage_before_resume", {}))
        return prior + self.ledger.total()

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
            self.store.check_clean()  # before any model call: an accept could not land in a dirty worktree
            resumed = self.state["next_step"] > 1
            if resumed:
                self.state["usage_before_resume"] = self.state.get("usage", {})
            self.state["status"] = "running"
            seed_skill = self.store.read_skill()
            self._stage(0, "gate")
            if "seed_rev" not in self.state:
                self.state["seed_rev"] = self.store.tip()
            seed_score = self.evaluator.score(self.store.read_skill(self.state["seed_rev"]), "val",
                                              self._progress(0, "seed"))
            current = self.evaluator.score(seed_skill, "val")
            metric, weight = self.cfg.evaluation.gate_metric, self.cfg.evaluation.mixed_weight
            self.state["total_steps"] = self.total_steps
            self.state.setdefault("started", time.time())
            self.state["seed_score"] = round(seed_score.mean(metric, weight), 4)
            self.state["current_score"] = round(current.mean(metric, weight), 4)
            self.emit(Event("run_start", {"run": self.run_id, "resumed": resumed, "total_steps": self.total_steps,
                                          "seed_score": seed_score.mean(metric, weight),
                                          "current_score": current.mean(metric, weight)}))
            self._save("run start" if not resumed else "resume")
            reason = "finished all steps"
            status = "finished"
            try:
                for step in range(self.state["next_step"], self.total_steps + 1):
                    stop = self._budget_exceeded()
                    if stop:
                        status, reason = "stopped", stop
                        break
                    epoch, batch = self.batch_for(step)
                    if step > 1 and (step - 1) % self.batches_per_epoch == 0 \
                            and self.state["epochs"].get(str(epoch - 1), {}).get("ended") is not True:
                        current = self._end_epoch(epoch - 1, current)
                    current = self._step(step, epoch, batch, current)
                    self.state["next_step"] = step + 1
                    self.state["current_score"] = round(current.mean(metric, weight), 4)
                    # every MAINTAIN_EVERY steps the save is waited for and followed by housekeeping (never
                    # while other git writes run: packing refs then could make their transactions fail)
                    housekeeping = step % MAINTAIN_EVERY == 0
                    self._save(f"step {step}", background=not housekeeping, maintain=housekeeping)
                else:
                    last_epoch = (self.total_steps - 1) // self.batches_per_epoch
                    if self.total_steps % self.batches_per_epoch == 0 and self.total_steps > 0 \
                            and self.state["epochs"].get(str(last_epoch), {}).get("ended") is not True:
                        current = self._end_epoch(last_epoch, current)
            except KeyboardInterrupt:
                self.state["status"] = "interrupted"
                self.state["stop_reason"] = "interrupted"
                self._save("interrupted")
                raise
            except BaseException:
                self._settle_save(quiet=True)  # nothing may still write once the run lock is released
                raise
            self.state["status"] = status
            self.state["stop_reason"] = reason
            try:
                scores = self._final_scores(seed_score)
            except BaseException:
                self._settle_save(quiet=True)  # as above: the lock must outlive every write
                raise
            self.state["final_scores"] = scores
            self._save(f"run {status}: {reason}", maintain=True)
        result = RunResult(self.run_id, status, reason, self.state["next_step"] - 1, self.state["accepted"],
                           self.state["rejected"], scores, self.ledger.snapshot())
        self.emit(Event("run_end", {"run": self.run_id, "status": status, "reason": reason, "scores": scores,
                                    "usage": self._usage_total().to_dict(), "accepted": result.accepted,
                                    "rejected": result.rejected}))
        return result

    def _progress(self, step: int, stage: str):
        def report(done: int, total: int) -> None:
            self.emit(Event("progress", {"step": step, "stage": stage, "done": done, "total": total}))
        return report

    def _budget_exceeded(self) -> str | None:
        b = self.cfg.budget
        used = self._usage_total()
        if b.max_calls is not None and used.calls >= b.max_calls:
            return f"budget.max_calls reached ({used.calls} ≥ {b.max_calls})"
        if b.max_tokens is not None and used.total_tokens >= b.max_tokens:
            return f"budget.max_tokens reached ({used.total_tokens} ≥ {b.max_tokens})"
        if b.max_cost_usd is not None and used.cost_usd >= b.max_cost_usd:
            return f"budget.max_cost_usd reached (${used.cost_usd:.4f} ≥ ${b.max_cost_usd:.4f})"
        return None

    def teacher(self) -> stages.Teacher:
        opt = self.cfg.optimizer
        negative = self.store.negative_buffer(opt.negative_buffer_size) if opt.use_negative_buffer else []
        meta = self.state.get("meta_skill", "") if opt.use_meta_skill else ""
        blocked = self._blocked() if opt.use_negative_buffer else {}
        return stages.Teacher(self.teacher_llm, self.prompts_dir, negative, meta, self.cfg.gradient.analyst_workers,
                              blocked)

    def _blocked(self) -> dict:
        """Every edit rejected so far in this run, read from git once and then kept up to date as steps are
        rejected (so resuming rebuilds the same set)."""
        if self._blocked_edits is None:
            self._blocked_edits = {r.edit.key(): r for r in reversed(self.store.negative_buffer(10 ** 9))
                                   if r.run == self.run_id}
        return self._blocked_edits

    # ------------------------------------------------------------------------------------------ one step
    def _step(self, step: int, epoch: int, batch: list, current: gate_mod.SplitScore) -> gate_mod.SplitScore:
        """rollout → (autonomous budget) → reflect … update (per update mode) → gate → propose → decide."""
        if self.already_decided(step, epoch):
            return self.evaluator.score(self.store.read_skill(), "val")
        before_usage = self.ledger.snapshot()
        skill = self.store.read_skill()
        # The negative buffer (a history scan and a notes read) is only needed from reflect on: read it from git
        # while the students run instead of adding its git calls to every step's wall time.
        pending_teacher = _in_background(self.teacher)
        budget = scheduled_budget(self.cfg.optimizer, step - 1, self.total_steps)
        lr_record: dict[str, Any] = {"mode": "scheduled", "budget": budget}
        self.emit(Event("step_start", {"step": step, "epoch": epoch, "budget": budget}))

        self._stage(step, "rollout")
        with self.ledger.timed("rollout"):
            trajs = stages.rollout(self.student, skill, batch, self.scorer, workers=self.cfg.env.workers,
                                   on_progress=self._progress(step, "rollout"))
        teacher = pending_teacher.result()
        usable = [t for t in trajs if t.ok]
        if batch and not usable:
            first = trajs[0].error or ""
            if first.startswith("scorer:"):
                raise SkillgitError(f"step {step}: the scorer failed on every rollout ({first})",
                                    "fix env.scorer (try it with `skillgit eval --split train`); the run resumes "
                                    "where it stopped", ExitCode.USAGE)
            raise SkillgitError(f"step {step}: every rollout failed ({first})",
                                "check the student backend with `skillgit doctor`; the run resumes where it stopped",
                                ExitCode.BACKEND)
        if is_autonomous(self.cfg.optimizer):
            budget, lr_record = modes.choose_budget(teacher, skill, trajs, self.cfg.optimizer, budget)

        new_text, record = modes.propose_update(self, teacher, skill, trajs, budget, step)
        record["lr"] = lr_record
        record["train"] = {"items": [t.item_id for t in trajs], "errors": {t.item_id: t.error for t in trajs if t.error},
                           "hard_mean": _mean([t.score.hard for t in usable]),
                           "soft_mean": _mean([t.score.soft for t in usable])}
        return self._gate_and_decide(step, epoch, skill, new_text, record, before_usage, current, kind="step")

    def _stage(self, step: int | str, stage: str) -> None:
        """Announce a stage; the metered student books its calls under it."""
        if hasattr(self.student, "stage"):
            self.student.stage = stage.split(":")[0]
        self.emit(Event("stage", {"step": step, "stage": stage}))

    def emit_event(self, kind: str, data: dict[str, Any]) -> None:
        self.emit(Event(kind, data))

    def already_decided(self, step: int | str, epoch: int) -> bool:
        """True when git already holds the decision for `step` (a run killed after deciding but before saving
        its progress): the step is counted, not redone. A candidate left undecided is discarded, to be rebuilt
        from cached calls. Steps are decided in order (and the run lock keeps other processes out), so once one
        step is found undecided no later one can have been decided: git is asked only until then."""
        if self._caught_up:
            return False
        record = self.store.step_record(self.run_id, step)
        if record is not None:
            self._count(record["verdict"])
            self.state["seq"] = self.state.get("seq", 0) + 1
            self._remember(epoch, step, record["kind"], record["verdict"], record["delta"], record["edits"])
            return True
        self.store.discard_candidate(self.run_id, step)
        self._caught_up = True
        return False

    def check_teacher_alive(self, step: int | str, errors: list[str | None]) -> None:
        """Stop (resumably) when every teacher call of a stage failed at the API: the teacher is down."""
        if errors and all(e and e.startswith("teacher call failed") for e in errors):
            raise SkillgitError(f"step {step}: every teacher call failed ({errors[0]})",
                                "check the teacher backend with `skillgit doctor`; the run resumes where it stopped",
                                ExitCode.BACKEND)

    def _gate_and_decide(self, step: int, epoch: int, skill: str, new_text: str, record: dict[str, Any],
                         before_usage: dict, current: gate_mod.SplitScore, *, kind: str,
                         force: bool = False) -> gate_mod.SplitScore:
        """Score `new_text` on val, commit it as a candidate with its note, and decide it."""
        applied = [Edit.from_dict(r["edit"]) for r in record.get("apply", []) if r["status"] in ("applied", "applied_fuzzy")]
        ecfg = self.cfg.evaluation
        metric, weight = ecfg.gate_metric, ecfg.mixed_weight
        if new_text == skill or record.get("invalid"):
            verdict = gate_mod.GateResult(False, current.mean(metric, weight), current.mean(metric, weight),
                                          record.get("invalid") or "no edit could be applied")
            cand_score = current
        else:
            self._stage(step, "gate")
            with self.ledger.timed("gate"):
                cand_score = self.evaluator.score(new_text, "val", self._progress(step, "gate"))
            verdict = gate_mod.decide(ecfg, current, cand_score,
                                      seed=zlib.crc32(f"{self.cfg.train.seed}:{step}".encode()))
            if force and not verdict.accept:
                verdict = gate_mod.GateResult(True, verdict.before, verdict.after,
                                              f"forced by configuration (gate said: {verdict.reason})")
        record["usage"] = self.ledger.diff_since(before_usage)
        self.state["seq"] = self.state.get("seq", 0) + 1
        trailers = {"Skillgit-Run": self.run_id, "Skillgit-Step": str(step), "Skillgit-Seq": str(self.state["seq"]),
                    "Skillgit-Epoch": str(epoch + 1),
                    "Skillgit-Kind": kind, "Skillgit-Metric": f"val.{metric}",
                    "Skillgit-Score": f"{verdict.after:.4f}", "Skillgit-Delta": f"{verdict.delta:+.4f}"}
        subject = _subject(kind, applied, verdict.delta)
        body = "\n".join(f"- {e.summary(100)}" for e in applied) or "(no edit applied)"
        note = redact.redact_mapping({"v": 1, "kind": "candidate", "run": self.run_id, "step": step,
                                      "epoch": epoch + 1, "type": kind, **record,
                                      "edits": [e.to_dict() for e in applied]})
        gate_note = {"v": 1, "kind": "gate", "run": self.run_id, "step": step, "metric": metric,
                     "score_before": round(verdict.before, 6), "score_after": round(verdict.after, 6),
                     "p_value": verdict.p_value, "reason": verdict.reason,
                     "val": cand_score.to_record() if cand_score is not current else None}
        self._stage(step, "decide")
        cand = self.store.propose(new_text, run=self.run_id, step=step, subject=subject, body=body,
                                  trailers=trailers, note=[note], defer_note=True)  # one notes commit, not two
        self.store.decide(cand, accept=verdict.accept, reason=verdict.reason, score_before=verdict.before,
                          score_after=verdict.after, note=[gate_note])
        self._count("accepted" if verdict.accept else "rejected")
        if not verdict.accept and self._blocked_edits is not None:
            for e in applied:
                self._blocked_edits[e.key()] = RejectedEdit(e, verdict.delta, verdict.reason, self.run_id, step)
        self._remember(epoch, step, kind, "accepted" if verdict.accept else "rejected", verdict.delta,
                       [e.to_dict() for e in applied])
        self.emit(Event("step_end", {"step": step, "kind": kind, "verdict": "accepted" if verdict.accept else "rejected",
                                     "score_before": verdict.before, "score_after": verdict.after,
                                     "edits": len(applied), "reason": verdict.reason,
                                     "usage": self._usage_total().to_dict()}))
        return cand_score if verdict.accept else current

    def _remember(self, epoch: int, step: int | str, kind: str, verdict: str, delta: float, edits: list) -> None:
        """The epoch's step log that meta reflect reads (accepted and rejected directions)."""
        self.state["epochs"].setdefault(str(epoch), {"steps": []})["steps"].append(
            {"step": step, "kind": kind, "verdict": verdict, "delta": round(delta, 6), "edits": edits})

    def _count(self, verdict: str) -> None:
        self.state["accepted" if verdict == "accepted" else "rejected"] += 1

    # ------------------------------------------------------------------------------------------ epochs
    def _end_epoch(self, epoch: int, current: gate_mod.SplitScore) -> gate_mod.SplitScore:
        current = epoch_mod.end_epoch(self, epoch, current)
        info = self.state["epochs"].setdefault(str(epoch), {"steps": []})
        info["ended"] = True
        # Only the running epoch's step log is read (by meta reflect); keeping every ended epoch's would make
        # progress.json, rewritten at every step, grow with the run (200 KB after 1,000 steps).
        info.pop("steps", None)
        self._save(f"epoch {epoch + 1} end", maintain=True)
        return current

    # ------------------------------------------------------------------------------------------ report
    def _final_scores(self, seed_score: gate_mod.SplitScore) -> dict[str, dict[str, float | None]]:
        ecfg = self.cfg.evaluation
        metric, weight = ecfg.gate_metric, ecfg.mixed_weight
        revs = {"seed": self.state["seed_rev"], "best": self.store.tip(), "final": self.store.tip()}
        # best = the highest val score among accepted skills of this run (the tip, since the gate only
        # accepts improvements, unless the gate was off or forced).
        best_rev, best_val = revs["seed"], seed_score.mean(metric, weight)
        for entry in self.store.history(self.run_id):
            if entry.verdict == "accepted" and entry.score is not None and entry.score > best_val:
                best_rev, best_val = entry.sha, entry.score
        revs["best"] = best_rev
        out: dict[str, dict[str, float | None]] = {}
        for name, rev in revs.items():
            text = self.store.read_skill(rev)
            val = self.evaluator.score(text, "val").mean(metric, weight)
            test = None
            if ecfg.eval_test and self.splits.test:
                self._stage(0, f"test:{name}")
                test = self.evaluator.score(text, "test", self._progress(0, f"test:{name}")).mean(metric, weight)
            out[name] = {"val": round(val, 4), "test": None if test is None else round(test, 4), "rev": rev}
        return out


MAINTAIN_EVERY = 100  # steps between housekeeping checks within an epoch (epoch and run ends always check)


def _in_background(fn: Callable[[], Any]) -> Future:
    """Run `fn()` on a thread of its own; its result (or exception) comes from the returned future."""
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(fn)
    finally:
        pool.shutdown(wait=False)


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _subject(kind: str, applied: list[Edit], delta: float) -> str:
    if not applied:
        head = "no applicable edit"
    else:
        head = applied[0].summary(56)
        if len(applied) > 1:
            head += f" (+{len(applied) - 1} more)"
    prefix = {"step": "skill", "slow_update": "skill(slow-update)", "meta_reflect": "skill(meta)"}.get(kind, "skill")
    return f"{prefix}: {head} ({delta * 100:+.1f} val)"


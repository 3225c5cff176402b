"""A run's epoch ends: the slow update, the meta skill and meta reflect, between an epoch's last step and the next
epoch's first (`Trainer` of `run.py` is an `EpochEnds`; moved out of run.py as it was, no behaviour changed).

Contract of `EpochEnds._end_epoch(epoch, current)` (called by the run with the incumbent's val score `current`):
- it waits for the last step's decision, then, when the optimizer asks for any of them (`_epoch_has_work`), pins the
  skill the epoch's steps produced (`steps_rev`, saved before any epoch-level candidate is decided), compares it
  with the skill the epoch began from (`epoch.compare`), updates the meta skill (once: a resumed run keeps what it
  saved) and gates a slow-update and a meta-reflect candidate through the run's one gated-commit path; a candidate
  git already holds a decision for is counted, not redone;
- it marks the epoch ended (its step log dropped: only the running epoch's is read) and saves the progress;
- it returns the val score of the skill the branch holds afterwards.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable

from skillgit.loop import epoch as epoch_mod
from skillgit.loop import gate as gate_mod
from skillgit.loop.decide import Proposal
from skillgit.loop.events import EpochEnded, EpochEnding
from skillgit.records import StepKind, Verdict

if TYPE_CHECKING:
    from skillgit.config import Config
    from skillgit.loop import stages
    from skillgit.loop.context import StepContext
    from skillgit.loop.events import EventSink
    from skillgit.loop.ledger import Ledger
    from skillgit.records import RunProgress
    from skillgit.store import Store


class EpochEnds:
    """The epoch-end part of a `Trainer` (see the module contract); what it uses of the run is declared here."""

    cfg: Config
    store: Store
    ctx: StepContext
    ledger: Ledger
    evaluator: gate_mod.Evaluator
    progress: RunProgress
    emit: EventSink

    if TYPE_CHECKING:
        def _settle_decision(self, *, quiet: bool = False) -> str | None: ...

        def _save(self, message: str, *, background: bool = False, maintain: bool = False,
                  usage: tuple | None = None) -> None: ...

        def _already_decided(self, step: int | str, epoch: int) -> bool: ...

        def _incumbent_round(self) -> str: ...

        def _commit(self, proposal: Proposal, current: gate_mod.SplitScore, usage_before: dict
                    ) -> gate_mod.SplitScore: ...

        def teacher(self, step: int | None = None) -> stages.Teacher: ...

    def _end_epoch(self, epoch: int, current: gate_mod.SplitScore) -> gate_mod.SplitScore:
        self._settle_decision()
        if self._epoch_has_work():
            current = self._epoch_work(epoch, current)
        # Only the running epoch's step log is read (by meta reflect); keeping every ended epoch's would make
        # progress.json, rewritten at every step, grow with the run (200 KB after 1,000 steps).
        info = dataclasses.replace(self.progress.epoch(epoch), ended=True, end_rev=self.store.tip(), steps=())
        self.progress = self.progress.with_epoch(epoch, info)
        self.emit(EpochEnded(epoch + 1, info.meta_skill, dict(info.comparison)))
        self._save(f"epoch {epoch + 1} end", maintain=True)
        return current

    def _epoch_work(self, epoch: int, current: gate_mod.SplitScore) -> gate_mod.SplitScore:
        opt = self.cfg.optimizer
        self.emit(EpochEnding(epoch + 1))
        info = self.progress.epoch(epoch)
        if info.steps_rev is None:
            # Pin (and save before any epoch-level candidate is decided) the skill the epoch's steps produced, so
            # a run resumed after its slow update was accepted compares the same two skills as before the kill.
            info = dataclasses.replace(info, steps_rev=self.store.tip())
            self.progress = self.progress.with_epoch(epoch, info)
            self._save(f"epoch {epoch + 1} ending")
        old_rev = self.progress.epoch(epoch - 1).end_rev or self.progress.seed_rev or info.steps_rev or ""
        pairs: list[dict[str, Any]] = []
        if opt.use_slow_update or opt.use_meta_skill:
            pairs = epoch_mod.compare(self.ctx, epoch, self.store.read_skill(old_rev),
                                      self.store.read_skill(info.steps_rev))
        # the epoch's numbered steps only: a run resumed after its slow update was decided finds that decision in
        # the log too, and meta reflect must read what it read before the restart
        steps = [s for s in info.steps if s.kind is StepKind.STEP]
        accepted = [s for s in steps if s.verdict is Verdict.ACCEPTED]
        rejected = [s for s in steps if s.verdict is Verdict.REJECTED]
        meta_status = info.meta_skill  # set: this epoch's meta skill was updated before a restart (and saved)
        if opt.use_meta_skill and not meta_status:
            meta, meta_status = epoch_mod.update_meta_skill(self.teacher(), self.progress.meta_skill, pairs,
                                                            accepted, rejected)
            self.progress = self.progress.replace(meta_skill=meta)
        self.progress = self.progress.with_epoch(epoch, dataclasses.replace(
            self.progress.epoch(epoch), comparison=epoch_mod.counts(pairs), meta_skill=meta_status))
        if opt.use_slow_update and pairs:
            current = self._epoch_candidate(epoch, StepKind.SLOW_UPDATE, current, lambda teacher, skill: (
                epoch_mod.slow_update(self.ctx, teacher, epoch, skill, pairs)))
        if opt.use_meta_reflect and (accepted or rejected):
            current = self._epoch_candidate(epoch, StepKind.META_REFLECT, current, lambda teacher, skill: (
                epoch_mod.meta_reflect(self.ctx, teacher, epoch, skill, accepted, rejected)))
        return current

    def _epoch_candidate(self, epoch: int, kind: StepKind, current: gate_mod.SplitScore, build: Callable
                         ) -> gate_mod.SplitScore:
        step = epoch_mod.slow_update_step(epoch) if kind is StepKind.SLOW_UPDATE else epoch_mod.meta_reflect_step(epoch)
        if self._already_decided(step, epoch):  # its score as that decision measured it (the journal answers)
            return self.evaluator.score(self.store.read_skill(), "val", round=self._incumbent_round())
        usage_before = self.ledger.snapshot()
        base = self.store.tip()
        skill = self.store.read_skill(base)
        text, record = build(self.teacher(), skill)
        force = kind is StepKind.SLOW_UPDATE and not self.cfg.optimizer.slow_update_gate_with_selection
        return self._commit(Proposal(step, epoch, kind, base, skill, text, record, force), current, usage_before)

    def _epoch_has_work(self) -> bool:
        opt = self.cfg.optimizer
        return bool(opt.use_slow_update or opt.use_meta_skill or opt.use_meta_reflect)

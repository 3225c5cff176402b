"""What a run gives its teacher at each step: the negative buffer, the blocked set, the meta skill, recall.

`Trainer` (run.py) holds one `Teaching` for the run and asks it for each step's `stages.Teacher`. Contracts:
- the negative buffer and the blocked set are read from git once, in the first step this process runs (`buffers`),
  then kept up to date by the run's own decisions (`decide.commit(negative=…)` appends each rejection to
  `negative`; `block` adds a rejected candidate's edits): at every teacher call they equal a fresh read of the
  history, and a step's reads do not grow with the history;
- the blocked set (edits `select` never applies again) is this run's edits rejected *without a gain*, Δ ≤ 0: an
  edit the gate found too small to trust may come back;
- a step's teacher never sees the edits of the step's own other proposals (`s<step>-p<k>`, `field.plan_field`):
  a restarted step may find them decided already, and its teacher must see what the first attempt saw;
- recall (`optimizer.recall_k`, loop/recall.py): the notes are read once, at the first step that recalls
  (`memory`, which the step then extends with its own trajectories);
- the teacher reads each rejection's reason without the val and test items it names (`judging.without_held_out`:
  `fixed 4 (rec-0040, …)` → `fixed 4`), as recall never shows them, nor the run's α bookkeeping
  (`spending.unsaid`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable

from skillgit.config import Config
from skillgit.judging import without_held_out
from skillgit.llm.base import LLM
from skillgit.loop import recall, spending, stages
from skillgit.loop.decide import rival_step
from skillgit.loop.resume import Decided
from skillgit.records import StepOutcome
from skillgit.store import Store
from skillgit.store.negative import NegativeBuffer
from skillgit.tasks import Splits
from skillgit.types import Edit, RejectedEdit


class Teaching:
    """The run's side of its teacher (see the module docstring); `decided` says which step this process found
    undecided first (`resume.Decided.fresh`), whose other proposals' edits are never blocked."""

    def __init__(self, cfg: Config, store: Store, run_id: str, llm: LLM, *, prompts_dir: Path | None,
                 field_size: int, decided: Decided, splits: Splits, scorer: stages.Scorer,
                 on_wait: Callable[[str, float], None]):
        self.cfg = cfg
        self.store = store
        self.run_id = run_id
        self.llm = llm
        self.prompts_dir = prompts_dir
        self.field_size = field_size  # the most candidates a step makes (optimizer.proposers)
        self.decided = decided
        self.splits = splits
        self.scorer = scorer
        self.on_wait = on_wait
        self.negative: NegativeBuffer | None = None  # with the blocked set: read once (`buffers`)
        self.blocked: dict | None = None
        self.memory: recall.Memory | None = None  # optimizer.recall_k: read from the notes once (`recaller`)
        self.held_out = frozenset(i.id for i in (*splits.val, *splits.test))  # never named to the teacher

    def teacher(self, step: int | None, meta_skill: str) -> stages.Teacher:
        """The teacher for `step` (None: an epoch's end), with the run's meta skill `meta_skill`. Its negative
        buffer leaves out `step`'s own other proposals, which a restarted step may find decided already: it must
        see what the first attempt saw."""
        opt = self.cfg.optimizer
        buffer, blocked = self.buffers() if opt.use_negative_buffer else (NegativeBuffer(0), {})
        negative = [dataclasses.replace(r, reason=spending.unsaid(without_held_out(r.reason, self.held_out)))
                    for r in buffer.newest(opt.negative_buffer_size + self.field_size - 1)
                    if not self.rival(r, step)][:opt.negative_buffer_size]
        meta = meta_skill if opt.use_meta_skill else ""
        limits = {} if self.cfg.model.teacher.max_tokens else dict(stages.STAGE_MAX_TOKENS)
        return stages.Teacher(self.llm, self.prompts_dir, negative, meta, self.cfg.gradient.analyst_workers,
                              blocked, max_edits=opt.max_edits_per_reply, max_edit_chars=opt.max_edit_chars,
                              stage_max_tokens=limits, on_wait=self.on_wait, recall=self.recaller(step))

    def recaller(self, step: int | None) -> recall.Recaller | None:
        """What `step`'s reflect recalls (optimizer.recall_k, loop/recall.py; the notes are read once)."""
        if self.cfg.optimizer.recall_k <= 0 or step is None:
            return None
        self.memory = self.memory or recall.Memory.load(self.store, self.cfg)
        return recall.recaller(self.memory, self.cfg, self.run_id, step, self.splits, self.scorer)

    def buffers(self) -> tuple[NegativeBuffer, dict]:
        """(the negative buffer, the blocked set: this run's edits rejected *without a gain*, Δ ≤ 0 — one the gate
        found too small to trust may come back), read from git in the first step this process runs, then kept up to
        date by its decisions (`commit(negative=…)`, `block`): a step's reads do not grow with the history."""
        if self.negative is None or self.blocked is None:
            every = self.store.negative_buffer(10 ** 9)
            keep = self.cfg.optimizer.negative_buffer_size + self.field_size - 1  # what `teacher` asks for
            self.negative = NegativeBuffer(keep, every[:keep])
            self.blocked = {r.edit.key(): r for r in reversed(every)
                            if r.run == self.run_id and r.delta <= 0 and not self.rival(r, self.decided.fresh)}
        return self.negative, self.blocked

    def rival(self, r: RejectedEdit, step: int | str | None) -> bool:
        """True for an edit of one of `step`'s other proposals (named `s<step>-p<k>`, see `field.plan_field`)."""
        if not isinstance(step, int) or r.run != self.run_id:
            return False
        return str(r.step) in {rival_step(step, k) for k in range(1, self.field_size + 1)}

    def block(self, edits: list[Edit], outcome: StepOutcome, step: int | str) -> None:
        """Add a rejected candidate's applied edits to the blocked set when it brought no gain (see `buffers`)."""
        if not outcome.accepted and outcome.delta <= 0 and self.blocked is not None:
            for e in edits:
                self.blocked[e.key()] = RejectedEdit(e, outcome.delta, outcome.reason, self.run_id, step)

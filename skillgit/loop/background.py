"""A step's decisions written in the background, while the next step's students run.

The gate's verdict fixes the skill text the branch will hold, and that is all the next step's students need; the
decision itself (candidate commit, one ref transaction, notes) and the progress save are git I/O that need not sit
on the step's critical path.

Contract of `write_later(events, plan, decide)` (used by `Trainer._decide_later`, waited for by
`Trainer._settle_decision`):
- the decisions of `plan` are made in order, each by `decide(n, planned)` (n = 1, 2, …), on a thread of their own
  that first yields the interpreter for `WRITE_DELAY_S` (the next step's first student requests should be on the
  wire before this thread's CPU work — redaction, JSON, git I/O — competes with them for the GIL);
- the events a decision returns are held back (`OrderedSink.hold` before the thread starts, `claim` in it) and
  released together once the plan is written or has failed, so readers see step N's end before anything of step
  N+1;
- the returned future gives [(proposal, outcome)] in the order decided, or raises the first failure (e.g.
  `BranchMoved`); nothing after a failure is decided.

Contract of `Saves` (the progress commits on `refs/skillgit/runs/<run>`, `Trainer._save`): a save waits for the
one before (saves land in order) and raises that one's error; with `background` it is written while the caller
goes on (after a step: during the next step's rollout); every file is redacted as it is written (the progress
holds model text, and `skillgit push` shares the run ref); `maintain` lets git pack loose objects afterwards
(`Store.maintain`: never in the background, where other git writes may run); `settle` waits for the last one. A
run killed before a save lands resumes a step earlier, where git shows the step as decided (`resume.Decided`).
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from skillgit.loop.decide import Judgement, Proposal
from skillgit.loop.evaluate import SplitScore
from skillgit.loop.events import OrderedSink, StepDecided
from skillgit.records import StepOutcome
from skillgit.redact import redact
from skillgit.store import Store

WRITE_DELAY_S = 0.01  # 10 ms: far less than any rollout, so the decision still lands first


@dataclass(frozen=True)
class Planned:
    """One decision of a step, ready to be written: the proposal under its final name, the gate's word (already
    turned into a rejection for an outranked rival), the calls booked to it, and — for a rival a restarted step
    finds decided already — what git holds about it."""

    proposal: Proposal
    judgement: Judgement
    usage: Mapping[str, Any]
    found: StepOutcome | None = None


@dataclass(frozen=True)
class Pending:
    """A step whose decisions are being written in the background."""

    step: int
    text: str  # the skill text the branch holds once they land
    base: str  # the commit the step was built on (the branch's tip after a rejection)
    score: SplitScore  # the val score of `text`
    future: Future  # → [(proposal, outcome)] in the order decided
    usage: tuple  # `Trainer._usage()` when the step ended: what its progress save records


Decide = Callable[[int, Planned], tuple[StepOutcome, StepDecided | None]]


def write_later(events: OrderedSink, plan: list[Planned], decide: Decide) -> Future:
    """Start writing `plan` (see the module contract)."""
    events.hold()

    def write() -> list[tuple[Proposal, StepOutcome]]:
        time.sleep(WRITE_DELAY_S)
        events.claim()
        done: list[tuple[Proposal, StepOutcome]] = []
        decided: list[StepDecided] = []
        try:
            for n, item in enumerate(plan, 1):
                outcome, event = decide(n, item)
                done.append((item.proposal, outcome))
                if event is not None:
                    decided.append(event)
        finally:
            events.release(list(decided))
        return done

    return in_background(write)


class Saves:
    """The run's progress commits (see the module contract)."""

    def __init__(self, store: Store, run_id: str):
        self.store = store
        self.run_id = run_id
        self._pending: Future | None = None
        self._redacted: dict[str, tuple[str, str]] = {}  # file name → (text, redacted): most files repeat a save

    def _redact(self, name: str, text: str) -> str:
        """`text` redacted (the progress holds model text: edits, the meta skill; `skillgit push` shares it); the
        same text as this file's last save is not scanned again (the config, the meta skill: ~2 ms a step)."""
        last = self._redacted.get(name)
        if last is None or last[0] != text:
            last = self._redacted[name] = (text, redact(text))
        return last[1]

    def save(self, files: Mapping[str, str], message: str, *, background: bool = False,
             maintain: bool = False) -> None:
        self.settle()

        def write() -> None:
            self.store.save_run(self.run_id, {name: self._redact(name, text) for name, text in files.items()}, message)
            if maintain:
                self.store.maintain()

        if background:
            self._pending = in_background(write)
        else:
            write()

    def settle(self, *, quiet: bool = False) -> None:
        """Wait for a background save; its error is raised unless `quiet` (another error is on its way). A wait cut
        short (Ctrl-C) leaves the save pending, so the next `settle` or `save` waits for it: the interrupted run's
        own last save must not race it on the run ref ("changed while this command ran")."""
        pending = self._pending
        if pending is None:
            return
        try:
            pending.result()
        except BaseException:
            if not pending.done():  # the wait was interrupted, not the save: it goes on, still pending
                raise
            self._pending = None
            if not quiet:
                raise
            return
        self._pending = None


def in_background(fn: Callable[[], Any]) -> Future:
    """Run `fn()` on a thread of its own; its result (or exception) comes from the returned future."""
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(fn)
    finally:
        pool.shutdown(wait=False)


def parallel(jobs: list[Callable[[], Any]]) -> list[Any]:
    """Run `jobs` side by side on threads of their own; their results in order (the first error is raised)."""
    with ThreadPoolExecutor(max_workers=max(1, len(jobs))) as pool:
        return [f.result() for f in [pool.submit(job) for job in jobs]]

"""A night over a skill library (issue 25): every `skills:` skill trained and gated in turn on the tasks routed to it.

`night.run_night` hands over here, after harvest, mining and the privacy gate, when the configuration has a
`skills:` library. Contracts:
- **Routing.** The task file's tasks go to the skill their sessions invoked (`route.route`; the library skill whose
  path is `skill.path` — else the first — takes the tasks no library skill fired for). Every task lands in exactly
  one skill.
- **Per skill.** Each skill's replay is chosen from its routed tasks by the same rules as a one-skill night
  (`replay.choose`: what can be scored, `sleep.max_tasks`, stable splits) and frozen the first time in
  `<night folder>/skills/<name>/`; it trains in its own run `sleep-<date>.<name>` — its own steps, gate, commits,
  notes and `rejected/*` tags, on its own file only. A skill whose routed tasks cannot make a night (none routed,
  fewer than two usable) is skipped, with the reason in its `NightSkill` record; it costs nothing.
- **Branches.** A skill trains on the night branch of its skill branch: `sleep.branch` for the configuration's
  `skill.branch` (shared by every skill on it: each accepted step is one commit touching that skill's file, so
  `sleep adopt` adopts them together), `<that night branch>-<name>` for a skill with a `branch:` of its own. Every
  night branch is created once at its skill branch's tip before any skill trains; its base is kept in
  `<night folder>/branches.json`, so a resumed night reports the same base.
- **One budget, round-robin.** The night's `budget.max_calls` / `max_tokens` / `max_cost_usd` (sleep.* or the
  configuration's) bound the sum over the skills' runs; each turn is one step of the unfinished skill with the
  fewest decided steps (`library.all.next_turn`, ties in `skills:` order), whose run gets as its budget its own spend
  plus what the night has left (`library.all.turn_overrides`). `sleep.max_steps` caps each skill's steps, as
  `train.max_steps` does in `train --all`. A skill's test split is read at its last turn only. Each skill run's own
  total is recorded (`library.all.save_totals`) so that `skillgit status` shows it, not the last turn's cap.
- **Resume.** Running the same night again re-derives the turn order from the runs' saved progress on the frozen
  splits: no decided step is redone and no finished call paid twice (each run's call journal). Handoff: a turn
  waiting for answers records the night as `waiting` and `HandoffPending` propagates, as in a one-skill night.
- **The record.** `NightRecord.skills` holds one `NightSkill` per library skill, in library order; the night's own
  `tasks`, `accepted`, `rejected`, `usage` and `edits` sum them (edits: each skill's decisions in its history order,
  skills in library order); its `branch`, `base` and `tip` are the shared night branch's. `status`: finished when
  every trained skill finished, stopped at a budget, nothing when every skill was skipped.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from skillgit.library import all as rr
from skillgit.library.config import SkillEntry
from skillgit.library.views import skill_file
from skillgit.loop.events import EventSink
from skillgit.records import SkillScores
from skillgit.sleep import replay as R
from skillgit.sleep import state as S
from skillgit.sleep.handoff import HandoffDeferred, HandoffLLM, HandoffPending, answered, pending_prompts
from skillgit.sleep.mine import MinedTask
from skillgit.sleep.pins import Pins
from skillgit.sleep.route import default_skill, route
from skillgit.sleep.settings import SleepProject
from skillgit.store import Store
from skillgit.types import Usage


@dataclass(frozen=True)
class NightKit:
    """What a library night uses of the one-skill night, handed over by `night.run_night` (this module does not
    import night.py: the two would import each other)."""

    repo: Any  # the repository (`store.repository.Repository`)
    folder: Path  # the night's folder under the git dir
    overrides: Callable[[SleepProject, str], list[str]]  # night.night_overrides: the night's budgets, its branch
    frozen_replay: Callable[..., tuple[R.Replay, dict[str, Any]]]  # night._frozen_replay
    judge: Callable[[Any, Any], Any]  # night._judge: the judge of rubric tasks
    decisions: Callable[[Store, str], tuple[Any, ...]]  # night._decisions: a run's decided steps
    finish: Callable[..., S.NightRecord]  # night._finish: report, record, save
    shown: Callable[[Path, Path], str]  # night.shown_path
    scorer: Any = None  # night.night_scorer: in place of a configured scorer nobody approved (None: the configured)


@dataclass
class Lane:
    """One library skill in tonight's night."""

    entry: SkillEntry
    store: Store  # on the skill's own file and skill branch
    branch: str  # its night branch
    folder: Path  # its frozen replay
    routed: int
    tasks: S.NightTasks = field(default_factory=S.NightTasks)
    splits: Any = None  # the loaded splits; None: skipped
    skipped: str = ""
    state: rr.SkillState | None = None

    @property
    def name(self) -> str:
        return self.entry.name

    def overrides(self, sp: SleepProject, kit: NightKit) -> list[str]:
        return [f"skill.path={skill_file(self.entry.path)}", *kit.overrides(sp, self.branch)]


def night_branch(sp: SleepProject, date: str, entry: SkillEntry) -> str:
    """See the module contract (Branches)."""
    shared = sp.settings.branch_for(date, sp.config.skill.branch)
    own = entry.branch or sp.config.skill.branch
    return shared if own == sp.config.skill.branch else f"{shared}-{entry.name}"


def skill_run(night_run: str, name: str) -> str:
    """A skill's run in the night whose run is `night_run` (`sleep-<date>`): `sleep-<date>.<name>`."""
    return rr.skill_run_id(night_run, name)


def _lanes(sp: SleepProject, kit: NightKit, library: dict[str, SkillEntry], pool: tuple[MinedTask, ...], date: str,
           simulated: bool) -> list[Lane]:
    default = default_skill(sp.config, {n: e.path for n, e in library.items()})
    routed = route(pool, list(library), default)
    lanes = []
    for name, entry in library.items():
        store = Store.open(sp.root, skill_file(entry.path), entry.branch or sp.config.skill.branch)
        lane = Lane(entry, store, night_branch(sp, date, entry), kit.folder / "skills" / name, len(routed[name]))
        lane.folder.mkdir(parents=True, exist_ok=True)
        chosen, meta = kit.frozen_replay(sp, lane.folder, routed[name], simulated, Pins(store.repo, store.tip()),
                                      in_file=len(pool))
        lane.tasks = S.NightTasks.from_dict({**meta, "routed": len(routed[name])})
        if not routed[name]:
            lane.skipped = "no task was routed to it tonight (no session invoked it)"
        elif not R.has_splits(lane.folder):
            lane.skipped = str(meta.get("reason") or "no usable task")
        lanes.append(lane)
    return lanes


def _start_branches(lanes: list[Lane], folder: Path) -> dict[str, str]:
    """Create each night branch once at its skill branch's tip (compare-and-swap, never over an existing one);
    {night branch: base}, remembered in `branches.json` for a resumed night."""
    marker = folder / "branches.json"
    bases: dict[str, str] = json.loads(marker.read_text(encoding="utf-8")) if marker.is_file() else {}
    for lane in lanes:
        if lane.skipped or lane.branch in bases:
            continue
        existing = lane.store.branch_tip(lane.branch)
        if existing is None:
            existing = lane.store.tip()
            lane.store.start_branch(lane.branch, existing, f"skillgit sleep: start {lane.branch} at {existing[:12]}")
        bases[lane.branch] = existing
        marker.write_text(json.dumps(bases, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return bases


def _plan_turns(sp: SleepProject, kit: NightKit, lanes: list[Lane], night_run: str) -> None:
    """Each trainable lane's splits and its round-robin state, read from its run's saved progress."""
    from skillgit.loop.resume import progress_of

    for lane in lanes:
        if lane.skipped:
            continue
        night = sp.night(lane.overrides(sp, kit))
        lane.splits = R.load_splits(lane.folder, night.config.env)
        c = night.config.train
        total = c.num_epochs * max(1, math.ceil(len(lane.splits.train) / c.batch_size))  # = Trainer.total_steps
        total = min(total, c.max_steps) if c.max_steps is not None else total
        lane.state = rr.SkillState(lane.name, skill_run(night_run, lane.name), total)
        progress = progress_of(lane.store, lane.state.run)
        if progress is not None:
            lane.state.update(progress)


def run_library(sp: SleepProject, kit: NightKit, options: Any, gathered: Any, record: S.NightRecord,
                library: dict[str, SkillEntry], on_event: EventSink) -> S.NightRecord:
    """See the module contract. `record` is the night's record so far (harvest, mining, approval); returns it
    finished and saved (through `kit.finish`)."""
    lanes = _lanes(sp, kit, library, gathered.pool, record.date, sp.config.model.student_backend == "simulated")
    record = replace(record, tasks=_sum_tasks(record.tasks, lanes))
    if all(lane.skipped for lane in lanes):
        record = replace(record, branch="", skills=_skills(lanes, {}), reason="no library skill has tasks to "
                         "replay tonight: " + "; ".join(f"{lane.name}: {lane.skipped}" for lane in lanes))
        return kit.finish(sp, kit.repo, record, gathered.head)
    bases = _start_branches(lanes, kit.folder)
    record = replace(record, base=bases.get(record.branch, ""))
    _plan_turns(sp, kit, lanes, record.run)
    rr.save_totals(kit.repo.common_dir, record.run, {lane.state.run: lane.state.total for lane in lanes if lane.state})
    budget = sp.night(lanes[0].overrides(sp, kit)).config.budget  # the night's budget (sleep.* over budget.*)
    teacher = HandoffLLM(options.handoff) if options.handoff is not None else None
    try:
        status, reason = _take_turns(sp, kit, options, lanes, budget, teacher, on_event)
    except (HandoffPending, HandoffDeferred) as exc:
        stopped = exc.pending if isinstance(exc, HandoffDeferred) else exc
        pending = pending_prompts(stopped.folder)
        waiting = replace(record, status="waiting", reason=f"{len(pending)} teacher prompt(s) wait for answers",
                          handoff=S.NightHandoff(kit.shown(stopped.folder, sp.root), len(pending),
                                                 answered(stopped.folder)))
        kit.finish(sp, kit.repo, _closed(kit, waiting, lanes, bases), gathered.head)
        raise HandoffPending(stopped.folder, pending or list(stopped.pending)) from None
    record = replace(record, status=status, reason=reason)
    if options.handoff is not None:
        record = replace(record, handoff=S.NightHandoff(kit.shown(options.handoff, sp.root),
                                                        len(pending_prompts(options.handoff)),
                                                        answered(options.handoff)))
    return kit.finish(sp, kit.repo, _closed(kit, record, lanes, bases), gathered.head)


def _take_turns(sp: SleepProject, kit: NightKit, options: Any, lanes: list[Lane], budget: Any, teacher: Any,
                on_event: EventSink) -> tuple[str, str]:
    """Round-robin turns until every trainable skill finished or the night's budget is spent: (status, reason)."""
    from skillgit.session import build_trainer, open_session
    states = [lane.state for lane in lanes if lane.state is not None]
    by_name = {lane.name: lane for lane in lanes}
    while True:
        state = rr.next_turn(states)
        if state is None:
            return "finished", ""
        spent = sum((s.usage for s in states), Usage())
        stop = rr.over_budget(budget, spent)
        if stop:
            return "stopped", stop.replace("for the library", "for the night")
        lane = by_name[state.name]
        night = sp.night(lane.overrides(sp, kit) + rr.turn_overrides(state, budget, spent))
        session = open_session(night, splits=lane.splits, teacher=teacher, judge=kit.judge(night.config, options),
                               scorer=kit.scorer)
        trainer = build_trainer(session, run_id=state.run, resume=True, on_event=on_event)
        result = trainer.train()
        state.update(trainer.progress)
        if result.scores:
            state.scores = result.scores
        if result.status != "finished":  # its run stopped: at the night's budget (its own is what the night left)
            over = rr.over_budget(budget, sum((s.usage for s in states), Usage()))
            return "stopped", (over or "").replace("for the library", "for the night") or \
                f"{state.name}: {result.reason}"


def _sum_tasks(night: S.NightTasks, lanes: list[Lane]) -> S.NightTasks:
    """The night's tasks: the file's counts, and what every skill replayed and left out, summed."""
    excluded: dict[str, int] = {}
    repinned: dict[str, int] = {}
    for lane in lanes:
        for why, n in lane.tasks.excluded.items():
            excluded[why] = excluded.get(why, 0) + n
        for how, n in lane.tasks.repinned.items():
            repinned[how] = repinned.get(how, 0) + n
    t = [lane.tasks for lane in lanes if not lane.skipped]
    first = lanes[0].tasks if lanes else S.NightTasks()
    return replace(night, in_file=first.in_file, used=sum(x.used for x in t), train=sum(x.train for x in t),
                   val=sum(x.val for x in t), test=sum(x.test for x in t), judged=sum(x.judged for x in t),
                   excluded=excluded, repinned=repinned, simulated=first.simulated)


def _skills(lanes: list[Lane], bases: dict[str, str]) -> tuple[S.NightSkill, ...]:
    out = []
    for lane in lanes:
        tasks = replace(lane.tasks, file="", approval="", reviewed=False)
        if lane.skipped or lane.state is None:
            out.append(S.NightSkill(lane.name, "skipped", lane.skipped, tasks=tasks))
            continue
        st = lane.state
        status = "finished" if st.finished else ("pending" if st.status == "pending" else "stopped")
        out.append(S.NightSkill(lane.name, status, run=st.run, branch=lane.branch, base=bases.get(lane.branch, ""),
                                tip=lane.store.branch_tip(lane.branch) or "", tasks=tasks,
                                scores={k: SkillScores.from_dict(v) for k, v in st.scores.items()
                                        if k in ("seed", "final")},
                                steps=st.done, accepted=st.accepted, rejected=st.rejected, usage=st.usage))
    return tuple(out)


def _closed(kit: NightKit, record: S.NightRecord, lanes: list[Lane], bases: dict[str, str]) -> S.NightRecord:
    """The record with every skill's part, and the night's sums of them."""
    skills = _skills(lanes, bases)
    edits = tuple(d for lane in lanes if lane.state is not None for d in kit.decisions(lane.store, lane.state.run))
    shared = next((lane for lane in lanes if lane.branch == record.branch), None)
    tip = shared.store.branch_tip(record.branch) or "" if shared is not None else ""
    return replace(record, skills=skills, edits=edits, tip=tip, accepted=sum(d.accepted for d in edits),
                   rejected=sum(not d.accepted for d in edits), usage=sum((k.usage for k in skills), Usage()))


"""One night of `skillgit sleep`: harvest → mine → (review gate) → replay on a `sleep/<date>` branch → report.

Contracts:
- `gather(sp, repo, write=…)` harvests this repository's sessions that are new since the state on
  `refs/skillgit/sleep`, mines them (`answers=True`: accepted answers become expected outputs) and merges the new
  tasks into the reviewable task file (existing rows, maybe edited by a person, are kept as they are; new ones are
  appended). Adding a task clears the file's `reviewed` flag: what nobody has read is not reviewed. With `write`
  the file and the new harvest state are saved (the state only after the file, so a harvested session is never
  lost); without, nothing is written anywhere (`dry-run`, `harvest`). Every saving gather also adds what it
  harvested, mined and redacted to the running totals since the last night (`totals.json` on the sleep ref), so
  a night after `skillgit sleep mine` still reports what that mine harvested; a night takes the totals into its
  record and resets them. The night's record is typed (`state.NightRecord`).
- `release(cfg, handoff, reviewed, yes)` is the privacy gate, asked before any model call: when anything outside
  this machine would see transcript-derived text — a teacher or student backend other than `simulated`, or
  handoff prompts meant for an agent — the task file's header must say `reviewed: true`, or `--yes` must be
  given; otherwise a SkillgitError (exit 2) says how to review.
- `run_night(sp, options)` trains on the night's splits (frozen in `<git-common-dir>/skillgit/sleep/<date>/` the
  first time, so a resumed night replays exactly the same tasks) through the normal training loop and its gate,
  on the night's branch — created at the skill branch's tip, never the skill branch itself — with the night's
  budgets as `budget.*` / `train.max_steps` overrides and the run id `sleep-<date>` (running the same night again
  resumes it; every finished call is in the journal). It writes the report to `<report_dir>/<date>.md` and saves
  it with the `NightRecord` on the sleep ref. The user's checkout and the skill branch are never touched. Refs are
  written by the store only: the night's branch by `Store.start_branch`, the sleep ref by `state.save`.
- Handoff (`options.handoff`): the teacher (and the judge of rubric tasks) is a `HandoffLLM`; its folder gets a
  `.gitignore` of `*` when it lies inside the repository (prompts quote mined tasks). When answers are missing the
  night is recorded as `waiting` and `HandoffPending` propagates (exit 5) counting every prompt that waits once the
  run stopped; the same command resumes it.
- Scoring: the configured scorer, wrapped in `RubricScorer` with the teacher as the judge of text tasks that have
  no short accepted answer (replay.py); offline (simulated teacher) the judge is `world.judge.SimulatedJudge`.
  Judge calls are journaled and metered like teacher calls (they count against the night's budgets).
- A task's commands are approved with the repository files they run, read at the commit the task replays
  (`approval.RepoFiles`): a file changed since the approval leaves the task out (`approval.NOT_APPROVED`).
- Commands from the configuration (`approval.ConfigGate`, checked after the privacy gate): an agent command or
  `env_passthrough` nobody approved on this machine makes a fresh night record nothing trained, every task left
  out under `approval.CONFIG_NOT_APPROVED` and the reason (a started night stops, exit 2); an unapproved scorer
  command leaves out the text tasks it would score, and the session gets `UnapprovedScorer` (nothing imported or
  run) in its place.
- Paths in the record and the report are relative to the repository (`shown_path`): a report is a PR body.
- Library: with a `skills:` section, after the privacy gate the night is `library_night.run_library`'s — every
  library skill trained and gated in turn on the tasks routed to it, under the night's one budget (see there).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, cast

from skillgit.config import Config
from skillgit.errors import ExitCode, SkillgitError
from skillgit.loop.events import EventSink, ignore
from skillgit.records import SkillScores, StepOutcome
from skillgit.sleep import replay as R
from skillgit.sleep import state as S
from skillgit.sleep.approval import CONFIG_NOT_APPROVED, ConfigGate, RepoFiles, approved_in, config_gate
from skillgit.sleep.handoff import Deferring, HandoffDeferred, HandoffLLM, HandoffPending, answered, pending_prompts
from skillgit.sleep.harvest import HarvestResult, consume_inbox, git_remotes, harvest
from skillgit.sleep.mine import MinedTask, Miner, MineResult, read_tasks, rev_before, write_tasks
from skillgit.sleep.pins import Pins
from skillgit.sleep.report import render
from skillgit.sleep.scrub import Scrubber, build_scrubber
from skillgit.sleep.settings import SleepProject, check_date
from skillgit.store import Store
from skillgit.store.repository import Repository, open_repository

LOCK = "skillgit-sleep"  # one night (or mine) at a time per repository
TOTALS_FILE = S.TOTALS_FILE  # on the sleep ref: what was harvested, mined and redacted since the last night


@dataclass(frozen=True)
class NightOptions:
    date: str
    yes: bool = False
    handoff: Path | None = None


@dataclass(frozen=True)
class Gathered:
    harvest: HarvestResult
    mined: MineResult
    pool: tuple[MinedTask, ...]  # the task file's tasks after merging tonight's
    new: tuple[MinedTask, ...]  # tasks that were not in the file before
    reviewed: bool
    path: Path
    head: str | None  # the sleep ref after saving (or as read, without `write`)
    totals: S.NightTotals = field(default_factory=S.NightTotals)  # since the last night (this one, with `write`)


def today() -> str:
    return time.strftime("%Y-%m-%d")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def night_folder(repo: Repository, date: str) -> Path:
    return repo.common_dir / "skillgit" / "sleep" / check_date(date)


def run_id(date: str) -> str:
    return f"sleep-{check_date(date)}"


def scrubber_for(sp: SleepProject) -> Scrubber:
    return build_scrubber(sp.root, env_names=sp.settings.scrub_env, patterns=sp.settings.scrub_patterns)


def home_of(sp: SleepProject) -> Path:
    return Path(sp.settings.home).expanduser()


def ensure_private(folder: Path, root: Path, *, existing: bool = False) -> None:
    """Create `folder`; if skillgit creates it inside the repository, it gets a `.gitignore` of `*`, so that
    transcript-derived files are never committed by accident (a folder the user made is left as it is, unless
    `existing`: then it gets the `.gitignore` too when git does not ignore it already)."""
    made = not folder.is_dir()
    if not made and not existing:
        return
    folder.mkdir(parents=True, exist_ok=True)
    try:
        inside = folder.resolve().relative_to(root.resolve())
    except ValueError:
        return
    ignore = folder / ".gitignore"
    if not made and (ignore.exists() or _ignored(root, inside)):
        return
    ignore.write_text("# written by skillgit sleep: transcript-derived files stay local\n*\n", encoding="utf-8")


def _ignored(root: Path, relative: Path) -> bool:
    try:
        repo = open_repository(root)
    except SkillgitError:
        return False
    try:
        return repo.is_ignored(f"{relative.as_posix()}/probe")
    finally:
        repo.close()


def shown_path(path: Path | str, root: Path) -> str:
    """`path` as a report shows it: relative to the repository, never an absolute home path."""
    target = Path(path)
    try:
        return Path(os.path.relpath(target.resolve(), root.resolve())).as_posix() if target.is_absolute() \
            else target.as_posix()
    except ValueError:  # another drive (Windows)
        return target.name


# ---------------------------------------------------------------------------------------------- harvest + mine
def collect(sp: SleepProject, since: S.HarvestState) -> tuple[HarvestResult, MineResult]:
    settings, scrub = sp.settings, scrubber_for(sp)
    root = sp.root
    miner = Miner(threshold=settings.threshold, min_sessions=settings.min_sessions, scrubber=scrub, answers=True,
                  rev_for=lambda unit: rev_before(root, unit.timestamp, unit.git_branch), fallback_rev=head_sha(root))
    # each kept session goes to the miner as it is harvested: the night holds units, never every session at once
    result = harvest(settings.sources or None, home_of(sp), sp.root, git_remotes(str(sp.root)), since, scrubber=scrub,
                     sink=miner.add)
    return result, miner.result()


def head_sha(root: Path) -> str | None:
    """HEAD's commit now (a mined task is pinned to a commit, never to the moving name "HEAD"); None without one."""
    try:
        repo = open_repository(root)
    except SkillgitError:
        return None
    try:
        return repo.commit_of("HEAD")
    finally:
        repo.close()


def gather(sp: SleepProject, repo: Repository, *, write: bool, date: str | None = None) -> Gathered:
    """See the module contract."""
    state = S.load(repo)
    result, mined = collect(sp, state.harvest)
    path = sp.path(sp.settings.tasks_file)
    existing = read_tasks(path) if path.is_file() else None
    old = list(existing.tasks) if existing else []
    known = {t.id for t in old}
    new: list[MinedTask] = []
    for task in mined.tasks:
        if task.id not in known:
            known.add(task.id)
            new.append(task)
    reviewed = bool(existing and existing.reviewed and not new)
    pool = (*old, *new)
    head = state.head
    totals = S.totals(repo)
    if write:
        if new:
            ensure_private(path.parent, sp.root)
            meta = {k: v for k, v in (existing.header if existing else {}).items()
                    if k not in ("reviewed", "count", "skillgit_mined_tasks")}
            meta.update({"updated": date or today(), "added": len(new)})
            write_tasks(path, pool, reviewed=reviewed, meta=meta, scrubber=scrubber_for(sp))
        if result.state != state.harvest or head is None:
            summary = result.summary()
            totals = totals + counts_of(result, mined, len(new))
            head = S.save(repo, {S.STATE_FILE: result.state.to_json(),
                                 TOTALS_FILE: json.dumps(totals.to_dict(), sort_keys=True)},
                          f"harvest: {summary['sessions']} session(s), {len(new)} new task(s)", state.head)
        consume_inbox(result)  # only once the state that remembers those sessions is saved (or was already)
    return Gathered(result, mined, tuple(pool), tuple(new), reviewed, path, head, totals)


def counts_of(result: HarvestResult, mined: MineResult, new_tasks: int) -> S.NightTotals:
    summary = result.summary()
    return S.NightTotals(S.HarvestCounts.from_dict(summary), S.MinedCounts.from_dict({**mined.summary(),
                                                                                        "new_tasks": new_tasks}),
                         result.redactions)


# ---------------------------------------------------------------------------------------------- privacy gate
def leaves_machine(cfg: Config, handoff: bool) -> list[str]:
    """What would show transcript-derived text to something outside this machine."""
    who = []
    if handoff:
        who.append("handoff prompts (for your agent)")
    elif cfg.model.teacher_backend != "simulated":
        who.append(f"the teacher ({cfg.model.teacher_backend}:{cfg.model.teacher_model})")
    if cfg.model.student_backend != "simulated":
        who.append(f"the student ({cfg.model.student_backend}:{cfg.model.student_model})")
    return who


def release(cfg: Config, *, handoff: bool, reviewed: bool, yes: bool, path: Path) -> str:
    """The approval under which tasks may be used: "offline", "header" or "--yes" (see the module contract)."""
    who = leaves_machine(cfg, handoff)
    if not who:
        return "offline"
    if reviewed:
        return "header"
    if yes:
        return "--yes"
    raise SkillgitError(
        f"the mined tasks in {path} are not reviewed, and {' and '.join(who)} would see them",
        "read the file (it is scrubbed, but it is your team's transcripts), then `skillgit sleep review --approve` "
        "(or set \"reviewed\": true in its first line); or pass --yes to send them unreviewed", ExitCode.USAGE)


# ---------------------------------------------------------------------------------------------- the night
def night_overrides(sp: SleepProject, branch: str) -> list[str]:
    s = sp.settings
    extra = [f"skill.branch={branch}"]
    for key, value in (("budget.max_calls", s.max_calls), ("budget.max_tokens", s.max_tokens),
                       ("budget.max_cost_usd", s.max_cost_usd), ("train.max_steps", s.max_steps)):
        if value is not None:
            extra.append(f"{key}={value}")
    # recall (loop/recall.py): a night is its own branch, so it recalls over every branch of the skill
    recall_k = s.recall_k if s.recall_k is not None else sp.config.optimizer.recall_k
    if recall_k > 0:
        extra += [f"optimizer.recall_k={recall_k}", "optimizer.recall_scope=skill"]
    return extra


def _frozen_replay(sp: SleepProject, folder: Path, pool: tuple[MinedTask, ...], simulated: bool,
                   pins: Pins | None = None, in_file: int | None = None) -> tuple[R.Replay, dict[str, Any]]:
    """The night's replay: the splits written the first time, or read back when the night resumes. `in_file`: the
    task file's count when `pool` is part of it (a library skill's routed tasks)."""
    meta_path = folder / "replay.json"
    gate = gate_of(sp)
    keys = _keys(sp, pins)
    if R.has_splits(folder) and meta_path.is_file():
        _check_frozen_commands(sp, folder, gate, keys)
        return R.Replay(simulated=simulated), json.loads(meta_path.read_text(encoding="utf-8"))
    chosen = R.choose(pool, sp.settings, simulated=simulated, agentic=R.agentic_supported(), pins=pins,
                      approved=gate.approved, scorer_blocked=gate.scorer_blocked, keys=keys)
    meta = {**chosen.counts(), "used": chosen.used, "judged": chosen.judged, "excluded": chosen.excluded,
            "repinned": chosen.repinned,
            "simulated": simulated,
            "reason": chosen.reason, "in_file": len(pool) if in_file is None else in_file}
    if chosen.usable:
        R.write_splits(folder, chosen)
        meta_path.write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return chosen, meta


def _keys(sp: SleepProject, pins: Pins | None) -> Callable[[MinedTask], str | None]:
    """A task's approval key as the night runs it: its commands and the repository files they run at the commit
    the task replays (`approval.RepoFiles`, pinned as `pins` pins it)."""
    repo = cast(Repository, pins.commits) if pins is not None else open_repository(sp.root)  # (the night's repo)
    return RepoFiles(repo, pins.base if pins is not None else None).key


def _check_frozen_commands(sp: SleepProject, folder: Path, gate: ConfigGate,
                           keys: Callable[[MinedTask], str | None]) -> None:
    """A resumed night replays its frozen splits: each agentic row's commands must still be approved, and so must
    the configured scorer's for a text row it scores (revoked since, a pulled configuration, or frozen by a
    skillgit that did not ask: the night stops before anything runs)."""
    for name in R.SPLITS:
        path = folder / f"{name}.jsonl"
        rows = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
        for row in (MinedTask.from_row(json.loads(line)) for line in rows if line.strip()):
            if row.kind == "agentic" and keys(row) not in gate.approved:
                why = "runs commands nobody approved here"
            elif row.kind == "text" and row.expected is not None and gate.scorer_blocked:
                why = "is scored by the configuration's scorer, whose command nobody approved here"
            else:
                continue
            raise SkillgitError(f"the night's frozen task '{row.id}' in {folder} {why}", "read them with "
                                f"`skillgit sleep review`, then `--approve`; or delete {folder} to choose the "
                                "night's tasks again", ExitCode.USAGE)


def gate_of(sp: SleepProject) -> ConfigGate:
    """The configuration's commands and the approvals on this machine (`approval.ConfigGate`)."""
    return config_gate(sp.config, approved_in(sp.root), sp.root)


class UnapprovedScorer:
    """In place of a configured scorer whose command nobody approved here: it imports and runs nothing. The night
    left out every task it would score (`replay.choose(scorer_blocked=…)`), so it is never called."""

    kind = "unapproved"

    def judge_texts(self, items: list[Any]) -> list[Any]:
        return []

    def __call__(self, item: Any, output: str) -> Any:
        from skillgit.scorers import ScorerError

        raise ScorerError("the configuration's scorer is not approved on this machine",
                          "`skillgit sleep review` shows its command, `--approve` approves it")


def night_scorer(gate: ConfigGate) -> UnapprovedScorer | None:
    """The scorer a night passes to `open_session` (None: the configured one)."""
    return UnapprovedScorer() if gate.scorer_blocked else None


def _blocked(sp: SleepProject, record: S.NightRecord, gathered: Gathered, folder: Path, gate: ConfigGate,
             approval: str, repo: Repository) -> S.NightRecord:
    """A night whose configuration runs a program nobody approved here: a fresh one is recorded with nothing
    trained and every task left out (the report and `sleep status` say why); one resumed from frozen splits stops
    (exit 2) before anything runs, its record as it was."""
    if R.has_splits(folder) or any(R.has_splits(p) for p in (folder / "skills").glob("*")):
        raise SkillgitError(f"the night of {record.date} was started, and now {gate.night_reason}",
                            "read it with `skillgit sleep review`, then `--approve`; the same `sleep run` resumes the "
                            "night", ExitCode.USAGE)
    tasks = S.NightTasks.from_dict({"file": shown_path(gathered.path, sp.root), "reviewed": gathered.reviewed,
                                    "approval": approval, "in_file": len(gathered.pool),
                                    "excluded": {CONFIG_NOT_APPROVED: len(gathered.pool)}})
    return _finish(sp, repo, replace(record, tasks=tasks, reason=gate.night_reason, branch=""), gathered.head)


def _decisions(store: Store, run: str) -> tuple[StepOutcome, ...]:
    """The run's decided steps in history order, as their decision notes say (a step without one: as the log
    lists it)."""
    rows = []
    for e in store.history(run):
        if e.run == run and e.verdict in ("accepted", "rejected"):
            found = store.step_notes(e.sha, run).decision
            after = e.score or 0.0
            rows.append(replace(found, sha=e.sha) if found is not None else StepOutcome.from_dict(
                {"run": run, "step": str(e.step), "verdict": e.verdict, "score_before": after - (e.delta or 0.0),
                 "score_after": after, "reason": e.reason, "edits": list(e.edits), "sha": e.sha}))
    return tuple(rows)


def run_night(sp: SleepProject, options: NightOptions, on_event: EventSink = ignore) -> S.NightRecord:
    """See the module contract."""
    from skillgit.library.config import entries
    from skillgit.session import build_trainer, open_session

    cfg, settings, date = sp.config, sp.settings, check_date(options.date)
    library = entries(cfg, sp.root)  # (the list form's globs need the root)
    store = own_store(sp, library)  # the skill must exist before anything runs
    repo = store.repo
    branch = settings.branch_for(date, cfg.skill.branch)
    started = _now()
    with store.lock(LOCK):
        gathered = gather(sp, repo, write=True, date=date)
        previous = S.night(repo, date)
        totals = gathered.totals  # everything since the last night: `sleep mine` runs, and this gather
        record = S.NightRecord(
            date=date, status="nothing", branch=branch, run=run_id(date), skill_branch=cfg.skill.branch,
            harvest=totals.harvest, mined=totals.mined, redactions=totals.redactions, started=started,
            budget=S.NightBudget(settings.max_tasks, settings.max_steps, settings.max_calls, settings.max_tokens,
                                 settings.max_cost_usd))
        if previous is not None:  # a resumed night: count what earlier runs of it harvested too
            record = replace(record, harvest=previous.harvest + record.harvest, mined=previous.mined + record.mined,
                             redactions=previous.redactions + record.redactions, started=previous.started,
                             adopted=previous.adopted)
        if not gathered.pool:
            return _finish(sp, repo, replace(record, reason="no recurring or failed task mined yet", branch=""),
                           gathered.head)
        approval = release(cfg, handoff=options.handoff is not None, reviewed=gathered.reviewed, yes=options.yes,
                           path=gathered.path)
        gate = gate_of(sp)
        if options.handoff is not None:  # the handoff folder is the teacher: the configured one's program never runs
            gate = replace(gate, commands=tuple(c for c in gate.commands if not c.key.startswith("model.teacher.")))
        if gate.night_reason:  # an agent command (or what it is handed) nobody approved here: nothing runs
            return _blocked(sp, record, gathered, night_folder(repo, date), gate, approval, repo)
        if library:  # every library skill in turn, each on the tasks routed to it
            from skillgit.sleep.library_night import NightKit, run_library

            kit = NightKit(repo, night_folder(repo, date), night_overrides, _frozen_replay, _judge, _decisions,
                           _finish, shown_path, night_scorer(gate))
            return run_library(sp, kit, options, gathered, replace(record, tasks=S.NightTasks.from_dict({
                "file": shown_path(gathered.path, sp.root), "reviewed": gathered.reviewed, "approval": approval,
                "in_file": len(gathered.pool)})), library, on_event)
        folder = night_folder(repo, date)
        simulated = cfg.model.student_backend == "simulated"
        chosen, meta = _frozen_replay(sp, folder, gathered.pool, simulated, Pins(repo, store.tip()))
        record = replace(record, tasks=S.NightTasks.from_dict({**meta, "file": shown_path(gathered.path, sp.root),
                                                               "reviewed": gathered.reviewed, "approval": approval}))
        if not R.has_splits(folder):
            return _finish(sp, repo, replace(record, reason=meta.get("reason") or "no usable task", branch=""),
                           gathered.head)
        splits = R.load_splits(folder, cfg.env)
        base = _start_branch(store, branch, folder)
        record = replace(record, base=base)
        night = sp.night(night_overrides(sp, branch))
        teacher = None
        if options.handoff is not None:
            ensure_private(options.handoff, sp.root, existing=True)  # its prompts quote mined tasks
            teacher = HandoffLLM(options.handoff)
        session = open_session(night, splits=splits, teacher=teacher, judge=_judge(night.config, options),
                               scorer=night_scorer(gate))
        trainer = build_trainer(session, run_id=run_id(date), resume=True, on_event=on_event)
        try:
            result = trainer.train()
        except (HandoffPending, HandoffDeferred) as exc:
            stopped = exc.pending if isinstance(exc, HandoffDeferred) else exc
            pending = pending_prompts(stopped.folder)  # all of them: other calls kept writing until the run stopped
            waiting = replace(record, status="waiting", reason=f"{len(pending)} teacher prompt(s) wait for answers",
                              handoff=S.NightHandoff(shown_path(stopped.folder, sp.root), len(pending),
                                                     answered(stopped.folder)))
            _finish(sp, repo, _with_run(waiting, session.store, trainer), gathered.head)
            raise HandoffPending(stopped.folder, pending or list(stopped.pending)) from None
        status = "finished" if result.status == "finished" else "stopped"
        record = replace(record, status=status, reason=result.reason,
                         scores={k: SkillScores.from_dict(v) for k, v in result.scores.items()
                                 if k in ("seed", "final")})
        if options.handoff is not None:
            record = replace(record, handoff=S.NightHandoff(shown_path(options.handoff, sp.root),
                                                            len(pending_prompts(options.handoff)),
                                                            answered(options.handoff)))
        return _finish(sp, repo, _with_run(record, session.store, trainer), gathered.head)


def own_store(sp: SleepProject, library: dict[str, Any]) -> Store:
    """The store of the configuration's skill; with a `skills:` library, of the library skill that receives the
    tasks no skill fired for (`route.default_skill`), on the configuration's skill branch."""
    if not library:
        return Store.open(sp.root, sp.config.skill.path, sp.config.skill.branch)
    from skillgit.library.views import skill_file
    from skillgit.sleep.route import default_skill

    own = library[default_skill(sp.config, {n: e.path for n, e in library.items()})]
    return Store.open(sp.root, skill_file(own.path), sp.config.skill.branch)


def _with_run(record: S.NightRecord, store: Store, trainer: Any) -> S.NightRecord:
    decisions = _decisions(store, record.run)
    return replace(record, tip=store.branch_tip(record.branch) or "", edits=decisions,
                   accepted=sum(d.accepted for d in decisions), rejected=sum(not d.accepted for d in decisions),
                   usage=trainer.progress.usage)


def _judge(cfg: Any, options: NightOptions) -> Any:
    """The judge of rubric tasks: the night's teacher (journaled, metered); offline, the simulated judge."""
    from skillgit.session import Judge

    if options.handoff is not None:
        return Judge(wrap=Deferring)
    if cfg.model.teacher_backend == "simulated":
        from skillgit.world.judge import SimulatedJudge

        return Judge(SimulatedJudge(cfg.model.simulated))
    return Judge()


def _start_branch(store: Store, branch: str, folder: Path) -> str:
    """Create the night's branch at the skill branch's tip (once, with compare-and-swap: never over an existing
    branch); return the commit it started from (remembered in the night's folder for a resumed night)."""
    marker = folder / "branch.json"
    existing = store.branch_tip(branch)
    if existing is None:
        tip = store.tip()
        store.start_branch(branch, tip, f"skillgit sleep: start {branch} at {tip[:12]}")
        marker.write_text(json.dumps({"branch": branch, "base": tip}) + "\n", encoding="utf-8")
        return tip
    if marker.is_file():
        return str(json.loads(marker.read_text(encoding="utf-8")).get("base", ""))
    return existing


def _finish(sp: SleepProject, repo: Repository, record: S.NightRecord, head: str | None) -> S.NightRecord:
    record = replace(record, ended=_now())
    text = render(record)
    folder = sp.path(sp.settings.report_dir)
    if folder.resolve() == sp.path(sp.settings.tasks_file).parent.resolve():
        ensure_private(folder, sp.root)  # beside the mined tasks: the folder ignores itself
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{record.date}.md").write_text(text, encoding="utf-8")
    S.save(repo, {S.night_json(record.date): record.to_json(), S.night_md(record.date): text, TOTALS_FILE: "{}"},
           f"night {record.date}: {record.status}" + (f" ({record.reason})" if record.reason else ""), head)
    return record

"""`skillgit sleep dry-run` and `skillgit sleep status`: what a night would do, and what the nights did.

Contracts:
- `plan_night(sp, date)` harvests and mines in memory (`gather(write=False)`), chooses and splits the tasks as the
  night would, and estimates the training (`skillgit.loop.plan.estimate`) — it writes nothing anywhere (no task
  file, no state, no branch, no night folder) and calls no model. With a `skills:` library the plan has `skills`:
  per skill the tasks routed to it, its replay, run, night branch, why it would be skipped, and its estimate. It
  also says whether the night would be refused for want of review.
- `status_info(sp, limit)` reads the sleep ref, the task file's header and the schedule (the crontab through
  `crontab -l`, whose failure is reported as "unknown" with its cause in `cron_error`, and the systemd unit
  files); it changes nothing. It counts
  what waits for an approval here: the task file's agentic tasks whose commands nobody approved
  (`tasks.unapproved`; `tasks.changed`: id → which file changed since its approval, `approval.changed`), the
  configuration's commands with their approval (`config`, each with its `changed`), `legacy` (`approval.LEGACY`
  when an approval recorded before approvals covered files no longer approves a command; else ""), and per night
  the tasks it left out for want of one (`left_out_unapproved`).
- Both choose tasks with the configuration's commands' approvals (`approval.ConfigGate`), as a night does.
- A plan's `harvest.looked` says where sessions were looked for (`looked`: the home as configured, never expanded,
  and the sources); its text says so when none was found.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from skillgit.errors import SkillgitError
from skillgit.sleep import replay as R
from skillgit.sleep import schedule as K
from skillgit.sleep import state as S
from skillgit.sleep.approval import (
    CONFIG_NOT_APPROVED,
    LEGACY,
    RepoFiles,
    approved_in,
    changed,
    config_gate,
    entries,
    left_out,
    text_key,
)
from skillgit.sleep.mine import read_tasks
from skillgit.sleep.night import gather, leaves_machine, night_overrides, run_id
from skillgit.sleep.settings import SleepProject, check_date
from skillgit.store import Store
from skillgit.store.repository import open_repository


def plan_night(sp: SleepProject, date: str, *, handoff: bool = False) -> dict[str, Any]:
    from skillgit.library.config import entries
    from skillgit.loop.plan import estimate
    from skillgit.sleep.night import own_store

    cfg, settings = sp.config, sp.settings
    library = entries(cfg, sp.root)
    store = own_store(sp, library)
    branch = settings.branch_for(check_date(date), cfg.skill.branch)
    g = gather(sp, store.repo, write=False, date=date)
    simulated = cfg.model.student_backend == "simulated"
    if library:
        return _plan_library(sp, date, g, library, handoff)
    gate = config_gate(cfg, approved_in(sp.root), sp.root)
    chosen = R.choose(g.pool, settings, simulated=simulated, agentic=R.agentic_supported(),
                      approved=gate.approved, scorer_blocked=gate.scorer_blocked,
                      keys=RepoFiles(store.repo, store.tip()).key)
    if gate.night_reason and g.pool:
        chosen = R.Replay(excluded={CONFIG_NOT_APPROVED: len(g.pool)}, reason=gate.night_reason)
    who = leaves_machine(cfg, handoff)
    release = "offline" if not who else ("reviewed" if g.reviewed else "needs review (or --yes)")
    plan: dict[str, Any] = {
        "date": date, "branch": branch, "run": run_id(date), "skill_branch": cfg.skill.branch,
        "harvest": {**g.harvest.summary(), "looked": looked(sp)},
        "mined": {**g.mined.summary(), "new_tasks": len(g.new)},
        "tasks": {"file": str(g.path), "in_file": len(g.pool), "reviewed": g.reviewed, **chosen.counts(),
                  "excluded": chosen.excluded},
        "release": release, "sent_to": who, "budget": {k: v for k, v in settings.to_dict().items()
                                                      if k.startswith("max_")},
        "estimate": None, "reason": chosen.reason,
    }
    if chosen.usable:
        night_cfg = sp.night(night_overrides(sp, branch)).config
        with tempfile.TemporaryDirectory(prefix="skillgit-sleep-plan-") as tmp:
            R.write_splits(Path(tmp), chosen)
            splits = R.load_splits(Path(tmp), night_cfg.env)
        est = estimate(night_cfg, splits, store.read_skill())
        plan["estimate"] = {k: v for k, v in est.items() if k != "text"}
        plan["estimate_text"] = est.get("text", "")
    plan["text"] = _text(plan)
    return plan


def _plan_library(sp: SleepProject, date: str, g: Any, library: dict[str, Any], handoff: bool) -> dict[str, Any]:
    """A library night's plan: each skill's routed tasks and its replay (`library_night`: the same routing and
    choice), the skills it would skip and why, and each trainable skill's estimate."""
    from skillgit.sleep.route import default_skill, route

    cfg, settings = sp.config, sp.settings
    routed = route(g.pool, list(library), default_skill(cfg, {n: e.path for n, e in library.items()}))
    skills = {name: _plan_skill(sp, date, name, entry, routed[name]) for name, entry in library.items()}
    who = leaves_machine(cfg, handoff)
    trained = [k for k in skills.values() if not k["skipped"]]
    plan: dict[str, Any] = {
        "date": date, "branch": settings.branch_for(check_date(date), cfg.skill.branch), "run": run_id(date),
        "skill_branch": cfg.skill.branch, "harvest": {**g.harvest.summary(), "looked": looked(sp)},
        "mined": {**g.mined.summary(), "new_tasks": len(g.new)},
        "tasks": {"file": str(g.path), "in_file": len(g.pool), "reviewed": g.reviewed,
                  **{k: sum(x[k] for x in trained) for k in ("train", "val", "test")},
                  "excluded": {w: sum(x["excluded"].get(w, 0) for x in skills.values())
                               for w in sorted({w for x in skills.values() for w in x["excluded"]})}},
        "release": "offline" if not who else ("reviewed" if g.reviewed else "needs review (or --yes)"),
        "sent_to": who, "budget": {k: v for k, v in settings.to_dict().items() if k.startswith("max_")},
        "estimate": None, "skills": skills,
        "reason": "" if trained else "no library skill has tasks to replay tonight"}
    plan["text"] = _text(plan)
    return plan


def _plan_skill(sp: SleepProject, date: str, name: str, entry: Any, routed: Any) -> dict[str, Any]:
    from skillgit.library.views import skill_file
    from skillgit.loop.plan import estimate
    from skillgit.sleep.library_night import night_branch, skill_run

    cfg = sp.config
    gate = config_gate(cfg, approved_in(sp.root), sp.root)
    try:  # the tasks' files at the commits the night pins them to (its skill branch's tip as the fallback)
        own = Store.open(sp.root, skill_file(entry.path), entry.branch or cfg.skill.branch)
        files = RepoFiles(own.repo, own.tip())
    except SkillgitError:
        files = RepoFiles(open_repository(sp.root))
    chosen = R.choose(routed, sp.settings, simulated=cfg.model.student_backend == "simulated",
                      agentic=R.agentic_supported(), approved=gate.approved, scorer_blocked=gate.scorer_blocked,
                      keys=files.key)
    if gate.night_reason and routed:
        chosen = R.Replay(excluded={CONFIG_NOT_APPROVED: len(routed)}, reason=gate.night_reason)
    why = "no task was routed to it tonight (no session invoked it)" if not routed else chosen.reason
    one: dict[str, Any] = {"routed": len(routed), **chosen.counts(), "excluded": chosen.excluded,
                           "run": skill_run(run_id(date), name), "branch": night_branch(sp, date, entry),
                           "skipped": why, "estimate": None}
    if chosen.usable:
        night_cfg = sp.night([f"skill.path={skill_file(entry.path)}", *night_overrides(sp, one["branch"])]).config
        with tempfile.TemporaryDirectory(prefix="skillgit-sleep-plan-") as tmp:
            R.write_splits(Path(tmp), chosen)
            splits = R.load_splits(Path(tmp), night_cfg.env)
        skill = Store.open(sp.root, skill_file(entry.path), entry.branch or cfg.skill.branch).read_skill()
        one["estimate"] = {k: v for k, v in estimate(night_cfg, splits, skill).items() if k != "text"}
    return one


def looked(sp: SleepProject) -> dict[str, Any]:
    """Where a night looks for sessions: the home folder as configured (`~` unexpanded: the user's home path is
    not shown, e.g. to a model through MCP) and the sources it reads (`--home`, `--sources`)."""
    from skillgit.sleep.readers import sources

    return {"home": sp.settings.home, "sources": list(sp.settings.sources or sources())}


def _text(plan: dict[str, Any]) -> str:
    h, m, t = plan["harvest"], plan["mined"], plan["tasks"]
    skipped = ", ".join(f"{k} {v}" for k, v in h["skipped"].items()) or "none"
    where = h["looked"]
    nothing = (f"\n    (looked in {where['home']} for {', '.join(where['sources'])} sessions of this repository; "
               "`--home` and `--sources` choose others)") if not h["sessions"] and not h["skipped"] else ""
    lines = [f"night {plan['date']} (dry run: nothing is written, no model is called)",
             f"  harvest: {h['sessions']} new session(s); skipped {skipped}; {h['warnings']} warning(s){nothing}",
             f"  mine: {m['units']} unit(s) in {m['groups']} group(s) → {m['tasks']} task(s), {m['new_tasks']} new",
             f"  task file: {t['file']} — {t['in_file']} task(s), {'reviewed' if t['reviewed'] else 'not reviewed'}",
             f"  replay: train {t['train']}, val {t['val']}, test {t['test']}"]
    for why, n in t["excluded"].items():
        lines.append(f"    left out {n}: {why}")
    for name, k in plan.get("skills", {}).items():  # a library night: each skill on the tasks routed to it
        calls = k["estimate"]["total_calls"] if k["estimate"] else None
        lines.append(f"  skill {name}: {k['routed']} routed → " + (f"skipped: {k['skipped']}" if k["skipped"] else
                     f"train {k['train']}, val {k['val']}, test {k['test']}; run {k['run']} on {k['branch']}"
                     + (f"; ~{calls} call(s)" if calls is not None else "")))
    if plan["reason"]:
        lines.append(f"  no training tonight: {plan['reason']}")
    else:
        lines.append(f"  would train run {plan['run']} on branch {plan['branch']} (from {plan['skill_branch']})")
    lines.append(f"  release: {plan['release']}" + (f" — sent to {', '.join(plan['sent_to'])}" if plan["sent_to"]
                                                     else ""))
    budget = ", ".join(f"{k} {v}" for k, v in plan["budget"].items() if v is not None) or "none"
    lines.append(f"  budgets: {budget}")
    if plan.get("estimate_text"):
        lines += ["", plan["estimate_text"]]
    return "\n".join(lines)


def status_info(sp: SleepProject, limit: int = 10, *, crontab: str = "crontab",
                crontab_file: Path | None = None) -> dict[str, Any]:
    repo = open_repository(sp.root)
    state = S.load(repo)
    nights = []
    for date in list(state.nights)[-limit:][::-1]:
        record = S.night(repo, date)
        if record is None:
            continue
        nights.append({"date": record.date, "status": record.status, "reason": record.reason,
                       "branch": record.branch, "accepted": record.accepted, "rejected": record.rejected,
                       "val": [record.score("seed", "val"), record.score("final", "val")],
                       "cost_usd": record.usage.cost_usd,
                       "adopted": record.adopted, "left_out_unapproved": left_out(record.tasks.excluded),
                       "branch_exists": bool(record.branch and repo.ref(f"refs/heads/{record.branch}"))})
    path = sp.path(sp.settings.tasks_file)
    recorded = entries(repo.common_dir)
    gate = config_gate(sp.config, frozenset(recorded), sp.root)
    tasks: dict[str, Any] = {"file": str(path), "exists": path.is_file(), "count": 0, "reviewed": False,
                             "unapproved": 0, "changed": {}}
    if path.is_file():
        try:
            loaded = read_tasks(path)
            files = RepoFiles(repo, repo.ref(f"refs/heads/{sp.config.skill.branch}"))
            waiting = [t for t in loaded.tasks if t.kind == "agentic" and files.key(t) not in gate.approved]
            why = {t.id: changed(recorded, text_key(t), files.files(t)) for t in waiting}
            tasks.update(count=len(loaded.tasks), reviewed=loaded.reviewed, unapproved=len(waiting),
                         changed={k: v for k, v in why.items() if v})
        except SkillgitError as exc:
            tasks["error"] = exc.message
    root = repo.root.resolve()
    cron: bool | None
    cron_error = ""  # why `cron` is unknown (no crontab program, an unreadable crontab file …)
    try:
        cron = bool(K.split_block(K.read_crontab(crontab, file=crontab_file), root)[1])
    except SkillgitError as exc:
        cron, cron_error = None, exc.message
    systemd = (K.unit_dir() / f"{K.unit_name(root)}.timer").is_file()
    return {"nights": nights, "tasks": tasks,
            "schedule": {"cron": cron, "cron_error": cron_error, "systemd": systemd},
            "config": [{"key": c.key, "text": c.shown_text, "needs": c.needs,
                        "approved": c.approval_key in gate.approved,
                        "changed": "" if c.approval_key in gate.approved else changed(recorded, c.text_key, c.files)}
                       for c in gate.commands],
            "legacy": LEGACY if any(v == LEGACY for v in tasks["changed"].values()) or any(
                c.approval_key not in gate.approved and changed(recorded, c.text_key, c.files) == LEGACY
                for c in gate.commands) else "",
            "harvest": {"files": len(state.harvest.files)}, "ref": S.SLEEP_REF, "head": state.head}

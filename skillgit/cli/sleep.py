"""CLI: `skillgit sleep harvest | mine | review | run | dry-run | status | adopt | schedule | unschedule`
(`adopt` lives in `cli/sleep_adopt.py`).

Thin wrappers over `skillgit.sleep`: data on stdout (`--json` where a script wants it; `harvest --json` is one JSON
object per line), progress and messages on stderr, every expected failure a SkillgitError with a hint.
"""

import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Optional

import typer

from skillgit import console
from skillgit.cli.sleep_approval import approval_of, say_legacy, show_files
from skillgit.cli.sleep_options import CONFIG, JSON, REPO, say, sleep_app, sleep_project
from skillgit.errors import ExitCode, SkillgitError
from skillgit.textsafe import json_shown, shown

SET = typer.Option(None, "-c", "--set", "-s",
                   help="Set a config key, as git -c does: -c train.batch_size=20 (repeatable).")
CRONTAB_FILE = typer.Option(None, "--crontab-file", envvar="SKILLGIT_CRONTAB_FILE",
                            help="Keep the cron block in this file instead of your user's crontab (default: "
                                 "sleep.crontab_file; install it yourself, e.g. `crontab FILE`).")
HOME = typer.Option(None, "--home", help="Whose agent sessions to read (default: sleep.home, else ~).")
SOURCES = typer.Option(None, "--sources", help="Session sources, comma-separated or repeated: claude, codex, "
                                               "copilot-cli, opencode, copilot-vscode, cursor (default: all).")
DATE = typer.Option(None, "--date", help="The night, YYYY-MM-DD (default: today).")
TASKS = typer.Option(None, "--tasks", help="The mined task file (default: sleep.tasks_file, "
                                           ".skillgit/sleep/tasks.jsonl).")



def _sources(values: Optional[list[str]]) -> Optional[list[str]]:
    if not values:
        return None
    return [s.strip() for v in values for s in v.split(",") if s.strip()]


def _date(value: Optional[str]) -> str:
    from skillgit.sleep.night import today
    from skillgit.sleep.settings import check_date

    return check_date(value) if value else today()


# ---------------------------------------------------------------------------------------------- harvest
def _session_row(session: Any, first_new: dict[str, int]) -> dict[str, Any]:
    return {"source": session.source, "session": session.session_id, "key": session.key,
            "project": session.cwd or session.git_remote, "started": session.started, "ended": session.ended,
            "user_turns": session.user_turn_count, "turns": len(session.turns),
            "new_from_turn": first_new.get(session.key), "skipped_reason": session.skipped_reason}


@sleep_app.command("harvest")
def harvest_cmd(repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG, home: Optional[str] = HOME,
                sources: Optional[list[str]] = SOURCES,
                all_: bool = typer.Option(False, "--all", help="Ignore what earlier harvests saw."),
                as_json: bool = typer.Option(False, "--json", help="One JSON object per session on stdout.")) -> None:
    """List this repository's agent sessions that are new since the last night or `sleep mine` (nothing is saved
    for them: a local cache under .git only spares the next listing the files that did not change)."""
    from skillgit.sleep import state
    from skillgit.sleep.harvest import CACHE_FILE, HarvestCache, HarvestState, cache_basis, git_remotes, harvest
    from skillgit.sleep.night import home_of, scrubber_for
    from skillgit.store.repository import open_repository

    sp = sleep_project(repo, config, home=home, sources=_sources(sources))
    git_repo = open_repository(sp.root)
    saved = state.load(git_repo)
    scrubber = scrubber_for(sp)
    basis = cache_basis(head=saved.head, all=all_, settings=sp.settings, root=str(sp.root),
                        scrub=[scrubber.secrets, scrubber.patterns, scrubber.homes])
    cache_path = git_repo.common_dir / "skillgit" / "sleep" / CACHE_FILE
    since = HarvestState() if all_ else saved.harvest
    cache = HarvestCache.load(cache_path, basis) or HarvestCache(basis, since)
    listed: list[dict[str, Any]] = []  # a row per kept session as it is harvested: no session is held
    result = harvest(sp.settings.sources or None, home_of(sp), sp.root, git_remotes(str(sp.root)), cache.state,
                     scrubber=scrubber, sink=lambda s, first: listed.append(_session_row(s, {s.key: first})))
    cache = cache.extend(result, (*listed, *(_session_row(s, result.first_new_turn) for s in result.skipped)))
    try:
        cache.save(cache_path)
    except OSError as exc:
        say(f"warning: the harvest cache could not be saved ({exc}); the next harvest reads every file again")
    rows = sorted(cache.rows, key=lambda r: (str(r["started"] or ""), r["key"]))
    if as_json:
        for row in rows:
            sys.stdout.write(json_shown(json.dumps(row, ensure_ascii=False)) + "\n")
    else:
        for row in rows:
            typer.echo(shown(f"{row['source']:<15} {row['session'][:36]:<36} {str(row['started'] or '-')[:19]:<19} "
                             f"{row['user_turns']:>3} turn(s)  {row['skipped_reason'] or 'kept'}"))
    for warning in cache.warnings:
        say(f"warning: {warning.source} {warning.path}: {warning.message}")
    summary = result.summary()
    reasons = Counter(r["skipped_reason"] for r in rows if r["skipped_reason"])
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())) or "none"
    say(f"{sum(1 for r in rows if not r['skipped_reason'])} session(s) kept, skipped: {skipped}; "
         f"{summary['files_read']} file(s) read, {summary['files_unchanged']} unchanged; "
         f"redactions: {sum(summary['redactions'].values())}")


# ---------------------------------------------------------------------------------------------- mine / review
@sleep_app.command("mine")
def mine_cmd(repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG, home: Optional[str] = HOME,
             sources: Optional[list[str]] = SOURCES, tasks: Optional[str] = TASKS, as_json: bool = JSON) -> None:
    """Harvest new sessions and add the recurring or failed tasks to the reviewable task file."""
    from skillgit.sleep.night import LOCK, gather
    from skillgit.store.lock import hold
    from skillgit.store.repository import open_repository

    sp = sleep_project(repo, config, home=home, sources=_sources(sources), tasks_file=tasks)
    git = open_repository(sp.root)
    with hold(git.common_dir / "skillgit" / "locks", LOCK):
        g = gather(sp, git, write=True)
    info = {"file": str(g.path), "sessions": g.harvest.summary()["sessions"], "skipped": g.harvest.summary()["skipped"],
            "mined": g.mined.summary(), "new_tasks": len(g.new), "tasks_in_file": len(g.pool), "reviewed": g.reviewed,
            "redactions": g.harvest.redactions.to_dict()}
    if as_json:
        console.print_json(info)
        return
    if not g.pool:
        typer.echo(shown(f"0 new task(s): no request recurred in {sp.settings.min_sessions} or more sessions or "
                         f"failed ({info['mined'].get('units', 0)} request(s) from {info['sessions']} session(s)); "
                         f"no task file yet"))
        return
    typer.echo(shown(f"{len(g.new)} new task(s), {len(g.pool)} in {g.path} "
                     f"({'reviewed' if g.reviewed else 'not reviewed'})"))
    if g.pool and not g.reviewed:
        say("read it with `skillgit sleep review` (every task, and the commands agentic ones would run), then "
             "`skillgit sleep review --approve` (nothing leaves this machine before that, unless `sleep run --yes`; "
             "a test command mined from a transcript runs only once approved)")


def _tasks_path(sp: Any, tasks: Optional[str]) -> Path:
    return sp.path(tasks or sp.settings.tasks_file)


@sleep_app.command("review")
def review_cmd(repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG, tasks: Optional[str] = TASKS,
               approve: bool = typer.Option(False, "--approve", help="Mark the file as reviewed and approve, on this "
                                                                     "machine, the shell commands it shows."),
               revoke: bool = typer.Option(False, "--revoke", help="Mark the file as not reviewed and withdraw the "
                                                                   "approval of its commands."),
               as_json: bool = JSON) -> None:
    """Show the mined tasks for review, with the shell commands each agentic task would run, and the commands of
    skillgit.yaml a night runs; --approve marks the file reviewed (its first line says so) and approves those
    commands here (a night runs only approved ones)."""
    from skillgit.sleep import approval
    from skillgit.sleep.mine import read_tasks
    from skillgit.sleep.replay import share
    from skillgit.store.repository import open_repository

    if approve and revoke:
        raise SkillgitError("--approve and --revoke exclude each other", "give one of them")
    sp = sleep_project(repo, config)
    path = _tasks_path(sp, tasks)
    configured = approval.config_commands(sp.config, sp.root)  # what the configuration runs in a night
    if not path.is_file() and not (configured and (approve or revoke)):
        if approve or revoke:
            raise SkillgitError(f"no mined task file at {path} to mark", "there is nothing to review yet")
        _review_nothing_mined(sp, path, as_json, _config_rows(sp, configured))
        _show_config(sp, configured, as_json)
        return
    loaded = read_tasks(path) if path.is_file() else None
    git = open_repository(sp.root)
    try:  # a task's key covers the files its commands run, at the commit the night replays it from
        files = approval.RepoFiles(git, git.ref(f"refs/heads/{sp.config.skill.branch}"))
        if approve or revoke:
            if loaded is not None:
                _set_reviewed(path, approve)
                loaded = read_tasks(path)
            approval.record(git.common_dir, loaded.tasks if loaded else (), approve=approve, config=configured,
                            files=files.files)
        recorded = approval.entries(git.common_dir)
        keys = frozenset(recorded)
        rows = [{"id": t.id, "kind": t.kind, "place": "val" if share(t.id) < sp.settings.val_share else "train/test",
                 "sessions": len(t.sessions), "prompt": t.prompt, "expected": t.expected, "verify": t.verify,
                 "commands": approval.commands(t), **approval_of(t, files, recorded)}
                for t in (loaded.tasks if loaded else ())]
    finally:
        git.close()
    config_rows = _config_rows(sp, configured, keys, recorded)
    if loaded is None:  # no task file yet: the configuration's commands only
        if as_json:
            console.print_json({"file": str(path), "exists": False, "config": config_rows})
        _show_config(sp, configured, as_json, keys, recorded)
        say(f"{'approved' if approve else 'withdrew the approval of'} the configuration's {len(configured)} "
            "command(s) on this machine")
        return
    if as_json:
        console.print_json({"file": str(path), "reviewed": loaded.reviewed, "tasks": rows, "config": config_rows})
        return
    _show_config(sp, configured, False, keys, recorded)
    for r in rows:
        expected = "" if r["expected"] is None else f" → {str(r['expected'])[:40]!r}"
        typer.echo(shown(f"{r['id']}  {r['kind']:<7} {r['sessions']} session(s)  {r['prompt'][:70]!r}{expected}",
                         multiline=False))
        for command in r["commands"]:  # what would run in a night, shown whole: it came from a transcript
            typer.echo(shown(f"    runs{'' if r['commands_approved'] else ' (not approved)'}: $ {command}",
                             multiline=False))
        show_files(r)
    waiting = sum(1 for r in rows if r["commands_approved"] is False)
    unapproved = sum(1 for r in config_rows if not r["approved"])
    say(f"{len(rows)} task(s) in {path}: {'reviewed' if loaded.reviewed else 'NOT reviewed'}"
         + (f"; {waiting} agentic task(s) run commands nobody approved yet (--approve after reading them)"
            if waiting else "")
         + (f"; the configuration runs {unapproved} command(s) nobody approved yet (--approve after reading them)"
            if unapproved else ""))
    say_legacy([*rows, *config_rows])
    if approve or revoke:  # what it did to the commands, and what comes next
        agentic = f"the commands of its {sum(1 for r in rows if r['kind'] == 'agentic')} agentic task(s)"
        say(f"approved {agentic} on this machine; next: `skillgit sleep run` (`--revoke` undoes it)" if approve else
             f"withdrew the approval of {agentic}: a night leaves them out until `skillgit sleep review --approve`")


def _config_rows(sp: Any, configured: Any, keys: Optional[frozenset[str]] = None,
                 recorded: Any = None) -> list[dict[str, Any]]:
    from skillgit.sleep import approval

    recorded = approval.entries_in(sp.root) if recorded is None else recorded
    keys = frozenset(recorded) if keys is None else keys
    return [{"key": c.key, "text": c.shown_text, "needs": c.needs, "approved": c.approval_key in keys,
             "files": [{"path": f.path, "digest": f.digest} for f in c.files],
             "changed": "" if c.approval_key in keys else approval.changed(recorded, c.text_key, c.files)}
            for c in configured]


def _show_config(sp: Any, configured: Any, as_json: bool, keys: Optional[frozenset[str]] = None,
                 recorded: Any = None) -> None:
    """The commands the configuration runs in a night (a pulled skillgit.yaml may have changed them), each whole
    and marked when not approved here, with the files they run (on stdout; nothing with `--json`, whose object has
    them as `config`)."""
    if as_json or not configured:
        return
    for c in _config_rows(sp, configured, keys, recorded):  # shown whole: what an unattended night would run
        typer.echo(shown(f"skillgit.yaml {c['key']}{'' if c['approved'] else ' (not approved)'}: "
                         f"{'' if c['key'].endswith('.env_passthrough') else '$ '}{c['text']}", multiline=False))
        show_files(c)


def _review_nothing_mined(sp: Any, path: Path, as_json: bool, config: list[dict[str, Any]]) -> None:
    """No task file: say what the harvests since the last night found (`sleep mine` writes the file only when it
    mined a task); before any harvest, ask for one."""
    from skillgit.sleep import state as S
    from skillgit.store.repository import open_repository

    git = open_repository(sp.root)
    try:
        seen, totals = len(S.load(git).harvest.files), S.totals(git)
    finally:
        git.close()
    harvested = totals != S.NightTotals()
    if not seen and not harvested and not config:
        raise SkillgitError(f"no mined task file at {path}", "run `skillgit sleep mine` first")
    if as_json:
        console.print_json({"file": str(path), "exists": False, "reviewed": False, "tasks": [],
                            "since_last_night": totals.to_dict() if harvested else {},
                            "session_files_seen": seen, "config": config})
        return
    harvest, mined = totals.harvest, totals.mined
    skipped = ", ".join(f"{k} {v}" for k, v in harvest.skipped.items()) or "none"
    found = (f"since the last night, `sleep mine` harvested {harvest.sessions} session(s) (skipped: "
             f"{skipped}) and found {mined.units} request(s) in {mined.groups} group(s): "
             if harvested else "nothing was harvested since the last night: ")
    if not seen and not harvested:
        say(f"no mined task file at {path} yet (`skillgit sleep mine`); the configuration's commands a night runs:")
        return
    say(f"0 task(s) to review: {found}no task recurred in {sp.settings.min_sessions} or more sessions or failed, "
         f"so there is no task file yet ({path}); {seen} session file(s) seen so far")


def _set_reviewed(path: Path, value: bool) -> None:
    """Rewrite only the header line (the rows stay byte for byte as the person left them)."""
    text = path.read_text(encoding="utf-8")
    first, sep, rest = text.partition("\n")
    header = json.loads(first)
    header["reviewed"] = value
    if value:
        header["reviewed_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    path.write_text(json.dumps(header, ensure_ascii=False, sort_keys=True) + sep + rest, encoding="utf-8")


# ---------------------------------------------------------------------------------------------- run / dry-run
def _night_options(home: Optional[str], sources: Optional[list[str]], tasks: Optional[str], branch: Optional[str],
                   max_tasks: Optional[int], max_steps: Optional[int], max_calls: Optional[int],
                   max_tokens: Optional[int], max_cost: Optional[float]) -> dict[str, Any]:
    return {"home": home, "sources": _sources(sources), "tasks_file": tasks, "branch": branch, "max_tasks": max_tasks,
            "max_steps": max_steps, "max_calls": max_calls, "max_tokens": max_tokens, "max_cost_usd": max_cost}


BRANCH = typer.Option(None, "--branch", help="The night's branch pattern (default: sleep.branch, sleep/{date}).")
MAX_TASKS = typer.Option(None, "--max-tasks", help="Tasks replayed tonight (default: sleep.max_tasks, 200).")
MAX_STEPS = typer.Option(None, "--max-steps", help="Training steps tonight (train.max_steps).")
MAX_CALLS = typer.Option(None, "--max-calls", help="Model calls tonight (budget.max_calls).")
MAX_TOKENS = typer.Option(None, "--max-tokens", help="Tokens tonight (budget.max_tokens).")
MAX_COST = typer.Option(None, "--max-cost", help="Dollars tonight (budget.max_cost_usd).")


@sleep_app.command("run")
def run_cmd(repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG, set_: Optional[list[str]] = SET,
            home: Optional[str] = HOME, sources: Optional[list[str]] = SOURCES, date: Optional[str] = DATE,
            tasks: Optional[str] = TASKS, branch: Optional[str] = BRANCH, max_tasks: Optional[int] = MAX_TASKS,
            max_steps: Optional[int] = MAX_STEPS, max_calls: Optional[int] = MAX_CALLS,
            max_tokens: Optional[int] = MAX_TOKENS, max_cost: Optional[float] = MAX_COST,
            yes: bool = typer.Option(False, "--yes", help="Send unreviewed mined tasks to the configured models "
                                                           "(their shell commands still run only once approved: "
                                                           "`sleep review --approve`)."),
            handoff: Optional[Path] = typer.Option(None, "--handoff", help="No API key: write teacher prompts to "
                                                                           "this folder for your own agent to "
                                                                           "answer; run again to resume."),
            as_json: bool = JSON,
            events: bool = typer.Option(False, "--events", help="Progress as JSON lines on stderr.")) -> None:
    """Harvest, mine and train tonight on a sleep/<date> branch through the gate; write the night's report."""
    from skillgit.cli.progress import RunDisplay
    from skillgit.sleep.approval import advice
    from skillgit.sleep.night import NightOptions, run_night

    sp = sleep_project(repo, config, set_, **_night_options(home, sources, tasks, branch, max_tasks, max_steps,
                                                        max_calls, max_tokens, max_cost))
    options = NightOptions(_date(date), yes=yes, handoff=handoff.resolve() if handoff else None)
    if events:
        record = run_night(sp, options, on_event=_json_event)
    else:
        display = RunDisplay(console.err)
        with display:
            record = run_night(sp, options, on_event=display.handle)
    report = sp.path(sp.settings.report_dir) / f"{record.date}.md"
    for line in advice(record.tasks.excluded):  # the left-out reasons a person can undo (stderr, --json too)
        say(line)
    if as_json:
        console.print_json({**record.to_dict(), "report": str(report)})
    else:
        seed, final = record.score("seed", "val"), record.score("final", "val")
        scores = f"; val {seed:.3f} → {final:.3f}" if seed is not None and final is not None else ""
        typer.echo(shown(f"night {record.date}: {record.status}"
                         + (f" ({record.reason})" if record.reason else "")
                         + (f" on {record.branch}: {record.accepted} accepted, {record.rejected} rejected"
                            if record.branch else "") + scores))
        for k in record.skills:  # a library night: each skill's own part
            typer.echo(shown(f"  {k.name}: {k.status}" + (f" ({k.reason})" if k.reason else
                                                          f", {k.accepted} accepted, {k.rejected} rejected")))
        typer.echo(shown(f"report: {report}"))
        if record.accepted:
            say(f"review it (`git log {record.skill_branch}..{record.branch}`), then `skillgit sleep adopt "
                 f"{record.date}`")
    if record.status == "stopped":
        raise typer.Exit(int(ExitCode.BUDGET))


def _json_event(event: Any) -> None:
    sys.stderr.write(json.dumps(event.to_dict(), default=str) + "\n")
    sys.stderr.flush()


@sleep_app.command("dry-run")
def dry_run_cmd(repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG, set_: Optional[list[str]] = SET,
                home: Optional[str] = HOME, sources: Optional[list[str]] = SOURCES, date: Optional[str] = DATE,
                tasks: Optional[str] = TASKS, branch: Optional[str] = BRANCH, max_tasks: Optional[int] = MAX_TASKS,
                max_steps: Optional[int] = MAX_STEPS, max_calls: Optional[int] = MAX_CALLS,
                max_tokens: Optional[int] = MAX_TOKENS, max_cost: Optional[float] = MAX_COST,
                handoff: bool = typer.Option(False, "--handoff", help="Plan for handoff mode."),
                as_json: bool = JSON) -> None:
    """What tonight would do — sessions, tasks, splits, branch, budgets, an estimate of calls — writing nothing."""
    from skillgit.sleep.plan import plan_night

    sp = sleep_project(repo, config, set_, **_night_options(home, sources, tasks, branch, max_tasks, max_steps,
                                                        max_calls, max_tokens, max_cost))
    plan = plan_night(sp, _date(date), handoff=handoff)
    if as_json:
        console.print_json(plan)
    else:
        console.out.print(plan["text"], markup=False, highlight=False)


# ---------------------------------------------------------------------------------------------- status / adopt
@sleep_app.command("status")
def status_cmd(repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG,
               limit: int = typer.Option(10, "-n", help="How many nights to show."), as_json: bool = JSON,
               crontab: str = typer.Option("crontab", "--crontab", envvar="SKILLGIT_CRONTAB", hidden=True),
               crontab_file: Optional[str] = CRONTAB_FILE) -> None:
    """The nights so far, the task file's review state, and whether a nightly job is scheduled."""
    from skillgit.sleep.plan import status_info

    sp = sleep_project(repo, config)
    info = status_info(sp, limit, crontab=crontab, crontab_file=_crontab_file(sp, crontab_file))
    if as_json:
        console.print_json(info)
        return
    t = info["tasks"]
    typer.echo(shown(f"task file: {t['file']} — " + (f"{t['count']} task(s), "
                                                       f"{'reviewed' if t['reviewed'] else 'not reviewed'}"
                                                       if t["exists"] else "none yet (`skillgit sleep mine`)")
                     + (f"; {t['unapproved']} agentic task(s) run commands nobody approved here"
                        if t["unapproved"] else "")))
    for task_id, why in t.get("changed", {}).items():
        if why != info["legacy"]:
            typer.echo(shown(f"  task {task_id}: {why}", multiline=False))
    waiting = [c["key"] for c in info["config"] if not c["approved"]]
    if waiting:
        typer.echo(shown(f"skillgit.yaml: {', '.join(waiting)} not approved here: a night leaves out what needs it"))
    for c in info["config"]:
        if c["changed"] and c["changed"] != info["legacy"]:
            typer.echo(shown(f"  skillgit.yaml {c['key']}: {c['changed']}", multiline=False))
    if info["legacy"]:
        say(f"some command(s) were {info['legacy']}")
    sched = info["schedule"]
    why = f" ({sched['cron_error']})" if sched["cron"] is None and sched["cron_error"] else ""
    typer.echo(shown(f"schedule: cron {_yes_no(sched['cron'])}{why}, systemd {_yes_no(sched['systemd'])}"))
    typer.echo(shown(f"harvest state: {info['harvest']['files']} session file(s) seen"))
    for n in info["nights"]:
        vals = n["val"]
        score = f"val {vals[0]:.3f} → {vals[1]:.3f}" if None not in vals else "val –"
        adopted = "adopted" if n["adopted"] else ("pending review" if n["accepted"] and n["branch_exists"] else "")
        unapproved = f"  {n['left_out_unapproved']} left out (not approved)" if n["left_out_unapproved"] else ""
        typer.echo(shown(f"{n['date']}  {n['status']:<9} {n['branch'] or '-':<20} ✓{n['accepted']} ✗{n['rejected']}  "
                         f"{score}  {adopted}".rstrip() + unapproved))
    if not info["nights"]:
        typer.echo("no night yet: `skillgit sleep run` (or `skillgit sleep dry-run` to see what it would do)")
    if t["unapproved"] or waiting or any(n["left_out_unapproved"] for n in info["nights"][:1]):
        say("commands wait for your approval: read them with `skillgit sleep review`, approve with "
            "`skillgit sleep review --approve`")


def _yes_no(value: Optional[bool]) -> str:
    return "unknown" if value is None else ("yes" if value else "no")


from skillgit.cli import sleep_adopt  # noqa: E402,F401 - `sleep adopt` (registered here: the help lists it here)

# ---------------------------------------------------------------------------------------------- schedule
CRONTAB = typer.Option("crontab", "--crontab", envvar="SKILLGIT_CRONTAB", hidden=True,
                       help="The crontab program (tests).")
SYSTEMCTL = typer.Option("systemctl", "--systemctl", envvar="SKILLGIT_SYSTEMCTL", hidden=True,
                         help="The systemctl program (tests).")


def _crontab_file(sp: Any, given: Optional[str]) -> Optional[Path]:
    """The crontab file to use (--crontab-file, else sleep.crontab_file; `~` expanded, relative to the
    repository), or None: the user's crontab through `crontab`."""
    chosen = given if given is not None else sp.settings.crontab_file
    return sp.path(chosen) if chosen else None


def _whose_crontab(file: Optional[Path]) -> str:
    """Where the block went, for the person: the file, or whose crontab `crontab` wrote (by user id, not HOME)."""
    import os

    from skillgit.sleep.schedule import crontab_owner

    if file is not None:
        return f"in {file} (install it with `crontab {file}`, or point sleep.crontab_file at a file cron reads)"
    user, home = crontab_owner()
    said = f"in the crontab of user {user} (`crontab -l`)"
    here = os.environ.get("HOME", "")
    if home and here and os.path.realpath(here) != os.path.realpath(home):
        said += (f"; note: HOME is {here} but crontab(1) picks the crontab by user id ({home} is {user}'s home): "
                 "pass --crontab-file FILE (or set sleep.crontab_file) to keep the entry in a file instead")
    return said


def _job(sp: Any, at: Optional[str], yes: bool, max_cost: Optional[float]) -> Any:
    """The nightly job; a real backend is refused without a dollar cap (--max-cost, sleep.max_cost_usd or
    budget.max_cost_usd): nobody watches an unattended night's bill."""
    from skillgit.sleep.night import leaves_machine
    from skillgit.sleep.schedule import Job
    from skillgit.store.repository import open_repository

    git = open_repository(sp.root)
    settings = sp.settings.with_options(schedule_at=at, max_cost_usd=max_cost)
    who = leaves_machine(sp.config, handoff=False)
    if who and settings.max_cost_usd is None and sp.config.budget.max_cost_usd is None:
        raise SkillgitError(f"an unattended night would pay {' and '.join(who)} with no dollar cap",
                            "give one: `skillgit sleep schedule --max-cost 2.50` (or sleep.max_cost_usd / "
                            "budget.max_cost_usd in skillgit.yaml)")
    log = git.common_dir / "skillgit" / "sleep" / "cron.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    return Job(git.root.resolve(), settings.schedule_at, log, yes=yes, max_cost_usd=max_cost)


@sleep_app.command("schedule")
def schedule_cmd(repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG,
                 at: Optional[str] = typer.Option(None, "--at", help="Time of day, HH:MM (default: "
                                                                     "sleep.schedule_at, 03:00)."),
                 systemd: bool = typer.Option(False, "--systemd", help="A systemd user timer instead of cron."),
                 print_: bool = typer.Option(False, "--print", help="Print the entry; install nothing."),
                 yes: bool = typer.Option(False, "--yes", help="The nightly run passes --yes: unreviewed mined tasks "
                                                               "reach the configured models (default: only a "
                                                               "reviewed task file does); it approves no shell "
                                                               "command (`sleep review --approve` does)."),
                 max_cost: Optional[float] = typer.Option(None, "--max-cost", help="Dollars per night, passed to "
                                                                                   "the nightly run (required for a "
                                                                                   "real backend unless the config "
                                                                                   "caps it)."),
                 crontab: str = CRONTAB, systemctl: str = SYSTEMCTL, crontab_file: Optional[str] = CRONTAB_FILE
                 ) -> None:
    """Run `skillgit sleep run` in this repository every night (a managed crontab block or systemd timer)."""
    import shlex

    from skillgit.sleep import schedule as K

    sp = sleep_project(repo, config)
    job = _job(sp, at, yes, max_cost)
    if print_:
        text = "".join(f"# {name}\n{body}\n" for name, body in K.unit_files(job).items()) if systemd \
            else K.cron_block(job)
        typer.echo(text.rstrip("\n"))
        return
    configured = _approve_scheduled(sp)
    if systemd:
        paths = K.install_systemd(job, shlex.split(systemctl))
        typer.echo(shown("installed " + ", ".join(str(p) for p in paths)))
    else:
        file = _crontab_file(sp, crontab_file)
        block = K.install_cron(job, crontab, file=file)
        typer.echo(shown(block.rstrip("\n")))
        say(f"installed {_whose_crontab(file)}")
    release = ("the job passes --yes: mined tasks reach the configured models unreviewed (their shell commands "
               "still run only once approved: `skillgit sleep review --approve`)" if yes else
               "with a real backend a night runs only on a reviewed task file (`skillgit sleep review --approve`)")
    say(f"{release}; keys come from the repository's .env. Remove it with `skillgit sleep unschedule"
         + (" --systemd`" if systemd else "`"))
    if configured:
        say(f"approved on this machine the {len(configured)} command(s) of skillgit.yaml shown above that the nightly "
            "job runs; an edited one (a pulled skillgit.yaml) runs only once `skillgit sleep review --approve` "
            "approves it")


def _approve_scheduled(sp: Any) -> tuple[Any, ...]:
    """Show (stderr) every command of the configuration the nightly job runs, and approve them here: the person
    scheduling sees them; a later change of their text is not approved (`approval.ConfigGate`)."""
    from skillgit.sleep import approval
    from skillgit.store.repository import open_repository

    configured = approval.config_commands(sp.config, sp.root)
    for c in configured:
        say(f"the nightly job runs skillgit.yaml {c.key}: {c.shown_text}")
    if configured:
        git = open_repository(sp.root)
        try:
            approval.record(git.common_dir, (), approve=True, config=configured)
        finally:
            git.close()
    return configured


@sleep_app.command("unschedule")
def unschedule_cmd(repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG,
                   systemd: bool = typer.Option(False, "--systemd", help="Remove the systemd user timer."),
                   crontab: str = CRONTAB, systemctl: str = SYSTEMCTL,
                   crontab_file: Optional[str] = CRONTAB_FILE) -> None:
    """Remove exactly what `skillgit sleep schedule` added for this repository."""
    import shlex

    from skillgit.sleep import schedule as K
    from skillgit.store.repository import open_repository

    sp = sleep_project(repo, config)
    root = open_repository(sp.root).root.resolve()
    if systemd:
        removed = K.remove_systemd(root, shlex.split(systemctl))
        typer.echo(shown("removed " + ", ".join(str(p) for p in removed)) if removed
                   else "no systemd timer was installed")
    else:
        file = _crontab_file(sp, crontab_file)
        typer.echo("removed the crontab entry" if K.remove_cron(root, crontab, file=file)
                   else "no crontab entry was installed")


def register(app: typer.Typer) -> None:
    app.add_typer(sleep_app, name="sleep")

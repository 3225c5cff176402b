"""CLI: `init`, `log`, `show`, `diff`, `rejected`, `revert`, `export`, `push`, `pull`, `gc` — the history in git.

Thin wrappers over `skillgit.store`: data (tables, diffs, JSON with --json) on stdout, messages on stderr, every
expected failure a SkillgitError that `main()` turns into `error: …` / `hint: …` and an exit code.
"""

from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any, Iterator, Optional

import typer

from skillgit import console
from skillgit.errors import SkillgitError
from skillgit.textsafe import shown

REPO = typer.Option(None, "--repo", "-C", help="The repository (default: the one around the current folder).")
CONFIG = typer.Option(None, "--config", help="Config file (default: skillgit.yaml at the repository root).")
SET = typer.Option(None, "-c", "--set", "-s",
                   help="Set a config key, as git -c does: -c skill.branch=main (repeatable).")
JSON = typer.Option(False, "--json", help="Print JSON on stdout.")
SKILL = typer.Option(None, "--skill", help="A skill library (`skills:`): only this skill's runs.")


def _store(repo: Optional[Path], config: Optional[Path], sets: Optional[list[str]] = None, track: str = ""):
    """The project's store; `track`: a remote to create the skill branch from when only that remote has it."""
    from skillgit.project import open_project
    from skillgit.store import Store

    project = open_project(repo, config, list(sets or []))
    if track:
        from skillgit.store.sync import track_remote_branch

        if track_remote_branch(project.root, project.config.skill.branch, track):
            _say(f"created branch '{project.config.skill.branch}' from {track} (as `git switch` would)")
    return Store.open(project.location or project.root, project.config.skill.path, project.config.skill.branch)


def _say(message: str) -> None:
    from rich.markup import escape  # (here: `log` and `--json` print only data and never need rich)

    console.info(escape(shown(message)))


def _table(headers: list[str], rows: list[list[str]], right: tuple[int, ...] = ()) -> None:
    """Aligned plain-text columns on stdout (`console.columns`)."""
    typer.echo(shown(console.columns(headers, list(rows), right)))


def _num(value: Optional[float], signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


# ---------------------------------------------------------------------------------------------- init
def init(path: Path = typer.Argument(Path("."), help="The repository (created when it is not one)."),
         skill: Optional[str] = typer.Option(None, "--skill", help="The skill file (default: found, or a starter "
                                                                   "SKILL.md)."),
         branch: Optional[str] = typer.Option(None, "--branch", help="The skill branch (default: the current one)."),
         hooks: bool = typer.Option(False, "--hooks", help="Install skillgit's git hooks (chains existing ones)."),
         commit: bool = typer.Option(False, "--commit", help="Commit the skill file and skillgit.yaml."),
         env: Optional[str] = typer.Option(None, "--env", help="Train on this environment (`skillgit env list`): "
                                                               "its seed skill, data and metric."),
         data: Optional[Path] = typer.Option(None, "--data", help="With --env: the benchmark's data (default: the "
                                                                  "environment's shipped sample).")) -> None:
    """Adopt (or create) a skill in a repository and set it up for skillgit."""
    from skillgit.store.initialize import init_project

    if data is not None and env is None:
        raise SkillgitError("--data needs --env", "e.g. skillgit init --env searchqa --data searchqa.jsonl")
    if path.exists() and not path.is_dir():  # (it was a FileExistsError traceback)
        import shlex

        raise SkillgitError(f"{path} is a file, not a folder",
                            f"give the repository's folder: `skillgit init {shlex.quote(str(path.parent))}`; the "
                            f"skill file goes in --skill {shlex.quote(path.name)}")
    if env is not None:
        from skillgit.envs import setup as env_setup

        prepared, skill = env_setup.prepare(path, env, data, skill)
    # the copied sample is what env.tasks names: committed (or listed to commit) with the skill and the config
    extra = (str(PurePosixPath(prepared.tasks).parent),) if env is not None and prepared.copied_sample else ()
    report = init_project(path, skill=skill, branch=branch, commit=commit and env is None, hooks=hooks, extra=extra)
    if env is not None:
        env_setup.finish(prepared, report.root, report.config_written)
        _say_env(prepared, env, report.skill_path)
        if commit:  # now that the env section is written
            again = init_project(path, skill=skill, branch=branch, commit=True, hooks=False, extra=extra)
            report.committed, report.todo = again.committed, again.todo
    _say_init(report)
    if not report.config_written:  # a kept file is checked now, not at the first train
        _check_kept_config(Path(report.root) / "skillgit.yaml")


def _check_kept_config(path: Path) -> None:
    from skillgit.config import load_config
    from skillgit.errors import ConfigError

    try:
        load_config(path)
    except ConfigError as exc:
        _say(f"warning: the kept skillgit.yaml does not load: {exc.message}")
        if exc.hint:
            _say(f"  fix: {exc.hint}")


def _say_env(prepared, env: str, skill_path: str) -> None:
    """What `init --env` did beyond the skill and config (stderr)."""
    if prepared.copied_sample:
        _say(f"copied the sample data of environment '{env}' to {prepared.tasks}")
    if prepared.wrote_seed_skill:
        _say(f"wrote the seed skill of environment '{env}' to {skill_path}")
    if prepared.config_updated:
        _say(f"skillgit.yaml trains on environment '{env}' with data {prepared.tasks}")
    for line in prepared.notes:
        _say(line)


def _say_init(report) -> None:
    """What `init` did and what is left to do (stderr)."""
    if report.created_repo:
        _say(f"created a git repository in {report.root}")
    _say(f"{'created a starter skill' if report.created_skill else 'adopted the skill'} {report.skill_path} "
         f"on branch '{report.branch}'")
    _say("wrote skillgit.yaml" if report.config_written else "kept the existing skillgit.yaml")
    for line in report.config_changes:
        _say(line)
    if report.env_ignored:
        _say("added .env to .gitignore (API keys go in .env, which must never be committed)")
    for line in report.warnings:
        _say(f"warning: {line}")
    for line in report.hooks:
        _say(f"hook {line}")
    if report.committed:
        _say(f"committed {report.committed[:12]}")
    if report.todo:
        _say("to start training, commit them:")
        root = Path(report.root).resolve()
        if Path.cwd().resolve() != root:  # the paths below are the repository root's
            import shlex

            _say(f"  cd {shlex.quote(str(root))}")
        for line in report.todo:
            _say(f"  {line}")


# ---------------------------------------------------------------------------------------------- log
def log(run: Optional[str] = typer.Option(None, "--run", help="Only this run."), as_json: bool = JSON,
        limit: Optional[int] = typer.Option(None, "-n", "--max-count", help="Only the newest N entries."),
        repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG,
        set_: Optional[list[str]] = SET, skill: Optional[str] = SKILL) -> None:
    """The training history: seeds, accepted, rejected and reverted steps, oldest first (with a skill library: a
    skill column)."""
    from skillgit.library import views
    from skillgit.project import open_project
    from skillgit.store import read

    _check_count(limit)
    project = open_project(repo, config, list(set_ or []))
    store = views.store_for(project)
    entries = read.history(store, run, edits=as_json, cached=True)  # (the table does not show edits)
    skills = views.run_skills(store, (e.run for e in entries), project.config) if project.config.skills else {}
    if skill:
        views.lib_config.entry(project.config, skill, project.root)  # a name of the library (the error lists them)
        entries = [e for e in entries if skills.get(e.run) == skill]
    if limit is not None:
        entries = entries[-limit:] if limit > 0 else []
    if as_json:
        console.print_json([{**e.to_dict(), "skill": skills.get(e.run)} if skills else e.to_dict()
                            for e in entries])
        return
    if not entries:
        _say_no_entries(store, run, limit)
        return
    rows = []
    for e in entries:
        summary = e.subject if e.verdict != "rejected" else f"{e.subject} — {e.reason}"
        if e.note == "corrupt":
            summary += " (corrupt note)"
        rows.append([e.label, e.verdict + (" (archived)" if e.archived else ""), _num(e.score),
                     _num(e.delta, True) if e.verdict != "seed" else "", e.sha[:10], summary])
        if skills:
            rows[-1].insert(0, skills.get(e.run, "-"))
    if skills:
        _table(["skill", "step", "verdict", "val", "Δ", "commit", "summary"], rows, right=(3, 4))
        return
    _table(["step", "verdict", "val", "Δ", "commit", "summary"], rows, right=(2, 3))


# ---------------------------------------------------------------------------------------------- show / diff
def _render_record(record: dict[str, Any]) -> str:
    import json

    import yaml

    from skillgit.store.notes import to_float

    kind = record.get("kind")
    rest = {k: v for k, v in record.items() if k not in ("v", "kind")}
    if kind == "decision":
        before, after = to_float(rest.get("score_before")), to_float(rest.get("score_after"))
        delta = to_float(rest.get("delta"))
        return (f"[decision] {rest.get('verdict')}: val {_num(before)} → {_num(after)} ({_num(delta, True)}) — "
                f"{rest.get('reason', '')}\n")
    try:
        text = yaml.safe_dump(rest, sort_keys=True, allow_unicode=True, width=110, default_flow_style=False)
    except RecursionError:  # a pulled note nested deeper than the YAML writer's stack: shown as JSON
        try:
            text = json.dumps(rest, sort_keys=True, ensure_ascii=False)
        except RecursionError:
            text = "(nested too deeply to show: see `git notes --ref skillgit show`)"
    return f"[{kind}]\n" + "".join(f"  {line}\n" for line in text.splitlines())


def show(rev: str = typer.Argument(..., help="A step (N, RUN/N, rejected/RUN/N), tag or commit."),
         as_json: bool = JSON, repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG,
         set_: Optional[list[str]] = SET,
         full: bool = typer.Option(False, "--full", help="Every note record (reflections, merges, ranking, apply "
                                                         "report, per-item scores) instead of the summary.")) -> None:
    """One step: verdict, val before → after, flipped items, edits with their rationale, diff, cost (--full: every
    note record). With a skill library: which skill, and that skill's file's diff."""
    from skillgit.library import views
    from skillgit.project import open_project
    from skillgit.store import read

    project = open_project(repo, config, list(set_ or []))
    store = views.store_for(project)
    detail = read.show(store, rev)
    skill = views.step_skill(store, detail, project.config)
    if skill is not None:  # the step's own skill file: its diff, its scores
        store = views.store_for(views.project_for(repo, config, skill, list(set_ or [])))
        detail = read.show(store, rev)
    if as_json:
        console.print_json({**detail.to_dict(), "skill": skill} if project.config.skills else detail.to_dict())
        return
    head = f"skill: {skill}\n" if skill is not None else ""
    if not full:
        from skillgit.review.show import summary

        _page(shown(head + summary(store, detail, rev)))
        return
    out = [head, f"commit {detail.sha}\n\n", *(f"    {line}\n" for line in detail.message.strip("\n").splitlines()),
           detail.diff or "(no change to the skill)\n"]
    if detail.notes or detail.corrupt_lines:
        out.append("\nnotes:\n")
        out += [_render_record(dict(record)) for record in detail.notes]
        if detail.corrupt_lines:
            out.append(f"({detail.corrupt_lines} corrupt note line(s) skipped: "
                       f"git notes --ref skillgit show {detail.sha[:12]})\n")
    from skillgit.review.show import skipped_text

    out.append(skipped_text(detail.skipped, detail.sha))
    _page(shown("".join(out)))


def _say_no_entries(store: Any, run: str | None, limit: int | None) -> None:
    """`log` found nothing: a run name nobody has is a typo, not an empty history."""
    if run is not None and run not in (known := store.list_runs()):
        raise SkillgitError(f"unknown run '{run}'", f"known runs: {', '.join(known[:5])}" if known
                            else "no run yet: start one with `skillgit train`")
    if limit != 0:
        _say("no training steps yet (run `skillgit train`)")


def _check_count(limit: int | None) -> None:
    if limit is not None and limit < 0:
        raise SkillgitError(f"-n/--max-count must be 0 or more, got {limit}", "e.g. -n 20: the newest 20 entries")


def _page(text: str) -> None:
    """Like git: through a pager when stdout is a terminal (`$MANPAGER`, `$PAGER`, else `less`), plainly otherwise.

    The standard library's pager, not click's: typer ≥ 0.2x vendors click without its pager and no longer
    installs the click package, so `import click` failed in a plain `pip install .`."""
    import sys

    if sys.stdout.isatty() and sys.stdin.isatty():
        import pydoc

        pydoc.pager(text)
    else:
        typer.echo(text, nl=False)


def diff(a: str = typer.Argument(..., help="From this revision."), b: str = typer.Argument(..., help="To this one."),
         repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG,
         set_: Optional[list[str]] = SET) -> None:
    """The unified diff of the skill between two revisions."""
    store = _store(repo, config, set_)
    typer.echo(shown(store.diff(store.resolve(a), store.resolve(b))), nl=False)


# ---------------------------------------------------------------------------------------------- rejected
def rejected(as_json: bool = JSON, limit: Optional[int] = typer.Option(None, "-n", "--max-count",
                                                                      help="Only the newest N."),
             repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG,
             set_: Optional[list[str]] = SET) -> None:
    """Rejected steps, newest first (archived ones too): what the negative buffer remembers."""
    _check_count(limit)
    entries = [e for e in reversed(_store(repo, config, set_).history()) if e.verdict == "rejected"]
    if limit is not None:
        entries = entries[:limit]
    if as_json:
        console.print_json([e.to_dict() for e in entries])
        return
    if not entries:
        if limit != 0:
            _say("no rejected steps")
        return
    rows = [[e.label + (" (archived)" if e.archived else ""), _num(e.score), _num(e.delta, True),
             e.reason + (" (corrupt note)" if e.note == "corrupt" else ""), "; ".join(e.edits) or "–"]
            for e in entries]
    _table(["step", "val", "Δ", "reason", "edits"], rows, right=(1, 2))


# ---------------------------------------------------------------------------------------------- revert / export
WAIT = typer.Option(None, "--wait", metavar="[SECONDS]",
                    help="While a training run holds the skill branch's lock, wait for it to end (up to SECONDS; "
                         "no limit without a number) instead of refusing with exit 6.")


def wait_seconds(value: Optional[str]) -> float:
    """Seconds to wait for the run lock from `--wait [SECONDS]` (0: none); `main()` has written a bare `--wait` as
    `--wait=forever` (no limit)."""
    import math

    if value is None:
        return 0.0
    if value == "forever":
        return math.inf
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not seconds >= 0:  # (also NaN)
        raise SkillgitError(f"--wait takes a number of seconds, not {value!r}",
                            "e.g. --wait 60, or --wait alone to wait as long as the run takes")
    return seconds


def _waiting(message: str) -> None:
    _say(f"waiting for the lock: {message} (Ctrl-C stops waiting)")


@contextmanager
def _lock_hint(command: str, seconds: float) -> Iterator[None]:
    """A refusal because a run holds the lock (exit 6) also names `--wait`."""
    from skillgit.errors import ExitCode

    try:
        yield
    except SkillgitError as exc:
        if exc.code != ExitCode.LOCKED or seconds:
            raise
        raise SkillgitError(exc.message, f"{exc.hint}; or let it wait for the run: skillgit {command} --wait",
                            ExitCode.LOCKED) from None


def revert(rev: Optional[str] = typer.Argument(None, help="Undo this step (default: the newest commit)."),
           to: Optional[str] = typer.Option(None, "--to", help="Restore the skill as it was at this revision."),
           steps: Optional[int] = typer.Option(None, "--steps", help="Go back N accepted steps."),
           reason: str = typer.Option("manual revert", "--reason", help="Why (kept in the commit and its note)."),
           wait: Optional[str] = WAIT, repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG,
           set_: Optional[list[str]] = SET) -> None:
    """Add a commit that restores an earlier skill (history is never rewritten). Refused while a run trains the
    branch (exit 6) unless --wait."""
    seconds = wait_seconds(wait)
    if rev is None and to is None and steps is None and wait not in (None, "forever"):
        # `revert --wait 3`: three seconds, or step 3? Never guess which commit to undo.
        raise SkillgitError(f"`--wait {wait}` with nothing named to revert is ambiguous",
                            f"name it: `skillgit revert {wait} --wait` (step {wait}, no time limit), or "
                            f"`skillgit revert HEAD --wait {wait}` / `--steps 1 --wait {wait}`")
    store = _store(repo, config, set_)
    if rev is None and to is None and steps is None:
        rev = store.tip()
        if not store.repo.parents(rev):  # a fresh project: the commit that added the skill, nothing before it
            from skillgit.errors import GitStateError

            raise GitStateError(f"nothing to revert: '{store.branch}' has one commit ({rev[:12]}), with nothing "
                                "before it", "train first (`skillgit train`); `skillgit log` lists what can be undone")
    if sum(x is not None for x in (rev, to, steps)) != 1:
        raise SkillgitError("give only one of <rev>, --to REV or --steps N",
                            "e.g. `skillgit revert --steps 1` undoes the last accepted step")
    with _lock_hint("revert", seconds):
        sha = store.revert(rev=rev, to=to, steps=steps, reason=reason, wait=seconds, on_wait=_waiting)
    typer.echo(sha)
    _say(f"reverted: '{store.branch}' is now {sha[:12]}")


def export(rev: str = typer.Argument(..., help="The revision to export."),
           path: str = typer.Argument(..., help="Destination file, folder (a trailing / makes one), or - for "
                                                "stdout."),
           repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG,
           set_: Optional[list[str]] = SET) -> None:
    """Write the skill as it was at a revision to a file, a folder (made when missing; a trailing / names one),
    or `-` (stdout)."""
    store = _store(repo, config, set_)
    if path == "-":
        typer.echo(store.read_skill(store.resolve(rev)), nl=False)
        return
    dest = Path(path)
    if path.endswith(("/", "\\")) or store.is_package:
        dest.mkdir(parents=True, exist_ok=True)
    typer.echo(str(store.export(rev, dest)))


# ---------------------------------------------------------------------------------------------- sharing / gc
def push(remote: str = typer.Argument("origin", help="Remote name, path or URL."),
         repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG,
         set_: Optional[list[str]] = SET) -> None:
    """Push the skill branch, rejected tags, notes (merged first), runs and archive; never forces."""
    from skillgit.store.refs import check_remote

    check_remote(remote)  # (`--upload-pack=…` would run a command): refused before anything runs
    report = _store(repo, config, set_).push(remote)
    _say(f"pushed to {remote}: branch {report.branch}" + (", notes merged" if report.notes_merged else ""))


def pull(remote: Optional[str] = typer.Argument(None, help="Remote name, path or URL (default: origin)."),
         wait: Optional[str] = WAIT, repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG,
         set_: Optional[list[str]] = SET) -> None:
    """Fetch and integrate: branch fast-forward only, notes merged, tags and runs added. Refused while a run
    trains the branch (exit 6) unless --wait."""
    from skillgit.store.refs import check_remote

    seconds = wait_seconds(wait)
    remote = check_remote(remote or "origin")  # refused before anything runs
    with _lock_hint("pull", seconds):
        report = _store(repo, config, set_, track=remote).pull(remote, wait=seconds, on_wait=_waiting)
    extra = (", notes merged" if report.notes_merged else "") + (f", runs {', '.join(report.runs)}"
                                                                 if report.runs else "")
    _say(f"pulled from {remote}: branch {report.branch}, {report.tags} new rejected tag(s){extra}")
    for ref in report.conflicts:
        _say(f"kept local {ref}: it changed on both sides")


def gc(keep: int = typer.Option(20, "--keep", help="How many recent rejected tags stay as tags."),
       repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG,
       set_: Optional[list[str]] = SET) -> None:
    """Fold old rejected tags into one archive ref (still listed by `rejected`) and pack refs."""
    from skillgit.llm.cache import CallCache
    from skillgit.session import journal_path
    from skillgit.store import read

    store = _store(repo, config, set_)
    report = store.gc(keep)
    _say(f"folded {report.folded} rejected tag(s) into refs/skillgit/archive; {report.kept} kept as tags")
    # The call journal only has to make unfinished runs resumable for free: drop what finished runs paid for.
    path = journal_path(store)
    if path.exists():
        unfinished = {run for run in read.runs(store) if read.run_progress(store, run).status != "finished"}
        pruned = CallCache(path).prune(unfinished)
        path.with_name("calls.jsonl.imported").unlink(missing_ok=True)
        _say(f"call journal: dropped {pruned.entries_deleted} call(s) of finished runs, kept "
             f"{pruned.entries_kept}; {pruned.bytes_freed / 1e6:.1f} MB freed")


def register(app: typer.Typer) -> None:
    for name, fn in (("init", init), ("log", log), ("show", show), ("diff", diff), ("rejected", rejected),
                     ("revert", revert), ("export", export), ("push", push), ("pull", pull), ("gc", gc)):
        app.command(name)(fn)

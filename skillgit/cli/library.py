"""CLI for skill libraries: `train --all` (called from `train`), and `tasks suggest`."""

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from skillgit import console
from skillgit.errors import ExitCode, Interrupted, SkillgitError
from skillgit.textsafe import shown


def train_all(repo: Optional[Path], config: Optional[Path], overrides: list[str], *, run: Optional[str],
              resume: bool, as_json: bool, events: bool, again: tuple[Any, Any], excluded: tuple[Any, ...]) -> None:
    """`skillgit train --all` (see `library.all`). `again`: the `--set` and `--cfg-options` values to repeat in a
    resume hint; `excluded`: --skill, --branch, --dry-run (refused with --all)."""
    from skillgit.library import all as lib_all
    from skillgit.project import open_project
    from skillgit.session import build_trainer, open_session

    if any(excluded):
        raise SkillgitError("--all trains every library skill; it excludes --skill, --branch and --dry-run",
                            "drop them, or train one skill with --skill NAME")
    sets, cfg_options = again
    repeat = [w for s in sets or [] for w in ("--set", s)] + [w for s in cfg_options or [] for w in
                                                              ("--cfg-options", s)]
    repeat += (["-C", str(repo)] if repo is not None else []) + (["--config", str(config)] if config else [])

    base = open_project(repo, config, overrides)
    git_dir = _git_dir(base)
    run_id = run or (lib_all.newest_unfinished(git_dir) if resume else None) or lib_all.new_run_id()
    from skillgit.store.refs import validate_run

    validate_run(run_id)
    lib = lib_all.plan(base.root, base.config, overrides, run_id,
                       lambda extra: open_project(repo, config, extra))
    hint = shlex.join(["skillgit", "train", "--all", "--run", run_id, *repeat])
    for name, why in lib.skipped.items():
        console.info(f"{name}: not trained: {why}")

    def one_turn(skill: str, extra: list[str], skill_run: str) -> tuple[Any, Any]:
        from skillgit.library import config as lib_config

        entry = lib_config.entry(base.config, skill, base.root)
        project = open_project(repo, config, lib_config.overrides(entry) + overrides + extra)
        session = open_session(project)
        if events:
            trainer = build_trainer(session, run_id=skill_run, resume=True, on_event=_json_event(skill))
            return trainer.train(), trainer.progress
        from skillgit.cli.progress import RunDisplay

        display = RunDisplay(console.err)
        trainer = build_trainer(session, run_id=skill_run, resume=True, on_event=display.handle)
        with display:
            result = trainer.train()
        return result, trainer.progress

    def on_turn(state: Any) -> None:
        line = {"event": "library_turn", "run": run_id, "skill": state.name, "step": state.turn,
                "total_steps": state.total}
        if events:
            sys.stderr.write(json.dumps(line) + "\n")
            sys.stderr.flush()
        else:
            console.info(f"{state.name}: step {state.turn}/{state.total} (run {state.run})")

    try:
        lib = lib_all.run_all(lib, base.config.budget, lib_all.Turn(one_turn, on_turn), git_dir)
    except (Interrupted, KeyboardInterrupt) as exc:
        if isinstance(exc, Interrupted):
            exc.hint = f"resume the library run with: {hint}"
            raise
        raise Interrupted("interrupted", f"resume the library run with: {hint}") from None
    if as_json:
        console.print_json(lib.to_dict())
    else:
        console.out.print(_table(lib, base.config.evaluation.gate_metric))
        console.out.print(f"library run {lib.run}: {lib.status} ({shown(lib.reason)}); round-robin over "
                          f"{len(lib.skills)} skill(s)", markup=False, highlight=False)
    if lib.status == "stopped":
        console.info(f"continue it with: {hint}")
        raise typer.Exit(int(ExitCode.BUDGET))


def train_activation_all(project: Any, *, run: Optional[str], as_json: bool, excluded: tuple[Any, ...]) -> None:
    """`skillgit train --all --activation` (see `library.run.run_activation_all`): every skill's description,
    round-robin, one budget, each step gated with the interference check. Exit 5 when the budget stopped it."""
    from skillgit.library.run import run_activation_all

    if any(excluded):
        raise SkillgitError("--all trains every library skill; it excludes --skill, --branch and --dry-run",
                            "drop them, or train one skill with --skill NAME --activation")

    def say(skill: str, rec: Any) -> None:
        v = rec.verdict
        console.err.print(f"{skill} step {rec.step}: {'accepted' if v.accept else f'rejected ({v.stage})'} "
                          f"{rec.commit[:12]}: {shown(v.reason)}", markup=False, highlight=False)

    out = run_activation_all(project.root, project.config, steps=project.config.train.max_steps or 4, run=run,
                             on_step=say)
    data = out.to_dict()
    for name, why in out.skipped.items():
        console.info(f"{name}: not trained: {why}")
    if as_json:
        console.print_json(data)
    else:
        for name, one in data["skills"].items():
            f1 = ("no candidate was scored" if one["f1_before"] is None
                  else f"val F1 {one['f1_before']:.2f} → {one['f1_after']:.2f}")
            console.out.print(f"{name}: {f1} after {one['steps']} step(s): {one['accepted']} accepted, "
                              f"{one['rejected']} rejected (run {one['run']})", markup=False, highlight=False)
        console.out.print(f"activation run {out.run}: {out.status}" + (f" ({shown(out.reason)})" if out.reason
                                                                         else "") + "; round-robin over "
                          f"{len(out.skills)} skill(s)", markup=False, highlight=False)
    if out.status == "stopped":
        raise typer.Exit(int(ExitCode.BUDGET))


def _git_dir(project: Any) -> Path:
    """The repository's git dir, through the library's first skill (skill.path may name no file in a library)."""
    from skillgit.library import config as lib_config
    from skillgit.store import Store

    found = list(lib_config.entries(project.config, project.root).values())
    if not found:
        raise SkillgitError("--all: skillgit.yaml has no `skills:` section",
                            "list the library's skills under `skills:` (name → path, tasks, triggers)",
                            ExitCode.USAGE)
    first = found[0]
    path = first.path if first.path.endswith("SKILL.md") else f"{first.path.rstrip('/')}/SKILL.md"
    return Store.open(project.root, path, first.branch or project.config.skill.branch).git_dir


def _json_event(skill: str) -> Any:
    def sink(event: Any) -> None:
        sys.stderr.write(json.dumps({**event.to_dict(), "skill": skill}, default=str) + "\n")
        sys.stderr.flush()
    return sink


def _table(lib: Any, metric: str) -> Any:
    from rich.table import Table

    table = Table(title=f"library run {lib.run} (round-robin, one budget)", title_justify="left")
    for col in ("skill", "run", "steps", "accepted", "rejected", f"val {metric}", "calls", "status"):
        table.add_column(col, justify="right" if col in ("steps", "accepted", "rejected", "calls") else "left")

    def val(scores: dict, key: str) -> str:
        v = (scores.get(key) or {}).get("val")
        return "-" if v is None else f"{v:.3f}"

    for s in lib.skills.values():
        table.add_row(s.name, s.run, f"{s.done}/{s.total}", str(s.accepted), str(s.rejected),
                      f"{val(s.scores, 'seed')} → {val(s.scores, 'final')}", str(s.usage.calls), s.status)
    for name in lib.skipped:
        table.add_row(name, "-", "-", "-", "-", "-", "-", "skipped")
    return table


def suggest(skill: str = typer.Option(..., "--skill", help="The library skill to draft for (`skills:`)."),
            out: Path = typer.Option(Path("tasks/suggested"), "--out",
                                     help="Folder (in the repository) for the draft files; files are never "
                                          "overwritten."),
            count: int = typer.Option(6, "--count", min=1, max=50, help="At most this many of each kind."),
            as_json: bool = typer.Option(False, "--json", help="Print the drafts as JSON on stdout."),
            repo: Optional[Path] = typer.Option(None, "--repo", "-C", help="The repository."),
            config: Optional[Path] = typer.Option(None, "--config", help="Config file (default: skillgit.yaml "
                                                                          "at the repository root)."),
            set_: Optional[list[str]] = typer.Option(None, "-c", "--set", "-s", help="Set a config key, as git -c "
                                                     "does: -c model.teacher_model=NAME (repeatable).")) -> None:
    """Draft trigger cases (should fire / near-miss decoys from the other skills) and body tasks for a skill, as
    files for a person to review: nothing trains on them before `skillgit tasks approve FILE`."""
    from skillgit.library import suggest as S
    from skillgit.library import views
    from skillgit.library.config import _relative
    from skillgit.library.views import skill_file
    from skillgit.project import open_project

    project = open_project(repo, config, set_ or [])
    found = views.library(project.config, project.root)
    entry = views.lib_config.entry(project.config, skill, project.root)
    text = (project.root / skill_file(entry.path)).read_text(encoding="utf-8")
    others = {}
    for name, e in found.items():
        if name != skill:
            try:
                others[name] = (project.root / skill_file(e.path)).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue  # an unreadable skill offers no decoys
    folder = project.root / _relative(str(out), "--out") if not out.is_absolute() else out
    try:
        folder.resolve().relative_to(project.root.resolve())
    except ValueError:
        raise SkillgitError(f"--out {out} is outside the repository", "give a folder inside it") from None
    drafter: Any
    if project.config.model.teacher_backend == "simulated":
        drafter = S.SimulatedSuggester()
    else:
        from skillgit.llm import factory

        drafter = S.LLMSuggester(factory.build_teacher(project.config, project.root))
    drafts = drafter.draft(skill, text, others, count)
    triggers, tasks = S.trigger_rows(skill, drafts), S.task_rows(skill, drafts)
    paths = {"triggers": folder / f"{skill}.triggers.jsonl", "tasks": folder / f"{skill}.tasks.jsonl"}
    for key in paths:
        if paths[key].exists():
            raise SkillgitError(f"{paths[key]} exists; drafts never overwrite a file",
                                "review and move (or delete) it first, or pass --out another folder")
    written = {}
    for key, rows in (("triggers", triggers), ("tasks", tasks)):
        if rows:
            S.write_new(paths[key], rows)
            written[key] = paths[key].relative_to(project.root).as_posix()
    if as_json:
        console.print_json({"skill": skill, "author": drafts.author, "files": written, "reviewed": False,
                            "triggers": triggers, "tasks": tasks})
    else:
        for path in written.values():
            typer.echo(path)
    fire = sum(1 for r in triggers if r["should_trigger"])
    console.info(f"DRAFTS by the {drafts.author}, NOT reviewed: {fire} should-fire and {len(triggers) - fire} "
                 f"should-not-fire trigger case(s), {len(tasks)} body task(s) (no expected answers: add them, or "
                 "keep each rubric for a judge)")
    console.info(f"read and fix each, then `skillgit tasks approve FILE`, and point skills.{skill}.triggers / "
                 f".tasks at them; training refuses them until then")


def approve(file: Path = typer.Argument(..., help="A draft file you have read (from `skillgit tasks suggest`).")
            ) -> None:
    """Mark every draft row of FILE as reviewed, after you have read and fixed it (training refuses unreviewed
    drafts)."""
    from skillgit.library import suggest as S

    if not file.is_file():
        raise SkillgitError(f"no such file: {file}", "give the path `skillgit tasks suggest` printed")
    count = S.approve(file)
    console.info(f"{file}: {count} draft row(s) marked reviewed" if count else f"{file}: no unreviewed draft row")


def register(app: typer.Typer) -> None:
    tasks_app = typer.Typer(help="Task sets: draft trigger cases and body tasks for a library skill, for review.",
                            no_args_is_help=True)
    tasks_app.command("suggest")(suggest)
    tasks_app.command("approve")(approve)
    app.add_typer(tasks_app, name="tasks")


def library_status(store: Any, cfg: Any, as_json: bool, status_info: Any) -> None:
    """`skillgit status` in a library project: each skill's newest run, one row per skill (`--skill NAME` for one
    run's full status); `status_info`: `status --json`'s record of one run."""
    from skillgit.library import views
    from skillgit.store import read

    skills = views.library(cfg, store.repo.root)
    newest: dict[str, str] = {}
    by_run = views.run_skills(store, store.list_runs(), cfg)  # newest first
    for run_id, name in by_run.items():
        newest.setdefault(name, run_id)
    info: dict[str, Any] = {}
    for name in skills:
        if name in newest:
            progress = views.with_own_total(store, read.run_progress(store, newest[name]))
            vals = [e.score for e in store.history(progress.run) if e.verdict in ("seed", "accepted")]
            info[name] = status_info(progress, vals)
        else:
            info[name] = None
    if as_json:
        console.print_json({"skills": info})
        return
    from rich.table import Table

    table = Table(title="skills (skillgit status --skill NAME for one run in full)", title_justify="left")
    for col in ("skill", "run", "status", "step", "✓", "✗", "val", "seed val", "calls"):
        table.add_column(col, justify="right" if col in ("step", "✓", "✗", "val", "seed val", "calls") else "left")
    for name, i in info.items():
        if i is None:
            table.add_row(name, "-", "no run yet", "-", "-", "-", "-", "-", "-")
            continue
        val = "-" if i["val"] is None else f"{i['val']:.4f}"
        seed = "-" if i["seed_val"] is None else f"{i['seed_val']:.4f}"
        table.add_row(name, shown(i["run"]), shown(str(i["status"])), f"{i['step']}/{i['total_steps']}",
                      str(i["accepted"]), str(i["rejected"]), val, seed, str(i["calls"]))
    console.out.print(table)


def with_skill(request: Any, skill: Optional[str], path: str) -> Any:
    """A pull request of a library skill's run says which skill (the title names its file)."""
    import dataclasses

    return dataclasses.replace(request, body=f"**Skill:** `{skill}` (`{path}`)\n\n{request.body}") if skill \
        else request


def review_target(repo: Optional[Path], config: Optional[Path], run: Optional[str], skill: Optional[str],
                  sets: Optional[list[str]] = None) -> tuple[Any, Any, Optional[str], Optional[str]]:
    """(project, store, run, skill) for `report` / `pr`: with a library, the run's own skill (its file, its
    tasks); `--skill NAME` without a run: that skill's newest run."""
    from skillgit.library import views

    project = views.project_for(repo, config, skill, list(sets or []))
    store = views.store_for(project)
    if not project.config.skills:
        return project, store, run, None
    if skill and not run:
        run = views.newest_run(store, project.config, skill)
        if run is None:
            raise SkillgitError(f"skill {skill!r} has no training run yet",
                                f"start one: skillgit train --skill {skill}")
    if not skill:
        runs = store.list_runs()
        skill = views.run_skill(store, run or (runs[0] if runs else ""), project.config)
        if skill is not None:
            project = views.project_for(repo, config, skill, list(sets or []))
            store = views.store_for(project)
    return project, store, run, skill


def check_library(repo: Optional[Path], config: Optional[Path], sets: list[str], *, base: Optional[str],
                  with_test: bool, as_json: bool) -> int:
    """`skillgit check` in a library project: each skill with its own `tasks` is checked against its own val split
    (its file at HEAD vs the base); the result is grouped by skill, and the exit code is the worst (1 regression,
    else 2 cannot judge, else 0)."""
    from skillgit.cli.progress import RunDisplay
    from skillgit.library import views
    from skillgit.review.check import refuse_commit_in_progress, render_markdown, run_check
    from skillgit.session import open_session

    project = views.project_for(repo, config, None, sets)
    results: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    for name, entry in views.library(project.config, project.root).items():
        if not entry.tasks:
            skipped[name] = "no `tasks` of its own: not checked"
            continue
        session = open_session(views.project_for(repo, config, name, sets), roles=("student",))
        refuse_commit_in_progress(session.store, os.environ, Path.cwd())
        display = RunDisplay(console.err)
        with display:
            results[name] = run_check(session, base=base, with_test=with_test, progress=display.progress_callback)
    codes = [r.exit_code for r in results.values()]
    code = 1 if 1 in codes else 2 if 2 in codes else 0
    if as_json:
        console.print_json({"skills": {k: v.to_dict() for k, v in results.items()}, "skipped": skipped,
                            "exit_code": code})
    else:
        parts = [f"## skill: {name}\n\n{render_markdown(r)}" for name, r in results.items()]
        parts += [f"## skill: {name}\n\n{why}\n" for name, why in skipped.items()]
        typer.echo(shown("\n".join(parts)), nl=False)
    for name, r in results.items():
        console.info(f"check {name}: {r.verdict} (exit {r.exit_code})")
    return code

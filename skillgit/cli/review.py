"""CLI: `report`, `pr`, `check` — review what training learned, and gate human edits to the skill in CI.

Thin wrappers over `skillgit.review`: data (HTML path, PR body, Markdown table, JSON with --json) on stdout,
messages on stderr. `check` exits 0 (no regression), 1 (regression) or 2 (cannot judge); every other expected
failure is a SkillgitError with its usual exit code.
"""

import os
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from skillgit import console
from skillgit.errors import SkillgitError
from skillgit.textsafe import shown

REPO = typer.Option(None, "--repo", "-C", help="The repository (default: the one around the current folder).")
CONFIG = typer.Option(None, "--config", help="Config file (default: skillgit.yaml at the repository root).")
SET = typer.Option(None, "-c", "--set", "-s",
                   help="Set a config key, as git -c does: -c evaluation.gate_repeats=1 (repeatable).")
JSON = typer.Option(False, "--json", help="Print JSON on stdout.")
SKILL = typer.Option(None, "--skill", help="A skill library (`skills:`): this skill (its newest run, its file and "
                                           "tasks).")


def _say(message: str) -> None:
    console.info(escape(shown(message)))


def _split_sizes(project) -> dict[str, int]:
    """Items per split (the n of the uncertainty intervals); empty when the tasks cannot be read here."""
    from skillgit.tasks import load_splits

    try:
        splits = load_splits(project.config.env, project.root)
    except (SkillgitError, OSError, ValueError):
        return {}
    return {"train": len(splits.train), "val": len(splits.val), "test": len(splits.test)}


# ---------------------------------------------------------------------------------------------- report
def report(run: Optional[str] = typer.Argument(None, help="The run (default: the newest)."),
           output: Optional[Path] = typer.Option(None, "--output", "-o",
                                                 help="The HTML file (default: skillgit-report-<run>.html here)."),
           renderer: str = typer.Option("auto", "--renderer", help="Charts: auto | matplotlib | builtin."),
           repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG, set_: Optional[list[str]] = SET,
           skill: Optional[str] = SKILL) -> None:
    """Write a self-contained HTML report of a run: scores, per-item val heatmap, every decision, cost."""
    from skillgit.cli.library import review_target
    from skillgit.report import write_report
    from skillgit.review import data

    project, store, run, skill = review_target(repo, config, run, skill, set_)
    review = data.load_run(store, run, split_sizes=_split_sizes(project))
    page = data.to_run_report(review, project=project.root.name, skill_path=store.skill_path)
    path = write_report(page, output or data.default_report_path(review.run), renderer)  # type: ignore[arg-type]
    typer.echo(str(path))
    of = f" (skill {skill})" if skill else ""
    _say(f"wrote the report of run {review.run}{of} ({len(review.decisions)} decisions) to {path}")


# ---------------------------------------------------------------------------------------------- pr
def pr(run: Optional[str] = typer.Option(None, "--run", help="The run (default: the newest)."),
       base: Optional[str] = typer.Option(None, "--base", help="The branch to merge into (default: the branch the "
                                                               "run's --branch started from, else skill.branch)."),
       head: Optional[str] = typer.Option(None, "--head", help="The branch with the learned edits (default: the "
                                                               "branch the run trained onto); a local branch, or a "
                                                               "remote's without --push."),
       body_file: Optional[Path] = typer.Option(None, "--body-file", help="Write the body here instead of stdout."),
       push: Optional[str] = typer.Option(None, "--push", help="Push the head branch (and skillgit's notes, tags and "
                                                               "runs) to this remote first."),
       gh: bool = typer.Option(False, "--gh", help="Open the pull request with `gh pr create`."),
       as_json: bool = JSON, repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG,
       set_: Optional[list[str]] = SET, skill: Optional[str] = SKILL) -> None:
    """Write a pull-request body with the evidence for a run's learned edits (and optionally open the PR)."""
    import shutil

    from skillgit.review import data
    from skillgit.review import pr as pr_mod
    from skillgit.store import refs as R

    # Names typed here reach git (push) and gh argvs and the body: checked before anything runs.
    for name, what in ((head, "--head branch"), (base, "--base branch")):
        if name is not None:
            R.check_branch(name, what)
    if push is not None:
        R.check_remote(push)
    from skillgit.cli.library import review_target, with_skill

    project, store, run, skill = review_target(repo, config, run, skill, set_)
    review = data.load_run(store, run, split_sizes=_split_sizes(project), diff_of=lambda d: d.accepted)
    head = R.check_branch(head or review.head, "head branch (the branch the run trained onto)")
    pr_mod.check_head(store, head, push=push is not None)  # before a body is printed or written
    given = base is not None
    base = R.check_branch(base or review.base or project.config.skill.branch,
                          "base branch (recorded in the run's notes)")
    pr_mod.check_base(store, base, given=given)
    pr_mod.check_distinct(review.run, head, base)  # with or without --gh: such a body can never be a PR
    request = with_skill(pr_mod.build(review, base=base, head=head, skill_path=store.skill_path), skill,
                         store.skill_path)
    if gh:
        body_file = body_file or store.git_dir / "skillgit" / "pr" / f"{review.run}.md"
    if body_file is not None:
        body_file.parent.mkdir(parents=True, exist_ok=True)
        body_file.write_text(request.body, encoding="utf-8")
        _say(f"wrote the pull-request body to {body_file}")
    if gh and shutil.which("gh") is None:  # before pushing anything
        raise SkillgitError("`gh` (the GitHub CLI) is not installed or not on PATH",
                            f"{pr_mod.GH_INSTALL_HINT}; the body is ready in {body_file}")
    if push:
        sync = pr_mod.push_head(store, head, push)
        _say(f"pushed '{head}' to {push} ({sync.branch})")
    if gh and body_file is not None:
        typer.echo(pr_mod.create_with_gh(request, body_file, project.root).strip())
    elif as_json:
        console.print_json(request.to_dict())
    elif body_file is None:
        typer.echo(request.body, nl=False)


# ---------------------------------------------------------------------------------------------- check
def check(base: Optional[str] = typer.Option(None, "--base", help="Compare against this revision (default: the "
                                                                  "merge-base with the skill branch, or HEAD~1)."),
          as_json: bool = JSON,
          test: bool = typer.Option(True, "--test/--no-test", help="Also score test (reported, never decisive)."),
          print_workflow: bool = typer.Option(False, "--print-workflow",
                                              help="Print the GitHub Actions workflow that runs this check, "
                                                   "filled in from this project's config."),
          set_: Optional[list[str]] = SET, repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG,
          skill: Optional[str] = typer.Option(None, "--skill", help="A skill library (`skills:`): check only this "
                                                                    "skill (default: each skill with its own "
                                                                    "tasks, grouped by skill).")) -> None:
    """Gate a human edit: score the skill at HEAD against a base on val with the training gate's rules.
    Exit 0: no regression; 1: regression; 2: cannot judge."""
    from skillgit.library import views
    from skillgit.project import open_project

    if print_workflow:  # filled from this project's config; the install pinned to this skillgit's source
        from skillgit.provenance import source
        from skillgit.review.workflow import install_warning, render_for

        typer.echo(render_for(open_project(repo, config, set_ or [])), nl=False)
        if warning := install_warning(source()):
            console.info(escape(f"warning: {warning}"))
        return
    from skillgit.cli.progress import RunDisplay
    from skillgit.review.check import refuse_commit_in_progress, render_markdown, run_check
    from skillgit.session import open_session

    if skill is None and open_project(repo, config, set_ or []).config.skills:
        from skillgit.cli.library import check_library

        raise typer.Exit(check_library(repo, config, set_ or [], base=base, with_test=test, as_json=as_json))
    session = open_session(views.project_for(repo, config, skill, set_ or []), roles=("student",))
    refuse_commit_in_progress(session.store, os.environ, Path.cwd())
    display = RunDisplay(console.err)
    with display:
        result = run_check(session, base=base, with_test=test, progress=display.progress_callback)
    if as_json:
        console.print_json(result.to_dict())
    else:
        typer.echo(shown(render_markdown(result)), nl=False)
    _say(f"check: {result.verdict} (exit {result.exit_code})")
    raise typer.Exit(result.exit_code)


def register(app: typer.Typer) -> None:
    app.command("report")(report)
    app.command("pr")(pr)
    app.command("check")(check)

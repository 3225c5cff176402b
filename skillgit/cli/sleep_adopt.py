"""CLI: `skillgit sleep adopt` — bring a reviewed night's branch into the skill branch (fast-forward, or `--merge`)
or propose it as a pull request (`--pr`), or print the git commands (`--print`). Registered on `sleep_app`
(`cli/sleep_options.py`, shared with `cli/sleep.py`, which imports this module).
"""

from pathlib import Path
from typing import Any, Optional

import typer

from skillgit import console
from skillgit.cli.sleep_options import CONFIG, JSON, REPO, say, sleep_app, sleep_project
from skillgit.errors import SkillgitError


@sleep_app.command("adopt")
def adopt_cmd(date: Optional[str] = typer.Argument(None, help="The night (default: the newest night with accepted "
                                                               "steps)."),
              repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG,
              print_: bool = typer.Option(False, "--print", help="Print the git commands and the pull-request body "
                                                                 "instead of adopting."),
              merge: bool = typer.Option(False, "--merge", help="When the skill branch moved on: a merge commit "
                                                                "(refused on conflicts; never a dirty worktree)."),
              pr: bool = typer.Option(False, "--pr", help="Propose the night as a pull request instead: print its "
                                                          "body (the night's report), or open it with --gh."),
              gh: bool = typer.Option(False, "--gh", help="With --pr: open it with `gh pr create`."),
              push: Optional[str] = typer.Option(None, "--push", help="With --pr: push the night's branch (with "
                                                                      "skillgit's notes) to this remote first."),
              as_json: bool = JSON) -> None:
    """Bring a reviewed night's branch into the skill branch: fast-forward, --merge, or propose it with --pr."""
    from skillgit.sleep import adopt as A
    from skillgit.sleep.night import shown_path
    from skillgit.sleep.report import render

    if (gh or push) and not pr:
        raise SkillgitError("--gh and --push go with --pr", "e.g. `skillgit sleep adopt --pr --push origin --gh`")
    if pr and merge:
        raise SkillgitError("--pr and --merge exclude each other", "propose the night (--pr) or adopt it (--merge)")
    from skillgit.library.config import entries
    from skillgit.sleep.night import own_store

    sp = sleep_project(repo, config)
    cfg = sp.config
    store = own_store(sp, entries(cfg, sp.root))  # (a library's skill.path may name no file)
    night = _night_to_adopt(store.repo, date)
    branch = night.branch if night is not None and night.branch else \
        sp.settings.branch_for(date or "", cfg.skill.branch)
    the_date = night.date if night is not None else (date or "")
    report = sp.path(sp.settings.report_dir) / f"{the_date}.md"
    plan = A.plan(store, branch, the_date, shown_path(report, sp.root) if report.is_file() else None)
    body = render(night) if night is not None else ""
    if print_:
        _print_plan(plan, body, as_json)
    elif pr:
        _propose(sp, store, plan, body, gh=gh, push=push, as_json=as_json)
    else:
        _adopt(store, plan, night, merge=merge, as_json=as_json)


def _print_plan(plan: Any, body: str, as_json: bool) -> None:
    """`adopt --print`: the git commands (and the night's report) instead of adopting."""
    if as_json:
        console.print_json({**plan.to_dict(), "body": body})
        return
    typer.echo("\n".join(plan.commands))
    if body:
        typer.echo("\n" + body)


def _adopt(store: Any, plan: Any, night: Any, *, merge: bool, as_json: bool) -> None:
    """Move the skill branch to the night's (fast-forward or --merge), mark the night adopted, say what moved."""
    from skillgit.sleep import adopt as A
    from skillgit.sleep import state as S
    from skillgit.sleep.night import LOCK

    tip = A.adopt(store, plan, merge=merge)
    if night is not None and not plan.up_to_date:
        with store.lock(LOCK):
            S.mark_adopted(store.repo, night, tip)
    if as_json:
        console.print_json({**plan.to_dict(), "tip": tip, "merged": not plan.fast_forward and not plan.up_to_date})
        return
    if plan.up_to_date:
        typer.echo(f"{plan.skill_branch} already contains {plan.branch}: nothing to adopt")
    else:
        how = f"fast-forward to {plan.branch}" if plan.fast_forward else f"merge commit of {plan.branch}"
        typer.echo(f"{plan.skill_branch}: {plan.skill_tip[:12]} → {tip[:12]} ({how})")


def _propose(sp: Any, store: Any, plan: Any, body: str, *, gh: bool, push: Optional[str], as_json: bool) -> None:
    """`adopt --pr`: the pull request `skillgit pr` would open for the night (body: the night's report)."""
    import shutil

    from skillgit.review import pr as pr_mod

    if plan.up_to_date:
        raise SkillgitError(f"{plan.skill_branch} already contains {plan.branch}: there is nothing to propose",
                            "see `skillgit sleep status`")
    request = pr_mod.PullRequest(f"sleep-{plan.date}", plan.skill_branch, plan.branch,
                                 f"skillgit sleep: night of {plan.date}", body)
    body_file = store.git_dir / "skillgit" / "pr" / f"sleep-{plan.date}.md"  # never in the working tree
    if gh:
        body_file.parent.mkdir(parents=True, exist_ok=True)
        body_file.write_text(request.body, encoding="utf-8")
        if shutil.which("gh") is None:  # before pushing anything
            raise SkillgitError("`gh` (the GitHub CLI) is not installed or not on PATH",
                                f"{pr_mod.GH_INSTALL_HINT}; the body is ready in {body_file}")
    if push:
        sync = pr_mod.push_head(store, plan.branch, push)
        say(f"pushed '{plan.branch}' to {push} ({sync.branch})")
    if gh:
        typer.echo(pr_mod.create_with_gh(request, body_file, sp.root).strip())
    elif as_json:
        console.print_json(request.to_dict())
    else:
        typer.echo(request.body, nl=False)
        say(f"to open it: skillgit sleep adopt {plan.date} --pr --push origin --gh")


def _night_to_adopt(repo: Any, date: Optional[str]) -> Any:
    from skillgit.sleep import state as S

    if date:
        from skillgit.sleep.settings import check_date

        return S.night(repo, check_date(date))
    for day in reversed(S.load(repo).nights):
        record = S.night(repo, day)
        if record is not None and record.accepted and not record.adopted:
            return record
    raise SkillgitError("no night with accepted steps waits for adoption", "see `skillgit sleep status`")

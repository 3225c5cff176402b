"""CLI: `skillgit approve` — what training started by an agent (the MCP `train` tool) may run here.

A thin wrapper over `skillgit.sleep.approval_train`: every command a run would take from the configuration or the
task set, each whole, with the repository files it runs (name and short digest), marked when not approved on this
machine, on stdout (`--json`: one object); `--yes` approves them, `--revoke` withdraws them; progress on stderr.
"""

from pathlib import Path
from typing import Any, Optional

import typer

from skillgit import console
from skillgit.cli.sleep_approval import say_legacy, show_files
from skillgit.cli.sleep_options import CONFIG, JSON, REPO, say
from skillgit.errors import SkillgitError
from skillgit.textsafe import shown


def approve(repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG,
            yes: bool = typer.Option(False, "--yes", help="Approve, on this machine, every command shown."),
            revoke: bool = typer.Option(False, "--revoke", help="Withdraw their approval."),
            as_json: bool = JSON) -> None:
    """Show the commands an agent-started training run (the MCP `train` tool) would run — skillgit.yaml's (scorer,
    agent argv, endpoints) and the task set's agentic tasks' setup and verify commands — with the repository files
    they run; --yes approves them here. The MCP `train` tool refuses while one is not approved (an edited file they
    run is a new command); `skillgit train` typed by you needs no approval."""
    from skillgit.project import open_project
    from skillgit.sleep import approval
    from skillgit.sleep.approval_train import record, train_gate
    from skillgit.store.repository import open_repository

    if yes and revoke:
        raise SkillgitError("--yes and --revoke exclude each other", "give one of them")
    project = open_project(repo, config)
    gate = train_gate(project.root, project.config)
    if gate.error:
        raise SkillgitError(f"the task set cannot be read: {gate.error}", "fix it, then run `skillgit approve` again")
    if yes or revoke:
        git = open_repository(project.root)
        try:
            count = record(git.common_dir, gate, approve=yes)
        finally:
            git.close()
        gate = train_gate(project.root, project.config)
    recorded = approval.entries_in(project.root)
    rows: list[dict[str, Any]] = [
        {"what": f"skillgit.yaml {c.key}", "commands": [c.shown_text], "approved": c.approval_key in gate.approved,
         "files": [{"path": f.path, "digest": f.digest} for f in c.files],
         "changed": "" if c.approval_key in gate.approved else approval.changed(recorded, c.text_key, c.files)}
        for c in gate.config]
    rows += [{"what": f"task {t.task.id}", "commands": approval.commands(t.task), "approved": t.key in gate.approved,
              "files": [{"path": f.path, "digest": f.digest} for f in t.files],
              "changed": "" if t.key in gate.approved else approval.changed(recorded, approval.text_key(t.task),
                                                                            t.files)}
             for t in gate.tasks]
    if as_json:
        console.print_json({"commands": rows, "approved": not gate.missing()})
    else:
        for r in rows:  # each shown whole: what an agent-started run would execute
            typer.echo(shown(f"{r['what']}{'' if r['approved'] else ' (not approved)'}:", multiline=False))
            for command in r["commands"]:
                typer.echo(shown(f"    $ {command}", multiline=False))
            show_files(r)
    if yes or revoke:
        say(f"{'approved' if yes else 'withdrew the approval of'} {len(rows)} command(s) on this machine "
            f"({count} approval(s) changed)" + ("; the MCP `train` tool may now run them" if yes else ""))
    elif not rows:
        say("training runs no command of this repository that needs an approval")
    else:
        waiting = len(gate.missing())
        say(f"{len(rows)} command(s), {waiting} not approved on this machine"
            + ("; read them, then `skillgit approve --yes`" if waiting else ""))
    say_legacy(rows)


def register(app: typer.Typer) -> None:
    app.command("approve")(approve)

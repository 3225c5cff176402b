"""How `skillgit sleep review` and `sleep status` show an approval: the repository files a command runs (name and
short digest, never their content), what changed in them since the approval, and approvals recorded before
approvals covered files (`skillgit.sleep.approval`)."""

from typing import Any

import typer

from skillgit.cli.sleep_options import say
from skillgit.textsafe import shown


def approval_of(task: Any, files: Any, recorded: Any) -> dict[str, Any]:
    """A task's approval as review shows it: approved, the repository files its commands run (name and short
    digest, never their content), and what changed since it was approved (`approval.changed`)."""
    from skillgit.sleep import approval

    if task.kind != "agentic":
        return {"commands_approved": None, "files": [], "changed": ""}
    run = files.files(task)
    ok = approval.command_key(task, run) in recorded
    return {"commands_approved": ok, "files": [{"path": f.path, "digest": f.digest} for f in run],
            "changed": "" if ok else approval.changed(recorded, approval.text_key(task), run)}


def show_files(row: dict[str, Any]) -> None:
    """The files a command runs (each with its short digest), and which changed since its approval."""
    from skillgit.sleep.approval import LEGACY, shown_files
    from skillgit.sleep.approval_files import RunFile

    if row["files"]:
        typer.echo(shown("    files it runs: " + shown_files(RunFile(f["path"], f["digest"]) for f in row["files"]),
                         multiline=False))
    if row["changed"] and row["changed"] != LEGACY:
        typer.echo(shown(f"    {row['changed']}", multiline=False))


def say_legacy(rows: list[dict[str, Any]]) -> None:
    from skillgit.sleep.approval import LEGACY

    if n := sum(1 for r in rows if r.get("changed") == LEGACY):
        say(f"{n} command(s) {LEGACY}")

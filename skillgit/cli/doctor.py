"""CLI: `skillgit doctor` — is each role's backend configured, credentialed and reachable?

Contract: for the teacher and the student, build the backend from the resolved config (no retries) and make ONE
tiny call (the simulated world is reported as the offline simulation and not called). Prints a table (role,
backend, model, endpoint, status, fix) on stdout, or with `--json` a document `{"ok": bool, "roles": [...]}`.
Exits with ExitCode.BACKEND when any role fails. Nothing is written anywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Optional

import typer

from skillgit.errors import ExitCode, SkillgitError

REPO = typer.Option(None, "--repo", "-C", help="The repository (default: the one around the current folder).")
CONFIG = typer.Option(None, "--config", "-c", help="Config file (default: skillgit.yaml at the repository root).")
SET = typer.Option(None, "--set", "-s", help="Override a config key: --set model.teacher_model=gpt-4o (repeatable).")

PROBE = "Reply with the single word OK."


def check_role(cfg: Any, role: str, root: Path | None, *, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """One row of the doctor's table: what `role` is, and whether one tiny call through it works."""
    from skillgit.llm import factory
    from skillgit.llm.base import ChatStudent, Message, Request
    from skillgit.llm.pricing import price_known
    from skillgit.redact import redact
    from skillgit.types import Item

    row: dict[str, Any] = {"role": role, **factory.describe(cfg, role, root, environ=environ),
                           "status": "ok", "detail": "", "fix": ""}
    row["endpoint"] = redact(row["endpoint"])
    if row["backend"] == "simulated":
        row["detail"] = "offline simulation: no model is called, no credentials needed"
        return row
    try:
        if role == "teacher":
            llm = factory.build_teacher(cfg, root, environ=environ, max_retries=0)
            reply = llm.complete(Request((Message("user", PROBE),), stage="doctor", max_tokens=32))
        else:
            student = factory.build_student(cfg, root, environ=environ, max_retries=0)
            if isinstance(student, ChatStudent):  # a chat model: a tiny request rather than a whole rollout
                llm = student.llm
                reply = llm.complete(Request((Message("system", "You are being health-checked."),
                                              Message("user", PROBE)), stage="doctor", max_tokens=32))
            else:
                llm = student
                reply = student.run("You are being health-checked. Answer briefly.", Item("doctor", PROBE))
        built = llm
        row["endpoint"] = redact(str(getattr(built, "endpoint", row["endpoint"])))
    except SkillgitError as exc:
        row.update(status="error", detail=exc.message, fix=exc.hint)
        return row
    answer = " ".join(reply.text.split())
    row["detail"] = f"answered {answer[:40]!r} in {reply.latency_s:.1f}s" if answer else \
        f"answered (empty text) in {reply.latency_s:.1f}s"
    if row["backend"] != "command" and not price_known(row["model"], cfg.prices) \
            and not getattr(built, "price_known", False):
        row["fix"] = f"price unknown: add prices.{row['model']} (USD per 1M tokens) to count cost"
    return row


def doctor(repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG, set_: Optional[list[str]] = SET,
           as_json: bool = typer.Option(False, "--json", help="Print the checks as JSON on stdout.")) -> None:
    """Check the teacher's and the student's backend: config, credentials, one tiny call each."""
    from skillgit import console
    from skillgit.project import open_project

    project = open_project(repo, config, list(set_ or []))
    rows = [check_role(project.config, role, project.root) for role in ("teacher", "student")]
    ok = all(r["status"] == "ok" for r in rows)
    if as_json:
        console.print_json({"ok": ok, "roles": rows})
    else:
        from rich.table import Table
        from rich.text import Text

        table = Table(title="skillgit doctor", title_justify="left")
        for column in ("role", "backend", "model", "endpoint", "status", "fix"):
            table.add_column(column, overflow="fold")
        for r in rows:  # Text, not markup: details and hints may contain [brackets]
            if r["status"] == "ok":
                status = Text.assemble(("ok", "green"), f" ({r['detail']})" if r["detail"] else "")
            else:
                status = Text.assemble(("error", "red"), f": {r['detail']}")
            table.add_row(*(Text(str(r[k])) for k in ("role", "backend", "model", "endpoint")), status,
                          Text(r["fix"]))
        console.out.print(table)
    if not ok:
        failed = ", ".join(r["role"] for r in rows if r["status"] != "ok")
        raise SkillgitError(f"doctor: {failed} backend not ready", "follow the 'fix' column above",
                            ExitCode.BACKEND)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)

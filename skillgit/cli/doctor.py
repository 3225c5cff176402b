"""CLI: `skillgit doctor` — is each role's backend configured, credentialed, reachable and able to give JSON?

Contract: for the teacher and the student, build the backend from the resolved config (no retries) and make ONE
tiny call (the simulated world is reported as the offline simulation and not called). For a chat model (the
teacher always; a chat student) that call is a structured one — a tiny JSON schema, sent the way the backend
sends every structured request (its json_mode ladder) — and the role is ok only when a JSON object comes back:
the detail says "JSON via <mode>", a failure says what came back and how to fix it, so doctor never calls a
server ok that cannot give the teacher's JSON. A CLI-agent student makes one plain run. Prints a table (role,
backend, model, endpoint, status, fix) on stdout, or with `--json` a document `{"ok": bool, "roles": [...]}`
(rows carry `json_mode` for chat models). Exits with ExitCode.BACKEND when any role fails. Nothing is written.
Every text shown goes through `redact`.
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
JSON_PROBE = 'This is a health check. Reply with the JSON object {"status": "ok"} and nothing else.'
JSON_SCHEMA = {"type": "object", "properties": {"status": {"type": "string", "enum": ["ok"]}},
               "required": ["status"], "additionalProperties": False}
# Room for a reasoning model to think a little before its few answer tokens; a model stops long before this.
PROBE_MAX_TOKENS = 256


def _json_hint(role: str, mode: str, trace: str) -> str:
    if "length" in trace or "max_tokens" in trace:
        return (f"the model stopped at doctor's {PROBE_MAX_TOKENS}-token limit before answering (a reasoning "
                f"model?); lower model.{role}.reasoning_effort, or check that the model follows instructions")
    if mode == "prompt":
        return (f"even asked in the prompt, the model gave no JSON object: the teacher's stages need one; use an "
                f"instruction-following model, or a server with structured output (set model.{role}.json_mode: "
                f"auto)")
    return (f"the server accepted json_mode '{mode}' but sent no JSON object; set model.{role}.json_mode to "
            f"another mode (json_object, prompt) or use a model that supports structured output")


def _structured_probe(llm: Any, role: str, row: dict[str, Any]) -> None:
    """One structured call through `llm`; fills row's status/detail/fix/json_mode (LLMError propagates)."""
    from skillgit.llm.base import Message, Request
    from skillgit.llm.jsonout import extract_json
    from skillgit.redact import redact

    request = Request((Message("system", "You are being health-checked."), Message("user", JSON_PROBE)),
                      stage="doctor", json_schema=JSON_SCHEMA, max_tokens=PROBE_MAX_TOKENS)
    reply = llm.complete(request)
    mode = str(getattr(llm, "json_mode_in_use", "") or "json")
    row["json_mode"] = mode
    obj, why = extract_json(reply.text)
    if obj is None:
        answer = redact(" ".join(reply.text.split()))[:60]
        extra = f"; {redact(reply.trace)}" if reply.trace else ""
        row.update(status="error", fix=_json_hint(role, mode, reply.trace),
                   detail=f"answered, but not with JSON via {mode}: {why} (reply {answer!r}{extra})")
        return
    row["detail"] = f"JSON via {mode} in {reply.latency_s:.1f}s"


def check_role(cfg: Any, role: str, root: Path | None, *, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """One row of the doctor's table: what `role` is, and whether one tiny (structured) call through it works."""
    from skillgit.llm import factory
    from skillgit.llm.base import ChatStudent
    from skillgit.llm.pricing import price_known
    from skillgit.redact import redact
    from skillgit.types import Item

    row: dict[str, Any] = {"role": role, **factory.describe(cfg, role, root, environ=environ),
                           "status": "ok", "detail": "", "fix": ""}
    row["endpoint"] = redact(row["endpoint"])
    if row["backend"] == "simulated":
        row["detail"] = "offline simulation: no model is called, no credentials needed"
        return row
    built: Any = None
    try:
        if role == "teacher":
            built = factory.build_teacher(cfg, root, environ=environ, max_retries=0)
        else:
            student = factory.build_student(cfg, root, environ=environ, max_retries=0)
            # a chat model gets the structured probe, not a whole rollout
            built = student.llm if isinstance(student, ChatStudent) else student
        row["endpoint"] = redact(str(getattr(built, "endpoint", row["endpoint"])))
        if hasattr(built, "complete"):
            _structured_probe(built, role, row)
        else:  # a CLI agent: rollouts are free text, one plain run shows it works
            reply = built.run("You are being health-checked. Answer briefly.", Item("doctor", PROBE))
            answer = redact(" ".join(reply.text.split()))
            row["detail"] = f"answered {answer[:40]!r} in {reply.latency_s:.1f}s" if answer else \
                f"answered (empty text) in {reply.latency_s:.1f}s"
    except SkillgitError as exc:
        row.update(status="error", detail=redact(exc.message), fix=redact(exc.hint))
        return row
    if row["status"] == "ok" and row["backend"] != "command" and not price_known(row["model"], cfg.prices) \
            and not getattr(built, "price_known", False):
        row["fix"] = f"price unknown: add prices.{row['model']} (USD per 1M tokens) to count cost"
    return row


def doctor(repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG, set_: Optional[list[str]] = SET,
           as_json: bool = typer.Option(False, "--json", help="Print the checks as JSON on stdout.")) -> None:
    """Check the teacher's and the student's backend: config, credentials, one tiny (JSON) call each."""
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

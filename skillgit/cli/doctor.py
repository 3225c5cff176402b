"""CLI: `skillgit doctor` — is each role's backend configured, credentialed, reachable (and the teacher able to
give JSON)? Which agent CLIs are installed?

Contract: for the teacher and the student, build the backend from the resolved config (no retries) and make ONE
tiny call (the simulated world is reported as the offline simulation and not called). For the teacher that call
is a structured one — a tiny JSON schema, sent the way the backend sends every structured request (its json_mode
ladder) — and the role is ok only when a JSON object comes back: the detail says "JSON via <mode>", a failure
says what came back and how to fix it, so doctor never calls a server ok that cannot give the teacher's JSON.
A student is never asked for JSON (rollouts are free text): a chat student gets one plain call, a CLI-agent
student one plain run (an agent student: one run in a scratch fixture workspace, its fingerprint in the row as
`agent`). Then every agent of the agent registry that skillgit can run (`skillgit.agents.registry`) is looked up
on PATH and its version probed. Prints each role (role, backend, model, endpoint; its status and fix under it)
and each agent (agent, version, program or fix) on stdout, readable at 80 columns, or with `--json` a document
`{"ok": bool, "roles": [...], "agents": [...]}` (teacher rows carry `json_mode`). Exits with ExitCode.BACKEND when
any role fails (a missing agent CLI the config does not use is not a failure). Nothing is written. Every text
shown goes through `redact`.
"""

from functools import partial
from pathlib import Path
from typing import Any, Mapping, Optional

import typer

from skillgit.errors import ExitCode, SkillgitError

REPO = typer.Option(None, "--repo", "-C", help="The repository (default: the one around the current folder).")
CONFIG = typer.Option(None, "--config", help="Config file (default: skillgit.yaml at the repository root).")
SET = typer.Option(None, "-c", "--set", "-s",
                   help="Set a config key, as git -c does: -c model.teacher_model=gpt-4o (repeatable).")

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


def _plain_probe(llm: Any, row: dict[str, Any]) -> None:
    """One plain call through a chat student's model; fills row's detail (LLMError propagates)."""
    from skillgit.llm.base import Message, Request
    from skillgit.redact import redact

    reply = llm.complete(Request((Message("system", "You are being health-checked."), Message("user", PROBE)),
                                 stage="doctor", max_tokens=PROBE_MAX_TOKENS))
    answer = redact(" ".join(reply.text.split()))
    row["detail"] = f"answered {answer[:40]!r} in {reply.latency_s:.1f}s" if answer else \
        f"answered (empty text) in {reply.latency_s:.1f}s"


def _agent_probe(student: Any, row: dict[str, Any]) -> None:
    """One run of an agent student in a scratch fixture workspace (its verifier always passes)."""
    import tempfile

    from skillgit.redact import redact
    from skillgit.types import Item

    with tempfile.TemporaryDirectory(prefix="skillgit-doctor-") as tmp:
        (Path(tmp) / "README.md").write_text("A scratch workspace for `skillgit doctor`.\n", encoding="utf-8")
        item = Item("doctor", PROBE, metadata={"workspace": {"fixture": tmp}, "task_dir": tmp,
                                               "verify": {"command": "true", "timeout_s": 30}})
        reply = student.run("---\nname: doctor\ndescription: A health check.\n---\nAnswer briefly.\n", item)
    answer = redact(" ".join(reply.text.split()))
    row["detail"] = f"answered {answer[:40]!r} in {reply.latency_s:.1f}s" if answer else \
        f"answered (empty text) in {reply.latency_s:.1f}s"


def check_role(cfg: Any, role: str, root: Path | None, *, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """One row of the doctor's table: what `role` is, and whether one tiny call through it works (a structured
    one for the teacher)."""
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
    if row["backend"] == "handoff":  # asking would write a question for the user's agent: said, not called
        from skillgit.llm.handoff import folder_for, plan

        try:
            if root is not None:
                folder_for(cfg, root)  # inside the repository, or the error names the key
        except SkillgitError as exc:
            row.update(status="error", detail=redact(exc.message), fix=redact(exc.hint))
            return row
        row["detail"] = plan(cfg, root)
        return row
    built: Any = None
    try:
        if role == "teacher":
            built = factory.build_teacher(cfg, root, environ=environ, max_retries=0)
            row["endpoint"] = redact(str(getattr(built, "endpoint", row["endpoint"])))
            _structured_probe(built, role, row)
        else:
            student = factory.build_student(cfg, root, environ=environ, max_retries=0)
            # students are never asked for JSON: one plain call (a chat model) or one plain run (an agent)
            built = student.llm if isinstance(student, ChatStudent) else student
            row["endpoint"] = redact(str(getattr(built, "endpoint", row["endpoint"])))
            if hasattr(built, "fingerprint"):
                row["agent"] = {k: redact(str(v)) for k, v in built.fingerprint().items()}
            if hasattr(built, "complete"):
                _plain_probe(built, row)
            elif row["backend"] == "agent":
                _agent_probe(built, row)
            else:  # a CLI agent answering one text per item
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


def check_agents(environ: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """One row per agent of the registry that skillgit can run: its program on PATH, its version, how to install
    it when it is missing."""
    import os

    from skillgit.agents import registry, version
    from skillgit.redact import redact

    env = dict(os.environ if environ is None else environ)
    rows = []
    for agent in registry.agents():
        if agent.student is None or not agent.binary:
            continue
        path = version.resolve(agent.binary, env)
        found = version.probe(agent.binary, agent.version_args, env) if path and agent.version_args else \
            ("" if path else "not installed")
        rows.append({"agent": agent.name, "title": agent.title, "program": redact(path or agent.binary),
                     "installed": path is not None, "version": redact(found),
                     "fix": "" if path else agent.install_hint})
    return rows


def doctor(repo: Optional[Path] = REPO, config: Optional[Path] = CONFIG, set_: Optional[list[str]] = SET,
           as_json: bool = typer.Option(False, "--json", help="Print the checks as JSON on stdout.")) -> None:
    """Check the teacher's and the student's backend: config, credentials, one tiny (JSON) call each."""
    from skillgit import console, envs
    from skillgit.llm.registry import plugin_errors
    from skillgit.project import open_project

    project = open_project(repo, config, list(set_ or []))
    rows = [check_role(project.config, role, project.root) for role in ("teacher", "student")]
    agents = check_agents()
    env = envs.check(project.config.env, project.root)  # the environment (env.name), if any
    broken = [{"backend": name, "error": why} for name, why in plugin_errors().items()]  # plugins left out
    ok = all(r["status"] == "ok" for r in rows) and (env is None or env["status"] == "ok")
    sources = config_sources(project)
    if as_json:
        console.print_json({"ok": ok, "config": sources, "roles": rows, "agents": agents, "env": env,
                            "backend_plugins": broken})
    else:  # (what the config, a server or an agent CLI said is shown, never acts on the terminal)
        _print_rows(console.out, _shown(rows), _shown(agents))
        _print_sources(console.out, _shown(sources))
        _print_env(console.out, _shown([env])[0] if env is not None else None, _shown(broken))
    if not ok:
        failed = ", ".join([r["role"] for r in rows if r["status"] != "ok"] +
                           (["environment"] if env is not None and env["status"] != "ok" else []))
        raise SkillgitError(f"doctor: {failed} backend not ready", "follow the 'fix:' lines above",
                            ExitCode.BACKEND)


def _shown(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from skillgit.textsafe import shown

    return [{k: shown(v) if isinstance(v, str) else v for k, v in item.items()} for item in items]


def _print_rows(stdout: Any, rows: list[dict[str, Any]], agents: list[dict[str, Any]]) -> None:
    """One line per role (role, backend, model, endpoint) with its status and fix indented under it, then one
    line per agent CLI: readable at 80 columns (a boxed table of six columns wrapped into ~30 lines there)."""
    from rich.text import Text

    say = partial(stdout.print, soft_wrap=False)  # wrapped at the terminal's width (80 when it is unknown)
    width = max(len(r["role"]) for r in rows)
    say(Text("skillgit doctor", style="bold"))
    for r in rows:  # Text, not markup: details and hints may contain [brackets]
        say(Text(f"{r['role']:<{width}}  {r['backend']}  {r['model']}  {r['endpoint']}"))
        if r["status"] == "ok":
            say(Text.assemble("  ", ("ok", "green"), f" ({r['detail']})" if r["detail"] else ""))
        else:
            say(Text.assemble("  ", ("error", "red"), f": {r['detail']}"))
        if r["fix"]:
            say(Text(f"  fix: {r['fix']}"))
    say(Text("agent CLIs", style="bold"))
    width = max((len(a["agent"]) for a in agents), default=0)
    for a in agents:
        if a["installed"]:
            say(Text(f"  {a['agent']:<{width}}  {a['version'] or 'installed'}  {a['program']}"))
        else:
            say(Text.assemble(f"  {a['agent']:<{width}}  ", ("not installed", "yellow"),
                              f"  fix: {a['fix']}" if a["fix"] else ""))


def config_sources(project: Any) -> list[dict[str, Any]]:
    """Each config file in effect (the user config, the project's file and its _base_ files, the command line)
    and the keys it set (`config_layers`)."""
    from skillgit.config_layers import shown_origin

    by_origin: dict[str, list[str]] = {}
    for key, origin in project.origins.items():
        by_origin.setdefault(origin, []).append(key)
    return [{"origin": shown_origin(origin), "keys": sorted(keys)} for origin, keys in by_origin.items()]


def _print_sources(stdout: Any, sources: list[dict[str, Any]]) -> None:
    from rich.text import Text

    say = partial(stdout.print, soft_wrap=False)
    say(Text("config", style="bold"))
    if not sources:
        say(Text("  all defaults (no skillgit.yaml, no user config)"))
    for s in sources:
        keys = ", ".join(s["keys"][:4]) + (f", … ({len(s['keys'])} keys)" if len(s["keys"]) > 4 else "")
        say(Text(f"  {s['origin']}: {keys}"))
    say(Text("  (every key and where it was set: skillgit config show --show-origin)"))


def _print_env(stdout: Any, env: dict[str, Any] | None, broken: list[dict[str, str]]) -> None:
    """The configured environment's line (it loads and splits its data, or the error and its fix), then one line
    per backend plugin left out."""
    from rich.text import Text

    if env is not None:
        stdout.print(Text(f"environment {env['env']} ({env['origin']}; metric: {env['metric']}): {env['status']} "
                          f"{env['detail']}" + (f"\n  fix: {env['fix']}" if env["fix"] else "")))
    for b in broken:
        stdout.print(Text(f"backend plugin {b['backend']} left out: {b['error']}", "yellow"))


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)

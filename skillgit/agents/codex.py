"""Codex (`codex`, @openai/codex): facts in docs/AGENT_CLIS.md "Codex".

- Student: `codex exec --json -s SANDBOX [-m M] --skip-git-repo-check -- PROMPT` with the skill in
  `.agents/skills/<name>/` (listed by description; codex reads the file itself, there is no skill tool).
- Trace `codex-json`: `item.completed` items (`command_execution`, `file_change`, `agent_message` — the last is
  the final message), `turn.completed{usage}`, `turn.failed`.
- Hermetic profile: config in `$CODEX_HOME` (default `~/.codex`); a ChatGPT login is `auth.json` there; user skills
  in `~/.agents/skills`. Codex ignores OPENAI_BASE_URL: with `model.student.base_url` set, the fresh home's
  `config.toml` defines and selects a provider `skillgit` (`wire_api = "responses"`, the key read from
  `model.student.api_key_env`, default OPENAI_API_KEY; a placeholder key when that variable is unset, for a local
  server without auth). Under profile "user" the same provider goes in as `-c` overrides (the user's
  `config.toml` is never written).
"""

from __future__ import annotations

import json

from skillgit.agents.base import Agent, AnswerPreset, StudentPreset
from skillgit.agents.profile import Location, Profile, Settings, Setup
from skillgit.agents.trace import AgentTrace, Step, as_dict, as_list, events
from skillgit.types import Usage

CONFIG = Location("CODEX_HOME", ".codex")
PROVIDER = "skillgit"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
NO_KEY = "no-key-needed"  # a local server without auth still gets an Authorization header


def parse(stdout: str) -> AgentTrace:
    steps: list[Step] = []
    final, prompt, completion, cached, error = "", 0, 0, 0, None
    for e in events(stdout):
        item = as_dict(e.get("item"))
        if e.get("type") == "item.completed":
            kind, call_id = item.get("type"), str(item.get("id") or "")
            if kind == "command_execution":
                steps.append(Step("call", "shell", str(item.get("command", "")), call_id=call_id))
                steps.append(Step("result", text=str(item.get("aggregated_output", "")),
                                  error=item.get("exit_code") not in (0, None), call_id=call_id))
            elif kind == "file_change":
                changes = as_list(item.get("changes"))
                steps.append(Step("call", "apply_patch", ", ".join(f"{c.get('kind')} {c.get('path')}"
                                                                   for c in changes if isinstance(c, dict)),
                                  call_id=call_id))
            elif kind == "agent_message":
                final = str(item.get("text", ""))
                steps.append(Step("text", text=final))
            elif kind == "error":
                error = str(item.get("message", "error"))
        elif e.get("type") == "turn.completed" and isinstance(e.get("usage"), dict):
            u = e["usage"]
            prompt += int(u.get("input_tokens") or 0)
            cached += int(u.get("cached_input_tokens") or 0)
            completion += int(u.get("output_tokens") or 0)
        elif e.get("type") == "turn.failed":
            error = str(as_dict(e.get("error")).get("message", "turn failed"))
    return AgentTrace(final, tuple(steps), Usage(1, prompt, completion, cached), error if not final else None)


def provider_toml(base_url: str, key_env: str) -> str:
    """The `config.toml` that defines and selects the provider at `base_url` (TOML basic strings are JSON's)."""
    return (f"# written by skillgit for one hermetic rollout (model.student.base_url)\n"
            f"model_provider = {json.dumps(PROVIDER)}\n\n"
            f"[model_providers.{PROVIDER}]\n"
            f"name = {json.dumps('skillgit: model.student.base_url')}\n"
            f"base_url = {json.dumps(base_url)}\n"
            f'wire_api = "responses"\n'
            f"env_key = {json.dumps(key_env)}\n")


def _configure(settings: Settings) -> Setup:
    if not settings.base_url:
        return Setup()
    key_env = settings.key_env or DEFAULT_KEY_ENV
    env = {} if settings.environ.get(key_env) else {key_env: NO_KEY}
    if settings.profile == "user":
        table = (f"{{name={json.dumps(PROVIDER)},base_url={json.dumps(settings.base_url)},"
                 f'wire_api="responses",env_key={json.dumps(key_env)}}}')
        return Setup(env=env, args=("-c", f"model_provider={PROVIDER}", "-c", f"model_providers.{PROVIDER}={table}"))
    return Setup(files={".codex/config.toml": provider_toml(settings.base_url, key_env)}, env=env)


PROFILE = Profile(
    logins=((CONFIG, "auth.json"),),
    key_env=("OPENAI_API_KEY", "CODEX_API_KEY"),
    user_config=((CONFIG, "config.toml", ""), (CONFIG, "*.config.toml", ""), (CONFIG, "AGENTS.md", ""),
                 (CONFIG, "skills/**/*", ""), (CONFIG, "rules/**/*", ""), (Location("", ".agents"), "skills/**/*", "")),
    configure=_configure,
    own_sandbox="codex's -s sandbox (bubblewrap: it cannot start inside Landlock, which denies mounts)",
)

AGENT = Agent(
    name="codex",
    title="Codex",
    binary="codex",
    install_hint="npm install -g @openai/codex",
    student=StudentPreset(
        ("codex", "exec", "--json", "-s", "{sandbox}", "{model_args}", "{profile_args}", "--skip-git-repo-check",
         "--", "{prompt}"),
        ".agents/skills/{name}",
        ("OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL", "CODEX_HOME"),
        ("-m", "{model}"),
    ),
    answer=AnswerPreset(("codex", "exec", "{model_args}", "{profile_args}", "--skip-git-repo-check",
                         "--output-last-message", "{answer_file}", "--", "{prompt}"), "AGENTS.md"),
    trace_format="codex-json",
    parse=parse,
    profile=PROFILE,
    reader="skillgit.sleep.readers.codex",
    install="skillgit.integrations.artifacts:CODEX",
)

__all__ = ["AGENT", "parse", "provider_toml"]

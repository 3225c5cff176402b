"""GitHub Copilot CLI (`copilot`, @github/copilot): facts in docs/AGENT_CLIS.md "GitHub Copilot CLI".

- Student: `copilot -p PROMPT --output-format json --no-auto-update --allow-tool=shell --allow-tool=write` with
  the skill in `.github/skills/<name>/` (listed in the system prompt, its body loaded by the `skill` tool).
- Trace `copilot-json`: `tool.execution_start{toolCallId, toolName, arguments}`,
  `tool.execution_complete{toolCallId, success, result}`, `assistant.message{content}` (the last is the final one).
- Hermetic profile: config and state in `$COPILOT_HOME` (default `~/.copilot`: `mcp-config.json`, skills,
  instructions); it authenticates from COPILOT_GITHUB_TOKEN / GH_TOKEN / GITHUB_TOKEN or BYOK
  (`COPILOT_PROVIDER_*`); its interactive login lives in the system keychain, which a fresh home cannot copy.
  `--disable-builtin-mcps` drops the built-in GitHub MCP servers. The runtime it unpacks on first start (≈4 s) goes
  to a cache shared by rollouts (`COPILOT_PKG_CACHE_HOME`).
"""

from __future__ import annotations

from skillgit.agents.base import Agent, StudentPreset
from skillgit.agents.profile import Location, Profile
from skillgit.agents.trace import AgentTrace, Step, as_dict, events, show_input, text_of
from skillgit.types import Usage

CONFIG = Location("COPILOT_HOME", ".copilot")


def parse(stdout: str) -> AgentTrace:
    steps: list[Step] = []
    final = ""
    for e in events(stdout):
        data = as_dict(e.get("data"))
        kind = e.get("type")
        call_id = str(data.get("toolCallId") or "")
        if kind == "tool.execution_start":
            steps.append(Step("call", str(data.get("toolName", "")), show_input(data.get("arguments", {})),
                              call_id=call_id))
        elif kind == "tool.execution_complete":
            result = data.get("result")
            text = result.get("content", "") if isinstance(result, dict) else result
            if not text and data.get("error"):
                error = data["error"]
                text = error.get("message", "") if isinstance(error, dict) else error
            steps.append(Step("result", text=text_of(text), error=data.get("success") is False, call_id=call_id))
        elif kind == "assistant.message" and str(data.get("content", "")).strip():
            final = str(data["content"])
            steps.append(Step("text", text=final))
    return AgentTrace(final, tuple(steps), Usage(1))


PROFILE = Profile(
    args=("--disable-builtin-mcps",),
    env={"COPILOT_AUTO_UPDATE": "false"},
    key_env=("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "COPILOT_PROVIDER_API_KEY"),
    user_config=((CONFIG, "mcp-config.json", ""), (CONFIG, "copilot-instructions.md", ""),
                 (CONFIG, "skills/**/*", ""), (CONFIG, "agents/**/*", ""), (CONFIG, "config.json", "model")),
    shared_cache=("COPILOT_PKG_CACHE_HOME",),
)

AGENT = Agent(
    name="copilot",
    title="GitHub Copilot CLI",
    binary="copilot",
    install_hint="npm install -g @github/copilot",
    student=StudentPreset(
        ("copilot", "--prompt={prompt}", "--output-format", "json", "--no-auto-update", "{profile_args}",
         "--allow-tool=shell", "--allow-tool=write", "{model_args}"),
        ".github/skills/{name}",
        ("GH_TOKEN", "GITHUB_TOKEN", "COPILOT_GITHUB_TOKEN", "COPILOT_PROVIDER_BASE_URL", "COPILOT_PROVIDER_TYPE",
         "COPILOT_PROVIDER_API_KEY", "COPILOT_MODEL", "COPILOT_OFFLINE"),
        ("--model", "{model}"),
        skill_tool="skill",
    ),
    trace_format="copilot-json",
    parse=parse,
    profile=PROFILE,
    reader="skillgit.sleep.readers.copilot_cli",
    install="skillgit.integrations.artifacts:COPILOT",
)

__all__ = ["AGENT", "parse"]

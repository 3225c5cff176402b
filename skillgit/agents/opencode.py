"""OpenCode (`opencode`, opencode-ai): facts in docs/AGENT_CLIS.md "OpenCode".

- Student: `opencode run --format json --pure [-m M] PROMPT` with the skill in `.opencode/skills/<name>/` (listed
  in the system prompt, its body loaded by the `skill` tool — which runs ripgrep: without `rg` on PATH it tries to
  download its own copy, and offline the tool fails with "ripgrep execution failed").
- Trace `opencode-json`: `tool_use{part.tool, part.callID, part.state{status, input, output | error}}`,
  `text{part.text}` (the last is the final message), `step_finish{part.tokens, part.cost}`.
- Hermetic profile: config in `$XDG_CONFIG_HOME/opencode` (`OPENCODE_CONFIG_DIR`), state and the login
  (`auth.json`, every provider's credentials) in `$XDG_DATA_HOME/opencode`; `--pure` runs without external
  plugins; OPENCODE_CONFIG_CONTENT (a provider's `baseURL` for a local server) passes through.
"""

from __future__ import annotations

from skillgit.agents.base import Agent, StudentPreset
from skillgit.agents.profile import Location, Profile
from skillgit.agents.trace import AgentTrace, Step, as_dict, events, show_input, text_of
from skillgit.types import Usage

CONFIG = Location("XDG_CONFIG_HOME", ".config", "opencode")
DATA = Location("XDG_DATA_HOME", ".local/share", "opencode")


def parse(stdout: str) -> AgentTrace:
    steps: list[Step] = []
    final = ""
    prompt = completion = cached = 0
    cost = 0.0
    for e in events(stdout):
        part = as_dict(e.get("part"))
        if e.get("type") == "tool_use":
            state = as_dict(part.get("state"))
            call_id = str(part.get("callID") or "")
            failed = state.get("status") == "error"
            steps.append(Step("call", str(part.get("tool", "")), show_input(state.get("input", {})), call_id=call_id))
            output = state.get("error", "") if failed and not state.get("output") else state.get("output", "")
            steps.append(Step("result", text=text_of(output), error=failed, call_id=call_id))
        elif e.get("type") == "text" and str(part.get("text", "")).strip():
            final = str(part["text"])
            steps.append(Step("text", text=final))
        elif e.get("type") == "step_finish":
            tokens = as_dict(part.get("tokens"))
            read = int(as_dict(tokens.get("cache")).get("read") or 0)
            prompt += int(tokens.get("input") or 0) + read
            cached += read
            completion += int(tokens.get("output") or 0)
            if isinstance(part.get("cost"), (int, float)):
                cost += float(part["cost"])
    return AgentTrace(final, tuple(steps), Usage(1, prompt, completion, cached, 0, round(cost, 8)))


def load_fix(why: str) -> str:
    if "ripgrep" in why.lower() or " rg" in f" {why}":
        return ("install ripgrep so `rg` is on the agent's PATH (apt-get install ripgrep, brew install ripgrep): "
                "OpenCode's skill tool runs it, and offline it cannot download its own copy")
    return ""


PROFILE = Profile(
    args=("--pure",),
    env={"OPENCODE_DISABLE_AUTOUPDATE": "1"},
    logins=((DATA, "auth.json"),),
    user_config=((CONFIG, "*.json", ""), (CONFIG, "*.jsonc", ""), (CONFIG, "AGENTS.md", ""),
                 (CONFIG, "skills/**/*", ""), (CONFIG, "agent/**/*", ""), (CONFIG, "plugin/**/*", "")),
    state=(Location("XDG_CACHE_HOME", ".cache", "opencode"), Location("XDG_STATE_HOME", ".local/state", "opencode")),
)

AGENT = Agent(
    name="opencode",
    title="OpenCode",
    binary="opencode",
    install_hint="npm install -g opencode-ai (and ripgrep: apt-get install ripgrep)",
    student=StudentPreset(
        ("opencode", "run", "--format", "json", "{profile_args}", "{model_args}", "--", "{prompt}"),
        ".opencode/skills/{name}",
        ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENCODE_API_KEY", "OPENCODE_CONFIG_CONTENT", "OPENCODE_AUTH_CONTENT"),
        ("-m", "{model}"),
        skill_tool="skill",
    ),
    trace_format="opencode-json",
    parse=parse,
    profile=PROFILE,
    reader="skillgit.sleep.readers.opencode",
    load_fix=load_fix,
)

__all__ = ["AGENT", "load_fix", "parse"]

"""Claude Code (`claude`, @anthropic-ai/claude-code): facts in docs/AGENT_CLIS.md "Claude Code".

- Student: `claude -p PROMPT --output-format stream-json --verbose` with the skill in `.claude/skills/<name>/`
  (listed by description, its body loaded by the `Skill` tool); the prompt comes right after `-p` because
  `--allowedTools` is variadic and would swallow it.
- Trace `claude-stream`: `assistant` messages with `tool_use` blocks, `user` messages with `tool_result` blocks, a
  final `result` event (`result`, `usage`, `total_cost_usd`, `num_turns`, `is_error` / `subtype`).
- Hermetic profile: config in `$CLAUDE_CONFIG_DIR` (default `~/.claude`, plus `~/.claude.json`); the login of a
  subscription is `.credentials.json` there (Linux; on macOS it is in the Keychain: use `claude setup-token` and
  CLAUDE_CODE_OAUTH_TOKEN). `--strict-mcp-config` drops every MCP server not given by `--mcp-config` (user and
  project ones alike), `--setting-sources project,local` ignores user settings (hooks, plugins, permissions).
"""

from __future__ import annotations

from skillgit.agents.base import Agent, AnswerPreset, StudentPreset
from skillgit.agents.profile import Location, Profile, Settings, Setup
from skillgit.agents.trace import AgentTrace, Step, as_dict, as_list, events, show_input, text_of
from skillgit.types import Usage

CONFIG = Location("CLAUDE_CONFIG_DIR", ".claude")
KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
        # Claude Code on Bedrock / Vertex AI
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",
        "GOOGLE_APPLICATION_CREDENTIALS")


def parse(stdout: str) -> AgentTrace:
    steps: list[Step] = []
    final, usage, error, turns, last_text = "", Usage(1), None, None, ""
    for e in events(stdout):
        kind = e.get("type")
        blocks = as_list(as_dict(e.get("message")).get("content"))
        if kind == "assistant":
            last_text = _assistant(blocks, steps) or last_text
        elif kind == "user":
            steps += [Step("result", text=text_of(b.get("content")), error=bool(b.get("is_error")),
                           call_id=str(b.get("tool_use_id") or ""))
                      for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        elif kind == "result":
            final = str(e.get("result") or last_text)
            usage, error = _result_usage(e), _result_error(e) or error
            turns = e.get("num_turns") if isinstance(e.get("num_turns"), int) else None
    return AgentTrace(final or last_text, tuple(steps), usage, error, turns)


def _assistant(blocks: list, steps: list[Step]) -> str:
    """An assistant message's tool calls and texts, added to `steps`; returns its last non-blank text ("")."""
    last_text = ""
    for b in blocks:
        if not isinstance(b, dict):
            continue
        if b.get("type") == "tool_use":
            steps.append(Step("call", str(b.get("name", "")), show_input(b.get("input", {})),
                              call_id=str(b.get("id") or "")))
        elif b.get("type") == "text" and str(b.get("text", "")).strip():
            last_text = str(b["text"])
            steps.append(Step("text", text=last_text))
    return last_text


def _result_usage(e: dict) -> Usage:
    """The `result` event's usage: the prompt counts cache reads and cache writes; its cost as reported."""
    u = as_dict(e.get("usage"))
    cache_read = int(u.get("cache_read_input_tokens") or 0)
    prompt = int(u.get("input_tokens") or 0) + cache_read + int(u.get("cache_creation_input_tokens") or 0)
    cost = e.get("total_cost_usd")
    return Usage(1, prompt, int(u.get("output_tokens") or 0), cache_read, 0,
                 round(float(cost), 8) if isinstance(cost, (int, float)) else 0.0)


def _result_error(e: dict) -> str | None:
    """error_max_turns / error_during_execution; an API error is `is_error` with its text as `result`."""
    subtype = str(e.get("subtype") or "")
    if e.get("is_error") or subtype.startswith("error"):
        return subtype if subtype.startswith("error") else str(e.get("result") or "error")[:300]
    return None


def _configure(settings: Settings) -> Setup:
    return Setup(env={"ANTHROPIC_BASE_URL": settings.base_url} if settings.base_url else {})


PROFILE = Profile(
    args=("--strict-mcp-config", "--setting-sources", "project,local"),
    env={"DISABLE_AUTOUPDATER": "1"},
    logins=((CONFIG, ".credentials.json"),),
    key_env=KEYS,
    user_config=((CONFIG, "settings.json", ""), (CONFIG, "CLAUDE.md", ""), (CONFIG, "skills/**/*", ""),
                 (CONFIG, "agents/**/*", ""), (CONFIG, "commands/**/*", ""), (CONFIG, "plugins/*.json", ""),
                 (Location("CLAUDE_CONFIG_DIR", ""), ".claude.json", "mcpServers")),
    configure=_configure,
)

AGENT = Agent(
    name="claude",
    title="Claude Code",
    binary="claude",
    install_hint="npm install -g @anthropic-ai/claude-code",
    student=StudentPreset(
        ("claude", "-p", "--output-format", "stream-json", "--verbose", "{profile_args}",
         "--permission-mode", "{permission_mode}", "{model_args}", "{max_turns_args}",
         "--allowedTools", "{allowed_tools}", "--", "{prompt}"),  # `--`: a prompt never reads as an option
        ".claude/skills/{name}",
        (*KEYS, "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
         "DISABLE_AUTOUPDATER"),
        ("--model", "{model}"),
        skill_tool="Skill",
    ),
    answer=AnswerPreset(("claude", "{model_args}", "-p", "--output-format", "json", "{profile_args}", "--",
                         "{prompt}"),
                        ".claude/skills/{name}/SKILL.md", "claude_json"),
    trace_format="claude-stream",
    parse=parse,
    profile=PROFILE,
    reader="skillgit.sleep.readers.claude",
    install="skillgit.integrations.artifacts:CLAUDE",
)

__all__ = ["AGENT", "parse"]

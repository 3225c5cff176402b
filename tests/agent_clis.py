"""Find, install and drive the REAL agent CLIs (Claude Code, Codex, Copilot CLI, OpenCode) for tests.

Contract
- The CLIs live in a project-local npm prefix: `$SKILLGIT_AGENT_CLIS` or `<repo>/.cache/agent-clis`. `find_cli`
  returns the executable there (else one on PATH) or None; it never installs. `install_clis` runs
  `npm install --prefix <prefix> <pinned packages>` and is meant for a developer or CI setup step, never for a
  test (tests skip when a CLI is missing).
- Versions are pinned (`PACKAGES`) because the fixtures under tests/fixtures/agent_cli and
  tests/fixtures/transcripts were captured with exactly these versions.
- Runs are hermetic: `claude_env` / `codex_env` build the whole environment from scratch (PATH, HOME, git's
  hermetic settings, the scripted server's URL and a fake key), so nothing from the developer's real HOME, keys or
  config reaches the CLI, and the CLI writes its session files under the given HOME.
- Each CLI can be pointed at the scripted server: claude via ANTHROPIC_BASE_URL, codex via a `-c` provider
  with `wire_api="responses"`, copilot via BYOK (COPILOT_PROVIDER_BASE_URL, type anthropic, COPILOT_OFFLINE),
  opencode via OPENCODE_CONFIG_CONTENT (the anthropic provider's baseURL).
- The argv builders refuse blanket permission bypasses (claude's bypassPermissions /
  --dangerously-skip-permissions, codex's danger-full-access, copilot's --allow-all / --yolo, opencode's
  --auto); permissions are granted narrowly: `--permission-mode acceptEdits --allowedTools ...` (claude),
  `-s workspace-write` (codex exec never asks for approval), `--allow-tool=...` (copilot), the config's
  `permission` table (opencode).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PREFIX = REPO_ROOT / ".cache" / "agent-clis"
PREFIX_ENV = "SKILLGIT_AGENT_CLIS"

# cli name -> npm package spec (the versions the fixtures were captured with; see docs/AGENT_CLIS.md)
PACKAGES: dict[str, str] = {
    "claude": "@anthropic-ai/claude-code@2.1.330",
    "codex": "@openai/codex@0.169.0",
    "copilot": "@github/copilot@1.0.102",
    "opencode": "opencode-ai@1.18.33",
}

# Not a secret: the scripted server accepts any key. Long enough that claude's "last 20 characters" approval
# record (customApiKeyResponses) is well defined.
TEST_API_KEY = "sk-ant-scripted-test-key-0000000000000000"
CODEX_KEY_ENV = "SKILLGIT_SCRIPTED_API_KEY"
CODEX_PROVIDER = "scripted"
DEFAULT_CLAUDE_TOOLS = ("Bash", "Write", "Edit", "Read")

_TMUX_IDS = itertools.count(1)

# Environment variables passed through to the CLI so git inside it stays hermetic (tests set these).
_PASS_THROUGH = ("GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
                 "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE",
                 "GIT_TERMINAL_PROMPT", "LANG", "LC_ALL", "TZ")


# ------------------------------------------------------------------------------------------------ locating
# Read once at import (test collection): tests/conftest.py strips every SKILLGIT_* variable before each test runs.
_PREFIX_AT_IMPORT = os.environ.get(PREFIX_ENV, "")


def clis_prefix() -> Path:
    """The npm prefix the CLIs are installed in: `$SKILLGIT_AGENT_CLIS` (now, or when this module was imported),
    else `<repo>/.cache/agent-clis`."""
    return Path(os.environ.get(PREFIX_ENV) or _PREFIX_AT_IMPORT or DEFAULT_PREFIX)


def require_cli(name: str) -> Path:
    """`find_cli(name)`, or skip the calling test when the CLI is not installed."""
    import pytest

    exe = find_cli(name)
    if exe is None:
        pytest.skip(f"{name} is not installed (.venv/bin/python -m tests.agent_clis install)")
    return exe


def find_cli(name: str, prefix: Path | None = None, *, use_path: bool = True) -> Path | None:
    """The executable of CLI `name` (`claude`, `codex`, `copilot`, `opencode`) in the prefix, else on PATH (when
    `use_path`), else None."""
    local = (prefix or clis_prefix()) / "node_modules" / ".bin" / name
    if local.exists() and os.access(local, os.X_OK):
        return local
    if use_path:
        found = shutil.which(name)
        return Path(found) if found else None
    return None


def install_clis(names: Iterable[str] | None = None, prefix: Path | None = None,
                 timeout: float = 900) -> dict[str, Path | None]:
    """`npm install --prefix <prefix>` the pinned packages of `names` (default: all) and return their paths.
    Raises `subprocess.CalledProcessError` when npm fails."""
    chosen = list(names or PACKAGES)
    target = prefix or clis_prefix()
    target.mkdir(parents=True, exist_ok=True)
    specs = [PACKAGES[n] for n in chosen]
    subprocess.run(["npm", "install", "--prefix", str(target), "--no-fund", "--no-audit", *specs],
                   check=True, timeout=timeout, stdout=subprocess.DEVNULL)
    return {n: find_cli(n, target, use_path=False) for n in chosen}


def cli_version(exe: Path, timeout: float = 60) -> str:
    """The first line of `<exe> --version` (e.g. `2.1.330 (Claude Code)`, `codex-cli 0.169.0`)."""
    proc = subprocess.run([str(exe), "--version"], check=False, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, env={"PATH": os.environ.get("PATH", ""),
                                                         "HOME": os.environ.get("HOME", "/tmp")})
    return (proc.stdout.strip().splitlines() or [""])[0]


# ------------------------------------------------------------------------------------------------ claude
def claude_config(api_key: str = TEST_API_KEY, trusted: Iterable[Path] = ()) -> dict[str, Any]:
    """The `$HOME/.claude.json` that lets claude start without prompts: onboarding done, the API key approved
    (claude stores the key's last 20 characters), and each `trusted` folder's trust dialog accepted. `-p` needs
    none of it (it skips the trust dialog and uses ANTHROPIC_API_KEY as is); the interactive TUI needs all."""
    return {
        "hasCompletedOnboarding": True,
        "theme": "dark",
        "customApiKeyResponses": {"approved": [api_key[-20:]], "rejected": []},
        "projects": {str(p): {"hasTrustDialogAccepted": True, "allowedTools": []} for p in trusted},
    }


def prepare_claude_home(home: Path, *, api_key: str = TEST_API_KEY, trusted: Iterable[Path] = ()) -> Path:
    """Create `home` with `.claude.json` (see `claude_config`) and return it."""
    home.mkdir(parents=True, exist_ok=True)
    (home / ".claude.json").write_text(json.dumps(claude_config(api_key, trusted), indent=2) + "\n")
    return home


def _base_env(home: Path) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "NO_COLOR": "1",
           "TERM": os.environ.get("TERM", "xterm-256color")}
    env.update({k: os.environ[k] for k in _PASS_THROUGH if k in os.environ})
    return env


def claude_env(home: Path, base_url: str, *, api_key: str = TEST_API_KEY,
               extra: dict[str, str] | None = None) -> dict[str, str]:
    """The complete environment for a claude run against the scripted server at `base_url`."""
    env = _base_env(home)
    env.update({
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": api_key,
        # no telemetry, error reporting, update checks or other calls to Anthropic's hosts (the HEAD
        # /api/hello probe still goes to the base URL without it)
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    })
    env.update(extra or {})
    return env


def claude_print_argv(claude: Path | str, prompt: str, *, model: str | None = None,
                      allowed_tools: Sequence[str] = DEFAULT_CLAUDE_TOOLS, permission_mode: str = "acceptEdits",
                      max_turns: int | None = None, output_format: str = "stream-json",
                      extra: Sequence[str] = ()) -> list[str]:
    """argv of a headless `claude -p` run. The prompt comes right after `-p`: `--allowedTools` is variadic
    and would swallow a prompt placed after it."""
    if permission_mode == "bypassPermissions" or "--dangerously-skip-permissions" in extra:
        raise ValueError("bypassPermissions is refused here (it is rejected as root); use acceptEdits + allowedTools")
    argv = [str(claude), "-p", prompt, "--output-format", output_format]
    if output_format == "stream-json":
        argv.append("--verbose")  # required by claude for stream-json with -p
    argv += ["--permission-mode", permission_mode]
    if model:
        argv += ["--model", model]
    if max_turns is not None:
        argv += ["--max-turns", str(max_turns)]  # accepted although `--help` does not list it (2.1.330)
    argv += [*extra, "--allowedTools", ",".join(allowed_tools)]
    return argv


def claude_interactive_argv(claude: Path | str, prompt: str, *,
                            allowed_tools: Sequence[str] = DEFAULT_CLAUDE_TOOLS,
                            permission_mode: str = "acceptEdits") -> list[str]:
    """argv of an interactive (TUI) claude session seeded with `prompt` (run it under tmux)."""
    if permission_mode == "bypassPermissions":
        raise ValueError("bypassPermissions is refused here; use acceptEdits + allowedTools")
    return [str(claude), "--permission-mode", permission_mode, "--allowedTools", ",".join(allowed_tools),
            "--", prompt]


def claude_project_slug(cwd: Path | str) -> str:
    """The folder name claude uses under `~/.claude/projects/` for a working folder: every character that is
    not a letter or digit becomes `-` (`/tmp/x_y/repo` -> `-tmp-x-y-repo`)."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


def claude_session_files(home: Path, *, subagents: bool = False) -> list[Path]:
    """Main session transcripts `~/.claude/projects/<slug>/<session>.jsonl` (or, with `subagents`, the
    sidechain transcripts `<slug>/<session>/subagents/agent-<id>.jsonl`), oldest first."""
    root = home / ".claude" / "projects"
    pattern = "*/*/subagents/agent-*.jsonl" if subagents else "*/*.jsonl"
    return sorted(root.glob(pattern), key=lambda p: p.stat().st_mtime)


# ------------------------------------------------------------------------------------------------ codex
def codex_env(home: Path, *, api_key: str = TEST_API_KEY, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The complete environment for a codex run: CODEX_HOME is `<home>/.codex` (sessions land under
    `<home>/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`); the scripted provider reads its key from
    `SKILLGIT_SCRIPTED_API_KEY` and sends it as `Authorization: Bearer`."""
    env = _base_env(home)
    (home / ".codex").mkdir(parents=True, exist_ok=True)
    env.update({"CODEX_HOME": str(home / ".codex"), CODEX_KEY_ENV: api_key})
    env.update(extra or {})
    return env


def codex_provider_overrides(base_url: str, *, provider: str = CODEX_PROVIDER,
                             env_key: str = CODEX_KEY_ENV) -> list[str]:
    """`-c` overrides that define and select a Responses-API provider at `<base_url>/v1`."""
    table = (f'{{name="{provider}",base_url="{base_url.rstrip("/")}/v1",wire_api="responses",'
             f'env_key="{env_key}"}}')
    return ["-c", f"model_provider={provider}", "-c", f"model_providers.{provider}={table}"]


def codex_exec_argv(codex: Path | str, prompt: str, base_url: str, *, model: str = "scripted-model",
                    sandbox: str = "workspace-write", cwd: Path | None = None, skip_git_repo_check: bool = True,
                    extra: Sequence[str] = ()) -> list[str]:
    """argv of a headless `codex exec --json` run against the scripted server. codex exec never asks for
    approval; the sandbox (`read-only` / `workspace-write`) bounds what commands may write."""
    if sandbox == "danger-full-access" or "--dangerously-bypass-approvals-and-sandbox" in extra:
        raise ValueError("the sandbox bypass is refused here; use -s workspace-write")
    argv = [str(codex), "exec", "--json", "-s", sandbox, "-m", model, *codex_provider_overrides(base_url)]
    if skip_git_repo_check:
        argv.append("--skip-git-repo-check")
    if cwd is not None:
        argv += ["-C", str(cwd)]
    return [*argv, *extra, "--", prompt]


def codex_session_files(home: Path) -> list[Path]:
    """Codex rollout files `<home>/.codex/sessions/YYYY/MM/DD/rollout-<stamp>-<thread id>.jsonl`, oldest first."""
    return sorted((home / ".codex" / "sessions").glob("*/*/*/rollout-*.jsonl"), key=lambda p: p.stat().st_mtime)


# ------------------------------------------------------------------------------------------------ copilot
def copilot_env(home: Path, base_url: str, *, model: str = "claude-sonnet-4", api_key: str = TEST_API_KEY,
                extra: dict[str, str] | None = None) -> dict[str, str]:
    """The complete environment for a Copilot CLI run in BYOK + offline mode against the scripted server's
    Anthropic Messages API (no GitHub login needed). State lands in `<home>/.copilot` (COPILOT_HOME); the
    self-extracted runtime is cached under the CLI prefix (XDG_CACHE_HOME) so only the first run pays ~4 s."""
    env = _base_env(home)
    env.update({
        "COPILOT_OFFLINE": "true",  # no GitHub auth, telemetry, web tools, GitHub MCP server or auto-update
        "COPILOT_PROVIDER_BASE_URL": base_url,
        "COPILOT_PROVIDER_TYPE": "anthropic",  # sends the key as x-api-key to <base_url>/v1/messages
        "COPILOT_PROVIDER_API_KEY": api_key,
        "COPILOT_MODEL": model,
        "COPILOT_AUTO_UPDATE": "false",
        "XDG_CACHE_HOME": str(clis_prefix() / ".xdg-cache"),
    })
    env.update(extra or {})
    return env


def copilot_prompt_argv(copilot: Path | str, prompt: str, *, allow_tools: Sequence[str] = ("shell", "write"),
                        output_format: str = "json", extra: Sequence[str] = ()) -> list[str]:
    """argv of a non-interactive `copilot -p` run. Tools are granted one by one with `--allow-tool` (`shell`,
    `shell(git:*)`, `write`, ...); a tool that is not granted is denied (no one can answer the prompt)."""
    if {"--allow-all", "--yolo", "--allow-all-tools"} & set(extra):
        raise ValueError("blanket permission flags are refused here; grant tools with --allow-tool")
    return [str(copilot), "-p", prompt, "--output-format", output_format, "--no-auto-update",
            *[f"--allow-tool={t}" for t in allow_tools], *extra]


def copilot_session_files(home: Path) -> list[Path]:
    """Copilot session event logs `<home>/.copilot/session-state/<session id>/events.jsonl`, oldest first."""
    return sorted((home / ".copilot" / "session-state").glob("*/events.jsonl"), key=lambda p: p.stat().st_mtime)


# ------------------------------------------------------------------------------------------------ opencode
def opencode_config(base_url: str, *, model: str = "anthropic/claude-sonnet-4-5", api_key: str = TEST_API_KEY,
                    permissions: dict[str, str] | None = None) -> dict[str, Any]:
    """An opencode config (passed as OPENCODE_CONFIG_CONTENT) that points the built-in `anthropic` provider at
    the scripted server and allows bash and edits without a prompt."""
    return {
        "provider": {"anthropic": {"options": {"baseURL": f"{base_url.rstrip('/')}/v1", "apiKey": api_key}}},
        "model": model,
        "permission": permissions or {"bash": "allow", "edit": "allow"},
        "autoupdate": False,
        "share": "disabled",
    }


def opencode_env(home: Path, base_url: str, *, model: str = "anthropic/claude-sonnet-4-5",
                 api_key: str = TEST_API_KEY, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The complete environment for an `opencode run` against the scripted server. State lands under
    `<home>/.local/share/opencode` (sessions in its SQLite database opencode.db)."""
    env = _base_env(home)
    env.update({
        "OPENCODE_CONFIG_CONTENT": json.dumps(opencode_config(base_url, model=model, api_key=api_key)),
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    })
    env.update(extra or {})
    return env


def opencode_run_argv(opencode: Path | str, prompt: str, *, model: str | None = None,
                      extra: Sequence[str] = ()) -> list[str]:
    """argv of `opencode run --format json` (JSON events on stdout). `--pure` skips external plugins."""
    if "--auto" in extra:
        raise ValueError("--auto approves everything; grant permissions in the config instead")
    argv = [str(opencode), "run", "--format", "json", "--pure"]
    if model:
        argv += ["--model", model]
    return [*argv, *extra, prompt]


# ------------------------------------------------------------------------------------------------ running
def run_cli(argv: Sequence[str], *, cwd: Path, env: dict[str, str],
            timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """Run a CLI to completion with stdin closed (codex exec otherwise waits to read more prompt from stdin)."""
    return subprocess.run(list(argv), check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def parse_jsonl(text: str) -> list[dict[str, Any]]:
    """Parse JSON Lines output; a line that is not JSON raises ValueError (not an object: TypeError) naming the line."""
    events = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"line {number} is not JSON: {line[:200]!r}") from exc
        if not isinstance(obj, dict):
            raise TypeError(f"line {number} is not a JSON object: {line[:200]!r}")
        events.append(obj)
    return events


def run_in_tmux(argv: Sequence[str], *, cwd: Path, env: dict[str, str], done: Callable[[], bool],
                timeout: float = 60, width: int = 150, height: int = 45) -> str:
    """Run an interactive CLI in a detached tmux session on a private socket (so a person's tmux is never
    touched), poll `done()` every 0.5 s until it is true or `timeout` passes, capture the screen, type `/exit`,
    and end that tmux server. Returns the captured screen. Raises FileNotFoundError when tmux is missing."""
    tmux = shutil.which("tmux")
    if tmux is None:
        raise FileNotFoundError("tmux")
    socket = f"skillgit-{os.getpid()}-{next(_TMUX_IDS)}"
    command = "env -i " + shlex.join([f"{k}={v}" for k, v in env.items()] + [str(a) for a in argv])
    subprocess.run([tmux, "-L", socket, "new-session", "-d", "-s", "agent", "-x", str(width), "-y", str(height),
                    "-c", str(cwd), command], check=True, timeout=30)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not done():
            time.sleep(0.5)
        time.sleep(1.0)  # let the TUI finish drawing and writing its transcript after the last reply
        screen = subprocess.run([tmux, "-L", socket, "capture-pane", "-p", "-t", "agent"], check=False,
                                capture_output=True,
                                text=True, timeout=30).stdout
        subprocess.run([tmux, "-L", socket, "send-keys", "-t", "agent", "/exit", "Enter"], check=False, timeout=30)
        end = time.monotonic() + 10
        while time.monotonic() < end and subprocess.run([tmux, "-L", socket, "has-session", "-t", "agent"],
                                                         check=False, capture_output=True,
                                                         timeout=30).returncode == 0:
            time.sleep(0.3)
        return screen
    finally:
        subprocess.run([tmux, "-L", socket, "kill-server"], check=False, capture_output=True, timeout=30)


if __name__ == "__main__":  # `python -m tests.agent_clis install [claude codex ...]`: a setup step, not a test
    import sys

    if sys.argv[1:2] != ["install"]:
        sys.exit("usage: python -m tests.agent_clis install [claude|codex|copilot|opencode ...]")
    for cli, path in install_clis(sys.argv[2:] or None).items():
        print(f"{cli}\t{path}\t{cli_version(path) if path else 'missing'}")

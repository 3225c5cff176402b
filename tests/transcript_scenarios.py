"""Scripted sessions of the REAL agent CLIs that show what sleep's readers must tell apart: a person's own commands
to the agent and interrupts (not requests), and skills each CLI invoked. Used by
tests/fixtures/agent_cli/regenerate.py (`readers` step: the fixtures) and tests/test_sleep_readers_real.py (live).

Contract: each scenario takes the CLI executable, a HOME and an empty project folder, writes the project (notes.md,
the `tidy-notes` skill where that CLI finds project skills, a git repository with one commit), runs the CLI
against the scripted server on 127.0.0.1 and returns the session file it wrote. Interactive scenarios drive the
TUI in tmux on a private socket (`Tui`); they raise FileNotFoundError when tmux is missing.

Between keystrokes a scenario waits for what the next one needs — the typed text drawn in the input line, the TUI
idle again, a command's output or dialog on screen, the slow command's process running — polled with a deadline,
never a fixed pause where that is observable. A condition that never comes (a CLI that changed its screen) only
costs its deadline: the keystrokes go on as before. A fixed pause remains where nothing shows: Copilot CLI does
not draw typed text before Enter.

Interrupts are each CLI's real one. Claude Code: Esc (`[Request interrupted by user for tool use]`). Copilot CLI
(1.0.102): Ctrl+C — its `?` help lists "ctrl+c cancel", "ctrl+c×2 exit", "esc esc clear input, interrupt, stop
agents, or rewind"; while a shell command runs, Esc Esc does NOT abort the turn: it moves the command to the
background ("moved to background by the user"), the turn goes on, and the next message is delivered into it as
`steering`. One Ctrl+C kills the command ("Operation aborted by user"), ends the turn ("Operation cancelled by
user") and logs an `abort` event {"reason": "user_initiated"}; the next message starts a turn of its own (`idle`).
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tests import agent_clis as ac
from tests.agent_server import AgentServer, Turn, bash, exec_command, text, tool

SKILL_NAME = "tidy-notes"
SKILL = (f"---\nname: {SKILL_NAME}\ndescription: Use when tidying notes.md.\n---\n\n# Tidy notes\n\n"
         "Sort the lines of notes.md.\n")
# what the person types in the interactive scenarios; the commands and the interrupt are the agent's own
FIRST, SECOND, THIRD = "Append one to notes.md.", "Append two to notes.md.", "ok, stop there"
SLOW = "python3 -c 'import time; time.sleep(60)'"
_IDS = itertools.count(1)
# what each TUI shows while it works (gone when it waits for the person)
CLAUDE_BUSY, COPILOT_BUSY = "esc to interrupt", "esc esc interrupt"
COPILOT_CANCELLED = "Operation cancelled by user"  # Copilot CLI's line once Ctrl+C has ended the turn
SETTLE_S = 10.0  # the deadline of a wait that replaced a fixed pause of 0.4–3 s


def skill_project(project: Path, skill_dir: str) -> Path:
    """notes.md and the `tidy-notes` skill in `<project>/<skill_dir>/tidy-notes/SKILL.md`, committed."""
    (project / "notes.md").write_text("# Notes\n")
    skill = project / skill_dir / SKILL_NAME / "SKILL.md"
    skill.parent.mkdir(parents=True, exist_ok=True)
    skill.write_text(SKILL)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "initial"]):
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)
    return project


class Tui:
    """An interactive CLI in a detached tmux session on a private socket (a person's tmux is never touched).

    `echoes`: the TUI draws typed text in its input line before Enter (Claude Code), so `type` waits for it to show;
    else (Copilot CLI) it pauses 0.4 s. `busy`: text the TUI shows while it works, for `idle`."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str], width: int = 150, height: int = 45, *,
                 echoes: bool = False, busy: str | None = None) -> None:
        tmux = shutil.which("tmux")
        if tmux is None:
            raise FileNotFoundError("tmux")
        self.tmux, self.socket = tmux, f"skillgit-rd-{os.getpid()}-{next(_IDS)}"
        self.echoes, self.busy = echoes, busy
        command = "env -i " + shlex.join([f"{k}={v}" for k, v in env.items()] + argv)
        self._run("new-session", "-d", "-s", "agent", "-x", str(width), "-y", str(height), "-c", str(cwd), command)

    def _run(self, *args: str) -> str:
        return subprocess.run([self.tmux, "-L", self.socket, *args], check=False, capture_output=True, text=True,
                              timeout=30).stdout

    def screen(self) -> str:
        return self._run("capture-pane", "-p", "-t", "agent")

    def keys(self, *keys: str) -> None:
        self._run("send-keys", "-t", "agent", *keys)

    def type(self, line: str) -> None:
        """Type `line` and press Enter once the TUI has taken the text in (see the class)."""
        before = self.screen().count(line) if self.echoes else 0
        self._run("send-keys", "-t", "agent", "-l", line)
        if self.echoes:
            self.wait(lambda: self.screen().count(line) > before, SETTLE_S)
        else:
            time.sleep(0.4)
        self.keys("Enter")

    def idle(self, timeout: float = SETTLE_S) -> bool:
        """Wait until the TUI no longer shows that it works (`busy`)."""
        assert self.busy is not None
        busy = self.busy
        return self.wait(lambda: busy not in self.screen(), timeout)

    def wait(self, done: Callable[[], bool], timeout: float = 60) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if done():
                return True
            time.sleep(0.1)
        return False

    def alive(self) -> bool:
        return subprocess.run([self.tmux, "-L", self.socket, "has-session", "-t", "agent"], check=False,
                              capture_output=True, timeout=30).returncode == 0

    def close(self) -> None:
        self._run("kill-server")


def command_running(cwd: Path, command: str) -> bool:
    """Whether a process started in `cwd` runs `command` (a shell line; its words are matched in the argv)."""
    words = shlex.split(command)
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
            if argv[:len(words)] == words and Path(os.readlink(proc / "cwd")) == cwd.resolve():
                return True
        except OSError:  # (gone, or not ours to read)
            continue
    return False


def _answered(screen: str, command: str) -> bool:
    """Whether the output of `command` (a local slash command) shows under its line (Claude Code: `⎿`)."""
    lines = screen.splitlines()
    mine = [i for i, line in enumerate(lines) if line.startswith(f"❯ {command}")]
    return bool(mine) and any(line.lstrip().startswith("⎿") for line in lines[mine[-1] + 1:])


def _running(server: AgentServer, turns_left: int) -> Callable[[], bool]:
    return lambda: server.pending <= turns_left


def claude_commands(claude: Path, home: Path, project: Path) -> Path:
    """Interactive Claude Code: a request; `/mcp` (a built-in command answered locally); `/tidy-notes` (a skill
    invoked by its command); a request interrupted with Esc while its tool runs
    (`[Request interrupted by user for tool use]`); a last request; `/exit`."""
    skill_project(project, ".claude/skills")
    ac.prepare_claude_home(home, trusted=[project])
    script = [bash("echo one >> notes.md"), text("Appended one."), bash("sort notes.md"), text("Tidied."),
              bash(SLOW), text("Stopped; nothing else was changed.")]
    with AgentServer(script) as server:
        tui = Tui(ac.claude_interactive_argv(claude, FIRST), project, ac.claude_env(home, server.base_url),
                  echoes=True, busy=CLAUDE_BUSY)
        try:
            tui.wait(lambda: "Appended one" in tui.screen(), 90)
            tui.idle()
            tui.type("/mcp")
            tui.wait(lambda: _answered(tui.screen(), "/mcp"), SETTLE_S)
            tui.keys("Escape")
            tui.type(f"/{SKILL_NAME}")
            tui.wait(lambda: _running(server, 2)() and "Tidied" in tui.screen(), 60)
            tui.idle()
            tui.type(SECOND)
            tui.wait(_running(server, 1), 60)
            tui.wait(lambda: command_running(project, SLOW), SETTLE_S)  # Esc now interrupts the tool's run
            tui.keys("Escape")
            tui.wait(lambda: "Interrupted" in tui.screen(), SETTLE_S)
            tui.idle()
            tui.type(THIRD)
            tui.wait(_running(server, 0), 60)
            tui.wait(lambda: "Stopped; nothing else" in tui.screen(), SETTLE_S)
            tui.idle()
            tui.type("/exit")
            tui.wait(lambda: not tui.alive(), 15)
        finally:
            tui.close()
    return ac.claude_session_files(home)[-1]


def copilot_commands(copilot: Path, home: Path, project: Path) -> Path:
    """Interactive Copilot CLI: a request; `/model` and `/skills` (the CLI's own dialogs); `/tidy-notes` (a skill by
    its command: `skill.invoked` trigger user-invoked); a request interrupted with Ctrl+C while its slow command
    runs (Copilot's cancel: an `abort` event; Esc Esc would only background the command, see the module
    docstring); a last request."""
    skill_project(project, ".github/skills")
    (home / ".copilot").mkdir(parents=True, exist_ok=True)
    (home / ".copilot" / "config.json").write_text(json.dumps({"trustedFolders": [str(project)]}) + "\n")
    script = [tool("bash", command="echo one >> notes.md", description="Append"), text("Appended one."),
              tool("bash", command="sort notes.md", description="Sort"), text("Tidied."),
              tool("bash", command=SLOW, description="Wait"), text("Stopped; nothing else was changed.")]
    with AgentServer(script) as server:
        argv = [str(copilot), "-i", FIRST, "--no-auto-update", "--allow-tool=shell", "--allow-tool=write"]
        tui = Tui(argv, project, ac.copilot_env(home, server.base_url), busy=COPILOT_BUSY)
        try:
            tui.wait(lambda: "Appended one" in tui.screen(), 120)
            for command in ("/model", "/skills"):
                tui.type(command)
                tui.wait(lambda: "↑/↓" in tui.screen(), SETTLE_S)  # the dialog is open (its keys' help line)
                tui.keys("Escape")
                tui.wait(lambda: "↑/↓" not in tui.screen(), SETTLE_S)
            tui.type(f"/{SKILL_NAME}")
            tui.wait(lambda: _running(server, 2)() and "Tidied" in tui.screen(), 60)
            tui.idle()
            tui.type(SECOND)
            tui.wait(_running(server, 1), 60)
            tui.wait(lambda: command_running(project, SLOW), SETTLE_S)  # Ctrl+C now cancels the turn
            tui.keys("C-c")  # (once: a second Ctrl+C soon after exits the CLI)
            tui.wait(lambda: COPILOT_CANCELLED in tui.screen() and not command_running(project, SLOW), SETTLE_S)
            tui.type(THIRD)
            tui.wait(_running(server, 0), 60)
            tui.wait(lambda: "Stopped; nothing else" in tui.screen(), SETTLE_S)
            tui.type("/exit")
            tui.wait(lambda: not tui.alive(), 15)
        finally:
            tui.close()
    return ac.copilot_session_files(home)[-1]


def codex_skill(codex: Path, home: Path, project: Path) -> Path:
    """`codex exec "$tidy-notes …"`: the mention injects the skill (`<skill>` item); the agent also reads the
    SKILL.md with its shell."""
    skill_project(project, ".agents/skills")
    script = [exec_command(f"cat .agents/skills/{SKILL_NAME}/SKILL.md", login=False),
              exec_command("sort notes.md", login=False), text("Tidied.")]
    with AgentServer(script) as server:
        argv = ac.codex_exec_argv(codex, f"${SKILL_NAME} Tidy the notes.", server.base_url, model="gpt-5.5")
        proc = ac.run_cli(argv, cwd=project, env=ac.codex_env(home))
    assert proc.returncode == 0, proc.stderr
    return ac.codex_session_files(home)[-1]


def opencode_skill(opencode: Path, home: Path, project: Path) -> Path:
    """`opencode run`: the agent calls OpenCode's `skill` tool (`{"name": "tidy-notes"}`), then its shell."""
    skill_project(project, ".opencode/skills")
    script = [Turn(tool_name="skill", tool_input={"name": SKILL_NAME}),
              tool("bash", command="sort notes.md", description="Sort"), text("Tidied.")]
    with AgentServer(script) as server:
        proc = ac.run_cli(ac.opencode_run_argv(opencode, "Tidy the notes."), cwd=project,
                          env=ac.opencode_env(home, server.base_url), timeout=240)
    assert proc.returncode == 0, proc.stderr
    return home / ".local" / "share" / "opencode" / "opencode.db"

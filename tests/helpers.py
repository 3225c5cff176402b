"""Helpers more than one test module (or bench script) needs: a demo project, the decided git state of a run, the
MCP start-up probe. Standard library only at import time: `bench/mcp_start.py` imports this module too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Mapping

# The teacher lines of the demo's skillgit.yaml, which `agent_teacher_project` replaces.
_CHAT_TEACHER = "  teacher_backend: simulated\n  teacher_model: sim-teacher\n"


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


# ---------------------------------------------------------------------------------------------- projects
def demo_project(root: Path, seed: int = 0) -> Path:
    """The `skillgit demo` project (simulated world, seeded) created at `root`."""
    from skillgit.cli.demo import create_project

    create_project(root, seed)
    return root


def agent_teacher_project(root: Path, seed: int = 5) -> Path:
    """The demo project with the simulated agent teacher (whose chat side is the simulated chat teacher),
    committed."""
    from skillgit.cli.demo import AGENT_TEACHER

    demo_project(root, seed)
    path = root / "skillgit.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace(_CHAT_TEACHER, AGENT_TEACHER), encoding="utf-8")
    _git(root, "commit", "-qm", "agent teacher", "--", "skillgit.yaml")
    return root


# ---------------------------------------------------------------------------------------------- git state
def decided_state(folder: Path) -> dict:
    """Everything a run decided: the branches, the rejected tags, and each decided commit's notes without the
    fields that measure the process rather than the decision (timings, spend)."""
    refs = _git(folder, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags").splitlines()
    notes = {}
    for line in _git(folder, "notes", "--ref", "skillgit", "list").splitlines():
        _, sha = line.split()
        records = []
        for raw in _git(folder, "notes", "--ref", "skillgit", "show", sha).splitlines():
            if raw.strip():
                record = json.loads(raw)
                record.pop("usage", None)
                record.pop("timings", None)
                records.append(json.dumps(record, sort_keys=True))
        notes[sha] = sorted(records)
    return {"refs": sorted(refs), "notes": notes}


def paid_calls(folder: Path) -> tuple[int, int]:
    """(calls paid, distinct calls): every finished model call is journaled once, when it is paid; a call paid
    again (a resume that failed to reuse the journal) shows as a repeated put."""
    from skillgit.llm.cache import CallCache

    stats = CallCache(folder / ".git" / "skillgit" / "cache" / "calls.sqlite").stats()
    distinct = stats.entries + stats.tombstones
    return distinct + stats.repeated_puts, distinct


# ---------------------------------------------------------------------------------------------- MCP start-up
# `skillgit mcp` in a fresh interpreter whose stdout is a tap: when the first byte of the answer is written, the
# tap records sys.modules in the file argv[1]; the rest of argv goes to `skillgit mcp`.
MCP_PROBE = """
import io, json, os, sys
out_file = sys.argv[1]
class Tap(io.RawIOBase):
    seen = False
    def writable(self):
        return True
    def write(self, b):
        if not Tap.seen:
            Tap.seen = True
            with open(out_file, "w") as f:
                json.dump(sorted(sys.modules), f)
        return os.write(1, bytes(b))
sys.stdout = io.TextIOWrapper(io.BufferedWriter(Tap()), encoding="utf-8")
sys.argv = ["skillgit", "mcp", *sys.argv[2:]]
from skillgit.entry import main
main()
"""


def initialize_request(client: str) -> dict:
    """The MCP `initialize` request a client named `client` sends first."""
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": client, "version": "0"}}}


def mcp_answer_and_modules(cwd: Path, out: Path, *args: str, client: str = "test",
                           env: Mapping[str, str] | None = None) -> tuple[str, list[str], str]:
    """Run `skillgit mcp ARGS` in `cwd` under the probe, send one `initialize`, read the answer line, then close
    stdin (the server ends): (the answer line, the modules loaded when it was written — recorded in `out` —, the
    server's stderr). The modules are [] when no answer was written."""
    proc = subprocess.Popen([sys.executable, "-c", MCP_PROBE, str(out), *args], cwd=cwd, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ if env is None else env))
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write((json.dumps(initialize_request(client)) + "\n").encode())
        proc.stdin.flush()
        line = proc.stdout.readline()
    finally:
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
    modules = json.loads(out.read_text()) if line and out.exists() else []
    return line.decode(errors="replace"), modules, err.decode(errors="replace")


def sdk_modules(env: Mapping[str, str] | None = None) -> list[str]:
    """The modules `import mcp` loads by itself (the floor of any MCP server)."""
    code = "import json, sys, mcp\nprint(json.dumps(sorted(sys.modules)))"
    return json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                     timeout=120, env=dict(os.environ if env is None else env)).stdout)


# ---------------------------------------------------------------------------------------------- agentic projects
def agentic_repo(root: Path, files: Mapping[str, str], skill: str) -> Path:
    """A git repository at `root` holding `files` (path → text) and the skill package `skill/SKILL.md`."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "skill").mkdir(parents=True, exist_ok=True)
    (root / "skill" / "SKILL.md").write_text(skill)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    return root


def agentic_tasks(project: Path, rows: list[dict], command: str, *, workers: int, batch_size: int = 1) -> None:
    """Commit `rows` as tasks.jsonl and a one-step skillgit.yaml whose student is the command agent `command`
    (its YAML flow mapping: `{preset: generic, …}`), the teacher simulated."""
    (project / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (project / "skillgit.yaml").write_text(
        "skill: {path: skill, branch: main}\n"
        f'env: {{tasks: tasks.jsonl, split_ratio: "1:1:0", workers: {workers}}}\n'
        "model:\n  student_backend: agent\n  teacher_backend: simulated\n"
        f"  student:\n    command: {command}\n"
        f"train: {{max_steps: 1, batch_size: {batch_size}}}\n")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "tasks")

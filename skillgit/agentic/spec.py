"""The agentic part of a task row, typed.

A task row (JSONL/YAML) is agentic when it has `workspace` or `verify`:
```
{"id": "textkit-slugify", "prompt": "Add a function …",
 "workspace": {"fixture": "repos/textkit"} | {"repo": ".", "rev": "HEAD"},   (+ optional "paths": ["src/app", "tests"])
 "setup": ["pip install -e ."],
 "verify": {"command": "python -m pytest -q tests/verify/test_x.py", "timeout_s": 60,
            "result": "pytest" | "exit_code" | "junit:<path>" | "json", "feedback": "summary" | "full" | "none",
            "files": ["tests/", "scripts/check.sh"]}}   (optional)
```
`fixture` is a folder relative to the task file that resolves (links followed) inside the task file's folder or the
project (the links inside it are checked when it is copied: `workspace.check_fixture`); `repo` a git repository
(relative to the project root) whose `rev` a pooled workspace is reset to (`workspace.Workspaces`). A leading
`python` in a command means the interpreter running skillgit.
`workspace.paths` (optional) names the files and folders, relative to the repository's (or fixture's) root, that the
task needs: the workspace then holds only those (a sparse checkout: a big repository costs what the task reads).
Each is a plain path (no glob, no `..`, no leading `/`) that must exist at the task's revision.
`verify.feedback` is what the teacher reads of the verifier's output (`skillgit.agentic.verify`): `summary` (the
default: the verdict, the counts, the failing tests and the messages the verifier's author wrote; never its source
or the values its assertions compare), `full` (the output's tail as printed) or `none` (the verdict only).
`verify.files` (optional, checked like `workspace.paths`) names more of the verifier's files and folders than it
finds itself: all are put back as they were when the agent started before the verifier runs (`guard`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillgit.errors import ConfigError
from skillgit.types import Item

# Sessions skillgit starts itself are no person's work, and harvest (skillgit.sleep) must never learn from them:
# every agent runs with REPLAY_ENV=1 (hooks such as our SessionEnd hook read it) in a workspace under
# <tmp>/WORKSPACE_PREFIX<hash>/ (harvest recognises sessions whose cwd is there).
REPLAY_ENV = "SKILLGIT_REPLAY"
WORKSPACE_PREFIX = "skillgit-ws-"

RESULT_KINDS = ("exit_code", "pytest", "json", "junit")
FEEDBACK_MODES = ("summary", "full", "none")  # verify.feedback; the first is the default
TASK_DIR_KEY = "task_dir"  # set by the task loader: the folder of the task file (fixtures are relative to it)


@dataclass(frozen=True)
class Verify:
    command: str
    timeout_s: float = 300.0
    result: str = "exit_code"  # exit_code | pytest | json | junit:<path>
    feedback: str = FEEDBACK_MODES[0]  # what the teacher reads of the verifier's output: summary | full | none
    files: tuple[str, ...] = ()  # verify.files: more of the verifier's files and folders (`guard`)

    @property
    def kind(self) -> str:
        return self.result.partition(":")[0]


@dataclass(frozen=True)
class AgenticSpec:
    item_id: str
    prompt: str
    fixture: Path | None
    repo: Path | None
    rev: str
    setup: tuple[str, ...]
    verify: Verify
    setup_timeout_s: float = 600.0
    paths: tuple[str, ...] = ()  # workspace.paths: the only files and folders checked out; () = the whole tree

    @staticmethod
    def is_agentic(item: Item) -> bool:
        return "workspace" in item.metadata or "verify" in item.metadata

    @classmethod
    def from_item(cls, item: Item, project_root: Path) -> "AgenticSpec":
        meta: dict[str, Any] = item.metadata
        where = f"task '{item.id}'"
        base = Path(str(meta.get(TASK_DIR_KEY) or project_root))
        ws = meta.get("workspace") or {}
        if not isinstance(ws, dict):
            raise ConfigError(f"{where}: `workspace` must be a mapping", 'e.g. "workspace": {"fixture": "repos/app"}')
        fixture = repo = None
        if "fixture" in ws:
            fixture = (base / str(ws["fixture"])).resolve()
            if not fixture.is_dir():
                raise ConfigError(f"{where}: workspace.fixture {ws['fixture']!r} is not a folder (looked in {base})",
                                  "give a folder relative to the task file")
            if not any(fixture.is_relative_to(folder.resolve()) for folder in (base, project_root)):
                raise ConfigError(f"{where}: workspace.fixture {ws['fixture']!r} resolves to {fixture}, outside the "
                                  "task file's folder and the project", "keep the fixture inside the project (a "
                                  "link to a folder outside it would copy that whole tree into every workspace)")
        else:
            repo = (project_root / str(ws.get("repo", "."))).resolve()
        setup = meta.get("setup") or []
        if isinstance(setup, str):
            setup = [setup]
        if not isinstance(setup, list) or not all(isinstance(s, str) for s in setup):
            raise ConfigError(f"{where}: `setup` must be a list of shell commands", 'e.g. "setup": ["make deps"]')
        raw = meta.get("verify")
        if not isinstance(raw, dict) or not str(raw.get("command", "")).strip():
            raise ConfigError(f"{where}: `verify.command` is missing",
                              'e.g. "verify": {"command": "python -m pytest -q", "result": "pytest"}')
        result = str(raw.get("result", "exit_code"))
        if result.partition(":")[0] not in RESULT_KINDS:
            raise ConfigError(f"{where}: verify.result {result!r} is unknown", f"use one of {', '.join(RESULT_KINDS)}")
        try:
            timeout = float(raw.get("timeout_s", 300))
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: verify.timeout_s must be a number of seconds", "e.g. 120") from None
        feedback = raw.get("feedback", FEEDBACK_MODES[0])
        if feedback not in FEEDBACK_MODES:
            raise ConfigError(f"{where}: verify.feedback {feedback!r} is not one of {', '.join(FEEDBACK_MODES)}",
                              "summary (the default): failing tests and the verifier's messages, never its source "
                              "or compared values; full: the output as printed; none: the verdict only")
        files = _paths(raw.get("files"), where, "verify.files", _FILES_FIX)
        return cls(item.id, item.input, fixture, repo, str(ws.get("rev", "HEAD")), tuple(setup),
                   Verify(str(raw["command"]), timeout, result, str(feedback), files),
                   paths=_paths(ws.get("paths"), where))


_GLOB = set("*?[]\\")
_PATHS_FIX = 'e.g. "paths": ["src/app", "tests/test_app.py"] (files and folders relative to the repository\'s root)'
_FILES_FIX = ('e.g. "files": ["tests/", "scripts/check.sh"] (the verifier\'s files and folders, relative to the '
              "workspace's top; put back before the verifier runs)")


def _paths(raw: Any, where: str, key: str = "workspace.paths", fix: str = _PATHS_FIX) -> tuple[str, ...]:
    """`workspace.paths` (or `key`) checked: a list of plain relative paths (a single string is a list of one),
    normalised without a trailing '/', duplicates dropped; () when absent."""
    if raw is None:
        return ()
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list) or not items or not all(isinstance(p, str) for p in items):
        raise ConfigError(f"{where}: {key} must be a non-empty list of paths", fix)
    out: list[str] = []
    for path in items:
        clean = path.rstrip("/")
        parts = clean.split("/")
        why = ("is empty" if not clean else "is absolute" if path.startswith("/") else
               "holds '.' or '..' or an empty part" if any(p in ("", ".", "..") for p in parts) else
               "holds a glob character (*?[]\\)" if _GLOB & set(clean) else
               "holds a control character" if any(ord(c) < 32 or ord(c) == 127 for c in clean) else
               "begins or ends with a space" if clean != clean.strip() else
               "names the repository's .git" if parts[0] == ".git" else None)
        if why:
            raise ConfigError(f"{where}: {key} entry {path!r} {why}", fix)
        if clean not in out:
            out.append(clean)
    return tuple(out)

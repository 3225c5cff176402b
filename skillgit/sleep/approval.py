"""Which shell commands of mined tasks a person approved on this machine.

A mined agentic task carries shell commands taken from a transcript: `verify.command` (the test command the
sessions ran) and `setup` (empty when mined; a person may add some). A transcript is text an attacker can
influence — a pasted issue, a README or web page the agent read can make it run `pytest; curl … | sh` once — so
such a command runs in a night only when a person approved that exact text here.

Contracts:
- `command_key(task)`: the sha256 over the task's setup commands and verify command (None for a text task, which
  runs no command). Another id, prompt or commit with the same commands has the same key; any edit of a command
  (by a person, by a later mine) makes a new key that nobody approved yet.
- `approved(common_dir)`: the keys approved in this repository
  (`<git-common-dir>/skillgit/sleep/approved-commands.json`, outside the working tree: a task file committed or
  pulled with `"reviewed": true` approves nothing, and neither does `sleep run --yes`, which only releases task
  text to the models). A missing or unreadable file approves nothing.
- `record(common_dir, tasks, approve=…)`: add (or, with `approve=False`, remove) the keys of `tasks`' commands;
  returns how many keys changed. Written whole (a temporary file, then a rename), readable by its owner only.
  `skillgit sleep review --approve` / `--revoke` call it for every task of the file it shows.
- `commands(task)`: the commands a task would run, in order (setup, then verify), for a person to read.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Iterable

from skillgit.sleep.mine import MinedTask

APPROVALS_FILE = "approved-commands.json"
FORMAT_VERSION = 1
NOT_APPROVED = ("agentic task whose commands nobody approved here (`skillgit sleep review` shows them, "
                "`--approve` approves them; --yes does not)")


def commands(task: MinedTask) -> list[str]:
    """See the module contract."""
    if task.kind != "agentic":
        return []
    verify = str((task.verify or {}).get("command") or "")
    return [*task.setup, *([verify] if verify.strip() else [])]


def command_key(task: MinedTask) -> str | None:
    """See the module contract."""
    if task.kind != "agentic":
        return None
    material = {"setup": list(task.setup), "verify": str((task.verify or {}).get("command") or "")}
    return hashlib.sha256(json.dumps(material, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def path(common_dir: Path) -> Path:
    return common_dir / "skillgit" / "sleep" / APPROVALS_FILE


def _read(common_dir: Path) -> dict[str, dict[str, str]]:
    try:
        data = json.loads(path(common_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    keys = data.get("commands") if isinstance(data, dict) else None
    if not isinstance(keys, dict):
        return {}
    return {str(k): v for k, v in keys.items() if isinstance(v, dict)}


def approved(common_dir: Path) -> frozenset[str]:
    """See the module contract."""
    return frozenset(_read(common_dir))


def approved_in(root: Path) -> frozenset[str]:
    """`approved` of the repository whose working tree is `root`."""
    from skillgit.store.repository import open_repository

    repo = open_repository(root)
    try:
        return approved(repo.common_dir)
    finally:
        repo.close()


def record(common_dir: Path, tasks: Iterable[MinedTask], *, approve: bool) -> int:
    """See the module contract."""
    keys = _read(common_dir)
    changed = 0
    now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    for task in tasks:
        key = command_key(task)
        if key is None:
            continue
        if approve and key not in keys:
            keys[key] = {"task": task.id, "approved_at": now}
            changed += 1
        elif not approve and keys.pop(key, None) is not None:
            changed += 1
    if changed:
        target = path(common_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".approved-", dir=target.parent)  # created 0600
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({"version": FORMAT_VERSION, "commands": keys}, out, indent=1, sort_keys=True)
            out.write("\n")
        os.replace(tmp, target)
    return changed

"""OpenCode sessions, under its data dir (`$XDG_DATA_HOME/opencode`, default `~/.local/share/opencode`).

Two layouts, both from the OpenCode repository (anomalyco/opencode, formerly sst/opencode):
- JSON files (`packages/opencode/src/storage/json-migration.ts` lists them): `storage/session/<projectID>/<id>.json`
  {id, projectID, parentID, directory, title, version, time {created, updated}}, `storage/message/<sessionID>/
  <messageID>.json` {id, sessionID, role user|assistant, time {created}}, `storage/part/<messageID>/<partID>.json`
  {type text|tool|reasoning|step-start|step-finish|file|patch|…; text; tool, callID, state {status pending|running|
  completed|error, input, output, error}} (`packages/opencode/src/session/message-v2.ts`).
- SQLite `opencode.db` (newer versions; `packages/opencode/src/session/session.sql.ts`): tables `session` (id,
  project_id, parent_id, directory, title, version, time_created, time_updated), `message` (id, session_id,
  time_created, data JSON without id/sessionID) and `part` (id, message_id, session_id, data JSON).

Real files of OpenCode 1.18.33 (tests/fixtures/transcripts/opencode/, made by the real CLI) keep sessions in
`opencode.db` only; its `session` table also has `permission` (JSON rules `[{permission, pattern, action}]`).

Contracts: a session with a `parentID` is a sub-agent (`sidechain`); ids sort in creation order, so parts are
ordered by id; part types outside `KNOWN_PARTS` are counted as `part/<type>`; the database is opened read-only and
columns newer than the reader's minimum are read only when present. Headless: `opencode run` creates its session
with rules that deny `question` and `plan_enter` (nobody is there to answer; the TUI's sessions carry no rules),
so such a session is `headless`, entrypoint `opencode run`. Skills (`Turn.skills`): OpenCode's `skill` tool
(`{"name"}`; its output says `Base directory for this skill: <dir>`) and SKILL.md / AGENTS.md reads. OpenCode's
own TUI commands (`/help`, `/models` …) never reach the database (seen with 1.18.33 in tmux).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from skillgit.sleep.model import MALFORMED, Session
from skillgit.sleep.readers._common import (
    Draft,
    as_dict,
    iso_from_ms,
    read_json,
    skill_named,
    tool_call,
    tool_result,
)

SOURCE = "opencode"
_SKILL_BASE = re.compile(r"^Base directory for this skill:\s*(\S[^\n]*)", re.MULTILINE)
HEADLESS_DENIED = frozenset({"question", "plan_enter"})  # what `opencode run` denies up front
KNOWN_PARTS = frozenset({
    "text", "tool", "reasoning", "step-start", "step-finish", "file", "patch", "snapshot", "agent", "subtask",
    "retry", "compaction",
})


def data_dir(home: Path, environ: Mapping[str, str] | None = None) -> Path:
    xdg = (environ or {}).get("XDG_DATA_HOME")
    return (Path(xdg) if xdg else home / ".local" / "share") / "opencode"


def discover(home: Path, environ: Mapping[str, str] | None = None) -> list[Path]:
    base = data_dir(home, environ)
    found = [p for p in (base / "storage" / "session").glob("*/*.json") if p.is_file()]
    found.extend(p for p in base.glob("opencode*.db") if p.is_file())
    return sorted(found)


def fingerprint(path: Path) -> str:
    """Changes when the session, or any of its messages or parts, changes (they live in other folders)."""
    if path.suffix == ".db":
        stats = [p.stat() for p in (path, path.with_name(path.name + "-wal")) if p.exists()]
        return ";".join(f"{s.st_size}:{s.st_mtime_ns}" for s in stats)
    storage = path.parents[2]
    latest, count = path.stat().st_mtime_ns, 0
    for message in (storage / "message" / path.stem).glob("*.json"):
        count += 1
        latest = max(latest, message.stat().st_mtime_ns)
        for part in (storage / "part" / message.stem).glob("*.json"):
            count += 1
            latest = max(latest, part.stat().st_mtime_ns)
    return f"{count}:{latest}"


def is_headless(permission: Any) -> bool:
    """True for the permission rules (a list, or its JSON text) `opencode run` gives its sessions."""
    if isinstance(permission, (str, bytes)):
        try:
            permission = json.loads(permission)
        except ValueError:
            return False
    rules = permission if isinstance(permission, list) else []
    denied = {r.get("permission") for r in rules if isinstance(r, dict) and r.get("action") == "deny"}
    return HEADLESS_DENIED <= denied


Message = tuple[dict[str, Any], list[dict[str, Any]]]  # (message info, its parts)


def _tool_part(draft: Draft, part: dict[str, Any], ts: str | None) -> None:
    state = as_dict(part.get("state"))
    call_id, name = str(part.get("callID") or ""), str(part.get("tool") or "")
    draft.turns.call(tool_call(name, state.get("input"), call_id), ts)
    if name == "skill":  # OpenCode's skill tool: {"name": <skill>}; its output names the folder
        folder = _SKILL_BASE.search(str(state.get("output") or ""))
        path = f"{folder.group(1).strip()}/SKILL.md" if folder else None
        draft.turns.skill(skill_named(as_dict(state.get("input")).get("name"), "tool", path))
    if state.get("status") in ("completed", "error"):
        code = as_dict(state.get("metadata")).get("exit")
        output = state.get("output") if state.get("status") == "completed" else state.get("error")
        draft.turns.result(tool_result(output, state.get("status") == "error", call_id,
                                       code if isinstance(code, int) else None), ts)


def _message(draft: Draft, info: dict[str, Any], parts: list[dict[str, Any]]) -> None:
    draft.total += 1 + len(parts)
    role = info.get("role")
    ts = iso_from_ms(as_dict(info.get("time")).get("created"))
    texts = []
    for part in parts:
        kind = part.get("type")
        if kind not in KNOWN_PARTS:
            draft.unknown(f"part/{kind}")
        elif kind == "text" and not part.get("synthetic"):
            texts.append(str(part.get("text") or ""))
        elif kind == "tool" and role == "assistant":
            _tool_part(draft, part, ts)
    if role == "user":
        draft.turns.user("\n".join(texts), ts)
    elif role == "assistant":
        for text in texts:
            draft.turns.agent_text(text, ts)


def _times(messages: list[Message]) -> list[str]:
    found = (iso_from_ms(as_dict(m.get("time")).get("created")) for m, _ in messages)
    return [t for t in found if t]


def _session(info: dict[str, Any], messages: list[Message], path: Path, draft: Draft) -> Session:
    for message, parts in messages:
        _message(draft, message, parts)
    draft.total += 1
    times = _times(messages)
    created = info["time"].get("created") if isinstance(info.get("time"), dict) else info.get("time_created")
    headless = is_headless(info.get("permission"))
    return draft.session(
        str(info.get("id") or path.stem), cwd=info.get("directory") or None,
        started=iso_from_ms(created) or (times[0] if times else None), ended=times[-1] if times else None,
        entrypoint="opencode run" if headless else "opencode", headless=headless,
        sidechain=bool(info.get("parentID") or info.get("parent_id")), client_version=info.get("version") or None)


def _message_files(storage: Path, session_id: str, draft: Draft) -> list[Message]:
    messages = []
    for file in sorted((storage / "message" / session_id).glob("*.json")):
        message = read_json(file)
        if not isinstance(message, dict):
            draft.unknown(MALFORMED)
            continue
        parts = [read_json(p) for p in sorted((storage / "part" / file.stem).glob("*.json"))]
        for _ in (p for p in parts if not isinstance(p, dict)):
            draft.unknown(MALFORMED)
        messages.append((message, [p for p in parts if isinstance(p, dict)]))
    messages.sort(key=lambda m: (as_dict(m[0].get("time")).get("created") or 0, str(m[0].get("id") or "")))
    return messages


def _read_json_layout(path: Path) -> Iterable[Session]:
    draft = Draft(SOURCE, path)
    info = read_json(path)
    if not isinstance(info, dict):
        draft.unknown(MALFORMED)
        info = {}
    yield _session(info, _message_files(path.parents[2], path.stem, draft), path, draft)


def _loads(raw: Any, draft: Draft) -> dict[str, Any] | None:
    try:
        value = json.loads(raw) if isinstance(raw, (str, bytes)) else None
    except ValueError:
        value = None
    if not isinstance(value, dict):
        draft.unknown(MALFORMED)
        return None
    return value


def _message_rows(db: sqlite3.Connection, session_id: str, draft: Draft) -> list[Message]:
    messages = []
    for mid, created, data in db.execute(
            "SELECT id, time_created, data FROM message WHERE session_id = ? ORDER BY time_created, id", (session_id,)):
        info = _loads(data, draft)
        if info is None:
            continue
        info.setdefault("time", {"created": created})
        parts = [_loads(p, draft) for (p,) in db.execute("SELECT data FROM part WHERE message_id = ? ORDER BY id",
                                                          (mid,))]
        messages.append((info, [p for p in parts if p]))
    return messages


def _broken(path: Path, why: str) -> Session:
    return Session(source=SOURCE, session_id=path.stem, path=str(path), unknown_records={why: 1}, total_records=1)


def _read_database(path: Path) -> Iterable[Session]:
    try:
        db = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error:
        yield _broken(path, MALFORMED)
        return
    try:
        columns = {row[1] for row in db.execute("PRAGMA table_info(session)")}
        permission = "permission" if "permission" in columns else "NULL"
        rows = db.execute(f"SELECT id, parent_id, directory, version, time_created, {permission} FROM session "
                          "ORDER BY time_created, id").fetchall()
        for sid, parent, directory, version, created, rules in rows:
            draft = Draft(SOURCE, path)
            info = {"id": sid, "parent_id": parent, "directory": directory, "version": version,
                    "time_created": created, "permission": rules}
            yield _session(info, _message_rows(db, sid, draft), path, draft)
    except sqlite3.Error as exc:  # a schema this reader does not know: say so through the counts
        yield _broken(path, f"schema/{type(exc).__name__}")
    finally:
        db.close()


def read(path: Path) -> Iterable[Session]:
    return _read_database(path) if path.suffix == ".db" else _read_json_layout(path)

"""Cursor: composer / agent chats from Cursor's SQLite `state.vscdb` files (read-only, stdlib `sqlite3`), and the
agent transcripts under `~/.cursor/projects/*/agent-transcripts/` (the IDE agent's and the `cursor-agent` CLI's;
read by `_cursor_transcripts`, whose docstring has their layout).

Cursor is closed source; its on-disk layout is established only by public reverse-engineered references
(michaeldhood/chatrxiv `docs/cursor/storage-reference.md`, pppp606/cursor-efficiency `docs/vscdbRelation.md`):
- `<Cursor user dir>/User/workspaceStorage/<id>/state.vscdb`, table `ItemTable(key, value)`: key
  `composer.composerData` → `{"allComposers": [{"composerId", "createdAt", "lastUpdatedAt", …}]}`; the workspace
  folder is in `workspace.json` beside it. Older builds kept whole chats there under
  `workbench.panel.aichat.view.aichat.chatdata` → `{"tabs": [{"tabId", "bubbles": [{"type": "user"|"ai", "text"}]}]}`.
- `<Cursor user dir>/User/globalStorage/state.vscdb`, table `cursorDiskKV(key, value)`: `composerData:<composerId>`
  → `{composerId, createdAt, lastUpdatedAt, createdOnBranch, conversation?: [bubble], fullConversationHeadersOnly:
  [{bubbleId, type}]}`, and `bubbleId:<composerId>:<bubbleId>` → a bubble `{type: 1 user | 2 assistant, text,
  createdAt, toolFormerData?: {name, rawArgs, result, status}}`.

Contracts: `discover` returns workspace databases and every file under `agent-transcripts/`; `read` yields one
session per composer (or old-style tab) of a workspace database, and one per transcript file (none when the
database holds that conversation: the database has the tool results). The tool-call fields are the least certain
part of the layout and are read only when present; bubble types other than 1 and 2 are counted as
`bubble/<type>`; a missing table is a counted `schema/…` record; a transcript the reader cannot read is an
unknown record, so harvest warns about it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from skillgit.errors import BAD_JSON
from skillgit.sleep.model import MALFORMED, Session
from skillgit.sleep.readers._common import (
    Draft,
    as_dict,
    file_uri_path,
    iso_from_ms,
    read_json,
    tool_call,
    tool_result,
)
from skillgit.sleep.readers._cursor_transcripts import SOURCE, read_transcript, transcript_files

_BASES = (Path(".config"), Path("Library") / "Application Support", Path("AppData") / "Roaming")
_OLD_CHATS = "workbench.panel.aichat.view.aichat.chatdata"


def user_dirs(home: Path) -> list[Path]:
    return [d for d in (home / base / "Cursor" / "User" for base in _BASES) if d.is_dir()]


def discover(home: Path, environ: Mapping[str, str] | None = None) -> list[Path]:
    found: list[Path] = []
    for user in user_dirs(home):
        found.extend(p for p in (user / "workspaceStorage").glob("*/state.vscdb") if p.is_file())
    return sorted(found) + transcript_files(home)


def global_db(workspace_db: Path) -> Path:
    return workspace_db.parents[2] / "globalStorage" / "state.vscdb"


def fingerprint(path: Path) -> str:
    files = [path, global_db(path)] if path.suffix == ".vscdb" else [path]
    files += [f.with_name(f.name + "-wal") for f in files]
    return ";".join(f"{s.st_size}:{s.st_mtime_ns}" for s in (f.stat() for f in files if f.exists()))


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)


def _value(db: sqlite3.Connection, table: str, key: str) -> Any:
    row = db.execute(f"SELECT value FROM {table} WHERE key = ?", (key,)).fetchone()
    if row is None or row[0] is None:
        return None
    raw = row[0].decode("utf-8", "replace") if isinstance(row[0], bytes) else row[0]
    try:
        return json.loads(raw)
    except BAD_JSON:
        return None


# ------------------------------------------------------------------------------------------------ bubbles
def _user_bubble(draft: Draft, bubble: dict[str, Any], ts: str | None) -> None:
    draft.turns.user(str(bubble.get("text") or bubble.get("rawText") or ""), ts)


def _ai_bubble(draft: Draft, bubble: dict[str, Any], ts: str | None) -> None:
    tool = as_dict(bubble.get("toolFormerData"))
    if tool.get("name"):
        call_id = str(tool.get("toolCallId") or "")
        draft.turns.call(tool_call(str(tool["name"]), tool.get("rawArgs") or tool.get("params"), call_id), ts)
        if tool.get("result") is not None:
            draft.turns.result(tool_result(tool.get("result"), tool.get("status") == "error", call_id), ts)
    draft.turns.agent_text(str(bubble.get("text") or bubble.get("rawText") or ""), ts)


_BUBBLES = {1: _user_bubble, "user": _user_bubble, 2: _ai_bubble, "ai": _ai_bubble}


def _bubbles(draft: Draft, bubbles: list[Any]) -> None:
    draft.total += len(bubbles) + 1
    for bubble in bubbles:
        if not isinstance(bubble, dict):
            draft.unknown(MALFORMED)
            continue
        kind = bubble.get("type")
        handler = _BUBBLES.get(kind) if isinstance(kind, (int, str)) else None
        if handler is None:
            draft.unknown(f"bubble/{kind}")
        else:
            handler(draft, bubble, iso_from_ms(bubble.get("createdAt")))


def _composer_bubbles(gdb: sqlite3.Connection, composer_id: str, data: dict[str, Any]) -> list[Any]:
    bubbles: list[Any] = list(data.get("conversation") or [])
    if bubbles:
        return bubbles
    for header in data.get("fullConversationHeadersOnly") or []:
        bubble_id = header.get("bubbleId") if isinstance(header, dict) else None
        bubble = _value(gdb, "cursorDiskKV", f"bubbleId:{composer_id}:{bubble_id}") if bubble_id else None
        bubbles.append(bubble if isinstance(bubble, dict) else None)
    return bubbles


def _composer(gdb: sqlite3.Connection, composer_id: str, cwd: str | None, path: Path) -> Session:
    draft = Draft(SOURCE, path)
    data = _value(gdb, "cursorDiskKV", f"composerData:{composer_id}")
    if not isinstance(data, dict):
        draft.unknown(MALFORMED)
        data = {}
    _bubbles(draft, _composer_bubbles(gdb, composer_id, data))
    return draft.session(composer_id, cwd=cwd, git_branch=data.get("createdOnBranch"),
                         started=iso_from_ms(data.get("createdAt")), ended=iso_from_ms(data.get("lastUpdatedAt")),
                         entrypoint="cursor")


def _tab(tab: dict[str, Any], cwd: str | None, path: Path) -> Session:
    draft = Draft(SOURCE, path)
    _bubbles(draft, list(tab.get("bubbles") or []))
    return draft.session(str(tab.get("tabId") or path.parent.name), cwd=cwd, entrypoint="cursor")


def _broken(path: Path, cwd: str | None, why: str) -> Session:
    return Session(source=SOURCE, session_id=path.parent.name, cwd=cwd, path=str(path), unknown_records={why: 1},
                   total_records=1)


def _composers(wdb: sqlite3.Connection, path: Path, cwd: str | None) -> Iterator[Session]:
    entries = as_dict(_value(wdb, "ItemTable", "composer.composerData")).get("allComposers") or []
    ids = [str(c["composerId"]) for c in entries if isinstance(c, dict) and isinstance(c.get("composerId"), str)]
    if not (ids and global_db(path).exists()):
        return
    gdb = _connect(global_db(path))
    try:
        for composer_id in ids:
            yield _composer(gdb, composer_id, cwd, path)
    finally:
        gdb.close()


def _read_database(path: Path) -> Iterator[Session]:
    meta = read_json(path.parent / "workspace.json")
    cwd = file_uri_path(meta.get("folder")) if isinstance(meta, dict) else None
    try:
        wdb = _connect(path)
    except sqlite3.Error:
        yield _broken(path, cwd, MALFORMED)
        return
    try:
        yield from _composers(wdb, path, cwd)
        for tab in as_dict(_value(wdb, "ItemTable", _OLD_CHATS)).get("tabs") or []:
            if isinstance(tab, dict):
                yield _tab(tab, cwd, path)
    except sqlite3.Error as exc:
        yield _broken(path, cwd, f"schema/{type(exc).__name__}")
    finally:
        wdb.close()


# ------------------------------------------------------------------------------------------------ both layouts
def _cursor_home(transcript: Path) -> Path | None:
    parts = transcript.parts
    return Path(*parts[:parts.index(".cursor")]) if ".cursor" in parts else None


def in_store(transcript: Path, composer_id: str) -> bool:
    """Whether a Cursor database beside the transcript's home holds that conversation with its messages."""
    home = _cursor_home(transcript)
    for user in user_dirs(home) if home is not None else []:
        store = user / "globalStorage" / "state.vscdb"
        if not store.is_file():
            continue
        try:
            db = _connect(store)
            try:
                data = as_dict(_value(db, "cursorDiskKV", f"composerData:{composer_id}"))
            finally:
                db.close()
        except sqlite3.Error:
            continue
        if data.get("conversation") or data.get("fullConversationHeadersOnly"):
            return True
    return False


def read(path: Path) -> Iterable[Session]:
    return _read_database(path) if path.suffix == ".vscdb" else read_transcript(path, in_store)

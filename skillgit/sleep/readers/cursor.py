"""Cursor composer / agent chats, read from Cursor's SQLite `state.vscdb` files (read-only, stdlib `sqlite3`).

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

Contracts: `discover` returns workspace databases; `read` yields one session per composer (or old-style tab) of
that workspace; the tool-call fields are the least certain part of the layout and are read only when present;
bubble types other than 1 and 2 are counted as `bubble/<type>`; a missing table is a counted `schema/…` record.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from skillgit.sleep.model import MALFORMED, Session
from skillgit.sleep.readers._common import (
    TurnBuilder,
    as_dict,
    file_uri_path,
    iso_from_ms,
    read_json,
    tool_call,
    tool_result,
)

SOURCE = "cursor"
_BASES = (Path(".config"), Path("Library") / "Application Support", Path("AppData") / "Roaming")


def user_dirs(home: Path) -> list[Path]:
    return [d for d in (home / base / "Cursor" / "User" for base in _BASES) if d.is_dir()]


def discover(home: Path, environ: Mapping[str, str] | None = None) -> list[Path]:
    found: list[Path] = []
    for user in user_dirs(home):
        found.extend(p for p in (user / "workspaceStorage").glob("*/state.vscdb") if p.is_file())
    return sorted(found)


def global_db(workspace_db: Path) -> Path:
    return workspace_db.parents[2] / "globalStorage" / "state.vscdb"


def fingerprint(path: Path) -> str:
    files = [path, global_db(path)]
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
    except ValueError:
        return None


def _bubbles(builder: TurnBuilder, bubbles: list[Any], counts: Counter[str]) -> int:
    for bubble in bubbles:
        if not isinstance(bubble, dict):
            counts[MALFORMED] += 1
            continue
        kind = bubble.get("type")
        ts = iso_from_ms(bubble.get("createdAt"))
        text = str(bubble.get("text") or bubble.get("rawText") or "")
        if kind in (1, "user"):
            builder.user(text, ts)
        elif kind in (2, "ai"):
            tool = bubble.get("toolFormerData") if isinstance(bubble.get("toolFormerData"), dict) else None
            if tool and tool.get("name"):
                call_id = str(tool.get("toolCallId") or "")
                builder.call(tool_call(str(tool["name"]), tool.get("rawArgs") or tool.get("params"), call_id), ts)
                if tool.get("result") is not None:
                    builder.result(tool_result(tool.get("result"), tool.get("status") == "error", call_id), ts)
            builder.agent_text(text, ts)
        else:
            counts[f"bubble/{kind}"] += 1
    return len(bubbles)


def _composer(gdb: sqlite3.Connection, composer_id: str, cwd: str | None, path: Path) -> Session:
    counts: Counter[str] = Counter()
    data = _value(gdb, "cursorDiskKV", f"composerData:{composer_id}")
    if not isinstance(data, dict):
        counts[MALFORMED] += 1
        data = {}
    bubbles: list[Any] = list(data.get("conversation") or [])
    if not bubbles:
        for header in data.get("fullConversationHeadersOnly") or []:
            bubble_id = header.get("bubbleId") if isinstance(header, dict) else None
            bubble = _value(gdb, "cursorDiskKV", f"bubbleId:{composer_id}:{bubble_id}") if bubble_id else None
            bubbles.append(bubble if isinstance(bubble, dict) else None)
    builder = TurnBuilder()
    total = _bubbles(builder, bubbles, counts) + 1
    return Session(
        source=SOURCE, session_id=composer_id, cwd=cwd, git_branch=data.get("createdOnBranch"),
        started=iso_from_ms(data.get("createdAt")), ended=iso_from_ms(data.get("lastUpdatedAt")),
        entrypoint="cursor", turns=builder.build(), path=str(path), unknown_records=dict(counts),
        total_records=total,
    )


def read(path: Path) -> Iterable[Session]:
    meta = read_json(path.parent / "workspace.json")
    cwd = file_uri_path(meta.get("folder")) if isinstance(meta, dict) else None
    try:
        wdb = _connect(path)
    except sqlite3.Error:
        yield Session(source=SOURCE, session_id=path.parent.name, cwd=cwd, path=str(path),
                      unknown_records={MALFORMED: 1}, total_records=1)
        return
    try:
        composers = _value(wdb, "ItemTable", "composer.composerData")
        entries = as_dict(composers).get("allComposers") or []
        ids = [str(c["composerId"]) for c in entries if isinstance(c, dict) and isinstance(c.get("composerId"), str)]
        if ids and global_db(path).exists():
            gdb = _connect(global_db(path))
            try:
                for composer_id in ids:
                    yield _composer(gdb, composer_id, cwd, path)
            finally:
                gdb.close()
        chat = _value(wdb, "ItemTable", "workbench.panel.aichat.view.aichat.chatdata")
        for tab in as_dict(chat).get("tabs") or []:
            if not isinstance(tab, dict):
                continue
            counts: Counter[str] = Counter()
            builder = TurnBuilder()
            total = _bubbles(builder, list(tab.get("bubbles") or []), counts) + 1
            yield Session(source=SOURCE, session_id=str(tab.get("tabId") or path.parent.name), cwd=cwd,
                          entrypoint="cursor", turns=builder.build(), path=str(path), unknown_records=dict(counts),
                          total_records=total)
    except sqlite3.Error as exc:
        yield Session(source=SOURCE, session_id=path.parent.name, cwd=cwd, path=str(path),
                      unknown_records={f"schema/{type(exc).__name__}": 1}, total_records=1)
    finally:
        wdb.close()

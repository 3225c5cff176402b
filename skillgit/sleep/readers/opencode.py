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
so such a session is `headless`, entrypoint `opencode run`.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from skillgit.sleep.model import MALFORMED, Session
from skillgit.sleep.readers._common import TurnBuilder, as_dict, iso_from_ms, read_json, tool_call, tool_result

SOURCE = "opencode"
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


def _turns(messages: list[tuple[dict[str, Any], list[dict[str, Any]]]], counts: Counter[str]) -> tuple[Any, int]:
    builder = TurnBuilder()
    total = 0
    for info, parts in messages:
        total += 1
        role = info.get("role")
        ts = iso_from_ms((info.get("time") or {}).get("created") if isinstance(info.get("time"), dict) else None)
        texts = []
        for part in parts:
            total += 1
            kind = part.get("type")
            if kind not in KNOWN_PARTS:
                counts[f"part/{kind}"] += 1
            elif kind == "text" and not part.get("synthetic"):
                texts.append(str(part.get("text") or ""))
            elif kind == "tool" and role == "assistant":
                state = as_dict(part.get("state"))
                call_id = str(part.get("callID") or "")
                builder.call(tool_call(str(part.get("tool") or ""), state.get("input"), call_id), ts)
                if state.get("status") in ("completed", "error"):
                    meta = as_dict(state.get("metadata"))
                    code = meta.get("exit") if isinstance(meta.get("exit"), int) else None
                    output = state.get("output") if state.get("status") == "completed" else state.get("error")
                    builder.result(tool_result(output, state.get("status") == "error", call_id, code), ts)
        if role == "user":
            builder.user("\n".join(texts), ts)
        elif role == "assistant":
            for text in texts:
                builder.agent_text(text, ts)
    return builder.build(), total


def _session(info: dict[str, Any], messages: list[tuple[dict[str, Any], list[dict[str, Any]]]], path: Path,
             counts: Counter[str]) -> Session:
    turns, total = _turns(messages, counts)
    times = [iso_from_ms((m.get("time") or {}).get("created")) for m, _ in messages if isinstance(m.get("time"), dict)]
    times = [t for t in times if t]
    created = info.get("time", {}).get("created") if isinstance(info.get("time"), dict) else info.get("time_created")
    headless = is_headless(info.get("permission"))
    return Session(
        source=SOURCE,
        session_id=str(info.get("id") or path.stem),
        cwd=info.get("directory") or None,
        started=iso_from_ms(created) or (times[0] if times else None),
        ended=times[-1] if times else None,
        entrypoint="opencode run" if headless else "opencode",
        headless=headless,
        sidechain=bool(info.get("parentID") or info.get("parent_id")),
        client_version=info.get("version") or None,
        turns=turns,
        path=str(path),
        unknown_records=dict(counts),
        total_records=total + 1,
    )


def _read_json_layout(path: Path) -> Iterable[Session]:
    counts: Counter[str] = Counter()
    info = read_json(path)
    if not isinstance(info, dict):
        counts[MALFORMED] += 1
        info = {}
    storage = path.parents[2]
    messages = []
    for file in sorted((storage / "message" / path.stem).glob("*.json")):
        message = read_json(file)
        if not isinstance(message, dict):
            counts[MALFORMED] += 1
            continue
        parts = [read_json(p) for p in sorted((storage / "part" / file.stem).glob("*.json"))]
        bad = sum(1 for p in parts if not isinstance(p, dict))
        if bad:
            counts[MALFORMED] += bad
        messages.append((message, [p for p in parts if isinstance(p, dict)]))
    messages.sort(key=lambda m: ((m[0].get("time") or {}).get("created") or 0, str(m[0].get("id") or "")))
    yield _session(info, messages, path, counts)


def _loads(raw: Any, counts: Counter[str]) -> dict[str, Any] | None:
    try:
        value = json.loads(raw) if isinstance(raw, (str, bytes)) else None
    except ValueError:
        value = None
    if not isinstance(value, dict):
        counts[MALFORMED] += 1
        return None
    return value


def _read_database(path: Path) -> Iterable[Session]:
    try:
        db = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error:
        yield Session(source=SOURCE, session_id=path.stem, path=str(path), unknown_records={MALFORMED: 1},
                      total_records=1)
        return
    try:
        columns = {row[1] for row in db.execute("PRAGMA table_info(session)")}
        permission = "permission" if "permission" in columns else "NULL"
        rows = db.execute(f"SELECT id, parent_id, directory, version, time_created, {permission} FROM session "
                          "ORDER BY time_created, id").fetchall()
        for sid, parent, directory, version, created, rules in rows:
            counts: Counter[str] = Counter()
            messages = []
            for mid, mcreated, mdata in db.execute(
                    "SELECT id, time_created, data FROM message WHERE session_id = ? ORDER BY time_created, id",
                    (sid,)):
                info = _loads(mdata, counts)
                if info is None:
                    continue
                info.setdefault("time", {"created": mcreated})
                parts = [_loads(p, counts) for (p,) in db.execute(
                    "SELECT data FROM part WHERE message_id = ? ORDER BY id", (mid,))]
                messages.append((info, [p for p in parts if p]))
            info = {"id": sid, "parent_id": parent, "directory": directory, "version": version,
                    "time_created": created, "permission": rules}
            yield _session(info, messages, path, counts)
    except sqlite3.Error as exc:  # a schema this reader does not know: say so through the counts
        yield Session(source=SOURCE, session_id=path.stem, path=str(path),
                      unknown_records={f"schema/{type(exc).__name__}": 1}, total_records=1)
    finally:
        db.close()


def read(path: Path) -> Iterable[Session]:
    return _read_database(path) if path.suffix == ".db" else _read_json_layout(path)

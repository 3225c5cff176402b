"""The history `skillgit log` prints, kept across processes: `.git/skillgit/cache/log.json.z` (`log-edits.json.z`
for `log --json`, whose entries carry every edit); `status`'s val trend likewise.

Contract:
- What `history.history(store, None, edits)` returns is decided by refs alone (the objects a ref names never
  change): the skill branch's chain, the notes ref, the rejected tags, the runs' refs (a run's progress names the
  branches it trained onto), those branches and the remote-tracking refs, the gc archive. `state` lists every ref
  of the repository in one `git for-each-ref` and hashes it with the branch, the skill path and this format's
  version: the same state, the same entries.
- `cached_history` answers from the file when its state is the repository's (one `for-each-ref` and a read instead
  of listing the chain, the tags and the runs, grepping and decoding the notes); otherwise it reads the history
  as before and replaces the file, unless a ref moved while it read (a run writing meanwhile): then nothing is
  kept. The file holds one state; a missing, damaged or foreign file is a miss (safe to delete).
  `cached_value` does the same for any JSON value decided by refs alone (`status`'s val trend: `status.json.z`).
- Only commands that print the history read it (`skillgit log`, `skillgit status`). A training run never reads
  it; it writes it once, as it ends (`warm`, from `read.warm_caches`: one read of the history after its last ref
  moved, under its branch lock), so that the first `log` and `status` after a run answer from it.
"""

from __future__ import annotations

import hashlib
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from skillgit.store.history import LogEntry
from skillgit.store.packed import read_packed, write_packed

if TYPE_CHECKING:
    from skillgit.store.core import Store

VERSION = 1
_FIELDS = [f.name for f in fields(LogEntry)]
_TYPES: dict[str, Any] = {"run": str, "step": (int, str), "verdict": str, "sha": str, "subject": str,
                          "score": (float, int, type(None)), "delta": (float, int, type(None)), "edits": list,
                          "reason": str, "parent": (str, type(None)), "date": int, "tag": str, "archived": bool,
                          "note": str, "seq": (int, type(None))}


def state(store: "Store") -> str:
    """A digest of every ref of the repository (name and object) with what else picks the entries."""
    listing = store.repo.for_each_ref(["objectname", "refname"], "refs/")
    h = hashlib.sha256(f"{VERSION}\0{store.branch}\0{store.skill_path}\0".encode())
    for obj, ref in listing:
        h.update(f"{obj} {ref}\n".encode())
    return h.hexdigest()


def cached_history(store: "Store", edits: bool, read: Callable[[], list[LogEntry]]) -> list[LogEntry]:
    """`read()` (the whole history), or the entries it gave in the same ref state (see the module contract)."""
    fresh: list[list[LogEntry]] = []

    def compute() -> list[list[Any]]:
        fresh.append(read())
        return [_row(e) for e in fresh[0]]

    rows = cached_value(store, "log-edits" if edits else "log", "", compute)
    if fresh:
        return fresh[0]
    try:
        return [_entry(list(row)) for row in rows]
    except (ValueError, TypeError):  # a damaged file: read the history (the next call rewrites the file)
        return read()


def cached_value(store: "Store", name: str, key: str, compute: Callable[[], Any]) -> Any:
    """`compute()` (a JSON value decided by refs alone, e.g. `status`'s trend), or what it gave for the same `key`
    in the same ref state, kept in `.git/skillgit/cache/<name>.json.z` (one state and key per file)."""
    path = _path(store, name)
    before = f"{state(store)}\0{key}"
    found = _load(path, before)
    if found is not None:
        return found
    value = compute()
    if f"{state(store)}\0{key}" == before:
        _save(path, before, value)
    return value


def warm(store: "Store", read: Callable[[], list[LogEntry]], status_key: str,
         trend: Callable[[list[LogEntry]], Any]) -> None:
    """Write `log.json.z` from one read of the history (`read()`, without edits) and `status.json.z` for
    `status_key` from the same entries (`trend(entries)`), unless a ref moved while it read."""
    before = state(store)
    entries = read()
    if state(store) == before:
        _save(_path(store, "log"), f"{before}\0", [_row(e) for e in entries])
        _save(_path(store, "status"), f"{before}\0{status_key}", trend(entries))


def _path(store: "Store", name: str) -> Path:
    return store.repo.common_dir / "skillgit" / "cache" / f"{name}.json.z"


def _load(path: Path, key: str) -> Any:
    data = read_packed(path)
    if not isinstance(data, dict) or data.get("v") != VERSION or data.get("state") != key or "value" not in data:
        return None
    return data["value"]


def _row(e: LogEntry) -> list[Any]:
    return [list(e.edits) if name == "edits" else getattr(e, name) for name in _FIELDS]


_KINDS = [_TYPES[name] for name in _FIELDS]
_EDITS = _FIELDS.index("edits")


def _entry(row: list[Any]) -> LogEntry:
    if type(row) is not list or len(row) != len(_FIELDS):
        raise ValueError("not a cached entry")
    for value, kind in zip(row, _KINDS):
        if not isinstance(value, kind) or (type(value) is bool and kind is not bool):
            raise ValueError("not a cached entry")
    edits = row[_EDITS]
    if not all(type(e) is str for e in edits):
        raise ValueError("not a cached entry")
    row[_EDITS] = tuple(edits)
    return LogEntry(*row)


def _save(path: Path, key: str, value: Any) -> None:
    write_packed(path, {"v": VERSION, "state": key, "value": value})

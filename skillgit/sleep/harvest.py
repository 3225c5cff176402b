"""Harvest: the agent sessions of *this repository* that are new since the last harvest, scrubbed.

Contracts:
- `harvest(sources, home, repo_root, remotes, since)` reads the session files every named reader discovers under
  `home`, and returns a `HarvestResult`: `sessions` (a person's work on this repository, new or grown since
  `since`, every text field scrubbed), `skipped` (new sessions filtered out, with a `skipped_reason` and no turns),
  `warnings`, per-source counts of unknown record types, the `Redactions` applied, and the next `HarvestState`.
- Scope: a session belongs here when its cwd is `repo_root` or inside it, or when its git remote (recorded by the
  agent, or read with `git remote -v` from the cwd when that is another clone) matches one of `remotes`. A session
  whose place cannot be told is `other-project`. Filters, in order: other-project, replay (sessions skillgit
  started itself: `model.is_replay` — REPLAY_MARKER in the first user message, or a cwd in a skillgit throwaway
  workspace), sidechain (sub-agents), headless (`claude -p` / SDK entrypoints, `codex exec`, `copilot -p`,
  `opencode run`), empty (no user turn). A skipped session keeps its user-turn count (`user_turn_count`).
- Incremental: `HarvestState` records, per source file (keyed by source and the path relative to home, `~/…`; a file
  outside home by a hash of its path), a fingerprint (size and mtime, or the reader's own) and, per session id, a
  digest (`harvest_digest`; an older state's digests stay valid) and turn count. An unchanged file is not read
  again; a changed file is re-read and only sessions whose digest changed are returned;
  `first_new_turn[session.key]` tells where the new part of a grown session starts (0 for a new session). Sessions
  are deduplicated by (source, session id) across files: a session found in another file than before (Codex moving a
  rollout to `archived_sessions/`, the same file listed by the inbox) is compared with the digest recorded for it
  anywhere, and a vanished file's record of it is dropped. A skipped session is reported once. State round-trips
  through `to_json` / `from_json` (the lead keeps it in git).
- Inbox (`inbox=True`): the transcript paths agents recorded in `<git-common-dir>/skillgit/sleep/inbox.jsonl` are
  harvested too, even outside `home`, through the same scoping, filters and dedupe (the file must exist; its reader
  is told by its path). `result.inbox` lists the lines harvest is done with (harvested, already seen, gone, or
  unreadable); `consume_inbox(result)` trims them (readers/inbox.py) and is for the caller to run after it saved
  `result.state`, so a crash in between re-reads a line rather than losing a session. A line whose file failed to
  read, or whose source was not asked for, stays.
- A file no session can be told from (no turn, no cwd, no remote) is looked at before it is called
  `other-project` (`file_problem`): one that cannot be opened is `unreadable` (its state is not recorded, so it is
  read once it can be, and it is reported at every harvest until then), one that is not text is `binary` (a
  reader's own SQLite store excepted), and one with no record of the agent's format is `malformed`; its warning
  says which, with the OS error for an unreadable one.
- What is kept: a session as its reader read it, except that the output of a tool call that ran no command (a
  read, a search, an edit) is cut to its head (`scrub.previews`); the digest is of the reader's whole session.
- Streaming (`sink`): with `sink(session, first_new_turn)` given, each kept session goes to it as soon as it is
  scrubbed (a night hands them to the `Miner`, which keeps units, not sessions) and is not held: `sessions` is
  then empty and `streamed` counts them; `first_new_turn` is filled all the same.
- Never raises on what it reads: a reader failure, an unreadable file, more than `UNKNOWN_WARN_RATIO` unknown
  records, or a file of several records without a readable turn becomes a `HarvestWarning` with counts. A file
  whose reader failed keeps its previous state, so it is tried again next time.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillgit.sleep.harvest_digest import digest, same
from skillgit.sleep.model import MALFORMED, REPLAY_ENV, REPLAY_MARKER, Session, is_replay
from skillgit.sleep.readers import Reader, get_reader
from skillgit.sleep.readers import inbox as inbox_files
from skillgit.sleep.readers import sources as reader_sources
from skillgit.sleep.scrub import Redactions, Scrubber, build_scrubber, previews

UNKNOWN_WARN_RATIO = 0.2
NO_TURN_WARN_RECORDS = 3  # a file with at least this many records and no readable turn is a format warning
# 2: a file under home is keyed `source:home/<id>` (its `~/…` path hashed), no longer `source:~/…`, whose project
# folders (`~/.claude/projects/-home-<user>-src-app/`) spelt the user name; a version-1 state is read by hashing its
# keys the same way (`_path_key`), so nothing is harvested again
STATE_VERSION = 2

RemoteLookup = Callable[[str], Sequence[str]]
Sink = Callable[[Session, int], None]  # a kept session and the first turn that is new
__all__ = ["REPLAY_ENV", "REPLAY_MARKER", "HarvestCache", "HarvestResult", "HarvestState", "InboxBatch",
           "consume_inbox", "harvest", "skip_reason"]


@dataclass(frozen=True)
class SessionMark:
    digest: str
    turns: int

    def to_dict(self) -> dict[str, Any]:
        return {"digest": self.digest, "turns": self.turns}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SessionMark:
        return cls(str(data.get("digest", "")), int(data.get("turns", 0) or 0))


@dataclass(frozen=True)
class FileState:
    fingerprint: str
    sessions: dict[str, SessionMark] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"fingerprint": self.fingerprint, "sessions": {k: v.to_dict() for k, v in sorted(self.sessions.items())}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FileState:
        sessions = data.get("sessions") or {}
        return cls(str(data.get("fingerprint", "")), {str(k): SessionMark.from_dict(v) for k, v in sessions.items()})


@dataclass(frozen=True)
class HarvestState:
    """What earlier harvests saw; `HarvestState()` is the empty state (everything is new)."""

    files: dict[str, FileState] = field(default_factory=dict)
    version: int = STATE_VERSION

    def seen(self, source: str, session_id: str) -> bool:
        return any(k.startswith(source + ":") and session_id in f.sessions for k, f in self.files.items())

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "files": {k: v.to_dict() for k, v in sorted(self.files.items())}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HarvestState:
        files = data.get("files") or {}
        return cls({_path_key(str(k)): FileState.from_dict(v) for k, v in files.items()})

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> HarvestState:
        return cls.from_dict(json.loads(text)) if text.strip() else cls()


@dataclass(frozen=True)
class HarvestWarning:
    source: str
    path: str
    message: str
    counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "path": self.path, "message": self.message, "counts": dict(self.counts)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HarvestWarning:
        return cls(str(data.get("source", "")), str(data.get("path", "")), str(data.get("message", "")),
                   dict(data.get("counts") or {}))


@dataclass(frozen=True)
class InboxBatch:
    """The inbox lines a harvest is done with (`consume_inbox` trims them) and how many lines it found."""

    path: str | None = None
    consumed: tuple[str, ...] = ()
    found: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"found": self.found, "consumed": len(self.consumed)}


@dataclass(frozen=True)
class HarvestResult:
    sessions: tuple[Session, ...]
    skipped: tuple[Session, ...]
    first_new_turn: dict[str, int]
    warnings: tuple[HarvestWarning, ...]
    unknown_records: dict[str, dict[str, int]]
    redactions: Redactions
    state: HarvestState
    files_read: int = 0
    files_unchanged: int = 0
    inbox: InboxBatch = InboxBatch()
    streamed: int = 0  # kept sessions handed to a `sink` instead of `sessions`

    def summary(self) -> dict[str, Any]:
        reasons = Counter(s.skipped_reason for s in self.skipped)
        return {"sessions": len(self.sessions) + self.streamed, "skipped": dict(sorted(reasons.items())),
                "warnings": len(self.warnings), "files_read": self.files_read,
                "files_unchanged": self.files_unchanged, "redactions": self.redactions.to_dict()}

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": self.summary(),
            "sessions": [s.to_dict() for s in self.sessions],
            "skipped": [s.to_dict() for s in self.skipped],
            "first_new_turn": dict(self.first_new_turn),
            "warnings": [w.to_dict() for w in self.warnings],
            "unknown_records": {k: dict(v) for k, v in self.unknown_records.items()},
            "redactions": self.redactions.to_dict(), "state": self.state.to_dict(),
            "inbox": self.inbox.to_dict(),
        }


# --------------------------------------------------------------------------------------------------- scoping
def normalize_remote(url: str) -> str:
    """`git@github.com:Org/Repo.git`, `https://user@github.com/org/repo` → `github.com/org/repo`."""
    u = url.strip().lower()
    u = re.sub(r"^[a-z+]+://", "", u)
    u = re.sub(r"^[^@/]+@", "", u)
    if ":" in u.split("/", 1)[0]:  # scp-like host:path (a port would be all digits)
        host, _, rest = u.partition(":")
        u = host + "/" + rest if not rest.split("/", 1)[0].isdigit() else host + "/" + rest.split("/", 1)[-1]
    return re.sub(r"(\.git)?/*$", "", u)


def _remote_matches(remote: str, keys: set[str]) -> bool:
    norm = normalize_remote(remote)
    if not norm:
        return False
    if "/" in norm and norm.count("/") == 1:  # "owner/name" (Copilot CLI): match any host
        return any(k.endswith("/" + norm) for k in keys)
    return norm in keys


def git_remotes(path: str) -> list[str]:
    """The remote URLs of the git repository at `path` ([] when it is none or git fails)."""
    from skillgit.errors import SkillgitError
    from skillgit.store.repository import open_repository

    try:
        return open_repository(Path(path)).remote_urls()
    except (SkillgitError, OSError):
        return []


def _real(cwd: str) -> str:
    return os.path.realpath(os.path.expanduser(cwd))


def skip_reason(session: Session, repo: str, remote_keys: set[str], lookup: RemoteLookup | None, *,
                real: Callable[[str], str] = _real) -> str | None:
    """Why `session` is not a person's work on the repository at `repo` (a real path; `real` resolves a cwd)."""
    path = real(session.cwd) if session.cwd else ""
    in_scope = bool(path) and (path == repo or path.startswith(repo.rstrip(os.sep) + os.sep))
    if not in_scope and remote_keys:
        if session.git_remote:
            in_scope = _remote_matches(session.git_remote, remote_keys)
        elif session.cwd and lookup is not None and os.path.isdir(session.cwd):
            in_scope = any(_remote_matches(r, remote_keys) for r in lookup(session.cwd))
    if not in_scope:
        return "other-project"
    if is_replay(session):
        return "replay"
    if session.sidechain:
        return "sidechain"
    if session.headless:
        return "headless"
    if not session.user_turns:
        return "empty"
    return None


# --------------------------------------------------------------------------------------------------- harvest
def _shown(path: Path, real: Path, real_home: Path) -> str:
    """How a file is named in warnings: `~/…` under home, else as given (`real`, `real_home`: both resolved)."""
    try:
        return "~/" + real.relative_to(real_home).as_posix()
    except ValueError:
        return str(path)


def _path_key(key: str) -> str:
    """`source:~/…` (a version-1 key) → `source:home/<id>`, the id a sha256 of the `~/…` path; others unchanged."""
    source, _, rest = key.partition(":")
    if not rest.startswith("~/"):
        return key
    return f"{source}:home/{hashlib.sha256(rest.encode('utf-8')).hexdigest()[:20]}"


def _state_key(source: str, path: Path, real: Path, real_home: Path) -> str:
    """A file's stable id in the state, which names neither the user nor the project: `source:home/<hash>` for a
    file under home (of its `~/…` path), `source:outside/<hash>` otherwise (of its absolute path, `real`)."""
    shown = _shown(path, real, real_home)
    if shown.startswith("~/"):
        return _path_key(f"{source}:{shown}")
    return f"{source}:outside/{hashlib.sha256(str(real).encode('utf-8')).hexdigest()[:20]}"


def _bare(session: Session, reason: str, scrubber: Scrubber) -> Session:
    """A skipped session as it leaves harvest: where it came from, why, and how long it was; nothing it said."""
    return Session(source=session.source, session_id=session.session_id, cwd=scrubber.text(session.cwd or "") or None,
                   started=session.started, ended=session.ended, entrypoint=session.entrypoint,
                   headless=session.headless, sidechain=session.sidechain, client_version=session.client_version,
                   skipped_reason=reason, path=scrubber.text(session.path or "") or None,
                   unknown_records=dict(session.unknown_records), total_records=session.total_records,
                   user_turns_seen=session.user_turn_count)


def _format_warnings(source: str, where: Callable[[], str], sessions: list[Session]) -> list[HarvestWarning]:
    unknown: Counter[str] = Counter()
    total = 0
    for s in sessions:
        unknown.update(s.unknown_records)
        total += s.total_records + s.unknown_records.get(MALFORMED, 0)  # unparsable lines are records too
    warnings = []
    unknown_total = sum(unknown.values())
    if total and unknown_total / total > UNKNOWN_WARN_RATIO:
        warnings.append(HarvestWarning(
            source, where(), f"{unknown_total} of {total} records have a type this reader does not know "
            f"(> {UNKNOWN_WARN_RATIO:.0%}): the {source} format may have changed", dict(unknown)))
    elif total >= NO_TURN_WARN_RECORDS and not any(s.turns for s in sessions):
        warnings.append(HarvestWarning(
            source, where(), f"{total} records but no readable turn: the {source} format may have changed",
            dict(unknown) or {"records": total}))
    return warnings


SNIFF_BYTES = 8192
SQLITE_HEADER = b"SQLite format 3\x00"  # a reader's own store (Cursor, OpenCode): binary by design


def _is_text(head: bytes) -> bool:
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 3 and len(head) == SNIFF_BYTES  # a character cut at the end of the sniff
    return True


def file_problem(source: str, path: Path, sessions: Sequence[Session]) -> tuple[str, str] | None:
    """(skip reason, what happened) for a file whose sessions show nothing harvest can place, or None."""
    if any(s.turns or s.cwd or s.git_remote for s in sessions):
        return None
    try:
        with path.open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError as exc:
        return "unreadable", f"cannot read the file ({type(exc).__name__}: {exc.strerror or 'I/O error'})"
    if not head or head.startswith(SQLITE_HEADER):
        return None
    if not _is_text(head):
        return "binary", f"not a text file (binary data): not a {source} transcript"
    unknown = sum(sum(s.unknown_records.values()) for s in sessions)
    known = sum(s.total_records for s in sessions) - sum(
        n for s in sessions for k, n in s.unknown_records.items() if k != MALFORMED)
    if unknown and known <= 0:
        return "malformed", (f"no record in the {source} format ({unknown} unparsable or unknown): not a {source} "
                             f"transcript, or the {source} format may have changed")
    return None


def inbox_source(path: Path) -> str:
    """Which reader reads a transcript the inbox lists (the SessionEnd hook is Claude Code's: its files by default)."""
    if path.name.startswith("rollout-") or ".codex" in path.parts or "archived_sessions" in path.parts:
        return "codex"
    if path.name == "events.jsonl" or "session-state" in path.parts:
        return "copilot-cli"
    return "claude"


class _Harvest:
    """One harvest's accumulators; `file` handles one session file (see the module contract)."""

    def __init__(self, home: Path, repo: str, remote_keys: set[str], scrub: Scrubber,
                 lookup: RemoteLookup, since: HarvestState, sink: Sink | None = None) -> None:
        self.sink, self.streamed = sink, 0
        self.home, self.repo, self.remote_keys, self.scrub, self.lookup = home, repo, remote_keys, scrub, lookup
        self.real_home = home.resolve()  # resolved once: each file is resolved once too (`key`)
        self.files = dict(since.files)
        # (source:session id) → (state key of the file it was last seen in, its mark): the cross-file dedupe
        self.seen: dict[str, tuple[str, SessionMark]] = {
            f"{k.split(':', 1)[0]}:{sid}": (k, mark) for k, f in sorted(since.files.items())
            for sid, mark in f.sessions.items()}
        self.kept: list[Session] = []
        self.skipped: list[Session] = []
        self.first_new: dict[str, int] = {}
        self.warnings: list[HarvestWarning] = []
        self.unknown: dict[str, Counter[str]] = {}
        self.redactions = Redactions()
        self.read_count = self.unchanged = 0
        self.present: set[str] = set()  # the state keys of the files the readers discovered (they exist)
        self.real = functools.lru_cache(maxsize=None)(_real)  # each cwd resolved once (sessions repeat theirs)

    def key(self, source: str, path: Path) -> tuple[str, Path]:
        real = path.resolve()  # once per file
        return _state_key(source, path, real, self.real_home), real

    def file(self, reader: Reader, path: Path, key: str, real: Path) -> bool:
        """Harvest one file (`real`: resolved); False when it could not be read (its state is kept: tried again)."""
        source = reader.source

        def where() -> str:  # the file's name in a warning, scrubbed: made only for one
            return self.scrub.text(_shown(path, real, self.real_home))
        try:
            fingerprint = reader.fingerprint(path)
        except OSError as exc:
            self.warnings.append(HarvestWarning(source, where(), f"cannot stat: {type(exc).__name__}"))
            return False
        previous = self.files.get(key)
        if previous is not None and previous.fingerprint == fingerprint:
            self.unchanged += 1
            return True
        try:
            sessions = list(reader.read(path))
        except Exception as exc:  # noqa: BLE001 — a reader bug must not stop the harvest of the others
            self.warnings.append(HarvestWarning(source, where(), f"reader failed: {type(exc).__name__}: "
                                                f"{self.scrub.text(str(exc))[:200]}", {MALFORMED: 1}))
            return False
        problem = file_problem(source, path, sessions)
        if problem is not None:
            return self._problem(source, key, fingerprint, where(), sessions, *problem)
        self.read_count += 1
        self.warnings.extend(_format_warnings(source, where, sessions))
        per_source = self.unknown.setdefault(source, Counter())
        marks: dict[str, SessionMark] = {}
        for session in sessions:
            per_source.update(session.unknown_records)
            mark = SessionMark(digest(session), len(session.turns))
            marks[session.session_id] = mark
            old = previous.sessions.get(session.session_id) if previous is not None else None
            elsewhere = self.seen.get(session.key)
            if old is None and elsewhere is not None and elsewhere[0] != key:
                old = elsewhere[1]  # the same session, seen in another file (moved, archived, or listed twice)
                self._forget_moved(elsewhere[0], session.session_id)
            self.seen[session.key] = (key, mark)
            if old is not None and same(old.digest, session, mark.digest):
                continue
            reason = skip_reason(session, self.repo, self.remote_keys, self.lookup, real=self.real)
            if reason is not None:
                if old is None:
                    self.skipped.append(_bare(session, reason, self.scrub))
                continue
            clean, counts = self.scrub.scrub_session(previews(session))  # only what is kept is scrubbed
            self.redactions = self.redactions + counts
            self.first_new[clean.key] = old.turns if old is not None and old.turns <= mark.turns else 0
            if self.sink is not None:
                self.sink(clean, self.first_new[clean.key])
                self.streamed += 1
            else:
                self.kept.append(clean)
        self.files[key] = FileState(fingerprint, marks)
        return True

    def _problem(self, source: str, key: str, fingerprint: str, where: str, sessions: list[Session], reason: str,
                 what: str) -> bool:
        """A file that is unreadable, binary or malformed: its sessions skipped with `reason`, a warning with
        `what`; an unreadable file's state is not recorded (False), so it is read once it can be."""
        counts: Counter[str] = Counter()
        for session in sessions:
            counts.update(session.unknown_records)
        self.warnings.append(HarvestWarning(source, where, what, dict(counts)))
        self.unknown.setdefault(source, Counter()).update(counts)
        previous = self.files.get(key)
        for session in sessions:
            if reason == "unreadable" or previous is None or session.session_id not in previous.sessions:
                self.skipped.append(_bare(session, reason, self.scrub))
        if reason == "unreadable":
            return False
        self.read_count += 1
        self.files[key] = FileState(fingerprint, {
            s.session_id: SessionMark(digest(s), len(s.turns)) for s in sessions})
        return True

    def _forget_moved(self, old_key: str, session_id: str) -> None:
        """Drop a session from the record of a file that no longer exists (it moved)."""
        state = self.files.get(old_key)
        # gone: under home (the readers list every such file of its source, which is being read) and not listed
        if state is None or not old_key.split(":", 1)[1].startswith("home/") or old_key in self.present:
            return
        rest = {sid: m for sid, m in state.sessions.items() if sid != session_id}
        if rest:
            self.files[old_key] = FileState(state.fingerprint, rest)
        else:
            del self.files[old_key]

    def result(self, inbox: InboxBatch) -> HarvestResult:
        self.kept.sort(key=lambda s: (s.started or "", s.key))
        return HarvestResult(
            sessions=tuple(self.kept), skipped=tuple(self.skipped), first_new_turn=self.first_new,
            warnings=tuple(self.warnings), unknown_records={k: dict(v) for k, v in self.unknown.items() if v},
            redactions=self.redactions, state=HarvestState(self.files), files_read=self.read_count,
            files_unchanged=self.unchanged, inbox=inbox, streamed=self.streamed)


def harvest(sources: Iterable[str] | None, home: Path | str, repo_root: Path | str, remotes: Sequence[str] = (),
            since: HarvestState | None = None, *, scrubber: Scrubber | None = None,
            environ: Mapping[str, str] | None = None, remote_lookup: RemoteLookup | None = git_remotes,
            inbox: bool = True, sink: Sink | None = None) -> HarvestResult:
    """See the module contract. `sources=None` means every known reader; `environ` (default: os.environ) is where
    readers look for CLAUDE_CONFIG_DIR / CODEX_HOME / COPILOT_HOME / XDG_DATA_HOME; `remote_lookup=None` never runs
    git; `inbox=False` ignores the inbox; `sink` streams the kept sessions (module contract)."""
    home = Path(home)
    env = dict(os.environ if environ is None else environ)
    scrub = scrubber if scrubber is not None else build_scrubber(repo_root)
    lookup_cache: dict[str, Sequence[str]] = {}

    def lookup(path: str) -> Sequence[str]:
        if remote_lookup is None:
            return ()
        if path not in lookup_cache:
            lookup_cache[path] = remote_lookup(path)
        return lookup_cache[path]

    run = _Harvest(home, os.path.realpath(str(repo_root)), {normalize_remote(r) for r in remotes if r.strip()},
                   scrub, lookup, since or HarvestState(), sink)
    chosen = reader_sources() if sources is None else tuple(sources)
    discovered: set[Path] = set()
    for source in chosen:
        reader = get_reader(source)
        try:
            paths = reader.discover(home, env)
        except OSError as exc:
            run.warnings.append(HarvestWarning(source, scrub.text(str(home)), f"cannot list sessions: {exc}"))
            continue
        keys = {path: run.key(source, path) for path in paths}
        run.present.update(key for key, _ in keys.values())
        for path, (key, real) in keys.items():
            discovered.add(real)
            run.file(reader, path, key, real)
    batch = _harvest_inbox(run, repo_root, chosen, discovered) if inbox else InboxBatch()
    return run.result(batch)


def _harvest_inbox(run: _Harvest, repo_root: Path | str, chosen: tuple[str, ...],
                   discovered: set[Path]) -> InboxBatch:
    where = inbox_files.locate(repo_root)
    if where is None:
        return InboxBatch()
    lines = inbox_files.read_lines(where)
    consumed: list[str] = []
    for line in lines:
        if line.entry is None:
            run.warnings.append(HarvestWarning("inbox", "inbox.jsonl", "a line that is not an inbox entry was "
                                               "dropped", {MALFORMED: 1}))
            consumed.append(line.raw)
            continue
        path = inbox_files.transcript(line.entry)
        source = inbox_source(path)
        if source not in chosen:
            continue  # another harvest (of that source) will take it
        if not path.is_file():
            run.warnings.append(HarvestWarning(source, run.scrub.text(str(path)), "the inbox lists a transcript "
                                               "that does not exist (dropped from the inbox)"))
            consumed.append(line.raw)
            continue
        key, real = run.key(source, path)
        if real in discovered or run.file(get_reader(source), path, key, real):
            discovered.add(real)
            consumed.append(line.raw)
    return InboxBatch(str(where), tuple(consumed), len(lines))


def consume_inbox(result: HarvestResult) -> int:
    """Trim the inbox lines `result` is done with (run it after saving `result.state`); returns how many."""
    if not result.inbox.path or not result.inbox.consumed:
        return 0
    return inbox_files.trim(Path(result.inbox.path), result.inbox.consumed)


# --------------------------------------------------------------------------------------------------- harvest cache
CACHE_FILE = "harvest-cache.json"  # under <git-common-dir>/skillgit/sleep/: local, never on the sleep ref


def cache_basis(**parts: Any) -> str:
    """A digest of everything a cached listing depends on (the saved state's commit, the settings, the scrubber's
    secrets and patterns, the sources, home, `--all`): another basis, another cache. Only the digest is stored."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=repr).encode()).hexdigest()


@dataclass(frozen=True)
class HarvestCache:
    """What the last `skillgit sleep harvest` listed, so the next one reads only the files that changed since:
    `state` is the harvest state after it (never saved as the night's: `sleep mine` and the night still see every
    session as new), `rows` its session rows (already scrubbed), `warnings` its warnings. Valid while `basis` is."""

    basis: str
    state: HarvestState
    rows: tuple[dict[str, Any], ...] = ()
    warnings: tuple[HarvestWarning, ...] = ()

    @classmethod
    def load(cls, path: Path, basis: str) -> HarvestCache | None:
        """The cache at `path` if it was written for `basis`; None when missing, unreadable or for another one."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("basis") != basis:
                return None
            return cls(basis, HarvestState.from_dict(data.get("state") or {}),
                       tuple(dict(r) for r in data.get("rows") or ()),
                       tuple(HarvestWarning.from_dict(w) for w in data.get("warnings") or ()))
        except (OSError, ValueError, TypeError, AttributeError):
            return None

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps({"basis": self.basis, "state": self.state.to_dict(), "rows": list(self.rows),
                                   "warnings": [w.to_dict() for w in self.warnings]}, ensure_ascii=False),
                       encoding="utf-8")
        os.replace(tmp, path)

    def extend(self, result: HarvestResult, rows: Iterable[dict[str, Any]]) -> HarvestCache:
        """This listing with a harvest run since `self.state` added: a session listed again (it grew) replaces
        its row but keeps where its new part started; warnings of files read again replace theirs."""
        merged = {r["key"]: r for r in self.rows}
        for row in rows:
            old = merged.pop(row["key"], None)
            merged[row["key"]] = {**row, "new_from_turn": old["new_from_turn"]} if old else row
        fresh = {w.path for w in result.warnings}
        warnings = tuple(w for w in self.warnings if w.path not in fresh) + tuple(result.warnings)
        return HarvestCache(self.basis, result.state, tuple(merged.values()), warnings)

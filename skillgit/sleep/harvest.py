"""Harvest: the agent sessions of *this repository* that are new since the last harvest, scrubbed.

Contracts:
- `harvest(sources, home, repo_root, remotes, since)` reads the session files every named reader discovers under
  `home`, and returns a `HarvestResult`: `sessions` (a person's work on this repository, new or grown since
  `since`, every text field scrubbed), `skipped` (new sessions filtered out, with a `skipped_reason` and no turns),
  `warnings`, per-source counts of unknown record types, the `Redactions` applied, and the next `HarvestState`.
- Scope: a session belongs here when its cwd is `repo_root` or inside it, or when its git remote (recorded by the
  agent, or read with `git remote -v` from the cwd when that is another clone) matches one of `remotes`. A session
  whose place cannot be told is `other-project`. Filters, in order: other-project, sidechain (sub-agents),
  headless (`claude -p` / SDK entrypoints, `codex exec`), replay (`[skillgit-replay]` in the first user message:
  sessions skillgit started itself), empty (no user turn).
- Incremental: `HarvestState` records, per source file (keyed by source and the path relative to home, `~/…`),
  a fingerprint (size and mtime, or the reader's own) and, per session id, a digest and turn count. An unchanged
  file is not read again; a changed file is re-read and only sessions whose digest changed are returned;
  `first_new_turn[session.key]` tells where the new part of a grown session starts (0 for a new session).
  A skipped session is reported once. State round-trips through `to_json` / `from_json` (the lead keeps it in git).
- Never raises on what it reads: a reader failure, an unreadable file, more than `UNKNOWN_WARN_RATIO` unknown
  records, or a file of several records without a readable turn becomes a `HarvestWarning` with counts. A file
  whose reader failed keeps its previous state, so it is tried again next time.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillgit.sleep.model import MALFORMED, REPLAY_MARKER, Session
from skillgit.sleep.readers import SOURCES, get_reader
from skillgit.sleep.scrub import Redactions, Scrubber, build_scrubber

UNKNOWN_WARN_RATIO = 0.2
NO_TURN_WARN_RECORDS = 3  # a file with at least this many records and no readable turn is a format warning
STATE_VERSION = 1

RemoteLookup = Callable[[str], Sequence[str]]


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
        return cls({str(k): FileState.from_dict(v) for k, v in files.items()}, int(data.get("version", 1) or 1))

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

    def summary(self) -> dict[str, Any]:
        reasons = Counter(s.skipped_reason for s in self.skipped)
        return {"sessions": len(self.sessions), "skipped": dict(sorted(reasons.items())),
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
            "redactions": self.redactions.to_dict(),
            "state": self.state.to_dict(),
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
    from skillgit.store.git import GitRepo

    try:
        return GitRepo.open(Path(path)).remote_urls()
    except (SkillgitError, OSError):
        return []


def _inside(cwd: str, repo: str) -> bool:
    path = os.path.realpath(os.path.expanduser(cwd))
    return path == repo or path.startswith(repo.rstrip(os.sep) + os.sep)


def skip_reason(session: Session, repo: str, remote_keys: set[str], lookup: RemoteLookup | None) -> str | None:
    """Why `session` is not a person's work on the repository at `repo` (a real path), or None."""
    in_scope = bool(session.cwd) and _inside(session.cwd or "", repo)
    if not in_scope and remote_keys:
        if session.git_remote:
            in_scope = _remote_matches(session.git_remote, remote_keys)
        elif session.cwd and lookup is not None and os.path.isdir(session.cwd):
            in_scope = any(_remote_matches(r, remote_keys) for r in lookup(session.cwd))
    if not in_scope:
        return "other-project"
    if session.sidechain:
        return "sidechain"
    if session.headless:
        return "headless"
    if REPLAY_MARKER in session.first_user_text():
        return "replay"
    if not session.user_turns:
        return "empty"
    return None


# --------------------------------------------------------------------------------------------------- harvest
def _digest(session: Session) -> str:
    payload = json.dumps([t.to_dict() for t in session.turns], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:20]


def display_path(path: Path, home: Path) -> str:
    try:
        return "~/" + path.resolve().relative_to(home.resolve()).as_posix()
    except ValueError:
        return str(path)


def _bare(session: Session, reason: str, scrubber: Scrubber) -> Session:
    """A skipped session as it leaves harvest: where it came from and why, nothing it said."""
    return Session(source=session.source, session_id=session.session_id, cwd=scrubber.text(session.cwd or "") or None,
                   started=session.started, ended=session.ended, entrypoint=session.entrypoint,
                   headless=session.headless, sidechain=session.sidechain, client_version=session.client_version,
                   skipped_reason=reason, path=scrubber.text(session.path or "") or None,
                   unknown_records=dict(session.unknown_records), total_records=session.total_records)


def _format_warnings(source: str, where: str, sessions: list[Session]) -> list[HarvestWarning]:
    unknown: Counter[str] = Counter()
    total = 0
    for s in sessions:
        unknown.update(s.unknown_records)
        total += s.total_records + s.unknown_records.get(MALFORMED, 0)  # unparsable lines are records too
    warnings = []
    unknown_total = sum(unknown.values())
    if total and unknown_total / total > UNKNOWN_WARN_RATIO:
        warnings.append(HarvestWarning(
            source, where, f"{unknown_total} of {total} records have a type this reader does not know "
            f"(> {UNKNOWN_WARN_RATIO:.0%}): the {source} format may have changed", dict(unknown)))
    elif total >= NO_TURN_WARN_RECORDS and not any(s.turns for s in sessions):
        warnings.append(HarvestWarning(
            source, where, f"{total} records but no readable turn: the {source} format may have changed",
            dict(unknown) or {"records": total}))
    return warnings


def harvest(sources: Iterable[str] | None, home: Path | str, repo_root: Path | str, remotes: Sequence[str] = (),
            since: HarvestState | None = None, *, scrubber: Scrubber | None = None,
            environ: Mapping[str, str] | None = None, remote_lookup: RemoteLookup | None = git_remotes,
            ) -> HarvestResult:
    """See the module contract. `sources=None` means every known reader; `environ` (default: os.environ) is where
    readers look for CLAUDE_CONFIG_DIR / CODEX_HOME / XDG_DATA_HOME; `remote_lookup=None` never runs git."""
    home = Path(home)
    env = dict(os.environ if environ is None else environ)
    repo = os.path.realpath(str(repo_root))
    remote_keys = {normalize_remote(r) for r in remotes if r.strip()}
    scrub = scrubber if scrubber is not None else build_scrubber(repo_root)
    lookup_cache: dict[str, Sequence[str]] = {}

    def lookup(path: str) -> Sequence[str]:
        if remote_lookup is None:
            return ()
        if path not in lookup_cache:
            lookup_cache[path] = remote_lookup(path)
        return lookup_cache[path]

    files = dict((since or HarvestState()).files)
    kept: list[Session] = []
    skipped: list[Session] = []
    first_new: dict[str, int] = {}
    warnings: list[HarvestWarning] = []
    unknown: dict[str, Counter[str]] = {}
    redactions = Redactions()
    read_count = unchanged = 0
    for source in (SOURCES if sources is None else tuple(sources)):
        reader = get_reader(source)
        per_source = unknown.setdefault(source, Counter())
        try:
            paths = reader.discover(home, env)
        except OSError as exc:
            warnings.append(HarvestWarning(source, scrub.text(str(home)), f"cannot list sessions: {exc}"))
            continue
        for path in paths:
            key = f"{source}:{display_path(path, home)}"
            where = scrub.text(key.split(":", 1)[1])
            try:
                fingerprint = reader.fingerprint(path)
            except OSError as exc:
                warnings.append(HarvestWarning(source, where, f"cannot stat: {type(exc).__name__}"))
                continue
            previous = files.get(key)
            if previous is not None and previous.fingerprint == fingerprint:
                unchanged += 1
                continue
            try:
                sessions = list(reader.read(path))
            except Exception as exc:  # noqa: BLE001 — a reader bug must not stop the harvest of the others
                warnings.append(HarvestWarning(source, where, f"reader failed: {type(exc).__name__}: "
                                               f"{scrub.text(str(exc))[:200]}", {MALFORMED: 1}))
                continue
            read_count += 1
            warnings.extend(_format_warnings(source, where, sessions))
            marks: dict[str, SessionMark] = {}
            for session in sessions:
                per_source.update(session.unknown_records)
                mark = SessionMark(_digest(session), len(session.turns))
                marks[session.session_id] = mark
                old = previous.sessions.get(session.session_id) if previous is not None else None
                if old is not None and old.digest == mark.digest:
                    continue
                reason = skip_reason(session, repo, remote_keys, lookup)
                if reason is not None:
                    if old is None:
                        skipped.append(_bare(session, reason, scrub))
                    continue
                clean, counts = scrub.scrub_session(session)
                redactions = redactions + counts
                kept.append(clean)
                first_new[clean.key] = old.turns if old is not None and old.turns <= mark.turns else 0
            files[key] = FileState(fingerprint, marks)
    kept.sort(key=lambda s: (s.started or "", s.key))
    return HarvestResult(
        sessions=tuple(kept),
        skipped=tuple(skipped),
        first_new_turn=first_new,
        warnings=tuple(warnings),
        unknown_records={k: dict(v) for k, v in unknown.items() if v},
        redactions=redactions,
        state=HarvestState(files),
        files_read=read_count,
        files_unchanged=unchanged,
    )

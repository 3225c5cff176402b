"""The registry of session readers, one module per agent.

Contract of every reader module: `SOURCE` (its name), `discover(home, environ=None) -> list[Path]` (the session
files that exist under a home folder; nothing is read) and `read(path) -> Iterable[Session]` (never raises on odd
content: unknown record types and malformed lines are counted in `Session.unknown_records`). A module may define
`fingerprint(path) -> str` when a session's content lives outside the discovered file; the default is the file's
size and modification time. `READERS` maps source names to `Reader`s in a stable order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from skillgit.errors import ConfigError
from skillgit.sleep.model import Session
from skillgit.sleep.readers import claude, codex, copilot_cli, copilot_vscode, cursor, opencode


def default_fingerprint(path: Path) -> str:
    stat = path.stat()
    return f"{stat.st_size}:{stat.st_mtime_ns}"


@dataclass(frozen=True)
class Reader:
    source: str
    read: Callable[[Path], Iterable[Session]]
    discover: Callable[..., list[Path]]
    fingerprint: Callable[[Path], str]


def _reader(module: ModuleType) -> Reader:
    return Reader(module.SOURCE, module.read, module.discover, getattr(module, "fingerprint", default_fingerprint))


READERS: dict[str, Reader] = {
    r.source: r for r in map(_reader, (claude, codex, copilot_vscode, copilot_cli, cursor, opencode))
}
SOURCES: tuple[str, ...] = tuple(READERS)


def get_reader(source: str) -> Reader:
    if source not in READERS:
        raise ConfigError(f"unknown session source {source!r}", f"use one of: {', '.join(SOURCES)}")
    return READERS[source]


__all__ = ["READERS", "SOURCES", "Reader", "default_fingerprint", "get_reader"]

"""Sleep's session readers, one module per agent, listed by the agent registry (`skillgit.agents.registry`: an
agent's `reader` names its module; this package keeps no table of its own).

Contract of every reader module: `SOURCE` (its name), `discover(home, environ=None) -> list[Path]` (the session
files that exist under a home folder; nothing is read) and `read(path) -> Iterable[Session]` (never raises on odd
content: unknown record types and malformed lines are counted in `Session.unknown_records`). A module may define
`fingerprint(path) -> str` when a session's content lives outside the discovered file; the default is the file's
size and modification time. Shared parsing lives in `_common.py` (`Draft`, `dispatch`, `TurnBuilder`).

`readers()` maps source names to `Reader`s in the registry's order, asked at each call, so an agent registered at
run time (`registry.register`) with a `reader` is harvested like a built-in one; `sources()` are their names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from skillgit.errors import ConfigError
from skillgit.sleep.model import Session


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


def readers() -> dict[str, Reader]:
    """Source name → `Reader` of every agent that has one, in the agent registry's order."""
    from skillgit.agents import registry

    found = (_reader(registry.resolve_pointer(pointer)) for pointer in registry.readers().values())
    return {r.source: r for r in found}


def sources() -> tuple[str, ...]:
    """The session source names (`sleep.sources`, `--sources`), in the agent registry's order."""
    return tuple(readers())


def get_reader(source: str) -> Reader:
    known = readers()
    if source not in known:
        raise ConfigError(f"unknown session source {source!r}", f"use one of: {', '.join(known)}")
    return known[source]


__all__ = ["Reader", "default_fingerprint", "get_reader", "readers", "sources"]

"""A sleep reader for a made-up agent (`fakelog`), and that agent's `Agent` record: what a plugin adds to give
skillgit one more agent to learn from. Its sessions are `~/.fakelog/<id>.log`: the cwd on the first line, then
the person's and the agent's lines in turn. Used by tests/test_sleep_readers.py."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from skillgit.agents.base import Agent
from skillgit.sleep.model import Session, Turn

SOURCE = "fakelog"
AGENT = Agent(name="fakelog", title="Fake log agent", reader=__name__, version_args=())


def discover(home: Path, environ: Mapping[str, str] | None = None) -> list[Path]:
    return sorted((home / ".fakelog").glob("*.log"))


def read(path: Path) -> Iterable[Session]:
    cwd, *lines = path.read_text().splitlines()
    turns = tuple(Turn("user" if i % 2 == 0 else "assistant", text) for i, text in enumerate(lines))
    yield Session(source=SOURCE, session_id=path.stem, turns=turns, path=str(path), cwd=cwd)

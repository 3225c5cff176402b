"""Scrubbing harvested text before it is stored, shown or returned: secrets, e-mail addresses, home paths and
user-configured patterns are masked, and every mask is counted by category.

Contracts:
- `Scrubber.scrub(text) -> (text, Redactions)` masks, in this order: (1) secrets — `skillgit.redact.redact`'s
  credential shapes (`sk-…`, `Bearer …`, `api_key: …`), the values of credential-named environment variables, the
  value of every entry of the repository's `.env` and of every environment variable the caller names (values of at
  least 8 characters); (2) e-mail addresses → `<email>` (`git@host` SSH remotes are not addresses); (3) home paths
  `/home/<user>/`, `/Users/<user>/`, `/root/`, `C:\\Users\\<user>\\` → `~/`; (4) each extra regex → `<redacted>`.
  It is idempotent and never raises.
- `Scrubber.scrub_session` returns a copy of a `Session` in which every free-text field (turn text, tool summaries,
  commands, paths, outputs, cwd, file path, branch, remote) went through `scrub`; ids and counts are kept.
- `build_scrubber` raises `ConfigError` for an extra pattern that is not a valid regex, naming the pattern.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from skillgit.dotenv import read_dotenv
from skillgit.errors import ConfigError
from skillgit.redact import MASK, MIN_SECRET_LEN, redact
from skillgit.sleep.model import Session, ToolCall, ToolResult, Turn

EMAIL_MASK = "<email>"
CUSTOM_MASK = "<redacted>"
_EMAIL = re.compile(r"(?<![\w.%+-])(?!git@)[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
_SEP = r"(?:\\\\|\\|/)"  # \\ (JSON-escaped), \ or /
_HOME_POSIX = re.compile(r"(?<![\w.~-])/(?:home|Users)/[A-Za-z0-9._-]+(?:/|(?![\w.-]))")
_HOME_ROOT = re.compile(r"(?<![\w.~-])/root(?:/|(?![\w.-]))")
# a Windows user name may hold spaces, but then only a separator may end it
_HOME_WINDOWS = re.compile(r"(?<![\w])[A-Za-z]:" + _SEP + "Users" + _SEP
                           + r"(?:[A-Za-z0-9._ -]*[A-Za-z0-9_-]" + _SEP + r"|[A-Za-z0-9._-]+(?![\w.-]))")


@dataclass(frozen=True)
class Redactions:
    """How many masks each category applied."""

    secrets: int = 0
    emails: int = 0
    home_paths: int = 0
    custom: int = 0

    @property
    def total(self) -> int:
        return self.secrets + self.emails + self.home_paths + self.custom

    def __add__(self, other: Redactions) -> Redactions:
        return Redactions(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def to_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Redactions:
        return cls(**{f.name: int(data.get(f.name, 0) or 0) for f in fields(cls)})


def _home_repl(match: re.Match[str]) -> str:
    text = match.group(0)
    return "~/" if text[-1:] in ("/", "\\") else "~"


@dataclass(frozen=True)
class Scrubber:
    """Masks secrets, addresses, home paths and `patterns` (see the module contract). Build with `build_scrubber`."""

    secrets: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    _compiled: tuple[re.Pattern[str], ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        compiled = []
        for pattern in self.patterns:
            try:
                compiled.append(re.compile(pattern))
            except re.error as exc:
                raise ConfigError(f"sleep scrub pattern {pattern!r} is not a valid regular expression: {exc}",
                                  "fix or remove the pattern (Python `re` syntax)") from exc
        object.__setattr__(self, "_compiled", tuple(compiled))
        # longest first, so a secret that contains another is masked whole
        object.__setattr__(self, "secrets", tuple(sorted({s for s in self.secrets if s and len(s) >= MIN_SECRET_LEN},
                                                         key=len, reverse=True)))

    def scrub(self, text: str) -> tuple[str, Redactions]:
        if not text:
            return text, Redactions()
        before = text.count(MASK)
        text = redact(text, self.secrets)
        secrets = max(0, text.count(MASK) - before)
        text, emails = _EMAIL.subn(EMAIL_MASK, text)
        homes = 0
        for pattern in (_HOME_WINDOWS, _HOME_POSIX, _HOME_ROOT):
            text, n = pattern.subn(_home_repl, text)
            homes += n
        custom = 0
        for compiled in self._compiled:
            text, n = compiled.subn(CUSTOM_MASK, text)
            custom += n
        return text, Redactions(secrets, emails, homes, custom)

    def text(self, text: str) -> str:
        return self.scrub(text)[0]

    def scrub_session(self, session: Session) -> tuple[Session, Redactions]:
        total = Redactions()

        def clean(value: str | None) -> str | None:
            nonlocal total
            if value is None:
                return None
            out, counts = self.scrub(value)
            total = total + counts
            return out

        def clean_call(call: ToolCall) -> ToolCall:
            return replace(call, summary=clean(call.summary) or "", command=clean(call.command),
                           paths=tuple(clean(p) or "" for p in call.paths))

        def clean_result(result: ToolResult) -> ToolResult:
            return replace(result, output=clean(result.output) or "")

        turns = tuple(
            Turn(t.role, clean(t.text) or "", tuple(map(clean_call, t.tool_calls)),
                 tuple(map(clean_result, t.tool_results)), t.timestamp)
            for t in session.turns
        )
        scrubbed = replace(session, turns=turns, cwd=clean(session.cwd), path=clean(session.path),
                           git_branch=clean(session.git_branch), git_remote=clean(session.git_remote))
        return scrubbed, total


def dotenv_secrets(repo_root: Path | str | None) -> list[str]:
    """The values of every entry of `repo_root/.env` (empty when there is none)."""
    if repo_root is None:
        return []
    return [v for v in read_dotenv(Path(repo_root) / ".env").values() if v]


def build_scrubber(repo_root: Path | str | None = None, env_names: Iterable[str] = (), patterns: Iterable[str] = (),
                   environ: Mapping[str, str] | None = None, secrets: Iterable[str] = ()) -> Scrubber:
    """A `Scrubber` that also masks the repository's `.env` values and the values of the named variables."""
    env = os.environ if environ is None else environ
    values = list(secrets) + dotenv_secrets(repo_root) + [env[name] for name in env_names if env.get(name)]
    return Scrubber(secrets=tuple(values), patterns=tuple(patterns))

"""A tiny `.env` reader, so credentials can live in a git-ignored file at the project root.

Contracts:
- `read_dotenv(path)` parses `KEY=value` lines (optional `export `, `#` comments, blank lines, single- or
  double-quoted values; `\\n` escapes in double quotes; ` #` starts a comment after an unquoted value).
  A missing file is an empty mapping; malformed lines are skipped (a .env file must never stop a run).
- `project_env(root, environ=None)` is the environment a backend sees: the `.env` at `root` underneath the real
  environment, which always wins (`os.environ` itself is never modified), plus the names the `.env` file defines
  (`dotenv_keys`): the factory treats every one of them as a secret and never hands them to a CLI agent.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*(.*?)\s*$")


def _value(raw: str) -> str:
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        inner = raw[1:-1]
        if raw[0] == '"':
            inner = inner.replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")
        return inner
    if raw and raw[0] in "'\"":  # a quoted value followed by a comment: VALUE="x" # note
        end = raw.find(raw[0], 1)
        if end > 0:
            return _value(raw[: end + 1])
    cut = re.search(r"\s#", raw)
    return (raw[: cut.start()] if cut else raw).strip()


def read_dotenv(path: Path | str) -> dict[str, str]:
    """The variables defined in the .env file at `path` ({} when it does not exist or cannot be read)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    values: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _LINE.match(line)
        if match:
            values[match.group(1)] = _value(match.group(2))
    return values


@dataclass(frozen=True)
class ProjectEnv:
    """The environment a backend sees (`env`) and the variable names the project's `.env` defines."""

    env: dict[str, str]
    dotenv_keys: frozenset[str] = frozenset()


def project_env(root: Path | str | None, environ: Mapping[str, str] | None = None) -> ProjectEnv:
    """`environ` (default: os.environ) over the variables of `root/.env`, and the names `.env` defines."""
    env = dict(os.environ if environ is None else environ)
    if root is None:
        return ProjectEnv(env)
    dotenv = read_dotenv(Path(root) / ".env")
    for key, value in dotenv.items():
        env.setdefault(key, value)  # the real environment wins
    return ProjectEnv(env, frozenset(dotenv))

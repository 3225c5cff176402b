"""How usage mistakes and `--help` read: the same conventions as every other error of skillgit.

- `usage_error(exc)`: a click usage error (unknown option, missing argument, bad value, unknown command) as the
  `(message, hint)` of skillgit's one-line `error:` / `hint:` pair, instead of typer's boxed panel; the hint names
  the `--help` of the command that was being parsed. Exit code 2, like every other bad input.
- `install()`: `--help` shows a flag without a value placeholder (typer ≥ 0.2x prints `<bool>` next to every flag)
  and a value as click always wrote it (`PATH`, `TEXT`, `INTEGER`, `FLOAT`) rather than `<path>`, `<list[str]>`.
  Idempotent; does nothing on a typer without `display_type_rich` (older versions print click's metavars).
"""

from __future__ import annotations

import re
from typing import Any

_TYPE = re.compile(r"<(?:list\[)?([A-Za-z_]+)\]?>")
_NAMES = {"str": "TEXT", "path": "PATH", "int": "INTEGER", "float": "FLOAT", "file": "FILE", "directory": "DIRECTORY"}


def usage_error(exc: Any, command: str | None = None) -> tuple[str, str]:
    """(message, hint) for a click `UsageError` (see the module docstring); `command` names the command that
    was being parsed when click's error does not (`train --set` with no value)."""
    message = " ".join(str(exc.format_message()).split()).rstrip(".")
    names: list[str] = []
    ctx = getattr(exc, "ctx", None)
    while ctx is not None and ctx.parent is not None:  # the root's name may be `python -m skillgit`
        names.insert(0, ctx.info_name)
        ctx = ctx.parent
    if not names and command:
        names = [command]
    path = " ".join(["skillgit", *names])
    if getattr(exc, "option_name", None) == "-c":  # a command that reads no config keys
        return f"`{path}` takes no config keys (-c key=value)", f"see `{path} --help`"
    return message[:1].lower() + message[1:], f"see `{path} --help`"


def _plain(label: str | None) -> str | None:
    if label is None:
        return None
    match = _TYPE.fullmatch(label)
    if match:
        return _NAMES.get(match.group(1).lower(), match.group(1).upper())
    if label.startswith("<") and label.endswith(">"):
        return "[" + label[1:-1] + "]"  # choices: <val|test|train> → [val|test|train]
    return label


def install() -> None:
    try:
        from typer import core
    except ImportError:  # pragma: no cover
        return
    for cls in (getattr(core, "TyperOption", None), getattr(core, "TyperArgument", None)):
        original = getattr(cls, "display_type_rich", None)
        if cls is None or original is None or getattr(original, "_skillgit", False):
            continue

        def display_type_rich(self: Any, ctx: Any, _original: Any = original) -> str | None:
            if getattr(self, "is_flag", False) and getattr(self, "metavar", None) is None:
                return None  # a flag takes no value: nothing to show
            return _plain(_original(self, ctx))

        display_type_rich._skillgit = True  # type: ignore[attr-defined]
        cls.display_type_rich = display_type_rich

"""How usage mistakes and `--help` read: the same conventions as every other error of skillgit.

- `usage_error(exc)`: a click usage error (unknown option, missing argument, bad value, unknown command) as the
  `(message, hint)` of skillgit's one-line `error:` / `hint:` pair, instead of typer's boxed panel; the hint names
  the `--help` of the command that was being parsed. Exit code 2, like every other bad input.
- `install()`: `--help` shows a flag without a value placeholder (typer ≥ 0.2x prints `<bool>` next to every flag)
  and a value as click always wrote it (`PATH`, `TEXT`, `INTEGER`, `FLOAT`) rather than `<path>`, `<list[str]>`.
  Idempotent; does nothing on a typer without `display_type_rich` (older versions print click's metavars).
  It also makes every help page render without rich's Markdown and Traceback (`import_help_renderer`).
"""

from __future__ import annotations

import re
import sys
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
    for cls in (getattr(core, "TyperGroup", None), getattr(core, "TyperCommand", None)):
        original = getattr(cls, "format_help", None)
        if cls is None or original is None or getattr(original, "_skillgit", False):
            continue

        def format_help(self: Any, ctx: Any, formatter: Any, _original: Any = original) -> None:
            import_help_renderer()  # (typer imports rich_utils in its format_help)
            return _original(self, ctx, formatter)

        format_help._skillgit = True  # type: ignore[attr-defined]
        cls.format_help = format_help


# typer renders help with `typer.rich_utils`, whose first lines import rich's Markdown (markdown-it: ~120 M
# instructions) and Traceback (pygments, attrs: ~100 M), a quarter of `skillgit --help`. skillgit's help uses
# neither (markup mode "rich", not "markdown"; pretty exceptions off), so they are imported only if used.
_DEFERRED = (("rich.markdown", "Markdown"), ("rich.traceback", "Traceback"))


class _Deferred(type):
    """Stands in for a rich class inside `typer.rich_utils` (`import_help_renderer`): calling it, reading an
    attribute of it or an isinstance check imports the real module and hands the work to the real class."""

    def real(cls) -> Any:
        import importlib

        return getattr(importlib.import_module(cls.__module__), cls.__name__)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls.real()(*args, **kwargs)

    def __getattr__(cls, name: str) -> Any:
        return getattr(cls.real(), name)

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, cls.real())


def import_help_renderer() -> None:
    """Import `typer.rich_utils` with `_Deferred` stand-ins for the rich classes of `_DEFERRED` that are not
    imported yet (placed in `sys.modules` only while it imports, so any later import gets the real module).
    Nothing when it is imported already; the help it prints is byte for byte the same (tests/test_startup.py)."""
    if "typer.rich_utils" in sys.modules:
        return
    import types

    stand_ins: dict[str, types.ModuleType] = {}
    for module, name in _DEFERRED:
        if module not in sys.modules:
            stub = types.ModuleType(module)
            setattr(stub, name, _Deferred(name, (), {"__module__": module, "__qualname__": name}))
            stand_ins[module] = sys.modules[module] = stub
    try:
        import typer.rich_utils  # noqa: F401
    except ImportError:  # pragma: no cover - a typer without rich: click's plain help
        pass
    finally:
        for module, stub in stand_ins.items():
            if sys.modules.get(module) is stub:
                del sys.modules[module]

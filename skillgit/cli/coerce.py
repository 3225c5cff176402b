"""Parameter coercion without pydantic for the plain values skillgit's commands take.

Recent typer versions (≥ 0.2x) convert every command-line value through a pydantic `TypeAdapter`, built for each
parameter of the command that runs, even for an option left out (value None). Importing pydantic and building the
adapters costs ~0.1 s on every `skillgit log`, more than reading 1,000 steps of history. `install()` puts a
front in place of typer's `build_runtime_param` that answers the cases whose result is unambiguous without
pydantic, and hands everything else to typer's own coercion unchanged:

- an option left out (None) — typer's `RuntimeParam.coerce` returns None/() before converting anything;
- a `str` (no custom parser): the value itself, as typer's str adapter returns it;
- an `int` / `float` without min/max/clamp written as a plain decimal number: `int()` / `float()` of it;
- a `pathlib.Path` (no custom parser or path type): `Path(value)`, then typer's own path checks (`exists`, …).

Invariant: for those cases the value (and the error, if any) is what typer would produce; any other value — a
malformed number, a list, an Enum, a file — goes through typer's pydantic adapter, with typer's error messages.
With a typer that has no such internals (older versions convert through click types) `install()` does nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_INT = re.compile(r"[+-]?[0-9]{1,18}")  # (int() refuses very long digit strings)
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_SLOW = object()  # "not a case we answer": typer's own coercion decides


def _quick(annotation: Any, info: Any, value: Any) -> Any:
    """The coerced value for the plain cases in the module docstring, else `_SLOW`."""
    if getattr(info, "parser", None) is not None:
        return _SLOW
    unbounded = info.min is None and info.max is None and not info.clamp
    if annotation is str and isinstance(value, str):
        return value
    if annotation is int and unbounded:
        if type(value) is int:
            return value
        if isinstance(value, str) and _INT.fullmatch(value):
            return int(value)
    if annotation is float and unbounded:
        if type(value) is float:
            return value
        if isinstance(value, str) and _FLOAT.fullmatch(value):
            return float(value)
    return _SLOW


def install() -> None:
    """Route typer's parameter coercion through the quick cases first (idempotent; a no-op on other typers)."""
    try:
        from typer import core
        from typer._coercion import RuntimeParam
        from typer._coercion import build_runtime_param as original
        from typer._param_types import coerce_cli_path
    except ImportError:
        return  # a typer without pydantic coercion
    if getattr(core, "build_runtime_param", None) is not original:
        return  # installed already (or a typer that builds them elsewhere)

    @dataclass(frozen=True)
    class Quick(RuntimeParam):
        """A runtime parameter that answers the quick cases and defers the rest to typer's (built on demand)."""

        descriptor: Any

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            info = self.parameter_info
            if (self.annotation is Path and info.parser is None and info.path_type is None
                    and (isinstance(value, Path) or (isinstance(value, str) and value))):
                return coerce_cli_path(Path(value), info, path_type=Path, param=param, ctx=ctx)
            quick = _quick(self.annotation, info, value)
            if quick is not _SLOW:
                return quick
            return original(self.descriptor)._coerce_value(value, param=param, ctx=ctx)

    def build(descriptor: Any) -> Any:
        if descriptor.file_annotation is not None:
            return original(descriptor)
        return Quick(annotation=descriptor.annotation, parameter_info=descriptor.parameter_info,
                     descriptor=descriptor)

    core.build_runtime_param = build

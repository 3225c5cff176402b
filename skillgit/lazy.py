"""A package's public names, imported on first use (PEP 562).

Contract: `exports(package, homes)` returns the `__getattr__` and `__dir__` a package's `__init__` binds, given
`homes` (each public name → the submodule that defines it: the package's one table of its names). The first
lookup of a name imports its submodule and keeps the value as a plain attribute of the package (later lookups
never come back here); an unknown name is the usual AttributeError. What a type checker should see the package
imports eagerly under `if TYPE_CHECKING:`. Used where importing everything would cost commands that need little:
`skillgit.records` (`log` builds no note record), `skillgit.world` (the simulated coding agent's start-up).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, Mapping


def exports(package: str, homes: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *homes})

    return __getattr__, __dir__

"""`Frozen`: a base for frozen dataclasses that every process builds at start-up, with `__eq__`, `__hash__` and
`__repr__` written once here instead of generated per class.

Why: `@dataclass(frozen=True)` writes six methods as source text per class and compiles each (Python 3.11), which is
most of what importing the config schema, the loop's types and the records costs: ~6 M instructions for a class of
a dozen fields, at every start of every command. A class declared `@dataclass(frozen=True, eq=False, repr=False)`
on top of `Frozen` compiles half as much and behaves the same.

Contract (what the generated methods do, and so what these do; tests/test_frozen.py compares them):
- `a == b`: for two instances of exactly the same class, the tuples of their fields with `compare=True` are equal;
  any other `b` is NotImplemented.
- `hash(a)`: the hash of the tuple of its fields with `hash=True`, or `hash=None` and `compare=True`.
- `repr(a)`: `QualName(field=value!r, …)` over the fields with `repr=True`; an instance met again while its own repr
  is being built shows as `...`.
A subclass declared with a plain `@dataclass(frozen=True)` gets generated methods again, which win.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

_COMPARED: dict[type, tuple[str, ...]] = {}
_HASHED: dict[type, tuple[str, ...]] = {}
_SHOWN: dict[type, tuple[str, ...]] = {}
_building = threading.local()


def _names(table: dict[type, tuple[str, ...]], cls: type, keep: Any) -> tuple[str, ...]:
    names = table.get(cls)
    if names is None:
        names = table[cls] = tuple(f.name for f in dataclasses.fields(cls) if keep(f))
    return names


class Frozen:
    """See the module docstring. Declare subclasses `@dataclass(frozen=True, eq=False, repr=False)`."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        names = _names(_COMPARED, self.__class__, lambda f: f.compare)
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)

    def __hash__(self) -> int:
        names = _names(_HASHED, self.__class__, lambda f: f.hash if f.hash is not None else f.compare)
        return hash(tuple(getattr(self, n) for n in names))

    def __repr__(self) -> str:
        key = id(self)
        active = getattr(_building, "ids", None)
        if active is None:
            active = _building.ids = set()
        if key in active:
            return "..."
        active.add(key)
        try:
            names = _names(_SHOWN, self.__class__, lambda f: f.repr)
            inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        finally:
            active.discard(key)
        return f"{self.__class__.__qualname__}({inner})"

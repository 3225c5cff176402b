"""The backend table: every model backend a config may name, the roles it may play, and where its `Backend`
object lives ("module:attribute").

The one list of backend names (order: the order users see in messages). A leaf, so that config validation (below
every backend: backends read their settings from `config.py`) and the registry that loads them
(`llm/registry.py`: `get`, `resolve`, the errors that list the choices) read the same table without the config
layer depending on the model layer.
"""

from __future__ import annotations

from dataclasses import dataclass

ROLES = ("teacher", "student")


@dataclass(frozen=True)
class Entry:
    roles: frozenset[str]
    target: str  # "module:attribute" of the Backend object, imported only when the backend is resolved


_BOTH = frozenset(ROLES)
TABLE: dict[str, Entry] = {
    "simulated": Entry(_BOTH, "skillgit.world.backend:BACKEND"),
    "openai": Entry(_BOTH, "skillgit.llm.openai_backend:OPENAI"),
    "azure": Entry(_BOTH, "skillgit.llm.openai_backend:AZURE"),
    "anthropic": Entry(_BOTH, "skillgit.llm.anthropic_backend:BACKEND"),
    "command": Entry(frozenset({"student"}), "skillgit.llm.command:BACKEND"),
    "agent": Entry(_BOTH, "skillgit.teacher.backend:BACKEND"),  # student: agentic/student.py; teacher: teacher/
}


def names() -> tuple[str, ...]:
    """Every backend name."""
    return tuple(TABLE)


def names_for(role: str) -> tuple[str, ...]:
    """The backends that may play `role` ("teacher" or "student"), in table order."""
    if role not in ROLES:
        raise ValueError(f"role must be teacher or student, not {role!r}")
    return tuple(name for name, entry in TABLE.items() if role in entry.roles)

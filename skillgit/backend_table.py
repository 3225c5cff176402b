"""The backend table: every model backend a config may name, the roles it may play, and where its `Backend`
object lives ("module:attribute").

The one list of backend names (order: the order users see in messages). A leaf, so that config validation (below
every backend: backends read their settings from `config.py`) and the registry that loads them
(`llm/registry.py`: `get`, `resolve`, the errors that list the choices) read the same table without the config
layer depending on the model layer.

Installed packages add backends through the `skillgit.backends` entry point group (name → "module:attribute" of
a `skillgit.llm.registry.Backend`), as simonw's `llm` plugins add models: `table()` is `TABLE` followed by them
(a built-in name wins). A plugin's roles are only known from its object, so the first `table()` call imports the
plugins (once per process; nothing here imports the model layer: the object is read by its `name` and `roles`,
and the registry checks it is a `Backend` when it is resolved). A plugin that cannot be imported, or names other
roles or another name, is left out and `plugin_errors()` says why (`skillgit doctor` shows it).
"""

from __future__ import annotations

import threading
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
    "handoff": Entry(frozenset({"teacher"}), "skillgit.llm.handoff:BACKEND"),  # the user's own agent, via files
}


ENTRY_POINT_GROUP = "skillgit.backends"
_plugins: dict[str, Entry] = {}
_plugin_errors: dict[str, str] = {}
_read: list[bool] = []
_lock = threading.Lock()


def _read_plugins() -> None:
    with _lock:
        if _read:
            return
        from importlib import metadata

        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
            if ep.name in TABLE or ep.name in _plugins or ep.name in _plugin_errors:
                continue
            try:
                backend = ep.load()
            except Exception as exc:  # a broken plugin must not break skillgit: recorded, shown by doctor
                _plugin_errors[ep.name] = f"{ep.value} cannot be imported: {type(exc).__name__}: {exc}"[:300]
                continue
            roles = getattr(backend, "roles", None)
            if getattr(backend, "name", None) != ep.name or not isinstance(roles, frozenset) or not roles \
                    or not roles <= set(ROLES):
                _plugin_errors[ep.name] = f"{ep.value} is not a skillgit Backend named '{ep.name}'"
                continue
            _plugins[ep.name] = Entry(roles, ep.value)
        _read.append(True)


def table() -> dict[str, Entry]:
    """The built-in backends, then the installed plugins'."""
    _read_plugins()
    return {**TABLE, **_plugins}


def plugin_errors() -> dict[str, str]:
    """Backend plugins that were left out, and why."""
    _read_plugins()
    return dict(_plugin_errors)


def names() -> tuple[str, ...]:
    """Every backend name: the built-ins, then the installed plugins."""
    return tuple(table())


def names_for(role: str) -> tuple[str, ...]:
    """The backends that may play `role` ("teacher" or "student"), in table order."""
    if role not in ROLES:
        raise ValueError(f"role must be teacher or student, not {role!r}")
    return tuple(name for name, entry in table().items() if role in entry.roles)

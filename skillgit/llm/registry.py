"""The backend registry: the model backends a config may name, what each can be used for, loaded on use.

Contracts:
- The table (`skillgit/backend_table.py`, a leaf) lists every backend name ONCE, with the roles it may play and
  where its `Backend` object lives ("module:attribute"). Config validation (`names_for`), the factory (`resolve`)
  and the error for an unknown or forbidden backend all read that table; nothing else spells out backend names.
- A backend module is imported only when its backend is resolved (`get`), so importing the registry imports no
  SDK, and `llm/` never imports `world/` at import time: the simulated world registers itself from
  `skillgit.world.backend`, which owns its builder. A loaded `Backend` must agree with its table entry (name and
  roles); a mismatch is a bug and raises RuntimeError.
- `Backend.build(role, model, backend_cfg, cfg, env, *, secrets, dotenv_keys)` returns the raw (unwrapped) `LLM`,
  or a `Student` when `Backend.agent` is true; missing credentials raise `LLMError(kind="auth")` naming the
  variable and `.env` (see `missing_key`). `Backend.describe(role, model, backend_cfg, env)` returns the endpoint
  text without building anything or checking credentials.
- `resolve(role, name)` raises `ConfigError` naming the allowed backends for that role when `name` is unknown or
  may not play `role`.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Protocol

from skillgit.backend_table import ROLES as ROLES
from skillgit.backend_table import names as names
from skillgit.backend_table import names_for as names_for
from skillgit.backend_table import plugin_errors as plugin_errors
from skillgit.backend_table import table as _table
from skillgit.errors import ConfigError

if TYPE_CHECKING:
    from skillgit.llm.base import LLMError
    from skillgit.redact import SecretSet

DUMMY_KEY = "no-key-needed"  # OpenAI-compatible servers without auth still want some Authorization header


class Builder(Protocol):
    def __call__(self, role: str, model: str, backend_cfg: Any, cfg: Any, env: Mapping[str, str], /, *,
                 secrets: SecretSet, dotenv_keys: frozenset[str]) -> Any: ...


class Describer(Protocol):
    def __call__(self, role: str, model: str, backend_cfg: Any, env: Mapping[str, str], /) -> str: ...


@dataclass(frozen=True)
class Backend:
    """One kind of model backend. `agent`: for the student `build` returns a `Student` (a CLI agent), not a chat
    `LLM` (as the teacher, an agent backend is an `LLM` whose `agent` stage edits a package: skillgit/teacher)."""

    name: str
    roles: frozenset[str]
    build: Builder
    describe: Describer
    summary: str
    agent: bool = False
    project: bool = False  # the builder reads the project root from env[factory.PROJECT_ROOT_ENV] (agent: always)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "roles": sorted(self.roles), "summary": self.summary, "agent": self.agent,
                "project": self.project}


_loaded: dict[str, Backend] = {}
_lock = threading.Lock()


def get(name: str) -> Backend:
    """The `Backend` called `name`, importing its module on first use; ConfigError for an unknown name."""
    table = _table()  # the built-ins and the installed `skillgit.backends` plugins (backend_table.py)
    entry = table.get(name)
    if entry is None:
        raise ConfigError(f"unknown backend '{name}'", f"known backends: {', '.join(table)}")
    with _lock:
        backend = _loaded.get(name)
    if backend is not None:
        return backend
    module_name, _, attribute = entry.target.partition(":")
    backend = getattr(importlib.import_module(module_name), attribute)
    if not isinstance(backend, Backend) or backend.name != name or backend.roles != entry.roles:
        raise RuntimeError(f"backend registry: {entry.target} does not define backend '{name}' for roles "
                           f"{sorted(entry.roles)}")
    with _lock:
        _loaded[name] = backend
    return backend


def resolve(role: str, name: str) -> Backend:
    """The backend `name` for `role`, or ConfigError naming the backends allowed for `role`."""
    allowed = names_for(role)
    if name not in allowed:
        what = f"'{name}' cannot be used for the {role}" if name in _table() else f"unknown backend '{name}'"
        raise ConfigError(f"model.{role}_backend: {what}", f"allowed for the {role}: {', '.join(allowed)}")
    return get(name)


# ---------------------------------------------------------------------------------------------- builder helpers
def missing_key(role: str, var: str, extra: str = "") -> LLMError:
    """The error for a credential variable that is not set (in the environment nor in .env)."""
    from skillgit.llm.base import LLMError

    return LLMError(f"{role}: no API key: {var} is not set",
                    f"set {var} in the environment or in a .env file at the project root{extra}", kind="auth")

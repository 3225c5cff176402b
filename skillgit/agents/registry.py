"""The agent registry: the one table of the coding agents skillgit knows, each defined in its own module.

Contracts:
- `_TABLE` lists every agent name ONCE with where its `Agent` lives ("module:attribute"); the order is the order
  users see in lists and messages. Config validation (`student_names`, `answer_names`, `trace_formats`,
  `PROFILES`), `doctor` (`agents`), the `agent` and `command` student backends (`get`, `student`, `answer`) and the
  trace parser (`parser`) read this table; sleep's readers and `install`'s targets are reachable from it
  (`readers`, `install_targets`). Nothing else spells out agent names.
- An agent module is imported on first use (`get`), so importing the registry imports no agent. A loaded `Agent`
  must carry its table name; a mismatch is a bug and raises RuntimeError.
- `get(name)` raises `ConfigError` naming the known agents; `student(name)` / `answer(name)` raise it naming the
  agents that can play that part.
- `register(name, target)` adds an agent at run time (a plugin, or a test's fake agent); it then appears in every
  list above. `unregister(name)` removes an agent added that way.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Any

from skillgit.agents.base import Agent, AnswerPreset, StudentPreset
from skillgit.agents.profile import PROFILES
from skillgit.agents.trace import AgentTrace
from skillgit.errors import ConfigError

_BUILT_IN: dict[str, str] = {
    "claude": "skillgit.agents.claude:AGENT",
    "codex": "skillgit.agents.codex:AGENT",
    "copilot": "skillgit.agents.copilot:AGENT",
    "opencode": "skillgit.agents.opencode:AGENT",
    "simulated": "skillgit.agents.simulated:AGENT",
    "generic": "skillgit.agents.generic:AGENT",
    "copilot-vscode": "skillgit.agents.copilot_vscode:AGENT",
    "cursor": "skillgit.agents.cursor:AGENT",
}
_TABLE: dict[str, str] = dict(_BUILT_IN)
_loaded: dict[str, Agent] = {}
_lock = threading.Lock()

__all__ = ["PROFILES", "agents", "answer", "answer_names", "get", "install_targets", "names", "parser", "readers",
           "register", "resolve_pointer", "student", "student_names", "trace_formats", "unregister"]


def names() -> tuple[str, ...]:
    """Every agent name, in table order."""
    with _lock:
        return tuple(_TABLE)


def get(name: str) -> Agent:
    """The `Agent` called `name`, importing its module on first use; ConfigError for an unknown name."""
    with _lock:
        target = _TABLE.get(name)
        agent = _loaded.get(name)
    if target is None:
        raise ConfigError(f"unknown agent '{name}'", f"known agents: {', '.join(names())}")
    if agent is not None:
        return agent
    loaded = resolve_pointer(target)
    if not isinstance(loaded, Agent) or loaded.name != name:
        raise RuntimeError(f"agent registry: {target} does not define agent '{name}'")
    with _lock:
        _loaded[name] = loaded
    return loaded


def agents() -> tuple[Agent, ...]:
    """Every agent, in table order."""
    return tuple(get(n) for n in names())


def student_names() -> tuple[str, ...]:
    """The agents that can run as a student (`model.student.command.preset` of the `agent` backend)."""
    return tuple(a.name for a in agents() if a.student is not None)


def answer_names() -> tuple[str, ...]:
    """The agents the `command` backend can run for one answer per item."""
    return tuple(a.name for a in agents() if a.answer is not None)


def student(name: str) -> tuple[Agent, StudentPreset]:
    """The agent `name` and its student preset, or ConfigError naming the agents that have one."""
    agent = _known(name, student_names(), "model.student.command.preset", "agent")
    assert agent.student is not None
    return agent, agent.student


def answer(name: str) -> tuple[Agent, AnswerPreset]:
    """The agent `name` and its one-answer preset (the `command` backend), or ConfigError naming the choices."""
    agent = _known(name, answer_names(), "model.student.command.preset", "command")
    assert agent.answer is not None
    return agent, agent.answer


def _known(name: str, allowed: tuple[str, ...], key: str, backend: str) -> Agent:
    if name not in names():
        raise ConfigError(f"{key}: unknown agent preset '{name}'", f"use one of: {', '.join(allowed)}")
    if name not in allowed:
        others = ("use student_backend: agent for coding agents on agentic tasks" if backend == "command"
                  else "it has no headless mode skillgit can run")
        raise ConfigError(f"{key}: '{name}' cannot be used with student_backend: {backend}",
                          f"use one of: {', '.join(allowed)} ({others})")
    return get(name)


def trace_formats() -> tuple[str, ...]:
    """Every agent output format (`model.student.command.output`), in table order, each once."""
    seen: dict[str, None] = {}
    for a in agents():
        if a.trace_format and a.parse is not None:
            seen.setdefault(a.trace_format)
    return tuple(seen)


def parser(fmt: str) -> Callable[[str], AgentTrace]:
    """The parser of output format `fmt`; ConfigError naming the formats for an unknown one."""
    for a in agents():
        if a.trace_format == fmt and a.parse is not None:
            return a.parse
    raise ConfigError(f"model.student.command.output: unknown format '{fmt}'",
                      f"use one of: {', '.join(trace_formats())}")


def readers() -> dict[str, str]:
    """agent name → the import path of its sleep transcript reader module (agents that have one)."""
    return {a.name: a.reader for a in agents() if a.reader}


def install_targets() -> dict[str, str]:
    """agent name → the import path of its `skillgit install` artifacts (agents that have them)."""
    return {a.name: a.install for a in agents() if a.install}


def resolve_pointer(target: str) -> Any:
    """Import "module" or "module:attribute" and return the module or the attribute."""
    module_name, _, attribute = target.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute) if attribute else module


def register(name: str, target: str) -> None:
    """Add agent `name` whose `Agent` lives at `target` ("module:attribute"); it is imported on first use."""
    if not name or name in _BUILT_IN:
        raise ValueError(f"cannot register agent {name!r}: the name is empty or built in")
    with _lock:
        _TABLE[name] = target
        _loaded.pop(name, None)


def unregister(name: str) -> None:
    """Remove an agent added with `register` (built-in agents stay)."""
    if name in _BUILT_IN:
        raise ValueError(f"agent {name!r} is built in")
    with _lock:
        _TABLE.pop(name, None)
        _loaded.pop(name, None)

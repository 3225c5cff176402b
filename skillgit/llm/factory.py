"""Building the teacher and the student a config asks for.

Contracts:
- `build_teacher(cfg, root) -> LLM` and `build_student(cfg, root) -> Student` look `cfg.model.teacher_backend` /
  `student_backend` up in the backend registry (`registry.resolve`) and call that backend's builder. The requested
  backend is always the one built, or building fails: missing credentials raise `LLMError(kind="auth")` naming
  the variable and `.env`; an unknown backend, or one that cannot play the role, raises `ConfigError` listing the
  allowed ones. Nothing ever falls back to the simulated world. (Credential rules: each backend module's contract.)
- Credentials: the environment, over a `.env` file at `root` (never overriding the real environment).
- Secrets: before anything is built, `secrets_for(cfg, env, dotenv_keys)` — every `api_key_env` target of both
  roles and every `.env` key (endpoint settings excepted, see `redact.PUBLIC_SETTINGS`), with their values — is
  registered with `redact.register`, so from then on every `redact` call in the process masks those values,
  whatever the variables are called. The builders get the set too (a CLI agent is denied those variables and
  every `.env` entry).
- Every backend is wrapped in `RetryingLLM`/`RetryingStudent` with `max_retries` and `concurrency` from its
  `BackendCfg`; a chat model as student is a `ChatStudent` (skill = system prompt). `max_retries=` overrides the
  config (doctor makes exactly one call).
- `describe(cfg, role, root)` says what would be built (backend, model, endpoint) without building it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Mapping

from skillgit.config import BackendCfg, Config
from skillgit.dotenv import project_env
from skillgit.llm import registry
from skillgit.llm.base import LLM, ChatStudent, LLMError, Student
from skillgit.llm.retry import RetryingLLM, RetryingStudent
from skillgit.redact import SecretSet, register

DUMMY_KEY = registry.DUMMY_KEY


def _role_cfg(cfg: Config, role: str) -> tuple[str, str, BackendCfg]:
    if role == "teacher":
        return cfg.model.teacher_backend, cfg.model.teacher_model, cfg.model.teacher
    if role == "student":
        return cfg.model.student_backend, cfg.model.student_model, cfg.model.student
    raise ValueError(f"role must be teacher or student, not {role!r}")


def secrets_for(cfg: Config, env: Mapping[str, str], dotenv_keys: frozenset[str] = frozenset()) -> SecretSet:
    """The secrets of a project: the `api_key_env` targets of both roles and the `.env` keys, with their values in
    `env`, plus every conventionally named variable of `env` (see `redact.SecretSet.from_env`)."""
    named = {b.api_key_env for b in (cfg.model.teacher, cfg.model.student) if b.api_key_env} | set(dotenv_keys)
    return SecretSet.from_env(env, named)


def _prepare(cfg: Config, root: Path | None, environ: Mapping[str, str] | None
             ) -> tuple[dict[str, str], SecretSet, frozenset[str]]:
    loaded = project_env(root, environ)
    secrets = secrets_for(cfg, loaded.env, loaded.dotenv_keys)
    register(secrets)  # before any client exists: every later error message, trace or note masks these values
    return loaded.env, secrets, loaded.dotenv_keys


def build_raw(cfg: Config, role: str, root: Path | None, *, environ: Mapping[str, str] | None = None) -> Any:
    """The unwrapped backend object for `role` (an `LLM`, or a `Student` for an agent backend)."""
    name, model, bcfg = _role_cfg(cfg, role)
    backend = registry.resolve(role, name)
    env, secrets, dotenv_keys = _prepare(cfg, root, environ)
    if root is not None and (backend.agent or backend.project):
        env = {**env, PROJECT_ROOT_ENV: str(root)}  # where an agent (or the handoff folder) finds the project
    return backend.build(role, model, bcfg, cfg, env, secrets=secrets, dotenv_keys=dotenv_keys)


PROJECT_ROOT_ENV = "SKILLGIT_PROJECT_ROOT"
OnRetry = Callable[[LLMError, int, float], None]  # (error, retry number from 1, seconds about to be waited)


def _wrap_kwargs(bcfg: BackendCfg, max_retries: int | None, sleep: Callable[[float], None],
                 on_retry: OnRetry | None) -> dict[str, Any]:
    return {"max_retries": bcfg.max_retries if max_retries is None else max_retries,
            "concurrency": bcfg.concurrency, "sleep": sleep, "on_retry": on_retry}


def build_teacher(cfg: Config, root: Path | None, *, environ: Mapping[str, str] | None = None,
                  max_retries: int | None = None, sleep: Callable[[float], None] = time.sleep,
                  on_retry: OnRetry | None = None) -> LLM:
    """The teacher LLM of `cfg`, wrapped with retries and its concurrency limit (see the module contract).
    `environ` replaces os.environ (tests); `on_retry` is told about each retry (progress display, events)."""
    bcfg = cfg.model.teacher
    return RetryingLLM(build_raw(cfg, "teacher", root, environ=environ),
                       **_wrap_kwargs(bcfg, max_retries, sleep, on_retry))


def build_student(cfg: Config, root: Path | None, *, environ: Mapping[str, str] | None = None,
                  max_retries: int | None = None, sleep: Callable[[float], None] = time.sleep,
                  on_retry: OnRetry | None = None) -> Student:
    """The student of `cfg`, wrapped with retries and its concurrency limit (see the module contract)."""
    name, _, bcfg = _role_cfg(cfg, "student")
    agent = registry.resolve("student", name).agent
    raw = build_raw(cfg, "student", root, environ=environ)
    wrap = _wrap_kwargs(bcfg, max_retries, sleep, on_retry)
    if agent:
        return RetryingStudent(raw, **wrap)
    return ChatStudent(RetryingLLM(raw, **wrap), temperature=bcfg.temperature, max_tokens=bcfg.max_tokens,
                       seed=bcfg.seed, settings={"reasoning_effort": bcfg.reasoning_effort,
                                                 "thinking_budget": bcfg.thinking_budget})


def describe(cfg: Config, role: str, root: Path | None, *, environ: Mapping[str, str] | None = None
             ) -> dict[str, str]:
    """{backend, model, endpoint} for `role` as configured, without building anything or checking credentials.
    An unknown backend is described with an empty endpoint (building it reports the error)."""
    name, model, bcfg = _role_cfg(cfg, role)
    endpoint = ""
    if name in registry.names_for(role):
        endpoint = registry.get(name).describe(role, model, bcfg, project_env(root, environ).env)
    return {"backend": name, "model": model, "endpoint": endpoint}

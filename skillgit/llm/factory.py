"""Building the teacher and the student a config asks for.

Contracts:
- `build_teacher(cfg, root) -> LLM` and `build_student(cfg, root) -> Student` dispatch on
  `cfg.model.teacher_backend` / `student_backend` ∈ simulated | openai | azure | anthropic (| command for the
  student). The requested backend is always the one built, or building fails: missing credentials raise
  `LLMError(kind="auth")` naming the variable and `.env`; an unknown backend raises `ConfigError` listing the allowed
  ones. Nothing ever falls back to the simulated world.
- Credentials: the environment, over a `.env` file at `root` (never overriding the real environment).
  openai: `api_key_env` or OPENAI_API_KEY, `base_url` or OPENAI_BASE_URL; a server at `base_url` that needs no key
  gets a dummy one (only then). azure (or openai with `azure_endpoint` set): `azure_endpoint` or
  AZURE_OPENAI_ENDPOINT, `azure_deployment` or the model name, `api_version` or OPENAI_API_VERSION (default
  2024-10-21), `api_key_env` or AZURE_OPENAI_API_KEY, else an Entra ID token provider when `azure-identity` is
  installed. anthropic: `api_key_env` or ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN), `base_url` or
  ANTHROPIC_BASE_URL.
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
from skillgit.dotenv import merged_env
from skillgit.errors import ConfigError
from skillgit.llm.base import LLM, ChatStudent, LLMError, Student
from skillgit.llm.retry import RetryingLLM, RetryingStudent

TEACHER_BACKENDS = ("simulated", "openai", "azure", "anthropic")
STUDENT_BACKENDS = (*TEACHER_BACKENDS, "command")
DUMMY_KEY = "no-key-needed"  # OpenAI-compatible servers without auth still want some Authorization header
# For a CLI agent these model names mean "the agent's own default" (no --model flag); "sim-student" is ModelCfg's
# default, left in place by a config that only switched the backend.
AGENT_DEFAULT_MODELS = ("", "default", "sim-student")


def _role_cfg(cfg: Config, role: str) -> tuple[str, str, BackendCfg]:
    if role == "teacher":
        return cfg.model.teacher_backend, cfg.model.teacher_model, cfg.model.teacher
    if role == "student":
        return cfg.model.student_backend, cfg.model.student_model, cfg.model.student
    raise ValueError(f"role must be teacher or student, not {role!r}")


def _check_backend(role: str, backend: str) -> None:
    allowed = TEACHER_BACKENDS if role == "teacher" else STUDENT_BACKENDS
    if backend not in allowed:
        raise ConfigError(f"model.{role}_backend: unknown backend '{backend}'",
                          f"allowed for the {role}: {', '.join(allowed)}")


def _missing_key(role: str, var: str, extra: str = "") -> LLMError:
    return LLMError(f"{role}: no API key: {var} is not set",
                    f"set {var} in the environment or in a .env file at the project root{extra}", kind="auth")


def _is_azure(backend: str, bcfg: BackendCfg) -> bool:
    return backend == "azure" or (backend == "openai" and bool(bcfg.azure_endpoint))


def build_llm(role: str, backend: str, model: str, bcfg: BackendCfg, cfg: Config, env: Mapping[str, str]) -> LLM:
    """The raw (unwrapped) chat backend for one role."""
    if backend == "simulated":
        from skillgit.world import SimulatedStudentLLM, SimulatedTeacher  # lazy: only the simulation needs them

        if role == "teacher":
            return SimulatedTeacher(cfg.model.simulated, model=model)
        return SimulatedStudentLLM(cfg.model.simulated, model=model)
    if backend == "anthropic":
        from skillgit.llm.anthropic_backend import AnthropicBackend

        var = bcfg.api_key_env or "ANTHROPIC_API_KEY"
        key = env.get(var) or None
        # an OAuth-style bearer token is the SDK's other credential; a named key variable excludes it
        token = None if bcfg.api_key_env else (env.get("ANTHROPIC_AUTH_TOKEN") or None)
        base_url = bcfg.base_url or env.get("ANTHROPIC_BASE_URL") or None
        if not key and not token:
            if not base_url or bcfg.api_key_env:
                raise _missing_key(role, var)
            key = DUMMY_KEY
        return AnthropicBackend(model, bcfg, api_key=key, auth_token=token, base_url=base_url, key_env=var, role=role,
                                prices=cfg.prices)
    if backend in ("openai", "azure"):
        from skillgit.llm.openai_backend import OpenAIBackend, azure_token_provider

        if _is_azure(backend, bcfg):
            var = bcfg.api_key_env or "AZURE_OPENAI_API_KEY"
            endpoint = bcfg.azure_endpoint or env.get("AZURE_OPENAI_ENDPOINT") or None
            if not endpoint and not bcfg.base_url:
                raise LLMError(f"{role}: no Azure OpenAI endpoint",
                               f"set model.{role}.azure_endpoint or AZURE_OPENAI_ENDPOINT (environment or .env), "
                               f"e.g. https://my-resource.openai.azure.com", kind="config")
            key = env.get(var) or None
            provider = None
            if not key:
                provider = azure_token_provider()
                if provider is None:
                    raise _missing_key(role, var, ", or install azure-identity to sign in with Entra ID")
            return OpenAIBackend(model, bcfg, api_key=key, azure_endpoint=endpoint,
                                 base_url=None if endpoint else bcfg.base_url,
                                 azure_deployment=bcfg.azure_deployment or model,
                                 api_version=bcfg.api_version or env.get("OPENAI_API_VERSION") or None,
                                 azure_ad_token_provider=provider, provider="azure", key_env=var, role=role,
                                 prices=cfg.prices)
        var = bcfg.api_key_env or "OPENAI_API_KEY"
        key = env.get(var) or None
        base_url = bcfg.base_url or env.get("OPENAI_BASE_URL") or None
        if not key:
            # a named key variable means the server wants that key; OpenAI itself always does
            if not base_url or bcfg.api_key_env or "api.openai.com" in base_url:
                raise _missing_key(role, var, f", or set model.{role}.base_url for a local server")
            key = DUMMY_KEY
        return OpenAIBackend(model, bcfg, api_key=key, base_url=base_url, key_env=var, role=role, prices=cfg.prices)
    _check_backend(role, backend)  # raises for names that are not backends at all
    raise ConfigError(f"model.{role}_backend: '{backend}' cannot be used for the {role}",
                      f"allowed for the {role}: {', '.join(TEACHER_BACKENDS)}")


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
    backend, model, bcfg = _role_cfg(cfg, "teacher")
    _check_backend("teacher", backend)
    env = merged_env(root, environ)
    return RetryingLLM(build_llm("teacher", backend, model, bcfg, cfg, env),
                       **_wrap_kwargs(bcfg, max_retries, sleep, on_retry))


def build_student(cfg: Config, root: Path | None, *, environ: Mapping[str, str] | None = None,
                  max_retries: int | None = None, sleep: Callable[[float], None] = time.sleep,
                  on_retry: OnRetry | None = None) -> Student:
    """The student of `cfg`, wrapped with retries and its concurrency limit (see the module contract)."""
    backend, model, bcfg = _role_cfg(cfg, "student")
    _check_backend("student", backend)
    env = merged_env(root, environ)
    wrap = _wrap_kwargs(bcfg, max_retries, sleep, on_retry)
    if backend == "command":
        from skillgit.llm.command import CommandStudent

        agent = CommandStudent(bcfg.command, model=None if model.strip() in AGENT_DEFAULT_MODELS else model,
                               env=env, prices=cfg.prices)
        agent.check()  # a missing agent binary fails the build, not every rollout
        return RetryingStudent(agent, **wrap)
    llm = RetryingLLM(build_llm("student", backend, model, bcfg, cfg, env), **wrap)
    return ChatStudent(llm, temperature=bcfg.temperature, max_tokens=bcfg.max_tokens, seed=bcfg.seed)


def describe(cfg: Config, role: str, root: Path | None, *, environ: Mapping[str, str] | None = None
             ) -> dict[str, str]:
    """{backend, model, endpoint} for `role` as configured, without building anything or checking credentials."""
    backend, model, bcfg = _role_cfg(cfg, role)
    env = merged_env(root, environ)
    if backend == "simulated":
        endpoint = "offline simulation"
    elif backend == "command":
        c = bcfg.command
        endpoint = " ".join(c.argv) if c.argv else c.preset
    elif backend == "anthropic":
        endpoint = bcfg.base_url or env.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"
    elif _is_azure(backend, bcfg):
        endpoint = bcfg.azure_endpoint or env.get("AZURE_OPENAI_ENDPOINT") or bcfg.base_url or "(no endpoint)"
    elif backend == "openai":
        endpoint = bcfg.base_url or env.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    else:
        endpoint = ""
    return {"backend": backend, "model": model, "endpoint": endpoint}

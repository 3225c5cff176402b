"""Masking secrets before text leaves the process (error messages, agent traces, run summaries, notes, config
dumps). The ONLY module that decides what a secret is and how it is masked; every other module calls it.

What is a secret:
- a *secret name*: an environment variable whose name contains KEY, TOKEN, SECRET, PASSWORD, PASSWD or
  CREDENTIAL, and every name registered with `register_secret_names` / `register` — the factory registers every
  `api_key_env` target and every key of the project's `.env` (except the endpoint settings in `PUBLIC_SETTINGS`),
  whatever it is called;
- a *secret value*: the value (at least `MIN_SECRET_LEN` characters) of a secret name, in `os.environ` at the time
  of the call or in a `SecretSet` registered with `register`, plus any `extra_secrets` a caller passes;
- a *credential shape*: `sk-…` / `sk-ant-…`, GitHub (`ghp_…`, `github_pat_…`), Slack (`xox?-…`) and Hugging Face
  (`hf_…`) tokens, `Bearer …` / `Basic …` credentials, and `api-key: …` / `x-api-key=…` / `"api_key": "…"` /
  `authorization: …` assignments.

How it is masked: every occurrence becomes `MASK` ("***"); nothing of the secret is kept (no last-four hint).

Contracts:
- `redact(text, extra_secrets=(), shapes=True)` masks secret values and (unless `shapes=False`) credential shapes.
  Idempotent; never raises.
- `redact_mapping(obj, extra_secrets=())` returns a copy of a JSON-like structure in which every string under a
  key that names a credential (key, token, secret, password, credential, authorization) is masked and every
  other string goes through `redact`. Counters (`max_tokens`, `prompt_tokens`, non-strings) and `*_env` fields
  holding a variable *name* are kept, so summaries and config dumps stay readable.
- `SecretSet` is an immutable (names, values) pair; `register(secrets)` adds one to the process-wide registry
  consulted by every later `redact`/`redact_mapping`/`is_secret_name` call (thread-safe; registration only ever
  adds, so a value once known stays masked for the life of the process).
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

MASK = "***"
MIN_SECRET_LEN = 8
SECRET_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
# Endpoint settings the backends read from the environment: where to connect, not how to authenticate. They stay
# readable in `doctor` and error messages even when they come from `.env` (credentials inside a URL are still
# masked: see the userinfo shape below).
PUBLIC_SETTINGS = frozenset({"OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION"})

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # OpenAI (sk-..., sk-proj-...) and Anthropic (sk-ant-api03-...) style keys
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{12,}"), "sk-" + MASK),
    # GitHub, Slack and Hugging Face tokens
    (re.compile(r"\b(ghp_|gho_|ghu_|ghs_|github_pat_|xox[abpr]-|hf_)[A-Za-z0-9_\-]{8,}"), r"\1" + MASK),
    (re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9_\-.~+/=:]{8,}", re.IGNORECASE), r"\1 " + MASK),
    # a password in a URL: scheme://user:password@host
    (re.compile(r"(\b[a-z][a-z0-9+.\-]*://[^\s:/@]+:)(?!\*\*\*@)[^\s/@]+@", re.IGNORECASE), r"\1" + MASK + "@"),
    # header or JSON/YAML assignments: api-key: X, "x-api-key": "X", api_key=X, authorization: X
    (re.compile(r"""(?i)(["']?\b(?:x-)?(?:api[-_]?key|access[-_]?token|auth[-_]?token|client[-_]?secret|"""
                r"""password|authorization)["']?\s*[:=]\s*["']?)(?!Bearer\b|Basic\b|\*\*\*)([^\s"',;}]{4,})"""),
     r"\1" + MASK),
)

_SECRET_KEY_RE = re.compile(r"(?i)key|token|secret|passw|credential|authorization")
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _conventional(name: str) -> bool:
    upper = name.upper()
    return any(part in upper for part in SECRET_NAME_PARTS)


def _long_enough(values: Iterable[str | None]) -> set[str]:
    return {v for v in values if v and len(v) >= MIN_SECRET_LEN}


@dataclass(frozen=True)
class SecretSet:
    """Variable names whose values are secrets whatever they are called, and the secret values themselves
    (each at least MIN_SECRET_LEN characters)."""

    names: frozenset[str] = frozenset()
    values: frozenset[str] = frozenset()

    @classmethod
    def from_env(cls, env: Mapping[str, str], names: Iterable[str] = ()) -> SecretSet:
        """The secrets of `env`: the given `names` (minus PUBLIC_SETTINGS) and every conventionally named
        variable, with the values they have in `env`."""
        named = frozenset(n for n in names if n and n not in PUBLIC_SETTINGS)
        values = _long_enough(v for k, v in env.items() if k in named or _conventional(k))
        return cls(named, frozenset(values))

    def union(self, other: SecretSet) -> SecretSet:
        return SecretSet(self.names | other.names, self.values | other.values)

    def is_secret_name(self, name: str) -> bool:
        return name in self.names or _conventional(name)

    def sorted_values(self) -> list[str]:
        """Longest first, so a secret that contains another is masked whole."""
        return sorted(self.values, key=len, reverse=True)

    def to_dict(self) -> dict[str, Any]:
        """Only the names: a SecretSet's values must never be serialised."""
        return {"names": sorted(self.names), "values": len(self.values)}


_registry_lock = threading.Lock()
_registered = SecretSet()


def register(secrets: SecretSet) -> None:
    """Make `secrets` known to every later `redact`, `redact_mapping` and `is_secret_name` call in this process."""
    global _registered
    with _registry_lock:
        _registered = _registered.union(secrets)


def register_secret_names(names: Iterable[str], environ: Mapping[str, str] | None = None) -> None:
    """Treat the variables `names` as secrets whatever they are called; their current values in `environ`
    (default: os.environ) are masked by value from now on."""
    env = os.environ if environ is None else environ
    names = [n for n in names if n and n not in PUBLIC_SETTINGS]
    register(SecretSet(frozenset(names), frozenset(_long_enough(env.get(n) for n in names))))


def registered() -> SecretSet:
    """The process-wide secrets registered so far."""
    with _registry_lock:
        return _registered


def is_secret_name(name: str) -> bool:
    """True for environment variable names that hold credentials: conventional names and registered ones."""
    return registered().is_secret_name(name)


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of secret-named variables in `environ` (default: os.environ) and every registered secret value,
    longest first."""
    env = os.environ if environ is None else environ
    known = registered()
    values = _long_enough(v for k, v in env.items() if known.is_secret_name(k)) | known.values
    return sorted(values, key=len, reverse=True)


def redact(text: str, extra_secrets: Iterable[str | None] = (), *, shapes: bool = True) -> str:
    """`text` with secret values and (unless `shapes=False`) credential shapes masked (see the module contract).

    `shapes=False` masks only known secret values: for text whose exact wording matters (a student's answer).
    """
    if not text:
        return text
    return _redact_values(text, _secrets(extra_secrets), shapes)


def _secrets(extra_secrets: Iterable[str | None]) -> list[str]:
    return sorted(set(secret_values()) | _long_enough(extra_secrets), key=len, reverse=True)


def _redact_values(text: Any, secrets: list[str], shapes: bool = True) -> str:
    if not isinstance(text, str):
        text = str(text)
    for value in secrets:
        if value in text:
            text = text.replace(value, MASK)
    if shapes:
        for pattern, repl in _PATTERNS:
            text = pattern.sub(repl, text)
    return text


def is_secret_key(key: str) -> bool:
    """True for mapping keys (config fields, headers, JSON fields) whose string values are credentials."""
    lowered = key.lower()
    if lowered.endswith("tokens") or lowered.endswith("_tokens_details"):  # counters, not credentials
        return False
    return bool(_SECRET_KEY_RE.search(key))


def redact_mapping(obj: Any, extra_secrets: Iterable[str | None] = ()) -> Any:
    """A copy of `obj` (dicts, lists, tuples, scalars) with credential fields masked (see the module contract)."""
    # The secret values are looked up once per call, not once per string: a step's note holds thousands of
    # strings, and scanning the environment for each of them cost more than the step's git bookkeeping.
    return _redact_tree(obj, _secrets(extra_secrets))


def _redact_tree(obj: Any, secrets: list[str]) -> Any:
    if isinstance(obj, Mapping):
        out: dict[Any, Any] = {}
        for key, value in obj.items():
            name = str(key)
            if isinstance(value, str) and is_secret_key(name):
                # `api_key_env: OPENAI_API_KEY` names a variable; keep it when it looks like a name
                keep = name.lower().endswith("_env") and _ENV_NAME_RE.match(value) and len(value) <= 64
                out[key] = value if keep or not value else MASK
            elif isinstance(value, (list, tuple)) and is_secret_key(name) and not name.lower().endswith("_env") \
                    and all(isinstance(v, str) for v in value):
                out[key] = type(value)(MASK if v else v for v in value)  # a list of tokens is secret too
            else:
                out[key] = _redact_tree(value, secrets)
        return out
    if isinstance(obj, list):
        return [_redact_tree(v, secrets) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_redact_tree(v, secrets) for v in obj)
    if isinstance(obj, str):
        return _redact_values(obj, secrets) if obj else obj
    return obj

"""Masking secrets before text leaves the process (error messages, agent traces, run summaries, notes).

Contracts:
- `redact(text, extra_secrets=())` replaces (1) the value of every environment variable whose name contains
  KEY, TOKEN, SECRET, PASSWORD or CREDENTIAL and whose value has at least 8 characters, (2) any string in
  `extra_secrets` of at least 8 characters, and (3) common credential shapes: `sk-…` / `sk-ant-…` keys,
  `Bearer …` tokens, and `api-key: …` / `x-api-key=…` / `"api_key": "…"` / `authorization: …` assignments.
  It is idempotent and never raises.
- `redact_mapping(obj)` returns a copy of a JSON-like structure in which every string stored under a key that
  names a credential (contains key, token, secret, password, credential, authorization) is masked, and every other
  string is passed through `redact`. Counters such as `max_tokens` or `prompt_tokens` (non-strings, or names
  ending in "tokens") and `*_env` fields holding a variable *name* are kept, so summaries stay readable.
"""

from __future__ import annotations

import os
import re
from typing import Any, Iterable, Mapping

MASK = "***"
MIN_SECRET_LEN = 8
SECRET_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # OpenAI (sk-..., sk-proj-...) and Anthropic (sk-ant-api03-...) style keys
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{12,}"), "sk-" + MASK),
    (re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9_\-.~+/=:]{8,}", re.IGNORECASE), r"\1 " + MASK),
    # header or JSON/YAML assignments: api-key: X, "x-api-key": "X", api_key=X, authorization: X
    (re.compile(r"""(?i)(["']?\b(?:x-)?(?:api[-_]?key|access[-_]?token|auth[-_]?token|client[-_]?secret|"""
                r"""password|authorization)["']?\s*[:=]\s*["']?)(?!Bearer\b|Basic\b|\*\*\*)([^\s"',;}]{4,})"""),
     r"\1" + MASK),
)

_SECRET_KEY_RE = re.compile(r"(?i)key|token|secret|passw|credential|authorization")
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_secret_name(name: str) -> bool:
    """True for environment variable names that conventionally hold credentials."""
    upper = name.upper()
    return any(part in upper for part in SECRET_NAME_PARTS)


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of credential-named variables in `environ` (default: os.environ), longest first."""
    env = os.environ if environ is None else environ
    values = {v for k, v in env.items() if is_secret_name(k) and v and len(v) >= MIN_SECRET_LEN}
    return sorted(values, key=len, reverse=True)


def redact(text: str, extra_secrets: Iterable[str | None] = (), *, shapes: bool = True) -> str:
    """`text` with secret values and (unless `shapes=False`) credential shapes masked (see the module contract).

    `shapes=False` masks only known secret values: for text whose exact wording matters (a student's answer).
    """
    if not text:
        return text
    return _redact_values(text, _secrets(extra_secrets), shapes)


def _secrets(extra_secrets: Iterable[str | None]) -> list[str]:
    extras = {s for s in extra_secrets if s and len(s) >= MIN_SECRET_LEN}
    return sorted(set(secret_values()) | extras, key=len, reverse=True)


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


def _is_secret_key(key: str) -> bool:
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
            if isinstance(value, str) and _is_secret_key(name):
                # `api_key_env: OPENAI_API_KEY` names a variable; keep it when it looks like a name
                keep = name.lower().endswith("_env") and _ENV_NAME_RE.match(value) and len(value) <= 64
                out[key] = value if keep or not value else MASK
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

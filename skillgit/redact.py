"""Masking secrets before text leaves the process (error messages, agent traces, run summaries, notes, config
dumps, harvested transcripts, MCP answers). The ONLY module that decides what a secret is and how it is masked;
every other module calls it.

What is a secret:
- a *secret name*: an environment variable whose name contains KEY, TOKEN, SECRET, PASSWORD, PASSWD or
  CREDENTIAL, and every name registered with `register_secret_names` / `register` — the factory registers every
  `api_key_env` target and every key of the project's `.env` (except the endpoint settings in `PUBLIC_SETTINGS`),
  whatever it is called;
- a *secret value*: the value (at least `MIN_SECRET_LEN` characters) of a secret name, in `os.environ` or in a
  `SecretSet` registered with `register`, plus any `extra_secrets` a caller passes;
- a *credential shape*, found by the detector table (`DETECTORS` below plus the rules vendored from gitleaks'
  maintained rule set in `skillgit.secret_rules`, refreshed by `scripts/refresh_secret_rules.py`):
  provider tokens (OpenAI / Anthropic `sk-…`, AWS key ids `AKIA…`/`ASIA…`, GitHub, GitLab, Slack, Stripe, Google,
  npm, PyPI, Hugging Face, JWTs and ~200 more), private key blocks (`-----BEGIN … PRIVATE KEY-----` to its END,
  or to the end of its body when cut), passwords in URLs (`scheme://user:***@host`), `Authorization` schemes
  (`Bearer …`, `Basic …`, `token …`), assignments to a credential name (`api_key = …`, `"password": "…"`,
  `aws_secret_access_key: …`, `--token …`; JSON-escaped quotes too), and any assignment to a name holding
  key/token/secret/pass/auth/credential whose value has the Shannon entropy of a random string.
  Home paths and e-mail addresses are not secrets: `skillgit.sleep.scrub` masks those in harvested text.

How it is masked: every occurrence becomes `MASK` ("***"); nothing of the secret is kept (no last-four hint). A
well-known public prefix stays readable (`sk-***`, `ghp_***`, `Bearer ***`, `https://bob:***@host`).

How it is fast (redaction is on harvest's hot path): a string is never scanned once per detector;
`skillgit.secret_scan` finds in a few cheap passes where a detector could match (secret words followed by an
assignment, schemes and flags, long runs of token characters holding a provider prefix, literal anchors) and runs
it only there.

Contracts:
- `redact(text, extra_secrets=(), shapes=True)` masks secret values and (unless `shapes=False`) credential shapes.
  Idempotent; never raises. `redact_count` also returns how many masks it applied.
- `redact_mapping(obj, extra_secrets=())` returns a copy of a JSON-like structure in which every string under a
  key that names a credential (key, token, secret, password, credential, authorization) is masked and every
  other string goes through `redact`. Counters (`max_tokens`, `prompt_tokens`, non-strings) and `*_env` fields
  holding a variable *name* are kept, so summaries and config dumps stay readable.
- `SecretSet` is an immutable (names, values) pair; `register(secrets)` adds one to the process-wide registry
  consulted by every later `redact`/`redact_mapping`/`is_secret_name` call (thread-safe; registration only ever
  adds, so a value once known stays masked for the life of the process).
- `is_secret_value(value, known)`: does an environment variable's value look like a credential, whatever its name
  (a known secret value inside it, a credential shape, a `secret_rules.VALUE_RULES` shape)?
- `secret_values()` is computed once per process state: it is recomputed only when `os.environ` or the registry
  changed (a snapshot of the environment's items is compared, not walked through `is_secret_name`).
"""

from __future__ import annotations

import functools
import os
import re
import threading
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from skillgit import secret_rules
from skillgit.secret_scan import Detector, Scanner, entropy, mask, vendored

MASK = "***"
MIN_SECRET_LEN = 8
SECRET_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
# Endpoint settings the backends read from the environment: where to connect, not how to authenticate. They stay
# readable in `doctor` and error messages even when they come from `.env` (credentials inside a URL are still
# masked: see the userinfo detector below).
PUBLIC_SETTINGS = frozenset({"OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION"})

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

    def to_dict(self) -> dict[str, Any]:
        """Only the names: a SecretSet's values must never be serialised."""
        return {"names": sorted(self.names), "values": len(self.values)}


_registry_lock = threading.Lock()
_registered = SecretSet()
_generation = 0  # bumped by every register(): part of the secret_values cache key


def register(secrets: SecretSet) -> None:
    """Make `secrets` known to every later `redact`, `redact_mapping` and `is_secret_name` call in this process."""
    global _registered, _generation
    with _registry_lock:
        _registered = _registered.union(secrets)
        _generation += 1


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


def _compute_values(env: Mapping[str, str], known: SecretSet) -> tuple[str, ...]:
    values = _long_enough(v for k, v in env.items() if known.is_secret_name(k)) | known.values
    return tuple(sorted(values, key=lambda v: (-len(v), v)))


_cache_lock = threading.Lock()
_cache: tuple[Any, tuple[str, ...]] | None = None  # ((generation, environment snapshot), values)
_extra_cache: dict[tuple[str, ...], tuple[Any, tuple[str, ...]]] = {}


def _snapshot() -> Any:
    """A cheap, exact picture of os.environ: its (encoded) items as a tuple; comparing two is a pointer walk."""
    data = getattr(os.environ, "_data", None)
    return tuple(data.items()) if isinstance(data, dict) else tuple(os.environ.items())


def _process_values() -> tuple[str, ...]:
    global _cache
    key = (_generation, _snapshot())
    cached = _cache
    if cached is not None and cached[0] == key:
        return cached[1]
    values = _compute_values(os.environ, registered())
    with _cache_lock:
        _cache = (key, values)
        _extra_cache.clear()
    return values


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of secret-named variables in `environ` (default: os.environ) and every registered secret value,
    longest first. For os.environ the list is computed once and reused until the environment or the registry
    changes."""
    if environ is None or environ is os.environ:
        return list(_process_values())
    return list(_compute_values(environ, registered()))


def _secrets(extra_secrets: Iterable[str | None]) -> tuple[str, ...]:
    base = _process_values()
    extra = extra_secrets if isinstance(extra_secrets, tuple) else tuple(extra_secrets)
    if not extra:
        return base
    hit = _extra_cache.get(extra)  # type: ignore[arg-type]
    if hit is not None and hit[0] is base:
        return hit[1]
    merged = tuple(sorted(set(base) | _long_enough(extra), key=lambda v: (-len(v), v)))
    with _cache_lock:
        if len(_extra_cache) > 64:
            _extra_cache.clear()
        _extra_cache[extra] = (base, merged)  # type: ignore[index]
    return merged


# ---------------------------------------------------------------------------------------------- detectors
def _looks_random(value: str) -> bool:
    """A credential rather than a word: letters and digits mixed, or the entropy of a random string."""
    if len(value) < 8 or value.startswith(MASK):
        return False
    has_digit, has_alpha = any(c.isdigit() for c in value), any(c.isalpha() for c in value)
    return (has_digit and has_alpha) or (len(value) >= 16 and entropy(value) >= 3.5)


_PLACEHOLDER = re.compile(r"""(?x)^(?:\*\*\*|\$|<|\{\{|%[A-Za-z_]|\.\.\.|…)|^(?i:none|null|nil|true|false|undefined|
                          required|optional|redacted|changeme|your[-_].*|xxx+|\*+)$""")
# a value that is code, not a literal: a call, an index, an attribute path, a snake_case or CamelCase name
_CODE = re.compile(r"[(\[{]|^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$|^[a-z]+(?:_[a-z]+)+$|^[A-Z][a-z]+(?:[A-Z][a-z]+)+$")
# names that hold a credential when they END with one of these (api_key, DB_PASSWORD, aws_secret_access_key…);
# a password's value is masked whatever it looks like, the others' when quoted or not a plain lower-case word
_PASSWORD_NAME = re.compile(r"(?i)(?:passw(?:or)?d|passphrase|(?<=[-_.])pass)$")
_STRONG_NAME = re.compile(r"(?i)(?:passw(?:or)?d|passphrase|(?<=[-_.])pass|secret|token|credentials?|authorization|"
                          r"(?:api|secret|private|access|signing|encryption|master|client|license|account|storage|"
                          r"auth|app|webhook)[-_]?key|apikey|auth)$")
_WORD = re.compile(r"[a-z]+|[A-Z]?[a-z]+(?:[A-Z][a-z]+)*|[A-Z]+")
_SECRET_WORD = re.compile(r"(?i)key|token|secret|pass|pwd|auth|credential|creds")
_SCHEMES = ("bearer", "basic", "token", "digest")
# the secret words that gate the "word", "name" and "context" detectors (see skillgit.secret_scan)
_WORDS = ("key", "token", "secret", "pass", "pwd", "auth", "credential", "creds", "access", "api", "private",
          *_SCHEMES)
_TOKEN = r"[A-Za-z0-9_\-]"
# a quoted value ("…", '…', JSON-escaped \"…\"), or a bare one that ends where a literal ends (not at `[`, `(`, `.x`)
# (one longer than 1,024 characters is checked on its first 1,025 and masked whole: `_VALUE_TAIL`). Unbounded, every
# `api_key=` of a line repeating it matched to the line's end and was checked there: quadratic, 240 KB took minutes.
_VALUE = (r"""(?:(?P<q>\\?["'])(?P<qv>[^"'\n\\]{1,300})(?P=q)?|"""
          r"""(?P<v>[^\s"'`,;{}()\[\]<>\\]{4,1024})(?=[\s"',;)}\]]|\\[nrt"]|$)|"""
          r"""(?P<vlong>[^\s"'`,;{}()\[\]<>\\]{1025}))""")
_VALUE_TAIL = re.compile(r"""[^\s"'`,;{}()\[\]<>\\]*""")  # the rest of a bare value longer than 1,024
_OPERATOR = r"""(?P<op>(?(flag)(?:[ \t]+|=)|["'\\]{0,2}[ \t]*(?::=|=>|[:=])(?![:=])[ \t]*))"""
_PROVIDER_PREFIXES = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xoxa-", "xoxb-", "xoxe-",
                      "xoxo-", "xoxp-", "xoxr-", "xoxs-", "hf_", "npm_", "pypi-")
_AWS_PREFIXES = ("A3T", "AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA")
# Our own rows; the ~200 vendored from gitleaks (skillgit.secret_rules) follow them in the table.
DETECTORS: tuple[Detector, ...] = (
    # OpenAI (sk-…, sk-proj-…) and Anthropic (sk-ant-api03-…) style keys, of any length
    Detector("sk-key", re.compile(r"(?<![A-Za-z0-9])sk-" + _TOKEN + "{12,}"), "run", ("sk-",), keep=3),
    Detector("provider-prefix", re.compile(r"(?<![A-Za-z0-9])(" + "|".join(map(re.escape, _PROVIDER_PREFIXES))
                                           + r")[A-Za-z0-9_\-]{8,}"), "run", _PROVIDER_PREFIXES, group=-1, keep=-1),
    # AWS access key ids, without gitleaks' allowance for AWS's documented EXAMPLE ids
    Detector("aws-key-id", re.compile(r"(?<![A-Za-z0-9])(?:" + "|".join(_AWS_PREFIXES).replace("A3T", "A3T[A-Z0-9]")
                                      + r")[A-Z2-7]{16}(?![A-Za-z0-9])"), "run",
             tuple(p.lower() for p in _AWS_PREFIXES)),
    # a private key block, to its END line or (cut off) to the end of its body; a block whose start was cut off (an
    # excerpt's tail), from its first body line to its END line; JSON-escaped newlines too
    Detector("private-key-block", re.compile(
        r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE[ _]KEY(?:[ _]BLOCK)?-----(?:(?:(?!-----END)[\s\S]){0,20000}?"
        r"-----END[ A-Z0-9_-]{0,100}PRIVATE[ _]KEY(?:[ _]BLOCK)?-----|"
        r"(?:(?:\s|\\[nrt])*(?:[A-Za-z0-9+/=]{8,}|[A-Za-z-]{2,30}:[^\n\\]{0,200}))*)|"
        r"(?<![A-Za-z0-9+/=])(?:[A-Za-z0-9+/=]+(?:[ \t\r]|\\[rt])*(?:\n|\\n)(?:[ \t]|\\t)*){1,400}"
        r"-----END[ A-Z0-9_-]{0,100}PRIVATE[ _]KEY(?:[ _]BLOCK)?-----"), "text", ("-----begin", "-----end")),
    # a password in a URL: scheme://user:password@host
    Detector("url-password", re.compile(r"://[^\s:/@'\"<>]+:(?!\*\*\*@)([^\s/@'\"<>]+)@"), "text", ("://",)),
    # Authorization schemes: Bearer X, Basic X, token X, Digest X
    Detector("auth-scheme", re.compile(r"(?i)(?<![A-Za-z0-9_])(bearer|basic|token|digest)[ \t]+(?!\*\*\*)"
                                       r"(?P<s>[A-Za-z0-9_\-.~+/=:]{8,})"), "word", _SCHEMES, group="s",
             check="scheme"),
    # name = value, "name": "value", name: value, --name value, JSON-escaped quotes too (post-checked in _accept:
    # a credential name, or any secret word with the entropy of a random string)
    Detector("assignment", re.compile(r"(?P<flag>--)?(?=(?P<name>[A-Za-z0-9_.\-]{1,80}))(?P=name)" + _OPERATOR
                                      + _VALUE), "name", group=("qv", "v", "vlong"), check="assign", tail=_VALUE_TAIL),
)

_scanner: Scanner | None = None
_scanner_lock = threading.Lock()


def _get_scanner() -> Scanner:
    """The detector table, built on first use (tens of milliseconds; each vendored pattern compiles when a gate
    first sends it text): a process that never redacts never pays it."""
    global _scanner
    if _scanner is None:
        with _scanner_lock:
            if _scanner is None:
                rules = vendored(secret_rules.RULES, secret_rules.GLOBAL_ALLOW)
                _scanner = Scanner((*DETECTORS, *rules), _WORDS, _accept)
    return _scanner


def _accept(det: Detector, text: str, match: re.Match[str], span: tuple[int, int]) -> bool:
    secret = text[span[0]:span[1]]
    if not secret or MASK in secret:
        return False  # already masked (`***`, `sk-***`), or glued to a mask: redact is idempotent
    if det.check == "scheme":
        return match.group(1).lower() == "bearer" or _looks_random(secret)
    if det.check == "assign":
        return _accept_assign(match, secret)
    if det.min_entropy and entropy(secret) < det.min_entropy:
        return False
    return not det.allowed(secret, match.group(0))


def _accept_assign(match: re.Match[str], secret: str) -> bool:
    """An assignment (`name: value`, `--flag value`): a secret when its name says so and the value is no
    placeholder, code, scheme word or plain word."""
    name, quoted = match.group("name"), match.group("qv") is not None
    if _PLACEHOLDER.search(secret) or (not quoted and _CODE.search(secret)):
        return False
    if secret.strip() == "" or secret.split(None, 1)[0].lower() in _SCHEMES:
        return False  # `Authorization: Bearer X`: the scheme detector masks X
    if match.group("flag") and match.group("op").strip() != "=" and not _STRONG_NAME.search(name):
        return False
    if _STRONG_NAME.search(name):
        if _PASSWORD_NAME.search(name):
            return len(secret) >= (3 if quoted else 4)
        # a token is no plain word: not `credentials: none`, `token: "AccessKeyId"`
        return len(secret) >= (3 if quoted else 4) and not _WORD.fullmatch(secret)
    # any other name holding a secret word: gitleaks' generic rule, which also reads JSON-escaped quotes here
    generic = _get_scanner().by_id.get("generic-api-key")
    return bool(_SECRET_WORD.search(name)) and len(secret) >= 10 and entropy(secret) >= 3.5 \
        and not (generic is not None and generic.allowed(secret, match.group(0)))


def redact_count(text: str, extra_secrets: Iterable[str | None] = (), *, shapes: bool = True) -> tuple[str, int]:
    """`redact(text, …)` and the number of masks it applied."""
    if not text:
        return text, 0
    if not isinstance(text, str):
        text = str(text)
    return _redact_values(text, _secrets(extra_secrets), shapes)


def resolve_secrets(extra_secrets: Iterable[str | None] = ()) -> tuple[str, ...]:
    """The secret values a `redact` call with `extra_secrets` masks now (longest first): resolve them once and
    pass them to `redact_resolved` for a batch of strings (harvest scrubs thousands per session)."""
    return _secrets(extra_secrets)


def redact_resolved(text: str, secrets: tuple[str, ...],
                    replaced: list[tuple[int, int, int]] | None = None) -> tuple[str, int]:
    """`redact_count(text, …)` with the values `resolve_secrets` returned (values and shapes masked). `replaced`,
    when given, gets (start, end, length of what replaced it) of each part of `text` that was masked."""
    return _redact_values(text, secrets, True, replaced) if text else (text, 0)


def redact(text: str, extra_secrets: Iterable[str | None] = (), *, shapes: bool = True) -> str:
    """`text` with secret values and (unless `shapes=False`) credential shapes masked (see the module contract).

    `shapes=False` masks only known secret values: for text whose exact wording matters (a student's answer).
    """
    return redact_count(text, extra_secrets, shapes=shapes)[0]


def _redact_values(text: Any, secrets: tuple[str, ...], shapes: bool = True,
                   replaced: list[tuple[int, int, int]] | None = None) -> tuple[str, int]:
    if not isinstance(text, str):
        text = str(text)
    spans: list[tuple[int, int, int]] = []
    for value in secrets:
        at = text.find(value)
        while at >= 0:
            spans.append((at, at + len(value), -1))  # a known value: nothing of it is kept
            at = text.find(value, at + len(value))
    if shapes:
        try:
            spans += _get_scanner().spans(text)
        except Exception as exc:  # noqa: BLE001 - a detector bug must not leak the text it failed on
            withheld = f"{MASK} (text withheld: the secret scan failed with {type(exc).__name__})"
            if replaced is not None:
                replaced.append((0, len(text), len(withheld)))
            return withheld, 1
    return mask(text, spans, MASK, replaced)


_value_rules: tuple[tuple[re.Pattern[str], float], ...] | None = None


@functools.lru_cache(maxsize=4096)
def _shaped_secret(value: str) -> bool:
    """Does `value` hold a credential shape: the detector table's, or a `secret_rules.VALUE_RULES` one?"""
    global _value_rules
    if _value_rules is None:
        _value_rules = tuple((re.compile(p), e) for _, p, e in secret_rules.VALUE_RULES)
    for pattern, min_entropy in _value_rules:
        found = pattern.search(value)
        if found and entropy(found.group(0)) >= min_entropy:
            return True
    return bool(_get_scanner().spans(value))


def is_secret_value(value: str, known: Iterable[str] = ()) -> bool:
    """True when an environment variable's value (whatever the variable is called) looks like a credential: it
    holds a known secret value (`known`, and every registered one), a credential shape of the detector table (a
    password in a URL, a provider token, a private key block, `api_key=…` inside it) or of
    `secret_rules.VALUE_RULES` (an AWS session token; a long random token and nothing else). Values shorter than
    `MIN_SECRET_LEN` are never secrets. The shape answer is remembered per value (an agent's environment is asked
    at every student build)."""
    if len(value) < MIN_SECRET_LEN:
        return False
    if any(s in value for s in (*known, *registered().values) if s):
        return True
    try:
        return _shaped_secret(value)
    except Exception:  # noqa: BLE001 - a detector bug must not pass a credential on: withhold the value
        return True


def is_secret_key(key: str) -> bool:
    """True for mapping keys (config fields, headers, JSON fields) whose string values are credentials."""
    lowered = key.lower()
    if lowered.endswith("tokens") or lowered.endswith("_tokens_details"):  # counters, not credentials
        return False
    return bool(_SECRET_KEY_RE.search(key))


def redact_mapping(obj: Any, extra_secrets: Iterable[str | None] = ()) -> Any:
    """A copy of `obj` (dicts, lists, tuples, scalars) with credential fields masked (see the module contract)."""
    return _redact_tree(obj, _secrets(extra_secrets))


def _redact_tree(obj: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(obj, Mapping):
        return {key: _redact_field(str(key), value, secrets) for key, value in obj.items()}
    if isinstance(obj, list):
        return [_redact_tree(v, secrets) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_redact_tree(v, secrets) for v in obj)
    if isinstance(obj, str):
        return _redact_values(obj, secrets)[0] if obj else obj
    return obj


def _redact_field(name: str, value: Any, secrets: tuple[str, ...]) -> Any:
    """One mapping field: a credential key's string (or list of strings) masked whole, anything else walked."""
    if isinstance(value, str) and is_secret_key(name):
        # `api_key_env: OPENAI_API_KEY` names a variable; keep it when it looks like a name
        keep = name.lower().endswith("_env") and _ENV_NAME_RE.match(value) and len(value) <= 64
        return value if keep or not value else MASK
    if isinstance(value, (list, tuple)) and is_secret_key(name) and not name.lower().endswith("_env") \
            and all(isinstance(v, str) for v in value):
        return type(value)(MASK if v else v for v in value)  # a list of tokens is secret too
    return _redact_tree(value, secrets)

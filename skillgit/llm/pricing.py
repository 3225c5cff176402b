"""What model calls cost: a default price table (USD per 1M tokens) overridable from the config's `prices`.

Contracts:
- `price_for(model, prices=None) -> Price | None`: `prices` (the config's table, model → {prompt, completion,
  cached}) is consulted first, then `DEFAULT_PRICES`. A model matches a table entry exactly (case-insensitive,
  after dropping a provider prefix such as `openai/` or `anthropic.`), or as the entry plus version suffixes
  (dates `-2024-08-06` / `-20250929`, `-latest`, `-preview`, `-v1:0`); the longest matching entry wins. Family
  names are NOT matched loosely (a new `claude-opus-5` is unknown, not priced as an older Opus), so an unknown
  price is reported instead of a wrong one.
- `cost(model, usage, prices=None) -> float`: USD for a usage-like object (attributes or keys `prompt_tokens`,
  `completion_tokens`, `cached_tokens`). `prompt_tokens` includes `cached_tokens`, which are billed at the cached
  rate; reasoning tokens are part of `completion_tokens`. Unknown models cost 0.0 — check `price_known`.
- Simulated and local models (`is_local_url(base_url)`) cost 0 and count as known (see `FREE`), unless the config's
  `prices` names them (`resolve_price`); `planned_price` decides a role's price before any backend is built
  (`train --dry-run`) exactly as its backend will.
Prices change; the table is a best-effort snapshot and `prices:` in skillgit.yaml is the way to correct it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from ipaddress import ip_address
from typing import Any, Mapping
from urllib.parse import urlsplit

from skillgit.errors import ConfigError


@dataclass(frozen=True)
class Price:
    """USD per 1M tokens. `cached` is the rate for prompt tokens served from the provider's prompt cache."""

    prompt: float
    completion: float
    cached: float | None = None

    @property
    def cached_rate(self) -> float:
        return self.prompt if self.cached is None else self.cached


FREE = Price(0.0, 0.0, 0.0)

# Snapshot of list prices (standard tier). Anthropic's `cached` is the cache-read rate (0.1 x input).
DEFAULT_PRICES: dict[str, Price] = {
    # OpenAI
    "gpt-5.2": Price(1.75, 14.00, 0.175),
    "gpt-5.1": Price(1.25, 10.00, 0.125),
    "gpt-5": Price(1.25, 10.00, 0.125),
    "gpt-5-mini": Price(0.25, 2.00, 0.025),
    "gpt-5-nano": Price(0.05, 0.40, 0.005),
    "gpt-5-pro": Price(15.00, 120.00),
    "gpt-5-chat": Price(1.25, 10.00, 0.125),
    "gpt-4.1": Price(2.00, 8.00, 0.50),
    "gpt-4.1-mini": Price(0.40, 1.60, 0.10),
    "gpt-4.1-nano": Price(0.10, 0.40, 0.025),
    "gpt-4o": Price(2.50, 10.00, 1.25),
    "gpt-4o-mini": Price(0.15, 0.60, 0.075),
    "gpt-4-turbo": Price(10.00, 30.00),
    "gpt-3.5-turbo": Price(0.50, 1.50),
    "o1": Price(15.00, 60.00, 7.50),
    "o1-mini": Price(1.10, 4.40, 0.55),
    "o3": Price(2.00, 8.00, 0.50),
    "o3-mini": Price(1.10, 4.40, 0.55),
    "o3-pro": Price(20.00, 80.00),
    "o4-mini": Price(1.10, 4.40, 0.275),
    # Anthropic
    "claude-opus-4-5": Price(5.00, 25.00, 0.50),
    "claude-opus-4-1": Price(15.00, 75.00, 1.50),
    "claude-opus-4": Price(15.00, 75.00, 1.50),
    "claude-opus-4-0": Price(15.00, 75.00, 1.50),
    "claude-4-opus": Price(15.00, 75.00, 1.50),
    "claude-3-opus": Price(15.00, 75.00, 1.50),
    "claude-sonnet-4-5": Price(3.00, 15.00, 0.30),
    "claude-sonnet-4": Price(3.00, 15.00, 0.30),
    "claude-sonnet-4-0": Price(3.00, 15.00, 0.30),
    "claude-4-sonnet": Price(3.00, 15.00, 0.30),
    "claude-3-7-sonnet": Price(3.00, 15.00, 0.30),
    "claude-3-5-sonnet": Price(3.00, 15.00, 0.30),
    "claude-haiku-4-5": Price(1.00, 5.00, 0.10),
    "claude-3-5-haiku": Price(0.80, 4.00, 0.08),
    "claude-3-haiku": Price(0.25, 1.25, 0.03),
    # the offline simulation
    "sim-teacher": FREE,
    "sim-student": FREE,
}

_PROVIDER_PREFIX = re.compile(r"^(?:openai|azure|anthropic|bedrock|vertex_ai|us|eu|apac|global)[./]")
_SUFFIX = re.compile(r"^(?:-(?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4}|latest|preview|v\d+(?::\d+)?)|@\d{8})+$")
_PRICE_FIELDS = {"prompt": "prompt", "input": "prompt", "completion": "completion", "output": "completion",
                 "cached": "cached", "cached_input": "cached", "cache_read": "cached"}


def _normalise(model: str) -> str:
    name = model.strip().lower()
    while True:
        stripped = _PROVIDER_PREFIX.sub("", name)
        if stripped == name:
            return name
        name = stripped


def _match(model: str, table: Mapping[str, Any]) -> Any | None:
    name = _normalise(model)
    best_key = None
    for key in table:
        k = _normalise(key)
        if name == k:
            return table[key]
        if name.startswith(k) and _SUFFIX.match(name[len(k):]) and (best_key is None or len(k) > len(best_key[0])):
            best_key = (k, key)
    return table[best_key[1]] if best_key else None


def _as_price(model: str, raw: Any) -> Price:
    if isinstance(raw, Price):
        return raw
    if not isinstance(raw, Mapping):
        raise ConfigError(f"prices.{model}: expected a mapping like {{prompt: 2.5, completion: 10, cached: 1.25}}, "
                          f"got {raw!r}", "prices are USD per 1M tokens")
    values: dict[str, float] = {}
    for key, value in raw.items():
        field = _PRICE_FIELDS.get(str(key))
        if field is None:
            raise ConfigError(f"unknown config key 'prices.{model}.{key}'",
                              "allowed: prompt, completion, cached (USD per 1M tokens)")
        try:
            values[field] = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"prices.{model}.{key}: expected a number, got {value!r}",
                              "prices are USD per 1M tokens") from None
    if "prompt" not in values or "completion" not in values:
        raise ConfigError(f"prices.{model}: needs both prompt and completion", "prices are USD per 1M tokens")
    return Price(values["prompt"], values["completion"], values.get("cached"))


def price_for(model: str, prices: Mapping[str, Any] | None = None) -> Price | None:
    """The price of `model`: the config's `prices` first, then the default table; None when unknown."""
    if prices:
        raw = _match(model, prices)
        if raw is not None:
            return _as_price(model, raw)
    return _match(model, DEFAULT_PRICES)


def resolve_price(model: str, prices: Mapping[str, Any] | None = None, base_url: str | None = None) -> Price | None:
    """The price a backend bills at: the config's `prices` first, then free for a local server (`base_url`
    on this machine or a private network), then the default table."""
    if prices:
        raw = _match(model, prices)
        if raw is not None:
            return _as_price(model, raw)
    if is_local_url(base_url):
        return FREE
    return _match(model, DEFAULT_PRICES)


# The variable a provider's SDK reads its endpoint from when `base_url` is not configured (as the backends do).
BASE_URL_ENV = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}


def planned_price(backend: str, model: str, backend_cfg: Any, prices: Mapping[str, Any] | None = None,
                  env: Mapping[str, str] | None = None) -> Price | None:
    """The price a role will be billed at, decided as its backend decides it (`resolve_price` with the endpoint
    the backend will call: `base_url`, else the provider's environment variable; Azure bills by the table): so
    `train --dry-run` and the run agree — the simulated world and a local server are free unless `prices` names
    the model, and a local model called `gpt-4.1` does not get OpenAI's price."""
    if backend in ("simulated", "handoff"):  # handoff: the user's own agent answers (llm/handoff.py)
        return FREE
    if backend == "azure" or getattr(backend_cfg, "azure_endpoint", None):
        return resolve_price(model, prices, None)
    base_url = getattr(backend_cfg, "base_url", None) or (env or {}).get(BASE_URL_ENV.get(backend, "")) or None
    return resolve_price(model, prices, base_url)


def price_known(model: str, prices: Mapping[str, Any] | None = None) -> bool:
    return price_for(model, prices) is not None


def _get(usage: Any, name: str) -> int:
    value = usage.get(name, 0) if isinstance(usage, Mapping) else getattr(usage, name, 0)
    return int(value or 0)


def cost_at(price: Price | None, usage: Any) -> float:
    """USD for `usage` at `price` (0.0 when the price is unknown)."""
    if price is None:
        return 0.0
    prompt, cached = _get(usage, "prompt_tokens"), _get(usage, "cached_tokens")
    cached = min(cached, prompt)
    total = ((prompt - cached) * price.prompt + cached * price.cached_rate
             + _get(usage, "completion_tokens") * price.completion)
    return round(total / 1_000_000, 8)


def cost(model: str, usage: Any, prices: Mapping[str, Any] | None = None) -> float:
    """USD for `usage` of `model` (see the module contract); 0.0 for unknown models."""
    return cost_at(price_for(model, prices), usage)


def is_local_url(url: str | None) -> bool:
    """True when `url` points at this machine or a private network (a self-hosted server costs nothing per token)."""
    if not url:
        return False
    host = (urlsplit(url if "://" in url else f"http://{url}").hostname or "").lower()
    if host in ("localhost", "host.docker.internal") or host.endswith(".local") or host.endswith(".localhost"):
        return True
    try:
        addr = ip_address(host)
    except ValueError:
        return False
    return addr.is_loopback or addr.is_private or addr.is_link_local

"""The resolved config as text and as a digest: `dump_config` (YAML in schema order, secrets masked) and
`config_digest` (what makes two runs the same run for `train --resume`)."""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any, Iterable

import yaml

from skillgit.config import Config, config_from_dict, plain
from skillgit.config_layers import leaves


def dump_config(cfg: Config, mask_secrets: bool = True) -> str:
    """The resolved config as YAML (sections in schema order); `load_config` reads it back to an equal Config
    when `mask_secrets` is False."""
    data = plain(cfg.to_dict())
    if mask_secrets:
        from skillgit.redact import redact_mapping  # the one module that decides what a secret is

        data = redact_mapping(data)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)


@functools.lru_cache(maxsize=1)
def _default_leaves() -> dict[str, Any]:
    return dict(leaves(plain(config_from_dict({}).to_dict())))


def config_digest(cfg: Config, ignore: Iterable[str] = ()) -> str:
    """First 12 hex digits of sha256 over the canonical JSON of the keys whose value differs from the default
    (dotted key -> value, sorted), leaving out the dotted keys (or whole sections) in `ignore`, e.g.
    RUNTIME_ONLY_KEYS. Only departures from the defaults count, so a release that adds a key at its default leaves
    every existing config's digest, and the resume of an unfinished run, unchanged; a release that changes a default
    does too (the run keeps the config it started with in its `config.yaml`)."""
    skip = tuple(ignore)
    defaults = _default_leaves()
    missing = object()
    changed = {key: value for key, value in leaves(plain(cfg.to_dict()))
               if defaults.get(key, missing) != value
               and not any(key == s or key.startswith(s + ".") for s in skip)}
    canonical = json.dumps(changed, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]

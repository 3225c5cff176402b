"""Where a project's config comes from, layer by layer, and which layer set each key.

Layers, later wins (mappings deep-merged, lists and scalars replaced, as in `config.py`):

1. the defaults of `config.Config`;
2. the user config, `$XDG_CONFIG_HOME/skillgit/config.yaml` (default `~/.config/skillgit/config.yaml`;
   `SKILLGIT_USER_CONFIG=PATH` names another file, `SKILLGIT_USER_CONFIG=` turns it off): the keys every project
   of this user shares — the backends and models (`model`), `prices`, `budget`. Any other key is refused there,
   with the file and the key named: a project's skill, data and gate belong in its own skillgit.yaml;
3. the project's file (`skillgit.yaml` or `--config FILE`) with its `_base_` files;
4. the command line's overrides (`-c key=value`, `--set key=value`).

`load(...)` returns the Config and `origins`: every leaf key that a layer set → that layer (a file's path, or
`command line`); a key missing from `origins` has its default. A ConfigError about a key that a file set names
that file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from skillgit import config as config_mod
from skillgit.config import Config, ConfigError, apply_overrides, config_from_dict
from skillgit.config_validate import unknown_key_error
from skillgit.config_yaml import split_override, yaml_load

USER_SECTIONS = ("model", "prices", "budget")  # what a user config may set (every project shares them)
COMMAND_LINE = "command line (-c/--set)"
DEFAULT = "default"


def user_config_path(environ: Mapping[str, str] | None = None) -> Path | None:
    """The user config's path (it need not exist); None when `SKILLGIT_USER_CONFIG` is set empty."""
    env = os.environ if environ is None else environ
    named = env.get("SKILLGIT_USER_CONFIG")
    if named is not None:
        return Path(named).expanduser() if named.strip() else None
    base = env.get("XDG_CONFIG_HOME", "").strip()
    folder = Path(base) if base and Path(base).is_absolute() else Path(env.get("HOME") or Path.home()) / ".config"
    return folder / "skillgit" / "config.yaml"


def existing_user_config() -> Path | None:
    """`user_config_path()` when that file exists, else None."""
    path = user_config_path()
    return path if path is not None and path.is_file() else None


def leaves(data: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, value) for every leaf of a nested mapping (an empty mapping is a leaf)."""
    for key, value in data.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and value:
            yield from leaves(value, dotted)
        else:
            yield dotted, value


def mark(origins: dict[str, str], data: Mapping[str, Any], origin: str) -> None:
    """Record that `origin` set every leaf of `data` (a key it replaces wholesale forgets its old sub-keys)."""
    for dotted, _ in leaves(data):
        for old in [k for k in origins if k.startswith(dotted + ".") or dotted.startswith(k + ".")]:
            del origins[old]
        origins[dotted] = origin


def read_user_config(path: Path) -> dict[str, Any]:
    """The user config at `path` as a normalized mapping ({} when there is no such file), checked on its own:
    only `USER_SECTIONS`, known keys, valid values; every error names `path` and the key."""
    if not path.is_file():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the user config {path}: {exc}",
                          "fix its permissions, or set SKILLGIT_USER_CONFIG= to ignore it") from None
    data = yaml_load(text, str(path)) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}",
                          "write `section:` lines (model, prices, budget) with indented `key: value` lines")
    data = config_mod.normalize(data)
    allowed = ", ".join(USER_SECTIONS)
    for key in data:
        if key in USER_SECTIONS:
            continue
        if key in config_mod.known_keys():
            raise ConfigError(f"{path}: {key}: a project setting, not allowed in the user config",
                              f"move it to the project's skillgit.yaml; the user config holds {allowed}")
        err = unknown_key_error(str(key), USER_SECTIONS, USER_SECTIONS)
        raise ConfigError(f"{path}: {err.message}", err.hint or f"the user config holds {allowed}")
    try:
        config_mod.build(Config, data)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc.message}", exc.hint) from None
    return data


def project_data(path: Path | None, origins: dict[str, str] | None = None,
                 user: Path | None = None) -> dict[str, Any]:
    """The user config merged under the project's file (`path`, None: no file) and its `_base_` files, before
    any override; `origins` (when given) gets which file set each key."""
    origins = {} if origins is None else origins
    data = read_user_config(user) if user is not None else {}
    mark(origins, data, str(user))
    if path is not None:
        read: list[tuple[Path, dict[str, Any]]] = []
        data = config_mod.deep_merge(data, config_mod.read_file(Path(path), read))  # checks the whole chain
        for file, own in read:  # bases first, in list order, then the file: the order they merge in
            mark(origins, own, str(file))
    return data


_KEY_IN_MESSAGE = re.compile(r"^(?:unknown config key )?'?([A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*)'?(?:[:\s]|$)")


def _named_origin(message: str, origins: Mapping[str, str]) -> str | None:
    match = _KEY_IN_MESSAGE.match(message)
    if not match:
        return None
    key = match.group(1)
    hits = [o for k, o in origins.items() if k == key or k.startswith(key + ".") or key.startswith(k + ".")]
    return hits[-1] if hits else None


def load(path: Path | None, overrides: Sequence[str] = (), user: Path | None = None,
         origins: dict[str, str] | None = None) -> Config:
    """The layers above → a validated Config; `origins` (when given) is filled as the module docstring says."""
    origins = {} if origins is None else origins
    data = project_data(path, origins, user)
    for item in overrides:
        key, value = split_override(item)
        nested: Any = value
        for part in reversed(key.split(".")):
            nested = {part: nested}
        mark(origins, config_mod.normalize(nested), COMMAND_LINE)
    try:
        return config_from_dict(apply_overrides(data, list(overrides)))
    except ConfigError as exc:
        origin = _named_origin(exc.message, origins)
        if origin is None or origin == COMMAND_LINE or exc.message.startswith(origin):
            raise
        raise ConfigError(f"{origin}: {exc.message}", exc.hint) from None


def shown_origin(origin: str) -> str:
    """An origin as a person reads it: a file under HOME as `~/…`."""
    home = str(Path.home())
    return "~" + origin[len(home):] if origin.startswith(home + os.sep) else origin


def origin_rows(cfg: Config, origins: Mapping[str, str]) -> list[tuple[str, str, Any]]:
    """(origin, dotted key, value) for every leaf of the resolved config, in schema order; a key no layer set is
    `default`. Secrets are masked (`redact.redact_mapping`, the one module that decides what a secret is)."""
    from skillgit.redact import redact_mapping

    data = redact_mapping(config_mod.plain(cfg.to_dict()))
    return [(origins.get(key, DEFAULT), key, value) for key, value in leaves(data)]

"""YAML as skillgit reads it, and `key=value` overrides whose values are such YAML.

Contracts:
- `yaml_load(text, source)`: YAML 1.2-style scalars: `2:1:7` stays a string (YAML 1.1 would make it the integer
  7267), `1e-6` is a float, dates stay strings, leading-zero numbers stay strings; yes/no/on/off remain booleans.
  A key given twice in one mapping is an error. Every error is a ConfigError naming `source:line:col` and the fix.
- `split_override('a.b=value')` → ('a.b', the value as a YAML scalar or flow list/mapping; '' is null; text that is
  not YAML is kept as it is); ConfigError naming the override when it is not a dotted `key=value` or names `_base_`.
- `parse_overrides`: SkillOpt's `--cfg-options a.b=1 c.d=x` form → one `key=value` a string, each checked.

Nothing here knows the schema: `config.py` reads files and merges these into a `Config`; the values are checked
there.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Iterable

import yaml

from skillgit.errors import ConfigError


class _Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2-style numbers, no timestamps, and an error on duplicate mapping keys."""

    def construct_mapping(self, node, deep=False):
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, (str, int, float, bool)):
                if key in seen:
                    raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}",
                                                            key_node.start_mark)
                seen.add(key)
        return super().construct_mapping(node, deep)


_DROPPED_TAGS = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:timestamp"}
_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in _DROPPED_TAGS]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^(?:[-+]?(?:0|[1-9][0-9_]*)|0x[0-9a-fA-F_]+)$"),
                              list("-+0123456789"))
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^(?:[-+]?(?:[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[0-9][0-9_]*[eE][-+]?[0-9]+"
               r"|\.[0-9]+(?:[eE][-+]?[0-9]+)?|\.(?:inf|Inf|INF))|\.(?:nan|NaN|NAN))$"),
    list("-+0123456789."))


def yaml_load(text: str, source: str = "<string>") -> Any:
    """Parse YAML text with skillgit's scalar rules; a syntax error becomes a ConfigError naming source:line:col."""
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        raise ConfigError(f"{where}: not valid YAML: {exc.problem or exc.context}",
                          "fix the YAML syntax (indent with spaces; quote values containing ': ' or '#')") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {str(exc).splitlines()[0]}", "fix the YAML syntax") from None


# ---------------------------------------------------------------------------------------------- overrides
_KEY_RE = re.compile(r"^[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*$")


def parse_overrides(args: Iterable[str]) -> list[str]:
    """SkillOpt's `--cfg-options a.b=1 c.d=x` → ['a.b=1', 'c.d=x'].

    Each argument is one `key=value`, or several of them in one shell-quoted string (`"a.b=1 c.d='x y'"`). A string
    is only split when every piece is itself `key=value`, so `skill.path=My Skill.md` stays one override.
    """
    out: list[str] = []
    for arg in args:
        pieces: list[str] | None = None
        if any(ch.isspace() for ch in arg):
            try:
                tokens = shlex.split(arg)
            except ValueError:
                tokens = []
            if len(tokens) > 1 and all(_KEY_RE.match(t.partition("=")[0]) and "=" in t for t in tokens):
                pieces = tokens
        for piece in pieces or [arg]:
            split_override(piece)  # validates
            out.append(piece)
    return out


def split_override(item: str) -> tuple[str, Any]:
    """'a.b=value' → ('a.b', parsed value). The value is a YAML scalar (or flow list/mapping); '' means null."""
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"override {item!r} is not key=value", "write it as --set section.key=value")
    if not _KEY_RE.match(key):
        raise ConfigError(f"override {item!r}: {key!r} is not a dotted key", "e.g. --set train.batch_size=8")
    if key == "_base_" or key.startswith("_base_."):
        raise ConfigError(f"override {item!r}: _base_ cannot be overridden", "name the base file in the config")
    try:
        value = yaml_load(raw, f"--set {key}") if raw.strip() else None
    except ConfigError:
        value = raw  # not YAML (e.g. an unbalanced bracket in a pattern): take the text as it is
    return key, value

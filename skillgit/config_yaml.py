"""YAML as skillgit reads it, and `key=value` overrides whose values are such YAML.

Contracts:
- `yaml_load(text, source)`: YAML 1.2-style scalars: `2:1:7` stays a string (YAML 1.1 would make it the integer
  7267), `1e-6` is a float, dates stay strings, leading-zero numbers stay strings; yes/no/on/off remain booleans.
  A key given twice in one mapping is an error. Every error is a ConfigError naming `source:line:col` and the fix.
- `load_cached(text, source, cache)`: the same value, kept in a JSON file across processes (a project's
  skillgit.yaml: `.git/skillgit/cache/config.json`), so that a command reading an unchanged config imports no YAML.
- `split_override('a.b=value')` → ('a.b', the value as a YAML scalar or flow list/mapping; '' is null; text that is
  not YAML is kept as it is); ConfigError naming the override when it is not a dotted `key=value` or names `_base_`.
- `parse_overrides`: SkillOpt's `--cfg-options a.b=1 c.d=x` form → one `key=value` a string, each checked.

Nothing here knows the schema: `config.py` reads files and merges these into a `Config`; the values are checked
there.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from skillgit import __version__
from skillgit.errors import ConfigError

if TYPE_CHECKING:
    import yaml


@functools.cache
def _loaders() -> tuple[type[yaml.SafeLoader], type[yaml.CSafeLoader] | None]:
    """(the pure-Python loader, the same rules over libyaml's parser or None), built on first use: importing PyYAML
    compiles its reader's character class (~59 M instructions), which a command answering from `load_cached`'s file
    never pays."""
    import yaml

    class Duplicates:
        """A constructor mix-in: an error on duplicate mapping keys."""

        def construct_mapping(self, node, deep=False):
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if isinstance(key, (str, int, float, bool)):
                    if key in seen:
                        raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}",
                                                                key_node.start_mark)
                    seen.add(key)
            return super().construct_mapping(node, deep)

    class Loader(Duplicates, yaml.SafeLoader):
        """SafeLoader with YAML 1.2-style numbers, no timestamps, and an error on duplicate mapping keys."""

    dropped = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:timestamp"}
    Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in dropped]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Loader.add_implicit_resolver("tag:yaml.org,2002:int",
                                 re.compile(r"^(?:[-+]?(?:0|[1-9][0-9_]*)|0x[0-9a-fA-F_]+)$"), list("-+0123456789"))
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^(?:[-+]?(?:[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[0-9][0-9_]*[eE][-+]?[0-9]+"
                   r"|\.[0-9]+(?:[eE][-+]?[0-9]+)?|\.(?:inf|Inf|INF))|\.(?:nan|NaN|NAN))$"),
        list("-+0123456789."))
    if not getattr(yaml, "__with_libyaml__", False):
        return Loader, None

    # The same rules over libyaml's parser (scanning and parsing in C). Only the parser differs: nodes are resolved
    # and constructed by the same Python resolver and constructor, so a document loads to the same values.
    class CLoader(Duplicates, yaml.CSafeLoader):
        """`Loader`'s rules over libyaml's parser."""

    CLoader.yaml_implicit_resolvers = Loader.yaml_implicit_resolvers
    return Loader, CLoader


def yaml_load(text: str, source: str = "<string>") -> Any:
    """Parse YAML text with skillgit's scalar rules; a syntax error becomes a ConfigError naming source:line:col.
    (Parsed by libyaml when PyYAML has it; a document it refuses is read again by the pure-Python parser, whose
    error — wording, line and column — is the one reported.)"""
    import yaml

    pure, fast = _loaders()
    if fast is not None:
        try:
            return yaml.load(text, Loader=fast)  # noqa: S506 - a SafeLoader's constructor
        except yaml.YAMLError:
            pass
    try:
        return yaml.load(text, Loader=pure)  # noqa: S506 - a SafeLoader's constructor
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        opened = exc.context_mark  # where the construct the problem is in began: the `{` never closed, …
        since = (f" ({exc.context} that starts at line {opened.line + 1}, column {opened.column + 1})"
                 if exc.problem and exc.context and opened is not None and opened is not mark else "")
        raise ConfigError(f"{where}: not valid YAML: {exc.problem or exc.context}{since}",
                          "fix the YAML syntax (indent with spaces; quote values containing ': ' or '#')") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {str(exc).splitlines()[0]}", "fix the YAML syntax") from None


# ---------------------------------------------------------------------------------------------- the parsed file, kept
CACHE_VERSION = 1  # raise it when the rules above change what a text loads to


def load_cached(text: str, source: str, cache: Path | None) -> Any:
    """`yaml_load(text, source)`, or the value it gave for the same text in an earlier process, kept in `cache` (a
    JSON file: the digest of the text, this module's version and skillgit's, and the value; one text per file).

    A hit returns what the parse would (the cache only holds plain JSON values — mappings with string keys, lists,
    strings, finite numbers, booleans, null —, which JSON keeps type for type; any other value is not kept); a
    missing, damaged or foreign file is a miss; a file that cannot be written is no cache. `cache=None`: no cache.
    Errors are never kept: a text that does not load raises every time."""
    if cache is None:
        return yaml_load(text, source)
    import hashlib

    key = hashlib.sha256(f"{CACHE_VERSION}\0{__version__}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()
    try:
        doc = json.loads(cache.read_bytes())
        if isinstance(doc, dict) and doc.get("key") == key and "value" in doc:
            return doc["value"]
    except (OSError, ValueError):  # (ValueError: not JSON, or not UTF-8)
        pass
    value = yaml_load(text, source)
    if _plain(value):
        tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps({"key": key, "value": value}, ensure_ascii=True), encoding="utf-8")
            os.replace(tmp, cache)  # a reader sees the old file or the new one, never a torn one
        except OSError:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:  # (no folder to write in: no temporary file either)
                pass
    return value


def _plain(value: Any, depth: int = 0) -> bool:
    """True when JSON gives `value` back type for type (see `load_cached`)."""
    if depth > 100:
        return False
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return value == value and value not in (float("inf"), float("-inf"))
    if isinstance(value, list):
        return all(_plain(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(type(k) is str and _plain(v, depth + 1) for k, v in value.items())
    return False


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

"""Task sets: loading items from JSONL/YAML/JSON files, splitting them into train/val/test, and epoch batches.

Contracts:
- `load_items(path)` returns a non-empty list of `Item`s with unique ids, or raises `TaskFileError` naming the file
  (and line, for JSONL) and how to fix it. Row shapes accepted:
  - ours: `{"id", "input", "expected"?, "metadata"?}`; other unknown keys are kept in `metadata`;
  - OpenAI evals: `{"input": [{"role": "system", ...}, {"role": "user", ...}], "ideal": ...}` — chat input becomes
    text (system messages first, see `chat_to_text`) and `ideal` becomes `expected` (`reference` is accepted too).
  Rows without an id get `<file-stem>-<n>` (n counts rows from 1), stable for an unchanged file.
- `load_splits(env, root)` is deterministic for the same items and seed. The ratio split orders items by a hash of
  (seed, id), so it does not depend on the order of rows in the file. train and val are never empty and no id
  appears in two splits. With the default ratio (`2:1:7`) val gets at least `MIN_VAL` items, taken from test,
  when there are enough tasks (at least half of val + test otherwise): a gate on 9 items cannot see a 20-point
  gain. Any other ratio, and split folders, are kept exactly as written.
- `epoch_batches(items, batch_size, seed, epoch)` is a deterministic shuffle per (seed, epoch) cut into batches
  of `batch_size`; the last batch may be smaller; every item appears exactly once.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from skillgit.config import EnvCfg
from skillgit.config_validate import parse_ratio
from skillgit.config_yaml import yaml_load
from skillgit.errors import ConfigError
from skillgit.types import Item

TASK_SUFFIXES = (".jsonl", ".yaml", ".yml", ".json")
SPLIT_NAMES = ("train", "val", "test")
_EXPECTED_KEYS = ("expected", "ideal", "reference")  # first present wins


Loader = Callable[[Path], list[Item]]


class TaskFileError(ConfigError):
    """A task file or task folder is missing, unreadable or malformed; the message names the file."""


@dataclass(frozen=True)
class Splits:
    train: tuple[Item, ...]
    val: tuple[Item, ...]
    test: tuple[Item, ...]

    def get(self, name: str) -> tuple[Item, ...]:
        if name not in SPLIT_NAMES:
            raise ValueError(f"unknown split {name!r}")
        return getattr(self, name)

    @property
    def counts(self) -> dict[str, int]:
        return {name: len(self.get(name)) for name in SPLIT_NAMES}


# ---------------------------------------------------------------------------------------------- rows → items
def _content_text(content: Any) -> str:
    """A chat message's content: a string, or a list of parts of which the text parts are kept."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text", "") if isinstance(p, dict) else str(p) for p in content]
        return "\n".join(t for t in texts if t)
    return str(content)


def chat_to_text(messages: Sequence[Any]) -> str:
    """Chat messages → one text: system contents first, then the rest in order.

    A single user turn is appended as is (`system\\n\\nuser`), which is what the OpenAI evals samples look like;
    a longer conversation (few-shot turns) keeps its speakers as `User:` / `Assistant:` labels.
    """
    system = [_content_text(m.get("content")) for m in messages if m.get("role") == "system"]
    rest = [m for m in messages if m.get("role") != "system"]
    parts = [s for s in system if s.strip()]
    if len(rest) == 1 and rest[0].get("role", "user") == "user":
        parts.append(_content_text(rest[0].get("content")))
    else:
        for m in rest:
            role = str(m.get("role") or "user")
            parts.append(f"{role[:1].upper()}{role[1:]}: {_content_text(m.get('content'))}")
    return "\n\n".join(parts)


def _input_text(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(m, dict) and "content" in m for m in value):
        return chat_to_text(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise TaskFileError(f"{where}: `input` must be text or a list of chat messages, got {type(value).__name__}",
                        "write the task as a string, or as [{role: user, content: ...}]")


def _item(row: Any, where: str, default_id: str, task_dir: Path | None = None) -> Item:
    if not isinstance(row, dict):
        raise TaskFileError(f"{where}: expected an object with `input`, got {type(row).__name__}",
                            'write each item as {"id": ..., "input": ..., "expected": ...}')
    row = dict(row)
    agentic = "workspace" in row or "verify" in row
    if agentic and "input" not in row and "prompt" in row:
        row["input"] = row.pop("prompt")  # an agentic task's request to the agent
        if task_dir is not None:
            row.setdefault("task_dir", str(task_dir))  # its fixture folders are relative to the task file
    raw_id = row.pop("id", None)
    if raw_id is not None and (not isinstance(raw_id, (str, int)) or isinstance(raw_id, bool) or str(raw_id) == ""):
        raise TaskFileError(f"{where}: `id` must be a non-empty string or number, got {raw_id!r}"[:200],
                            "give every item a unique id, or leave ids out to number the items")
    item_id = str(raw_id) if raw_id is not None else default_id
    if "input" not in row or row["input"] is None or row["input"] == "":
        raise TaskFileError(f"{where}: item '{item_id}' has no `input`",
                            "every item needs the task text the student sees under `input`")
    text = _input_text(row.pop("input"), where)
    expected = None
    for key in _EXPECTED_KEYS:
        if key in row:
            expected = row.pop(key)
            break
    metadata = row.pop("metadata", None) or {}
    if not isinstance(metadata, dict):
        raise TaskFileError(f"{where}: `metadata` must be a mapping, got {type(metadata).__name__}",
                            "write metadata as {key: value}")
    metadata = {**row, **metadata}  # unknown row keys are kept, not dropped
    return Item(id=item_id, input=text, expected=expected, metadata=metadata)


def _rows(path: Path) -> list[tuple[Any, str]]:
    """(row, location) pairs of a task file."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TaskFileError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})",
                            "save the task file as UTF-8") from None
    except OSError as exc:
        raise TaskFileError(f"cannot read task file {path}: {exc.strerror or exc}", "check the path") from None
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        rows = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append((json.loads(line), f"{path}:{number}"))
            except json.JSONDecodeError as exc:
                raise TaskFileError(f"{path}:{number}: not a JSON object ({exc.msg} at column {exc.colno})",
                                    "JSONL holds one JSON object per line; no trailing commas, double quotes only"
                                    ) from None
        return rows
    if suffix == ".json":
        try:
            data = json.loads(text) if text.strip() else None
        except json.JSONDecodeError as exc:
            raise TaskFileError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})",
                                "fix the JSON, or write one object per line in a .jsonl file") from None
    elif suffix in (".yaml", ".yml"):
        try:
            data = yaml_load(text, str(path))
        except ConfigError as exc:
            raise TaskFileError(exc.message, exc.hint) from None
    else:
        raise TaskFileError(f"{path}: unknown task file type '{path.suffix}'",
                            f"use one of: {', '.join(TASK_SUFFIXES)}")
    if isinstance(data, dict) and "items" in data:
        data = data["items"]
    if data is None:
        return []
    if not isinstance(data, list):
        raise TaskFileError(f"{path}: expected a list of items (or `items: [...]`), got {type(data).__name__}",
                            "write the items as a list")
    return [(row, f"{path}[{index}]") for index, row in enumerate(data)]


def _check_unique(items: Iterable[tuple[Item, str]], what: str) -> None:
    seen: dict[str, str] = {}
    dupes: list[str] = []
    for item, where in items:
        if item.id in seen:
            dupes.append(f"'{item.id}' ({seen[item.id]} and {where})")
        else:
            seen[item.id] = where
    if dupes:
        shown = "; ".join(dupes[:5]) + (f"; and {len(dupes) - 5} more" if len(dupes) > 5 else "")
        raise TaskFileError(f"duplicate item ids in {what}: {shown}", "give every item a unique `id`")


def load_items(path: Path) -> list[Item]:
    """Items of one task file (.jsonl, .yaml/.yml, .json). Raises TaskFileError for an empty file, a malformed row,
    an item without input, or duplicate ids."""
    path = Path(path)
    if not path.is_file():
        raise TaskFileError(f"task file not found: {path}", "set env.tasks to a .jsonl/.yaml file or a folder")
    rows = _rows(path)
    if not rows:
        raise TaskFileError(f"{path}: no items", "add at least one item with an `input`")
    drafts = [where for row, where in rows if isinstance(row, dict) and row.get("skillgit_draft")
              and row.get("reviewed") is not True]
    if drafts:  # `skillgit tasks suggest` drafts: no judge the model wrote is trained on before a person read it
        raise TaskFileError(f"{drafts[0]}: a generated draft task nobody has reviewed yet ({len(drafts)} in the file)",
                            f"read and fix the drafts, then `skillgit tasks approve {path}`")
    located = [(_item(row, where, f"{path.stem}-{n}", path.parent.resolve()), where)
               for n, (row, where) in enumerate(rows, start=1)]
    _check_unique(located, str(path))
    return [item for item, _ in located]


# ---------------------------------------------------------------------------------------------- splits
def _split_sources(folder: Path, name: str) -> list[Path]:
    """The files that make up split `name` in `folder`: `name/` (all task files inside) or `name.<suffix>`."""
    sub = folder / name
    files = [folder / f"{name}{s}" for s in TASK_SUFFIXES if (folder / f"{name}{s}").is_file()]
    if sub.is_dir() and files:
        raise TaskFileError(f"{folder}: split '{name}' is given twice, as {name}/ and as {files[0].name}",
                            "keep one of them")
    if sub.is_dir():
        return sorted(p for p in sub.rglob("*") if p.is_file() and p.suffix.lower() in TASK_SUFFIXES)
    return files


def _load_split_dir(folder: Path, load: Loader = load_items) -> Splits:
    found: dict[str, list[tuple[Item, str]]] = {}
    for name in SPLIT_NAMES:
        sources = _split_sources(folder, name)
        if len(sources) > 1 and not (folder / name).is_dir():
            raise TaskFileError(f"{folder}: more than one file for split '{name}': "
                                f"{', '.join(p.name for p in sources)}", "keep one, or use a folder per split")
        found[name] = [(item, f"{name}: {src.name}") for src in sources for item in load(src)]
    for name in ("train", "val"):
        if not found[name]:
            raise TaskFileError(f"{folder}: split '{name}' is empty or missing",
                                f"add {name}.jsonl (or a {name}/ folder of .jsonl/.yaml files) next to "
                                f"{'val' if name == 'train' else 'train'}; test is optional")
    _check_unique([pair for name in SPLIT_NAMES for pair in found[name]], f"the splits of {folder}")
    return Splits(*(tuple(item for item, _ in found[name]) for name in SPLIT_NAMES))


def split_counts(n: int, ratio: tuple[float, float, float]) -> tuple[int, int, int]:
    """Largest-remainder apportionment of `n` items to train/val/test; ties go to train, then val, then test."""
    total = sum(ratio)
    exact = [n * r / total for r in ratio]
    counts = [math.floor(x) for x in exact]
    order = sorted(range(3), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[: n - sum(counts)]:
        counts[i] += 1
    return counts[0], counts[1], counts[2]


MIN_VAL = 30  # val items the default split aims for (see the module's contract)
MIN_TEST = 10  # …while test keeps this many


def default_counts(n: int) -> tuple[int, int, int]:
    """The default split of `n` items: 2:1:7, then val raised to `MIN_VAL` from test while test keeps `MIN_TEST`
    (or to half of val + test when there are fewer tasks)."""
    n_train, n_val, n_test = split_counts(n, parse_ratio(DEFAULT_RATIO))
    rest = n_val + n_test
    n_val = max(n_val, min(MIN_VAL, max(rest - MIN_TEST, rest // 2)))
    return n_train, n_val, rest - n_val


DEFAULT_RATIO = EnvCfg().split_ratio


def _ratio_split(items: list[Item], ratio_text: str, seed: int, source: Path) -> Splits:
    ratio = parse_ratio(ratio_text)

    def rank(item: Item) -> str:
        return hashlib.sha256(f"{seed}\0{item.id}".encode("utf-8")).hexdigest()

    ordered = sorted(items, key=rank)
    if ratio_text.strip() == DEFAULT_RATIO:
        n_train, n_val, _ = default_counts(len(ordered))
    else:
        n_train, n_val, _ = split_counts(len(ordered), ratio)
    splits = Splits(tuple(ordered[:n_train]), tuple(ordered[n_train:n_train + n_val]),
                    tuple(ordered[n_train + n_val:]))
    for name in ("train", "val"):
        if not splits.get(name):
            counts = ", ".join(f"{k} {v}" for k, v in splits.counts.items())
            raise TaskFileError(
                f"env.split_ratio '{ratio_text}' splits the {len(items)} items of {source.name} into {counts}: "
                f"{name} would be empty",
                "add items, or give that split a larger share, e.g. `split_ratio: 1:1:1`"
                if len(items) >= 3 else "add items: train and val need at least one each")
    return splits


def load_splits(env_cfg: EnvCfg, root: Path, load: Loader = load_items) -> Splits:
    """train/val/test for a project: `env.split_dir` (or `env.tasks` naming a folder) holding `train`, `val` and
    optionally `test` as files (`train.jsonl`, ...) or sub-folders; otherwise `env.tasks` is one file split by
    `env.split_ratio` with `env.split_seed`. Relative paths are resolved against `root`. `load` reads one file
    (an environment's loader reads its benchmark's format; a folder without split files is then one data set)."""
    root = Path(root)
    if env_cfg.split_dir:
        folder = root / env_cfg.split_dir
        if not folder.is_dir():
            raise TaskFileError(f"env.split_dir: folder not found: {folder}",
                                "create it with train.jsonl and val.jsonl (test.jsonl optional), or unset split_dir")
        return _load_split_dir(folder, load)
    if str(env_cfg.tasks).startswith("hf:"):  # rows through the `datasets` library, as a local JSONL file
        from skillgit.hfsource import local_path

        path = local_path(env_cfg.tasks, root)
    else:
        path = root / env_cfg.tasks
    if path.is_dir() and (load is load_items or any(_split_sources(path, name) for name in SPLIT_NAMES)):
        return _load_split_dir(path, load)
    if not path.exists():
        raise TaskFileError(f"env.tasks: task file not found: {path}",
                            "write it, one JSON task per line: {\"id\": \"t1\", \"input\": \"…\", \"expected\": \"…\"} "
                            "(README: Train your own skill); or point env.tasks at a .jsonl/.yaml file, or at a folder "
                            "with train/ val/ test/")
    return _ratio_split(load(path), env_cfg.split_ratio, env_cfg.split_seed, path)


# ---------------------------------------------------------------------------------------------- batches
def epoch_batches(items: Sequence[Item], batch_size: int, seed: int, epoch: int) -> list[list[Item]]:
    """Shuffle `items` with a generator seeded by (seed, epoch) and cut them into batches of `batch_size`."""
    if batch_size < 1:
        raise ConfigError(f"train.batch_size: must be >= 1, got {batch_size}", "use a batch size of at least 1")
    order = list(items)
    random.Random(f"skillgit:{seed}:{epoch}").shuffle(order)
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]

"""Reading a benchmark's rows: JSONL, a JSON list (or `{"data": [...]}` / `{"items": [...]}`), or a folder of
such files, each row with where it came from (`file:line`) for error messages. Adapters turn rows into items:
`items(path, make)` calls `make(row, where, item_id)` for each row and checks the items' ids."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from skillgit.tasks import TaskFileError

SUFFIXES = (".jsonl", ".json")
Row = dict[str, Any]


def files(path: Path) -> list[Path]:
    path = Path(path)
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
        if not found:
            raise TaskFileError(f"{path}: no .jsonl or .json files in this folder",
                                "point env.tasks at the benchmark's data file or a folder of them")
        return found
    if not path.is_file():
        raise TaskFileError(f"env.tasks: data not found: {path}",
                            "point env.tasks at the benchmark's data file (`skillgit init --env NAME --data PATH`)")
    return [path]


def rows(path: Path) -> Iterator[tuple[dict[str, Any], str]]:
    """Every row of the file(s) at `path` as (object, "file:line" or "file[index]")."""
    for file in files(path):
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TaskFileError(f"cannot read {file}: {exc}", "the data must be UTF-8 JSON or JSONL") from None
        if file.suffix.lower() == ".jsonl":
            for number, line in enumerate(text.splitlines(), start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise TaskFileError(f"{file}:{number}: not a JSON object ({exc.msg})",
                                        "JSONL holds one JSON object per line") from None
                yield _object(row, f"{file}:{number}"), f"{file}:{number}"
            continue
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TaskFileError(f"{file}:{exc.lineno}: not valid JSON ({exc.msg})", "fix the JSON") from None
        if isinstance(data, dict):
            data = data.get("data", data.get("items", [data]))
        if not isinstance(data, list):
            raise TaskFileError(f"{file}: expected a list of rows, got {type(data).__name__}",
                                "write the rows as a JSON list, or one object per line in a .jsonl file")
        for index, row in enumerate(data):
            yield _object(row, f"{file}[{index}]"), f"{file}[{index}]"


def _object(row: Any, where: str) -> dict[str, Any]:
    if not isinstance(row, dict):
        raise TaskFileError(f"{where}: expected a JSON object, got {type(row).__name__}", "one object per row")
    return row


def field(row: dict[str, Any], keys: tuple[str, ...], where: str, what: str) -> Any:
    """The first of `keys` present (not empty) in `row`, or TaskFileError naming them."""
    for key in keys:
        if row.get(key) not in (None, "", []):
            return row[key]
    raise TaskFileError(f"{where}: no {what} (looked for {', '.join(keys)})",
                        f"each row needs its {what} under `{keys[0]}`")


def row_id(row: dict[str, Any], stem: str, number: int) -> str:
    for key in ("id", "qid", "question_id", "uid"):
        value = row.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
            return str(value)
    return f"{stem}-{number}"


def unique(items: list[Any], source: Path) -> list[Any]:
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise TaskFileError(f"{source}: duplicate item id '{item.id}'", "give every row a unique id")
        seen.add(item.id)
    if not items:
        raise TaskFileError(f"{source}: no items", "add at least one row")
    return items


def items(path: Path, make: Callable[[Row, str, str], Any],
          table: Iterable[tuple[Row, str]] | None = None) -> list[Any]:
    """One item per row of the file(s) at `path` (or of `table`, rows read another way):
    `make(row, where, row_id(row, stem, n))` (n counts rows from 1), the ids then checked by `unique`."""
    path = Path(path)
    made = [make(row, where, row_id(row, path.stem, number))
            for number, (row, where) in enumerate(rows(path) if table is None else table, start=1)]
    return unique(made, path)

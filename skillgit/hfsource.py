"""Benchmark data through the `datasets` library: `env.tasks: "hf:NAME[@CONFIG][:SPLIT]"` (and `skillgit init --env X
--data hf:…`), for every adapter that reads rows (searchqa, math, docvqa, officeqa with `env.options.corpus`,
textgame, the scaffold's, a plugin's).

NAME is what `datasets` loads: a dataset on the Hugging Face Hub (`kyunghyuncho/search_qa`), a folder written by
`Dataset.save_to_disk` / `DatasetDict.save_to_disk` (read with `load_from_disk`), or a local `.parquet`, `.csv`,
`.json` or `.jsonl` file (read with `load_dataset("<format>", data_files=…)`). CONFIG is the Hub's configuration
name (`@raw_jeopardy`). SPLIT defaults to `train` (or the only split there is); a Hub split expression
(`train[:500]`) is passed through.

The rows are written once per process as JSONL to a private temporary folder (removed at exit), and the
environment's own `load` reads that file — so a row from the Hub is read by exactly the code that reads the
benchmark's published file, with the same errors naming the row. Values JSON cannot hold are converted: an image
(DocVQA's page, a PIL image) is saved as a PNG under `images/` next to the file and the row holds its relative
path; bytes that are an image are saved the same way; dates become ISO text. Nothing is written to the repository
or the user's configuration; `datasets` keeps its own cache (`HF_HOME`), so a dataset fetched once loads offline
afterwards (`HF_DATASETS_OFFLINE=1`).

Errors are ConfigErrors that name the fix: `datasets` not installed (the `datasets` extra), a malformed spec, a
missing split (listing the splits there are), a dataset that cannot be fetched (offline: fetch it once where the
machine is online, or point at a local copy).
"""

from __future__ import annotations

import atexit
import datetime
import hashlib
import json
import re
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from skillgit.errors import ConfigError

PREFIX = "hf:"
_SPEC = re.compile(r"^hf:(?P<name>[^@:\s][^@\s]*?)(?:@(?P<config>[\w.\-]+))?(?::(?P<split>[\w.\-\[\]:%+]+))?$")
VAL_NAMES = ("validation", "val", "valid", "dev")
FILE_FORMATS = {".parquet": "parquet", ".csv": "csv", ".json": "json", ".jsonl": "json"}
INSTALL_FIX = "install skillgit's `datasets` extra (pip install 'datasets>=2.14')"

_lock = threading.Lock()
_made: dict[str, Path] = {}
_folder: Path | None = None


def is_spec(text: Any) -> bool:
    return isinstance(text, str) and text.startswith(PREFIX)


def parse(spec: str) -> tuple[str, str | None, str | None]:
    """(name, config, split) of `hf:NAME[@CONFIG][:SPLIT]`, or a ConfigError showing the shape."""
    match = _SPEC.match(spec.strip())
    if match is None:
        raise ConfigError(f"env.tasks: '{spec}' is not a datasets source",
                          "write hf:NAME[@CONFIG][:SPLIT], e.g. hf:kyunghyuncho/search_qa@raw_jeopardy:train or "
                          "hf:./saved_dataset")
    return match["name"], match["config"], match["split"]


def _datasets() -> Any:
    try:
        import datasets
    except ImportError:
        raise ConfigError("env.tasks: an hf: source needs the `datasets` package, which is not installed",
                          INSTALL_FIX) from None
    datasets.disable_progress_bars()  # stderr carries skillgit's progress, not the library's bars
    return datasets


def rebase(spec: str, folder: Path) -> str:
    """`--data hf:PATH…` as given on the command line (PATH relative to the current folder) rewritten for
    `env.tasks` (relative to the repository `folder` when inside it, else absolute); a Hub name is kept."""
    name, config, split = parse(spec)
    local = Path(name).expanduser()
    if not local.exists():
        return spec
    local = local.resolve()
    try:
        name = local.relative_to(Path(folder).resolve()).as_posix()
    except ValueError:
        name = str(local)
    return PREFIX + name + (f"@{config}" if config else "") + (f":{split}" if split else "")


def _pick(found: Any, split: str | None, spec: str) -> Any:
    """One split of a DatasetDict (or the Dataset itself); with no split named, a DatasetDict holding `train` and a
    validation split gives skillgit's splits as a mapping (train, val, and test when there is one)."""
    if not hasattr(found, "keys"):
        return found
    names = list(found.keys())
    if split is None:
        val = next((n for n in VAL_NAMES if n in names), None)
        if "train" in names and val is not None:
            ours = {"train": found["train"], "val": found[val]}
            return {**ours, "test": found["test"]} if "test" in names else ours
        split = "train" if "train" in names else (names[0] if len(names) == 1 else None)
    if split not in names:
        raise ConfigError(f"env.tasks: {spec} has no split '{split}'" if split else
                          f"env.tasks: {spec} has several splits", f"name one: {', '.join(names)} (hf:NAME:SPLIT)")
    return found[split]


def _open(name: str, config: str | None, split: str | None, root: Path, spec: str) -> Any:
    datasets = _datasets()
    local = Path(name).expanduser()
    local = local if local.is_absolute() else root / local
    try:
        if local.is_dir() and any((local / f).is_file() for f in ("dataset_info.json", "dataset_dict.json",
                                                                   "state.json")):
            return _pick(datasets.load_from_disk(str(local)), split, spec)
        if local.is_file() and local.suffix.lower() in FILE_FORMATS:
            return datasets.load_dataset(FILE_FORMATS[local.suffix.lower()], data_files=str(local),
                                         split=split or "train")
        if local.is_dir():
            return _pick(datasets.load_dataset(str(local), config), split, spec)
        return _pick(datasets.load_dataset(name, config), split, spec) if split is None else \
            datasets.load_dataset(name, config, split=split)
    except ConfigError:
        raise
    except Exception as exc:  # the library's own: offline, not found, gated, a bad split expression
        raise ConfigError(f"env.tasks: {spec} could not be loaded by datasets: {type(exc).__name__}: {exc}"[:500],
                          "check the name, config and split; without internet only a dataset already in the "
                          "datasets cache (HF_HOME) or a local copy loads (hf:./folder or hf:file.parquet)") from None


def _image(value: Any, images: Path, key: str) -> str | None:
    """Save an image (a PIL image, or PNG/JPEG bytes as such or as the Image feature's `{"bytes": …}`) under
    `images`; its path relative to the JSONL file, or None when the value is not an image."""
    data = value.get("bytes") if isinstance(value, dict) else value
    data = bytes(data) if isinstance(data, (bytes, bytearray)) else b""
    if hasattr(value, "save") and hasattr(value, "size"):  # a PIL image
        images.mkdir(parents=True, exist_ok=True)
        value.save(images / f"{key}.png", format="PNG")
        return f"images/{key}.png"
    suffix = ".png" if data.startswith(b"\x89PNG") else ".jpg" if data.startswith(b"\xff\xd8\xff") else ""
    if suffix:
        images.mkdir(parents=True, exist_ok=True)
        (images / f"{key}{suffix}").write_bytes(data)
        return f"images/{key}{suffix}"
    return None


def _plain(value: Any, images: Path, key: str) -> Any:
    """A row's value as JSON can hold it."""
    saved = _image(value, images, key)
    if saved is not None:
        return saved
    if isinstance(value, dict):
        return {str(k): _plain(v, images, f"{key}-{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, images, f"{key}-{i}") for i, v in enumerate(value)]
    if isinstance(value, (datetime.date, datetime.datetime, datetime.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return None
    if hasattr(value, "item") and callable(value.item):  # a numpy scalar
        return value.item()
    return value


def _target(spec: str, key: str) -> Path:
    global _folder
    if _folder is None:
        _folder = Path(tempfile.mkdtemp(prefix="skillgit-datasets-"))
        atexit.register(shutil.rmtree, _folder, True)
    slug = re.sub(r"[^\w.-]+", "_", spec[len(PREFIX):])[-60:].strip("_.") or "dataset"
    return _folder / f"{hashlib.sha256(key.encode()).hexdigest()[:10]}-{slug}"


def _write(table: Any, target: Path, tag: str) -> None:
    with target.open("w", encoding="utf-8") as out:
        for number, row in enumerate(table):
            plain = {str(k): _plain(v, target.parent / "images", f"{tag}{number}-{k}") for k, v in row.items()}
            out.write(json.dumps(plain, ensure_ascii=False, default=str) + "\n")


def local_path(spec: str, root: Path) -> Path:
    """The rows of `spec` as local JSONL (written once per process) that an environment's `load` reads: one file,
    or a folder with train.jsonl, val.jsonl (and test.jsonl) when the dataset brings its own splits."""
    key = f"{Path(root).resolve()}\0{spec}"
    with _lock:
        if key in _made and _made[key].exists():
            return _made[key]
        name, config, split = parse(spec)
        table = _open(name, config, split, Path(root), spec)
        folder = _target(spec, key)
        folder.mkdir(parents=True, exist_ok=True)
        if isinstance(table, dict):
            for ours, part in table.items():
                _write(part, folder / f"{ours}.jsonl", f"{ours}-")
            result = folder
        else:
            result = folder / f"{folder.name.split('-', 1)[1]}.jsonl"
            _write(table, result, "")
        _made[key] = result
        return result

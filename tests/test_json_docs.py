"""docs/JSON.md against real output: every documented field of `log`, `status` and `doctor --json` is present
with its documented type, and every field they print is documented."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from skillgit.cli.demo import create_project
from tests.conftest import run_cli_inproc

DOC = (Path(__file__).resolve().parent.parent / "docs" / "JSON.md").read_text(encoding="utf-8")
TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "null": type(None),
         "object": dict, "array": list, "StepOutcome": dict, "sparkline": str}


def table(heading: str) -> dict[str, tuple[type, ...]]:
    """field → the JSON types the table under `heading` allows."""
    section = DOC.split(heading, 1)[1].split("\n## ", 1)[0]
    fields: dict[str, tuple[type, ...]] = {}
    for row in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))] if row.startswith("|") else []
        if len(cells) < 2 or cells[0] in ("field", "---"):
            continue
        kinds = tuple(TYPES[w] for w in re.findall(r"\b(string|integer|number|boolean|null|object|array|"
                                                    r"StepOutcome)\b", cells[1].split(":")[0].split("(")[0]))
        for name in re.findall(r"`([a-z_]+)`", cells[0]):
            fields[name] = kinds
    assert fields, heading
    return fields


def check(doc: dict[str, tuple[type, ...]], data: dict) -> None:
    assert set(data) == set(doc), (set(data) ^ set(doc))
    for name, value in data.items():
        allowed = tuple(t for kinds in doc[name] for t in (kinds if isinstance(kinds, tuple) else (kinds,)))
        assert isinstance(value, allowed) and not (isinstance(value, bool) and bool not in allowed), (name, value)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("json") / "p"
    create_project(folder, 0)
    done = run_cli_inproc("train", "--set", "train.max_steps=3", cwd=folder)
    assert done.returncode == 0, done.stderr
    return folder


def test_log_json_matches_the_doc(trained):
    doc = table("## `skillgit log --json`")
    entries = json.loads(run_cli_inproc("log", "--json", cwd=trained).stdout)
    assert {e["verdict"] for e in entries} >= {"seed", "rejected"}
    for entry in entries:
        check(doc, entry)
        assert isinstance(entry["step"], str)


def test_status_json_matches_the_doc(trained):
    check(table("## `skillgit status --json`"), json.loads(run_cli_inproc("status", "--json", cwd=trained).stdout))


def test_doctor_json_matches_the_doc(trained):
    data = json.loads(run_cli_inproc("doctor", "--json", cwd=trained).stdout)
    check(table("## `skillgit doctor --json`"), data)
    assert {r["role"] for r in data["roles"]} == {"teacher", "student"}

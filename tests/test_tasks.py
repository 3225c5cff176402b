"""Task loading, splits and epoch batches; the shipped example task sets."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from skillgit.config import EnvCfg, load_config
from skillgit.errors import ConfigError
from skillgit.scorers import build_scorer
from skillgit.tasks import Splits, TaskFileError, chat_to_text, epoch_batches, load_items, load_splits, split_counts
from skillgit.types import Item

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def write_jsonl(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def numbered(n: int, prefix: str = "t") -> list[dict]:
    return [{"id": f"{prefix}{i}", "input": f"question {i}", "expected": str(i)} for i in range(n)]


def task_error(fn, *args) -> TaskFileError:
    with pytest.raises(TaskFileError) as info:
        fn(*args)
    assert isinstance(info.value, ConfigError)  # one error family: the CLI shows message + hint, exit code 2
    return info.value


# ---------------------------------------------------------------------------------------------- load_items
def test_jsonl_items_with_metadata_and_extra_keys(tmp_path):
    path = write_jsonl(tmp_path / "tasks.jsonl", [
        {"id": "a", "input": "2+2?", "expected": "4", "metadata": {"level": 1}, "topic": "math"},
        "",
        {"id": 7, "input": "3+3?", "expected": 6},
    ])
    items = load_items(path)
    assert [i.id for i in items] == ["a", "7"]
    assert items[0] == Item("a", "2+2?", "4", {"topic": "math", "level": 1})
    assert items[1].expected == 6


def test_openai_evals_shape(tmp_path):
    path = write_jsonl(tmp_path / "samples.jsonl", [
        {"input": [{"role": "system", "content": "Answer in one word."},
                   {"role": "user", "content": "Capital of France?"}], "ideal": "Paris"},
        {"input": [{"role": "user", "content": "Hi"}, {"role": "system", "content": "Be terse."}], "ideal": ["a", "b"]},
    ])
    items = load_items(path)
    assert items[0].input == "Answer in one word.\n\nCapital of France?"
    assert items[0].expected == "Paris"
    assert items[1].input == "Be terse.\n\nHi"  # system first, wherever it stood
    assert items[1].expected == ["a", "b"]
    assert [i.id for i in items] == ["samples-1", "samples-2"]  # stable generated ids


def test_multi_turn_chat_keeps_speakers_and_content_parts():
    text = chat_to_text([
        {"role": "system", "content": [{"type": "text", "text": "Rules."}]},
        {"role": "user", "content": "1+1"}, {"role": "assistant", "content": "2"}, {"role": "user", "content": "2+2"},
    ])
    assert text == "Rules.\n\nUser: 1+1\n\nAssistant: 2\n\nUser: 2+2"


def test_yaml_and_json_files(tmp_path):
    (tmp_path / "list.yaml").write_text("- {id: x, input: hello, expected: 1:2}\n- input: second\n")
    (tmp_path / "wrapped.yml").write_text("items:\n  - id: y\n    input: hi\n    expected: 2024-01-01\n")
    (tmp_path / "plain.json").write_text(json.dumps({"items": [{"id": "z", "input": "q"}]}))
    listed = load_items(tmp_path / "list.yaml")
    assert [(i.id, i.expected) for i in listed] == [("x", "1:2"), ("list-2", None)]
    assert load_items(tmp_path / "wrapped.yml")[0].expected == "2024-01-01"  # not a date object
    assert load_items(tmp_path / "plain.json")[0].id == "z"


@pytest.mark.parametrize("content, fragment", [
    ("", "no items"),
    ("\n\n   \n", "no items"),
    ('{"id": "a", "input": "x"}\n{"id": "b", "input": "y"}\n{"id": "c", input: "z"}\n', "tasks.jsonl:3: not a JSON"),
    ('{"id": "a", "input": "x"}\n["not", "an", "object"]\n', "tasks.jsonl:2: expected an object"),
    ('{"id": "a", "expected": "x"}\n', "item 'a' has no `input`"),
    ('{"id": "a", "input": ""}\n', "item 'a' has no `input`"),
    ('{"id": "a", "input": "x", "metadata": [1]}\n', "`metadata` must be a mapping"),
    ('{"id": "", "input": "x"}\n', "`id` must be a non-empty string"),
    ('{"id": "a", "input": true}\n', "`input` must be text"),
])
def test_bad_jsonl(tmp_path, content, fragment):
    path = tmp_path / "tasks.jsonl"
    path.write_text(content, encoding="utf-8")
    err = task_error(load_items, path)
    assert fragment in err.message
    assert err.hint


def test_duplicate_ids_are_named_with_locations(tmp_path):
    path = write_jsonl(tmp_path / "tasks.jsonl", [{"id": "q1", "input": "a"}, {"id": "q2", "input": "b"},
                                                  {"id": "q1", "input": "c"}])
    err = task_error(load_items, path)
    assert "duplicate item ids" in err.message and "'q1'" in err.message
    assert "tasks.jsonl:1" in err.message and "tasks.jsonl:3" in err.message
    assert "'q2'" not in err.message


def test_bad_yaml_and_unknown_suffix_and_missing_file(tmp_path):
    (tmp_path / "t.yaml").write_text("- id: a\n  input: [unclosed\n")
    assert "not valid YAML" in task_error(load_items, tmp_path / "t.yaml").message
    (tmp_path / "t.yaml").write_text("just a string\n")
    assert "expected a list of items" in task_error(load_items, tmp_path / "t.yaml").message
    (tmp_path / "t.csv").write_text("a,b\n")
    assert "unknown task file type" in task_error(load_items, tmp_path / "t.csv").message
    assert "not found" in task_error(load_items, tmp_path / "absent.jsonl").message
    (tmp_path / "latin.jsonl").write_bytes(b'{"id": "a", "input": "caf\xe9"}\n')
    assert "not UTF-8" in task_error(load_items, tmp_path / "latin.jsonl").message


# ---------------------------------------------------------------------------------------------- splits
def test_split_counts_largest_remainder():
    assert split_counts(100, (4, 3, 3)) == (40, 30, 30)
    assert split_counts(10, (2, 1, 7)) == (2, 1, 7)
    assert split_counts(7, (1, 1, 1)) == (3, 2, 2)
    assert sum(split_counts(403, (2, 1, 5))) == 403


def test_ratio_split_is_deterministic_disjoint_and_order_independent(tmp_path):
    rows = numbered(50)
    write_jsonl(tmp_path / "a" / "tasks.jsonl", rows)
    shuffled = rows[:]
    random.Random(3).shuffle(shuffled)
    write_jsonl(tmp_path / "b" / "tasks.jsonl", shuffled)
    env = EnvCfg(tasks="tasks.jsonl", split_ratio="2:1:2", split_seed=5)
    first = load_splits(env, tmp_path / "a")
    assert first.counts == {"train": 20, "val": 10, "test": 20}
    ids = [i.id for part in (first.train, first.val, first.test) for i in part]
    assert sorted(ids) == sorted(r["id"] for r in rows)  # disjoint and complete
    assert load_splits(env, tmp_path / "a") == first
    assert load_splits(env, tmp_path / "b") == first  # row order in the file does not matter
    other_seed = load_splits(EnvCfg(tasks="tasks.jsonl", split_ratio="2:1:2", split_seed=6), tmp_path / "a")
    assert {i.id for i in other_seed.val} != {i.id for i in first.val}


def test_split_leaving_val_empty_is_an_error(tmp_path):
    write_jsonl(tmp_path / "tasks.jsonl", numbered(2))
    err = task_error(load_splits, EnvCfg(tasks="tasks.jsonl", split_ratio="2:1:7"), tmp_path)
    assert "val would be empty" in err.message
    assert "train 1, val 0, test 1" in err.message and "2 items" in err.message
    assert "add items" in err.hint


def test_split_leaving_train_empty_suggests_ratio(tmp_path):
    write_jsonl(tmp_path / "tasks.jsonl", numbered(4))
    err = task_error(load_splits, EnvCfg(tasks="tasks.jsonl", split_ratio="1:10:10"), tmp_path)
    assert "train would be empty" in err.message and "split_ratio: 1:1:1" in err.hint


def test_split_dir_with_subfolders_and_files(tmp_path):
    folder = tmp_path / "data"
    write_jsonl(folder / "train" / "part1.jsonl", numbered(3, "a"))
    (folder / "train" / "nested").mkdir()
    (folder / "train" / "nested" / "part2.yaml").write_text("- {id: b1, input: hi}\n")
    (folder / "train" / "README.txt").write_text("ignored: not a task file\n")
    write_jsonl(folder / "val.jsonl", numbered(2, "v"))
    splits = load_splits(EnvCfg(split_dir="data"), tmp_path)
    assert sorted(i.id for i in splits.train) == ["a0", "a1", "a2", "b1"]
    assert [i.id for i in splits.val] == ["v0", "v1"]
    assert splits.test == ()  # test is optional
    # env.tasks naming a folder works the same way
    assert load_splits(EnvCfg(tasks="data"), tmp_path) == splits


def test_split_dir_errors(tmp_path):
    folder = tmp_path / "data"
    write_jsonl(folder / "train.jsonl", numbered(3, "a"))
    err = task_error(load_splits, EnvCfg(split_dir="data"), tmp_path)
    assert "split 'val' is empty or missing" in err.message
    write_jsonl(folder / "val.jsonl", [{"id": "a1", "input": "again"}])
    err = task_error(load_splits, EnvCfg(split_dir="data"), tmp_path)
    assert "duplicate item ids" in err.message and "'a1'" in err.message
    assert "train: train.jsonl" in err.message and "val: val.jsonl" in err.message
    write_jsonl(folder / "val.jsonl", numbered(1, "v"))
    write_jsonl(folder / "val" / "more.jsonl", numbered(1, "w"))
    assert "given twice" in task_error(load_splits, EnvCfg(split_dir="data"), tmp_path).message
    assert "folder not found" in task_error(load_splits, EnvCfg(split_dir="nope"), tmp_path).message
    assert "task file not found" in task_error(load_splits, EnvCfg(tasks="nope.jsonl"), tmp_path).message


# ---------------------------------------------------------------------------------------------- batches
def test_epoch_batches():
    items = [Item(f"i{n}", "x") for n in range(10)]
    batches = epoch_batches(items, 4, seed=1, epoch=0)
    assert [len(b) for b in batches] == [4, 4, 2]
    assert sorted(i.id for b in batches for i in b) == sorted(i.id for i in items)
    assert epoch_batches(items, 4, seed=1, epoch=0) == batches
    assert epoch_batches(items, 4, seed=1, epoch=1) != batches
    assert epoch_batches(items, 4, seed=2, epoch=0) != batches
    assert epoch_batches([], 4, 0, 0) == []
    with pytest.raises(ConfigError):
        epoch_batches(items, 0, 0, 0)


# ---------------------------------------------------------------------------------------------- examples
@pytest.mark.parametrize("name, size", [("sort-numeric", 100), ("first-letters", 100), ("regex-match", 403)])
def test_example_loads_splits_and_scores(name, size):
    folder = EXAMPLES / name
    cfg = load_config(folder / "skillgit.yaml")
    assert cfg.model.student_backend == "openai" and cfg.skill.path == "SKILL.md"
    assert (folder / cfg.skill.path).read_text(encoding="utf-8").startswith("---\nname: ")
    splits = load_splits(cfg.env, folder)
    assert isinstance(splits, Splits) and sum(splits.counts.values()) == size
    assert splits.train and splits.val and splits.test
    scorer = build_scorer(cfg.env.scorer, folder)
    for item in splits.val[:5]:
        assert item.metadata["license"] == "MIT" and item.metadata["source"].startswith("evals 3.0.1.post1: ")
        assert scorer(item, str(item.expected)).hard == 1.0
        wrong = scorer(item, "No." if str(item.expected) == "Yes." else "I cannot answer that.")
        assert wrong.hard == 0.0 and wrong.feedback


def test_example_scorer_choices_match_their_instructions():
    sort_scorer = build_scorer(load_config(EXAMPLES / "sort-numeric" / "skillgit.yaml").env.scorer, EXAMPLES)
    item = Item("s", "1,2,3", "3,2,1")
    assert sort_scorer(item, "3, 2, 1").hard == 0.0  # "just a comma-separated list": format counts
    letters = build_scorer(load_config(EXAMPLES / "first-letters" / "skillgit.yaml").env.scorer, EXAMPLES)
    assert letters(Item("f", "x", "tractor"), "Tractor.").hard == 1.0


def test_example_licence_ships():
    text = (EXAMPLES / "LICENSE-evals.txt").read_text(encoding="utf-8")
    assert "MIT License" in text and "Copyright (c) 2023 OpenAI" in text and "3.0.1.post1" in text

"""Benchmark data through the `datasets` library (issue 26): `env.tasks` / `--data` as `hf:NAME[@CONFIG][:SPLIT]`,
tested offline on datasets built here with `datasets` itself (save_to_disk, parquet) — the same items as the
published file, a dataset's own splits becoming skillgit's, images saved as files — and the errors for a missing
package, a malformed spec, a missing split and a Hub dataset that cannot be fetched offline."""

from __future__ import annotations

import json
import sys

import pytest

from skillgit import envs
from skillgit import hfsource as hub
from skillgit.errors import ConfigError
from skillgit.resources import example_dir
from tests.conftest import run_cli, run_cli_inproc

SAMPLES = example_dir("envs")


def published(name: str) -> list[dict]:
    return [json.loads(line) for line in (SAMPLES / name / f"{name}.jsonl").read_text().splitlines() if line]


def same_items(left: list, right: list) -> bool:
    return [(i.id, i.input, i.expected) for i in left] == [(i.id, i.input, i.expected) for i in right]


def test_without_datasets_or_with_a_bad_spec_the_error_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(ConfigError) as caught:
        hub.local_path("hf:some/dataset", tmp_path)
    assert "needs the `datasets` package" in caught.value.message and "`datasets` extra" in caught.value.hint
    with pytest.raises(ConfigError, match="is not a datasets source") as caught:
        hub.parse("hf:")
    assert "hf:NAME[@CONFIG][:SPLIT]" in caught.value.hint
    assert hub.parse("hf:kyunghyuncho/search_qa@raw_jeopardy:train[:50]") == (
        "kyunghyuncho/search_qa", "raw_jeopardy", "train[:50]")


def test_a_saved_dataset_reads_as_the_published_file_and_brings_its_splits(tmp_path):
    datasets = pytest.importorskip("datasets")
    rows = published("searchqa")
    datasets.DatasetDict({"train": datasets.Dataset.from_list(rows[:4]),
                          "validation": datasets.Dataset.from_list(rows[4:])}).save_to_disk(str(tmp_path / "sq"))
    env = envs.get("searchqa")
    direct = env.load(SAMPLES / "searchqa" / "searchqa.jsonl")
    one = hub.local_path("hf:sq:validation", tmp_path)  # relative to the repository root
    assert one.suffix == ".jsonl" and same_items(env.load(one), direct[4:])
    both = hub.local_path("hf:sq", tmp_path)  # train + validation: skillgit's train and val
    assert sorted(p.name for p in both.iterdir()) == ["train.jsonl", "val.jsonl"]
    assert same_items(env.load(both / "train.jsonl"), direct[:4])
    with pytest.raises(ConfigError, match="has no split 'test'") as caught:
        hub.local_path("hf:sq:test", tmp_path)
    assert "train, validation" in caught.value.hint
    # a local parquet file (math), read by load_dataset("parquet", …)
    datasets.Dataset.from_list(published("math")).to_parquet(str(tmp_path / "math.parquet"))
    math = envs.get("math")
    assert same_items(math.load(hub.local_path(f"hf:{tmp_path / 'math.parquet'}", tmp_path)),
                      math.load(SAMPLES / "math" / "math.jsonl"))


def test_a_dataset_with_images_gives_docvqa_its_pages_as_files(tmp_path):
    datasets = pytest.importorskip("datasets")
    pytest.importorskip("PIL")
    sample = json.loads((SAMPLES / "docvqa" / "val_v1.0.json").read_text())["data"][:2]
    rows = [{**row, "image": str(SAMPLES / "docvqa" / row["image"])} for row in sample]
    table = datasets.Dataset.from_list(rows).cast_column("image", datasets.Image())  # decoded to PIL on read
    table.save_to_disk(str(tmp_path / "docvqa"))
    items = envs.get("docvqa").load(hub.local_path("hf:docvqa", tmp_path))
    assert [i.id for i in items] == [str(r["questionId"]) for r in sample]
    from PIL import Image

    for item, row in zip(items, sample):
        page = item.metadata["images"][0]
        assert page.endswith(".png") and "[page image: images/" in item.input
        with Image.open(page) as saved, Image.open(SAMPLES / "docvqa" / row["image"]) as original:
            assert saved.size == original.size and saved.convert("RGB").tobytes() == original.convert("RGB").tobytes()


def test_init_and_doctor_take_an_hf_source(tmp_path):
    datasets = pytest.importorskip("datasets")
    rows = published("searchqa")
    datasets.DatasetDict({"train": datasets.Dataset.from_list(rows[:4]),
                          "validation": datasets.Dataset.from_list(rows[4:])}).save_to_disk(str(tmp_path / "sq"))
    folder = tmp_path / "proj"
    made = run_cli_inproc("init", str(folder), "--env", "searchqa", "--data", f"hf:{tmp_path / 'sq'}", "--commit",
                          cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert f'tasks: "hf:{tmp_path / "sq"}"' in (folder / "skillgit.yaml").read_text()
    assert not (folder / "data").exists()  # nothing copied into the repository
    doctor = run_cli_inproc("doctor", "--json", cwd=folder)
    row = json.loads(doctor.stdout)["env"]
    assert row["status"] == "ok" and row["detail"] == "train 4, val 2, test 0"


def test_a_hub_dataset_that_cannot_be_fetched_offline_is_a_clear_error(tmp_path):
    pytest.importorskip("datasets")
    offline = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    # A process of its own: huggingface_hub reads HF_HUB_OFFLINE when it is imported, and in this test process an
    # earlier import (importorskip above, another test) made it online: it then tried the Hub over the network
    # and waited ~25 s for its retries to fail instead of stopping at once
    proc = run_cli("init", str(tmp_path / "proj"), "--env", "searchqa", "--data", "hf:nobody/no-such-dataset",
                          cwd=tmp_path, env=offline)
    assert proc.returncode != 0
    assert "hf:nobody/no-such-dataset could not be loaded by datasets" in proc.stderr
    assert "without internet only a dataset already in the datasets cache" in " ".join(proc.stderr.split())
    assert not (tmp_path / "proj" / "skillgit.yaml").exists()  # checked before anything is written

"""Recall of similar past trajectories (issue 27, SkillOpt-Sleep's `recall_k`; skillgit/loop/recall.py).

Unit: BM25 ranking with contrast first, k and the character cap respected, val and test items never recalled,
one row per (item, outcome), rows read back tolerantly, a step never recalls itself. End to end: the real CLI
trains the demo project with its teacher (the simulated one) behind a server on 127.0.0.1 reached through the real
openai SDK; every prompt the server received is read back: recalled trajectories reach reflect, at most k per
minibatch, from earlier steps and earlier runs, and nothing of a val or test item (markers planted in their ids,
inputs and answers, and so in the gate's scorings) ever does. A run killed mid-step and resumed sends the prompts
an uninterrupted run sends (the journal answers the ones already paid).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from skillgit.config import SimulatedCfg, config_from_dict
from skillgit.loop import recall
from skillgit.prompts import parse_blocks
from skillgit.skillopt_import import import_skillopt
from skillgit.types import Item, Score, Trajectory
from skillgit.world import SimulatedTeacher
from tests.conftest import git, run_cli_inproc
from tests.fake_servers import FakeLLMServer, llm_handler

MARKS = {"val": "VALMARKQZ", "test": "TESTMARKQZ"}


# ---------------------------------------------------------------------------------------------- unit
def _row(item: str, text: str, answer: str, hard: float, *, run: str = "r0", step: int = 1) -> dict:
    return {"run": run, "step": step, "branch": "main", "skill": "SKILL.md", "item": item, "input": text,
            "output": answer, "feedback": "wrong" if hard < 1 else "", "hard": hard, "soft": hard}


def _traj(item: str, text: str, answer: str, hard: float) -> Trajectory:
    return Trajectory(item, text, answer, None, Score(hard, hard, ""))


def _recaller(rows, k=4, chars=1200, hidden=(), expected=None) -> recall.Recaller:
    return recall.Recaller(rows, k, chars, hidden, expected or {})


def test_most_similar_rows_come_first_and_k_is_respected():
    rows = [_row("a", "convert miles to km for the trip", "80 km", 1.0),
            _row("b", "convert miles to km", "12 km", 1.0),
            _row("c", "sort the list of names", "ann bob", 1.0),
            _row("d", "bake a cake", "flour", 1.0)]
    now = [_traj("x", "convert miles to km please", "5 km", 1.0)]
    ranked = _recaller(rows, k=2).rank(now, "success")
    assert [r["item"] for r, _ in ranked] == ["b", "a"]  # b is shorter: more of it matches (BM25 length norm)
    assert ranked[0][1] >= ranked[1][1] > 0
    assert len(_recaller(rows, k=1).rank(now, "success")) == 1
    assert all(r["item"] != "d" for r, _ in _recaller(rows, k=10).rank(now, "success"))  # no shared word: out


def test_a_contrasting_pair_of_the_same_item_ranks_first():
    rows = [_row("x", "convert miles to km", "8 km", 1.0, step=1),  # the same item, solved
            _row("y", "convert miles to km now", "3 km", 0.0, step=1),  # similar, also failed
            _row("z", "convert miles to km today", "4 km", 1.0, step=1)]  # similar, solved
    now = [_traj("x", "convert miles to km", "5 miles", 0.0)]
    ranked = _recaller(rows).rank(now, "failure")
    assert [r["item"] for r, _ in ranked][:2] == ["x", "z"]  # the pair, then the contrasting outcome
    block = _recaller(rows).render(ranked, now)
    blocks = parse_blocks(block.strip(), "recalled")
    assert len(blocks) == 1
    inner = parse_blocks(blocks[0][1], "recalled_trajectory")
    assert inner[0][0]["same_item"] == "yes" and inner[0][0]["outcome"] == "success"


def test_one_row_per_item_and_outcome_and_no_copy_of_a_current_trajectory():
    rows = [_row("a", "convert miles", "8 km", 1.0, step=1), _row("a", "convert miles", "8 km", 1.0, step=2),
            _row("a", "convert miles", "8 km", 0.0, step=3), _row("b", "convert miles", "5 km", 1.0)]
    now = [_traj("b", "convert miles", "5 km", 1.0)]
    ranked = _recaller(rows).rank(now, "success")
    labels = [recall.label(r) for r, _ in ranked]
    assert labels == ["r0/3/a", "r0/2/a"]  # a's failure (contrast) first, a's success once (the latest); b: a copy


def test_val_and_test_items_are_never_recalled_by_id_or_by_text():
    rows = [_row("v1", "convert miles to km", "8 km", 1.0), _row("other", "Convert  miles to KM", "8 km", 1.0),
            _row("t1", "convert miles please", "3 km", 1.0), _row("ok", "convert miles", "2 km", 1.0)]
    hidden = [Item("v1", "something else"), Item("renamed", "convert miles to km"), Item("t1", "x")]
    ranked = _recaller(rows, hidden=hidden).rank([_traj("n", "convert miles", "1 km", 0.0)], "failure")
    assert [r["item"] for r, _ in ranked] == ["ok"]


def test_each_recalled_trajectory_is_capped_and_expected_only_for_current_train_items():
    long = "word " * 2000
    rows = [_row("a", "convert " + long, "km " + long, 0.0), _row("gone", "convert miles", "x", 0.0)]
    rec = _recaller(rows, chars=400, expected={"a": "REFERENCE-A"})
    now = [_traj("n", "convert miles", "km", 1.0)]
    found = rec(now, "success")
    assert found is not None and set(found.labels) == {"r0/1/a", "r0/1/gone"}
    per = parse_blocks(parse_blocks(found.block.strip(), "recalled")[0][1], "recalled_trajectory")
    texts = {attrs["id"]: inner for attrs, inner in per}
    assert len(texts["a"]) < 400 + 400  # the fields' shares of 400 characters, plus markers and tags
    assert "REFERENCE-A" in texts["a"] and "<expected>" not in texts["gone"]


def test_rows_round_trip_redacted_and_bad_rows_are_skipped():
    key = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
    made = recall.rows([_traj("a", f"use {key}", "ok", 1.0), Trajectory("b", "x", "", error="api")],
                       run="r1", step=2, branch="main", skill="SKILL.md")
    assert len(made) == 1 and key not in json.dumps(made)
    assert recall.row_of(json.loads(json.dumps(made[0]))) == made[0]
    for bad in (None, 3, {**made[0], "step": "2"}, {**made[0], "hard": True}, {**made[0], "input": None}):
        assert recall.row_of(bad) is None


def test_a_step_recalls_only_earlier_steps_of_its_run_and_the_scope_picks_branches():
    memory = recall.Memory("branch", "main", "SKILL.md")
    memory.add([_row("a", "t", "o", 1.0, run="r1", step=1), _row("b", "t", "o", 1.0, run="r1", step=2),
                _row("c", "t", "o", 1.0, run="r0", step=9), {**_row("d", "t", "o", 1.0), "branch": "other"}])
    assert [r["item"] for r in memory.before("r1", 2)] == ["c", "a"]
    memory.add([_row("e", "t", "o", 1.0, run="s0", step=5)])  # a later run id than r0
    with pytest.MonkeyPatch.context() as mp:  # a long history: the newest rows, this run's first
        mp.setattr(recall, "POOL", 2)
        assert [r["item"] for r in memory.before("r1", 3)] == ["a", "b"]
        mp.setattr(recall, "POOL", 3)
        assert [r["item"] for r in memory.before("r1", 3)] == ["a", "b", "e"]
    skill = recall.Memory("skill", "sleep/2026-01-02", "SKILL.md")
    skill.add([{**_row("d", "t", "o", 1.0), "branch": "sleep/2026-01-01"}, {**_row("e", "t", "o", 1.0),
                                                                             "skill": "OTHER.md"}])
    assert [r["item"] for r in skill.before("r9", 1)] == ["d"]


def test_config_keys_are_checked_and_skillopt_recall_k_is_mapped(tmp_path):
    assert config_from_dict({"optimizer": {"recall_k": 20}}).optimizer.recall_k == 20
    for bad in ({"recall_k": -1}, {"recall_chars": 10}, {"recall_scope": "all"}):
        with pytest.raises(Exception) as err:
            config_from_dict({"optimizer": bad})
        assert f"optimizer.{next(iter(bad))}" in str(err.value)
    source = tmp_path / "sleep.yaml"
    source.write_text("optimizer:\n  recall_k: 20\n")
    imp = import_skillopt(source)
    outcome = next(o for o in imp.outcomes if o.key == "optimizer.recall_k")
    assert outcome.status == "mapped" and imp.data["optimizer"]["recall_k"] == 20


def test_a_night_recalls_over_every_branch_of_the_skill(tmp_path):
    from skillgit.sleep.night import night_overrides
    from skillgit.sleep.settings import SleepSettings

    class Project:  # the two fields night_overrides reads (a seam we own)
        def __init__(self, settings, k):
            self.settings, self.config = settings, config_from_dict({"optimizer": {"recall_k": k}})

    assert "optimizer.recall_k=6" in night_overrides(Project(SleepSettings(recall_k=6), 0), "sleep/x")
    assert "optimizer.recall_scope=skill" in night_overrides(Project(SleepSettings(), 3), "sleep/x")
    assert not [o for o in night_overrides(Project(SleepSettings(), 0), "sleep/x") if "recall" in o]
    assert not [o for o in night_overrides(Project(SleepSettings(recall_k=0), 5), "sleep/x") if "recall" in o]


# ---------------------------------------------------------------------------------------------- end to end
def _project(folder: Path, server: FakeLLMServer) -> dict[str, list[dict]]:
    """The demo project, its tasks written as split files with markers planted in every val and test item (its
    id, task text and answer), its teacher the served simulated one. Returns the split rows."""
    from skillgit.cli.demo import create_project
    from skillgit.project import open_project
    from skillgit.tasks import load_splits

    create_project(folder, seed=3)
    project = open_project(folder, None, [])
    splits = load_splits(project.config.env, folder)
    rows: dict[str, list[dict]] = {}
    for name in ("train", "val", "test"):
        rows[name] = []
        for item in splits.get(name):
            row = item.to_dict()
            if name in MARKS:
                row.update(id=f"{MARKS[name]}-{item.id}", input=f"{item.input} {MARKS[name]}",
                           expected=f"{item.expected} {MARKS[name]}")
            rows[name].append(row)
    _write(folder, rows)
    config = yaml.safe_load((folder / "skillgit.yaml").read_text())
    config["env"].pop("split_ratio", None)
    config["env"]["tasks"] = "tasks"
    config["model"].update(teacher_backend="openai", teacher_model="sim-teacher",
                           teacher={"base_url": server.openai_base_url, "max_retries": 0})
    (folder / "skillgit.yaml").write_text(yaml.safe_dump(config))
    (folder / "tasks.jsonl").unlink()
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", "split tasks with markers")
    return rows


def _write(folder: Path, rows: dict[str, list[dict]]) -> None:
    (folder / "tasks").mkdir(exist_ok=True)
    for name, items in rows.items():
        (folder / "tasks" / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items))


def _served() -> FakeLLMServer:
    return FakeLLMServer(llm_handler(SimulatedTeacher(SimulatedCfg(seed=0, malformed_rate=0.0))))


ARGS = ("--events", "--set", "train.max_steps=3", "--set", "optimizer.recall_k=3", "--set",
        "evaluation.gate_repeats=1", "--set", "model.simulated.latency_s=0.005")
ENV = {"OPENAI_API_KEY": "sk-test-recall"}


def _train(folder: Path, *args: str) -> subprocess.CompletedProcess:
    done = run_cli_inproc("train", *args, *ARGS, cwd=folder, env=ENV)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _texts(server: FakeLLMServer) -> list[str]:
    return ["\n".join(text for _, text in r.messages()) for r in server.requests]


def _recalled(text: str) -> list[dict[str, str]]:
    return [attrs for _, inner in parse_blocks(text, "recalled") for attrs, _ in
            parse_blocks(inner, "recalled_trajectory")]


def _reflects(texts: list[str]) -> list[str]:
    return [t for t in texts if "<stage>reflect</stage>" in t]


@pytest.mark.slow
def test_recalled_trajectories_reach_reflect_and_no_val_or_test_item_ever_does(tmp_path):
    folder = tmp_path / "proj"
    with _served() as server:
        rows = _project(folder, server)
        _train(folder, "--run", "r1")
        first = _texts(server)
        server.requests.clear()
        # the second run: an item the first run trained on is now a val item; it must never be recalled
        recalled_r1 = [a["id"] for t in _reflects(first) for a in _recalled(t)]
        moved = max(set(recalled_r1), key=lambda i: (recalled_r1.count(i), i))
        moved_row = next(r for r in rows["train"] if r["id"] == moved)
        rows = {**rows, "train": [r for r in rows["train"] if r["id"] != moved], "val": [*rows["val"], moved_row]}
        _write(folder, rows)
        git(folder, "commit", "-qam", "an item moves to val")
        _train(folder, "--run", "r2")
        second = _texts(server)
    train_ids = {r["id"] for r in rows["train"]} | {moved}
    for run, texts in (("r1", first), ("r2", second)):
        reflects = _reflects(texts)
        shown = [_recalled(t) for t in reflects]
        assert any(shown), f"{run}: no reflect prompt carried a recalled trajectory"
        assert all(len(s) <= 3 for s in shown)  # optimizer.recall_k
        for attrs in (a for s in shown for a in s):
            assert attrs["id"] in train_ids and attrs["outcome"] in ("failure", "success")
        for text in texts:  # every prompt of every stage
            assert MARKS["val"] not in text and MARKS["test"] not in text
    assert not any(_recalled(t) for t in _reflects(first)[:4]), "step 1 has nothing to recall yet"
    assert any(a["run"] == "r1" for t in _reflects(second) for a in _recalled(t)), "an earlier run is recalled"
    assert all(a["id"] != moved for t in second for a in _recalled(t))
    assert all(moved_row["input"] not in t for t in second)
    # the notes say what each patch was shown
    notes = git(folder, "notes", "--ref", "skillgit", "list").splitlines()
    labels = set()
    for line in notes:
        for raw in git(folder, "notes", "--ref", "skillgit", "show", line.split()[1]).splitlines():
            record = json.loads(raw) if raw.startswith("{") else {}
            for patch in record.get("patches", []) if record.get("kind") == "candidate" else []:
                labels.update(patch.get("recalled", []))
    prompt_labels = {f"{a['run']}/{a['step']}/{a['id']}" for t in first + second for a in _recalled(t)}
    assert labels == prompt_labels


def _kill_during(folder: Path, stage: str, step: str) -> None:
    from tests.test_resume import kill_during

    kill_during(folder, stage, step, lambda f: subprocess.Popen(
        [sys.executable, "-m", "skillgit", "train", "--run", "r1", *ARGS], cwd=f, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env={**os.environ, **ENV}))


@pytest.mark.slow
@pytest.mark.parametrize("stage,step", [("reflect", "3")])
def test_a_killed_and_resumed_run_sends_the_same_recall_prompts(tmp_path, stage, step):
    from skillgit.llm.cache import CallCache

    with _served() as server:
        _project(tmp_path / "a", server)
        _train(tmp_path / "a", "--run", "r1")
        uninterrupted = _reflects(_texts(server))
        server.requests.clear()
        _project(tmp_path / "b", server)
        _kill_during(tmp_path / "b", stage, step)
        _train(tmp_path / "b", "--run", "r1")
        resumed = _texts(server)
    assert any(_recalled(t) for t in uninterrupted)
    assert sorted(set(_reflects(resumed))) == sorted(set(uninterrupted))  # the same prompts, recall included
    # no finished call was paid twice: the journal answered what the killed process had paid
    stats = CallCache(tmp_path / "b" / ".git" / "skillgit" / "cache" / "calls.sqlite").stats()
    assert stats.repeated_puts == 0


@pytest.mark.parametrize("budget", [1, 2])
def test_the_simulated_teacher_ranks_current_symptoms_before_recalled_ones(budget):
    """The world's model of a teacher reading recall (skillgit/world/teacher.py): recalled past failures reorder
    the current failures' symptoms and add their own after them, never before."""
    from skillgit import prompts
    from skillgit.llm.base import Request

    current = [Trajectory("d1", "When was it?", "05/03/2024", "2024-03-05", Score(0.0, 0.0, "wrong"))]
    past = [_row(f"w{i}", "When was it? weigh it", "Answer: 5 kg", 0.0) for i in range(3)]
    found = _recaller(past, expected={f"w{i}": "5 kg" for i in range(3)})(current, "failure")
    assert found is not None and len(found.labels) == 3
    messages = prompts.render("reflect", {"skill": prompts.block_skill("# Skill\n\nAnswer.\n"),
                                          "trajectories": prompts.block_trajectories(current, "failure")
                                          + found.block, "budget": prompts.block_budget(budget),
                                          "rejected_edits": prompts.block_rejected([]),
                                          "meta_skill": prompts.block_meta_skill("")})
    teacher = SimulatedTeacher(SimulatedCfg(seed=0, malformed_rate=0.0, off_target_rate=0.0, vague_rate=0.0,
                                            harmful_rate=0.0))
    answer = json.loads(teacher.complete(Request(tuple(messages), stage="reflect")).text)
    why = [e["rationale"] for e in answer["edits"]]
    assert why[0].startswith("1 of 1 failures"), why
    if budget == 2:
        assert why[1].startswith("3 recalled past failure(s)"), why


class Recording:
    """The simulated teacher, every prompt kept (a seam we own: the teacher is not under test)."""

    def __init__(self):
        self.inner = SimulatedTeacher(SimulatedCfg(seed=0, malformed_rate=0.0))
        self.prompts: list[str] = []

    @property
    def id(self) -> str:
        return self.inner.id

    def complete(self, request):
        self.prompts.append("\n".join(m.content for m in request.messages))
        return self.inner.complete(request)


def test_full_rewrite_analysts_see_the_recall_too(tmp_path):
    from skillgit.cli.demo import create_project
    from skillgit.project import open_project
    from skillgit.session import build_trainer, open_session

    create_project(tmp_path / "p", seed=1)
    teacher = Recording()
    project = open_project(tmp_path / "p", None, ["train.max_steps=2", "optimizer.recall_k=2",
                                                  "optimizer.skill_update_mode=full_rewrite_minibatch",
                                                  "evaluation.gate_repeats=1", "evaluation.eval_test=false"])
    session = open_session(project, teacher=teacher, cache=False)
    build_trainer(session, run_id="r1", resume=False).train()
    rewrites = [t for t in teacher.prompts if "<stage>full_rewrite</stage>" in t]
    assert rewrites and any(_recalled(t) for t in rewrites)
    assert all(len(_recalled(t)) <= 2 for t in rewrites)


@pytest.mark.slow
def test_a_second_night_recalls_the_first_nights_trajectories_never_its_val_or_test(tmp_path):
    """Two nights of `sleep` (the simulated pipeline of tests/test_sleep_night.py) with `sleep.recall_k: 3`: the
    second night's reflect minibatches were shown the first night's replayed trajectories (the patches record
    exactly what their prompt showed), and none of the second night's val or test tasks."""
    from skillgit.sleep.night import NightOptions, night_folder, run_night
    from skillgit.sleep.settings import open_sleep_project
    from skillgit.store.git import GitRepo
    from skillgit.tasks import load_items
    from skillgit.world import generate_tasks
    from tests.test_sleep_night import WORLD, make_project, write_sessions

    repo, home = make_project(tmp_path / "repo"), tmp_path / "home"
    items = generate_tasks(WORLD, 48)
    write_sessions(home, repo, items[:32], day="2026-01-01")
    sp = open_sleep_project(repo, None, [])
    sp = sp.__class__(sp.project, sp.settings.with_options(home=str(home), recall_k=3), sp.data, sp.overrides)
    first = run_night(sp, NightOptions("2026-01-02"))
    write_sessions(home, repo, items[16:], day="2026-01-03", first=100)
    second = run_night(sp, NightOptions("2026-01-04"))
    assert first.status == second.status == "finished"
    folder = night_folder(GitRepo.open(repo), "2026-01-04")
    hidden = {i.id for name in ("val", "test") if (folder / f"{name}.jsonl").exists()
              for i in load_items(folder / f"{name}.jsonl")}
    labels = []
    for line in git(repo, "notes", "--ref", "skillgit", "list").splitlines():
        for raw in git(repo, "notes", "--ref", "skillgit", "show", line.split()[1]).splitlines():
            record = json.loads(raw) if raw.startswith("{") else {}
            if record.get("kind") == "candidate" and record.get("run") == second.run:
                labels += [x for p in record.get("patches", []) for x in p.get("recalled", [])]
    assert any(label.startswith(f"{first.run}/") for label in labels), labels
    assert hidden and not {label.rsplit("/", 1)[1] for label in labels} & hidden


def test_a_row_planted_in_a_note_with_a_secret_is_shown_redacted():
    key = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    row = recall.row_of({**_row("a", f"convert miles token {key}", "8 km", 0.0), "step": 1})
    found = _recaller([row])([_traj("n", "convert miles", "km", 1.0)], "success")
    assert found is not None and key not in found.block and "convert miles" in found.block

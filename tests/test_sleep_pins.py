"""Replay of agentic tasks pinned to commits this repository does not have (Copilot CLI's all-zero SHA, a Codex
session's commit that was never pushed here): the night falls back to the session's branch, then to the skill
branch's tip, or leaves the task out with its reason — and the workspace then opens at a commit that exists."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path

import pytest

from skillgit.agentic.spec import AgenticSpec
from skillgit.agentic.workspace import Workspaces
from skillgit.config import EnvCfg
from skillgit.errors import SkillgitError
from skillgit.sleep import replay as R
from skillgit.sleep.approval import command_key
from skillgit.sleep.mine import MinedTask
from skillgit.sleep.pins import NO_COMMIT, TO_BRANCH, Pins
from skillgit.sleep.settings import SleepSettings
from skillgit.store.git import GitRepo
from tests.conftest import git

ZERO = "0" * 40
ABSENT = "5f1c0e2b" * 5  # a well-formed commit id nobody pushed here


def commit(repo: Path, name: str, when: str) -> str:
    (repo / f"{name}.txt").write_text(name)
    git(repo, "add", f"{name}.txt")
    env = {**os.environ, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    subprocess.run(["git", "commit", "-q", "-m", name], cwd=repo, env=env, check=True)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    first = commit(root, "first", "2026-01-01T10:00:00Z")
    git(root, "switch", "-q", "-c", "feature")
    on_feature = commit(root, "feature", "2026-01-02T10:00:00Z")
    later_on_feature = commit(root, "feature-later", "2026-01-04T10:00:00Z")
    git(root, "switch", "-q", "main")
    tip = commit(root, "second", "2026-01-03T10:00:00Z")
    return root, {"first": first, "feature": on_feature, "feature_later": later_on_feature, "tip": tip}


def task(task_id: str, rev: str, *, branch: str | None = None, started: str = "2026-01-02T18:00:00Z") -> MinedTask:
    session = {"source": "copilot-cli", "session_id": task_id, "unit": 0, "started": started, "outcome": "failed"}
    if branch:
        session["branch"] = branch
    return MinedTask(id=task_id, kind="agentic", prompt=f"fix {task_id}", rev=rev,
                     verify={"command": "python -m pytest -q", "timeout_s": 60, "result": "pytest"},
                     sessions=(session,), signals={"sessions": 1, "failed_units": 1, "rev_from": "session"})


def test_replay_repins_tasks_to_commits_the_repository_has(repo, tmp_path):
    root, c = repo
    tasks = [task("zero-sha", ZERO, branch="feature"),  # Copilot CLI: the session's branch before it started
             task("absent", ABSENT),  # no branch known: the skill branch's tip
             task("kept", c["first"], branch="feature"),
             task("option", "--output=" + str(tmp_path / "pwned"), branch="feature")]  # never an option to git
    store = GitRepo.open(root)

    chosen = R.choose(tasks, SleepSettings(), simulated=False, agentic=True, pins=Pins(store, c["tip"]),
                      approved=approved_all(tasks))

    revs = {t.id: t.rev for name in R.SPLITS for t in getattr(chosen, name)}
    assert revs == {"zero-sha": c["feature"], "absent": c["tip"], "kept": c["first"], "option": c["feature"]}
    assert not (tmp_path / "pwned").exists()
    by_id = {t.id: t for name in R.SPLITS for t in getattr(chosen, name)}
    assert by_id["zero-sha"].signals["rev_missing"] == ZERO
    assert "feature" in by_id["zero-sha"].signals["rev_from"]
    assert "rev_missing" not in by_id["kept"].signals
    assert sum(chosen.repinned.values()) == 3 and not chosen.excluded
    # the split files carry the repinned commit, and a workspace opens there (the zero SHA could not)
    folder = R.write_splits(tmp_path / "night", chosen)
    splits = R.load_splits(folder, EnvCfg())
    items = [i for part in (splits.train, splits.val, splits.test) for i in part]
    zero = next(i for i in items if i.id == "zero-sha")
    assert zero.metadata["workspace"]["rev"] == c["feature"]
    spaces = Workspaces(store)
    with spaces.open(AgenticSpec.from_item(zero, root)) as ws:
        assert (ws / "feature.txt").is_file() and not (ws / "feature-later.txt").exists()
    unpinned = dataclasses.replace(zero, metadata={**zero.metadata, "workspace": {"repo": ".", "rev": ZERO}})
    with pytest.raises(SkillgitError):  # what replay did before: the all-zero SHA cannot be checked out
        with spaces.open(AgenticSpec.from_item(unpinned, root)):
            pass


def test_without_a_fallback_the_task_is_left_out_with_its_reason(repo):
    root, c = repo
    tasks = [task("zero-sha", ZERO), task("gone-branch", ABSENT, branch="deleted"), task("kept", c["first"]),
             task("kept-too", c["tip"])]
    chosen = R.choose(tasks, SleepSettings(), simulated=False, agentic=True, pins=Pins(GitRepo.open(root), None),
                      approved=approved_all(tasks))
    assert chosen.excluded == {NO_COMMIT: 2}
    assert {t.id for name in R.SPLITS for t in getattr(chosen, name)} == {"kept", "kept-too"}


def test_a_session_older_than_its_branch_falls_back_to_the_skill_branch(repo):
    root, c = repo
    early = task("early", ZERO, branch="feature", started="2025-12-01T00:00:00Z")
    tasks = [early, task("kept", c["first"])]
    chosen = R.choose(tasks, SleepSettings(), simulated=False, agentic=True, pins=Pins(GitRepo.open(root), c["tip"]),
                      approved=approved_all(tasks))
    assert {t.id: t.rev for name in R.SPLITS for t in getattr(chosen, name)}["early"] == c["tip"]


CODEX = Path(__file__).parent / "fixtures" / "transcripts" / "codex" / \
    "rollout-2025-10-01T09-00-00-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl"


def test_a_codex_sessions_commit_absent_from_the_repository_is_replayed_from_its_branch(tmp_path):
    """Harvested and mined from real-format Codex rollouts whose `git.commit_hash` this clone never had."""
    from skillgit.sleep.harvest import harvest
    from skillgit.sleep.mine import mine

    root = tmp_path / "dateparse"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    before = commit(root, "before", "2025-09-30T10:00:00Z")
    tip = commit(root, "after", "2025-10-02T10:00:00Z")
    home = tmp_path / "home"
    for n, session_id in enumerate(("5973b6c0-94b8-487b-a530-2aeb6098ae0e", "5973b6c0-94b8-487b-a530-2aeb6098ae0f")):
        records = []
        text = CODEX.read_text().replace("/srv/demo/dateparse", str(root))
        for line in text.replace("2025-10-01T09:", f"2025-10-01T1{n}:").splitlines():  # two sessions, an hour apart
            record = json.loads(line)
            if record["type"] == "session_meta":
                record["payload"]["id"] = session_id
                record["payload"]["git"] = {"commit_hash": ABSENT, "branch": "main"}
            records.append(json.dumps(record))
        target = home / ".codex" / "sessions" / "2025" / "10" / "01" / f"rollout-2025-10-01T1{n}-00-00-{session_id}"
        target = target.with_name(target.name + ".jsonl")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(records) + "\n")
    harvested = harvest(["codex"], home, root, environ={})
    assert len(harvested.sessions) == 2
    mined = mine(harvested.sessions, answers=True)
    agentic = [t for t in mined.tasks if t.kind == "agentic"]
    assert agentic and all(t.rev == ABSENT for t in agentic)  # what the sessions recorded
    assert all(s.get("branch") == "main" for t in agentic for s in t.sessions)
    twin = replace_id(agentic[0], "twin")
    chosen = R.choose([*agentic, twin], SleepSettings(), simulated=False, agentic=True,
                      pins=Pins(GitRepo.open(root), tip), approved=approved_all([*agentic, twin]))
    assert {t.rev for name in R.SPLITS for t in getattr(chosen, name)} == {before}
    assert chosen.repinned == {TO_BRANCH: len(agentic) + 1}


def approved_all(tasks: list[MinedTask]) -> frozenset[str]:
    """The keys of every task's commands, as `skillgit sleep review --approve` records them (sleep/approval.py)."""
    return frozenset(k for k in map(command_key, tasks) if k)


def replace_id(task: MinedTask, task_id: str) -> MinedTask:
    return dataclasses.replace(task, id=task_id)

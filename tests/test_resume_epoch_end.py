"""A run stopped by its budget inside the epoch's end work resumes as if it had never stopped.

Before: stopped right after the meta-skill update, the stop saved the updated meta skill and the resumed run
updated it a second time (from the updated text); stopped after the slow update was decided, the resumed run's
meta reflect read the slow update as one of the epoch's steps. Each made a teacher call an uninterrupted run never
makes, and went on from a different teacher memory or prompt.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import zlib

import pytest

from skillgit.cli.demo import create_project
from tests.conftest import git, run_cli

ONE_EPOCH = ("--set", "train.max_steps=1", "--set", "train.batch_size=1000", "--set", "evaluation.eval_test=false")


def _journal(folder) -> list[tuple[str, str]]:
    """(key, reply text) of every paid call, in the order they were paid."""
    db = sqlite3.connect(folder / ".git" / "skillgit" / "cache" / "calls.sqlite")
    rows = db.execute("SELECT key, codec, text FROM calls ORDER BY created, rowid").fetchall()
    db.close()
    out = []
    for key, codec, text in rows:
        raw = zlib.decompress(text) if codec & 1 else text
        out.append((key, raw.decode() if isinstance(raw, bytes) else raw))
    return out


def _stop_after(paid: list[tuple[str, str]], where: str) -> int:
    """The budget (max_calls) that stops a run right after the call `where` names: the calls before the next one."""
    meta = next(i for i, (_, text) in enumerate(paid) if '"meta_skill"' in text)  # the epoch's memory update
    if where == "meta skill":
        return meta + 1
    guidance = next(i for i, (_, text) in enumerate(paid) if '"guidance"' in text)  # the slow update's proposal
    return next(i for i, (_, text) in enumerate(paid) if i > guidance and '"edits"' in text)  # before meta reflect


@pytest.mark.parametrize("where", ["meta skill", "slow update decided"])
def test_a_budget_stop_in_the_epoch_end_resumes_like_an_uninterrupted_run(tmp_path, where):
    seed = tmp_path / "seed"
    create_project(seed, 0)
    whole = tmp_path / "whole"
    shutil.copytree(seed, whole)
    done = run_cli("train", "--json", *ONE_EPOCH, cwd=whole)
    assert done.returncode == 0, done.stderr[-2000:]
    paid = _journal(whole)
    limit = _stop_after(paid, where)
    final = json.loads(git(whole, "show", f"refs/skillgit/runs/{json.loads(done.stdout)['run']}:progress.json"))

    stopped_at = tmp_path / "stopped"
    shutil.copytree(seed, stopped_at)
    stop = run_cli("train", "--json", *ONE_EPOCH, "--set", f"budget.max_calls={limit}", cwd=stopped_at)
    assert stop.returncode == 5, stop.stderr[-2000:]
    if where == "slow update decided":
        assert "skill(slow-update)" in git(stopped_at, "log", "--format=%s", "--all")  # decided before the stop
    resumed = run_cli("train", "--json", *ONE_EPOCH, cwd=stopped_at)
    assert resumed.returncode == 0, resumed.stderr[-2000:]

    again = _journal(stopped_at)
    # the same calls: none extra, none missing (their replies: a run's student keys carry its own salt)
    assert sorted(t for _, t in again) == sorted(t for _, t in paid)
    run = json.loads(resumed.stdout)["run"]
    progress = json.loads(git(stopped_at, "show", f"refs/skillgit/runs/{run}:progress.json"))
    assert progress["meta_skill"] == final["meta_skill"]  # the teacher's memory is the uninterrupted run's
    assert git(stopped_at, "show", "HEAD:SKILL.md") == git(whole, "show", "HEAD:SKILL.md")

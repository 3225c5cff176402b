"""kill -9 at git commands of an accept (a seeded sample by default, every one with SKILLGIT_FULL_KILL_MATRIX=1),
then `skillgit train`: the accepted step ends up in the skill, the checked-out worktree is clean, and nothing is
decided twice. (The fault seam is `SKILLGIT_FAULT_KILL_AT_GIT` in skillgit/store/gitproc.py.) Before the centre was
rebuilt, a kill between the ref move and the worktree update left the skill file one version behind and `train`
refused with a hint to commit it — which silently reverted the step."""

from __future__ import annotations

import json
import os
import random
import signal
import threading
from pathlib import Path

import pytest

from skillgit.cli.demo import create_project
from skillgit.store import gitproc as store_git
from tests.conftest import git, run_cli, run_cli_inproc

# the gate off: the first step with an applicable edit is accepted, whatever the gate's defaults are
STEPS = ["--set", "train.max_steps=1", "--set", "evaluation.use_gate=false"]
# Each kill point costs two real `train` processes. By default the matrix kills at a sample of the accept's git
# commands — the first, the last and KILL_SAMPLE more, drawn with a seed printed in every failure message (set
# SKILLGIT_KILL_MATRIX_SEED to replay it; a fresh seed per run walks the whole matrix over many runs);
# SKILLGIT_FULL_KILL_MATRIX=1 kills at every one. Read at import: the hermetic fixture clears SKILLGIT_* variables.
FULL_KILL_MATRIX = os.environ.get("SKILLGIT_FULL_KILL_MATRIX") == "1"
KILL_SEED = int(os.environ.get("SKILLGIT_KILL_MATRIX_SEED") or random.SystemRandom().randrange(2**31))
KILL_SAMPLE = 4


def _accepts(folder) -> list[str]:
    return [e["step"] for e in json.loads(run_cli_inproc("log", "--json", cwd=folder).stdout)
            if e["verdict"] == "accepted"]


def _train_listing_the_accept(folder: Path) -> list[list[str]]:
    """`train` in this process, returning the git commands its accept ran, in order — what
    `SKILLGIT_FAULT_KILL_AT_GIT=accept:<n>` counts (the seam's own counter, read through a wrapper)."""
    seen: list[list[str]] = []
    lock = threading.Lock()
    counted = store_git._fault_point

    def listing(args) -> None:
        counted(args)
        if getattr(store_git._phase, "name", None) == "accept":
            with lock:
                seen.append(list(args))

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(store_git, "_FAULT", "accept:0")  # armed (it counts), never fires
        patched.setattr(store_git, "_fault_point", listing)
        done = run_cli_inproc("train", *STEPS, cwd=folder)
    assert done.returncode == 0, done.stderr
    return seen


def _kill_points(count: int) -> list[int]:
    if FULL_KILL_MATRIX or count <= KILL_SAMPLE + 2:
        return list(range(1, count + 1))
    return sorted({1, count, *random.Random(KILL_SEED).sample(range(2, count), KILL_SAMPLE)})


@pytest.mark.slow
def test_a_kill_at_every_git_command_of_an_accept_is_finished_by_the_next_train(tmp_path):
    reference = tmp_path / "reference"
    create_project(reference, 0)
    commands = _train_listing_the_accept(reference)
    expected_skill = (reference / "SKILL.md").read_text()
    accepted = _accepts(reference)
    assert accepted == ["1"]
    assert len(commands) >= 5, commands  # the accept is several git commands: a kill can land between them

    points = _kill_points(len(commands))
    for n in [*points, len(commands) + 1]:
        why = f"kill at accept:{n} of {len(commands)} ({commands[n - 1][:2] if n <= len(commands) else 'none'}); " \
              f"SKILLGIT_KILL_MATRIX_SEED={KILL_SEED}"
        folder = tmp_path / f"kill{n}"
        create_project(folder, 0)
        first = run_cli("train", *STEPS, cwd=folder, env={"SKILLGIT_FAULT_KILL_AT_GIT": f"accept:{n}"})
        if n > len(commands):  # past the last command the seam never fires: the count above is the real one
            assert first.returncode == 0, (why, first.stderr)
            break
        assert first.returncode == -signal.SIGKILL, (why, first.stderr)  # the seam really stopped the accept
        again = run_cli_inproc("train", *STEPS, cwd=folder)  # the kill needs a process; the resume does not
        assert again.returncode == 0, (why, again.stderr)
        assert (folder / "SKILL.md").read_text() == expected_skill, why
        assert git(folder, "status", "--porcelain") == "", why
        assert git(folder, "show", "main:SKILL.md") + "\n" == expected_skill, why
        assert _accepts(folder) == accepted, why
        assert git(folder, "for-each-ref", "refs/heads/candidates") == "", why


@pytest.mark.slow
def test_pull_after_a_kill_between_the_branch_move_and_the_worktree_update_keeps_the_step(tmp_path):
    """The same interrupted accept, but the next command is `skillgit pull` of a teammate's commit built on the
    accepted step: pull finishes the worktree update first (before, it refused and advised `git stash`, and the
    stashed file was the version before the step: popping it reverted the step)."""
    remote, mate = tmp_path / "remote.git", tmp_path / "mate"
    probe = tmp_path / "probe"
    create_project(probe, 0)
    commands = _train_listing_the_accept(probe)
    # the first guess is the command after the skill branch's move; the scan that follows proves it either way
    moved = next((i + 2 for i, c in enumerate(commands) if c[:1] == ["update-ref"]), 1)
    for n in dict.fromkeys([moved, *range(1, 40)]):  # the kill that leaves the worktree update undone
        folder = tmp_path / f"p{n}"
        create_project(folder, 0)
        done = run_cli("train", *STEPS, cwd=folder, env={"SKILLGIT_FAULT_KILL_AT_GIT": f"accept:{n}"})
        assert done.returncode in (0, -signal.SIGKILL), done.stderr
        if done.returncode == 0:
            pytest.fail("no kill left the worktree update interrupted")
        if git(folder, "status", "--porcelain"):
            break
    accepted = git(folder, "show", "main:SKILL.md")
    assert (folder / "SKILL.md").read_text().rstrip("\n") != accepted  # one version behind, as the probe found
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(folder, "push", "-q", str(remote), "main")
    git(tmp_path, "clone", "-q", str(remote), str(mate))
    (mate / "SKILL.md").write_text(accepted + "\n- A teammate's rule.\n")
    git(mate, "-c", "user.name=m", "-c", "user.email=m@x", "commit", "-qam", "teammate")
    git(mate, "push", "-q")
    pulled = run_cli("pull", str(remote), cwd=folder)
    assert pulled.returncode == 0, pulled.stderr
    assert (folder / "SKILL.md").read_text() == accepted + "\n- A teammate's rule.\n"
    assert git(folder, "status", "--porcelain") == ""
    assert _accepts(folder) == ["1"]

"""`skillgit sleep adopt` through the real CLI: it finishes a skillgit step's interrupted worktree update before
fast-forwarding (and never hints "commit or stash" over one), `--merge` makes a merge commit when the skill branch
moved (refused on conflicts, never over uncommitted skill edits), and `--pr` proposes the night the way `skillgit
pr` does, with repository-relative paths (A SIMULATION OF THE PIPELINE on the offline world)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.conftest import git, run_cli, run_cli_inproc
from tests.test_sleep_cli import _project
from tests.test_sleep_night import DATE


def _night(tmp_path: Path) -> tuple[Path, str, str]:
    repo, home = _project(tmp_path, n=24, steps=2)
    main = git(repo, "rev-parse", "main")
    done = run_cli_inproc("sleep", "run", "--home", str(home), "--date", DATE, cwd=repo)
    assert done.returncode == 0, done.stderr
    tip = git(repo, "rev-parse", f"sleep/{DATE}")
    assert tip != main
    return repo, main, tip


def _commit_on_main(repo: Path, path: str, text: str, message: str) -> str:
    (repo / path).write_text(text)
    git(repo, "add", path)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def test_adopt_finishes_an_interrupted_skillgit_step_before_fast_forwarding(tmp_path):
    repo, home = _project(tmp_path, n=24, steps=2)
    parent = git(repo, "rev-parse", "main")
    # a skillgit step on main whose worktree update was killed: branch moved, index and file still the parent's
    skill = (repo / "SKILL.md").read_text() + "\n- Keep every answer on one line.\n"
    (repo / "SKILL.md").write_text(skill)
    git(repo, "add", "SKILL.md")
    tree = git(repo, "write-tree")
    step = git(repo, "commit-tree", tree, "-p", parent, "-m", "skillgit: step 1\n\nSkillgit-Run: r1\nSkillgit-Step: 1")
    git(repo, "update-ref", "refs/heads/main", step, parent)
    done = run_cli_inproc("sleep", "run", "--home", str(home), "--date", DATE, cwd=repo)
    assert done.returncode == 0, done.stderr
    git(repo, "checkout", parent, "--", "SKILL.md")  # the interrupted update: index and file hold the parent's
    assert git(repo, "status", "--porcelain") == "M  SKILL.md"
    tip = git(repo, "rev-parse", f"sleep/{DATE}")

    adopted = run_cli_inproc("sleep", "adopt", DATE, cwd=repo)
    assert adopted.returncode == 0, adopted.stderr
    assert "stash" not in adopted.stderr
    assert git(repo, "rev-parse", "main") == tip and git(repo, "status", "--porcelain") == ""
    assert (repo / "SKILL.md").read_text().rstrip("\n") == git(repo, "show", f"{tip}:SKILL.md")


def test_adopt_refuses_over_the_persons_uncommitted_skill_edits_and_changes_nothing(tmp_path):
    repo, main, tip = _night(tmp_path)
    mine = (repo / "SKILL.md").read_text() + "\nmy own unsaved idea\n"
    (repo / "SKILL.md").write_text(mine)
    refused = run_cli_inproc("sleep", "adopt", DATE, cwd=repo)
    assert refused.returncode == 3 and "SKILL.md" in refused.stderr  # theirs to keep: the Store's own refusal
    assert git(repo, "rev-parse", "main") == main and (repo / "SKILL.md").read_text() == mine


def test_adopt_merge_makes_a_merge_commit_when_the_skill_branch_moved(tmp_path):
    repo, main, tip = _night(tmp_path)
    teammate = _commit_on_main(repo, "NOTES.md", "a teammate's commit\n", "teammate")
    (repo / "scratch.txt").write_text("the person's uncommitted work elsewhere\n")

    plain = run_cli_inproc("sleep", "adopt", DATE, cwd=repo)
    assert plain.returncode == 3 and "--merge" in plain.stderr and git(repo, "rev-parse", "main") == teammate

    merged = run_cli_inproc("sleep", "adopt", DATE, "--merge", "--json", cwd=repo)
    assert merged.returncode == 0, merged.stderr
    info = json.loads(merged.stdout)
    head = git(repo, "rev-parse", "main")
    assert info["tip"] == head and info["merged"] is True
    assert git(repo, "rev-list", "--parents", "-n", "1", head).split()[1:] == [teammate, tip]
    assert git(repo, "show", f"{head}:SKILL.md") == git(repo, "show", f"{tip}:SKILL.md")
    assert git(repo, "show", f"{head}:NOTES.md") == "a teammate's commit"
    assert (repo / "SKILL.md").read_text().rstrip("\n") == git(repo, "show", f"{tip}:SKILL.md")
    assert git(repo, "status", "--porcelain") == "?? scratch.txt"  # the person's file is untouched


def test_adopt_merge_refuses_conflicts_and_changes_nothing(tmp_path):
    repo, main, tip = _night(tmp_path)
    base_skill = git(repo, "show", f"{main}:SKILL.md")
    # a teammate rewrote every line of the skill: whatever the night changed touches lines they changed too
    (repo / "SKILL.md").write_text("".join(f"{line} (teammate)\n" for line in base_skill.splitlines()))
    git(repo, "commit", "-q", "-am", "teammate rewrites the skill")
    moved = git(repo, "rev-parse", "main")
    refused = run_cli_inproc("sleep", "adopt", DATE, "--merge", cwd=repo)
    assert refused.returncode == 3 and "conflict" in refused.stderr and "sleep run" in refused.stderr
    assert git(repo, "rev-parse", "main") == moved and git(repo, "status", "--porcelain") == ""


def test_adopt_pr_prints_the_body_and_opens_it_with_gh(tmp_path):
    repo, main, tip = _night(tmp_path)
    printed = run_cli("sleep", "adopt", DATE, "--pr", cwd=repo)
    assert printed.returncode == 0, printed.stderr
    assert f"# skillgit sleep: night of {DATE}" in printed.stdout and str(tmp_path) not in printed.stdout
    assert git(repo, "rev-parse", "main") == main  # proposing changes nothing
    listed = run_cli("sleep", "adopt", DATE, "--print", cwd=repo)
    assert f"--body-file .skillgit/sleep/{DATE}.md" in listed.stdout and str(tmp_path) not in listed.stdout

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$GH_ARGS"\necho https://example.invalid/pr/1\n')
    (bin_dir / "gh").chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "GH_ARGS": str(tmp_path / "gh-args")}
    opened = run_cli("sleep", "adopt", DATE, "--pr", "--gh", cwd=repo, env=env)
    assert opened.returncode == 0, opened.stderr
    assert opened.stdout.strip() == "https://example.invalid/pr/1"
    args = (tmp_path / "gh-args").read_text().splitlines()
    assert args[:4] == ["pr", "create", "--base=main", f"--head=sleep/{DATE}"]  # values joined to their flags
    body_file = Path(next(a for a in args if a.startswith("--body-file=")).split("=", 1)[1])
    assert f"night of {DATE}" in body_file.read_text() and ".git" in body_file.parts

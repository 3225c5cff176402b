"""skillgit run from inside a git hook or a shell alias: git has set GIT_DIR, GIT_INDEX_FILE, GIT_PREFIX and friends
for its own process, and skillgit must still act on the repository its folder is in and never write the index that
a `git commit` in progress is building (skillgit/gitenv.py)."""

from __future__ import annotations

import subprocess

from tests.conftest import git


def test_a_hooks_index_is_never_written_and_the_users_index_stays_in_step(cli, tmp_path):
    # what a pre-commit hook of `git commit -a` sees: GIT_INDEX_FILE names the temporary index git is building
    hook_index = tmp_path / "index.lock"
    done = cli("demo", "--dir", str(tmp_path / "p"), cwd=tmp_path, env={"GIT_INDEX_FILE": str(hook_index)})
    assert done.returncode == 0, done.stderr
    assert not hook_index.exists()  # before: the demo's commit and every accepted step wrote it
    project = tmp_path / "p"
    # the checked-out skill branch moved with the accepted steps, and its index and files moved with it
    assert int(git(project, "rev-list", "--count", "HEAD")) > 1
    assert git(project, "status", "--porcelain") == ""


def test_a_git_dir_set_by_git_does_not_choose_the_repository(cli, make_repo, tmp_path):
    project = tmp_path / "p"
    assert cli("demo", "--dir", str(project), "--steps", "1", cwd=tmp_path).returncode == 0
    (project / "docs").mkdir()
    other = make_repo({"OTHER.md": "other\n"}, name="other")
    plain = cli("status", "--json", cwd=project / "docs")
    assert plain.returncode == 0, plain.stderr
    # a shell alias or hook run from a sub-folder, with another repository's GIT_DIR and GIT_WORK_TREE inherited
    env = {"GIT_DIR": str(other / ".git"), "GIT_WORK_TREE": str(other), "GIT_PREFIX": "docs/"}
    hooked = cli("status", "--json", cwd=project / "docs", env=env)
    assert (hooked.returncode, hooked.stdout) == (0, plain.stdout), hooked.stderr
    # nothing was written to the other repository's refs or index
    assert subprocess.run(["git", "status", "--porcelain"], cwd=other, capture_output=True,
                          text=True).stdout == ""
    assert git(other, "for-each-ref", "--format=%(refname)") == "refs/heads/main"


def test_the_list_is_gits_own_but_the_users_git_c_settings():
    from skillgit.gitenv import LOCAL_ENV_VARS

    gits = set(subprocess.run(["git", "rev-parse", "--local-env-vars"], capture_output=True, text=True,
                              check=True).stdout.split())
    assert gits - set(LOCAL_ENV_VARS) == {"GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT"}


def test_an_agent_started_from_a_hook_commits_in_its_workspace_not_in_the_users_repository(make_repo, tmp_path):
    import os
    import stat

    from skillgit.config import CommandCfg
    from skillgit.llm.command import CommandStudent
    from skillgit.types import Item

    user = make_repo({"SKILL.md": "# Skill\n"}, name="user")
    head, index = git(user, "rev-parse", "HEAD"), (user / ".git" / "index").read_bytes()
    agent = tmp_path / "bin" / "committing-agent"
    agent.parent.mkdir()
    # an agent that commits its work where it runs, as coding agents do
    agent.write_text("#!/bin/sh\ngit init -q . && echo work > work.txt && git add work.txt && "
                     "git -c user.name=a -c user.email=a@b.invalid commit -q -m agent && git rev-parse HEAD\n")
    agent.chmod(agent.stat().st_mode | stat.S_IXUSR)
    # what a pre-commit hook running `skillgit check` hands down
    env = {**os.environ, "PATH": f"{agent.parent}{os.pathsep}{os.environ['PATH']}",
           "GIT_DIR": str(user / ".git"), "GIT_INDEX_FILE": str(user / ".git" / "index"), "GIT_WORK_TREE": str(user)}
    reply = CommandStudent(CommandCfg(argv=("committing-agent",), timeout_s=30), env=env).run("# s\n", Item("i", "q"))
    assert reply.text.strip() and reply.text.strip() != head
    assert git(user, "rev-parse", "HEAD") == head  # before: the agent's commit landed on the user's branch
    assert (user / ".git" / "index").read_bytes() == index
    assert not (user / "work.txt").exists()

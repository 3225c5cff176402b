"""Probe 11, paths: a rollout installs the skill under training into its workspace, a checkout of the task's
commit. A collaborator's commit that makes a folder of the install path a symbolic link out of the repository
(`.skill/demo/references -> /anywhere`) made every rollout write the package's files there (`package.write`
followed the link). Now a package is never written through a folder link that leaves its destination: the
rollout stops with an error naming the link, and nothing is written outside.
"""

from __future__ import annotations

import pytest

from skillgit import package
from skillgit.errors import SkillgitError
from tests.conftest import git
from tests.test_agentic_workspaces import SKILL_A, _item, _student


@pytest.fixture
def linked_project(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "proj"
    (root / "skill").mkdir(parents=True)
    (root / "skill" / "SKILL.md").write_text("---\nname: demo\ndescription: d\n---\n# committed\n")
    (root / "app.py").write_text("print(1)\n")
    (root / ".skill" / "demo").mkdir(parents=True)
    (root / ".skill" / "demo" / "references").symlink_to(outside)  # committed by a collaborator
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root, outside


def test_a_rollout_never_writes_the_skill_through_a_committed_link_out_of_the_workspace(linked_project, tmp_path):
    project, outside = linked_project
    reports = tmp_path / "reports"
    reports.mkdir()
    student = _student(project, reports, tmp_path)
    with pytest.raises(SkillgitError) as info:
        student.run(SKILL_A, _item(project, "look"))
    assert "symbolic link" in info.value.message and "references/a.md" in info.value.message
    assert list(outside.iterdir()) == []


def test_package_write_replaces_a_file_link_and_refuses_a_folder_link(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("keep\n")
    dest = tmp_path / "dest"
    (dest / "references").mkdir(parents=True)
    (dest / "SKILL.md").symlink_to(outside / "secret.md")
    bundle = package.bundle({"SKILL.md": "# s\n", "references/a.md": "A\n"})
    package.write(dest, bundle)
    assert (outside / "secret.md").read_text() == "keep\n" and not (dest / "SKILL.md").is_symlink()
    (dest / "references" / "a.md").unlink()
    (dest / "references").rmdir()
    (dest / "references").symlink_to(outside)
    with pytest.raises(SkillgitError, match="symbolic link"):
        package.write(dest, bundle)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]


def test_sleep_never_writes_its_task_file_or_report_through_a_committed_link_out_of_the_repository(tmp_path):
    """A collaborator's commit makes `.skillgit` a link to a folder outside the repository: `sleep mine` wrote the
    task file (transcript text) and `sleep run` the night's report there. A relative sleep path that resolves
    outside the repository is now refused, naming where it leads; an absolute one is still the user's choice."""
    from skillgit.world import generate_tasks
    from tests.conftest import run_cli_inproc
    from tests.test_sleep_night import WORLD, make_project, write_sessions

    outside = tmp_path / "outside"
    outside.mkdir()
    repo = make_project(tmp_path / "repo")
    home = tmp_path / "home"
    write_sessions(home, repo, generate_tasks(WORLD, 24))
    (repo / ".skillgit").symlink_to(outside)
    git(repo, "add", ".skillgit")
    git(repo, "-c", "user.name=c", "-c", "user.email=c@example.invalid", "commit", "-qm", "a link")
    for args in (["mine"], ["run", "--date", "2026-01-02"], ["dry-run"]):
        proc = run_cli_inproc("sleep", *args, "--home", str(home), cwd=repo)
        assert proc.returncode == 2 and "outside the repository" in proc.stderr, (args, proc.stderr[-800:])
        assert "Traceback" not in proc.stderr
    assert list(outside.iterdir()) == []
    elsewhere = tmp_path / "chosen" / "tasks.jsonl"
    proc = run_cli_inproc("sleep", "mine", "--home", str(home), "--tasks", str(elsewhere), cwd=repo)
    assert proc.returncode == 0 and elsewhere.is_file(), proc.stderr[-800:]


def test_report_never_writes_through_a_link_where_its_default_file_lands(tmp_path):
    """`skillgit report` writes `skillgit-report-<run>.html` in the current folder by default; a collaborator's
    commit can hold a link of that name (their own run's id, the newest after a pull) to a file outside: it was
    overwritten with the page. Now refused with a clear error; the file outside is untouched."""
    from tests.conftest import run_cli_inproc
    from tests.test_notes_untrusted import _repo

    root = tmp_path / "repo"
    root.mkdir()
    _repo(root)
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n")
    (root / "skillgit-report-r1.html").symlink_to(precious)
    proc = run_cli_inproc("report", "r1", "--renderer", "builtin", cwd=root)
    assert proc.returncode == 2 and "is a symbolic link" in proc.stderr and "Traceback" not in proc.stderr
    assert precious.read_text() == "keep me\n"
    chosen = tmp_path / "page.html"
    assert run_cli_inproc("report", "r1", "-o", str(chosen), "--renderer", "builtin", cwd=root).returncode == 0
    assert chosen.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")

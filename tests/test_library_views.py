"""With a skill library configured, `log`, `status`, `show`, `report`, `pr` and `check` group by skill (single-skill
projects keep their output: tests/test_cli_history.py, test_report.py, test_pr.py and test_check.py pin it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import git
from tests.test_library_all import ALL, project, skillgit


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    root = project(tmp_path_factory.mktemp("views") / "lib")
    done = skillgit(root, *ALL, "--run", "L")
    assert done.returncode == 0, done.stderr[-3000:]
    return root


def test_log_has_a_skill_column_and_filters_by_skill(trained):
    out = skillgit(trained, "log")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split()[:3] == ["skill", "step", "verdict"]
    rows = {(line.split()[0], line.split()[1]) for line in lines[1:]}
    assert ("deploy", "L.deploy/0001") in rows and ("release-notes", "L.release-notes/0001") in rows
    assert not any(s == "deploy" and r.startswith("L.release-notes") for s, r in rows)
    only = skillgit(trained, "log", "--skill", "release-notes", "--json")
    entries = json.loads(only.stdout)
    assert entries and {e["skill"] for e in entries} == {"release-notes"}
    assert {e["run"] for e in entries} == {"L.release-notes"}
    bad = skillgit(trained, "log", "--skill", "nope")
    assert bad.returncode != 0 and "choose one of deploy, release-notes, db-migrate" in bad.stderr


def test_status_is_one_row_per_skill_and_one_skill_in_full(trained):
    out = skillgit(trained, "status", "--json")
    assert out.returncode == 0, out.stderr
    skills = json.loads(out.stdout)["skills"]
    assert skills["deploy"]["run"] == "L.deploy" and skills["release-notes"]["run"] == "L.release-notes"
    assert skills["deploy"]["step"] == 2 and skills["db-migrate"] is None
    table = skillgit(trained, "status")
    assert "no run yet" in table.stdout and "L.deploy" in table.stdout
    one = skillgit(trained, "status", "--skill", "release-notes", "--json")
    assert json.loads(one.stdout)["run"] == "L.release-notes"
    never = skillgit(trained, "status", "--skill", "db-migrate")
    assert never.returncode != 0 and "skill 'db-migrate' has no training run yet" in never.stderr


def test_show_names_the_skill_and_diffs_its_own_file(trained):
    out = skillgit(trained, "show", "rejected/L.release-notes/1")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("skill: release-notes\n")
    assert "+++ b/skills/release-notes/SKILL.md" in out.stdout and "skills/deploy/SKILL.md" not in out.stdout
    detail = json.loads(skillgit(trained, "show", "rejected/L.deploy/1", "--json").stdout)
    assert detail["skill"] == "deploy" and "b/skills/deploy/SKILL.md" in detail["diff"]


def test_report_and_pr_take_the_skills_newest_run(trained, tmp_path):
    page = tmp_path / "r.html"
    out = skillgit(trained, "report", "--skill", "release-notes", "-o", str(page))
    assert out.returncode == 0, out.stderr
    assert "run L.release-notes (skill release-notes)" in out.stderr
    assert "skills/release-notes/SKILL.md" in page.read_text()
    git(trained, "branch", "review/deploy", "main")  # a head that is not the base (a run on main has no PR of its own)
    body = skillgit(trained, "pr", "--skill", "deploy", "--head", "review/deploy")
    assert body.returncode == 0, body.stderr
    assert body.stdout.startswith("**Skill:** `deploy` (`skills/deploy/SKILL.md`)")
    assert "Run `L.deploy` trained `skills/deploy/SKILL.md`" in body.stdout


def test_check_groups_by_skill_each_on_its_own_tasks(trained, tmp_path):
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(trained), str(clone))
    skill = clone / "skills" / "release-notes" / "SKILL.md"
    skill.write_text(skill.read_text() + "\nAlways answer in French.\n")
    git(clone, "commit", "-qam", "a human edit of release-notes")
    out = skillgit(clone, "check", "--base", "HEAD~1", "--no-test", "--json")
    assert out.returncode in (0, 1), out.stderr[-2000:]
    result = json.loads(out.stdout)
    assert set(result["skills"]) == {"deploy", "release-notes"} and "db-migrate" in result["skipped"]
    assert result["skills"]["deploy"]["verdict"] == "unchanged"  # its file did not change: nothing scored
    assert result["skills"]["release-notes"]["skill_path"] == "skills/release-notes/SKILL.md"
    assert result["skills"]["release-notes"]["head"]["val_scored"] > 0  # scored on its own val split
    assert result["exit_code"] == out.returncode
    md = skillgit(clone, "check", "--base", "HEAD~1", "--no-test")
    assert "## skill: deploy" in md.stdout and "## skill: release-notes" in md.stdout
    one = skillgit(clone, "check", "--base", "HEAD~1", "--no-test", "--skill", "deploy", "--json")
    assert json.loads(one.stdout)["verdict"] == "unchanged"

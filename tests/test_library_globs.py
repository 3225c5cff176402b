"""`skills:` as a list of paths and globs: each expands to the SKILL.md packages it matches (named by front matter,
`{name}` filled in tasks and triggers), never to a file outside the repository; errors name the key and the fix."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from skillgit.config import Config
from skillgit.errors import ConfigError
from skillgit.library.config import entries
from tests.conftest import git
from tests.test_library_all import skillgit


def skill(folder: Path, name: str, description: str = "Does things.") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {json.dumps(description)}\n---\n# {name}\n")


def lib(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    skill(root / ".claude/skills/deploy", "deploy")
    skill(root / ".claude/skills/notes", "release-notes")  # named by its front matter, not its folder
    (root / ".claude/skills/empty").mkdir()  # no SKILL.md: not a package
    skill(root / "plugins/ops/skills/db", "db-migrate")
    skill(root / "other/deploy-copy", "deploy")  # globbed by no test but one: a second skill named deploy
    return root


def test_a_list_of_globs_expands_to_every_package_with_name_placeholders(tmp_path):
    root = lib(tmp_path)
    cfg = Config(skills=[".claude/skills/*",
                         {"path": "plugins/*/skills/*", "tasks": "tasks/{name}.jsonl", "triggers": "triggers.jsonl"}])
    found = entries(cfg, root)
    assert list(found) == ["deploy", "release-notes", "db-migrate"]
    assert found["release-notes"].path == ".claude/skills/notes/SKILL.md"
    assert found["deploy"].tasks is None
    assert (found["db-migrate"].path, found["db-migrate"].tasks, found["db-migrate"].triggers) == (
        "plugins/ops/skills/db/SKILL.md", "tasks/db-migrate.jsonl", "triggers.jsonl")
    assert list(entries(Config(skills=[".claude/skills/deploy"]), root)) == ["deploy"]  # a plain folder too
    assert list(entries(Config(skills=[".claude/skills/*", ".claude/skills/deploy"]), root)) == [
        "deploy", "release-notes"]  # matched twice: one skill


@pytest.mark.parametrize("skills,message,hint", [
    (["../other/*"], "skills[0].path: '../other/*' is outside the repository", "relative to the root"),
    (["/etc/*"], "skills[0].path: '/etc/*' is outside the repository", "relative to the root"),
    ([".claude/nope/*"], "skills[0].path: '.claude/nope/*' matches no skill", ".claude/skills/*"),
    ([{"path": ".claude/skills/*", "task": "t.jsonl"}], "unknown config key 'skills[0].task'", "skills[0].tasks"),
    ([{"tasks": "t.jsonl"}], "skills[0].path is missing", "skills[0].path: .claude/skills/*"),
    ([".claude/skills/*", "other/*"], "skills[1].path: other/deploy-copy/SKILL.md is a second skill named 'deploy' "
                                      "(also .claude/skills/deploy/SKILL.md)", "narrow the glob"),
    ([{"path": ".claude/skills/*", "tasks": "../{name}.jsonl"}], "skills[0].tasks: '../deploy.jsonl' is outside",
     "relative to the root"),
    ({"deploy": {"path": ".claude/skills/*"}}, "skills.deploy.path: '.claude/skills/*' is a glob",
     "list globs as items of `skills:`"),
    ("everything", "skills: expected a mapping (name → path, tasks, triggers) or a list", ".claude/skills/*"),
])
def test_config_errors_name_the_key_and_the_fix(tmp_path, skills, message, hint):
    with pytest.raises(ConfigError) as caught:
        entries(Config(skills=skills), lib(tmp_path))
    assert message in caught.value.message and hint in caught.value.hint, (caught.value.message, caught.value.hint)


def test_a_glob_never_matches_outside_the_repository(tmp_path):
    root = lib(tmp_path)
    outside = tmp_path / "outside"
    skill(outside / "secret", "secret")
    os.symlink(outside / "secret", root / ".claude/skills/secret")
    with pytest.raises(ConfigError) as caught:
        entries(Config(skills=[".claude/skills/*"]), root)
    assert "skills[0].path: .claude/skills/secret resolves outside the repository" in caught.value.message
    (root / ".claude/skills/secret").unlink()
    skill(root / ".git/skills/hidden", "hidden")
    assert "hidden" not in entries(Config(skills=["*/skills/*", ".claude/skills/*"]), root)


def test_train_skill_and_log_work_with_a_globbed_library(tmp_path):
    root = lib(tmp_path)
    (root / "skillgit.yaml").write_text('skills: [".claude/skills/*", "plugins/*/skills/*"]\n'
                                        "model: {student_backend: simulated, teacher_backend: simulated}\n")
    git(tmp_path, "init", "-q", "-b", "main", str(root))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a library")
    bad = skillgit(root, "train", "--skill", "notes")
    assert bad.returncode == 2 and "choose one of deploy, release-notes, db-migrate" in bad.stderr
    out = skillgit(root, "status", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"skills": {"deploy": None, "release-notes": None, "db-migrate": None}}
    (root / "skillgit.yaml").write_text('skills: [".claude/skils/*"]\n')
    typo = skillgit(root, "status")
    assert typo.returncode == 2 and "skills[0].path: '.claude/skils/*' matches no skill" in typo.stderr

"""README "Commands": commands that read the config take `-c key=value` (as `git -c`), `--config FILE` names the
file. `skillgit tasks suggest` alone took `-c` as the config file: `tasks suggest --skill deploy -c
model.teacher_model=NAME` failed with "config file not found: …/model.teacher_model=NAME" (wave 13). Now `-c` sets a
key there too (checked: an unknown key is refused by name), and `-c FILE` still names the file with the warning
every command gives."""

from __future__ import annotations

from tests.test_library_all import project, skillgit


def test_tasks_suggest_takes_c_as_a_config_key_like_every_command(tmp_path):
    root = project(tmp_path / "lib")
    ok = skillgit(root, "tasks", "suggest", "--skill", "db-migrate", "-c", "train.seed=3", "--out", "drafts/a")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.split() == ["drafts/a/db-migrate.triggers.jsonl", "drafts/a/db-migrate.tasks.jsonl"]
    unknown = skillgit(root, "tasks", "suggest", "--skill", "db-migrate", "-c", "nosuch.key=1", "--out", "drafts/b")
    assert unknown.returncode == 2 and "unknown config key 'nosuch'" in unknown.stderr, unknown.stderr
    old = skillgit(root, "tasks", "suggest", "--skill", "db-migrate", "-c", "skillgit.yaml", "--out", "drafts/c")
    assert old.returncode == 0 and "`-c FILE` is deprecated" in old.stderr, old.stderr
    named = skillgit(root, "tasks", "suggest", "--skill", "db-migrate", "--config", "skillgit.yaml",
                     "--out", "drafts/d")
    assert named.returncode == 0, named.stderr

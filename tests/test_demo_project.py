"""The demos' shared project folder and repository (skillgit/demo_project.py)."""

from __future__ import annotations

import pytest

from skillgit.demo_project import IDENTITY, demo_folder, init_demo_repository
from skillgit.errors import SkillgitError
from tests.conftest import git


def test_a_throwaway_folder_is_deleted_even_when_the_demo_fails():
    with pytest.raises(RuntimeError):
        with demo_folder(None, "skillgit-test-demo-") as (folder, kept):
            init_demo_repository(folder)
            assert not kept and (folder / ".git").is_dir()
            raise RuntimeError("the demo failed")
    assert not folder.parent.exists()


def test_a_given_folder_is_kept_and_a_full_one_refused_before_anything_is_written(tmp_path):
    with demo_folder(tmp_path / "d") as (folder, kept):
        repo = init_demo_repository(folder)
        assert kept and folder == (tmp_path / "d").resolve()
        assert [repo.config_get_all(key) for key, _ in IDENTITY] == [[value] for _, value in IDENTITY]
    assert (folder / ".git").is_dir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.txt").write_text("mine\n")
    with pytest.raises(SkillgitError) as info:
        init_demo_repository(tmp_path / "full", "use another folder")
    assert "not empty" in info.value.message and info.value.hint == "use another folder"
    assert sorted(p.name for p in (tmp_path / "full").iterdir()) == ["mine.txt"]


def test_the_demo_identity_fills_only_what_git_does_not_know(tmp_path):
    git(tmp_path, "config", "--global", "user.name", "Ada")
    init_demo_repository(tmp_path / "d")
    assert git(tmp_path / "d", "config", "--local", "user.name", check=False) == ""  # the user's name is used
    assert git(tmp_path / "d", "config", "--local", "user.email") == "demo@skillgit.invalid"
    assert git(tmp_path, "config", "--global", "user.name") == "Ada"  # the global config is never written

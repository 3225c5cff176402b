"""Issue 19.8: task fixtures with symlinks. A link that stays inside the fixture is copied as a link (pointing into
the copy); a link that leaves the fixture ($HOME, /), a loop, a special file and a fixture that is itself a link
out of the project are clear ConfigErrors naming the path and the fix — never a traceback, never a copy of the
tree a link points to."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from skillgit.agentic.spec import AgenticSpec
from skillgit.agentic.student import AgentStudent
from skillgit.agentic.workspace import Workspaces, copy_fixture
from skillgit.config import CommandCfg
from skillgit.errors import ConfigError
from skillgit.store.git import GitRepo
from skillgit.types import Item
from tests.conftest import git, run_cli
from tests.helpers import agentic_repo, agentic_tasks

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX symlinks")
SKILL = "---\nname: demo\ndescription: d\n---\n# Demo\n"


@pytest.fixture
def project(tmp_path) -> Path:
    root = agentic_repo(tmp_path / "proj", {"repos/app/README.md": "read me\n"}, SKILL)
    (root / "repos" / "app" / "docs").mkdir()
    return root


def _item(project: Path, verify: str = "true", fixture: str = "repos/app") -> Item:
    return Item("t1", "make done.txt", metadata={"workspace": {"fixture": fixture},
                                                 "verify": {"command": verify, "result": "exit_code"},
                                                 "task_dir": str(project)})


def _student(project: Path) -> AgentStudent:
    code = "open('done.txt', 'w').write('ok')"
    return AgentStudent(CommandCfg(preset="generic", argv=(sys.executable, "-c", code), output="text", timeout_s=60),
                        project_root=project, model=None, env=dict(os.environ), skill_path="skill",
                        skill_branch="main")


def test_links_inside_the_fixture_are_copied_as_links_that_point_into_the_workspace(project):
    app = project / "repos" / "app"
    (app / "docs" / "readme").symlink_to("../README.md")  # relative, inside
    (app / "abs").symlink_to(app / "README.md")  # absolute, inside: must point into the copy, not the original
    (app / "out_and_in").symlink_to("../app/README.md")  # leaves by name and comes back
    (app / "docs_link").symlink_to("docs")  # a folder
    (app / "gone").symlink_to("missing.txt")  # dangling, inside
    workspaces = Workspaces(GitRepo.open(project))
    with workspaces.open(AgenticSpec.from_item(_item(project), project)) as ws:
        for name in ("docs/readme", "abs", "out_and_in", "docs_link", "gone"):
            assert (ws / name).is_symlink(), name
            assert not os.path.isabs(os.readlink(ws / name)), name
            assert (ws / name).resolve().is_relative_to(ws.resolve()), name
        assert (ws / "abs").read_text() == (ws / "out_and_in").read_text() == "read me\n"
        assert (ws / "docs_link").resolve() == (ws / "docs").resolve()
        assert git(ws, "ls-files", "-s", "docs/readme").startswith("120000")  # committed as a link
    reply = _student(project).run(SKILL, _item(project, verify="test -L docs/readme && test -f done.txt"))
    assert reply.score is not None and reply.score.hard == 1.0


@pytest.mark.parametrize("where", ["home", "outside"])
def test_a_link_that_leaves_the_fixture_is_refused_and_nothing_of_its_tree_is_copied(project, tmp_path, where):
    secret = Path(os.environ["HOME"]) if where == "home" else tmp_path / "elsewhere"
    secret.mkdir(exist_ok=True)
    (secret / "id_rsa").write_text("PRIVATE\n")
    (project / "repos" / "app" / "docs" / "here").symlink_to(secret)
    student = _student(project)
    with pytest.raises(ConfigError) as err:
        student.run(SKILL, _item(project))
    assert f"symlink docs/here -> {secret} points outside the fixture" in err.value.message
    assert "copy what it points to into the fixture" in err.value.hint
    assert not student.workspaces.root.exists()  # nothing copied, nothing left


def test_a_link_to_the_root_folder_is_refused_before_anything_is_copied(project, tmp_path):
    app = project / "repos" / "app"
    (app / "root").symlink_to("/")
    with pytest.raises(ConfigError, match="symlink root -> / points outside the fixture"):
        copy_fixture(app, tmp_path / "copy")
    assert not (tmp_path / "copy").exists()


@pytest.mark.parametrize("links", [{"loop": "loop"}, {"a": "b", "b": "a"}], ids=["self", "pair"])
def test_a_symlink_loop_is_a_clear_error_not_a_traceback(project, links):
    for name, target in links.items():
        (project / "repos" / "app" / name).symlink_to(target)
    with pytest.raises(ConfigError, match=r"symlink (loop|a|b) -> \w+ is a loop") as err:
        _student(project).run(SKILL, _item(project))
    assert "remove the link" in err.value.hint


def test_a_fifo_in_a_fixture_is_a_clear_error(project):
    os.mkfifo(project / "repos" / "app" / "pipe")
    with pytest.raises(ConfigError, match="pipe is not a regular file, folder or symlink"):
        _student(project).run(SKILL, _item(project))


def test_a_fixture_that_is_itself_a_link_out_of_the_project_is_refused(project, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big.bin").write_text("x")
    (project / "repos" / "linked").symlink_to(outside)
    with pytest.raises(ConfigError, match="workspace.fixture 'repos/linked' resolves to .* outside the task file's "
                                          "folder and the project"):
        AgenticSpec.from_item(_item(project, fixture="repos/linked"), project)
    AgenticSpec.from_item(_item(project, fixture="repos/app"), project)  # a fixture inside is fine


def test_train_with_a_looping_fixture_exits_2_with_the_link_named(project):
    (project / "repos" / "app" / "loop").symlink_to("loop")
    rows = [{"id": f"t{i}", "prompt": "make done.txt", "workspace": {"fixture": "repos/app"},
             "verify": {"command": "test -f done.txt", "result": "exit_code"}} for i in range(2)]
    argv = json.dumps([sys.executable, "-c", "pass"])
    agentic_tasks(project, rows, f"{{preset: generic, output: text, argv: {argv}}}", workers=1)
    proc = run_cli("train", "--new", cwd=project, timeout=300)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "symlink loop -> loop is a loop" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-3000:]

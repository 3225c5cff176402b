"""Issue 22 item 1: pooled workspaces. A rollout's workspace is reused by the next rollout of the same source, reset
to that rollout's commit: whatever the first one left (files, ignored files, branches, tags, a stash, config, hooks,
index tricks, the installed skill) the next one never sees, and the user's repository never sees any of it either.
Real git repositories, the real `AgentStudent` with the generic preset running a Python agent (tests/agents/
pool_agent.py is written below), real shell verifiers, real threads."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from skillgit import package
from skillgit.agentic.spec import AgenticSpec
from skillgit.agentic.student import AgentStudent
from skillgit.agentic.workspace import Workspaces
from skillgit.config import CommandCfg
from skillgit.errors import ConfigError
from skillgit.llm.base import LLMError
from skillgit.store.git import GitRepo
from skillgit.types import Item
from tests.conftest import git

ROOT = Path(__file__).parents[1]
SKILL_A = package.bundle({"SKILL.md": "---\nname: demo\ndescription: d\n---\n# A\n", "references/a.md": "# only A\n"})
SKILL_B = package.bundle({"SKILL.md": "---\nname: demo\ndescription: d\n---\n# B\n"})

# The agent: `pool_agent.py REPORTS ACTION`. `dirty` leaves every kind of state behind; `look` reports what the
# workspace holds (files with their git blob ids and modes, refs, stash, config, hooks, index flags, the installed
# skill's files, which pooled workspace it runs in); other actions are small edits named below.
AGENT = '''
import hashlib, json, os, shutil, stat, subprocess, sys, time
reports, action = sys.argv[1], sys.argv[2]
ID = ["-c", "user.name=agent", "-c", "user.email=agent@example.invalid"]
def g(*args, check=True):
    return subprocess.run(["git", *args], capture_output=True, text=True, check=check).stdout
def files():
    out = {}
    for dirpath, dirnames, filenames in os.walk("."):
        dirnames[:] = [d for d in dirnames if d not in (".git", ".skill")]
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            path = os.path.join(dirpath, name)[2:]
            st = os.lstat(path)
            data = os.readlink(path).encode() if stat.S_ISLNK(st.st_mode) else open(path, "rb").read()
            mode = "120000" if stat.S_ISLNK(st.st_mode) else "100755" if st.st_mode & 0o100 else "100644"
            out[path] = [mode, hashlib.sha1(b"blob %d\\0" % len(data) + data).hexdigest()]
        for d in dirnames:
            if not os.listdir(os.path.join(dirpath, d)):
                out[os.path.join(dirpath, d)[2:] + "/"] = ["empty", ""]
    return out
slot = os.path.basename(os.path.dirname(os.getcwd()))
if action == "dirty":
    open("app.py", "a").write("# stashed\\n")
    g(*ID, "stash")
    open("junk.txt", "w").write("junk\\n")
    os.makedirs("build", exist_ok=True)
    open("build/out.o", "w").write("ignored\\n")
    open("debug.log", "w").write("ignored\\n")
    open("app.py", "a").write("# changed\\n")
    os.chmod("tool.sh", 0o644)
    os.remove("lib/util.py")
    g("checkout", "-q", "-b", "agent-branch")
    g("tag", "agent-tag")
    g("config", "user.leak", "yes")
    os.makedirs(".git/hooks", exist_ok=True)
    open(".git/hooks/pre-commit", "w").write("#!/bin/sh\\nexit 0\\n")
    os.chmod(".git/hooks/pre-commit", 0o755)
    g(*ID, "commit", "-qam", "agent commit")
    open("lib/more.py", "a").write("# hidden by skip-worktree\\n")
    g("update-index", "--skip-worktree", "lib/more.py")
    open(".skill/demo/agent-note.md", "w").write("left by the agent\\n")
    open(os.path.join(os.environ["HOME"], "agent-memory.md"), "w").write("remember\\n")
    os.makedirs(os.path.join(os.environ["CLAUDE_CONFIG_DIR"], "projects"), exist_ok=True)
    open(os.path.join(os.environ["CLAUDE_CONFIG_DIR"], "projects", "session.jsonl"), "w").write("{}\\n")
    open("../prompt-left.txt", "w").write("next to the workspace\\n")
elif action == "look":
    skill = sorted(os.path.relpath(os.path.join(d, f), ".skill/demo")
                   for d, _, fs in os.walk(".skill/demo") for f in fs)
    inodes = {p: [os.lstat(p).st_ino, os.lstat(p).st_mtime_ns] for p in files() if not p.endswith("/")}
    home = sorted(os.path.relpath(os.path.join(d, f), os.environ["HOME"])
                  for d, _, fs in os.walk(os.environ["HOME"]) for f in fs)
    report = {"slot": slot, "files": files(), "home": home, "beside": sorted(os.listdir("..")), "inodes": inodes,
              "head": g("rev-parse", "HEAD").strip(),
              "refs": g("for-each-ref", "--format=%(refname)").split(), "stash": g("stash", "list"),
              "leak": g("config", "--get", "user.leak", check=False), "skill": skill,
              "hooks": sorted(os.listdir(".git/hooks")) if os.path.isdir(".git/hooks") else [],
              "flags": [l for l in g("ls-files", "-v").splitlines() if not l.startswith("H ")],
              "status": g("status", "--porcelain", "--ignored", "--untracked-files=all", "--", ".", ":!.skill",
                          ":!skill")}
    json.dump(report, open(os.path.join(reports, f"look-{time.monotonic_ns()}.json"), "w"))
elif action.startswith("mark"):  # a parallel rollout: its own marker only, whatever runs beside it
    open(f"marker-{action}.txt", "w").write(action)
    time.sleep(0.3)
    seen = sorted(f for f in os.listdir(".") if f.startswith("marker-"))
    json.dump({"slot": slot, "seen": seen}, open(os.path.join(reports, f"{action}.json"), "w"))
elif action == "escape":  # the workspace folder itself becomes a link to the user's project
    project = os.environ["POOL_TEST_PROJECT"]
    os.chdir("..")
    shutil.rmtree("ws")
    os.symlink(project, "ws")
elif action == "no-git":
    open("app.py", "a").write("# after removing .git\\n")
    shutil.rmtree(".git")
elif action == "commit":
    open("app.py", "a").write("# committed by the agent\\n")
    g(*ID, "commit", "-qam", "agent-commit")
elif action == "outside":
    os.makedirs("elsewhere", exist_ok=True)
    open("elsewhere/new.txt", "w").write("new\\n")
'''


@pytest.fixture
def project(tmp_path) -> Path:
    """A project with two commits (`v1`: a file `docs` and a link; HEAD: `docs/` a folder, the link gone, a new
    file), an ignore file, an executable, a committed skill at `skill/` and a fixture folder `repos/app`."""
    root = tmp_path / "proj"
    for rel, text in {"app.py": "print('v1')\n", "lib/util.py": "X = 1\n", "lib/more.py": "Y = 2\n",
                      "docs": "a file in v1\n", ".gitignore": "*.log\nbuild/\n", "tool.sh": "#!/bin/sh\necho\n",
                      "skill/SKILL.md": "---\nname: demo\ndescription: d\n---\n# committed\n",
                      "repos/app/app.txt": "hello\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "tool.sh").chmod(0o755)
    (root / "link").symlink_to("app.py")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "v1")
    git(root, "tag", "v1")
    (root / "docs").unlink()
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text("# guide\n")
    (root / "link").unlink()
    (root / "app.py").write_text("print('v2')\n")
    (root / "new.py").write_text("NEW = True\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "v2")
    return root


@pytest.fixture
def reports(tmp_path) -> Path:
    folder = tmp_path / "reports"
    folder.mkdir()
    return folder


def _student(project: Path, reports: Path, tmp_path: Path, *, keep: bool = False) -> AgentStudent:
    script = tmp_path / "pool_agent.py"
    script.write_text(AGENT)
    env = {**os.environ, "POOL_TEST_PROJECT": str(project)}
    # (confine off: the fake agent reports into the test's folder, outside its rollout; tests/test_sandbox.py)
    return AgentStudent(CommandCfg(preset="generic", argv=(sys.executable, str(script), str(reports), "{prompt}"),
                                   output="text", timeout_s=60, confine="off"), project_root=project, model=None,
                        env=env, skill_path="skill", skill_branch="main", keep_workspaces=keep)


def _item(project: Path, action: str, *, rev: str = "HEAD", fixture: bool = False, paths: list[str] | None = None,
          verify: str = "true") -> Item:
    workspace: dict = {"fixture": "repos/app"} if fixture else {"repo": ".", "rev": rev}
    if paths is not None:
        workspace["paths"] = paths
    return Item(f"t-{action}", action, metadata={"workspace": workspace, "task_dir": str(project),
                                                 "verify": {"command": verify, "result": "exit_code"}})


def _look(student: AgentStudent, project: Path, reports: Path, **kw) -> dict:
    before = set(reports.glob("look-*.json"))
    student.run(SKILL_B, _item(project, "look", **kw))
    [new] = set(reports.glob("look-*.json")) - before
    return json.loads(new.read_text())


def _tree(repo: Path, rev: str, drop: str = "skill") -> dict[str, list[str]]:
    """path → [mode, blob id] of `rev` in `repo`, without the committed skill (the workspace hides it)."""
    out = {}
    for line in git(repo, "ls-tree", "-r", rev).splitlines():
        meta, path = line.split("\t", 1)
        mode, _, sha = meta.split()
        if not (path == drop or path.startswith(drop + "/")):
            out[path] = [mode, sha]
    return out


def _untouched(project: Path) -> tuple[str, ...]:
    """What the user's repository shows of its state: refs, stash, config, hooks, worktrees, status."""
    hooks = project / ".git" / "hooks"
    return (git(project, "for-each-ref"), git(project, "stash", "list"), (project / ".git" / "config").read_text(),
            " ".join(sorted(p.name for p in hooks.iterdir())) if hooks.is_dir() else "",
            git(project, "worktree", "list"), git(project, "status", "--porcelain", "--ignored"))


# ---------------------------------------------------------------------------------------------- isolation
def test_nothing_a_rollout_leaves_reaches_the_next_rollout_in_the_same_pooled_workspace(project, reports, tmp_path):
    student = _student(project, reports, tmp_path)
    before = _untouched(project)
    student.run(SKILL_A, _item(project, "dirty"))
    seen = _look(student, project, reports)
    assert seen["slot"] == "1"  # the same pooled workspace, reset
    assert seen["files"] == _tree(project, "HEAD")  # junk, ignored files, edits, modes, deletions: all undone
    assert seen["head"] == git(project, "rev-parse", "HEAD") and seen["refs"] == []  # no branch, no tag
    assert seen["stash"] == "" and seen["leak"] == "" and seen["hooks"] == [] and seen["flags"] == []
    assert seen["status"] == ""
    assert seen["skill"] == ["SKILL.md"]  # skill B only: nothing of A's package nor what the agent added to it
    assert seen["home"] == [".gitconfig"]  # a fresh hermetic home: no memory, no session of the last rollout
    assert "prompt-left.txt" not in seen["beside"]  # nor anything it left beside the workspace
    assert _untouched(project) == before  # and the user's repository saw none of it
    student.workspaces.close()
    assert not student.workspaces.root.exists()


def test_a_fixture_workspace_is_pooled_and_reset_the_same_way(project, reports, tmp_path):
    app = project / "repos" / "app"
    for rel, text in {"app.py": "print('fixture')\n", "lib/util.py": "X = 1\n", "lib/more.py": "Y = 2\n",
                      ".gitignore": "*.log\nbuild/\n", "tool.sh": "#!/bin/sh\n", "kept.log": "an ignored file\n",
                      "crlf.txt": "one\r\ntwo\r\n", ".gitattributes": "* text eol=lf\n"}.items():
        (app / rel).parent.mkdir(parents=True, exist_ok=True)
        (app / rel).write_text(text, newline="")
    (app / "tool.sh").chmod(0o755)
    (app / "out").mkdir()  # an empty folder
    (app / "link").symlink_to("app.py")
    student = _student(project, reports, tmp_path)
    first = _look(student, project, reports, fixture=True)
    student.run(SKILL_A, _item(project, "dirty", fixture=True))
    second = _look(student, project, reports, fixture=True)
    assert first["slot"] == second["slot"] and first["files"] == second["files"]
    git_ids = {rel: hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() for rel, data in
               ((rel, (app / rel).read_bytes()) for rel in ("crlf.txt", "kept.log", "app.py"))}
    assert {rel: second["files"][rel][1] for rel in git_ids} == git_ids  # byte for byte, ignored files included
    assert second["files"]["out/"] == ["empty", ""] and second["files"]["tool.sh"][0] == "100755"
    assert second["files"]["link"][0] == "120000" and second["refs"] == [] and second["leak"] == ""
    (app / "app.py").write_text("print('changed fixture')\n")  # a changed fixture is snapshotted again
    third = _look(student, project, reports, fixture=True)
    assert third["slot"] == first["slot"] and third["files"]["app.py"][1] != first["files"]["app.py"][1]


def test_rollouts_at_other_revisions_in_one_workspace_see_exactly_that_revision(project, reports, tmp_path):
    student = _student(project, reports, tmp_path)
    inodes = []
    for rev in ("v1", "HEAD", "v1", "HEAD~1", "HEAD"):  # a file becomes a folder and back, a link comes and goes
        seen = _look(student, project, reports, rev=rev)
        assert seen["slot"] == "1"
        assert seen["files"] == _tree(project, rev), rev
        assert seen["head"] == git(project, "rev-parse", f"{rev}^{{commit}}")
        inodes.append(seen["inodes"])
    # a reset rewrites what differs, nothing else: the same file in every revision is never written again
    assert len({tuple(i["lib/util.py"]) for i in inodes}) == 1 and len({tuple(i["tool.sh"]) for i in inodes}) == 1
    assert len({tuple(i["app.py"]) for i in inodes}) > 1


def test_an_agent_that_turns_its_workspace_into_a_link_to_the_project_never_gets_it_reset(project, reports,
                                                                                        tmp_path):
    (project / "untracked.txt").write_text("the user's own work\n")
    student = _student(project, reports, tmp_path)
    before = _untouched(project)
    with pytest.raises(LLMError, match="the agent removed or replaced its workspace folder"):
        student.run(SKILL_A, _item(project, "escape"))  # and its verifier never runs in the project
    seen = _look(student, project, reports)
    assert seen["slot"] == "2"  # the broken workspace was discarded, not reset (a reset would clean the project)
    assert seen["files"] == _tree(project, "HEAD")
    assert (project / "untracked.txt").read_text() == "the user's own work\n" and _untouched(project) == before
    assert not (project / ".skill").exists()


def test_the_diff_is_the_change_since_the_task_commit_whatever_the_agent_did_to_git(project, reports, tmp_path):
    student = _student(project, reports, tmp_path)
    committed = student.run(SKILL_A, _item(project, "commit", verify="git log -1 --format=%s | grep -q agent-commit"))
    assert committed.score is not None and committed.score.hard == 1.0  # the verifier sees the agent's own commit
    assert "+# committed by the agent" in committed.trace.split("workspace diff:")[1]
    removed = student.run(SKILL_A, _item(project, "no-git"))
    diff = removed.trace.split("workspace diff:")[1]
    assert "+# after removing .git" in diff and "skill/" not in diff and ".skill" not in diff
    seen = _look(student, project, reports)
    assert seen["slot"] == "1" and seen["files"] == _tree(project, "HEAD") and seen["refs"] == []


# ---------------------------------------------------------------------------------------------- parallel workers
def test_parallel_rollouts_never_share_a_workspace_and_the_pool_stays_as_small_as_the_workers(project, reports,
                                                                                              tmp_path):
    student = _student(project, reports, tmp_path)
    actions = [f"mark{i}" for i in range(12)]
    with ThreadPoolExecutor(max_workers=3) as pool:
        replies = list(pool.map(lambda a: student.run(SKILL_A, _item(project, a)), actions))
    for action, reply in zip(actions, replies):
        seen = json.loads((reports / f"{action}.json").read_text())
        assert seen["seen"] == [f"marker-{action}.txt"]  # nothing of a rollout running beside it
        diff = reply.trace.split("workspace diff:")[1]
        assert [line[6:] for line in diff.splitlines() if line.startswith("+++ b/")] == [f"marker-{action}.txt"]
    slots = {json.loads((reports / f"{a}.json").read_text())["slot"] for a in actions}
    assert 1 <= len(slots) <= 3
    [pool_folder] = student.workspaces.root.iterdir()
    assert sorted(p.name for p in pool_folder.iterdir() if p.name.isdigit()) == sorted(slots)


# ---------------------------------------------------------------------------------------------- sparse paths
def test_workspace_paths_check_out_only_the_named_files_and_folders(project, reports, tmp_path):
    student = _student(project, reports, tmp_path)
    seen = _look(student, project, reports, paths=["lib", "app.py"])
    assert sorted(seen["files"]) == ["app.py", "lib/more.py", "lib/util.py"]
    assert seen["files"] == {k: v for k, v in _tree(project, "HEAD").items() if k in seen["files"]}
    outside = student.run(SKILL_A, _item(project, "outside", paths=["lib", "app.py"]))
    assert "+++ b/elsewhere/new.txt" in outside.trace and "lib/util.py" not in outside.trace.split("diff:")[1]
    full = _look(student, project, reports)  # another key: its own workspace, the whole tree
    assert full["slot"] != seen["slot"] and full["files"] == _tree(project, "HEAD")
    with pytest.raises(ConfigError) as err:
        student.run(SKILL_A, _item(project, "look", paths=["lib", "nope/here"]))
    assert "workspace.paths 'nope/here' not found in HEAD" in err.value.message and "exist there" in err.value.hint


@pytest.mark.parametrize("paths,why", [(["../up"], "holds '.' or '..'"), (["/abs"], "is absolute"),
                                       (["src/*.py"], "glob character"), ([""], "is empty"), ([3], "non-empty list"),
                                       ([], "non-empty list"), ([".git/config"], ".git"), (["a\nb"], "control")])
def test_bad_workspace_paths_are_config_errors_naming_the_key(project, paths, why):
    item = _item(project, "look", paths=paths)
    with pytest.raises(ConfigError) as err:
        AgenticSpec.from_item(item, project)
    assert "workspace.paths" in err.value.message and why in err.value.message
    assert '"paths": ["src/app"' in err.value.hint


def test_workspace_paths_are_normalised_and_reach_the_journal_key(project, reports, tmp_path):
    spec = AgenticSpec.from_item(_item(project, "look", paths=["lib/", "app.py", "lib"]), project)
    assert spec.paths == ("lib", "app.py")
    student = _student(project, reports, tmp_path)
    assert student.cache_material(_item(project, "look", paths=["lib"])) != \
        student.cache_material(_item(project, "look"))


# ---------------------------------------------------------------------------------------------- keep, kill -9
def test_keep_workspaces_gives_every_rollout_its_own_workspace_and_keeps_it(project, reports, tmp_path):
    student = _student(project, reports, tmp_path, keep=True)
    student.run(SKILL_A, _item(project, "dirty"))
    seen = _look(student, project, reports)
    assert seen["slot"] == "2"
    student.workspaces.close()
    [pool] = student.workspaces.root.iterdir()
    kept = pool / "1" / "ws"
    assert (kept / "junk.txt").read_text() == "junk\n" and (kept / "debug.log").exists()  # as the agent left it
    assert "agent-branch" in git(kept, "branch")
    assert Workspaces(GitRepo.open(project)).sweep() == 0  # ours: this process lives
    subprocess.run(["rm", "-rf", str(student.workspaces.root)], check=True)


def test_a_killed_process_pool_with_idle_workspaces_and_fixture_snapshots_is_removed_by_the_next_sweep(
        project, reports, tmp_path):
    script = tmp_path / "runner.py"
    script.write_text(textwrap.dedent(f"""\
        import os, signal, sys
        from pathlib import Path
        sys.path.insert(0, {str(ROOT)!r})
        from tests.test_agentic_workspaces import SKILL_A, _item, _student
        project, reports, tmp = Path({str(project)!r}), Path({str(reports)!r}), Path({str(tmp_path)!r})
        student = _student(project, reports, tmp)
        student.run(SKILL_A, _item(project, "dirty"))
        student.run(SKILL_A, _item(project, "dirty", fixture=True))
        os.kill(os.getpid(), signal.SIGKILL)  # no exit handler runs
        """))
    proc = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    workspaces = Workspaces(GitRepo.open(project))
    [pool] = workspaces.root.iterdir()
    assert {p.name for p in pool.iterdir()} >= {"1", "1.base", "2", "store"}
    assert workspaces.sweep() == 1 and not workspaces.root.exists()
    assert len(git(project, "worktree", "list").splitlines()) == 1


def test_a_rollout_after_close_is_refused_and_makes_nothing(project, reports, tmp_path):
    student = _student(project, reports, tmp_path)
    student.workspaces.close()
    with pytest.raises((RuntimeError, LLMError)):
        student.run(SKILL_A, _item(project, "look"))
    assert not student.workspaces.root.exists()

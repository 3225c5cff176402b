"""An approval covers what actually runs: the repository files a command runs are part of its key
(`skillgit/sleep/approval_files.py`, `approval.command_key`).

The hole: `python check.py` approved once approved that text forever; a teammate's commit changed `check.py` and
the next night ran the new code under the old approval. Now the key of a mined task's commands covers the content
of the files they run at the commit the night replays the task from, and the key of the configuration's scorer
command the files it runs in the working tree. An edited file is a new command: the night leaves it out, `sleep
review` names the file that changed (name and short digest), `--approve` approves it. Approvals recorded before
(text only) no longer approve a command that runs a repository file, and review and status say so once.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

from skillgit.sleep import approval
from skillgit.sleep.approval_files import MISSING, OUTSIDE, at_rev, in_folder, named, paths_of
from skillgit.sleep.mine import MinedTask, write_tasks
from skillgit.store.repository import open_repository
from tests.conftest import approve_configuration, run_cli, run_cli_inproc
from tests.test_sleep_harvest import git, make_repo
from tests.test_trust_config_commands import _project as scorer_project
from tests.test_trust_config_commands import _run as scorer_night
from tests.test_trust_config_commands import _scorer

ZERO = "0" * 40  # the commit Copilot CLI records: a task pinned to it replays from the skill branch's tip
CONFIG = """\
skill: {path: skill, branch: main}
model:
  student_backend: agent
  teacher_backend: simulated
  student:
    command: {preset: simulated, timeout_s: 60, confine: off}  # (the canary outside the rollout shows what ran)
train: {max_steps: 1, batch_size: 1}
env: {workers: 1}
"""


def _check(canary: Path, tag: str) -> str:
    return f"open({str(canary)!r}, 'a').write({tag!r} + '\\n')\n"


def _agentic_project(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A repository whose mined task file holds two agentic tasks that run `python check.py` (pinned to a commit
    the repository does not have: replayed from main's tip); check.py writes its version into `canary`."""
    repo = make_repo(tmp_path / "repo")
    (repo / "skill").mkdir()
    (repo / "skill" / "SKILL.md").write_text("# Skill\n\nRun the checks before you stop.\n")
    (repo / "skillgit.yaml").write_text(CONFIG)
    canary = tmp_path / "canary"
    (repo / "check.py").write_text(_check(canary, "v1"))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "skill and check")
    tasks = [MinedTask(id=f"t{n}", kind="agentic", prompt=f"fix thing {n}", rev=ZERO,
                       verify={"command": f"{sys.executable} check.py", "timeout_s": 60, "result": "exit_code"},
                       signals={"sessions": 2})
             for n in range(2)]
    write_tasks(repo / ".skillgit" / "sleep" / "tasks.jsonl", tasks)
    (repo / ".skillgit" / "sleep" / ".gitignore").write_text("*\n")
    home = tmp_path / "home"
    home.mkdir()
    approve_configuration(repo)  # its `confine: off` (what this test probes is the tasks' commands)
    return repo, home, canary


def _night(repo: Path, home: Path, date: str) -> dict:
    done = run_cli("sleep", "run", "--home", str(home), "--sources", "claude", "--date", date, "--json", "--yes",
                   cwd=repo, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _ran(canary: Path) -> set[str]:
    return set(canary.read_text().split()) if canary.exists() else set()


def test_an_edited_script_makes_a_new_command_that_the_night_leaves_out_until_approved(tmp_path):
    repo, home, canary = _agentic_project(tmp_path)
    path = repo / ".skillgit" / "sleep" / "tasks.jsonl"
    from skillgit.sleep.mine import read_tasks

    tasks = read_tasks(path).tasks
    # an approval file written by the skillgit before this change (format 1: keys of the text alone)
    old_file = {"version": 1, "commands": {approval.text_key(t): {"task": t.id, "approved_at": "2026-01-01T00:00:00"}
                                           for t in tasks}}
    approval.path(repo / ".git").write_text(json.dumps({**old_file, "commands": {
        **old_file["commands"], **json.loads(approval.path(repo / ".git").read_text())["commands"]}}))
    shown = run_cli_inproc("sleep", "review", cwd=repo)
    assert shown.stdout.count("runs (not approved): $ ") == 2, shown.stdout
    assert shown.stdout.count("files it runs: check.py ") == 2
    assert f"2 command(s) {approval.LEGACY}" in shown.stderr, shown.stderr
    status = run_cli_inproc("sleep", "status", cwd=repo)
    assert "2 agentic task(s) run commands nobody approved here" in status.stdout, status.stdout
    assert approval.LEGACY in status.stderr

    assert run_cli_inproc("sleep", "review", "--approve", cwd=repo).returncode == 0
    record = _night(repo, home, "2026-02-01")
    assert record["tasks"]["excluded"] == {} and record["tasks"]["used"] == 2, record["tasks"]
    assert _ran(canary) == {"v1"}

    # an unrelated commit: the files the commands run are unchanged, the approval stands
    (repo / "README.md").write_text("more words\n")
    git(repo, "commit", "-qam", "docs")
    canary.unlink()
    record = _night(repo, home, "2026-02-02")
    assert record["tasks"]["excluded"] == {} and _ran(canary) == {"v1"}

    # a teammate's commit changes check.py: the night replays main's tip, where check.py is new code
    old = git(repo, "rev-parse", "HEAD:check.py")[:12]
    (repo / "check.py").write_text(_check(canary, "v2"))
    git(repo, "commit", "-qam", "teammate: tweak the check")
    new = git(repo, "rev-parse", "HEAD:check.py")[:12]
    canary.unlink()
    record = _night(repo, home, "2026-02-03")
    assert record["tasks"]["excluded"] == {approval.NOT_APPROVED: 2}, record["tasks"]
    assert not canary.exists()  # (before the fix: it ran, and wrote v2)
    shown = run_cli_inproc("sleep", "review", cwd=repo)
    assert shown.stdout.count(f"changed since approved: check.py {old} → {new}") == 2, shown.stdout
    assert "v2" not in shown.stdout  # the file is named, its content is never shown
    status = run_cli_inproc("sleep", "status", cwd=repo)
    assert "2 agentic task(s) run commands nobody approved here" in status.stdout
    assert f"task t0: changed since approved: check.py {old} → {new}" in status.stdout, status.stdout
    status_json = json.loads(run_cli_inproc("sleep", "status", "--json", cwd=repo).stdout)
    assert status_json["tasks"]["unapproved"] == 2 and status_json["legacy"] == ""

    assert run_cli_inproc("sleep", "review", "--approve", cwd=repo).returncode == 0  # read, then approved
    record = _night(repo, home, "2026-02-04")
    assert record["tasks"]["excluded"] == {} and _ran(canary) == {"v2"}


def test_an_edited_scorer_script_leaves_the_text_tasks_out_until_approved(tmp_path):
    canary = tmp_path / "canary"
    repo, home = scorer_project(tmp_path, "")
    path = repo / "skillgit.yaml"
    path.write_text(path.read_text().replace(
        "scorer: {type: exact}", f"scorer: {{type: command, command: {json.dumps(_scorer(canary, 'A'))}}}"))
    git(repo, "commit", "-qam", "a command scorer")
    assert run_cli_inproc("sleep", "mine", "--home", str(home), "--sources", "claude,codex", cwd=repo).returncode == 0
    assert run_cli_inproc("sleep", "review", "--approve", cwd=repo).returncode == 0

    check = repo / "check.py"
    check.write_text(check.read_text().replace('out.write(sys.argv[2] + "\\n")', 'out.write("EDITED\\n")'))
    git(repo, "commit", "-qam", "teammate: the scorer's script")  # skillgit.yaml's text is unchanged
    done = scorer_night(repo, home, "2026-01-10")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    n = record["tasks"]["in_file"]
    assert n >= 2 and record["tasks"]["excluded"] == {approval.SCORER_NOT_APPROVED: n}, record["tasks"]
    assert not canary.exists()  # (before the fix: the edited script scored the night)
    shown = run_cli_inproc("sleep", "review", cwd=repo)
    assert "skillgit.yaml env.scorer.command (not approved)" in shown.stdout, shown.stdout
    assert "changed since approved: check.py " in shown.stdout and "EDITED" not in shown.stdout
    status = run_cli_inproc("sleep", "status", cwd=repo)
    assert "skillgit.yaml env.scorer.command: changed since approved: check.py " in status.stdout, status.stdout

    assert run_cli_inproc("sleep", "review", "--approve", cwd=repo).returncode == 0
    done = scorer_night(repo, home, "2026-01-11")
    record = json.loads(done.stdout)
    assert record["tasks"]["excluded"] == {} and set(canary.read_text().split()) == {"EDITED"}


def test_what_a_command_names_is_found_and_paths_leaving_the_repository_are_never_read(tmp_path):
    assert named("python -W ignore check.py --fast") == ["check.py"]
    assert named("cd x && ./scripts/run.sh a; bash ci/test.sh | tee log") == ["./scripts/run.sh", "ci/test.sh"]
    assert named("FOO=1 env BAR=2 python -m tools.verify --x") == ["module:tools.verify"]
    assert named("python -m pytest -q -k 'a or b' tests/test_x.py::test_y tests/unit") == \
        ["tests/test_x.py", "tests/unit"]
    assert named("sh -c 'node build.js && make -C sub'") == ["build.js", "sub/GNUmakefile", "sub/makefile",
                                                             "sub/Makefile"]
    assert named("python -c 'print(1)'; true; git diff --stat") == []
    assert paths_of(["timeout 30 python check.py", "tox -e py"]) == ["check.py", "tox.ini"]

    outside = tmp_path / "outside"
    outside.mkdir()
    fifo = outside / "pipe.sh"
    os.mkfifo(fifo)  # opening it would block: a reader that followed the link out would never return
    (outside / "x.sh").write_text("echo secret\n")
    repo = make_repo(tmp_path / "repo")
    (repo / "tools").mkdir()
    (repo / "tools" / "verify.py").write_text("print('ok')\n")
    (repo / "inside.sh").write_text("echo ok\n")
    os.symlink(fifo, repo / "out.sh")  # a link out of the repository (committed as a link)
    os.symlink("../outside/x.sh", repo / "rel.sh")
    os.symlink("inside.sh", repo / "alias.sh")  # a link inside: what it points at is covered
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "links")
    paths = paths_of(["bash ../outside/x.sh", f"bash {outside / 'x.sh'}", "./out.sh", "./rel.sh", "./alias.sh",
                      "./gone.sh", "python -m tools.verify", "python -m json.tool"])
    found: dict[str, tuple] = {}

    def read() -> None:
        found["tree"] = in_folder(repo, paths)
        git_repo = open_repository(repo)
        try:
            found["rev"] = at_rev(git_repo, "HEAD", paths)
        finally:
            git_repo.close()

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "a path outside the repository was opened"
    blob = git(repo, "rev-parse", "HEAD:inside.sh")
    for where in ("tree", "rev"):
        digests = {f.path: f.digest for f in found[where]}
        assert digests["../outside/x.sh"] == OUTSIDE and digests[str(outside / "x.sh")] == OUTSIDE
        assert digests["./out.sh"] == OUTSIDE and digests["./rel.sh"] == OUTSIDE, (where, digests)
        assert digests["./gone.sh"] == MISSING and digests["module:json.tool"] == MISSING
        assert digests["module:tools.verify"] not in (MISSING, OUTSIDE)
        assert digests["./alias.sh"] not in (MISSING, OUTSIDE)
    assert {f.path: f.digest for f in found["rev"]}["./alias.sh"] == blob  # followed to the file it names
    task = MinedTask(id="t", kind="agentic", prompt="p", verify={"command": "bash ../outside/x.sh; ./out.sh"})
    key = approval.command_key(task, found["rev"][:1])
    assert key and key != approval.text_key(task)  # the key holds, and says the file is not covered

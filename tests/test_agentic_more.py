"""Agentic rollouts, the parts an audit found missing: journal keys that cover the task and the agent settings, PWD,
package files on disk (binary assets, modes), size budgets per file, the committed skill hidden from a `repo`
workspace, agents killed after a kill -9 of train, agents that give up still verified, setup failures not retried,
and the copilot / opencode presets through stub CLIs. Real git, real subprocess agents, real verifiers."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from skillgit import package
from skillgit.agentic.student import AgentStudent
from skillgit.agentic.workspace import PGID_FILE, Workspaces
from skillgit.agents import registry
from skillgit.config import CommandCfg
from skillgit.llm.base import LLMError
from skillgit.llm.cache import CachedStudent, CallCache
from skillgit.loop import guards
from skillgit.store.git import GitRepo
from skillgit.types import Item
from tests.conftest import git, run_cli, run_cli_inproc
from tests.helpers import agentic_tasks

FIXTURES = Path(__file__).parent / "fixtures" / "agent_cli"
SKILL = "---\nname: demo\ndescription: d\n---\n# Demo\nRULE: be kind\n"


@pytest.fixture
def project(tmp_path) -> Path:
    """A project repository with a fixture folder (`repos/app`) and a committed skill package at `skill/`."""
    root = tmp_path / "proj"
    (root / "repos" / "app").mkdir(parents=True)
    (root / "repos" / "app" / "app.txt").write_text("hello\n")
    (root / "skill" / "scripts").mkdir(parents=True)
    (root / "skill" / "assets").mkdir()
    (root / "skill" / "SKILL.md").write_text(SKILL)
    (root / "skill" / "scripts" / "run.sh").write_text("#!/bin/sh\necho run\n")
    os.chmod(root / "skill" / "scripts" / "run.sh", 0o755)
    (root / "skill" / "assets" / "logo.bin").write_bytes(bytes(range(256)) + b"\xff\xfe\x00")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root


def _item(project: Path, *, verify: str = "test -f done.txt", setup: tuple[str, ...] = (), repo: bool = False,
          item_id: str = "t1") -> Item:
    workspace = {"repo": ".", "rev": "HEAD"} if repo else {"fixture": "repos/app"}
    return Item(item_id, "make done.txt", metadata={"workspace": workspace, "setup": list(setup),
                                                    "verify": {"command": verify, "result": "exit_code",
                                                               "timeout_s": 30},
                                                    "task_dir": str(project)})


def _agent(project: Path, code: str, *, preset: str = "generic", output: str = "text", env: dict | None = None,
           **cfg) -> AgentStudent:
    argv = (sys.executable, "-c", textwrap.dedent(code)) if code else ()
    # (confine off: the fake agent reports into the test's folder, outside its rollout; tests/test_sandbox.py)
    return AgentStudent(CommandCfg(preset=preset, argv=argv, output=output, timeout_s=60, **{"confine": "off", **cfg}),
                        project_root=project, model=None, env=env if env is not None else dict(os.environ),
                        skill_path="skill", skill_branch="main")


MAKE_DONE = "open('done.txt', 'w').write('ok')\nprint('made it')"


# ---------------------------------------------------------------------------------------------- 1. journal keys
def test_the_journal_key_covers_the_task_spec_the_workspace_content_and_the_agent_settings(project):
    calls = project.parent / "calls.log"
    code = f"open('done.txt', 'w').write('ok')\nopen({str(calls)!r}, 'a').write('x\\n')\nprint('made it')"
    cache = CallCache(None)
    cached = CachedStudent(_agent(project, code), cache)
    item = _item(project)
    assert cached.run(SKILL, item).score.hard == 1.0
    assert cached.run(SKILL, item).score.hard == 1.0  # the same task, the same settings: replayed (resume)
    assert calls.read_text().count("x") == 1
    # every verifier now fails: a new key, the agent runs again, the verdict is the new one (not 1.000 from cache)
    broken = _item(project, verify="false")
    assert cached.key(SKILL, broken) != cached.key(SKILL, item)
    assert cached.run(SKILL, broken).score.hard == 0.0
    # the fixture's content, the setup, and every agent setting are part of the key
    before = cached.key(SKILL, item)
    (project / "repos" / "app" / "app.txt").write_text("changed\n")
    assert cached.key(SKILL, item) != before
    assert cached.key(SKILL, _item(project, setup=("true",))) != cached.key(SKILL, item)
    for change in ({"max_turns": 3}, {"allowed_tools": ("Read",)}, {"permission_mode": "plan"}):
        other = CachedStudent(_agent(project, code, **change), cache)
        assert other.key(SKILL, item) != cached.key(SKILL, item), change
    # a non-agentic item keeps the key it always had (existing journals stay valid)
    plain = Item("p", "hi")
    from skillgit.llm.cache import student_key
    assert cached.key(SKILL, plain) == student_key(cached.identity, SKILL, plain, 0)


def test_a_repo_workspace_key_follows_the_commit_but_not_a_commit_of_the_skill_alone(project):
    cached = CachedStudent(_agent(project, MAKE_DONE), CallCache(None))
    item = _item(project, repo=True)
    first = cached.key(SKILL, item)
    (project / "skill" / "SKILL.md").write_text(SKILL + "RULE: more\n")
    git(project, "commit", "-qam", "skill only")
    assert cached.key(SKILL, item) == first  # the workspace never holds the committed skill
    (project / "repos" / "app" / "app.txt").write_text("new code\n")
    git(project, "commit", "-qam", "code")
    assert cached.key(SKILL, item) != first


def test_train_new_after_breaking_every_verifier_is_not_answered_from_the_journal(project):
    """The audit's repro through the real CLI: every verifier changed to `false` and committed, `train --new`
    must not report the cached seed score."""
    rows = [{"id": f"t{i}", "prompt": f"make done.txt ({i})", "workspace": {"fixture": "repos/app"},
             "verify": {"command": "test -f done.txt", "result": "exit_code", "timeout_s": 30}} for i in range(4)]
    argv = json.dumps([sys.executable, "-c", MAKE_DONE])
    agentic_tasks(project, rows, f"{{preset: generic, output: text, argv: {argv}}}", workers=2, batch_size=2)

    def seed_val() -> str:
        proc = run_cli("train", "--new", "--events", cwd=project, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        found = re.search(r"seed val ([0-9.]+)", proc.stderr) or re.search(r'"val": ?([0-9.]+)', proc.stderr)
        assert found, proc.stderr[-2000:]
        return found.group(1)

    assert float(seed_val()) == 1.0
    (project / "tasks.jsonl").write_text((project / "tasks.jsonl").read_text().replace("test -f done.txt", "false"))
    git(project, "commit", "-qam", "every verifier fails")
    assert float(seed_val()) == 0.0


# ---------------------------------------------------------------------------------------------- 2. PWD
def test_agent_setup_and_verifier_see_the_workspace_as_pwd_not_the_folder_skillgit_started_in(project, tmp_path):
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    env = {**os.environ, "PWD": str(decoy), "OLDPWD": str(decoy)}
    code = "import os\nopen(os.path.join(os.environ['PWD'], 'done.txt'), 'w').write('ok')\nprint('ok')"
    item = _item(project, setup=('touch "$PWD/setup.txt"',), verify='test -f "$PWD/done.txt" -a -f setup.txt')
    reply = _agent(project, code, env=env).run(SKILL, item)
    assert reply.score is not None and reply.score.hard == 1.0, reply.score
    assert list(decoy.iterdir()) == []


# ---------------------------------------------------------------------------------------------- 3. package files
def test_the_installed_package_keeps_binary_assets_byte_exact_and_scripts_executable(project):
    code = """\
        import os, glob
        root = glob.glob('.skill/*')[0]
        data = open(root + '/assets/logo.bin', 'rb').read()
        print(len(data), data[-3:].hex(), os.access(root + '/scripts/run.sh', os.X_OK),
              os.access(root + '/SKILL.md', os.X_OK), open(root + '/references/new.md').read().strip())
        open('done.txt', 'w').write('ok')
        """
    from skillgit.store import Store

    bundle = Store.open(project, "skill", "main").read_skill()
    assert "logo.bin" not in bundle  # binary assets never reach a prompt...
    candidate = package.parse(bundle).with_file("references/new.md", "# New\n").bundle()
    reply = _agent(project, code).run(candidate, _item(project))
    assert reply.text.strip() == "259 fffe00 True False # New"  # ...but do reach the agent's workspace


def test_package_write_prunes_what_an_earlier_export_left_and_keeps_modes(project, tmp_path):
    repo = GitRepo.open(project)
    tree = package.tree_files(repo, "main", "skill")
    assert {t.path: t.mode for t in tree}["scripts/run.sh"] == "100755"
    dest = tmp_path / "out"
    (dest / "references").mkdir(parents=True)
    (dest / "references" / "stale.md").write_text("old\n")
    bundle = package.bundle({"SKILL.md": SKILL, "scripts/run.sh": "#!/bin/sh\necho run\n"})
    package.write(dest, bundle, tree, prune=True)
    assert not (dest / "references").exists()
    assert (dest / "assets" / "logo.bin").read_bytes() == (project / "skill" / "assets" / "logo.bin").read_bytes()
    assert stat.S_IMODE((dest / "scripts" / "run.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((dest / "SKILL.md").stat().st_mode) == 0o644


# ---------------------------------------------------------------------------------------------- 4. size budgets
def test_size_budgets_skill_md_apart_from_references_and_never_blocks_every_candidate():
    small = package.bundle({"SKILL.md": "# S\n" + "rule\n" * 10, "references/big.md": "x" * 40_000})
    assert guards.size(small, 5000, 1024) is None  # a 10k-token reference is read on demand, not loaded
    assert "SKILL.md" in (guards.size(package.bundle({"SKILL.md": "x" * 30_000}), 5000, 1024) or "")
    assert "references/huge.md" in (guards.size(package.bundle({"SKILL.md": "# S\n", "references/huge.md":
                                                                "x" * 100_000}), 5000, 1024) or "")
    over = package.bundle({"SKILL.md": "x" * 30_000})
    assert guards.over_budget(over, 5000, 1024)  # said once, at the start
    shorter = package.bundle({"SKILL.md": "x" * 29_000})
    grown = package.bundle({"SKILL.md": "x" * 31_000})
    assert guards.size(shorter, 5000, 1024, before=over) is None
    assert "too large" in (guards.size(grown, 5000, 1024, before=over) or "")


# ---------------------------------------------------------------------------------------------- 5. repo workspace
def test_a_repo_workspace_holds_the_candidate_not_the_committed_seed(project):
    code = """\
        import os
        print(os.path.exists('skill'), os.path.exists('repos/app/app.txt'))
        open('done.txt', 'w').write('ok')
        """
    reply = _agent(project, code).run(SKILL, _item(project, repo=True))
    assert reply.text.strip() == "False True"
    diff = reply.trace.split("workspace diff:")[1]
    assert "done.txt" in diff and "skill/" not in diff  # the removed seed is not the agent's change
    assert git(project, "status", "--porcelain") == "" and (project / "skill" / "SKILL.md").is_file()


# ---------------------------------------------------------------------------------------------- 6. kill -9
@pytest.mark.parametrize("repo", [False, True], ids=["fixture", "repo-worktree"])
def test_an_agent_left_running_by_a_killed_train_is_killed_by_the_next_sweep(project, tmp_path, repo):
    marker = tmp_path / "agent.pid"
    runner = tmp_path / "runner.py"
    runner.write_text(textwrap.dedent(f"""\
        import os, sys
        from pathlib import Path
        from skillgit.agentic.student import AgentStudent
        from skillgit.config import CommandCfg
        from tests.test_agentic_more import _item
        code = "import os, time\\nopen({str(marker)!r}, 'w').write(str(os.getpid()))\\ntime.sleep(300)"
        project = Path({str(project)!r})
        AgentStudent(CommandCfg(preset="generic", argv=(sys.executable, "-c", code), output="text", timeout_s=600,
                                confine="off"),
                     project_root=project, model=None, env=dict(os.environ), skill_path="skill",
                     skill_branch="main").run("# s\\n", _item(project, repo={repo}))
        """))
    here = str(Path(__file__).parents[1])
    proc = subprocess.Popen([sys.executable, str(runner)], cwd=here,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])})
    deadline = time.monotonic() + 60
    while not marker.exists() or not marker.read_text():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    agent_pid = int(marker.read_text())
    proc.send_signal(signal.SIGKILL)  # train dies; its agent lives on in its own session
    proc.wait()
    workspaces = Workspaces(GitRepo.open(project), skill_path="skill")
    folders = list(workspaces.root.iterdir())  # the killed run's pool: workspace 1 records the agent's group
    assert len(folders) == 1 and (folders[0] / "1" / PGID_FILE).read_text().strip() == str(agent_pid)
    assert Path(f"/proc/{agent_pid}").exists()
    assert len(git(project, "worktree", "list").splitlines()) == 1  # a pooled workspace is no worktree of ours
    assert workspaces.sweep() == 1
    assert not Path(f"/proc/{agent_pid}").exists() or "Z" in Path(f"/proc/{agent_pid}/stat").read_text().split()[2]
    assert not workspaces.root.exists()  # the empty root goes too
    assert len(git(project, "worktree", "list").splitlines()) == 1 and git(project, "status", "--porcelain") == ""


def test_the_sweep_leaves_a_process_that_merely_reuses_the_recorded_pid_alone(project, tmp_path):
    workspaces = Workspaces(GitRepo.open(project))
    folder = workspaces.root / "999999-deadbeef0000"
    folder.mkdir(parents=True)
    bystander = subprocess.Popen(["sleep", "30"], cwd=tmp_path, start_new_session=True)
    try:
        time.sleep(0.1)
        (folder / PGID_FILE).write_text(str(bystander.pid))
        os.utime(folder / PGID_FILE, (time.time() - 3600, time.time() - 3600))  # written long before it started
        assert workspaces.sweep() == 1
        assert bystander.poll() is None  # not ours: alive
    finally:
        bystander.kill()
        bystander.wait()


# ---------------------------------------------------------------------------------------------- 7. giving up
def test_an_agent_that_gives_up_is_still_verified_and_the_error_reaches_the_feedback(project):
    gave_up = _agent(project, "open('done.txt', 'w').write('ok')\nimport sys\nprint('tired', file=sys.stderr)\n"
                              "sys.exit(1)").run(SKILL, _item(project))
    assert gave_up.score is not None and gave_up.score.hard == 1.0
    assert "the agent stopped: exited with status 1: tired" in gave_up.score.feedback
    assert "the agent stopped" in gave_up.trace
    max_turns = json.dumps({"type": "result", "subtype": "error_max_turns", "is_error": True, "num_turns": 3})
    out = _agent(project, f"print({max_turns!r})\nimport sys\nsys.exit(1)", output="claude-stream").run(
        SKILL, _item(project))
    assert out.score is not None and out.score.hard == 0.0 and "error_max_turns" in out.score.feedback
    for said in ("Error: 401 Unauthorized: invalid api key", "API Error: 529 overloaded"):
        with pytest.raises(LLMError) as err:
            _agent(project, f"import sys\nprint({said!r}, file=sys.stderr)\nsys.exit(1)").run(SKILL, _item(project))
        assert err.value.kind == "agent" and err.value.retryable == ("529" in said)
    # numbers that are no HTTP status: a traceback's line, a temporary folder's name (CI's /tmp/pytest-of-root/
    # pytest-504/ made an agent's real failure an "API outage", retried and never scored)
    crashed = _agent(project, "import sys\nprint('Traceback (most recent call last):\\n  File \"/tmp/pytest-504/"
                              "run-401/a.py\", line 503, in <module>\\nFileNotFoundError: tool.sh', file=sys.stderr)"
                              "\nsys.exit(1)").run(SKILL, _item(project))
    assert crashed.score is not None and "line 503" in crashed.score.feedback


# ---------------------------------------------------------------------------------------------- 8. setup, flags
def test_a_setup_failure_is_unknown_and_not_run_again(project, tmp_path):
    counter = tmp_path / "setups"
    student = _agent(project, MAKE_DONE)
    item = _item(project, setup=(f"echo x >> {counter}; exit 3",))
    for _ in range(3):
        with pytest.raises(LLMError) as err:
            student.run(SKILL, item)
        assert err.value.kind == "unknown" and not err.value.retryable
    assert counter.read_text().count("x") == 1
    student.workspaces.close()
    assert not student.workspaces.root.exists()  # no empty /tmp/skillgit-ws-<hash> left behind


def test_train_has_a_keep_workspaces_flag(project):
    proc = run_cli_inproc("train", "--help", cwd=project)
    assert "--keep-workspaces" in proc.stdout


# ---------------------------------------------------------------------------------------------- 9. presets
def _stub(bin_dir: Path, name: str, fixture: str) -> None:
    """A stub CLI named `name` that checks its flags, edits the workspace and prints the captured output."""
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / name
    script.write_text(f"#!{sys.executable}\n" + textwrap.dedent(f"""\
        import sys, os
        open(os.path.join(os.environ['PWD'], 'done.txt'), 'w').write(' '.join(sys.argv[1:]))
        sys.stdout.write(open({str(FIXTURES / fixture)!r}).read())
        """))
    script.chmod(0o755)


@pytest.mark.parametrize("preset,fixture", [("copilot", "copilot-prompt.jsonl"), ("opencode", "opencode-run.jsonl")])
def test_copilot_and_opencode_presets_run_through_the_agent_student(project, tmp_path, preset, fixture):
    bin_dir = tmp_path / "bin"
    _stub(bin_dir, preset, fixture)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PWD": str(tmp_path)}
    student = AgentStudent(CommandCfg(preset=preset, timeout_s=60), project_root=project, model="m1", env=env,
                           skill_path="skill", skill_branch="main")
    reply = student.run(SKILL, _item(project, verify="grep -q 'make done.txt' done.txt"))
    assert reply.score is not None and reply.score.hard == 1.0
    assert "→" in reply.trace  # the tool calls of the captured output
    assert not (tmp_path / "done.txt").exists()


# accepted by the CLI but not listed by its --help (observed on the real CLI: docs/AGENT_CLIS.md, claude row (d))
HIDDEN_FLAGS = {"claude": {"--max-turns"}}


def _flags(help_text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])(-{1,2}[A-Za-z][\w-]*)", help_text))


@pytest.mark.parametrize("preset,helps", [("claude", ["claude-help.txt"]),
                                          ("codex", ["codex-help.txt", "codex-exec-help.txt"]),
                                          ("copilot", ["copilot-help.txt"]),
                                          ("opencode", ["opencode-help.txt", "opencode-run-help.txt"])])
def test_every_preset_flag_is_in_the_captured_help_of_its_cli(preset, helps):
    known = set().union(*(_flags((FIXTURES / h).read_text()) for h in helps)) | HIDDEN_FLAGS.get(preset, set())
    agent = registry.get(preset)
    assert agent.student is not None
    argv = [*agent.student.argv, *agent.student.model_args, *agent.profile.args,
            *(("--max-turns",) if preset == "claude" else ())]
    used = {a.split("=", 1)[0] for a in argv if a.startswith("-") and a != "--"}
    assert used and used <= known, used - known


def test_store_export_of_a_package_keeps_assets_and_modes_and_prunes_an_earlier_export(project, tmp_path):
    from skillgit.store import Store

    store = Store.open(project, "skill", "main")
    dest = tmp_path / "exported"
    store.export("main", dest)
    assert (dest / "assets" / "logo.bin").read_bytes() == (project / "skill" / "assets" / "logo.bin").read_bytes()
    assert stat.S_IMODE((dest / "scripts" / "run.sh").stat().st_mode) == 0o755
    (dest / "references").mkdir()
    (dest / "references" / "newer.md").write_text("from a later step\n")
    store.export("main", dest)  # an older step into the same folder: nothing of the later one stays behind
    assert not (dest / "references").exists() and (dest / "SKILL.md").read_text() == SKILL


def test_every_agent_runs_marked_as_skillgits_own_session(project):
    """SKILLGIT_REPLAY=1 reaches the agent (its hooks, like our SessionEnd hook, skip recording) and its
    workspace sits under the folder harvest recognises as a replay's."""
    from skillgit.agentic.workspace import Workspaces
    from skillgit.sleep.model import REPLAY_WORKSPACE

    code = "import os\nprint(os.environ.get('SKILLGIT_REPLAY'))\nopen('done.txt', 'w').write('ok')"
    assert _agent(project, code).run(SKILL, _item(project)).text.strip() == "1"
    assert REPLAY_WORKSPACE.search(str(Workspaces(GitRepo.open(project)).root / "123-abc" / "ws"))

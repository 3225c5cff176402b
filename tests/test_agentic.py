"""Agentic tasks: skill packages, throwaway workspaces, real subprocess agents (the simulated coding agent and stub
CLIs in each preset's output format), real pytest verifiers; unknown rollouts excluded from the gate."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skillgit import package, patch
from skillgit.agentic import trace, verify
from skillgit.agentic.spec import AgenticSpec, Verify
from skillgit.agentic.student import AgentStudent
from skillgit.config import CommandCfg
from skillgit.llm.base import LLMError
from skillgit.resources import example_dir
from skillgit.types import Edit, Item
from tests.conftest import git, run_cli, run_cli_inproc

EXAMPLE = example_dir("agentic")
FIXTURES = Path(__file__).parent / "fixtures" / "agent_cli"


@pytest.fixture
def project(tmp_path) -> Path:
    """The agentic example as a repository of its own."""
    folder = tmp_path / "proj"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("reference_skill", "__pycache__"))
    git(folder, "init", "-q", "-b", "main")
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", "example")
    return folder


def _item(project: Path, task_id: str) -> Item:
    from skillgit.tasks import load_items

    return next(i for i in load_items(project / "tasks.jsonl") if i.id == task_id)


def _skill(project: Path, which: str = "skill") -> str:
    root = (EXAMPLE / which)
    return package.bundle({p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*") if p.is_file()})


def _student(project: Path, preset: str = "simulated", **cfg) -> AgentStudent:
    env = {k: v for k, v in os.environ.items()}
    return AgentStudent(CommandCfg(preset=preset, timeout_s=60, **cfg), project_root=project, model=None, env=env)


def _worktrees(folder: Path) -> list[str]:
    return [line for line in git(folder, "worktree", "list", "--porcelain").splitlines() if line.startswith("worktree")]


# ---------------------------------------------------------------------------------------------- packages
def test_a_bundle_round_trips_and_edits_name_their_file():
    files = {"SKILL.md": "---\nname: x\ndescription: y\n---\n# Skill\n\n<file path=\"evil\">\n",
             "references/a.md": "# A\n</file>\n"}
    ordered = tuple(sorted(files.items(), key=lambda kv: kv[0] != "SKILL.md"))
    assert package.parse(package.bundle(files)).files == ordered
    edits, problems = patch.parse_edits({"edits": [
        {"op": "append", "file": "references/new.md", "content": "New rule.", "target": "", "rationale": "r"},
        {"op": "append", "file": "../escape.md", "content": "x", "target": "", "rationale": "r"},
        {"op": "append", "file": "SKILL.md", "content": "See references/new.md.", "target": "", "rationale": "r"}]})
    assert [e.file for e in edits] == ["references/new.md", ""] and "invalid file path" in problems[0]
    new, results = patch.apply_to_skill(package.bundle(files), edits + [Edit("append", "z", file="src/x.py")])
    assert [r.status for r in results] == ["applied", "applied", "skipped_file_not_found"]
    assert package.parse(new).get("references/new.md") == "New rule.\n"
    assert "See references/new.md." in (package.parse(new).get("SKILL.md") or "")


def test_the_store_trains_a_package_as_a_tree(project):
    from skillgit.store import Store

    store = Store.open(project, "skill", "main")
    assert store.is_package and package.is_bundle(store.read_skill())
    bundle = package.parse(store.read_skill()).with_file("references/extra.md", "# Extra\n").bundle()
    cand = store.propose(bundle, run="r1", step=1, subject="s", body="", trailers={}, note=[])
    store.decide(cand, accept=True, reason="better", score_before=0.0, score_after=0.5)
    assert (project / "skill" / "references" / "extra.md").read_text() == "# Extra\n"
    assert git(project, "status", "--porcelain") == ""
    assert "skill/references/extra.md" in store.diff(cand.parent, cand.sha)
    out = store.export("main", project.parent / "exported")
    assert (out / "references" / "extra.md").is_file() and (out / "SKILL.md").is_file()


# ---------------------------------------------------------------------------------------------- rollouts
def test_the_simulated_agent_works_in_a_throwaway_workspace_and_is_verified(project):
    student = _student(project)
    before_status = git(project, "status", "--porcelain")
    weak = student.run(_skill(project), _item(project, "textkit-slugify"))
    strong = student.run(_skill(project, "reference_skill"), _item(project, "textkit-slugify"))
    assert weak.score is not None and strong.score is not None
    assert weak.score.hard == 0.0 and strong.score.hard == 1.0 and strong.score.soft == 1.0
    assert "passed" in strong.score.feedback
    assert "workspace diff:" in strong.trace and "+++ b/textkit/strings.py" in strong.trace
    assert ".claude/skills" not in strong.trace.split("workspace diff:")[1]  # the installed skill is not in the diff
    assert "→ Edit" in strong.trace or "→ Write" in strong.trace
    assert set(strong.timings) == {"setup", "agent", "verify"}
    # nothing of the user's checkout changed; the pool is gone once closed
    assert git(project, "status", "--porcelain") == before_status
    assert len(_worktrees(project)) == 1
    student.workspaces.close()
    assert not student.workspaces.root.exists()


def test_a_repo_workspace_is_a_git_worktree_at_the_revision_and_is_removed(project):
    # a task on the project repository itself (at HEAD), with a setup step and an exit-code verifier
    row = {"id": "own", "prompt": "Add a function `slugify(text)` to `textkit/strings.py` that returns `text` in "
           "lower case with every run of characters other than letters and digits replaced by a single hyphen.",
           "workspace": {"repo": ".", "rev": "HEAD"}, "setup": ["test -f tasks.jsonl"],
           "verify": {"command": "test -d repos", "result": "exit_code", "timeout_s": 30}}
    item = Item("own", row["prompt"], metadata={k: row[k] for k in ("workspace", "setup", "verify")})
    seen = []
    student = _student(project, preset="generic", argv=(sys.executable, "-c",
                       "import os,subprocess;print(subprocess.run(['git','worktree','list'],capture_output=True,"
                       "text=True).stdout.count('detached'))"), output="text")
    reply = student.run("# skill\n", item)
    seen.append(reply.text)
    assert reply.score is not None and reply.score.hard == 1.0
    assert seen == ["1"]  # the agent ran inside a detached worktree of the project
    assert len(_worktrees(project)) == 1 and git(project, "status", "--porcelain") == ""


def test_setup_failures_and_verifier_timeouts_are_unknown_not_failures(project):
    student = _student(project)
    bad_setup = _item(project, "textkit-slugify")
    bad_setup = Item(bad_setup.id, bad_setup.input, metadata={**bad_setup.metadata, "setup": ["exit 3"]})
    with pytest.raises(LLMError) as err:
        student.run(_skill(project), bad_setup)
    assert err.value.kind == "unknown" and "setup" in err.value.message
    slow = _item(project, "textkit-slugify")
    slow = Item(slow.id, slow.input, metadata={**slow.metadata, "verify": {"command": "sleep 30", "timeout_s": 1,
                                                                             "result": "exit_code"}})
    started = time.monotonic()
    with pytest.raises(LLMError) as err:
        student.run(_skill(project), slow)
    assert err.value.kind == "unknown" and "timed out" in err.value.message and time.monotonic() - started < 20
    # in a rollout both are unknown trajectories: excluded from scores and reflection, never failures
    from skillgit.loop.stages import rollout

    trajs = rollout(student, _skill(project), [bad_setup, slow], lambda i, o: None, workers=2)  # type: ignore[arg-type]
    assert all(not t.ok and t.score is None and t.error for t in trajs)


def test_verifier_result_kinds(tmp_path):
    (tmp_path / "r.xml").write_text('<testsuite tests="4" failures="1" errors="0" skipped="0"/>')
    env = dict(os.environ)
    assert verify.verify(Verify("true", 10, "exit_code"), tmp_path, env).hard == 1.0
    junit = verify.verify(Verify("true", 10, "junit:r.xml"), tmp_path, env)
    assert (junit.hard, junit.soft) == (0.0, 0.75)
    as_json = verify.verify(Verify("echo '{\"passed\": 3, \"total\": 4}'", 10, "json"), tmp_path, env)
    assert (as_json.hard, as_json.soft) == (0.0, 0.75)
    with pytest.raises(verify.Unknown):  # pytest's "no tests ran" (exit 5) is not a verdict
        verify.verify(Verify("python -m pytest -q nothing_here.py", 30, "pytest"), tmp_path, env)


def test_spec_errors_name_the_task_and_the_key(project):
    item = Item("t1", "do it", metadata={"workspace": {"fixture": "missing"}, "verify": {"command": "true"},
                                         "task_dir": str(project)})
    with pytest.raises(Exception, match="task 't1': workspace.fixture 'missing'"):
        AgenticSpec.from_item(item, project)


# ---------------------------------------------------------------------------------------------- traces
def test_traces_of_the_real_clis_output_formats():
    claude = trace.parse((FIXTURES / "claude-stream.jsonl").read_text(), "claude-stream")
    assert claude.final and any(s.kind == "call" for s in claude.steps) and claude.usage.calls == 1
    codex = trace.parse((FIXTURES / "codex-exec.jsonl").read_text(), "codex-json")
    assert codex.final and any(s.name == "shell" for s in codex.steps)
    copilot = trace.parse((FIXTURES / "copilot-prompt.jsonl").read_text(), "copilot-json")
    assert any(s.kind == "call" for s in copilot.steps)
    opencode = trace.parse((FIXTURES / "opencode-run.jsonl").read_text(), "opencode-json")
    assert opencode.final and any(s.kind == "call" for s in opencode.steps)


def test_the_teachers_trace_keeps_indentation_and_newlines():
    """Issue 23 item 12: short tool inputs and results were flattened to one line (Python indentation became one
    space, a heredoc one line); the teacher must read them as the agent wrote them."""
    heredoc = "python - <<'EOF'\ndef f(x):\n    if x:\n        return 1\nEOF"
    result = "def f(x):\n    if x:\n        return 1\n"
    stream = "\n".join(json.dumps(e) for e in (
        {"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                                                       "input": {"command": heredoc, "description": "run"}}]}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": result}]}},
        {"type": "result", "subtype": "success", "result": "done"}))
    shown = trace.parse(stream, "claude-stream").render()
    assert "command:\n" + heredoc in shown  # the heredoc keeps its lines and its indentation
    assert "← def f(x):\n    if x:\n        return 1" in shown
    codex = json.dumps({"type": "item.completed", "item": {"id": "i1", "type": "command_execution",
                                                          "command": "bash -lc 'cat <<EOF\n  a\n    b\nEOF'",
                                                          "aggregated_output": "  a\n    b\n", "exit_code": 0}})
    shown = trace.parse(codex, "codex-json").render()
    assert "→ shell: bash -lc 'cat <<EOF\n  a\n    b\nEOF'" in shown and "←   a\n    b" in shown
    # a one-line input stays compact JSON; a long one is still cut in the middle
    one_line = json.dumps({"type": "assistant", "message": {"content": [
        {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "a  b.py"}}]}})
    assert '→ Read: {"file_path": "a  b.py"}' in trace.parse(one_line, "claude-stream").render()
    long = trace.parse(json.dumps({"type": "item.completed", "item": {
        "type": "command_execution", "command": "x" * 1000, "aggregated_output": ""}}), "codex-json").render()
    assert "chars…]" in long and len(long.splitlines()[0]) < 400


def test_presets_build_the_documented_argv(project):
    values = {"prompt": "P", "prompt_file": "/f", "workspace": "/w", "model": "m", "name": "n", "seed": "0",
              "sample": "0", "permission_mode": "acceptEdits", "sandbox": "workspace-write"}
    claude = AgentStudent(CommandCfg(preset="claude", max_turns=5), project_root=project, model="sonnet",
                          env=dict(os.environ))
    argv = claude.argv(values)
    assert argv[:2] == ["claude", "-p"] and argv[-4] == "--allowedTools"
    assert argv[-2:] == ["--", "P"]  # `--` ends the variadic list, and a prompt can never read as an option
    assert "--max-turns" in argv and "bypassPermissions" not in argv and "--model" in argv
    # hermetic by default: no MCP server but those given, no user settings (hooks, plugins)
    assert "--strict-mcp-config" in argv and argv[argv.index("--setting-sources") + 1] == "project,local"
    user = AgentStudent(CommandCfg(preset="claude", profile="user"), project_root=project, model=None,
                        env=dict(os.environ))
    assert "--strict-mcp-config" not in user.argv(values) and "--model" not in user.argv(values)


# ---------------------------------------------------------------------------------------------- training
@pytest.mark.slow
def test_demo_agentic_trains_a_package_offline_and_leaves_nothing_behind(tmp_path):
    # 3 steps, not the demo's 6: seed 0 accepts step 2 (SKILL.md) and step 3 (a new references/ file), which is
    # all this test checks (the other 3 steps cost ~10 of its ~54 CPU-s; scoring val and test is most of the rest).
    proc = run_cli("demo", "--agentic", "--dir", str(tmp_path / "d"), "--seed", "0", "--steps", "3", cwd=tmp_path,
                   timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("test hard:"))
    before, after = (float(v) for v in line.split(":")[1].split("(")[0].split("→"))
    # The gate decides on val, so the demo must show a gated val gain; the test split (reported, never decided on)
    # must not get worse. Its gain depends on the simulated teacher's draws, which hash the whole prompt: measured
    # with the same code after 6 steps, seeds 0 / 1 / 2 gave test 0 → 0 / 1.0 / 0.5; seed 0 after 3 steps, 0 → 1.0.
    rows = {r.split("│")[1].strip(): r.split("│") for r in proc.stdout.splitlines() if r.startswith("│")}
    assert float(rows["best"][2]) > float(rows["seed"][2]) and "accepted" in proc.stdout
    assert after >= before
    # a learned step (not the example's own first commit, which adds the package) touched a references/ file
    root = git(tmp_path / "d", "rev-list", "--max-parents=0", "main")
    changed = git(tmp_path / "d", "log", "--format=", "--name-only", "main", "--not", root)
    assert "skill/references/" in changed, changed
    assert len(_worktrees(tmp_path / "d")) == 1 and git(tmp_path / "d", "status", "--porcelain") == ""
    status = json.loads(run_cli_inproc("status", "--json", cwd=tmp_path / "d").stdout)
    assert set(status["rollout_seconds"]) == {"setup", "agent", "verify"}  # time accounting per phase
    # Every gate note names the student it measured: the agent CLI's version (a change between the incumbent's
    # scoring and the candidate's is drift, refused by the gate).
    fingerprints = []
    for line in git(tmp_path / "d", "notes", "--ref=refs/notes/skillgit", "list").splitlines():
        for record in git(tmp_path / "d", "notes", "--ref=refs/notes/skillgit", "show", line.split()[1]).splitlines():
            data = json.loads(record)
            if data.get("kind") == "gate":
                fingerprints += [(data.get(k) or {}).get("fingerprint") for k in ("val", "base")]
                fingerprints += [c.get("fingerprint") for c in data.get("controls") or ()]
    versions = {f.get("version") for f in fingerprints if isinstance(f, dict)}
    assert versions and all(v for v in versions), fingerprints[:3]


@pytest.mark.slow
def test_a_killed_agentic_run_resumes_with_no_leftover_workspace(project):
    env = dict(os.environ)
    # one step, one sample per val item, no test-split scoring at the end: what is checked is the workspaces a kill
    # leaves and the resume, not the scores
    small = ("--set", "train.max_steps=1", "--set", "evaluation.gate_repeats=1", "--set", "evaluation.eval_test=false")
    first = subprocess.Popen([sys.executable, "-m", "skillgit", "train", "--events", *small],
                             cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    assert first.stderr is not None
    for line in first.stderr:  # kill it while agents work in their workspaces
        if '"stage": "gate"' in line or '"stage": "reflect"' in line:
            break
    first.send_signal(signal.SIGKILL)
    first.wait()
    again = run_cli("train", *small, cwd=project, timeout=900)
    assert again.returncode == 0, again.stderr[-2000:]
    assert len(_worktrees(project)) == 1 and git(project, "status", "--porcelain") == ""
    from skillgit.agentic.workspace import Workspaces
    from skillgit.store.git import GitRepo

    root = Workspaces(GitRepo.open(project)).root
    assert not root.exists() or not any(root.iterdir())
    assert json.loads(run_cli_inproc("status", "--json", cwd=project).stdout)["status"] == "finished"

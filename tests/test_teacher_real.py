"""The REAL `claude` CLI as the agent teacher (`model.teacher_backend: agent`, preset claude), offline against the
scripted Anthropic-style server on 127.0.0.1 (tests/agent_server.py): a teacher step runs end to end — claude reads
the evidence, tries a training task with `skillgit-try`, writes a reference file and a line in SKILL.md with real
Bash calls, skillgit turns that into edits and gates them — and no prompt the teacher sent carries a val item (a
marker planted in every val task is grepped in every request the server received). Skipped when the CLI is not
installed (`python -m tests.agent_clis install`)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from skillgit.project import open_project
from skillgit.tasks import load_splits
from tests.agent_clis import claude_env, find_cli, prepare_claude_home
from tests.agent_server import AgentServer, Received, Turn, bash, text
from tests.conftest import git

pytestmark = pytest.mark.agent_cli

CLAUDE = find_cli("claude")
MARKER = "ZZQVALMARKERQZZ"
TASK = re.compile(r"Create the file (\w+)\.txt containing the word (\w+)")
TEACHER = "You are the teacher of a skill package"


def _is_teacher(request: Received) -> bool:
    return TEACHER in request.messages_text()


def _answer(train_id: str):
    def answer(request: Received) -> Turn:
        body = json.dumps(request.body)
        results = body.count('"tool_result"')
        if _is_teacher(request):  # the teacher's session: read, try, write a reference, point SKILL.md at it
            steps = [bash("cat evidence/README.md evidence/limits.json evidence/trajectories/*.md", "read"),
                     bash(f"skillgit-try {train_id}", "try a training task"),
                     bash("mkdir -p skill/references && printf '# Files\\n\\nWrite the word alone, no newline.\\n' "
                          "> skill/references/files.md && printf '\\nSee references/files.md.\\n' >> skill/SKILL.md",
                          "write")]
            return steps[results] if results < len(steps) else text("Added references/files.md and a pointer.")
        if results:
            return text("Done: the file is written.")
        found = TASK.search(request.messages_text())
        if not found:
            return text("I do not understand the task.")
        return bash(f"printf %s {found.group(2)} > {found.group(1)}.txt", "write")
    return answer


def _project(root: Path) -> tuple[list[str], list[str]]:
    (root / "fixture").mkdir(parents=True)
    (root / "fixture" / "README.md").write_text("# app\n")
    (root / "skill").mkdir()
    (root / "skill" / "SKILL.md").write_text("---\nname: files\ndescription: How to write files here.\n---\n"
                                             "# Files\n\nWrite exactly what is asked.\n")
    claude = "{preset: claude, timeout_s: 180, allowed_tools: [Bash, Read]}"
    (root / "skillgit.yaml").write_text(f"""\
skill: {{path: skill, branch: main}}
model:
  teacher_backend: agent
  teacher_model: default
  teacher:
    command: {claude}
  student_backend: agent
  student_model: default
  student:
    command: {claude}
train: {{num_epochs: 1, batch_size: 2, seed: 0}}
optimizer: {{use_slow_update: false, use_meta_skill: false, use_meta_reflect: false}}
evaluation: {{gate_repeats: 1, eval_test: false}}
env: {{tasks: tasks.jsonl, split_ratio: "1:1:0", workers: 2}}
""")
    rows = [{"id": f"t{i}", "prompt": f"Create the file f{i}.txt containing the word w{i}.",
             "workspace": {"fixture": "fixture"},
             "verify": {"command": f'test "$(cat f{i}.txt)" = w{i}', "result": "exit_code", "timeout_s": 30}}
            for i in range(4)]
    (root / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    git(root, "init", "-q", "-b", "main")
    splits = load_splits(open_project(root, None, []).config.env, root)
    val = [i.id for i in splits.val]
    for row in rows:
        if row["id"] in val:
            row["prompt"] += f" ({MARKER})"
    (root / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "project")
    return [i.id for i in splits.train], val


@pytest.mark.skipif(CLAUDE is None, reason="the claude CLI is not installed (python -m tests.agent_clis install)")
def test_the_real_claude_as_teacher_edits_the_package_and_never_sees_a_val_item(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    train, val = _project(project)
    home = prepare_claude_home(tmp_path / "home")
    with AgentServer(default=_answer(train[0])) as server:
        env = {**os.environ, **claude_env(home, server.base_url)}
        env["PATH"] = f"{Path(str(CLAUDE)).parent}{os.pathsep}{env.get('PATH', '')}"
        proc = subprocess.run([sys.executable, "-m", "skillgit", "train", "--json", "--set", "train.max_steps=1"],
                              cwd=project, env=env, capture_output=True, text=True, timeout=900)
        requests = list(server.requests)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["steps"] == 1 and result["accepted"] + result["rejected"] == 1
    teacher = [r for r in requests if _is_teacher(r)]
    assert len(teacher) >= 4  # read, try, write, final: claude really ran the teacher's session
    teacher_text = "\n".join(json.dumps(r.body) for r in teacher)
    assert MARKER not in teacher_text and not any(f'"{i}"' in teacher_text for i in val)
    assert "PASSED" in teacher_text  # skillgit-try answered claude's Bash call with the train task's verdict
    # the control: the marker did reach the server, in the student's val rollouts (the grep above can fail)
    assert any(MARKER in json.dumps(r.body) for r in requests if not _is_teacher(r))
    usage = result["usage"]
    assert usage["by_stage"]["agent"]["calls"] == 1
    assert usage["by_stage"].get("try", {}).get("calls", 0) + usage["saved_calls"].get("try", 0) == 1
    # skillgit turned claude's package into edits, gated and committed them like any candidate
    sha = git(project, "rev-parse", "main") if result["accepted"] else git(
        project, "rev-parse", f"rejected/{result['run']}/0001^{{commit}}")
    assert git(project, "show", f"{sha}:skill/references/files.md") == "# Files\n\nWrite the word alone, no newline."
    notes = [json.loads(x) for x in git(project, "notes", "--ref", "skillgit", "show", sha).splitlines() if x]
    candidate = next(n for n in notes if n["kind"] == "candidate")
    assert candidate["mode"] == "agent"
    assert "references/files.md" in candidate["agent"]["summary"] and candidate["agent"]["tries"] == [
        {"item": train[0], "code": 0}]
    assert {r["edit"]["file"] for r in candidate["apply"] if r["status"] == "applied"} == {
        "", "references/files.md"}
    assert any(n["kind"] == "gate" for n in notes)
    assert git(project, "status", "--porcelain") == ""

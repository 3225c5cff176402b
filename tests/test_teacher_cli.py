"""The agent teacher through the real CLI (`skillgit train`, `skillgit demo`): evidence without val items, notes with
the agent's transcript summary, the ledger, the journal (skillgit/teacher)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from skillgit.cli.demo import AGENT_TEACHER, create_project
from skillgit.project import open_project
from skillgit.tasks import load_splits
from tests.conftest import git

MARKER = "ZZQVALMARKERQZZ"


def _cli(args: list[str], cwd: Path, tmp: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "TMPDIR": str(tmp)}  # the agent teacher's kept folders land here
    return subprocess.run([sys.executable, "-m", "skillgit", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)


def _project(root: Path) -> list[str]:
    """A text-world project whose teacher is the simulated agent teacher, with a marker in every val item."""
    create_project(root, seed=5)
    config = (root / "skillgit.yaml").read_text(encoding="utf-8")
    (root / "skillgit.yaml").write_text(
        config.replace("  teacher_backend: simulated\n  teacher_model: sim-teacher\n", AGENT_TEACHER),
        encoding="utf-8")
    val = {i.id for i in load_splits(open_project(root, None, []).config.env, root).val}
    lines = []
    for line in (root / "tasks.jsonl").read_text(encoding="utf-8").splitlines():
        task = json.loads(line)
        if task["id"] in val:
            task["input"] = f"{task['input']}; note {MARKER}"
        lines.append(json.dumps(task))
    (root / "tasks.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    git(root, "commit", "-qm", "agent teacher; val marker", "--", "skillgit.yaml", "tasks.jsonl")
    assert val == {i.id for i in load_splits(open_project(root, None, []).config.env, root).val}  # same split
    return sorted(val)


def test_agent_teacher_trains_sees_no_val_item_and_a_resumed_step_replays_it(tmp_path: Path) -> None:
    root, temp = tmp_path / "p", tmp_path / "tmp"
    temp.mkdir()
    val_ids = _project(root)
    # Killed once the agent's step call is done (at the next stage): the call is journaled, the step undecided.
    first = subprocess.Popen([sys.executable, "-m", "skillgit", "train", "--set", "train.max_steps=1", "--events",
                              "--keep-workspaces"], cwd=root, env={**os.environ, "TMPDIR": str(temp)},
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert first.stderr is not None
    stages = []
    for line in first.stderr:
        event = json.loads(line) if line.startswith("{") else {}
        if event.get("event") == "stage":
            stages.append(event["stage"])
            if event["stage"] == "select":
                first.send_signal(signal.SIGKILL)
                break
    first.wait(timeout=60)
    assert stages[-2:] == ["agent", "select"], stages

    done = _cli(["train", "--set", "train.max_steps=2", "--keep-workspaces", "--json"], root, temp)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["steps"] == 2
    # step 1's agent call came from the journal; step 2's was paid, metered as the teacher's
    assert result["usage"]["saved_calls"]["agent"] == 1
    assert result["usage"]["by_stage"]["agent"]["calls"] == 1
    kept = sorted(temp.glob("skillgit-teach-*"))
    assert len(kept) == 2
    seen = [p for folder in kept for p in folder.rglob("*") if p.is_file()]
    assert any(p.match("evidence/trajectories/*.md") for p in seen) and any(p.name == "limits.json" for p in seen)
    for path in seen:  # every file the agent was given or wrote: no val item, by content or by id
        text = path.read_text(encoding="utf-8", errors="replace")
        assert MARKER not in text, path
        assert not any(f'"{i}"' in text for i in val_ids), path
    shown = _cli(["show", "1", "--json"], root, temp)
    assert shown.returncode == 0, shown.stderr
    assert '"agent"' in shown.stdout and "Read " in shown.stdout and '"mode": "agent"' in shown.stdout


@pytest.mark.slow
def test_demo_agentic_with_the_agent_teacher_lands_a_reference_file(tmp_path: Path) -> None:
    """`skillgit demo --agentic --teacher agent` (issue 24): offline, at least one accepted step whose diff touches
    a file other than SKILL.md."""
    done = _cli(["demo", "--agentic", "--teacher", "agent", "--dir", str(tmp_path / "d"), "--steps", "2"],
                tmp_path, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    log = _cli(["log", "--json"], tmp_path / "d", tmp_path)
    entries = json.loads(log.stdout)
    accepted = [e for e in entries if e.get("verdict") == "accepted"]
    assert accepted
    touched = set()
    for entry in accepted:
        touched |= set(git(tmp_path / "d", "diff", "--name-only", f"{entry['sha']}^", entry["sha"], "--").split())
    assert any(path.startswith("skill/") and path != "skill/SKILL.md" for path in touched), touched

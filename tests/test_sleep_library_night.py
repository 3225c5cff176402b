"""A night over a skill library (issue 25; skillgit/sleep/library_night.py) on the offline simulated world — A
SIMULATION OF THE PIPELINE: Claude Code sessions (the documented on-disk shape, read by the real reader) in which a
person had the agent normalise simulated-world records, the agent invoking the `deploy` skill for some and the
`release-notes` skill for others through the Skill tool. The night routes each mined task to the skill its
sessions invoked and trains and gates every library skill in turn, under one budget; `db-migrate`, which no session
invoked, is skipped with its reason. Harvest, mining, routing, the loop, the gate, git and the report are real."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from skillgit.config import SimulatedCfg
from skillgit.sleep import state as S
from skillgit.sleep.mine import read_tasks
from skillgit.sleep.night import NightOptions, run_night
from skillgit.sleep.settings import open_sleep_project
from skillgit.store.git import GitRepo
from skillgit.world import default_skill, generate_tasks
from tests.conftest import git
from tests.test_sleep_harvest import ClaudeSession
from tests.test_sleep_night import answer_pending, natural, night_through_handoff

DATE = "2026-01-03"
SKILLS = ("deploy", "release-notes", "db-migrate")
CONFIG = """\
skill: {path: skills/deploy/SKILL.md, branch: main}
skills:
  deploy: {path: skills/deploy/SKILL.md}
  release-notes: {path: skills/release-notes/SKILL.md}
  db-migrate: {path: skills/db-migrate/SKILL.md}
model:
  teacher_backend: simulated
  student_backend: simulated
  simulated: {seed: 0, num_rules: 6, noise: 0.05}
train: {num_epochs: 2, batch_size: 8, seed: 0}
gradient: {minibatch_size: 4, analyst_workers: 2, merge_batch_size: 4}
optimizer: {learning_rate: 3, min_learning_rate: 1}
evaluation: {gate_metric: hard, gate: strict+per_item}
env: {workers: 4, scorer: {type: exact}}
sleep: {max_steps: 2, sources: [claude]}
"""
FIXED = {"GIT_AUTHOR_DATE": "2026-01-03T03:00:00+00:00", "GIT_COMMITTER_DATE": "2026-01-03T03:00:00+00:00"}


def library_project(root: Path, home: Path) -> Path:
    """Three skills (the world's default skill text each), and sessions: 12 records normalised with `deploy`
    invoked, 12 with `release-notes`; every other one corrected first, each answer accepted."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for name in SKILLS:
        path = root / "skills" / name / "SKILL.md"
        path.parent.mkdir(parents=True)
        path.write_text(default_skill(), encoding="utf-8")
    (root / "skillgit.yaml").write_text(CONFIG, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "a library of three skills")
    items = generate_tasks(SimulatedCfg(seed=0), 24)
    for n, start in enumerate(range(0, 24, 4)):
        skill = SKILLS[n % 2]
        session = ClaudeSession(f"lib-{n}", root, start_minute=n + 1)
        for k, item in enumerate(items[start:start + 4]):
            session.user(item.input).tool("Skill", {"skill": skill}, f"Launching skill: {skill}")
            if k % 2:
                session.say(natural(item)).user("no, that's not our house style, fix the fields")
            session.say(item.expected).user("thanks")
        session.write(home)
    return root


def night_project(root: Path, home: Path, sets: tuple[str, ...] = (), **options):
    sp = open_sleep_project(root, None, list(sets))
    return sp.__class__(sp.project, sp.settings.with_options(home=str(home), **options), sp.data, sp.overrides)


def touched(root: Path, rev: str) -> list[str]:
    return git(root, "diff-tree", "--no-commit-id", "--name-only", "-r", f"{rev}^{{commit}}^",
               f"{rev}^{{commit}}").split()


def test_a_library_night_trains_and_gates_every_skill_on_the_tasks_routed_to_it(tmp_path, cli_inproc):
    home = tmp_path / "home"
    root = library_project(tmp_path / "repo", home)
    main_before = git(root, "rev-parse", "main").strip()

    record = run_night(night_project(root, home), NightOptions(DATE))

    assert record.status == "finished", record.reason
    assert [k.name for k in record.skills] == list(SKILLS)
    deploy, notes, idle = record.skills
    # routing: each skill got the tasks its sessions invoked it for; the night's file count is the file's
    mined = Counter(t.skill for t in read_tasks(root / ".skillgit" / "sleep" / "tasks.jsonl").tasks)
    assert set(mined) == {"deploy", "release-notes"} and min(mined.values()) >= 8
    assert (deploy.tasks.routed, notes.tasks.routed, idle.tasks.routed) == (mined["deploy"], mined["release-notes"],
                                                                            0)
    total = sum(mined.values())
    assert record.tasks.in_file == deploy.tasks.in_file == total  # the file's count (it was the routed count)
    assert record.tasks.used == deploy.tasks.used + notes.tasks.used == total
    assert idle.status == "skipped" and "no task was routed" in idle.reason and not idle.run
    for k in (deploy, notes):
        assert k.status == "finished" and k.run == f"sleep-{DATE}.{k.name}" and k.steps == 2
        assert k.branch == f"sleep/{DATE}" and k.base == main_before
        assert k.score("seed", "val") is not None and k.score("final", "val") is not None
        assert (k.score("final", "test") is not None) == (k.tasks.test > 0)  # read once, at its last turn
        # its own gate: the decisions of its run touch its own file only, on the shared night branch or a tag
        runs = [e for e in record.edits if e.run == k.run]
        assert len(runs) == k.accepted + k.rejected >= 2, runs  # its steps (and epoch-end updates)
        files = {e.step: touched(root, e.sha) for e in runs}
        assert all(f in ([], [f"skills/{k.name}/SKILL.md"]) for f in files.values()), files  # (a meta step: [])
        assert files["1"] == [f"skills/{k.name}/SKILL.md"], files
        gates = [json.loads(x) for x in git(root, "notes", "--ref=skillgit", "show", runs[0].sha).splitlines()]
        assert any(n.get("kind") == "gate" and n.get("run") == k.run for n in gates)
    assert record.accepted + record.rejected == len(record.edits)
    assert record.usage.calls == deploy.usage.calls + notes.usage.calls > 0
    # the skill branch and the checkout are as before; the night branch grew from main
    assert git(root, "rev-parse", "main").strip() == main_before and git(root, "status", "--porcelain") == ""
    assert record.branch == f"sleep/{DATE}" and record.base == main_before
    assert record.tip == git(root, "rev-parse", f"sleep/{DATE}").strip()
    # the record round-trips through the sleep ref; the report shows every skill, with no transcript text
    saved = S.night(GitRepo.open(root), DATE)
    assert saved is not None and saved.skills == record.skills and saved.edits == record.edits
    report = (root / ".skillgit" / "sleep" / f"{DATE}.md").read_text()
    assert "## Skills" in report and "`db-migrate`" in report and "no task was routed" in report
    assert f"| `release-notes` | {notes.tasks.routed} |" in report
    # running the night again changes nothing: every skill's run is finished
    again = run_night(night_project(root, home), NightOptions(DATE))
    assert again.status == "finished" and again.edits == record.edits
    # adopting the night brings every skill's accepted steps into main at once (one shared night branch)
    assert record.accepted >= 1
    adopted = cli_inproc("sleep", "adopt", DATE, cwd=root)
    assert adopted.returncode == 0, adopted.stderr
    assert git(root, "rev-parse", "main").strip() == record.tip


def test_dry_run_of_a_library_night_says_what_each_skill_would_train_on_and_writes_nothing(tmp_path, cli_inproc):
    home = tmp_path / "home"
    root = library_project(tmp_path / "repo", home)
    before = git(root, "for-each-ref")
    done = cli_inproc("sleep", "dry-run", "--date", DATE, "--home", str(home), "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    skills = plan["skills"]
    assert list(skills) == list(SKILLS) and skills["db-migrate"]["routed"] == 0
    assert "no task was routed" in skills["db-migrate"]["skipped"] and skills["db-migrate"]["estimate"] is None
    assert skills["deploy"]["routed"] + skills["release-notes"]["routed"] == plan["tasks"]["in_file"] > 0
    for name in ("deploy", "release-notes"):
        k = skills[name]
        assert not k["skipped"] and k["run"] == f"sleep-{DATE}.{name}" and k["branch"] == f"sleep/{DATE}"
        assert k["train"] + k["val"] + k["test"] == k["routed"] and k["estimate"]["total_calls"] > 0
    assert "skill db-migrate: 0 routed → skipped" in plan["text"]
    # nothing written: no task file, no sleep ref, no branch
    assert git(root, "for-each-ref") == before and not (root / ".skillgit").exists()


def test_one_budget_for_the_night_stops_it_and_the_same_command_resumes_it(tmp_path, cli_inproc):
    home = tmp_path / "home"
    root = library_project(tmp_path / "repo", home)
    stopped = run_night(night_project(root, home, max_calls=40), NightOptions(DATE))
    assert stopped.status == "stopped" and "reached for the night" in stopped.reason, stopped.reason
    assert stopped.usage.calls <= 40 + 16  # (16: calls already in flight when the budget was reached)
    assert sum(k.steps for k in stopped.skills) < 4
    # `skillgit status` shows each skill's night run with its own total steps, not its last turn's cap
    status = cli_inproc("status", "--json", cwd=root)
    rows = {k: v for k, v in json.loads(status.stdout)["skills"].items() if v}
    assert "deploy" in rows and "db-migrate" not in rows, status.stderr  # (release-notes may not have started)
    assert {k: (v["run"], v["total_steps"]) for k, v in rows.items()} == {
        name: (f"sleep-{DATE}.{name}", 2) for name in rows}  # (deploy's first turn capped its run at 1 step)
    resumed = run_night(night_project(root, home), NightOptions(DATE))
    assert resumed.status == "finished" and [k.steps for k in resumed.skills] == [2, 2, 0]
    assert resumed.harvest.sessions == 6  # what the first run of the night harvested still counts


def test_a_killed_library_night_resumes_like_an_uninterrupted_one(tmp_path):
    """Killed (SIGKILL) in release-notes' second step, the same `skillgit sleep run` finishes the night with the
    same commits, tags and decisions as a night that was never killed, and no finished call paid twice."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SKILLGIT_")}, **FIXED}
    command = [sys.executable, "-m", "skillgit", "sleep", "run", "--date", DATE, "--events"]

    def run(root: Path, home: Path) -> subprocess.CompletedProcess:
        return subprocess.run([*command, "--home", str(home), "--json"], cwd=root, capture_output=True, text=True,
                              env=env, timeout=300)

    def state(root: Path) -> tuple:
        refs = git(root, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags")
        record = json.loads(git(root, "show", f"refs/skillgit/sleep:nights/{DATE}.json"))
        return sorted(refs.splitlines()), [(e["run"], e["step"], e["verdict"], e["sha"]) for e in record["edits"]]

    whole = library_project(tmp_path / "whole", tmp_path / "home-whole")
    done = run(whole, tmp_path / "home-whole")
    assert done.returncode == 0, done.stderr[-3000:]

    home = tmp_path / "home"
    root = library_project(tmp_path / "repo", home)
    proc = subprocess.Popen([*command, "--home", str(home)], cwd=root, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None
    steps, deadline = 0, time.monotonic() + 240
    for line in proc.stderr:
        event = json.loads(line) if line.startswith("{") else {}
        if event.get("event") == "stage" and event.get("stage") == "reflect":
            steps += 1  # the 4th step to reflect is release-notes' second (round-robin: d1 r1 d2 r2)
            if steps == 4:
                proc.send_signal(signal.SIGKILL)
                break
        assert time.monotonic() < deadline
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the night ended before release-notes' second step"
    progress = json.loads(git(root, "show", f"refs/skillgit/runs/sleep-{DATE}.release-notes:progress.json"))
    assert progress["next_step"] == 2  # killed inside its second step
    resumed = run(root, home)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert json.loads(resumed.stdout)["status"] == "finished"
    assert state(root) == state(whole)
    from tests.helpers import paid_calls

    paid, distinct = paid_calls(root)
    assert paid == distinct, "a finished call was paid twice"


def test_a_skill_with_its_own_branch_trains_on_its_own_night_branch(tmp_path):
    home = tmp_path / "home"
    root = library_project(tmp_path / "repo", home)
    config = (root / "skillgit.yaml").read_text().replace(
        "release-notes: {path: skills/release-notes/SKILL.md}",
        "release-notes: {path: skills/release-notes/SKILL.md, branch: notes}")
    (root / "skillgit.yaml").write_text(config)
    git(root, "commit", "-qam", "release-notes has its own skill branch")
    git(root, "branch", "notes", "main")
    bases = {b: git(root, "rev-parse", b).strip() for b in ("main", "notes")}
    record = run_night(night_project(root, home, max_steps=1), NightOptions(DATE))
    assert record.status == "finished", record.reason
    deploy, notes, _ = record.skills
    assert (deploy.branch, deploy.base) == (f"sleep/{DATE}", bases["main"]) == (record.branch, record.base)
    assert (notes.branch, notes.base) == (f"sleep/{DATE}-release-notes", bases["notes"])
    for k in (deploy, notes):
        trailers = git(root, "log", "--format=%(trailers:key=Skillgit-Run,valueonly)", f"{k.base}..{k.branch}")
        assert set(trailers.split()) <= {k.run} and k.tip == git(root, "rev-parse", k.branch).strip()
    assert {b: git(root, "rev-parse", b).strip() for b in ("main", "notes")} == bases  # skill branches untouched


def test_handoff_a_library_night_waits_for_answers_and_resumes_from_them(tmp_path):
    """No API key: every skill's teacher prompts go to the handoff folder; the night is recorded as waiting (with
    each skill's part) and the same command, once answered, goes on until every skill is trained."""
    from skillgit.llm.factory import build_teacher

    home = tmp_path / "home"
    root = library_project(tmp_path / "repo", home)
    sp = night_project(root, home, ("train.batch_size=4",), max_steps=1)  # (step 1 is not an epoch's end)
    folder = tmp_path / "handoff"
    agent = build_teacher(sp.config, root)  # stands in for the person's own agent answering the prompts

    def answer(waiting) -> None:
        assert [k.name for k in waiting.skills] == list(SKILLS)
        answer_pending(folder, agent)

    record, rounds = night_through_handoff(sp, folder, root, DATE, answer)
    assert rounds >= 2 and record.status == "finished", record.reason
    assert [(k.name, k.status, k.steps) for k in record.skills] == [
        ("deploy", "finished", 1), ("release-notes", "finished", 1), ("db-migrate", "skipped", 0)]
    assert record.handoff is not None and record.handoff.pending == 0 and record.usage.cost_usd == 0

"""Deep reflect (issue 27, `optimizer.deep_reflect`): before reflecting on a minibatch the teacher probes a few of
its train trajectories over several turns (follow-up questions, re-runs with a hint) and reflect reads the
transcripts. Real training steps on the simulated world in real git repositories; the teacher and the student are
recorded at our own seams (the `LLM` and `Student` protocols) or behind a server on 127.0.0.1 (real openai SDK)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from skillgit.cli.demo import create_project
from skillgit.config import SimulatedCfg, config_from_dict
from skillgit.errors import ConfigError
from skillgit.llm.base import ChatStudent, Reply, Request
from skillgit.loop import deep_reflect, plan
from skillgit.project import open_project
from skillgit.session import build_trainer, open_session
from skillgit.skillopt_import import import_skillopt
from skillgit.types import Item, Trajectory
from skillgit.world import SimulatedStudentLLM, SimulatedTeacher, generate_tasks, probing
from tests.conftest import git
from tests.fake_servers import FakeLLMServer, llm_handler

DEEP = ["optimizer.deep_reflect.enabled=true", "optimizer.deep_reflect.failures=2",
        "optimizer.deep_reflect.successes=1", "optimizer.deep_reflect.turns=2", "train.max_steps=1",
        "train.batch_size=20", "gradient.minibatch_size=5", "evaluation.gate_repeats=1"]


class RecordingTeacher:
    """The simulated teacher behind our `LLM` seam, every request kept (optionally one stage's reply replaced)."""

    def __init__(self, seed: int, replace: dict[str, str] | None = None):
        self.inner = SimulatedTeacher(SimulatedCfg(seed=seed, malformed_rate=0.0))
        self.replace = replace or {}
        self.requests: list[Request] = []
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        return "recording:" + self.inner.id

    def complete(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
        if request.stage in self.replace:
            return Reply(self.replace[request.stage])
        return self.inner.complete(request)

    def prompts(self, stage: str) -> list[str]:
        return ["\n".join(m.content for m in r.messages) for r in self.requests if r.stage == stage]


class RecordingStudent:
    """The simulated student (a chat model) behind our `Student` seam, every run kept."""

    def __init__(self, seed: int):
        self.inner = ChatStudent(SimulatedStudentLLM(SimulatedCfg(seed=seed)))
        self.runs: list[tuple[Item, str]] = []
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        return "recording:" + self.inner.id

    def run(self, skill: str, item: Item, sample: int = 0) -> Reply:
        reply = self.inner.run(skill, item, sample)
        with self._lock:
            self.runs.append((item, reply.text))
        return reply

    def probes(self) -> list[tuple[Item, str]]:
        return [(item, text) for item, text in self.runs if "#probe-" in item.id]


def _train(root: Path, teacher: Any, student: Any, overrides: list[str]):
    session = open_session(open_project(root, None, overrides), teacher=teacher, student=student, cache=False)
    trainer = build_trainer(session, run_id="r1", resume=False)
    trainer.train()
    return session, trainer


def _patches(root: Path) -> list[dict]:
    """Every reflect patch recorded in the candidates' notes."""
    found: list[dict] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            found.extend(p for p in node.get("patches", []) if isinstance(p, dict))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for line in git(root, "notes", "--ref", "skillgit", "list").splitlines():
        for raw in git(root, "notes", "--ref", "skillgit", "show", line.split()[1]).splitlines():
            if raw.strip():
                walk(json.loads(raw))
    return found


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    create_project(tmp_path / "p", seed=3)
    return tmp_path / "p"


# ---------------------------------------------------------------------------------------------- the probes
def test_probe_turns_and_the_students_answers_reach_the_reflect_prompt_within_the_counts(demo: Path) -> None:
    teacher, student = RecordingTeacher(3), RecordingStudent(3)
    session, trainer = _train(demo, teacher, student, DEEP)
    probes, reflects = teacher.prompts("probe"), teacher.prompts("reflect")
    assert probes and reflects
    # the counts: a failure minibatch shows at most 2 trajectories to probe, a success minibatch at most 1
    for prompt in probes:
        shown = re.findall(r'<trajectory id="[^"]+" outcome="(\w+)"', prompt)
        assert 1 <= len(shown) <= (2 if shown[0] == "failure" else 1), shown
    # both kinds of probe ran on the student, and every answer it gave is in a reflect prompt, with its question
    ran = student.probes()
    assert {item.id.rsplit("-", 1)[1] for item, _ in ran} == {"ask", "rerun"}
    for item, answer in ran:
        assert item.expected is None  # the student never gets the grader's answer
        assert any(answer.splitlines()[0] in r and "<probes>" in r for r in reflects), answer
    # turn 2 sees turn 1: the second probe call of a minibatch carries the first turn's answers
    assert any('<probe id="' in p and 'turn="1"' in p and '<turn n="2"' in p for p in probes)
    # the patches record the probing: at most 2 (failures) / 1 (success) trajectories, at most 2 turns each
    patches = [p for p in _patches(demo) if p.get("probes")]
    assert patches
    for p in patches:
        record = p["probes"]
        assert len(record["probed"]) <= (2 if p["outcome"] == "failure" else 1)
        assert set(record["probed"]) <= set(p["item_ids"])
        assert all(t["turn"] in (1, 2) and t["item_id"] in record["probed"] for t in record["turns"])
    # the ledger books the probes under their own stages (the teacher's and the student's, as dry-run counts them)
    stages = trainer.ledger.snapshot()["by_stage"]
    assert stages["probe"]["calls"] == len(probes) and stages["probe_student"]["calls"] == len(ran)


def test_without_deep_reflect_nothing_is_probed_and_reflect_is_unchanged(demo: Path) -> None:
    teacher, student = RecordingTeacher(3), RecordingStudent(3)
    _train(demo, teacher, student, [d for d in DEEP if "deep_reflect.enabled" not in d])
    assert not teacher.prompts("probe") and not student.probes()
    assert not any("<probes>" in r or deep_reflect.PROBES_INTRO in r for r in teacher.prompts("reflect"))


def test_a_malformed_probe_answer_is_recorded_and_reflect_goes_on(demo: Path) -> None:
    teacher = RecordingTeacher(3, replace={"probe": "I would ask the student about dates, then try a hint."})
    student = RecordingStudent(3)
    _train(demo, teacher, student, DEEP)
    assert teacher.prompts("probe") and teacher.prompts("reflect")
    assert not student.probes()
    patches = [p for p in _patches(demo) if p.get("probes")]
    assert patches and all("malformed teacher output" in p["probes"]["problems"][0] for p in patches)
    assert any(p["edits"] for p in patches)  # reflect still proposed


def test_unusable_probe_entries_are_recorded_and_skipped() -> None:
    chosen = {"a": Trajectory("a", "in", "out"), "b": Trajectory("b", "in", "out")}
    problems: list[str] = []
    entries = deep_reflect._entries({"probes": [
        {"id": "a", "action": "ask", "text": "Why?"}, {"id": "a", "action": "rerun", "text": "twice"},
        {"id": "val-1", "action": "ask", "text": "not shown"}, {"id": "b", "action": "grade", "text": "x"},
        {"id": "b", "action": "rerun", "text": "  "}, "prose", {"id": "b", "action": "rerun", "text": "Hint."}]},
        chosen, 1, problems)
    assert [(t.item_id, action, text) for t, action, text in entries] == [("a", "ask", "Why?"),
                                                                          ("b", "rerun", "Hint.")]
    assert len(problems) == 5 and "not a probed trajectory" in problems[1]


def test_the_simulated_world_reads_deep_reflects_own_probe_formats() -> None:
    item = generate_tasks(SimulatedCfg(seed=1), 1)[0]
    trajectory = Trajectory(item.id, item.input, "Answer: 3/5/2024")
    asked = deep_reflect.probe_item(item, trajectory, "ask", "Why this date?")
    assert probing.split_probe(asked.input) == (item.input, "", "Answer: 3/5/2024")
    rerun = deep_reflect.probe_item(item, trajectory, "rerun", "Write dates as YYYY-MM-DD.")
    assert probing.split_probe(rerun.input) == (item.input, "Write dates as YYYY-MM-DD.", None)
    assert asked.expected is None and rerun.expected is None


# ---------------------------------------------------------------------------------------------- judge isolation
def _marked_project(root: Path, server: FakeLLMServer) -> dict[str, list[str]]:
    """A project whose val and test items carry markers (in the input and the expected answer)."""
    items = generate_tasks(SimulatedCfg(seed=4), 40)
    splits = {"train": items[:20], "val": items[20:30], "test": items[30:]}
    markers: dict[str, list[str]] = {"train": [], "val": [], "test": []}
    root.mkdir(parents=True)
    (root / "tasks").mkdir()
    for split, group in splits.items():
        rows = []
        for item in group:
            mark = f"{split.upper()}-MARKER-{item.id}"
            if split != "train":
                markers[split] += [mark, f"EXP-{mark}"]
                item = Item(item.id, f"{item.input}\n(ref {mark})", f"{item.expected}\nEXP-{mark}")
            rows.append(json.dumps(item.to_dict()) + "\n")
        (root / "tasks" / f"{split}.jsonl").write_text("".join(rows))
    (root / "SKILL.md").write_text("# Records\n\nRead the record and rewrite each field.\n")
    config = {"skill": {"path": "SKILL.md"}, "env": {"split_dir": "tasks", "scorer": {"type": "exact"}},
              "model": {"teacher_backend": "openai", "teacher_model": "sim-teacher",
                        "teacher": {"base_url": server.openai_base_url, "max_retries": 0},
                        "student_backend": "simulated", "simulated": {"seed": 4}}}
    (root / "skillgit.yaml").write_text(yaml.safe_dump(config))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "project")
    return markers


def test_no_probe_shows_a_val_or_test_item_to_the_teacher_or_the_student(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-deep-reflect")
    student = RecordingStudent(4)
    with FakeLLMServer(llm_handler(SimulatedTeacher(SimulatedCfg(seed=4, malformed_rate=0.0)))) as server:
        markers = _marked_project(tmp_path / "p", server)
        session, _ = _train(tmp_path / "p", None, student, DEEP)
        texts = ["\n".join(text for _, text in r.messages()) for r in server.requests]
    assert any("<stage>probe</stage>" in t for t in texts) and any("<probes>" in t for t in texts)
    hidden = markers["val"] + markers["test"]
    for text in texts:
        assert not [m for m in hidden if m in text], "a val or test item reached a teacher prompt"
    train_ids = {i.id for i in session.splits.train}
    assert student.probes()
    for item, _ in student.probes():
        assert item.id.split("#")[0] in train_ids and not [m for m in hidden if m in item.input]


# ---------------------------------------------------------------------------------------------- config
def test_deep_reflect_config_errors_name_the_key_and_the_fix() -> None:
    cases = [({"optimizer": {"deep_reflect": {"enable": True}}}, "optimizer.deep_reflect.enable",
              "optimizer.deep_reflect.enabled"),
             ({"optimizer": {"deep_reflect": {"turns": 0}}}, "optimizer.deep_reflect.turns", "default is 2"),
             ({"optimizer": {"deep_reflect": {"failures": -1}}}, "optimizer.deep_reflect.failures", "default is 4"),
             ({"optimizer": {"deep_reflect": {"enabled": True}, "skill_update_mode": "full_rewrite_minibatch"}},
              "optimizer.deep_reflect.enabled", "skill_update_mode: patch"),
             ({"optimizer": {"deep_reflect": {"enabled": True}}, "model": {"teacher_backend": "agent"}},
              "optimizer.deep_reflect.enabled", "proposers: [reflect, agent]")]
    for data, key, fix in cases:
        with pytest.raises(ConfigError) as caught:
            config_from_dict(data)
        assert key in caught.value.message and fix in caught.value.hint, (caught.value.message, caught.value.hint)


def test_skillopts_deep_reflect_keys_carry_over(tmp_path: Path) -> None:
    source = tmp_path / "skillopt.yaml"
    source.write_text(yaml.safe_dump({"gradient": {"minibatch_size": 4, "use_deep_reflect": True,
                                                   "deep_reflect_failures": 3, "deep_reflect_successes": 1}}))
    imp = import_skillopt(source)
    assert imp.data["optimizer"]["deep_reflect"] == {"enabled": True, "failures": 3, "successes": 1}
    outcomes = {o.key: o for o in imp.outcomes}
    assert outcomes["gradient.use_deep_reflect"].targets == ("optimizer.deep_reflect.enabled",)
    assert config_from_dict(imp.data).optimizer.deep_reflect.failures == 3
    # SkillOpt's legacy flat keys too; a value skillgit refuses is named with the validation's fix
    source.write_text(yaml.safe_dump({"use_deep_reflect": True, "deep_reflect_failures": "many"}))
    imp = import_skillopt(source)
    outcomes = {o.key: o for o in imp.outcomes}
    assert outcomes["gradient.use_deep_reflect"].status == "mapped"
    refused = outcomes["gradient.deep_reflect_failures"]
    assert refused.status == "refused" and "optimizer.deep_reflect.failures" in refused.reason
    assert "whole number" in refused.reason


def test_dry_run_counts_the_probes_and_a_run_stays_within_them(demo: Path) -> None:
    teacher, student = RecordingTeacher(3), RecordingStudent(3)
    session, trainer = _train(demo, teacher, student, DEEP)
    estimate = plan.estimate(session.project.config, session.splits, (demo / "SKILL.md").read_text())
    assert estimate["calls"]["probe"] >= len(teacher.prompts("probe")) > 0
    assert estimate["calls"]["probe_student"] >= len(student.probes()) > 0
    off = plan.estimate(config_from_dict({}), session.splits, "")
    assert "probe" not in off["calls"] and "probe_student" not in off["calls"]


# ---------------------------------------------------------------------------------------------- kill and resume
RESUME_ARGS = ("train", "--run", "r1", "--events", "--set", "train.max_steps=2", "--set",
               "model.simulated.latency_s=0.01", "--set", "optimizer.deep_reflect.enabled=true")


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    from tests.helpers import paid_calls
    from tests.test_resume import FIXED, git_state

    with pytest.MonkeyPatch.context() as mp:
        for key, value in FIXED.items():
            mp.setenv(key, value)
        folder = tmp_path_factory.mktemp("deep-baseline") / "proj"
        create_project(folder, seed=5)
        _cli_to_end(folder)
        return git_state(folder), paid_calls(folder)


def _cli(folder: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "skillgit", *RESUME_ARGS], cwd=folder, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ))


def _cli_to_end(folder: Path) -> None:
    proc = _cli(folder)
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["reflect", "aggregate"])
def test_a_killed_run_resumes_paying_no_finished_probe_twice(tmp_path: Path, uninterrupted, stage: str) -> None:
    from tests.helpers import paid_calls
    from tests.test_resume import git_state

    folder = tmp_path / "proj"
    create_project(folder, seed=5)
    proc = _cli(folder)
    assert proc.stderr is not None
    for line in proc.stderr:  # SIGKILL once step 2 reaches `stage` (reflect: probing under way; aggregate: done)
        if line.startswith("{") and (event := json.loads(line))["event"] == "stage" \
                and event["stage"] == stage and str(event["step"]) == "2":
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    _cli_to_end(folder)
    state, calls = git_state(folder), paid_calls(folder)
    assert calls[0] == calls[1], "a finished call (a probe among them) was paid twice"
    assert (state, calls) == uninterrupted
    assert any(p.get("probes", {}).get("turns") for p in _patches(folder))


# ---------------------------------------------------------------------------------------------- the simulated world
def test_the_simulated_teacher_acts_on_what_the_probes_showed() -> None:
    """A re-run that fixed a symptom makes its hint an edit; one that did not keeps it out; an instruction the
    student names as its reason for a failing behaviour is deleted; the student never sees the expected answer."""
    from skillgit import prompts
    from skillgit.llm.base import Message
    from skillgit.types import Score

    cfg = SimulatedCfg(seed=2, noise=0.0, malformed_rate=0.0)  # house: preamble, separator, date, weight, …
    item = next(i for i in generate_tasks(cfg, 20) if i.input.startswith("Record for the house style: date"))
    skill = "# Records\n\nRewrite the record.\nExplain your reasoning.\n"
    student = ChatStudent(SimulatedStudentLLM(cfg))
    output = student.run(skill, item).text
    trajectory = Trajectory(item.id, item.input, output, item.expected, Score(0.0, 0.0, "differs"))
    from skillgit.world.lexicon import ideas_for

    good, vague = ideas_for("date", "iso").good[0], ideas_for("date", "iso").vague[0]
    turns = [deep_reflect.Turn(item.id, 1, "ask", "Why did you write the date so?",
                               student.run(skill, deep_reflect.probe_item(item, trajectory, "ask", "Why?")).text)]
    for turn, hint in ((2, vague), (2, good)):
        rerun = deep_reflect.probe_item(item, trajectory, "rerun", hint)
        assert item.expected not in rerun.input
        turns.append(deep_reflect.Turn(item.id, turn, "rerun", hint, student.run(skill, rerun).text))
    assert "because my instructions say: \"Explain your reasoning.\"" in turns[0].answer
    assert "2" in turns[2].answer.split(",")[0] and "-" in turns[2].answer.split(",")[0]  # ISO after the hint
    text = (prompts.block_trajectories([trajectory], "failure") + f"\n\n{deep_reflect.PROBES_INTRO}\n"
            + deep_reflect.block_probes(turns))
    user = prompts.render("reflect", {"skill": prompts.block_skill(skill), "trajectories": text,
                                      "budget": prompts.block_budget(6), "rejected_edits": "(none)",
                                      "meta_skill": "(none)"})[-1]
    answer = json.loads(SimulatedTeacher(cfg).complete(Request((Message("user", user.content),),
                                                               stage="reflect")).text)
    edits = [(e["op"], e["content"] or e["target"]) for e in answer["edits"]]
    assert ("delete", "Explain your reasoning.") in edits
    assert ("append", good) in edits and not any(vague in content for _, content in edits)


@pytest.mark.slow
def test_a_budget_stops_the_run_while_probing_and_a_larger_one_resumes_it(tmp_path: Path, uninterrupted) -> None:
    from tests.helpers import paid_calls
    from tests.test_resume import git_state

    folder = tmp_path / "proj"
    create_project(folder, seed=5)
    # 90 seed val scorings + 20 rollouts come first: a cap of 120 lands among step 1's probes
    stopped = subprocess.run([sys.executable, "-m", "skillgit", *RESUME_ARGS, "--set", "budget.max_calls=120"],
                             cwd=folder, capture_output=True, text=True, timeout=240)
    assert stopped.returncode != 0 and "budget.max_calls" in stopped.stderr
    status = json.loads(subprocess.run([sys.executable, "-m", "skillgit", "status", "--json"], cwd=folder,
                                       capture_output=True, text=True, timeout=120).stdout)
    spent = status["usage_by_stage"]
    assert spent["probe"]["calls"] + spent["probe_student"]["calls"] > 0 and "merge" not in spent  # mid-reflect
    assert status["calls"] <= 120 + 16  # only calls already in flight overshoot (the workers)
    _cli_to_end(folder)
    state, calls = git_state(folder), paid_calls(folder)
    assert calls[0] == calls[1], "a finished probe was paid twice"
    assert (state, calls) == uninterrupted

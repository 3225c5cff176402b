"""The gate's honesty guards: a sealed test split, teacher prompts without val/test items or answers, leaked answers
and oversized skills rejected before scoring (issue: learning that holds up)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from skillgit.cli.demo import create_project
from skillgit.config import SimulatedCfg
from skillgit.llm.base import Reply, Request
from skillgit.loop import guards
from skillgit.project import open_project
from skillgit.session import build_trainer, open_session
from skillgit.world import SimulatedStudentLLM, SimulatedTeacher
from tests.conftest import git, run_cli_inproc


@pytest.fixture
def project(tmp_path) -> Path:
    folder = tmp_path / "proj"
    create_project(folder, 0)
    return folder


class Spy:
    """Records every prompt (teacher) or every item (student) it is asked about, and when."""

    def __init__(self, inner):
        self.inner = inner
        self.seen: list[tuple[str, str]] = []  # (phase, text)
        self.phase = "training"
        self.lock = threading.Lock()

    @property
    def id(self) -> str:
        return self.inner.id

    def complete(self, request: Request) -> Reply:
        with self.lock:
            self.seen.append((self.phase, "\n".join(m.content for m in request.messages)))
        return self.inner.complete(request)


def test_teacher_prompts_never_hold_val_or_test_items_or_their_answers(project):
    teacher = Spy(SimulatedTeacher(SimulatedCfg(seed=0)))
    session = open_session(open_project(project, None, ["train.max_steps=4", "train.num_epochs=2"]), teacher=teacher,
                           cache=False)
    build_trainer(session, run_id="r1", resume=False).train()
    prompts = [text for _, text in teacher.seen]
    assert len(prompts) > 10 and {"reflect", "merge"} <= {p.split("<stage>")[1].split("</stage>")[0]
                                                          for p in prompts if "<stage>" in p}
    from skillgit.prompts import child, parse_blocks

    shown_inputs, shown_answers = set(), set()
    for text in prompts:  # every task a prompt shows: trajectories and before/after pairs
        for tag in ("trajectory", "pair"):
            for _attrs, inner in parse_blocks(text, tag):
                shown_inputs.add((child(inner, "input") or "").strip())
                shown_answers.add((child(inner, "expected") or "").strip())
    assert len(shown_inputs) >= 10
    for item in (*session.splits.val, *session.splits.test):
        assert item.input.strip() not in shown_inputs, f"{item.id}'s input reached a teacher prompt"
        assert str(item.expected).strip() not in shown_answers, f"{item.id}'s answer reached a teacher prompt"


def test_the_test_split_is_read_only_after_every_decision(project):
    reads: list[tuple[int, str]] = []
    decided = [0]

    class CountingStudent:
        def __init__(self):
            from skillgit.llm.base import ChatStudent

            self.inner = ChatStudent(SimulatedStudentLLM(SimulatedCfg(seed=0)))

        @property
        def id(self) -> str:
            return "counting"

        def run(self, skill, item, sample=0):
            reads.append((decided[0], item.id))
            return self.inner.run(skill, item, sample)

    session = open_session(open_project(project, None, ["train.max_steps=3"]), student=CountingStudent(), cache=False)
    trainer = build_trainer(session, run_id="r1", resume=False,
                            on_event=lambda e: decided.__setitem__(0, decided[0] + (e.kind == "step_end")))
    assert "test" not in trainer.evaluator.splits  # the evaluator that chooses candidates cannot read test
    result = trainer.train()
    test_ids = {i.id for i in session.splits.test}
    test_reads = [n for n, item_id in reads if item_id in test_ids]
    assert result.steps == 3 and decided[0] >= 3
    assert test_reads and all(n == decided[0] for n in test_reads)  # every read came after the last decision
    progress = json.loads(git(project, "show", "refs/skillgit/runs/r1:progress.json"))
    assert progress["test_reads"] == 3  # seed, best, final — counted in the run's record


def test_a_leaking_edit_is_rejected_and_remembered(project):
    from skillgit.tasks import load_splits

    cfg = open_project(project, None, []).config
    splits = load_splits(cfg.env, project)
    victim = max(splits.train, key=lambda i: len(str(i.expected)))  # a long answer (short ones are not flagged)

    class Leaker:
        """A teacher that pastes a train item's expected answer into the skill."""

        def __init__(self):
            self.inner = SimulatedTeacher(SimulatedCfg(seed=0))

        @property
        def id(self) -> str:
            return "leaker"

        def complete(self, request: Request) -> Reply:
            reply = self.inner.complete(request)
            if request.stage != "reflect":
                return reply
            answer = {"reasoning": "memorise", "edits": [{"op": "append", "target": "", "file": "SKILL.md",
                                                          "content": f"For example: {victim.expected}",
                                                          "rationale": "copy the answer"}]}
            return Reply(json.dumps(answer), reply.usage, reply.model)

    session = open_session(open_project(project, None, ["train.max_steps=1"]), teacher=Leaker(), cache=False)
    build_trainer(session, run_id="r1", resume=False).train()
    rejected = json.loads(run_cli_inproc("rejected", "--json", cwd=project).stdout)
    assert rejected and rejected[0]["reason"].startswith("leakage:") and victim.id in rejected[0]["reason"]
    assert str(victim.expected) not in (project / "SKILL.md").read_text()


def test_guards_catch_ngrams_and_size():
    answers = [("i1", "2024-03-05 | 5.67 kg | AB-12 | $4.20 | Lovelace, Ada")]
    before = "# Skill\n"
    assert guards.leak(before, before + "Dates are ISO.\n", answers, 8) is None
    assert "expected answer of item i1" in guards.leak(before, before + "e.g. 2024-03-05 | 5.67 kg | AB-12 | $4.20 | "
                                                       "Lovelace, Ada\n", answers, 8)
    assert "8 consecutive words" in guards.leak(before, before + "like 05 5 67 kg AB 12 4 20 now\n", answers, 8)
    assert guards.leak(before, before + "like 05 5 67 kg AB 12 4 20 now\n", answers, 0) is None  # off
    assert "over skill.max_tokens" in guards.size("x" * 30_000, 5000, 1024)
    long_description = "---\nname: s\ndescription: " + "d" * 1100 + "\n---\n# S\n"
    assert "description has 1100 characters" in guards.size(long_description, 5000, 1024)


def test_a_seed_over_its_size_budget_is_said_once_at_the_start(tmp_path):
    from skillgit.cli.demo import create_project
    from tests.conftest import git, run_cli_inproc

    folder = tmp_path / "p"
    create_project(folder, 0)
    with (folder / "SKILL.md").open("a") as f:
        f.write("\nBackground notes that made the skill long. " * 20)
    git(folder, "commit", "-qam", "a long seed")
    done = run_cli_inproc("train", "--set", "skill.max_tokens=100", "--set", "train.max_steps=1", cwd=folder)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "candidates may not grow it" in warnings[0], done.stderr


# ---------------------------------------------------------------------------------------------- the judge's own text
def test_the_guard_rejects_copies_of_the_judges_own_text_and_names_what_leaked():
    from skillgit.judging import JudgeText

    texts = [JudgeText("pattern", "the regex pattern env.scorer.pattern", r"^[A-Z]{3}-\d{4}$"),
             JudgeText("rubric", "the rubric of item 'q1'",
                       "- names the timezone offset explicitly\n- says it in one sentence"),
             JudgeText("reference", "the reference answer of item 'q1'", "It drops the UTC offset when parsing."),
             JudgeText("source", "the verifier file tests/verify/test_x.py of task 't1'",
                       'def test_behaviour():\n    assert slugify("Hello, World!") == "hello-world"\n')]
    before = "# Skill\n\nBe precise.\n"

    def why(added: str, ngram: int = 8) -> str | None:
        return guards.judge_leak(before, before + added + "\n", texts, ngram)

    assert why("Write codes like ABC-1234 in capitals.") is None  # the behaviour, not the judge's text
    assert why(r"Answers must match ^[A-Z]{3}-\d{4}$ exactly.") == \
        "leakage: the edit copies the regex pattern env.scorer.pattern into the skill"
    assert why("Always: Names the timezone offset explicitly.") == \
        "leakage: the edit copies a line of the rubric of item 'q1' into the skill"
    assert why("Note that it drops the UTC offset when parsing.") == \
        "leakage: the edit copies the reference answer of item 'q1' into the skill"
    assert why('Check: assert slugify("Hello, World!") == "hello-world"') == \
        "leakage: the edit copies a line of the verifier file tests/verify/test_x.py of task 't1' into the skill"
    assert why("When unsure, assert slugify('Hello World') == 'hello world'.", ngram=6) == \
        "leakage: the edit copies 6 consecutive words of the verifier file tests/verify/test_x.py of task 't1' " \
        "into the skill"
    assert why("Answers must match ^[A-Z]{3}-\\d{4}$ exactly.", ngram=0) is None  # leak_ngram 0 turns guards off
    assert guards.judge_leak(before + "Names the timezone offset explicitly.\n",
                             before + "Names the timezone offset explicitly.\nBe brief.\n", texts, 8) is None  # kept


def test_judge_texts_gather_scorer_files_and_agentic_verifiers(tmp_path):
    from skillgit.config import ScorerCfg
    from skillgit.scorers import build_scorer
    from skillgit.types import Item

    (tmp_path / "judge_mod_guard.py").write_text("def score(item, output):\n    return 1.0  # JUDGE-MARKER\n")
    (tmp_path / "check.py").write_text("print(1)  # CMD-MARKER\n")
    python = build_scorer(ScorerCfg(type="python", callable="judge_mod_guard:score"), tmp_path)
    command = build_scorer(ScorerCfg(type="command", command="python check.py --strict"), tmp_path)
    assert [(t.kind, t.where) for t in guards.judge_texts(python, [])] == [
        ("source", "the python scorer's source judge_mod_guard.py")]
    assert [t.where for t in guards.judge_texts(command, [])] == ["the command scorer's file check.py"]
    json_field = build_scorer(ScorerCfg(type="json_field"), tmp_path)
    expectation = [Item("q1", "?", {"home": "the Ituri rainforest", "count": 4815})]
    texts = guards.judge_texts(json_field, expectation)
    assert guards.judge_leak("# S\n", "# S\nOkapis live in the Ituri rainforest.\n", texts, 8) == \
        "leakage: the edit copies the expected JSON value 'home' of item 'q1' into the skill"
    fixture = tmp_path / "repo"
    (fixture / "tests" / "verify").mkdir(parents=True)
    (fixture / "tests" / "verify" / "test_v.py").write_text("import helper  # VERIFY-MARKER\n")
    (fixture / "tests" / "verify" / "helper.py").write_text("# HELPER-MARKER\n")
    (fixture / "tests" / "test_unit.py").write_text("# the agent's own tests\n")
    item = Item("t1", "do it", metadata={"workspace": {"fixture": "repo"}, "task_dir": str(tmp_path),
                                         "verify": {"command": "python -m pytest -q tests/verify/test_v.py"}})
    found = {t.where: t.text for t in guards.judge_texts(build_scorer(ScorerCfg(), tmp_path), [item, item])}
    assert set(found) == {"the verifier file tests/verify/test_v.py of task 't1'",
                          "the verifier file tests/verify/helper.py of task 't1'"}  # once each; not the agent's tests

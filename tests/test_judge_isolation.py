"""Judge isolation (issue 20): a real training step through the loop, its teacher the simulated teacher behind a
server on 127.0.0.1 reached through the real openai SDK, and every prompt that server received read back.

For every scorer type (each built-in, python, command, the rubric judge) and every verifier kind of an agentic
task (exit_code, pytest, junit, json), the judge's own text — its patterns, rubric, source files, the values its
assertions compare, the expected answers of val and test items — never reaches a teacher prompt. A train item's
expected answer may appear only as its `<expected>` (the training signal, as in SkillOpt), never in feedback.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from skillgit.config import SimulatedCfg
from skillgit.judging import teacher_reference
from skillgit.llm.base import Reply
from skillgit.loop import guards
from skillgit.project import open_project
from skillgit.rubric import RubricScorer
from skillgit.scorers import build_scorer
from skillgit.session import build_trainer, open_session
from skillgit.types import Item, Usage
from skillgit.world import SimulatedTeacher
from tests.conftest import git, run_cli_inproc
from tests.fake_servers import FakeLLMServer, llm_handler

SPLITS = {"train": 4, "val": 2, "test": 2}
RUN = ("train.max_steps=1", "train.batch_size=4", "gradient.minibatch_size=4", "evaluation.gate_repeats=1")


# ---------------------------------------------------------------------------------------------- the harness
def _commit(root: Path, files: dict[str, str], config: dict[str, Any]) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for rel, text in {**files, "skillgit.yaml": yaml.safe_dump(config)}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "project")
    return root


def _config(server: FakeLLMServer, **sections: Any) -> dict[str, Any]:
    model = {"teacher_backend": "openai", "teacher_model": "sim-teacher",
             "teacher": {"base_url": server.openai_base_url, "max_retries": 0}, "student_backend": "simulated"}
    return {"model": {**model, **sections.pop("model", {})}, **sections}


def _text_project(root: Path, server: FakeLLMServer, rows: dict[str, list[dict]], scorer: dict[str, Any],
                  files: dict[str, str] | None = None) -> Path:
    tasks = {f"tasks/{split}.jsonl": "".join(json.dumps(r) + "\n" for r in items) for split, items in rows.items()}
    return _commit(root, {"SKILL.md": "# Skill\n\nAnswer the question.\n", **tasks, **(files or {})},
                   _config(server, skill={"path": "SKILL.md"}, env={"tasks": "tasks", "scorer": scorer}))


def _served_teacher() -> FakeLLMServer:
    return FakeLLMServer(llm_handler(SimulatedTeacher(SimulatedCfg(seed=0, malformed_rate=0.0))))


class WrongStudent:
    """Answers every item with the same wrong answer (a seam we own: the student is not under test)."""

    def __init__(self, answer: str):
        self.answer = answer

    @property
    def id(self) -> str:
        return "wrong-student"

    def run(self, skill: str, item: Item, sample: int = 0) -> Reply:
        return Reply(self.answer, Usage(calls=1, prompt_tokens=10, completion_tokens=3))


def _train(root: Path, monkeypatch, *, student=None, scorer=None) -> Any:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-judge-isolation")
    session = open_session(open_project(root, None, list(RUN)), student=student, scorer=scorer, cache=False)
    result = build_trainer(session, run_id="r1", resume=False).train()
    assert result.steps == 1
    return session


def _prompts(server: FakeLLMServer) -> list[str]:
    texts = ["\n".join(text for _, text in r.messages()) for r in server.requests]
    assert any("<stage>reflect</stage>" in t and 'outcome="failure"' in t for t in texts), \
        "the step must have shown failed trajectories to the teacher"
    return texts


def _without_expected(text: str) -> str:
    return re.sub(r"<expected>\n.*?</expected>", "", text, flags=re.S)


def _expected_blocks(texts: list[str]) -> list[str]:
    return [m.strip() for t in texts for m in re.findall(r"<expected>\n(.*?)</expected>", t, flags=re.S)]


def _secrets(value: Any) -> list[str]:
    """The strings of an expected value to look for (a JSON object's values; whole strings; numbers)."""
    if value is None:
        return []
    if isinstance(value, dict):
        return [s for v in value.values() for s in _secrets(v)]
    return [str(value)]


def _source_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if len(line.strip()) >= 16]


def _judged(texts) -> list[str]:
    return [t.text if t.kind in ("pattern", "reference") else line for t in texts
            for line in ([t.text] if t.kind in ("pattern", "reference") else _source_lines(t.text))]


def assert_isolated(texts: list[str], session, scorer) -> None:
    """No prompt carries the judge's own text or a val/test answer; a train answer (or a judged train item's
    accepted answer) appears only as `<expected>`, and only where the scorer lets the teacher read it."""
    root, train_items = session.project.root, session.splits.train
    unseen = [*session.splits.val, *session.splits.test]
    hidden = [s for i in unseen for s in _secrets(i.expected)] + _judged(guards.judge_texts(scorer, unseen, root))
    of_train = guards.judge_texts(scorer, train_items, root)
    hidden += _judged([t for t in of_train if t.kind != "reference"])
    train = [s for i in train_items for s in _secrets(i.expected)] + \
        _judged([t for t in of_train if t.kind == "reference"])
    for text in texts:
        leaked = [s for s in hidden if s in text]
        assert not leaked, f"the judge's text reached a teacher prompt: {leaked[:3]}"
        copied = [s for s in train if s in _without_expected(text)]
        assert not copied, f"a train answer reached a teacher prompt outside <expected>: {copied[:3]}"
    allowed = {json.dumps(v, ensure_ascii=False, sort_keys=True) if not isinstance(v, str) else v
               for i in session.splits.train if (v := teacher_reference(scorer, i)) is not None}
    assert set(_expected_blocks(texts)) <= allowed | {""}


# ---------------------------------------------------------------------------------------------- text scorers
def _rows(expected) -> dict[str, list[dict]]:
    return {split: [{"id": f"{split}-{i}", "input": f"Item {split} {i}: which animal lives in the Ituri forest?",
                     "expected": expected(split, i)} for i in range(n)] for split, n in SPLITS.items()}


TEXT_CASES: dict[str, tuple[dict, Any, str]] = {
    # type: (env.scorer, expected(split, i), the student's wrong answer)
    "exact": ({"type": "exact"}, lambda s, i: f"Okapi{s.title()}Secret number {i} of the Ituri forest",
              "I think it is a zebra."),
    "normalized": ({"type": "normalized"}, lambda s, i: f"Okapi{s.title()}Secret, number {i}!", "A zebra."),
    "contains": ({"type": "contains"}, lambda s, i: f"Okapi{s.title()}Secret {i}", "Surely a zebra."),
    "regex": ({"type": "regex"}, lambda s, i: rf"^Okapi{s.title()}Pattern-{i}\d+$", "Zebra-17"),
    "regex-config": ({"type": "regex", "pattern": r"^OkapiConfigPattern-\d{3}$"}, lambda s, i: None, "Zebra-17"),
    "numeric": ({"type": "numeric"}, lambda s, i: {"train": 481516, "val": 623042, "test": 911357}[s] + i,
                "About 12 of them."),
    "f1": ({"type": "f1"}, lambda s, i: f"Okapi{s.title()}Secret lives deep in forest {i}", "a zebra lives here"),
    "json_field": ({"type": "json_field"},
                   lambda s, i: {"animal": f"okapi{s}secret{i}", "count": {"train": 4815, "val": 6230,
                                                                             "test": 9113}[s] + i},
                   '{"animal": "zebra", "count": 3}'),
}


@pytest.mark.parametrize("case", sorted(TEXT_CASES))
def test_no_teacher_prompt_carries_a_builtin_scorers_internals(tmp_path, monkeypatch, case):
    scorer_cfg, expected, answer = TEXT_CASES[case]
    with _served_teacher() as server:
        root = _text_project(tmp_path / "p", server, _rows(expected), scorer_cfg)
        session = _train(root, monkeypatch, student=WrongStudent(answer))
        texts = _prompts(server)
    assert_isolated(texts, session, session.scorer)
    shown = _expected_blocks(texts)
    if case.startswith("regex"):
        assert not any(shown), "a regex pattern is the judge's rule, never an answer the teacher reads"
    else:  # the train answer is the training signal (SkillOpt's analysts read it too)
        assert any(shown)


PY_JUDGE = '''\
"""PYJUDGE-SOURCE-MARKER: this verifier's own text must never reach the teacher."""
ACCEPTED_SYNONYMS = {"okapi": "the forest giraffe of the Congo basin"}  # the judge's private table


def score(item, output):
    ok = output.strip() == str(item.expected) or ACCEPTED_SYNONYMS.get(output.strip()) == item.expected
    return {"hard": int(ok), "soft": float(ok), "feedback": "correct" if ok else "the answer names the wrong animal"}
'''

CMD_JUDGE = '''\
"""CMDJUDGE-SOURCE-MARKER: this verifier's own text must never reach the teacher."""
import json
import sys

HIDDEN_RULE = "an answer passes only when it names the okapi and its forest"  # the judge's private rule
data = json.load(sys.stdin)
ok = data["output"].strip() == str(data["item"]["expected"])
print(json.dumps({"hard": int(ok), "feedback": "correct" if ok else "the answer names the wrong animal"}))
'''


@pytest.mark.parametrize("kind", ["python", "command"])
def test_no_teacher_prompt_carries_a_user_verifiers_source(tmp_path, monkeypatch, kind):
    files = {"judge_py_iso.py": PY_JUDGE} if kind == "python" else {"judge_cmd.py": CMD_JUDGE}
    scorer_cfg = {"type": "python", "callable": "judge_py_iso:score"} if kind == "python" else \
        {"type": "command", "command": f"{sys.executable} judge_cmd.py"}
    with _served_teacher() as server:
        root = _text_project(tmp_path / "p", server, _rows(lambda s, i: f"Okapi{s.title()}Secret {i}"), scorer_cfg,
                             files)
        session = _train(root, monkeypatch, student=WrongStudent("a zebra"))
        texts = _prompts(server)
    judge = guards.judge_texts(session.scorer, session.splits.train)
    assert [t.kind for t in judge] == ["source"] and "SOURCE-MARKER" in judge[0].text  # what the guard holds
    assert_isolated(texts, session, session.scorer)
    assert any("the answer names the wrong animal" in t for t in texts)  # the user's own feedback does arrive


class LeakyJudge:
    """A judge that quotes its rubric and the reference answer in its feedback (what issue 20 saw real judges do);
    a seam we own: the judge's LLM."""

    @property
    def id(self) -> str:
        return "leaky-judge"

    def complete(self, request) -> Reply:
        text = request.messages[-1].content
        rubric = re.search(r"<rubric>\n(.*?)\n</rubric>", text, re.S).group(1)
        reference = re.search(r"<reference>\n(.*?)\n</reference>", text, re.S).group(1)
        feedback = f"Per the rubric ({rubric}) this fails; the accepted answer was: {reference}"
        return Reply(json.dumps({"hard": 0, "soft": 0.2, "feedback": feedback}), Usage(calls=1))


def test_no_teacher_prompt_carries_the_rubric_even_when_the_judge_quotes_it(tmp_path, monkeypatch):
    rows = {split: [{"id": f"{split}-{i}", "input": f"Item {split} {i}: where does the okapi live?",
                     "metadata": {"rubric": f"RUBRICSECRET {split} {i}: names the Ituri rainforest of the Congo",
                                  "judge_reference": f"Okapi{split.title()}Reference {i} lives in the Ituri forest"}}
                    for i in range(n)] for split, n in SPLITS.items()}
    with _served_teacher() as server:
        root = _text_project(tmp_path / "p", server, rows, {"type": "exact"})
        scorer = RubricScorer(LeakyJudge(), build_scorer(open_project(root, None, []).config.env.scorer, root))
        session = _train(root, monkeypatch, student=WrongStudent("In a zoo."), scorer=scorer)
        texts = _prompts(server)
    assert_isolated(texts, session, scorer)
    assert not any("RUBRICSECRET" in t for t in texts)
    assert any("[…]" in t for t in texts)  # the judge's copies were masked, its own words kept
    references = [i.metadata["judge_reference"] for i in session.splits.train]
    assert set(_expected_blocks(texts)) & set(references)  # a judged train item's accepted answer is its label


# ---------------------------------------------------------------------------------------------- verifier kinds
AGENT = '''\
import pathlib
pathlib.Path("calc.py").write_text("def area(r):\\n    return r * r\\n")
print("I added area() to calc.py.")
'''
PYTEST_CHECK = '''\
"""VERIFIER-SOURCE-MARKER: the teacher must never read this file."""
from calc import area


def test_area_of_three():
    assert area(3) == 28.274333882308138


def test_area_has_a_docstring():
    assert area.__doc__, "area has no docstring"
'''
SCRIPT_CHECK = '''\
"""VERIFIER-SOURCE-MARKER: the teacher must never read this file."""
import json
import sys
import traceback

sys.path.insert(0, ".")
from calc import area  # noqa: E402

print("checking area() against the table")
try:
    assert area(3) == 28.274333882308138
    ok = True
except AssertionError:
    traceback.print_exc()
    ok = False
if "--json" in sys.argv:
    print(json.dumps({"passed": int(ok), "total": 1, "feedback": "area() gives the wrong value for r=3"}))
sys.exit(0 if ok or "--json" in sys.argv else 1)
'''
VERIFY = {
    "exit_code": {"command": "python checks/check.py", "result": "exit_code"},
    "pytest": {"command": "python -m pytest -q -p no:cacheprovider checks/test_check.py", "result": "pytest"},
    "junit": {"command": "python -m pytest -q -p no:cacheprovider checks/test_check.py --junitxml=report.xml",
              "result": "junit:report.xml"},
    "json": {"command": "python checks/check.py --json", "result": "json"},
}


@pytest.mark.parametrize("kind", sorted(VERIFY))
def test_no_teacher_prompt_carries_a_verifiers_source_or_compared_values(tmp_path, monkeypatch, kind):
    fixture = {"repo/checks/test_check.py": PYTEST_CHECK, "repo/checks/check.py": SCRIPT_CHECK,
               "repo/README.md": "A tiny geometry package.\n"}
    rows = {split: [{"id": f"{split}-{i}", "prompt": f"Add area(r) to calc.py (task {split} {i}).",
                     "workspace": {"fixture": "repo"}, "verify": {**VERIFY[kind], "timeout_s": 60}}
                    for i in range(n)] for split, n in {"train": 2, "val": 1, "test": 1}.items()}
    tasks = {f"tasks/{split}.jsonl": "".join(json.dumps(r) + "\n" for r in items) for split, items in rows.items()}
    with _served_teacher() as server:
        student = {"student_backend": "agent", "student_model": "default", "student": {"command": {
            "preset": "generic", "argv": [sys.executable, str(tmp_path / "agent.py")], "timeout_s": 60}}}
        config = _config(server, model=student, skill={"path": "skill"}, env={"tasks": "tasks"},
                         optimizer={"use_slow_update": False, "use_meta_reflect": False})
        (tmp_path / "agent.py").write_text(AGENT)
        files = {"skill/SKILL.md": "---\nname: geometry\ndescription: Geometry helpers.\n---\n\n# Geometry\n",
                 **{f"tasks/{k}": v for k, v in fixture.items()}, **tasks}
        root = _commit(tmp_path / "p", files, config)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-judge-isolation")
        session = open_session(open_project(root, None, ["train.max_steps=1", "train.batch_size=2",
                                                         "evaluation.gate_repeats=1"]), cache=False)
        build_trainer(session, run_id="r1", resume=False).train()
        texts = _prompts(server)
    judge = guards.judge_texts(session.scorer, session.splits.train, root)
    assert {t.where for t in judge} >= {"the verifier file checks/check.py of task 'train-0'"}
    assert_isolated(texts, session, session.scorer)
    for text in texts:
        assert "28.274" not in text and "VERIFIER-SOURCE-MARKER" not in text
    feedback = [f for t in texts for f in re.findall(r"<feedback>\n(.*?)</feedback>", t, re.S)]
    assert feedback and all(f.startswith("the verifier failed") for f in feedback)
    if kind in ("pytest", "junit"):
        assert any("failed: test_area_of_three — AssertionError (the values it compares are not shown)" in f
                   for f in feedback)
        assert any("area has no docstring" in f for f in feedback)  # the author's message is the signal


# ---------------------------------------------------------------------------------------------- copies are rejected
class RecordingStudent(WrongStudent):
    """Remembers every skill it was asked to run (a candidate is scored only by running it)."""

    def __init__(self, answer: str):
        super().__init__(answer)
        self.skills: list[str] = []

    def run(self, skill: str, item: Item, sample: int = 0) -> Reply:
        self.skills.append(skill)
        return super().run(skill, item, sample)


def _copying_teacher(copied: str) -> FakeLLMServer:
    """The simulated teacher on 127.0.0.1, except that every reflect answer appends `copied` to the skill."""
    world = llm_handler(SimulatedTeacher(SimulatedCfg(seed=0, malformed_rate=0.0)))

    def handle(body: dict) -> str:
        if "<stage>reflect</stage>" not in json.dumps(body.get("messages", "")):
            return world(body)
        edit = {"op": "append", "file": "SKILL.md", "target": "", "content": f"Remember: {copied}",
                "rationale": "this is what the judge wants"}
        return json.dumps({"reasoning": "copy the judge", "edits": [edit], "failure_summary": "wrong answers"})

    return FakeLLMServer(handle)


@pytest.mark.parametrize("what", ["regex pattern", "rubric line"])
def test_a_candidate_that_copies_the_judge_is_rejected_before_it_is_scored(tmp_path, monkeypatch, what):
    if what == "regex pattern":
        copied, scorer_cfg = r"^OkapiConfigPattern-\d{3}$", {"type": "regex", "pattern": r"^OkapiConfigPattern-\d{3}$"}
        rows = _rows(lambda s, i: None)
    else:
        copied, scorer_cfg = "names the Ituri rainforest of the Congo basin", {"type": "exact"}
        rows = {split: [{"id": f"{split}-{i}", "input": f"Item {split} {i}: where does the okapi live?",
                         "metadata": {"rubric": f"- {copied}\n- says it in one sentence",
                                      "judge_reference": f"In the Ituri rainforest ({split} {i})."}}
                        for i in range(n)] for split, n in SPLITS.items()}
    student = RecordingStudent("In a zoo.")
    with _copying_teacher(copied) as server:
        root = _text_project(tmp_path / "p", server, rows, scorer_cfg)
        scorer = None
        if what == "rubric line":
            from skillgit.world.judge import SimulatedJudge

            scorer = RubricScorer(SimulatedJudge(SimulatedCfg(seed=0, malformed_rate=0.0)),
                                  build_scorer(open_project(root, None, []).config.env.scorer, root))
        _train(root, monkeypatch, student=student, scorer=scorer)
    rejected = json.loads(run_cli_inproc("rejected", "--json", cwd=root).stdout)
    reasons = {str(r.get("step")): r["reason"] for r in rejected}
    expected = "the regex pattern env.scorer.pattern" if what == "regex pattern" else "the rubric of item 'train-"
    assert reasons.get("1", "").startswith("leakage: the edit copies") and expected in reasons["1"], reasons
    assert student.skills and not any(copied in s for s in student.skills), "the copying candidate was scored"

"""What the teacher reads of an agentic verifier (`verify.feedback: summary | full | none`), on real pytest runs
and real scripts in a temporary workspace; and the rubric judge's feedback with its copies of the rubric masked."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from skillgit.agentic import verify
from skillgit.agentic.feedback import neutral, printed_lines
from skillgit.agentic.spec import AgenticSpec, Verify
from skillgit.errors import ConfigError
from skillgit.judging import mask_copies
from skillgit.llm.base import Reply
from skillgit.rubric import RubricScorer
from skillgit.types import Item, Usage

SECRET = "28.274333882308138"
TESTS = f'''\
import pytest
from calc import area


def test_area_of_three():
    assert area(3) == {SECRET}


def test_area_has_a_docstring():
    assert area.__doc__, "area has no docstring"


def test_negative_radius_is_invalid():
    with pytest.raises(ValueError):
        area(-1)


def test_area_of_zero():
    assert area(0) == 0
'''


@pytest.fixture
def workspace(tmp_path) -> Path:
    (tmp_path / "calc.py").write_text("def area(r):\n    return r * r\n")
    (tmp_path / "test_check.py").write_text(TESTS)
    return tmp_path


def run(workspace: Path, command: str, result: str = "pytest", feedback: str = "summary") -> str:
    return verify.verify(Verify(command, 60, result, feedback), workspace, dict(os.environ)).feedback


@pytest.mark.parametrize("tb", ["auto", "short", "line", "native"])
def test_a_pytest_summary_names_failures_and_messages_but_never_source_or_compared_values(workspace, tb):
    text = run(workspace, f"python -m pytest -q -p no:cacheprovider --tb={tb} test_check.py")
    assert text.splitlines()[0] == "the verifier failed (1 passed, 3 failed)"
    assert "failed: test_area_of_three — AssertionError (the values it compares are not shown)" in text
    assert "failed: test_area_has_a_docstring — AssertionError: area has no docstring" in text
    assert "failed: test_negative_radius_is_invalid — Failed: DID NOT RAISE" in text
    assert SECRET not in text and "assert area" not in text and "test_check.py" not in text and "calc.py" not in text


def test_full_keeps_the_output_and_none_only_the_verdict(workspace):
    full = run(workspace, "python -m pytest -q -p no:cacheprovider test_check.py", feedback="full")
    assert SECRET in full and "…s" in full  # as printed (durations cut: the same outcome reads the same)
    assert run(workspace, "python -m pytest -q -p no:cacheprovider test_check.py", feedback="none") == \
        "the verifier failed (1 passed, 3 failed)"


def test_junit_exit_code_and_json_summaries(workspace):
    junit = run(workspace, "python -m pytest -q -p no:cacheprovider -rN --tb=no test_check.py --junitxml=r.xml",
                "junit:r.xml")
    assert "failed: test_area_of_three — AssertionError (the values it compares are not shown)" in junit
    assert "area has no docstring" in junit and SECRET not in junit
    (workspace / "check.py").write_text(f"import sys\nsys.path.insert(0, '.')\nfrom calc import area\n"
                                        f"print('checking the table')\nassert area(3) == {SECRET}\n")
    script = run(workspace, "python check.py", "exit_code")
    assert script == "the verifier failed (exit status 1)\nchecking the table\nAssertionError"
    (workspace / "j.py").write_text(
        "import json, traceback\ntry:\n    assert 9 == 28.2743\nexcept AssertionError:\n    traceback.print_exc()\n"
        "print(json.dumps({'passed': 0, 'total': 2, 'feedback': 'area() is wrong for r=3'}))\n")
    assert run(workspace, "python j.py", "json") == "the verifier failed (score 0.00)\narea() is wrong for r=3"


def test_messages_and_printed_lines_drop_introspection_and_tracebacks():
    assert neutral("E       AssertionError: assert 'a-b-' == 'a-b'") == \
        "AssertionError (the values it compares are not shown)"
    assert neutral("assert 3 == 4") == "AssertionError (the values it compares are not shown)"
    authored = "AssertionError: slugify has no docstring"
    assert neutral(f"{authored}\nassert None") == authored
    assert neutral("AssertionError: s...") == "AssertionError"  # cut by pytest to the terminal's width
    output = ('Traceback (most recent call last):\n  File "/w/check.py", line 3, in <module>\n'
              '    assert table["x"] == 41\n           ^^^^^^^^^^\nKeyError: \'x\'\nE   assert 1 == 2\n{"score": 0}\n')
    assert printed_lines(output) == ["KeyError: 'x'"]


def test_verify_feedback_is_validated_naming_the_key_and_the_choices(tmp_path):
    meta = {"workspace": {"fixture": "."}, "task_dir": str(tmp_path), "verify": {"command": "true", "feedback": "all"}}
    with pytest.raises(ConfigError) as info:
        AgenticSpec.from_item(Item("t1", "do it", metadata=meta), tmp_path)
    assert "task 't1': verify.feedback 'all' is not one of summary, full, none" in info.value.message
    meta["verify"] = {"command": "true"}
    assert AgenticSpec.from_item(Item("t1", "do it", metadata=meta), tmp_path).verify.feedback == "summary"


def test_mask_copies_replaces_lines_and_runs_of_words():
    rubric = "names the timezone offset explicitly\nsays it in one sentence"
    text = "Fails: it never names the timezone offset explicitly, and per the rubric it says it in one sentence."
    assert mask_copies(text, [rubric]) == "Fails: it never […], and per the rubric it […]."
    assert mask_copies("The output drops the UTC offset of the date.", ["It drops the UTC offset of dates"]) == \
        "The output […] the date."
    assert mask_copies("nothing shared here", [rubric]) == "nothing shared here"


def test_the_judge_is_asked_for_its_own_words_and_its_copies_are_masked():
    class Quoting:
        id = "quoting"

        def __init__(self):
            self.system = ""

        def complete(self, request):
            self.system = request.messages[0].content
            return Reply(json.dumps({"hard": 0, "soft": 0.1, "feedback": "Rubric: names the timezone offset "
                                     "explicitly. Reference: It drops the UTC offset when parsing."}), Usage(calls=1))

    judge = Quoting()
    item = Item("q1", "Why are times wrong?", None, {"rubric": "names the timezone offset explicitly",
                                                       "judge_reference": "It drops the UTC offset when parsing."})
    score = RubricScorer(judge)(item, "A database problem.")
    assert "must not quote the rubric or the reference" in judge.system
    assert score.feedback == "Rubric: […]. Reference: […]"
    assert "timezone" not in score.feedback and "UTC" not in score.feedback


"""SpreadsheetBench (issue 26): the published format read from the shipped sample (whose workbooks are exactly
what its script writes), the student's code run in a sandboxed child once per test case, the paper's OJ-style
metric (hard/soft restriction) with hand-checked values, feedback that never shows an answer cell, the install
fix when openpyxl is missing, and a 1-step `skillgit train` through the real CLI and the real openai SDK against a
scripted student on 127.0.0.1."""

from __future__ import annotations

import importlib.util
import json
import signal
import sys
from importlib import metadata
from pathlib import Path

import pytest

from skillgit import envs
from skillgit.config import SimulatedCfg
from skillgit.envs import spreadsheet as ssb
from skillgit.errors import ConfigError
from skillgit.resources import example_dir
from skillgit.types import Item
from skillgit.world import SimulatedTeacher
from tests.conftest import git, run_cli_inproc
from tests.fake_servers import FakeLLMServer, llm_handler, request_messages
from tests.test_envs import point_at

pytest.importorskip("openpyxl")

SAMPLE = example_dir("envs") / "spreadsheetbench"

TOTALS = """Here is the code.
```python
import openpyxl
wb = openpyxl.load_workbook(input_path)
ws = wb["Orders"]
for r in range(2, ws.max_row + 1):
    ws.cell(r, 4).value = ws.cell(r, 2).value * ws.cell(r, 3).value
wb.save(output_path)
```"""
NORTH_CASE_1_ONLY = """```python
import openpyxl
wb = openpyxl.load_workbook(input_path)
src, dst = wb["Sales"], wb["North"]
for r in (1, 2, 4):  # the North rows of the first workbook only: wrong on the others
    dst.append([c.value for c in src[r]])
wb.save(output_path)
```"""
UPPER = """```py
import openpyxl
wb = openpyxl.load_workbook(input_path)
ws = wb["People"]
for row in ws.iter_rows(min_row=2):
    row[1].value = row[0].value.upper()
wb.save(output_path)
```"""
SUMMARY_TYPO = """```python
import openpyxl
wb = openpyxl.load_workbook(input_path)
amounts = [c.value for c in wb["Amount"]["A"][1:]]
wb["Summary"]["B1"] = len(amounts)
wb.save(output_path)
```"""
ANSWERS = {"Fill column D": TOTALS, "whose Region is North": NORTH_CASE_1_ONLY, "in upper case": UPPER,
           "number of amounts": SUMMARY_TYPO}
EXPECTED = {"ss-totals": (1.0, 1.0), "ss-north": (0.0, 1 / 3), "ss-upper": (1.0, 1.0), "ss-summary": (0.0, 0.0)}


def items() -> dict[str, Item]:
    return {i.id: i for i in envs.get("spreadsheetbench").load(SAMPLE / "dataset.json")}


def one_case(item: Item) -> Item:
    return Item(item.id, item.input, item.expected, {**item.metadata, "cases": item.metadata["cases"][:1]})


def test_the_shipped_workbooks_are_exactly_what_the_sample_script_writes(tmp_path):
    spec = importlib.util.spec_from_file_location("make_samples", SAMPLE / "make_samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    written = module.write(tmp_path)
    assert len(written) == 1 + 4 * 3 * 2
    for file in written:
        assert file.read_bytes() == (SAMPLE / file.relative_to(tmp_path)).read_bytes(), file


def test_the_published_format_is_read_with_the_papers_prompt_fields():
    loaded = items()
    assert list(loaded) == ["ss-totals", "ss-north", "ss-upper", "ss-summary"]
    totals = loaded["ss-totals"]
    assert totals.expected == "'Orders'!D2:D6" and len(totals.metadata["cases"]) == 3
    assert Path(totals.metadata["cases"][1][0]).name == "2_ss-totals_input.xlsx"
    for field in ("### instruction\nFill column D", "### instruction_type\nCell-Level Manipulation",
                  "### answer_position\n'Orders'!D2:D6", "row 1: Product | Quantity | Price | Total",
                  "row 2: Widget | 4 | 2.5\n"):
        assert field in totals.input
    assert "Sheet 'North':\n  (empty)" in loaded["ss-north"].input
    assert ssb.parse_position("Summary!B1,'My Sheet'!a2:B3") == [("Summary", ["B1"]),
                                                                ("My Sheet", ["A2", "A3", "B2", "B3"])]
    assert ssb.parse_position("AA10") == [(None, ["AA10"])]


def test_a_malformed_answer_position_or_missing_workbooks_name_the_row(tmp_path):
    (tmp_path / "dataset.json").write_text(json.dumps([{"id": "x", "instruction": "i", "spreadsheet_path": "s/x",
                                                        "answer_position": "D2:banana"}]))
    with pytest.raises(ConfigError, match=r"dataset.json\[0\]: answer_position: not a cell range"):
        envs.get("spreadsheetbench").load(tmp_path / "dataset.json")
    (tmp_path / "dataset.json").write_text(json.dumps([{"id": "x", "instruction": "i", "spreadsheet_path": "s/x",
                                                        "answer_position": "D2"}]))
    with pytest.raises(ConfigError, match=r"no test case in .*1_x_input.xlsx"):
        envs.get("spreadsheetbench").load(tmp_path / "dataset.json")


def test_code_runs_per_test_case_and_scores_the_papers_hard_and_soft_restriction():
    env, loaded = envs.get("spreadsheetbench"), items()
    for item_id, answer in zip(EXPECTED, ANSWERS.values()):
        score = env.score(loaded[item_id], answer)
        assert (score.hard, score.soft) == pytest.approx(EXPECTED[item_id]), (item_id, score.feedback)
    north = env.score(loaded["ss-north"], NORTH_CASE_1_ONLY)
    assert north.feedback.startswith("1 of 3 test cases pass; test case 2: 9 answer cells wrong: North!A2 (it holds "
                                     "'Fay')")  # column by column, as the published evaluator walks a range
    assert north.feedback.endswith("test case 3: 3 answer cells wrong: North!A3 (it holds 'Max'); North!B3 (it "
                                   "holds 'South'); North!C3 (it holds 30)")
    typo = env.score(loaded["ss-summary"], SUMMARY_TYPO).feedback
    assert typo == ("0 of 3 test cases pass; test cases 1, 2, 3: the code failed: KeyError: 'Worksheet Amount "
                    "does not exist.' (\"solution.py\", line 3)")


def test_feedback_shows_what_the_code_wrote_never_the_answer_cells():
    env, summary = envs.get("spreadsheetbench"), items()["ss-summary"]
    wrong = "```python\nimport openpyxl\nwb = openpyxl.load_workbook(input_path)\nwb['Summary']['B1'] = 3\n" \
            "wb['Summary']['B2'] = 1.5\nwb.save(output_path)\n```"
    score = env.score(one_case(summary), wrong)
    assert score.feedback == ("0 of 1 test cases pass; test case 1: 2 answer cells wrong: Summary!B1 (it holds 3); "
                              "Summary!B2 (it holds 1.5)")
    assert "74.74" not in score.feedback and "(it holds 4)" not in score.feedback  # the answers: 4 and 74.74
    assert "74.74" not in str(env.teacher_reference(summary)) and "Summary!B1" in env.teacher_reference(summary)


@pytest.mark.parametrize("output, feedback", [
    ("I would sum the column.", "the output holds no Python code (expected one ```python block)"),
    ("```python\nfor x in\n```", "the code does not parse: invalid syntax (solution.py line 1)"),
    ("```python\nimport openpyxl\nprint('forgot to save')\n```",
     "0 of 1 test cases pass; test case 1: the code wrote no workbook at output_path"),
    ("```python\nopen(output_path, 'w').write('not a zip')\n```",
     "0 of 1 test cases pass; test case 1: the file at output_path is not a readable workbook (BadZipFile)"),
    ("```python\nimport openpyxl\nwb = openpyxl.load_workbook(input_path)\ndel wb['Summary']\nwb.save(output_path)"
     "\n```", "0 of 1 test cases pass; test case 1: the output workbook has no sheet 'Summary' (it has: Amounts)"),
])
def test_malformed_code_and_broken_output_are_the_students_failure(output, feedback):
    score = envs.get("spreadsheetbench").score(one_case(items()["ss-summary"]), output)
    assert (score.hard, score.soft, score.feedback) == (0.0, 0.0, feedback)


def test_the_code_runs_in_a_temp_folder_without_the_callers_secrets_and_is_stopped_at_the_timeout(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-of-the-caller")
    env, upper = envs.get("spreadsheetbench"), one_case(items()["ss-upper"])
    probe = ("```python\nimport os, openpyxl\nwb = openpyxl.load_workbook(input_path)\nws = wb['People']\n"
             "ws['B2'] = os.environ.get('OPENAI_API_KEY', 'no key')\n"
             "ws['B3'] = str(os.path.expanduser('~').startswith(os.getcwd()))\n"
             "ws['B4'] = str(sorted(os.listdir('.')))\nwb.save(output_path)\n```")
    feedback = env.score(upper, probe).feedback
    assert "B2 (it holds 'no key')" in feedback and "B3 (it holds 'True')" in feedback
    assert "B4 (it holds \"['home', 'input.xlsx', 'runner.py'" in feedback
    stuck = envs.get("spreadsheetbench", {"timeout_s": 1}).score(upper, "```python\nwhile True:\n    pass\n```")
    assert stuck.feedback == "0 of 1 test cases pass; test case 1: the code ran past the 1s limit and was stopped"


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads /proc")
def test_nothing_the_code_started_outlives_its_run():
    marker = "313.25"
    code = (f"```python\nimport subprocess, openpyxl\nsubprocess.Popen(['sleep', '{marker}'])\n"
            "openpyxl.load_workbook(input_path).save(output_path)\n```")
    # (the leftover holds the output pipe open, so the run lasts until its timeout: a short one here)
    envs.get("spreadsheetbench", {"timeout_s": 4}).score(one_case(items()["ss-upper"]), code)

    def running() -> list[str]:
        found = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if cmdline.read_bytes().split(b"\0")[:2] == [b"sleep", marker.encode()]:
                    found.append(cmdline.parent.name)
            except OSError:
                pass
        return found

    assert running() == []


def test_without_openpyxl_the_env_names_the_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "openpyxl", None)  # `import openpyxl` raises ImportError
    with pytest.raises(ConfigError) as caught:
        envs.get("spreadsheetbench").load(SAMPLE / "dataset.json")
    assert "pip install 'openpyxl>=3.1'" in caught.value.hint and "skillgit[" not in caught.value.hint
    requires = [r.replace(" ", "") for r in metadata.requires("skillgit") or []]
    assert any(r.startswith("openpyxl") and 'extra=="spreadsheet"' in r for r in requires), requires
    assert any(r.startswith("openpyxl") and 'extra=="test"' in r for r in requires)  # so CI runs these tests


@pytest.mark.slow
def test_one_training_step_on_the_sample_through_the_cli(tmp_path):
    folder, key = tmp_path / "proj", {"OPENAI_API_KEY": "sk-test-envs"}
    proc = run_cli_inproc("init", str(folder), "--env", "spreadsheetbench", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (folder / "data" / "spreadsheetbench" / "spreadsheet" / "ss-north" / "3_ss-north_answer.xlsx").is_file()
    teacher = llm_handler(SimulatedTeacher(SimulatedCfg(seed=1)))

    def handle(body: dict) -> str:
        if "teacher" in str(body.get("model")):
            return teacher(body)
        user = [text for role, text in request_messages(body) if role == "user"][-1]
        return next((code for key, code in ANSWERS.items() if key in user), "no idea")

    with FakeLLMServer(handle) as server:
        point_at(folder, server)
        git(folder, "add", "-A")
        git(folder, "commit", "-qm", "train on spreadsheetbench")
        trained = run_cli_inproc("train", "--set", "train.max_steps=1", "--json", cwd=folder, env=key)
        assert trained.returncode == 0, trained.stderr[-3000:]
        scored, printed = {}, []
        for split in ("train", "val", "test"):
            proc = run_cli_inproc("eval", "--split", split, "--json", cwd=folder, env=key)
            assert proc.returncode == 0, proc.stderr[-2000:]
            result = json.loads(proc.stdout)
            assert result["env_metric"] == ssb.SpreadsheetBench.metric
            scored.update({row["id"]: (row["hard"], row["soft"]) for row in result["items"]})
            printed.append(result)
    assert json.loads(trained.stdout)["steps"] == 1
    assert scored.keys() == EXPECTED.keys()
    for item_id, (hard, soft) in EXPECTED.items():
        assert scored[item_id] == (hard, pytest.approx(soft, abs=1e-4)), item_id


def test_the_runner_ends_a_sleeping_child_on_its_own_when_nobody_is_left_to_kill_it(tmp_path):
    # skillgit killed with kill -9 mid-run can no longer stop the child at its timeout; the CPU limit does not stop
    # a child that sleeps. The runner's own wall-clock alarm does (here 1 s + 5).
    import subprocess
    import sys

    from skillgit.envs import pysandbox

    (tmp_path / "solution.py").write_text("import time\ntime.sleep(120)\n", encoding="utf-8")
    (tmp_path / "runner.py").write_text(pysandbox.RUNNER.format(memory=pysandbox.MEMORY_BYTES, cpu=1 + 5,
                                                                output=pysandbox.OUTPUT), encoding="utf-8")
    done = subprocess.run([sys.executable, "-I", "-B", "runner.py"], cwd=tmp_path, timeout=90, capture_output=True)
    assert done.returncode == -signal.SIGALRM


# ---------------------------------------------------------------------------------------------- multi-round
SHEETNAMES = """```python
import openpyxl
print(openpyxl.load_workbook(input_path).sheetnames)
```"""
SUMMARY = """```python
import openpyxl
wb = openpyxl.load_workbook(input_path)
amounts = [c.value for c in wb["Amounts"]["A"][1:] if c.value is not None]
wb["Summary"]["B1"] = len(amounts)
wb["Summary"]["B2"] = round(sum(amounts), 2)
wb.save(output_path)
```"""


class Reviser:
    """A student that sends its scripted rounds in order (the last one again when it runs out)."""

    id = "reviser"

    def __init__(self, *rounds: str):
        self.rounds, self.prompts = rounds, []

    def run(self, skill, item, sample=0):
        from skillgit.llm.base import Reply
        from skillgit.types import Usage

        self.prompts.append(item.input)
        return Reply(self.rounds[min(len(self.prompts), len(self.rounds)) - 1], Usage(calls=1))


def test_multi_round_shows_each_runs_result_and_ends_when_the_output_is_written():
    import openpyxl

    env = envs.get("spreadsheetbench", {"rounds": 5, "timeout_s": 20})
    item = env.load(SAMPLE / "dataset.json")[3]
    assert item.id == "ss-summary"
    student = Reviser(SUMMARY_TYPO, SHEETNAMES, SUMMARY, TOTALS)
    reply = env.run(student, "SKILL", item)
    assert len(student.prompts) == 3 and reply.usage.calls == 3  # the third run wrote output_path: the end
    assert reply.score is not None and (reply.score.hard, reply.score.soft) == (1.0, 1.0)  # every test case
    first, second, third = student.prompts
    assert first.startswith(item.input) and "You have up to 5 rounds" in first and "Round 1 of 5" in first
    assert "### round 1: your code\n```python\nimport openpyxl" in second
    assert "The code failed: KeyError: 'Worksheet Amount does not exist.'" in second
    assert "output_path was not written" in second and "stderr (its end):\nTraceback" in second
    assert "The code ran to the end (exit 0); output_path was not written.\nstdout (its end):\n" \
           "['Amounts', 'Summary']" in third and "Round 3 of 5" in third
    answer = openpyxl.load_workbook(item.metadata["cases"][0][1], data_only=True)["Summary"]
    total = answer["B2"].value  # the answer workbook is never read into a prompt
    assert isinstance(total, float) and str(total) not in "".join(student.prompts)
    trace = reply.trace.splitlines()
    assert sum(line.startswith("→ run code: import openpyxl") for line in trace) == 3
    assert "← The code failed: KeyError: 'Worksheet Amount does not exist.'" in reply.trace
    assert trace[-1] == "· conversation ended after 3 rounds (a run wrote output_path); the last code is the solution"


def test_multi_round_scores_the_last_code_when_no_run_writes_the_output():
    env = envs.get("spreadsheetbench", {"rounds": 2, "timeout_s": 20})
    item = one_case(items()["ss-summary"])
    student = Reviser(SHEETNAMES, "I would rather not write code.")
    reply = env.run(student, "SKILL", item)
    assert len(student.prompts) == 2 and "nothing was run" not in student.prompts[1]
    assert reply.score is not None and reply.score.hard == 0.0
    assert "no Python code" in reply.score.feedback
    assert reply.trace.splitlines()[-1].startswith("· conversation ended after 2 rounds (no run wrote output_path")
    assert "→ run code: (no code)" in reply.trace and "nothing was run" in reply.trace
    single = envs.get("spreadsheetbench")  # rounds: 1 (the default) is one call, scored by the loop
    assert single.run(Reviser(TOTALS), "SKILL", item).score is None
    with pytest.raises(ConfigError, match="env.options.rounds: must be a whole number >= 1"):
        envs.get("spreadsheetbench", {"rounds": 0}).load(SAMPLE / "dataset.json")

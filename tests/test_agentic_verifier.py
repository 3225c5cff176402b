"""An agent must not pass by editing its own verifier (skillgit/agentic/guard.py). Real parts: a real git repository
as the task's workspace, a scripted agent run by the agent student's generic preset as a real subprocess (confined
as in a training run), a real pytest or shell verifier. Each tampering agent below scored hard = 1 before the
verifier's files were put back; now the verdict is on its real work, and the teacher reads which files it changed
but never their content."""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from skillgit.agentic import guard
from skillgit.agentic.spec import AgenticSpec, Verify
from skillgit.agentic.student import AgentStudent
from skillgit.config import CommandCfg
from skillgit.errors import ConfigError
from skillgit.llm.base import LLMError
from skillgit.types import Item
from tests.helpers import agentic_repo

SKILL = "---\nname: demo\ndescription: d\n---\n# Demo\n"
TEST = ("from app import add\nfrom verifylib import expected\n\n\ndef test_add():\n"
        "    assert add(2, 3) == expected(), 'add is wrong'  # SECRET-TEST-LINE\n")
FILES = {
    "repos/app/app.py": "def add(a, b):\n    return a - b\n",
    "repos/app/tests/verify/test_add.py": TEST,
    "repos/app/tests/verify/verifylib.py": "def expected():\n    return 5\n",
    "repos/app/check.sh": "#!/bin/sh\nexec python -m pytest -q -p no:cacheprovider tests/verify\n",
    "repos/app/pyproject.toml": '[project]\nname = "app"\nversion = "0.1"\n\n[tool.pytest.ini_options]\n'
                                'addopts = "-p no:cacheprovider"\n',
}
# the scripted agent: each action is one way to make the verifier say "passed" (or to do the work honestly)
AGENT = textwrap.dedent('''
    import os, sys
    from pathlib import Path
    for action in sys.argv[1:]:
        if action == "fix":
            Path("app.py").write_text("def add(a, b):\\n    return a + b\\n")
        elif action == "edit-test":
            Path("tests/verify/test_add.py").write_text("def test_add():\\n    assert True\\n")
        elif action == "conftest":
            Path("conftest.py").write_text(
                "import pytest\\n"
                "@pytest.hookimpl(hookwrapper=True)\\n"
                "def pytest_runtest_makereport(item, call):\\n"
                "    outcome = yield\\n"
                "    outcome.get_result().outcome = 'passed'\\n")
        elif action == "script":
            Path("check.sh").write_text("#!/bin/sh\\nexit 0\\n")
        elif action == "shadow":
            Path("pytest.py").write_text("print('1 passed in 0.01s')\\n")
        elif action == "ini":
            Path("tests/verify/pytest.ini").write_text("[pytest]\\naddopts = -p no:cacheprovider --co\\n")
        elif action == "link":
            os.rename("tests/verify", "tests/orig")
            os.symlink(os.environ["ELSEWHERE"], "tests/verify")
        elif action == "junit":
            Path("report.xml").write_text('<testsuite tests="1" failures="0" errors="0" skipped="0">'
                                          '<testcase name="t"/></testsuite>')
        elif action == "helper":
            Path("tests/verify/verifylib.py").write_text("def expected():\\n    return -1\\n")
        elif action == "fake-module":
            Path("tests/verify/app.py").write_text("def add(a, b):\\n    return 5\\n")
        elif action == "lock":  # a tampered file and its folder made read-only
            Path("tests/verify/verifylib.py").write_text("def expected():\\n    return -1\\n")
            Path("tests/verify/conftest.py").write_text("")
            os.chmod("tests/verify/verifylib.py", 0o444)
            os.chmod("tests/verify", 0o555)
        elif action == "own-test-next":
            Path("tests/verify/test_mine.py").write_text("def test_mine():\\n    pass\\n")
        elif action == "own-work":  # honest: its own test, a dependency in pyproject's [project]
            Path("tests/test_mine.py").write_text("def test_mine():\\n    pass\\n")
            text = Path("pyproject.toml").read_text().replace('version = "0.1"', 'version = "0.2"')
            Path("pyproject.toml").write_text(text)
        elif action == "pyproject-pytest":
            text = Path("pyproject.toml").read_text().replace('version = "0.1"', 'version = "0.3"')
            Path("pyproject.toml").write_text(text.replace("cacheprovider", "cacheprovider --co"))
    print("done")
''')


@pytest.fixture
def project(tmp_path) -> Path:
    return agentic_repo(tmp_path / "proj", FILES, SKILL)


def _run(project: Path, *actions: str, command: str = "python -m pytest -q -p no:cacheprovider tests/verify",
         result: str = "pytest", files: list[str] | None = None, env: dict[str, str] | None = None):
    script = project.parent / "agent.py"
    script.write_text(AGENT)
    verify: dict = {"command": command, "result": result, "timeout_s": 60}
    if files is not None:
        verify["files"] = files
    item = Item("t1", "make add add", metadata={"workspace": {"fixture": "repos/app"}, "verify": verify,
                                                "task_dir": str(project)})
    student = AgentStudent(CommandCfg(preset="generic", argv=(sys.executable, str(script), *actions), output="text",
                                      timeout_s=60), project_root=project, model=None,
                           env={**os.environ, **(env or {})}, skill_path="skill", skill_branch="main")
    try:
        reply = student.run(SKILL, item)
    finally:
        student.workspaces.close()
    assert reply.score is not None
    return reply


PYTEST = "python -m pytest -q -p no:cacheprovider tests/verify"


@pytest.mark.parametrize("action, command, result, shown", [
    ("edit-test", PYTEST, "pytest", "tests/verify/test_add.py (edited)"),
    ("conftest", PYTEST, "pytest", "conftest.py (added)"),
    ("script", "sh check.sh", "exit_code", "check.sh (edited)"),
    ("helper", PYTEST + "/test_add.py", "pytest", "tests/verify/verifylib.py (edited)"),
    ("lock", PYTEST + "/test_add.py", "pytest", "tests/verify/verifylib.py (edited), tests/verify/conftest.py (added)"),
    ("fake-module", PYTEST + "/test_add.py::test_add", "pytest", "tests/verify/app.py (added)"),
    ("shadow", "python -m pytest -q tests/verify", "pytest", "pytest.py (added)"),
    ("ini", "python -m pytest -q tests/verify", "exit_code", "tests/verify/pytest.ini (added)"),
    ("pyproject-pytest", "python -m pytest -q tests/verify", "exit_code", "pyproject.toml (edited)"),
])
def test_an_agent_that_tampers_with_its_verifier_does_not_pass(project, action, command, result, shown):
    reply = _run(project, action, command=command, result=result)
    assert reply.score.hard == 0.0, reply.score.feedback
    assert reply.score.feedback.startswith("the agent changed the verifier's files"), reply.score.feedback
    assert shown in reply.score.feedback and shown in reply.trace and "could not" not in reply.score.feedback
    # the teacher reads which file, never the verifier's code (the diff is taken after the files are back)
    assert "SECRET-TEST-LINE" not in reply.trace and "pytest_runtest_makereport" not in reply.trace
    assert "exit 0" not in reply.trace.split("workspace diff:")[1]


def test_tampering_on_top_of_the_real_fix_is_scored_on_the_fix(project):
    reply = _run(project, "fix", "edit-test", "conftest")
    assert reply.score.hard == 1.0 and reply.score.soft == 1.0
    assert "tests/verify/test_add.py (edited), conftest.py (added)" in reply.score.feedback
    assert "+    return a + b" in reply.trace  # the real work is in the diff, the tampering is not
    assert "assert True" not in reply.trace


def test_an_honest_agent_passes_and_its_own_work_is_not_called_tampering(project):
    reply = _run(project, "fix", "own-work")
    assert reply.score.hard == 1.0
    assert "verifier's files" not in reply.score.feedback and "verifier's files" not in reply.trace
    assert "tests/test_mine.py" in reply.trace and '+version = "0.2"' in reply.trace  # its work, kept
    beside = _run(project, "fix", "own-test-next", command=PYTEST + "/test_add.py")  # its own test, next to it
    assert beside.score.hard == 1.0 and "verifier's files" not in beside.score.feedback
    assert "tests/verify/test_mine.py" in beside.trace
    wrong = _run(project, "own-work")
    assert wrong.score.hard == 0.0 and "verifier's files" not in wrong.score.feedback


def test_a_verifier_folder_replaced_by_a_link_is_put_back_and_nothing_outside_is_written(project, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "test_add.py").write_text("def test_add():\n    pass\n")
    reply = _run(project, "link", env={"ELSEWHERE": str(elsewhere)})
    assert reply.score.hard == 0.0 and "tests/verify" in reply.score.feedback
    assert sorted(p.name for p in elsewhere.iterdir()) == ["test_add.py"]
    assert (elsewhere / "test_add.py").read_text() == "def test_add():\n    pass\n"


def test_a_junit_report_the_agent_wrote_is_not_read_as_the_verifiers(project):
    with pytest.raises(LLMError) as err:  # the command wrote no report: unknown, never the agent's success
        _run(project, "junit", command="true", result="junit:report.xml")
    assert err.value.kind == "unknown" and "no readable JUnit report" in err.value.message


def test_verify_files_names_more_and_is_checked(project):
    (project / "repos/app/data").mkdir()
    (project / "repos/app/data/expected.txt").write_text("5\n")
    reply = _run(project, "fix", command="sh -c 'test \"$(cat data/expected.txt)\" = 5'", result="exit_code",
                 files=["data/", "check.sh"])
    assert reply.score.hard == 1.0
    with pytest.raises(LLMError) as err:
        _run(project, "fix", files=["tests/verfy"])
    assert err.value.kind == "config" and "verify.files entry 'tests/verfy' does not exist" in err.value.message
    for bad, why in ((["../x"], "holds '.' or '..'"), ([], "must be a non-empty list"), (["/etc"], "is absolute"),
                     ([".git/config"], "names the repository's .git")):
        item = Item("t2", "p", metadata={"workspace": {"fixture": "repos/app"},
                                         "verify": {"command": "true", "files": bad}, "task_dir": str(project)})
        with pytest.raises(ConfigError) as cfg:
            AgenticSpec.from_item(item, project)
        assert "verify.files" in cfg.value.message and why in cfg.value.message and "files" in cfg.value.hint


def test_the_paths_a_command_runs_as_its_verifier():
    assert guard.named("python -m pytest -q tests/verify/test_x.py::test_one -k slug") == \
        (["tests/verify/test_x.py", "slug"], "pytest")
    assert guard.named("cd . && bash ci/check.sh --fast; ./run_tests.sh | tee out") == \
        (["ci/check.sh", "run_tests.sh"], "")
    assert guard.named("mypy src && ruff check src") == ([], "")  # what they check is the agent's work
    assert guard.named("PYTHONHASHSEED=0 python check.py arg") == (["check.py"], "")
    assert guard.named("make test") == (["Makefile", "makefile", "GNUmakefile"], "")


def test_config_files_count_by_their_pytest_section_and_a_failed_restore_is_said(tmp_path):
    ws, keep = tmp_path / "ws", tmp_path / "keep"
    (ws / "tests").mkdir(parents=True)
    (ws / "tests" / "test_x.py").write_text("def test_x():\n    pass\n")
    (ws / "tox.ini").write_text("[tox]\nenvlist = py\n\n[pytest]\naddopts = -q\n")
    (ws / "setup.cfg").write_text("[metadata]\nname = x\n")
    spec = AgenticSpec("t", "p", None, None, "HEAD", (), Verify("python -m pytest tests"))
    base = guard.capture(spec, ws, keep)
    (ws / "tox.ini").write_text("[tox]\nenvlist = py311\n\n[pytest]\naddopts = -q\n")  # not pytest's: kept
    (ws / "setup.cfg").write_text("[metadata]\nname = x\n\n[tool:pytest]\naddopts = --co\n")  # pytest's: put back
    (ws / "sub").mkdir()
    (ws / "sub" / "setup.cfg").write_text("[metadata]\nname = y\n")  # a new one without a pytest section: kept
    assert base.restore(ws).changes == (guard.Change("setup.cfg", "edited"),)
    assert "envlist = py311" in (ws / "tox.ini").read_text() and "tool:pytest" not in (ws / "setup.cfg").read_text()
    assert (ws / "sub" / "setup.cfg").exists()
    (ws / "tests" / "test_x.py").write_text("")
    shutil.rmtree(keep)  # what was kept aside is gone: the rollout cannot be verified honestly
    tamper = base.restore(ws)
    assert tamper.failed and "the rollout scores 0" in tamper.describe()

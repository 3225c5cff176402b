"""`run_cli_inproc` (the in-process CLI most CLI tests use) against `run_cli` (the real `python -m skillgit`): the
same stdout, stderr and exit code for success, our errors, usage errors and exit codes set by commands, and the
test process left as it was (cwd, environment, SIGINT handler)."""

from __future__ import annotations

import json
import os
import signal

import pytest

from tests.conftest import run_cli, run_cli_inproc


@pytest.fixture
def folders(make_repo, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    return {"repo": make_repo({"SKILL.md": "# Skill\n\nBe helpful.\n"}), "plain": plain}


@pytest.mark.parametrize("args,where", [
    (("--version",), "plain"),
    (("log", "--json"), "repo"),
    (("log",), "plain"),  # SkillgitError: error:/hint: lines, exit code 3
    (("show", "r9/9"), "repo"),
    (("eval", "--split", "nope"), "repo"),  # raised before the project is opened: exit code 2
    (("no-such-command",), "repo"),  # click's usage error
])
def test_in_process_output_and_exit_code_match_the_real_cli(folders, args, where):
    real = run_cli(*args, cwd=folders[where])
    inproc = run_cli_inproc(*args, cwd=folders[where])
    assert (inproc.returncode, inproc.stdout, inproc.stderr) == (real.returncode, real.stdout,
                                                                 real.stderr.replace("python -m skillgit", "skillgit"))


def test_in_process_runs_leave_the_process_as_it_was(folders):
    before = (os.getcwd(), dict(os.environ), signal.getsignal(signal.SIGINT))
    proc = run_cli_inproc("log", "--json", cwd=folders["repo"], env={"SKILLGIT_EXTRA_FOR_TEST": "1"})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []  # no run yet
    assert (os.getcwd(), dict(os.environ), signal.getsignal(signal.SIGINT)) == before
    failed = run_cli_inproc("log", cwd=folders["plain"])
    assert failed.returncode == 3 and failed.stderr.startswith("error: not a git repository")
    assert (os.getcwd(), dict(os.environ), signal.getsignal(signal.SIGINT)) == before


def test_a_python_scorer_of_one_project_does_not_leak_into_the_next_in_process_run(tmp_path):
    """A real process imports a project's scorer afresh; in-process runs must too (same module name, two projects)."""
    from skillgit.cli.demo import create_project

    means = []
    for name, value in (("a", 0.25), ("b", 0.75)):
        folder = tmp_path / name
        create_project(folder, seed=0)
        (folder / "my_scorer.py").write_text(f"def score(item, output):\n    return {value}\n")
        proc = run_cli_inproc("eval", "--split", "val", "--json", "--set", "env.scorer.type=python",
                              "--set", "env.scorer.callable=my_scorer:score", cwd=folder)
        assert proc.returncode == 0, proc.stderr
        means.append(json.loads(proc.stdout)["soft"])
    assert means == [0.25, 0.75]

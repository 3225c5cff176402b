"""A run trained onto a review branch (`train --branch`) is part of the history every read command shows: `log`
lists its accepted steps, `show N` / `export N -` find them, and `status` draws its val trend. Before, the history
walked only the skill branch, so the accepted steps of a review run were invisible and `show 1` was unknown."""

from __future__ import annotations

import json

from skillgit.cli.demo import create_project
from tests.conftest import git, run_cli_inproc

GATE_OFF = ["--set", "evaluation.use_gate=false", "--set", "train.max_steps=2"]


def test_a_review_branch_run_is_in_log_show_export_and_status(tmp_path):
    folder = tmp_path / "p"
    create_project(folder, 0)
    main_before = git(folder, "rev-parse", "main")
    done = run_cli_inproc("train", "--branch", "review/learned", *GATE_OFF, cwd=folder)
    assert done.returncode == 0, done.stderr
    assert git(folder, "rev-parse", "main") == main_before

    log = json.loads(run_cli_inproc("log", "--json", cwd=folder).stdout)
    run = json.loads(run_cli_inproc("status", "--json", cwd=folder).stdout)["run"]
    accepted = [e for e in log if e["run"] == run and e["verdict"] == "accepted"]
    assert accepted, log
    on_branch = git(folder, "rev-list", "--first-parent", "review/learned").split()
    assert all(e["sha"] in on_branch for e in accepted)
    first = accepted[0]["step"]

    shown = json.loads(run_cli_inproc("show", first, "--json", cwd=folder).stdout)
    assert shown["outcome"]["verdict"] == "accepted"
    exported = run_cli_inproc("export", f"{run}/{first}", "-", cwd=folder)
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == git(folder, "show", f"{accepted[0]['sha']}:SKILL.md") + "\n"

    status = run_cli_inproc("status", cwd=folder).stdout
    trend = next(line for line in status.splitlines() if "val trend" in line)
    assert len(trend.split(":", 1)[1].strip()) >= 2  # seed plus the accepted steps, not one bar

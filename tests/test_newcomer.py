"""What a newcomer hits first (issue 23, items 14, 15, 17, 19): `eval HEAD` scores HEAD; Ctrl-C or a budget stop
after `train --new` prints the command that resumes that run; `train --dry-run` prices a local server as the run
does; usage mistakes are one `error:` / `hint:` pair (exit 2, unknown revisions too); `--help` has no `<bool>`;
`doctor` fits 80 columns; Markdown shows `p < 0.05` as written; the progress line never shows a made-up
`0.0k tok`. Real CLI (in-process entry point, or a subprocess where signals or the terminal width matter) on real
git repositories in temporary folders."""

from __future__ import annotations

import io
import json
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git, run_cli, run_cli_inproc
from tests.helpers import demo_project

RULES = ("\nSeparate fields with ' | ' (space, pipe, space).\n\nWrite codes in uppercase letters (AB-12).\n\n"
         "Use metric units: weights in kg with two decimals.\n")


@pytest.fixture
def project(tmp_path) -> Path:
    return demo_project(tmp_path / "p")


def runs(root: Path) -> list[str]:
    return git(root, "for-each-ref", "--format=%(refname)", "refs/skillgit/runs").splitlines()


# ---------------------------------------------------------------------------------------------- item 14
def test_eval_head_scores_the_checked_out_commit_not_the_skill_branch(project):
    git(project, "switch", "-q", "-c", "feature/rules")
    (project / "SKILL.md").write_text((project / "SKILL.md").read_text() + RULES, encoding="utf-8")
    git(project, "commit", "-qam", "human: write the house style down")
    one = ("--split", "val", "--set", "evaluation.gate_repeats=1", "--json")
    head = run_cli_inproc("eval", "HEAD", *one, cwd=project)
    assert head.returncode == 0, head.stderr[-2000:]
    got = json.loads(head.stdout)
    assert got["rev"] == "HEAD" and got["commit"] == git(project, "rev-parse", "HEAD")
    assert got["blob"] == git(project, "rev-parse", "HEAD:SKILL.md")  # the feature branch's edit, not main's file
    tip = json.loads(run_cli_inproc("eval", *one, cwd=project).stdout)  # no revision: the skill branch's tip
    assert tip["rev"] == "main" and tip["blob"] == git(project, "rev-parse", "main:SKILL.md") != got["blob"]
    assert got["mean"] > tip["mean"]  # the rules help the simulated student: HEAD really was scored
    table = run_cli_inproc("eval", "HEAD", *one[:-1], cwd=project)
    assert f"HEAD ({got['commit'][:10]}) on val" in table.stdout


# ---------------------------------------------------------------------------------------------- item 15
def test_ctrl_c_after_train_new_prints_the_command_that_resumes_that_run(project):
    proc = subprocess.Popen([sys.executable, "-m", "skillgit", "train", "--new", "--events",
                             "--set", "train.max_steps=2"],
                            cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    run_id = None
    for line in proc.stderr:
        if '"event": "run_start"' in line:
            run_id = json.loads(line)["run"]
        if '"event": "step_start"' in line:
            break
    proc.send_signal(signal.SIGINT)
    rest = proc.stderr.read()
    assert proc.wait(timeout=120) == 130, rest
    said = f"hint: resume this run with: skillgit train --run {run_id} --set train.max_steps=2"
    assert run_id and said in rest and "run the same command again" not in rest, rest
    command = rest.split("hint: resume this run with: ", 1)[1].splitlines()[0]
    words = shlex.split(command)
    assert words[:2] == ["skillgit", "train"]
    again = run_cli(*words[1:], cwd=project)  # exactly what was printed
    assert again.returncode == 0, again.stderr[-2000:]
    status = json.loads(run_cli_inproc("status", "--json", cwd=project).stdout)
    assert status["run"] == run_id and status["status"] == "finished"
    assert runs(project) == [f"refs/skillgit/runs/{run_id}"]  # resumed, not a second new run


def test_a_budget_stop_after_train_new_prints_the_command_that_resumes_that_run(project):
    proc = run_cli_inproc("train", "--new", "--set", "budget.max_calls=40", "--set", "train.max_steps=2",
                          cwd=project)
    assert proc.returncode == 5, proc.stderr[-2000:]
    (run_ref,) = runs(project)
    run_id = run_ref.rsplit("/", 1)[1]
    assert (f"resume this run with: skillgit train --run {run_id} --set budget.max_calls=40 "
            "--set train.max_steps=2") in proc.stderr
    plain = run_cli_inproc("train", "--set", "budget.max_calls=40", "--set", "train.max_steps=2", cwd=project)
    assert "resume this run with" not in plain.stderr  # without --new the same command resumes: nothing to add


# ---------------------------------------------------------------------------------------------- item 17
def _dry_run_cost(root: Path, *sets: str, env: dict | None = None) -> dict:
    args = [a for s in sets for a in ("--set", s)]
    proc = run_cli_inproc("train", "--dry-run", "--json", *args, cwd=root, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/v1", "http://localhost:11434/v1"])
def test_dry_run_prices_a_local_server_as_the_run_counts_it(project, url):
    local = ("model.student_backend=openai", "model.student_model=gpt-4.1", f"model.student.base_url={url}")
    plan = _dry_run_cost(project, *local)
    assert plan["cost_usd"] == {"student": 0.0, "teacher": 0.0}  # not OpenAI's price for a model named gpt-4.1
    assert "unknown price" not in plan["text"] and "student $0.00" in plan["text"]
    # the endpoint from the environment counts too, as the backend reads it
    by_env = _dry_run_cost(project, *local[:2], env={"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-test"})
    assert by_env["cost_usd"]["student"] == 0.0
    # OpenAI itself bills by the table, and a configured price wins over "free" for the local server
    hosted = _dry_run_cost(project, *local[:2], env={"OPENAI_API_KEY": "sk-test"})
    assert hosted["cost_usd"]["student"] > 0.1
    config = project / "skillgit.yaml"
    config.write_text(config.read_text() + "prices:\n  gpt-4.1: {prompt: 100, completion: 100}\n")
    assert _dry_run_cost(project, *local)["cost_usd"]["student"] > hosted["cost_usd"]["student"]


def test_dry_run_and_the_backend_agree_on_the_price():
    from skillgit.config import config_from_dict
    from skillgit.llm import pricing
    from skillgit.llm.factory import build_raw

    for url, local in (("http://127.0.0.1:9/v1", True), ("https://api.openai.com/v1", False)):
        cfg = config_from_dict({"model": {"student_backend": "openai", "student_model": "gpt-4.1",
                                          "student": {"base_url": url}}})
        backend = build_raw(cfg, "student", None, environ={"OPENAI_API_KEY": "sk-test"})
        planned = pricing.planned_price("openai", "gpt-4.1", cfg.model.student, cfg.prices, {})
        assert planned == backend.price and (planned == pricing.FREE) == local


# ---------------------------------------------------------------------------------------------- item 19
@pytest.mark.parametrize("args, message, hint", [
    (("train", "--bogus"), "error: no such option: --bogus", "hint: see `skillgit train --help`"),
    (("show",), "error: missing argument 'rev'", "hint: see `skillgit show --help`"),
    (("trian",), "error: no such command 'trian'. Did you mean 'train'?", "hint: see `skillgit --help`"),
    (("train", "--set"), "error: option '--set' requires an argument", "hint: see `skillgit train --help`"),
    (("show", "no-such-step"), "error: unknown revision 'no-such-step'", "hint: see the steps with `skillgit log`"),
])
def test_usage_mistakes_are_one_error_and_hint_line_with_exit_2(project, args, message, hint):
    proc = run_cli_inproc(*args, cwd=project)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stderr
    assert lines[0] == message and lines[1].startswith(hint) and len(lines) == 2, lines
    assert "╭" not in proc.stderr and "Usage:" not in proc.stderr and proc.stdout == ""


def test_help_shows_no_type_placeholders(project):
    proc = run_cli_inproc("train", "--help", cwd=project)
    assert proc.returncode == 0
    assert "--dry-run" in proc.stdout and "PATH" in proc.stdout and "TEXT" in proc.stdout
    for placeholder in ("<bool>", "<str>", "<path>", "<list[str]>", "<int>"):
        assert placeholder not in proc.stdout, placeholder


def test_doctor_fits_80_columns(project):
    proc = run_cli("doctor", cwd=project, env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "ok (offline simulation" in proc.stdout and "agent CLIs" in proc.stdout
    assert max(len(line) for line in lines) <= 80 and len(lines) <= 16, proc.stdout


def test_markdown_shows_comparisons_as_written_and_keeps_html_inert():
    from skillgit.review.pr import md

    assert md("not significant (p=0.062, needs < 0.05); a -> b") == "not significant (p=0.062, needs < 0.05); a -> b"
    assert md("R&D") == "R&D"
    assert md("<script>alert(1)</script> &lt; @team") == "&lt;script>alert(1)&lt;/script> &amp;lt; &#64;team"
    assert md("> quoted") == "\\> quoted"


def test_the_progress_line_shows_no_token_count_before_one_is_known():
    from rich.console import Console

    from skillgit.cli.progress import RunDisplay
    from skillgit.loop import events as ev

    display = RunDisplay(Console(file=io.StringIO(), force_terminal=True, width=120))
    with display:
        display.handle(ev.RunStarted("r", False, 4, 0.1, 0.1))
        display.handle(ev.StageStarted("1", "rollout"))
        info = display.progress.tasks[0].fields["info"]
    assert "tok" not in info and info.startswith("val 0.100")

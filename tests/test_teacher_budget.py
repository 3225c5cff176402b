"""The agent teacher's turn and wall-time caps (`budget.max_agent_turns`, `budget.max_agent_seconds`) and the dry
run's estimate of them: the ledger counts the turns and seconds of the agent calls that ran, a run stops before
the call that could cross a cap, the call gets what is left (`--max-turns`, a timeout that stops it as a budget,
not as a retryable timeout), and `train --dry-run` says what the agent teacher may spend (loop/agent_step.py,
teacher/agent.py, loop/plan.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from skillgit.config import BudgetCfg, CommandCfg, config_from_dict
from skillgit.errors import BudgetReached
from skillgit.llm.base import LLMError, Message, Request
from skillgit.loop.agent_step import agent_caps, over_budget
from skillgit.project import open_project
from skillgit.records import AgentSpend
from skillgit.session import build_trainer, open_session
from skillgit.teacher.agent import AgentTeacher, Caps, capped
from tests.conftest import run_cli_inproc
from tests.helpers import agent_teacher_project

# A stream-json agent that reports its argv (and sleeps when told to) as its answer.
AGENT = r'''
import json, sys, time
if "--sleep" in sys.argv:
    time.sleep(float(sys.argv[sys.argv.index("--sleep") + 1]))
print(json.dumps({"type": "result", "subtype": "success", "result": json.dumps(sys.argv[1:]), "num_turns": 1}))
'''


def _teacher(tmp_path: Path, *extra: str, max_turns: int | None = None, timeout_s: float = 60) -> AgentTeacher:
    script = tmp_path / "agent.py"
    script.write_text(AGENT, encoding="utf-8")
    cfg = CommandCfg(preset="generic", argv=(sys.executable, str(script), "{max_turns_args}", *extra),
                     output="claude-stream", timeout_s=timeout_s, max_turns=max_turns)
    return AgentTeacher(cfg, model=None, env=dict(os.environ))


def _ask(teacher: AgentTeacher) -> list[str]:
    return json.loads(teacher.complete(Request((Message("user", "a question"),), stage="rank")).text)


def test_what_is_left_of_the_turn_budget_caps_the_agent_below_its_own_max_turns(tmp_path: Path) -> None:
    teacher = _teacher(tmp_path, max_turns=40)
    assert _ask(teacher) == ["--max-turns", "40"]
    with capped(Caps(turns=7)):
        assert _ask(teacher) == ["--max-turns", "7"]
    with capped(Caps(turns=70)):
        assert _ask(teacher) == ["--max-turns", "40"]  # the budget never raises command.max_turns
    assert _ask(_teacher(tmp_path)) == []  # no cap, no flag


def test_an_agent_stopped_at_the_wall_budget_stops_the_run_instead_of_being_retried(tmp_path: Path) -> None:
    teacher = _teacher(tmp_path, "--sleep", "30", timeout_s=60)
    with capped(Caps(seconds=1.0)), pytest.raises(BudgetReached) as caught:
        _ask(teacher)
    assert "budget.max_agent_seconds" in caught.value.message and "max_agent_seconds" in caught.value.hint
    slow = _teacher(tmp_path, "--sleep", "30", timeout_s=1.0)  # its own timeout: a retryable timeout, as before
    with pytest.raises(LLMError) as timeout:
        _ask(slow)
    assert timeout.value.kind == "timeout" and timeout.value.retryable


def test_a_call_that_could_cross_a_cap_does_not_start() -> None:
    budget = BudgetCfg(max_agent_turns=30, max_agent_seconds=100.0)
    assert over_budget(budget, AgentSpend()) is None
    assert agent_caps(budget, AgentSpend()) == Caps(30, 100.0)  # the first call gets the whole budget
    spent = AgentSpend(calls=2, turns=20, seconds=10.0, max_turns=12, max_seconds=6.0)
    assert "next agent teacher call could cross it (20 used + up to 12 a call > 30)" in over_budget(budget, spent)
    with pytest.raises(BudgetReached):
        agent_caps(budget, spent)
    roomy = BudgetCfg(max_agent_turns=40, max_agent_seconds=100.0)
    assert agent_caps(roomy, spent) == Caps(20, 90.0)
    assert over_budget(BudgetCfg(max_agent_seconds=10.0), spent) == "budget.max_agent_seconds reached (10 s ≥ 10 s)"
    assert over_budget(BudgetCfg(), spent) is None


@pytest.mark.slow
def test_a_run_stops_before_the_agent_turn_cap_is_crossed_and_resumes_with_a_larger_one(tmp_path: Path) -> None:
    root = agent_teacher_project(tmp_path / "p")
    # what the simulated agent spends on the first step's call, measured (its turns vary with the evidence): the
    # capped run below makes that same call first (same project, same seed), and it is all the cap is sized for
    session = open_session(open_project(root, None, ["train.max_steps=1"]))
    first = build_trainer(session, run_id="turns", resume=False)
    probe = first.train()
    spent = first.progress.agent
    assert probe.steps == 1 and spent.calls == 1 and spent.turns > 0 and spent.seconds > 0
    assert json.loads(run_cli_inproc("status", "--json", cwd=root).stdout)["agent_teacher"]["turns"] == spent.turns

    cap = spent.max_turns + 1  # room for one call, never two
    root2 = agent_teacher_project(tmp_path / "q")
    session = open_session(open_project(root2, None, ["train.max_steps=3", f"budget.max_agent_turns={cap}"]))
    trainer = build_trainer(session, run_id="capped", resume=False)
    result = trainer.train()
    assert result.status == "stopped" and "budget.max_agent_turns" in result.reason
    assert trainer.progress.agent.calls == 1 and trainer.progress.agent.turns <= cap  # never crossed
    assert result.steps == 1

    session = open_session(open_project(root2, None, ["train.max_steps=3", "budget.max_agent_turns=1000"]))
    resumed = build_trainer(session, run_id="capped")
    assert resumed.train().status == "finished"
    assert resumed.progress.agent.calls == 3  # the first process's call is counted once, with the two new ones


def test_the_dry_run_estimates_the_agent_teachers_calls_turns_and_wall_time(tmp_path: Path) -> None:
    root = agent_teacher_project(tmp_path / "p")
    out = run_cli_inproc("train", "--dry-run", "--json", "--set", "optimizer.proposers=[reflect, agent]",
                         "--set", "model.teacher.command.max_turns=12", "--set", "train.max_steps=4", cwd=root)
    plan = json.loads(out.stdout)
    assert plan["calls"]["agent"] == 4 and plan["calls"]["reflect"] > 0  # both proposers, every step
    assert plan["agent"] == {"calls": 4, "turns": 48, "turns_assumed": False, "seconds": 2400.0}
    assert plan["calls"]["try"] == 4 * 24  # skillgit-try's student runs, at most 24 a step
    text = run_cli_inproc("train", "--dry-run", "--set", "budget.max_agent_turns=20", "--set", "train.max_steps=4",
                          cwd=root).stdout
    assert "agent teacher: 4 step call(s), at most 20 turns (assuming 30 a call" in text
    assert "budget.max_agent_turns caps it" in text and "max_agent_turns=20" in text
    assert "reflect" not in {line.split()[0] for line in text.splitlines() if line.startswith("  ")}


def test_budget_caps_are_checked_like_every_budget() -> None:
    with pytest.raises(Exception) as caught:
        config_from_dict({"budget": {"max_agent_turns": 0}})
    assert "budget.max_agent_turns: must be >= 1" in str(caught.value)

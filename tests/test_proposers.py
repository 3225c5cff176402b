"""Mixing proposers (`optimizer.proposers`, `optimizer.proposer_schedule`): reflect and the agent teacher propose
side by side in one step, gated together; each candidate records its proposer; the per-proposer rates and costs
reach `status`, the report and the PR body; the schedule switches to the agent after n rejected steps in a row
(skillgit/proposer_table.py, loop/proposing.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillgit import proposer_table as proposers
from skillgit.config import config_from_dict
from skillgit.errors import ConfigError
from skillgit.loop import proposing
from skillgit.project import open_project
from skillgit.review import data
from skillgit.session import build_trainer, open_session
from tests.conftest import git, run_cli_inproc
from tests.helpers import agent_teacher_project


def _train(root: Path, run: str, overrides: list[str]):
    session = open_session(open_project(root, None, overrides))
    trainer = build_trainer(session, run_id=run, resume=False)
    trainer.train()
    return session, trainer


def test_two_proposers_propose_in_every_step_and_their_rates_reach_status_report_and_pr(tmp_path: Path) -> None:
    root = agent_teacher_project(tmp_path / "p")
    session, trainer = _train(root, "mix", ["optimizer.proposers=[reflect, agent]", "train.max_steps=2"])
    progress = trainer.progress
    assert set(progress.proposers) == {"reflect", "agent"}
    for name, stats in progress.proposers.items():
        assert stats.proposed == 2, name  # one candidate per proposer per step
        assert stats.usage.calls >= 1 and stats.usage.total_tokens > 0, name
    assert progress.proposers["reflect"].usage.calls > progress.proposers["agent"].usage.calls  # many reflects
    assert sum(s.accepted for s in progress.proposers.values()) == progress.accepted
    review = data.load_run(session.store, "mix")
    made = {d.outcome.step: d.update.proposer for d in review.decisions if d.update is not None}
    # each step's field: the kept one (step N) and its rival (sN-p2), one by each proposer, in the candidate notes
    assert len(made) == 4 and sorted(made)[:2] == ["1", "2"]
    for step in ("1", "2"):
        rival = next(k for k in made if k.startswith(f"s{step}-"))
        assert {made[step], made[rival]} == {"reflect", "agent"}

    status = json.loads(run_cli_inproc("status", "--json", cwd=root).stdout)
    assert status["proposers"]["reflect"]["proposed"] == 2 and status["proposers"]["agent"]["proposed"] == 2
    assert status["proposers"]["agent"]["usage"]["calls"] == progress.proposers["agent"].usage.calls
    text = run_cli_inproc("status", cwd=root).stdout
    assert "reflect: " in text and "agent: " in text and "accepted" in text and "teacher calls" in text
    git(root, "branch", "review/x", "main")  # a head that is not the base (a run on main has no PR of its own)
    body = run_cli_inproc("pr", "--head", "review/x", cwd=root).stdout
    assert "Proposers (acceptance" in body and "- reflect: " in body and "- agent: " in body
    out = tmp_path / "report.html"
    run_cli_inproc("report", "mix", "-o", str(out), cwd=root)
    page = out.read_text(encoding="utf-8")
    assert "<h3>Proposers</h3>" in page and "agent: " in page and "95 % interval" in page


def test_the_schedule_switches_to_the_agent_after_n_rejected_steps_in_a_row(tmp_path: Path) -> None:
    root = agent_teacher_project(tmp_path / "p")
    # an edit budget of 0: reflect's candidates change nothing and are rejected, step after step
    session, trainer = _train(root, "plateau", [
        "optimizer.proposers=[reflect]", "optimizer.proposer_schedule.switch_to=agent",
        "optimizer.proposer_schedule.after_rejected=2", "optimizer.learning_rate=0", "optimizer.min_learning_rate=0",
        "train.max_steps=3"])
    progress = trainer.progress
    assert progress.proposer_switch == 3
    made = {d.outcome.step: d.update.proposer for d in data.load_run(session.store, "plateau").decisions
            if d.update is not None and d.outcome.step.isdigit()}
    assert made == {"1": "reflect", "2": "reflect", "3": "agent"}
    assert progress.proposers["reflect"].proposed == 2 and progress.proposers["agent"].proposed == 1
    assert progress.rejected_streak == 3  # budget 0: the agent's edits are cut too
    assert json.loads(run_cli_inproc("status", "--json", cwd=root).stdout)["proposer_switch"] == 3


def test_the_switch_is_said_once_and_kept() -> None:
    cfg = config_from_dict({"model": {"teacher_backend": "agent"}, "optimizer": {
        "proposers": ["reflect"], "proposer_schedule": {"switch_to": "agent", "after_rejected": 2}}})
    from skillgit.records import RunProgress

    progress = RunProgress("r", "d", "main", rejected_streak=1)
    assert proposing.at_step(cfg, progress, 2)[::2] == (("reflect",), "")
    names, progress, said = proposing.at_step(cfg, progress.replace(rejected_streak=2), 3)
    assert names == ("agent",) and progress.proposer_switch == 3 and "2 steps in a row" in said
    names, progress, said = proposing.at_step(cfg, progress.replace(rejected_streak=0), 4)
    assert names == ("agent",) and said == ""  # kept after an accepted step; said once


def test_every_proposer_name_has_a_builder() -> None:
    assert set(proposing.PROPOSE) == set(proposers.names())


@pytest.mark.parametrize("optimizer,model,message,hint", [
    ({"proposers": ["reflekt"]}, {}, "optimizer.proposers[0]: 'reflekt' is not one of reflect, agent",
     "did you mean 'reflect'?"),
    ({"proposers": ["agent"]}, {}, "optimizer.proposers: 'agent' needs model.teacher_backend: agent",
     "set model.teacher_backend: agent"),
    ({"proposers": ["reflect", "reflect"]}, {}, "optimizer.proposers[1]: 'reflect' is named twice", "name each"),
    ({"proposer_schedule": {"switch_to": "robot"}}, {}, "optimizer.proposer_schedule.switch_to: 'robot' is not one of "
     "reflect, agent", "use one or more of: reflect, agent"),
    ({"proposer_schedule": {"switch_to": "agent"}}, {"teacher_backend": "agent"},
     "optimizer.proposer_schedule.switch_to: 'agent' already proposes alone", "proposers: [reflect]"),
    ({"proposer_schedule": {"switch_to": "agent", "after_rejected": 0}}, {},
     "optimizer.proposer_schedule.after_rejected: must be >= 1", "the default is 3"),
])
def test_config_errors_name_the_key_and_list_the_choices(optimizer, model, message, hint) -> None:
    with pytest.raises(ConfigError) as caught:
        config_from_dict({"optimizer": optimizer, "model": model})
    assert caught.value.message.startswith(message) and hint in caught.value.hint


def test_the_field_size_counts_every_proposer() -> None:
    cfg = config_from_dict({"model": {"teacher_backend": "agent"},
                            "optimizer": {"proposers": ["reflect", "agent"], "proposals": 2}})
    assert proposing.field_size(cfg) == 4
    assert proposing.field_size(config_from_dict({})) == 1
    assert proposing.configured(config_from_dict({"model": {"teacher_backend": "agent"}})) == ("agent",)


def test_a_resumed_run_keeps_each_proposers_counts_and_pays_no_proposal_twice(tmp_path: Path) -> None:
    root = agent_teacher_project(tmp_path / "p")
    mixed = ["optimizer.proposers=[reflect, agent]"]
    _train(root, "resumed", [*mixed, "train.max_steps=1"])
    session = open_session(open_project(root, None, [*mixed, "train.max_steps=2"]))
    trainer = build_trainer(session, run_id="resumed")
    trainer.train()
    stats = trainer.progress.proposers
    assert stats["reflect"].proposed == 2 and stats["agent"].proposed == 2  # step 1 counted once, from the progress
    assert trainer.ledger.snapshot()["by_stage"]["agent"]["calls"] == 1  # this process ran step 2's agent only

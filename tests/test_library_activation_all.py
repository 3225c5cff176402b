"""`skillgit train --all --activation` (issue 25): the activation track over every skill of the library,
round-robin, each step gated with the interference check, under one budget (library/run.py)."""

from __future__ import annotations

import json
from pathlib import Path

from skillgit.library.model import listing_of
from tests import agent_clis as ac
from tests.agent_server import AgentServer, text
from tests.conftest import git

THIN = "Database work."


def library(root: Path, *, thin_db: bool = False) -> Path:
    """The demo's library (deploy's description misses its prompts; release-notes and db-migrate fire well); with
    `thin_db`, db-migrate's description is thin too, so two skills have something to learn."""
    from skillgit.library.demo import create_library_project

    create_library_project(root)
    if thin_db:
        path = root / "skills" / "db-migrate" / "SKILL.md"
        text_ = path.read_text()
        start = text_.index("description: ")
        end = text_.index("\n", start)
        path.write_text(text_[:start] + f'description: "{THIN}"' + text_[end:])
        git(root, "commit", "-qam", "db-migrate: a thin description")
    return root


def test_train_all_activation_trains_every_skill_round_robin_each_gated_with_interference(cli_inproc, tmp_path):
    root = library(tmp_path / "lib")
    base = git(root, "rev-parse", "main").strip()
    done = cli_inproc("train", "--all", "--activation", "--run", "A1", "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "finished" and out["track"] == "activation" and out["schedule"] == "round-robin"
    deploy = out["skills"]["deploy"]
    # deploy's first candidate stole release-notes' triggers and was rejected for it; its second is accepted
    assert [(d["step"], d["stage"]) for d in deploy["decisions"]] == [(1, "interference"), (2, "accepted")]
    assert "interference: skill 'release-notes' lost" in deploy["decisions"][0]["reason"]
    assert (deploy["f1_before"], deploy["f1_after"]) == (0.0, 1.0) and deploy["run"] == "A1.deploy"
    # the others fire well already: their teacher has nothing to try, they take no step
    assert {k: v["steps"] for k, v in out["skills"].items()} == {"deploy": 2, "release-notes": 0, "db-migrate": 0}
    assert git(root, "tag", "-l", "rejected/A1.deploy/*").split() == ["rejected/A1.deploy/0001"]
    changed = git(root, "log", "--format=", "--name-only", "--branches", "--tags", f"^{base}").split()
    assert set(changed) == {"skills/deploy/SKILL.md"}  # the description steps touched deploy's file only
    notes = [json.loads(x) for x in git(root, "notes", "--ref=skillgit", "show", "main").splitlines()]
    assert {n.get("kind") for n in notes} >= {"gate", "activation"}
    assert listing_of((root / "skills/deploy/SKILL.md").read_text()).description != "Deploy services."


def test_train_all_activation_takes_turns_in_library_order(cli_inproc, tmp_path):
    root = library(tmp_path / "lib", thin_db=True)
    done = cli_inproc("train", "--all", "--activation", "--run", "A2", cwd=root)
    assert done.returncode == 0, done.stderr
    turns = [line.split(" step ")[0] + " " + line.split(" step ")[1].split(":")[0]
             for line in done.stderr.splitlines() if " step " in line]
    assert turns[:2] == ["deploy 1", "db-migrate 1"], done.stderr  # round 1: each learning skill, in order
    assert "release-notes: no candidate was scored after 0 step(s)" in done.stdout
    assert git(root, "log", "-1", "--format=%s", "main").strip().startswith("activation: deploy")
    assert "round-robin over 3 skill(s)" in done.stdout


def test_train_all_activation_stops_at_one_budget_for_the_whole_library(tmp_path, monkeypatch):
    from skillgit.library.run import run_activation_all
    from skillgit.project import open_project

    root = library(tmp_path / "lib", thin_db=True)
    reply = json.dumps({"description": "Deploy services to staging or production: rollouts, canaries, releases.",
                        "why": "names the environments"})
    monkeypatch.setenv("ANTHROPIC_API_KEY", ac.TEST_API_KEY)
    with AgentServer(default=lambda _req: text(reply), aux=lambda _req: text(reply)) as server:
        cfg = open_project(root, None, [
            "model.teacher_backend=anthropic", "model.teacher_model=scripted-model",
            f"model.teacher.base_url={server.base_url}", "model.teacher.max_retries=0", "budget.max_calls=1"]).config
        out = run_activation_all(root, cfg, steps=3, run="A3")
        asked = len(server.requests_to("anthropic"))
    assert out.status == "stopped" and "budget.max_calls" in out.reason, out.reason
    assert out.usage.calls == 1 and asked == 1  # the call that would cross the library's budget was not made
    assert [len(t.steps) for t in out.skills.values()] == [1, 0, 0]  # deploy's turn ran; db-migrate's was stopped


def test_train_all_activation_refuses_what_it_cannot_do(cli_inproc, tmp_path):
    root = library(tmp_path / "lib")
    assert "--activation needs --skill NAME or --all" in cli_inproc("train", "--activation", cwd=root).stderr
    both = cli_inproc("train", "--all", "--activation", "--skill", "deploy", cwd=root)
    assert both.returncode != 0 and "excludes --skill" in both.stderr
    (root / "triggers.jsonl").write_text("".join(
        line + "\n" for line in (root / "triggers.jsonl").read_text().splitlines() if '"val"' not in line))
    none = cli_inproc("train", "--all", "--activation", cwd=root)
    assert none.returncode != 0 and "no skill of `skills:` has val trigger cases" in none.stderr


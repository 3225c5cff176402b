"""`skillgit tasks suggest --skill NAME`: drafts of trigger cases (should fire / near-miss decoys from the other
skills) and body tasks, written as new files marked as unreviewed drafts; training refuses them until a person
approves them (simulated teacher offline; a real SDK against a scripted server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillgit.errors import ConfigError
from skillgit.library.model import load_cases
from skillgit.tasks import TaskFileError, load_items
from tests import agent_clis as ac
from tests.agent_server import AgentServer, text
from tests.test_library_all import project, skillgit

DRAFTS = "tasks/suggested"


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_suggest_drafts_trigger_cases_and_tasks_as_unreviewed_new_files(tmp_path):
    root = project(tmp_path / "lib")
    out = skillgit(root, "tasks", "suggest", "--skill", "db-migrate")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [f"{DRAFTS}/db-migrate.triggers.jsonl", f"{DRAFTS}/db-migrate.tasks.jsonl"]
    assert "DRAFTS by the simulated teacher (offline; skillgit tasks suggest), NOT reviewed" in out.stderr
    cases = rows(root / DRAFTS / "db-migrate.triggers.jsonl")
    assert all(c["skillgit_draft"].startswith("simulated teacher") and c["reviewed"] is False for c in cases)
    assert all(c["skill"] == "db-migrate" for c in cases)
    fire = [c for c in cases if c["should_trigger"]]
    decoys = [c for c in cases if not c["should_trigger"]]
    assert fire and decoys and {c["split"] for c in fire} == {c["split"] for c in decoys} == {"train", "val"}
    assert any("alembic" in c["prompt"] for c in fire)  # from the skill's own text
    others = (root / "skills/deploy/SKILL.md").read_text() + (root / "skills/release-notes/SKILL.md").read_text()
    assert all("alembic" not in c["prompt"] for c in decoys)
    assert any("rollout" in c["prompt"] or "release notes" in c["prompt"] for c in decoys) and others
    tasks = rows(root / DRAFTS / "db-migrate.tasks.jsonl")
    assert tasks and all(t["reviewed"] is False and t["metadata"]["rubric"] for t in tasks)
    before = (root / DRAFTS / "db-migrate.triggers.jsonl").read_bytes()
    again = skillgit(root, "tasks", "suggest", "--skill", "db-migrate")
    assert again.returncode == 2 and "exists; drafts never overwrite a file" in again.stderr
    assert (root / DRAFTS / "db-migrate.triggers.jsonl").read_bytes() == before
    outside = skillgit(root, "tasks", "suggest", "--skill", "db-migrate", "--out", "../elsewhere")
    assert outside.returncode == 2 and "--out: '../elsewhere' is outside the repository" in outside.stderr
    assert not (tmp_path / "elsewhere").exists()
    unknown = skillgit(root, "tasks", "suggest", "--skill", "nope")
    assert unknown.returncode == 2 and "choose one of deploy, release-notes, db-migrate" in unknown.stderr


def test_training_refuses_unreviewed_drafts_until_they_are_approved(tmp_path):
    root = project(tmp_path / "lib")
    assert skillgit(root, "tasks", "suggest", "--skill", "db-migrate").returncode == 0
    triggers, tasks = root / DRAFTS / "db-migrate.triggers.jsonl", root / DRAFTS / "db-migrate.tasks.jsonl"
    config = (root / "skillgit.yaml").read_text().replace(
        "db-migrate: {path: skills/db-migrate/SKILL.md, triggers: triggers.jsonl}",
        f"db-migrate: {{path: skills/db-migrate/SKILL.md, triggers: {DRAFTS}/db-migrate.triggers.jsonl, "
        f"tasks: {DRAFTS}/db-migrate.tasks.jsonl}}")
    (root / "skillgit.yaml").write_text(config)
    refused = skillgit(root, "train", "--skill", "db-migrate", "--activation")
    assert refused.returncode == 2 and "is a generated draft nobody has reviewed yet" in refused.stderr
    assert f"skillgit tasks approve {triggers}" in refused.stderr
    body = skillgit(root, "train", "--skill", "db-migrate")
    assert body.returncode == 2 and "a generated draft task nobody has reviewed yet" in body.stderr
    with pytest.raises(ConfigError):
        load_cases(triggers)
    with pytest.raises(TaskFileError):
        load_items(tasks)
    for path in (triggers, tasks):
        done = skillgit(root, "tasks", "approve", str(path))
        assert done.returncode == 0 and "draft row(s) marked reviewed" in done.stderr
    assert len(load_cases(triggers)) == len(rows(triggers)) and load_items(tasks)
    assert all(r["reviewed"] is True and r["skillgit_draft"] for r in rows(triggers))  # still says who wrote it


def test_a_teacher_model_drafts_through_a_real_sdk_and_never_sees_a_secret(tmp_path):
    from skillgit.library.suggest import LLMSuggester, task_rows, trigger_rows
    from skillgit.llm.anthropic_backend import AnthropicBackend

    token = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    skill_text = f"---\nname: db-migrate\ndescription: Database migrations.\n---\nUse the key {token} to connect.\n"
    others = {"deploy": "---\nname: deploy\ndescription: Deploy services.\n---\n# Deploy\n"}
    reply = json.dumps({"should_fire": ["Add a migration for the orders table", f"leak {token}"],
                        "should_not_fire": ["Deploy the api to staging"],
                        "tasks": [{"input": "Write a revision adding a column", "rubric": "uses alembic"}]})
    with AgentServer([text(reply), text("no json here"), text("still none")]) as server:
        llm = AnthropicBackend("scripted-model", api_key=ac.TEST_API_KEY, base_url=server.base_url)
        drafts = LLMSuggester(llm).draft("db-migrate", skill_text, others, 6)
        asked = json.dumps(server.requests[0].body)
        with pytest.raises(Exception, match="the teacher's drafts were not usable"):
            LLMSuggester(llm).draft("db-migrate", skill_text, others, 6)
    assert token not in asked and "deploy: Deploy services." in asked
    assert drafts.should_fire == ("Add a migration for the orders table", "leak ghp_***")
    assert [r["should_trigger"] for r in trigger_rows("db-migrate", drafts)] == [True, True, False]
    assert task_rows("db-migrate", drafts)[0]["metadata"]["rubric"] == "uses alembic"
    assert all(r["skillgit_draft"] == "teacher model (skillgit tasks suggest)" for r in trigger_rows("x", drafts))

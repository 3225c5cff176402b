"""The agent teacher backend with a scripted agent program (`preset: generic`, Claude Code's stream-json): one step's
package diff through `propose` (edits per hunk, the budget with the agent's ranking, the note's transcript summary),
a chat question run once in an empty folder, and the configuration errors (skillgit/teacher/agent.py,
loop/agent_step.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from skillgit.cli.demo import create_project
from skillgit.config import CommandCfg
from skillgit.llm.base import LLMError, Message, Request
from skillgit.loop import stages
from skillgit.loop.agent_step import propose
from skillgit.project import open_project
from skillgit.session import build_trainer, open_session
from skillgit.teacher.agent import AgentTeacher
from skillgit.teacher.evidence import Evidence

AGENT = r'''
import json, pathlib, re, sys
prompt = pathlib.Path(sys.argv[1]).read_text()
def done(final):
    print(json.dumps({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t1", "name": "Edit",
                      "input": {"file_path": "skill/SKILL.md"}}]}}))
    print(json.dumps({"type": "result", "subtype": "success", "result": final, "num_turns": 2,
                      "usage": {"input_tokens": 100, "output_tokens": 20}}))
if pathlib.Path("evidence/limits.json").is_file():
    skill = pathlib.Path("skill/SKILL.md")
    text = skill.read_text()
    text = text.replace("# Record normaliser\n", "# Record normaliser\nRule one.\n")
    text = text.replace("each field in the house style.\n", "each field in the house style.\nRule two.\n")
    text = text.replace("Keep every field of the record.\n", "Keep every field of the record.\nRule three.\n")
    skill.write_text(text)
    (pathlib.Path("evidence") / "README.md").write_text("the agent may scribble on its evidence")
    done("Added three rules to skill/SKILL.md.")
elif "<stage>rank</stage>" in prompt:
    ids = re.findall(r'<edit id="(\w+)"', prompt)
    done(json.dumps({"ranking": ids[::-1], "reasoning": "the last one matters most"}))
else:
    done("no idea")
'''


@pytest.fixture()
def teacher(tmp_path: Path) -> AgentTeacher:
    script = tmp_path / "agent.py"
    script.write_text(AGENT, encoding="utf-8")
    cfg = CommandCfg(preset="generic", argv=(sys.executable, str(script), "{prompt_file}"), output="claude-stream",
                     timeout_s=60)
    return AgentTeacher(cfg, model=None, env=dict(os.environ))


def test_a_step_becomes_edits_per_hunk_under_the_budget_ranked_by_the_agent(teacher, tmp_path: Path) -> None:
    create_project(tmp_path / "p", seed=1)
    session = open_session(open_project(tmp_path / "p", None, []))
    ctx = build_trainer(session, run_id="agent-test", resume=False).ctx
    skill = session.store.read_skill()
    trajs = stages.rollout(ctx.student, skill, list(session.splits.train[:3]), ctx.scorer, workers=1)
    text, record = propose(ctx, stages.Teacher(teacher), skill, trajs, 1, 1)
    assert record.mode == "agent" and record.invalid is None
    assert [e.op for e in (r.edit for r in record.apply)] == ["insert_after"] * 3
    assert [r.status for r in record.apply].count("skipped_over_budget") == 2
    applied = [r.edit for r in record.apply if r.applied]
    assert [e.content for e in applied] == ["Rule three."]  # the agent's ranking decided which edit the budget kept
    assert "Rule three." in text and "Rule one." not in text
    assert record.details["select"]["ranked"] is True
    agent = record.details["agent"]
    assert agent["summary"] == "Added three rules to skill/SKILL.md." and agent["turns"] == 2
    assert agent["proposed"] == 3 and "Edit" in agent["transcript"]
    assert agent["usage"]["prompt_tokens"] == 100


def test_the_step_runs_in_a_throwaway_folder_and_returns_the_package(teacher, tmp_path: Path) -> None:
    skill = "---\nname: x\ndescription: y\n---\n# Record normaliser\n\nKeep every field of the record.\n"
    reply = teacher.complete(Evidence(skill, ()).request())
    body = json.loads(reply.text)
    assert "Rule one." in body["skill"] and "Rule three." in body["skill"]
    assert body["final"] == "Added three rules to skill/SKILL.md." and body["error"] is None
    assert "→ Edit" in reply.trace
    assert not list(Path(os.environ.get("TMPDIR", "/tmp")).glob(f"skillgit-teach-{os.getpid()}-*"))  # removed


def test_a_chat_question_is_one_run_in_an_empty_folder(teacher) -> None:
    edits = '<edit id="e1" op="append"></edit>\n<edit id="e2" op="append"></edit>'
    reply = teacher.complete(Request((Message("user", f"<stage>rank</stage>\n{edits}"),), stage="rank"))
    assert json.loads(reply.text)["ranking"] == ["e2", "e1"]


def test_a_missing_program_or_preset_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(LLMError) as missing:
        AgentTeacher(CommandCfg(preset="generic"), model=None, env={}).check()
    assert missing.value.kind == "config" and "model.teacher.command.argv" in missing.value.message
    with pytest.raises(LLMError) as unknown:
        AgentTeacher(CommandCfg(preset="nope"), model=None, env={})
    assert unknown.value.kind == "config" and "model.teacher.command.preset" in unknown.value.message

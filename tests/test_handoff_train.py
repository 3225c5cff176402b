"""`model.teacher_backend: handoff` for `skillgit train`: every teacher request becomes a (redacted) file in the
handoff folder; the user's own agent answers it — here a test playing that agent through the real `skillgit mcp`
server over stdio (the `mcp` SDK's client), with the simulated teacher's answers — and `skillgit train` run again
resumes. A run killed while it waits loses nothing and pays no student call twice (the student is the simulated
world served over HTTP on 127.0.0.1, so every paid call is counted)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from skillgit.cli.demo import create_project
from skillgit.config import SimulatedCfg, config_from_dict
from skillgit.errors import ConfigError, SkillgitError
from skillgit.llm.base import Message, Request
from skillgit.llm.handoff import (
    HandoffLLM,
    HandoffPending,
    folder_for,
    pending_prompts,
    questions,
    request_from_file,
    write_answer,
)
from skillgit.world import SimulatedStudentLLM, SimulatedTeacher
from tests.conftest import git, run_cli, run_cli_inproc
from tests.fake_servers import FakeLLMServer, llm_handler

STEPS = ("--set", "train.max_steps=2", "--set", "train.batch_size=10", "--set", "evaluation.gate_repeats=1",
         "--set", "evaluation.eval_test=false")  # small: what is tested does not depend on the sizes


def _configure(folder: Path, **model: Any) -> dict[str, Any]:
    """skillgit.yaml's model section updated with `model` (deep for the role sections), committed."""
    path = folder / "skillgit.yaml"
    cfg = yaml.safe_load(path.read_text())
    for key, value in model.items():
        cfg["model"][key] = {**cfg["model"].get(key, {}), **value} if isinstance(value, dict) else value
    path.write_text(yaml.safe_dump(cfg))
    git(folder, "commit", "-qam", "configure the handoff teacher")
    return cfg


def _teacher(folder: Path) -> SimulatedTeacher:
    """The simulated teacher the project's simulated world would use: the stand-in for the user's agent."""
    return SimulatedTeacher(config_from_dict(yaml.safe_load((folder / "skillgit.yaml").read_text())).model.simulated)


def _request(messages: list[dict[str, str]], stage: str, schema: Any) -> Request:
    return Request(tuple(Message(m["role"], m["content"]) for m in messages), stage=stage, json_schema=schema)


def _decisions(folder: Path) -> list[tuple[str, str]]:
    entries = json.loads(run_cli_inproc("log", "--json", cwd=folder).stdout)
    return [(e["label"], e["verdict"]) for e in entries if e["verdict"] in ("accepted", "rejected")]


# ---------------------------------------------------------------------------------------------- the MCP round trip
mcp = pytest.importorskip("mcp")
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def _is_error(result: Any) -> bool:
    return bool(getattr(result, "is_error", None) if hasattr(result, "is_error") else result.isError)


def test_an_agent_answers_a_two_step_handoff_run_through_the_mcp_tools(tmp_path):
    folder = tmp_path / "proj"
    create_project(folder, 0)
    _configure(folder, teacher_backend="handoff")
    teacher = _teacher(folder)
    env = {k: v for k, v in os.environ.items()}

    plan = run_cli_inproc("train", "--dry-run", *STEPS, cwd=folder)
    assert plan.returncode == 0 and "handoff teacher: no model is called" in plan.stdout
    assert "stops at once with exit 5" in plan.stdout and "pending_questions" in plan.stdout
    doctor = run_cli_inproc("doctor", "--json", cwd=folder)
    row = next(r for r in json.loads(doctor.stdout)["roles"] if r["role"] == "teacher")
    assert row["status"] == "ok" and "your own agent" in row["detail"]
    assert not (folder / ".git" / "skillgit" / "handoff").exists()  # neither asked a question

    async def agent(s: ClientSession) -> dict[str, Any]:
        seen: dict[str, Any] = {"rounds": 0, "asked": [], "malformed": None}
        while True:
            # in this process (the same entry point as `python -m skillgit`, without a new interpreter for each
            # round); the MCP server waits meanwhile, as it would for a user's agent
            done = run_cli_inproc("train", *STEPS, cwd=folder)
            if done.returncode == 0:
                return seen
            assert done.returncode == 5, done.stderr[-2000:]
            assert "pending_questions" in done.stderr and "then run `skillgit train` again" in done.stderr
            seen["rounds"] += 1
            assert seen["rounds"] < 30
            listed = json.loads(_text(await s.call_tool("pending_questions", {"limit": 50})))
            assert listed["teacher_backend"] == "handoff" and listed["pending"] == len(listed["questions"]) >= 1
            for q in listed["questions"]:
                assert q["id"] not in seen["asked"]  # a question answered once is never asked again
                seen["asked"].append(q["id"])
                if seen["malformed"] is None:  # the agent's first answer is not JSON: recorded, asked once more
                    bad = json.loads(_text(await s.call_tool("answer", {"id": q["id"], "text": "sure, will do"})))
                    assert "malformed" in bad["warning"]
                    again = await s.call_tool("answer", {"id": q["id"], "text": "{}"})
                    assert _is_error(again) and "already answered" in _text(again)
                    seen["malformed"] = q["id"]
                    continue
                reply = teacher.complete(_request(q["prompt"], q["stage"], q["answer_format"])).text
                stored = json.loads(_text(await s.call_tool("answer", {"id": q["id"], "text": reply})))
                assert stored["stored"] is True
            if seen["rounds"] == 1:
                status = json.loads(run_cli_inproc("status", "--json", cwd=folder).stdout)
                assert status["status"] == "stopped" and "waiting for" in status["reason"]  # not "failed"
                for bad_id in ("../../etc/passwd", "12"):
                    refused = await s.call_tool("answer", {"id": bad_id, "text": "{}"})
                    assert _is_error(refused)
                unknown = await s.call_tool("answer", {"id": "9999", "text": "{}"})
                assert _is_error(unknown) and "no pending question 9999" in _text(unknown)

    async def session() -> dict[str, Any]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "skillgit", "mcp"], env=env,
                                       cwd=str(folder))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                return await agent(s)

    seen = asyncio.run(asyncio.wait_for(session(), timeout=600))
    assert seen["rounds"] >= 3  # reflect, then merge, then rank: each round asked only what was new
    handoff = folder / ".git" / "skillgit" / "handoff"
    # the malformed answer was followed by the parser's one repair request: a new question quoting it
    repair = [json.loads(p.read_text()) for p in sorted(handoff.glob("*.request.json"))
              if any("sure, will do" in m["content"] for m in json.loads(p.read_text())["messages"])]
    assert repair and not pending_prompts(handoff)
    status = json.loads(run_cli_inproc("status", "--json", cwd=folder).stdout)
    assert status["status"] == "finished" and status["step"] == 2 and status["cost_usd"] == 0
    assert status["usage_by_role"]["teacher"]["calls"] >= len(seen["asked"])  # every answer came through the loop
    decisions = _decisions(folder)
    assert len(decisions) == 2  # both steps were gated: accepted or rejected by the gate
    assert status["last"]["verdict"] in ("accepted", "rejected") and status["last"]["reason"]


def test_the_mcp_train_tool_resumes_a_waiting_run_on_its_review_branch(tmp_path):
    """The agent trains through the `train` tool, answers, and continues the same run with `resume` (before, the
    tool could only start a new run: a handoff run started from MCP could not be finished through MCP)."""
    folder = tmp_path / "proj"
    create_project(folder, 0)
    _configure(folder, teacher_backend="handoff")
    teacher = _teacher(folder)
    tip = git(folder, "rev-parse", "HEAD")

    async def session() -> dict[str, Any]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "skillgit", "mcp"],
                                       env=dict(os.environ), cwd=str(folder))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                refused = await s.call_tool("train", {"max_calls": 5000, "resume": True})
                assert _is_error(refused) and "review branch" in _text(refused)
                args: dict[str, Any] = {"max_calls": 5000, "max_steps": 1}
                seen: dict[str, Any] = {"rounds": 0, "branches": set()}
                while True:
                    trained = await s.call_tool("train", args)
                    assert not _is_error(trained), _text(trained)
                    result = json.loads(_text(trained))
                    seen["branches"].add(result["review_branch"])
                    if "waiting_for_answers" not in result:
                        seen["last"] = result
                        return seen
                    assert result["stopped_at_budget"] is False
                    assert "resume=true" in result["waiting_for_answers"]
                    seen["rounds"] += 1
                    assert seen["rounds"] < 30
                    if seen["rounds"] == 1:
                        first = json.loads(_text(await s.call_tool("pending_questions", {"limit": 1})))
                        assert first["pending"] >= 1 and len(first["questions"]) == 1
                        assert first["questions"][0]["answer_format"]["type"] == "object"
                    listed = json.loads(_text(await s.call_tool("pending_questions", {"limit": 50})))
                    for q in listed["questions"]:
                        reply = teacher.complete(_request(q["prompt"], q["stage"], q["answer_format"])).text
                        assert json.loads(_text(await s.call_tool("answer", {"id": q["id"], "text": reply})))["stored"]
                    args = {**args, "resume": True, "review_branch": result["review_branch"]}

    seen = asyncio.run(asyncio.wait_for(session(), timeout=600))
    assert seen["rounds"] >= 2 and len(seen["branches"]) == 1  # one review branch, continued
    branch = seen["branches"].pop()
    runs = git(folder, "for-each-ref", "--format=%(refname)", "refs/skillgit/runs/").split()
    assert len(runs) == 1, runs  # every resume continued the same run: none started anew
    run_id = runs[0].rsplit("/", 1)[1]
    status = json.loads(run_cli_inproc("status", "--json", "--run", run_id, cwd=folder).stdout)
    assert status["status"] == "finished" and status["step"] == 1 and status["cost_usd"] == 0
    assert status["last"]["verdict"] in ("accepted", "rejected")
    assert git(folder, "rev-parse", "HEAD") == tip  # the skill branch did not move; the run's was the review branch
    git(folder, "merge-base", "--is-ancestor", tip, f"refs/heads/{branch}")


# ---------------------------------------------------------------------------------------------- killed while waiting
def _answer_all(folder: Path, teacher: SimulatedTeacher) -> list[str]:
    answered = []
    for q in questions(folder):  # the request as the run made it (its output limit too): the same answers
        request = request_from_file(folder / f"{q.id}.request.json")
        write_answer(folder, q.id, teacher.complete(request).text)
        answered.append(q.id)
    return answered


@pytest.mark.slow
def test_a_run_killed_while_it_waits_loses_nothing_and_pays_nothing_twice(tmp_path):
    cfg = SimulatedCfg(seed=0)
    server = FakeLLMServer(llm_handler(SimulatedStudentLLM(cfg))).start()
    try:
        student = {"student_backend": "openai", "student_model": "sim-student",
                   "student": {"base_url": server.openai_base_url, "max_retries": 1}}
        env = {"OPENAI_API_KEY": "sk-proj-handoff0123456789abcdefXYZ"}
        # the reference: the same run with the simulated teacher in the loop, never stopped
        reference = tmp_path / "reference"
        create_project(reference, 0)
        _configure(reference, **student)
        done = run_cli("train", *STEPS, cwd=reference, env=env)
        assert done.returncode == 0, done.stderr[-2000:]
        paid_reference = len(server.requests)
        server.requests.clear()

        folder = tmp_path / "proj"
        create_project(folder, 0)
        _configure(folder, teacher_backend="handoff", teacher={"handoff": {"wait_s": 600}}, **student)
        teacher = _teacher(folder)
        handoff = folder / ".git" / "skillgit" / "handoff"
        log = tmp_path / "train.log"

        def train() -> subprocess.Popen:  # stderr (the --events lines) to a file: a full pipe would block it
            with log.open("ab") as sink:
                return subprocess.Popen([sys.executable, "-m", "skillgit", "train", *STEPS, "--events"], cwd=folder,
                                        env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=sink)

        proc = train()
        try:
            deadline = time.monotonic() + 300
            while not pending_prompts(handoff):  # the run writes its first questions and waits for them
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
                time.sleep(0.2)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
        asked_before = json.loads((handoff / "index.json").read_text())
        first = _answer_all(handoff, teacher)  # answered after the kill, before anything resumes
        assert first

        # resumed, waiting again: the agent answers each question while the run waits for it
        resumed = train()
        try:
            later: list[str] = []
            deadline = time.monotonic() + 300
            while resumed.poll() is None and time.monotonic() < deadline:
                later += _answer_all(handoff, teacher)
                time.sleep(0.2)
        finally:
            if resumed.poll() is None:
                resumed.kill()
                resumed.wait(timeout=60)
        assert resumed.returncode == 0, log.read_text()[-2000:]
        assert later and not set(later) & set(first)
        paid = [json.dumps(r.json, sort_keys=True) for r in server.requests]
    finally:
        server.stop()

    index = json.loads((handoff / "index.json").read_text())
    assert asked_before.items() <= index.items()  # the questions asked before the kill kept their numbers
    numbers = sorted(index.values())
    assert numbers == list(range(1, len(numbers) + 1))  # each request asked once: one number, one prompt file
    assert sorted(p.name[:4] for p in handoff.glob("*.prompt.md")) == [f"{n:04d}" for n in numbers]
    assert not pending_prompts(handoff)
    # nothing paid twice: no student request reached the server twice, and the killed-and-resumed run paid
    # exactly what the uninterrupted run paid, for the same decisions
    assert [body for body, n in Counter(paid).items() if n > 1] == []
    assert len(paid) == paid_reference
    assert [v for _, v in _decisions(folder)] == [v for _, v in _decisions(reference)]
    assert (folder / "SKILL.md").read_text() == (reference / "SKILL.md").read_text()


# ---------------------------------------------------------------------------------------------- the parts
def test_waiting_returns_the_answer_written_meanwhile_and_prompts_are_redacted(tmp_path):
    folder = tmp_path / "h"
    key = "sk-proj-" + "S" * 40
    request = Request((Message("system", "teach"), Message("user", f"the trace printed {key}")), stage="reflect",
                      json_schema={"type": "object"})
    ticks: list[float] = []

    def sleep(seconds: float) -> None:  # the user's agent answers while the run waits
        ticks.append(seconds)
        if len(ticks) == 3:
            write_answer(folder, "0001", '{"edits": []}')

    from skillgit.redact import SecretSet, register

    register(SecretSet.from_env({"OPENAI_API_KEY": key}, {"OPENAI_API_KEY"}))
    reply = HandoffLLM(folder, wait_s=3600, sleep=sleep).complete(request)
    assert reply.text == '{"edits": []}' and reply.usage.total_tokens == 0 and len(ticks) == 3
    written = "".join(p.read_text() for p in folder.iterdir() if p.is_file())
    assert key not in written and "the trace printed" in written
    with pytest.raises(HandoffPending) as stopped:  # not waiting: stops at once, saying how to go on
        HandoffLLM(folder, resume="run it again").complete(Request((Message("user", "other"),), stage="merge"))
    assert stopped.value.code == 5 and stopped.value.hint == "run it again"
    assert [q.id for q in questions(folder)] == ["0002"]


def test_answers_are_validated_capped_and_final(tmp_path):
    folder = tmp_path / "h"
    with pytest.raises(HandoffPending):
        HandoffLLM(folder).complete(Request((Message("user", "q"),), stage="reflect"))
    for bad, said in (("../0001", "invalid question id"), ("0001; rm", "invalid question id"),
                      ("0002", "no pending question 0002")):
        with pytest.raises(SkillgitError, match=said):
            write_answer(folder, bad, "{}")
    with pytest.raises(SkillgitError, match="over 200,000"):
        write_answer(folder, "0001", "x" * 200_001)
    with pytest.raises(SkillgitError, match="empty"):
        write_answer(folder, "0001", "  ")
    write_answer(folder, "0001", '{"a": 1}')
    with pytest.raises(SkillgitError, match="already answered"):
        write_answer(folder, "0001", '{"a": 2}')
    assert (folder / "0001.answer.json").read_text() == '{"a": 1}'
    assert not list(folder.glob(".*.tmp"))
    # an answer file that is a link (it could point anywhere) is refused, never read
    (tmp_path / "secret").write_text("not for the teacher")
    with pytest.raises(HandoffPending):
        HandoffLLM(folder).complete(Request((Message("user", "q2"),), stage="merge"))
    (folder / "0002.answer.json").symlink_to(tmp_path / "secret")
    with pytest.raises(SkillgitError, match="cannot be read"):
        HandoffLLM(folder).complete(Request((Message("user", "q2"),), stage="merge"))
    (folder / "index.json").write_text("{half")  # edited by hand: a clear error, not a traceback
    with pytest.raises(SkillgitError, match="not the JSON skillgit wrote"):
        HandoffLLM(folder).complete(Request((Message("user", "q3"),), stage="merge"))


def test_a_malformed_answer_is_recorded_and_skipped_like_malformed_model_output(tmp_path):
    from skillgit.loop.stages import Teacher

    folder = tmp_path / "h"
    teacher = Teacher(HandoffLLM(folder))
    variables = {"skill": "Be brief.", "trajectories": "<trajectory/>", "budget": "2"}
    for round_ in range(2):  # the question, then the parser's one repair question: both answered with prose
        with pytest.raises(HandoffPending):
            teacher.ask("reflect", variables)
        (q,) = questions(folder)
        write_answer(folder, q.id, f"I would rather not (round {round_})")
    answer, why = teacher.ask("reflect", variables)
    assert answer is None and why is not None and why.startswith("malformed teacher output")


def test_the_folder_stays_inside_the_repository_and_config_names_the_key(tmp_path):
    with pytest.raises(ConfigError, match="model.student_backend: 'handoff'"):
        config_from_dict({"model": {"student_backend": "handoff"}})
    for bad in ("/tmp/h", "../h", "~/h"):
        with pytest.raises(ConfigError, match="model.teacher.handoff.dir"):
            config_from_dict({"model": {"teacher": {"handoff": {"dir": bad}}}})
    with pytest.raises(ConfigError, match="model.teacher.handoff.wait_s"):
        config_from_dict({"model": {"teacher": {"handoff": {"wait_s": -1}}}})
    repo = tmp_path / "repo"
    create_project(repo, 0)
    default = folder_for(config_from_dict({"model": {"teacher_backend": "handoff"}}), repo)
    assert default == repo / ".git" / "skillgit" / "handoff"
    (repo / "out").symlink_to(tmp_path)  # a folder inside the repository that links out of it
    with pytest.raises(ConfigError, match="outside the repository"):
        folder_for(config_from_dict({"model": {"teacher": {"handoff": {"dir": "out/h"}}}}), repo)
    doctor = run_cli_inproc("doctor", "--json", "--set", "model.teacher_backend=handoff", "--set",
                            "model.teacher.handoff.dir=out/h", cwd=repo)
    row = next(r for r in json.loads(doctor.stdout)["roles"] if r["role"] == "teacher")
    assert doctor.returncode == 4 and row["status"] == "error" and "outside the repository" in row["detail"]
    assert not (tmp_path / "h").exists()  # nothing was written through the link
    cfg = {"model": {"teacher_backend": "handoff", "teacher": {"handoff": {"dir": ".skillgit/handoff"}}}}
    path = repo / "skillgit.yaml"
    data = yaml.safe_load(path.read_text())
    data["model"].update(cfg["model"])
    path.write_text(yaml.safe_dump(data))
    done = run_cli_inproc("train", *STEPS, cwd=repo)
    assert done.returncode == 5 and ".skillgit/handoff" in done.stderr
    assert (repo / ".skillgit" / "handoff" / ".gitignore").read_text().endswith("*\n")
    assert git(repo, "status", "--porcelain", "--", ".skillgit") == ""  # the questions never show up in git

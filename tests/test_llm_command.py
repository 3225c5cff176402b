"""CommandStudent with real subprocesses: small Python scripts in tests/agents/ stand in for `claude` and `codex`."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from skillgit.config import CommandCfg
from skillgit.llm.base import LLMError
from skillgit.llm.command import CommandStudent, skill_name
from skillgit.llm.retry import RetryingStudent
from skillgit.types import Item

AGENTS = Path(__file__).parent / "agents"
SKILL = "# Units\n\nRULE: always give units\n"
FAKE_KEY = "sk-ant-fake-0123456789abcdefghij"
OTHER_SECRET = "ghp_fakeGithubToken0123456789"


@pytest.fixture
def bin_dir(tmp_path) -> Path:
    """A folder on PATH with `claude`, `codex`, and other agent names that run the scripts in tests/agents/."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name, script in {"claude": "fake_claude.py", "codex": "fake_codex.py", "hang-agent": "hang_agent.py",
                         "fail-agent": "fail_agent.py", "generic-agent": "generic_agent.py"}.items():
        wrapper = folder / name
        wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{AGENTS / script}" "$@"\n')
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return folder


def env_with(bin_dir: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", **extra}


def rollout_dirs() -> set[str]:
    import tempfile

    return {p.name for p in Path(tempfile.gettempdir()).glob("skillgit-rollout-*")}


def test_claude_preset_installs_skill_and_parses_json_result(bin_dir):
    env = env_with(bin_dir, ANTHROPIC_API_KEY=FAKE_KEY, GITHUB_TOKEN=OTHER_SECRET)
    student = CommandStudent(CommandCfg(preset="claude", timeout_s=30), model="claude-sonnet-4-5", env=env)
    before = rollout_dirs()

    reply = student.run(SKILL, Item("i1", "what is 2 m + 3 m?"))

    assert reply.text == "what is 2 m + 3 m? -> RULE: always give units (model=claude-sonnet-4-5)"
    # usage and cost come from Claude Code's JSON; cached tokens are part of the prompt tokens
    assert (reply.usage.prompt_tokens, reply.usage.cached_tokens, reply.usage.completion_tokens) == (150, 50, 20)
    assert reply.usage.cost_usd == pytest.approx(0.0123)
    assert "num_turns=2" in reply.trace and "session_id=sess-1" in reply.trace
    # the skill had no front matter: it was installed with a minimal one so Claude Code loads it
    assert ".claude/skills/skill/SKILL.md" in reply.trace and "front matter: True" in reply.trace
    # the agent keeps its own key (but the trace masks it); other credentials never reach it
    assert "saw ANTHROPIC_API_KEY=***" in reply.trace and FAKE_KEY not in reply.trace
    assert "GITHUB_TOKEN" not in reply.trace and OTHER_SECRET not in reply.trace
    assert rollout_dirs() <= before  # the scratch workspace is gone
    assert student.id.startswith("command:claude:claude-sonnet-4-5")


def test_claude_skill_name_from_front_matter_and_passthrough(bin_dir):
    skill = "---\nname: Unit Checker\ndescription: units\n---\nRULE: check units\n"
    env = env_with(bin_dir, MY_PASSTHROUGH_SECRET="passthrough-value-123")
    student = CommandStudent(CommandCfg(preset="claude", timeout_s=30, env_passthrough=("MY_PASSTHROUGH_SECRET",)),
                             env=env)
    reply = student.run(skill, Item("i1", "q"))
    assert skill_name(skill) == "unit-checker"
    assert ".claude/skills/unit-checker/SKILL.md" in reply.trace
    assert reply.text == "q -> RULE: check units (model=default)"  # no --model flag without a model
    assert "saw MY_PASSTHROUGH_SECRET=***" in reply.trace


def test_claude_error_result_is_an_agent_error(bin_dir):
    student = CommandStudent(CommandCfg(preset="claude", timeout_s=30), env=env_with(bin_dir, FAKE_CLAUDE_ERROR="1"))
    with pytest.raises(LLMError) as info:
        student.run(SKILL, Item("i1", "q"))
    assert info.value.kind == "agent" and "529 overloaded" in info.value.message
    assert info.value.retryable  # an overloaded API behind the agent is worth another try


def test_codex_preset_installs_agents_md_and_reads_last_message(bin_dir):
    student = CommandStudent(CommandCfg(preset="codex", timeout_s=30), model="gpt-5-codex", env=env_with(bin_dir))
    reply = student.run(SKILL, Item("i1", "convert 1 km"))
    assert reply.text == "convert 1 km -> RULE: always give units (model=gpt-5-codex)"
    assert "thinking... running tools..." in reply.trace and "tokens used: 1234" in reply.trace


def test_generic_placeholders(bin_dir):
    cfg = CommandCfg(argv=("generic-agent", "{prompt_file}", "{skill_file}", "{workspace}"),
                     install_path="docs/{name}.md", timeout_s=30)
    student = CommandStudent(cfg, env=env_with(bin_dir))
    reply = student.run(SKILL, Item("i1", "prompt with {workspace} braces"), sample=2)
    seen = json.loads(reply.text)
    assert seen["prompt"] == "prompt with {workspace} braces"  # filled once, never re-substituted
    assert seen["skill"] == SKILL and seen["skill_in_workspace"] and seen["cwd_is_workspace"]
    assert seen["sample"] == "2"
    assert "#" in student.id  # a custom command is a different student for the call cache


def test_install_path_must_stay_inside_the_workspace(bin_dir):
    cfg = CommandCfg(argv=("generic-agent", "{prompt_file}", "{skill_file}", "{workspace}"),
                     install_path="../../escaped.md", timeout_s=30)
    with pytest.raises(LLMError, match="outside the scratch workspace") as info:
        CommandStudent(cfg, env=env_with(bin_dir)).run(SKILL, Item("i1", "q"))
    assert info.value.kind == "config"


def test_timeout_kills_the_whole_process_group(bin_dir, tmp_path):
    pid_file = tmp_path / "child.pid"
    cfg = CommandCfg(argv=("hang-agent", str(pid_file), "--ignore-term"), timeout_s=0.5,
                     confine="off")  # (its pid file is outside the rollout)
    student = CommandStudent(cfg, env=env_with(bin_dir), kill_grace_s=0.1)  # both ignore TERM: KILL is needed
    with pytest.raises(LLMError) as info:
        student.run(SKILL, Item("i1", "q"))
    assert info.value.kind == "timeout" and not info.value.retryable
    assert ("killed the agent and 1 process it left running" if sys.platform == "linux" else "killed the agent") \
        in info.value.message  # what was really killed (skillgit.process.Cleanup)
    child = int(pid_file.read_text())
    assert wait_until_gone(child), f"child {child} of the timed-out agent is still running"


def wait_until_gone(pid: int, attempts: int = 200) -> bool:
    """True once `pid` no longer runs (absent, or a zombie waiting for init to reap it)."""
    import time

    for _ in range(attempts):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.025)
    return False


def test_nonzero_exit_reports_status_and_stderr_tail(bin_dir):
    student = CommandStudent(CommandCfg(argv=("fail-agent",), timeout_s=30), env=env_with(bin_dir))
    with pytest.raises(LLMError) as info:
        student.run(SKILL, Item("i1", "q"))
    err = info.value
    assert err.kind == "agent" and not err.retryable
    assert "exited with status 3" in err.message and "fatal: could not parse the task" in err.message
    assert "loading skill" in err.hint  # the stderr tail, for the user to read


def test_transient_agent_failure_is_retried(bin_dir):
    student = CommandStudent(CommandCfg(argv=("fail-agent", "--transient"), timeout_s=30), env=env_with(bin_dir))
    sleeps: list[float] = []
    wrapped = RetryingStudent(student, max_retries=2, sleep=sleeps.append)
    with pytest.raises(LLMError) as info:
        wrapped.run(SKILL, Item("i1", "q"))
    assert info.value.retryable and "gave up after 3 attempts" in info.value.message
    assert len(sleeps) == 2 and wrapped.stats.attempts == 3


def test_missing_binary_is_a_clear_non_retryable_error(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}  # nothing on PATH
    student = CommandStudent(CommandCfg(preset="claude"), env=env)
    with pytest.raises(LLMError) as info:
        student.check()
    err = info.value
    assert err.kind == "agent" and not err.retryable
    assert "'claude' not found" in err.message
    assert "model.student.command.argv" in err.hint and "claude" in err.hint
    with pytest.raises(LLMError) as again:
        student.run(SKILL, Item("i1", "q"))
    assert again.value.kind == "agent" and not again.value.retryable


def test_generic_without_argv_and_unknown_preset_are_config_errors():
    with pytest.raises(LLMError, match="needs a command") as info:
        CommandStudent(CommandCfg(preset="generic"))
    assert "model.student.command.argv" in info.value.hint
    with pytest.raises(LLMError, match="unknown agent preset 'nope'") as info:
        CommandStudent(CommandCfg(preset="nope"))
    assert "claude" in info.value.hint and "codex" in info.value.hint and info.value.kind == "config"
    # an agent skillgit knows but cannot run for one answer: the choices, and where it belongs
    with pytest.raises(LLMError, match="'copilot' cannot be used with student_backend: command") as info:
        CommandStudent(CommandCfg(preset="copilot"))
    assert "claude, codex, generic" in info.value.hint and "student_backend: agent" in info.value.hint


def test_factory_builds_a_wrapped_command_student_and_checks_the_binary(bin_dir, tmp_path):
    from skillgit.config import config_from_dict
    from skillgit.llm.factory import build_student

    cfg = config_from_dict({"model": {"student_backend": "command", "student_model": "default",
                                      "student": {"concurrency": 3, "command": {"preset": "codex"}}}})
    student = build_student(cfg, tmp_path, environ=env_with(bin_dir))
    assert isinstance(student, RetryingStudent) and student.concurrency == 3
    assert student.run(SKILL, Item("i1", "q")).text == "q -> RULE: always give units (model=default)"
    with pytest.raises(LLMError, match="'codex' not found"):
        build_student(cfg, tmp_path, environ={"PATH": str(tmp_path)})  # fails at build, not at the first rollout


ENV_AGENT = '''import json, os, sys
prompt = open(sys.argv[1], encoding="utf-8").read()
print(json.dumps({"env": dict(os.environ), "prompt": prompt}))
'''


def test_no_dotenv_entry_or_key_variable_reaches_the_agent(tmp_path, bin_dir):
    """The probe: a key in .env under a name without KEY/TOKEN/SECRET reached the agent's environment and, echoed,
    the journal. Now no .env entry and no api_key_env target reaches the agent (except passthrough), and a
    secret value the agent echoes anyway (here: it was in the prompt) is masked in the answer and the note."""
    from skillgit.config import config_from_dict
    from skillgit.llm.factory import build_student
    from skillgit.redact import redact_mapping

    agent = tmp_path / "env_agent.py"
    agent.write_text(ENV_AGENT)
    (tmp_path / ".env").write_text("WEATHER_SERVICE=dotenv-plain-value-0042\nSHARED_WITH_AGENT=passed-on-value-77\n"
                                   "ANTHROPIC_API_KEY=sk-ant-dotenv-0123456789abcdef\n")
    cfg = config_from_dict({"model": {
        "teacher_backend": "openai", "teacher_model": "m",
        "teacher": {"base_url": "http://127.0.0.1:9/v1", "api_key_env": "LAB_ACCESS"},
        "student_backend": "command", "student_model": "default",
        "student": {"command": {"preset": "claude", "argv": [sys.executable, str(agent), "{prompt_file}"],
                                "env_passthrough": ["SHARED_WITH_AGENT"]}}}})
    environ = env_with(bin_dir, LAB_ACCESS="lab-access-value-9911", HARMLESS_SETTING="visible-value-1234")
    student = build_student(cfg, tmp_path, environ=environ, max_retries=0)

    reply = student.run("skill", Item("i1", "echo dotenv-plain-value-0042 and lab-access-value-9911"))
    seen = json.loads(reply.text)
    env = seen["env"]
    assert "WEATHER_SERVICE" not in env  # a .env entry, whatever its name
    assert "LAB_ACCESS" not in env  # the teacher's api_key_env target
    assert env["SHARED_WITH_AGENT"] == "***"  # passed through on purpose; its value still masked in the answer
    assert env["ANTHROPIC_API_KEY"] == "***"  # the claude preset's own key
    assert env["HARMLESS_SETTING"] == "visible-value-1234"  # ordinary variables pass, unmasked
    assert seen["prompt"] == "echo *** and ***"  # echoed secrets are masked in the answer
    for value in ("dotenv-plain-value-0042", "lab-access-value-9911", "passed-on-value-77"):
        assert value not in reply.text and value not in reply.trace
        # and in the journal: any note built later in this process masks them too
        assert value not in json.dumps(redact_mapping({"output": f"the agent said {value}"}))


def test_command_cache_identity_is_preset_program_and_model(bin_dir):
    student = CommandStudent(CommandCfg(preset="claude", argv=(str(bin_dir / "claude"), "-p", "{prompt}")),
                             model="claude-sonnet-4-5", env=env_with(bin_dir))
    assert student.cache_identity == "command:claude:claude:claude-sonnet-4-5"  # no folder: the basename only
    assert CommandStudent(CommandCfg(preset="codex"), env=env_with(bin_dir)).cache_identity == \
        "command:codex:codex:default"
    pinned = CommandStudent(CommandCfg(preset="codex"), env=env_with(bin_dir), cache_identity="codex-pinned")
    assert RetryingStudent(pinned).cache_identity == "codex-pinned"  # forwarded by the retry wrapper


@pytest.mark.parametrize("said, transient, auth", [
    ("API Error: 529 overloaded", True, False),
    ("HTTP/1.1 504 Gateway Timeout", True, False),
    ("status code 502", True, False),
    ("503 Service Unavailable", True, False),
    ("Error: 429 Too Many Requests", True, False),
    ("provider error 529", True, False),
    ("Error: 401 Unauthorized: invalid api key", False, True),
    ("HTTP 403", False, True),
    ('File "/tmp/pytest-of-root/pytest-504/run/a.py", line 503, in <module>', False, False),
    ("collected 429 items / 401 deselected", False, False),
    ("/home/u/runs/403/out.txt: No such file or directory", False, False),
])
def test_an_http_status_is_read_only_where_it_is_said_to_be_one(said, transient, auth):
    """A bare number (a traceback's line, a folder's name, a count) is no API error: before, `\\b50[234]\\b` read
    CI's /tmp/pytest-504/ in an agent's traceback as an outage, so a real failure was retried and never scored."""
    from skillgit.llm.command import AUTH, TRANSIENT

    assert bool(TRANSIENT.search(said)) == transient
    assert bool(AUTH.search(said)) == auth

"""The REAL agent CLIs (`claude`, `codex`) run offline against the scripted server in tests/agent_server.py.

Tests marked `agent_cli` run the installed CLIs (`.venv/bin/python -m tests.agent_clis install` puts the pinned
versions into .cache/agent-clis, or $SKILLGIT_AGENT_CLIS) and skip cleanly when a CLI is missing; no test installs
anything. The unmarked tests check the scripted server through the real `anthropic` / `openai` SDKs and the
committed fixtures, so they run everywhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import openai
import pytest

from tests import agent_clis as ac
from tests.agent_server import AgentServer, apply_patch, bash, exec_command, main, sub, task, text, tool, write

FIXTURES = Path(__file__).parent / "fixtures"
SKILL_DESCRIPTION = "Use when the user asks about zebras; reply with the marker ZEBRA-LISTED-42."
SKILL_BODY_MARKER = "ZEBRA-BODY-MARKER-7"
SKILL_TEXT = (f"---\nname: zebra-facts\ndescription: {SKILL_DESCRIPTION}\n---\n\n# Zebra facts\n\n"
              f"RULE: {SKILL_BODY_MARKER}\n")


@pytest.fixture
def claude() -> Path:
    return ac.require_cli("claude")


@pytest.fixture
def codex() -> Path:
    return ac.require_cli("codex")


@pytest.fixture
def project(make_repo) -> Path:
    return make_repo({"README.md": "# scratch\n"}, name="project")


@pytest.fixture
def agent_home(tmp_path: Path) -> Path:
    home = tmp_path / "agent-home"
    home.mkdir()
    return home


def _types(events: list[dict]) -> list[tuple[str, str | None]]:
    return [(e["type"], e.get("subtype")) for e in events]


# ---------------------------------------------------------------------------------------------- claude
@pytest.mark.agent_cli
def test_claude_print_runs_a_scripted_bash_call_and_writes_a_session(claude, project, agent_home):
    script = [bash("echo made-by-claude > made.txt && cat made.txt", "Make the file"), text("Created made.txt.")]
    with AgentServer(script) as server:
        env = ac.claude_env(agent_home, server.base_url)
        proc = ac.run_cli(ac.claude_print_argv(claude, "Create made.txt."), cwd=project, env=env)
        requests = server.agent_requests()
        answered = list(server.answered)
    assert proc.returncode == 0, proc.stderr
    assert (project / "made.txt").read_text() == "made-by-claude\n"

    events = ac.parse_jsonl(proc.stdout)
    kinds = _types(events)
    assert kinds[0] == ("system", "init") and kinds[-1] == ("result", "success")  # no hooks: init comes first
    init, result = events[0], events[-1]
    session = init["session_id"]
    assert init["cwd"] == str(project) and "Bash" in init["tools"] and init["permissionMode"] == "acceptEdits"
    calls = [b for e in events if e["type"] == "assistant" for b in e["message"]["content"] if b["type"] == "tool_use"]
    call_id = answered[0][2]
    command = script[0].tool_input["command"]
    assert [(c["name"], c["id"], c["input"]["command"]) for c in calls] == [("Bash", call_id, command)]
    results = [b for e in events if e["type"] == "user" for b in e["message"]["content"]
               if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert results[0]["tool_use_id"] == call_id and "made-by-claude" in str(results[0]["content"])
    assert result["result"] == "Created made.txt." and result["num_turns"] == 2 and result["is_error"] is False
    assert result["session_id"] == session and "total_cost_usd" in result and "input_tokens" in result["usage"]

    # what reached the server: two agent turns, the fake key, the tool result fed back
    assert len(requests) == 2
    assert requests[0].headers["x-api-key"] == ac.TEST_API_KEY and requests[0].body["stream"] is True
    assert {"Bash", "Write", "Edit", "Read"} <= set(requests[0].tool_names())
    assert "made-by-claude" in requests[1].messages_text()

    # the real session file, one JSON record per line, linked by parentUuid
    path = agent_home / ".claude" / "projects" / ac.claude_project_slug(project) / f"{session}.jsonl"
    assert ac.claude_session_files(agent_home) == [path]
    records = ac.parse_jsonl(path.read_text())
    turns = [r for r in records if r["type"] in ("user", "assistant")]
    assert [r["type"] for r in turns] == ["user", "assistant", "user", "assistant"]
    assert turns[0]["message"] == {"role": "user", "content": "Create made.txt."}
    for r in turns:
        assert r["sessionId"] == session and r["cwd"] == str(project) and r["gitBranch"] == "main"
        assert r["isSidechain"] is False and r["entrypoint"] == "sdk-cli" and r["version"].startswith("2.")
    uuids = {r["uuid"] for r in records if "uuid" in r}
    assert all(r["parentUuid"] in uuids for r in turns[1:])


@pytest.mark.agent_cli
def test_claude_lists_a_project_skill_by_description_and_loads_its_body_on_use(claude, project, agent_home):
    skill = project / ".claude" / "skills" / "zebra-facts" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(SKILL_TEXT)
    with AgentServer([tool("Skill", skill="zebra-facts"), text("Zebras have stripes.")]) as server:
        env = ac.claude_env(agent_home, server.base_url)
        argv = ac.claude_print_argv(claude, "Tell me about zebras.", allowed_tools=["Read", "Skill"])
        proc = ac.run_cli(argv, cwd=project, env=env)
        first, second = server.agent_requests()
    assert proc.returncode == 0, proc.stderr
    assert "Skill" in first.tool_names()
    # listed by name + description in a system message of the conversation, not in the top-level system prompt
    assert f"- zebra-facts: {SKILL_DESCRIPTION}" in first.context_text()
    assert "zebra-facts" not in first.system_text()
    assert SKILL_BODY_MARKER not in json.dumps(first.body)
    # the body (without front matter) arrives only after the Skill tool call, as a user message
    assert f"Base directory for this skill: {skill.parent}" in second.messages_text()
    assert f"RULE: {SKILL_BODY_MARKER}" in second.messages_text() and "description:" not in second.messages_text()


@pytest.mark.agent_cli
def test_claude_write_tool_and_max_turns(claude, project, agent_home):
    target = project / "notes" / "todo.md"
    with AgentServer([write(str(target), "- scripted\n"), bash("echo never")]) as server:
        env = ac.claude_env(agent_home, server.base_url)
        proc = ac.run_cli(ac.claude_print_argv(claude, "Write the todo.", max_turns=1, model="scripted-model"),
                          cwd=project, env=env)
        requests = server.agent_requests()
    assert target.read_text() == "- scripted\n"
    result = ac.parse_jsonl(proc.stdout)[-1]
    assert proc.returncode == 1 and result["subtype"] == "error_max_turns" and result["is_error"] is True
    assert len(requests) == 1 and requests[0].body["model"] == "scripted-model"


@pytest.mark.agent_cli
def test_claude_subagent_writes_a_sidechain_transcript(claude, project, agent_home):
    script = [task("Count the entries here.", "count entries"), sub(bash("ls -a | wc -l")), sub(text("4 entries.")),
              main(text("The sub-agent counted 4 entries."))]
    with AgentServer(script) as server:
        env = ac.claude_env(agent_home, server.base_url)
        proc = ac.run_cli(ac.claude_print_argv(claude, "Delegate the count.", allowed_tools=["Bash", "Agent"]),
                          cwd=project, env=env)
        roles = [r.agent_role for r in server.agent_requests()]
    assert proc.returncode == 0, proc.stderr
    assert roles == ["main", "sub", "sub", "main"]
    events = ac.parse_jsonl(proc.stdout)
    assert events[-1]["result"] == "The sub-agent counted 4 entries."
    assert any(e.get("parent_tool_use_id") for e in events)  # sub-agent messages are forwarded, tagged
    (side,) = ac.claude_session_files(agent_home, subagents=True)
    records = [r for r in ac.parse_jsonl(side.read_text()) if r["type"] in ("user", "assistant")]
    assert records and all(r["isSidechain"] is True and r["agentId"] for r in records)
    assert records[0]["message"]["content"] == "Count the entries here."
    meta = json.loads(side.with_name(side.stem + ".meta.json").read_text())
    assert meta["agentType"] == "general-purpose" and meta["description"] == "count entries"


@pytest.mark.agent_cli
def test_claude_interactive_tui_under_tmux(claude, project, agent_home):
    ac.prepare_claude_home(agent_home, trusted=[project])
    with AgentServer([bash("echo tui > tui.txt"), text("Wrote tui.txt.")]) as server:
        env = ac.claude_env(agent_home, server.base_url)
        try:
            screen = ac.run_in_tmux(ac.claude_interactive_argv(claude, "Write tui.txt."), cwd=project, env=env,
                                    timeout=60, done=lambda: server.pending == 0 and len(server.agent_requests()) >= 2)
        except FileNotFoundError:
            pytest.skip("tmux is not installed")
    assert "Wrote tui.txt." in screen, screen
    assert (project / "tui.txt").read_text() == "tui\n"
    (path,) = ac.claude_session_files(agent_home)
    prompt = next(r for r in ac.parse_jsonl(path.read_text()) if r["type"] == "user")
    assert prompt["entrypoint"] == "cli" and prompt["promptSource"] == "typed"


@pytest.mark.agent_cli
def test_claude_plugin_dir_validate_namespaced_skill_and_session_end_hook(claude, project, agent_home, tmp_path):
    plugin = tmp_path / "myplug"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text('{"name": "myplug", "version": "0.1.0"}')
    (plugin / "skills" / "zebra-facts").mkdir(parents=True)
    (plugin / "skills" / "zebra-facts" / "SKILL.md").write_text(SKILL_TEXT)
    (plugin / "hooks").mkdir()
    hooks = {"hooks": {"SessionEnd": [{"hooks": [{"type": "command",
                                                   "command": 'cat > "$CLAUDE_PROJECT_DIR/session-end.json"'}]}]}}
    (plugin / "hooks" / "hooks.json").write_text(json.dumps(hooks))
    check = ac.run_cli([str(claude), "plugin", "validate", str(plugin)], cwd=tmp_path,
                       env=ac.claude_env(agent_home, "http://127.0.0.1:9"))
    assert check.returncode == 0 and "myplug:zebra-facts" in check.stdout, check.stdout + check.stderr
    (plugin / ".claude-plugin" / "plugin.json").write_text('{"version": 3}')
    bad = ac.run_cli([str(claude), "plugin", "validate", str(plugin)], cwd=tmp_path,
                     env=ac.claude_env(agent_home, "http://127.0.0.1:9"))
    assert bad.returncode == 1 and "Validation failed" in bad.stdout
    (plugin / ".claude-plugin" / "plugin.json").write_text('{"name": "myplug", "version": "0.1.0"}')

    with AgentServer([tool("Skill", skill="myplug:zebra-facts"), text("ok")]) as server:
        env = ac.claude_env(agent_home, server.base_url)
        argv = ac.claude_print_argv(claude, "Zebras?", allowed_tools=["Skill"], extra=["--plugin-dir", str(plugin)])
        proc = ac.run_cli(argv, cwd=project, env=env)
        first, second = server.agent_requests()
    assert proc.returncode == 0, proc.stderr
    init = next(e for e in ac.parse_jsonl(proc.stdout) if e.get("subtype") == "init")
    assert {"name": "myplug", "path": str(plugin), "source": "myplug@inline", "version": "0.1.0"} in init["plugins"]
    assert "myplug:zebra-facts" in init["skills"]
    assert f"- myplug:zebra-facts: {SKILL_DESCRIPTION}" in first.context_text()
    assert SKILL_BODY_MARKER in second.messages_text()
    ended = json.loads((project / "session-end.json").read_text())  # SessionEnd runs in -p mode too
    assert ended["hook_event_name"] == "SessionEnd" and ended["session_id"] == init["session_id"]
    assert ended["transcript_path"] == str(ac.claude_session_files(agent_home)[0]) and ended["cwd"] == str(project)


# ---------------------------------------------------------------------------------------------- codex
@pytest.mark.agent_cli
def test_codex_exec_runs_a_scripted_command_against_the_local_provider(codex, project, agent_home):
    script = [exec_command("echo made-by-codex > made.txt && cat made.txt", login=False), text("Created made.txt.")]
    with AgentServer(script) as server:
        env = ac.codex_env(agent_home)
        proc = ac.run_cli(ac.codex_exec_argv(codex, "Create made.txt.", server.base_url), cwd=project, env=env)
        requests = server.agent_requests()
    assert proc.returncode == 0, proc.stderr
    assert (project / "made.txt").read_text() == "made-by-codex\n"
    events = ac.parse_jsonl(proc.stdout)
    assert [e["type"] for e in events] == ["thread.started", "item.completed", "turn.started", "item.started",
                                          "item.completed", "item.completed", "turn.completed"]
    command = events[4]["item"]
    assert command["type"] == "command_execution" and command["exit_code"] == 0
    assert command["aggregated_output"] == "made-by-codex\n"
    assert events[5]["item"] == {"id": events[5]["item"]["id"], "type": "agent_message", "text": "Created made.txt."}
    assert events[1]["item"]["type"] == "error" and "scripted-model" in events[1]["item"]["message"]  # no metadata
    assert "input_tokens" in events[-1]["usage"]

    assert [r.route for r in requests] == ["/v1/responses", "/v1/responses"]
    assert requests[0].headers["authorization"] == f"Bearer {ac.TEST_API_KEY}"
    assert "exec_command" in requests[0].tool_names()
    assert "made-by-codex" in requests[1].messages_text()
    (rollout,) = ac.codex_session_files(agent_home)
    records = ac.parse_jsonl(rollout.read_text())
    assert records[0]["type"] == "session_meta" and records[0]["payload"]["cwd"] == str(project)
    assert records[0]["payload"]["id"] == events[0]["thread_id"] in rollout.name
    assert records[-1]["payload"]["type"] == "task_complete"


@pytest.mark.agent_cli
def test_codex_lists_agents_skills_and_agents_md_and_applies_a_patch(codex, project, agent_home):
    skill = project / ".agents" / "skills" / "zebra-facts" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(SKILL_TEXT)
    (project / "AGENTS.md").write_text("# Rules\nAGENTS-MARKER-9\n")
    patch = "*** Begin Patch\n*** Add File: zebra.txt\n+stripes\n*** End Patch\n"
    with AgentServer([apply_patch(patch), text("Added zebra.txt.")]) as server:
        env = ac.codex_env(agent_home)
        argv = ac.codex_exec_argv(codex, "Add zebra.txt.", server.base_url, model="gpt-5.5")
        proc = ac.run_cli(argv, cwd=project, env=env)
        first = server.agent_requests()[0]
    assert proc.returncode == 0, proc.stderr
    assert (project / "zebra.txt").read_text() == "stripes\n"
    assert "apply_patch" in first.tool_names()
    context = first.context_text()
    assert f"- zebra-facts: {SKILL_DESCRIPTION} (file: r1/zebra-facts/SKILL.md)" in context
    assert f"`r1` = `{project / '.agents' / 'skills'}`" in context
    assert SKILL_BODY_MARKER not in json.dumps(first.body)  # codex lists skills; the model reads the file itself
    assert f"# AGENTS.md instructions for {project}" in first.messages_text()
    assert "AGENTS-MARKER-9" in first.messages_text()
    changes = [e["item"] for e in ac.parse_jsonl(proc.stdout) if e["type"] == "item.completed"
               and e["item"]["type"] == "file_change"]
    assert changes[0]["changes"] == [{"path": str(project / "zebra.txt"), "kind": "add"}]


# ---------------------------------------------------------------------------------------------- copilot, opencode
@pytest.mark.agent_cli
def test_copilot_byok_offline_runs_a_scripted_tool_and_reads_instructions_and_skills(project, agent_home):
    copilot = ac.require_cli("copilot")
    (project / ".github" / "skills" / "zebra-facts").mkdir(parents=True)
    (project / ".github" / "skills" / "zebra-facts" / "SKILL.md").write_text(SKILL_TEXT)
    (project / ".github" / "copilot-instructions.md").write_text("COPILOT-INSTR-MARKER-3\n")
    (project / "AGENTS.md").write_text("AGENTS-MARKER-9\n")
    target = project / "made.txt"
    script = [tool("create", path=str(target), file_text="made-by-copilot\n"), text("Created made.txt.")]
    with AgentServer(script) as server:
        env = ac.copilot_env(agent_home, server.base_url)
        proc = ac.run_cli(ac.copilot_prompt_argv(copilot, "Create made.txt."), cwd=project, env=env)
        first = server.agent_requests()[0]
    assert proc.returncode == 0, proc.stderr
    assert target.read_text() == "made-by-copilot\n"
    assert first.route == "/v1/messages" and first.headers["x-api-key"] == ac.TEST_API_KEY
    assert {"bash", "create", "edit", "view", "skill"} <= set(first.tool_names())
    system = first.system_text()
    assert "<name>zebra-facts</name>" in system and f"<description>{SKILL_DESCRIPTION}</description>" in system
    assert "<custom_instruction>\nCOPILOT-INSTR-MARKER-3" in system and "AGENTS-MARKER-9" in system
    assert SKILL_BODY_MARKER not in json.dumps(first.body)
    events = ac.parse_jsonl(proc.stdout)
    kinds = [e["type"] for e in events]
    assert {"user.message", "assistant.message", "tool.execution_complete"} <= set(kinds) and kinds[-1] == "result"
    done = next(e for e in events if e["type"] == "tool.execution_complete")
    assert done["data"]["success"] is True and done["data"]["fileEdits"] == [{"path": str(target), "kind": "create"}]
    assert events[-1]["exitCode"] == 0 and events[-1]["usage"]["codeChanges"]["filesModified"] == [str(target)]
    (log,) = ac.copilot_session_files(agent_home)
    assert log.parent.name == events[-1]["sessionId"]
    assert any(r["type"] == "assistant.message" for r in ac.parse_jsonl(log.read_text()))


@pytest.mark.agent_cli
@pytest.mark.slow
def test_opencode_run_against_the_scripted_anthropic_provider(project, agent_home):
    opencode = ac.require_cli("opencode")
    skill = project / ".claude" / "skills" / "zebra-facts" / "SKILL.md"  # opencode also reads Claude Code skills
    skill.parent.mkdir(parents=True)
    skill.write_text(SKILL_TEXT)
    (project / "AGENTS.md").write_text("AGENTS-MARKER-9\n")
    call = tool("bash", command="echo made-by-opencode > made.txt && cat made.txt", description="Create made.txt")
    script = [call, text("Created made.txt.")]
    with AgentServer(script) as server:
        env = ac.opencode_env(agent_home, server.base_url)
        proc = ac.run_cli(ac.opencode_run_argv(opencode, "Create made.txt."), cwd=project, env=env, timeout=240)
        agent = server.agent_requests()
        aux = [r for r in server.requests_to("anthropic") if not r.is_agent]
    assert proc.returncode == 0, proc.stderr
    assert (project / "made.txt").read_text() == "made-by-opencode\n"
    assert len(agent) == 2 and {"bash", "edit", "read", "write", "skill"} <= set(agent[0].tool_names())
    assert aux and "title" in aux[0].system_text()  # the title call on the small model takes no scripted turn
    system = agent[0].system_text()
    assert "<name>zebra-facts</name>" in system and f"Instructions from: {project / 'AGENTS.md'}" in system
    events = ac.parse_jsonl(proc.stdout)
    used = next(e for e in events if e["type"] == "tool_use")["part"]
    assert used["tool"] == "bash" and used["state"]["status"] == "completed"
    assert used["state"]["output"] == "made-by-opencode\n"
    assert [e["part"]["text"] for e in events if e["type"] == "text"] == ["Created made.txt."]
    assert events[-1]["type"] == "step_finish" and events[-1]["part"]["reason"] == "stop"


# ---------------------------------------------------------------------------------------------- server via SDKs
def test_server_streams_anthropic_tool_use_and_text_to_the_sdk():
    with AgentServer([bash("ls -la"), text("a longer final answer " * 5)], chunk=7) as server:
        client = anthropic.Anthropic(base_url=server.base_url, api_key="k", max_retries=0)
        tools = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]
        with client.messages.stream(model="m", max_tokens=10, tools=tools,
                                    messages=[{"role": "user", "content": "hi"}]) as stream:
            first = stream.get_final_message()
        second = client.messages.create(model="m", max_tokens=10, tools=tools,
                                        messages=[{"role": "user", "content": "again"}])
        aux = client.messages.create(model="small", max_tokens=10, messages=[{"role": "user", "content": "title?"}])
        count = client.messages.count_tokens(model="m", messages=[{"role": "user", "content": "hi"}])
    assert first.stop_reason == "tool_use"
    assert first.content[0].type == "tool_use" and first.content[0].input == {"command": "ls -la"}
    assert second.stop_reason == "end_turn" and second.content[0].text == "a longer final answer " * 5
    assert aux.content[0].text == '{"title": "Scripted session"}'  # auxiliary calls never take scripted turns
    assert count.input_tokens > 0
    assert [r.api for r in server.requests] == ["anthropic", "anthropic", "anthropic", "anthropic-count"]


def test_server_streams_responses_function_and_custom_tool_calls_to_the_sdk():
    tools = [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
             {"type": "custom", "name": "apply_patch"}]
    with AgentServer([exec_command("pwd"), apply_patch("*** Begin Patch\n*** End Patch\n"), text("ok")]) as server:
        client = openai.OpenAI(base_url=server.base_url + "/v1", api_key="k", max_retries=0)
        outputs = []
        for _ in range(3):
            with client.responses.stream(model="m", input="hi", tools=tools) as stream:  # type: ignore[arg-type]
                outputs.append(stream.get_final_response())
    call, custom = (o.output[0] for o in outputs[:2])
    assert call.type == "function_call" and json.loads(call.arguments) == {"cmd": "pwd"}
    assert custom.type == "custom_tool_call" and custom.input.startswith("*** Begin Patch")
    assert outputs[2].output_text == "ok" and outputs[2].usage is not None and outputs[2].usage.total_tokens > 0
    assert len({call.call_id, custom.call_id}) == 2


def test_server_answers_probes_and_unknown_routes_and_routes_turns_by_role():
    import urllib.error
    import urllib.request

    with AgentServer([sub(text("for the sub-agent")), text("for anyone")]) as server:
        with urllib.request.urlopen(urllib.request.Request(server.base_url + "/api/hello", method="HEAD")) as r:
            assert r.status == 200
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(urllib.request.Request(server.base_url + "/v1/nope", data=b"{}", method="POST"))
        assert err.value.code == 404
        client = anthropic.Anthropic(base_url=server.base_url, api_key="k", max_retries=0)
        tools = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]
        main_reply = client.messages.create(model="m", max_tokens=5, tools=tools, system="main agent",
                                            messages=[{"role": "user", "content": "x"}])
        sub_reply = client.messages.create(model="m", max_tokens=5, tools=tools, system="cc_is_subagent=true;",
                                           messages=[{"role": "user", "content": "x"}])
    assert main_reply.content[0].text == "for anyone"  # the sub-only turn was skipped for the main agent
    assert sub_reply.content[0].text == "for the sub-agent"
    assert [r.method for r in server.requests][:2] == ["HEAD", "POST"]


# ---------------------------------------------------------------------------------------------- helpers, fixtures
def test_argv_builders_refuse_permission_bypass_and_keep_the_prompt_out_of_variadic_flags():
    argv = ac.claude_print_argv("claude", "do it", allowed_tools=["Bash", "Edit"], max_turns=3, model="m")
    assert argv[:3] == ["claude", "-p", "do it"] and argv[-2:] == ["--allowedTools", "Bash,Edit"]
    assert "--verbose" in argv and argv[argv.index("--max-turns") + 1] == "3"
    assert ac.claude_interactive_argv("claude", "hi")[-2:] == ["--", "hi"]
    with pytest.raises(ValueError):
        ac.claude_print_argv("claude", "x", permission_mode="bypassPermissions")
    with pytest.raises(ValueError):
        ac.codex_exec_argv("codex", "x", "http://127.0.0.1:1", sandbox="danger-full-access")
    codex = ac.codex_exec_argv("codex", "x", "http://127.0.0.1:1/")
    assert 'base_url="http://127.0.0.1:1/v1"' in codex[codex.index("model_provider=scripted") + 2]
    assert codex[-2:] == ["--", "x"]
    assert ac.claude_project_slug("/tmp/a_b.c/repo") == "-tmp-a-b-c-repo"


def test_claude_config_approves_the_key_and_trusts_folders(tmp_path):
    home = ac.prepare_claude_home(tmp_path / "h", trusted=[tmp_path / "p"])
    config = json.loads((home / ".claude.json").read_text())
    assert config["hasCompletedOnboarding"] is True
    assert config["customApiKeyResponses"]["approved"] == [ac.TEST_API_KEY[-20:]]
    assert config["projects"][str(tmp_path / "p")]["hasTrustDialogAccepted"] is True


def test_fixture_transcripts_are_scrubbed_and_follow_the_documented_record_format():
    claude_files = sorted((FIXTURES / "transcripts" / "claude").glob("*.jsonl"))
    # the codex folder also holds hand-built fixtures of other readers; only this one was made here
    codex_files = [FIXTURES / "transcripts" / "codex" / "exec-pytest-patch.jsonl"]
    assert len(claude_files) >= 4 and codex_files[0].exists()
    for path in [*claude_files, *codex_files, *(FIXTURES / "agent_cli").glob("*.jsonl")]:
        data = path.read_text()
        # no scratch prefix, real home, or key (claude's own socket under /tmp/cc-socks is not personal)
        assert "sgfx-" not in data and "/root/" not in data and "sk-ant-" not in data, path.name
        assert "/tmp/pytest-of" not in data, path.name
        ac.parse_jsonl(data)
    entrypoints = {}
    for path in claude_files:
        records = ac.parse_jsonl(path.read_text())
        turns = [r for r in records if r["type"] in ("user", "assistant")]
        assert turns, path.name
        for r in turns:
            assert {"uuid", "parentUuid", "sessionId", "cwd", "gitBranch", "timestamp", "isSidechain", "entrypoint",
                    "version", "message"} <= r.keys(), path.name
            assert r["cwd"] == "/home/user/project"
        entrypoints[path.stem] = {r["entrypoint"] for r in turns}
        if path.stem.endswith(".sidechain"):
            assert all(r["isSidechain"] for r in turns)
    assert entrypoints["interactive-tui"] == {"cli"} and entrypoints["headless-pytest-edit"] == {"sdk-cli"}
    rollout = ac.parse_jsonl(codex_files[0].read_text())
    assert rollout[0]["type"] == "session_meta" and rollout[0]["payload"]["cwd"] == "/home/user/project"

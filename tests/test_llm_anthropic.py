"""The anthropic backend driven through the REAL anthropic SDK against a local Messages API server."""

from __future__ import annotations

import dataclasses

import pytest

from skillgit.config import config_from_dict
from skillgit.llm.base import LLMError, Message, Request
from skillgit.llm.factory import build_student, build_teacher
from skillgit.llm.jsonout import complete_json
from skillgit.types import Item, Usage
from tests.fake_servers import (
    FakeLLMServer,
    error,
    fake_server_fixture,  # noqa: F401 (the fake_server fixture)
    hang,
    json_reply,
    rate_limited,
    reply,
    server_error,
    unauthorized,
)

KEY = "sk-ant-api03-test-0123456789abcdefghij"
SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
ASK = Request((Message("system", "You are terse."), Message("user", "What is 2+3?")), stage="reflect")
ASK_JSON = Request(ASK.messages, stage="reflect", json_schema=SCHEMA)


def cfg_for(server: FakeLLMServer, model: str = "claude-haiku-4-5", **backend):
    return config_from_dict({"model": {"teacher_backend": "anthropic", "teacher_model": model,
                                       "teacher": {"base_url": server.anthropic_base_url, "timeout_s": 5,
                                                   **backend}}})


def teacher(server: FakeLLMServer, **backend):
    return build_teacher(cfg_for(server, **backend), None, environ={"ANTHROPIC_API_KEY": KEY}, max_retries=0)


def test_messages_request_and_usage(fake_server):
    fake_server.script(reply("5", usage={"prompt": 1000, "completion": 100, "cached": 400}))
    cfg = cfg_for(fake_server, temperature=0.3)
    # a server on this machine is free unless `prices` says otherwise: price it like Haiku 4.5
    cfg = dataclasses.replace(cfg, prices={"claude-haiku-4-5": {"prompt": 1.0, "completion": 5.0, "cached": 0.1}})
    out = build_teacher(cfg, None, environ={"ANTHROPIC_API_KEY": KEY}, max_retries=0).complete(ASK)
    assert out.text == "5"
    # prompt tokens include the cache reads, as for OpenAI; those are billed at the cached rate
    assert out.usage == Usage(1, 1000, 100, 400, 0, round((600 * 1.0 + 400 * 0.10 + 100 * 5.0) / 1e6, 8))
    [sent] = fake_server.requests
    body = sent.json
    assert sent.api == "anthropic" and body["model"] == "claude-haiku-4-5"
    assert body["system"] == "You are terse." and body["messages"] == [{"role": "user", "content": "What is 2+3?"}]
    assert body["max_tokens"] == 4096 and body["temperature"] == 0.3
    assert "tools" not in body and "thinking" not in body
    assert KEY in sent.headers.get("x-api-key", "") + sent.headers.get("authorization", "")
    assert sent.headers["x-stainless-retry-count"] == "0"


def test_consecutive_roles_are_merged_and_a_user_turn_comes_first(fake_server):
    req = Request((Message("system", "a"), Message("system", "b"), Message("assistant", "prefill?"),
                   Message("user", "u1"), Message("user", "u2")))
    teacher(fake_server).complete(req)
    body = fake_server.requests[0].json
    assert body["system"] == "a\n\nb"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][2]["content"] == "u1\n\nu2"


def test_json_through_a_forced_tool(fake_server):
    fake_server.script(json_reply({"answer": 5}))
    llm = teacher(fake_server)
    result = complete_json(llm, ASK_JSON)
    assert result.obj == {"answer": 5} and result.attempts == 1
    body = fake_server.requests[0].json
    assert body["tools"] == [{"name": "respond", "description": "Submit the answer as structured data.",
                              "input_schema": SCHEMA}]
    assert body["tool_choice"] == {"type": "tool", "name": "respond"}
    assert llm.json_mode_in_use == "tool"


def test_tool_refused_falls_back_to_text_and_remembers(fake_server):
    fake_server.reject_tools = 400
    fake_server.handler = lambda body: 'Here: {"answer": 5}'
    llm = teacher(fake_server)
    assert complete_json(llm, ASK_JSON).obj == {"answer": 5}
    assert [bool(r.json.get("tools")) for r in fake_server.requests] == [True, False]
    assert "JSON schema" in fake_server.requests[1].json["messages"][-1]["content"]
    llm.complete(ASK_JSON)
    assert len(fake_server.requests) == 3 and "tools" not in fake_server.requests[2].json
    assert llm.json_mode_in_use == "prompt"


def test_a_transient_500_keeps_the_forced_tool_and_counts_a_retry(fake_server):
    fake_server.script(server_error(500, "internal server error"), json_reply({"answer": 5}))
    sleeps: list[float] = []
    llm = build_teacher(cfg_for(fake_server, max_retries=2), None, environ={"ANTHROPIC_API_KEY": KEY},
                        sleep=sleeps.append)
    assert complete_json(llm, ASK_JSON).obj == {"answer": 5}
    assert [bool(r.json.get("tools")) for r in fake_server.requests] == [True, True]
    assert llm.json_mode_in_use == "tool" and llm.stats.retries == 1 and len(sleeps) == 1


def test_a_500_naming_tools_is_a_refusal(fake_server):
    fake_server.reject_tools = 500  # "tools are not supported by this server"
    fake_server.handler = lambda body: '{"answer": 5}'
    llm = teacher(fake_server)
    assert complete_json(llm, ASK_JSON).obj == {"answer": 5}
    assert [bool(r.json.get("tools")) for r in fake_server.requests] == [True, False]
    assert llm.json_mode_in_use == "prompt" and llm.stats.retries == 0


def test_a_400_both_forms_get_keeps_the_tool(fake_server):
    fake_server.script(error(400, "prompt is too long: 300000 tokens > 200000 maximum"),
                       error(400, "prompt is too long: 300000 tokens > 200000 maximum"))
    llm = teacher(fake_server)
    with pytest.raises(LLMError, match="prompt is too long"):
        llm.complete(ASK_JSON)
    assert [bool(r.json.get("tools")) for r in fake_server.requests] == [True, False]
    assert llm.json_mode_in_use == "tool"


def test_cache_identity_leaves_out_the_endpoint(fake_server):
    assert teacher(fake_server).cache_identity == "anthropic:claude-haiku-4-5"
    assert teacher(fake_server, cache_identity="haiku-proxy").cache_identity == "haiku-proxy"


def test_extended_thinking_uses_text_not_a_forced_tool(fake_server):
    fake_server.script(reply('```json\n{"answer": 5}\n```'))
    llm = teacher(fake_server, thinking_budget=2048, max_tokens=1000, temperature=0.5)
    result = complete_json(llm, ASK_JSON)
    assert result.obj == {"answer": 5}
    body = fake_server.requests[0].json
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 3048  # room for the answer beyond the thinking budget
    assert "tool_choice" not in body and "tools" not in body and "temperature" not in body
    assert "JSON schema" in body["messages"][-1]["content"]
    assert "thinking: Let me think" in llm.complete(ASK).trace


def test_prompt_mode_never_sends_tools(fake_server):
    teacher(fake_server, json_mode="prompt").complete(ASK_JSON)
    assert "tools" not in fake_server.requests[0].json


@pytest.mark.parametrize("behaviour, kind, retryable, status", [
    (server_error(529, "Overloaded"), "server", True, 529),
    (server_error(500), "server", True, 500),
    (unauthorized("invalid x-api-key"), "auth", False, 401),
    (error(404, "model: claude-nope"), "not_found", False, 404),
    (error(400, "temperature: not supported by this model"), "bad_request", False, 400),
])
def test_http_errors(fake_server, behaviour, kind, retryable, status):
    fake_server.script(behaviour)
    with pytest.raises(LLMError) as info:
        teacher(fake_server).complete(ASK)
    err = info.value
    assert (err.kind, err.retryable, err.status) == (kind, retryable, status)
    assert behaviour.message in err.message and len(fake_server.requests) == 1
    if kind == "auth":
        assert "ANTHROPIC_API_KEY" in err.hint and ".env" in err.hint


def test_rate_limit_and_timeout(fake_server):
    fake_server.script(rate_limited("4"))
    with pytest.raises(LLMError) as info:
        teacher(fake_server).complete(ASK)
    assert (info.value.kind, info.value.retry_after, info.value.retryable) == ("rate_limit", 4.0, True)
    fake_server.script(hang(10))
    llm = build_teacher(cfg_for(fake_server, timeout_s=0.3), None, environ={"ANTHROPIC_API_KEY": KEY}, max_retries=0)
    with pytest.raises(LLMError) as info:
        llm.complete(ASK)
    assert info.value.kind == "timeout" and info.value.retryable
    assert len(fake_server.requests) == 2  # no SDK retries for either


def test_overloaded_then_success_with_our_retries(fake_server):
    fake_server.script(server_error(529, "Overloaded"))
    sleeps: list[float] = []
    llm = build_teacher(cfg_for(fake_server), None, environ={"ANTHROPIC_API_KEY": KEY}, sleep=sleeps.append)
    assert llm.complete(ASK).text == "OK"
    assert len(fake_server.requests) == 2 and len(sleeps) == 1


def test_missing_key_names_the_variable():
    cfg = config_from_dict({"model": {"student_backend": "anthropic", "student_model": "claude-haiku-4-5"}})
    with pytest.raises(LLMError) as info:
        build_student(cfg, None, environ={})
    assert info.value.kind == "auth" and "ANTHROPIC_API_KEY" in info.value.hint and ".env" in info.value.hint


def test_student_run(fake_server):
    cfg = config_from_dict({"model": {"student_backend": "anthropic", "student_model": "claude-haiku-4-5",
                                      "student": {"base_url": fake_server.anthropic_base_url}}})
    student = build_student(cfg, None, environ={"ANTHROPIC_API_KEY": KEY}, max_retries=0)
    student.run("# Skill\nBe exact.", Item("i1", "2+3?"))
    body = fake_server.requests[0].json
    assert body["system"] == "# Skill\nBe exact." and body["messages"] == [{"role": "user", "content": "2+3?"}]
    assert student.id == f"chat:anthropic:claude-haiku-4-5@{fake_server.url.split('//')[1]}"

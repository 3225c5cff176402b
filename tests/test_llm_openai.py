"""The openai backend (OpenAI, Azure OpenAI, OpenAI-compatible servers) driven through the REAL openai SDK against
a local HTTP server; the factory's credential resolution; the price table."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skillgit.config import BackendCfg, Config, ModelCfg, config_from_dict
from skillgit.errors import ConfigError, SkillgitError
from skillgit.llm.base import ChatStudent, LLMError, Message, Request
from skillgit.llm.factory import build_student, build_teacher
from skillgit.llm.jsonout import complete_json
from skillgit.llm.openai_backend import OpenAIBackend
from skillgit.llm.pricing import cost, price_for, price_known, resolve_price
from skillgit.types import Item, Usage
from tests.fake_servers import (
    FakeLLMServer,
    error,
    fake_server_fixture,  # noqa: F401 (the fake_server fixture)
    hang,
    json_reply,
    llm_handler,
    not_json,
    rate_limited,
    reply,
    server_error,
    unauthorized,
)

KEY = "sk-test-0123456789abcdefghijklmnop"
SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
STRICT_SCHEMA = {**SCHEMA, "additionalProperties": False}
ASK = Request((Message("system", "You are terse."), Message("user", "What is 2+3?")), stage="reflect")
ASK_JSON = Request(ASK.messages, stage="reflect", json_schema=SCHEMA)


def teacher_cfg(server: FakeLLMServer, model: str = "qwen2.5-0.5b", **backend):
    return config_from_dict({"model": {"teacher_backend": "openai", "teacher_model": model,
                                       "teacher": {"base_url": server.openai_base_url, "timeout_s": 5, **backend}}})


def teacher(server: FakeLLMServer, **backend):
    """The teacher the factory builds for `server`, without retries (so each error is seen as it is)."""
    return build_teacher(teacher_cfg(server, **backend), None, environ={"OPENAI_API_KEY": KEY}, max_retries=0)


# ---------------------------------------------------------------------------------------------- chat completions
def test_chat_request_and_reply(fake_server):
    fake_server.script(reply("5", usage={"prompt": 40, "completion": 7, "cached": 16, "reasoning": 3}))
    llm = teacher(fake_server)
    out = llm.complete(ASK)

    assert out.text == "5"
    assert out.usage == Usage(calls=1, prompt_tokens=40, completion_tokens=7, cached_tokens=16, reasoning_tokens=3,
                              cost_usd=0.0)  # a server on this machine costs nothing per token
    [sent] = fake_server.requests
    assert sent.api == "chat" and sent.json["model"] == "qwen2.5-0.5b"
    assert sent.messages() == [("system", "You are terse."), ("user", "What is 2+3?")]
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.headers["x-stainless-retry-count"] == "0"
    for absent in ("temperature", "seed", "max_tokens", "max_completion_tokens", "reasoning_effort",
                   "response_format"):
        assert absent not in sent.json, absent  # nothing is sent that was not set
    assert llm.id == f"openai:qwen2.5-0.5b@{fake_server.url.split('//')[1]}"


def test_parameters_pass_through_and_request_values_win(fake_server):
    llm = teacher(fake_server, temperature=0.2, max_tokens=64, seed=11, reasoning_effort="low")
    llm.complete(ASK)
    llm.complete(Request(ASK.messages, temperature=0.9, max_tokens=8, seed=3))
    first, second = (r.json for r in fake_server.requests)
    assert (first["temperature"], first["max_tokens"], first["seed"], first["reasoning_effort"]) == (0.2, 64, 11, "low")
    assert (second["temperature"], second["max_tokens"], second["seed"]) == (0.9, 8, 3)
    assert "max_completion_tokens" not in first  # other servers do not all know the newer name


def test_configured_prices_apply_even_to_a_local_server(fake_server):
    fake_server.script(reply("x", usage={"prompt": 1_000_000, "completion": 500_000, "cached": 400_000}))
    cfg = config_from_dict({"model": {"teacher_backend": "openai", "teacher_model": "my-model",
                                      "teacher": {"base_url": fake_server.openai_base_url}},
                            "prices": {"my-model": {"prompt": 1.0, "completion": 2.0, "cached": 0.5}}})
    llm = build_teacher(cfg, None, environ={"OPENAI_API_KEY": KEY}, max_retries=0)
    # 600k uncached x $1 + 400k cached x $0.5 + 500k x $2 per 1M
    assert llm.complete(ASK).usage.cost_usd == pytest.approx(0.6 + 0.2 + 1.0)


# ---------------------------------------------------------------------------------------------- structured output
def test_json_schema_first(fake_server):
    fake_server.script(json_reply({"answer": 5}))
    llm = teacher(fake_server)
    assert complete_json(llm, Request(ASK.messages, stage="reflect", json_schema=STRICT_SCHEMA)).obj == {"answer": 5}
    fmt = fake_server.requests[0].json["response_format"]
    assert fmt == {"type": "json_schema", "json_schema": {"name": "reflect", "schema": STRICT_SCHEMA, "strict": True}}
    assert llm.json_mode_in_use == "json_schema"


def test_json_schema_not_strict_when_schema_is_open(fake_server):
    teacher(fake_server).complete(ASK_JSON)
    assert fake_server.requests[0].json["response_format"]["json_schema"]["strict"] is False
    nested_open = {"type": "object", "additionalProperties": False, "required": ["edits"], "properties": {
        "edits": {"type": "array", "items": {"type": "object", "properties": {"op": {"type": "string"}}}}}}
    teacher(fake_server).complete(Request(ASK.messages, json_schema=nested_open))
    assert fake_server.requests[1].json["response_format"]["json_schema"]["strict"] is False


def test_auto_falls_back_to_json_object_with_schema_and_remembers(fake_server):
    fake_server.reject_formats = {"json_schema": 500}  # llama.cpp answers 500 to json_schema
    fake_server.handler = lambda body: '{"answer": 5}'
    llm = teacher(fake_server)

    result = complete_json(llm, ASK_JSON)
    assert result.obj == {"answer": 5}
    assert [r.format_kind for r in fake_server.requests] == ["json_schema", "json_object+schema"]
    fallback = fake_server.requests[1].json
    assert fallback["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert '"answer"' in fallback["messages"][-1]["content"]  # the schema is in the prompt too

    llm.complete(ASK_JSON)  # remembered: no second try of the refused form
    assert [r.format_kind for r in fake_server.requests] == ["json_schema", "json_object+schema",
                                                             "json_object+schema"]
    assert llm.json_mode_in_use == "json_object_schema"


def test_auto_ladder_ends_with_the_plain_prompt(fake_server):
    fake_server.reject_formats = {"json_schema": 400, "json_object+schema": 400, "json_object": 422}
    fake_server.handler = lambda body: 'Sure: {"answer": 5}'
    llm = teacher(fake_server)
    assert complete_json(llm, ASK_JSON).obj == {"answer": 5}
    kinds = [r.format_kind for r in fake_server.requests]
    assert kinds == ["json_schema", "json_object+schema", "json_object", None]
    last = fake_server.requests[-1].json
    assert "response_format" not in last and "JSON schema" in last["messages"][-1]["content"]
    assert llm.json_mode_in_use == "prompt"


def test_fallback_does_not_happen_for_other_errors(fake_server):
    fake_server.script(rate_limited("1"))
    llm = teacher(fake_server)
    with pytest.raises(LLMError) as info:
        llm.complete(ASK_JSON)
    assert info.value.kind == "rate_limit" and llm.json_mode_in_use == "json_schema"
    assert len(fake_server.requests) == 1
    assert info.value.__context__ is None  # the SDK exception (it holds the request's headers) is not chained


def test_a_transient_500_is_retried_without_stepping_the_json_mode_down(fake_server):
    # one scripted 500 that does not mention the format, then the server works again
    fake_server.script(server_error(500, "internal server error"), json_reply({"answer": 5}))
    sleeps: list[float] = []
    llm = build_teacher(teacher_cfg(fake_server, max_retries=2), None, environ={"OPENAI_API_KEY": KEY},
                        sleep=sleeps.append)
    assert complete_json(llm, ASK_JSON).obj == {"answer": 5}
    assert [r.format_kind for r in fake_server.requests] == ["json_schema", "json_schema"]
    assert llm.json_mode_in_use == "json_schema"  # same mode as before the blip
    assert llm.stats.retries == 1 and llm.stats.attempts == 2 and len(sleeps) == 1  # counted as a retry
    llm.complete(ASK_JSON)
    assert fake_server.requests[-1].format_kind == "json_schema"


def test_an_error_naming_the_format_steps_down_whatever_its_status(fake_server):
    fake_server.script(error(503, "json_schema: unsupported schema feature 'oneOf'"))
    llm = teacher(fake_server)  # max_retries=0: the step-down is not a retry
    llm.complete(ASK_JSON)
    assert [r.format_kind for r in fake_server.requests] == ["json_schema", "json_object+schema"]
    assert llm.json_mode_in_use == "json_object_schema" and llm.stats.retries == 0


def test_a_400_every_form_gets_leaves_the_json_mode_alone(fake_server):
    too_long = "This model's maximum context length is 4096 tokens"
    fake_server.script(*(error(400, too_long) for _ in range(4)))
    llm = teacher(fake_server)
    with pytest.raises(LLMError, match="maximum context length") as info:
        llm.complete(ASK_JSON)
    assert info.value.kind == "bad_request" and len(fake_server.requests) == 4  # every form was tried...
    assert llm.json_mode_in_use == "json_schema"  # ...and none worked: nothing is remembered
    llm.complete(ASK_JSON)
    assert fake_server.requests[-1].format_kind == "json_schema"


def test_cache_identity_leaves_out_the_endpoint(fake_server):
    llm = teacher(fake_server)
    assert llm.cache_identity == "openai:qwen2.5-0.5b"  # no host:port; read through the retry wrapper
    assert fake_server.url.split("//")[1] in llm.id  # the id still names the server
    pinned = teacher(fake_server, cache_identity="qwen2.5-0.5b-q4-local")
    assert pinned.cache_identity == "qwen2.5-0.5b-q4-local"
    cfg = config_from_dict({"model": {"student_backend": "openai", "student_model": "small",
                                      "student": {"base_url": fake_server.openai_base_url}}})
    assert build_student(cfg, None, environ={}).cache_identity == "chat:openai:small"
    azure = config_from_dict({"model": {"teacher_backend": "azure", "teacher_model": "dep-1",
                                        "teacher": {"azure_endpoint": fake_server.azure_endpoint}}})
    assert build_teacher(azure, None, environ={"AZURE_OPENAI_API_KEY": KEY}).cache_identity == "azure:dep-1"


def test_explicit_json_mode_is_forced(fake_server):
    fake_server.reject_formats = {"json_object": 400}
    llm = teacher(fake_server, json_mode="json_object")
    with pytest.raises(LLMError) as info:
        llm.complete(ASK_JSON)
    assert info.value.kind == "bad_request" and info.value.status == 400
    assert [r.json.get("response_format") for r in fake_server.requests] == [{"type": "json_object"}]

    prompt_only = teacher(fake_server, json_mode="prompt")
    prompt_only.complete(ASK_JSON)
    assert "response_format" not in fake_server.requests[-1].json


# ---------------------------------------------------------------------------------------------- responses API
def test_responses_api(fake_server):
    fake_server.script(json_reply({"answer": 5}, usage={"prompt": 30, "completion": 9, "cached": 10,
                                                        "reasoning": 4}))
    llm = teacher(fake_server, api="responses", max_tokens=50, reasoning_effort="medium", seed=1)
    out = llm.complete(ASK_JSON)
    assert out.text == '{"answer": 5}'
    assert (out.usage.prompt_tokens, out.usage.completion_tokens, out.usage.cached_tokens,
            out.usage.reasoning_tokens) == (30, 9, 10, 4)
    [sent] = fake_server.requests
    body = sent.json
    assert sent.api == "responses"
    assert body["instructions"] == "You are terse." and body["input"] == [{"role": "user", "content": "What is 2+3?"}]
    assert body["text"]["format"]["type"] == "json_schema" and body["text"]["format"]["schema"] == SCHEMA
    assert body["max_output_tokens"] == 50 and body["reasoning"] == {"effort": "medium"}
    assert body["store"] is False and "seed" not in body  # the Responses API has no seed


def test_responses_api_falls_back_to_json_object(fake_server):
    fake_server.reject_formats = {"json_schema": 400}
    llm = teacher(fake_server, api="responses")
    llm.complete(ASK_JSON)
    assert [r.format_kind for r in fake_server.requests] == ["json_schema", "json_object"]


# ---------------------------------------------------------------------------------------------- Azure
def test_azure_deployment_path_api_version_and_key(fake_server):
    cfg = config_from_dict({"model": {
        "teacher_backend": "azure", "teacher_model": "gpt-4o",
        "teacher": {"azure_endpoint": fake_server.azure_endpoint, "azure_deployment": "prod-4o",
                    "api_version": "2024-10-21", "max_tokens": 100}}})
    llm = build_teacher(cfg, None, environ={"AZURE_OPENAI_API_KEY": "azure-secret-key-123456"}, max_retries=0)
    assert llm.complete(ASK).text == "OK"
    [sent] = fake_server.requests
    assert sent.api == "azure_chat" and sent.deployment == "prod-4o"
    assert sent.query == {"api-version": "2024-10-21"}
    assert sent.headers["api-key"] == "azure-secret-key-123456"
    assert sent.json["max_completion_tokens"] == 100 and "max_tokens" not in sent.json
    assert llm.id == "azure:prod-4o" and "api-version 2024-10-21" in llm.endpoint
    # priced by the model name (the deployment's name is the user's own)
    assert llm.price_known and llm.complete(ASK).usage.cost_usd == pytest.approx((12 * 2.50 + 3 * 10.0) / 1e6)


def test_azure_responses_api(fake_server):
    cfg = config_from_dict({"model": {
        "teacher_backend": "azure", "teacher_model": "gpt-4o",
        "teacher": {"azure_endpoint": fake_server.azure_endpoint, "azure_deployment": "prod-4o", "api": "responses",
                    "api_version": "2025-04-01-preview"}}})
    llm = build_teacher(cfg, None, environ={"AZURE_OPENAI_API_KEY": "azure-secret-key-123456"}, max_retries=0)
    assert llm.complete(ASK).text == "OK"
    [sent] = fake_server.requests
    assert sent.path == "/openai/responses" and sent.query == {"api-version": "2025-04-01-preview"}
    assert sent.json["model"] == "prod-4o" and sent.headers["api-key"] == "azure-secret-key-123456"


def test_azure_from_environment_and_dotenv(fake_server, tmp_path):
    (tmp_path / ".env").write_text(f"# Azure\nexport AZURE_OPENAI_API_KEY='dotenv-azure-key-0001'\n"
                                   f"AZURE_OPENAI_ENDPOINT={fake_server.azure_endpoint}  # local\n")
    cfg = config_from_dict({"model": {"teacher_backend": "azure", "teacher_model": "gpt4o-dep"}})
    llm = build_teacher(cfg, tmp_path, environ={"OPENAI_API_VERSION": "2025-01-01-preview"}, max_retries=0)
    llm.complete(ASK)
    [sent] = fake_server.requests
    assert sent.deployment == "gpt4o-dep" and sent.query["api-version"] == "2025-01-01-preview"
    assert not llm.price_known  # "gpt4o-dep" names no model; cost needs `prices:`
    assert sent.headers["api-key"] == "dotenv-azure-key-0001"


def test_azure_entra_id_token_provider_when_no_key(fake_server, monkeypatch):
    import skillgit.llm.openai_backend as backend_module

    tokens = iter(["entra-token-1", "entra-token-2"])
    monkeypatch.setattr(backend_module, "azure_token_provider", lambda *a: lambda: next(tokens))
    cfg = config_from_dict({"model": {"teacher_backend": "azure", "teacher_model": "dep",
                                      "teacher": {"azure_endpoint": fake_server.azure_endpoint}}})
    llm = build_teacher(cfg, None, environ={}, max_retries=0)
    fake_server.script(unauthorized())
    with pytest.raises(LLMError) as info:
        llm.complete(ASK)
    assert info.value.kind == "auth" and "az login" in info.value.hint
    llm.complete(ASK)
    first, second = fake_server.requests
    assert first.headers["authorization"] == "Bearer entra-token-1" and "api-key" not in first.headers
    assert second.headers["authorization"] == "Bearer entra-token-2"  # asked for on every request (refresh)


def test_azure_without_key_or_identity_names_the_variable(fake_server, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_azure_identity(name, *args, **kwargs):
        if name.startswith("azure.identity"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_azure_identity)
    cfg = config_from_dict({"model": {"teacher_backend": "azure", "teacher_model": "dep",
                                      "teacher": {"azure_endpoint": fake_server.azure_endpoint}}})
    with pytest.raises(LLMError) as info:
        build_teacher(cfg, None, environ={})
    assert info.value.kind == "auth" and "AZURE_OPENAI_API_KEY" in info.value.hint
    assert "azure-identity" in info.value.hint and ".env" in info.value.hint
    assert fake_server.requests == []


# ---------------------------------------------------------------------------------------------- errors
def test_rate_limit_honours_retry_after_and_sdk_does_not_retry(fake_server):
    fake_server.script(rate_limited("2"), rate_limited(None, retry_after_ms="250"))
    llm = teacher(fake_server)
    with pytest.raises(LLMError) as info:
        llm.complete(ASK)
    err = info.value
    assert (err.kind, err.retryable, err.retry_after, err.status) == ("rate_limit", True, 2.0, 429)
    assert len(fake_server.requests) == 1  # the SDK's own retries are off
    with pytest.raises(LLMError) as info:
        llm.complete(ASK)
    assert info.value.retry_after == 0.25


def test_exhausted_quota_is_not_retried(fake_server):
    fake_server.script(error(429, "You exceeded your current quota", error_type="insufficient_quota"))
    sleeps: list[float] = []
    llm = build_teacher(teacher_cfg(fake_server), None, environ={"OPENAI_API_KEY": KEY}, sleep=sleeps.append)
    with pytest.raises(LLMError) as info:
        llm.complete(ASK)
    assert (info.value.kind, info.value.retryable) == ("rate_limit", False) and "billing" in info.value.hint
    assert sleeps == [] and len(fake_server.requests) == 1


@pytest.mark.parametrize("behaviour, kind, retryable, status, hint_part", [
    (server_error(500), "server", True, 500, "retried"),
    (server_error(503), "server", True, 503, "retried"),
    (unauthorized(), "auth", False, 401, "OPENAI_API_KEY"),
    (error(403, "forbidden"), "auth", False, 403, ".env"),
    (error(404, "model not found"), "not_found", False, 404, "qwen2.5-0.5b"),
    (error(400, "bad temperature"), "bad_request", False, 400, "temperature"),
    (error(422, "unprocessable"), "bad_request", False, 422, "settings"),
])
def test_http_errors_map_to_llm_errors(fake_server, behaviour, kind, retryable, status, hint_part):
    fake_server.script(behaviour)
    with pytest.raises(LLMError) as info:
        teacher(fake_server).complete(ASK)
    err = info.value
    assert (err.kind, err.retryable, err.status) == (kind, retryable, status)
    assert hint_part in err.hint and behaviour.message in err.message
    assert len(fake_server.requests) == 1


def test_hung_server_times_out_as_retryable(fake_server):
    fake_server.script(hang(10))
    llm = build_teacher(teacher_cfg(fake_server, timeout_s=0.3), None, environ={"OPENAI_API_KEY": KEY},
                        max_retries=0)
    with pytest.raises(LLMError) as info:
        llm.complete(ASK)
    assert info.value.kind == "timeout" and info.value.retryable and "timeout_s" in info.value.hint
    assert len(fake_server.requests) == 1


def test_body_that_is_not_json_is_a_retryable_server_error(fake_server):
    fake_server.script(not_json())
    with pytest.raises(LLMError) as info:
        teacher(fake_server).complete(ASK)
    assert info.value.kind == "server" and info.value.retryable and "not valid JSON" in info.value.message


def test_unreachable_server_is_a_connection_error():
    with FakeLLMServer() as server:
        cfg = teacher_cfg(server)
    llm = build_teacher(cfg, None, environ={"OPENAI_API_KEY": KEY}, max_retries=0)  # the server is gone now
    with pytest.raises(LLMError) as info:
        llm.complete(ASK)
    assert info.value.kind == "connection" and info.value.retryable and "base_url" in info.value.hint


def test_retries_through_the_factory_with_injected_sleep(fake_server):
    fake_server.script(server_error(500), rate_limited("3"))
    sleeps: list[float] = []
    llm = build_teacher(teacher_cfg(fake_server, max_retries=3), None, environ={"OPENAI_API_KEY": KEY},
                        sleep=sleeps.append)
    assert llm.complete(ASK).text == "OK"
    assert len(fake_server.requests) == 3 and len(sleeps) == 2
    assert 3.0 <= sleeps[1] <= 3.3  # Retry-After honoured
    assert llm.stats.attempts == 3 and llm.stats.retries == 2


# ---------------------------------------------------------------------------------------------- factory
def test_missing_key_without_base_url_fails_with_hint():
    cfg = config_from_dict({"model": {"teacher_backend": "openai", "teacher_model": "gpt-4o-mini"}})
    with pytest.raises(LLMError) as info:
        build_teacher(cfg, None, environ={})
    err = info.value
    assert err.kind == "auth" and "OPENAI_API_KEY" in err.message
    assert "OPENAI_API_KEY" in err.hint and ".env" in err.hint and "base_url" in err.hint


def test_local_server_without_key_gets_a_dummy_key(fake_server):
    build_teacher(teacher_cfg(fake_server), None, environ={}, max_retries=0).complete(ASK)
    assert fake_server.requests[0].headers["authorization"] == "Bearer no-key-needed"


def test_named_key_variable_must_exist_even_with_base_url(fake_server):
    with pytest.raises(LLMError) as info:
        build_teacher(teacher_cfg(fake_server, api_key_env="VLLM_KEY"), None, environ={})
    assert "VLLM_KEY" in info.value.hint
    build_teacher(teacher_cfg(fake_server, api_key_env="VLLM_KEY"), None, environ={"VLLM_KEY": "vllm-key-123456"},
                  max_retries=0).complete(ASK)
    assert fake_server.requests[0].headers["authorization"] == "Bearer vllm-key-123456"


def test_base_url_and_key_from_environment_and_dotenv(fake_server, tmp_path):
    (tmp_path / ".env").write_text(f'OPENAI_API_KEY="dotenv-key-000000"\n'
                                   f'OPENAI_BASE_URL={fake_server.openai_base_url}\n')
    cfg = config_from_dict({"model": {"teacher_backend": "openai", "teacher_model": "m"}})
    build_teacher(cfg, tmp_path, environ={}, max_retries=0).complete(ASK)
    assert fake_server.requests[-1].headers["authorization"] == "Bearer dotenv-key-000000"
    # the real environment wins over .env
    build_teacher(cfg, tmp_path, environ={"OPENAI_API_KEY": "real-env-key-11111"}, max_retries=0).complete(ASK)
    assert fake_server.requests[-1].headers["authorization"] == "Bearer real-env-key-11111"


def test_unknown_backend_is_an_error_never_a_fallback():
    # built directly: config loading rejects these names too, the factory must not rely on that
    cfg = Config(model=ModelCfg(teacher_backend="openia", student_backend="mock"))
    with pytest.raises(ConfigError) as info:
        build_teacher(cfg, None, environ={})
    assert "openia" in info.value.message
    assert all(name in info.value.hint for name in ("simulated", "openai", "azure", "anthropic"))
    with pytest.raises(ConfigError) as info:
        build_student(cfg, None, environ={})
    assert "command" in info.value.hint
    cfg = Config(model=ModelCfg(teacher_backend="command"))
    with pytest.raises(SkillgitError):
        build_teacher(cfg, None, environ={})  # a CLI agent cannot be the teacher


def test_simulated_backends_are_only_built_when_asked_for():
    cfg = config_from_dict({"model": {"teacher_backend": "simulated", "student_backend": "simulated"}})
    teacher_llm = build_teacher(cfg, None, environ={})
    student = build_student(cfg, None, environ={})
    assert teacher_llm.id.startswith("simulated:sim-teacher") and student.id.startswith("chat:simulated:sim-student")
    assert teacher_llm.concurrency == cfg.model.teacher.concurrency  # wrapped like every other backend


def test_a_simulated_model_can_sit_behind_the_server():
    from skillgit.world import SimulatedStudentLLM, generate_tasks

    sim_cfg = config_from_dict({}).model.simulated
    item = generate_tasks(sim_cfg, 1)[0]
    skill = "# Records\n\nWrite dates as YYYY-MM-DD.\n"
    with FakeLLMServer(llm_handler(SimulatedStudentLLM(sim_cfg))) as server:
        cfg = config_from_dict({"model": {"student_backend": "openai", "student_model": "sim",
                                          "student": {"base_url": server.openai_base_url}}})
        served = build_student(cfg, None, environ={}, max_retries=0).run(skill, item)
    direct = ChatStudent(SimulatedStudentLLM(sim_cfg)).run(skill, item)
    assert served.text == direct.text and served.text


def test_chat_student_uses_skill_as_system_prompt(fake_server):
    cfg = config_from_dict({"model": {"student_backend": "openai", "student_model": "small",
                                      "student": {"base_url": fake_server.openai_base_url, "temperature": 0.0,
                                                  "seed": 5}}})
    student = build_student(cfg, None, environ={}, max_retries=0)
    assert isinstance(student, ChatStudent)
    student.run("# Skill\nAnswer with a number.", Item("i1", "2+3?"), sample=2)
    sent = fake_server.requests[0].json
    assert sent["messages"] == [{"role": "system", "content": "# Skill\nAnswer with a number."},
                                {"role": "user", "content": "2+3?"}]
    assert sent["temperature"] == 0.0 and sent["seed"] == 7  # configured seed + sample number


def test_backend_rejects_unknown_json_mode():
    with pytest.raises(LLMError, match="json_mode 'xml'"):
        OpenAIBackend("m", BackendCfg(json_mode="xml"), api_key=KEY, base_url="http://127.0.0.1:9/v1")


# ---------------------------------------------------------------------------------------------- pricing
def test_price_table_matching():
    assert price_for("gpt-4o-mini-2024-07-18") == price_for("gpt-4o-mini") != price_for("gpt-4o")
    assert price_for("openai/gpt-4.1-nano").prompt == 0.10
    assert price_for("claude-sonnet-4-5-20250929").completion == 15.0
    assert price_for("claude-opus-4-5").prompt == 5.0 and price_for("claude-opus-4-1-20250805").prompt == 15.0
    assert price_for("claude-3-5-haiku-latest") is not None and price_for("o4-mini").cached == 0.275
    assert price_for("claude-opus-9") is None and not price_known("my-finetune")  # no loose family matching
    assert price_for("sim-teacher").prompt == 0.0


def test_cost_bills_cached_tokens_at_the_cached_rate():
    usage = Usage(1, prompt_tokens=1_000_000, completion_tokens=1_000_000, cached_tokens=500_000)
    assert cost("gpt-4o", usage) == pytest.approx(0.5 * 2.50 + 0.5 * 1.25 + 10.0)
    assert cost("unknown-model", usage) == 0.0
    assert cost("gpt-4o", {"prompt_tokens": 1000}) == pytest.approx(0.0025)


def test_configured_prices_override_and_are_validated():
    prices = {"gpt-4o": {"input": 1.0, "output": 4.0}}
    assert resolve_price("gpt-4o-2024-08-06", prices).prompt == 1.0
    assert resolve_price("llama-3", None, "http://localhost:8080/v1").prompt == 0.0
    assert resolve_price("llama-3", None, "https://api.together.xyz/v1") is None
    with pytest.raises(ConfigError, match="prices.gpt-4o.inputs"):
        resolve_price("gpt-4o", {"gpt-4o": {"inputs": 1.0, "completion": 2.0}})


# ---------------------------------------------------------------------------------------------- live
@pytest.mark.live
@pytest.mark.skipif(not (os.environ.get("SKILLGIT_LIVE_BASE_URL") and os.environ.get("SKILLGIT_LIVE_MODEL")),
                    reason="set SKILLGIT_LIVE_BASE_URL and SKILLGIT_LIVE_MODEL to run against a real server")
def test_live_chat_and_json():
    backend = {"base_url": os.environ["SKILLGIT_LIVE_BASE_URL"], "timeout_s": 120, "max_tokens": 200}
    environ = {}
    if os.environ.get("SKILLGIT_LIVE_API_KEY"):
        backend["api_key_env"] = "SKILLGIT_LIVE_API_KEY"
        environ["SKILLGIT_LIVE_API_KEY"] = os.environ["SKILLGIT_LIVE_API_KEY"]
    cfg = config_from_dict({"model": {"teacher_backend": "openai", "teacher_model": os.environ["SKILLGIT_LIVE_MODEL"],
                                      "teacher": backend}})
    llm = build_teacher(cfg, Path.cwd(), environ=environ, max_retries=2)
    chat = llm.complete(Request((Message("user", "Reply with the single word OK."),), stage="live"))
    assert chat.text.strip() and chat.usage.calls == 1
    result = complete_json(llm, Request((Message("user", "What is 2+3? Put the number in `answer`."),),
                                        stage="live", json_schema=SCHEMA))
    assert result.obj is not None, result.error
    assert isinstance(result.obj.get("answer"), int)

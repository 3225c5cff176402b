"""A teacher on a server on this machine (llama.cpp, Ollama, LM Studio on a CPU): timeouts that fit it, and a
timeout that says which setting to raise. The real openai SDK against a scripted server on 127.0.0.1."""

from __future__ import annotations

import pytest

from skillgit.config import BackendCfg, config_from_dict
from skillgit.llm.base import LLMError, Message, Request
from skillgit.llm.factory import build_teacher
from skillgit.llm.openai_backend import LOCAL_TIMEOUT_S, OpenAIBackend, effective_timeout
from tests.fake_servers import fake_server_fixture, hang  # noqa: F401 (the fake_server fixture)

ASK = Request((Message("user", "Propose edits."),), stage="reflect")


def test_a_local_server_left_at_the_default_timeout_gets_the_local_one(fake_server):
    backend = OpenAIBackend("local", BackendCfg(), api_key="x", base_url=fake_server.openai_base_url, role="teacher")
    assert backend.local and backend.timeout_s == LOCAL_TIMEOUT_S > 120
    assert backend.client.timeout == LOCAL_TIMEOUT_S  # what the SDK really waits
    for url in ("http://localhost:8080/v1", "http://[::1]:8080/v1", "http://127.0.0.2:1234/v1"):
        assert effective_timeout(BackendCfg(), url) == LOCAL_TIMEOUT_S, url
    # a remote server keeps the default, and an explicit setting always wins
    assert effective_timeout(BackendCfg(), "http://10.1.2.3:8080/v1") == 120
    assert effective_timeout(BackendCfg(), None) == 120
    assert effective_timeout(BackendCfg(timeout_s=45), fake_server.openai_base_url) == 45


def test_a_timeout_on_a_local_server_names_model_teacher_timeout_s(fake_server):
    fake_server.script(hang(10))
    cfg = config_from_dict({"model": {"teacher_backend": "openai", "teacher_model": "local",
                                      "teacher": {"base_url": fake_server.openai_base_url, "timeout_s": 0.3}}})
    llm = build_teacher(cfg, None, environ={}, max_retries=0)
    with pytest.raises(LLMError) as info:
        llm.complete(ASK)
    err = info.value
    assert err.kind == "timeout" and err.retryable and "no answer within 0.3s" in err.message
    assert "raise model.teacher.timeout_s" in err.hint and "on this machine" in err.hint
    assert "queues behind the abandoned call" in err.hint

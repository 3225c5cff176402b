"""Secret masking, and the promise that a key never shows up in LLMError messages, reprs or traces."""

from __future__ import annotations

import pytest

from skillgit.config import config_from_dict
from skillgit.dotenv import read_dotenv
from skillgit.llm.base import LLMError, Message, Request
from skillgit.llm.factory import build_teacher
from skillgit.redact import MASK, redact, redact_mapping
from tests.fake_servers import FakeLLMServer, error, unauthorized

ASK = Request((Message("user", "hi"),))


def test_values_of_secret_environment_variables_are_masked(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-value-123456")
    monkeypatch.setenv("DB_PASSWORD", "hunter2hunter2")
    monkeypatch.setenv("SHORT_KEY", "abc")  # too short to mask safely
    monkeypatch.setenv("EDITOR_PATH", "/usr/bin/vim-secret")  # name is not a secret's
    text = "token tok-value-123456, pw hunter2hunter2, short abc, editor /usr/bin/vim-secret"
    assert redact(text) == f"token {MASK}, pw {MASK}, short abc, editor /usr/bin/vim-secret"


@pytest.mark.parametrize("text, leaked", [
    ("key sk-proj-AbCdEf0123456789xyz done", "AbCdEf0123456789xyz"),
    ("sk-ant-api03-ZZZZZZZZZZZZZZZZZZZZ", "ZZZZZZZZZZZZZZZZZZZZ"),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig", "eyJhbGciOiJIUzI1NiJ9"),
    ("api-key: 0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef"),
    ('{"x-api-key": "azure-like-key-value"}', "azure-like-key-value"),
    ("api_key=plainvalue99 next", "plainvalue99"),
    ("password: correcthorsebattery", "correcthorsebattery"),
    ("{'authorization': 'Basic dXNlcjpwYXNzd29yZA=='}", "dXNlcjpwYXNzd29yZA=="),
])
def test_credential_shapes_are_masked(text, leaked):
    out = redact(text)
    assert leaked not in out and MASK in out


def test_ordinary_text_is_left_alone_and_redact_is_idempotent():
    text = "max_tokens: 512, prompt_tokens=40, the key insight is sk-short; skill-based tasks"
    assert redact(text) == text
    once = redact("Bearer abcdefghijkl")
    assert redact(once) == once == f"Bearer {MASK}"


def test_shapes_off_masks_only_known_values(monkeypatch):
    monkeypatch.setenv("AGENT_API_KEY", "agent-secret-value")
    text = "password: is the word; key agent-secret-value"
    assert redact(text, shapes=False) == f"password: is the word; key {MASK}"
    assert redact("x extra-secret-1 y", ["extra-secret-1"]) == f"x {MASK} y"


def test_redact_mapping_masks_credential_fields_and_keeps_counters():
    data = {"model": {"teacher": {"api_key": "literal-key-in-config", "api_key_env": "OPENAI_API_KEY",
                                  "max_tokens": 512, "base_url": "http://h/v1?api-key=0123456789abcd"}},
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
            "headers": [{"Authorization": "Bearer abcdefghijklmnop"}, {"X-Request-Id": "r1"}],
            "client_secret": "", "note": "sk-live-0123456789abcdefgh"}
    out = redact_mapping(data)
    teacher = out["model"]["teacher"]
    assert teacher["api_key"] == MASK and teacher["api_key_env"] == "OPENAI_API_KEY"
    assert teacher["max_tokens"] == 512 and "0123456789abcd" not in teacher["base_url"]
    assert out["usage"] == {"prompt_tokens": 10, "completion_tokens": 5}
    assert out["headers"] == [{"Authorization": MASK}, {"X-Request-Id": "r1"}]
    assert out["client_secret"] == "" and "0123456789abcdefgh" not in out["note"]
    assert data["model"]["teacher"]["api_key"] == "literal-key-in-config"  # the input is not modified
    # a secret written into a *_env field by mistake is still masked
    assert redact_mapping({"api_key_env": "sk-oops-this-is-a-key"})["api_key_env"] == MASK


@pytest.mark.parametrize("backend, var, key", [
    ("openai", "OPENAI_API_KEY", "sk-proj-FAKE0123456789leakcheck"),
    ("anthropic", "ANTHROPIC_API_KEY", "sk-ant-api03-FAKE0123456789leak"),
    ("openai", "CUSTOM_LLM_KEY", "zz-unshaped-secret-0042"),  # no known shape: only the env value reveals it
])
def test_keys_never_appear_in_llm_errors(monkeypatch, backend, var, key):
    monkeypatch.setenv(var, key)
    with FakeLLMServer() as server:
        # the server echoes the credentials it received into its error message, as some proxies do
        server.script(unauthorized(echo_auth=True), error(400, f"bad key {key}", echo_auth=True))
        base_url = server.openai_base_url if backend == "openai" else server.anthropic_base_url
        backend_cfg = {"base_url": base_url}
        if var == "CUSTOM_LLM_KEY":
            backend_cfg["api_key_env"] = var
        cfg = config_from_dict({"model": {"teacher_backend": backend, "teacher_model": "m", "teacher": backend_cfg}})
        llm = build_teacher(cfg, None, max_retries=0)  # reads the key from the (monkeypatched) environment
        for _ in range(2):
            with pytest.raises(LLMError) as info:
                llm.complete(ASK)
            err = info.value
            shown = [err.message, err.hint, str(err), repr(err), repr(err.args)]
            assert all(key not in s for s in shown), shown
            assert MASK in err.message  # the echoed credential was there, masked
            assert err.__cause__ is None and err.__context__ is None  # no SDK exception holding headers
        assert key not in repr(llm) and key not in llm.endpoint
        assert any(key in str(r.headers) for r in server.requests)  # the key did reach the server


def test_dotenv_parsing(tmp_path):
    (tmp_path / ".env").write_text(
        "# comment\n\nexport A=1\nB = 'single # not a comment'\nC=\"line\\nbreak\"\nD=plain # comment\n"
        "E=\"quoted\" # trailing\nnot a line\nF=\n")
    assert read_dotenv(tmp_path / ".env") == {"A": "1", "B": "single # not a comment", "C": "line\nbreak",
                                              "D": "plain", "E": "quoted", "F": ""}
    assert read_dotenv(tmp_path / "missing.env") == {}


# ---------------------------------------------------------------------------------------------- one secret policy
def test_registered_names_are_secrets_whatever_they_are_called(monkeypatch):
    from skillgit.redact import is_secret_name, register_secret_names

    monkeypatch.setenv("WAREHOUSE_LOGIN", "warehouse-login-value-31")
    assert not is_secret_name("WAREHOUSE_LOGIN") and redact("x warehouse-login-value-31") != f"x {MASK}"
    register_secret_names(["WAREHOUSE_LOGIN"])
    assert is_secret_name("WAREHOUSE_LOGIN")
    assert redact("x warehouse-login-value-31") == f"x {MASK}"
    assert redact_mapping({"log": ["saw warehouse-login-value-31"]}) == {"log": [f"saw {MASK}"]}


def test_secret_set_from_env_keeps_endpoints_readable():
    from skillgit.redact import SecretSet

    env = {"DB_URL": "postgres://u:pw@db/x", "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1", "SHORT": "abc",
           "MY_TOKEN": "token-value-123456", "PLAIN": "not-a-secret-value"}
    secrets = SecretSet.from_env(env, ["DB_URL", "OPENAI_BASE_URL", "SHORT"])
    assert secrets.names == {"DB_URL", "SHORT"}  # an endpoint setting is not a secret name
    assert secrets.values == {"postgres://u:pw@db/x", "token-value-123456"}  # too short: not masked by value
    assert secrets.to_dict() == {"names": ["DB_URL", "SHORT"], "values": 2}  # values are never serialised


def test_factory_registers_api_key_env_targets_and_dotenv_keys(tmp_path, monkeypatch):
    (tmp_path / ".env").write_text("ORDINARY_NAME=from-dotenv-0123456\nOPENAI_BASE_URL=http://127.0.0.1:9/v1\n")
    monkeypatch.setenv("LAB_GATE", "lab-gate-value-5566")
    cfg = config_from_dict({"model": {"teacher_backend": "openai", "teacher_model": "m",
                                      "teacher": {"api_key_env": "LAB_GATE"}}})
    llm = build_teacher(cfg, tmp_path)  # OPENAI_BASE_URL from .env; the key from LAB_GATE
    assert llm.endpoint == "http://127.0.0.1:9/v1"  # readable: an endpoint setting, not a secret
    text = "a from-dotenv-0123456 b lab-gate-value-5566 c"
    assert redact(text) == f"a {MASK} b {MASK} c"  # masked everywhere from now on, by value


def test_more_credential_shapes():
    assert redact("clone https://bob:hunter2pass@git.example.com/x") == f"clone https://bob:{MASK}@git.example.com/x"
    assert redact("token ghp_abcdefghij0123456789") == f"token ghp_{MASK}"
    assert redact("hf_AbCdEfGhIjKlMnOp and xoxb-1234567890-abc") == f"hf_{MASK} and xoxb-{MASK}"
    assert redact("http://127.0.0.1:8000/v1 and ssh://git@host/x") == "http://127.0.0.1:8000/v1 and ssh://git@host/x"
    once = redact("https://bob:hunter2pass@h/x")
    assert redact(once) == once

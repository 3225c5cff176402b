"""Azure OpenAI sign-in without a key (`model.*.auth_mode`, issue 27): the real azure-identity and openai SDKs
against two loopback servers — an App Service-style managed-identity token endpoint (IDENTITY_ENDPOINT /
IDENTITY_HEADER, which azure-identity's ManagedIdentityCredential and DefaultAzureCredential honour) and an Azure
OpenAI-shaped endpoint (tests/fake_servers.py)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator
from urllib.parse import parse_qsl, urlsplit

import pytest

from skillgit.config import config_from_dict
from skillgit.errors import ConfigError
from skillgit.llm.base import LLMError, Message, Request
from skillgit.llm.factory import build_student, build_teacher
from skillgit.provenance import extra_hint
from skillgit.types import Item
from tests.fake_servers import FakeLLMServer, fake_server_fixture  # noqa: F401 (the fake_server fixture)

pytest.importorskip("azure.identity")

ASK = Request((Message("system", "You are terse."), Message("user", "What is 2+3?")), stage="reflect")
IDENTITY_HEADER = "identity-header-7f3a"
# variables that would make DefaultAzureCredential pick another credential than the managed identity
OTHER_AZURE_VARS = ("AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_TENANT_ID", "AZURE_USERNAME", "AZURE_PASSWORD",
                    "AZURE_CLIENT_CERTIFICATE_PATH", "AZURE_FEDERATED_TOKEN_FILE", "MSI_ENDPOINT", "MSI_SECRET",
                    "IMDS_ENDPOINT", "IDENTITY_SERVER_THUMBPRINT", "AZURE_POD_IDENTITY_AUTHORITY_HOST")


class TokenServer:
    """A managed-identity token endpoint on 127.0.0.1 (App Service protocol, api-version 2019-08-01): hands out
    token-1, token-2, … each valid `ttl_s` seconds; `status` != 200 makes it refuse."""

    def __init__(self) -> None:
        self.ttl_s = 3600
        self.status = 200
        self.requests: list[tuple[dict[str, str], dict[str, str]]] = []  # (query, headers)
        server = self

        class _H(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (stdlib naming)
                query = dict(parse_qsl(urlsplit(self.path).query))
                server.requests.append((query, {k.lower(): v for k, v in self.headers.items()}))
                if server.status != 200:
                    body = json.dumps({"error": {"code": "Forbidden", "message": "no identity here"}}).encode()
                else:
                    body = json.dumps({"access_token": f"token-{len(server.requests)}", "token_type": "Bearer",
                                       "expires_on": str(int(time.time()) + server.ttl_s),
                                       "resource": query.get("resource", "")}).encode()
                self.send_response(server.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _H)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/msi/token"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def token_server(monkeypatch) -> Iterator[TokenServer]:
    server = TokenServer()
    for var in OTHER_AZURE_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("IDENTITY_ENDPOINT", server.url)
    monkeypatch.setenv("IDENTITY_HEADER", IDENTITY_HEADER)
    yield server
    server.stop()


def azure_cfg(server: FakeLLMServer, teacher: dict[str, Any], student: dict[str, Any] | None = None):
    return config_from_dict({"model": {
        "teacher_backend": "azure", "teacher_model": "gpt4o-prod",
        "teacher": {"azure_endpoint": server.azure_endpoint, **teacher},
        "student_backend": "azure", "student_model": "gpt4o-mini-prod",
        "student": {"azure_endpoint": server.azure_endpoint, **(student or {})}}})


def test_managed_identity_bearer_token_reaches_the_azure_endpoint(fake_server, token_server):
    cfg = azure_cfg(fake_server, {"auth_mode": "managed_identity"})
    # a key in the environment is not used: the config asked for the managed identity
    llm = build_teacher(cfg, None, environ={"AZURE_OPENAI_API_KEY": "key-that-must-not-be-sent"}, max_retries=0)
    llm.complete(ASK)
    llm.complete(ASK)
    first, second = fake_server.requests
    assert first.deployment == "gpt4o-prod" and first.query["api-version"]
    assert first.headers["authorization"] == "Bearer token-1" and "api-key" not in first.headers
    assert second.headers["authorization"] == "Bearer token-1"  # cached while far from its expiry
    [(query, headers)] = token_server.requests
    assert query["resource"] == "https://cognitiveservices.azure.com"  # the Cognitive Services scope
    assert headers["x-identity-header"] == IDENTITY_HEADER


def test_a_token_near_its_expiry_is_refreshed_before_the_next_call(fake_server, token_server):
    token_server.ttl_s = 120  # inside azure-identity's five-minute refresh window
    llm = build_teacher(azure_cfg(fake_server, {"auth_mode": "managed_identity"}), None, environ={},
                        max_retries=0)
    llm.complete(ASK)
    llm.complete(ASK)
    assert [r.headers["authorization"] for r in fake_server.requests] == ["Bearer token-1", "Bearer token-2"]
    assert len(token_server.requests) == 2


def test_azure_ad_uses_default_credential_per_role_with_client_id_and_scope(fake_server, token_server):
    cfg = azure_cfg(fake_server, {"auth_mode": "azure_ad", "managed_identity_client_id": "11111111-aaaa",
                                  "azure_ad_scope": "api://my-gateway/.default"},
                    {"auth_mode": "api_key"})
    env = {"AZURE_OPENAI_API_KEY": "student-key-000111"}
    build_teacher(cfg, None, environ=env, max_retries=0).complete(ASK)
    build_student(cfg, None, environ=env, max_retries=0).run("Answer briefly.", Item("q1", "What is 2+3?", "5"))
    by_deployment = {r.deployment: r.headers for r in fake_server.requests}
    assert by_deployment["gpt4o-prod"]["authorization"] == "Bearer token-1"
    assert "api-key" not in by_deployment["gpt4o-prod"]
    assert by_deployment["gpt4o-mini-prod"]["api-key"] == "student-key-000111"
    assert "authorization" not in by_deployment["gpt4o-mini-prod"]
    [(query, _)] = token_server.requests
    assert query["resource"] == "api://my-gateway" and query["client_id"] == "11111111-aaaa"


def test_a_refused_token_is_an_auth_error_and_nothing_reaches_azure(fake_server, token_server):
    token_server.status = 400
    llm = build_teacher(azure_cfg(fake_server, {"auth_mode": "managed_identity"}), None, environ={},
                        max_retries=0)
    with pytest.raises(LLMError) as info:
        llm.complete(ASK)
    assert info.value.kind == "auth" and not info.value.retryable
    assert fake_server.requests == []


def test_api_key_mode_without_a_key_names_the_variable(fake_server, token_server):
    with pytest.raises(LLMError) as info:
        build_teacher(azure_cfg(fake_server, {"auth_mode": "api_key"}), None, environ={})
    assert "AZURE_OPENAI_API_KEY" in info.value.message and "auth_mode is api_key" in info.value.hint
    assert token_server.requests == [] and fake_server.requests == []


def test_missing_azure_identity_names_the_extra(fake_server, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_azure_identity(name, *args, **kwargs):
        if name.startswith("azure.identity"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_azure_identity)
    for mode in ("managed_identity", "azure_cli", "azure_ad"):
        with pytest.raises(LLMError) as info:
            build_teacher(azure_cfg(fake_server, {"auth_mode": mode}), None, environ={"AZURE_OPENAI_API_KEY": "k"})
        assert f"auth_mode is '{mode}'" in info.value.message and info.value.kind == "config"
        assert extra_hint("azure") in info.value.hint and "azure extra" in info.value.hint
        assert "auth_mode: api_key" in info.value.hint
    assert fake_server.requests == []


@pytest.mark.parametrize("model, key, hint", [
    ({"teacher": {"auth_mode": "managed_identiy"}}, "model.teacher.auth_mode", "managed_identity"),
    ({"teacher_backend": "openai", "teacher_model": "gpt-4o", "teacher": {"auth_mode": "azure_cli"}},
     "model.teacher.auth_mode", "teacher_backend: azure"),
    ({"teacher_backend": "azure", "teacher_model": "d", "teacher": {"managed_identity_client_id": "abc"}},
     "model.teacher.managed_identity_client_id", "auth_mode: managed_identity"),
    ({"student_backend": "azure", "student_model": "d", "student": {"azure_ad_scope": "cognitive"}},
     "model.student.azure_ad_scope", ".default"),
])
def test_auth_config_errors_name_the_key_and_the_fix(model, key, hint):
    with pytest.raises(ConfigError) as info:
        config_from_dict({"model": model})
    assert key in info.value.message and hint in info.value.hint


def test_openai_backend_with_an_azure_endpoint_accepts_entra_modes(fake_server, token_server):
    cfg = config_from_dict({"model": {"teacher_backend": "openai", "teacher_model": "dep",
                                      "teacher": {"azure_endpoint": fake_server.azure_endpoint,
                                                  "auth_mode": "managed_identity"}}})
    build_teacher(cfg, None, environ={}, max_retries=0).complete(ASK)
    assert fake_server.requests[0].headers["authorization"] == "Bearer token-1"

"""A local OpenAI / Azure OpenAI / Anthropic-compatible HTTP server for tests, driven by the real SDKs.

`FakeLLMServer` is a stdlib `ThreadingHTTPServer` on 127.0.0.1 (a free port) running in a daemon thread. It
answers
- `POST /v1/chat/completions`                                   (OpenAI Chat Completions, vLLM, llama.cpp, ...)
- `POST /v1/responses`, `/openai/responses?api-version=...`    (OpenAI / Azure Responses API)
- `POST /openai/deployments/<deployment>/chat/completions?api-version=...`   (Azure OpenAI)
- `POST /v1/messages`                                           (Anthropic Messages API)

What it answers is scripted per test:
- `server.script(b1, b2, ...)` queues one-shot behaviours, consumed one per request in arrival order
  (`reply`, `json_reply`, `error`, `rate_limited`, `server_error`, `hang`, `not_json`, `unauthorized`);
- when the queue is empty, the `handler(request_json) -> reply_text` given to the constructor answers (so a
  simulated world can sit behind the server: `llm_handler(llm)` serves any skillgit `LLM`;
  `request_messages(body)` / `request_schema(body)` read any of the request shapes); without a handler the
  reply is "OK";
- persistent rules model servers that do not support a feature: `reject_formats={"json_schema": 500}` answers
  that status to every request whose response format is of that kind (kinds: `json_schema`,
  `json_object+schema`, `json_object`), as llama.cpp does for json_schema; `reject_tools=400` does the same for
  Anthropic requests that carry tools.

In a test module, `from tests.fake_servers import fake_server_fixture` makes the `fake_server` fixture available.

Every request is recorded (`server.requests`, a list of `Received`) before it is answered, so tests assert what
was sent (model, response_format, headers, api-version, deployment path) and how many times (no SDK retries).

Usage figures in behaviours are neutral (`{"prompt": 10, "completion": 5, "cached": 2, "reasoning": 1}`) and
are rendered in each API's own shape.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator
from urllib.parse import parse_qsl, urlsplit

import pytest

DEFAULT_USAGE = {"prompt": 12, "completion": 3, "cached": 0, "reasoning": 0}


# ---------------------------------------------------------------------------------------------- behaviours
@dataclass(frozen=True)
class Behaviour:
    """How to answer one request. `text` is the reply for status 200; `raw` replaces the whole body."""

    status: int = 200
    text: str | None = None
    usage: dict[str, int] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    message: str = ""  # error message for status != 200
    error_type: str = ""
    delay: float = 0.0  # seconds to stall before answering (a hung server when > the client's timeout)
    echo_auth: bool = False  # put the received credentials into the error message, as some proxies do


def reply(text: str, *, usage: dict[str, int] | None = None) -> Behaviour:
    return Behaviour(text=text, usage=usage)


def json_reply(obj: Any, *, usage: dict[str, int] | None = None) -> Behaviour:
    return Behaviour(text=json.dumps(obj), usage=usage)


def error(status: int, message: str = "scripted error", *, headers: dict[str, str] | None = None,
          error_type: str = "", echo_auth: bool = False) -> Behaviour:
    return Behaviour(status=status, message=message, headers=dict(headers or {}), error_type=error_type,
                     echo_auth=echo_auth)


def rate_limited(retry_after: str | None = "2", *, retry_after_ms: str | None = None) -> Behaviour:
    headers = {}
    if retry_after is not None:
        headers["retry-after"] = retry_after
    if retry_after_ms is not None:
        headers["retry-after-ms"] = retry_after_ms
    return error(429, "Rate limit reached, slow down", headers=headers, error_type="rate_limit_error")


def server_error(status: int = 500, message: str = "internal server error") -> Behaviour:
    return error(status, message, error_type="api_error" if status != 529 else "overloaded_error")


def unauthorized(message: str = "Incorrect API key provided", *, echo_auth: bool = False) -> Behaviour:
    return error(401, message, error_type="authentication_error", echo_auth=echo_auth)


def hang(seconds: float = 5.0) -> Behaviour:
    """Stall for `seconds` (ended early when the server stops), then answer normally."""
    return Behaviour(delay=seconds)


def not_json() -> Behaviour:
    """A 200 whose body claims to be JSON but is not (a proxy's error page, a truncated body)."""
    return Behaviour(raw=b"<html>502 Bad Gateway</html>{", headers={"content-type": "application/json"})


# ---------------------------------------------------------------------------------------------- requests
@dataclass(frozen=True)
class Received:
    method: str
    path: str  # without the query string
    query: dict[str, str]
    headers: dict[str, str]  # names lower-cased
    body: Any  # parsed JSON, or the raw text when the body was not JSON
    api: str  # "chat" | "responses" | "azure_chat" | "anthropic" | "unknown"
    deployment: str | None = None

    @property
    def json(self) -> dict[str, Any]:
        return self.body if isinstance(self.body, dict) else {}

    def messages(self) -> list[tuple[str, str]]:
        return request_messages(self.json)

    @property
    def format_kind(self) -> str | None:
        return response_format_kind(self.json)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def request_messages(body: dict[str, Any]) -> list[tuple[str, str]]:
    """`[(role, text), ...]` of a Chat Completions, Responses or Anthropic Messages request body; system
    instructions first."""
    out: list[tuple[str, str]] = []
    if body.get("instructions"):
        out.append(("system", str(body["instructions"])))
    system = body.get("system")
    if system:
        out.append(("system", _content_text(system)))
    items = body.get("messages")
    if items is None:
        items = body.get("input")
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
    for msg in items or []:
        out.append((msg.get("role", ""), _content_text(msg.get("content"))))
    return out


def response_format_kind(body: dict[str, Any]) -> str | None:
    """"json_schema", "json_object+schema", "json_object" or None for a chat or responses request body."""
    fmt = body.get("response_format") or (body.get("text") or {}).get("format")
    if not isinstance(fmt, dict) or fmt.get("type") in (None, "text"):
        return None
    if fmt.get("type") == "json_object" and "schema" in fmt:
        return "json_object+schema"
    return str(fmt.get("type"))


def request_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a request asks for (response_format, text.format, or a forced Anthropic tool), if any."""
    fmt = body.get("response_format") or (body.get("text") or {}).get("format") or {}
    if fmt.get("type") == "json_schema":
        return fmt.get("schema") or (fmt.get("json_schema") or {}).get("schema")
    if fmt.get("type") == "json_object" and "schema" in fmt:
        return fmt["schema"]
    choice = body.get("tool_choice") or {}
    for tool in body.get("tools") or []:
        if choice.get("type") == "tool" and tool.get("name") == choice.get("name"):
            return tool.get("input_schema")
    return None


def llm_handler(llm: Any) -> "Handler":
    """A server handler that answers with any skillgit `LLM` (e.g. the simulated teacher or student), so a real
    SDK-backed backend can be exercised end to end against a deterministic model."""
    from skillgit.llm.base import Message, Request

    def handle(body: dict[str, Any]) -> str:
        messages = tuple(Message(role, text) for role, text in request_messages(body))
        return llm.complete(Request(messages, stage="served", json_schema=request_schema(body))).text

    return handle


# ---------------------------------------------------------------------------------------------- response shapes
def _usage(b: Behaviour) -> dict[str, int]:
    return {**DEFAULT_USAGE, **(b.usage or {})}


def _chat_body(req: Received, text: str, b: Behaviour) -> dict[str, Any]:
    u = _usage(b)
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 1700000000,
        "model": req.json.get("model") or req.deployment or "fake-model",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text, "refusal": None}}],
        "usage": {"prompt_tokens": u["prompt"], "completion_tokens": u["completion"],
                  "total_tokens": u["prompt"] + u["completion"],
                  "prompt_tokens_details": {"cached_tokens": u["cached"]},
                  "completion_tokens_details": {"reasoning_tokens": u["reasoning"]}},
    }


def _responses_body(req: Received, text: str, b: Behaviour) -> dict[str, Any]:
    u = _usage(b)
    return {
        "id": "resp_fake", "object": "response", "created_at": 1700000000, "status": "completed",
        "model": req.json.get("model", "fake-model"), "parallel_tool_calls": False, "tool_choice": "auto",
        "tools": [],
        "output": [{"type": "message", "id": "msg_fake", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}],
        "usage": {"input_tokens": u["prompt"], "output_tokens": u["completion"],
                  "total_tokens": u["prompt"] + u["completion"],
                  "input_tokens_details": {"cached_tokens": u["cached"]},
                  "output_tokens_details": {"reasoning_tokens": u["reasoning"]}},
    }


def _anthropic_body(req: Received, text: str, b: Behaviour) -> dict[str, Any]:
    u = _usage(b)
    content: list[dict[str, Any]] = []
    if (req.json.get("thinking") or {}).get("type") == "enabled":
        content.append({"type": "thinking", "thinking": "Let me think about this.", "signature": "sig"})
    choice = req.json.get("tool_choice") or {}
    forced = None
    if choice.get("type") == "tool":
        try:
            forced = json.loads(text)
        except ValueError:
            forced = None
    if isinstance(forced, dict):
        content.append({"type": "tool_use", "id": "toolu_fake", "name": choice.get("name", "tool"), "input": forced})
        stop = "tool_use"
    else:
        content.append({"type": "text", "text": text})
        stop = "end_turn"
    return {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": req.json.get("model", "fake-model"),
        "content": content, "stop_reason": stop, "stop_sequence": None,
        "usage": {"input_tokens": u["prompt"] - u["cached"], "output_tokens": u["completion"],
                  "cache_read_input_tokens": u["cached"], "cache_creation_input_tokens": 0},
    }


def _error_body(req: Received, b: Behaviour) -> dict[str, Any]:
    message = b.message
    if b.echo_auth:
        creds = {k: v for k, v in req.headers.items() if k in ("authorization", "api-key", "x-api-key")}
        message = f"{message}; request headers were {creds}"
    if req.api == "anthropic":
        return {"type": "error", "error": {"type": b.error_type or "invalid_request_error", "message": message}}
    return {"error": {"message": message, "type": b.error_type or "invalid_request_error", "code": None,
                      "param": None}}


# ---------------------------------------------------------------------------------------------- the server
Handler = Callable[[dict[str, Any]], "str | Behaviour"]


class FakeLLMServer:
    """See the module docstring. Use as a context manager (or the `fake_server` fixture)."""

    def __init__(self, handler: Handler | None = None, *, reject_formats: dict[str, int] | None = None,
                 reject_tools: int | None = None):
        self.handler = handler
        self.reject_formats = dict(reject_formats or {})
        self.reject_tools = reject_tools
        self.requests: list[Received] = []
        self._queue: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle
    def start(self) -> "FakeLLMServer":
        server = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # else Nagle + the client's delayed ACK add ~40 ms to every reply

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 (stdlib naming)
                server._serve(self)

            do_GET = do_POST  # noqa: N815

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _H)
        self._httpd.daemon_threads = True
        # a short poll interval keeps stop() (and so each test's teardown) quick
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="fake-llm-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes hung responses
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "FakeLLMServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- addresses
    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    @property
    def azure_endpoint(self) -> str:
        return self.url

    # -- scripting
    def script(self, *behaviours: Behaviour) -> "FakeLLMServer":
        with self._lock:
            self._queue.extend(behaviours)
        return self

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def requests_to(self, api: str) -> list[Received]:
        return [r for r in self.requests if r.api == api]

    # -- serving
    def _receive(self, h: BaseHTTPRequestHandler) -> Received:
        parts = urlsplit(h.path)
        length = int(h.headers.get("content-length") or 0)
        raw = h.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else {}
        except ValueError:
            body = raw.decode("utf-8", "replace")
        path = parts.path
        deployment = None
        if path == "/v1/chat/completions":
            api = "chat"
        elif path in ("/v1/responses", "/openai/responses", "/openai/v1/responses"):  # OpenAI, Azure
            api = "responses"
        elif path == "/v1/messages":
            api = "anthropic"
        elif path.startswith("/openai/deployments/") and path.endswith("/chat/completions"):
            api = "azure_chat"
            deployment = path[len("/openai/deployments/"):-len("/chat/completions")]
        else:
            api = "unknown"
        return Received(h.command, path, dict(parse_qsl(parts.query)), {k.lower(): v for k, v in h.headers.items()},
                        body, api, deployment)

    def _choose(self, req: Received) -> Behaviour:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        kind = req.format_kind
        if kind in self.reject_formats:
            return error(self.reject_formats[kind], f"response_format {kind} is not supported by this server")
        if self.reject_tools is not None and req.json.get("tools"):
            return error(self.reject_tools, "tools are not supported by this server")
        if self.handler is not None:
            out = self.handler(req.json)
            return out if isinstance(out, Behaviour) else reply(out)
        return reply("OK")

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        req = self._receive(h)
        with self._lock:
            self.requests.append(req)
        b = self._choose(req)
        if b.delay and self._stopping.wait(b.delay):
            return  # server stopping: drop the connection
        if req.api == "unknown":
            b = error(404, f"no route for {req.method} {req.path}", error_type="not_found_error")
        headers = {"content-type": "application/json", **b.headers}
        if b.raw is not None:
            payload = b.raw
        elif b.status != 200:
            payload = json.dumps(_error_body(req, b)).encode()
        else:
            text = b.text if b.text is not None else "OK"
            shape = {"chat": _chat_body, "azure_chat": _chat_body, "responses": _responses_body,
                     "anthropic": _anthropic_body}[req.api]
            payload = json.dumps(shape(req, text, b)).encode()
        try:
            h.send_response(b.status)
            for name, value in headers.items():
                h.send_header(name, value)
            h.send_header("content-length", str(len(payload)))
            h.end_headers()
            h.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout) first
            pass


@pytest.fixture(name="fake_server")
def fake_server_fixture() -> Iterator[FakeLLMServer]:
    """A started `FakeLLMServer` (no handler: replies "OK" unless scripted); stopped after the test."""
    with FakeLLMServer() as server:
        yield server

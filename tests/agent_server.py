"""A scripted model server on 127.0.0.1 that the REAL agent CLIs (claude, codex, copilot, opencode) run against offline.

Contract
- `AgentServer(script, default=..., aux=...)` is a context manager; on enter it listens on 127.0.0.1 at a free
  port (stdlib `ThreadingHTTPServer`, daemon thread) and `base_url` is `http://127.0.0.1:<port>`.
- It speaks the Anthropic Messages API (`POST /v1/messages`, streaming SSE or JSON, and
  `POST /v1/messages/count_tokens`) — what `claude` uses with `ANTHROPIC_BASE_URL=<base_url>` — and the OpenAI
  Responses API (`POST /v1/responses`, streaming SSE or JSON) — what `codex` uses with a custom provider whose
  `base_url` is `<base_url>/v1` and `wire_api = "responses"`.
- The script is a queue of `Turn`s (`text(...)`, `tool(...)`; for claude `bash`, `write`, `edit`, `read`,
  `task`; for codex `exec_command`, `apply_patch`). Every *agent* request (one that offers tools) takes the
  first queued turn whose `role` fits it (`any`, or `main` / `sub` for Claude Code's top-level agent /
  sub-agents, which run concurrently), whatever the API. When no turn fits, `default(request) -> Turn`
  answers (default: a short final text).
- Requests that offer no tools are *auxiliary* (title / topic / quota calls on a small model: OpenCode 1.18
  asks claude-haiku for a session title; claude 2.1.330 and codex 0.169 made none in the scripted runs here).
  They never consume a scripted turn and are answered by `aux(request) -> Turn` (default: a short text). A
  `tool()` turn addressed to a request that offers no tool of that name would break the CLI, so this split is
  what keeps scripts deterministic.
- Copilot CLI (BYOK, `COPILOT_PROVIDER_TYPE=anthropic`) and OpenCode (anthropic provider `baseURL`) use the
  same Messages endpoint; their tools are lower case (`bash`, `create`, `edit`), so script them with `tool()`.
- Anything else (GET/HEAD probes, unknown POST paths) is answered `200 {}` for GET/HEAD and `404` JSON for
  unknown POSTs, and recorded, so a CLI probing the server never hangs.
- Every request is recorded (`server.requests`, a list of `Received`) before it is answered, under a lock.
  Tests assert on `agent_requests()`, `system_text()`, `context_text()`, `tool_names()`.
- Tool-call ids are unique per server (`toolu_srv_0001`, `call_srv_0001`), and a turn's id is recorded in
  `server.answered` so tests can match tool results to calls.

Safety: the server binds 127.0.0.1 only; each request is read with a bounded Content-Length; the handler never
blocks on the queue (an empty queue falls through to `default`).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

MAX_BODY = 64 * 1024 * 1024  # a full Claude Code request (system prompt + tools + history) is well under this


# ------------------------------------------------------------------------------------------------ turns
@dataclass(frozen=True)
class Turn:
    """One scripted model reply: `text` (final answer, possibly with a preface before a tool call) and an
    optional tool call `tool_name(tool_input)`. For codex, `tool_input` is sent as the function arguments."""

    text: str = ""
    tool_name: str = ""
    tool_input: dict[str, Any] = field(default_factory=dict)
    # Codex offers either function tools (JSON arguments) or custom/freeform tools (raw text input, e.g.
    # apply_patch); `raw_input` is sent verbatim as a custom tool call's input when set.
    raw_input: str | None = None
    # Which agent may take this turn: "main", "sub" (a sub-agent's request) or "any". Sub-agents run
    # concurrently with their parent, so a script that delegates must say which side each turn is for.
    role: str = "any"

    @property
    def is_tool(self) -> bool:
        return bool(self.tool_name)

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "tool_name": self.tool_name, "tool_input": dict(self.tool_input),
                "raw_input": self.raw_input, "role": self.role}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Turn:
        return cls(text=d.get("text", ""), tool_name=d.get("tool_name", ""),
                   tool_input=dict(d.get("tool_input") or {}), raw_input=d.get("raw_input"),
                   role=d.get("role", "any"))

    def for_role(self, role: str) -> Turn:
        return replace(self, role=role)


def main(turn: Turn) -> Turn:
    """Only the top-level agent may take `turn`."""
    return turn.for_role("main")


def sub(turn: Turn) -> Turn:
    """Only a sub-agent may take `turn`."""
    return turn.for_role("sub")


def text(reply: str) -> Turn:
    """A final text answer (ends the agent's turn: stop_reason end_turn)."""
    return Turn(text=reply)


def tool(name: str, preface: str = "", **tool_input: Any) -> Turn:
    """A call of tool `name` with `tool_input` as its arguments (stop_reason tool_use)."""
    return Turn(text=preface, tool_name=name, tool_input=tool_input)


def bash(command: str, description: str = "") -> Turn:
    """Claude Code's Bash tool."""
    args: dict[str, Any] = {"command": command}
    if description:
        args["description"] = description
    return Turn(tool_name="Bash", tool_input=args)


def write(file_path: str, content: str) -> Turn:
    """Claude Code's Write tool (file_path must be absolute)."""
    return Turn(tool_name="Write", tool_input={"file_path": file_path, "content": content})


def edit(file_path: str, old_string: str, new_string: str) -> Turn:
    """Claude Code's Edit tool (the file must have been Read first in the same session)."""
    return Turn(tool_name="Edit", tool_input={"file_path": file_path, "old_string": old_string,
                                              "new_string": new_string})


def read(file_path: str) -> Turn:
    """Claude Code's Read tool."""
    return Turn(tool_name="Read", tool_input={"file_path": file_path})


def task(prompt: str, description: str = "scripted sub-task", subagent_type: str = "general-purpose",
         tool_name: str = "Agent", background: bool = False) -> Turn:
    """Claude Code's sub-agent tool (named `Agent` in 2.1.x, `Task` in older versions), for the main agent.
    Agents run in the background by default in 2.1.x; `background=False` makes the parent wait for the result."""
    return main(Turn(tool_name=tool_name, tool_input={"description": description, "prompt": prompt,
                                                      "subagent_type": subagent_type,
                                                      "run_in_background": background}))


def exec_command(cmd: str, login: bool | None = None) -> Turn:
    """Codex's unified-exec shell tool (`exec_command`, a function tool taking {"cmd": ...}; codex 0.169). The
    command runs in `bash -lc` unless `login=False`; a login shell re-reads /etc/profile, which resets PATH."""
    args: dict[str, Any] = {"cmd": cmd}
    if login is not None:
        args["login"] = login
    return Turn(tool_name="exec_command", tool_input=args)


def apply_patch(patch: str) -> Turn:
    """Codex's freeform `apply_patch` tool (offered for models codex knows, e.g. `-m gpt-5.5`): `patch` is the
    raw `*** Begin Patch ... *** End Patch` text, sent as a custom tool call's input."""
    return Turn(tool_name="apply_patch", raw_input=patch)


# ------------------------------------------------------------------------------------------------ requests
@dataclass(frozen=True)
class Received:
    """One recorded HTTP request. `body` is the parsed JSON body (or {} when there was none / not JSON)."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float

    @property
    def route(self) -> str:
        return urlsplit(self.path).path

    @property
    def api(self) -> str:
        """`anthropic`, `anthropic-count`, `responses`, `chat` or `other`."""
        route = self.route.rstrip("/")
        if self.method != "POST":
            return "other"
        if route.endswith("/messages/count_tokens"):
            return "anthropic-count"
        if route.endswith("/messages"):
            return "anthropic"
        if route.endswith("/responses"):
            return "responses"
        if route.endswith("/chat/completions"):
            return "chat"
        return "other"

    def tool_names(self) -> list[str]:
        names = []
        for t in self.body.get("tools") or []:
            if isinstance(t, dict):
                names.append(str(t.get("name") or (t.get("function") or {}).get("name") or t.get("type", "")))
        return names

    @property
    def is_agent(self) -> bool:
        """An agent turn: a model call that offers tools (auxiliary calls offer none)."""
        return self.api in ("anthropic", "responses", "chat") and bool(self.tool_names())

    @property
    def agent_role(self) -> str:
        """`sub` for a Claude Code sub-agent's request (its billing header says cc_is_subagent=true), else
        `main`."""
        return "sub" if "cc_is_subagent=true" in self.system_text() else "main"

    def system_text(self) -> str:
        """The system prompt / instructions as one string, whatever the API."""
        system = self.body.get("system")
        if system is None:
            system = self.body.get("instructions", "")
        return _flatten(system)

    def context_text(self) -> str:
        """The system prompt plus every system / developer message in the conversation: Claude Code 2.1.x
        lists skills and agent types in `role: "system"` messages, Codex in `role: "developer"` input items."""
        parts = [self.system_text()]
        for m in self.body.get("messages") or self.body.get("input") or []:
            if isinstance(m, dict) and m.get("role") in ("system", "developer"):
                parts.append(_flatten(m.get("content")))
        return "\n".join(parts)

    def messages_text(self) -> str:
        """All message / input content as one string (user, assistant, tool results)."""
        return _flatten(self.body.get("messages") or self.body.get("input") or [])

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "path": self.path, "headers": dict(self.headers), "body": self.body,
                "at": self.at}


def _flatten(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_flatten(v) for v in value)
    if isinstance(value, dict):
        parts = []
        for key in ("text", "content", "input", "output", "arguments"):
            if key in value:
                parts.append(_flatten(value[key]))
        return "\n".join(p for p in parts if p)
    return ""


Answer = Callable[[Received], Turn]


def _default(_req: Received) -> Turn:
    return text("Done.")


def _aux(req: Received) -> Turn:
    # Claude Code asks a small model for a session title as JSON ({"title": ...}); plain text is accepted by
    # older versions, JSON by newer ones, so answer JSON that reads fine as text too.
    return text('{"title": "Scripted session"}')


# ------------------------------------------------------------------------------------------------ server
class AgentServer:
    """Scripted Anthropic Messages + OpenAI Responses server; see the module docstring."""

    def __init__(self, script: list[Turn] | None = None, *, default: Answer | None = None,
                 aux: Answer | None = None, model: str = "scripted-model", chunk: int = 40):
        self._queue: list[Turn] = list(script or [])
        self.default = default or _default
        self.aux = aux or _aux
        self.model = model
        self.chunk = max(1, chunk)  # characters per streamed delta: exercises the CLI's delta assembly
        self.requests: list[Received] = []
        self.answered: list[tuple[Received, Turn, str]] = []  # (request, turn, tool call id or "")
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle
    def start(self) -> AgentServer:
        server = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                server._record(self)
                server._send_json(self, 200, {})

            def do_HEAD(self) -> None:
                server._record(self)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                server._post(self)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _H)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="agent-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> AgentServer:  # noqa: PYI034 (typing.Self needs 3.11)
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    # ---- scripting and inspection
    def script(self, *turns: Turn) -> AgentServer:
        with self._lock:
            self._queue.extend(turns)
        return self

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def agent_requests(self) -> list[Received]:
        with self._lock:
            return [r for r in self.requests if r.is_agent]

    def requests_to(self, api: str) -> list[Received]:
        with self._lock:
            return [r for r in self.requests if r.api == api]

    def dump(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.to_dict() for r in self.requests]

    # ---- internals
    def _record(self, h: BaseHTTPRequestHandler, body: dict[str, Any] | None = None) -> Received:
        req = Received(method=h.command, path=h.path, headers={k.lower(): v for k, v in h.headers.items()},
                       body=body or {}, at=time.time())
        with self._lock:
            self.requests.append(req)
        return req

    def _read_body(self, h: BaseHTTPRequestHandler) -> dict[str, Any]:
        length = min(int(h.headers.get("Content-Length") or 0), MAX_BODY)
        raw = h.rfile.read(length) if length else b""
        if h.headers.get("Content-Encoding", "").lower() in ("gzip", "zstd", "br"):
            raw = _decompress(raw, h.headers["Content-Encoding"].lower())
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return {}
        return body if isinstance(body, dict) else {"_": body}

    def _next_turn(self, req: Received) -> Turn:
        with self._lock:
            if req.is_agent:
                role = req.agent_role
                for i, turn in enumerate(self._queue):
                    if turn.role in ("any", role):
                        return self._queue.pop(i)
        return self.default(req) if req.is_agent else self.aux(req)

    def _post(self, h: BaseHTTPRequestHandler) -> None:
        req = self._record(h, self._read_body(h))
        api = req.api
        if api == "anthropic-count":
            size = len(json.dumps(req.body))
            self._send_json(h, 200, {"input_tokens": max(1, size // 4)})
            return
        if api not in ("anthropic", "responses"):
            self._send_json(h, 404, {"type": "error", "error": {"type": "not_found_error",
                                                                "message": f"no route {req.route}"}})
            return
        turn = self._next_turn(req)
        call_id = ""
        if turn.is_tool:
            call_id = f"{'toolu' if api == 'anthropic' else 'call'}_srv_{next(self._ids):04d}"
        with self._lock:
            self.answered.append((req, turn, call_id))
        stream = bool(req.body.get("stream"))
        if api == "anthropic":
            if stream:
                self._send_sse(h, _anthropic_events(req, turn, call_id, self.model, self.chunk))
            else:
                self._send_json(h, 200, _anthropic_message(req, turn, call_id, self.model))
        else:
            events = list(_responses_events(req, turn, call_id, self.model, self.chunk))
            if stream:
                self._send_sse(h, events)
            else:
                self._send_json(h, 200, events[-1][1]["response"])

    @staticmethod
    def _send_json(h: BaseHTTPRequestHandler, status: int, obj: dict[str, Any]) -> None:
        data = json.dumps(obj).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.send_header("request-id", "req_scripted")
        h.end_headers()
        h.wfile.write(data)

    @staticmethod
    def _send_sse(h: BaseHTTPRequestHandler, events: Iterator[tuple[str, dict[str, Any]]] | list) -> None:
        payload = b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events)
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-cache")
        h.send_header("Content-Length", str(len(payload)))
        h.send_header("request-id", "req_scripted")
        h.end_headers()
        h.wfile.write(payload)


def _decompress(raw: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        import gzip

        return gzip.decompress(raw)
    return raw  # zstd / br are not in the stdlib; the body is then recorded as {}


def _tokens(req: Received) -> int:
    return max(1, len(json.dumps(req.body)) // 4)


def _chunks(s: str, n: int) -> list[str]:
    return [s[i:i + n] for i in range(0, len(s), n)] or [""]


# ---- Anthropic Messages
def _anthropic_content(turn: Turn, call_id: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if turn.text:
        blocks.append({"type": "text", "text": turn.text})
    if turn.is_tool:
        blocks.append({"type": "tool_use", "id": call_id, "name": turn.tool_name, "input": dict(turn.tool_input)})
    if not blocks:
        blocks.append({"type": "text", "text": ""})
    return blocks


def _anthropic_usage(req: Received, out: int) -> dict[str, Any]:
    return {"input_tokens": _tokens(req), "output_tokens": out, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0}


def _anthropic_message(req: Received, turn: Turn, call_id: str, model: str) -> dict[str, Any]:
    content = _anthropic_content(turn, call_id)
    return {"id": f"msg_srv_{int(time.time() * 1000)}", "type": "message", "role": "assistant",
            "model": req.body.get("model") or model, "content": content,
            "stop_reason": "tool_use" if turn.is_tool else "end_turn", "stop_sequence": None,
            "usage": _anthropic_usage(req, max(1, len(json.dumps(content)) // 4))}


def _anthropic_events(req: Received, turn: Turn, call_id: str, model: str,
                      chunk: int) -> Iterator[tuple[str, dict[str, Any]]]:
    msg = _anthropic_message(req, turn, call_id, model)
    start = dict(msg, content=[], stop_reason=None, usage=dict(msg["usage"], output_tokens=1))
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(msg["content"]):
        if block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "text", "text": ""}}
            for piece in _chunks(block["text"], chunk):
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "text_delta", "text": piece}}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "tool_use", "id": block["id"],
                                                            "name": block["name"], "input": {}}}
            for piece in _chunks(json.dumps(block["input"]), chunk):
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "input_json_delta", "partial_json": piece}}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                            "usage": {"output_tokens": msg["usage"]["output_tokens"]}}
    yield "message_stop", {"type": "message_stop"}


# ---- OpenAI Responses
def _responses_tool_kind(req: Received, name: str) -> str:
    for t in req.body.get("tools") or []:
        if isinstance(t, dict) and t.get("name") == name:
            return str(t.get("type", "function"))
    return "function"


def _responses_events(req: Received, turn: Turn, call_id: str, model: str,
                      chunk: int) -> Iterator[tuple[str, dict[str, Any]]]:
    stamp = int(time.time() * 1000)
    resp_id = f"resp_srv_{stamp}"
    base: dict[str, Any] = {"id": resp_id, "object": "response", "created_at": stamp // 1000,
                            "model": req.body.get("model") or model,
            "status": "in_progress", "output": []}
    yield "response.created", {"type": "response.created", "response": base}
    output: list[dict[str, Any]] = []
    if turn.text:
        item_id = f"msg_srv_{stamp}"
        index = len(output)
        yield "response.output_item.added", {"type": "response.output_item.added", "output_index": index,
                                             "item": {"type": "message", "id": item_id, "role": "assistant",
                                                      "status": "in_progress", "content": []}}
        part = {"type": "output_text", "text": "", "annotations": []}
        where = {"item_id": item_id, "output_index": index, "content_index": 0}
        yield "response.content_part.added", {"type": "response.content_part.added", **where, "part": part}
        for piece in _chunks(turn.text, chunk):
            yield "response.output_text.delta", {"type": "response.output_text.delta", **where, "delta": piece}
        yield "response.output_text.done", {"type": "response.output_text.done", **where, "text": turn.text}
        done_part = dict(part, text=turn.text)
        yield "response.content_part.done", {"type": "response.content_part.done", **where, "part": done_part}
        item: dict[str, Any] = {"type": "message", "id": item_id, "role": "assistant", "status": "completed",
                                "content": [done_part]}
        output.append(item)
        yield "response.output_item.done", {"type": "response.output_item.done", "output_index": index,
                                            "item": item}
    if turn.is_tool:
        kind = _responses_tool_kind(req, turn.tool_name)
        if kind == "custom":
            item = {"type": "custom_tool_call", "id": f"ctc_srv_{stamp}", "call_id": call_id,
                    "name": turn.tool_name, "status": "completed",
                    "input": turn.raw_input if turn.raw_input is not None else json.dumps(turn.tool_input)}
        else:
            item = {"type": "function_call", "id": f"fc_srv_{stamp}", "call_id": call_id, "name": turn.tool_name,
                    "status": "completed", "arguments": json.dumps(turn.tool_input)}
        index = len(output)
        if item["type"] == "function_call":
            yield "response.output_item.added", {"type": "response.output_item.added", "output_index": index,
                                                 "item": dict(item, status="in_progress", arguments="")}
            where = {"item_id": item["id"], "output_index": index}
            for piece in _chunks(str(item["arguments"]), chunk):
                yield ("response.function_call_arguments.delta",
                       {"type": "response.function_call_arguments.delta", **where, "delta": piece})
            yield ("response.function_call_arguments.done",
                   {"type": "response.function_call_arguments.done", **where, "arguments": item["arguments"]})
        else:
            yield "response.output_item.added", {"type": "response.output_item.added", "output_index": index,
                                                 "item": dict(item, status="in_progress")}
        output.append(item)
        yield "response.output_item.done", {"type": "response.output_item.done", "output_index": index,
                                            "item": item}
    inp = _tokens(req)
    out = max(1, len(json.dumps(output)) // 4)
    done = dict(base, status="completed", output=output,
                usage={"input_tokens": inp, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": out,
                       "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": inp + out})
    yield "response.completed", {"type": "response.completed", "response": done}

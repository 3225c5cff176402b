"""A latency model server for benchmarks: skillgit's simulated world behind an OpenAI-compatible HTTP endpoint.

    python bench/simserver.py [--latency 1.0] [--seed 0] [--lifetime 900]      # prints its base URL, serves

`POST /v1/chat/completions` answers with the simulated teacher or student, chosen by the request's `model`
(`sim-teacher` / `sim-student` by default; an unknown model is a 404, as OpenAI answers). A teacher request with
no `<stage>NAME</stage>` line (`skillgit doctor`'s health check) is answered as a model with structured output
would: the smallest instance of its JSON schema (`{}` for a bare `json_object`, "OK" for plain text); a request
that names a stage the simulated teacher does not know is still a 400, so a prompt-rendering bug stays loud.
Point skillgit's `openai` backend at it (`model.<role>.base_url: http://127.0.0.1:PORT/v1`) and the real openai
SDK path — client, HTTP, JSON, retries wrapper — is part of what a benchmark measures.

Contract:
- **Latency.** Every answer leaves `latency + per_token × completion_tokens` seconds after its request arrived
  (per-role overrides: `teacher_latency`, `student_latency`); the simulated model's own compute happens inside
  that time, so each call costs exactly what was configured (unless the compute alone takes longer).
- **Tokens.** `usage` reports the simulated model's counts (about four characters a token), or fixed
  `prompt_tokens` / `completion_tokens` when given.
- **Timeline.** Every call is recorded as {role, model, stage, start, end, prompt_tokens, completion_tokens};
  `start`/`end` are `time.monotonic()` values, which on Linux (and macOS, Windows) share one clock across
  processes, so a client in another process can lay them over its own timings. `GET /bench/timeline` returns
  them, `POST /bench/reset` clears them, `POST /bench/stop` shuts the server down.
- **Bounded.** It binds 127.0.0.1 only; it serves at most `max_connections` connections at once (a new one
  waits); request bodies over 8 MiB are refused; it stops by itself `lifetime` seconds after starting or
  `idle` seconds after the last request, whichever comes first.

Importable: `SimServer(...).start()` runs it in a background thread of the current process (`with SimServer()
as s: s.base_url`); `spawn(...)` runs it in a child process (what the benchmarks use, so that the server's own
CPU time does not compete with the measured client for the GIL) and returns a handle with `base_url`,
`timeline()`, `reset()` and `stop()`.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from skillgit.config import SimulatedCfg  # noqa: E402
from skillgit.llm.base import Message, Request  # noqa: E402
from skillgit.world import SimulatedStudentLLM, SimulatedTeacher  # noqa: E402
from skillgit.world.common import tokens_of  # noqa: E402

HOST = "127.0.0.1"  # never anything else: this is a benchmark fixture, not a service
MAX_BODY = 8 * 1024 * 1024


@dataclass
class Settings:
    """How the server behaves (see the module contract). `models` maps a model name to "teacher"/"student"."""

    latency: float = 0.0
    per_token: float = 0.0
    teacher_latency: float | None = None
    student_latency: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    seed: int = 0
    world: dict[str, Any] = field(default_factory=dict)  # extra SimulatedCfg fields (noise, num_rules, ...)
    models: dict[str, str] = field(default_factory=lambda: {"sim-teacher": "teacher", "sim-student": "student"})
    lifetime: float = 900.0
    idle: float = 120.0
    max_connections: int = 128

    def latency_of(self, role: str, completion_tokens: int) -> float:
        base = {"teacher": self.teacher_latency, "student": self.student_latency}.get(role)
        return (self.latency if base is None else base) + self.per_token * completion_tokens


def _schema_of(body: dict[str, Any]) -> dict[str, Any] | None:
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("schema")
    if fmt.get("type") == "json_object":
        return fmt.get("schema")
    return None


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _stage_of(messages: tuple[Message, ...]) -> str:
    """The teacher stage from the `<stage>NAME</stage>` first line of the last user message that has one."""
    for m in reversed(messages):
        first = m.content.lstrip().split("\n", 1)[0].strip() if m.role == "user" else ""
        if first.startswith("<stage>") and first.endswith("</stage>"):
            return first[len("<stage>"):-len("</stage>")]
    return ""


def _instance_of(schema: Any) -> Any:
    """The smallest value a JSON schema allows, as a model with structured output would fill it: an object with
    its required properties, a string's first enum value (else ""), 0, false, [], null."""
    if not isinstance(schema, dict):
        return None
    if schema.get("enum"):
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {k: _instance_of(props.get(k, {})) for k in schema.get("required") or []}
    return {"string": "", "integer": 0, "number": 0, "boolean": False, "array": []}.get(str(kind))


def _generic_answer(body: dict[str, Any]) -> str:
    """The answer to a teacher request that is no skillgit stage: the smallest instance of its JSON schema, `{}`
    for a bare JSON-object request, else "OK"."""
    fmt = body.get("response_format") or {}
    schema = _schema_of(body)
    if schema is not None:
        return json.dumps(_instance_of(schema))
    return "{}" if fmt.get("type") == "json_object" else "OK"


class SimServer:
    """The server (module contract). Thread-safe; `start()` serves from a daemon thread."""

    def __init__(self, settings: Settings | None = None, port: int = 0):
        self.settings = settings or Settings()
        cfg = SimulatedCfg(seed=self.settings.seed, **self.settings.world)
        self.llms = {"teacher": SimulatedTeacher(cfg), "student": SimulatedStudentLLM(cfg)}
        self.timeline: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(self.settings.max_connections)
        self._started = time.monotonic()
        self._last = self._started
        self._stopped = threading.Event()
        self._httpd = self._make_httpd(port)
        self._thread: threading.Thread | None = None

    # -- lifecycle
    def _make_httpd(self, port: int) -> ThreadingHTTPServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real servers and the SDK's connection pool expect
            timeout = 60  # an idle keep-alive connection gives its slot back after this long

            def setup(self) -> None:
                super().setup()
                # Answer at once: without this, Nagle's algorithm meets the client's delayed ACK and every
                # reply waits ~40 ms, which would be charged to the client as overhead.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - stdlib naming
                server._handle(self)

            do_GET = do_POST  # noqa: N815

        class Httpd(ThreadingHTTPServer):
            daemon_threads = True
            # socketserver's default listen backlog is 5: a wave opening more connections at once had SYNs dropped
            # and resent 1–3 s later, which showed up as extra waves (the first step's gate, most of all)
            request_queue_size = 1024

            def process_request(self, request, client_address):
                server._slots.acquire()  # bounded: the accept loop waits for a free connection slot
                super().process_request(request, client_address)

            def shutdown_request(self, request):
                try:
                    super().shutdown_request(request)
                finally:
                    server._slots.release()

            def handle_error(self, request, client_address):
                if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
                    return  # a client killed mid-call (the kill/resume benchmark does that): nothing to report
                super().handle_error(request, client_address)

        return Httpd((HOST, port), Handler)

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self._httpd.server_address[1]}/v1"

    def start(self) -> "SimServer":
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="simserver", daemon=True)
        self._thread.start()
        threading.Thread(target=self._watchdog, name="simserver-watchdog", daemon=True).start()
        return self

    def _watchdog(self) -> None:
        s = self.settings
        while not self._stopped.wait(0.5):
            now = time.monotonic()
            if now - self._started > s.lifetime or now - self._last > s.idle:
                self.stop()

    def stop(self) -> None:
        if not self._stopped.is_set():
            self._stopped.set()
            threading.Thread(target=self._httpd.shutdown, daemon=True).start()  # safe from a handler thread

    def wait(self) -> None:
        self._stopped.wait()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd.server_close()

    def __enter__(self) -> "SimServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
        self.wait()

    # -- serving
    def _send(self, h: BaseHTTPRequestHandler, status: int, obj: Any) -> None:
        payload = json.dumps(obj).encode()
        try:
            h.send_response(status)
            h.send_header("content-type", "application/json")
            h.send_header("content-length", str(len(payload)))
            h.end_headers()
            h.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client went away (killed run): nothing to do
            pass

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        arrived = time.monotonic()
        self._last = arrived
        length = int(h.headers.get("content-length") or 0)
        if length > MAX_BODY:
            h.close_connection = True
            return self._send(h, 413, {"error": {"message": "request body too large", "type": "invalid_request_error"}})
        raw = h.rfile.read(length) if length else b""
        path = h.path.split("?", 1)[0]
        if path == "/bench/timeline":
            with self._lock:
                return self._send(h, 200, list(self.timeline))
        if path == "/bench/reset":
            with self._lock:
                self.timeline.clear()
            return self._send(h, 200, {"ok": True})
        if path == "/bench/stop":
            self._send(h, 200, {"ok": True})
            return self.stop()
        if path in ("/health", "/v1/models"):
            return self._send(h, 200, {"object": "list", "data": [{"id": m, "object": "model"}
                                                                  for m in self.settings.models]})
        if path != "/v1/chat/completions" or h.command != "POST":
            return self._send(h, 404, {"error": {"message": f"no route for {h.command} {path}",
                                                 "type": "not_found_error"}})
        try:
            body = json.loads(raw)
        except ValueError:
            return self._send(h, 400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
        self._complete(h, body, arrived)

    def _complete(self, h: BaseHTTPRequestHandler, body: dict[str, Any], arrived: float) -> None:
        model = str(body.get("model", ""))
        role = self.settings.models.get(model)
        if role is None:
            return self._send(h, 404, {"error": {"message": f"The model `{model}` does not exist", "code":
                                                 "model_not_found", "type": "invalid_request_error"}})
        messages = tuple(Message(str(m.get("role", "")), _text(m.get("content")))
                         for m in body.get("messages") or [])
        request = Request(messages, stage="served", json_schema=_schema_of(body),
                          temperature=body.get("temperature"), seed=body.get("seed"),
                          max_tokens=body.get("max_tokens") or body.get("max_completion_tokens"))
        try:
            text = self.llms[role].complete(request).text
        except Exception as exc:  # noqa: BLE001 - a simulated model refusing a request is a 400, not a crash
            if role != "teacher" or _stage_of(messages):
                return self._send(h, 400, {"error": {"message": str(exc), "type": "invalid_request_error"}})
            text = _generic_answer(body)  # no stage at all (`skillgit doctor`'s health check): any model answers
        s = self.settings
        prompt = s.prompt_tokens if s.prompt_tokens is not None else tokens_of("".join(m.content for m in messages)) + 4
        completion = s.completion_tokens if s.completion_tokens is not None else tokens_of(text)
        wait = arrived + s.latency_of(role, completion) - time.monotonic()
        if wait > 0 and self._stopped.wait(wait):
            return  # shutting down: drop the call, as a dying server would
        end = time.monotonic()
        with self._lock:
            self.timeline.append({"role": role, "model": model, "stage": _stage_of(messages) or role,
                                  "start": arrived, "end": end, "prompt_tokens": prompt,
                                  "completion_tokens": completion})
        self._last = end
        self._send(h, 200, {
            "id": f"chatcmpl-sim{int(end * 1e6)}", "object": "chat.completion", "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text, "refusal": None}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        })


# ---------------------------------------------------------------------------------------------- child process
class Spawned:
    """A server running in a child process (see `spawn`). Stop it with `stop()` (or use it as a context manager)."""

    def __init__(self, proc: subprocess.Popen, base_url: str):
        self.proc = proc
        self.base_url = base_url
        self.url = base_url.removesuffix("/v1")

    def _call(self, path: str, method: str = "GET") -> Any:
        req = urllib.request.Request(self.url + path, method=method, data=b"" if method == "POST" else None)
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())

    def timeline(self) -> list[dict[str, Any]]:
        return self._call("/bench/timeline")

    def reset(self) -> None:
        self._call("/bench/reset", "POST")

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self._call("/bench/stop", "POST")
                self.proc.wait(timeout=10)
            except Exception:  # noqa: BLE001 - fall back to ending our own child
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> "Spawned":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def spawn(settings: Settings | None = None) -> Spawned:
    """Start the server in a child process on a free port and return once it listens."""
    s = settings or Settings()
    args = [sys.executable, str(Path(__file__).resolve()), "--port", "0", "--latency", str(s.latency),
            "--per-token", str(s.per_token), "--seed", str(s.seed), "--lifetime", str(s.lifetime),
            "--idle", str(s.idle), "--max-connections", str(s.max_connections), "--world", json.dumps(s.world)]
    for flag, value in (("--teacher-latency", s.teacher_latency), ("--student-latency", s.student_latency),
                        ("--prompt-tokens", s.prompt_tokens), ("--completion-tokens", s.completion_tokens)):
        if value is not None:
            args += [flag, str(value)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip() if proc.stdout else ""
    if not line.startswith("http://"):
        proc.kill()
        raise RuntimeError(f"simserver did not start (said {line!r})")
    return Spawned(proc, line)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="skillgit's simulated world as an OpenAI-compatible server on "
                                            "127.0.0.1 (benchmarks only)")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port (printed on stdout)")
    p.add_argument("--latency", type=float, default=0.0, help="seconds per call")
    p.add_argument("--per-token", type=float, default=0.0, help="extra seconds per completion token")
    p.add_argument("--teacher-latency", type=float, default=None)
    p.add_argument("--student-latency", type=float, default=None)
    p.add_argument("--prompt-tokens", type=int, default=None, help="report this many prompt tokens per call")
    p.add_argument("--completion-tokens", type=int, default=None, help="report this many completion tokens")
    p.add_argument("--seed", type=int, default=0, help="the simulated world's seed (model.simulated.seed)")
    p.add_argument("--world", default="{}", help='extra SimulatedCfg fields as JSON, e.g. {"noise": 0.1}')
    p.add_argument("--lifetime", type=float, default=900.0, help="stop after this many seconds")
    p.add_argument("--idle", type=float, default=120.0, help="stop after this many seconds without a request")
    p.add_argument("--max-connections", type=int, default=128)
    a = p.parse_args(argv)
    settings = Settings(a.latency, a.per_token, a.teacher_latency, a.student_latency, a.prompt_tokens,
                        a.completion_tokens, a.seed, json.loads(a.world), lifetime=a.lifetime, idle=a.idle,
                        max_connections=a.max_connections)
    server = SimServer(settings, a.port).start()
    print(server.base_url, flush=True)
    print(f"simserver: {server.base_url} (latency {a.latency:g}s, stops after {a.lifetime:g}s or {a.idle:g}s idle)",
          file=sys.stderr, flush=True)
    try:
        server.wait()
    except KeyboardInterrupt:
        server.stop()
        server.wait()


if __name__ == "__main__":
    main()

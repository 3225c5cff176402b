"""The light front of `skillgit mcp`: answers the client's `initialize` with the standard library only, then
hands the session to the MCP SDK's server (skillgit/integrations/mcp_server.py) without the client noticing.

Why: an agent (Claude Code, Codex, Copilot) lists skillgit's tools only after `initialize` is answered, and
importing the `mcp` SDK alone costs ~0.6 s CPU (2.x: its client, pydantic, starlette, uvicorn). The answer does not
need the SDK: it is the same for every session of one installation, so the SDK's own answers are recorded once
(`record` in mcp_server.py) into a handshake file, and the front replays them.

Contract
- stdin and stdout are claimed as the SDK's `stdio_server` claims them: the wire is served from private duplicates,
  fd 0 reads the null device and fd 1 writes to stderr while serving (children and stray prints miss the wire);
  when `sys.stdout` is not the process's fd 1 (a wrapper), it is written in place. Lines are read and written
  through the SDK's own text layers (UTF-8, undecodable bytes replaced, universal newlines).
- The front answers the **first** line itself only when it is an `initialize` request the SDK would accept, by
  construction (`initialize_request`: JSON-RPC 2.0, an int or string id, exactly `protocolVersion` (a string),
  `capabilities` (a tree of objects; `roots.listChanged` a boolean), `clientInfo` (`name`, `version` and optional
  `title`, `description`, `websiteUrl`, all strings); anything else, duplicate keys included, goes to the SDK) and
  the handshake file matches this installation (`handshake_key`: skillgit's version, the files of mcp_server.py,
  the SDK and pydantic by size and time). Its answer is the SDK's recorded answer for the client's protocol
  version (an unknown version gets the one recorded for an unknown version), with the client's id.
- After that answer and until the SDK takes over, a `ping`, and once the client sent `notifications/initialized`
  a `tools/list`, `prompts/list`, `resources/list` or `resources/templates/list`, without params, is answered
  from the same record (what the client asks right after the handshake: its tools are listed before the SDK is
  imported). A first line the front does not answer (malformed JSON, another method, invalid params, no
  handshake file) means the front answers nothing at all: the SDK sees the session as it would have.
- Every line goes to the SDK, in arrival order (`Feed`; the client's `initialize` first): the SDK's answer to a
  request the front answered is dropped by request id and compared with the front's (`Sink`): a difference is
  reported on stderr and removes the handshake file (the next start records it again). The front's answers and
  the SDK's share one lock: lines never interleave.
- The SDK is imported as soon as the process starts, unless the client's first line is already waiting: then
  after the front's answer (one interpreter lock: the answer does not wait for the import).
- EOF is the SDK's to handle, as without the front (it ends the session cleanly; a missing SDK is still the clear
  error of `skillgit mcp`).
- The handshake file: `$SKILLGIT_MCP_HANDSHAKE`, else `__pycache__/skillgit-mcp-handshake-<environment>.json`
  next to this module (derived data, like the bytecode beside it; one per Python environment sharing the source);
  recorded (~20 ms CPU) by a start that found it missing or stale, before its SDK serves; where it cannot be
  written there is no front (the SDK answers, as before).
"""

from __future__ import annotations

import io
import json
import os
import queue
import sys
import threading
from typing import Any, Callable

HANDSHAKE_ENV = "SKILLGIT_MCP_HANDSHAKE"
UNKNOWN_VERSION = "skillgit-probe-unknown-version"  # recorded as "a version this SDK does not know"
_INFO_FIELDS = {"name", "version", "title", "description", "websiteUrl"}
INITIALIZED = "notifications/initialized"
# what the SDK's answers are recorded for (mcp_server.probe): the handshake, then what a client asks first
RECORDED = ("initialize", "ping", "tools/list", "prompts/list", "resources/list", "resources/templates/list")
AFTER_INITIALIZED = RECORDED[2:]  # answered only after the client's notifications/initialized (as 1.x requires)


# ------------------------------------------------------------------------------------------- the handshake file
def handshake_path() -> str:
    if os.environ.get(HANDSHAKE_ENV):
        return os.environ[HANDSHAKE_ENV]
    from zlib import crc32

    name = f"skillgit-mcp-handshake-{crc32(os.fsencode(sys.prefix)):08x}.json"
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__", name)


def _file_id(path: str | None) -> list[Any] | None:
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [path, st.st_size, st.st_mtime_ns]


def _origin(name: str) -> str | None:
    """Where top-level module `name` would be imported from (what importlib.util.find_spec answers, without
    importing importlib.util)."""
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        try:
            spec = find(name, None) if find else None
        except (ImportError, ValueError):
            spec = None
        if spec is not None:
            return spec.origin
    return None


def handshake_key() -> dict[str, Any] | None:
    """What the recorded answers depend on: skillgit's version, the server module, the SDK's and pydantic's files
    (found, not imported). None when the SDK is not installed."""
    from skillgit import __version__

    sdk = []
    # mcp_types: the 2.x SDK's protocol types, a package of their own; pydantic writes the tools' JSON schemas
    for name in ("mcp", "mcp_types", "pydantic", "pydantic_core"):
        sdk.append(_file_id(_origin(name)))
    if sdk[0] is None:
        return None
    server = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mcp_server.py")
    return {"skillgit": __version__, "server": _file_id(server), "sdk": sdk}


def load_handshake(key: dict[str, Any] | None) -> dict[str, Any] | None:
    """The record, if made for `key`: {"key", "answers": {protocol version: {method: result}}}, every version
    with `initialize` and `ping`, one of them UNKNOWN_VERSION."""
    if key is None:
        return None
    try:
        with open(handshake_path(), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    answers = data.get("answers") if isinstance(data, dict) and data.get("key") == key else None
    ok = (isinstance(answers, dict) and UNKNOWN_VERSION in answers
          and all(isinstance(a, dict) and isinstance(a.get("initialize"), dict) and "ping" in a
                  for a in answers.values()))
    return data if ok else None


def save_handshake(key: dict[str, Any], answers: dict[str, dict[str, Any]]) -> bool:
    path = handshake_path()
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"key": key, "answers": answers}, f)
        os.replace(tmp, path)
        return True
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False


def can_save_handshake() -> bool:
    """Whether the handshake file could be written (else a start records nothing: ~20 ms saved each time)."""
    folder = os.path.dirname(handshake_path())
    while folder and not os.path.isdir(folder):
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent
    return os.access(folder or ".", os.W_OK)


def forget_handshake() -> None:
    try:
        os.unlink(handshake_path())
    except OSError:
        pass


# ------------------------------------------------------------------------------------- what the front answers
def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("duplicate key")
    return out


def parse(line: str) -> Any:
    """The JSON value of a line, or None when it is not JSON (or repeats a key: left to the SDK)."""
    try:
        return json.loads(line, object_pairs_hook=_no_duplicates)
    except ValueError:
        return None


def _request_id(msg: Any, method: str) -> int | str | None:
    """The id of a JSON-RPC 2.0 request for `method` with nothing else but params, else None."""
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or msg.get("method") != method:
        return None
    if not set(msg) <= {"jsonrpc", "id", "method", "params"}:
        return None
    rid = msg.get("id")
    if isinstance(rid, bool) or not isinstance(rid, (int, str)):
        return None
    if isinstance(rid, int) and abs(rid) >= 2 ** 53:
        return None
    return rid if _encodable(rid) else None


def _encodable(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate from a \\ud800 escape
            return False
    return True


def _object_tree(value: Any, bools: frozenset[str] = frozenset()) -> bool:
    """An object whose members are objects all the way down, except the keys in `bools`: booleans (the SDK refuses
    an object there, e.g. `roots.listChanged: {}`)."""
    if not isinstance(value, dict):
        return False
    for k, v in value.items():
        if not _encodable(k):
            return False
        if k in bools:
            if isinstance(v, bool):
                continue
            return False
        if not _object_tree(v):
            return False
    return True


def initialize_request(msg: Any) -> tuple[int | str, str] | None:
    """(id, protocol version) of an `initialize` request the SDK accepts by construction, else None (the SDK
    decides). Deliberately narrower than the SDK's schema: a request left out is answered by the SDK itself."""
    rid = _request_id(msg, "initialize")
    if rid is None:
        return None
    params = msg.get("params")
    if not isinstance(params, dict) or set(params) != {"protocolVersion", "capabilities", "clientInfo"}:
        return None
    version, caps, info = params["protocolVersion"], params["capabilities"], params["clientInfo"]
    if not isinstance(version, str) or not _encodable(version) or not isinstance(caps, dict):
        return None
    if not all(_object_tree(v, frozenset({"listChanged"}) if k == "roots" else frozenset())
               and _encodable(k) for k, v in caps.items()):
        return None
    if not isinstance(info, dict) or not {"name", "version"} <= set(info) <= _INFO_FIELDS:
        return None
    if not all(isinstance(v, str) and _encodable(v) for v in info.values()):
        return None
    return rid, version


def plain_request(msg: Any) -> tuple[str, int | str] | None:
    """(method, id) of a request for a recorded method (`RECORDED`, initialize aside) without params (absent or
    an empty object), else None."""
    method = msg.get("method") if isinstance(msg, dict) else None
    if method not in RECORDED or method == "initialize":
        return None
    rid = _request_id(msg, method)
    if rid is None or msg.get("params", {}) != {}:
        return None
    return method, rid


def initialized_notification(msg: Any) -> bool:
    return (isinstance(msg, dict) and msg.get("jsonrpc") == "2.0" and msg.get("method") == INITIALIZED
            and "id" not in msg and msg.get("params", {}) == {} and set(msg) <= {"jsonrpc", "method", "params"})


def response(rid: int | str, result: Any) -> str:
    """A JSON-RPC response line as the SDK writes it (compact, UTF-8 as is)."""
    return json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}, ensure_ascii=False,
                      separators=(",", ":")) + "\n"


# ----------------------------------------------------------------------------------------- the SDK's streams
class Feed:
    """The SDK server's stdin: lines from a queue ("" is the end), read by `anyio.wrap_file(...).readline`."""

    def __init__(self) -> None:
        self._lines: queue.SimpleQueue[str] = queue.SimpleQueue()

    def put(self, line: str) -> None:
        self._lines.put(line)

    def readline(self, size: int = -1) -> str:
        line = self._lines.get()
        if not line:
            self._lines.put("")  # the end stays the end
        return line

    def close(self) -> None:
        pass


class Sink:
    """The SDK server's stdout, shared with the front's own answers (one lock: lines never interleave). The SDK's
    answer to a request the front answered is dropped (by id, once) and compared with the front's: a difference
    goes to `on_mismatch` (the request id)."""

    def __init__(self, out: io.TextIOBase, on_mismatch: Callable[[Any], None] | None = None) -> None:
        self._out = out
        self._lock = threading.Lock()
        self._sent: dict[str, Any] = {}  # json of an id -> the result the front sent for it
        self._on_mismatch = on_mismatch

    def answer(self, rid: int | str, result: Any) -> None:
        """Write the front's answer to request `rid` (the SDK's own answer to it is then dropped)."""
        with self._lock:
            self._sent[json.dumps(rid)] = result
            self._out.write(response(rid, result))
            self._out.flush()

    def write(self, text: str) -> int:
        if self._sent and self._dropped(text):
            return len(text)
        with self._lock:
            self._out.write(text)
        return len(text)

    def _dropped(self, text: str) -> bool:
        msg = parse(text)
        if not isinstance(msg, dict) or "method" in msg or "id" not in msg:
            return False
        rid = json.dumps(msg["id"])
        with self._lock:
            if rid not in self._sent:
                return False
            sent = self._sent.pop(rid)
        if msg.get("result") != sent and self._on_mismatch is not None:
            self._on_mismatch(msg["id"])
        return True

    def flush(self) -> None:
        with self._lock:
            self._out.flush()

    def close(self) -> None:
        pass


# --------------------------------------------------------------------------------------------- stdin / stdout
def _dup_above_std(fd: int) -> int | None:
    """A duplicate of `fd` outside 0–2 (not inherited by children), or None."""
    try:
        import fcntl
    except ImportError:  # Windows
        try:
            private = os.dup(fd)
        except OSError:
            return None
        if private > 2:
            return private
        os.close(private)
        return None
    try:
        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        return None


def _claim(fd: int, stream: Any, mode: str, divert: Callable[[], int]) -> tuple[Any, Callable[[], None]]:
    """(the wire as a binary stream, how to give fd back): the SDK's stdio claim (mcp/server/stdio.py): serve the
    wire from a private duplicate and point `fd` elsewhere; where that cannot be done, the stream in place."""
    buffer = getattr(stream, "buffer", stream)
    try:
        backed = buffer.fileno() == fd
    except (AttributeError, OSError, ValueError):
        backed = False
    private = _dup_above_std(fd) if backed else None
    if private is None:
        return buffer, lambda: None
    try:
        diversion = divert()
    except OSError:
        os.close(private)
        return buffer, lambda: None
    try:
        os.dup2(diversion, fd)
    except OSError:  # (two writers on one pipe would tear lines: serve in place)
        os.dup2(private, fd)
        os.close(private)
        return buffer, lambda: None
    finally:
        os.close(diversion)

    def release() -> None:
        try:
            os.dup2(private, fd)
        except OSError:
            pass

    return os.fdopen(private, mode, closefd=False), release


def _divert_stdout() -> int:
    try:
        return os.dup(2)
    except OSError:
        return os.open(os.devnull, os.O_WRONLY)


class Front:
    """Reads the client's lines (in its own thread) and passes every one to the SDK, in order; answers first,
    from the record, what it can (`initialize` as the first line, then `ping` and the lists of `AFTER_INITIALIZED`
    until the hand-over)."""

    def __init__(self, text_in: io.TextIOBase, sink: Sink, handshake: dict[str, Any] | None) -> None:
        self.text_in, self.sink, self.feed = text_in, sink, Feed()
        self.answers: dict[str, Any] = handshake["answers"] if handshake else {}
        self.version: str | None = None  # the protocol version whose answers the front gives
        self.initialized = False  # the client sent notifications/initialized
        self.first_done = threading.Event()
        self.ended = threading.Event()  # the client closed its end (stdin)
        self.handed_over = False
        self.mismatch: str | None = None

    def run(self) -> None:
        try:
            self._loop()
        finally:
            self.feed.put("")
            self.first_done.set()
            self.ended.set()

    def _loop(self) -> None:
        line = self.text_in.readline()
        if line and self.answers:
            self._first(line)
        self.feed.put(line)
        self.first_done.set()
        while line:
            line = self.text_in.readline()
            if line and self.version is not None and not self.handed_over:
                try:
                    self._early(line)
                except Exception as exc:  # noqa: BLE001 - a bug here must not end the session: the SDK answers
                    self.version = None
                    print(f"skillgit mcp: the front stopped answering ({type(exc).__name__}: {exc})",
                          file=sys.stderr)
            self.feed.put(line)

    def _first(self, line: str) -> None:
        request = initialize_request(parse(line))
        if request is not None:
            rid, version = request
            self.version = version if version in self.answers else UNKNOWN_VERSION
            self.sink.answer(rid, self.answers[self.version]["initialize"])

    def _early(self, line: str) -> None:
        msg = parse(line)
        if initialized_notification(msg):
            self.initialized = True
            return
        request = plain_request(msg)
        if request is None or (request[0] in AFTER_INITIALIZED and not self.initialized):
            return
        result = self.answers[self.version or UNKNOWN_VERSION].get(request[0])
        if result is not None:
            self.sink.answer(request[1], result)

    def check(self, rid: Any) -> None:
        """The SDK answered request `rid` otherwise than the front did from the record: the record is stale."""
        self.mismatch = f"the SDK's answer to request {json.dumps(rid)} differs from the recorded one"
        forget_handshake()
        print(f"skillgit mcp: {self.mismatch}; the record is removed (the next start records it again)",
              file=sys.stderr)


def _stdin_waiting(stream: Any) -> bool:
    try:
        import select

        return bool(select.select([stream], [], [], 0)[0])
    except (OSError, ValueError, TypeError):
        return False


def serve(hand_over: Callable[[Front, dict[str, Any] | None], None]) -> None:
    """`skillgit mcp`: the front, then `hand_over(front, record_key)` — the SDK's server on the front's streams
    until the client closes the session (mcp_server.serve_session; recording first when `record_key` is set).
    (skillgit.entry joins the two: this module imports neither the SDK nor mcp_server, which imports it.)"""
    key = handshake_key()
    handshake = load_handshake(key)
    in_buffer, give_stdin = _claim(0, sys.stdin, "rb", lambda: os.open(os.devnull, os.O_RDONLY))
    out_buffer, give_stdout = _claim(1, sys.stdout, "wb", _divert_stdout)
    text_in = io.TextIOWrapper(in_buffer, encoding="utf-8", errors="replace")
    text_out = io.TextIOWrapper(out_buffer, encoding="utf-8")
    front: Front
    sink = Sink(text_out, lambda rid: front.check(rid))
    front = Front(text_in, sink, handshake)
    waiting = handshake is not None and _stdin_waiting(in_buffer)
    threading.Thread(target=front.run, name="skillgit-mcp-front", daemon=True).start()
    over = threading.Event()
    threading.Thread(target=_stop_at_end, args=(front, over), name="skillgit-mcp-end", daemon=True).start()
    try:
        if waiting:
            front.first_done.wait(1.0)
        hand_over(front, key if handshake is None and key is not None and can_save_handshake() else None)
    finally:
        over.set()
        front.feed.put("")  # a reader still waiting on the feed (a server stopped by a signal) ends: exit is not held
        give_stdout()
        give_stdin()


def _stop_at_end(front: Front, over: threading.Event) -> None:
    """The client closed the session (MCP stdio: it closes stdin) while the server still serves: a command a tool
    still runs would answer no one, so a stop is recorded and `process.run` kills it with everything it started
    (a `skillgit train`, its rollouts); without it the server waited for the train to end before it exited."""
    front.ended.wait()
    if not over.is_set():
        from skillgit.errors import Interrupted, request_stop

        request_stop(Interrupted("the MCP client closed the session",
                                 "a train it ran resumes with the train tool's resume=true"))

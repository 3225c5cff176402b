"""`skillgit-try ITEM_ID`: the agent teacher runs its candidate on one training task, through the run's own student.

Contract:
- The loop side sets a `Trier` for the duration of one teacher call (`trying(trier)`, a context variable, so it
  never becomes part of the call's journal key); the backend that runs the agent asks `current()` for it, serves it
  with `TryServer` while the agent runs, and puts a `skillgit-try` program first on the agent's PATH
  (`install_client`).
- `TryServer` binds 127.0.0.1 on a free port and answers only requests that carry its random token
  (`SKILLGIT_TRY_TOKEN`); each request names one item id, and the package is read from the agent's working copy
  at that moment (`read_skill`), never from the request.
- A `Trier` returns (exit code, text): 0 the task passed, 1 it failed, 2 refused (an id that is not a training task:
  validation and test ids are refused with a message that says so; a spent try budget). The text is what a
  teacher may read of the run: the trajectory block a chat teacher would see (judge-isolated feedback).
- The client is a few lines of the standard library run by this Python (never `skillgit` by a bare name); it
  ignores proxy variables (the call goes to 127.0.0.1 only).
"""

from __future__ import annotations

import contextvars
import hmac
import json
import secrets
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Protocol

PROGRAM = "skillgit-try"
URL_ENV, TOKEN_ENV = "SKILLGIT_TRY_URL", "SKILLGIT_TRY_TOKEN"
MAX_BODY = 4096


class Trier(Protocol):
    def __call__(self, item_id: str, skill: str) -> tuple[int, str]: ...


_CURRENT: contextvars.ContextVar[Trier | None] = contextvars.ContextVar("skillgit_trier", default=None)


@contextmanager
def trying(trier: Trier | None) -> Iterator[None]:
    """Make `trier` the one the agent teacher's call in this context serves."""
    token = _CURRENT.set(trier)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current() -> Trier | None:
    return _CURRENT.get()


class TryServer:
    """The loopback endpoint behind `skillgit-try` (see the module docstring). Use as a context manager."""

    def __init__(self, trier: Trier, read_skill: Callable[[], str]):
        self.trier = trier
        self.read_skill = read_skill
        self.token = secrets.token_hex(16)
        self.log: list[dict[str, object]] = []  # one record per request: item, code
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                given = self.headers.get("Authorization", "")
                if not hmac.compare_digest(given.encode(), f"Bearer {outer.token}".encode()):
                    self._answer(403, {"code": 2, "text": "refused: bad token"})
                    return
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(min(length, MAX_BODY)) or b"{}")
                    item = str(body["item"])
                except (ValueError, KeyError, TypeError):
                    self._answer(400, {"code": 2, "text": "usage: skillgit-try ITEM_ID"})
                    return
                code, text = outer._try(item)
                self._answer(200, {"code": code, "text": text})

            def _answer(self, status: int, payload: dict[str, object]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's signature)
                pass  # nothing to stderr: the run's display owns it

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/try"

    def env(self) -> dict[str, str]:
        return {URL_ENV: self.url, TOKEN_ENV: self.token}

    def _try(self, item: str) -> tuple[int, str]:
        try:
            code, text = self.trier(item, self.read_skill())
        except Exception as exc:  # a budget reached, a backend down: the agent is told, the run decides
            code, text = 2, f"refused: the try could not run ({type(exc).__name__}: {str(exc)[:300]})"
        with self._lock:
            self.log.append({"item": item, "code": code})
        return code, text

    def __enter__(self) -> TryServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


CLIENT = '''\
#!{python}
"""skillgit-try ITEM_ID: run the skill package as it is now on one training task (skillgit's agent teacher)."""
import json, os, sys, urllib.error, urllib.request
if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
    print("usage: skillgit-try ITEM_ID  (an id from evidence/trajectories/)", file=sys.stderr)
    sys.exit(2)
url, token = os.environ.get("{url_env}"), os.environ.get("{token_env}")
if not url or not token:
    print("skillgit-try: not inside a skillgit teacher step", file=sys.stderr)
    sys.exit(2)
request = urllib.request.Request(url, data=json.dumps({{"item": sys.argv[1]}}).encode(),
                                 headers={{"Authorization": "Bearer " + token, "Content-Type": "application/json"}})
opener = urllib.request.build_opener(urllib.request.ProxyHandler({{}}))
try:
    with opener.open(request, timeout=3600) as response:
        answer = json.load(response)
except urllib.error.HTTPError as exc:  # a refusal of the service itself (a bad token): its own words
    try:
        answer = json.load(exc)
    except ValueError:
        answer = {{"code": 2, "text": "skillgit-try: " + str(exc)}}
except Exception as exc:
    print("skillgit-try: " + str(exc), file=sys.stderr)
    sys.exit(2)
print(answer.get("text", ""))
sys.exit(int(answer.get("code", 2)))
'''


def install_client(folder: Path) -> Path:
    """Write the `skillgit-try` program into `folder` (made when missing); returns the folder (for PATH)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / PROGRAM
    path.write_text(CLIENT.format(python=sys.executable, url_env=URL_ENV, token_env=TOKEN_ENV), encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return folder

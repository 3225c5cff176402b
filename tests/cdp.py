"""A small Chrome DevTools Protocol client for tests: headless Chromium (Debian's /usr/bin/chromium, no browser
download) driven over its DevTools websocket with a minimal RFC 6455 client written here (stdlib only).

`Browser.start(folder)` launches Chromium with a fresh profile, loopback-only networking (every host name but
127.0.0.1 fails to resolve, so nothing leaves the machine even if a page tried) and `--remote-debugging-port=0`,
reads the port from `DevToolsActivePort`, and connects. `browser.page()` opens a tab and attaches to it
(flattened session); a `Page` records every network request its documents and scripts start
(`Network.requestWillBeSent`), every uncaught script exception, and evaluates expressions.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import socket
import struct
import subprocess
import time
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--no-default-browser-check",
         "--disable-default-apps", "--disable-extensions", "--mute-audio",
         "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1")


class WebSocket:
    """A blocking websocket client: text messages only (what CDP sends), pings answered."""

    def __init__(self, url: str, timeout: float = 30.0):
        parts = urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port or 80), timeout=timeout)
        key = base64.b64encode(secrets.token_bytes(16)).decode()
        request = (f"GET {parts.path or '/'} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\n"
                   f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                   "Sec-WebSocket-Version: 13\r\n\r\n")
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("the DevTools server closed the connection during the handshake")
            head += chunk
        status, _, self.buffer = head.partition(b"\r\n\r\n")
        if b" 101 " not in status.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"websocket handshake refused: {status[:200]!r}")

    def _exact(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(max(65536, n - len(self.buffer)))
            if not chunk:
                raise ConnectionError("the DevTools connection closed")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def _frame(self, opcode: int, payload: bytes) -> None:
        mask = secrets.token_bytes(4)
        n = len(payload)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 1 << 16:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + masked)

    def send(self, text: str) -> None:
        self._frame(0x1, text.encode())

    def recv(self) -> str:
        parts: list[bytes] = []
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._exact(8))[0]
            mask = self._exact(4) if b1 & 0x80 else b""
            payload = self._exact(n)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            opcode = b0 & 0x0F
            if opcode == 0x9:
                self._frame(0xA, payload)
                continue
            if opcode == 0x8:
                raise ConnectionError("the DevTools server closed the websocket")
            if opcode in (0x0, 0x1, 0x2):
                parts.append(payload)
                if b0 & 0x80:
                    return b"".join(parts).decode("utf-8", "replace")

    def close(self) -> None:
        try:
            self._frame(0x8, b"")
        except OSError:
            pass
        self.sock.close()


class Browser:
    def __init__(self, proc: subprocess.Popen, ws: WebSocket):
        self.proc = proc
        self.ws = ws
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    @classmethod
    def start(cls, folder: Path, timeout: float = 30.0) -> "Browser":
        assert CHROMIUM is not None, "no chromium installed"
        profile = folder / "chromium-profile"
        profile.mkdir(parents=True)
        proc = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0",
                                 "--remote-debugging-address=127.0.0.1", "about:blank"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=open(folder / "chromium.log", "wb"), start_new_session=True)
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"chromium did not open DevTools: {(folder / 'chromium.log').read_text()[-2000:]}")
            time.sleep(0.05)
        port, path = port_file.read_text().splitlines()[:2]
        return cls(proc, WebSocket(f"ws://127.0.0.1:{port}{path}"))

    def call(self, method: str, session: str | None = None, timeout: float = 30.0, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        self.ws.send(json.dumps(message))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)
        raise TimeoutError(method)

    def page(self) -> "Page":
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        page = Page(self, session)
        for domain in ("Network", "Page", "Runtime"):
            page.call(f"{domain}.enable")
        return page

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=5)
        except (OSError, RuntimeError, TimeoutError, ConnectionError):
            pass
        self.ws.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, 9)
            self.proc.wait()


class Page:
    def __init__(self, browser: Browser, session: str):
        self.browser = browser
        self.session = session

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        return self.browser.call(method, self.session, **params)

    def _events(self, method: str) -> list[dict[str, Any]]:
        return [e["params"] for e in self.browser.events if e.get("sessionId") == self.session
                and e.get("method") == method]

    def requests(self) -> list[str]:
        """Every URL a request was started for in this tab (documents, scripts, fetches, event streams)."""
        return [p["request"]["url"] for p in self._events("Network.requestWillBeSent")]

    def statuses(self) -> dict[str, int]:
        return {p["response"]["url"]: p["response"]["status"] for p in self._events("Network.responseReceived")}

    def exceptions(self) -> list[str]:
        return [json.dumps(p.get("exceptionDetails", {}))[:500] for p in self._events("Runtime.exceptionThrown")]

    def goto(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def eval(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result.get("result", {}).get("value")

    def wait(self, expression: str, timeout: float = 60.0, what: str = "") -> Any:
        """Evaluate `expression` until it is truthy; its value. TimeoutError names `what` and the page's text."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.eval(expression)
            except RuntimeError:
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                text = self.eval("document.body ? document.body.innerText.slice(0, 3000) : ''")
                raise TimeoutError(f"waited {timeout:.0f}s for {what or expression}; the page shows:\n{text}")
            time.sleep(0.1)


def until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout:.0f}s for {what}")
        time.sleep(0.1)

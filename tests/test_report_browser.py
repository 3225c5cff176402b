"""The report in a real headless Chromium: it renders (a screenshot is written, the DOM holds the charts), the
planted scripts stay text, and the page fetches nothing from the network.

How "fetches nothing" is checked, so that it really fails when the page loads something:
- Chromium sends every request (loopback included) through a recording proxy on 127.0.0.1 that answers 403,
  and resolves no host name itself: nothing leaves the machine, and every attempted fetch is recorded.
- Chromium itself talks to Google services on start (component updater, network time, account list) whatever
  the flags, so the proxy's record alone cannot tell page from browser. Chromium's own NetLog does: a request
  made for the page carries the page as initiator (`null` for a file:// page) and `file://` in its network
  isolation key; a browser-internal one has initiator `not an origin`. The test asserts that the NetLog holds no
  non-local request made for the page, and that every host the proxy saw is one the NetLog attributes to the
  browser itself (so a page fetch cannot hide from the NetLog).
- A control page that references a remote image and font must be caught by the same check.
Skipped when no `chromium`/`chromium-browser` binary is installed (Debian: `apt-get install chromium`).
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import socketserver
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from skillgit.report import matplotlib_version, write_report
from tests.test_report import SCRIPT_EDIT, make_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.browser, pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary installed")]
RENDERERS = ["builtin", pytest.param("matplotlib", marks=pytest.mark.skipif(matplotlib_version() is None,
                                                                             reason="no matplotlib"))]
MAX_REQUESTS = 500  # the proxy records at most this many connections
LOCAL_SCHEMES = ("file:", "data:", "about:", "blob:", "chrome:", "chrome-extension:", "devtools:")
BROWSER_INITIATOR = "not an origin"  # NetLog's initiator for requests the browser makes on its own


class _RecordingProxy(socketserver.ThreadingTCPServer):
    """An HTTP proxy that records each request line (GET http://…, CONNECT host:443) and answers 403."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        self.requests: list[str] = []
        self.lock = threading.Lock()

    def hosts(self) -> set[str]:
        out = set()
        for line in self.requests:
            parts = line.split()
            target = parts[1] if len(parts) > 1 else ""
            out.add(target.rsplit(":", 1)[0] if parts[:1] == ["CONNECT"] else urlsplit(target).hostname or target)
        return out


class _ProxyHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        server = self.server
        assert isinstance(server, _RecordingProxy)
        sock: socket.socket = self.request
        sock.settimeout(5)
        try:
            head = sock.recv(65536).decode("latin-1")
        except OSError:
            head = ""
        with server.lock:
            if len(server.requests) < MAX_REQUESTS:
                server.requests.append(head.split("\r\n", 1)[0] or "(empty connection)")
        try:
            sock.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        except OSError:
            pass


@pytest.fixture
def proxy() -> Iterator[_RecordingProxy]:
    server = _RecordingProxy()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _netlog_requests(path: Path) -> tuple[list[str], set[str]]:
    """(URLs requested for the page, hosts the browser requested on its own) from a Chromium NetLog file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    start = data["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    page: list[str] = []
    browser: set[str] = set()
    for event in data["events"]:
        params = event.get("params") or {}
        url = params.get("url", "")
        if event.get("type") != start or not url or url.startswith(LOCAL_SCHEMES):
            continue
        if params.get("initiator") == BROWSER_INITIATOR and "file://" not in params.get("network_isolation_key", ""):
            browser.add(urlsplit(url).hostname or url)
        else:
            page.append(url)  # anything not provably the browser's own counts against the page
    return page, browser


def _chromium(url: str, work: Path, proxy: _RecordingProxy, name: str, *extra: str) -> tuple[str, list[str]]:
    """Run headless Chromium on `url`; returns its stdout and the non-local URLs it requested for the page."""
    assert CHROMIUM is not None
    port = proxy.server_address[1]
    netlog = work / f"{name}.netlog.json"
    args = [
        CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", f"--user-data-dir={work / 'profile'}",
        "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-default-apps", "--disable-extensions",
        "--hide-scrollbars", f"--log-net-log={netlog}",
        # Every request goes to the recording proxy (loopback too), and no host name resolves.
        f"--proxy-server=http://127.0.0.1:{port}", "--proxy-bypass-list=<-loopback>",
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
        *extra, url,
    ]
    run = subprocess.run(args, check=False, capture_output=True, text=True, timeout=90, cwd=work)
    assert netlog.exists(), f"chromium wrote no NetLog (exit {run.returncode}): {run.stderr[-2000:]}"
    page, browser = _netlog_requests(netlog)
    unexplained = proxy.hosts() - browser
    page += [f"(proxy) {host}" for host in sorted(unexplained)]
    return run.stdout, page


@pytest.mark.parametrize("renderer", RENDERERS)
def test_report_renders_in_chromium_without_network(renderer, tmp_path, proxy):
    report = make_report()
    page = write_report(report, tmp_path / "report.html", renderer=renderer)
    shot = tmp_path / "shot.png"

    _, fetched = _chromium(page.as_uri(), tmp_path, proxy, "shot", f"--screenshot={shot}", "--window-size=1280,2000")
    assert fetched == [], f"the report fetched: {fetched}"
    png = shot.read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 20_000  # a real, non-blank page

    dom, fetched = _chromium(page.as_uri(), tmp_path, proxy, "dom", "--dump-dom")
    assert fetched == [], f"the report fetched: {fetched}"
    assert dom.count("<svg") == 3
    assert len(re.findall(r'<path[^>]* d="[^"]+"', dom)) > 20
    assert "<title>skillgit report · demo-project · 20260101-0000-ab12</title>" in dom  # no script retitled it
    assert SCRIPT_EDIT.replace("<", "&lt;").replace(">", "&gt;") in dom  # the planted markup is shown as text
    assert "<img" not in dom
    assert "see https://example.com/docs" in dom  # `&#58;` in the file renders as ':'


def test_the_network_check_catches_a_fetch(tmp_path, proxy):
    page = tmp_path / "leaky.html"
    page.write_text('<!DOCTYPE html><html><head><style>@font-face{font-family:x;'
                    'src:url(https://fonts.example.invalid/x.woff2)}body{font-family:x}</style></head>'
                    '<body>leak<img src="http://cdn.example.invalid/pixel.png"></body></html>', encoding="utf-8")
    _, fetched = _chromium(page.as_uri(), tmp_path, proxy, "leaky", "--dump-dom")
    assert any("cdn.example.invalid" in u for u in fetched) and any("fonts.example.invalid" in u for u in fetched)
    assert "cdn.example.invalid" in " ".join(proxy.requests)  # and the fetch really reached the proxy

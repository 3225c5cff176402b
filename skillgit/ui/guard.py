"""Who may talk to the dashboard: the checks every request passes before any route runs (pure; no web library).

Contract (a request is answered only when all of these hold; otherwise 403 with a one-line reason, and no route,
no file and no git is touched):
- **Host**: the `Host` header names `127.0.0.1` or `localhost`, with the server's own port (or no port).
  A page on another site that re-points its own name at 127.0.0.1 (DNS rebinding) sends its own name as Host and
  is refused, token or not.
- **Token**: the request carries the server's token, compared in constant time, in the `X-Skillgit-Token`
  header or the `token` query parameter (the page's first URL, as Jupyter prints it; `EventSource` cannot send
  headers). Every route is behind it: the page, the event stream, the API, the reports. No cookie is ever set, so
  nothing authenticates a request that does not carry the token itself (no cross-site request forgery).
- **Writes** (every method but GET and HEAD) carry the token in the header, never only in the URL, with a JSON
  body (`Content-Type: application/json`), and an `Origin` header, when present, must be this server's origin.
  A cross-site form or script cannot set that header or that content type without a CORS preflight, and no route
  answers a preflight (no CORS headers, ever).
- Every answer carries `SECURITY_HEADERS` (no caching, no framing, no sniffing, no referrer) and a Content
  Security Policy: the dashboard page may run only its own inline script (by nonce) and connect only to its own
  origin; a report page may run no script at all. The browser itself refuses anything from outside 127.0.0.1.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass

TOKEN_HEADER = "X-Skillgit-Token"
TOKEN_QUERY = "token"
LOCAL_NAMES = ("127.0.0.1", "localhost")
READ_METHODS = ("GET", "HEAD")

SECURITY_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def new_token() -> str:
    """A fresh random token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def page_policy(nonce: str) -> str:
    """The dashboard page's Content Security Policy: its own inline script and style, requests to itself only."""
    return (f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; connect-src 'self'; "
            "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


# A report is skillgit report's HTML: inline style and SVG/PNG charts, no script (planted text stays text).
REPORT_POLICY = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
                 "form-action 'none'; frame-ancestors 'none'")
API_POLICY = "default-src 'none'; frame-ancestors 'none'"


@dataclass(frozen=True)
class Request:
    """What the guard looks at, taken from an HTTP request by the server."""

    method: str
    host: str  # the Host header ("" when absent)
    token_header: str = ""
    token_query: str = ""
    origin: str | None = None  # the Origin header, when sent
    content_type: str = ""


@dataclass(frozen=True)
class Guard:
    token: str
    port: int

    def origins(self) -> set[str]:
        return {f"http://{name}:{self.port}" for name in LOCAL_NAMES}

    def host_ok(self, host: str) -> bool:
        host = host.strip().lower()
        for name in LOCAL_NAMES:
            if host == name or host == f"{name}:{self.port}":
                return True
        return False

    def _token_ok(self, given: str) -> bool:
        return bool(given) and hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode("utf-8"))

    def refuse(self, req: Request) -> str | None:
        """Why `req` is refused (see the module contract), or None when it may be answered."""
        if not self.host_ok(req.host):
            return "this dashboard answers only to 127.0.0.1 and localhost (Host header)"
        write = req.method.upper() not in READ_METHODS
        if write:
            if not self._token_ok(req.token_header):
                return f"a change needs the token in the {TOKEN_HEADER} header"
            if req.origin is not None and req.origin.lower() not in self.origins():
                return "a change must come from the dashboard's own page (Origin)"
            if req.content_type.split(";", 1)[0].strip().lower() != "application/json":
                return "a change must send a JSON body (Content-Type: application/json)"
            return None
        if not (self._token_ok(req.token_header) or self._token_ok(req.token_query)):
            return "missing or wrong token: open the URL `skillgit ui` printed (it ends in ?token=…)"
        return None

"""The dashboard's HTTP server (aiohttp): routes, the event stream, and serving until stopped.

Routes (every one behind `guard.Guard`: Host, token, and for writes header token + JSON + Origin):
  GET  /                        the page (page.html, its script and style allowed by a per-response nonce)
  GET  /api/state               project, config files, runs, branches, jobs
  GET  /api/runs/{run}          a run's saved progress, its decisions, and the dashboard's jobs on it (with events)
  GET  /api/jobs/{job}          one job with its events and log lines
  POST /api/jobs                start a run: a `jobs.StartRequest` as JSON (`run`: resume that run)
  POST /api/jobs/{job}/stop     Ctrl-C the job (`{"force": true}`: kill it)
  GET  /api/events              Server-Sent Events: `job` (an event or log line of a job, with its seq),
                                `jobstate` (a job started, stopped, exited, or learned its run), `repo` (refs moved:
                                read again), `notice` (a problem of the dashboard itself); a comment every 15 s
                                keeps the connection open
  GET  /runs/{run}/report       `skillgit report`'s HTML for the run (no script may run in it)
Every string in a JSON body or event (from git, notes, a run's events and log, a model) is sent as
`textsafe.shown` shows it on a terminal: a control, bidi or zero-width character arrives as its visible escape
(`\\u202e`, `\\x1b` …), so the page, which sets each text with `textContent`, can neither be reordered (Trojan
Source) nor show a raw control character; a config path sent back in a start request is matched in that form.
Errors are JSON `{"error", "hint"}` with 400 (bad request), 404 (unknown run or job) or 409 (a job in the wrong
state); a refused request is 403 with a one-line reason.

One ticker task follows the jobs (`Jobs.poll`, 5 times a second: file reads only) and the refs (`RefWatch`, once a
second: stat calls only); git is read only when a page asks, in a worker thread.
"""

from __future__ import annotations

import asyncio
import secrets
import socket
import threading
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Awaitable, Callable

from aiohttp import web

from skillgit.errors import SkillgitError
from skillgit.textsafe import shown_json
from skillgit.ui import guard as G
from skillgit.ui.jobs import Ending, Job, Jobs, StartRequest, Update
from skillgit.ui.views import RefWatch, Views

TICK_S = 0.2
REFS_EVERY = 5  # ticks between two looks at the refs
KEEPALIVE_S = 15.0
QUEUE_MAX = 2000  # a page that falls this far behind is dropped (its EventSource reconnects and reads again)


@dataclass
class Hub:
    """The open event streams; `publish` hands a message to each."""

    queues: set[asyncio.Queue] = field(default_factory=set)

    def publish(self, name: str, data: Any) -> None:
        message = f"event: {name}\ndata: {_dumps(data)}\n\n".encode()
        for queue in list(self.queues):
            try:
                queue.put_nowait(message)
            except asyncio.QueueFull:
                self._end(queue)

    def _end(self, queue: asyncio.Queue) -> None:
        """End one stream: its handler returns at the sentinel (None) and the page reconnects."""
        self.queues.discard(queue)
        while queue.full():
            queue.get_nowait()
        queue.put_nowait(None)

    def close(self) -> None:
        for queue in list(self.queues):
            self._end(queue)


def _page() -> str:
    return resources.files("skillgit.ui").joinpath("page.html").read_text(encoding="utf-8")


def _error(exc: SkillgitError, status: int = 400) -> web.Response:
    return web.json_response({"error": exc.message, "hint": exc.hint}, status=status, dumps=_dumps)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Dashboard:
    def __init__(self, views: Views, jobs: Jobs, guard: G.Guard):
        self.views = views
        self.jobs = jobs
        self.guard = guard
        self.hub = Hub()
        self.page = _page()
        self.watch = RefWatch(views.store.git_dir)
        self.closing = False  # set when the dashboard stops: no new run may start then

    # ------------------------------------------------------------------------------------------ the app
    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard_mw], client_max_size=256 * 1024)
        app.on_response_prepare.append(self._headers)
        app.router.add_get("/", self.index)
        app.router.add_get("/api/state", self.state)
        app.router.add_get("/api/runs/{run}", self.run)
        app.router.add_get("/api/jobs/{job}", self.job)
        app.router.add_post("/api/jobs", self.start)
        app.router.add_post("/api/jobs/{job}/stop", self.stop)
        app.router.add_get("/api/events", self.events)
        app.router.add_get("/runs/{run}/report", self.report)
        return app

    @web.middleware
    async def _guard_mw(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        why = self.guard.refuse(G.Request(
            request.method, request.headers.get("Host", ""), request.headers.get(G.TOKEN_HEADER, ""),
            request.query.get(G.TOKEN_QUERY, ""), request.headers.get("Origin"),
            request.headers.get("Content-Type", "")))
        if why is not None:
            return web.Response(status=403, text=why + "\n")
        return await handler(request)

    async def _headers(self, request: web.Request, response: web.StreamResponse) -> None:
        for key, value in G.SECURITY_HEADERS.items():
            response.headers[key] = value
        response.headers.setdefault("Content-Security-Policy", G.API_POLICY)
        for key in [k for k in response.headers if k.lower().startswith("access-control-")]:
            del response.headers[key]  # no CORS, ever

    # ------------------------------------------------------------------------------------------ pages
    async def index(self, request: web.Request) -> web.Response:
        nonce = secrets.token_urlsafe(18)
        html = self.page.replace("{{NONCE}}", nonce)
        return web.Response(text=html, content_type="text/html", charset="utf-8",
                            headers={"Content-Security-Policy": G.page_policy(nonce)})

    async def report(self, request: web.Request) -> web.Response:
        try:
            html = await asyncio.to_thread(self.views.report_html, request.match_info["run"])
        except SkillgitError as exc:
            return web.Response(status=404, text=f"{exc.message}\n")
        return web.Response(text=html, content_type="text/html", charset="utf-8",
                            headers={"Content-Security-Policy": G.REPORT_POLICY})

    # ------------------------------------------------------------------------------------------ reading
    async def state(self, request: web.Request) -> web.Response:
        runs, branches, configs = await asyncio.to_thread(
            lambda: (self.views.runs(), self.views.branches(), self.views.configs()))
        project = self.views.project
        return web.json_response({
            "project": {"root": str(project.root), "name": project.root.name, "skill": self.views.store.skill_path,
                        "branch": self.views.store.branch,
                        "config": configs[0] if project.config_path is not None and configs else None},
            "configs": configs, "runs": runs, "branches": branches,
            "jobs": [j.summary() for j in sorted(self.jobs.jobs.values(), key=lambda j: j.started)]},
            dumps=_dumps)

    async def run(self, request: web.Request) -> web.Response:
        run = request.match_info["run"]
        try:
            detail = await asyncio.to_thread(self.views.run, run)
        except SkillgitError as exc:
            detail = {"progress": None, "decisions": [], "error": exc.message, "hint": exc.hint}
            if not self.jobs.of_run(run):
                return _error(exc, 404)
        detail["jobs"] = [j.detail() for j in self.jobs.of_run(run)]
        return web.json_response(detail, dumps=_dumps)

    async def job(self, request: web.Request) -> web.Response:
        try:
            return web.json_response(self.jobs.get(request.match_info["job"]).detail(), dumps=_dumps)
        except SkillgitError as exc:
            return _error(exc, 404)

    # ------------------------------------------------------------------------------------------ changing
    async def _body(self, request: web.Request) -> Any:
        try:
            return await request.json()
        except ValueError:
            raise SkillgitError("the request body is not JSON", "send a JSON object") from None

    async def start(self, request: web.Request) -> web.Response:
        try:
            body = await self._body(request)
            configs = await asyncio.to_thread(self.views.configs)
            start = StartRequest.from_dict(body, configs)
            if self.closing:
                return _error(SkillgitError("the dashboard is stopping", "start the run after restarting it"), 409)
            if start.run is not None and any(j.run == start.run for j in self.jobs.running()):
                return _error(SkillgitError(f"run {start.run} is already running here", "stop it first"), 409)
            job = self.jobs.start(start)
        except SkillgitError as exc:
            return _error(exc)
        self.hub.publish("jobstate", job.summary())
        return web.json_response(job.summary(), status=201, dumps=_dumps)

    async def stop(self, request: web.Request) -> web.Response:
        try:
            body = await self._body(request) if request.can_read_body else {}
            job_id = request.match_info["job"]
            self.jobs.get(job_id)
            job = self.jobs.stop(job_id, force=bool(isinstance(body, dict) and body.get("force")))
        except SkillgitError as exc:
            return _error(exc, 404 if exc.message.startswith("unknown job") else 409)
        self.hub.publish("jobstate", job.summary())
        return web.json_response(job.summary(), dumps=_dumps)

    # ------------------------------------------------------------------------------------------ streaming
    async def events(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"})
        await response.prepare(request)
        queue: asyncio.Queue = asyncio.Queue(QUEUE_MAX)
        self.hub.queues.add(queue)
        try:
            await response.write(b"retry: 1000\nevent: hello\ndata: {}\n\n")
            while True:
                try:
                    message = await asyncio.wait_for(queue.get(), KEEPALIVE_S)
                except asyncio.TimeoutError:
                    message = b": keep-alive\n\n"
                if message is None:
                    break
                await response.write(message)
        except ConnectionResetError:  # (the page went away)
            pass
        finally:
            self.hub.queues.discard(queue)
        return response

    def publish(self, updates: list[Update]) -> None:
        for u in updates:
            if u.kind == "state":
                self.hub.publish("jobstate", u.data)
            else:
                job = self.jobs.jobs.get(u.job)
                self.hub.publish("job", {"job": u.job, "run": job.run if job else None, "seq": u.seq,
                                         "kind": u.kind, "data": u.data})

    async def ticker(self) -> None:
        n = 0
        while True:
            try:
                self.publish(self.jobs.poll())
            except OSError as exc:  # (a job's folder unwritable, the disk full: the page shows it; try again)
                self.hub.publish("notice", {"message": f"the dashboard could not follow its jobs: {exc}"})
            n += 1
            if n % REFS_EVERY == 0 and await asyncio.to_thread(self.watch.changed):
                self.hub.publish("repo", {})
            await asyncio.sleep(TICK_S)


def _dumps(data: Any) -> str:
    """Every JSON body and event the page reads: each string escaped by `textsafe.shown_data` (see the module
    contract; `textsafe.shown_json` walks the data only when its JSON holds something to escape). The one way data
    leaves the server, so no page code has to remember it."""
    return shown_json(data)


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1 (`port` 0: a free one)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        raise SkillgitError(f"cannot listen on 127.0.0.1:{port} ({exc.strerror})",
                            "pick another --port, or leave it out for a free one") from None
    sock.listen(64)
    sock.setblocking(False)
    return sock


async def serve(dashboard: Dashboard, sock: socket.socket, ready: Callable[[], None], stop: asyncio.Event,
                hurry: threading.Event, grace_s: float,
                stopping: Callable[[list[Job]], None] = lambda jobs: None) -> list[Ending]:
    """Serve on `sock` until `stop` is set; then close the streams and stop the jobs (`Jobs.shutdown`: SIGINT, up
    to `grace_s` for them to save, unless `hurry` is set), after telling `stopping` which jobs run. Returns how
    each job that was running ended (`Jobs.ending`)."""
    runner = web.AppRunner(dashboard.app(), access_log=None, handle_signals=False, shutdown_timeout=2.0)
    await runner.setup()
    site = web.SockSite(runner, sock)
    await site.start()
    ticker = asyncio.create_task(dashboard.ticker())
    ready()
    try:
        await stop.wait()
    finally:
        dashboard.closing = True
        ticker.cancel()
        dashboard.hub.close()
        stopping(dashboard.jobs.running())
        stopped = await asyncio.to_thread(dashboard.jobs.shutdown, grace_s, hurry)
        await runner.cleanup()
    return [dashboard.jobs.ending(j) for j in stopped]

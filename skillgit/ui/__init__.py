"""`skillgit ui`: a live dashboard on 127.0.0.1 for one project — its runs and branches, a running run as it works
(stage, progress, val curve, decisions as they land, cost), any run's report, and starting, stopping and resuming
runs with a chosen config and budget.

Modules: `guard` (who may talk to it: Host, token, writes; pure), `jobs` (the `skillgit train` children it starts
and follows through their `--events` lines), `views` (what it reads from git, through the store's read API),
`server` (aiohttp routes and the Server-Sent Events stream), `page.html` (the page: one file, inline script and
style, nothing loaded from anywhere else).

Contract:
- It listens on 127.0.0.1 only, on a free port unless `port` is given, and prints one URL with a fresh random
  token (`http://127.0.0.1:PORT/?token=…`). Every request without that token is refused (403): the page, the
  event stream, each API route and each report (`guard`).
- The web library (aiohttp) is the optional extra `ui`; without it `serve` raises SkillgitError whose hint
  installs the extra's packages (`provenance.extra_hint`).
- Stopping the dashboard (Ctrl-C, TERM) stops the runs it started as Ctrl-C stops `skillgit train`: each saves and
  can be resumed (from the dashboard or with `skillgit train`). A second Ctrl-C kills them at once.
"""

from __future__ import annotations

import asyncio
import importlib.util
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from skillgit.errors import SkillgitError

EXTRA = "ui"
STATE_DIR = "skillgit/ui/jobs"  # under the repository's common git dir


def require_server() -> None:
    """SkillgitError (with the command that adds the extra) when the web library is not installed."""
    if importlib.util.find_spec("aiohttp") is None:
        from skillgit.provenance import extra_hint

        raise SkillgitError("`skillgit ui` needs the optional web server library (aiohttp), which is not installed",
                            f"add the `{EXTRA}` extra: {extra_hint(EXTRA)}")


@dataclass(frozen=True)
class Served:
    url: str
    port: int
    root: Path


def serve(repo: Path | None, config: Path | None, *, port: int = 0, token: str | None = None,
          ready: Callable[[Served], None] = lambda s: None, grace_s: float = 30.0) -> list[str]:
    """Serve the dashboard of the project at `repo` until SIGINT/SIGTERM/SIGHUP; returns the ids of the jobs it
    stopped on the way out. `ready` is called once it accepts connections."""
    require_server()
    from skillgit.project import open_project
    from skillgit.store import Store
    from skillgit.ui import guard, server
    from skillgit.ui.jobs import Jobs
    from skillgit.ui.views import Views

    project = open_project(repo, config)
    store = Store.open(project.root, project.config.skill.path, project.config.skill.branch)
    jobs = Jobs(project.root, store.git_dir / STATE_DIR)
    jobs.load()
    sock = server.bind(port)
    bound = sock.getsockname()[1]
    secret = token or guard.new_token()
    dashboard = server.Dashboard(Views(project, store), jobs, guard.Guard(secret, bound))
    served = Served(f"http://127.0.0.1:{bound}/?token={secret}", bound, project.root)

    async def main() -> list[str]:
        stop = asyncio.Event()
        hurry = threading.Event()
        loop = asyncio.get_running_loop()

        def on_signal() -> None:
            if stop.is_set():
                hurry.set()  # a second Ctrl-C: do not wait for the runs to save
            stop.set()

        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, on_signal)
        return await server.serve(dashboard, sock, lambda: ready(served), stop, hurry, grace_s)

    try:
        return asyncio.run(main())
    finally:
        sock.close()

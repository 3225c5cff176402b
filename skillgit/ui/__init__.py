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
- The runs are children in sessions of their own, so a dashboard that dies (kill -9, a crash) leaves them running;
  the next dashboard of the project adopts them. What the person is told (`adopted_lines` at the start,
  `stopping_line` and `ending_lines` at the stop) names each run still going on, its pid, and how to see it
  (`skillgit status --run RUN`) and stop it from a shell (`kill -INT PID`: it saves, as Ctrl-C).
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
from skillgit.ui.jobs import Ending, Job

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
    adopted: tuple[Job, ...] = ()  # runs an earlier dashboard started that are still running


def serve(repo: Path | None, config: Path | None, *, port: int = 0, token: str | None = None,
          ready: Callable[[Served], None] = lambda s: None, grace_s: float = 30.0,
          stopping: Callable[[list[Job]], None] = lambda jobs: None) -> list[Ending]:
    """Serve the dashboard of the project at `repo` until SIGINT/SIGTERM/SIGHUP; returns how each job that was
    running then ended. `ready` is called once it accepts connections, `stopping` with the running jobs when it
    starts to stop them."""
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
    served = Served(f"http://127.0.0.1:{bound}/?token={secret}", bound, project.root, tuple(jobs.running()))

    async def main() -> list[Ending]:
        stop = asyncio.Event()
        hurry = threading.Event()
        loop = asyncio.get_running_loop()

        def on_signal() -> None:
            if stop.is_set():
                hurry.set()  # a second Ctrl-C: do not wait for the runs to save
            stop.set()

        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, on_signal)
        return await server.serve(dashboard, sock, lambda: ready(served), stop, hurry, grace_s, stopping)

    try:
        return asyncio.run(main())
    finally:
        sock.close()


# ---------------------------------------------------------------------------------------------- what the person is told
def _name(job: Job) -> str:
    return f"run {job.run}" if job.run else f"job {job.id} (its run had not started)"


def _reach(run: str | None, pid: int) -> str:
    see = f"see it with `skillgit status --run {run}`; " if run else ""
    return f"{see}stop it with `kill -INT {pid}` (it saves, as Ctrl-C does)"


def adopted_lines(jobs: tuple[Job, ...] | list[Job]) -> list[str]:
    """What to say at the start about runs an earlier dashboard started that are still running."""
    if not jobs:
        return []
    return [f"{len(jobs)} run(s) started by an earlier dashboard still running (it had stopped without stopping "
            "them); this dashboard follows them, and Stop in the page or Ctrl-C here stops them:",
            *(f"  {_name(j)} (pid {j.pid}): {_reach(j.run, j.pid)}" for j in jobs)]


def stopping_line(jobs: list[Job], grace_s: float) -> str:
    """What to say when the dashboard starts to stop its running jobs ('' when none runs)."""
    if not jobs:
        return ""
    names = ", ".join(f"{_name(j)} (pid {j.pid})" for j in jobs)
    return (f"stopping {len(jobs)} run(s): {names}; each saves at its next safe point (up to {grace_s:g} s, then it "
            "is killed; Ctrl-C again kills now)")


def ending_lines(endings: list[Ending]) -> list[str]:
    """How each run the dashboard stopped ended, and for a run still going on how to see and stop it."""
    lines = []
    for e in endings:
        name = f"run {e.run}" if e.run else f"job {e.job}"
        resume = f"resume it from the dashboard or with `skillgit train --run {e.run}`" if e.run else ""
        if e.how == "running":
            lines.append(f"{name} (pid {e.pid}) is STILL RUNNING: it could not be stopped and goes on without the "
                         f"dashboard; {_reach(e.run, e.pid)}, or start `skillgit ui` again to follow it")
        elif e.how == "saved":
            lines.append(f"{name}: stopped and saved (exit 130)" + (f"; {resume}" if resume else ""))
        elif e.how == "killed":
            lines.append(f"{name}: killed before it could save (its decided steps are in git)"
                         + (f"; {resume}" if resume else ""))
        elif e.how == "stopped":
            see = f"; `skillgit status --run {e.run}` shows where it saved" if e.run else ""
            lines.append(f"{name}: stopped (an earlier dashboard's run: its exit code is not known here){see}")
        else:
            lines.append(f"{name}: ended (exit {e.exit_code})")
    return lines

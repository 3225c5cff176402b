"""`skillgit ui` without a browser: the guard (token, Host, writes, no CORS) against the real server over HTTP, the
start request's validation, the jobs' event tailing, stopping the dashboard (its runs save and are resumable),
and a restarted dashboard adopting a run an earlier one started. The browser test is tests/test_ui_browser.py."""

from __future__ import annotations

import http.client
import importlib.util
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from skillgit.errors import SkillgitError
from skillgit.ui import guard as G
from skillgit.ui.jobs import EVENTS_FILE, Job, Jobs, StartRequest
from tests.conftest import run_cli, run_cli_inproc
from tests.helpers import demo_project
from tests.test_json_docs import check, table

HAVE_SERVER = importlib.util.find_spec("aiohttp") is not None
needs_server = pytest.mark.skipif(not HAVE_SERVER, reason="the `ui` extra (aiohttp) is not installed")
SLOW = "model.simulated.latency_s=0.05"  # simulated calls take this long: a step lasts long enough to stop it


# ---------------------------------------------------------------------------------------------- helpers
@pytest.fixture(scope="module")
def demo_template(tmp_path_factory) -> Path:
    """A demo project with one finished run (`demo-seed0`), made once per module by the real CLI."""
    folder = tmp_path_factory.mktemp("ui-demo") / "project"
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "HOME": str(folder.parent)}
    done = run_cli("demo", "--dir", str(folder), "--steps", "1", cwd=folder.parent, env=env)
    assert done.returncode == 0, done.stderr
    return folder


@pytest.fixture
def demo(demo_template, tmp_path) -> Path:
    """A private copy of the demo project (tests that start runs change it)."""
    folder = tmp_path / "project"
    shutil.copytree(demo_template, folder, symlinks=True)
    return folder


@dataclass
class Server:
    proc: subprocess.Popen
    url: str
    port: int
    token: str

    def request(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
                token: str | None = None, token_in: str = "query") -> tuple[int, dict[str, str], bytes]:
        """One HTTP request; the token (default: the right one) goes in the query or the header."""
        token = self.token if token is None else token
        headers = dict(headers or {})
        if token and token_in == "query":
            path += ("&" if "?" in path else "?") + f"token={token}"
        elif token and token_in == "header":
            headers[G.TOKEN_HEADER] = token
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers.setdefault("Content-Type", "application/json")
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
        finally:
            conn.close()

    def api(self, method: str, path: str, body: Any = None) -> Any:
        status, _, data = self.request(method, path, body, token_in="header")
        assert status < 300, (status, data)
        return json.loads(data)


@contextmanager
def ui_server(project: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[Server]:
    """The real `skillgit ui` on `project` (`env`: its environment, default this one's) until the block ends,
    then stopped as Ctrl-C stops it."""
    proc = subprocess.Popen([sys.executable, "-m", "skillgit", "ui", "-C", str(project), *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline() if proc.stdout else ""), daemon=True).start()
    try:
        url = lines.get(timeout=60).strip()
    except queue.Empty:
        proc.kill()
        raise AssertionError(f"skillgit ui printed no URL: {proc.stderr.read() if proc.stderr else ''}") from None
    match = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]{40,})", url)
    assert match, (url, proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
    server = Server(proc, url, int(match.group(1)), match.group(2))
    try:
        yield server
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


class EventStream:
    """The dashboard's Server-Sent Events, read in a thread into a queue of (event, data)."""

    def __init__(self, server: Server):
        self.conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        self.conn.request("GET", f"/api/events?token={server.token}")
        self.resp = self.conn.getresponse()
        assert self.resp.status == 200
        assert self.resp.getheader("Content-Type", "").startswith("text/event-stream")
        self.messages: queue.Queue[tuple[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        name, data = "message", ""
        try:
            for raw in self.resp:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    data = line[6:]
                elif not line and data:
                    self.messages.put((name, json.loads(data)))
                    name, data = "message", ""
        except (OSError, ValueError, AttributeError, http.client.HTTPException):  # (closed under it)
            pass

    def wait(self, match, timeout: float = 120.0, what: str = "") -> Any:
        deadline = time.monotonic() + timeout
        seen = []
        while time.monotonic() < deadline:
            try:
                name, data = self.messages.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            seen.append(name)
            if match(name, data):
                return data
        raise AssertionError(f"no {what} in the event stream within {timeout}s (saw {seen[-20:]})")

    def close(self) -> None:
        self.conn.close()


def job_event(kind: str, **fields: Any):
    return lambda name, d: name == "job" and d["kind"] == "event" and d["data"].get("event") == kind and \
        all(d["data"].get(k) == v for k, v in fields.items())


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------- the guard (pure)
GUARD = G.Guard("s3cret-token", 8765)
GOOD = {"host": "127.0.0.1:8765", "token_query": "s3cret-token"}


@pytest.mark.parametrize(("request_", "refused"), [
    (G.Request("GET", **GOOD), False),
    (G.Request("GET", "localhost:8765", token_header="s3cret-token"), False),
    (G.Request("GET", "127.0.0.1:8765"), True),  # no token
    (G.Request("GET", "127.0.0.1:8765", token_query="s3cret-tokeN"), True),  # wrong token
    (G.Request("GET", "127.0.0.1:8765", token_query="s3cret-token-and-more"), True),
    (G.Request("GET", "attacker.example:8765", token_query="s3cret-token"), True),  # DNS rebinding
    (G.Request("GET", "127.0.0.1:9999", token_query="s3cret-token"), True),  # another port's page
    (G.Request("GET", "", token_query="s3cret-token"), True),  # no Host header
    (G.Request("POST", **GOOD, content_type="application/json"), True),  # a write with the token in the URL only
    (G.Request("POST", "127.0.0.1:8765", token_header="s3cret-token", content_type="application/json"), False),
    (G.Request("POST", "127.0.0.1:8765", token_header="s3cret-token", content_type="text/plain"), True),
    (G.Request("POST", "127.0.0.1:8765", token_header="s3cret-token", content_type="application/json",
               origin="http://attacker.example"), True),
    (G.Request("POST", "127.0.0.1:8765", token_header="s3cret-token", content_type="application/json",
               origin="http://127.0.0.1:8765"), False),
])
def test_the_guard_answers_only_local_hosts_with_the_token(request_, refused):
    assert (GUARD.refuse(request_) is not None) is refused


# ---------------------------------------------------------------------------------------------- requests (pure)
def test_a_start_request_is_validated_and_every_value_is_one_argv_word(tmp_path):
    configs = ["skillgit.yaml", "configs/searchqa/default.yaml"]
    req = StartRequest.from_dict({"config": "configs/searchqa/default.yaml", "steps": "12", "max_cost_usd": 0.5,
                                  "branch": "review/x", "new": True,
                                  "overrides": ["optimizer.learning_rate=3", "  skill.path=My Skill.md "]}, configs)
    argv = req.argv(tmp_path, "/py")
    assert argv[:4] == ["/py", "-m", "skillgit", "train"]
    assert f"--config={tmp_path / 'configs/searchqa/default.yaml'}" in argv and "--new" in argv
    assert "--set=train.max_steps=12" in argv and "--set=budget.max_cost_usd=0.5" in argv
    assert "--set=skill.path=My Skill.md" in argv and "--branch=review/x" in argv
    assert all(a.startswith(("-", "/py")) or a in ("skillgit", "train") for a in argv)  # no bare value words
    assert StartRequest.from_dict({"run": "demo-seed0"}, configs).argv(tmp_path, "/py")[-1] == "--run=demo-seed0"

    for bad, says in [({"config": "../elsewhere.yaml"}, "unknown config"), ({"run": "--upload-pack=x"}, "run id"),
                      ({"branch": "-x"}, "branch"), ({"steps": -1}, "positive"), ({"max_calls": "many"}, "number"),
                      ({"max_cost_usd": "inf"}, "positive"), ({"steps": float("inf")}, "finite"),
                      ({"max_calls": float("-inf")}, "finite"), ({"overrides": ["no-equals-sign"]}, "override"),
                      ({"overrides": ["a.b=1\x1b[2J"]}, "control"), ({"run": "r1", "new": True}, "both"),
                      ([1, 2], "JSON object")]:
        with pytest.raises(SkillgitError) as err:
            StartRequest.from_dict(bad, configs)
        assert says in str(err.value), (bad, str(err.value))


def test_a_job_follows_its_event_file_line_by_line(tmp_path):
    folder = tmp_path / "jobs" / "j1"
    folder.mkdir(parents=True)
    job = Job("j1", folder, StartRequest(), [], 0.0, 0, None)
    jobs = Jobs(tmp_path, tmp_path / "jobs")
    events = folder / EVENTS_FILE
    events.write_bytes(b'{"event": "run_start", "run": "r1", "resumed": false, "total_steps": 3}\n{"event": "prog')
    first = jobs._read(job)
    assert [u.kind for u in first] == ["event", "state"] and job.run == "r1"  # the run is learned from run_start
    with events.open("ab") as f:
        f.write(b'ress", "step": "1", "stage": "rollout", "done": 1, "total": 4}\n')
        f.write(b'{"event": "progress", "step": "1", "stage": "rollout", "done": 2, "total": 4}\n')
        f.write(b"error: the teacher failed\nhint: check the key\n")
    second = jobs._read(job)
    assert [(u.kind, u.seq) for u in second] == [("event", 2), ("event", 3), ("log", 4), ("log", 5)]
    assert job.latest["progress"]["done"] == 2 and [e["event"] for e in job.events] == ["run_start"]
    assert [line["text"] for line in job.log] == ["error: the teacher failed", "hint: check the key"]
    assert jobs._read(job) == []  # nothing new, nothing read again


def _fake_python(tmp_path: Path, then: str) -> Path:
    """A stand-in for `python -m skillgit train` (the seam: `Jobs(python=…)`) that starts a process which leaves
    its process group (setsid), writes that process's pid next to itself, then runs `then`."""
    script = tmp_path / "fake-python"
    script.write_text(f"#!/bin/sh\nsetsid sleep 300 &\necho $! > \"$0.child\"\n{then}\n")
    script.chmod(0o755)
    return script


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="the scope-id net needs /proc")
@pytest.mark.parametrize("how", ["force stop", "exit"])
def test_nothing_a_job_started_outlives_it_even_outside_its_process_group(tmp_path, how):
    script = _fake_python(tmp_path, "exec sleep 300" if how == "force stop" else "exit 0")
    jobs = Jobs(tmp_path, tmp_path / "jobs", python=str(script))
    job = jobs.start(StartRequest())
    child_file = Path(f"{script}.child")
    deadline = time.monotonic() + 30
    while not (child_file.exists() and child_file.read_text().strip()):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    child = int(child_file.read_text())
    while os.getpgid(child) == job.pid:  # (until setsid has run in it)
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert _alive(child)  # and it has left the job's process group
    try:
        if how == "force stop":
            jobs.stop(job.id, force=True)
        while job.state != "exited":
            assert time.monotonic() < deadline
            jobs.poll()
            time.sleep(0.05)
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child) and not _alive(job.pid)
    finally:  # (when it fails: leave nothing behind)
        if _alive(child):
            os.kill(child, signal.SIGKILL)
        if job.proc is not None:
            job.proc.kill()  # (a no-op once it was reaped: never another process)


def test_without_the_extra_skillgit_ui_says_which_packages_to_add(monkeypatch, cli_inproc, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "aiohttp" else real(name, *a))
    done = cli_inproc("ui", cwd=tmp_path)
    assert done.returncode == 2
    assert "aiohttp" in done.stderr and "pip install 'aiohttp>=3.9'" in done.stderr
    assert "skillgit[" not in done.stderr  # the extra's packages, never skillgit by a bare name


# ---------------------------------------------------------------------------------------------- the real server
ROUTES = [("GET", "/"), ("GET", "/api/state"), ("GET", "/api/events"), ("GET", "/api/runs/demo-seed0"),
          ("GET", "/api/jobs/x"), ("GET", "/runs/demo-seed0/report"), ("GET", "/no/such/route"),
          ("POST", "/api/jobs"), ("POST", "/api/jobs/x/stop"), ("OPTIONS", "/api/jobs"), ("DELETE", "/api/state")]


@needs_server
def test_every_route_refuses_a_request_without_the_token_or_from_another_host(demo_template):
    with ui_server(demo_template) as server:
        for method, path in ROUTES:
            body = {} if method == "POST" else None
            for token in ("", "wrong" + server.token):
                status, headers, data = server.request(method, path, body, token=token, token_in="header")
                assert status == 403, (method, path, token[:5], status, data[:200])
                assert not [h for h in headers if h.startswith("access-control-")]
            # the right token, but a page on another site that rebound its name to 127.0.0.1
            status, _, _ = server.request(method, path, body, token_in="header",
                                          headers={"Host": f"attacker.example:{server.port}"})
            assert status == 403, (method, path)
        # the token in the URL is not enough to change anything; nor is a form's content type or another origin
        assert server.request("POST", "/api/jobs", {}, token_in="query")[0] == 403
        assert server.request("POST", "/api/jobs", None, token_in="header",
                              headers={"Content-Type": "application/x-www-form-urlencoded"})[0] == 403
        assert server.request("POST", "/api/jobs", {}, token_in="header",
                              headers={"Origin": "http://attacker.example"})[0] == 403
        # with the token: answered, and still no CORS header even when an Origin is sent
        status, headers, _ = server.request("GET", "/api/state", headers={"Origin": "http://attacker.example"})
        assert status == 200 and not [h for h in headers if h.startswith("access-control-")]
        assert server.request("GET", "/api/state", headers={"Host": f"localhost:{server.port}"})[0] == 200


@needs_server
def test_the_page_state_and_report_are_served_self_contained(demo_template):
    with ui_server(demo_template) as server:
        status, headers, page = server.request("GET", "/")
        assert status == 200 and headers["content-type"].startswith("text/html")
        csp = headers["content-security-policy"]
        nonce = re.search(r"'nonce-([^']+)'", csp).group(1)
        assert "default-src 'none'" in csp and "connect-src 'self'" in csp
        html = page.decode()
        assert html.count(f'nonce="{nonce}"') == 2 and "{{NONCE}}" not in html
        # nothing to fetch from elsewhere: no src/href/url()/@import naming another host
        assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//|url\(|@import""", html, re.I)

        state = server.api("GET", "/api/state")
        assert [r["run"] for r in state["runs"]] == ["demo-seed0"]
        check(table("A **run row**"), state["runs"][0])  # docs/JSON.md's table, field by field
        assert state["runs"][0]["status"] == "finished" and state["runs"][0]["step"] == 1
        assert state["branches"][0] == {**state["branches"][0], "name": "main", "skill": True}
        assert state["configs"] == ["skillgit.yaml"] and state["project"]["config"] == "skillgit.yaml"
        run = server.api("GET", "/api/runs/demo-seed0")
        assert [d["step"] for d in run["decisions"]] == ["1"] and run["progress"]["status"] == "finished"
        assert server.request("GET", "/api/runs/no-such-run", token_in="header")[0] == 404

        status, headers, report = server.request("GET", "/runs/demo-seed0/report")
        assert status == 200 and b"skillgit report" in report and b"demo-seed0" in report
        assert "script-src" not in headers["content-security-policy"]  # no script may run in a report
        assert headers["content-security-policy"].startswith("default-src 'none'")


def slow_job(server: Server) -> tuple[EventStream, dict]:
    """The dashboard's event stream (greeted) and a new 30-step run it started whose calls are slowed (`SLOW`)."""
    stream = EventStream(server)
    stream.wait(lambda n, d: n == "hello", 10, "hello")
    return stream, server.api("POST", "/api/jobs", {"new": True, "steps": 30, "overrides": [SLOW]})


@needs_server
@pytest.mark.slow
def test_stopping_the_dashboard_stops_its_run_which_saves_and_resumes(demo):
    with ui_server(demo) as server:
        stream, job = slow_job(server)
        started = stream.wait(job_event("run_start"), what="run_start")
        run = started["data"]["run"]
        stream.wait(job_event("step_end"), what="a decided step")
        server.proc.send_signal(signal.SIGINT)  # Ctrl-C on `skillgit ui`
        assert server.proc.wait(timeout=60) == 0
        stream.close()
    record = json.loads((demo / ".git/skillgit/ui/jobs" / job["id"] / "job.json").read_text())
    assert record["exit_code"] == 130 and record["run"] == run  # stopped as Ctrl-C stops `skillgit train`
    assert not _alive(job["pid"])
    status = json.loads(run_cli_inproc("status", "--run", run, "--json", cwd=demo).stdout)
    assert status["status"] == "interrupted" and status["step"] >= 1
    again = run_cli_inproc("train", "--run", run, "--set", "train.max_steps=2", cwd=demo)
    assert again.returncode == 0, again.stderr  # and it resumes


@needs_server
@pytest.mark.slow
def test_a_restarted_dashboard_adopts_the_run_an_earlier_one_started_and_stops_it(demo):
    with ui_server(demo) as first:
        stream, job = slow_job(first)
        stream.wait(job_event("step_end"), what="a decided step")
        stream.close()
        os.killpg(first.proc.pid, signal.SIGKILL)  # the dashboard dies; its run goes on (its own session)
        first.proc.wait()
    assert _alive(job["pid"])
    with ui_server(demo) as second:
        state = second.api("GET", "/api/state")
        adopted = next(j for j in state["jobs"] if j["id"] == job["id"])
        assert adopted["state"] == "running" and adopted["adopted"] is True and adopted["run"]
        detail = second.api("GET", f"/api/runs/{adopted['run']}")
        assert any(e["event"] == "step_end" for j in detail["jobs"] for e in j["events"])  # its events read back
        stream = EventStream(second)
        second.api("POST", f"/api/jobs/{job['id']}/stop", {})
        stream.wait(lambda n, d: n == "jobstate" and d["id"] == job["id"] and d["state"] == "exited", 60, "exit")
        stream.close()
        assert not _alive(job["pid"])
        assert second.api("GET", f"/api/runs/{adopted['run']}")["progress"]["status"] == "interrupted"


@needs_server
def test_open_without_a_browser_says_so(tmp_path):
    """What a newcomer met with `skillgit ui --open` on a machine without a browser — a server, a container, CI
    (wave 12): the dashboard served, printed its URL and said nothing of the browser it could not open, so the
    person waited for a window. Now it says so, and what to do (BROWSER names a program that does not exist:
    Python's `webbrowser` then finds no browser)."""
    root = demo_project(tmp_path / "p")
    env = {**os.environ, "BROWSER": str(tmp_path / "no-such-browser")}
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    with ui_server(root, "--open", env=env) as server:
        lines: queue.Queue[str] = queue.Queue()

        def read() -> None:
            for line in server.proc.stderr or ():
                lines.put(line)
            lines.put("")

        threading.Thread(target=read, daemon=True).start()
        said: list[str] = []
        while not any("--open:" in line for line in said):
            line = lines.get(timeout=60)
            if not line:
                break
            said.append(line)
    text = " ".join("".join(said).split())
    assert "skillgit ui: serving" in text, text
    assert "--open: no web browser could be started here; open the URL above in yours" in text, text

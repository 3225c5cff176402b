"""The training runs the dashboard starts, stops and resumes: each one a `python -m skillgit train` child.

Contract:
- `StartRequest.from_dict` turns what the page sent into a validated request, or raises SkillgitError naming the
  field and what is allowed: the config is one the dashboard listed (a path inside the repository), a run id and a
  branch name are checked as skillgit checks them, budgets are positive numbers, overrides are `key=value` as
  `--set` takes them. `argv()` spells every user-given value as one `--option=value` word after fixed options, so
  no value can be read as another option, and runs this same installation (`sys.executable -m skillgit`), never
  a `skillgit` found on PATH.
- `Jobs.start` spawns the child in its own session (process group = its pid) with a scope id of its own in
  `SKILLGIT_PROC_SCOPES`, recorded in the job's folder, as `skillgit.process` does for every command (so
  `process.kill_recorded` finds everything the run started, agents in their own sessions included), stdin
  closed, its stdout (`--json`: the result) and stderr (`--events`: one JSON event per line, plus any error/hint
  lines) appended to files in the job's folder `<git-dir>/skillgit/ui/jobs/<job>/`, and records the job
  (`job.json`: request, argv, pid and the pid's start time). The child never writes to the dashboard's
  own streams, so it outlives a dashboard that dies and a dashboard that restarts reads its record back.
- `Jobs.stop` is Ctrl-C: SIGINT to the child's process group, so the run stops at its next safe point, saves its
  progress as interrupted and exits 130; `train` on the same run (`Jobs.start` with `run=`) resumes it.
  `force=True` kills the group and everything carrying the job's scope id (`process.kill_recorded`; a killed run
  also resumes: every decided step is already in git). When a job exits, whatever it left carrying its scope id
  is killed the same way.
  A child of an earlier dashboard is signalled only after checking, through a pidfd opened first, that the pid
  still has the start time recorded for it (a reused pid is never signalled).
- `Jobs.poll` (called a few times a second by the server) reads what each job's files gained since the last call
  (no git: plain file reads of what the child appended) and notices exits; it returns the `Update`s to stream.
  Each job keeps its events (except `progress` and `heartbeat`, of which only the latest is kept), its non-JSON
  lines (`log`) and a line counter (`seq`) by which a page that re-reads a job drops what it already had.
- `Jobs.shutdown` stops every running job (SIGINT), waits up to a grace period for them to save and exit, then
  kills what is left; `Jobs.ending` says how each of them ended (saved, killed, exited, or still running when it
  could not be signalled), for the dashboard to tell the person which runs still go on and how to reach them.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from skillgit.errors import SkillgitError
from skillgit.process import RECORD_FILE, SCOPES_ENV, kill_group, kill_recorded
from skillgit.textsafe import shown

EVENTS_FILE = "events.jsonl"  # the child's stderr
RESULT_FILE = "result.json"  # the child's stdout
RECORD = "job.json"
LIVE_ONLY = ("progress", "heartbeat")  # events of which a job keeps only the latest
MAX_EVENTS = 5000  # kept per job (the oldest go first); the run's decisions are in git anyway
MAX_LOG = 500
MAX_LINE = 1 << 20  # a longer line without a newline is cut and shown as a log line
BUDGET_KEYS = {"steps": "train.max_steps", "max_calls": "budget.max_calls", "max_tokens": "budget.max_tokens",
               "max_cost_usd": "budget.max_cost_usd"}


@dataclass(frozen=True)
class StartRequest:
    config: str | None = None  # a config file, relative to the repository root
    run: str | None = None  # resume this run
    new: bool = False  # start a new run even if an unfinished one with the same config exists
    branch: str | None = None  # train onto this review branch
    budget: Mapping[str, float] = field(default_factory=dict)  # BUDGET_KEYS name → value
    overrides: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, data: Any, configs: list[str]) -> "StartRequest":
        from skillgit.store import refs as R

        if not isinstance(data, Mapping):
            raise SkillgitError("the request is not a JSON object", "send {\"config\": …, \"steps\": …}")
        config = data.get("config") or None
        if config is not None and config not in configs:  # (the page holds each path as the server sent it)
            config = {shown(c): c for c in configs}.get(str(config), config)
        if config is not None and config not in configs:
            raise SkillgitError(f"unknown config {str(config)[:200]!r}", f"choose one of: {', '.join(configs)}")
        run = data.get("run") or None
        if run is not None:
            R.validate_run(run)
        branch = data.get("branch") or None
        if branch is not None:
            R.check_branch(str(branch), "--branch")
            if str(branch).startswith("-"):
                raise SkillgitError(f"invalid branch name {branch!r}", "a branch name cannot begin with '-'")
        budget = _budget(data)
        overrides = _overrides(data.get("overrides") or [])
        if data.get("new") and run is not None:
            raise SkillgitError("both a run to resume and a new run were asked for", "choose one")
        return cls(config, run, bool(data.get("new")), branch, budget, tuple(overrides))

    def argv(self, root: Path, python: str = sys.executable) -> list[str]:
        argv = [python, "-m", "skillgit", "train", f"--repo={root}", "--events", "--json"]
        if self.config:
            argv.append(f"--config={root / self.config}")
        if self.run:
            argv.append(f"--run={self.run}")
        elif self.new:
            argv.append("--new")
        if self.branch:
            argv.append(f"--branch={self.branch}")
        for name, value in self.budget.items():
            argv.append(f"--set={BUDGET_KEYS[name]}={value}")
        argv += [f"--set={item}" for item in self.overrides]
        return argv

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.config, "run": self.run, "new": self.new, "branch": self.branch,
                **dict(self.budget), "overrides": list(self.overrides)}


def _budget(data: Mapping[str, Any]) -> dict[str, float]:
    """The request's budget limits (`BUDGET_KEYS`): positive finite numbers; empty ones are no limit."""
    budget: dict[str, float] = {}
    for name in BUDGET_KEYS:
        value = data.get(name)
        if value is None or value == "":
            continue
        try:
            number = float(value) if name == "max_cost_usd" else int(value)
        except (TypeError, ValueError):
            raise SkillgitError(f"{name} must be a number, got {str(value)[:40]!r}",
                                f"give a positive number or leave {name} empty") from None
        except OverflowError:  # JSON's Infinity for a count (int(inf)): a clear error, not a crashed request
            raise SkillgitError(f"{name} must be finite, got {value}", f"leave {name} empty for no limit") from None
        if not number > 0 or number != number or number == float("inf"):
            raise SkillgitError(f"{name} must be positive, got {value}", f"leave {name} empty for no limit")
        budget[name] = number
    return budget


def _overrides(raw: Any) -> list[str]:
    """The request's config overrides (a list, or one key=value a line), each checked as `--set` would be."""
    from skillgit.config_yaml import split_override

    if isinstance(raw, str):
        raw = [line for line in raw.splitlines() if line.strip()]
    if not isinstance(raw, list) or not all(isinstance(o, str) for o in raw):
        raise SkillgitError("overrides must be a list of key=value strings", "e.g. [\"train.batch_size=20\"]")
    overrides = []
    for item in raw:
        item = item.strip()
        if any(ord(c) < 32 for c in item):
            raise SkillgitError(f"override {item[:80]!r} contains a control character", "one key=value a line")
        split_override(item)  # ConfigError naming the key when it is not key=value
        overrides.append(item)
    return overrides


@dataclass(frozen=True)
class Update:
    """Something to stream: a job's event or log line (`kind` "event" | "log", with its `seq`), or its new state."""

    kind: str  # event | log | state
    job: str
    seq: int = 0
    data: Any = None


@dataclass(frozen=True)
class Ending:
    """How a job ended when the dashboard stopped (`Jobs.ending`). `how`: `saved` (exit 130, as Ctrl-C leaves
    `skillgit train`: resumable), `killed` (after the grace period or a second Ctrl-C; its decided steps are in
    git, resumable too), `stopped` (an earlier dashboard's child: it exited after the stop, with a code only its
    parent could read), `exited` (with `exit_code`) or `running` (it could not be stopped: it goes on without the
    dashboard)."""

    job: str
    run: str | None
    pid: int
    how: str
    exit_code: int | None = None


@dataclass
class Job:
    id: str
    folder: Path
    request: StartRequest
    argv: list[str]
    started: float
    pid: int
    pid_start: int | None
    run: str | None = None
    state: str = "running"  # running | stopping | exited
    exit_code: int | None = None
    ended: float | None = None
    stop_asked: float | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    latest: dict[str, dict[str, Any]] = field(default_factory=dict)  # LIVE_ONLY kind → its latest event
    log: list[dict[str, Any]] = field(default_factory=list)  # {seq, text}
    seq: int = 0
    offset: int = 0
    partial: bytes = b""
    proc: subprocess.Popen | None = None  # None: started by an earlier dashboard (adopted)
    killed: bool = False  # SIGKILLed by this dashboard (`Jobs._kill`)

    def summary(self) -> dict[str, Any]:
        return {"id": self.id, "run": self.run, "state": self.state, "exit_code": self.exit_code,
                "started": self.started, "ended": self.ended, "pid": self.pid, "request": self.request.to_dict(),
                "argv": self.argv[1:], "adopted": self.proc is None, "seq": self.seq}

    def detail(self) -> dict[str, Any]:
        return {**self.summary(), "events": self.events, "latest": self.latest, "log": self.log}

    def record(self) -> dict[str, Any]:
        return {"id": self.id, "request": self.request.to_dict(), "argv": self.argv, "started": self.started,
                "pid": self.pid, "pid_start": self.pid_start, "run": self.run, "state": self.state,
                "exit_code": self.exit_code, "ended": self.ended}


def _start_ticks(pid: int) -> int | None:
    """The start time of process `pid` (clock ticks since boot, /proc), None when it is gone or unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return None if fields[0] in (b"Z", b"X") else int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(tmp, path)


class Jobs:
    def __init__(self, root: Path, folder: Path, python: str = sys.executable):
        self.root = root
        self.folder = folder
        self.python = python
        self.jobs: dict[str, Job] = {}

    # ------------------------------------------------------------------------------------------ records
    def load(self) -> None:
        """Read back the jobs earlier dashboards recorded (newest 200); a still-running one is adopted."""
        if not self.folder.is_dir():
            return
        for entry in sorted(self.folder.iterdir())[-200:]:
            try:
                data = json.loads((entry / RECORD).read_text(encoding="utf-8"))
                job = Job(str(data["id"]), entry, StartRequest(**_request_fields(data.get("request") or {})),
                          [str(a) for a in data.get("argv") or []], float(data.get("started") or 0),
                          int(data.get("pid") or 0), data.get("pid_start"), data.get("run"),
                          str(data.get("state") or "exited"), data.get("exit_code"), data.get("ended"))
            except (OSError, ValueError, TypeError, KeyError):
                continue
            if job.id != entry.name:
                continue
            if job.state != "exited" and not self._alive(job):
                job.state, job.ended = "exited", job.ended or time.time()
            self._read(job)
            self.jobs[job.id] = job

    def _save(self, job: Job) -> None:
        _write_json(job.folder / RECORD, job.record())

    # ------------------------------------------------------------------------------------------ start / stop
    def start(self, request: StartRequest) -> Job:
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        job_id = time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)
        folder = self.folder / job_id
        folder.mkdir(mode=0o700)
        argv = request.argv(self.root, self.python)
        scope = secrets.token_hex(16)
        with open(folder / RECORD_FILE, "a", encoding="utf-8") as record:
            record.write(json.dumps({"id": scope, "cgroup": None, "owner": os.getpid()}) + "\n")
        scopes = [i for i in os.environ.get(SCOPES_ENV, "").split(",") if i] + [scope]
        env = {**os.environ, SCOPES_ENV: ",".join(scopes), "PYTHONUNBUFFERED": "1", "NO_COLOR": "1", "TERM": "dumb"}
        try:
            with open(folder / EVENTS_FILE, "ab") as err, open(folder / RESULT_FILE, "ab") as out:
                proc = subprocess.Popen(argv, cwd=self.root, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=err, start_new_session=True)
        except OSError as exc:
            raise SkillgitError(f"could not start {argv[0]} ({exc.strerror})",
                                "check that the Python running skillgit still exists") from None
        job = Job(job_id, folder, request, argv, time.time(), proc.pid, _start_ticks(proc.pid), request.run,
                  proc=proc)
        self.jobs[job_id] = job
        self._save(job)
        return job

    def stop(self, job_id: str, force: bool = False) -> Job:
        job = self.get(job_id)
        if job.state == "exited":
            raise SkillgitError(f"job {job_id} has already exited", "resume its run instead")
        if force:
            self._kill(job)
        elif job.proc is not None:
            if job.proc.poll() is None:
                kill_group(job.pid, signal.SIGINT)  # (not reaped yet: the pid, and so the group id, is still ours)
        elif not self._signal_adopted(job, signal.SIGINT):
            raise SkillgitError(f"job {job_id} cannot be signalled (its process is gone or not the one recorded)",
                                "reload the page")
        job.state, job.stop_asked = "stopping", job.stop_asked or time.time()
        self._save(job)
        return job

    def _kill(self, job: Job) -> None:
        """SIGKILL the job's group (while its pid is provably the job's) and everything carrying its scope id."""
        job.killed = True
        if job.proc is not None and job.proc.poll() is None:
            kill_group(job.pid, signal.SIGKILL)
        elif job.proc is None:
            self._signal_adopted(job, signal.SIGKILL)
        kill_recorded(job.folder)

    def _signal_adopted(self, job: Job, sig: int) -> bool:
        if job.pid_start is None or job.pid <= 1:
            return False
        fd = None
        try:
            fd = os.pidfd_open(job.pid) if hasattr(os, "pidfd_open") else None
        except OSError:
            return False
        try:
            if _start_ticks(job.pid) != job.pid_start:
                return False
            if fd is not None:
                signal.pidfd_send_signal(fd, sig)
            else:
                os.kill(job.pid, sig)
            return True
        except OSError:
            return False
        finally:
            if fd is not None:
                os.close(fd)

    def get(self, job_id: str) -> Job:
        job = self.jobs.get(job_id)
        if job is None:
            raise SkillgitError(f"unknown job {job_id[:80]!r}", "reload the page")
        return job

    def running(self) -> list[Job]:
        return [j for j in self.jobs.values() if j.state != "exited"]

    def of_run(self, run: str) -> list[Job]:
        return sorted((j for j in self.jobs.values() if j.run == run), key=lambda j: j.started)

    # ------------------------------------------------------------------------------------------ following
    def _alive(self, job: Job) -> bool:
        if job.proc is not None:
            return job.proc.poll() is None
        return job.pid_start is not None and _start_ticks(job.pid) == job.pid_start

    def poll(self) -> list[Update]:
        updates: list[Update] = []
        for job in self.running():
            alive = self._alive(job)
            updates += self._read(job)  # (after the exit check: what it wrote before exiting is read now)
            if not alive:
                kill_recorded(job.folder)  # whatever it left running (nothing, normally)
                job.state, job.ended = "exited", time.time()
                job.exit_code = job.proc.returncode if job.proc is not None else None
                if job.partial:
                    updates += self._line(job, job.partial)
                    job.partial = b""
                self._save(job)
                updates.append(Update("state", job.id, job.seq, job.summary()))
        return updates

    def _read(self, job: Job) -> list[Update]:
        try:
            with open(job.folder / EVENTS_FILE, "rb") as f:
                f.seek(job.offset)
                chunk = f.read()
        except OSError:
            return []
        if not chunk:
            return []
        job.offset += len(chunk)
        data = job.partial + chunk
        *lines, job.partial = data.split(b"\n")
        if len(job.partial) > MAX_LINE:
            lines.append(job.partial)
            job.partial = b""
        out: list[Update] = []
        for line in lines:
            out += self._line(job, line)
        return out

    def _line(self, job: Job, raw: bytes) -> list[Update]:
        text = raw.decode("utf-8", "replace").rstrip("\r")
        if not text.strip():
            return []
        job.seq += 1
        event: Any = None
        if text.startswith("{"):
            try:
                event = json.loads(text)
            except ValueError:
                event = None
        if isinstance(event, dict) and isinstance(event.get("event"), str):
            kind = event["event"]
            if kind in LIVE_ONLY:
                job.latest[kind] = {**event, "seq": job.seq}
            else:
                job.events.append({**event, "seq": job.seq})
                del job.events[:-MAX_EVENTS]
            out = [Update("event", job.id, job.seq, event)]
            if kind == "run_start" and isinstance(event.get("run"), str) and job.run != event["run"]:
                job.run = event["run"]
                self._save(job)
                out.append(Update("state", job.id, job.seq, job.summary()))
            return out
        job.log.append({"seq": job.seq, "text": text[:4000]})
        del job.log[:-MAX_LOG]
        return [Update("log", job.id, job.seq, text[:4000])]

    # ------------------------------------------------------------------------------------------ the end
    def shutdown(self, grace_s: float = 30.0, hurry: threading.Event | None = None) -> list[Job]:
        """Stop every running job (SIGINT), wait up to `grace_s` (or until `hurry` is set) for them to exit, kill
        what is left. Returns every job that was running (`ending` says how each ended)."""
        running = self.running()
        stopped = []
        for job in running:
            try:
                self.stop(job.id)
                stopped.append(job)
            except SkillgitError:
                continue
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(self._alive(j) for j in stopped) and \
                not (hurry is not None and hurry.is_set()):
            time.sleep(0.1)
        for job in stopped:
            if self._alive(job):
                self._kill(job)
            if job.proc is not None:
                try:
                    job.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
        self.poll()
        return running

    def ending(self, job: Job) -> Ending:
        """How `job` ended (see `Ending`); a job still alive is `running`, whatever was tried."""
        if self._alive(job):
            return Ending(job.id, job.run, job.pid, "running")
        if job.killed:
            return Ending(job.id, job.run, job.pid, "killed", job.exit_code)
        if job.exit_code is None:
            return Ending(job.id, job.run, job.pid, "stopped")
        return Ending(job.id, job.run, job.pid, "saved" if job.exit_code == 130 else "exited", job.exit_code)


def _request_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    """A recorded request back as StartRequest's fields (what an older record lacks takes its default)."""
    return {"config": data.get("config"), "run": data.get("run"), "new": bool(data.get("new")),
            "branch": data.get("branch"),
            "budget": {k: data[k] for k in BUDGET_KEYS if isinstance(data.get(k), (int, float))},
            "overrides": tuple(str(o) for o in data.get("overrides") or ())}

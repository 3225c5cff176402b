"""skillgit/process.py: nothing a command started outlives `run` (after a normal exit, at the timeout even when
TERM is ignored, and when the caller is interrupted while waiting) — also a daemon that left the process group by
double fork + setsid (issue 19.3), found by each net alone, and after a kill -9 of skillgit through its record."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skillgit import process


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie child of init still answers kill(0); read its state where /proc exists
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def _pid(path: Path) -> int:
    deadline = time.monotonic() + 5
    while not (path.exists() and path.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return int(path.read_text())


pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups are POSIX")


def test_a_background_child_is_killed_when_the_command_exits(tmp_path):
    done = process.run("sleep 60 >/dev/null 2>&1 & echo $! > child; echo hi", shell=True, cwd=tmp_path, env=os.environ,
                       timeout_s=10)
    assert (done.returncode, done.stdout.strip(), done.timed_out) == (0, "hi", False)
    assert _gone(_pid(tmp_path / "child"))


def test_a_timeout_kills_the_group_even_when_it_ignores_term(tmp_path):
    script = "trap '' TERM; sleep 60 & echo $! > child; wait"
    done = process.run(["sh", "-c", script], cwd=tmp_path, env=os.environ, timeout_s=0.5, kill_grace_s=0.1)
    assert done.timed_out and done.returncode < 0
    assert _gone(_pid(tmp_path / "child"))


def test_an_interrupt_while_waiting_leaves_nothing_behind(tmp_path):
    def interrupt(*_):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            process.run("sleep 60 & echo $! > child; wait", shell=True, cwd=tmp_path, env=os.environ,
                        timeout_s=30)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert _gone(_pid(tmp_path / "child"))


def test_stdin_is_passed_and_undecodable_output_is_replaced(tmp_path):
    echo = "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read() + b'\\xff')"
    done = process.run([sys.executable, "-c", echo], cwd=tmp_path, env=os.environ, timeout_s=10, stdin="é")
    assert done.stdout == "é\ufffd"
    assert process.tail("a\nb\nc" * 2000, 10).startswith("[…]\n")


# ---------------------------------------------------------------------------------------------- issue 19.3: setsid
DAEMONIZE = Path(__file__).parent / "agents" / "daemonize.py"
linux_only = pytest.mark.skipif(not process._proc_readable(), reason="the scope id net needs /proc (Linux)")
needs_cgroup = pytest.mark.skipif(process._cgroup_base()[0] is None, reason="no cgroup v2 this process may use")


def _pids(pid_dir: Path, kind: str = "") -> list[int]:
    """Pids that daemonize.py wrote to `pid_dir` (`kind`: "daemon" or "leader", default both)."""
    return [int(f.name.rsplit("-", 1)[1].removesuffix(".pid")) for f in pid_dir.glob("*.pid") if f"-{kind}" in f.name]


@pytest.fixture
def pid_dir(tmp_path):
    """A folder for daemonize.py's pid files; whatever they name is killed after the test (a failed test must not
    leave daemons on the machine)."""
    folder = tmp_path / "pids"
    folder.mkdir()
    yield folder
    for pid in _pids(folder):
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(params=["cgroup", "environment"])
def net(request, monkeypatch):
    """Each test twice: with the cgroup net where this machine has one, and with the scope id in the environment
    alone (SKILLGIT_PROC_CGROUP=0): each net must find a daemon by itself."""
    if request.param == "cgroup" and process._cgroup_base()[0] is None:
        pytest.skip("no cgroup v2 this process may use")
    if request.param == "environment":
        monkeypatch.setenv(process.CGROUP_ENV, "0")
    return request.param


def _daemonize(pid_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, str(DAEMONIZE), str(pid_dir), "cmd", *extra]


@linux_only
def _recorded_cgroups(record: Path) -> list[Path]:
    """The cgroups the commands run with `record=record` were given (other tests' cgroups are not this test's)."""
    lines = (record / process.RECORD_FILE).read_text().splitlines()
    return [Path(entry["cgroup"]) for entry in map(json.loads, lines) if entry["cgroup"]]


def test_a_daemon_that_left_the_process_group_is_killed_when_the_command_exits(tmp_path, pid_dir, net):
    record = tmp_path / "record"
    record.mkdir()
    done = process.run(_daemonize(pid_dir), cwd=tmp_path, env=os.environ, timeout_s=30, record=record)
    assert (done.returncode, done.stdout.strip(), done.timed_out) == (0, "done", False)
    [daemon] = _pids(pid_dir, "daemon")
    assert _gone(daemon)
    assert (done.cleanup.killed, done.cleanup.escaped) == (1, 1)
    assert (process.NET_CGROUP in done.cleanup.nets) == (net == "cgroup")
    assert len(_recorded_cgroups(record)) == (net == "cgroup")
    assert not any(c.exists() for c in _recorded_cgroups(record))  # its cgroup was removed


@linux_only
def test_a_timeout_kills_a_daemon_that_ignores_term_and_says_what_it_killed(tmp_path, pid_dir, net):
    done = process.run(_daemonize(pid_dir, "--sleep", "60"), cwd=tmp_path, env=os.environ, timeout_s=1.5,
                       kill_grace_s=0.1)
    assert done.timed_out and done.returncode < 0
    assert all(_gone(pid) for pid in _pids(pid_dir))
    said = done.cleanup.describe("the agent")
    assert said.startswith("killed the agent and 1 process it left running (1 of them had left its process group; "
                           "searched: process group, SKILLGIT_PROC_SCOPES in /proc"), said


@linux_only
def test_an_interrupt_while_waiting_kills_a_daemon_too(tmp_path, pid_dir, net):
    def interrupt(*_):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 1.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            process.run(_daemonize(pid_dir, "--sleep", "60"), cwd=tmp_path, env=os.environ, timeout_s=60)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert _pids(pid_dir, "daemon") and all(_gone(pid) for pid in _pids(pid_dir))


def test_a_stop_recorded_while_another_thread_waits_kills_its_command_and_raises_interrupted(tmp_path, pid_dir):
    """Ctrl-C reaches the main thread only: a rollout waiting in a worker thread sees the stop the CLI recorded
    (errors.request_stop) and stops at once, instead of waiting for its command's timeout."""
    import threading

    from skillgit.errors import Interrupted, clear_stop, request_stop

    outcome: list[BaseException | process.Finished] = []

    def work() -> None:
        try:
            outcome.append(process.run(_daemonize(pid_dir, "--sleep", "60"), cwd=tmp_path, env=os.environ,
                                       timeout_s=60))
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            outcome.append(exc)

    worker = threading.Thread(target=work)
    worker.start()
    try:
        deadline = time.monotonic() + 30
        while not _pids(pid_dir, "leader") and time.monotonic() < deadline:
            time.sleep(0.05)
        request_stop(Interrupted())
        worker.join(10)
    finally:
        clear_stop()
    assert not worker.is_alive() and isinstance(outcome[0], Interrupted)
    assert all(_gone(pid) for pid in _pids(pid_dir, "leader"))
    if process._proc_readable():
        assert all(_gone(pid) for pid in _pids(pid_dir, "daemon"))


@needs_cgroup
def test_the_cgroup_finds_a_daemon_that_scrubbed_its_environment(tmp_path, pid_dir):
    done = process.run(_daemonize(pid_dir, "--scrub-env"), cwd=tmp_path, env=os.environ, timeout_s=30)
    assert done.returncode == 0 and process.NET_CGROUP in done.cleanup.nets
    assert _pids(pid_dir, "daemon") and all(_gone(pid) for pid in _pids(pid_dir, "daemon"))


@linux_only
def test_kill_recorded_finds_a_daemon_after_its_skillgit_was_killed_and_spares_everything_else(tmp_path, pid_dir,
                                                                                            net):
    record = tmp_path / "record"
    record.mkdir()
    here = str(Path(__file__).parents[1])
    runner = (f"import os, sys; from pathlib import Path; from skillgit import process; "
              f"process.run({_daemonize(pid_dir, '--sleep', '60')!r}, cwd=Path({str(tmp_path)!r}), env=os.environ, "
              f"timeout_s=120, record=Path({str(record)!r}))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    skillgit = subprocess.Popen([sys.executable, "-c", runner], cwd=here, env=env)
    # a bystander with an id of its own in the same variable, in a session of its own
    bystander = subprocess.Popen(["sleep", "60"], start_new_session=True,
                                 env={**os.environ, process.SCOPES_ENV: "0" * 32})
    try:
        deadline = time.monotonic() + 30
        while not _pids(pid_dir, "leader") and time.monotonic() < deadline:
            time.sleep(0.05)
        skillgit.kill()  # kill -9: nothing of skillgit runs its cleanup
        skillgit.wait()
        assert all(_alive(pid) for pid in _pids(pid_dir))  # the command and its daemon live on
        found = process.kill_recorded(record)
        assert all(_gone(pid) for pid in _pids(pid_dir))
        assert (found.killed, found.escaped) == (2, 2)  # both outside any group kill_recorded could know
        assert bystander.poll() is None
        assert len(_recorded_cgroups(record)) == (net == "cgroup")
        assert not any(c.exists() for c in _recorded_cgroups(record))
    finally:
        bystander.kill()
        bystander.wait()


def test_the_scope_ids_a_command_inherits_are_kept_and_a_broken_record_is_skipped(tmp_path, monkeypatch):
    outer = "ab" * 16
    monkeypatch.setenv(process.SCOPES_ENV, f"{outer},not-an-id")
    done = process.run([sys.executable, "-c", f"import os; print(os.environ[{process.SCOPES_ENV!r}])"],
                       cwd=tmp_path, env={"PATH": os.environ["PATH"]}, timeout_s=30, record=tmp_path)
    ids = done.stdout.strip().split(",")
    assert ids[0] == outer and len(ids) == 2 and len(ids[1]) == 32 and ids[1] != outer  # a run inside a run
    recorded = json.loads((tmp_path / process.RECORD_FILE).read_text())
    assert recorded["id"] == ids[1] and recorded["owner"] == os.getpid()
    with open(tmp_path / process.RECORD_FILE, "a") as out:  # tampered lines: ignored, never a crash
        out.write('not json\n{"id": "../../x"}\n{"id": "%s", "cgroup": "/etc"}\n' % ("cd" * 16))
    assert process.kill_recorded(tmp_path).killed == 0


def test_without_proc_it_degrades_to_the_process_group_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(process, "_proc_readable", lambda: False)
    monkeypatch.setenv(process.CGROUP_ENV, "0")
    assert process.nets() == (process.NET_GROUP, f"no cgroup: {process.CGROUP_ENV}=0")
    # the background sleep keeps the output pipe open after the shell exits, so `run` waits out its timeout: 2 s,
    # not 30 (what is checked is how the leftover is killed, not when)
    done = process.run("sleep 30 & exit 0", shell=True, cwd=tmp_path, env=os.environ, timeout_s=2)
    assert done.cleanup.nets == (process.NET_GROUP,)
    assert done.cleanup.describe("the agent") == ("killed the agent (its process group only: a child that left it "
                                                  f"with setsid is not tracked on {sys.platform})")


@needs_cgroup
def test_an_empty_cgroup_a_killed_skillgit_left_is_removed_once_stale_and_a_populated_one_never(tmp_path):
    base = process._cgroup_base()[0]
    left = process._make_cgroup("a" * 32)  # what a skillgit killed with kill -9 leaves: an empty skillgit-<id>
    busy = process._make_cgroup("b" * 32)
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        (busy / "cgroup.procs").write_text(str(sleeper.pid))
        process._sweep_stale_cgroups(base)
        assert left.exists()  # fresh: a command may be about to move in
        process._sweep_stale_cgroups(base, now=time.time() + process.STALE_CGROUP_S + 1)
        assert not left.exists()
        assert busy.exists() and sleeper.poll() is None  # populated: never removed, its process untouched
    finally:
        sleeper.kill()
        sleeper.wait()
        for cgroup in (left, busy):
            for _ in range(100):
                try:
                    cgroup.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)

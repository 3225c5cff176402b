"""Training on a local multi-node Ray cluster ends exactly where the thread executor does, and a worker killed
mid-rollout does not fail the run (the rollout is shipped again). Every Ray process listens on 127.0.0.1 only, a
run starts its own instance (never a leftover cluster), and a dead `env.ray_address` fails within seconds.
Skipped when `ray` is not installed."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from skillgit.executor import keep_ray_on_loopback

keep_ray_on_loopback()  # before ray is imported: the clusters below live on 127.0.0.1, like skillgit's own
ray = pytest.importorskip("ray")

from ray.cluster_utils import Cluster  # noqa: E402

from skillgit.cli.demo import create_project  # noqa: E402
from skillgit.errors import SkillgitError  # noqa: E402
from skillgit.executor import RayExecutor, RemoteStudent, ray_target, run_task  # noqa: E402
from skillgit.project import open_project  # noqa: E402
from skillgit.session import build_trainer, open_session  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.slow]

VOLATILE = ("run", "sha", "parent", "date", "tag", "label", "note")  # ids and times; everything else must match


@pytest.fixture(scope="module")
def cluster():
    """Two nodes of one CPU, both on 127.0.0.1, no dashboard."""
    c = Cluster(initialize_head=True,
                head_node_args={"num_cpus": 1, "include_dashboard": False, "node_ip_address": "127.0.0.1"})
    c.add_node(num_cpus=1, node_ip_address="127.0.0.1")
    c.wait_for_nodes()
    yield c
    c.shutdown()


def _log(folder: Path, cli) -> list[dict]:
    result = cli("log", "--json", cwd=folder)
    assert result.returncode == 0, result.stderr
    return [{k: v for k, v in row.items() if k not in VOLATILE} for row in json.loads(result.stdout)]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """The thread executor's run of the demo (the real CLI): its log and final skill."""
    from tests.conftest import run_cli

    return _threads_run(tmp_path_factory.mktemp("threads"), run_cli)


def _threads_run(tmp_path: Path, cli) -> tuple[list[dict], str]:
    folder = tmp_path / "threads"
    create_project(folder, 0)
    result = cli("train", "--set", "train.max_steps=2", cwd=folder)
    assert result.returncode == 0, result.stderr
    return _log(folder, cli), (folder / "SKILL.md").read_text()


class Recording(RayExecutor):
    """The real RayExecutor, remembering the students it placed (to count what was shipped and lost)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.placed: list[RemoteStudent] = []

    def student(self, spec, build_local):
        placed = super().student(spec, build_local)
        self.placed.append(placed)
        return placed


def _ray_run(tmp_path: Path, name: str, executor: RayExecutor, cli) -> tuple[list[dict], str]:
    folder = tmp_path / name
    create_project(folder, 0)
    project = open_project(folder, overrides=["train.max_steps=2", "env.executor=ray"])
    session = open_session(project, executor=executor)
    build_trainer(session).train()
    return _log(folder, cli), (folder / "SKILL.md").read_text()


def test_ray_training_ends_in_the_same_skill_and_verdicts_as_threads(cluster, baseline, tmp_path, cli):
    expected_log, expected_skill = baseline
    executor = Recording(cluster.address)
    try:
        log, skill = _ray_run(tmp_path, "ray", executor, cli)
        assert ray.cluster_resources().get("CPU") == 2  # two nodes of one CPU each
    finally:
        executor.close()
    assert [s.shipped for s in executor.placed] and sum(s.shipped for s in executor.placed) > 0  # ran remotely
    assert sum(s.lost for s in executor.placed) == 0
    assert log == expected_log
    assert len(log) == 3  # the seed and two decided steps
    assert skill == expected_skill


def chaos_task(spec, skill, item, sample, tar, marker_dir: str, kills: int):
    """run_task, except that the first `kills` tasks kill their own worker process mid-run."""
    for n in range(kills):
        try:
            fd = os.open(os.path.join(marker_dir, f"kill-{n}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            continue
        os.close(fd)
        os._exit(1)  # the worker dies with the task in flight
    return run_task(spec, skill, item, sample, tar)


class Chaos(Recording):
    def __init__(self, address: str, marker_dir: Path, kills: int):
        super().__init__(address)
        folder = str(marker_dir)

        def chaos(spec, skill, item, sample, tar):
            return chaos_task(spec, skill, item, sample, tar, folder, kills)

        self.remote_run = ray.remote(num_cpus=1, max_retries=0)(chaos)


def test_a_worker_killed_mid_rollout_does_not_fail_the_run(cluster, baseline, tmp_path, cli):
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(__import__(__name__))  # workers need not import the tests package
    expected_log, expected_skill = baseline
    markers = tmp_path / "markers"
    markers.mkdir()
    executor = Chaos(cluster.address, markers, kills=2)
    try:
        log, skill = _ray_run(tmp_path, "chaos", executor, cli)
    finally:
        executor.close()
    assert sorted(p.name for p in markers.iterdir()) == ["kill-0", "kill-1"]  # two workers really died
    assert sum(s.lost for s in executor.placed) == 2  # each lost rollout was shipped again, not failed
    assert log == expected_log
    assert skill == expected_skill


# ------------------------------------------------------------------------------------------------ loopback only
def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            kids.setdefault(ppid, []).append(int(name))
    return kids


def _tree(root: int) -> set[int]:
    kids, seen, todo = _children(), set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen.add(pid)
            todo.extend(kids.get(pid, []))
    return seen


def _address(hexaddr: str) -> str:
    raw = bytes.fromhex(hexaddr)
    # /proc/net/tcp{,6} print each 32-bit word in host (little-endian) order
    fixed = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, fixed)


def listening(pids: set[int]) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket the processes `pids` listen on, from /proc."""
    inodes = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(int(link[8:-1]))
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and int(fields[9]) in inodes:  # 0A: LISTEN
                host, port = fields[1].split(":")
                found.add((_address(host), int(port, 16)))
    return found


def _loopback(host: str) -> bool:
    import ipaddress

    ip = ipaddress.ip_address(host)
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback


def _dead_address() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"  # nothing listens there once closed


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="lists sockets through Linux's /proc")
def test_a_ray_run_starts_its_own_instance_and_listens_on_loopback_only(tmp_path, cli):
    folder = tmp_path / "run"
    create_project(folder, 0)
    # what a crashed earlier Ray run leaves: an address to a cluster that is gone (the old code connected to it)
    env = {"RAY_ADDRESS": _dead_address()}
    argv = [sys.executable, "-m", "skillgit", "train", "--set", "env.executor=ray", "--set", "train.max_steps=1"]
    proc = subprocess.Popen(argv, cwd=folder, env={**os.environ, **env}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    seen: set[tuple[str, int]] = set()
    owners = 0

    def watch() -> None:
        nonlocal owners
        while proc.poll() is None:
            tree = _tree(proc.pid)
            owners = max(owners, len(tree))
            seen.update(listening(tree))
            time.sleep(0.3)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
    watcher.join(timeout=10)
    assert proc.returncode == 0, err
    assert owners > 3 and len(seen) >= 3, seen  # Ray's GCS, raylet, agents and workers were up and listening
    assert {host for host, _ in seen if not _loopback(host)} == set(), seen
    assert "ray_current_cluster" not in err and env["RAY_ADDRESS"] not in err
    assert not (Path(os.environ["HOME"]) / ".ray").exists()  # the run's auth token stayed in its environment


def test_a_dead_ray_address_fails_within_seconds_naming_the_key(tmp_path, cli, monkeypatch):
    dead = _dead_address()
    started = time.monotonic()
    with pytest.raises(SkillgitError) as err:
        RayExecutor(dead)
    assert time.monotonic() - started < 10
    assert f"env.ray_address '{dead}': no Ray cluster answers at {dead}" in err.value.message
    assert "ray start --head --node-ip-address 127.0.0.1" in err.value.hint
    monkeypatch.setenv("RAY_ADDRESS", dead)  # `auto` = the cluster this machine records: gone
    with pytest.raises(SkillgitError) as err:
        ray_target("auto")
    assert f"(= {dead}, recorded by an earlier cluster)" in err.value.message
    folder = tmp_path / "cli"
    create_project(folder, 0)
    started = time.monotonic()
    done = cli("train", "--set", "env.executor=ray", "--set", f"env.ray_address={dead}", cwd=folder, timeout=120)
    assert time.monotonic() - started < 30
    assert done.returncode == 2 and "env.ray_address" in done.stderr and "Traceback" not in done.stderr, done.stderr

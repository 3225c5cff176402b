"""Training on a local multi-node Ray cluster ends exactly where the thread executor does, and a worker killed
mid-rollout does not fail the run (the rollout is shipped again). Skipped when `ray` is not installed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from ray.cluster_utils import Cluster  # noqa: E402

from skillgit.demo import create_project  # noqa: E402
from skillgit.executor import RayExecutor, RemoteStudent, run_task  # noqa: E402
from skillgit.project import open_project  # noqa: E402
from skillgit.session import build_trainer, open_session  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.slow]

VOLATILE = ("run", "sha", "parent", "date", "tag", "label", "note")  # ids and times; everything else must match


@pytest.fixture(scope="module")
def cluster():
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    c.add_node(num_cpus=1)
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
    session = open_session(project)
    session.executor_ = executor
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

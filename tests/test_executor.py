"""The executor seam: the thread executor keeps order and results, rollout through it is the old rollout, and
nothing secret is ever shipped as a task argument; agentic fixtures travel as a tar and unpack on the worker."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from skillgit.errors import SkillgitError
from skillgit.executor import (
    THREADS,
    StudentSpec,
    ThreadExecutor,
    build_executor,
    check_shippable,
    fixture_tar,
    localize,
    run_task,
)
from skillgit.llm.base import Reply
from skillgit.loop import stages
from skillgit.project import open_project
from skillgit.redact import SecretSet, register
from skillgit.types import Item, Score


def test_thread_executor_keeps_order_and_results_under_concurrency():
    seen: set[str] = set()
    lock = threading.Lock()

    def slow(x: int) -> int:
        time.sleep(0.01 * (10 - x))  # later items finish first
        with lock:
            seen.add(threading.current_thread().name)
        return x * x

    out = ThreadExecutor().map(slow, list(range(10)), workers=4)
    assert out == [x * x for x in range(10)]
    assert len(seen) > 1  # really in parallel
    assert THREADS.map(lambda x: x + 1, [1], workers=8) == [2]
    assert THREADS.map(lambda x: x + 1, [1, 2, 3], workers=1) == [2, 3, 4]


class EchoStudent:
    id = "echo"

    def run(self, skill: str, item: Item, sample: int = 0) -> Reply:
        return Reply(f"{skill}:{item.input}:{sample}")


def test_rollout_through_the_thread_executor_equals_the_default():
    items = [Item(f"i{n}", str(n), expected=f"s:{n}:0") for n in range(7)]

    def scorer(item: Item, text: str) -> Score:
        return Score(1.0 if text == item.expected else 0.0, 0.0)

    default = stages.rollout(EchoStudent(), "s", items, scorer, workers=3)
    explicit = stages.rollout(EchoStudent(), "s", items, scorer, workers=3, executor=THREADS)
    assert [t.to_dict() for t in default] == [t.to_dict() for t in explicit]
    assert [t.item_id for t in explicit] == [i.id for i in items]
    assert all(t.score is not None and t.score.hard == 1.0 for t in explicit)


def test_a_secret_is_never_shipped_as_a_task_argument(monkeypatch):
    secret = "sk-test-" + "q" * 32
    register(SecretSet(frozenset({"MY_TOKEN"}), frozenset({secret})))
    check_shippable("a skill", Item("x", "input"), 0)  # nothing secret: fine
    with pytest.raises(SkillgitError, match="secret"):
        check_shippable("a skill", Item("x", f"use {secret} please"), 0)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-" + "z" * 30)
    with pytest.raises(SkillgitError):
        check_shippable({"nested": ["sk-env-" + "z" * 30]})


def test_the_worker_env_carries_secrets_and_the_spec_does_not(tmp_path, make_repo):
    from skillgit.cli.demo import create_project
    from skillgit.executor import worker_env

    folder = tmp_path / "demo"
    create_project(folder, 0)
    (folder / ".env").write_text("OPENAI_API_KEY=sk-dotenv-" + "w" * 30 + "\n")
    project = open_project(folder)
    env = worker_env(project.config, folder, environ={"PATH": "/bin"})
    assert env == {"OPENAI_API_KEY": "sk-dotenv-" + "w" * 30}  # only what the student may need, nothing else
    check_shippable(StudentSpec(project.config, str(folder)))  # the config holds names, never values
    assert build_executor(project.config, folder) is THREADS  # env.executor defaults to threads


def test_a_fixture_travels_as_a_tar_and_the_worker_builds_from_it(tmp_path):
    task_dir = tmp_path / "tasks"
    (task_dir / "repos" / "app" / "src").mkdir(parents=True)
    (task_dir / "repos" / "app" / "src" / "main.py").write_text("print('hi')\n")
    item = Item("t1", "fix it", metadata={"task_dir": str(task_dir), "workspace": {"fixture": "repos/app"}})
    tar = fixture_tar(item, tmp_path)
    assert tar is not None and fixture_tar(Item("plain", "x"), tmp_path) is None
    elsewhere = tmp_path / "worker-tmp"
    moved = localize(item, tar, elsewhere)
    base = Path(moved.metadata["task_dir"])
    assert base.is_relative_to(elsewhere)
    assert (base / moved.metadata["workspace"]["fixture"] / "src" / "main.py").read_text() == "print('hi')\n"
    assert localize(item, tar, elsewhere) == moved  # unpacked once per content


def test_run_task_builds_the_simulated_student_and_returns_errors_as_data(tmp_path):
    from skillgit.cli.demo import create_project

    folder = tmp_path / "demo"
    create_project(folder, 0)
    project = open_project(folder)
    spec = StudentSpec(project.config, str(folder))
    out = run_task(spec, "a skill", Item("x", "hello"), 0, None)
    assert isinstance(out["reply"], Reply)
    again = run_task(spec, "a skill", Item("x", "hello"), 0, None)
    assert again["reply"].text == out["reply"].text  # the simulated student is deterministic per request


def test_a_student_error_in_the_worker_comes_back_as_data(tmp_path, monkeypatch):
    from skillgit import executor
    from skillgit.cli.demo import create_project
    from skillgit.llm.base import LLMError

    class Refusing:
        id = "refusing"

        def run(self, skill: str, item: Item, sample: int = 0) -> Reply:
            raise LLMError("rate limited", "wait", kind="rate_limit", retryable=True, status=429)

    folder = tmp_path / "demo"
    create_project(folder, 0)
    spec = StudentSpec(open_project(folder).config, str(folder))
    monkeypatch.setitem(executor._WORKER_STUDENTS, spec.key, Refusing())
    out = run_task(spec, "s", Item("x", "hello"), 0, None)
    assert out == {"error": {"message": "rate limited", "hint": "wait", "kind": "rate_limit", "retryable": True,
                             "retry_after": None, "status": 429}}

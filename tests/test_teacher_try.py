"""`skillgit-try ITEM_ID` (skillgit/teacher/trying.py, TrainTrier in loop/agent_step.py): the real client program,
run as a subprocess against the loopback service, on a real project's run context."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from skillgit.cli.demo import create_project
from skillgit.loop.agent_step import TrainTrier
from skillgit.project import open_project
from skillgit.session import build_trainer, open_session
from skillgit.teacher.trying import TOKEN_ENV, TryServer, install_client


@pytest.fixture()
def run_context(tmp_path: Path):
    create_project(tmp_path / "p", seed=3)
    project = open_project(tmp_path / "p", None, [])
    session = open_session(project)
    trainer = build_trainer(session, run_id="try-test", resume=False)
    return session, trainer


def _try(bin_dir: Path, env: dict[str, str], item: str) -> subprocess.CompletedProcess:
    environ = {**os.environ, **env, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(["skillgit-try", item], env=environ, capture_output=True, text=True, timeout=120)


def test_try_refuses_val_and_test_ids_and_journals_train_tries(run_context, tmp_path: Path) -> None:
    session, trainer = run_context
    skill = session.store.read_skill()
    train, val, test = session.splits.train, session.splits.val, session.splits.test
    bin_dir = install_client(tmp_path / "bin")
    trier = TrainTrier(trainer.ctx, 1)
    with TryServer(trier, lambda: skill) as server:
        env = server.env()
        refused_val = _try(bin_dir, env, val[0].id)
        refused_test = _try(bin_dir, env, test[0].id)
        first = _try(bin_dir, env, train[0].id)
        again = _try(bin_dir, env, train[0].id)
        forged = _try(bin_dir, {**env, TOKEN_ENV: "0" * 32}, train[0].id)
    assert refused_val.returncode == 2 and "is a validation task" in refused_val.stdout
    assert refused_test.returncode == 2 and "is not a training task" in refused_test.stdout
    assert val[0].input not in refused_val.stdout and test[0].input not in refused_test.stdout
    assert first.returncode in (0, 1) and f'id="{train[0].id}"' in first.stdout and "<feedback>" in first.stdout
    assert first.stdout.splitlines()[0] in ("PASSED", "FAILED")
    assert again.stdout == first.stdout
    assert forged.returncode == 2 and "bad token" in forged.stderr + forged.stdout
    snap = session.ledger.snapshot()
    assert snap["by_stage"]["try"]["calls"] == 1  # the second try was answered from the journal…
    assert snap["saved_calls"]["try"] == 1  # …and counted as such
    assert [entry["item"] for entry in server.log] == [val[0].id, test[0].id, train[0].id, train[0].id]
    assert trier.used == 2  # refused ids spend no try


def test_try_budget_and_usage(run_context, tmp_path: Path) -> None:
    session, trainer = run_context
    skill = session.store.read_skill()
    bin_dir = install_client(tmp_path / "bin")
    with TryServer(TrainTrier(trainer.ctx, 1, limit=1), lambda: skill) as server:
        assert _try(bin_dir, server.env(), session.splits.train[0].id).returncode in (0, 1)
        spent = _try(bin_dir, server.env(), session.splits.train[1].id)
        usage = _try(bin_dir, server.env(), "--help")
    assert spent.returncode == 2 and "tries are spent" in spent.stdout
    assert usage.returncode == 2 and "usage: skillgit-try ITEM_ID" in usage.stderr


def test_the_client_outside_a_step_says_so(tmp_path: Path) -> None:
    bin_dir = install_client(tmp_path / "bin")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SKILLGIT_TRY")}
    done = subprocess.run([str(bin_dir / "skillgit-try"), "x"], env=environ, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and "not inside a skillgit teacher step" in done.stderr

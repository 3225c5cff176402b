"""A full `skillgit train` through the real openai and anthropic SDKs, both roles, against a local HTTP server on
127.0.0.1 that serves the simulated world; then a scan of every git object, note, run artifact and log for the
API keys that were set."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from skillgit.cli.demo import create_project
from skillgit.config import SimulatedCfg
from skillgit.world import SimulatedStudentLLM, SimulatedTeacher
from tests.conftest import git, run_cli, run_cli_inproc
from tests.fake_servers import FakeLLMServer, llm_handler

OPENAI_KEY = "sk-proj-LEAKCHECKopenai0123456789abcdefXYZ"
ANTHROPIC_KEY = "sk-ant-api03-LEAKCHECKanthropic0123456789abcdef"


def world_server() -> FakeLLMServer:
    cfg = SimulatedCfg(seed=2)
    teacher, student = llm_handler(SimulatedTeacher(cfg)), llm_handler(SimulatedStudentLLM(cfg))

    def handle(body: dict) -> str:
        return teacher(body) if "teacher" in str(body.get("model", "")) else student(body)

    return FakeLLMServer(handle)


def configure(folder: Path, teacher: dict, student: dict) -> None:
    path = folder / "skillgit.yaml"
    cfg = yaml.safe_load(path.read_text())
    cfg["model"] = {**teacher, **student}
    path.write_text(yaml.safe_dump(cfg))


def scan_for(folder: Path, secrets: list[str], *texts: str) -> list[str]:
    """Where any secret appears: every git object (commits, trees, blobs, tags, notes, run refs), every file
    skillgit wrote under .git, and the given outputs."""
    found = []
    objects = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=folder,
                             capture_output=True).stdout.decode("utf-8", "replace")
    haystacks = {"git objects": objects, **{f"output {i}": t for i, t in enumerate(texts)}}
    for path in (folder / ".git").rglob("*"):
        if path.is_file() and "objects" not in path.parts:
            haystacks[str(path)] = path.read_bytes().decode("utf-8", "replace")
    for name, text in haystacks.items():
        for secret in secrets:
            if secret in text or secret[-12:] in text:
                found.append(f"{secret[:10]}… in {name}")
    return found


@pytest.mark.slow
@pytest.mark.parametrize("teacher_backend", ["openai", "anthropic"])
def test_train_through_real_sdks_for_both_roles_and_no_key_leaks(tmp_path, teacher_backend):
    folder = tmp_path / "proj"
    create_project(folder, seed=2)
    with world_server() as server:
        teacher = {"teacher_backend": teacher_backend, "teacher_model": "sim-teacher",
                   "teacher": {"base_url": server.openai_base_url if teacher_backend == "openai"
                               else server.anthropic_base_url, "max_retries": 1}}
        student = {"student_backend": "openai", "student_model": "sim-student",
                   "student": {"base_url": server.openai_base_url, "max_retries": 1}}
        configure(folder, teacher, student)
        git(folder, "commit", "-qam", "use the served world")
        env = {"OPENAI_API_KEY": OPENAI_KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY}
        proc = run_cli("train", "--set", "train.max_steps=3", "--json", cwd=folder, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        result = json.loads(proc.stdout)
        status = run_cli_inproc("status", "--json", cwd=folder, env=env)
        shown = run_cli_inproc("show", "1", "--json", cwd=folder, env=env)
        config = run_cli_inproc("config", "show", cwd=folder, env=env)
        requests = list(server.requests)

    assert result["steps"] == 3 and result["accepted"] + result["rejected"] >= 3
    paths = {r.path for r in requests}
    assert any(p.endswith("/chat/completions") for p in paths)  # the student, through the openai SDK
    if teacher_backend == "anthropic":
        assert any(p.endswith("/v1/messages") for p in paths)  # the teacher, through the anthropic SDK
    usage = json.loads(status.stdout)
    assert usage["calls"] > 0 and usage["tokens"] > 0
    leaks = scan_for(folder, [OPENAI_KEY, ANTHROPIC_KEY], proc.stdout, proc.stderr, status.stdout,
                     shown.stdout, config.stdout)
    assert leaks == []
    assert scan_for(folder, [OPENAI_KEY], "planted " + OPENAI_KEY)  # the scan does see a key where one is


def test_a_dollar_budget_stops_a_run_through_a_real_sdk_before_it_is_crossed(tmp_path):
    """`budget.max_cost_usd` with prices from the config (a local server is free unless priced): the run stops
    before the call that would cross it, test scoring included; at most the calls in flight overshoot."""
    folder = tmp_path / "proj"
    create_project(folder, seed=2)
    limit, workers = 0.02, 4
    with world_server() as server:
        both = {"teacher_backend": "openai", "teacher_model": "sim-teacher", "student_backend": "openai",
                "student_model": "sim-student",
                "teacher": {"base_url": server.openai_base_url, "max_retries": 1, "concurrency": workers},
                "student": {"base_url": server.openai_base_url, "max_retries": 1, "concurrency": workers}}
        configure(folder, both, {})
        cfg = yaml.safe_load((folder / "skillgit.yaml").read_text())
        cfg["prices"] = {"sim-teacher": {"prompt": 5.0, "completion": 15.0},
                         "sim-student": {"prompt": 5.0, "completion": 15.0}}
        cfg["budget"] = {"max_cost_usd": limit}
        (folder / "skillgit.yaml").write_text(yaml.safe_dump(cfg))
        git(folder, "commit", "-qam", "priced")
        proc = run_cli("train", "--json", "--set", f"env.workers={workers}", "--set",
                       f"gradient.analyst_workers={workers}", cwd=folder, env={"OPENAI_API_KEY": OPENAI_KEY})
        status = json.loads(run_cli_inproc("status", "--json", cwd=folder).stdout)
    assert proc.returncode == 5, proc.stderr[-2000:]  # stopped by a budget
    result = json.loads(proc.stdout)
    assert result["status"] == "stopped" and "budget.max_cost_usd" in result["reason"]
    per_call = max(u["cost_usd"] / u["calls"] for u in status["usage_by_stage"].values() if u["calls"])
    assert limit <= status["cost_usd"] <= limit + 2 * workers * per_call
    assert "test" not in status["usage_by_stage"]

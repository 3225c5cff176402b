"""Probe 11, redaction: a teacher whose every answer carries secrets (a key a trajectory showed it, echoed into its
edits, its slow-update guidance, its reasons) through the real openai SDK against a scripted server on 127.0.0.1.

The holes: the notes were redacted, but what the model wrote into the skill was committed as written (the
candidate's skill blob: an edit's content, the slow-update guidance), and the run's progress commit (its edits)
too; `show --full`, `report` and `pr` then showed the keys from the diffs, and `skillgit push` shares all of it.
Now an edit's content is redacted where it enters the skill (`patch`), the guidance where it is written, and every
file of a progress commit as it is saved (`loop.background.Saves`).
"""

from __future__ import annotations

import json
import subprocess

import pytest

from skillgit.cli.demo import create_project
from skillgit.config import SimulatedCfg
from skillgit.world import SimulatedStudentLLM, SimulatedTeacher
from tests.conftest import git, run_cli, run_cli_inproc
from tests.fake_servers import FakeLLMServer, llm_handler
from tests.secret_corpus import FORMATS
from tests.test_e2e_backends import configure, scan_for
from tests.test_probe11_terminal import taint

PLANTED = FORMATS[:12]
SECRETS = " " + " ; ".join(p.text for p in PLANTED)


def _leaky_teacher_server() -> FakeLLMServer:
    cfg = SimulatedCfg(seed=2)
    teacher, student = llm_handler(SimulatedTeacher(cfg)), llm_handler(SimulatedStudentLLM(cfg))

    def handle(body: dict) -> str:
        if "teacher" not in str(body.get("model", "")):
            return student(body)
        answer = teacher(body)
        try:
            return json.dumps(taint(json.loads(answer), SECRETS, ("op", "target")))
        except ValueError:  # (the simulated teacher's malformed answers: the secrets follow them)
            return answer + SECRETS

    return FakeLLMServer(handle)


@pytest.mark.slow
def test_no_secret_a_teacher_writes_reaches_a_commit_a_run_ref_or_the_output(tmp_path):
    folder = tmp_path / "proj"
    create_project(folder, seed=2)
    with _leaky_teacher_server() as server:
        configure(folder, {"teacher_backend": "openai", "teacher_model": "sim-teacher",
                           "teacher": {"base_url": server.openai_base_url, "max_retries": 1}},
                  {"student_backend": "openai", "student_model": "sim-student",
                   "student": {"base_url": server.openai_base_url, "max_retries": 1}})
        git(folder, "commit", "-qam", "use the served world")
        env = {"OPENAI_API_KEY": "sk-x"}
        proc = run_cli("train", "--set", "train.max_steps=3", cwd=folder, env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        git(folder, "branch", "review/x", "main")  # a head that is not the base (a run on main has no PR of its own)
        outputs = [run_cli_inproc(*args, cwd=folder, env=env) for args in
                   (["show", "1", "--full"], ["pr", "--head", "review/x"], ["log", "--json"], ["status", "--json"],
                    ["report", "-o", str(tmp_path / "r.html"), "--renderer", "builtin"])]
    assert all(p.returncode == 0 for p in outputs), [p.stderr[-500:] for p in outputs]
    edited = subprocess.run(["git", "log", "--all", "-p", "--format=%H"], cwd=folder, capture_output=True,
                            text=True).stdout
    assert "OPENAI_API_KEY=sk-***" in edited  # the teacher's edits were committed, masked
    texts = [p.stdout + p.stderr for p in outputs] + [(tmp_path / "r.html").read_text(encoding="utf-8")]
    leaks = [f"{p.name}: {leak[:12]}…" for p in PLANTED for leak in p.leaks if leak in "\n".join(texts)]
    found = scan_for(folder, [leak for p in PLANTED for leak in p.leaks], *texts)
    assert not leaks and not found, (leaks, found[:10])

"""Probes of the gate's evidence (wave 13): paths around the verdict that earlier work left open.

- The call journal keys a chat student's answers on the model, the skill, the item and the sample; its sampling
  settings (temperature, max_tokens, seed, reasoning effort, thinking budget) decide the answer too. Before, a run
  after `model.student.temperature` changed was answered from the journal with the old setting's replies wherever a
  (skill, item, sample) had been asked before — the incumbent's re-scoring of a new run's first step among them —
  while every new skill text was asked fresh: the gate compared two students and called it a gain.
- An agent student's journal key named its task, workspace and settings but not its CLI's version, which its
  fingerprint (the gate's drift check) does name: after the CLI updated between two runs, the journal answered the
  old version's rollouts, and each scoring recorded the new version's fingerprint, so the drift check passed.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from skillgit.agentic.student import AgentStudent
from skillgit.config import CommandCfg, config_from_dict
from skillgit.llm.cache import CachedStudent, CallCache, student_key
from skillgit.llm.factory import build_student
from skillgit.types import Item
from tests.fake_servers import FakeLLMServer
from tests.helpers import agentic_repo

ITEM = Item(id="q1", input="What is 2 + 3?", expected="5")
KEY = {"OPENAI_API_KEY": "sk-test-0123456789abcdef"}


def _student(server: FakeLLMServer, **settings):
    cfg = config_from_dict({"model": {"student_backend": "openai", "student_model": "qwen",
                                      "student": {"base_url": server.openai_base_url, "timeout_s": 5,
                                                  **settings}}})
    return build_student(cfg, None, environ=KEY, max_retries=0)


def test_a_chat_students_sampling_settings_are_part_of_its_journal_key(tmp_path: Path):
    path = tmp_path / "calls.sqlite"
    with FakeLLMServer(lambda body: f"answer at temperature {body.get('temperature')}") as server:
        default = CachedStudent(_student(server), CallCache(path))
        assert default.run("skill", ITEM).text == "answer at temperature None" and len(server.requests) == 1
        # a default student's key is what it always was: journals written before keep answering
        assert default.key("skill", ITEM) == student_key("chat:openai:qwen", "skill", ITEM, 0)
        changed = {"temperature": 0.7, "max_tokens": 64, "seed": 3, "reasoning_effort": "high"}
        for n, (name, value) in enumerate(changed.items(), 2):
            student = CachedStudent(_student(server, **{name: value}), CallCache(path))
            answer = student.run("skill", ITEM)
            assert not answer.cached and len(server.requests) == n, f"{name}={value} was answered from the journal"
            assert student.run("skill", ITEM).cached and len(server.requests) == n  # …and journaled under its own key
        assert server.requests[1].json["temperature"] == 0.7
        again = CachedStudent(_student(server), CallCache(path)).run("skill", ITEM)
        assert again.cached and again.text == "answer at temperature None" and len(server.requests) == 5


CLI = """#!{python}
import sys
from pathlib import Path

import pytest
if "--version" in sys.argv:
    print("{version} (Claude Code)")
    raise SystemExit(0)
runs = Path({runs!r})
runs.write_text(str(int(runs.read_text()) + 1) if runs.exists() else "1")
print("done")
"""


def test_an_agent_clis_version_is_part_of_its_journal_key(tmp_path: Path):
    skill = "---\nname: demo\ndescription: d\n---\n# Demo\nBe kind.\n"
    project = agentic_repo(tmp_path / "proj", {"app/README.md": "# app\n"}, skill)
    item = Item("t1", "Reply with the single word OK.", metadata={
        "workspace": {"fixture": "app"}, "task_dir": str(project),
        "verify": {"command": "true", "result": "exit_code", "timeout_s": 30}})
    cli, runs = tmp_path / "bin" / "claude", tmp_path / "runs"
    cli.parent.mkdir()
    env = {**os.environ, "PATH": f"{cli.parent}:{os.environ['PATH']}", "ANTHROPIC_API_KEY": "k" * 20}

    def student(version: str) -> AgentStudent:
        cli.write_text(CLI.format(python=sys.executable, version=version, runs=str(runs)))
        cli.chmod(cli.stat().st_mode | stat.S_IXUSR)
        return AgentStudent(CommandCfg(preset="claude", argv=("claude", "{profile_args}"), output="text",
                                       timeout_s=60, confine="off"),  # the stub counts its runs in tmp_path
                            project_root=project, model=None, env=env)

    path = tmp_path / "calls.sqlite"
    old = student("2.0.1")
    was = old.fingerprint()["version"]
    assert CachedStudent(old, CallCache(path)).run(skill, item).text == "done" and runs.read_text() == "1"
    assert CachedStudent(old, CallCache(path)).run(skill, item).cached  # the same CLI: answered from the journal
    new = student("2.0.10")  # the CLI updated in place
    assert new.fingerprint()["version"] != was  # the gate's drift check sees it…
    answer = CachedStudent(new, CallCache(path)).run(skill, item)
    assert not answer.cached and runs.read_text() == "2"  # …and the journal no longer answers the old version's run


# ---------------------------------------------------------------------------------------------- held-out ids
def test_no_teacher_prompt_names_a_val_or_test_item(tmp_path: Path, monkeypatch):
    """The gate's reasons name the val items a candidate fixed and broke (and why an item went unknown), and the
    negative buffer shows each rejection's reason to the teacher: val item ids reached the teacher's prompt,
    which recall (loop/recall.py) takes care never to show."""
    import re

    from skillgit.llm.factory import build_teacher
    from skillgit.project import open_project
    from skillgit.session import build_trainer, open_session
    from tests.helpers import demo_project

    class Recording:  # the demo's own simulated teacher, every request kept (a seam we own: our LLM protocol)
        def __init__(self, inner):
            self.inner, self.requests = inner, []

        @property
        def id(self) -> str:
            return self.inner.id

        def complete(self, request):
            self.requests.append(request)
            return self.inner.complete(request)

    root = demo_project(tmp_path / "demo")
    project = open_project(root, None, ["train.max_steps=3"])
    teacher = Recording(build_teacher(project.config, root))
    session = open_session(project, teacher=teacher, cache=False)
    build_trainer(session, run_id="r1", resume=False).train()
    texts = ["\n".join(m.content for m in r.messages) for r in teacher.requests]
    reasons = [m for t in texts for m in re.findall(r"<reason>\n?(.*?)</reason>", t, flags=re.S)]
    assert any("significance" in r or "per_item" in r for r in reasons), "no rejection reached the teacher"
    held_out = {i.id for i in (*session.splits.val, *session.splits.test)}
    named = sorted({i for t in texts for i in re.findall(r"rec-\d{4}", t) if i in held_out})
    assert not named, f"val/test items named in a teacher prompt: {named[:5]}"


def test_a_gate_reason_loses_its_held_out_items_and_keeps_its_counts():
    from skillgit.judging import without_held_out

    ids = {"rec-0040", "rec-0141", "rec-7"}
    reason = ("per_item: 2 val items regressed (tolerance 0.7): rec-0141 1.00 → 0.00, rec-7 unknown now (task "
              "'rec-7': verifier timed out) while the mean went 0.1 → 0.2; fixed 2 (rec-0040, rec-00401); "
              "broke 1 (rec-0141)")
    shown = without_held_out(reason, ids)
    assert not any(i in shown.replace("rec-00401", "") for i in ids) and "timed out" not in shown
    assert shown == ("per_item: 2 val items regressed (tolerance 0.7): a held-out item 1.00 → 0.00, a held-out item "
                     "unknown now while the mean went 0.1 → 0.2; fixed 2 (a held-out item, rec-00401); broke 1")
    assert without_held_out(reason, ()) == reason


# ---------------------------------------------------------------------------------------------- skill in the judge
@pytest.mark.parametrize("path", ["skillgit.yaml", "tasks.jsonl"])
def test_train_refuses_a_skill_path_that_is_the_judge(tmp_path: Path, path: str):
    """With skill.path naming the config or the tasks file, every edit the teacher made to the "skill" edited the
    judge (an accepted candidate rewrote skillgit.yaml's evaluation settings, or the expected answers): train ran.
    Now it refuses before any call, and leaves the repository as it was."""
    from tests.conftest import git, run_cli_inproc
    from tests.helpers import demo_project

    root = demo_project(tmp_path / "demo")
    before = git(root, "for-each-ref")
    done = run_cli_inproc("train", "--set", f"skill.path={path}", "--set", "train.max_steps=1", cwd=root)
    assert done.returncode != 0 and f"skill.path '{path}' overlaps the judge ({path})" in done.stderr, done.stderr
    assert "point skill.path at the skill file or package alone" in done.stderr
    assert git(root, "for-each-ref") == before and git(root, "status", "--porcelain") == ""

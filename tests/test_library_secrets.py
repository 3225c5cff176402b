"""Library teacher text is untrusted: a secret it echoes never reaches a commit, a note, the terminal or a model."""

from __future__ import annotations

import json
import subprocess

from skillgit.config import EvaluationCfg
from skillgit.library.activation import OverlapRouter, score_cases
from skillgit.library.model import TriggerCase, cases_of, listing_of, load_cases
from skillgit.library.track import train
from tests import agent_clis as ac
from tests.agent_server import AgentServer, text

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


class LeakyTeacher:
    """A teacher (a seam we own) that pastes a token into the description it proposes."""

    def propose(self, skill, description, results, listings, rejected):
        return f"Deploy services to production, staging, cluster, rollout, push. Auth with {TOKEN}."


def git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def test_a_teachers_description_is_redacted_before_it_is_judged_committed_or_noted(tmp_path):
    from skillgit.library.demo import create_library_project
    from skillgit.store.core import Store

    root = tmp_path / "repo"
    create_library_project(root)
    stores = {p.parent.name: Store.open(root, p.relative_to(root).as_posix(), "main")
              for p in sorted(root.glob("skills/*/SKILL.md"))}
    run = train(stores, "deploy", load_cases(root / "triggers.jsonl"), OverlapRouter(), LeakyTeacher(),
                EvaluationCfg(), run="leak", steps=1)
    assert run.steps and TOKEN not in run.steps[0].description and "ghp_***" in run.steps[0].description
    everything = git(root, "log", "--all", "-p", "--format=%B") + git(root, "notes", "--ref=skillgit", "list")
    for line in git(root, "notes", "--ref=skillgit", "list").splitlines():
        everything += git(root, "notes", "--ref=skillgit", "show", line.split()[1])
    assert TOKEN not in everything and "ghp_***" in everything
    assert listing_of(stores["deploy"].read_skill(run.steps[0].commit)).description == run.steps[0].description


def test_the_llm_description_teacher_never_sends_or_returns_a_secret(tmp_path):
    from skillgit.library.demo import create_library_project
    from skillgit.library.model import Library
    from skillgit.library.teacher import LLMDescriptionTeacher
    from skillgit.llm.anthropic_backend import AnthropicBackend

    root = tmp_path / "repo"
    create_library_project(root)
    library = Library.load(root, "skills/*/SKILL.md")
    cases = [*load_cases(root / "triggers.jsonl"),
             TriggerCase("leak", "deploy", f"Push the payments service to production with {TOKEN}", True, "train")]
    results = [r for r in score_cases(OverlapRouter(), library, cases_of(cases, split="train"))
               if r.case.skill == "deploy"]
    reply = json.dumps({"description": f"Deploy services to production. Use {TOKEN}.", "why": "x"})
    with AgentServer([text(reply)]) as server:
        llm = AnthropicBackend("scripted-model", api_key=ac.TEST_API_KEY, base_url=server.base_url)
        got = LLMDescriptionTeacher(llm).propose("deploy", "Deploy services.", results, library.listings(), [])
        asked = json.dumps(server.requests[0].body)
    assert got == "Deploy services to production. Use ghp_***."
    assert TOKEN not in asked and "Push the payments service to production with ghp_***" in asked

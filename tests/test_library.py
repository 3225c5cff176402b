"""Skill libraries: trigger cases, routers (simulated and from a real trace), per-skill F1, the activation track's
judge (listing-only edits, listing budget, gate, interference), its git steps, and `skillgit demo --library`."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from skillgit.agentic.trace import parse
from skillgit.config import EvaluationCfg
from skillgit.errors import SkillgitError
from skillgit.library.activation import (
    CaseResult,
    OverlapRouter,
    TraceRouter,
    loaded_from_trace,
    metrics,
    score_cases,
    split_score,
)
from skillgit.library.agent import AgentRunner
from skillgit.library.model import (
    DESCRIPTION_LIMIT,
    Library,
    LibrarySkill,
    Listing,
    TriggerCase,
    cases_of,
    listing_of,
    load_cases,
    with_listing,
)
from skillgit.library.teacher import SimulatedDescriptionTeacher
from skillgit.library.track import TrackCfg, check_edit, judge, train
from tests import agent_clis as ac  # (imported early: it reads $SKILLGIT_AGENT_CLIS at import)
from tests.agent_server import AgentServer, text, tool

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "library"


def skill_text(name: str, description: str, body: str = "# Body\n\nDo the thing.\n") -> str:
    return f"---\nname: {name}\ndescription: {json.dumps(description)}\nlicense: MIT\n---\n{body}"


def example() -> tuple[Library, list[TriggerCase]]:
    return Library.load(EXAMPLE, "skills/*/SKILL.md"), load_cases(EXAMPLE / "triggers.jsonl")


@dataclass
class CountingRouter:
    """The overlap router, counting how many prompts it was asked to route."""

    inner: OverlapRouter = field(default_factory=OverlapRouter)
    calls: int = 0

    def route(self, prompt, library, sample=0):
        self.calls += 1
        return self.inner.route(prompt, library, sample)


# ---------------------------------------------------------------------------------------------- the library
def test_with_listing_changes_only_name_and_description():
    text = "---\nname: deploy\ndescription: >-\n  Deploy\n  services.\nlicense: MIT\n---\n# Deploy\n\nbody: kept\n"
    new = with_listing(text, description="Ship it: to production, staging.")
    assert listing_of(new) == Listing("deploy", "Ship it: to production, staging.")
    assert new.endswith("---\n# Deploy\n\nbody: kept\n") and "license: MIT\n" in new
    assert listing_of(text).description == "Deploy services."  # a folded YAML value reads as one line
    assert check_edit(text, new) is None


def test_library_errors_name_the_file_and_the_fix(tmp_path):
    for name, doc in (("a", skill_text("same", "one")), ("b", skill_text("same", "two"))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "SKILL.md").write_text(doc)
    with pytest.raises(SkillgitError, match="two skills are named 'same': a/SKILL.md and b/SKILL.md"):
        Library.load(tmp_path)
    with pytest.raises(SkillgitError, match="over the host's limit of 1024"):
        listing_of(skill_text("long", "x" * (DESCRIPTION_LIMIT + 1)))
    with pytest.raises(SkillgitError, match="not valid"):
        listing_of(skill_text("Not Valid", "a description"))
    bad = tmp_path / "cases.jsonl"
    bad.write_text('{"id": "a", "skill": "x", "prompt": "p", "should_trigger": true}\n{"id": "b", "skill": "x"}\n')
    with pytest.raises(SkillgitError, match=r"cases.jsonl:2: .*missing prompt, should_trigger"):
        load_cases(bad)


# ---------------------------------------------------------------------------------------------- routers, F1
def test_overlap_router_picks_the_best_covering_skill_above_its_threshold():
    listings = Library.of([
        LibrarySkill("d/SKILL.md", skill_text("deploy", "Deploy services to production and staging.")),
        LibrarySkill("r/SKILL.md", skill_text("release-notes", "Write release notes and a changelog."))])
    router = OverlapRouter(threshold=0.25)
    assert router.route("Deploying the billing service to production", listings) == ("deploy",)
    assert router.route("Write the release notes for 4.1", listings) == ("release-notes",)
    assert router.route("Explain how garbage collection works in Java", listings) == ()
    noisy = OverlapRouter(noise=0.5, seed=3)
    prompts = [f"Deploy service number {i} to production" for i in range(40)]
    first = [noisy.route(p, listings, sample=1) for p in prompts]
    assert first == [noisy.route(p, listings, sample=1) for p in prompts]  # deterministic per seed and sample
    assert () in first and ("deploy",) in first  # the noise does drop picks, not all of them
    assert first != [noisy.route(p, listings, sample=2) for p in prompts]


def test_metrics_are_precision_recall_and_f1_per_skill_over_its_own_cases():
    def case(i: int, skill: str, should: bool) -> TriggerCase:
        return TriggerCase(f"{skill}-{i}", skill, f"prompt {i}", should)

    results = [CaseResult(case(1, "a", True), ("a",)), CaseResult(case(2, "a", True), ()),
               CaseResult(case(3, "a", False), ("a",)), CaseResult(case(4, "a", False), ("b",)),
               CaseResult(case(5, "b", True), ("b",))]
    m = metrics(results)
    assert (m["a"].tp, m["a"].fp, m["a"].fn, m["a"].tn) == (1, 1, 1, 1)
    assert m["a"].precision == m["a"].recall == m["a"].f1 == 0.5
    assert m["b"].f1 == 1.0
    score = split_score(results, "text")
    assert score.per_item == {"a-1": (1.0, 1.0), "a-2": (0.0, 0.0), "a-3": (0.0, 0.0), "a-4": (1.0, 1.0),
                              "b-5": (1.0, 1.0)}


def claude_stream(skill: str, *, error: bool = False) -> str:
    """Claude Code's `--output-format stream-json` for a run that calls its Skill tool on `skill`."""
    events = [
        {"type": "system", "subtype": "init", "tools": ["Bash", "Read", "Skill"]},
        {"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": "toolu_1", "name": "Skill", "input": {"skill": skill}}]}},
        {"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": error,
             "content": "<tool_use_error>Unknown skill</tool_use_error>" if error else f"Launching skill: {skill}"}]}},
        {"type": "result", "subtype": "success", "result": "done", "num_turns": 2, "usage": {}},
    ]
    return "".join(json.dumps(e) + "\n" for e in events)


def test_the_real_path_reads_the_loaded_skill_from_claude_codes_trace():
    names = ["deploy", "deploy-x", "release-notes"]
    assert loaded_from_trace(parse(claude_stream("deploy"), "claude-stream"), names) == ("deploy",)
    assert loaded_from_trace(parse(claude_stream("deploy-x"), "claude-stream"), names) == ("deploy-x",)
    assert loaded_from_trace(parse(claude_stream("deploy", error=True), "claude-stream"), names) == ()
    read = {"type": "assistant", "message": {"content": [
        {"type": "tool_use", "id": "t2", "name": "Read",
         "input": {"file_path": ".claude/skills/release-notes/SKILL.md"}}]}}
    ok = {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t2", "content": "---"}]}}
    stdout = json.dumps(read) + "\n" + json.dumps(ok) + "\n"
    assert loaded_from_trace(parse(stdout, "claude-stream"), names) == ("release-notes",)

    seen: list[tuple[str, int]] = []

    def run(prompt: str, library, sample: int) -> str:  # what an agent runner returns: the agent's stdout
        seen.append((prompt, sample))
        return claude_stream("deploy" if "production" in prompt else "release-notes")

    library, cases = example()
    results = score_cases(TraceRouter(run), library, cases_of(cases, "deploy", "val"))
    assert len(seen) == len({c.prompt for c in cases_of(cases, "deploy", "val")})
    assert {r.case.id for r in results if r.fired} == {c.id for c in cases_of(cases, "deploy", "val")
                                                      if "production" in c.prompt}


# ---------------------------------------------------------------------------------------------- the judge
STEALING = ("Deploy services. Use when the user mentions production, release, staging, cluster, rollout, push, "
            "version.")
CAREFUL = "Deploy services. Use when the user mentions production, staging, cluster, rollout, push."


def test_a_description_that_steals_another_skills_triggers_is_rejected_for_interference():
    library, cases = example()
    deploy = library.skill("deploy").text
    verdict = judge(library, "deploy", with_listing(deploy, description=STEALING), cases, OverlapRouter(),
                    EvaluationCfg())
    assert not verdict.accept and verdict.stage == "interference"
    assert verdict.reason.startswith("interference: skill 'release-notes' lost 2 val trigger case(s)")
    harmed = {i.skill: i for i in verdict.interference}
    assert harmed["release-notes"].harmed and not harmed["db-migrate"].harmed
    assert harmed["release-notes"].broke == ("release-notes-15", "release-notes-16")
    assert verdict.gate is not None and verdict.gate.accept  # its own gate alone would have taken it
    assert verdict.after is not None and verdict.before is not None and verdict.after.f1 > verdict.before.f1

    fine = judge(library, "deploy", with_listing(deploy, description=CAREFUL), cases, OverlapRouter(),
                 EvaluationCfg())
    assert fine.accept and fine.stage == "accepted", fine.reason
    assert fine.reason.startswith("significance:")


def test_a_candidate_over_the_listing_budget_is_rejected_before_any_scoring_call():
    library, cases = example()
    deploy = library.skill("deploy").text
    long = "Deploy services to production. " + "Handles rollouts, canaries and clusters. " * 20
    router = CountingRouter()
    budget = library.listing_chars() + 200
    verdict = judge(library, "deploy", with_listing(deploy, description=long.strip()), cases, router,
                    EvaluationCfg(), TrackCfg(listing_budget=budget))
    assert not verdict.accept and verdict.stage == "budget" and not verdict.scored
    assert router.calls == 0
    assert verdict.reason.startswith("listing budget:") and f"over the budget of {budget}" in verdict.reason
    within = judge(library, "deploy", with_listing(deploy, description=CAREFUL), cases, router, EvaluationCfg(),
                   TrackCfg(listing_budget=budget))
    assert within.stage == "accepted" and router.calls > 0


def test_the_activation_track_edits_only_the_listing():
    library, cases = example()
    deploy = library.skill("deploy").text
    router = CountingRouter()
    body_edit = with_listing(deploy, description=CAREFUL) + "\nAlways deploy on Fridays.\n"
    verdict = judge(library, "deploy", body_edit, cases, router, EvaluationCfg())
    assert verdict.stage == "edit" and "the body changed" in verdict.reason and router.calls == 0
    too_long = with_listing(deploy, description="production " * 110)
    assert "over the limit of 1024" in judge(library, "deploy", too_long, cases, router, EvaluationCfg()).reason
    other_key = deploy.replace("name: deploy\n", "name: deploy\nallowed-tools: Bash\n")
    assert "allowed-tools changed" in judge(library, "deploy", other_key, cases, router, EvaluationCfg()).reason
    assert router.calls == 0


# ---------------------------------------------------------------------------------------------- git, CLI
def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def test_activation_steps_are_commits_with_gate_notes_and_rejected_tags(tmp_path):
    from skillgit.library.demo import create_library_project
    from skillgit.store.core import Store

    create_library_project(tmp_path / "repo")
    root = tmp_path / "repo"
    seed_tip = git(root, "rev-parse", "main").strip()
    stores = {p.parent.name: Store.open(root, p.relative_to(root).as_posix(), "main")
              for p in sorted(root.glob("skills/*/SKILL.md"))}
    cases = load_cases(root / "triggers.jsonl")
    run = train(stores, "deploy", cases, OverlapRouter(), SimulatedDescriptionTeacher(), EvaluationCfg(),
                run="act-test", steps=4)
    assert [(s.verdict.stage, s.description) for s in run.steps] == [("interference", STEALING),
                                                                     ("accepted", CAREFUL)]
    assert git(root, "tag", "-l", "rejected/*").split() == ["rejected/act-test/0001"]
    assert git(root, "rev-parse", "main^").strip() == seed_tip  # one accepted commit on the branch
    assert listing_of(stores["deploy"].read_skill()).description == CAREFUL
    notes = [json.loads(line) for line in git(root, "notes", "--ref=skillgit", "show", "main").splitlines()]
    kinds = {n["kind"]: n for n in notes}
    assert kinds["gate"]["reason"].startswith("significance:") and kinds["activation"]["stage"] == "accepted"
    rejected = [json.loads(line) for line in
                git(root, "notes", "--ref=skillgit", "show", "rejected/act-test/0001^{commit}").splitlines()]
    activation = next(n for n in rejected if n["kind"] == "activation")
    assert activation["stage"] == "interference"
    assert [i["skill"] for i in activation["interference"] if i["harmed"]] == ["release-notes"]
    # the candidate's body is the incumbent's: only the description moved
    assert stores["deploy"].read_skill().split("---\n", 2)[2] == \
        Library.load(EXAMPLE, "skills/*/SKILL.md").skill("deploy").text.split("---\n", 2)[2]


def test_demo_library_raises_one_skills_f1_without_lowering_the_others(cli_inproc, tmp_path):
    folder = tmp_path / "demo"
    result = cli_inproc("demo", "--library", "--dir", str(folder), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "deploy: val F1 0.00 → 1.00 after 2 step(s): 1 accepted, 1 rejected" in result.stdout
    assert "other skills' val F1: not lowered" in result.stdout
    assert "rejected (interference)" in result.stderr and "SIMULATED router" in result.stderr
    assert git(folder, "tag", "-l", "rejected/activation-*").split() == ["rejected/activation-deploy-seed0/0001"]
    accepted = git(folder, "log", "--format=%H", "--fixed-strings", "--grep",
                   "activation: deploy description (step 2)", "main").split()
    assert len(accepted) == 1
    library = Library.load(folder, "skills/*/SKILL.md")
    assert library.skill("deploy").listing.description == CAREFUL  # the body track kept the trained description
    for name in ("release-notes", "db-migrate"):
        assert library.skill(name).text == (EXAMPLE / f"skills/{name}/SKILL.md").read_text()
    # the body track (train --skill deploy) ran on deploy's file only, and its accepted steps are on main
    body = [line for line in result.stdout.splitlines() if line.startswith("body track (deploy")]
    assert body and "trained description kept" in body[0], result.stdout
    assert " 0 accepted" not in body[0]  # (deterministic: seed 0 accepts body steps)
    assert library.skill("deploy").text.split("---\n", 2)[2] != \
        (EXAMPLE / "skills/deploy/SKILL.md").read_text().split("---\n", 2)[2]
    changed = git(folder, "log", "--format=", "--name-only", "--branches", "--tags", f"^{accepted[0]}").split()
    assert changed and set(changed) == {"skills/deploy/SKILL.md"}, changed


def test_demo_library_refuses_other_demo_modes(cli_inproc, tmp_path):
    result = cli_inproc("demo", "--library", "--sleep", cwd=tmp_path)
    assert result.returncode != 0 and "--library excludes --agentic and --sleep" in result.stderr


def test_library_skill_records_are_plain():
    s = LibrarySkill("a/SKILL.md", skill_text("a", "Alpha things."))
    assert s.name == "a" and s.listing.chars == len("a") + len("Alpha things.")


# ---------------------------------------------------------------------------------------------- the real path
FAKE_AGENT = r"""
import json, pathlib, sys
prompt = sys.argv[1]
installed = sorted(p.parent.name for p in pathlib.Path(".claude/skills").glob("*/SKILL.md"))
if "fail" in prompt:
    sys.exit("provider error 529")
pick = next((n for n in installed if n in prompt), None)
events = [{"type": "system", "subtype": "init", "tools": ["Skill"], "installed": installed}]
if pick:
    events += [{"type": "assistant", "message": {"content": [
                   {"type": "tool_use", "id": "t1", "name": "Skill", "input": {"skill": pick}}]}},
               {"type": "user", "message": {"content": [
                   {"type": "tool_result", "tool_use_id": "t1", "content": "Launching skill"}]}}]
events.append({"type": "result", "subtype": "success", "result": ",".join(installed)})
print("\n".join(json.dumps(e) for e in events))
"""


def test_agent_runner_installs_the_whole_library_and_leaves_failed_runs_unknown(tmp_path):
    import sys

    library, _ = example()
    runner = AgentRunner([sys.executable, "-c", FAKE_AGENT, "{prompt}"], {"PATH": "/usr/bin:/bin"},
                         workdir=tmp_path)
    stdout = runner("use db-migrate please", library)
    assert parse(stdout, "claude-stream").final == "db-migrate,deploy,release-notes"  # all three installed
    cases = [TriggerCase("a", "db-migrate", "use db-migrate please", True),
             TriggerCase("b", "deploy", "this will fail", True), TriggerCase("c", "deploy", "nothing here", True)]
    errors: dict[str, str] = {}
    results = score_cases(TraceRouter(runner), library, cases, errors=errors)
    assert [(r.case.id, r.loaded) for r in results] == [("a", ("db-migrate",)), ("c", ())]
    assert list(errors) == ["b"] and "provider error 529" in errors["b"]  # unknown, not "did not fire"
    assert not any(p.exists() for p in runner.runs)  # every workspace removed
    with pytest.raises(SkillgitError, match="starts with '-'"):
        runner("--dangerously-skip-permissions", library)


@pytest.mark.agent_cli
def test_real_claude_the_activation_scorer_reads_the_skill_claude_loaded(tmp_path):
    claude = ac.find_cli("claude")
    if claude is None:
        pytest.skip("claude is not installed (.venv/bin/python -m tests.agent_clis install)")
    home = tmp_path / "agent-home"
    home.mkdir()
    library, cases = example()
    case = next(c for c in cases if c.id == "release-notes-07")
    with AgentServer([tool("Skill", skill="release-notes"), text("Here are the notes.")]) as server:
        env = ac.claude_env(home, server.base_url)
        runner = AgentRunner(ac.claude_print_argv(claude, "{prompt}", allowed_tools=["Read", "Skill"]), env,
                             workdir=tmp_path)
        results = score_cases(TraceRouter(runner), library, [case])
        first, second = server.agent_requests()
    assert [r.loaded for r in results] == [("release-notes",)] and results[0].correct
    for listing in library.listings():  # the whole library was listed to the agent, by description
        assert f"- {listing.name}: {listing.description}" in first.context_text()
    assert case.prompt in json.dumps(first.body)
    assert "Group merged pull requests by label" in second.messages_text()  # Claude Code injected the body
    assert not any(p.exists() for p in runner.runs)


def test_llm_description_teacher_asks_a_real_sdk_with_the_misses_and_the_other_skills(tmp_path):
    from skillgit.library.teacher import LLMDescriptionTeacher
    from skillgit.llm.anthropic_backend import AnthropicBackend

    library, cases = example()
    results = [r for r in score_cases(OverlapRouter(), library, cases_of(cases, split="train"))
               if r.case.skill == "deploy"]
    rejected = [(STEALING, "interference: skill 'release-notes' lost 2 val trigger case(s)")]
    reply = json.dumps({"description": CAREFUL, "why": "names the environments users mention"})
    with AgentServer([text(reply), text("not json at all"), text("still not json")]) as server:
        llm = AnthropicBackend("scripted-model", api_key=ac.TEST_API_KEY, base_url=server.base_url)
        skipped: list[str] = []
        teacher = LLMDescriptionTeacher(llm, skipped=skipped)
        assert teacher.propose("deploy", "Deploy services.", results, library.listings(), rejected) == CAREFUL
        assert teacher.propose("deploy", "Deploy services.", results, library.listings(), rejected) is None
        asked = json.dumps(server.requests[0].body)
    assert skipped and skipped[0].startswith("malformed teacher reply")
    assert "Push the payments service to production tonight" in asked  # a train miss
    assert "Push the billing service" not in asked  # never a val prompt
    assert "release-notes: Write release notes" in asked and "rejected because: interference" in asked


# ---------------------------------------------------------------------------------------------- skills: config
LIBRARY_CONFIG = """\
skills:
  deploy: {path: skills/deploy/SKILL.md, tasks: tasks.jsonl, triggers: triggers.jsonl}
  release-notes: {path: skills/release-notes/SKILL.md, triggers: triggers.jsonl}
  db-migrate: {path: skills/db-migrate/SKILL.md, triggers: triggers.jsonl}
model:
  teacher_backend: simulated
  teacher_model: sim-teacher
  student_backend: simulated
  student_model: sim-student
train:
  seed: 0
env:
  tasks: tasks.jsonl
"""


def library_project(tmp_path: Path, config: str = LIBRARY_CONFIG) -> Path:
    from skillgit.config import SimulatedCfg
    from skillgit.library.demo import create_library_project
    from skillgit.world import generate_tasks

    root = tmp_path / "lib"
    create_library_project(root)
    (root / "skillgit.yaml").write_text(config)
    tasks = generate_tasks(SimulatedCfg(seed=0), 40)
    (root / "tasks.jsonl").write_text("".join(json.dumps(t.to_dict()) + "\n" for t in tasks))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "config and tasks")
    return root


def test_train_skill_activation_through_the_cli_commits_on_the_library_branch(cli, tmp_path):
    root = library_project(tmp_path)
    result = cli("train", "--skill", "deploy", "--activation", cwd=root)
    assert result.returncode == 0, result.stderr
    assert "deploy: val F1 0.00 → 1.00 after 2 step(s): 1 accepted, 1 rejected" in result.stdout
    assert "rejected (interference)" in result.stderr
    assert listing_of((root / "skills/deploy/SKILL.md").read_text()).description == CAREFUL  # worktree synced
    assert len(git(root, "tag", "-l", "rejected/activation-deploy-*").split()) == 1
    again = cli("train", "--skill", "deploy", "--activation", cwd=root)  # nothing left to learn on train
    assert again.returncode == 0 and "nothing to learn" in again.stdout, again.stderr


def test_train_skill_errors_name_the_key_and_the_choices(cli_inproc, tmp_path):
    root = library_project(tmp_path)
    missing = cli_inproc("train", "--skill", "nope", "--activation", cwd=root)
    assert missing.returncode != 0 and "choose one of deploy, release-notes, db-migrate" in missing.stderr
    bad = library_project(tmp_path / "b", LIBRARY_CONFIG.replace("triggers: triggers.jsonl}", "trigger: t}", 1))
    typo = cli_inproc("train", "--skill", "deploy", "--activation", cwd=bad)
    assert "unknown config key 'skills.deploy.trigger'" in typo.stderr and "skills.deploy.triggers" in typo.stderr
    outside = library_project(tmp_path / "c", LIBRARY_CONFIG.replace("skills/deploy/SKILL.md", "../x/SKILL.md"))
    assert "is outside the repository" in cli_inproc("train", "--skill", "deploy", cwd=outside).stderr
    assert "--activation needs --skill" in cli_inproc("train", "--activation", cwd=root).stderr


def test_train_skill_runs_the_body_track_on_that_skills_file_and_tasks(cli_inproc, tmp_path):
    root = library_project(tmp_path)
    before = {p: (root / p).read_text() for p in ("skills/release-notes/SKILL.md", "skills/db-migrate/SKILL.md")}
    base = git(root, "rev-parse", "HEAD").strip()
    result = cli_inproc("train", "--skill", "deploy", "--set", "train.max_steps=1", "--set", "train.batch_size=8",
                        "--json", cwd=root)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["steps"] >= 1 and out["accepted"] + out["rejected"] >= 1
    changed = git(root, "log", "--format=", "--name-only", "--branches", "--tags", f"^{base}").split()
    assert changed and set(changed) == {"skills/deploy/SKILL.md"}, changed  # its step touched deploy's file only
    assert {p: (root / p).read_text() for p in before} == before


def test_a_new_activation_run_does_not_propose_an_earlier_rejected_description(tmp_path):
    from skillgit.library.demo import create_library_project
    from skillgit.library.track import earlier_rejections
    from skillgit.store.core import Store

    root = tmp_path / "repo"
    create_library_project(root)
    stores = {p.parent.name: Store.open(root, p.relative_to(root).as_posix(), "main")
              for p in sorted(root.glob("skills/*/SKILL.md"))}
    cases = load_cases(root / "triggers.jsonl")
    first = train(stores, "deploy", cases, OverlapRouter(), SimulatedDescriptionTeacher(), EvaluationCfg(),
                  run="first", steps=1)
    assert [s.verdict.stage for s in first.steps] == ["interference"]
    buffer = earlier_rejections(stores["deploy"], "deploy")
    assert buffer == [(STEALING, first.steps[0].verdict.reason)]
    assert earlier_rejections(stores["release-notes"], "release-notes") == []
    second = train(stores, "deploy", cases, OverlapRouter(), SimulatedDescriptionTeacher(), EvaluationCfg(),
                   run="second", steps=1)
    assert [(s.verdict.stage, s.description) for s in second.steps] == [("accepted", CAREFUL)]

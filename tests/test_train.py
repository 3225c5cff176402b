"""Full training runs on the simulated world, in real git repositories: git state after a run, the gate and
the negative buffer, update modes and epoch-end mechanisms with a scripted teacher, budgets, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillgit.cli.demo import create_project
from skillgit.errors import SkillgitError
from skillgit.loop.events import Event
from skillgit.project import open_project
from skillgit.session import build_trainer, open_session
from tests.conftest import git, run_cli, run_cli_inproc
from tests.scripted import ScriptedTeacher


@pytest.fixture
def sim_project(tmp_path):
    def make(seed: int = 0, name: str = "proj") -> Path:
        folder = tmp_path / name
        create_project(folder, seed)
        return folder
    return make


def train(folder: Path, *sets: str, run_id: str = "r1", events: list | None = None, teacher=None):
    project = open_project(folder, None, list(sets))
    session = open_session(project, teacher=teacher, cache=teacher is None)
    trainer = build_trainer(session, run_id=run_id, resume=False,
                            on_event=(events.append if events is not None else (lambda e: None)))
    return trainer.train(), session


def refs(folder: Path, prefix: str) -> list[str]:
    out = git(folder, "for-each-ref", "--format=%(refname)", prefix)
    return out.splitlines() if out else []


def test_full_run_leaves_exactly_the_promised_git_state(sim_project):
    folder = sim_project()
    seed_tip = git(folder, "rev-parse", "main")
    status_before = git(folder, "status", "--porcelain")
    (folder / "notes.txt").write_text("unrelated dirty file\n")
    status_before = git(folder, "status", "--porcelain")
    events: list[Event] = []
    result, session = train(folder, "train.max_steps=6", events=events)

    ends = [e.outcome.to_dict() for e in events if e.kind == "step_end"]
    accepted = [d for d in ends if d["verdict"] == "accepted"]
    rejected = [d for d in ends if d["verdict"] == "rejected"]
    assert accepted and rejected, "the demo world must show both verdicts"
    assert result.accepted == len(accepted) and result.rejected == len(rejected)
    # main advanced by the accepted steps only (first-parent chain from the seed)
    chain = git(folder, "rev-list", "--first-parent", f"{seed_tip}..main").splitlines()
    assert len(chain) == len(accepted)
    for sha in chain:
        assert "Skillgit-Run: r1" in git(folder, "show", "-s", "--format=%B", sha)
    # one tag per rejected step, no candidate left, notes on every candidate
    assert len(refs(folder, "refs/tags/rejected/r1")) == len(rejected)
    assert refs(folder, "refs/heads/candidates") == []
    for sha in chain + [git(folder, "rev-parse", f"{t}^{{commit}}") for t in refs(folder, "refs/tags/rejected")]:
        note = git(folder, "notes", "--ref", "skillgit", "show", sha)
        kinds = {json.loads(line)["kind"] for line in note.splitlines() if line.strip()}
        assert {"candidate", "gate", "decision"} <= kinds
    # the working tree and index were updated only by the guarded fast-forward: clean skill file, dirt kept
    assert git(folder, "status", "--porcelain") == status_before
    assert (folder / "SKILL.md").read_text() == session.store.read_skill()
    # the run is recorded in git and the test score improved over the seed
    assert refs(folder, "refs/skillgit/runs/r1")
    assert result.scores["final"]["test"] > result.scores["seed"]["test"]


def test_rejected_step_note_records_every_edit_fate_and_per_item_scores(sim_project):
    folder = sim_project()
    train(folder, "train.max_steps=4", "evaluation.gate=strict", "evaluation.gate_repeats=1")
    tag = refs(folder, "refs/tags/rejected/r1")[0]
    sha = git(folder, "rev-parse", f"{tag}^{{commit}}")
    records = [json.loads(x) for x in git(folder, "notes", "--ref", "skillgit", "show", sha).splitlines() if x.strip()]
    cand = next(r for r in records if r["kind"] == "candidate")
    gate = next(r for r in records if r["kind"] == "gate")
    assert cand["apply"] and all("status" in f and "edit" in f for f in cand["apply"])
    assert cand["patches"] and "usage" in cand and cand["usage"]["by_stage"]
    assert gate["val"]["per_item"] and gate["score_after"] <= gate["score_before"]


@pytest.mark.slow
def test_gate_off_lets_regressions_in(sim_project):
    gated_events: list[Event] = []
    ungated_events: list[Event] = []
    train(sim_project(3, "a"), "train.max_steps=8", "optimizer.use_negative_buffer=false", events=gated_events)
    train(sim_project(3, "b"), "train.max_steps=8", "optimizer.use_negative_buffer=false",
          "evaluation.use_gate=false", events=ungated_events)
    gated = [e.outcome.to_dict() for e in gated_events if e.kind == "step_end"]
    ungated = [e.outcome.to_dict() for e in ungated_events if e.kind == "step_end"]
    worse = lambda d: d["score_after"] < d["score_before"]  # noqa: E731
    assert not any(worse(d) and d["verdict"] == "accepted" for d in gated)
    assert any(worse(d) and d["verdict"] == "accepted" for d in ungated)
    # without the gate only candidates with nothing applied are rejected
    assert all(d["reason"] == "no edit could be applied" for d in ungated if d["verdict"] == "rejected")


def test_negative_buffer_reaches_the_teacher_and_prevents_repeats(sim_project):
    teacher_prompts = []

    class Spy:
        def __init__(self, inner):
            self.inner = inner

        @property
        def id(self):
            return self.inner.id

        def complete(self, request):
            teacher_prompts.append((request.stage, "\n".join(m.content for m in request.messages)))
            return self.inner.complete(request)

    from skillgit.config import SimulatedCfg
    from skillgit.world import SimulatedTeacher

    folder = sim_project()
    result, session = train(folder, "train.max_steps=6", "optimizer.use_meta_reflect=false",
                            teacher=Spy(SimulatedTeacher(SimulatedCfg(seed=0))))
    rejected = session.store.negative_buffer(8)
    assert rejected
    later = [p for stage, p in teacher_prompts
             if stage == "reflect" and "(none)" not in p.split("<rejected_edits>")[1][:20]]
    assert later, "after a rejection the reflect prompt must carry the rejected edits"
    assert rejected[-1].edit.content.splitlines()[0] in "\n".join(later)


def test_patch_mode_with_scripted_teacher_applies_and_records_statuses(sim_project):
    folder = sim_project()
    teacher = ScriptedTeacher(default={
        "reflect": {"reasoning": "dates", "edits": [
            {"op": "append", "content": "Write every date as YYYY-MM-DD (ISO 8601)."},
            {"op": "replace", "target": "no such line", "content": "x"},
            {"op": "delete", "target": "name: "}]},
        "merge": {"reasoning": "same", "edits": [
            {"op": "append", "content": "Write every date as YYYY-MM-DD (ISO 8601).", "merged_from": ["e1", "e4"]},
            {"op": "replace", "target": "no such line", "content": "x", "merged_from": ["e2"]},
            {"op": "delete", "target": "name: ", "merged_from": ["e3"]}]},
        "rank": {"reasoning": "", "ranking": ["e1", "e2", "e3"]},
    })
    result, session = train(folder, "train.max_steps=1", "optimizer.use_slow_update=false",
                            "optimizer.use_meta_skill=false", "optimizer.use_meta_reflect=false",
                            "optimizer.learning_rate=3", teacher=teacher)
    entry = session.store.history("r1")[-1]
    records = session.store.read_notes(entry.sha)
    cand = next(r for r in records if r["kind"] == "candidate")
    statuses = {f["edit"]["content"] or f["edit"]["target"]: f["status"] for f in cand["apply"]}
    assert statuses["Write every date as YYYY-MM-DD (ISO 8601)."] == "applied"
    assert statuses["x"] == "skipped_target_not_found"
    assert statuses["name:"] == "skipped_protected_region"  # front matter is protected
    assert "YYYY-MM-DD" in session.store.read_skill(entry.sha)


@pytest.mark.parametrize("mode", ["rewrite_from_suggestions", "full_rewrite_minibatch"])
def test_rewrite_modes_keep_front_matter_and_regions(sim_project, mode):
    folder = sim_project()
    seed = (folder / "SKILL.md").read_text()
    front = seed.split("---\n")[1]
    bad_rewrite = "# New skill without front matter\n\nWrite every date as YYYY-MM-DD.\n"
    teacher = ScriptedTeacher(default={
        "reflect": {"reasoning": "", "edits": [{"op": "append", "content": "Write dates as YYYY-MM-DD."}]},
        "merge": {"reasoning": "", "edits": [{"op": "append", "content": "Write dates as YYYY-MM-DD.",
                                              "merged_from": ["e1"]}]},
        "rank": {"reasoning": "", "ranking": ["e1"]},
        "rewrite": {"reasoning": "", "skill": bad_rewrite},
        "full_rewrite": {"reasoning": "", "skill": bad_rewrite},
        "pick": {"reasoning": "", "choice": "c1"},
    })
    _, session = train(folder, "train.max_steps=1", f"optimizer.skill_update_mode={mode}",
                       "optimizer.use_slow_update=false", "optimizer.use_meta_skill=false",
                       "optimizer.use_meta_reflect=false", "evaluation.use_gate=false", teacher=teacher)
    text = session.store.read_skill(session.store.history("r1")[-1].sha)
    # the rewrite dropped the front matter: it is restored, byte for byte, and the rewrite's content is in
    assert text.startswith("---\n" + front + "---\n")
    assert "YYYY-MM-DD" in text


def test_epoch_end_writes_slow_update_region_and_meta_skill(sim_project):
    folder = sim_project()
    events: list[Event] = []
    result, session = train(folder, "train.num_epochs=2", "train.max_steps=6",
                            "optimizer.slow_update_gate_with_selection=false", events=events)
    kinds = [e.outcome.kind.value for e in events if e.kind == "step_end"]
    assert "slow_update" in kinds and "meta_reflect" in kinds
    text = session.store.read_skill()
    assert "<!-- skillgit:slow-update -->" in text  # forced: recorded in the note, always lands
    entry = next(e for e in session.store.history("r1") if str(e.step).endswith("slow-update"))
    cand = next(r for r in session.store.read_notes(entry.sha) if r["kind"] == "candidate")
    assert cand["forced"] is True
    files = session.store.load_run("r1")
    assert files["meta_skill.md"].strip()  # teacher-side memory lives with the run, not in the skill
    assert files["meta_skill.md"].strip() not in text


def test_autonomous_learning_rate_is_bounded_and_recorded(sim_project):
    folder = sim_project()
    teacher = ScriptedTeacher(default={
        "lr": {"reasoning": "many failures", "num_edits": 99},
        "merge": {"reasoning": "", "edits": [{"op": "append", "content": f"Rule {i}.", "merged_from": [f"e{i + 1}"]}
                                             for i in range(6)]},
        "reflect": {"reasoning": "", "edits": [{"op": "append", "content": f"Rule {i}."} for i in range(6)]},
        "rank": {"reasoning": "", "ranking": [f"e{i}" for i in range(1, 7)]},
    })
    _, session = train(folder, "train.max_steps=1", "optimizer.lr_scheduler=autonomous",
                       "optimizer.learning_rate=3", "optimizer.min_learning_rate=1", "gradient.minibatch_size=20",
                       "optimizer.use_slow_update=false", "optimizer.use_meta_skill=false",
                       "optimizer.use_meta_reflect=false", teacher=teacher)
    entry = session.store.history("r1")[-1]
    cand = next(r for r in session.store.read_notes(entry.sha) if r["kind"] == "candidate")
    assert cand["lr"] == {"mode": "autonomous", "asked": 99, "budget": 3, "reasoning": "many failures"}
    assert sum(f["status"] == "skipped_over_budget" for f in cand["apply"]) == 3


def test_budget_stops_before_the_call_that_would_cross_it_and_says_which(sim_project):
    folder = sim_project()
    # 200 calls end inside a step (the seed's val scoring alone takes 90): the run stops before the call that would
    # cross the limit, not at the next step boundary
    result, session = train(folder, "budget.max_calls=200", "env.workers=4", "model.student.concurrency=4",
                            "model.teacher.concurrency=4", "gradient.analyst_workers=4")
    assert result.status == "stopped" and "budget.max_calls" in result.reason
    paid = session.ledger.total().calls
    # never crossed, whatever runs at once (calls in flight count as made: before, up to the concurrency overshot)
    assert 200 - 4 <= paid <= 200 and session.ledger.in_flight == 0
    assert "test" not in result.usage["by_stage"]  # the budget holds for the final test scoring too
    assert all(s["test"] is None for s in result.scores.values())
    assert refs(folder, "refs/heads/candidates") == []
    progress = json.loads(session.store.load_run("r1")["progress.json"])
    assert progress["status"] == "stopped" and progress["stop_reason"] == result.reason
    # a bigger budget resumes the run where it stopped, paying nothing twice
    resumed, _ = train(folder, "budget.max_calls=100000", "train.max_steps=2", "env.workers=4",
                       "model.student.concurrency=4", "model.teacher.concurrency=4", "gradient.analyst_workers=4")
    assert resumed.status == "finished"


def test_a_budget_smaller_than_the_seeds_scoring_stops_before_the_first_step_and_resumes(sim_project):
    """The seed's val scoring (30 items × 3 samples: 90 calls) is under the budget too: it was scored before the run
    checked any budget, so `budget.max_calls=50` paid 90 calls."""
    folder = sim_project()
    sets = ("env.workers=4", "model.student.concurrency=4")
    stopped, session = train(folder, "budget.max_calls=50", *sets)
    assert stopped.status == "stopped" and stopped.scores == {} and stopped.steps == 0
    assert stopped.reason.startswith("budget.max_calls reached") and "before the first step" in stopped.reason
    assert session.ledger.total().calls == 50 and session.ledger.in_flight == 0
    progress = json.loads(session.store.load_run("r1")["progress.json"])
    assert progress["status"] == "stopped" and "budget.max_calls" in progress["stop_reason"]
    assert refs(folder, "refs/heads/candidates") == []
    # a larger budget resumes it: the 50 journaled calls are not paid again, and the budget counts the whole run
    resumed, session = train(folder, "budget.max_calls=100000", "train.max_steps=1", *sets)
    assert resumed.status == "finished" and session.ledger.total().calls > 0
    assert session.ledger.saved.get("gate", 0) >= 50


def test_bad_config_combination_is_rejected_with_a_hint(sim_project):
    folder = sim_project()
    proc = run_cli_inproc("train", "--set", "optimizer.skill_update_mode=rewrite_from_suggestions",
                          "--set", "optimizer.learning_rate=0", "--set", "optimizer.min_learning_rate=0", cwd=folder)
    assert proc.returncode == 2
    assert "learning_rate" in proc.stderr and "hint:" in proc.stderr and "Traceback" not in proc.stderr


def test_simulated_student_refuses_real_tasks(tmp_path, make_repo):
    root = make_repo({"SKILL.md": "# S\n", "tasks.jsonl": "".join(
        json.dumps({"id": f"q{i}", "input": "2+2?", "expected": "4"}) + "\n" for i in range(12)),
        "skillgit.yaml": "model: {teacher_backend: simulated, student_backend: simulated}\n"
                         "env: {split_ratio: '1:1:1'}\n"})
    with pytest.raises(SkillgitError, match="not simulated-world tasks"):
        open_session(open_project(root))


def test_cli_train_dry_run_eval_and_status(sim_project):
    """The smoke test of `train`, `status` and `eval` as real processes; the dry run in-process."""
    folder = sim_project()
    dry = run_cli_inproc("train", "--dry-run", "--set", "train.max_steps=3", cwd=folder)
    assert dry.returncode == 0, dry.stderr
    assert "3 step(s)" in dry.stdout and "estimated model calls" in dry.stdout
    assert refs(folder, "refs/skillgit/runs") == []  # nothing spent, nothing written
    proc = run_cli("train", "--set", "train.max_steps=2", "--json", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["steps"] == 2 and set(result["scores"]) == {"seed", "best", "final"}
    status = run_cli_inproc("status", "--json", cwd=folder)
    info = json.loads(status.stdout)
    assert info["status"] == "finished" and (info["step"], info["total_steps"]) == (2, 2) and info["calls"] > 0
    ev = run_cli_inproc("eval", "--split", "test", "--json", cwd=folder)
    data = json.loads(ev.stdout)
    assert data["split"] == "test" and len(data["items"]) == data["n"] and abs(
        data["mean"] - result["scores"]["final"]["test"]) < 1e-9


def test_token_budget_stops_the_run_and_dry_run_names_the_limits(sim_project):
    folder = sim_project()
    result, session = train(folder, "budget.max_tokens=20000")
    assert result.status == "stopped" and "budget.max_tokens" in result.reason
    assert session.ledger.total().total_tokens >= 20000  # stopped before the next call, mid-step if need be
    dry = run_cli_inproc("train", "--dry-run", "--set", "budget.max_tokens=20000", cwd=folder)
    assert "budget limits: max_tokens=20000" in dry.stdout

"""Parallel proposals (`optimizer.proposals: P`): P candidates per step gated together, the best the gate accepted
kept as step N and the others rejected as `sN-pK`; the gate's bar rises with P (Bonferroni); the val repeats run as
one wave; a kill between a step's decisions resumes to the same history."""

from __future__ import annotations

import dataclasses
import json
import signal
import threading
import time

import pytest

from skillgit.cli.demo import create_project
from skillgit.config import EvaluationCfg
from skillgit.llm.base import Reply
from skillgit.loop import gate
from skillgit.store.refs import parse_step_spec
from skillgit.types import Item, Score
from tests.conftest import git, run_cli, run_cli_inproc
from tests.test_gate import check, split, ups

P3 = ["--set", "optimizer.proposals=3"]


def _log(folder) -> list[dict]:
    return json.loads(run_cli_inproc("log", "--json", cwd=folder).stdout)


def _candidate_note(folder, step: str) -> dict:
    shown = json.loads(run_cli_inproc("show", step, "--json", cwd=folder).stdout)
    return next(n for n in shown["notes"] if n.get("kind") == "candidate")


# ---------------------------------------------------------------------------------------------- the gate's bar
def test_the_significance_bar_rises_with_the_number_of_candidates():
    # 3 clean gains of 20 items: z = 1.83 passes k = 1.75 alone, not as the best of 2 (k 2.05) or 4 (k 2.33)
    cfg = EvaluationCfg(gate="significance", gate_test="stderr", gate_k=1.75, gate_repeats=1)
    alone = gate.decide(cfg, *ups(20, 3))
    assert alone.accept and "best of" not in alone.reason
    of_four = gate.decide(cfg, *ups(20, 3), candidates=4)
    assert not of_four.accept and "needs > 2.33 for the best of 4" in of_four.reason
    assert check(of_four, "significance").numbers["candidates"] == 4
    assert check(of_four, "significance").numbers["k"] == pytest.approx(gate.corrected_k(1.75, 4), abs=1e-6)
    # Bonferroni: the tail beyond the corrected k is the single tail ÷ P
    from statistics import NormalDist
    tail = 1 - NormalDist().cdf(1.75)
    for p in (2, 4, 8):
        assert 1 - NormalDist().cdf(gate.corrected_k(1.75, p)) == pytest.approx(tail / p, rel=1e-6)
    assert gate.decide(cfg, *ups(20, 6), candidates=4).accept  # a clear gain still passes
    # the permutation test's alpha is divided the same way
    perm = EvaluationCfg(gate="significance", gate_test="permutation", paired_alpha=0.1)
    assert gate.decide(perm, *ups(20, 4)).accept  # the sign test: p = 1/16
    split_alpha = gate.decide(perm, *ups(20, 4), candidates=4)
    assert not split_alpha.accept and "needs < 0.025 for the best of 4" in split_alpha.reason


def test_the_best_accepted_candidate_is_kept_and_an_outranked_one_says_why():
    from skillgit.loop.decide import Judgement, best_of, outranked

    def judged(accept: bool, after: float) -> Judgement:
        score = gate.SplitScore("val", f"b{after}", {"i": (after, after)})
        return Judgement(gate.GateResult(accept, 0.5, after, "significance: fine"), score, True)

    field = [judged(True, 0.7), judged(False, 0.9), judged(True, 0.8), judged(True, 0.8)]
    assert best_of(field, "hard", 0.5) == 2  # the unaccepted 0.9 never wins; the first of equals does
    assert best_of([judged(False, 0.9)], "hard", 0.5) is None
    lost = outranked(field[0], "4", 0.8)
    assert not lost.result.accept and lost.result.reason.startswith("passed the gate but step 4 scored higher")
    assert outranked(field[1], "4", 0.8) is field[1]  # already rejected: unchanged


# ---------------------------------------------------------------------------------------------- one val wave
class Slow:
    """A student that takes 0.2 s per call and records how many calls overlapped."""

    def __init__(self):
        self.lock = threading.Lock()
        self.running = self.peak = 0

    @property
    def id(self) -> str:
        return "slow"

    def run(self, skill: str, item: Item, sample: int = 0) -> Reply:
        with self.lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
        time.sleep(0.2)
        with self.lock:
            self.running -= 1
        return Reply(str(item.expected))


def test_the_gate_runs_every_repeat_of_every_item_in_one_wave():
    items = [Item(f"v{k}", "q", "A") for k in range(4)]
    student = Slow()
    ev = gate.Evaluator(student, lambda i, o: Score(float(o == i.expected), 1.0), {"val": items}, workers=16,
                        repeats=3)
    score = ev.score("s", "val")
    assert student.peak == 12  # 4 items × 3 repeats at once (before: 4 at a time, three waves)
    assert all(len(v) == 3 for v in score.samples.values()) and len(score.trajectories) == 4


# ---------------------------------------------------------------------------------------------- a run
def test_a_step_with_three_proposals_keeps_one_and_rejects_the_others(tmp_path):
    folder = tmp_path / "p3"
    create_project(folder, 0)
    done = run_cli_inproc("train", *P3, "--set", "train.max_steps=3", "--set", "evaluation.use_gate=false", cwd=folder)
    assert done.returncode == 0, done.stderr
    log = [e for e in _log(folder) if e["verdict"] != "seed"]
    numbered = [e for e in log if e["step"].isdigit()]
    assert [e["step"] for e in numbered] == ["1", "2", "3"]
    others = [e for e in log if e["step"].startswith("s")]
    assert others and all(e["verdict"] == "rejected" for e in others)
    for e in others:  # decided before their step, so git holds step N only once all of them are decided
        n, _, k = e["step"][1:].partition("-p")
        assert 1 <= int(k) <= 3 and e["seq"] < next(x["seq"] for x in numbered if x["step"] == n)
    for e in numbered:
        note = _candidate_note(folder, e["step"])["proposal"]
        assert note["of"] == 3
        rivals = note["rivals"]
        kept = next(r for r in rivals if r["step"] == e["step"])
        assert e["verdict"] == "accepted"  # the gate is off: every proposal passes, so one is kept
        assert kept["score"] == max(r["score"] for r in rivals if r["accepted_by_gate"])
        for r in rivals:
            if r["step"] != e["step"]:
                shown = json.loads(run_cli_inproc("show", r["step"], "--json", cwd=folder).stdout)
                assert shown["outcome"]["verdict"] == "rejected"
                assert shown["outcome"]["reason"].startswith(f"passed the gate but step {e['step']} scored higher")
        assert {d["proposal"] for d in rivals} | set(note["duplicates"]) == {1, 2, 3}
    # the outranked proposals are in `skillgit rejected` (the negative buffer reads the same tags)
    rejected = {r["step"] for r in json.loads(run_cli_inproc("rejected", "--json", cwd=folder).stdout)}
    assert {e["step"] for e in others} <= rejected


@pytest.mark.slow
def _runs(folder) -> dict[str, str]:
    """Each run ref's progress (status, digest, branch, next step): what `open_run` chose from, for a failure
    message (a resume that started a second run was seen once and never reproduced)."""
    refs = git(folder, "for-each-ref", "--format=%(refname)", "refs/skillgit/runs").split()
    out = {}
    for ref in refs:
        progress = json.loads(git(folder, "show", f"{ref}:progress.json"))
        out[ref] = " ".join(f"{k}={progress.get(k)}" for k in ("status", "config_digest", "branch", "next_step"))
    return out


def test_a_kill_between_the_decisions_of_a_step_resumes_to_the_same_history(tmp_path):
    args = [*P3, "--set", "train.max_steps=1", "--set", "evaluation.use_gate=false"]
    reference = tmp_path / "reference"
    create_project(reference, 0)
    assert run_cli_inproc("train", *args, cwd=reference).returncode == 0
    expected = [(e["step"], e["verdict"], e["score"]) for e in _log(reference)]
    assert any(s.startswith("s1-p") for s, _, _ in expected)  # the step had other proposals to decide first
    skill = (reference / "SKILL.md").read_text()
    killed = 0
    for fault in ["reject:1", "reject:3", "accept:1", "accept:2", "accept:4"]:
        folder = tmp_path / fault.replace(":", "-")
        create_project(folder, 0)
        first = run_cli("train", *args, cwd=folder, env={"SKILLGIT_FAULT_KILL_AT_GIT": fault})
        if first.returncode == 0:
            continue
        assert first.returncode == -signal.SIGKILL, first.stderr
        killed += 1
        again = run_cli_inproc("train", *args, cwd=folder)  # the kill needs a process; the resume does not
        assert again.returncode == 0, (fault, again.stderr)
        assert [(e["step"], e["verdict"], e["score"]) for e in _log(folder)] == expected, (fault, _runs(folder),
                                                                                           first.stderr[-2000:])
        assert (folder / "SKILL.md").read_text() == skill, fault
        assert git(folder, "for-each-ref", "refs/heads/candidates") == "", fault
        status = json.loads(run_cli_inproc("status", "--json", cwd=folder).stdout)
        assert status["accepted"] + status["rejected"] == len(expected) - 1, fault  # every decision counted once
    assert killed >= 3


def test_the_names_skillgit_gives_steps_can_be_typed_bare():
    assert parse_step_spec("s3-p2") == (False, None, "s3-p2")
    assert parse_step_spec("e1-slow-update") == (False, None, "e1-slow-update")
    assert parse_step_spec("main") is None and parse_step_spec("s3") is None


# ---------------------------------------------------------------------------------------------- small val sets
def test_how_many_items_a_step_must_fix_follows_the_gate_itself():
    # the default permutation test: m clean flips (of any n ≥ m) give p = 2^-m; α 0.05 → 5, α/2 → 6
    assert gate.items_to_clear(30, EvaluationCfg()) == 5 and gate.items_to_clear(4, EvaluationCfg()) is None
    assert gate.items_to_clear(30, EvaluationCfg(), candidates=2) == 6
    # stderr over items: z = sqrt(m (n − 1) / (n − m)); 4 items: m = 3 (z = 3), 2 is 1.73
    stderr = EvaluationCfg(gate="significance", gate_test="stderr", gate_k=1.75)
    assert gate.items_to_clear(4, stderr) == 3
    assert gate.items_to_clear(30, dataclasses.replace(stderr, gate_k=10.0)) == 24
    for cfg in (EvaluationCfg(gate="significance"), dataclasses.replace(stderr, gate_k=2.05)):
        for n in (7, 12, 30):
            need = gate.items_to_clear(n, cfg)
            assert need is not None
            for m in (need - 1, need):  # the count agrees with the gate, repeats and all
                ids = [f"i{k:02d}" for k in range(n)]
                before = split({k: 0.0 for k in ids}, samples={k: [0.0] * 3 for k in ids})
                after = split({k: float(j < m) for j, k in enumerate(ids)},
                              samples={k: [float(j < m)] * 3 for j, k in enumerate(ids)})
                assert gate.decide(cfg, before, after).accept == (m >= need), (n, m)


def test_proposals_on_a_small_val_set_warn_with_what_a_step_must_fix(tmp_path):
    cfg = EvaluationCfg()
    assert gate.small_val_warning(cfg, 4, 1) is None and gate.small_val_warning(cfg, 30, 4) is None
    assert "fix more than all of them outright" in (gate.small_val_warning(cfg, 4, 2) or "")
    assert "fix 6 of them outright to be accepted (5 with proposals: 1)" in (gate.small_val_warning(cfg, 7, 2) or "")
    folder = tmp_path / "small"
    create_project(folder, 0)
    done = run_cli_inproc("train", "--set", "optimizer.proposals=2", "--set", "env.split_ratio=10:1:10",
                          "--set", "train.max_steps=1", cwd=folder)
    assert done.returncode == 0, done.stderr
    assert "warning: optimizer.proposals is 2" in done.stderr and "with 7 val item(s)" in done.stderr
    # said before any call: what 7 val items let the gate see
    assert "warning: val split: 7 val item(s) × 3 repeat(s): the gate detects gains of about 86 points" in done.stderr

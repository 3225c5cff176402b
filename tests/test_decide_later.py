"""A step's decision is written in the background: the next step's students do not wait for its git writes, yet the
events keep their order, the progress never says a step is done before git holds its decision, and a failure of
the write (the branch moved) still stops the run with nothing built over the user's commit."""

from __future__ import annotations

import threading

import pytest

from skillgit.cli.demo import create_project
from skillgit.loop import stages
from skillgit.loop.events import Event, OrderedSink, StepDecided, StepStarted
from skillgit.store.core import BranchMoved, Store
from tests.conftest import git
from tests.test_train import train


def test_the_next_rollout_runs_while_the_previous_decision_is_written(tmp_path, monkeypatch):
    folder = tmp_path / "p"
    create_project(folder, 0)
    order: list[str] = []
    lock = threading.Lock()
    second_rollout = threading.Event()
    real_decide, real_rollout = Store.decide, stages.rollout

    def slow_decide(self, cand, **kw):
        if str(cand.step) == "1":  # a slow disk: step 1's write lasts until step 2's students have started…
            second_rollout.wait(20)  # …or 20 s, when the loop waits for the write (the order below then fails)
        out = real_decide(self, cand, **kw)
        with lock:
            order.append(f"decided {cand.step}")
        return out

    def rollout(*args, **kw):
        with lock:
            order.append("rollout")
            if order.count("rollout") == 2:
                second_rollout.set()
        return real_rollout(*args, **kw)

    monkeypatch.setattr(Store, "decide", slow_decide)
    monkeypatch.setattr(stages, "rollout", rollout)
    events: list[Event] = []
    result, _ = train(folder, "train.max_steps=2", "optimizer.use_slow_update=false", "optimizer.use_meta_skill=false",
                      "optimizer.use_meta_reflect=false", events=events)
    assert result.steps == 2
    # step 2's students ran before step 1's decision had landed
    assert order == ["rollout", "rollout", "decided 1", "decided 2"]
    # …and the events read as if it had been inline: step 1's end before anything of step 2
    kinds = [(e.kind, getattr(e, "step", None) or e.outcome.step) for e in events
             if isinstance(e, (StepStarted, StepDecided))]
    assert kinds == [("step_start", "1"), ("step_end", "1"), ("step_start", "2"), ("step_end", "2")]


def test_a_branch_moved_during_the_next_rollout_stops_the_run_without_building_over_it(tmp_path, monkeypatch):
    folder = tmp_path / "p"
    create_project(folder, 0)
    real_decide = Store.decide
    user_commit: dict[str, str] = {}

    def decide_then_user_commits(self, cand, **kw):
        out = real_decide(self, cand, **kw)
        if str(cand.step) == "1" and not user_commit:  # a user commits on the branch right after step 1 lands
            (folder / "NOTES.md").write_text("mine\n")
            git(folder, "add", "NOTES.md")
            git(folder, "commit", "-qm", "user: notes")
            user_commit["sha"] = git(folder, "rev-parse", "HEAD")
        return out

    monkeypatch.setattr(Store, "decide", decide_then_user_commits)
    with pytest.raises(BranchMoved):
        train(folder, "train.max_steps=3", "evaluation.use_gate=false", "optimizer.use_slow_update=false",
              "optimizer.use_meta_skill=false", "optimizer.use_meta_reflect=false")
    assert git(folder, "rev-parse", "main") == user_commit["sha"]  # the user's commit stays the tip
    assert git(folder, "for-each-ref", "refs/heads/candidates") == ""


def test_the_ordered_sink_holds_other_threads_until_the_release():
    seen: list[str] = []
    sink = OrderedSink(lambda e: seen.append(e.step))  # type: ignore[attr-defined]
    sink(StepStarted("1", 0, 4))
    sink.hold()
    claimed, done = threading.Event(), threading.Event()

    def writer() -> None:
        sink.claim()
        sink(StepStarted("decide", 0, 0))  # the writer's own events pass
        claimed.set()
        done.wait(5)
        sink.release([StepStarted("end-1", 0, 0)])

    t = threading.Thread(target=writer)
    t.start()
    assert claimed.wait(5)
    sink(StepStarted("2", 0, 4))  # held
    assert seen == ["1", "decide"]
    done.set()
    t.join()
    assert seen == ["1", "decide", "end-1", "2"]
    sink(StepStarted("3", 0, 4))
    assert seen[-1] == "3"

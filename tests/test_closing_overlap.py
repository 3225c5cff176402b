"""The run's last decision lands while the final skill is scored on test (issue 22: the last step's bookkeeping
overlapped with the closing test scoring), with the same closing scores and the same git and progress as when the
decision landed first."""

from __future__ import annotations

import json
import threading
import time

import pytest

from skillgit.cli.demo import create_project
from skillgit.loop.evaluate import Evaluator
from skillgit.loop.events import Event, StageStarted, StepDecided
from skillgit.project import open_project
from skillgit.session import build_trainer, open_session
from skillgit.store.core import Store
from tests.conftest import git
from tests.helpers import paid_calls
from tests.test_train import train

NO_EPOCH_WORK = ("optimizer.use_slow_update=false", "optimizer.use_meta_skill=false",
                 "optimizer.use_meta_reflect=false")


def _marked(monkeypatch, delay: float = 0.0, hold: int | None = None) -> dict[str, float]:
    """Slow every decision down by `delay`, and hold step `hold`'s decision until a test scoring starts (at most
    30 s; `marks["held"]`: whether one started meanwhile); mark when each decision landed and when the first test
    scoring started."""
    marks: dict[str, float] = {}
    lock = threading.Lock()
    testing = threading.Event()
    real_decide, real_score = Store.decide, Evaluator.score

    def slow_decide(self, cand, **kw):
        time.sleep(delay)  # a slow disk or a big repository
        if hold is not None and str(cand.step) == str(hold):
            marks["held"] = float(testing.wait(30))
        out = real_decide(self, cand, **kw)
        with lock:
            marks[f"decided {cand.step}"] = time.perf_counter()
        return out

    def score(self, text, split, *args, **kw):
        if split == "test":
            with lock:
                marks.setdefault("test", time.perf_counter())
            testing.set()
        return real_score(self, text, split, *args, **kw)

    monkeypatch.setattr(Store, "decide", slow_decide)
    monkeypatch.setattr(Evaluator, "score", score)
    return marks


@pytest.mark.parametrize("steps", [2, 3])  # 3: the last step ends the demo's epoch (a close with no epoch work)
def test_the_final_test_scoring_runs_while_the_last_decision_lands(tmp_path, monkeypatch, steps):
    reference = tmp_path / "reference"
    create_project(reference, 0)
    expected, _ = train(reference, f"train.max_steps={steps}", *NO_EPOCH_WORK)

    folder = tmp_path / "p"
    create_project(folder, 0)
    marks = _marked(monkeypatch, hold=steps)
    events: list[Event] = []
    result, _ = train(folder, f"train.max_steps={steps}", *NO_EPOCH_WORK, events=events)

    # the closing test scoring did not wait for the last decision: it started while that decision was held
    assert marks["held"] and marks["test"] < marks[f"decided {steps}"]
    # the same run as when the decision landed first: scores, counts, branch
    assert (result.status, result.steps, result.accepted, result.rejected) == \
        (expected.status, expected.steps, expected.accepted, expected.rejected)
    assert result.scores == expected.scores
    assert result.scores["final"]["test"] is not None
    assert git(folder, "rev-parse", "main^{tree}") == git(reference, "rev-parse", "main^{tree}")
    # the progress says finished, every step counted, three test reads, the epoch closed when it ended
    progress = json.loads(git(folder, "show", "refs/skillgit/runs/r1:progress.json"))
    reference_progress = json.loads(git(reference, "show", "refs/skillgit/runs/r1:progress.json"))
    for key in ("status", "next_step", "accepted", "rejected", "test_reads", "final_scores"):
        assert progress[key] == reference_progress[key], key
    assert {k: (e["ended"], e["end_rev"]) for k, e in progress["epochs"].items()} == \
        {k: (e["ended"], e["end_rev"]) for k, e in reference_progress["epochs"].items()}
    # readers still see the last step's end before the closing test scoring's stages
    kinds = [("decided", e.outcome.step) if isinstance(e, StepDecided) else ("stage", e.stage) for e in events
             if isinstance(e, StepDecided) or (isinstance(e, StageStarted) and e.stage.startswith("test:"))]
    assert kinds[:steps] == [("decided", str(n)) for n in range(1, steps + 1)]
    assert kinds[steps:] and all(kind == "stage" for kind, _ in kinds[steps:])


def test_without_test_scoring_the_last_decision_lands_before_the_run_ends(tmp_path, monkeypatch):
    folder = tmp_path / "p"
    create_project(folder, 0)
    marks = _marked(monkeypatch, delay=0.3)
    result, _ = train(folder, "train.max_steps=2", "evaluation.eval_test=false", *NO_EPOCH_WORK)
    assert "test" not in marks and "decided 2" in marks
    progress = json.loads(git(folder, "show", "refs/skillgit/runs/r1:progress.json"))
    assert (progress["status"], progress["next_step"], result.steps) == ("finished", 3, 2)


def test_interrupted_while_the_last_decision_lands_resumes_like_an_uninterrupted_run(tmp_path, monkeypatch):
    reference = tmp_path / "reference"
    create_project(reference, 0)
    expected, _ = train(reference, "train.max_steps=2", *NO_EPOCH_WORK)

    folder = tmp_path / "p"
    create_project(folder, 0)
    marks = _marked(monkeypatch, delay=0.5)
    real_score = Evaluator.score

    def interrupted(self, text, split, *args, **kw):
        if split == "test":  # Ctrl-C as the closing test scoring starts, before the last decision landed
            raise KeyboardInterrupt
        return real_score(self, text, split, *args, **kw)

    monkeypatch.setattr(Evaluator, "score", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train(folder, "train.max_steps=2", *NO_EPOCH_WORK)
    assert "decided 2" in marks  # the decision landed before the run let go of its lock
    monkeypatch.undo()
    project = open_project(folder, None, ["train.max_steps=2", *NO_EPOCH_WORK])
    result = build_trainer(open_session(project), run_id="r1", resume=True).train()
    assert (result.status, result.steps, result.accepted, result.rejected, result.scores) == \
        (expected.status, expected.steps, expected.accepted, expected.rejected, expected.scores)
    assert git(folder, "rev-parse", "main^{tree}") == git(reference, "rev-parse", "main^{tree}")
    calls, distinct = paid_calls(folder)
    assert calls == distinct == paid_calls(reference)[1]  # nothing paid twice, nothing more than uninterrupted

"""A step's train batch after its rollouts: whether anything is left to learn from, and what the step's update
record keeps of it (`Trainer._step`)."""

from __future__ import annotations

from typing import Any

from skillgit.errors import ExitCode, SkillgitError
from skillgit.loop.gate import phase_seconds
from skillgit.types import Trajectory


def require_usable(step: int, batch: list, trajs: list[Trajectory]) -> None:
    """Raise when a non-empty batch has no usable rollout: the scorer's fault (exit 2) or the student's (exit 4);
    the run resumes where it stopped."""
    if not batch or any(t.ok for t in trajs):
        return
    first = trajs[0].error or ""
    if first.startswith("scorer:"):
        raise SkillgitError(f"step {step}: the scorer failed on every rollout ({first})",
                            "fix env.scorer (try it with `skillgit eval --split train`); the run resumes "
                            "where it stopped", ExitCode.USAGE)
    judged = any(w in first for w in ("could not judge", "verifier ", "JUnit report"))  # the task's verifier
    fix = ("run the task's verify command by hand in a copy of its workspace (with skillgit's python: is pytest "
           "installed there?)" if judged else "check the student backend with `skillgit doctor`")
    raise SkillgitError(f"step {step}: every rollout failed ({first})", f"{fix}; the run resumes where it stopped",
                        ExitCode.BACKEND)


def train_record(trajs: list[Trajectory]) -> dict[str, Any]:
    """The `train` details of a step's update record: items, errors, the usable rollouts' means, timings."""
    usable = [t for t in trajs if t.ok]
    return {"items": [t.item_id for t in trajs], "errors": {t.item_id: t.error for t in trajs if t.error},
            "hard_mean": _mean([t.score.hard for t in usable if t.score]),
            "soft_mean": _mean([t.score.soft for t in usable if t.score]),
            # agentic rollouts: wall time per item split into setup / agent / verify, and the batch's totals
            "timings": {t.item_id: dict(t.timings) for t in trajs if t.timings},
            "seconds": phase_seconds(trajs)}


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None

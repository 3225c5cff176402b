"""Events the loop emits instead of printing. The CLI turns them into a progress display; tests collect them.

Kinds and their data (all JSON-serialisable):
- run_start {run, resumed, total_steps, seed_score}      - epoch_start {epoch}
- step_start {step, epoch, budget}                        - stage {step, stage}
- progress {step, stage, done, total}                     - step_end {step, verdict, score_before, score_after, edits, reason}
- epoch_end {epoch, ...}                                  - warning {message}
- run_end {status, reason, seed, best, final, usage}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass(frozen=True)
class Event:
    kind: str
    data: dict[str, Any] = field(default_factory=dict)


EventSink = Callable[[Event], None]


def ignore(_: Event) -> None:
    """The default sink."""

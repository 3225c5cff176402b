"""The learning rate of skill training: how many edits a step may apply (its edit budget).

`constant` keeps `learning_rate`; `linear` and `cosine` go from `learning_rate` down to `min_learning_rate`
over the run's steps; `autonomous` lets the teacher choose within [min_learning_rate, learning_rate] (the
run asks it; see run.py). Budgets are whole edits, at least `min_learning_rate`.
"""

from __future__ import annotations

import math

from skillgit.config import OptimizerCfg


def scheduled_budget(cfg: OptimizerCfg, step_index: int, total_steps: int) -> int:
    """Budget for the step at 0-based `step_index` of `total_steps`."""
    hi, lo = cfg.learning_rate, min(cfg.min_learning_rate, cfg.learning_rate)
    if cfg.lr_scheduler in ("constant", "autonomous") or total_steps <= 1:
        return hi
    progress = min(max(step_index / (total_steps - 1), 0.0), 1.0)
    if cfg.lr_scheduler == "linear":
        value = hi - (hi - lo) * progress
    else:  # cosine
        value = lo + (hi - lo) * 0.5 * (1.0 + math.cos(math.pi * progress))
    return max(lo, int(round(value)))


def is_autonomous(cfg: OptimizerCfg) -> bool:
    return cfg.lr_scheduler == "autonomous" or cfg.lr_control_mode == "autonomous"

"""A run's closing scores: the seed, best and final skills on val and on the sealed test split.

Contract of `final_scores(...)`:
- val: the gate's latest scoring of each text answers (`Evaluator.latest`), so no call is paid (the budget check is
  off while it reads);
- best: the highest val score among the run's accepted skills — the tip, since the gate only accepts improvements,
  unless the gate was off or forced;
- test: the only reader of the test split, through its own evaluator (`sealed`: one sample per item), when
  `evaluation.eval_test` and there are test items; every read is counted (`Closing.test_reads`). The budget holds
  for it too: past it, the remaining skills stay unscored on test and `Closing.warning` says how to score them later.
- the run's last decision: `final_text` is the skill text the branch holds once it lands (None: nothing is being
  written). That text is scored on test first, while the decision lands; `wind_up()` (which waits for it) is called
  exactly once, before the branch or its history is read, and before anything when there is nothing to score. The
  scores are the same as when the decision had landed first: the final skill is that text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from skillgit.errors import BudgetReached
from skillgit.loop.context import StepContext
from skillgit.loop.evaluate import Evaluator, SplitScore
from skillgit.records import SkillScores
from skillgit.store import Store


@dataclass(frozen=True)
class Closing:
    scores: dict[str, SkillScores]  # seed / best / final
    test_reads: int
    warning: str | None = None


def final_scores(ctx: StepContext, store: Store, run_id: str, seed_rev: str | None, seed_score: SplitScore,
                 evaluator: Evaluator, sealed: Evaluator, budget_exceeded: Callable[[], str | None], *,
                 final_text: str | None = None, wind_up: Callable[[], None] = lambda: None) -> Closing:
    """See the module contract."""
    ecfg = ctx.cfg.evaluation
    metric, weight = ecfg.gate_metric, ecfg.mixed_weight
    with_test = bool(ecfg.eval_test and sealed.splits.get("test"))
    reads = 0
    over = None  # the budget the test scoring stopped at
    early: float | None = None  # the final text's test score, read while the last decision landed
    if with_test and final_text is not None:
        over = budget_exceeded()
        if over is None:
            ctx.stage(0, "test:final")
            try:
                early = sealed.score(final_text, "test", ctx.progress(0, "test:final")).mean(metric, weight)
            except BudgetReached as exc:
                over = exc.message
            else:
                reads += 1
    wind_up()
    tip = store.tip()
    revs = {"seed": seed_rev or tip, "best": tip, "final": tip}
    best_rev, best_val = revs["seed"], seed_score.mean(metric, weight)
    for entry in store.history(run_id, edits=False):  # (scores only: no candidate record parsed)
        if entry.verdict == "accepted" and entry.score is not None and entry.score > best_val:
            best_rev, best_val = entry.sha, entry.score
    revs["best"] = best_rev
    out: dict[str, SkillScores] = {}
    for name, rev in revs.items():
        text = store.read_skill(rev)
        check, ctx.ledger.budget_check = ctx.ledger.budget_check, None
        try:
            val = evaluator.latest(text, "val").mean(metric, weight)
        finally:
            ctx.ledger.budget_check = check
        test = None
        over = over or budget_exceeded()
        if name == "final" and early is not None and text == final_text:
            test = early
        elif with_test and over is None:
            ctx.stage(0, f"test:{name}")
            try:
                test = sealed.score(text, "test", ctx.progress(0, f"test:{name}")).mean(metric, weight)
            except BudgetReached as exc:
                over = exc.message
            else:
                reads += 1
        out[name] = SkillScores(rev, round(val, 4), None if test is None else round(test, 4))
    warning = None
    if over is not None and with_test:
        unscored = [name for name, s in out.items() if s.test is None]
        warning = (f"test not scored for {', '.join(unscored)}: {over}; score it later with "
                   f"`skillgit eval REV --split test`")
    return Closing(out, reads, warning)

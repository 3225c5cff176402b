"""A step's field of proposals (`optimizer.proposals` P > 1): gate them together, keep the best, name the rest.

Contract of `plan_field(ctx, step, proposals, current, usage_before, rival_found)`:
- the step's distinct proposals are gated together (their val scoring runs side by side: one wave), with the
  significance bar raised for how many of them change the skill (`judge(..., candidates=…)`); an identical
  proposal is gated once and listed as a duplicate;
- the kept one is the best the gate accepted (`decide.best_of`), or, when none passed, the best scored; it is step
  `N` and comes last in the plan, its record listing every rival; the others are `s<N>-p<k>` (k: the proposal's
  number), rejected (`decide.outranked` says why when the gate had accepted them) and decided first, so git holds
  step `N` only once its whole field is decided (what `resume.Decided` relies on);
- the step's calls are booked to step `N`; a rival a restarted step finds decided already (`rival_found(name)`)
  is counted as git holds it, never decided twice.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

from skillgit.loop.background import Planned, parallel
from skillgit.loop.context import StepContext
from skillgit.loop.decide import Proposal, best_of, judge, outranked, rival_step
from skillgit.loop.evaluate import SplitScore
from skillgit.records import StepOutcome


def plan_field(ctx: StepContext, step: int, proposals: list[Proposal], current: SplitScore,
               usage_before: dict[str, Any], rival_found: Callable[[str], StepOutcome | None]) -> list[Planned]:
    """The step's decisions, in the order they are to be written (see the module contract)."""
    ecfg = ctx.cfg.evaluation
    distinct: list[int] = []
    for i, p in enumerate(proposals):
        if all(p.after != proposals[j].after for j in distinct):
            distinct.append(i)
    gated = sum(proposals[i].after != proposals[i].before for i in distinct) or 1
    judged = parallel([functools.partial(judge, ctx, proposals[i], current, candidates=gated) for i in distinct])
    winner = best_of(judged, ecfg.gate_metric, ecfg.mixed_weight)
    main = winner if winner is not None else max(
        range(len(judged)), key=lambda k: (judged[k].scored, judged[k].score.mean(ecfg.gate_metric,
                                                                                    ecfg.mixed_weight), -k))
    main_score = judged[main].score.mean(ecfg.gate_metric, ecfg.mixed_weight)
    rivals = [{"proposal": distinct[k] + 1, "step": str(step) if k == main else rival_step(step, distinct[k] + 1),
              "accepted_by_gate": j.result.accept, "score": round(j.result.after, 6), "scored": j.scored}
             for k, j in enumerate(judged)]
    duplicates = [i + 1 for i in range(len(proposals)) if i not in distinct]
    plan: list[Planned] = []
    for k, j in enumerate(judged):
        if k == main:
            continue
        name = rival_step(step, distinct[k] + 1)
        p = proposals[distinct[k]]
        p = dataclasses.replace(p, step=name, record=p.record.with_details(
            proposal={"number": distinct[k] + 1, "of": len(proposals), "kept": str(step)}))
        plan.append(Planned(p, outranked(j, str(step), main_score), {}, rival_found(name)))
    p = proposals[distinct[main]]
    p = dataclasses.replace(p, record=p.record.with_details(
        proposal={"number": distinct[main] + 1, "of": len(proposals), "rivals": rivals, "duplicates": duplicates}))
    plan.append(Planned(p, judged[main], ctx.ledger.diff_since(usage_before)))
    return plan

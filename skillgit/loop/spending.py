"""How a run spends its α over its gates (`evaluation.across_steps`): error control across a run's steps.

Each gate is a test at `evaluation.paired_alpha`, so a run of many steps accepts no-better candidates by chance
(bench/run_nulls.py, 30 val items, the default gate: a noisy student had ≥ 1 false accept in about 30 % of 10-step
runs and 97 % of 100-step runs). The modes, for the run's t-th test (t = 1, 2, …):
- `none` (the default): α_t = α; the verdict says "no correction across steps (gated step t of the run)".
- `fwer` (alpha spending): α_t = α·γ_t with γ_t = 6/(π²t²) (Σγ_t = 1). By the union bound the run accepts a
  no-better candidate at *any* of its steps with probability ≤ Σα_t ≤ α — under any dependence between steps, as
  long as each null step's p-value is valid on its own (P(p_t ≤ x) ≤ x).
- `fdr` (LORD++, Ramdas et al. 2017 "Online control of the false discovery rate with decaying memory", after
  Javanmard & Montanari 2018): α_t = γ_t·W0 + (α − W0)·γ_{t−τ1} + α·Σ_{j≥2} γ_{t−τj} with W0 = α/2, τj the
  run's earlier accepts, and the same γ; never above α (the indices t, t−τj are distinct and Σγ = 1: no step is
  tested looser than without the mode). Each accept earns wealth back, so a run that keeps improving keeps a
  usable α; Σ_{s≤t} α_s ≤ α·max(1, accepts so far). What is proven (Ramdas et al. 2017): mFDR — E[false
  accepts] / E[max(1, accepts)] — ≤ α when each null step's p-value is valid given everything before it
  (conditional super-uniformity; the gate's other checks only accept less); FDR (the expected share) ≤ α when
  null p-values are independent of each other and of the rest.
  γ_t = 6/(π²t²) is front-loaded for runs of tens of steps (J&M's default γ, built for thousands of tests, gives
  α_1 = 0.0013).

Dependence, honestly: every step's candidate and incumbent are scored afresh in the step's round
(`reuse_incumbent_score: false`, the default) and the sign-flip test is exact given the items, so a null step's
p-value is valid given the past; but all steps share one val set (the guarantees are about those items, not the
task population) and after an accept the incumbent is the accepted candidate, chosen because it scored well.
`reuse_incumbent_score: true` compares every step with one old scoring of the incumbent: p-values are then not
valid given the past and neither guarantee holds. bench/run_nulls.py measures each mode on chained null runs.

What spends: one test per numbered step whose candidate was scored (a step's P proposals are one test, its α_t
split over them, Bonferroni, on top), and per epoch candidate (slow update, meta reflect) scored the same way. A
candidate rejected unscored (unchanged, invalid, leaking), a `force`d slow update (its verdict does not rest on the
test) and a disabled gate spend nothing. `skillgit check` (one human edit) is one test at α, as always.

State. The gate note of every decided candidate in a run records its `Spending` (`records.notes`): mode, α_t, its
test number, the test numbers accepted before it, the wealth. The state for the next test is derived from the
run's latest decision's gate note and verdict (`Tracker`), so a killed and resumed run spends exactly as an
uninterrupted one; decisions this process wrote are remembered instead of read back.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Callable, Sequence

from skillgit.records.notes import Spending

if TYPE_CHECKING:
    from skillgit.config import EvaluationCfg
    from skillgit.records import RunProgress
    from skillgit.store import Store

MODES = ("none", "fdr", "fwer")
_SIX_OVER_PI2 = 6 / math.pi ** 2


def gamma(j: int) -> float:
    """The spending sequence γ_j = 6/(π²j²) (j ≥ 1; Σγ_j = 1), 0 for j < 1."""
    return _SIX_OVER_PI2 / (j * j) if j >= 1 else 0.0


def step_alpha(mode: str, alpha: float, test: int, accepts: Sequence[int] = ()) -> float:
    """α for the run's `test`-th test (1-based) given the test numbers accepted before it (see the module)."""
    if mode == "fwer":
        return alpha * gamma(test)
    if mode == "fdr":
        w0 = alpha / 2
        spend = w0 * gamma(test)
        for n, tau in enumerate(sorted(a for a in accepts if a < test)):
            spend += (alpha - w0 if n == 0 else alpha) * gamma(test - tau)
        return min(alpha, spend)
    return alpha


def wealth(alpha: float, test: int, accepts: Sequence[int] = ()) -> float:
    """The fdr rule's wealth before test `test`: W0, less what tests 1 … test−1 spent, plus what accepts earned."""
    before = [a for a in accepts if a < test]
    spent = sum(step_alpha("fdr", alpha, t, [a for a in before if a < t]) for t in range(1, test))
    earned = (alpha / 2 if before else 0.0) + alpha * max(0, len(before) - 1)
    return alpha / 2 - spent + earned


def at(mode: str, alpha: float, tests: int, accepts: Sequence[int] = ()) -> Spending:
    """The `Spending` of the next test after `tests` tests of which `accepts` (their numbers) were accepted."""
    test = tests + 1
    return Spending(mode, alpha, step_alpha(mode, alpha, test, accepts), test, tuple(sorted(accepts)),
                    round(wealth(alpha, test, accepts), 10) if mode == "fdr" else None)


def sequence(mode: str, alpha: float, accepted: Sequence[bool]) -> list[float]:
    """The α of each of a run's tests when test t's verdict is `accepted[t-1]` (a pure fold, for tests and benches)."""
    out: list[float] = []
    accepts: list[int] = []
    for t, ok in enumerate(accepted, 1):
        out.append(step_alpha(mode, alpha, t, accepts))
        if ok:
            accepts.append(t)
    return out


def words(spent: Spending, candidates: int = 1) -> str:
    """What the verdict rests on, in words: 'α this step 0.0031 (fdr: 2 accepts before, wealth 0.041)'."""
    if spent.mode not in ("fdr", "fwer"):
        return f"no correction across steps (gated step {spent.test} of the run)"
    split = f", ÷ {candidates} candidates" if candidates > 1 else ""
    if spent.mode == "fwer":
        how = f"fwer: gated step {spent.test} of the run, spending 6/π²k² of α{split}"
    else:
        n = len(spent.accepts)
        how = (f"fdr: gated step {spent.test}, {n} accept{'' if n == 1 else 's'} before, wealth "
               f"{spent.wealth if spent.wealth is not None else 0:.3g}{split}")
    return f"α this step {spent.step_alpha:.3g} ({how})"


_WORDS = re.compile(r"; (?:no correction across steps \(gated step \d+ of the run\)|α this step [^()]* \((?:fdr|fwer): "
                    r"[^()]*\))")


def unsaid(reason: str) -> str:
    """`reason` without what `words` added: the teacher reads why a candidate was rejected, not the run's α
    bookkeeping (so a run's proposals do not change with `across_steps`' wording alone)."""
    return _WORDS.sub("", reason)


class Tracker:
    """A run's spending, derived from its own records: the state after its latest decision (`progress().last`),
    read from that decision's gate note (or remembered, for a decision this process wrote)."""

    def __init__(self, cfg: EvaluationCfg, store: Store, progress: Callable[[], RunProgress]):
        self.mode, self.alpha = cfg.across_steps, cfg.paired_alpha
        self.store, self.progress = store, progress
        self._after: dict[str, tuple[int, tuple[int, ...]]] = {}

    def next(self) -> Spending:
        """The next test's `Spending` (see the module's State)."""
        progress = self.progress()
        last = progress.last
        if last is None or not last.sha:
            return at(self.mode, self.alpha, 0)
        state = self._after.get(last.sha)
        if state is None:
            gate = self.store.step_notes(last.sha).gate
            spent = gate.spending if gate is not None else None
            # a run begun before spending was recorded: every decision counted as a test, no accept earning wealth
            state = spent.after(last.accepted) if spent is not None else (progress.accepted + progress.rejected, ())
        return at(self.mode, self.alpha, *state)

    def remember(self, sha: str, spent: Spending | None, accepted: bool) -> None:
        """A decision this process wrote (candidate `sha`): the state after it, so that it is not read back."""
        if spent is not None and sha:
            self._after[sha] = spent.after(accepted)

"""Error control across a run's gates (`evaluation.across_steps`, skillgit/loop/spending.py): the α sequence of
each mode, the gate testing at the step's α, the bound on simulated null runs, and the config key."""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import pytest

from skillgit.config import EvaluationCfg, load_config
from skillgit.errors import ConfigError
from skillgit.loop import gate, spending
from skillgit.records.notes import GateNote, Spending
from tests.test_gate import ids, ups

BENCH = Path(__file__).resolve().parent.parent / "bench"
G = [0.0] + [6 / (math.pi ** 2 * j * j) for j in range(1, 200)]  # γ_j, by hand


# ---------------------------------------------------------------------------------------------- the α sequences
def test_none_tests_every_step_at_alpha():
    assert spending.sequence("none", 0.05, [True, False, False, True]) == [0.05] * 4


def test_fwer_spends_alpha_times_six_over_pi_squared_k_squared_whatever_was_accepted():
    alphas = spending.sequence("fwer", 0.05, [True, False, True, False, False])
    assert alphas == pytest.approx([0.05 * G[k] for k in range(1, 6)], rel=1e-12)
    assert alphas[:3] == pytest.approx([0.030396, 0.007599, 0.003377], abs=1e-6)
    assert sum(spending.sequence("fwer", 0.05, [False] * 100_000)) < 0.05  # the run's whole spend stays below α


def test_fdr_is_lord_plus_plus_with_wealth_earned_back_at_each_accept():
    w0, a = 0.025, 0.05
    alphas = spending.sequence("fdr", a, [True, False, True, True, False, False])
    expected = [w0 * G[1],
                w0 * G[2] + (a - w0) * G[1],  # the first accept (test 1) earns α − W0
                w0 * G[3] + (a - w0) * G[2],
                w0 * G[4] + (a - w0) * G[3] + a * G[1],  # later accepts earn α
                w0 * G[5] + (a - w0) * G[4] + a * G[2] + a * G[1],
                w0 * G[6] + (a - w0) * G[5] + a * G[3] + a * G[2]]
    assert alphas == pytest.approx(expected, rel=1e-12)
    assert spending.sequence("fdr", a, [False] * 3) == pytest.approx([w0 * G[k] for k in (1, 2, 3)], rel=1e-12)


def test_fdr_never_tests_a_step_looser_than_alpha_and_its_estimated_fdp_stays_below_alpha():
    assert 0.045 < spending.sequence("fdr", 0.05, [True] * 8)[-1] < 0.05  # accepts in a row: near α, never above
    rng = random.Random(7)
    for _ in range(200):
        verdicts = [rng.random() < 0.3 for _ in range(60)]
        alphas = spending.sequence("fdr", 0.05, verdicts)
        assert max(alphas) <= 0.05
        for t in range(1, 61):  # Σ_{s≤t} α_s ≤ α · max(1, accepts before t+1)
            assert sum(alphas[:t]) <= 0.05 * max(1, sum(verdicts[:t])) + 1e-12


def test_the_wealth_is_w0_less_what_was_spent_plus_what_accepts_earned():
    spent = spending.at("fdr", 0.05, 3, (1, 3))
    assert spent.test == 4 and spent.accepts == (1, 3)
    alphas = spending.sequence("fdr", 0.05, [True, False, True])
    assert spent.wealth == pytest.approx(0.025 - sum(alphas) + 0.025 + 0.05, abs=1e-9)
    assert spent.step_alpha == pytest.approx(spending.sequence("fdr", 0.05, [True, False, True, False])[3])


def test_a_decision_moves_the_state_only_when_it_counts():
    spent = spending.at("fdr", 0.05, 4, (2,))
    assert spent.after(True) == (5, (2, 5))
    assert spent.after(False) == (5, (2,))
    forced = Spending(**{**spent.__dict__, "counted": False})
    assert forced.after(True) == (4, (2,))  # a forced or unscored candidate spends nothing


def test_a_spending_record_from_a_note_is_read_only_when_it_holds_together():
    good = spending.at("fwer", 0.05, 2, (1,)).to_dict()
    assert Spending.from_dict(good) == spending.at("fwer", 0.05, 2, (1,))
    for bad in ({**good, "test": True}, {**good, "test": 0}, {**good, "accepts": [3]}, {**good, "accepts": "1"},
                {**good, "alpha": "x"}, {**good, "mode": None}, "fwer", None):
        assert Spending.from_dict(bad) is None
    note = GateNote("r1", "2", spending=spending.at("fdr", 0.05, 1)).to_note()
    assert GateNote.from_note(note).spending == spending.at("fdr", 0.05, 1)


def test_the_words_say_what_the_verdict_rests_on_and_the_teacher_never_reads_them():
    reason = "significance: +0.2 on val hard (30 items): significant (sign-flip p=0.004 over items, needs < 0.05)"
    said = {m: spending.words(spending.at(m, 0.05, 2, (1,)), candidates=2) for m in spending.MODES}
    assert said["none"] == "no correction across steps (gated step 3 of the run)"
    assert said["fwer"].startswith("α this step 0.00338 (fwer: gated step 3 of the run")
    assert said["fdr"].startswith("α this step 0.0054") and "1 accept before, wealth" in said["fdr"]
    assert "÷ 2 candidates" in said["fdr"]
    for words in said.values():
        assert spending.unsaid(f"{reason}; {words} (30/30 val items)") == f"{reason} (30/30 val items)"


# ---------------------------------------------------------------------------------------------- the gate at α_t
def test_a_p_value_just_above_the_steps_alpha_is_rejected_under_fwer_and_accepted_without_it():
    cfg = EvaluationCfg(gate="significance")
    before, after = ups(12, 7)  # 7 items fixed, nothing else moves: the sign test's p = 2^-7 = 0.0078
    second = spending.at("fwer", cfg.paired_alpha, 1, (1,))  # the run's 2nd test: α_2 = 0.0076
    plain = gate.decide(cfg, before, after, items=ids(12), spent=spending.at("none", cfg.paired_alpha, 1))
    assert plain.accept and "no correction across steps (gated step 2 of the run)" in plain.reason
    judged = gate.decide(cfg, before, after, items=ids(12), spent=second)
    assert not judged.accept
    assert "needs < 0.0076" in judged.reason and "α this step 0.0076 (fwer: gated step 2" in judged.reason
    assert judged.spending == second and judged.to_dict()["spending"]["step_alpha"] == second.step_alpha
    before, after = ups(12, 8)  # p = 2^-8 = 0.0039 < α_2
    assert gate.decide(cfg, before, after, items=ids(12), spent=second).accept
    # the best of 2 candidates splits the step's α on top (Bonferroni): 0.0039 is not < 0.0076 / 2
    assert not gate.decide(cfg, before, after, items=ids(12), spent=second, candidates=2).accept
    # no run (`check`, one human edit): one test at α, as always, and the reason says nothing of steps
    alone = gate.decide(cfg, *ups(12, 7), items=ids(12))
    assert alone.accept and "across steps" not in alone.reason and alone.spending is None


def test_a_refusal_for_coverage_carries_the_steps_spending_so_the_run_keeps_counting():
    cfg = EvaluationCfg()
    before, after = ups(12, 8)
    after = gate.SplitScore("val", "a", {k: v for k, v in after.per_item.items() if k < "i05"})  # 5 of 12 scored
    spent = spending.at("fdr", 0.05, 3, (2,))
    result = gate.decide(cfg, before, after, items=ids(12), spent=spent)
    assert result.refused and result.spending == spent  # (its gate note then says where the run stands)


def test_the_stderr_test_raises_its_z_bar_to_the_steps_share_of_alpha():
    cfg = EvaluationCfg(gate="significance", gate_test="stderr", gate_k=1.75)
    items = ids(30)
    before = gate.SplitScore("val", "b", {k: ((1.0, 1.0) if 12 <= j < 16 else (0.0, 0.0))
                                          for j, k in enumerate(items)})
    after = gate.SplitScore("val", "a", {k: ((1.0, 1.0) if j < 12 else (0.0, 0.0)) for j, k in enumerate(items)})
    z = gate.decide(cfg, before, after, items=items).check("significance").numbers["z"]
    assert 1.75 < z < 3.0  # 12 items up, 4 down: clears the plain bar …
    spent = spending.at("fwer", 0.05, 5)  # … not the 6th test's (share 0.017: k ≈ 3.3)
    result = gate.decide(cfg, before, after, items=items, spent=spent)
    assert not result.accept and result.check("significance").numbers["k"] > z


# ---------------------------------------------------------------------------------------------- simulated runs
def test_under_fwer_simulated_null_runs_of_100_steps_stay_within_the_bound_where_none_does_not():
    sys.path.insert(0, str(BENCH))
    try:
        from run_nulls import one_run
    finally:
        sys.path.remove(str(BENCH))
    runs = 24  # (0.08 s of CPU each)
    plain = [one_run(("noisy", 30, r, 11, "none", 0, "")) for r in range(runs)]
    fwer = [one_run(("noisy", 30, r, 11, "fwer", 0, "")) for r in range(runs)]
    assert sum(1 for acc in plain if acc) >= 18  # the same null runs accept by chance without the mode (24, 91 …)
    # … and with it a whole run accepts a null with probability ≤ α = 5 % (≈ 1.2 runs of 24; seed 11 and 12: 0, 1)
    assert sum(1 for acc in fwer if acc) <= 2 and sum(len(acc) for acc in fwer) <= 2


# ---------------------------------------------------------------------------------------------- the config key
def test_across_steps_is_validated_naming_the_choices():
    with pytest.raises(ConfigError) as caught:
        load_config(None, ["evaluation.across_steps=bonferroni"])
    assert "evaluation.across_steps: 'bonferroni' is not one of none, fdr, fwer" in str(caught.value)
    assert load_config(None, ["evaluation.across_steps=fdr"]).evaluation.across_steps == "fdr"
    assert EvaluationCfg().across_steps == "none"

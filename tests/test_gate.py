"""The gate's modes on constructed scores (strict, significance with both tests, paired, per_item, two_split and
their composition), repeats averaged within items, the null controls and the student's fingerprint, what a val
split can detect, the config keys, and the calibration bench in a tiny mode."""

from __future__ import annotations

import dataclasses
import json
import math
import random
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from skillgit.config import EvaluationCfg, config_from_dict
from skillgit.errors import ConfigError
from skillgit.llm.base import Reply
from skillgit.loop import gate, stats
from skillgit.types import Item, Score, Trajectory

ROOT = Path(__file__).resolve().parent.parent


def split(scores: dict[str, float], *, errors: dict[str, str] | None = None, name: str = "val",
          samples: dict[str, list[float]] | None = None) -> gate.SplitScore:
    """A SplitScore with hard == soft == the given score; `samples` gives per-repeat scores (mean → per_item)."""
    s = gate.SplitScore(name, "blob", {k: (v, v) for k, v in scores.items()}, dict(errors or {}))
    for k, rows in (samples or {}).items():
        s.samples[k] = [(v, v) for v in rows]
        s.per_item[k] = (sum(rows) / len(rows),) * 2
    return s


def ids(n: int) -> list[str]:
    return [f"i{k:02d}" for k in range(n)]


def ups(n: int, m: int, *, base: float = 0.0) -> tuple[gate.SplitScore, gate.SplitScore]:
    """n items at `base`; the candidate lifts the first m to 1."""
    before = split({k: base for k in ids(n)})
    after = split({k: (1.0 if j < m else base) for j, k in enumerate(ids(n))})
    return before, after


def check(result: gate.GateResult, name: str) -> gate.GateCheck:
    return next(c for c in result.checks if c.name == name)


# ---------------------------------------------------------------------------------------------- SkillOpt #174
def test_a_rising_mean_does_not_hide_an_item_that_went_from_pass_to_fail():
    items = ids(20)
    before = split({k: (1.0 if k == "i00" else 0.0) for k in items})
    after = split({k: (1.0 if 1 <= j <= 8 else 0.0) for j, k in enumerate(items)})  # i00 now fails
    assert after.mean("hard") > before.mean("hard")
    assert gate.decide(EvaluationCfg(gate="significance"), before, after, items=items).accept
    result = gate.decide(EvaluationCfg(gate="significance+per_item"), before, after, items=items)
    assert not result.accept
    assert result.reason.startswith("per_item: ") and "i00 1.00 → 0.00" in result.reason
    assert "while the mean went 0.0500 → 0.4000" in result.reason and "broke 1 (i00)" in result.reason
    assert result.reason.endswith("(20/20 val items, 20/20 samples scored)") and result.broke == ("i00",)
    assert check(result, "significance").passed and check(result, "per_item").numbers["items"] == ["i00"]


def test_an_item_scored_before_and_unknown_now_counts_as_a_regression():
    items = ids(10)
    before = split({k: 1.0 for k in items})
    after = split({k: 1.0 for k in items[:9]}, errors={"i09": "student: HTTP 500"})
    # 9/10 is at the coverage floor: without per_item the missing item is simply not compared
    plain = gate.decide(EvaluationCfg(gate="strict"), before, after, items=items)
    assert plain.coverage is not None and plain.coverage.scored == 9 and "a tie" in plain.reason
    result = gate.decide(EvaluationCfg(gate="per_item"), before, after, items=items)
    item_check = check(result, "per_item")
    assert not item_check.passed and item_check.numbers["unknown_now"] == 1
    assert "i09 unknown now (student: HTTP 500)" in item_check.detail
    # an item unknown on both sides was never scored: it is not a regression
    before_unknown = split({k: 0.0 for k in items[:9]}, errors={"i09": "timeout"})
    better = split({k: 1.0 for k in items[:9]}, errors={"i09": "timeout"})
    assert check(gate.decide(EvaluationCfg(gate="per_item"), before_unknown, better, items=items),
                 "per_item").passed


# ---------------------------------------------------------------------------------------------- each mode
def test_strict_rejects_ties_and_honours_the_margin():
    before = split({"a": 1, "b": 0, "c": 0})
    cfg = EvaluationCfg(gate="strict")
    tie = gate.decide(cfg, before, split({"a": 0, "b": 1, "c": 0}))
    assert not tie.accept and tie.reason == ("strict: a tie on val hard: 0.3333 vs 0.3333; fixed 1 (b); broke 1 (a) "
                                             "(3/3 val items, 3/3 samples scored)")
    better = split({"a": 1, "b": 1, "c": 0})
    assert gate.decide(cfg, before, better).accept
    assert not gate.decide(EvaluationCfg(gate="strict", gate_margin=1 / 3), before, better).accept
    assert gate.decide(EvaluationCfg(gate="strict", gate_margin=0.3), before, better).accept


def test_significance_with_stderr_needs_more_than_k_standard_errors_over_items():
    # m clean gains out of n items: z = sqrt(m (n - 1) / (n - m)); 20 items: m=3 → 1.83, m=2 → 1.45
    cfg = EvaluationCfg(gate="significance", gate_test="stderr", gate_k=1.75, gate_repeats=1)
    three = gate.decide(cfg, *ups(20, 3))
    assert three.accept and check(three, "significance").numbers["z"] == pytest.approx(math.sqrt(3 * 19 / 17),
                                                                                        abs=1e-6)
    two = gate.decide(cfg, *ups(20, 2))
    assert not two.accept and "only 1.45 standard errors over items (needs > 1.75)" in two.reason
    z3 = math.sqrt(3 * 19 / 17)
    assert not gate.decide(dataclasses.replace(cfg, gate_k=z3), *ups(20, 3)).accept  # needs more than k
    assert gate.decide(dataclasses.replace(cfg, gate_k=z3 - 1e-3), *ups(20, 3)).accept
    # worse, a tie and a margin
    before, after = ups(20, 3)
    assert "worse" in gate.decide(cfg, after, before).reason
    assert "a tie" in gate.decide(cfg, before, before).reason
    assert not gate.decide(dataclasses.replace(cfg, gate_margin=0.15), *ups(20, 3)).accept
    # every item rose alike: no spread, still significant
    everything = gate.decide(cfg, *ups(5, 5))
    assert everything.accept and "no spread" in everything.reason and check(everything, "significance").numbers[
        "z"] is None


def test_significance_with_the_permutation_test_uses_paired_alpha():
    cfg = EvaluationCfg(gate="significance", gate_test="permutation", paired_alpha=0.1)
    four = gate.decide(cfg, *ups(20, 4))  # sign test: p = 1/16
    assert four.accept and four.p_value == pytest.approx(1 / 16)
    three = gate.decide(cfg, *ups(20, 3))  # p = 1/8
    assert not three.accept and three.p_value == pytest.approx(1 / 8) and "needs < 0.1" in three.reason
    assert "sign-flip p=0.125 over items" in three.reason and three.fixed == ("i00", "i01", "i02")
    assert gate.paired_p_value([0.5, 0.25, -0.1], seed=0) == pytest.approx(2 / 8)  # exact enumeration
    five = gate.decide(EvaluationCfg(gate="significance"), *ups(30, 5))  # the default: α 0.05, p = 1/32
    assert five.accept and "significant (sign-flip p=0.031 over items, needs < 0.05)" in five.reason


def test_paired_is_strict_plus_the_permutation_test():
    assert gate.planned_checks("paired") == ("strict", "paired")
    before, after = ups(20, 1)
    result = gate.decide(EvaluationCfg(gate="paired"), before, after)
    assert not result.accept and result.p_value is not None and result.p_value >= 0.1
    assert check(result, "strict").passed and not check(result, "paired").passed
    assert gate.decide(EvaluationCfg(gate="paired"), *ups(20, 8)).accept


def test_per_item_tolerance_is_a_strict_bound():
    before = split({"a": 0.9, "b": 0.0, "c": 0.0})
    cfg = EvaluationCfg(gate="per_item", gate_metric="soft", item_tolerance=0.5)
    assert gate.planned_checks(cfg.gate) == ("strict", "per_item")  # a guard alone implies strict
    exactly = gate.decide(cfg, before, split({"a": 0.4, "b": 1.0, "c": 0.0}))
    assert exactly.accept and check(exactly, "per_item").passed  # a drop of exactly the tolerance is allowed
    beyond = gate.decide(cfg, before, split({"a": 0.39, "b": 1.0, "c": 0.0}))
    assert not beyond.accept and "a 0.90 → 0.39" in beyond.reason
    assert not gate.decide(cfg, before, before).accept  # not worse is not enough: strict is implied


def test_two_split_needs_the_train_batch_not_to_get_worse():
    before, after = ups(10, 10)
    cfg = EvaluationCfg(gate="strict+two_split")
    alone = gate.decide(cfg, before, after)
    assert alone.accept and check(alone, "two_split").numbers == {"applicable": False}
    assert alone.reason.endswith("; two_split not applicable (10/10 val items, 10/10 samples scored)")
    assert "not applicable" in check(alone, "two_split").detail
    train_before = split({"t1": 1, "t2": 1, "t3": 0}, name="train")
    worse = gate.decide(cfg, before, after, train_before=train_before,
                        train_after=split({"t1": 1, "t2": 0, "t3": 0}, name="train"))
    assert not worse.accept and worse.reason.startswith("two_split: worse on the step's train batch (3 items, hard)")
    same = gate.decide(cfg, before, after, train_before=train_before,
                       train_after=split({"t1": 0, "t2": 1, "t3": 1}, name="train"))
    assert same.accept and check(same, "two_split").numbers["after"] == pytest.approx(2 / 3)
    assert same.reason.startswith("strict: better") and "passed two_split" in same.reason


def test_every_check_is_recorded_and_the_reason_is_one_line():
    items = ids(20)
    before = split({k: (1.0 if k == "i00" else 0.0) for k in items})
    after = split({k: (1.0 if 1 <= j <= 2 else 0.0) for j, k in enumerate(items)})
    result = gate.decide(EvaluationCfg(gate=("strict", "significance", "per_item")), before, after, items=items)
    assert [c.name for c in result.checks] == ["strict", "significance", "per_item"]
    assert [c.passed for c in result.checks] == [True, False, False]
    assert result.reason.startswith("significance: ") and "; also failed: per_item" in result.reason
    assert "\n" not in result.reason
    data = json.loads(json.dumps(result.to_dict()))
    assert [c["name"] for c in data["checks"]] == ["strict", "significance", "per_item"]
    assert gate.GateCheck.from_dict(data["checks"][2]) == result.checks[2]


def test_disabled_gate_and_thin_coverage():
    before, after = ups(10, 0)
    off = gate.decide(EvaluationCfg(use_gate=False), after, before)  # worse, yet accepted — and said so
    assert off.accept and off.checks and not off.checks[0].passed
    assert off.reason.startswith("gate disabled (evaluation.use_gate=false); it would have rejected: significance: ")
    thin = gate.decide(EvaluationCfg(), before, split({"i00": 1.0}), items=ids(10))
    assert not thin.accept and thin.reason.startswith("cannot judge: only 1/10 val items, 1/10 samples scored")
    assert [c.name for c in thin.checks] == ["coverage"]


# ---------------------------------------------------------------------------------------------- repeats
def test_repeats_are_averaged_within_items_before_testing():
    items = ids(10)
    before = split({}, samples={k: [0.0, 0.0, 0.0] for k in items})
    # two of 10 items pass all three repeats: two items of evidence, not six cells (the old test said z = 2.69)
    after = split({}, samples={k: ([1.0] * 3 if k in ("i00", "i01") else [0.0] * 3) for k in items})
    result = gate.decide(EvaluationCfg(), before, after)
    numbers = check(result, "significance").numbers
    assert not result.accept and numbers["items"] == 10 and numbers["repeats"] == 3 and "cells" not in numbers
    assert numbers["p"] == pytest.approx(1 / 4) and "(10 items × 3 repeats)" in result.reason
    stderr = gate.decide(EvaluationCfg(gate="significance", gate_test="stderr"), before, after)
    assert check(stderr, "significance").numbers["z"] == pytest.approx(1.5)  # sqrt(2·9/8): items, not cells
    # a mean over repeats is the item's score: one repeat in three on six items is a gain of 0.2 on six items
    noisy = split({}, samples={k: ([1.0, 0.0, 0.0] if k < "i06" else [0.0] * 3) for k in items})
    ev = gate.item_evidence(EvaluationCfg(), before, noisy, set(items))
    assert ev.diffs == pytest.approx([1 / 3] * 6 + [0.0] * 4) and ev.repeats == 3 and ev.lattice == 3
    assert check(gate.decide(EvaluationCfg(), before, noisy), "significance").numbers["p"] == pytest.approx(1 / 64)


def test_the_sign_flip_test_is_exact_on_the_lattice_and_agrees_with_enumeration():
    rng = random.Random(3)
    for _ in range(30):
        diffs = [rng.choice((-2, -1, 0, 0, 1, 2, 3)) / 3 for _ in range(rng.randint(3, 12))]
        assert stats.sign_flip_p(diffs, lattice=3) == pytest.approx(stats.sign_flip_p(diffs))  # ≤ 14: enumerated
    diffs = [1 / 3] * 20 + [2 / 3] * 10 + [-1 / 3] * 8 + [-1.0] * 2
    exact = stats.sign_flip_p(diffs, lattice=3)
    assert abs(exact - stats.sign_flip_p(diffs, rounds=20000)) < 0.01  # the random fallback estimates the same
    assert stats.two_sided_p(diffs, lattice=3) == pytest.approx(min(1.0, 2 * min(
        exact, stats.sign_flip_p([-d for d in diffs], lattice=3))))
    assert stats.sign_flip_p([0.0, 0.0]) == 1.0 and stats.sign_flip_p([1.0] * 5) == pytest.approx(1 / 32)


def test_per_item_calls_a_drop_a_regression_only_beyond_noise():
    items = ids(30)
    steady = split({}, samples={k: [1.0] * 3 if k < "i15" else [0.0] * 3 for k in items})
    # every repeat agreed on every item: an item that passed 3/3 and fails 0/3 broke
    broke = split({}, samples={k: ([0.0] * 3 if k == "i00" else [1.0] * 3) for k in items})
    result = gate.decide(EvaluationCfg(), steady, broke, items=items)
    item_check = check(result, "per_item")
    assert not result.accept and not item_check.passed and item_check.numbers["regressed"] == 1
    assert "i00 1.00 → 0.00" in item_check.detail and item_check.numbers["expected_by_noise"] == 0
    # the same drop among items whose repeats disagree is what noise does: not a regression
    noisy = {k: [1.0, 0.0, 1.0] if j % 2 else [0.0, 1.0, 0.0] for j, k in enumerate(items)}
    before = split({}, samples={**noisy, "i00": [1.0] * 3})
    after = split({}, samples={**{k: v[::-1] for k, v in noisy.items()}, "i00": [0.0] * 3})
    loose = check(gate.decide(EvaluationCfg(), before, after, items=items), "per_item")
    assert loose.passed and "as many as noise explains" in loose.detail and loose.numbers["dropped"] == 1
    assert loose.numbers["noise_p"] >= 0.05
    # one sample per item: a flip cannot be told from noise, so it counts (the guard errs towards the user)
    assert not check(gate.decide(EvaluationCfg(), *ups(10, 3)[::-1]), "per_item").passed


class Fingerprinted:
    id = "agent"

    def __init__(self, version: str):
        self.version = version

    def fingerprint(self) -> dict[str, str]:
        return {"agent_version": self.version, "config_hash": "abc"}


def test_the_student_fingerprint_is_found_through_wrappers_and_a_change_is_drift():
    from skillgit.llm.cache import CachedStudent, CallCache
    from skillgit.llm.metering import MeteredStudent
    from skillgit.loop.ledger import Ledger

    wrapped = MeteredStudent(CachedStudent(Fingerprinted("1.0.3"), CallCache(None)), Ledger())
    assert gate.student_fingerprint(wrapped) == {"agent_version": "1.0.3", "config_hash": "abc"}
    assert gate.student_fingerprint(Coin()) == {}
    before, after = ups(30, 10)
    before.fingerprint, after.fingerprint = {"agent_version": "1.0.3"}, {"agent_version": "1.0.4"}
    result = gate.decide(EvaluationCfg(), before, after)
    assert not result.accept and result.refused
    assert result.reason.startswith("cannot judge: the student changed between the incumbent's scoring and the "
                                    "candidate's (agent_version 1.0.3 → 1.0.4): that is drift")
    assert check(result, "significance").passed  # it would have passed: the note keeps every check
    after.fingerprint = dict(before.fingerprint)
    same = gate.decide(EvaluationCfg(), before, after)
    assert same.accept and check(same, "fingerprint").passed
    off = gate.decide(EvaluationCfg(use_gate=False), before, dataclasses.replace(after, fingerprint={"x": "1"}))
    assert off.accept and "it would have refused: the student changed" in off.reason


def test_null_controls_refuse_to_judge_when_the_incumbent_moved_and_record_the_noise_floor():
    items = ids(30)
    earlier = split({k: (1.0 if j < 6 else 0.0) for j, k in enumerate(items)})  # the incumbent, last round
    earlier.round = "2"
    fresh = split({k: (1.0 if j < 18 else 0.0) for j, k in enumerate(items)})  # the same text now: +40 points
    fresh.round = "3"
    candidate = split({k: (1.0 if j < 19 else 0.0) for j, k in enumerate(items)})
    candidate.round = "3"
    result = gate.decide(EvaluationCfg(), fresh, candidate, items=items, controls=[earlier])
    assert not result.accept and result.refused
    assert result.reason.startswith("cannot judge: the incumbent scored 0.2000 at its earlier scoring and 0.6000 "
                                    "now (+0.4000, 12 item(s) flipped; two-sided p<0.001, needs ≥ 0.05): the "
                                    "student drifted")
    controls = check(result, "controls")
    assert controls.numbers["noise_floor"] == pytest.approx(0.4)
    assert controls.numbers["controls"][0] | {"kind": "earlier", "round": "2", "disagree": True} == \
        controls.numbers["controls"][0]
    # the old gate compared the candidate with the earlier scoring: drift read as a 43-point gain
    assert gate.decide(EvaluationCfg(), earlier, candidate, items=items).accept
    # within noise: judged, and the noise floor is recorded; a copy scored in this round is a control too
    copy = split({k: (1.0 if j < 17 else 0.0) for j, k in enumerate(items)})
    copy.round = "3"
    calm = gate.decide(EvaluationCfg(), fresh, candidate, items=items, controls=[copy])
    numbers = check(calm, "controls").numbers
    assert check(calm, "controls").passed and numbers["controls"][0]["kind"] == "copy"
    assert numbers["noise_floor"] == pytest.approx(1 / 30, abs=1e-6)
    assert "within noise" in check(calm, "controls").detail
    # a control scored by another student measures that student: noted, not used
    copy.fingerprint = {"agent_version": "0.9"}
    other = check(gate.decide(EvaluationCfg(), fresh, candidate, items=items, controls=[copy]), "controls")
    assert other.passed and "no usable null control (the student changed since" in other.detail


def test_what_a_val_split_can_detect_is_said_and_warned_above_20_points():
    cfg = EvaluationCfg()
    assert gate.items_to_clear(10, cfg) == 5 and gate.items_to_clear(4, cfg) is None  # 2^-5 < 0.05
    assert gate.items_to_clear(30, cfg, candidates=2) == 6  # α/2
    stderr = EvaluationCfg(gate_test="stderr")
    assert gate.items_to_clear(4, stderr) == 3 and gate.items_to_clear(20, stderr) == 3  # z = 1.83 > 1.75
    mde30 = gate.min_detectable_effect(cfg, 30, 3)
    assert mde30 is not None and 0.17 < mde30 < 0.20  # (1.645 + 0.842) · sqrt(0.5 / 3) / sqrt(30)
    assert gate.min_detectable_effect(cfg, 30, 3, deterministic=True) == pytest.approx(5 / 30)
    assert gate.min_detectable_effect(cfg, 10, 3) == pytest.approx(0.5)
    line, warn = gate.detectable_line(cfg, 30, 3)
    assert not warn and line == "val split: 30 val item(s) × 3 repeat(s): the gate detects gains of about 19 " \
                                "points or more (80 % power)"
    line, warn = gate.detectable_line(cfg, 9, 3)
    assert warn and "about 56 points" in line and "Give val 30 or more items" in line
    assert gate.detectable_line(cfg, 3, 3)[0].endswith(
        "the gate cannot accept any step (too few items for its bar); give val 30 or more items (env.split_ratio, "
        "or a val/ folder)")


def test_the_dry_run_plans_what_will_be_paid_and_what_val_can_detect():
    from skillgit.config import Config, config_from_dict
    from skillgit.loop.plan import estimate
    from skillgit.tasks import Splits

    def items(n: int, p: str) -> tuple[Item, ...]:
        return tuple(Item(f"{p}{i}", "x", "y") for i in range(n))

    splits = Splits(items(40, "t"), items(30, "v"), items(30, "s"))
    plan = estimate(Config(), splits, "skill")
    steps = plan["steps"]
    assert plan["calls"]["gate"] == 90 + steps * 90 * 2  # the start, then each step: candidate + incumbent
    assert "the call cache makes repeats free" not in plan["text"]
    assert "the incumbent is scored again with each step's candidates" in plan["text"]
    assert plan["detectable"].startswith("val split: 30 val item(s) × 3 repeat(s)") and plan["val_repeats"] == 3
    reused = estimate(config_from_dict({"evaluation": {"reuse_incumbent_score": True}}), splits, "skill")
    assert reused["calls"]["gate"] == 90 + steps * 90 and "provider drift can read as gain" in reused["text"]
    cold = estimate(config_from_dict({"model": {"student_backend": "openai", "student_model": "m",
                                                "student": {"temperature": 0}}}), splits, "skill")
    assert cold["val_repeats"] == 1 and "1 sample (temperature 0: repeats would be copies)" in cold["text"]
    small = estimate(Config(), Splits(items(40, "t"), items(9, "v"), ()), "skill")
    assert "warning: val split: 9 val item(s)" in small["text"] and small["min_detectable_effect"] > 0.2


def test_the_default_split_gives_val_30_items_when_there_are_enough_tasks(tmp_path):
    from skillgit.config import EnvCfg
    from skillgit.tasks import default_counts, load_splits

    assert default_counts(90) == (18, 30, 42) and default_counts(300) == (60, 30, 210)
    assert default_counts(30) == (6, 14, 10) and default_counts(1000) == (200, 100, 700)
    rows = "".join(json.dumps({"id": f"t{i}", "input": "q", "expected": "a"}) + "\n" for i in range(90))
    (tmp_path / "tasks.jsonl").write_text(rows)
    assert load_splits(EnvCfg(), tmp_path).counts == {"train": 18, "val": 30, "test": 42}
    # any other ratio is kept as written
    assert load_splits(EnvCfg(split_ratio="2:1:6"), tmp_path).counts == {"train": 20, "val": 10, "test": 60}


def test_coverage_counts_samples_and_reads_old_notes():
    from skillgit.records import Coverage

    cov = Coverage(28, 30, ("a", "b"), 79, 90)
    assert cov.describe() == "28/30 val items, 79/90 samples scored"
    assert Coverage.from_dict(cov.to_dict()) == cov
    old = Coverage.from_dict({"scored": 30, "total": 30, "unscored": []})
    assert old == Coverage(30, 30) and old.describe() == "30/30 val items scored"
    before = split({}, samples={k: [1.0, 0.0, 1.0] for k in ids(30)})
    after = split({}, samples={k: [1.0, 0.0] for k in ids(30)[:28]})  # one repeat of every item lost
    after.repeats = 3
    assert gate.coverage(before, after, ids(30)).describe() == "28/30 val items, 56/90 samples scored"


class Coin:
    """Right on even samples for items whose id ends in 'a'; always right otherwise."""

    def __init__(self):
        self.calls = 0
        self.lock = threading.Lock()

    @property
    def id(self) -> str:
        return "coin"

    def run(self, skill: str, item: Item, sample: int = 0) -> Reply:
        with self.lock:
            self.calls += 1
        right = not item.id.endswith("a") or sample % 2 == 0
        return Reply(str(item.expected) if right else "wrong")


def scorer(item: Item, output: str) -> Score:
    return Score(float(output == item.expected), 0.5)


def test_the_evaluator_keeps_every_repeat_and_scores_given_items():
    items = [Item("xa", "q", "A"), Item("xb", "q", "B")]
    student = Coin()
    ev = gate.Evaluator(student, scorer, {"val": items}, workers=1, repeats=3)
    val = ev.score("s", "val")
    assert val.samples["xa"] == [(1.0, 0.5), (0.0, 0.5), (1.0, 0.5)] and val.per_item["xa"] == (2 / 3, 0.5)
    assert val.item_samples("xb", "hard") == [1.0, 1.0, 1.0] and student.calls == 6
    assert val.to_record()["samples"]["xa"] == [[1.0, 0.5], [0.0, 0.5], [1.0, 0.5]]
    assert ev.score("s", "val") is val and student.calls == 6
    batch = ev.score_items("s", items[:1], "train")  # one sample unless asked: like the step's own rollout
    assert batch.split == "train" and batch.samples == {} and batch.per_item == {"xa": (1.0, 0.5)}
    assert ev.score_items("s", items[:1], "train") is batch and student.calls == 7
    again = ev.score_items("s", items[:1], "train", repeats=2)
    assert again.samples["xa"] == [(1.0, 0.5), (0.0, 0.5)] and student.calls == 9
    single = gate.Evaluator(Coin(), scorer, {"val": items}, workers=1).score("s", "val")
    assert single.samples == {} and "samples" not in single.to_record()


def test_a_split_score_from_trajectories_keeps_errors_apart():
    trajs = [Trajectory("a", "in", "out", "exp", Score(1.0, 1.0)),
             Trajectory("b", "in", "", "exp", error="student: timeout")]
    score = gate.SplitScore.from_trajectories("train", "blob", trajs)
    assert score.per_item == {"a": (1.0, 1.0)} and score.errors == {"b": "student: timeout"}


# ---------------------------------------------------------------------------------------------- config
def test_gate_modes_compose_from_a_string_a_list_or_an_override():
    assert EvaluationCfg(gate="significance+per_item").gate == ("significance", "per_item")
    assert EvaluationCfg(gate="Strict + PER_ITEM+strict").gate == ("strict", "per_item")
    assert config_from_dict({"evaluation": {"gate": ["significance", "two_split"]}}).evaluation.gate == (
        "significance", "two_split")
    assert config_from_dict({"evaluation": {"gate": "paired+per_item"}}).evaluation.gate == ("paired", "per_item")
    assert gate.planned_checks(("paired", "per_item")) == ("strict", "paired", "per_item")
    assert gate.planned_checks("two_split") == ("strict", "two_split")
    assert gate.planned_checks("significance+strict") == ("significance", "strict")


@pytest.mark.parametrize("evaluation, message, hint", [
    ({"gate": "loose"}, "evaluation.gate: 'loose' is not one of strict, paired, significance, per_item, two_split",
     "combine modes with '+'"),
    ({"gate": "significance+per_itme"}, "evaluation.gate: 'per_itme' is not one of", "did you mean 'per_item'?"),
    ({"gate": []}, "evaluation.gate: names no gate mode", "e.g. significance"),
    ({"gate_test": "ttest"}, "evaluation.gate_test: 'ttest' is not one of stderr, permutation", ""),
    ({"gate_k": -1}, "evaluation.gate_k: must be >= 0, got -1.0", ""),
    ({"item_tolerance": 1}, "evaluation.item_tolerance: must be >= 0 and < 1, got 1.0", ""),
    ({"gate_k": "wide"}, "evaluation.gate_k: expected a number, got 'wide'", ""),
])
def test_config_errors_name_the_key(evaluation, message, hint):
    with pytest.raises(ConfigError) as info:
        config_from_dict({"evaluation": evaluation})
    assert message in info.value.message and hint in info.value.hint


def test_the_defaults_are_the_calibrated_ones():
    cfg = EvaluationCfg()
    assert cfg.gate == ("significance", "per_item") and cfg.gate_test == "permutation" and cfg.paired_alpha == 0.05
    assert cfg.gate_k == 1.75 and cfg.gate_repeats == 3 and cfg.item_tolerance == 0.7
    assert not cfg.reuse_incumbent_score and not cfg.control_copy


# ---------------------------------------------------------------------------------------------- the bench
def test_the_calibration_bench_runs_in_a_tiny_mode_and_prints_json(tmp_path):
    out = tmp_path / "gate_calibration.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "gate_calibration.py"), "--trials", "12", "--sizes",
                           "10", "--jobs", "1", "--json", "--out", str(out)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert {r["student"] for r in rows} == {"near-deterministic", "noisy"}
    assert {r["scenario"] for r in rows} == {"resampling", "trade-off 0.2", "trade-off 0.4", "trade-off 0.8",
                                             "drift 0.1", "drift 0.2", "+10", "+20"}
    for r in rows:
        assert {"gate", "kind", "val_size", "trials", "accept", "accept_ci", "refused", "refused_ci",
                "true_delta"} <= set(r)
        assert r["val_size"] == 10 and r["trials"] == 12
        for key in ("accept", "refused"):
            low, high = r[f"{key}_ci"]
            assert 0 <= low <= r[key] <= high <= 1
    defaults = [r for r in rows if r["default"]]
    assert len(defaults) == 16 and all(r["gate"] == "default" for r in defaults)

    def share(gate_label: str, scenario: str) -> float:
        return sum(r["accept"] for r in rows if r["gate"] == gate_label and r["scenario"] == scenario)

    # drift read as gain without the controls, refused with them
    assert share("default, reuse_incumbent_score", "drift 0.2") > share("default", "drift 0.2")
    assert any(r["refused"] > 0 for r in defaults if r["scenario"] == "drift 0.2")
    saved = json.loads(out.read_text())
    assert saved["benchmark"] == "gate_calibration" and saved["rows"] == rows and saved["validity"] == []

"""The gate's modes on constructed scores (strict, significance with both tests, paired, per_item, two_split and
their composition), repeats kept per (item, repeat), the config keys, and the calibration bench in a tiny mode."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from skillgit.config import EvaluationCfg, config_from_dict
from skillgit.errors import ConfigError
from skillgit.llm.base import Reply
from skillgit.loop import gate
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
    assert "while the mean went 0.0500 → 0.4000" in result.reason and "(20/20 val items scored)" in result.reason
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
    assert not tie.accept and tie.reason == "strict: a tie on val hard: 0.3333 vs 0.3333 (3/3 val items scored)"
    better = split({"a": 1, "b": 1, "c": 0})
    assert gate.decide(cfg, before, better).accept
    assert not gate.decide(EvaluationCfg(gate="strict", gate_margin=1 / 3), before, better).accept
    assert gate.decide(EvaluationCfg(gate="strict", gate_margin=0.3), before, better).accept


def test_significance_needs_more_than_k_standard_errors():
    # m clean gains out of n items: z = sqrt(m (n - 1) / (n - m)); 20 items: m=3 → 1.83, m=2 → 1.45
    cfg = EvaluationCfg(gate="significance", gate_k=1.75, gate_repeats=1)
    three = gate.decide(cfg, *ups(20, 3))
    assert three.accept and check(three, "significance").numbers["z"] == pytest.approx(math.sqrt(3 * 19 / 17),
                                                                                        abs=1e-6)
    two = gate.decide(cfg, *ups(20, 2))
    assert not two.accept and "only 1.45 standard errors (needs > 1.75)" in two.reason
    z3 = math.sqrt(3 * 19 / 17)
    assert not gate.decide(EvaluationCfg(gate="significance", gate_k=z3), *ups(20, 3)).accept  # needs more than k
    assert gate.decide(EvaluationCfg(gate="significance", gate_k=z3 - 1e-3), *ups(20, 3)).accept
    # worse, a tie and a margin
    before, after = ups(20, 3)
    assert "worse" in gate.decide(cfg, after, before).reason
    assert "a tie" in gate.decide(cfg, before, before).reason
    assert not gate.decide(EvaluationCfg(gate="significance", gate_margin=0.15), *ups(20, 3)).accept
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
    assert gate.paired_p_value([0.5, 0.25, -0.1], seed=0) == pytest.approx(2 / 8)  # exact enumeration


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
    assert alone.reason.endswith("; two_split not applicable (10/10 val items scored)")
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
    assert not thin.accept and thin.reason.startswith("cannot judge: only 1/10 val items scored")
    assert [c.name for c in thin.checks] == ["coverage"]


# ---------------------------------------------------------------------------------------------- repeats
def test_significance_with_repeats_uses_the_per_repeat_variance():
    items = ids(10)
    before = split({}, samples={k: [0.0, 0.0, 0.0] for k in items})
    # two items pass all three repeats: per-item means alone (2 of 10 items up) are z = 1.5, not enough …
    after = split({}, samples={k: ([1.0] * 3 if k in ("i00", "i01") else [0.0] * 3) for k in items})
    means_only = gate.decide(EvaluationCfg(gate_k=1.75), split({k: 0.0 for k in items}),
                             split({k: after.per_item[k][0] for k in items}))
    assert not means_only.accept and check(means_only, "significance").numbers["cells"] == 10
    # … but 6 of 30 paired (item, repeat) scores rose, every repeat agreeing: z = sqrt(6 * 29 / 24) = 2.69
    result = gate.decide(EvaluationCfg(gate_k=1.75), before, after)
    numbers = check(result, "significance").numbers
    assert result.accept and numbers["cells"] == 30 and numbers["repeats"] == 3
    assert numbers["z"] == pytest.approx(math.sqrt(6 * 29 / 24), abs=1e-5)
    assert "(10 items × 3 repeats)" in result.reason
    # the same means from disagreeing repeats carry less evidence: one repeat in three passes, on six items
    noisy = split({}, samples={k: ([1.0, 0.0, 0.0] if k < "i06" else [0.0] * 3) for k in items})
    cells, repeats = gate.paired_cells(EvaluationCfg(), before, noisy, set(items))
    assert repeats == 3 and sorted(cells) == [0.0] * 24 + [1.0] * 6
    mean = 6 / 30
    se = math.sqrt(sum((d - mean) ** 2 for d in cells) / 29 / 30)
    assert check(gate.decide(EvaluationCfg(), before, noisy), "significance").numbers["se"] == pytest.approx(
        se, abs=1e-6)


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
    assert cfg.gate == ("significance",) and cfg.gate_test == "stderr"
    assert cfg.gate_k == 1.75 and cfg.gate_repeats == 3 and cfg.item_tolerance == 0.7


# ---------------------------------------------------------------------------------------------- the bench
def test_the_calibration_bench_runs_in_a_tiny_mode_and_prints_json(tmp_path):
    out = tmp_path / "gate_calibration.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "gate_calibration.py"), "--trials", "10", "--sizes",
                           "10", "--json", "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert {r["scenario"] for r in rows} == {"rule", "ceiling"} and len(rows) >= 2 * 10
    for r in rows:
        assert {"mode", "val_size", "trials", "false_accept", "true_accept", "false_accept_ci",
                "true_accept_ci"} <= set(r)
        assert r["val_size"] == 10 and r["trials"] == 10
        for key in ("false_accept", "true_accept"):
            low, high = r[f"{key}_ci"]
            assert 0 <= low <= r[key] <= high <= 1
    defaults = [r for r in rows if r["default"]]
    assert len(defaults) == 2 and defaults[0]["mode"] == "significance" and defaults[0]["repeats"] == 3
    strict = next(r for r in rows if r["label"] == "strict" and r["scenario"] == "ceiling")
    assert strict["true_delta"] > 0.05  # the better candidate really is better
    saved = json.loads(out.read_text())
    assert saved["benchmark"] == "gate_calibration" and saved["rows"] == rows

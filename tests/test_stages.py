"""The step's stages with a scripted teacher: reflect, aggregate (merge and its fallbacks), select (ranking,
budget clipping, negative buffer), update, and the gate's decision rule."""

from __future__ import annotations

import random

from skillgit.config import EvaluationCfg, OptimizerCfg
from skillgit.llm.base import LLMError
from skillgit.loop import gate, stages
from skillgit.loop.schedule import scheduled_budget
from skillgit.types import Edit, Item, RejectedEdit, Score, Trajectory, is_failure
from tests.scripted import KeywordStudent, ScriptedTeacher

SKILL = "# Skill\n\n- Be brief.\n"


def traj(i: int, hard: float) -> Trajectory:
    return Trajectory(f"t{i}", f"input {i}", "out", "exp", Score(hard, hard, "fb"))


def edit(content: str, support: int = 1, source: str = "failure", eid: str = "") -> Edit:
    return Edit("append", content=content, support_count=support, source_type=source, id=eid)


def test_rollout_marks_errors_unknown_not_failed():
    class Flaky(KeywordStudent):
        def run(self, skill, item, sample=0):
            if item.id == "b":
                raise LLMError("server exploded", kind="server", retryable=True)
            return super().run(skill, item, sample)

    items = [Item("a", "x", "A", {"keyword": "units"}), Item("b", "y", "B", {"keyword": "units"})]
    trajs = stages.rollout(Flaky(), "use units", items, lambda it, out: Score(float(out == it.expected), 0.0),
                           workers=2)
    assert trajs[0].ok and trajs[0].score.hard == 1.0
    assert not trajs[1].ok and trajs[1].score is None and "server exploded" in trajs[1].error
    # unknown trajectories are not reflected on
    assert all(t.item_id != "b" for _, group in stages.minibatches(trajs, 4, random.Random(0)) for t in group)


def test_minibatches_keep_failures_and_successes_apart_failures_first():
    trajs = [traj(i, 1.0 if i % 3 == 0 else 0.0) for i in range(10)]
    batches = stages.minibatches(trajs, 3, random.Random(1))
    kinds = [k for k, _ in batches]
    assert kinds == sorted(kinds, key=lambda k: k != "failure")
    for kind, group in batches:
        assert len(group) <= 3
        assert all(is_failure(t.score) == (kind == "failure") for t in group)


def test_reflect_records_malformed_output_and_unknown_ops_without_raising():
    teacher = ScriptedTeacher({"reflect": [
        "this is not json at all",
        "still not json",  # the repair retry also fails
        {"reasoning": "r", "edits": [{"op": "rewrite_all", "content": "x"}, {"op": "add", "content": "Check units."}]},
    ]})
    t = stages.Teacher(teacher, workers=1)
    patches = stages.reflect(t, SKILL, [traj(0, 0.0), traj(1, 0.0)], minibatch_size=1, budget=2,
                             rng=random.Random(0))
    errors = [p for p in patches if p.error]
    good = [p for p in patches if not p.error]
    assert len(errors) == 1 and "malformed" in errors[0].error
    assert len(good) == 1
    assert [e.op for e in good[0].edits] == ["append"]  # "add" normalised, unknown op skipped
    assert any("rewrite_all" in p for p in good[0].problems)


def test_negative_buffer_reaches_reflect_merge_and_rank_prompts():
    rejected = [RejectedEdit(edit("Explain your reasoning first."), -0.12, "worse on val", "r1", 3)]
    teacher = ScriptedTeacher(default={
        "reflect": {"reasoning": "", "edits": [{"op": "append", "content": "Rule A."},
                                               {"op": "append", "content": "Rule B."}]},
        "merge": {"reasoning": "", "edits": [{"op": "append", "content": "Rule A.", "merged_from": ["e1", "e3"]},
                                             {"op": "append", "content": "Rule B.", "merged_from": ["e2", "e4"]}]},
        "rank": {"reasoning": "", "ranking": ["e2", "e1"]},
    })
    t = stages.Teacher(teacher, negative=rejected, workers=1)
    patches = stages.reflect(t, SKILL, [traj(0, 0.0), traj(1, 0.0)], minibatch_size=1, budget=1,
                             rng=random.Random(0))
    agg = stages.aggregate(t, SKILL, patches, merge_batch_size=8)
    sel = stages.select(t, SKILL, agg.edits, budget=1)
    for stage in ("reflect", "merge", "rank"):
        prompts = teacher.prompts(stage)
        assert prompts, stage
        assert all("Explain your reasoning first." in p and "-0.120" in p for p in prompts), stage
    assert [e.content for e in sel.selected] == ["Rule B."]


def test_aggregate_merges_hierarchically_and_carries_support():
    teacher = ScriptedTeacher(default={
        "merge": {"reasoning": "dedupe", "edits": [{"op": "append", "content": "Check units.",
                                                    "merged_from": ["e1", "e2"]}]},
    })
    t = stages.Teacher(teacher, workers=1)
    patches = [stages.Patch("failure", ["a"], [edit("Check units.")]),
               stages.Patch("failure", ["b"], [edit("check units!", support=2)])]
    agg = stages.aggregate(t, SKILL, patches, merge_batch_size=8)
    assert len(agg.edits) == 1
    assert agg.edits[0].support_count == 3 and agg.edits[0].merge_level == 1
    assert agg.rounds[0]["fallback"] is False


def test_aggregate_falls_back_to_concatenation_and_says_so():
    teacher = ScriptedTeacher(default={"merge": "garbage"})
    t = stages.Teacher(teacher, workers=1)
    patches = [stages.Patch("failure", ["a"], [edit("Check units.")]),
               stages.Patch("failure", ["b"], [edit("Check  units.")]),
               stages.Patch("success", ["c"], [edit("Keep answers short.", source="success")])]
    agg = stages.aggregate(t, SKILL, patches, merge_batch_size=8)
    contents = sorted(e.content for e in agg.edits)
    assert contents == ["Check units.", "Keep answers short."]
    units = next(e for e in agg.edits if e.content == "Check units.")
    assert units.support_count == 2  # identical edits folded, support summed
    assert all(r["fallback"] for r in agg.rounds) and len(agg.rounds) == 2  # failure side + final
    assert agg.rounds[-1].get("final") is True


def test_single_patch_needs_no_merge_call():
    teacher = ScriptedTeacher()
    t = stages.Teacher(teacher, workers=1)
    agg = stages.aggregate(t, SKILL, [stages.Patch("failure", ["a"], [edit("X"), edit("Y")])], merge_batch_size=8)
    assert [e.content for e in agg.edits] == ["X", "Y"] and not teacher.requests


def test_select_clips_to_budget_by_ranking_and_records_every_fate():
    teacher = ScriptedTeacher({"rank": [{"reasoning": "c is best", "ranking": ["e3", "e1"]}]})
    t = stages.Teacher(teacher, workers=1)
    edits = [edit("Rule A.", eid="e1"), edit("Rule B.", support=5, eid="e2"), edit("Rule C.", eid="e3")]
    sel = stages.select(t, SKILL, edits, budget=2)
    assert [e.content for e in sel.selected] == ["Rule C.", "Rule A."]
    assert [(r.edit.content, r.status) for r in sel.dropped] == [("Rule B.", "skipped_over_budget")]


def test_select_falls_back_to_support_when_ranking_fails():
    teacher = ScriptedTeacher({"rank": [LLMError("overloaded", kind="server", retryable=True)]})
    t = stages.Teacher(teacher, workers=1)
    edits = [edit("Rule A.", 1, eid="e1"), edit("Rule B.", 5, eid="e2"), edit("Rule C.", 3, eid="e3")]
    sel = stages.select(t, SKILL, edits, budget=2)
    assert [e.content for e in sel.selected] == ["Rule B.", "Rule C."]
    assert sel.record["fallback"] is True and "overloaded" in sel.record["reason"]


def test_select_drops_edits_that_repeat_a_rejected_one():
    rejected = [RejectedEdit(edit("Explain your reasoning."), -0.1, "worse", "r1", 2)]
    t = stages.Teacher(ScriptedTeacher(), negative=rejected, workers=1)
    sel = stages.select(t, SKILL, [edit("explain your  reasoning.", eid="e1"), edit("Check units.", eid="e2")], 4)
    assert [e.content for e in sel.selected] == ["Check units."]
    assert sel.dropped[0].status == "skipped_rejected_before" and "r1/2" in sel.dropped[0].reason


def test_non_retryable_teacher_errors_stop_instead_of_being_skipped():
    teacher = ScriptedTeacher({"rank": [LLMError("bad key", kind="auth", retryable=False)]})
    t = stages.Teacher(teacher, workers=1)
    try:
        stages.select(t, SKILL, [edit("Rule A.", eid="e1"), edit("Rule B.", eid="e2")], budget=1)
    except LLMError as exc:
        assert exc.kind == "auth"
    else:
        raise AssertionError("an auth error must not be swallowed")


def test_update_never_touches_protected_region():
    skill = ("---\nname: x\n---\n# S\n\n- Be brief.\n\n"
             "<!-- skillgit:slow-update -->\nKeep it.\n<!-- /skillgit:slow-update -->\n")
    new, results = stages.update(skill, [Edit("replace", target="Keep it.", content="Changed"),
                                         Edit("append", content="Check units.")], allow_front_matter=False)
    assert [r.status for r in results] == ["skipped_protected_region", "applied"]
    assert "Keep it." in new and "Changed" not in new and new.startswith("---\nname: x\n---\n")
    assert new.index("Check units.") < new.index("<!-- skillgit:slow-update -->")


def _split(scores: dict[str, float], blob="b") -> gate.SplitScore:
    return gate.SplitScore("val", blob, {k: (v, v) for k, v in scores.items()})


def test_gate_is_strict_and_honours_margin_and_use_gate():
    before = _split({"a": 1, "b": 0, "c": 0})
    same = _split({"a": 0, "b": 1, "c": 0})
    better = _split({"a": 1, "b": 1, "c": 0})
    cfg = EvaluationCfg(gate="strict")
    assert not gate.decide(cfg, before, same).accept  # a tie is rejected
    assert gate.decide(cfg, before, better).accept
    assert not gate.decide(EvaluationCfg(gate="strict", gate_margin=0.5), before, better).accept
    assert not gate.decide(EvaluationCfg(), before, better).accept  # the default asks for significance
    worse = _split({"a": 0, "b": 0, "c": 0})
    assert gate.decide(EvaluationCfg(use_gate=False), before, worse).accept


def test_gate_compares_only_items_scored_on_both_sides():
    before = gate.SplitScore("val", "x", {"a": (1, 1), "b": (0, 0)})
    after = gate.SplitScore("val", "y", {"a": (1, 1)}, errors={"b": "student: timeout"})
    assert not gate.decide(EvaluationCfg(), before, after).accept  # 1.0 vs 1.0 on the common item: a tie


def test_paired_gate_rejects_a_lucky_small_gain():
    ids = [f"i{k}" for k in range(20)]
    before = _split({k: 0.0 for k in ids})
    after = _split({k: (1.0 if k == "i0" else 0.0) for k in ids})
    assert gate.decide(EvaluationCfg(gate="strict"), before, after).accept
    assert not gate.decide(EvaluationCfg(), before, after).accept  # the default gate sees the noise too
    result = gate.decide(EvaluationCfg(gate="paired"), before, after)
    assert not result.accept and result.p_value is not None and result.p_value >= 0.1
    big = _split({k: (1.0 if int(k[1:]) < 8 else 0.0) for k in ids})
    assert gate.decide(EvaluationCfg(gate="paired"), before, big).accept


def test_schedules_go_from_learning_rate_to_min():
    for name in ("linear", "cosine"):
        cfg = OptimizerCfg(learning_rate=6, min_learning_rate=2, lr_scheduler=name)
        budgets = [scheduled_budget(cfg, i, 10) for i in range(10)]
        assert budgets[0] == 6 and budgets[-1] == 2
        assert budgets == sorted(budgets, reverse=True)
    assert {scheduled_budget(OptimizerCfg(lr_scheduler="constant", learning_rate=3), i, 10) for i in range(10)} == {3}


def test_evaluator_caches_by_blob_and_excludes_errors():
    student = KeywordStudent()
    items = [Item(f"i{k}", "q", "ans", {"keyword": "units"}) for k in range(4)]
    ev = gate.Evaluator(student, lambda it, out: Score(float(out == it.expected), 0.0), {"val": items}, workers=2)
    first = ev.score("mention units", "val")
    second = ev.score("mention units", "val")
    assert first is second and student.calls == 4 and ev.cache_hits == 1
    assert first.mean("hard") == 1.0
    assert ev.score("nothing", "val").mean("hard") == 0.0 and student.calls == 8


def test_gate_repeats_average_several_samples_per_item():
    class Coin(KeywordStudent):
        """Right on even samples only: one sample says 1.0, two say 0.5 on average."""

        def run(self, skill, item, sample=0):
            self.calls += 1
            from skillgit.llm.base import Reply
            return Reply(str(item.expected) if sample % 2 == 0 else "wrong")

    items = [Item("a", "q", "A"), Item("b", "q", "B")]
    scorer = lambda it, out: Score(float(out == it.expected), 0.0)  # noqa: E731
    one = gate.Evaluator(Coin(), scorer, {"val": items}, workers=1, repeats=1).score("s", "val")
    student = Coin()
    two = gate.Evaluator(student, scorer, {"val": items}, workers=1, repeats=2).score("s", "val")
    assert one.mean("hard") == 1.0 and two.mean("hard") == 0.5 and student.calls == 4


def test_a_merge_that_empties_the_suggestions_falls_back_to_them_and_says_so():
    import json

    from skillgit.loop import stages
    from skillgit.types import Edit

    class NoOpMerger:
        id = "noop"

        def complete(self, request):
            from skillgit.llm.base import Reply

            edit = {"op": "replace", "target": "Be brief.", "content": "Be brief.", "rationale": "same",
                    "file": "SKILL.md", "merged_from": ["e1"]}
            answer = {"reasoning": "merged", "edits": [edit]}
            return Reply(json.dumps(answer))

    teacher = stages.Teacher(NoOpMerger())
    edits = [Edit("append", "Dates are ISO."), Edit("append", "Codes are upper case.")]
    out, record = stages._merge_call(teacher, "# Skill\n\nBe brief.\n", edits, 1)
    assert [e.content for e in out] == ["Dates are ISO.", "Codes are upper case."]
    assert record["fallback"] is True and "change nothing" in record["reason"]


# ---------------------------------------------------------------------------------------- select: edits that apply
def test_select_fills_the_budget_with_edits_that_apply_not_with_missed_anchors():
    # ranked first: an anchor the skill does not have (a weak teacher's); today it took a place in the budget
    teacher = ScriptedTeacher({"rank": [{"reasoning": "", "ranking": ["e1", "e2", "e3", "e4"]}]})
    t = stages.Teacher(teacher, workers=1)
    edits = [Edit("replace", "Be concise.", target="Be helpful.", id="e1"),
             Edit("replace", "- Be brief and exact.", target="<skill><# Skill>- Be brief.</#Skill>", id="e2"),
             Edit("append", "Check units.", id="e3"), Edit("append", "Show the formula.", id="e4")]
    sel = stages.select(t, SKILL, edits, budget=2)
    assert [e.id for e in sel.selected] == ["e2", "e3"]
    fates = {r.edit.id: (r.status, r.reason) for r in sel.dropped}
    assert fates["e1"][0] == "skipped_target_not_found" and fates["e1"][1].startswith("select: does not apply")
    assert fates["e4"][0] == "skipped_over_budget"
    assert sel.record["inapplicable"] == 1 and sel.record["candidates"] == 3
    assert "Be concise." not in teacher.prompts("rank")[0]  # the ranking never saw the missed anchor
    new, results = stages.update(SKILL, sel.selected, allow_front_matter=False)
    assert all(r.applied for r in results) and "- Be brief and exact." in new and "Check units." in new


def test_select_skips_an_edit_that_no_longer_applies_after_the_ones_ranked_above_it():
    teacher = ScriptedTeacher({"rank": [{"reasoning": "", "ranking": ["e1", "e2", "e3"]}]})
    t = stages.Teacher(teacher, workers=1)
    edits = [Edit("replace", "- Be short.", target="- Be brief.", id="e1"),
             Edit("replace", "- Be concise.", target="- Be brief.", id="e2"),  # its anchor is gone after e1
             Edit("append", "Check units.", id="e3")]
    sel = stages.select(t, SKILL, edits, budget=2)
    assert [e.id for e in sel.selected] == ["e1", "e3"]
    [second] = [r for r in sel.dropped if r.edit.id == "e2"]
    assert second.status == "skipped_target_not_found" and "ranked 2" in second.reason


def test_select_without_dry_apply_keeps_suggestions_as_ranked():
    teacher = ScriptedTeacher({"rank": [{"reasoning": "", "ranking": ["e1", "e2"]}]})
    edits = [Edit("replace", "Be concise.", target="Be helpful.", id="e1"), Edit("append", "Check units.", id="e2"),
             Edit("append", "Show the formula.", id="e3")]
    sel = stages.select(stages.Teacher(teacher, workers=1), SKILL, edits, budget=2, dry_apply=False)
    assert [e.id for e in sel.selected] == ["e1", "e2"]  # a rewrite reads a missed anchor as a suggestion


def test_an_edit_naming_a_file_the_package_lacks_never_takes_the_budget():
    from skillgit import package

    skill = package.bundle({"SKILL.md": "# Dates\nUse ISO dates.\n", "references/formats.md": "# Formats\n"})
    edits = [Edit("replace", "x", target="# Formats", file="references/nope.md", id="e1"),
             Edit("append", "- Week numbers.", file="references/formats.md", id="e2")]
    sel = stages.select(stages.Teacher(ScriptedTeacher(), workers=1), skill, edits, budget=1)
    assert [e.id for e in sel.selected] == ["e2"]
    assert [(r.edit.id, r.status) for r in sel.dropped] == [("e1", "skipped_file_not_found")]


def test_a_teacher_timeout_is_recorded_with_the_setting_to_raise():
    error = LLMError("openai:local@127.0.0.1:8080: no answer within 120s", "raise model.teacher.timeout_s (or lower "
                     "model.teacher.max_tokens)", kind="timeout", retryable=True)
    t = stages.Teacher(ScriptedTeacher({"reflect": [error]}), workers=1)
    [p] = stages.reflect(t, SKILL, [traj(0, 0.0)], minibatch_size=4, budget=2, rng=random.Random(0))
    assert p.error is not None and p.error.startswith("teacher call failed") and "model.teacher.timeout_s" in p.error


def test_propose_update_creates_files_where_skill_new_files_allows():
    # skill.new_files was read by nobody: update always used the default (references/**, scripts/**)
    from skillgit import package
    from skillgit.config import config_from_dict
    from skillgit.loop import modes
    from skillgit.loop.context import StepContext
    from skillgit.loop.ledger import Ledger

    skill = package.bundle({"SKILL.md": "# Dates\nUse ISO dates.\n"})
    reply = {"reasoning": "", "edits": [{"op": "append", "file": "docs/weeks.md", "content": "- ISO weeks."},
                                        {"op": "append", "file": "references/x.md", "content": "- Not here."}]}
    teacher = stages.Teacher(ScriptedTeacher(default={"reflect": reply}), workers=1)
    cfg = config_from_dict({"skill": {"new_files": ["docs/**"]}, "gradient": {"minibatch_size": 4}})
    ctx = StepContext(cfg, KeywordStudent(), lambda item, out: Score(0.0, 0.0), None, Ledger(), lambda event: None,
                      ())  # type: ignore[arg-type]
    text, record = modes.propose_update(ctx, teacher, skill, [traj(0, 0.0)], budget=4, step=1)
    assert package.parse(text).get("docs/weeks.md") == "- ISO weeks.\n"
    fates = {r.edit.file: r.status for r in record.apply}
    assert fates == {"docs/weeks.md": "applied", "references/x.md": "skipped_file_not_found"}


def test_a_rewrite_wrapped_in_the_prompts_skill_frame_is_unwrapped_and_says_so():
    # the 1.5B teacher's full rewrite of first-letters came back as "<skill>\n---\n…\n</skill>"; the front matter
    # was then "restored" above it and the frame and a second front matter stayed in the skill
    from skillgit.loop import modes

    seed = "---\nname: x\ndescription: d\n---\n# X\n\nBe helpful.\n"
    framed = "<skill>\n---\nname: x\ndescription: d\n---\n# X\n\nBe precise.\n</skill>"
    text, problem, stripped = modes.checked_rewrite(seed, {"skill": framed}, None, False)
    assert problem is None and text == "---\nname: x\ndescription: d\n---\n# X\n\nBe precise.\n"
    assert stripped == "prompt's <skill> frame stripped"
    fenced = "```markdown\n<skill>\n# X\n\nBe exact.\n</skill>\n```"
    text, problem, stripped = modes.checked_rewrite(seed, {"skill": fenced}, None, False)
    assert problem is None and text == "---\nname: x\ndescription: d\n---\n# X\n\nBe exact.\n"
    assert stripped == "prompt's ```markdown fence and <skill> frame stripped"
    # a package keeps its <file path> blocks: they are its format
    from skillgit import package

    pkg = package.bundle({"SKILL.md": "# X\n\nBe helpful.\n", "references/a.md": "# A\n"})
    new = package.bundle({"SKILL.md": "# X\n\nBe kind.\n", "references/a.md": "# A\n"})
    text, problem, stripped = modes.checked_rewrite(pkg, {"skill": "<skill>\n" + new + "</skill>"}, None, False)
    assert problem is None and text == new and stripped

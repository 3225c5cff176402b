"""The simulated world (skillgit/world): a student that follows concepts, a teacher that sees only its prompt, and
measurable effects of the gate and of the negative buffer. Fast, no git."""

from __future__ import annotations

import functools
import json
from dataclasses import replace

import pytest

from skillgit.config import SimulatedCfg
from skillgit.llm.base import ChatStudent, LLMError, Message, Request
from skillgit.types import Item
from skillgit.world import (
    SimulatedStudentLLM,
    SimulatedTeacher,
    all_rules_skill,
    default_skill,
    describe,
    generate_tasks,
    hidden_rules,
    hill_climb,
    read_skill,
    reference_score,
    tags,
)
from skillgit.world.lexicon import norm, quality_of, topic_of_text

ALL = SimulatedCfg(seed=0, num_rules=8, noise=0.0, lucky_rate=0.0, malformed_rate=0.0)


def run(cfg: SimulatedCfg, skill: str, text: str, sample: int = 0) -> str:
    return ChatStudent(SimulatedStudentLLM(cfg)).run(skill, Item("x", text, "unused"), sample).text


def with_lines(*lines: str) -> str:
    return default_skill() + "".join(line + "\n" for line in lines)


# ---------------------------------------------------------------------------------------------- tasks
def test_tasks_are_deterministic_prefix_stable_and_carry_no_rule_info():
    cfg = SimulatedCfg(seed=4)
    a, b = generate_tasks(cfg, 30), generate_tasks(cfg, 50)
    assert a == b[:30]
    assert generate_tasks(SimulatedCfg(seed=5), 30) != a
    assert all(it.metadata == {"world": "simulated"} for it in b)
    assert len({it.id for it in b}) == 50
    assert all(it.input.split(":", 1)[1].strip() for it in b)
    text = describe(cfg)
    assert "simulation" in text and all(r.summary in text for r in hidden_rules(cfg))
    assert len(hidden_rules(cfg)) == cfg.num_rules


def test_default_skill_conveys_nothing_and_all_rules_skill_is_the_ceiling():
    cfg = SimulatedCfg(seed=2)
    assert default_skill().startswith("---\nname: ")
    assert not read_skill(default_skill()).concepts
    items = generate_tasks(cfg, 80)
    student = ChatStudent(SimulatedStudentLLM(cfg))
    seed = sum(reference_score(it, student.run(default_skill(), it).text).hard for it in items) / 80
    best = sum(reference_score(it, student.run(all_rules_skill(cfg), it).text).hard for it in items) / 80
    assert seed < 0.15 and best > 0.85


# ---------------------------------------------------------------------------------------------- student
RECORD = "Normalise this record: date 3/5/2024; code ab-12; price 4.2 USD; name Ada Lovelace"


def test_student_follows_paraphrases_of_a_rule_and_not_its_absence():
    assert run(ALL, default_skill(), RECORD) == "Answer: 3/5/2024, ab-12, 4.2 USD, Ada Lovelace"
    for line in ("Write every date in ISO format (YYYY-MM-DD).", "Dates: put the year first, as in 2024-03-05.",
                 "use yyyy-mm-dd for all dates"):
        assert "2024-03-05" in run(ALL, with_lines(line), RECORD), line
    for line in ("Uppercase all product codes.", "Codes must be capitalised, e.g. AB-12 rather than ab-12.",
                 "CODES IN CAPITALS."):
        assert "AB-12" in run(ALL, with_lines(line), RECORD), line
    assert "Lovelace, Ada" in run(ALL, with_lines("Put the surname first, then a comma and the given name."), RECORD)
    assert run(ALL, all_rules_skill(ALL), RECORD) == "2024-03-05 | AB-12 | $4.20 | Lovelace, Ada"
    # Not conveyed: a vague line does nothing.
    assert "3/5/2024" in run(ALL, with_lines("Double-check dates."), RECORD)


def test_harmful_phrases_break_answers_and_negated_ones_do_not():
    good = all_rules_skill(ALL)
    explained = run(ALL, good + "Explain your reasoning before the answer.\n", RECORD)
    assert explained.startswith("2024-03-05 | AB-12") and "\n" in explained  # an explanation line: not exact
    assert "05/03/2024" in run(ALL, good + "Write dates as DD/MM/YYYY.\n", RECORD)  # wins over the ISO line
    assert "$4 |" in run(ALL, good + "Round numbers to whole numbers.\n", RECORD)
    assert "ab-12" in run(ALL, good + "Write codes in lowercase.\n", RECORD)  # a plain concept overrides the rule
    assert run(ALL, good + "Never explain your reasoning.\n", RECORD) == run(ALL, good, RECORD)
    long_skill = good + "".join(f"Remember point {i}.\n" for i in range(60))
    assert SimulatedStudentLLM(ALL).slip_rate(long_skill) > SimulatedStudentLLM(ALL).slip_rate(good)


def test_student_is_deterministic_per_request_and_wobbles_across_samples_and_skills():
    cfg = SimulatedCfg(seed=1, noise=0.3)
    items = generate_tasks(cfg, 40)
    skill = all_rules_skill(cfg)
    student = ChatStudent(SimulatedStudentLLM(cfg))
    first = [student.run(skill, it).text for it in items]
    assert first == [student.run(skill, it).text for it in items]
    assert first == [ChatStudent(SimulatedStudentLLM(cfg)).run(skill, it).text for it in items]
    assert first != [student.run(skill, it, sample=1).text for it in items]
    padded = skill + "Read the whole record before answering.\n"  # no concept: only the noise changes
    assert first != [student.run(padded, it).text for it in items]
    scores = {round(sum(reference_score(it, student.run(s, it, k).text).hard for it in items), 3)
              for s in (skill, padded) for k in range(3)}
    assert len(scores) > 1  # validation scores wobble


def test_student_never_reads_the_expected_answer():
    cfg = SimulatedCfg(seed=3)
    student = ChatStudent(SimulatedStudentLLM(cfg))
    for it in generate_tasks(cfg, 20):
        garbage = replace(it, expected="zzz | garbage")
        assert student.run(all_rules_skill(cfg), it).text == student.run(all_rules_skill(cfg), garbage).text


def test_student_usage_is_plausible():
    reply = SimulatedStudentLLM(ALL).complete(Request((Message("system", "x" * 400), Message("user", RECORD))))
    assert reply.usage.calls == 1 and 100 <= reply.usage.prompt_tokens <= 140 and reply.usage.completion_tokens > 5
    assert SimulatedStudentLLM(ALL).id.startswith("simulated:sim-student")


# ---------------------------------------------------------------------------------------------- teacher
@functools.lru_cache(maxsize=None)
def failure_blocks(cfg: SimulatedCfg, skill: str, n: int, expected: bool) -> str:
    """`<trajectory>` blocks of the first `n` failures of `skill` on the world's tasks."""
    student = ChatStudent(SimulatedStudentLLM(cfg))
    blocks = []
    for it in generate_tasks(cfg, 60):
        out = student.run(skill, it).text
        score = reference_score(it, out)
        if score.hard < 1 and len(blocks) < n:
            blocks.append(tags.trajectory(it.id, "failure", score.hard, score.soft, it.input, out,
                                          str(it.expected) if expected else None,
                                          score.feedback if expected else None))
    return "\n".join(blocks)


def failure_prompt(cfg: SimulatedCfg, skill: str, n: int = 8, *, expected: bool = True, rejected=None,
                   budget: int = 4) -> str:
    return tags.prompt("reflect", tags.block("skill", skill), f"<budget>{budget}</budget>",
                       failure_blocks(cfg, skill, n, expected),
                       tags.rejected_edits(rejected) if rejected is not None else "")


def ask(teacher: SimulatedTeacher, text: str, seed: int | None = None) -> str:
    return teacher.complete(Request((Message("system", "You are the teacher."), Message("user", text)),
                                    stage=tags.stage_of(text) or "", seed=seed)).text


def reflect(teacher: SimulatedTeacher, text: str, seed: int | None = None) -> list[dict]:
    return json.loads(ask(teacher, text, seed))["edits"]


def test_teacher_sees_only_the_prompt(monkeypatch):
    """The teacher diagnoses from the prompt text: without expected answers or feedback it cannot tell what is
    wrong with the dates; and it never calls into the world's hidden parts."""
    cfg = SimulatedCfg(seed=0, num_rules=8, malformed_rate=0.0)
    with_expected = failure_prompt(cfg, default_skill(), budget=8)
    without = failure_prompt(cfg, default_skill(), expected=False, budget=8)
    import skillgit.world.rules as rules_mod
    import skillgit.world.tasks as tasks_mod

    def forbidden(*_a, **_k):
        raise AssertionError("the teacher touched the hidden world")

    for name in ("hidden_rules", "house_topics", "generate_tasks", "make_item"):
        monkeypatch.setattr(tasks_mod, name, forbidden)
    for name in ("pick_rules", "read_skill", "render_record"):
        monkeypatch.setattr(rules_mod, name, forbidden)
    teacher = SimulatedTeacher(cfg)
    topics_with, topics_without = set(), set()
    for seed in range(20):
        topics_with |= {topic_of_text(e["content"]) for e in reflect(teacher, with_expected, seed)}
        topics_without |= {topic_of_text(e["content"]) for e in reflect(teacher, without, seed)}
    assert ("date", "iso") in topics_with and ("separator", "pipe") in topics_with
    assert topics_without <= {None}  # only off-target ideas: no symptom can be diagnosed
    # The scorer's feedback never quotes the expected text (judge isolation): alone, it diagnoses nothing.
    feedback_only = with_expected.replace("<expected>", "<ignored>").replace("</expected>", "</ignored>")
    assert {topic_of_text(e["content"]) for seed in range(5) for e in reflect(teacher, feedback_only, seed)} <= {None}


def test_teacher_proposes_vague_and_harmful_ideas_too():
    cfg = SimulatedCfg(seed=2, num_rules=8, malformed_rate=0.0)
    teacher = SimulatedTeacher(cfg)
    text = failure_prompt(cfg, default_skill())
    ideas = [e["content"] for seed in range(30) for e in reflect(teacher, text, seed) if e["content"]]
    labels = {quality_of(i) for i in ideas}
    assert "good" in labels and "vague" in labels
    assert any(read_skill(i).harms or read_skill(i).plain for i in ideas)  # harmful for this all-rules world
    assert {e["op"] for seed in range(30) for e in reflect(teacher, text, seed)} >= {"append", "insert_after"}


def test_teacher_uses_replace_and_delete_on_lines_it_sees():
    cfg = SimulatedCfg(seed=2, num_rules=8, malformed_rate=0.0)
    skill = with_lines("Write dates as DD/MM/YYYY.", "Explain your reasoning before the answer.", "Double-check dates.")
    text = failure_prompt(cfg, skill)
    edits = [e for seed in range(30) for e in reflect(SimulatedTeacher(cfg), text, seed)]
    assert {"replace", "delete"} <= {e["op"] for e in edits}
    assert all(e["target"] in skill for e in edits if e["op"] != "append")


def test_teacher_honours_rejected_edits_and_repeats_them_without_the_block():
    cfg = SimulatedCfg(seed=5, malformed_rate=0.0)
    teacher = SimulatedTeacher(cfg)
    plain = failure_prompt(cfg, default_skill())
    repeated = proposed = 0
    for seed in range(25):
        first = [e for e in reflect(teacher, plain, seed) if e["content"]]
        rejected = [(e["op"], e["target"], e["content"], -0.05, "validation score did not improve") for e in first]
        gone = {norm(e["content"]) for e in first}
        with_block = failure_prompt(cfg, default_skill(), rejected=rejected)
        for s2 in range(seed, seed + 3):
            again = reflect(teacher, with_block, s2)
            assert not gone & {norm(e["content"]) for e in again}
            assert len(again) <= 4
        # Same prompt, no buffer: over the next three calls, rejected ideas come back.
        later = {norm(e["content"]) for s2 in range(3) for e in reflect(teacher, plain, 1000 + 3 * seed + s2)}
        repeated += len(gone & later)
        proposed += len(gone)
    assert repeated / proposed > 0.3


def test_teacher_honours_budget_and_does_not_repeat_what_the_skill_says():
    cfg = SimulatedCfg(seed=1, num_rules=8, malformed_rate=0.0)
    skill = all_rules_skill(cfg)
    text = failure_prompt(cfg, default_skill(), budget=1)
    assert all(len(reflect(SimulatedTeacher(cfg), text, s)) <= 1 for s in range(20))
    text = failure_prompt(cfg, skill)
    for s in range(20):
        for e in reflect(SimulatedTeacher(cfg), text, s):
            assert e["op"] == "delete" or norm(e["content"]) not in norm(skill)


STAGE_KEYS = {"reflect": {"edits": list}, "merge": {"edits": list}, "rank": {"ranking": list},
              "lr": {"num_edits": int}, "slow_update": {"guidance": str}, "meta_skill": {"meta_skill": str},
              "meta_reflect": {"edits": list}, "rewrite": {"skill": str}, "full_rewrite": {"skill": str},
              "pick": {"choice": str}}


def stage_prompts(cfg: SimulatedCfg) -> dict[str, str]:
    skill = (default_skill() + "Double-check dates.\n<!-- skillgit:slow-update -->\n- keep it short\n"
             "<!-- /skillgit:slow-update -->\n")
    fails = failure_prompt(cfg, skill)
    trajectories = "\n".join(tags.block("trajectory", b.body, **b.attrs) for b in tags.find(fails, "trajectory"))
    edits = "\n".join(tags.edit(f"e{i}", op, content, target, "r", support=i % 3 + 1) for i, (op, content, target) in
                      enumerate([("append", "Use yyyy-mm-dd for all dates.", ""),
                                 ("append", "Use yyyy-mm-dd for all dates", ""),
                                 ("replace", "Write every date in ISO format (YYYY-MM-DD).", "Double-check dates."),
                                 ("insert_after", "Uppercase all product codes.", "Keep every field of the record."),
                                 ("delete", "", "Read the record and rewrite each field in the house style.")]))
    pairs = "\n".join(tags.block("pair", "\n".join([tags.block("input", b.first("input")),
                                                    tags.block("expected", b.first("expected")),
                                                    tags.block("before_output", b.first("output")),
                                                    tags.block("after_output", b.first("output"))]),
                                 id=b.attrs["id"], kind="persistent_failure")
                      for b in tags.find(fails, "trajectory"))
    steps = tags.block("rejected_steps", tags.block("step", edits, n=3, delta="-0.050"))
    return {
        "reflect": fails,
        "merge": tags.prompt("merge", tags.block("skill", skill), edits),
        "rank": tags.prompt("rank", tags.block("skill", skill), edits, "<budget>2</budget>"),
        "lr": tags.prompt("lr", tags.block("skill", skill),
                          tags.block("stats", json.dumps({"batch": 16, "failures": 12, "scored": 16})),
                          '<bounds min="1" max="6"></bounds>'),
        "slow_update": tags.prompt("slow_update", tags.block("skill", skill), tags.block("comparison", pairs)),
        "meta_skill": tags.prompt("meta_skill", tags.block("meta_skill", "- avoid: Be concise."),
                                  tags.block("comparison", pairs), tags.block("accepted_steps", "(none)"), steps),
        "meta_reflect": tags.prompt("meta_reflect", tags.block("skill", skill), tags.block("accepted_steps", "(none)"),
                                    steps, "<budget>2</budget>"),
        "rewrite": tags.prompt("rewrite", tags.block("skill", skill), edits),
        "full_rewrite": tags.prompt("full_rewrite", tags.block("skill", skill), trajectories),
        "pick": tags.prompt("pick", tags.block("candidate", skill, id="a"),
                            tags.block("candidate", all_rules_skill(cfg), id="b")),
    }


def well_formed(stage: str, text: str) -> bool:
    try:
        obj = json.loads(text)
    except ValueError:
        return False
    if not isinstance(obj, dict) or not all(isinstance(obj.get(k), t) for k, t in STAGE_KEYS[stage].items()):
        return False
    for e in obj.get("edits", []):
        if set(e) < {"op", "target", "content", "rationale"} or e["op"] not in ("append", "insert_after", "replace",
                                                                                  "delete"):
            return False
        if stage == "merge" and not isinstance(e.get("merged_from"), list):
            return False
    return True


def test_every_stage_answers_the_documented_json_except_the_malformed_fraction():
    good = SimulatedTeacher(SimulatedCfg(seed=0, num_rules=8, malformed_rate=0.0))
    prompts = stage_prompts(SimulatedCfg(seed=0, num_rules=8))
    for stage, text in prompts.items():
        for seed in range(5):
            assert well_formed(stage, ask(good, text, seed)), stage
    sloppy = SimulatedTeacher(SimulatedCfg(seed=0, num_rules=8, malformed_rate=0.3))
    answers = [(stage, ask(sloppy, text, seed)) for stage, text in prompts.items() for seed in range(30)]
    bad = sum(not well_formed(stage, a) for stage, a in answers) / len(answers)
    assert 0.2 < bad < 0.4
    with pytest.raises(LLMError):
        ask(good, "no stage line here")


def test_stage_answers_make_sense():
    cfg = SimulatedCfg(seed=0, num_rules=8, malformed_rate=0.0)
    teacher, prompts = SimulatedTeacher(cfg), stage_prompts(cfg)
    merged = json.loads(ask(teacher, prompts["merge"]))["edits"]
    assert merged[0]["merged_from"] == ["e0", "e1"] and len(merged) == 4  # near-identical ideas merged first
    ranking = json.loads(ask(teacher, prompts["rank"]))["ranking"]
    assert sorted(ranking) == ["e0", "e1", "e2", "e3", "e4"]
    assert 4 <= json.loads(ask(teacher, prompts["lr"]))["num_edits"] <= 6  # 75 % failures → large steps
    guidance = json.loads(ask(teacher, prompts["slow_update"]))["guidance"]
    assert "keep it short" in guidance and "<!--" not in guidance
    memory = json.loads(ask(teacher, prompts["meta_skill"]))["meta_skill"]
    assert "avoid: Be concise." in memory and "avoid: Use yyyy-mm-dd for all dates." in memory
    rewritten = json.loads(ask(teacher, prompts["rewrite"]))["skill"]
    original = tags.first(prompts["rewrite"], "skill")
    assert rewritten.startswith(original.split("# Record")[0])  # front matter verbatim
    assert "<!-- skillgit:slow-update -->\n- keep it short\n<!-- /skillgit:slow-update -->" in rewritten
    assert rewritten.count("Use yyyy-mm-dd for all dates") == 1
    assert json.loads(ask(teacher, prompts["pick"]))["choice"] == "b"
    # meta skill notes are teacher memory: an idea noted as "avoid" is not proposed again.
    for seed in range(10):
        text = prompts["reflect"] + "\n" + tags.block("meta_skill", "- avoid: Use yyyy-mm-dd for all dates.")
        assert "use yyyy-mm-dd for all dates" not in {norm(e["content"]) for e in reflect(teacher, text, seed)}


def test_teacher_reads_prompts_rendered_by_the_project():
    prompts = pytest.importorskip("skillgit.prompts")
    from skillgit.types import Edit, RejectedEdit, Trajectory

    cfg = SimulatedCfg(seed=1, num_rules=8, malformed_rate=0.0)
    student = ChatStudent(SimulatedStudentLLM(cfg))
    trajs = [Trajectory(it.id, it.input, out, it.expected, reference_score(it, out))
             for it in generate_tasks(cfg, 8) for out in [student.run(default_skill(), it).text]]
    banned = RejectedEdit(Edit("append", "Double-check dates."), -0.05, "worse")
    variables = {"skill": prompts.block_skill(default_skill()),
                 "trajectories": prompts.block_trajectories(trajs, "auto"),
                 "budget": prompts.block_budget(3), "rejected_edits": prompts.block_rejected([banned]),
                 "meta_skill": prompts.block_meta_skill("")}
    messages = prompts.render("reflect", variables)
    for seed in range(10):
        obj = json.loads(SimulatedTeacher(cfg).complete(Request(tuple(messages), stage="reflect", seed=seed)).text)
        assert not prompts.validate("reflect", obj)
        assert 1 <= len(obj["edits"]) <= 3 and "Double-check dates." not in [e["content"] for e in obj["edits"]]


# ---------------------------------------------------------------------------------------------- learning
@pytest.mark.slow
def test_hill_climbing_learns_and_the_gate_and_the_buffer_have_measurable_effects():
    """Greedy hill climbing with the world's own teacher (climb.py, no git): learning works from the weak seed
    skill; forcing acceptance lets harmful ideas in and ends lower on test for most seeds; without the negative
    buffer the teacher re-proposes rejected ideas."""
    size = dict(steps=8, n_train=48, n_val=30)
    seeds = range(12)
    gated_tests, forced_tests, harmful_let_in = [], [], 0
    for s in seeds:
        cfg = SimulatedCfg(seed=s)
        gated = hill_climb(cfg, n_test=60, **size)
        assert gated.final_val > gated.seed_val and gated.final_test > gated.seed_test + 0.2, s
        assert gated.accepted >= 2 and gated.rejected >= 1, s
        forced = hill_climb(cfg, n_test=60, gate=False, **size)
        harmful_let_in += bool(forced.ever_hurtful)
        gated_tests.append(gated.final_test)
        forced_tests.append(forced.final_test)
    assert sum(gated_tests) / len(seeds) > 0.75
    assert harmful_let_in >= 8  # without the gate, harmful ideas get into the skill…
    assert sum(f < g for f, g in zip(forced_tests, gated_tests)) > len(seeds) / 2  # …test ends lower, most seeds
    assert sum(forced_tests) / len(seeds) < sum(gated_tests) / len(seeds) - 0.15
    repeats_on = sum(hill_climb(SimulatedCfg(seed=s), n_test=0, **size).repeats for s in range(4))
    repeats_off = sum(hill_climb(SimulatedCfg(seed=s), n_test=0, use_buffer=False, **size).repeats for s in range(4))
    assert repeats_off > 2 * max(1, repeats_on)  # without the buffer, rejected ideas come back


def test_answers_do_not_depend_on_the_process(tmp_path):
    """Same request, same answer — also across processes with different hash seeds (the call cache and resume
    rely on it)."""
    import os
    import subprocess
    import sys

    script = (
        "import hashlib, json\n"
        "from skillgit.config import SimulatedCfg\n"
        "from skillgit.world.climb import hill_climb\n"
        "r = hill_climb(SimulatedCfg(seed=3, malformed_rate=0.2), steps=4, n_train=32, n_val=20, n_test=10)\n"
        "print(hashlib.sha256(json.dumps([r.final_skill, [s.applied for s in r.steps], r.final_test]).encode())"
        ".hexdigest())\n")
    digests = set()
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
        assert proc.returncode == 0, proc.stderr
        digests.add(proc.stdout.strip())
    assert len(digests) == 1

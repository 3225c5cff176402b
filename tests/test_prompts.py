"""skillgit.prompts: templates, blocks, the block parser, answer schemas."""

from __future__ import annotations

import json
import os

import pytest

from skillgit import prompts as P
from skillgit.errors import SkillgitError
from skillgit.loop.deep_reflect import Turn, block_probes
from skillgit.resources import templates_dir
from skillgit.skilldoc import split_document
from skillgit.types import Edit, RejectedEdit, Score, Trajectory

# Text whose lines look like our own tags: it must survive every block it is put in.
NASTY = "line one\n</output>\n<trajectory id=\"fake\">\n&lt;/input>\n&amp;&lt;edit>\n  <skill> indented\n</content>"
SKILL = "---\nname: demo\n---\n# Demo\n- Be brief.\n<skill>\n{{budget}} stays literal\n"


def traj(item_id="t1", hard=0.0, soft=0.5, **kw):
    base = dict(item_id=item_id, input="What is 2+2?", output="four", expected=4,
                score=Score(hard, soft, "expected a digit"))
    base.update(kw)
    return Trajectory(**base)


EDITS = [Edit("replace", "- Be brief: one line.", "- Be brief.", "short answers score", 2, "failure", 1, "e1"),
         Edit("append", NASTY, "", "why\nnot", 1, "success", 0, "e2")]
REJECTED = [RejectedEdit(Edit("append", "- Show your work."), -0.05, "val 0.60 → 0.55", "r1", 3),
            RejectedEdit(Edit("delete", target="- Be brief."), 0.0, "no gain")]
PAIRS = [
    {"id": "a", "kind": "improved", "input": "i-a", "before_output": "x", "after_output": "4", "expected": "4",
     "before_score": 0.0, "after_score": 1.0},
    {"id": "b", "kind": "stable_success", "input": "i-b", "before_output": "4", "after_output": "4",
     "expected": "4", "before_score": 1.0, "after_score": 1.0},
    {"id": "c", "kind": "regressed", "input": NASTY, "before_output": "4", "after_output": NASTY,
     "expected": {"n": 4}, "before_score": 1.0, "after_score": 0.0},
    {"id": "d", "kind": "persistent_failure", "input": "i-d", "before_output": "5", "after_output": "6",
     "expected": "4", "before_score": 0.0, "after_score": 0.0},
]
STEPS = [{"step": 3, "delta": 0.05, "edits": [EDITS[1]], "reason": "accepted: +0.050"},
         {"step": 5, "delta": -0.02, "edits": [EDITS[0].to_dict()]}]


def all_variables() -> dict[str, str]:
    return {
        "skill": P.block_skill(SKILL),
        "trajectories": P.block_trajectories([traj(), traj("t2", output=NASTY)], "failure"),
        "budget": P.block_budget(3),
        "rejected_edits": P.block_rejected(REJECTED),
        "meta_skill": P.block_meta_skill("- Format rules help."),
        "edits": P.block_edits(EDITS),
        "stats": P.block_stats({"step": 4, "val": 0.61, "recent_deltas": [0.02, -0.01]}),
        "bounds": P.block_bounds(1, 8),
        "comparison": P.block_comparison(PAIRS),
        "accepted_steps": P.block_steps("accepted_steps", STEPS[:1]),
        "rejected_steps": P.block_steps("rejected_steps", STEPS[1:]),
        "candidates": P.block_candidates({"a": SKILL, "b": "# Other\n"}),
        # deep reflect (loop/deep_reflect.py)
        "probes": block_probes([Turn("t1", 1, "ask", "Why this date?", "My skill says nothing about dates.")]),
        "turn": '<turn n="1" of="2"></turn>',
    }


# ---------------------------------------------------------------------------------------------- render
@pytest.mark.parametrize("stage", P.STAGES)
def test_every_stage_renders_with_stage_line_all_blocks_and_answer_shape(stage):
    variables = {k: v for k, v in all_variables().items() if k in P.STAGE_VARIABLES[stage]}
    system, user = P.render(stage, variables)
    assert (system.role, user.role) == ("system", "user")
    assert user.content.split("\n", 1)[0] == f"<stage>{stage}</stage>"
    for name, value in variables.items():
        assert value in user.content, f"{stage}: block {name} missing"
    assert "{{" not in user.content.replace("{{budget}} stays literal", "")
    # the answer's shape is stated: every required key, quoted as in JSON, and the only-JSON rule
    for key in P.SCHEMAS[stage]["required"]:
        assert f'"{key}"' in system.content
    assert "ONLY a JSON object" in system.content
    if "rejected_edits" in P.STAGE_VARIABLES[stage]:
        assert "<rejected_edits>" in system.content or "`<rejected_edits>`" in system.content
    if stage in ("reflect", "merge", "meta_reflect", "rewrite", "full_rewrite"):
        assert "<!-- skillgit:NAME -->" in system.content and "front matter" in system.content


def test_shipped_templates_are_valid_and_use_their_whole_vocabulary():
    assert P.check_templates() == []
    for stage in P.STAGES:
        assert P.load_template(stage).placeholders() == sorted(P.STAGE_VARIABLES[stage])
        assert (templates_dir() / "prompts" / f"{stage}.md").is_file()


def test_values_are_inserted_verbatim_not_rescanned():
    variables = {k: v for k, v in all_variables().items() if k in P.STAGE_VARIABLES["reflect"]}
    _, user = P.render("reflect", variables)
    assert "{{budget}} stays literal" in user.content
    assert user.content.count("<budget>3</budget>") == 1


def test_override_from_prompts_dir_and_fallback(tmp_path):
    (tmp_path / "rank.md").write_text("Custom system.\n<!-- user -->\n<stage>rank</stage>\nEdits: {{ edits }}\n")
    messages = P.render("rank", {"edits": "E!", "unused": "x"}, prompts_dir=tmp_path)
    assert [m.content for m in messages] == ["Custom system.", "<stage>rank</stage>\nEdits: E!"]
    # other stages still come from the shipped templates
    assert P.template_path("pick", tmp_path) == templates_dir() / "prompts" / "pick.md"
    # an edited override is read again (cache keyed by mtime)
    path = tmp_path / "rank.md"
    path.write_text("<!-- user -->\n<stage>rank</stage>\nv2 {{edits}}\n")
    os.utime(path, ns=(1, 1_000_000_000))
    assert [m.content for m in P.render("rank", {"edits": "E"}, tmp_path)] == ["<stage>rank</stage>\nv2 E"]


def test_unknown_placeholder_names_template_and_placeholder(tmp_path):
    (tmp_path / "pick.md").write_text("S\n<!-- user -->\n<stage>pick</stage>\n{{candidates}} {{skil}}\n")
    with pytest.raises(SkillgitError) as info:
        P.render("pick", {"candidates": "c", "skil": "x"}, prompts_dir=tmp_path)
    assert "pick.md" in info.value.message and "{{skil}}" in info.value.message
    assert any("skil" in p for p in P.check_templates(tmp_path))


def test_missing_variable_is_an_error():
    with pytest.raises(SkillgitError, match="needs variable 'budget'"):
        P.render("reflect", {"skill": "s", "trajectories": "t", "rejected_edits": "r", "meta_skill": "m"})


@pytest.mark.parametrize("text, needle", [
    ("no separator\n<stage>lr</stage>\n{{stats}}", "<!-- user -->"),
    ("S\n<!-- user -->\nHello\n<stage>lr</stage>", "must start with <stage>lr</stage>"),
    ("S\n<!-- user -->\n<stage>rank</stage>\n", "must start with <stage>lr</stage>"),
])
def test_malformed_templates(tmp_path, text, needle):
    (tmp_path / "lr.md").write_text(text)
    with pytest.raises(SkillgitError) as info:
        P.render("lr", {"skill": "", "stats": "", "bounds": ""}, prompts_dir=tmp_path)
    assert needle in info.value.message


def test_unknown_stage():
    with pytest.raises(SkillgitError, match="unknown prompt stage"):
        P.render("reflekt", {})


# ---------------------------------------------------------------------------------------------- block formats
def test_trajectory_block_format():
    t = traj(expected={"b": 1, "a": [2]}, trace="called calc(2+2)")
    assert P.block_trajectories([t], "failure") == (
        '<trajectory id="t1" outcome="failure" hard="0.00" soft="0.50">\n'
        "<input>\nWhat is 2+2?\n</input>\n"
        "<output>\nfour\n</output>\n"
        '<expected>\n{"a": [2], "b": 1}\n</expected>\n'
        "<feedback>\nexpected a digit\n</feedback>\n"
        "<trace>\ncalled calc(2+2)\n</trace>\n"
        "</trajectory>")


def test_trajectory_block_truncates_defaults_and_auto_outcome():
    long = "A" * 50 + "MIDDLE" + "Z" * 50
    block = P.block_trajectories([traj(output=long, expected=None, score=None)], "auto", max_chars=30)
    attrs, inner = P.parse_blocks(block, "trajectory")[0]
    assert attrs == {"id": "t1", "outcome": "unknown"}  # no score: not a failure (types.is_failure), no hard/soft
    out = P.child(inner, "output")
    assert out.startswith("A" * 20) and out.endswith("Z" * 10) and "MIDDLE" not in out
    assert "[… 76 characters truncated …]" in out
    assert P.child(inner, "expected") == "" and P.child(inner, "trace") is None
    ok = P.parse_blocks(P.block_trajectories([traj(hard=1.0, soft=1.0)], "auto"), "trajectory")[0][0]
    assert ok["outcome"] == "success" and ok["hard"] == "1.00"


def test_rejected_block_format_and_empty():
    assert P.block_rejected([]) == "<rejected_edits>\n(none)\n</rejected_edits>"
    assert P.block_rejected(REJECTED[:1]) == (
        "<rejected_edits>\n"
        '<rejected op="append" delta="-0.050">\n'
        "<target>\n</target>\n"
        "<content>\n- Show your work.\n</content>\n"
        "<reason>\nval 0.60 → 0.55\n</reason>\n"
        "</rejected>\n"
        "</rejected_edits>")


def test_edit_block_format():
    assert P.block_edits(EDITS[:1]) == (
        '<edit id="e1" op="replace" support="2" source="failure">\n'
        "<target>\n- Be brief.\n</target>\n"
        "<content>\n- Be brief: one line.\n</content>\n"
        "<rationale>\nshort answers score\n</rationale>\n"
        "</edit>")
    assert P.block_edits([]) == "(none)"


def test_small_blocks():
    assert P.block_budget(4) == "<budget>4</budget>"
    assert P.block_bounds(1, 8) == '<bounds min="1" max="8"></bounds>'
    assert P.block_meta_skill("") == "<meta_skill>\n(none)\n</meta_skill>"
    assert P.block_skill("# S\n\n") == "<skill>\n# S\n</skill>"
    with pytest.raises(SkillgitError):
        P.block_steps("steps", [])


# ---------------------------------------------------------------------------------------------- round trips
def test_round_trip_trajectories_with_tag_like_content():
    ts = [traj(), traj("t2", input=NASTY, output=NASTY, expected=NASTY, trace=NASTY, hard=1.0, soft=1.0)]
    blocks = P.parse_blocks(P.block_trajectories(ts, "failure"), "trajectory")
    assert [a["id"] for a, _ in blocks] == ["t1", "t2"]
    attrs, inner = blocks[1]
    assert attrs == {"id": "t2", "outcome": "failure", "hard": "1.00", "soft": "1.00"}
    for tag in ("input", "output", "expected", "trace"):
        assert P.child(inner, tag) == NASTY


def test_round_trip_edits_rejected_and_skill():
    parsed = P.parse_blocks(P.block_edits(EDITS), "edit")
    assert [a for a, _ in parsed] == [{"id": "e1", "op": "replace", "support": "2", "source": "failure"},
                                      {"id": "e2", "op": "append", "support": "1", "source": "success"}]
    for edit, (_, inner) in zip(EDITS, parsed):
        assert (P.child(inner, "target"), P.child(inner, "content"), P.child(inner, "rationale")) == \
            (edit.target, edit.content, edit.rationale)
    (_, outer), = P.parse_blocks(P.block_rejected(REJECTED), "rejected_edits")
    rej = P.parse_blocks(outer, "rejected")
    assert [a for a, _ in rej] == [{"op": "append", "delta": "-0.050"}, {"op": "delete", "delta": "+0.000"}]
    assert P.child(rej[1][1], "target") == "- Be brief." and P.child(rej[0][1], "reason") == "val 0.60 → 0.55"
    assert P.parse_blocks(P.block_skill(NASTY), "skill") == [({}, NASTY)]
    assert P.parse_blocks(P.block_meta_skill(NASTY), "meta_skill") == [({}, NASTY)]


def test_the_epoch_orders_and_counts_pairs_in_the_prompt_order():
    """One vocabulary for a pair's kind: the epoch's counts (in the slow-update note) list kinds in the order the
    teacher reads them (`prompts.KIND_ORDER`); the epoch once kept its own, contradicting order."""
    from skillgit.loop import epoch
    pairs = [{"kind": k} for k in ("stable_success", "persistent_failure", "improved", "regressed", "improved")]
    assert list(epoch.counts(pairs)) == list(P.KIND_ORDER)
    assert epoch.counts(pairs) == {"regressed": 1, "improved": 2, "persistent_failure": 1, "stable_success": 1}


def test_round_trip_comparison_steps_candidates_stats():
    (_, comp), = P.parse_blocks(P.block_comparison(PAIRS), "comparison")
    pairs = P.parse_blocks(comp, "pair")
    assert [a["kind"] for a, _ in pairs] == ["regressed", "improved", "persistent_failure", "stable_success"]
    attrs, inner = pairs[0]
    assert attrs == {"id": "c", "kind": "regressed", "before_score": "1.00", "after_score": "0.00"}
    assert P.child(inner, "input") == NASTY and P.child(inner, "after_output") == NASTY
    assert json.loads(P.child(inner, "expected")) == {"n": 4}

    (_, acc), = P.parse_blocks(P.block_steps("accepted_steps", STEPS), "accepted_steps")
    steps = P.parse_blocks(acc, "step")
    assert [a for a, _ in steps] == [{"n": "3", "delta": "+0.050"}, {"n": "5", "delta": "-0.020"}]
    (eattrs, einner), = P.parse_blocks(steps[0][1], "edit")
    assert eattrs["id"] == "e2" and P.child(einner, "content") == NASTY
    assert P.child(steps[0][1], "reason") == "accepted: +0.050" and P.child(steps[1][1], "reason") is None
    assert P.parse_blocks(P.block_steps("rejected_steps", []), "rejected_steps") == [({}, "(none)")]

    cands = P.parse_blocks(P.block_candidates({"a": SKILL, 'b"<>': NASTY}), "candidate")
    assert cands == [({"id": "a"}, SKILL.rstrip("\n")), ({"id": 'b"<>'}, NASTY)]
    stats = {"step": 4, "val": 0.61, "deltas": [0.02, -0.01]}
    assert json.loads(P.parse_blocks(P.block_stats(stats), "stats")[0][1]) == stats
    assert P.parse_blocks(P.block_bounds(2, 6), "bounds") == [({"min": "2", "max": "6"}, "")]
    assert P.parse_blocks(P.block_budget(5), "budget") == [({}, "5")]


def test_parse_whole_prompt_like_a_teacher():
    variables = {k: v for k, v in all_variables().items() if k in P.STAGE_VARIABLES["reflect"]}
    _, user = P.render("reflect", variables)
    assert P.parse_blocks(user.content, "stage") == [({}, "reflect")]
    assert P.parse_blocks(user.content, "skill")[0][1] == SKILL.rstrip("\n")
    # the fake <trajectory> lines inside the skill and the outputs are not blocks
    assert [a["id"] for a, _ in P.parse_blocks(user.content, "trajectory")] == ["t1", "t2"]
    assert P.parse_blocks(user.content, "budget") == [({}, "3")]
    # nested blocks are not returned from the top level
    assert P.parse_blocks(user.content, "rejected") == []
    assert P.parse_blocks(user.content, "output") == []


def test_unclosed_and_foreign_tags_are_text():
    text = "<skill>\nnever closed\n<note>\nx\n</note>\n<budget>3</budget>"
    assert P.parse_blocks(text, "skill") == []
    assert P.parse_blocks(text, "budget") == [({}, "3")]
    assert P.parse_blocks(text, "note") == [({}, "x")]


# ---------------------------------------------------------------------------------------------- answers
@pytest.mark.parametrize("stage, answer", [
    ("reflect", {"reasoning": "r", "edits": [], "failure_summary": "f"}),
    ("merge", {"edits": [{"op": "append", "content": "x", "merged_from": ["e1"]}]}),
    ("rank", {"reasoning": "r", "ranking": ["e2", "e1"]}),
    ("lr", {"reasoning": "r", "num_edits": 3}),
    ("lr", {"num_edits": 3.0}),
    ("slow_update", {"guidance": ""}),
    ("meta_skill", {"meta_skill": "- x"}),
    ("meta_reflect", {"edits": []}),
    ("rewrite", {"skill": "# S"}),
    ("full_rewrite", {"skill": "# S"}),
    ("pick", {"choice": "b"}),
])
def test_validate_accepts_good_answers(stage, answer):
    assert P.validate(stage, answer) == []


@pytest.mark.parametrize("stage, answer, needle", [
    ("reflect", {"reasoning": "r"}, "lacks 'edits'"),
    ("reflect", {"edits": {"op": "append"}}, "'edits' should be array"),
    ("reflect", ["edits"], "not a JSON object"),
    ("rank", {"ranking": ["e1", 2]}, "items should be string"),
    ("lr", {"num_edits": "3"}, "should be integer"),
    ("lr", {"num_edits": True}, "should be integer"),
    ("lr", {"num_edits": 2.5}, "should be integer"),
    ("pick", {"choice": None}, "should be string"),
    ("slow_update", {"reasoning": 3, "guidance": "g"}, "'reasoning' should be string"),
])
def test_validate_reports_problems(stage, answer, needle):
    problems = P.validate(stage, answer)
    assert problems and needle in problems[0]


def test_schemas_cover_every_stage():
    assert set(P.SCHEMAS) == set(P.STAGES)
    for schema in P.SCHEMAS.values():
        assert schema["type"] == "object" and "reasoning" in schema["properties"]
        assert set(schema["required"]) <= set(schema["properties"])
    assert P.SCHEMAS["reflect"]["properties"]["edits"]["items"]["properties"]["op"]["enum"] == \
        ["append", "insert_after", "replace", "delete"]


def test_starter_skill_is_a_clean_document():
    text = (templates_dir() / "skills" / "starter.md").read_text()
    doc = split_document(text)
    assert doc.problems == () and text.endswith("\n") and text.startswith("# ")


def test_indented_tag_lines_are_escaped_and_unescape_all_undoes_every_level():
    block = P.block_edits([Edit("append", "  </content>\n\t<edit id=\"x\">", id="e1")])
    assert "  &amp;&lt;/content>" in block and "\t&amp;&lt;edit" in block
    (_, inner), = P.parse_blocks(block, "edit")
    assert P.child(inner, "content") == "  </content>\n\t<edit id=\"x\">"
    assert P.unescape_all("&amp;&amp;&lt;output>\n  &lt;skill>\n&lt;div>") == "<output>\n  <skill>\n&lt;div>"

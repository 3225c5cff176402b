"""skillgit.patch / skillgit.skilldoc: parsing teacher edits, applying them, protected parts, diffs."""

from __future__ import annotations

import pytest

from skillgit import patch as P
from skillgit.errors import SkillgitError
from skillgit.patch import (
    apply_edits,
    check_invariants,
    diff_stats,
    parse_edits,
    restore_protected,
    unified_diff,
)
from skillgit.regions import get_region, set_region
from skillgit.skilldoc import split_document
from skillgit.types import Edit

# Front matter with odd spacing so that any re-serialisation would show.
FM = "---\nname: units  \ndescription: 'Solve unit problems: carefully'\n---\n"
REGION = "<!-- skillgit:slow-update -->\n- Keep answers short.\n<!-- /skillgit:slow-update -->\n"
DOC = (FM + "\n# Units\n\n## Rules\n- Be brief.\n- Check units.\n\n## Format\nAnswer with a number.\n\n"
       + REGION)


def apply1(text: str, edit: Edit, **kw):
    new, results = apply_edits(text, [edit], **kw)
    assert len(results) == 1 and results[0].edit is edit
    return new, results[0]


# ---------------------------------------------------------------------------------------------- parse_edits
def test_parse_edits_normalises_aliases_strips_and_numbers():
    obj = {"edits": [
        {"op": "add", "content": "\n\n  - Nested rule.  \n\n", "target": "ignored"},
        {"op": "Insert-After", "target": "  - Be brief.\n", "content": "- New."},
        {"op": "update", "target": "Check units.", "content": "Check units twice.", "rationale": " why "},
        {"op": "remove", "target": "- Be brief.", "content": "dropped"},
        {"op": "insert", "target": "x", "content": ["- a", "- b"]},
    ]}
    edits, problems = parse_edits(obj, source_type="success")
    assert problems == []
    assert [e.op for e in edits] == ["append", "insert_after", "replace", "delete", "insert_after"]
    assert [e.id for e in edits] == ["e1", "e2", "e3", "e4", "e5"]
    assert edits[0].content == "  - Nested rule." and edits[0].target == ""
    assert edits[1].target == "- Be brief."
    assert edits[2].rationale == "why"
    assert edits[3].content == ""
    assert edits[4].content == "- a\n- b"
    assert {e.source_type for e in edits} == {"success"}


def test_parse_edits_records_and_skips_junk():
    obj = {"edits": [
        {"op": "rewrite_all", "content": "everything"},
        {"op": "append", "content": "   "},
        {"op": "replace", "target": "", "content": "x"},
        {"op": "insert_after", "content": "x"},
        {"op": "delete"},
        "append: be nice",
        None,
        {"op": "append", "content": {"nested": 1}},
        {"op": "append", "content": "Kept."},
    ]}
    edits, problems = parse_edits(obj)
    assert [(e.op, e.content, e.id) for e in edits] == [("append", "Kept.", "e1")]
    assert len(problems) == 8
    assert "edit 1" in problems[0] and "rewrite_all" in problems[0]
    assert "without content" in problems[1]
    assert "without target" in problems[2] and "without target" in problems[3] and "without target" in problems[4]
    assert "not an object" in problems[5] and "not an object" in problems[6]
    assert "edit 8" in problems[7]


@pytest.mark.parametrize("obj, needle", [
    ([{"op": "append", "content": "x"}], "not a JSON object"),
    ({"edits": "append x"}, "not a list"),
    ({"reasoning": "no edits"}, "no 'edits'"),
    ("garbage", "not a JSON object"),
])
def test_parse_edits_bad_shapes(obj, needle):
    edits, problems = parse_edits(obj)
    assert edits == [] and len(problems) == 1 and needle in problems[0]


def test_parse_edits_empty_list_is_fine():
    assert parse_edits({"edits": []}) == ([], [])


# ---------------------------------------------------------------------------------------------- structure
def test_split_document_front_matter_and_regions():
    doc = split_document(DOC)
    assert doc.front_matter == FM
    assert [r.name for r in doc.regions] == ["slow-update"]
    assert doc.inner(doc.regions[0]) == "\n- Keep answers short.\n"
    assert doc.editable_end() == DOC.index("<!-- skillgit:slow-update")
    assert doc.problems == ()


def test_split_document_unclosed_region_protects_rest_and_stray_marker():
    text = "# A\n<!-- /skillgit:x -->\nbody\n<!-- skillgit:open -->\ntail text\n"
    doc = split_document(text)
    assert len(doc.problems) == 2
    assert doc.regions[0].name == "open" and doc.regions[0].end == len(text) and not doc.regions[0].closed
    new, result = apply1(text, Edit("replace", "changed", target="tail text"))
    assert result.status == "skipped_protected_region" and new == text
    new, result = apply1(text, Edit("delete", target="<!-- /skillgit:x -->"))
    assert result.status == "skipped_protected_region"


def test_horizontal_rule_not_at_top_is_not_front_matter():
    assert split_document("# T\n---\nx\n---\n").front_matter == ""
    assert split_document("---\n---\nbody\n").front_matter == "---\n---\n"


# ---------------------------------------------------------------------------------------------- apply: ops
def test_append_goes_before_trailing_region_with_one_blank_line():
    new, r = apply1(DOC, Edit("append", "- Always state the unit."))
    assert r.status == "applied" and r.reason == ""
    assert new == DOC.replace("number.\n\n<!--", "number.\n\n- Always state the unit.\n\n<!--")


def test_append_before_several_trailing_regions_and_keeps_them_exact():
    text = ("# T\nbody\n\n\n<!-- skillgit:a -->\nA\n<!-- /skillgit:a -->\n\n"
            "<!-- skillgit:b -->\nB\n<!-- /skillgit:b -->\n")
    new, r = apply1(text, Edit("append", "New."))
    assert new == ("# T\nbody\n\nNew.\n\n<!-- skillgit:a -->\nA\n<!-- /skillgit:a -->\n\n"
                   "<!-- skillgit:b -->\nB\n<!-- /skillgit:b -->\n")


def test_append_without_region_or_final_newline():
    new, r = apply1("# T\n\nbody", Edit("append", "New rule."))
    assert new == "# T\n\nbody\n\nNew rule.\n"
    new, r = apply1("# T\n\n\n\n", Edit("append", "New rule."))
    assert new == "# T\n\nNew rule.\n"


def test_append_to_front_matter_only_and_empty_document():
    new, r = apply1(FM, Edit("append", "First rule."))
    assert r.status == "applied" and new == FM + "First rule.\n"
    assert apply1("", Edit("append", "First rule."))[0] == "First rule.\n"


def test_insert_after_goes_after_the_line_containing_the_target_end():
    new, r = apply1(DOC, Edit("insert_after", "- Show the unit.", target="Be brief"))
    assert r.status == "applied"
    assert "- Be brief.\n- Show the unit.\n- Check units.\n" in new
    # multi-line target: after the line of its end
    new, r = apply1(DOC, Edit("insert_after", "- Mid.", target="- Be brief.\n- Check"))
    assert "- Be brief.\n- Check units.\n- Mid.\n\n## Format" in new


def test_insert_after_last_line_without_newline():
    new, r = apply1("# T\nlast line", Edit("insert_after", "- Added.", target="last line"))
    assert r.status == "applied" and new == "# T\nlast line\n- Added.\n"


def test_replace_exact():
    new, r = apply1(DOC, Edit("replace", "- Be brief: one sentence.", target="- Be brief."))
    assert r.status == "applied"
    assert new == DOC.replace("- Be brief.", "- Be brief: one sentence.")


def test_fuzzy_whitespace_match_maps_back_to_exact_span():
    text = FM + "# T\n\n- Convert   all quantities\n  to SI units first.\n- Next rule.\n"
    edit = Edit("replace", "- Convert quantities to the asked unit.",
                target="- Convert all quantities to SI units first.")
    new, r = apply1(text, edit)
    assert r.status == "applied_fuzzy" and "whitespace" in r.reason
    assert new == FM + "# T\n\n- Convert quantities to the asked unit.\n- Next rule.\n"


def test_fuzzy_insert_after_and_delete():
    text = "# T\n- a  b\n  c\n- d\n"
    new, r = apply1(text, Edit("insert_after", "- x", target="a b c"))
    assert r.status == "applied_fuzzy" and new == "# T\n- a  b\n  c\n- x\n- d\n"
    new, r = apply1(text, Edit("delete", target="- a b\nc"))
    assert r.status == "applied_fuzzy" and new == "# T\n- d\n"


def test_delete_whole_line_and_collapse_blank_lines():
    new, r = apply1(DOC, Edit("delete", target="- Be brief."))
    assert r.status == "applied" and "## Rules\n- Check units.\n\n## Format" in new
    # a paragraph between blank lines leaves exactly one blank line
    text = "# T\n\nPara one.\n\nPara two.\n\nPara three.\n"
    new, r = apply1(text, Edit("delete", target="Para two."))
    assert new == "# T\n\nPara one.\n\nPara three.\n"
    # a whole section
    new, r = apply1(DOC, Edit("delete", target="## Format\nAnswer with a number."))
    assert new == FM + "\n# Units\n\n## Rules\n- Be brief.\n- Check units.\n\n" + REGION


def test_delete_part_of_a_line_and_at_the_ends():
    new, r = apply1("# T\nBe brief and exact.\n", Edit("delete", target=" and exact"))
    assert new == "# T\nBe brief.\n"
    new, r = apply1("# T\nBe brief and exact, always.\n", Edit("delete", target="and exact"))
    assert new == "# T\nBe brief, always.\n"
    new, r = apply1("# T\nBe very brief.\n", Edit("delete", target="very"))
    assert new == "# T\nBe brief.\n"
    new, r = apply1("# T\n\nLast.\n", Edit("delete", target="Last."))
    assert new == "# T\n"
    new, r = apply1("First.\n\n# T\n", Edit("delete", target="First."))
    assert new == "# T\n"
    new, r = apply1(FM + "\nOnly.\n", Edit("delete", target="Only."))
    assert new == FM


def test_edits_apply_in_order_each_to_the_previous_result():
    edits = [Edit("append", "- Prefer SI units."), Edit("replace", "- Prefer SI units always.",
                                                              target="- Prefer SI units.")]
    new, results = apply_edits(DOC, edits)
    assert [r.status for r in results] == ["applied", "applied"]
    assert "- Prefer SI units always.\n\n<!-- skillgit:slow-update -->" in new


# ---------------------------------------------------------------------------------------------- apply: skips
def test_target_not_found_is_skipped_never_appended():
    new, r = apply1(DOC, Edit("replace", "x", target="Never said this."))
    assert r.status == "skipped_target_not_found" and new == DOC
    new, r = apply1(DOC, Edit("insert_after", "- New.", target="Never said this."))
    assert r.status == "skipped_target_not_found" and new == DOC


@pytest.mark.parametrize("edit", [
    Edit("replace", "name: other", target="name: units"),
    Edit("delete", target="description: 'Solve unit problems: carefully'"),
    Edit("insert_after", "x: 1", target="name: units"),
])
def test_target_in_front_matter_is_protected(edit):
    new, r = apply1(DOC, edit)
    assert r.status == "skipped_protected_region" and "front matter" in r.reason and new == DOC


@pytest.mark.parametrize("edit", [
    Edit("replace", "- Be verbose.", target="- Keep answers short."),
    Edit("delete", target="- Keep answers short."),
    Edit("insert_after", "- x", target="Keep answers short"),
    Edit("replace", "x", target="number.\n\n<!-- skillgit:slow-update -->"),  # straddles the boundary
])
def test_target_in_slow_update_region_is_protected(edit):
    new, r = apply1(DOC, edit)
    assert r.status == "skipped_protected_region" and "slow-update" in r.reason and new == DOC


def test_target_outside_and_inside_a_region_uses_the_outside_one_without_ambiguity():
    text = "# T\n- Keep answers short.\n\n" + REGION
    new, r = apply1(text, Edit("replace", "- Keep answers very short.", target="- Keep answers short."))
    assert r.status == "applied" and r.reason == ""
    assert new == "# T\n- Keep answers very short.\n\n" + REGION


def test_insertion_point_inside_a_region_is_protected():
    text = "# T\nIntro <!-- skillgit:note -->\ninner\n<!-- /skillgit:note -->\n"
    new, r = apply1(text, Edit("insert_after", "- x", target="Intro"))
    assert r.status == "skipped_protected_region" and "note" in r.reason and new == text


def test_content_with_markers_or_new_front_matter_is_refused():
    new, r = apply1(DOC, Edit("append", "<!-- /skillgit:slow-update -->\nsneaky"))
    assert r.status == "skipped_protected_region"
    text = "# T\n\nbody\n"
    new, r = apply1(text, Edit("replace", "---\nname: x\n---\n# T", target="# T"))
    assert r.status == "skipped_protected_region" and "front matter was added" in r.reason and new == text


def test_allow_front_matter_edits():
    new, r = apply1(DOC, Edit("replace", "name: metric-units", target="name: units  "), allow_front_matter=True)
    assert r.status == "applied" and new.startswith("---\nname: metric-units  \n")  # targets are stripped
    assert new.endswith(REGION)


def test_duplicates_are_skipped():
    new, r = apply1(DOC, Edit("append", "-   Check\n units."))
    assert r.status == "skipped_duplicate" and new == DOC
    new, r = apply1(DOC, Edit("insert_after", "- Check units.", target="- Be brief."))
    assert r.status == "skipped_duplicate"
    new, r = apply1(DOC, Edit("replace", "- Be  brief.", target="- Be brief."))
    assert r.status == "skipped_duplicate"


@pytest.mark.parametrize("edit, needle", [
    (Edit("replace", "", target="- Be brief."), "needs content"),
    (Edit("append", "  \n "), "needs content"),
    (Edit("delete"), "needs a target"),
    (Edit("insert_after", "x"), "needs a target"),
    (Edit("rewrite_all", "x"), "unknown op"),
])
def test_invalid_edits(edit, needle):
    new, r = apply1(DOC, edit)
    assert r.status == "skipped_invalid" and needle in r.reason and new == DOC


def test_alias_ops_are_understood_by_apply():
    new, r = apply1(DOC, Edit("add", "- Aliased."))
    assert r.status == "applied" and "- Aliased." in new


def test_an_edit_that_raises_is_recorded_and_the_others_continue():
    edits = [Edit("append", None), Edit("append", "- Still applied.")]  # type: ignore[arg-type]
    new, results = apply_edits(DOC, edits)
    assert results[0].status == "error" and "AttributeError" in results[0].reason
    assert results[1].status == "applied" and "- Still applied." in new


def test_ambiguous_target_applies_to_first_and_says_so():
    text = "# T\n## A\n- Be brief.\n## B\n- Be brief.\n"
    new, r = apply1(text, Edit("replace", "- Be very brief.", target="- Be brief."))
    assert r.status == "applied" and "2 times" in r.reason and "first" in r.reason
    assert new == "# T\n## A\n- Be very brief.\n## B\n- Be brief.\n"


def test_front_matter_and_regions_are_byte_for_byte_preserved_by_every_op():
    fm = "---\r\nname: x   \r\nlist: [a,  b]\r\n---\n"  # mixed endings: must survive untouched
    text = fm + "# T\n- one\n- two\n<!-- skillgit:mid -->\n  keep  \n<!-- /skillgit:mid -->\n- three\n" + REGION
    edits = [Edit("append", "- four"), Edit("insert_after", "- one-b", target="- one"),
             Edit("replace", "- TWO", target="- two"), Edit("delete", target="- three"),
             Edit("replace", "x", target="keep"), Edit("delete", target="name: x")]
    new, results = apply_edits(text, edits)
    assert [r.status for r in results][:4] == ["applied"] * 4
    assert [r.status for r in results][4:] == ["skipped_protected_region"] * 2
    assert new.startswith(fm)
    assert "<!-- skillgit:mid -->\n  keep  \n<!-- /skillgit:mid -->\n" in new
    assert new.endswith(REGION)
    assert check_invariants(text, new) == []
    assert apply_edits(text, edits)[0] == new  # deterministic


def test_crlf_document_stays_crlf():
    text = "# T\r\n- one\r\n"
    new, _ = apply_edits(text, [Edit("append", "- two\n- three"), Edit("insert_after", "- half", target="- one")])
    assert new == "# T\r\n- one\r\n- half\r\n\r\n- two\r\n- three\r\n"


# ---------------------------------------------------------------------------------------------- invariants
def test_check_invariants_catches_dropped_changed_and_added_parts():
    assert check_invariants(DOC, DOC.replace("Be brief", "Be short")) == []
    dropped = DOC.replace(REGION, "")
    assert check_invariants(DOC, dropped) == ["protected region 'slow-update' is missing"]
    changed = DOC.replace("Keep answers short", "Keep answers long")
    assert check_invariants(DOC, changed) == ["protected region 'slow-update' was changed"]
    no_fm = DOC[len(FM):]
    assert check_invariants(DOC, no_fm) == ["front matter was removed"]
    assert check_invariants(DOC, DOC.replace("name: units  ", "name: units")) == ["front matter was changed"]
    assert check_invariants(DOC, DOC.replace("name: units  ", "name: u"), allow_front_matter=True) == []
    added = DOC + "<!-- skillgit:new -->\nx\n<!-- /skillgit:new -->\n"
    assert check_invariants(DOC, added) == ["protected region 'new' was added"]


def test_restore_protected_puts_back_omitted_parts():
    rewrite = "# Units\n\n- Be brief and check units.\n"
    restored = restore_protected(DOC, rewrite)
    assert restored == FM + "\n# Units\n\n- Be brief and check units.\n\n" + REGION
    assert check_invariants(DOC, restored) == []
    assert restore_protected(DOC, DOC) == DOC


def test_restore_protected_refuses_changes():
    assert restore_protected(DOC, DOC.replace("Keep answers short", "Be long")) is None
    assert restore_protected(DOC, DOC.replace("name: units  ", "name: other")) is None
    assert restore_protected(DOC, DOC + "<!-- skillgit:x -->\n<!-- /skillgit:x -->\n") is None


# ---------------------------------------------------------------------------------------------- regions
def test_set_region_creates_at_end_and_replaces():
    text = FM + "# T\n\nbody\n\n\n"
    created = set_region(text, "slow-update", "\n- Verify units.\n")
    assert created == (FM + "# T\n\nbody\n\n<!-- skillgit:slow-update -->\n- Verify units.\n"
                       "<!-- /skillgit:slow-update -->\n")
    assert get_region(created, "slow-update") == "- Verify units."
    replaced = set_region(created, "slow-update", "- A.\n- B.")
    assert replaced == created.replace("- Verify units.", "- A.\n- B.")
    emptied = set_region(replaced, "slow-update", "")
    assert get_region(emptied, "slow-update") == ""
    assert emptied.endswith("<!-- skillgit:slow-update -->\n<!-- /skillgit:slow-update -->\n")
    assert get_region(text, "slow-update") is None
    assert set_region(FM, "n", "x") == FM + "<!-- skillgit:n -->\nx\n<!-- /skillgit:n -->\n"


def test_set_region_only_touches_its_region_and_strips_markers():
    text = "# T\n" + REGION + "\n<!-- skillgit:other -->\nO\n<!-- /skillgit:other -->\n"
    new = set_region(text, "slow-update", "<!-- /skillgit:slow-update -->- Sneaky.")
    assert get_region(new, "slow-update") == "- Sneaky."
    assert get_region(new, "other") == "O"
    assert check_invariants(text, new) == ["protected region 'slow-update' was changed"]


def test_set_region_errors():
    with pytest.raises(SkillgitError, match="not closing|no closing"):
        set_region("# T\n<!-- skillgit:open -->\nrest\n", "open", "x")
    with pytest.raises(SkillgitError, match="invalid"):
        set_region("# T\n", "bad name", "x")


# ---------------------------------------------------------------------------------------------- diffs
def test_unified_diff_and_stats():
    before = "# T\n- a\n- b\n- c\n"
    after = "# T\n- a\n- B\n- c\n- d\n"
    diff = unified_diff(before, after, path="skills/x/SKILL.md")
    assert diff.startswith("--- a/skills/x/SKILL.md\n+++ b/skills/x/SKILL.md\n@@")
    assert "-- b\n+- B\n" in diff
    assert diff_stats(diff) == (2, 1)
    assert unified_diff(before, before) == "" and diff_stats("") == (0, 0)


def test_unified_diff_without_final_newline_and_odd_characters_parses():
    before = "# T\nform\x0cfeed\nline\u2028sep\nend"
    after = "# T\nform\x0cfeed\nline\u2028sep\nend changed\nmore"
    diff = unified_diff(before, after)
    assert "\\ No newline at end of file" in diff
    assert diff_stats(diff) == (2, 1)


def test_diff_of_applied_edits_matches_report():
    new, _ = apply_edits(DOC, [Edit("append", "- x\n- y"), Edit("delete", target="- Be brief.")])
    assert diff_stats(unified_diff(DOC, new)) == (3, 1)  # two lines plus a blank separator; one removed


def test_target_copied_from_an_escaped_prompt_line_still_matches():
    # prompts.py shows a skill line "<output>" as "&lt;output>"; a teacher may quote it that way.
    text = "# T\nWrap the answer:\n<output>\n42\n</output>\n"
    new, r = apply1(text, Edit("replace", "&lt;input>", target="&lt;output>"))
    assert r.status == "applied_fuzzy" and "escaping" in r.reason
    assert new == "# T\nWrap the answer:\n<input>\n42\n</output>\n"
    new, r = apply1(text, Edit("replace", "&lt;answer>", target="42"))  # not a protocol tag: never escaped
    assert "\n&lt;answer>\n" in new
    new, r = apply1(text, Edit("insert_after", "&amp;&lt;/content>", target="Wrap the answer:"))
    assert "Wrap the answer:\n</content>\n<output>" in new  # content unescaped at any level


# ---------------------------------------------------------------------------------------------- packages
def _pkg() -> str:
    from skillgit import package

    return package.bundle({"SKILL.md": "---\nname: dates\ndescription: d\n---\n# Dates\nUse ISO dates.\n",
                           "references/formats.md": "# Formats\nYYYY-MM-DD\n"})


def test_the_slow_update_region_of_a_package_lives_in_its_main_file():
    from skillgit import package

    updated = set_region(_pkg(), "slow-update", "Prefer ISO 8601.")
    files = dict(package.parse(updated).files)
    assert "Prefer ISO 8601." in files["SKILL.md"] and files["references/formats.md"] == "# Formats\nYYYY-MM-DD\n"
    assert get_region(updated, "slow-update") == "Prefer ISO 8601."
    again = set_region(updated, "slow-update", "Prefer ISO 8601, always.")
    assert get_region(again, "slow-update") == "Prefer ISO 8601, always." and len(package.parse(again).files) == 2


def test_a_package_rewrite_keeps_each_files_front_matter_and_regions():
    from skillgit import package

    before = set_region(_pkg(), "slow-update", "Keep me.")
    files = dict(package.parse(before).files)
    renamed = package.bundle({**files, "SKILL.md": files["SKILL.md"].replace("name: dates", "name: other")})
    assert P.check_invariants(before, renamed) == ["SKILL.md: front matter was changed"]
    assert P.restore_protected(before, renamed) is None  # a change, not an omission
    # a rewrite that left out the region and a reference file gets both back
    dropped = package.bundle({"SKILL.md": files["SKILL.md"].split("<!--")[0].rstrip() + "\nMore.\n"})
    assert "SKILL.md: protected region 'slow-update' is missing" in P.check_invariants(before, dropped)
    repaired = P.restore_protected(before, dropped)
    assert repaired is not None and P.check_invariants(before, repaired) == []
    fixed = dict(package.parse(repaired).files)
    assert fixed["references/formats.md"] == files["references/formats.md"] and "More." in fixed["SKILL.md"]
    assert get_region(repaired, "slow-update") == "Keep me."


# ---------------------------------------------------------------------------------------------- the prompt's frame
# What a 1.5B teacher (Qwen2.5-Coder-1.5B-Instruct on llama.cpp) wrote as targets: the prompt's `<skill>` frame and
# the heading turned into a tag, around the skill's real text.
WRAPPED_SKILL = "---\nname: s\ndescription: d\n---\n# Skill\n\nBe helpful.\n"


def test_a_target_wrapped_in_the_prompts_frame_matches_what_is_inside_and_says_so():
    new, r = apply1(WRAPPED_SKILL, Edit("replace", "Be helpful and answer with the list only.",
                                        target="<skill><# Skill>Be helpful.</#Skill>"))
    assert r.status == "applied_fuzzy"
    assert "stripping the prompt's wrapper (<skill>, <# Skill>, </#Skill>)" in r.reason
    assert new == "---\nname: s\ndescription: d\n---\nBe helpful and answer with the list only.\n"
    new, r = apply1(WRAPPED_SKILL, Edit("insert_after", "Answer with the list only.", target="<skill>\nBe helpful."))
    assert r.status == "applied_fuzzy" and "<skill>" in r.reason and new.endswith("Be helpful.\nAnswer with the "
                                                                                   "list only.\n")


def test_the_file_frame_and_a_fence_around_a_target_are_stripped():
    frame = '<file path="SKILL.md">\n# Skill\n\nBe helpful.\n</file>'
    new, r = apply1(WRAPPED_SKILL, Edit("replace", "# Skill\n\nBe precise.", target=frame))
    assert r.status == "applied_fuzzy" and '<file path="SKILL.md">' in r.reason and "</file>" in r.reason
    assert new.endswith("# Skill\n\nBe precise.\n")
    new, r = apply1(WRAPPED_SKILL, Edit("delete", target="```markdown\nBe helpful.\n```"))
    assert r.status == "applied_fuzzy" and "```markdown fence" in r.reason and "Be helpful" not in new


def test_a_content_framed_like_the_skill_loses_the_frame_and_the_reason_says_so():
    new, r = apply1(WRAPPED_SKILL, Edit("replace", "<skill><# Skill>Be helpful. Sort largest first.</#Skill>",
                                        target="<skill><# Skill>Be helpful.</#Skill>"))
    assert r.applied and "from the content (<skill>, <# Skill>, </#Skill>)" in r.reason
    assert "<skill>" not in new and "</#Skill>" not in new and "# Skill\nBe helpful. Sort largest first." in new
    new, r = apply1(WRAPPED_SKILL, Edit("append", "```md\n- Check the order twice.\n```"))
    assert r.status == "applied" and "```md fence" in r.reason and new.endswith("Be helpful.\n\n- Check the order "
                                                                                 "twice.\n")


def test_real_tags_in_a_skill_are_matched_as_they_are_and_kept_in_content():
    skill = "# T\n\nWrap the answer in <output> tags.\n"
    new, r = apply1(skill, Edit("replace", "Wrap the final answer in <output></output> tags.",
                                target="Wrap the answer in <output> tags."))
    assert (r.status, r.reason) == ("applied", "") and "<output></output>" in new  # exact: nothing stripped
    new, r = apply1(skill, Edit("append", "Put code in ```python fences``` and keep <skill> literal."))
    assert r.status == "applied" and "<skill> literal" in new  # not a frame: the content is written as given


def test_a_wrapped_target_that_is_still_not_in_the_skill_is_not_found():
    new, r = apply1(WRAPPED_SKILL, Edit("replace", "x", target="<skill><# Skill>Be kind.</#Skill>"))
    assert r.status == "skipped_target_not_found" and "wrapper" in r.reason and new == WRAPPED_SKILL


def test_strip_wrapper_lists_what_it_removed_in_order():
    assert P.strip_wrapper("<skill><# Skill>Be helpful.</#Skill>") == ("# Skill\nBe helpful.",
                                                                        ["<skill>", "<# Skill>", "</#Skill>"])
    assert P.strip_wrapper("Be helpful.") == ("Be helpful.", [])
    assert P.strip_wrapper("<output>x</output>", frame_only=True) == ("<output>x</output>", [])


def test_an_edit_naming_a_file_the_package_lacks_is_recorded_as_such():
    from skillgit import package

    edits = [Edit("replace", "ISO 8601 dates.", target="ISO dates.", file="references/missing.md"),
             Edit("append", "- Week numbers.", file="references/weeks.md"),  # may be created (skill.new_files)
             Edit("append", "x = 1", file="src/x.py")]
    new, results = P.apply_to_skill(_pkg(), edits)
    assert [r.status for r in results] == ["skipped_file_not_found", "applied", "skipped_file_not_found"]
    assert "no file references/missing.md" in results[0].reason
    assert "SKILL.md, references/formats.md" in results[0].reason  # the files it does have
    assert package.parse(new).get("references/weeks.md") == "- Week numbers.\n"


def test_a_target_in_its_file_frame_goes_to_that_file():
    from skillgit import package

    framed = '<file path="references/formats.md">\nYYYY-MM-DD\n</file>'
    new, (r,) = P.apply_to_skill(_pkg(), [Edit("replace", "YYYY-MM-DD (ISO 8601)", target=framed)])
    assert r.status == "applied_fuzzy" and "routed to references/formats.md" in r.reason
    assert package.parse(new).get("references/formats.md") == "# Formats\nYYYY-MM-DD (ISO 8601)\n"
    edits, problems = P.parse_edits({"edits": [{"op": "append", "content": "- More.",
                                                "file": '<file path="references/formats.md">'}]})
    assert [e.file for e in edits] == ["references/formats.md"] and not problems


def test_a_single_file_skill_applies_an_edit_naming_another_file_and_says_so():
    new, (r,) = P.apply_to_skill(WRAPPED_SKILL, [Edit("append", "- Be brief.", file="references/style.md")])
    assert r.applied and "names references/style.md, which a single-file skill lacks" in r.reason
    assert r.edit.file == "references/style.md" and new.endswith("- Be brief.\n")


def test_a_content_that_is_one_code_block_keeps_its_fence():
    new, r = apply1(WRAPPED_SKILL, Edit("append", "```\n$ sort -rn numbers.txt\n```"))
    assert (r.status, r.reason) == ("applied", "") and new.endswith("```\n$ sort -rn numbers.txt\n```\n")


def test_insert_after_the_frame_alone_goes_to_the_top_or_the_end_of_the_body():
    # the 1.5B teacher's reflect reply on first-letters: {"op": "insert_after", "target": "<skill>", ...}
    new, r = apply1(WRAPPED_SKILL, Edit("insert_after", "Read every word of the sentence.", target="<skill>"))
    assert r.status == "applied_fuzzy" and "only the prompt's wrapper (<skill>)" in r.reason and "top" in r.reason
    assert new == "---\nname: s\ndescription: d\n---\nRead every word of the sentence.\n\n# Skill\n\nBe helpful.\n"
    new, r = apply1(WRAPPED_SKILL, Edit("insert_after", "Answer in lowercase.", target="</skill>"))
    assert r.status == "applied_fuzzy" and "appended" in r.reason and new.endswith("Be helpful.\n\nAnswer in "
                                                                                   "lowercase.\n")
    new, r = apply1(WRAPPED_SKILL, Edit("replace", "Everything new.", target="<skill>"))
    assert r.status == "skipped_target_not_found" and new == WRAPPED_SKILL  # never a whole-skill replace

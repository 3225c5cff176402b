"""The agent teacher's package diff becomes edits per file that reproduce what the agent wrote
(skillgit/teacher/diff.py)."""

from __future__ import annotations

from skillgit import package, patch
from skillgit.teacher.diff import package_edits

SKILL = """---
name: demo
description: A demo skill.
---
# Making changes

Keep the code readable.
Give new functions docstrings.

## Tests
- Run the tests.
"""


def _apply(before: str, after: str) -> tuple[str, list]:
    edits, refused = package_edits(before, after)
    text, results = patch.apply_to_skill(before, edits, new_files=("references/**",))
    return text, [edits, refused, results]


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.split("\n") if line.strip()]


def test_hunks_become_anchored_edits_that_reproduce_the_file() -> None:
    after = SKILL.replace("Give new functions docstrings.\n",
                          "Give new functions docstrings.\nExport them in __all__.\n")
    after = after.replace("Keep the code readable.", "Keep the code short and readable.")
    after = after.replace("- Run the tests.\n", "- Run the tests.\n- Never skip a test.\n")
    edits, refused = package_edits(SKILL, after)
    assert not refused
    assert [e.op for e in edits] == ["replace", "insert_after", "insert_after"]
    assert edits[1].target == "Give new functions docstrings." and edits[1].content == "Export them in __all__."
    text, (_, _, results) = _apply(SKILL, after)
    assert all(r.applied for r in results)
    assert _lines(text) == _lines(after)


def test_a_line_that_is_not_unique_takes_context() -> None:
    before = "# A\n- item\nx\n# B\n- item\ny\n"
    after = "# A\n- item\nx\n# B\n- item changed\ny\n"
    edits, _ = package_edits(before, after)
    assert len(edits) == 1 and edits[0].op == "replace"
    assert before.count(edits[0].target) == 1  # anchored where it is unique
    text, (_, _, results) = _apply(before, after)
    assert all(r.applied for r in results) and text == after


def test_new_and_removed_files_in_a_package() -> None:
    before = package.bundle({"SKILL.md": SKILL, "references/old.md": "# Old\n\nold notes\n"})
    after = package.bundle({"SKILL.md": SKILL + "See references/errors.md.\n",
                            "references/errors.md": "# Errors\n\nRaise ValueError.\n"})
    edits, refused = package_edits(before, after)
    assert [r.file for r in refused] == ["references/old.md"]  # edits never delete files: said, not dropped silently
    assert {e.file for e in edits} == {"", "references/errors.md"}
    created = next(e for e in edits if e.file == "references/errors.md")
    assert created.op == "append" and "Raise ValueError." in created.content
    text, (_, _, results) = _apply(before, after)
    assert all(r.applied for r in results)
    got = package.parse(text)
    assert got.get("references/errors.md") == "# Errors\n\nRaise ValueError.\n"
    assert "See references/errors.md." in (got.get("SKILL.md") or "")


def test_a_front_matter_change_is_an_edit_the_guards_refuse() -> None:
    after = SKILL.replace("description: A demo skill.", "description: Something else.")
    edits, _ = package_edits(SKILL, after)
    _, results = patch.apply_to_skill(SKILL, edits)
    assert edits and not any(r.applied for r in results)  # the front matter stays protected


def test_the_same_packages_give_the_same_edits() -> None:
    after = SKILL + "\nOne more line.\n"
    assert package_edits(SKILL, after) == package_edits(SKILL, after)
    assert package_edits(SKILL, SKILL) == ([], [])

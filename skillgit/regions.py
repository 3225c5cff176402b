"""Protected regions of a skill by name: read one (`get_region`) and write one (`set_region`, which the epoch's slow
update uses for its guidance). A region's markers and rules are `skilldoc`'s; in a package the region lives in the
main file (SKILL.md), which is what an agent loads.
"""

from __future__ import annotations

from skillgit import package
from skillgit.errors import SkillgitError
from skillgit.skilldoc import (
    MARKER_RE,
    check_region_name,
    close_marker,
    open_marker,
    split_document,
    strip_trailing_blank_lines,
)


def get_region(text: str, name: str) -> str | None:
    """The content of protected region `name` (one newline after the opening and before the closing marker
    removed), or None if the document has no such region. Inverse of `set_region`. In a package: of its main
    file (SKILL.md), which is what an agent loads."""
    if package.is_bundle(text):
        text = package.parse(text).files[0][1]
    region = split_document(text).region(name)
    if region is None:
        return None
    inner = text[region.inner_start:region.inner_end]
    inner = inner[1:] if inner.startswith("\n") else inner
    return inner[:-1] if inner.endswith("\n") else inner


def set_region(text: str, name: str, content: str) -> str:
    """Write `content` into protected region `name`, creating the region at the end of the document if missing.

    The content is stored between the markers on lines of its own; skillgit markers inside it are removed (a
    teacher's guidance must not open or close regions). Raises SkillgitError for an invalid name, or if the
    region exists but is not closed (replacing it would swallow the rest of the document). In a package the region
    lives in the main file (SKILL.md): a region after the last file block would be no file's text at all."""
    if package.is_bundle(text):
        pkg = package.parse(text)
        main_path, main_text = pkg.files[0]
        return pkg.with_file(main_path, set_region(main_text, name, content)).bundle()
    check_region_name(name)
    content = MARKER_RE.sub("", content.replace("\r\n", "\n")).strip("\n")
    inner = f"\n{content}\n" if content else "\n"
    doc = split_document(text)
    region = doc.region(name)
    if region is not None and not region.closed:
        raise SkillgitError(f"protected region '{name}' has no closing marker",
                            f"add '{close_marker(name)}' where the region should end")
    if region is not None:
        return text[:region.inner_start] + inner + text[region.inner_end:]
    head, body = text[:doc.body_start], strip_trailing_blank_lines(text[doc.body_start:])
    body = body + "\n\n" if body.strip() else ""
    return head + body + open_marker(name) + inner + close_marker(name) + "\n"

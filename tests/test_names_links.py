"""Names and links (issue 19, item 10): branch names are checked by git's rules and ours, and links, images,
autolinks and raw HTML that come from model or transcript text are inert in every Markdown skillgit writes: PR
bodies (`skillgit pr`), night reports (`skillgit sleep`) and `skillgit check` output."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from skillgit.records import Coverage
from skillgit.review.check import CheckResult, Side, render_markdown
from skillgit.sleep.report import render
from skillgit.sleep.state import NightRecord
from skillgit.store import Store
from skillgit.textsafe import code_span, inert_markdown
from tests.conftest import git, run_cli_inproc
from tests.test_pr import demo_project
from tests.test_review_report import SEED, _decide, build_history

HOSTILE = ("![pixel](https://tracker.example/p.png?u=1) [click me](https://evil.example/login) "
           "<img src=https://tracker.example/i.gif> <a href=\"https://evil.example\">x</a> <https://auto.example> "
           "www.evil.example https://bare.example/x [ref][1] [1]: https://evil.example/ref @octocat "
           "<!-- hidden --> \\[escaped\\](https://e.example)")
OURS = re.compile(r"</?(details|summary|sub|br)>")  # the HTML skillgit itself writes


def live(markdown: str) -> list[str]:
    """What GitHub would turn into something other than text: images, links, reference definitions, autolinks,
    bare addresses, raw HTML and mentions — outside code blocks and code spans (which show text literally)."""
    text = re.sub(r"(?ms)^(`{3,}).*?^\1\s*$", "", markdown)  # fenced blocks
    text = re.sub(r"(`+)(?:(?!\1).)+?\1", "", text)  # code spans
    text = OURS.sub("", text)
    found = []
    for name, pattern in (("image or link", r"(?<!\\)\[[^\]]*(?<!\\)\]\s*[(\[]"), ("reference", r"(?m)^\s*\[[^\]]+\]:"),
                          ("html", r"<[A-Za-z!/]"), ("address", r"(?i)\b(?:https?://|www\.)"),
                          ("mention", r"(?<![\w&#])@\w")):
        found += [f"{name}: {m.group()}" for m in re.finditer(pattern, text)]
    return found


def test_live_finds_what_it_must():  # the checker itself can fail
    assert live("![x](http://a)") and live("[a](b)") and live("<img src=x>") and live("see www.x.y") \
        and live("hi @bob") and live("[1]: http://x")
    assert not live("`![x](http://a)`") and not live("\\[a\\](b)") and not live("a &#64;bob")


def test_inert_markdown_and_code_span_leave_nothing_live():
    assert live(HOSTILE)
    assert live(inert_markdown(HOSTILE)) == []
    assert live(code_span(HOSTILE)) == [] and live(f"| {inert_markdown('a | b')} |") == []
    assert inert_markdown("![x](https://t/p.png)") == "!\\[x\\](`https://t/p.png)`"


# ---------------------------------------------------------------------------------------------- names
@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    return demo_project(tmp_path_factory.mktemp("names") / "p")  # (a dry run writes nothing: shared)


@pytest.mark.parametrize("name", ["review/\u202egnp.exe", "@", "review/a@b", "-x", "review/a b", "review/..x"])
def test_train_branch_refuses_u202e_at_and_what_git_refuses(demo, name):
    root = demo
    before = git(root, "for-each-ref")
    proc = run_cli_inproc("train", f"--branch={name}", "--dry-run", cwd=root)
    assert proc.returncode == 2, proc.stderr
    assert "invalid --branch name" in proc.stderr and "hint:" in proc.stderr
    assert "\u202e" not in proc.stderr  # shown escaped, never acting on the terminal
    assert git(root, "for-each-ref") == before


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pr") / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "SKILL.md").write_text(SEED)
    git(root, "add", "SKILL.md")
    git(root, "commit", "-q", "-m", "initial")
    build_history(root)
    return root  # (`pr` without --push, --gh or --body-file writes nothing: shared)


@pytest.mark.parametrize("option", ["--head", "--base"])
@pytest.mark.parametrize("name", ["a\u202eb", "@", "x y", "a:b", "-x"])
def test_pr_head_and_base_are_validated(history, option, name):
    root = history
    proc = run_cli_inproc("pr", "--run", "r1", f"{option}={name}", cwd=root)
    assert proc.returncode == 2, proc.stderr
    assert f"invalid {option} branch name" in proc.stderr and proc.stdout == ""  # no body printed either


# ---------------------------------------------------------------------------------------------- links
def test_teacher_text_cannot_put_a_live_image_or_link_into_a_pr_body(make_repo):
    root = make_repo({"SKILL.md": SEED})
    store = Store.open(root, "SKILL.md")
    build_history(root)
    _decide(store, store.read_skill() + "Be nice.\n", 4, 4, True, 0.8, 0.9, {"a": 1.0}, {}, HOSTILE)
    git(root, "branch", "review/x", "main")  # a head that is not the base (a run on main has no PR of its own)
    proc = run_cli_inproc("pr", "--run", "r1", "--head", "review/x", cwd=root)
    assert proc.returncode == 0, proc.stderr
    body = proc.stdout
    assert "tracker.example" in body  # the text is there, as text
    assert live(body) == [], live(body)


def test_night_report_has_no_live_link_from_model_text():
    record = NightRecord.from_dict(dict(
        date="2026-01-01", status="finished", reason=HOSTILE, branch="sleep/2026-01-01", run="n1",
        skill_branch="main", base="0" * 40, accepted=1,
        edits=[{"run": "n1", "step": "1", "kind": "step", "verdict": "accepted", "score_before": 0.4,
                "score_after": 0.5, "edits": [HOSTILE, "append: x"], "reason": HOSTILE}],
        tasks={"excluded": {HOSTILE: 2}}, harvest={"skipped": {HOSTILE: 1}}))
    assert record.edits and record.edits[0].reason == HOSTILE and record.harvest.skipped == {HOSTILE: 1}
    text = render(record)
    assert "tracker.example" in text and "<br>" in text
    assert live(text) == [], live(text)


def test_check_output_has_no_live_link_from_model_text():
    side = Side(rev="main", sha="a" * 40, val=0.5, val_scored=2, val_n=2)
    result = CheckResult("regressed", HOSTILE, "hard", "SKILL.md", side, side, Coverage(2, 2),
                         checks=({"name": HOSTILE, "passed": False, "detail": HOSTILE},))
    text = render_markdown(result)
    assert "tracker.example" in text
    assert live(text) == [], live(text)


def test_sleep_report_keeps_its_own_formatting(tmp_path: Path):
    text = render(NightRecord(date="2026-01-01", status="finished", branch="sleep/2026-01-01", run="n1",
                              skill_branch="main", base="0" * 40))
    assert "Trained on branch `sleep/2026-01-01` (run `n1`)" in text
    assert "`skillgit sleep adopt 2026-01-01`" in text
